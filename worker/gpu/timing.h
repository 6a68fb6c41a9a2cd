/*
 * timing - host-side statistics of the adaptive timing loop: summary
 * statistics of a sample of event-timed durations, the order-statistic
 * confidence interval of the median, and the stopping rule. No CUDA here, so
 * all of it is unit-tested on the CPU (worker/gpu/test-timing.c).
 *
 * The 95% confidence interval of the median of n samples is taken between
 * the order statistics of ranks n/2 - 1.96*sqrt(n)/2 and n/2 + 1.96*sqrt(n)/2
 * (distribution-free; 1-based ranks rounded outwards and clamped to [1, n]).
 * The precision is that interval's half-width divided by the median.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct TimingStats {
        size_t n;
        double median, mean, stdev, min, max;
        double ci_low, ci_high;  /* the median's 95% confidence interval */
        double precision;        /* (ci_high - ci_low) / 2 / median; +inf when unknown */
} TimingStats;

typedef struct TimingPolicy {
        double budget_ms;         /* wall time for the loop */
        double target_precision;  /* stop when precision <= this */
        int64_t min_trials;
        int64_t max_trials;
        int64_t warmup;
} TimingPolicy;

typedef enum {
        TIMING_GO_ON = 0,
        TIMING_STOP_PRECISION = 1, /* both medians known well enough */
        TIMING_STOP_BUDGET = 2,    /* the wall-time budget is spent */
        TIMING_STOP_TRIALS = 3,    /* max_trials reached */
        TIMING_STOP_TOO_SLOW = 4,  /* the candidate is known to be far slower than the reference */
} TimingStop;

/* A candidate slower than this speedup (reference median / candidate
 * median) after TIMING_TOO_SLOW_TRIALS pairs is not timed further: its
 * reward is already near zero, and more trials would only spend the GPU. */
#define TIMING_TOO_SLOW_SPEEDUP 0.1
#define TIMING_TOO_SLOW_TRIALS 3

int timing_stats_compute(const double *samples, size_t n, TimingStats *ret_stats);
void timing_ci_ranks(size_t n, size_t *ret_lo, size_t *ret_hi);
bool timing_too_slow(size_t trials, double cand_median, double ref_median);
TimingStop timing_should_stop(const TimingPolicy *policy, size_t trials, double elapsed_ms,
                              double cand_precision, double ref_precision, double cand_median,
                              double ref_median);
size_t timing_batch_size(const TimingPolicy *policy, size_t trials, double elapsed_ms,
                         double pair_ms);
double timing_geomean(const double *values, size_t n);
const char *timing_stop_name(TimingStop stop);
