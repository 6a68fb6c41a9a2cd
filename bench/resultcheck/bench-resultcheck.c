/*
 * bench-resultcheck - what checking a compile RESULT costs the dispatcher
 * (server/dispatch/resultcheck.c), against the store read it follows on a cache hit.
 *
 * For every entry of a kevald SQLite store's compile cache: the time of
 * store_cache_get() and of resultcheck_compile() on what it returned, each
 * the median of REPS runs, and their ratio. Run by run.sh (which fills a
 * store with real NVRTC builds); by hand:
 *   bench-resultcheck STORE.db ARCH < keys   (64 hex digits a line)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/dispatch/resultcheck.h"
#include "server/store/store.h"

#define REPS 201

static double now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
        static double t_get[REPS], t_chk[REPS];
        Store *st = NULL;
        char line[128];

        if (argc != 3 || store_open(argv[1], &st) != 0) {
                fprintf(stderr, "usage: bench-resultcheck STORE.db ARCH\n");
                return 2;
        }
        /* the cache keys come on stdin, 64 hex digits a line (run.sh reads them with sqlite3) */
        printf("%-10s %10s %12s %12s %8s\n", "entry", "bytes", "get_us", "check_us", "ratio");
        while (fgets(line, sizeof(line), stdin)) {
                uint8_t key[32];
                json_t *compile = NULL;
                uint8_t *cubin = NULL;
                size_t len = 0;
                char why[RESULTCHECK_WHY_BYTES] = "";
                int bad = 0;

                if (strlen(line) < 64)
                        continue;
                for (int k = 0; k < 32; k++) {
                        unsigned v;
                        sscanf(line + 2 * k, "%2x", &v);
                        key[k] = (uint8_t)v;
                }
                for (int r = 0; r < REPS; r++) {
                        double t0 = now_us(), t1;
                        json_decref(compile);
                        free(cubin);
                        compile = NULL;
                        cubin = NULL;
                        if (store_cache_get(st, key, &compile, &cubin, &len) != 0) {
                                bad = 1;
                                break;
                        }
                        t1 = now_us();
                        bad |= resultcheck_compile(compile, cubin, len, argv[2], why) != 0;
                        t_get[r] = t1 - t0;
                        t_chk[r] = now_us() - t1;
                }
                if (!bad) {
                        qsort(t_get, REPS, sizeof(double), cmp_d);
                        qsort(t_chk, REPS, sizeof(double), cmp_d);
                        printf("%.8s   %10zu %12.1f %12.1f %8.3f\n", line, len, t_get[REPS / 2], t_chk[REPS / 2],
                               t_chk[REPS / 2] / t_get[REPS / 2]);
                } else {
                        printf("%.8s   entry missing or failing its checks: %s\n", line, why);
                }
                json_decref(compile);
                free(cubin);
        }
        store_close(st);
        return 0;
}
