/*
 * api_dashboard - the built-in dashboard (docs/dashboard.md): the page and
 * its assets, embedded in the binary at build time (server/http/assets/, through
 * tools/bin2c), and the JSON routes it reads:
 *
 *   GET /                                  the page (public: it holds no data)
 *   GET /assets/{name}                     its scripts, styles and the charting library (public)
 *   GET /v1/dashboard/now                  queue, workers, cache, per-minute series
 *   GET /v1/dashboard/runs                 RL runs (tags.run_id), latest first
 *   GET /v1/dashboard/run?id=RUN           one run: per step, per task, pass@k
 *   GET /v1/dashboard/tasks                the task library (or the tasks with history, busiest first)
 *   GET /v1/dashboard/tasks/{name}         one task: description, reference times, pass rate, leaderboard
 *   GET /v1/dashboard/submissions/{id}     one submission with its source and its turns
 *
 * Every figure comes from a view of migrations/006_dashboard.sql and
 * 007_dashboard_reward.sql through store_dashboard_rows(), so the page shows
 * what SQL and Grafana users read. The reward is the trainer's: the Python
 * client's default reward() (clients/python/kevald/reward.py), stored per
 * job by migration 007; the reward quantiles map the speedup histogram
 * through the same formula (reward_of_speedup()). Tasks are listed in the
 * library's natural name order (tasklib_name_cmp()).
 * The /v1 routes need a token wherever the API does (api_gate()). Aggregates
 * span every token, as /v1/stats does; a submission, its source and its turns
 * follow the API's visibility rule (a non-admin token sees its own only).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/jsonutil.h"
#include "common/log.h"
#include "common/limits.h"
#include "common/spec.h"
#include "common/tasklib.h"
#include "server/http/api.h"

/* Generated from server/http/assets/ by tools/bin2c (server/meson.build). */
extern const struct {
        const char *name;
        const unsigned char *data;
        unsigned long len;
} kevald_assets[];
extern const unsigned long kevald_assets_count;

#define DASH_WINDOW_DEFAULT_MIN 60
#define DASH_WINDOW_MAX_MIN 1440          /* a day of minutes */
#define DASH_PAGE_DEFAULT 50
#define DASH_PAGE_MAX LIMIT_LIST_PAGE_MAX
#define DASH_OFFSET_MAX 1000000
#define DASH_K_MAX 8                      /* values in ?k= */
#define DASH_K_LIMIT 10000
#define DASH_TURNS_MAX 100                /* ancestors walked, children listed */
#define DASH_SPEEDUP_BUCKETS 8.0          /* histogram buckets per doubling (migrations 002, 006) */
#define DASH_LEVEL_MAX 10                 /* ?level= of the task browser, as GET /v1/tasks */

/* The client's default reward of a correct, believable kernel (migrations/007_dashboard_reward.sql). */
#define DASH_REWARD_BONUS 0.3
#define DASH_REWARD_CAP 10.0

/* ---- the page ---- */

static const char *content_type(const char *name)
{
        static const struct {
                const char *ext, *type;
        } types[] = {
                { ".html", "text/html; charset=utf-8" },
                { ".js", "text/javascript; charset=utf-8" },
                { ".css", "text/css; charset=utf-8" },
                { ".svg", "image/svg+xml" },
                { ".txt", "text/plain; charset=utf-8" },
        };
        const char *dot = strrchr(name, '.');

        if (!strcmp(name, "LICENSE"))
                return "text/plain; charset=utf-8";
        for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
                if (!strcmp(dot, types[i].ext))
                        return types[i].type;
        return "application/octet-stream";
}

