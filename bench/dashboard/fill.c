/*
 * fill - a store holding N finished submissions, for the dashboard benchmark
 * (bench/dashboard/run.sh, BENCHMARKS.md).
 *
 *   fill DB N
 *
 * Goes through the store's own paths, as the server does: requests of 1,000
 * submissions through store_insert_request() (what ingest commits), then one
 * store_finish() per submission with a result JSON shaped like a real one
 * (compile section, per-shape correctness and timing, GPU, resources), so
 * every trigger of migrations/ fires as in production. The mix, per run:
 *
 *   runs        bench-big (half of N: 100 steps x N/200 samples), then runs of
 *               10,000 (50 steps x 200 samples), and submissions without a run
 *   tasks       40 (bench_task_00..39), round robin over the samples
 *   verdicts    correct 52 %, incorrect 25 %, compile_error 10 %, runtime_error 6 %,
 *               timeout 3 %, rejected 2 %, internal_error 2 %; the correct rate
 *               grows with the step
 *   speedups    log-normal around 0.9x, drifting up to ~1.6x by the last step
 *   turns       every fifth submission of a run continues one of the
 *               previous step (tags.turn, tags.parent)
 *   GPUs        two (result.gpu.index 0 and 1)
 *
 * Build (not part of the default build; run.sh does this):
 *
 *   cc -O2 -std=c11 -D_GNU_SOURCE -I. -I/usr/include/postgresql bench/dashboard/fill.c server/store/store.c \
 *      server/store/store_sqlite.c server/store/store_pg.c BUILD/server/migrations.c BUILD/server/pg_migrations.c \
 *      common/log.c -lsqlite3 -lpq -ljansson -lpthread -lm -o fill
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "server/store/store.h"

#define BATCH 1000
#define TASKS 40

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double urand(void)
{
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return (double)(rng >> 11) / 9007199254740992.0;
}

static double nrand(void)
{
        double u = urand(), v = urand();

        return sqrt(-2 * log(u + 1e-300)) * cos(2 * M_PI * v);
}

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct Sub {
        char run[32];
        int step, sample, task;
        int64_t parent;
} Sub;

static json_t *request(const Sub *s)
{
        char src[600], task[32];
        json_t *tags;

        snprintf(task, sizeof(task), "bench_task_%02d", s->task);
        snprintf(src, sizeof(src),
                 "extern \"C\" __global__ void k(const float *x, float *y, int n) {\n"
                 "  int i = blockIdx.x * blockDim.x + threadIdx.x; /* %s step %d sample %d */\n"
                 "  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;\n}\n",
                 s->run, s->step, s->sample);
        tags = s->run[0] ? json_pack("{s:s, s:i, s:i, s:i}", "run_id", s->run, "step", s->step, "sample", s->sample,
                                     "turn", s->parent ? 1 : 0)
                         : json_object();
        if (s->parent)
                json_object_set_new(tags, "parent", json_integer(s->parent));
        return json_pack("{s:s, s:s, s:s, s:[{s:s, s:[s], s:[i], s:s, s:[s, s, {s:s, s:s}]}], s:s, s:o}", "task",
                         task, "language", "cuda", "source", src, "plan", "kernel", "k", "grid", "ceil_div(N, 256)",
                         "block", 256, "shared", "0", "args", "x", "y", "type", "i32", "value", "N", "mode", "full",
                         "tags", tags);
}

static const char *pick_verdict(double progress)
{
        double u = urand(), correct = 0.42 + 0.2 * progress;

        if (u < correct)
                return "correct";
        u -= correct;
        if (u < 0.25)
                return "incorrect";
        u -= 0.25;
        if (u < 0.10)
                return "compile_error";
        u -= 0.10;
        if (u < 0.06)
                return "runtime_error";
        u -= 0.06;
        if (u < 0.03)
                return "timeout";
        u -= 0.03;
        return u < 0.02 ? "rejected" : "internal_error";
}

static json_t *side(double ms)
{
        return json_pack("{s:f, s:f, s:f, s:f, s:f, s:i, s:f}", "median_ms", ms, "mean_ms", ms * 1.02, "stdev_ms",
                         ms * 0.03, "min_ms", ms * 0.97, "max_ms", ms * 1.2, "trials", 150, "precision", 0.009);
}

