/*
 * timing - see timing.h. Pure functions of their arguments; the GPU loop
 * that feeds them lives in judge_timing.c.
 */
#include "worker/gpu/timing.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

/**
 * timing_ci_ranks() - 0-based indices of the sorted sample that bound the
 * median's 95% confidence interval
 * @n: sample size, >= 1
 */
void timing_ci_ranks(size_t n, size_t *ret_lo, size_t *ret_hi)
{
        double half = 1.96 * sqrt((double)n) / 2.0;
        double lo = floor((double)n / 2.0 - half); /* 1-based rank, rounded down */
        double hi = ceil((double)n / 2.0 + half + 1.0); /* 1-based rank, rounded up */

        if (lo < 1)
                lo = 1;
        if (hi > (double)n)
                hi = (double)n;
        *ret_lo = (size_t)lo - 1;
        *ret_hi = (size_t)hi - 1;
}

/**
 * timing_stats_compute() - summary statistics of @samples
 * @samples: @n durations in ms; borrowed, not modified
 * @ret_stats: filled on success
 * Return: 0, -EINVAL for an empty sample, -ENOMEM.
 */
int timing_stats_compute(const double *samples, size_t n, TimingStats *ret_stats)
{
        TimingStats s;
        double *v, sum = 0, sq = 0;
        size_t lo, hi;

        if (n == 0)
                return -EINVAL;
        v = malloc(n * sizeof(*v));
        if (!v)
                return -ENOMEM;
        memcpy(v, samples, n * sizeof(*v));
        qsort(v, n, sizeof(*v), cmp_double);
        memset(&s, 0, sizeof(s));
        s.n = n;
        s.min = v[0];
        s.max = v[n - 1];
        s.median = (n % 2) ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
        for (size_t i = 0; i < n; i++)
                sum += v[i];
        s.mean = sum / (double)n;
        for (size_t i = 0; i < n; i++)
                sq += (v[i] - s.mean) * (v[i] - s.mean);
        s.stdev = n > 1 ? sqrt(sq / (double)(n - 1)) : 0.0;
        timing_ci_ranks(n, &lo, &hi);
        s.ci_low = v[lo];
        s.ci_high = v[hi];
        if (n < 3 || s.median <= 0)
                s.precision = INFINITY;
        else
                s.precision = (s.ci_high - s.ci_low) / 2.0 / s.median;
        free(v);
        *ret_stats = s;
        return 0;
}

/**
 * timing_too_slow() - whether @trials pairs with these medians (ms) already
 * show a speedup below TIMING_TOO_SLOW_SPEEDUP (at least
 * TIMING_TOO_SLOW_TRIALS pairs).
 */
bool timing_too_slow(size_t trials, double cand_median, double ref_median)
{
        return trials >= TIMING_TOO_SLOW_TRIALS && cand_median > 0 && ref_median >= 0 &&
               ref_median < TIMING_TOO_SLOW_SPEEDUP * cand_median;
}

/**
 * timing_should_stop() - the stopping rule of the timing loop
 * @trials: completed (candidate, reference) pairs
 * @elapsed_ms: wall time spent in the loop
 * @cand_median, @ref_median: the medians so far (ms)
 * Order: max_trials, then too slow (at least TIMING_TOO_SLOW_TRIALS pairs and
 * a speedup below TIMING_TOO_SLOW_SPEEDUP), then min_trials (never stop
 * before it, except for the budget once at least 3 pairs exist), then
 * precision, then budget.
 */
TimingStop timing_should_stop(const TimingPolicy *policy, size_t trials, double elapsed_ms,
                              double cand_precision, double ref_precision, double cand_median,
                              double ref_median)
{
        if ((int64_t)trials >= policy->max_trials)
                return TIMING_STOP_TRIALS;
        if (timing_too_slow(trials, cand_median, ref_median))
                return TIMING_STOP_TOO_SLOW;
        if ((int64_t)trials >= policy->min_trials && cand_precision <= policy->target_precision &&
            ref_precision <= policy->target_precision)
                return TIMING_STOP_PRECISION;
        if (elapsed_ms >= policy->budget_ms && trials >= 3)
                return TIMING_STOP_BUDGET;
        return TIMING_GO_ON;
}

/**
 * timing_batch_size() - how many pairs to enqueue before the next check:
 * up to min_trials first, then about a tenth of what is done; never more
 * than what is left of max_trials, nor than what fits in the rest of the
 * budget at @pair_ms each (at least 1); at most 64.
 */
size_t timing_batch_size(const TimingPolicy *policy, size_t trials, double elapsed_ms, double pair_ms)
{
        size_t b, left;

        if ((int64_t)trials >= policy->max_trials)
                return 0;
        left = (size_t)(policy->max_trials - (int64_t)trials);
        if ((int64_t)trials < policy->min_trials)
                b = (size_t)(policy->min_trials - (int64_t)trials);
        else
                b = trials / 10 > 4 ? trials / 10 : 4;
        if (pair_ms > 0) {
                double room = (policy->budget_ms - elapsed_ms) / pair_ms;
                if (room < 1)
                        room = 1;
                if ((double)b > room)
                        b = (size_t)room;
        }
        if (b > 64)
                b = 64;
        if (b > left)
                b = left;
        if (b < 1)
                b = 1;
        return b;
}

/** timing_geomean() - geometric mean of positive @values; 0 when n is 0 or a value is not positive. */
double timing_geomean(const double *values, size_t n)
{
        double s = 0;

        if (n == 0)
                return 0;
        for (size_t i = 0; i < n; i++) {
                if (!(values[i] > 0))
                        return 0;
                s += log(values[i]);
        }
        return exp(s / (double)n);
}

const char *timing_stop_name(TimingStop stop)
{
        switch (stop) {
        case TIMING_STOP_PRECISION: return "precision";
        case TIMING_STOP_BUDGET: return "budget";
        case TIMING_STOP_TRIALS: return "max_trials";
        case TIMING_STOP_TOO_SLOW: return "too_slow";
        default: return "running";
        }
}
