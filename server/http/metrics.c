/*
 * metrics - HTTP request counters (route x status code) and latency
 * histograms (route x bucket) as relaxed atomics, rendered with the gauges
 * of the queue and the workers into Prometheus text format 0.0.4. Status
 * codes 100..599 each have a counter; histogram buckets are stored
 * non-cumulative and summed at render time.
 */
#include "server/http/metrics.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CODES 500          /* 100..599 */
static const double buckets[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                   0.25,   0.5,   1,      2.5,   5,    10,    30,    60 };
#define N_BUCKETS (sizeof(buckets) / sizeof(buckets[0]))

typedef struct RouteCounters {
        _Atomic uint64_t codes[CODES];
        _Atomic uint64_t hist[N_BUCKETS + 1];
        _Atomic uint64_t sum_us;
} RouteCounters;

struct Metrics {
        const char *const *routes;
        size_t n;
        RouteCounters *rc;   /* n + 1 */
};

/**
 * metrics_new() - see metrics.h.
 */
int metrics_new(const char *const *routes, size_t n, Metrics **ret_metrics)
{
        Metrics *m = calloc(1, sizeof(*m));

        if (!m)
                return -ENOMEM;
        m->rc = calloc(n + 1, sizeof(*m->rc));
        if (!m->rc) {
                free(m);
                return -ENOMEM;
        }
        m->routes = routes;
        m->n = n;
        *ret_metrics = m;
        return 0;
}

/**
 * metrics_free() - free the counters; NULL ok.
 */
void metrics_free(Metrics *m)
{
        if (!m)
                return;
        free(m->rc);
        free(m);
}

/**
 * metrics_http_observe() - count one answered request: route index (n for
 * unmatched), status (499: no answer), seconds from headers to the end.
 * Lock-free; NULL @m is allowed.
 */
void metrics_http_observe(Metrics *m, size_t route, int status, double seconds)
{
        RouteCounters *rc;
        size_t b = 0;

        if (!m)
                return;
        rc = &m->rc[route <= m->n ? route : m->n];
        if (status < 100 || status > 599)
                status = 599;
        atomic_fetch_add_explicit(&rc->codes[status - 100], 1, memory_order_relaxed);
        while (b < N_BUCKETS && seconds > buckets[b])
                b++;
        atomic_fetch_add_explicit(&rc->hist[b], 1, memory_order_relaxed);
        if (seconds > 0)
                atomic_fetch_add_explicit(&rc->sum_us, (uint64_t)(seconds * 1e6), memory_order_relaxed);
}

/**
 * metrics_http_count() - requests counted for (route, status).
 */
uint64_t metrics_http_count(Metrics *m, size_t route, int status)
{
        if (!m || route > m->n || status < 100 || status > 599)
                return 0;
        return atomic_load_explicit(&m->rc[route].codes[status - 100], memory_order_relaxed);
}

/* A growing text buffer; on allocation failure it sets failed and stays put. */
typedef struct Buf {
        char *s;
        size_t len, cap;
        bool failed;
} Buf;

static void __attribute__((format(printf, 2, 3))) bprintf(Buf *b, const char *fmt, ...)
{
        va_list ap;
        int n;

        if (b->failed)
                return;
        for (;;) {
                va_start(ap, fmt);
                n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
                va_end(ap);
                if (n < 0) {
                        b->failed = true;
                        return;
                }
                if ((size_t)n < b->cap - b->len) {
                        b->len += (size_t)n;
                        return;
                }
                size_t cap = (b->cap + (size_t)n + 1) * 2;
                char *s = realloc(b->s, cap);

                if (!s) {
                        b->failed = true;
                        return;
                }
                b->s = s;
                b->cap = cap;
        }
}

/* Label values: escape backslash, quote and newline (format 0.0.4). */
static const char *esc(const char *in, char *out, size_t outlen)
{
        size_t o = 0;

        for (; *in && o + 3 < outlen; in++) {
                if (*in == '\\' || *in == '"') {
                        out[o++] = '\\';
                        out[o++] = *in;
                } else if (*in == '\n') {
                        out[o++] = '\\';
                        out[o++] = 'n';
                } else
                        out[o++] = *in;
        }
        out[o] = 0;
        return out;
}

