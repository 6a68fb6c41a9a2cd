/*
 * test-ingest - group commit against a real SQLite file: many threads
 * submitting at once all succeed with distinct ids in fewer commits than
 * requests; requests of one group have independent outcomes (quota, full,
 * idempotent replay and conflict side by side); and durability: a child
 * process ingests and reports each acknowledged id through a pipe, the
 * parent kills it with SIGKILL mid-stream, and every acknowledged id must be
 * in the database, queued.
 */
#include "server/store/ingest.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

#define CHECK(cond)                                                                       \
        do {                                                                              \
                if (!(cond)) {                                                            \
                        fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
                        exit(1);                                                          \
                }                                                                         \
        } while (0)
#define CHECK_RC(expr, want)                                                              \
        do {                                                                              \
                int rc_ = (expr);                                                         \
                if (rc_ != (want)) {                                                      \
                        fprintf(stderr, "%s:%d: %s returned %d, want %d\n", __FILE__, __LINE__, \
                                #expr, rc_, (want));                                      \
                        exit(1);                                                          \
                }                                                                         \
        } while (0)

static char tmpdir[256];

static json_t *make_request(int i)
{
        return json_pack("{s:s, s:s, s:s, s:{s:s, s:i}}", "task", "t", "source",
                         "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }", "mode", "full",
                         "tags", "run_id", "ingest", "sample", i);
}

/* ---- many threads ------------------------------------------------------- */

#define THREADS 16
#define PER_THREAD 25

typedef struct {
        Ingest *ing;
        int64_t ids[PER_THREAD];
} Submitter;

static int notified;
static pthread_mutex_t notified_lock = PTHREAD_MUTEX_INITIALIZER;

static void count_notify(void *arg)
{
        (void)arg;
        pthread_mutex_lock(&notified_lock);
        notified++;
        pthread_mutex_unlock(&notified_lock);
}

static void *submitter_main(void *arg)
{
        Submitter *sub = arg;
        for (int i = 0; i < PER_THREAD; i++) {
                json_t *req = make_request(i);
                StoreNew sn = { .request = req, .task = "t", .mode = "full" };
                IngestRequest ir = { .subs = &sn, .n = 1 };
                IngestReply rep = { 0 };
                CHECK_RC(ingest_submit(sub->ing, &ir, &rep), 0);
                CHECK(rep.n == 1 && rep.ids[0] > 0 && !rep.replayed);
                sub->ids[i] = rep.ids[0];
                ingest_reply_clear(&rep);
                json_decref(req);
        }
        return NULL;
}

static void test_many_threads(void)
{
        char path[512];
        Ingest *ing = NULL;
        static Submitter subs[THREADS];
        pthread_t th[THREADS];
        static unsigned char seen[THREADS * PER_THREAD + 1];
        IngestStats st;

        snprintf(path, sizeof(path), "%s/many.db", tmpdir);
        CHECK_RC(ingest_start(path, count_notify, NULL, &ing), 0);
        for (int i = 0; i < THREADS; i++) {
                subs[i].ing = ing;
                CHECK(pthread_create(&th[i], NULL, submitter_main, &subs[i]) == 0);
        }
        for (int i = 0; i < THREADS; i++)
                pthread_join(th[i], NULL);
        ingest_get_stats(ing, &st);
        fprintf(stderr, "test-ingest: %d requests in %llu commits (largest group %llu)\n", THREADS * PER_THREAD,
                (unsigned long long)st.commits, (unsigned long long)st.max_group);
        CHECK(st.requests == THREADS * PER_THREAD && st.submissions == THREADS * PER_THREAD);
        CHECK(st.commits < THREADS * PER_THREAD);
        CHECK(st.pending == 0);
        for (int t = 0; t < THREADS; t++)
                for (int i = 0; i < PER_THREAD; i++) {
                        int64_t id = subs[t].ids[i];
                        CHECK(id >= 1 && id <= THREADS * PER_THREAD && !seen[id]);
                        seen[id] = 1;
                }
        ingest_stop(ing); /* joins the writer: every notify has run */
        CHECK(notified >= 1 && (uint64_t)notified == st.commits);
        IngestReply rep = { 0 };
        json_t *req = make_request(0);
        StoreNew sn = { .request = req, .task = "t", .mode = "full" };
        IngestRequest ir = { .subs = &sn, .n = 1 };
        CHECK_RC(ingest_submit(ing, &ir, &rep), -ESHUTDOWN);
        json_decref(req);
        ingest_free(ing);

        /* Every id is in the database, queued, with its request. */
        Store *s = NULL;
        int64_t queued = 0;
        CHECK_RC(store_open(path, &s), 0);
        CHECK_RC(store_queue_depth(s, &queued, NULL, NULL), 0);
        CHECK(queued == THREADS * PER_THREAD);
        store_close(s);
}

/* ---- independent outcomes in one group ---------------------------------- */

/* The writer blocks in the notify callback after the first commit while
 * the next requests pile up; they then go in as one group. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool gate_open, gate_entered;

static void gate_notify(void *arg)
{
        (void)arg;
        pthread_mutex_lock(&gate_lock);
        gate_entered = true;
        pthread_cond_broadcast(&gate_cond);
        while (!gate_open)
                pthread_cond_wait(&gate_cond, &gate_lock);
        pthread_mutex_unlock(&gate_lock);
}

typedef struct {
        Ingest *ing;
        StoreNew subs[4];
        IngestRequest req;
        IngestReply rep;
        int rc;
} Job;

static void *job_main(void *arg)
{
        Job *j = arg;
        j->req.subs = j->subs;
        j->rc = ingest_submit(j->ing, &j->req, &j->rep);
        return NULL;
}

static void test_group_outcomes(void)
{
        char path[512];
        Ingest *ing = NULL;
        json_t *req = make_request(1);
        uint8_t h1[32], h2[32];
        IngestStats st;
        enum { J_FIRST, J_OK, J_QUOTA, J_FULL, J_REPLAY, J_CONFLICT, J_NEWKEY_A, J_NEWKEY_B, J_N };
        static Job jobs[J_N];
        pthread_t th[J_N];

        memset(h1, 0x5a, 32);
        memset(h2, 0xa5, 32);
        snprintf(path, sizeof(path), "%s/group.db", tmpdir);
        CHECK_RC(ingest_start(path, gate_notify, NULL, &ing), 0);
        for (int i = 0; i < J_N; i++) {
                jobs[i].ing = ing;
                for (int k = 0; k < 4; k++)
                        jobs[i].subs[k] = (StoreNew){ .request = req, .task = "t", .mode = "full", .token_id = 1 };
                jobs[i].req.n = 1;
        }
        /* The first request: token 1, 2 submissions under key "k1" (body h1). */
        jobs[J_FIRST].req.n = 2;
        jobs[J_FIRST].req.idem_key = "k1";
        jobs[J_FIRST].req.body_hash = h1;
        CHECK(pthread_create(&th[J_FIRST], NULL, job_main, &jobs[J_FIRST]) == 0);
        pthread_join(th[J_FIRST], NULL); /* acknowledged before the writer reaches notify */
        CHECK_RC(jobs[J_FIRST].rc, 0);
        pthread_mutex_lock(&gate_lock);
        while (!gate_entered)
                pthread_cond_wait(&gate_cond, &gate_lock);
        pthread_mutex_unlock(&gate_lock);
        ingest_get_stats(ing, &st);
        uint64_t commits_before = st.commits;

        /* Token 2, fine. */
        for (int k = 0; k < 4; k++)
                jobs[J_OK].subs[k].token_id = 2;
        jobs[J_OK].req.n = 3;
        /* Token 1 already has 2 not done; quota 3 refuses 2 more. */
        jobs[J_QUOTA].req.n = 2;
        jobs[J_QUOTA].req.max_queued_token = 3;
        /* Total limit 4: 2 + (3 from J_OK maybe) -> refuse 4 more whatever the order. */
        for (int k = 0; k < 4; k++)
                jobs[J_FULL].subs[k].token_id = 3;
        jobs[J_FULL].req.n = 4;
        jobs[J_FULL].req.max_queued_total = 4;
        /* Same key, same body: the first request's ids. */
        jobs[J_REPLAY].req.n = 2;
        jobs[J_REPLAY].req.idem_key = "k1";
        jobs[J_REPLAY].req.body_hash = h1;
        /* Same key, other body. */
        jobs[J_CONFLICT].req.n = 2;
        jobs[J_CONFLICT].req.idem_key = "k1";
        jobs[J_CONFLICT].req.body_hash = h2;
        /* A new key twice in the same group: one inserts, the other replays. */
        jobs[J_NEWKEY_A].req.idem_key = jobs[J_NEWKEY_B].req.idem_key = "k2";
        jobs[J_NEWKEY_A].req.body_hash = jobs[J_NEWKEY_B].req.body_hash = h2;

        for (int i = J_OK; i < J_N; i++)
                CHECK(pthread_create(&th[i], NULL, job_main, &jobs[i]) == 0);
        for (;;) { /* wait until all of them are queued behind the blocked writer */
                ingest_get_stats(ing, &st);
                if (st.pending == J_N - J_OK)
                        break;
                struct timespec ts = { 0, 1000000 };
                nanosleep(&ts, NULL);
        }
        pthread_mutex_lock(&gate_lock);
        gate_open = true;
        pthread_cond_broadcast(&gate_cond);
        pthread_mutex_unlock(&gate_lock);
        for (int i = J_OK; i < J_N; i++)
                pthread_join(th[i], NULL);

        ingest_get_stats(ing, &st);
        CHECK(st.commits == commits_before + 1); /* the seven requests: one commit */
        CHECK(st.max_group == J_N - J_OK);
        CHECK_RC(jobs[J_OK].rc, 0);
        CHECK(jobs[J_OK].rep.n == 3 && !jobs[J_OK].rep.replayed);
        CHECK_RC(jobs[J_QUOTA].rc, STORE_E_QUOTA);
        CHECK_RC(jobs[J_FULL].rc, STORE_E_FULL);
        CHECK_RC(jobs[J_REPLAY].rc, 0);
        CHECK(jobs[J_REPLAY].rep.replayed && jobs[J_REPLAY].rep.n == 2);
        CHECK(memcmp(jobs[J_REPLAY].rep.ids, jobs[J_FIRST].rep.ids, 2 * sizeof(int64_t)) == 0);
        CHECK_RC(jobs[J_CONFLICT].rc, STORE_E_CONFLICT);
        CHECK_RC(jobs[J_NEWKEY_A].rc, 0);
        CHECK_RC(jobs[J_NEWKEY_B].rc, 0);
        CHECK(jobs[J_NEWKEY_A].rep.replayed != jobs[J_NEWKEY_B].rep.replayed);
        CHECK(jobs[J_NEWKEY_A].rep.ids[0] == jobs[J_NEWKEY_B].rep.ids[0]);
        ingest_free(ing);

        /* In the database: 2 (first) + 3 (ok) + 1 (k2) rows. */
        Store *s = NULL;
        int64_t queued = 0;
        CHECK_RC(store_open(path, &s), 0);
        CHECK_RC(store_queue_depth(s, &queued, NULL, NULL), 0);
        CHECK(queued == 6);
        store_close(s);
        for (int i = 0; i < J_N; i++)
                ingest_reply_clear(&jobs[i].rep);
        json_decref(req);
}

