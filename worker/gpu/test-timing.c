/*
 * test-timing - the host statistics of the timing loop (worker/gpu/timing.h):
 * summary statistics, the order-statistic confidence interval of the median,
 * the stopping rule, batch sizing, and the geometric mean.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/gpu/timing.h"
#include "common/testcheck.h"

#define NEAR(a, b) (fabs((double)(a) - (double)(b)) <= 1e-12 * (1 + fabs((double)(b))))

static void test_summary(void)
{
        double odd[] = { 9, 1, 8, 2, 7, 3, 6, 4, 5 }; /* unsorted on purpose */
        double even[] = { 4, 1, 3, 2 };
        double one[] = { 2.5 };
        TimingStats s;

        CHECK(timing_stats_compute(odd, 9, &s) == 0);
        CHECK(s.n == 9 && NEAR(s.median, 5) && NEAR(s.mean, 5) && NEAR(s.min, 1) && NEAR(s.max, 9));
        CHECK(NEAR(s.stdev, sqrt(7.5)));
        CHECK(odd[0] == 9); /* the input is not reordered */
        CHECK(timing_stats_compute(even, 4, &s) == 0);
        CHECK(NEAR(s.median, 2.5) && NEAR(s.mean, 2.5));
        CHECK(timing_stats_compute(one, 1, &s) == 0);
        CHECK(NEAR(s.median, 2.5) && s.stdev == 0 && isinf(s.precision));
        CHECK(timing_stats_compute(one, 0, &s) < 0);
}

static void test_ci(void)
{
        size_t lo, hi;
        double v[100];
        TimingStats s;

        /* n = 100: ranks 50 -/+ 9.8 -> 1-based [40, 61] -> 0-based [39, 60] */
        timing_ci_ranks(100, &lo, &hi);
        CHECK(lo == 39 && hi == 60);
        timing_ci_ranks(10, &lo, &hi); /* 5 -/+ 3.1: [1, 10] clamped -> [0, 9] */
        CHECK(lo == 0 && hi == 9);
        timing_ci_ranks(1, &lo, &hi);
        CHECK(lo == 0 && hi == 0);
        for (int i = 0; i < 100; i++)
                v[i] = 1.0 + i * 0.001; /* 1.000 .. 1.099 */
        CHECK(timing_stats_compute(v, 100, &s) == 0);
        CHECK(NEAR(s.ci_low, v[39]) && NEAR(s.ci_high, v[60]));
        CHECK(NEAR(s.precision, (v[60] - v[39]) / 2 / s.median));
        for (int i = 0; i < 100; i++)
                v[i] = 0.25;
        CHECK(timing_stats_compute(v, 100, &s) == 0);
        CHECK(s.precision == 0);
}

/* The interval covers the true median about 95% of the time, and narrows
 * like 1/sqrt(n). */
static void test_ci_coverage(void)
{
        unsigned long x = 1;
        int covered = 0, runs = 2000;
        double w_small = 0, w_large = 0;

        for (int r = 0; r < runs; r++) {
                double v[400];
                TimingStats s;
                for (int i = 0; i < 400; i++) {
                        x = x * 6364136223846793005ul + 1442695040888963407ul;
                        v[i] = (double)(x >> 11) / 9007199254740992.0; /* U(0,1): median 0.5 */
                }
                timing_stats_compute(v, 100, &s);
                covered += s.ci_low <= 0.5 && 0.5 <= s.ci_high;
                w_small += s.ci_high - s.ci_low;
                timing_stats_compute(v, 400, &s);
                w_large += s.ci_high - s.ci_low;
        }
        CHECK(covered > runs * 93 / 100 && covered < runs * 99 / 100);
        CHECK(fabs(w_small / w_large - 2.0) < 0.2);
}

