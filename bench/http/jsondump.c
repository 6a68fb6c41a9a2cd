/*
 * jsondump - what the shortest-float rewrite (common/jsondump.c) costs an
 * answer: json_dumps() against jsondump_text() on an array of 10,000 reals
 * drawn uniformly (the worst case: nearly all need 16 or 17 digits), 20
 * dumps each, three rounds, as ratios within one run (BENCHMARKS.md, issue 24).
 *
 *   cc -O2 -I. bench/http/jsondump.c common/jsondump.c -ljansson -lm -o jsondump-bench
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/jsondump.h"

static double now_s(void)
{
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void)
{
        json_t *a = json_array();

        srand(1);
        for (int i = 0; i < 10000; i++)
                json_array_append_new(a, json_real((double)rand() / RAND_MAX * (i % 3 ? 1 : 1000)));
        for (int round = 0; round < 3; round++) {
                double t0 = now_s(), t1, t2;

                for (int k = 0; k < 20; k++)
                        free(json_dumps(a, JSON_COMPACT));
                t1 = now_s();
                for (int k = 0; k < 20; k++)
                        free(jsondump_text(a, JSON_COMPACT));
                t2 = now_s();
                printf("10,000 reals: json_dumps %.2f ms, jsondump_text %.2f ms (%.2fx)\n", (t1 - t0) / 20 * 1e3,
                       (t2 - t1) / 20 * 1e3, (t2 - t1) / (t1 - t0));
        }
        json_decref(a);
        return 0;
}
