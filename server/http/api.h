/*
 * api - the v1 routes of `kevald serve` and the state they share. serve.c
 * builds one Api, hands api_routes() to the HTTP server with api_gate() as
 * its gate, and the handlers in api_submissions.c, api_tasks.c, api_ops.c
 * and api_dashboard.c find the Api through http_request_app(). Every member is
 * created before the server starts and freed after it stops, so handlers
 * use them without locks (each is thread-safe on its own).
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/kbtasks.h"
#include "common/tasklib.h"
#include "server/http/auth.h"
#include "server/cmd/config.h"
#include "server/dispatch/dispatch.h"
#include "server/http/http.h"
#include "server/store/ingest.h"
#include "server/http/metrics.h"
#include "server/http/ratelimit.h"
#include "server/store/store.h"
#include "server/http/waiters.h"

typedef struct Api {
        const Config *cfg;
        const TaskLib *tasks;
        const KbIndex *kbtasks;     /* KernelBench tasks (language "kernelbench"); may be NULL */
        StorePool *pool;            /* reads, cancels, token lookups */
        Ingest *ingest;             /* acceptance (group commit) */
        Dispatcher *dispatcher;     /* may be NULL (tests) */
        Waiters *waiters;
        RateLimiter *limiter;
        Auth *auth;                 /* NULL when auth is off */
        Metrics *metrics;
        atomic_bool stopping;       /* SIGTERM seen: new submissions get 503 */
} Api;

/* The route table (static) and its size; indices are the metrics route indices. */
const HttpRoute *api_routes(size_t *ret_n);
/* Templates of api_routes() for metrics_new(); static. */
const char *const *api_route_names(size_t *ret_n);

/* HttpGate: bearer auth for non-public routes, then the per-token rate limit. */
int api_gate(HttpRequest *req, const HttpRoute *route);

/* Handlers. */
int api_submissions_collection(HttpRequest *req);   /* POST, GET /v1/submissions */
int api_submissions_item(HttpRequest *req);         /* GET, DELETE /v1/submissions/{id} */
int api_tasks_list(HttpRequest *req);
int api_tasks_get(HttpRequest *req);
int api_tasks_prompt(HttpRequest *req);
int api_ops_stats(HttpRequest *req);
int api_ops_metrics(HttpRequest *req);
int api_ops_livez(HttpRequest *req);
int api_ops_readyz(HttpRequest *req);
/* The dashboard (api_dashboard.c, docs/dashboard.md). */
int api_dashboard_page(HttpRequest *req);           /* GET / */
int api_dashboard_asset(HttpRequest *req);          /* GET /assets/{name} */
int api_dashboard_now(HttpRequest *req);            /* GET /v1/dashboard/now */
int api_dashboard_runs(HttpRequest *req);           /* GET /v1/dashboard/runs */
int api_dashboard_run(HttpRequest *req);            /* GET /v1/dashboard/run?id= */
int api_dashboard_tasks(HttpRequest *req);          /* GET /v1/dashboard/tasks */
int api_dashboard_task(HttpRequest *req);           /* GET /v1/dashboard/tasks/{name} */
int api_dashboard_submission(HttpRequest *req);     /* GET /v1/dashboard/submissions/{id} */

/*
 * Helpers shared by the handlers. api_parse_wait() reads ?wait=S into
 * @ret_s (0 when absent). Return: 0, or HTTP_DONE after answering 422.
 */
int api_parse_wait(HttpRequest *req, double *ret_s);
/*
 * Answer 422 naming the first query argument not in @allowed (NULL-terminated).
 * Return: 0 when all are known, else HTTP_DONE.
 */
int api_check_query(HttpRequest *req, const char *const *allowed);
/* Parse a path id: decimal, 1..INT64_MAX. Return: true and *@ret set, or false. */
bool api_parse_id(const char *s, int64_t *ret);
/* Answer a store failure (negative errno) as 500/503. Return: HTTP_DONE. */
int api_respond_store_error(HttpRequest *req, int r, const char *what);