static void test_stop(void)
{
        TimingPolicy p = { .budget_ms = 100, .target_precision = 0.01, .min_trials = 10, .max_trials = 50, .warmup = 3 };

        CHECK(timing_should_stop(&p, 5, 1, 0.001, 0.001, 1, 1) == TIMING_GO_ON);        /* below min_trials */
        CHECK(timing_should_stop(&p, 10, 1, 0.001, 0.001, 1, 1) == TIMING_STOP_PRECISION);
        CHECK(timing_should_stop(&p, 10, 1, 0.001, 0.02, 1, 1) == TIMING_GO_ON);       /* reference not yet */
        CHECK(timing_should_stop(&p, 20, 100, 0.5, 0.5, 1, 1) == TIMING_STOP_BUDGET);
        CHECK(timing_should_stop(&p, 2, 1000, 0.5, 0.5, 1, 1) == TIMING_GO_ON);        /* at least 3 pairs */
        CHECK(timing_should_stop(&p, 50, 1, 0.5, 0.5, 1, 1) == TIMING_STOP_TRIALS);
        CHECK(timing_should_stop(&p, 10, 1, INFINITY, INFINITY, 1, 1) == TIMING_GO_ON);
        /* too slow: a speedup under 0.1 after 3 pairs, not before, and not at 0.1 or above */
        CHECK(timing_should_stop(&p, 3, 1, INFINITY, INFINITY, 10.0, 0.5) == TIMING_STOP_TOO_SLOW);
        CHECK(timing_should_stop(&p, 2, 1, INFINITY, INFINITY, 10.0, 0.5) == TIMING_GO_ON);
        CHECK(timing_should_stop(&p, 3, 1, INFINITY, INFINITY, 10.0, 1.0) == TIMING_GO_ON);
        CHECK(timing_should_stop(&p, 50, 1, 0.5, 0.5, 10.0, 0.5) == TIMING_STOP_TRIALS);
        CHECK(strcmp(timing_stop_name(TIMING_STOP_TOO_SLOW), "too_slow") == 0);
        /* the same rule on its own (the warm-up's early stop) */
        CHECK(timing_too_slow(3, 10.0, 0.99));
        CHECK(!timing_too_slow(3, 10.0, 1.0));
        CHECK(!timing_too_slow(2, 10.0, 0.01));
        CHECK(!timing_too_slow(3, 0.0, 0.0));
}

static void test_batch(void)
{
        TimingPolicy p = { .budget_ms = 100, .target_precision = 0.01, .min_trials = 10, .max_trials = 1000, .warmup = 3 };

        CHECK(timing_batch_size(&p, 0, 0, 0.1) == 10);   /* up to min_trials */
        CHECK(timing_batch_size(&p, 4, 0, 0.1) == 6);
        CHECK(timing_batch_size(&p, 10, 1, 0.1) == 4);
        CHECK(timing_batch_size(&p, 300, 1, 0.1) == 30);
        CHECK(timing_batch_size(&p, 900, 1, 0.1) == 64);  /* capped */
        CHECK(timing_batch_size(&p, 995, 1, 0.1) == 5);   /* what is left */
        CHECK(timing_batch_size(&p, 1000, 1, 0.1) == 0);
        CHECK(timing_batch_size(&p, 0, 0, 30) == 3);      /* slow pairs: the budget fits 3 */
        CHECK(timing_batch_size(&p, 300, 99.5, 30) == 1); /* at least 1 */
}

static void test_geomean(void)
{
        double a[] = { 1, 4 }, b[] = { 2, 0 }, c[] = { 3 };

        CHECK(NEAR(timing_geomean(a, 2), 2));
        CHECK(timing_geomean(b, 2) == 0);
        CHECK(NEAR(timing_geomean(c, 1), 3));
        CHECK(timing_geomean(c, 0) == 0);
}

int main(void)
{
        test_summary();
        test_ci();
        test_ci_coverage();
        test_stop();
        test_batch();
        test_geomean();
        if (failures) {
                fprintf(stderr, "test-timing: %d failure(s)\n", failures);
                return 1;
        }
        printf("test-timing: ok\n");
        return 0;
}
