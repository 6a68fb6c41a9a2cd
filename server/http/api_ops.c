/*
 * api_ops - the route table, the gate (auth and rate limit) and the
 * operational routes: /v1/stats, /metrics, /livez, /readyz. /metrics,
 * /livez and /readyz are public (no token), as monitoring expects; so are
 * the dashboard page and its assets (api_dashboard.c), which hold no data.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "server/http/api.h"

static const HttpRoute routes[] = {
        { "/v1/submissions", HTTP_M(HTTP_GET) | HTTP_M(HTTP_POST), api_submissions_collection, false },
        { "/v1/submissions/{id}", HTTP_M(HTTP_GET) | HTTP_M(HTTP_DELETE), api_submissions_item, false },
        { "/v1/tasks", HTTP_M(HTTP_GET), api_tasks_list, false },
        { "/v1/tasks/{name}", HTTP_M(HTTP_GET), api_tasks_get, false },
        { "/v1/tasks/{name}/prompt", HTTP_M(HTTP_GET), api_tasks_prompt, false },
        { "/v1/stats", HTTP_M(HTTP_GET), api_ops_stats, false },
        { "/metrics", HTTP_M(HTTP_GET), api_ops_metrics, true },
        { "/livez", HTTP_M(HTTP_GET), api_ops_livez, true },
        { "/readyz", HTTP_M(HTTP_GET), api_ops_readyz, true },
        { "/v1/dashboard/now", HTTP_M(HTTP_GET), api_dashboard_now, false },
        { "/v1/dashboard/runs", HTTP_M(HTTP_GET), api_dashboard_runs, false },
        { "/v1/dashboard/run", HTTP_M(HTTP_GET), api_dashboard_run, false },
        { "/v1/dashboard/tasks", HTTP_M(HTTP_GET), api_dashboard_tasks, false },
        { "/v1/dashboard/tasks/{name}", HTTP_M(HTTP_GET), api_dashboard_task, false },
        { "/v1/dashboard/submissions/{id}", HTTP_M(HTTP_GET), api_dashboard_submission, false },
        /* The page and its assets hold no data: public, so that the page can ask for a token. */
        { "/", HTTP_M(HTTP_GET), api_dashboard_page, true },
        { "/assets/{name}", HTTP_M(HTTP_GET), api_dashboard_asset, true },
};
#define N_ROUTES (sizeof(routes) / sizeof(routes[0]))
/* /readyz: a failed write keeps the store "read-only" this long unless a write succeeds
 * meanwhile (the dispatcher retries what it holds every second while it lasts). */
#define WRITE_FAULT_HOLD_S 30.0

/**
 * api_routes() - the v1 route table (static), @ret_n entries.
 */
const HttpRoute *api_routes(size_t *ret_n)
{
        *ret_n = N_ROUTES;
        return routes;
}

/**
 * api_route_names() - the route templates, in table order, for metrics labels.
 */
const char *const *api_route_names(size_t *ret_n)
{
        static const char *names[N_ROUTES];

        for (size_t i = 0; i < N_ROUTES; i++)
                names[i] = routes[i].pattern;
        *ret_n = N_ROUTES;
        return names;
}

/**
 * api_gate() - authenticate and rate-limit a request before its body is read
 * Return: 0 to go on, or HTTP_DONE after answering 401, 429 or 503.
 */
int api_gate(HttpRequest *req, const HttpRoute *route)
{
        Api *api = http_request_app(req);
        HttpPrincipal *who = http_request_principal(req);
        double rate = api->cfg->rate, burst = api->cfg->burst;
        int retry, r;

        who->token_id = 0;
        who->admin = false;
        who->max_queued = api->cfg->max_queued_per_token;
        if (route->public_route)
                return 0;
        if (api->auth) {
                AuthToken tok;

                r = auth_check(api->auth, http_request_header(req, "Authorization"), &tok);
                if (r == AUTH_E_MISSING || r == AUTH_E_INVALID) {
                        http_response_header(req, "WWW-Authenticate",
                                             r == AUTH_E_MISSING ? "Bearer realm=\"kevald\""
                                                                 : "Bearer realm=\"kevald\", error=\"invalid_token\"");
                        return http_respond_error(req, PROBLEM_UNAUTHORIZED, "/headers/Authorization",
                                                  r == AUTH_E_MISSING
                                                          ? "send Authorization: Bearer <token> (kevald token create)"
                                                          : "the bearer token is unknown, malformed or revoked");
                }
                if (r != 0)
                        return api_respond_store_error(req, r, "checking the token");
                who->token_id = tok.id;
                who->admin = tok.admin;
                if (tok.max_queued >= 0)
                        who->max_queued = tok.max_queued;
                if (tok.rate >= 0)
                        rate = tok.rate;
                if (tok.burst >= 0)
                        burst = tok.burst;
        }
        if (ratelimit_take(api->limiter, who->token_id, rate, burst, &retry) == RATELIMIT_E_LIMITED) {
                char ra[16];

                snprintf(ra, sizeof(ra), "%d", retry);
                http_response_header(req, "Retry-After", ra);
                return http_respond_error(req, PROBLEM_RATE_LIMITED, NULL,
                                          "more than %g requests per second (burst %g) for this token; "
                                          "retry after %d s", rate, burst > 0 ? burst : fmax(1.0, 2 * rate), retry);
        }
        return 0;
}