static json_t *result(const Sub *s, const char *verdict, double speedup, int64_t id)
{
        bool compiled = strcmp(verdict, "compile_error") != 0;
        bool hit = urand() < 0.3;
        double ref = 0.05 + 0.01 * s->task, cand = speedup > 0 ? ref / speedup : ref;
        json_t *r = json_pack("{s:s, s:s, s:s, s:{s:b, s:b, s:f, s:s, s:s, s:s, s:b, s:[]}, s:{s:s, s:s, s:s, s:i}}",
                              "verdict", verdict, "task", "bench", "seed", "0123456789abcdef", "compile", "ok",
                              compiled, "cache_hit", hit, "compile_ms", 20 + 60 * urand(), "arch", "sm_90a", "nvrtc",
                              "13.0", "log",
                              compiled ? "" : "kernel.cu(3): error: identifier \"z\" is undefined\n  y[i] = z;\n"
                                              "         ^\n\n1 error detected in the compilation of \"kernel.cu\".\n",
                              "log_truncated", false, "kernels", "gpu", "name", "NVIDIA H100 80GB HBM3", "driver",
                              "580.95.05", "cc", "9.0", "index", (int)(id % 2));
        char fb[200];

        json_object_set_new(r, "reward_fields", json_pack("{s:b, s:b, s:o}", "compiled", compiled, "correct",
                                                          !strcmp(verdict, "correct"), "speedup",
                                                          speedup > 0 ? json_real(speedup) : json_null()));
        if (compiled && strcmp(verdict, "rejected")) {
                json_object_set_new(r, "gpu_busy_ms", json_real((cand + ref) * 300));
                json_object_set_new(r, "wall_ms", json_real((cand + ref) * 320 + 40));
                json_object_set_new(r, "correctness",
                                    json_pack("{s:b, s:[{s:s, s:b, s:i, s:[{s:s, s:f, s:f, s:i, s:i}]}]}", "passed",
                                              speedup > 0, "shapes", "shape", "default", "passed", speedup > 0,
                                              "trials", 3, "buffers", "name", "y", "max_abs", speedup > 0 ? 0.0 : 0.5,
                                              "max_rel", 0.0, "mismatches", speedup > 0 ? 0 : 17, "count", 4096));
        }
        if (speedup > 0)
                json_object_set_new(r, "timing", json_pack("{s:f, s:[{s:s, s:o, s:o, s:f}]}", "speedup", speedup,
                                                           "shapes", "shape", "default", "candidate", side(cand),
                                                           "reference", side(ref), "speedup", speedup));
        snprintf(fb, sizeof(fb), "%s (synthetic result of bench/dashboard/fill)", verdict);
        json_object_set_new(r, "feedback", json_string(fb));
        return r;
}

int main(int argc, char **argv)
{
        Store *store = NULL;
        long n, done = 0;
        Sub *subs;
        int64_t *ids;
        double t0;
        int r;

        if (argc != 3 || (n = atol(argv[2])) < BATCH) {
                fprintf(stderr, "usage: fill DB N (N >= %d)\n", BATCH);
                return 2;
        }
        log_init("fill", LOG_LEVEL_WARN);
        if (store_open(argv[1], &store) != 0)
                return 1;
        subs = calloc((size_t)n, sizeof(*subs));
        ids = calloc((size_t)n, sizeof(*ids));
        if (!subs || !ids)
                return 1;
        /* Runs: bench-big gets half, bench-rK 10,000 each, the rest (< 10,000) no run. */
        {
                long i = 0, big = n / 2, per_big = big / 100 > 0 ? big / 100 : 1;
                int k = 0;

                for (; i < big; i++) {
                        snprintf(subs[i].run, sizeof(subs[i].run), "bench-big");
                        subs[i].step = (int)(i / per_big);
                        subs[i].sample = (int)(i % per_big);
                }
                while (n - i >= 10000) {
                        for (long j = 0; j < 10000; j++, i++) {
                                snprintf(subs[i].run, sizeof(subs[i].run), "bench-r%d", k);
                                subs[i].step = (int)(j / 200);
                                subs[i].sample = (int)(j % 200);
                        }
                        k++;
                }
                for (long j = 0; j < n; j++)
                        subs[j].task = subs[j].sample % TASKS;
        }
        t0 = now_s();
        for (long off = 0; off < n; off += BATCH) {
                long m = n - off < BATCH ? n - off : BATCH;
                StoreNew sn[BATCH];
                json_t *reqs[BATCH];
                char task[BATCH][32];
                StoreInsert ins = { .subs = sn, .n = (size_t)m };
                bool replayed = false;

                for (long j = 0; j < m; j++) {
                        Sub *s = &subs[off + j];

                        /* A second turn: continue the same sample of the previous step. */
                        if (s->run[0] && s->step > 0 && (off + j) % 5 == 0) {
                                long prev = off + j - (!strcmp(s->run, "bench-big") ? (n / 2 / 100 > 0 ? n / 2 / 100 : 1) : 200);

                                if (prev >= 0 && ids[prev])
                                        s->parent = ids[prev];
                        }
                        snprintf(task[j], sizeof(task[j]), "bench_task_%02d", s->task);
                        reqs[j] = request(s);
                        sn[j] = (StoreNew){ .request = reqs[j], .task = task[j], .mode = "full",
                                            .token_id = 0 };
                }
                r = store_insert_request(store, &ins, ids + off, &replayed);
                for (long j = 0; j < m; j++)
                        json_decref(reqs[j]);
                if (r != 0) {
                        fprintf(stderr, "fill: insert failed: %d\n", r);
                        return 1;
                }
        }
        fprintf(stderr, "fill: %ld submissions inserted in %.1f s\n", n, now_s() - t0);
        t0 = now_s();
        for (long i = 0; i < n; i++) {
                Sub *s = &subs[i];
                double progress = s->run[0] ? s->step / (!strcmp(s->run, "bench-big") ? 100.0 : 50.0) : 0.5;
                const char *verdict = pick_verdict(progress);
                double speedup = !strcmp(verdict, "correct") ? exp(log(0.9) + 0.55 * progress + 0.35 * nrand()) : 0;
                json_t *res = result(s, verdict, speedup, ids[i]);

                r = store_finish(store, ids[i], NULL, verdict, speedup > 0 ? speedup : NAN, res);
                json_decref(res);
                if (r != 0) {
                        fprintf(stderr, "fill: finish %" PRId64 " failed: %d\n", ids[i], r);
                        return 1;
                }
                done++;
        }
        fprintf(stderr, "fill: %ld finished in %.1f s\n", done, now_s() - t0);
        free(subs);
        free(ids);
        store_close(store);
        return 0;
}
