/*
 * metrics - Prometheus text exposition (format 0.0.4) for GET /metrics:
 * HTTP counters and latency histograms kept here with atomics (no lock on
 * the request path), and gauges, counters and the job duration histograms
 * (end-to-end latency, compile time, GPU time per job; kept by the store's
 * triggers) read from the store and the dispatcher snapshot at scrape time.
 */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct Metrics Metrics;

/**
 * metrics_new() - counters for @n routes
 * @routes: route templates used as the "route" label; borrowed, must
 *          outlive the Metrics. Index @n is the label "unmatched".
 * Return: 0 or -ENOMEM.
 */
int metrics_new(const char *const *routes, size_t n, Metrics **ret_metrics);
void metrics_free(Metrics *m);

/* Count one request: route index (n for unmatched), status code, seconds taken. Thread-safe. */
void metrics_http_observe(Metrics *m, size_t route, int status, double seconds);
/* Requests counted so far for (route, status). */
uint64_t metrics_http_count(Metrics *m, size_t route, int status);

/* What a scrape reads besides the HTTP counters; any member may be NULL. */
typedef struct MetricsSources {
        json_t *dispatch;         /* dispatch_status() */
        json_t *stats;            /* store_stats(): "by_verdict" is read */
        int64_t queue[3];         /* queued, compiled, running */
        int have_queue;
        json_t *histograms;       /* rows of v_metric_histograms (migrations/006): metric, label,
                                   * le (null: +Inf), n (per bucket), count, sum; ordered */
} MetricsSources;

/**
 * metrics_render() - the whole exposition text
 * @ret_len: its length
 * Return: a new string (free()), or NULL on allocation failure.
 */
char *metrics_render(Metrics *m, const MetricsSources *src, size_t *ret_len);