static int no_query(HttpRequest *req)
{
        static const char *const none[] = { NULL };

        return api_check_query(req, none);
}

/**
 * api_ops_stats() - GET /v1/stats: store counts, queue, cache, workers
 * Return: HTTP_DONE.
 */
int api_ops_stats(HttpRequest *req)
{
        Api *api = http_request_app(req);
        json_t *st = NULL, *out;
        int64_t q[3] = { 0, 0, 0 };
        IngestStats is;
        Store *store;
        int r;

        if (no_query(req))
                return HTTP_DONE;
        store = storepool_get(api->pool);
        r = store_stats(store, &st);
        if (r == 0)
                r = store_queue_depth(store, &q[0], &q[1], &q[2]);
        storepool_put(api->pool, store);
        if (r != 0) {
                json_decref(st);
                return api_respond_store_error(req, r, "reading statistics");
        }
        ingest_get_stats(api->ingest, &is);
        out = json_pack("{s:{s:O?, s:O?, s:O?}, s:{s:I, s:I, s:I}, s:O?, s:O?, s:{s:I, s:I, s:I, s:I}}",
                        "submissions", "total", json_object_get(st, "submissions"), "by_state",
                        json_object_get(st, "states"), "by_verdict", json_object_get(st, "verdicts"),
                        "queue", "queued", (json_int_t)q[0], "compiled", (json_int_t)q[1], "running",
                        (json_int_t)q[2], "cache", json_object_get(st, "compile_cache"), "tasks",
                        json_object_get(st, "tasks"), "ingest", "commits", (json_int_t)is.commits, "requests",
                        (json_int_t)is.requests, "submissions", (json_int_t)is.submissions, "max_group",
                        (json_int_t)is.max_group);
        json_decref(st);
        if (out && api->dispatcher)
                json_object_set_new(out, "workers", dispatch_status(api->dispatcher));
        return http_respond_json(req, 200, out);
}

/*
 * store_stats() scans the history (per-task medians): a scrape reuses a
 * snapshot younger than STATS_CACHE_S instead of scanning again.
 */
#define STATS_CACHE_S 5.0

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static json_t *stats_cached;
static double stats_at;

static double mono_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A new reference to recent store statistics, or NULL (logged). */
static json_t *recent_stats(Store *store)
{
        json_t *st = NULL;
        double now = mono_s();
        int r;

        pthread_mutex_lock(&stats_lock);
        if (stats_cached && now - stats_at < STATS_CACHE_S) {
                st = json_incref(stats_cached);
                goto out;
        }
        r = store_stats(store, &st);
        if (r != 0) {
                log_warn("api: metrics: store statistics failed: %s", strerror(r < 0 ? -r : EIO));
                goto out;
        }
        /* by_verdict is what metrics_render() reads. */
        json_object_set(st, "by_verdict", json_object_get(st, "verdicts"));
        json_decref(stats_cached);
        stats_cached = json_incref(st);
        stats_at = now;
out:
        pthread_mutex_unlock(&stats_lock);
        return st;
}

/**
 * api_ops_metrics() - GET /metrics (Prometheus text format 0.0.4)
 * Return: HTTP_DONE.
 */