/* ---- durability under SIGKILL ------------------------------------------- */

#define CHILD_THREADS 4

static int ack_fd;

static void *child_submitter(void *arg)
{
        Ingest *ing = arg;
        for (int i = 0;; i++) {
                json_t *req = make_request(i);
                StoreNew sn = { .request = req, .task = "t", .mode = "full" };
                IngestRequest ir = { .subs = &sn, .n = 1 };
                IngestReply rep = { 0 };
                if (ingest_submit(ing, &ir, &rep) != 0)
                        _exit(3);
                /* 8 bytes < PIPE_BUF: atomic, never interleaved with other threads' ids. */
                if (write(ack_fd, &rep.ids[0], sizeof(int64_t)) != sizeof(int64_t))
                        _exit(4);
                ingest_reply_clear(&rep);
                json_decref(req);
        }
        return NULL;
}

static void test_durability(void)
{
        char path[512];
        int fds[2];
        pid_t pid;
        int64_t *acked = calloc(1 << 20, sizeof(int64_t));
        size_t n_acked = 0;

        CHECK(acked);
        snprintf(path, sizeof(path), "%s/durable.db", tmpdir);
        CHECK(pipe(fds) == 0);
        pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
                Ingest *ing = NULL;
                pthread_t th[CHILD_THREADS];
                close(fds[0]);
                ack_fd = fds[1];
                if (ingest_start(path, NULL, NULL, &ing) != 0)
                        _exit(2);
                for (int i = 0; i < CHILD_THREADS; i++)
                        pthread_create(&th[i], NULL, child_submitter, ing);
                for (;;)
                        pause();
        }
        close(fds[1]);
        /* Read acks until a few hundred are in, then kill mid-stream. */
        for (;;) {
                int64_t id;
                ssize_t k = read(fds[0], &id, sizeof(id));
                CHECK(k == (ssize_t)sizeof(id));
                acked[n_acked++] = id;
                if (n_acked == 300) {
                        CHECK(kill(pid, SIGKILL) == 0);
                        break;
                }
        }
        /* Acks already written before the kill are still in the pipe. */
        for (;;) {
                int64_t id;
                ssize_t k = read(fds[0], &id, sizeof(id));
                if (k == 0)
                        break;
                CHECK(k == (ssize_t)sizeof(id));
                CHECK(n_acked < (1 << 20));
                acked[n_acked++] = id;
        }
        close(fds[0]);
        int status = 0;
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

        Store *s = NULL;
        CHECK_RC(store_open(path, &s), 0);
        for (size_t i = 0; i < n_acked; i++) {
                json_t *o = NULL;
                CHECK_RC(store_get_submission(s, acked[i], &o), 0);
                CHECK(strcmp(json_string_value(json_object_get(o, "state")), "queued") == 0);
                CHECK(json_integer_value(json_object_get(json_object_get(o, "tags"), "sample")) >= 0);
                json_decref(o);
        }
        int64_t queued = 0;
        CHECK_RC(store_queue_depth(s, &queued, NULL, NULL), 0);
        CHECK(queued >= (int64_t)n_acked);
        fprintf(stderr, "test-ingest: %zu acknowledged before SIGKILL, all present; %lld in the database\n",
                n_acked, (long long)queued);
        store_close(s);
        free(acked);
}

int main(void)
{
        const char *base = getenv("TMPDIR");
        log_init("test-ingest", LOG_LEVEL_WARN);
        snprintf(tmpdir, sizeof(tmpdir), "%s/kevald-ingest-XXXXXX", base ? base : "/tmp");
        CHECK(mkdtemp(tmpdir));

        test_durability(); /* first: fork before this process has any thread */
        test_many_threads();
        test_group_outcomes();

        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
                fprintf(stderr, "test-ingest: could not remove %s\n", tmpdir);
        printf("test-ingest: all passed\n");
        return 0;
}