static const char *route_name(Metrics *m, size_t i)
{
        return i < m->n ? m->routes[i] : "unmatched";
}

/* One counter without labels: its HELP, TYPE and value lines. */
static void counter(Buf *b, const char *name, const char *help, long long value)
{
        bprintf(b, "# HELP %s %s\n# TYPE %s counter\n%s %lld\n", name, help, name, name, value);
}

static void render_http(Metrics *m, Buf *b)
{
        char e[256];

        bprintf(b, "# HELP kevald_http_requests_total HTTP requests answered, by route template and status code.\n"
                   "# TYPE kevald_http_requests_total counter\n");
        for (size_t r = 0; r <= m->n; r++)
                for (int c = 0; c < CODES; c++) {
                        uint64_t v = atomic_load_explicit(&m->rc[r].codes[c], memory_order_relaxed);

                        if (v)
                                bprintf(b, "kevald_http_requests_total{route=\"%s\",code=\"%d\"} %llu\n",
                                        esc(route_name(m, r), e, sizeof(e)), c + 100,
                                        (unsigned long long)v);
                }
        bprintf(b, "# HELP kevald_http_request_duration_seconds Time from request headers to the end of the answer.\n"
                   "# TYPE kevald_http_request_duration_seconds histogram\n");
        for (size_t r = 0; r <= m->n; r++) {
                uint64_t cum = 0;
                RouteCounters *rc = &m->rc[r];

                esc(route_name(m, r), e, sizeof(e));
                for (size_t i = 0; i < N_BUCKETS; i++) {
                        cum += atomic_load_explicit(&rc->hist[i], memory_order_relaxed);
                        bprintf(b, "kevald_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %llu\n",
                                e, buckets[i], (unsigned long long)cum);
                }
                cum += atomic_load_explicit(&rc->hist[N_BUCKETS], memory_order_relaxed);
                bprintf(b, "kevald_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\n",
                        e, (unsigned long long)cum);
                bprintf(b, "kevald_http_request_duration_seconds_sum{route=\"%s\"} %.6f\n", e,
                        (double)atomic_load_explicit(&rc->sum_us, memory_order_relaxed) * 1e-6);
                bprintf(b, "kevald_http_request_duration_seconds_count{route=\"%s\"} %llu\n", e,
                        (unsigned long long)cum);
        }
}

static long long jint(json_t *obj, const char *key)
{
        json_t *v = json_object_get(obj, key);

        return json_is_number(v) ? (long long)json_number_value(v) : 0;
}