static int respond_asset(HttpRequest *req, const char *name)
{
        for (unsigned long i = 0; i < kevald_assets_count; i++) {
                if (strcmp(kevald_assets[i].name, name))
                        continue;
                http_response_header(req, "Cache-Control", "no-cache");
                http_response_header(req, "X-Content-Type-Options", "nosniff");
                http_response_header(req, "Content-Security-Policy",
                                     "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                                     "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
                http_response_header(req, "Referrer-Policy", "no-referrer");
                return http_respond_text(req, 200, content_type(name), (const char *)kevald_assets[i].data,
                                         (size_t)kevald_assets[i].len);
        }
        return http_respond_error(req, PROBLEM_NOT_FOUND, NULL, "no asset '%.200s'", name);
}

/**
 * api_dashboard_page() - GET /: the dashboard page
 * Return: HTTP_DONE.
 */
int api_dashboard_page(HttpRequest *req)
{
        static const char *const none[] = { NULL };

        if (api_check_query(req, none))
                return HTTP_DONE;
        return respond_asset(req, "index.html");
}

/**
 * api_dashboard_asset() - GET /assets/{name}: a script, style sheet or licence
 * of the page (index.html itself is served at / only)
 * Return: HTTP_DONE.
 */
int api_dashboard_asset(HttpRequest *req)
{
        const char *name = http_request_param(req, 0);

        if (!name || !strcmp(name, "index.html"))
                return http_respond_error(req, PROBLEM_NOT_FOUND, NULL, "no such asset");
        return respond_asset(req, name);
}

/* ---- query parameters ---- */

/* An integer query parameter in [min, max] (absent: @def). Return: 0, or HTTP_DONE after a 422. */
static int query_int(HttpRequest *req, const char *name, int64_t min, int64_t max, int64_t def, int64_t *ret)
{
        const char *v = http_request_query(req, name);
        char ptr[64];
        char *end;
        long long x;

        *ret = def;
        if (!v)
                return 0;
        errno = 0;
        x = strtoll(v, &end, 10);
        if (errno || end == v || *end || x < min || x > max) {
                snprintf(ptr, sizeof(ptr), "/query/%s", name);
                return http_respond_error(req, PROBLEM_INVALID, ptr, "%s must be an integer from %lld to %lld",
                                          name, (long long)min, (long long)max);
        }
        *ret = x;
        return 0;
}

/* A string query parameter of 1..LIMIT_TAG_STRING_BYTES bytes, or NULL. Return: 0, or HTTP_DONE. */
static int query_str(HttpRequest *req, const char *name, const char **ret)
{
        const char *v = http_request_query(req, name);
        char ptr[64];

        *ret = v;
        if (v && (!*v || strlen(v) > LIMIT_TAG_STRING_BYTES)) {
                snprintf(ptr, sizeof(ptr), "/query/%s", name);
                return http_respond_error(req, PROBLEM_INVALID, ptr, "%s must be 1 to %d bytes", name,
                                          LIMIT_TAG_STRING_BYTES);
        }
        return 0;
}

/* ?limit= and ?offset=. Return: 0, or HTTP_DONE. */
static int query_page(HttpRequest *req, int64_t *ret_limit, int64_t *ret_offset)
{
        return query_int(req, "limit", 1, DASH_PAGE_MAX, DASH_PAGE_DEFAULT, ret_limit) ||
               query_int(req, "offset", 0, DASH_OFFSET_MAX, 0, ret_offset);
}

/* Run query @q with @args (stolen); answers a failure itself. Return: 0 with @ret_rows, or HTTP_DONE. */
static int rows(HttpRequest *req, Store *store, StoreDash q, json_t *args, json_t **ret_rows)
{
        int r;

        if (!args && q != STORE_DASH_QUEUE && q != STORE_DASH_HISTOGRAMS)
                r = -ENOMEM;
        else
                r = store_dashboard_rows(store, q, args, ret_rows);
        json_decref(args);
        if (r != 0)
                return api_respond_store_error(req, r, "reading the dashboard views");
        return 0;
}

static int respond_page(HttpRequest *req, json_t *items, int64_t limit, int64_t offset)
{
        size_t n = json_array_size(items);

        return http_respond_json(req, 200, json_pack("{s:o, s:I, s:I, s:o}", "items", items, "limit",
                                                     (json_int_t)limit, "offset", (json_int_t)offset, "next_offset",
                                                     n == (size_t)limit ? json_integer(offset + limit) : json_null()));
}

static double num(json_t *o, const char *key)
{
        json_t *v = json_object_get(o, key);

        return json_is_number(v) ? json_number_value(v) : 0;
}

/* ---- GET /v1/dashboard/now ---- */

static double num_at(json_t *a, size_t i)
{
        json_t *v = json_array_get(a, i);

        return json_is_number(v) ? json_number_value(v) : 0;
}

/* Add @v at @i of the series @key of object @series (an array of @n numbers), as an integer when @count. */
static void series_add(json_t *series, const char *key, size_t n, size_t i, double v, bool count)
{
        json_t *a = json_object_get(series, key);

        if (!a) {
                a = json_array();
                for (size_t k = 0; a && k < n; k++)
                        json_array_append_new(a, json_integer(0));
                if (!a || json_object_set_new(series, key, a))
                        return;
        }
        v += num_at(a, i);
        json_array_set_new(a, i, count ? json_integer((json_int_t)llround(v)) : json_real(v));
}

/* Per-minute sums of v_activity_minutely rows. */
typedef struct Minute {
        double evaluations, latency_s, compile_ms, compiles, cache_hits, cache_lookups;
} Minute;

/*
 * The dense per-minute series of the "now" view: @n minutes from @since,
 * from the rows of v_activity_minutely (@act) and v_gpu_busy_minutely
 * (@gpu). Return: a new object, or NULL when out of memory.
 */
static json_t *now_series(json_t *act, json_t *gpu, int64_t since, size_t n)
{
        json_t *series = json_object(), *minutes = json_array(), *verdicts = json_object(), *gpus = json_object();
        json_t *evals = json_array(), *lat = json_array(), *cmp = json_array(), *hit = json_array(), *row;
        Minute *mins = calloc(n, sizeof(*mins));
        size_t i;

        if (!series || !mins || json_object_set_new(series, "minute_start", minutes) ||
            json_object_set_new(series, "evaluations", evals) || json_object_set_new(series, "verdicts", verdicts) ||
            json_object_set_new(series, "latency_mean_s", lat) || json_object_set_new(series, "compile_ms_mean", cmp) ||
            json_object_set_new(series, "cache_hit_rate", hit) ||
            json_object_set_new(series, "gpu_busy_fraction", gpus)) {
                json_decref(series);
                free(mins);
                return NULL;
        }
        json_array_foreach(act, i, row) {
                int64_t m = (int64_t)num(row, "minute_start");
                const char *verdict = json_string_value(json_object_get(row, "verdict"));
                Minute *mi;

                if (m < since || m >= since + (int64_t)n * 60 || !verdict)
                        continue;
                mi = &mins[(m - since) / 60];
                series_add(verdicts, verdict, n, (size_t)((m - since) / 60), num(row, "n"), true);
                if (strcmp(verdict, "cancelled")) {
                        mi->evaluations += num(row, "n");
                        mi->latency_s += num(row, "latency_sum_s");
                }
                mi->compile_ms += num(row, "compile_ms_sum");
                mi->compiles += num(row, "compiles");
                mi->cache_hits += num(row, "cache_hits");
                mi->cache_lookups += num(row, "cache_hits") + num(row, "cache_misses");
        }
        for (size_t k = 0; k < n; k++) {
                const Minute *mi = &mins[k];

                json_array_append_new(minutes, json_integer(since + (int64_t)k * 60));
                json_array_append_new(evals, json_integer((json_int_t)mi->evaluations));
                json_array_append_new(lat, mi->evaluations > 0 ? json_real(mi->latency_s / mi->evaluations) : json_null());
                json_array_append_new(cmp, mi->compiles > 0 ? json_real(mi->compile_ms / mi->compiles) : json_null());
                json_array_append_new(hit, mi->cache_lookups > 0 ? json_real(mi->cache_hits / mi->cache_lookups)
                                                                  : json_null());
        }
        json_array_foreach(gpu, i, row) {
                int64_t m = (int64_t)num(row, "minute_start");
                char key[32];

                if (m < since || m >= since + (int64_t)n * 60)
                        continue;
                snprintf(key, sizeof(key), "%lld", (long long)num(row, "gpu"));
                series_add(gpus, key, n, (size_t)((m - since) / 60), num(row, "busy_fraction"), false);
        }
        free(mins);
        return series;
}

/**
 * api_dashboard_now() - GET /v1/dashboard/now?window=MINUTES: queue depth
 * by state, totals, the compile cache, the workers, and per-minute series
 * over the window (the current minute last)
 * Return: HTTP_DONE.
 */
int api_dashboard_now(HttpRequest *req)
{
        static const char *const known[] = { "window", NULL };
        Api *api = http_request_app(req);
        json_t *stats = NULL, *queue = NULL, *act = NULL, *gpu = NULL, *out, *series, *row, *q, *cache, *ds = NULL;
        int64_t window, since;
        double now;
        size_t i;
        Store *store;
        int r;

        if (api_check_query(req, known) || query_int(req, "window", 5, DASH_WINDOW_MAX_MIN, DASH_WINDOW_DEFAULT_MIN,
                                                     &window))
                return HTTP_DONE;
        now = store_now();
        since = (int64_t)floor(now / 60) * 60 - (window - 1) * 60;
        store = storepool_get(api->pool);
        r = store_stats(store, &stats);
        if (r != 0) {
                storepool_put(api->pool, store);
                return api_respond_store_error(req, r, "reading statistics");
        }
        r = rows(req, store, STORE_DASH_QUEUE, NULL, &queue) ||
            rows(req, store, STORE_DASH_ACTIVITY, json_pack("[I]", (json_int_t)since), &act) ||
            rows(req, store, STORE_DASH_GPU_BUSY, json_pack("[I]", (json_int_t)since), &gpu);
        storepool_put(api->pool, store);
        if (r)
                goto out;
        series = now_series(act, gpu, since, (size_t)window);
        if (!series) {
                http_respond_error(req, PROBLEM_INTERNAL, NULL, "out of memory");
                goto out;
        }
        q = json_pack("{s:i, s:i, s:i, s:i, s:n}", "queued", 0, "compiling", 0, "compiled", 0, "running", 0,
                      "oldest_created_at");
        json_array_foreach(queue, i, row) {
                const char *st = json_string_value(json_object_get(row, "state"));
                json_t *old = json_object_get(row, "oldest_created_at");

                if (st)
                        json_object_set(q, st, json_object_get(row, "jobs"));
                if (json_is_number(old) && (json_is_null(json_object_get(q, "oldest_created_at")) ||
                                            json_number_value(old) < num(q, "oldest_created_at")))
                        json_object_set(q, "oldest_created_at", old);
        }
        cache = json_deep_copy(json_object_get(stats, "compile_cache"));
        if (cache) {
                double h = num(cache, "hits"), m = num(cache, "misses");

                json_object_set_new(cache, "hit_rate", h + m > 0 ? json_real(h / (h + m)) : json_null());
        }
        if (api->dispatcher)
                ds = dispatch_status(api->dispatcher);
        out = json_pack("{s:f, s:I, s:o, s:{s:O, s:O, s:O}, s:o, s:{s:O?, s:O?}, s:o}", "now", now, "window_minutes",
                        (json_int_t)window, "queue", q, "totals", "submissions", json_object_get(stats, "submissions"),
                        "by_state", json_object_get(stats, "states"), "by_verdict", json_object_get(stats, "verdicts"),
                        "cache", cache ? cache : json_object(), "workers", "compile",
                        json_object_get(ds, "compile_workers"), "gpus", json_object_get(ds, "gpus"), "series",
                        series);
        if (out && !json_object_get(json_object_get(out, "workers"), "gpus"))
                json_object_set_new(json_object_get(out, "workers"), "gpus", json_array());
        http_respond_json(req, 200, out);
out:
        json_decref(ds);
        json_decref(stats);
        json_decref(queue);
        json_decref(act);
        json_decref(gpu);
        return HTTP_DONE;
}

/* A list route of ?q=&limit=&offset= over one statement (runs, tasks). */
static int searched_page(HttpRequest *req, StoreDash stmt)
{
        static const char *const known[] = { "q", "limit", "offset", NULL };
        Api *api = http_request_app(req);
        const char *q;
        int64_t limit, offset;
        json_t *items = NULL;
        Store *store;
        int r;

        if (api_check_query(req, known) || query_str(req, "q", &q) || query_page(req, &limit, &offset))
                return HTTP_DONE;
        store = storepool_get(api->pool);
        r = rows(req, store, stmt, json_pack("[s?, I, I]", q, (json_int_t)limit, (json_int_t)offset), &items);
        storepool_put(api->pool, store);
        if (r)
                return HTTP_DONE;
        return respond_page(req, items, limit, offset);
}

/* ---- GET /v1/dashboard/runs, /v1/dashboard/run ---- */

/**
 * api_dashboard_runs() - GET /v1/dashboard/runs?q=&limit=&offset=: runs, latest first
 * Return: HTTP_DONE.
 */
int api_dashboard_runs(HttpRequest *req)
{
        return searched_page(req, STORE_DASH_RUNS);
}

/* A view's step column: null (no step tag) is -1. */
static int64_t step_of(json_t *row)
{
        json_t *v = json_object_get(row, "step");

        return json_is_integer(v) ? json_integer_value(v) : -1;
}

static double bucket_mid(json_t *row)
{
        return exp2((num(row, "bucket") + 0.5) / DASH_SPEEDUP_BUCKETS);
}

/*
 * Quantiles of @total values: @zeros zeros, then the speedup histogram rows
 * @hist[@lo, @hi) (ascending buckets; each value read as its bucket's
 * geometric middle, so within ~5%), each mapped through
 * reward_of_speedup() when @reward (monotone, so the order holds). A new
 * object {p10, p25, p50, p75, p90}, or null when @total is 0.
 */
static double reward_of_speedup(double s)
{
        return DASH_REWARD_BONUS + (s < DASH_REWARD_CAP ? s : DASH_REWARD_CAP);
}

static json_t *quantiles(json_t *hist, size_t lo, size_t hi, int64_t zeros, int64_t total, bool reward)
{
        static const double ps[] = { 0.10, 0.25, 0.50, 0.75, 0.90 };
        static const char *const names[] = { "p10", "p25", "p50", "p75", "p90" };
        json_t *out;

        if (total <= 0)
                return json_null();
        out = json_object();
        for (size_t k = 0; out && k < sizeof(ps) / sizeof(ps[0]); k++) {
                /* nearest rank: the ceil(p * total)-th smallest value */
                int64_t rank = (int64_t)ceil(ps[k] * (double)total) - 1, cum = zeros;
                double v = 0;

                if (rank >= zeros) {
                        for (size_t i = lo; i < hi; i++) {
                                json_t *row = json_array_get(hist, i);

                                v = reward ? reward_of_speedup(bucket_mid(row)) : bucket_mid(row);
                                cum += (int64_t)num(row, "n");
                                if (cum > rank)
                                        break;
                        }
                }
                json_object_set_new(out, names[k], json_real(v));
        }
        return out;
}

/* 1 - C(n - c, k) / C(n, k): the chance that k of n samples, c of them correct, hold a correct one. */
static double pass_at_k(int64_t n, int64_t c, int64_t k)
{
        double p = 1.0;

        if (n - c < k)
                return 1.0;
        for (int64_t i = n - c + 1; i <= n; i++)
                p *= 1.0 - (double)k / (double)i;
        return 1.0 - p;
}

/* ?k=1,5,10 into @ks (at most DASH_K_MAX). Return: 0, or HTTP_DONE after a 422. */
static int query_ks(HttpRequest *req, int64_t *ks, size_t *ret_n)
{
        const char *v = http_request_query(req, "k"), *p;
        size_t n = 0;

        if (!v) {
                ks[0] = 1, ks[1] = 5, ks[2] = 10;
                *ret_n = 3;
                return 0;
        }
        for (p = v;;) {
                char *end;
                long long x;

                errno = 0;
                x = strtoll(p, &end, 10);
                if (errno || end == p || x < 1 || x > DASH_K_LIMIT || n >= DASH_K_MAX || (*end && *end != ','))
                        return http_respond_error(req, PROBLEM_INVALID, "/query/k",
                                                  "k must be a comma-separated list of at most %d integers from 1 "
                                                  "to %d", DASH_K_MAX, DASH_K_LIMIT);
                ks[n++] = x;
                if (!*end)
                        break;
                p = end + 1;
        }
        *ret_n = n;
        return 0;
}

/* Per step: reward and speedup quantiles from the histogram rows, and the best speedup so far. */
static void add_step_distributions(json_t *steps, json_t *hist)
{
        size_t i, h = 0;
        json_t *row;
        double best = 0;

        json_array_foreach(steps, i, row) {
                int64_t step = step_of(row), n = (int64_t)num(row, "evaluated"), in_hist = 0;
                size_t lo;

                while (h < json_array_size(hist) && step_of(json_array_get(hist, h)) < step)
                        h++;
                lo = h;
                while (h < json_array_size(hist) && step_of(json_array_get(hist, h)) == step)
                        in_hist += (int64_t)num(json_array_get(hist, h++), "n");
                json_object_set_new(row, "reward", quantiles(hist, lo, h, n - in_hist, n, true));
                json_object_set_new(row, "speedup", quantiles(hist, lo, h, 0, in_hist, false));
                if (num(row, "best_speedup") > best)
                        best = num(row, "best_speedup");
                json_object_set_new(row, "best_so_far", best > 0 ? json_real(best) : json_null());
        }
}

/* Per step: the verdict mix {verdict: n} from the rows of STORE_DASH_RUN_VERDICTS (both ascending by step). */
static void add_step_verdicts(json_t *steps, json_t *verdicts)
{
        size_t i, v = 0;
        json_t *row;

        json_array_foreach(steps, i, row) {
                int64_t step = step_of(row);
                json_t *mix = json_object();

                while (v < json_array_size(verdicts) && step_of(json_array_get(verdicts, v)) < step)
                        v++;
                for (; v < json_array_size(verdicts) && step_of(json_array_get(verdicts, v)) == step; v++) {
                        json_t *vr = json_array_get(verdicts, v);
                        const char *name = json_string_value(json_object_get(vr, "verdict"));

                        if (name && mix)
                                json_object_set_new(mix, name, json_integer((json_int_t)num(vr, "n")));
                }
                json_object_set_new(row, "verdicts", mix ? mix : json_object());
        }
}

/* "compile" when every evaluated submission of @run was compile-only, "full" when none, else "mixed". */
static const char *run_mode(json_t *run)
{
        double n = num(run, "evaluated"), c = num(run, "compile_mode");

        return c <= 0 ? "full" : c >= n ? "compile" : "mixed";
}

static int cmp_task_rows(const void *a, const void *b)
{
        const char *x = json_string_value(json_object_get(*(json_t *const *)a, "task"));
        const char *y = json_string_value(json_object_get(*(json_t *const *)b, "task"));

        if (!x || !y)
                return (x != NULL) - (y != NULL);
        return tasklib_name_cmp(x, y);
}

/* Sort @rows (objects with "task", null first) in the library's natural name order. Return: 0 or -ENOMEM. */
static int sort_task_rows(json_t *rows)
{
        size_t n = json_array_size(rows);
        json_t **v = n ? calloc(n, sizeof(*v)) : NULL;

        if (n && !v)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                v[i] = json_incref(json_array_get(rows, i));
        qsort(v, n, sizeof(*v), cmp_task_rows);
        json_array_clear(rows);
        for (size_t i = 0; i < n; i++)
                json_array_append_new(rows, v[i]);
        free(v);
        return 0;
}

/*
 * Add pass@k (and the correct rate) to the per-task rows of
 * STORE_DASH_RUN_TASKS: over the samples whose correctness was checked
 * (mode full); null where none was (a compile-only task says nothing about
 * correctness).
 */
static void add_pass_at_k(json_t *tasks, const int64_t *ks, size_t nk)
{
        size_t i;
        json_t *row;

        json_array_foreach(tasks, i, row) {
                int64_t n = (int64_t)num(row, "checked"), c = (int64_t)num(row, "correct");
                json_t *pk = json_object();

                for (size_t k = 0; pk && k < nk; k++) {
                        char key[24];

                        snprintf(key, sizeof(key), "%lld", (long long)ks[k]);
                        json_object_set_new(pk, key, ks[k] <= n && n > 0 ? json_real(pass_at_k(n, c, ks[k]))
                                                                        : json_null());
                }
                json_object_set_new(row, "correct_rate", n > 0 ? json_real((double)c / (double)n) : json_null());
                json_object_set_new(row, "pass_at_k", pk ? pk : json_object());
                if (json_is_null(json_object_get(row, "best_speedup"))) {
                        json_object_set_new(row, "best_id", json_null());
                        json_object_set_new(row, "best_step", json_null());
                }
        }
}

/**
 * api_dashboard_run() - GET /v1/dashboard/run?id=RUN&from_step=&to_step=&k=
 * Return: HTTP_DONE.
 */
int api_dashboard_run(HttpRequest *req)
{
        static const char *const known[] = { "id", "from_step", "to_step", "k", NULL };
        Api *api = http_request_app(req);
        json_t *summary = NULL, *steps = NULL, *hist = NULL, *tasks = NULL, *verdicts = NULL, *kl, *run;
        int64_t from, to, ks[DASH_K_MAX];
        const char *id;
        size_t nk = 0;
        Store *store;
        int r;

        if (api_check_query(req, known) || query_str(req, "id", &id) ||
            query_int(req, "from_step", -1, INT64_MAX, -1, &from) ||
            query_int(req, "to_step", -1, INT64_MAX, INT64_MAX, &to) || query_ks(req, ks, &nk))
                return HTTP_DONE;
        if (!id)
                return http_respond_error(req, PROBLEM_INVALID, "/query/id", "id (the run's tags.run_id) is required");
        if (from > to)
                return http_respond_error(req, PROBLEM_INVALID, "/query/from_step", "from_step is after to_step");
        store = storepool_get(api->pool);
        r = rows(req, store, STORE_DASH_RUN, json_pack("[s]", id), &summary) ||
            rows(req, store, STORE_DASH_RUN_STEPS, json_pack("[s, I, I]", id, (json_int_t)from, (json_int_t)to),
                 &steps) ||
            rows(req, store, STORE_DASH_RUN_SPEEDUPS, json_pack("[s, I, I]", id, (json_int_t)from, (json_int_t)to),
                 &hist) ||
            rows(req, store, STORE_DASH_RUN_TASKS, json_pack("[s, I, I]", id, (json_int_t)from, (json_int_t)to),
                 &tasks) ||
            rows(req, store, STORE_DASH_RUN_VERDICTS, json_pack("[s, I, I]", id, (json_int_t)from, (json_int_t)to),
                 &verdicts);
        storepool_put(api->pool, store);
        if (r)
                goto out;
        if (json_array_size(summary) == 0) {
                http_respond_error(req, PROBLEM_NOT_FOUND, NULL, "no finished submission has run_id '%.256s'", id);
                goto out;
        }
        run = json_array_get(summary, 0);
        json_object_set_new(run, "mode", json_string(run_mode(run)));
        add_step_distributions(steps, hist);
        add_step_verdicts(steps, verdicts);
        add_pass_at_k(tasks, ks, nk);
        if (sort_task_rows(tasks)) {
                http_respond_error(req, PROBLEM_INTERNAL, NULL, "out of memory");
                goto out;
        }
        kl = json_array();
        for (size_t k = 0; kl && k < nk; k++)
                json_array_append_new(kl, json_integer(ks[k]));
        http_respond_json(req, 200, json_pack("{s:O, s:I, s:o, s:O, s:O, s:o}", "run", run,
                                              "from_step", (json_int_t)from,
                                              "to_step", to == INT64_MAX ? json_null() : json_integer(to),
                                              "steps", steps, "tasks", tasks, "k", kl ? kl : json_array()));
out:
        json_decref(summary);
        json_decref(steps);
        json_decref(hist);
        json_decref(tasks);
        json_decref(verdicts);
        return HTTP_DONE;
}

/* ---- GET /v1/dashboard/tasks, /v1/dashboard/tasks/{name} ---- */

/* The JSON text of the array of names of @items' "name" members, or NULL on ENOMEM (free() it). */
static char *names_text(json_t *items)
{
        json_t *names = json_array(), *it;
        char *text;
        size_t i;

        json_array_foreach(items, i, it)
                json_array_append(names, json_object_get(it, "name"));
        text = names ? json_dumps(names, JSON_COMPACT) : NULL;
        json_decref(names);
        return text;
}

/*
 * Add to each library item of @items its history figures ("stats": the
 * v_task_summary row, or null) and the reference times kevald measured
 * ("reference_times": v_task_reference_times rows, maybe empty).
 * Return: 0, or HTTP_DONE after answering a failure.
 */
static int add_task_figures(HttpRequest *req, json_t *items)
{
        Api *api = http_request_app(req);
        json_t *stats = NULL, *refs = NULL, *by_name = json_object(), *it, *row;
        char *names = names_text(items);
        size_t i, j;
        Store *store;
        int r;

        if (!names || !by_name) {
                free(names);
                json_decref(by_name);
                return http_respond_error(req, PROBLEM_INTERNAL, NULL, "out of memory");
        }
        store = storepool_get(api->pool);
        r = rows(req, store, STORE_DASH_TASKS_NAMED, json_pack("[s]", names), &stats) ||
            rows(req, store, STORE_DASH_REFERENCES, json_pack("[s]", names), &refs);
        storepool_put(api->pool, store);
        free(names);
        if (r)
                goto out;
        json_array_foreach(items, i, it) {
                json_object_set_new(it, "stats", json_null());
                json_object_set_new(it, "reference_times", json_array());
                if (json_string_value(json_object_get(it, "name")))
                        json_object_set(by_name, json_string_value(json_object_get(it, "name")), it);
        }
        json_array_foreach(stats, j, row) {
                json_t *it2 = json_object_get(by_name, jsonutil_str(row, "task", ""));

                if (it2)
                        json_object_set(it2, "stats", row);
        }
        json_array_foreach(refs, j, row)
                json_array_append(json_object_get(json_object_get(by_name, jsonutil_str(row, "task", "")),
                                                  "reference_times"), row);
out:
        json_decref(by_name);
        json_decref(stats);
        json_decref(refs);
        return r ? HTTP_DONE : 0;
}

/* Whether library task @t passes the browser's filters: @q in its name or title, @level, @category. */
static bool task_matches(const Task *t, const char *q, int64_t level, const char *category)
{
        json_t *doc = spec_task_json(t);
        const char *title = jsonutil_str(doc, "title", ""), *cat = jsonutil_str(doc, "category", NULL);

        if (q && !strstr(spec_task_name(t), q) && !strstr(title, q))
                return false;
        if (level > 0 && json_integer_value(json_object_get(doc, "level")) != level)
                return false;
        return !category || (cat && !strcmp(cat, category));
}

/* GET /v1/dashboard/tasks?source=history: the tasks with submissions, busiest first (ties in natural order). */
static int history_tasks(HttpRequest *req, const char *q, int64_t limit, int64_t offset)
{
        Api *api = http_request_app(req);
        json_t *items = NULL;
        Store *store;
        size_t i, lo = 0;
        int r;

        store = storepool_get(api->pool);
        r = rows(req, store, STORE_DASH_TASKS, json_pack("[s?, I, I]", q, (json_int_t)limit, (json_int_t)offset),
                 &items);
        storepool_put(api->pool, store);
        if (r)
                return HTTP_DONE;
        /* SQL orders ties by bytes (l1_10 before l1_2): reorder each run of equal counts by natural name. */
        for (i = 1; i <= json_array_size(items); i++) {
                json_t *run, *a = json_array_get(items, lo), *b = json_array_get(items, i);
                size_t k;

                if (b && num(a, "submissions") == num(b, "submissions"))
                        continue;
                run = json_array();
                for (k = lo; run && k < i; k++)
                        json_array_append(run, json_array_get(items, k));
                if (run && i - lo > 1 && !sort_task_rows(run))
                        for (k = lo; k < i; k++)
                                json_array_set(items, k, json_array_get(run, k - lo));
                json_decref(run);
                lo = i;
        }
        return respond_page(req, items, limit, offset);
}

/**
 * api_dashboard_tasks() - GET /v1/dashboard/tasks?source=&q=&level=&category=&limit=&offset=
 *
 * source=library (the default): the task library in natural name order,
 * filtered by @q (in the name or title), level and category, each with its
 * summary (title, level, category, shapes, provenance with the published
 * PyTorch times), its history figures (stats, or null) and the reference
 * times kevald measured; source=history: the tasks with submissions (inline
 * ones too), busiest first.
 * Return: HTTP_DONE.
 */
int api_dashboard_tasks(HttpRequest *req)
{
        static const char *const known[] = { "source", "q", "level", "category", "limit", "offset", NULL };
        Api *api = http_request_app(req);
        const char *q, *category, *source = http_request_query(req, "source");
        int64_t limit, offset, level, matched = 0;
        json_t *items;
        size_t n = tasklib_count(api->tasks);

        if (api_check_query(req, known) || query_str(req, "q", &q) || query_str(req, "category", &category) ||
            query_int(req, "level", 1, DASH_LEVEL_MAX, 0, &level) || query_page(req, &limit, &offset))
                return HTTP_DONE;
        if (source && strcmp(source, "library") && strcmp(source, "history"))
                return http_respond_error(req, PROBLEM_INVALID, "/query/source", "source must be library or history");
        if (source && !strcmp(source, "history")) {
                if (level || category)
                        return http_respond_error(req, PROBLEM_INVALID, level ? "/query/level" : "/query/category",
                                                  "level and category filter the library only (source=library)");
                return history_tasks(req, q, limit, offset);
        }
        items = json_array();
        for (size_t i = 0; items && i < n; i++) {
                const Task *t = tasklib_task_at(api->tasks, i);

                if (!task_matches(t, q, level, category))
                        continue;
                if (matched++ >= offset && (int64_t)json_array_size(items) < limit)
                        json_array_append_new(items, spec_task_summary(t));
        }
        if (!items)
                return http_respond_error(req, PROBLEM_INTERNAL, NULL, "out of memory");
        if (add_task_figures(req, items)) {
                json_decref(items);
                return HTTP_DONE;
        }
        return http_respond_json(req, 200, json_pack("{s:o, s:I, s:I, s:o, s:I}", "items", items, "limit",
                                                     (json_int_t)limit, "offset", (json_int_t)offset, "next_offset",
                                                     matched > offset + limit ? json_integer(offset + limit)
                                                                              : json_null(),
                                                     "total", (json_int_t)matched));
}

/* The median of a speedup histogram (rows ascending by bucket), or null. */
static json_t *hist_median(json_t *hist)
{
        int64_t total = 0, cum = 0;
        size_t i;
        json_t *row;

        json_array_foreach(hist, i, row)
                total += (int64_t)num(row, "n");
        json_array_foreach(hist, i, row) {
                cum += (int64_t)num(row, "n");
                if (2 * cum >= total && total > 0)
                        return json_real(bucket_mid(row));
        }
        return json_null();
}

/*
 * Each leaderboard row gains its result's reward_fields.speedup_vs
 * ({reference, torch_eager, torch_compile}, null where that yardstick has
 * no baseline), so the page can rank by the yardstick the reader picks. One
 * read per row of the page (at most DASH_PAGE_MAX). A row whose result
 * cannot be read gets null (logged), not an error page. Return: 0, or the
 * store's error when the store itself fails (its connection, its file).
 */
static int board_yardsticks(Store *store, json_t *board)
{
        json_t *row;
        size_t i;

        json_array_foreach(board, i, row) {
                json_t *sub = NULL, *vs;
                int r = store_get_submission(store, (int64_t)num(row, "id"), &sub);
                if (r == -EIO || r == -ENOTCONN)
                        return r;
                if (r != 0 && r != STORE_E_NOT_FOUND)
                        log_warn("dashboard: submission %.0f's result: %s", num(row, "id"), strerror(r < 0 ? -r : EINVAL));
                vs = json_object_get(json_object_get(json_object_get(sub, "result"), "reward_fields"), "speedup_vs");
                json_object_set_new(row, "speedup_vs", json_is_object(vs) ? json_deep_copy(vs) : json_null());
                json_decref(sub);
        }
        return 0;
}

/**
 * api_dashboard_task() - GET /v1/dashboard/tasks/{name}?limit=&offset=: the
 * library's summary with the description, the reference times kevald
 * measured (per GPU and shape), pass rate, verdicts, speedup histogram and a
 * page of the leaderboard
 * Return: HTTP_DONE.
 */
int api_dashboard_task(HttpRequest *req)
{
        static const char *const known[] = { "limit", "offset", NULL };
        Api *api = http_request_app(req);
        const char *name = http_request_param(req, 0);
        const Task *t = name ? tasklib_get(api->tasks, name) : NULL;
        json_t *summary = NULL, *verdicts = NULL, *hist = NULL, *board = NULL, *refs = NULL, *info, *sum;
        char *names = NULL;
        int64_t limit, offset;
        Store *store;
        int r;

        if (api_check_query(req, known) || query_int(req, "limit", 1, DASH_PAGE_MAX, 20, &limit) ||
            query_int(req, "offset", 0, DASH_OFFSET_MAX, 0, &offset))
                return HTTP_DONE;
        if (!name || strlen(name) > LIMIT_NAME_BYTES)
                return http_respond_error(req, PROBLEM_NOT_FOUND, NULL, "no such task");
        {
                json_t *one = json_pack("[s]", name);

                names = one ? json_dumps(one, JSON_COMPACT) : NULL;
                json_decref(one);
        }
        if (!names)
                return http_respond_error(req, PROBLEM_INTERNAL, NULL, "out of memory");
        store = storepool_get(api->pool);
        r = rows(req, store, STORE_DASH_TASK, json_pack("[s]", name), &summary) ||
            rows(req, store, STORE_DASH_TASK_VERDICTS, json_pack("[s]", name), &verdicts) ||
            rows(req, store, STORE_DASH_TASK_SPEEDUPS, json_pack("[s]", name), &hist) ||
            rows(req, store, STORE_DASH_LEADERBOARD, json_pack("[s, I, I]", name, (json_int_t)limit,
                                                               (json_int_t)offset), &board) ||
            rows(req, store, STORE_DASH_REFERENCES, json_pack("[s]", names), &refs);
        if (!r && (r = board_yardsticks(store, board)) != 0)
                api_respond_store_error(req, r, "reading the leaderboard's results");
        storepool_put(api->pool, store);
        if (r)
                goto out;
        sum = json_array_get(summary, 0);
        if (!sum && !t) {
                http_respond_error(req, PROBLEM_NOT_FOUND, NULL, "no task '%.256s' in the library or the history",
                                   name);
                goto out;
        }
        info = t ? spec_task_summary(t) : json_null();
        if (t)
                json_object_set(info, "description", json_object_get(spec_task_json(t), "description"));
        http_respond_json(req, 200, json_pack("{s:s, s:o, s:o, s:O, s:O, s:o, s:O, s:I, s:I, s:o, s:O}", "task",
                                              name, "info", info,
                                              "summary", sum ? json_incref(sum)
                                                             : json_pack("{s:s, s:i, s:i, s:i, s:i, s:n}", "task",
                                                                         name, "submissions", 0, "done", 0, "correct",
                                                                         0, "compile_errors", 0, "correct_rate"),
                                              "verdicts", verdicts, "speedup_hist", hist, "median_speedup",
                                              hist_median(hist), "leaderboard", board, "limit", (json_int_t)limit,
                                              "offset", (json_int_t)offset, "next_offset",
                                              json_array_size(board) == (size_t)limit ? json_integer(offset + limit)
                                                                                       : json_null(),
                                              "reference_times", refs));
out:
        free(names);
        json_decref(refs);
        json_decref(summary);
        json_decref(verdicts);
        json_decref(hist);
        json_decref(board);
        return HTTP_DONE;
}

/* ---- GET /v1/dashboard/submissions/{id} ---- */

/* The token whose submissions this request sees, or -1 for all (auth off, admin). */
static int64_t visible_token(HttpRequest *req)
{
        Api *api = http_request_app(req);
        HttpPrincipal *who = http_request_principal(req);

        return !api->auth || who->admin ? -1 : who->token_id;
}

/* Drop the token id from turn rows (internal numbers a page has no use for). */
static void strip_tokens(json_t *list)
{
        size_t i;
        json_t *row;

        json_array_foreach(list, i, row)
                json_object_del(row, "token_id");
}

/**
 * api_dashboard_submission() - GET /v1/dashboard/submissions/{id}: the
 * submission with its result, its request (source, plan, options) and its
 * turns: the parent chain (oldest first) and the children
 * Return: HTTP_DONE.
 */
int api_dashboard_submission(HttpRequest *req)
{
        static const char *const none[] = { NULL };
        Api *api = http_request_app(req);
        int64_t id, tok = visible_token(req), parent;
        json_t *turn = NULL, *sub = NULL, *reqrow = NULL, *request = NULL, *ancestors = NULL, *children = NULL;
        Store *store;
        int r = 0;

        if (api_check_query(req, none))
                return HTTP_DONE;
        if (!api_parse_id(http_request_param(req, 0), &id))
                return http_respond_error(req, PROBLEM_NOT_FOUND, NULL, "no such submission");
        store = storepool_get(api->pool);
        if (rows(req, store, STORE_DASH_TURN, json_pack("[I]", (json_int_t)id), &turn))
                goto put;
        if (json_array_size(turn) == 0 ||
            (tok >= 0 && num(json_array_get(turn, 0), "token_id") != (double)tok)) {
                http_respond_error(req, PROBLEM_NOT_FOUND, NULL, "no submission %lld", (long long)id);
                goto put;
        }
        r = store_get_submission(store, id, &sub);
        if (r != 0) {
                api_respond_store_error(req, r == STORE_E_NOT_FOUND ? -EIO : r, "reading the submission");
                goto put;
        }
        if (rows(req, store, STORE_DASH_REQUEST, json_pack("[I]", (json_int_t)id), &reqrow))
                goto put;
        {
                const char *text = json_string_value(json_object_get(json_array_get(reqrow, 0), "request"));

                request = text ? json_loads(text, 0, NULL) : NULL;
        }
        ancestors = json_array();
        parent = json_is_integer(json_object_get(json_array_get(turn, 0), "parent"))
                         ? json_integer_value(json_object_get(json_array_get(turn, 0), "parent"))
                         : 0;
        for (int depth = 0; ancestors && parent > 0 && depth < DASH_TURNS_MAX; depth++) {
                json_t *prow = NULL, *p;

                if (rows(req, store, STORE_DASH_TURN, json_pack("[I]", (json_int_t)parent), &prow))
                        goto put;
                p = json_array_get(prow, 0);
                if (!p || (tok >= 0 && num(p, "token_id") != (double)tok)) {
                        json_decref(prow);
                        break;
                }
                json_array_insert(ancestors, 0, p);
                parent = json_is_integer(json_object_get(p, "parent")) ? json_integer_value(json_object_get(p, "parent"))
                                                                      : 0;
                json_decref(prow);
        }
        if (rows(req, store, STORE_DASH_CHILDREN,
                 json_pack("[I, I, i]", (json_int_t)id, (json_int_t)tok, DASH_TURNS_MAX), &children))
                goto put;
        strip_tokens(ancestors);
        strip_tokens(children);
        storepool_put(api->pool, store);
        http_respond_json(req, 200, json_pack("{s:O, s:O?, s:{s:O, s:O}}", "submission", sub, "request", request,
                                              "turns", "ancestors", ancestors, "children", children));
        goto out;
put:
        storepool_put(api->pool, store);
out:
        json_decref(turn);
        json_decref(sub);
        json_decref(reqrow);
        json_decref(request);
        json_decref(ancestors);
        json_decref(children);
        return HTTP_DONE;
}