int api_ops_metrics(HttpRequest *req)
{
        Api *api = http_request_app(req);
        MetricsSources src = { 0 };
        Store *store;
        size_t len;
        char *text;
        int r;

        if (no_query(req))
                return HTTP_DONE;
        store = storepool_get(api->pool);
        src.stats = recent_stats(store);
        src.have_queue = store_queue_depth(store, &src.queue[0], &src.queue[1], &src.queue[2]) == 0;
        if (store_dashboard_rows(store, STORE_DASH_HISTOGRAMS, NULL, &src.histograms) != 0)
                log_warn("api: metrics: the duration histograms could not be read");
        storepool_put(api->pool, store);
        if (api->dispatcher)
                src.dispatch = dispatch_status(api->dispatcher);
        text = metrics_render(api->metrics, &src, &len);
        json_decref(src.stats);
        json_decref(src.dispatch);
        json_decref(src.histograms);
        if (!text)
                return http_respond_error(req, PROBLEM_INTERNAL, NULL, "out of memory");
        r = http_respond_text(req, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
        free(text);
        return r;
}

/**
 * api_ops_livez() - GET /livez: 200 while the process serves
 * Return: HTTP_DONE.
 */
int api_ops_livez(HttpRequest *req)
{
        return http_respond_json(req, 200, json_pack("{s:s}", "status", "ok"));
}

/**
 * api_ops_readyz() - GET /readyz: 200 when the store answers and can write
 * and a compile worker is ready, else 503 with the reason. A store whose
 * last write failed for the storage's sake (a full disk, a read-only file,
 * an I/O error; store_write_fault()) within WRITE_FAULT_HOLD_S, with none
 * succeeding since, is "read-only". A host without a GPU is ready for
 * compile-only work and says so.
 * Return: HTTP_DONE.
 */
int api_ops_readyz(HttpRequest *req)
{
        Api *api = http_request_app(req);
        json_t *ds = NULL, *out, *cw, *gpus;
        const char *reason = NULL;
        int64_t q = 0;
        long long cw_ready = 0, gpu_ready = 0;
        bool store_ok, ready;
        int write_fault;
        char why[128];
        size_t i;
        json_t *g;
        Store *store;

        store = storepool_get(api->pool);
        store_ok = store_queue_depth(store, &q, NULL, NULL) == 0;
        storepool_put(api->pool, store);
        write_fault = store_write_fault(WRITE_FAULT_HOLD_S);
        if (api->dispatcher)
                ds = dispatch_status(api->dispatcher);
        cw = json_object_get(ds, "compile_workers");
        gpus = json_object_get(ds, "gpus");
        cw_ready = (long long)json_integer_value(json_object_get(cw, "ready"));
        json_array_foreach(gpus, i, g) {
                const char *s = json_string_value(json_object_get(g, "state"));

                if (s && (!strcmp(s, "ready") || !strcmp(s, "busy")))
                        gpu_ready++;
        }
        if (atomic_load(&api->stopping))
                reason = "shutting down";
        else if (!store_ok)
                reason = "the store does not answer";
        else if (write_fault) {
                snprintf(why, sizeof(why), "the store cannot write: %s", strerror(-write_fault));
                reason = why;
        }
        else if (!api->dispatcher)
                reason = "the dispatcher is not running";
        else if (cw_ready < 1)
                {
                reason = json_string_value(json_object_get(ds, "reason"));
                if (!reason || !*reason)
                        reason = "no compile worker is ready";
        }
        ready = reason == NULL;
        out = json_pack("{s:b, s:s, s:O?, s:O?, s:I, s:s, s:O?}", "ready", ready, "store",
                        !store_ok ? "error" : write_fault ? "read-only" : "ok",
                        "compile_workers", cw ? cw : NULL, "gpus", gpus, "gpus_available", (json_int_t)gpu_ready,
                        "mode", gpu_ready > 0 ? "full" : "compile-only", "layers", json_object_get(ds, "layers"));
        if (out && !json_object_get(out, "compile_workers"))
                json_object_set_new(out, "compile_workers", json_pack("{s:i, s:i}", "configured", 0, "ready", 0));
        if (out && !json_object_get(out, "gpus"))
                json_object_set_new(out, "gpus", json_array());
        if (out && json_object_get(ds, "torch")) /* the kevald-torch pools (docs/kernelbench.md) */
                json_object_set(out, "torch", json_object_get(ds, "torch"));
        if (out && json_is_integer(json_object_get(ds, "fault_grace_ms"))) /* the grace jobs get now (it adapts) */
                json_object_set(out, "fault_grace_ms", json_object_get(ds, "fault_grace_ms"));
        if (out && reason)
                json_object_set_new(out, "reason", json_string(reason));
        else if (out && gpu_ready == 0)
                json_object_set_new(out, "note", json_string("no GPU is available: compile-only submissions "
                                                             "complete, full evaluations wait for a GPU"));
        json_decref(ds);
        if (!ready) {
                http_response_header(req, "Retry-After", "1");
                return http_respond_json(req, 503, out);
        }
        return http_respond_json(req, 200, out);
}