static void render_dispatch(json_t *d, Buf *b)
{
        json_t *cw = json_object_get(d, "compile_workers");
        json_t *gpus = json_object_get(d, "gpus");
        json_t *counters = json_object_get(d, "counters");
        json_t *layers = json_object_get(d, "layers");
        static const char *const gpu_states[] = { "ready", "busy", "restarting", "failed", NULL };
        long long gpu_restarts = 0;
        const char *key;
        json_t *v, *g;
        size_t i;
        char e1[128], e2[128];

        bprintf(b, "# HELP kevald_workers Worker processes by role and state.\n"
                   "# TYPE kevald_workers gauge\n");
        if (cw) {
                long long ready = jint(cw, "ready"), busy = jint(cw, "busy");

                bprintf(b, "kevald_workers{role=\"compile\",state=\"configured\"} %lld\n",
                        jint(cw, "configured"));
                bprintf(b, "kevald_workers{role=\"compile\",state=\"ready\"} %lld\n", ready);
                bprintf(b, "kevald_workers{role=\"compile\",state=\"busy\"} %lld\n", busy);
        }
        for (int s = 0; gpu_states[s]; s++) {
                long long count = 0;

                json_array_foreach(gpus, i, g) {
                        const char *st = json_string_value(json_object_get(g, "state"));

                        if (st && !strcmp(st, gpu_states[s]))
                                count++;
                }
                bprintf(b, "kevald_workers{role=\"gpu\",state=\"%s\"} %lld\n", gpu_states[s], count);
        }
        json_array_foreach(gpus, i, g)
                gpu_restarts += jint(g, "restarts");
        bprintf(b, "# HELP kevald_worker_restarts_total Worker processes restarted, by role.\n"
                   "# TYPE kevald_worker_restarts_total counter\n");
        bprintf(b, "kevald_worker_restarts_total{role=\"compile\"} %lld\n", cw ? jint(cw, "restarts") : 0);
        bprintf(b, "kevald_worker_restarts_total{role=\"gpu\"} %lld\n", gpu_restarts);
        counter(b, "kevald_compile_cache_hits_total", "Compile cache hits.", jint(counters, "cache_hits"));
        counter(b, "kevald_compile_cache_misses_total", "Compile cache misses.", jint(counters, "cache_misses"));
        counter(b, "kevald_compile_groups_total", "Group JOBs: compile-only requests sent to a compile worker together.",
                jint(counters, "compile_groups"));
        counter(b, "kevald_compile_merged_total", "Compile requests answered from a merged NVRTC program.",
                jint(counters, "compile_merged"));
        bprintf(b, "# HELP kevald_gpu_busy_seconds_total Seconds each GPU worker spent on jobs.\n"
                   "# TYPE kevald_gpu_busy_seconds_total counter\n");
        json_array_foreach(gpus, i, g) {
                json_t *bs = json_object_get(g, "busy_s");

                bprintf(b, "kevald_gpu_busy_seconds_total{gpu=\"%lld\"} %.6f\n", jint(g, "index"),
                        json_is_number(bs) ? json_number_value(bs) : 0.0);
        }
        bprintf(b, "# HELP kevald_gpu_time_seconds_total Seconds each GPU spent with a job running, with no worker "
                   "ready, and with nothing to run (the dispatcher's clock).\n"
                   "# TYPE kevald_gpu_time_seconds_total counter\n");
        json_array_foreach(gpus, i, g) {
                const char *state;
                json_t *secs;

                json_object_foreach(json_object_get(g, "time_s"), state, secs)
                        bprintf(b, "kevald_gpu_time_seconds_total{gpu=\"%lld\",state=\"%s\"} %.6f\n", jint(g, "index"),
                                state, json_number_value(secs));
        }
        bprintf(b, "# HELP kevald_sandbox_layer_active Confinement layers in force, by worker profile.\n"
                   "# TYPE kevald_sandbox_layer_active gauge\n");
        json_object_foreach(layers, key, v) {
                const char *lk;
                json_t *lv;

                json_object_foreach(v, lk, lv) {
                        if (json_is_object(lv))   /* {"active": bool, "detail": "..."} */
                                lv = json_object_get(lv, "active");
                        int on = json_is_true(lv) ||
                                 (json_is_number(lv) && json_number_value(lv) != 0) ||
                                 (json_is_string(lv) && strcmp(json_string_value(lv), "off") &&
                                  strcmp(json_string_value(lv), "none") &&
                                  strcmp(json_string_value(lv), "unavailable") &&
                                  strcmp(json_string_value(lv), ""));

                        bprintf(b, "kevald_sandbox_layer_active{profile=\"%s\",layer=\"%s\"} %d\n",
                                esc(key, e1, sizeof(e1)), esc(lk, e2, sizeof(e2)), on);
                }
        }
}

/* The job duration histograms the store keeps (migrations/006_dashboard.sql). */
static const struct {
        const char *metric;       /* v_metric_histograms.metric; exposed as kevald_<metric> */
        const char *label;        /* the name of its label, or NULL */
        const char *help;
} job_histograms[] = {
        { "submission_latency_seconds", "mode",
          "Time from acceptance to the stored result, by mode (cancelled submissions excluded)." },
        { "compile_duration_seconds", NULL, "Compile time of each job that compiled (compile cache misses)." },
        { "job_gpu_busy_seconds", NULL, "Event-timed GPU time of each GPU job's plan executions." },
};

