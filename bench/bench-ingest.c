/*
 * bench-ingest - how many submissions per second kevald accepts durably.
 *
 *   bench-ingest DB direct SECONDS            one thread, one transaction (one fsync) per submission
 *   bench-ingest DB group SECONDS THREADS     THREADS callers, single submissions, group commit
 *   bench-ingest DB batch SECONDS THREADS N   THREADS callers, N submissions per request, group commit
 *   bench-ingest DB mixed SECONDS THREADS N   batch, plus one dispatcher-like thread that claims and
 *                                             finishes jobs on its own connection meanwhile
 *
 * Each submission carries a ~1 KiB normalized request (source inside), as
 * the HTTP layer would store it. Prints one line: mode, submissions/s,
 * requests/s, commits and the average group size. Build (not part of the
 * default build):
 *
 *   cc -O2 -std=c11 -D_GNU_SOURCE -I. -I/usr/include/postgresql bench/bench-ingest.c server/store/ingest.c \
 *      server/store/store.c server/store_*.c build-X/server/migrations.c build-X/server/pg_migrations.c common/log.c \
 *      -lsqlite3 -lpq -ljansson -lpthread -lm -o bench-ingest
 *
 * DB may be a postgresql:// URI (the store's other backend).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "server/store/ingest.h"

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static json_t *make_request(int i)
{
        char src[1024];
        snprintf(src, sizeof(src),
                 "extern \"C\" __global__ void softmax(const float *x, float *y, int B, int D) {\n"
                 "  int b = blockIdx.x; float m = -1e30f; for (int i = threadIdx.x; i < D; i += blockDim.x)\n"
                 "  m = fmaxf(m, x[b * D + i]); /* variant %d */ __shared__ float s[256]; s[threadIdx.x] = m;\n"
                 "  __syncthreads(); for (int k = 128; k > 0; k >>= 1) { if (threadIdx.x < k) s[threadIdx.x] =\n"
                 "  fmaxf(s[threadIdx.x], s[threadIdx.x + k]); __syncthreads(); } m = s[0]; float t = 0;\n"
                 "  for (int i = threadIdx.x; i < D; i += blockDim.x) t += expf(x[b * D + i] - m);\n"
                 "  for (int i = threadIdx.x; i < D; i += blockDim.x) y[b * D + i] = expf(x[b*D+i]-m)/t; }\n",
                 i);
        return json_pack("{s:s, s:s, s:s, s:[{s:s, s:[s], s:[i], s:s, s:[s, s]}], s:s, s:{s:s, s:i}}",
                         "task", "l1_23_softmax", "language", "cuda", "source", src, "plan", "kernel", "softmax",
                         "grid", "B", "block", 256, "shared", "0", "args", "x", "y", "mode", "full", "tags",
                         "run_id", "bench", "sample", i);
}

typedef struct {
        Ingest *ing;
        double deadline;
        int batch;
        long subs;
        long reqs;
} Worker;

static void *worker_main(void *arg)
{
        Worker *w = arg;
        int n = w->batch;
        StoreNew *subs = calloc((size_t)n, sizeof(*subs));
        json_t **reqs = calloc((size_t)n, sizeof(*reqs));

        for (int i = 0; i < n; i++) {
                reqs[i] = make_request(i);
                subs[i] = (StoreNew){ .request = reqs[i], .task = "l1_23_softmax", .mode = "full" };
        }
        while (now_s() < w->deadline) {
                IngestRequest ir = { .subs = subs, .n = (size_t)n };
                IngestReply rep = { 0 };
                int r = ingest_submit(w->ing, &ir, &rep);
                if (r != 0) {
                        fprintf(stderr, "bench-ingest: submit failed: %d\n", r);
                        exit(1);
                }
                ingest_reply_clear(&rep);
                w->subs += n;
                w->reqs++;
        }
        for (int i = 0; i < n; i++)
                json_decref(reqs[i]);
        free(reqs);
        free(subs);
        return NULL;
}

typedef struct {
        const char *path;
        double deadline;
        long done;
        double max_claim_s;
} Claimer;

/* Claim compile jobs and finish them at once, as a cache-hit compile-only dispatcher would. */
static void *claimer_main(void *arg)
{
        Claimer *c = arg;
        Store *s = NULL;
        json_t *res = json_pack("{s:s}", "verdict", "compiled");

        if (store_open(c->path, &s) != 0)
                exit(1);
        while (now_s() < c->deadline) {
                StoreJob *job = NULL;
                double t0 = now_s();
                int r = store_claim_next(s, STAGE_COMPILE, "bench", 30, &job);
                double dt = now_s() - t0;
                if (dt > c->max_claim_s)
                        c->max_claim_s = dt;
                if (r == STORE_E_EMPTY)
                        continue;
                if (r != 0 || store_finish(s, job->id, "bench", "compiled", 0.0 / 0.0, res) != 0)
                        exit(1);
                store_job_free(job);
                c->done++;
        }
        json_decref(res);
        store_close(s);
        return NULL;
}

int main(int argc, char **argv)
{
        if (argc < 4) {
                fprintf(stderr, "usage: bench-ingest DB direct|group|batch SECONDS [THREADS [N]]\n");
                return 2;
        }
        const char *path = argv[1], *mode = argv[2];
        double secs = atof(argv[3]);
        int threads = argc > 4 ? atoi(argv[4]) : 1, batch = argc > 5 ? atoi(argv[5]) : 1;
        log_init("bench-ingest", LOG_LEVEL_WARN);

        if (!strcmp(mode, "direct")) {
                Store *s = NULL;
                json_t *req = make_request(0);
                StoreNew sn = { .request = req, .task = "l1_23_softmax", .mode = "full" };
                long n = 0;
                if (store_open(path, &s) != 0)
                        return 1;
                double t0 = now_s(), t;
                while ((t = now_s()) - t0 < secs) {
                        int64_t id;
                        if (store_insert_submissions(s, &sn, 1, &id, NULL, NULL, 0, 0) != 0)
                                return 1;
                        n++;
                }
                printf("direct: %.0f submissions/s (%ld in %.2f s, one fsync each)\n", n / (t - t0), n, t - t0);
                json_decref(req);
                store_close(s);
                return 0;
        }
        if (strcmp(mode, "group") && strcmp(mode, "batch") && strcmp(mode, "mixed"))
                return 2;
        if (!strcmp(mode, "group"))
                batch = 1;
        Ingest *ing = NULL;
        if (ingest_start(path, NULL, NULL, &ing) != 0)
                return 1;
        Worker *w = calloc((size_t)threads, sizeof(*w));
        pthread_t *th = calloc((size_t)threads, sizeof(*th));
        double t0 = now_s();
        Claimer cl = { .path = path, .deadline = t0 + secs };
        pthread_t cth;
        if (!strcmp(mode, "mixed"))
                pthread_create(&cth, NULL, claimer_main, &cl);
        for (int i = 0; i < threads; i++) {
                w[i] = (Worker){ .ing = ing, .deadline = t0 + secs, .batch = batch };
                pthread_create(&th[i], NULL, worker_main, &w[i]);
        }
        long subs = 0, reqs = 0;
        for (int i = 0; i < threads; i++) {
                pthread_join(th[i], NULL);
                subs += w[i].subs;
                reqs += w[i].reqs;
        }
        double dt = now_s() - t0;
        if (!strcmp(mode, "mixed")) {
                pthread_join(cth, NULL);
                printf("mixed: claimed and finished %.0f jobs/s meanwhile (slowest claim %.1f ms)\n",
                       cl.done / dt, cl.max_claim_s * 1e3);
        }
        IngestStats st;
        ingest_get_stats(ing, &st);
        printf("%s: %d threads x %d per request: %.0f submissions/s, %.0f requests/s, %llu commits "
               "(%.1f requests per commit, largest %llu)\n",
               mode, threads, batch, subs / dt, reqs / dt, (unsigned long long)st.commits,
               st.commits ? (double)reqs / (double)st.commits : 0.0, (unsigned long long)st.max_group);
        ingest_free(ing);
        free(w);
        free(th);
        return 0;
}