static void render_job_histograms(json_t *rows, Buf *b)
{
        char e[128], pre[192] = "", lab[192] = "";

        for (size_t h = 0; h < sizeof(job_histograms) / sizeof(job_histograms[0]); h++) {
                const char *name = job_histograms[h].metric, *prev = NULL;
                json_t *row, *last = NULL;
                uint64_t cum = 0;

                pre[0] = lab[0] = 0;
                bprintf(b, "# HELP kevald_%s %s\n# TYPE kevald_%s histogram\n", name, job_histograms[h].help, name);
                for (size_t i = 0; i <= json_array_size(rows); i++) {
                        const char *metric, *label = NULL;
                        json_t *le;

                        row = json_array_get(rows, i);
                        if (row) {
                                metric = json_string_value(json_object_get(row, "metric"));
                                label = json_string_value(json_object_get(row, "label"));
                                if (!metric || strcmp(metric, name) || !label)
                                        continue;
                        }
                        /* A series ends: its sum and count. */
                        if (last && (!row || strcmp(label, prev))) {
                                bprintf(b, "kevald_%s_sum%s %.6f\nkevald_%s_count%s %lld\n", name, lab,
                                        json_number_value(json_object_get(last, "sum")), name, lab,
                                        (long long)jint(last, "count"));
                                cum = 0;
                        }
                        if (!row)
                                break;
                        if (job_histograms[h].label) {
                                esc(label, e, sizeof(e));
                                snprintf(pre, sizeof(pre), "%s=\"%s\",", job_histograms[h].label, e);
                                snprintf(lab, sizeof(lab), "{%s=\"%s\"}", job_histograms[h].label, e);
                        }
                        cum += (uint64_t)jint(row, "n");
                        le = json_object_get(row, "le");
                        if (json_is_number(le))
                                bprintf(b, "kevald_%s_bucket{%sle=\"%g\"} %llu\n", name, pre, json_number_value(le),
                                        (unsigned long long)cum);
                        else
                                bprintf(b, "kevald_%s_bucket{%sle=\"+Inf\"} %llu\n", name, pre,
                                        (unsigned long long)cum);
                        prev = label;
                        last = row;
                }
        }
}

/**
 * metrics_render() - see metrics.h.
 */
char *metrics_render(Metrics *m, const MetricsSources *src, size_t *ret_len)
{
        Buf b = { 0 };
        char e[128];

        bprintf(&b, "# HELP kevald_submissions_total Finished submissions, by verdict.\n"
                    "# TYPE kevald_submissions_total counter\n");
        if (src && src->stats) {
                json_t *byv = json_object_get(src->stats, "by_verdict");
                const char *k;
                json_t *v;

                if (!byv)
                        byv = json_object_get(json_object_get(src->stats, "submissions"), "by_verdict");
                json_object_foreach(byv, k, v)
                        if (json_is_integer(v))
                                bprintf(&b, "kevald_submissions_total{verdict=\"%s\"} %lld\n",
                                        esc(k, e, sizeof(e)), (long long)json_integer_value(v));
        }
        if (src && src->have_queue) {
                bprintf(&b, "# HELP kevald_queue_depth Unfinished submissions, by state.\n"
                            "# TYPE kevald_queue_depth gauge\n"
                            "kevald_queue_depth{state=\"queued\"} %lld\n"
                            "kevald_queue_depth{state=\"compiled\"} %lld\n"
                            "kevald_queue_depth{state=\"running\"} %lld\n",
                        (long long)src->queue[0], (long long)src->queue[1], (long long)src->queue[2]);
        }
        render_http(m, &b);
        if (src && src->histograms)
                render_job_histograms(src->histograms, &b);
        if (src && src->dispatch)
                render_dispatch(src->dispatch, &b);
        if (b.failed || !b.s) {
                free(b.s);
                return NULL;
        }
        *ret_len = b.len;
        return b.s;
}
