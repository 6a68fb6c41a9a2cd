/*
 * test-store - the store against a real database: a SQLite file in a fresh
 * temporary directory, or, with --pg, a fresh database per test on the
 * PostgreSQL server named by KEVALD_TEST_PG (meson runs that under
 * scripts/pg-temp, which starts a real server). The same checks run on
 * both: migrations, the job lifecycle, concurrent claims, leases and the
 * reaper, cancel, idempotency, quotas, the compile cache, tokens, the
 * listing filters, the views and the stats, and the statement table both
 * backends run (store_sql.def). PostgreSQL adds the fleet's:
 * another host's leases, NOTIFY wake-ups between connections, and the
 * server stopped and started again under a live Store.
 */
#include "server/store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/limits.h"
#include "common/log.h"
#include "server/store/store_backend.h"
#include "server/store/store_test.h"

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
static int db_counter;
static const char *pg_base;     /* --pg: KEVALD_TEST_PG; NULL: SQLite */
static char pg_bin[512];        /* folder of psql, or "" for PATH */

/* Run one SQL statement with psql on the database @uri. */
static void psql(const char *uri, const char *sql)
{
        char cmd[2048];
        snprintf(cmd, sizeof(cmd), "%s%spsql -q -X -v ON_ERROR_STOP=1 -d '%s' -c \"%s\" >/dev/null", pg_bin,
                 pg_bin[0] ? "/" : "", uri, sql);
        CHECK(system(cmd) == 0);
}

/* A fresh database: a new SQLite file, or a new PostgreSQL database. */
static void fresh_path(char *buf, size_t len)
{
        int n = db_counter++;

        if (!pg_base) {
                snprintf(buf, len, "%s/t%d.db", tmpdir, n);
                return;
        }
        const char *slash = strrchr(pg_base, '/');
        char sql[64];
        CHECK(slash && slash > pg_base + 13);
        snprintf(sql, sizeof(sql), "CREATE DATABASE t%d_%d", (int)getpid(), n);
        psql(pg_base, sql);
        snprintf(buf, len, "%.*s/t%d_%d", (int)(slash - pg_base), pg_base, (int)getpid(), n);
}

static Store *open_fresh(char *path, size_t len)
{
        Store *s = NULL;
        fresh_path(path, len);
        CHECK_RC(store_open(path, &s), 0);
        return s;
}

static json_t *make_request(const char *task, const char *run_id, const char *label_k, const char *label_v)
{
        json_t *tags = json_object();
        if (run_id)
                json_object_set_new(tags, "run_id", json_string(run_id));
        if (label_k)
                json_object_set_new(tags, "labels", json_pack("{s:s}", label_k, label_v));
        return json_pack("{s:s, s:s, s:s, s:o}", "task", task ? task : "", "source",
                         "extern \"C\" __global__ void k(float *x) { x[0] = 1; }", "mode", "full", "tags",
                         tags);
}

/* Insert one submission; returns its id. */
static int64_t insert1(Store *s, const char *task, int priority, int64_t token_id, const char *run_id,
                       const char *lk, const char *lv)
{
        json_t *req = make_request(task, run_id, lk, lv);
        StoreNew sn = { .request = req, .task = task, .mode = "full", .priority = priority, .token_id = token_id };
        int64_t id = 0;
        CHECK_RC(store_insert_submissions(s, &sn, 1, &id, NULL, NULL, 0, 0), 0);
        CHECK(id > 0);
        json_decref(req);
        return id;
}

static const char *get_str(Store *s, int64_t id, const char *field, json_t **keep)
{
        json_t *o = NULL;
        CHECK_RC(store_get_submission(s, id, &o), 0);
        *keep = o;
        return json_string_value(json_object_get(o, field));
}

static void test_migrations(void)
{
        char path[512];
        Store *s = open_fresh(path, sizeof(path));
        int v = -1;
        uint8_t sec1[32], sec2[32], zero[32] = { 0 };

        CHECK_RC(store_schema_version(s, &v), 0);
        CHECK(v >= 1);
        CHECK_RC(store_secret(s, sec1), 0);
        CHECK(memcmp(sec1, zero, 32) != 0);
        int64_t id = insert1(s, "t", 0, 0, NULL, NULL, NULL);
        store_close(s);

        /* Re-open: nothing re-applied, data and secret kept. */
        CHECK_RC(store_open(path, &s), 0);
        int v2 = -1;
        CHECK_RC(store_schema_version(s, &v2), 0);
        CHECK(v2 == v);
        CHECK_RC(store_secret(s, sec2), 0);
        CHECK(memcmp(sec1, sec2, 32) == 0);
        json_t *o = NULL;
        CHECK_RC(store_get_submission(s, id, &o), 0);
        CHECK(strcmp(json_string_value(json_object_get(o, "state")), "queued") == 0);
        json_decref(o);
        store_close(s);

        if (pg_base) {
                /* A newer schema: a version this binary does not know in kevald_schema. */
                psql(path, "INSERT INTO kevald_schema(version, applied_at) VALUES (999, 0)");
        } else {
                /* A newer schema (user_version is the big-endian int at offset 60 of the header). */
                int fd = open(path, O_RDWR);
                CHECK(fd >= 0);
                unsigned char be[4] = { 0, 0, 0x03, 0xe7 }; /* 999 */
                CHECK(pwrite(fd, be, 4, 60) == 4);
                close(fd);
        }
        s = NULL;
        CHECK_RC(store_open(path, &s), STORE_E_NEWER_DB);
        CHECK(s == NULL);
        StorePool *pool = NULL;
        CHECK_RC(storepool_open(path, 2, &pool), STORE_E_NEWER_DB);
        CHECK(pool == NULL);
}

static void test_lifecycle(void)
{
        char path[512];
        Store *s = open_fresh(path, sizeof(path));
        StoreJob *job = NULL;
        json_t *o;

        double t0 = store_now();
        int64_t id = insert1(s, "l1_softmax", 0, 0, "run-a", NULL, NULL);
        CHECK_RC(store_claim_next(s, STAGE_RUN, "w1", 30, &job), STORE_E_EMPTY);
        CHECK_RC(store_claim_next(s, STAGE_COMPILE, "w1", 30, &job), 0);
        CHECK(job->id == id && job->attempts == 1 && !job->compile);
        CHECK(strcmp(job->task, "l1_softmax") == 0 && strcmp(job->mode, "full") == 0);
        CHECK(strstr(json_string_value(json_object_get(job->request, "source")), "__global__"));
        store_job_free(job);
        job = NULL;
        CHECK_RC(store_claim_next(s, STAGE_COMPILE, "w1", 30, &job), STORE_E_EMPTY);
        CHECK(strcmp(get_str(s, id, "state", &o), "compiling") == 0);
        CHECK(json_is_string(json_object_get(o, "started_at")));
        json_decref(o);

        json_t *compile = json_pack("{s:b, s:s, s:f}", "ok", 1, "log", "", "compile_ms", 12.5);
        CHECK_RC(store_set_compiled(s, id, "other-owner", compile), STORE_E_CONFLICT);
        CHECK_RC(store_set_compiled(s, id, "w1", compile), 0);
        CHECK_RC(store_set_compiled(s, id, "w1", compile), STORE_E_CONFLICT);
        CHECK(strcmp(get_str(s, id, "state", &o), "compiled") == 0);
        json_decref(o);

        CHECK_RC(store_claim_next(s, STAGE_RUN, "g0", 30, &job), 0);
        CHECK(job->id == id && job->attempts == 1);
        CHECK(json_equal(job->compile, compile));
        store_job_free(job);
        json_decref(compile);

        json_t *result = json_pack("{s:s, s:{s:b, s:b, s:f}, s:s}", "verdict", "correct", "reward_fields",
                                   "compiled", 1, "correct", 1, "speedup", 1.83, "task", "l1_softmax");
        CHECK_RC(store_finish(s, id, "w1", "correct", 1.83, result), STORE_E_CONFLICT);
        CHECK_RC(store_finish(s, id, "g0", "correct", 1.83, result), 0);
        CHECK_RC(store_finish(s, id, "g0", "correct", 1.83, result), STORE_E_CONFLICT);
        CHECK_RC(store_finish(s, 99999, "g0", "correct", 1.83, result), STORE_E_NOT_FOUND);

        CHECK_RC(store_get_submission(s, id, &o), 0);
        CHECK(strcmp(json_string_value(json_object_get(o, "state")), "done") == 0);
        CHECK(strcmp(json_string_value(json_object_get(o, "verdict")), "correct") == 0);
        CHECK(fabs(json_real_value(json_object_get(o, "speedup")) - 1.83) < 1e-12);
        CHECK(json_integer_value(json_object_get(o, "attempts")) == 2);
        CHECK(strcmp(json_string_value(json_object_get(o, "priority")), "bulk") == 0);
        CHECK(json_equal(json_object_get(o, "result"), result));
        CHECK(strcmp(json_string_value(json_object_get(json_object_get(o, "tags"), "run_id")), "run-a") == 0);
        const char *created = json_string_value(json_object_get(o, "created_at"));
        const char *finished = json_string_value(json_object_get(o, "finished_at"));
        CHECK(created && finished && strlen(created) == 24 && created[10] == 'T' && created[23] == 'Z');
        CHECK(created[19] == '.');
        char expect[32], later[32];
        store_format_time(t0, expect);
        store_format_time(store_now(), later);
        CHECK(strcmp(expect, created) <= 0 && strcmp(created, finished) <= 0 && strcmp(finished, later) <= 0);
        json_decref(o);
        json_decref(result);

        /* A queued job (state queued) has null verdict/started_at and no result. */
        int64_t id2 = insert1(s, "l1_softmax", 0, 0, NULL, NULL, NULL);
        CHECK_RC(store_get_submission(s, id2, &o), 0);
        CHECK(json_is_null(json_object_get(o, "verdict")) && json_is_null(json_object_get(o, "started_at")));
        CHECK(json_is_null(json_object_get(o, "speedup")) && !json_object_get(o, "result"));
        json_decref(o);
        CHECK_RC(store_get_submission(s, 424242, &o), STORE_E_NOT_FOUND);

        /* Mode compile ends from compiling; a speedup of 0 (none) is stored as null. */
        CHECK_RC(store_claim_next(s, STAGE_COMPILE, "w1", 30, &job), 0);
        CHECK(job->id == id2);
        store_job_free(job);
        result = json_pack("{s:s}", "verdict", "compiled");
        CHECK_RC(store_finish(s, id2, "w1", "compiled", 0.0, result), 0);
        json_decref(result);
        CHECK_RC(store_get_submission(s, id2, &o), 0);
        CHECK(json_is_null(json_object_get(o, "speedup")));
        json_decref(o);

        /* Formatting. */
        store_format_time(0.0, expect);
        CHECK(strcmp(expect, "1970-01-01T00:00:00.000Z") == 0);
        store_format_time(1700000000.9996, expect); /* truncated: since=<this> includes the row */
        CHECK(strcmp(expect, "2023-11-14T22:13:20.999Z") == 0);
        store_close(s);
}

static void test_priority(void)
{
        char path[512];
        Store *s = open_fresh(path, sizeof(path));
        StoreJob *job;
        int64_t a = insert1(s, "t", 0, 0, NULL, NULL, NULL);
        int64_t b = insert1(s, "t", 0, 0, NULL, NULL, NULL);
        int64_t c = insert1(s, "t", 1, 0, NULL, NULL, NULL);
        int64_t want[3] = { c, a, b };
        for (int i = 0; i < 3; i++) {
                CHECK_RC(store_claim_next(s, STAGE_COMPILE, "w", 30, &job), 0);
                CHECK(job->id == want[i]);
                CHECK(job->priority == (i == 0));
                store_job_free(job);
        }
        store_close(s);
}

#define CONC_JOBS 2000

static pthread_barrier_t claim_barrier;

typedef struct {
        const char *path;
        int64_t got[CONC_JOBS];
        int n;
} Claimer;

static void *claimer_main(void *arg)
{
        Claimer *c = arg;
        Store *s = NULL;
        char owner[32];
        CHECK_RC(store_open(c->path, &s), 0);
        snprintf(owner, sizeof(owner), "w%p", arg);
        pthread_barrier_wait(&claim_barrier);
        for (;;) {
                StoreJob *job = NULL;
                int r = store_claim_next(s, STAGE_COMPILE, owner, 30, &job);
                if (r == STORE_E_EMPTY)
                        break;
                CHECK_RC(r, 0);
                CHECK(c->n < CONC_JOBS);
                c->got[c->n++] = job->id;
                store_job_free(job);
        }
        store_close(s);
        return NULL;
}

static void test_concurrent_claims(void)
{
        char path[512];
        Store *s = open_fresh(path, sizeof(path));
        StoreNew subs[CONC_JOBS];
        int64_t ids[CONC_JOBS];
        json_t *req = make_request("t", NULL, NULL, NULL);
        static Claimer c[2];
        static unsigned char seen[CONC_JOBS + 1];
        pthread_t th[2];

        for (int i = 0; i < CONC_JOBS; i++)
                subs[i] = (StoreNew){ .request = req, .task = "t", .mode = "full" };
        CHECK_RC(store_insert_submissions(s, subs, CONC_JOBS, ids, NULL, NULL, 0, 0), 0);
        for (int i = 0; i < CONC_JOBS; i++)
                CHECK(ids[i] == i + 1);
        pthread_barrier_init(&claim_barrier, NULL, 2);
        for (int i = 0; i < 2; i++) {
                c[i].path = path;
                c[i].n = 0;
                CHECK(pthread_create(&th[i], NULL, claimer_main, &c[i]) == 0);
        }
        for (int i = 0; i < 2; i++)
                pthread_join(th[i], NULL);
        pthread_barrier_destroy(&claim_barrier);
        CHECK(c[0].n + c[1].n == CONC_JOBS);
        for (int t = 0; t < 2; t++)
                for (int i = 0; i < c[t].n; i++) {
                        CHECK(c[t].got[i] >= 1 && c[t].got[i] <= CONC_JOBS);
                        CHECK(seen[c[t].got[i]] == 0);
                        seen[c[t].got[i]] = 1;
                }
        fprintf(stderr, "test-store: concurrent claims split %d / %d\n", c[0].n, c[1].n);
        int64_t q = -1, cc = -1, run = -1;
        CHECK_RC(store_queue_depth(s, &q, &cc, &run), 0);
        CHECK(q == 0 && cc == 0 && run == 0);
        json_decref(req);
        store_close(s);
}

static void sleep_s(double t)
{
        struct timespec ts = { .tv_sec = (time_t)t, .tv_nsec = (long)((t - (double)(time_t)t) * 1e9) };
        nanosleep(&ts, NULL);
}

/* The reaper as the dispatcher runs it (store_reap_collect()), counting the jobs it ended. */
static int reap(Store *s, int max_attempts, int *ret_requeued, int *ret_failed)
{
        int64_t *ids = NULL;
        size_t n = 0;
        int r = store_reap_collect(s, max_attempts, ret_requeued, &ids, &n);

        free(ids);
        if (r == 0)
                *ret_failed = (int)n;
        return r;
}

static void test_leases(void)
{
        char path[512];
        Store *s = open_fresh(path, sizeof(path));
        StoreJob *job;
        int requeued = -1, failed = -1;
        int64_t *failed_ids = NULL;
        size_t n_failed = 0;
        json_t *o;

        int64_t id = insert1(s, "lease_task", 0, 0, NULL, NULL, NULL);
        /* Attempt 1 expires -> back to queued. (Leases that must not expire
         * during a check are long, so a slow machine cannot make this flaky.) */
        CHECK_RC(store_claim_next(s, STAGE_COMPILE, "w", 30, &job), 0);
        CHECK(job->attempts == 1);
        store_job_free(job);
        CHECK_RC(reap(s, 2, &requeued, &failed), 0);
        CHECK(requeued == 0 && failed == 0); /* not expired yet */
        CHECK_RC(store_heartbeat_owner(s, "w", 0.01, NULL), 0);
        sleep_s(0.05);
        int ext = -1;
        CHECK_RC(store_heartbeat_owner(s, "w", 10, &ext), 0); /* an expired but unreaped lease is still held */
        CHECK(ext == 1);
        CHECK_RC(reap(s, 2, &requeued, &failed), 0);
        CHECK(requeued == 0 && failed == 0);
        CHECK_RC(store_heartbeat_owner(s, "intruder", 10, &ext), 0); /* another owner extends nothing */
        CHECK(ext == 0);
        ext = -1;
        CHECK_RC(store_heartbeat_owner(s, "w", 0.05, &ext), 0);
        CHECK(ext == 1);
        sleep_s(0.1);
        CHECK_RC(reap(s, 2, &requeued, &failed), 0);
        CHECK(requeued == 1 && failed == 0);
        CHECK(strcmp(get_str(s, id, "state", &o), "queued") == 0);
        json_decref(o);
        CHECK_RC(store_heartbeat_owner(s, "w", 10, &ext), 0); /* lease lost: nothing to extend */
        CHECK(ext == 0);

        /* Attempt 2 expires -> max attempts (2) reached -> internal_error. */
        CHECK_RC(store_claim_next(s, STAGE_COMPILE, "w2", 0.05, &job), 0);
        CHECK(job->attempts == 2);
        store_job_free(job);
        sleep_s(0.1);
        json_t *empty = json_object();
        CHECK_RC(store_finish(s, id, "w", "correct", 1.0, empty), STORE_E_CONFLICT); /* old owner */
        json_decref(empty);
        CHECK_RC(store_reap_collect(s, 2, &requeued, &failed_ids, &n_failed), 0);
        CHECK(requeued == 0 && n_failed == 1 && failed_ids[0] == id);
        free(failed_ids);
        CHECK_RC(store_get_submission(s, id, &o), 0);
        CHECK(strcmp(json_string_value(json_object_get(o, "verdict")), "internal_error") == 0);
        CHECK(strcmp(json_string_value(json_object_get(o, "state")), "done") == 0);
        json_t *res = json_object_get(o, "result");
        CHECK(strcmp(json_string_value(json_object_get(res, "verdict")), "internal_error") == 0);
        CHECK(strcmp(json_string_value(json_object_get(json_object_get(res, "error"), "kind")), "internal") == 0);
        CHECK(json_string_length(json_object_get(json_object_get(res, "error"), "message")) > 0);
        CHECK(strcmp(json_string_value(json_object_get(res, "task")), "lease_task") == 0);
        json_decref(o);

        /* Run stage: expiry goes back to compiled, not queued; requeue by owner too. */
        int64_t id2 = insert1(s, "t", 0, 0, NULL, NULL, NULL);
        CHECK_RC(store_claim_next(s, STAGE_COMPILE, "w", 30, &job), 0);
        CHECK(job->id == id2);
        store_job_free(job);
        CHECK_RC(store_requeue(s, id2, "w", STAGE_RUN), STORE_E_CONFLICT); /* not running */
        CHECK_RC(store_requeue(s, id2, "w", STAGE_COMPILE), 0);
        CHECK(strcmp(get_str(s, id2, "state", &o), "queued") == 0);
        json_decref(o);
        CHECK_RC(store_claim_next(s, STAGE_COMPILE, "w", 30, &job), 0);
        CHECK(job->attempts == 2);
        store_job_free(job);
        json_t *comp = json_pack("{s:b}", "ok", 1);
        CHECK_RC(store_set_compiled(s, id2, "w", comp), 0);
        json_decref(comp);
        CHECK_RC(store_claim_next(s, STAGE_RUN, "g", 0.05, &job), 0);
        CHECK(job->attempts == 1); /* the run stage counts from 0 again */
        store_job_free(job);
        /* a claim under which nothing ran (an orphan) is taken back: not an attempt */
        CHECK_RC(store_requeue_uncharged(s, id2, "x", STAGE_RUN), STORE_E_CONFLICT); /* not x's */
        CHECK_RC(store_requeue_uncharged(s, id2, "g", STAGE_RUN), 0);
        CHECK(strcmp(get_str(s, id2, "state", &o), "compiled") == 0);
        json_decref(o);
        CHECK_RC(store_get_submission(s, id2, &o), 0);
        CHECK(json_integer_value(json_object_get(o, "attempts")) == 2); /* 2 compile claims, the run's taken back */
        json_decref(o);
        CHECK_RC(store_claim_next(s, STAGE_RUN, "g", 0.05, &job), 0);
        CHECK(job->id == id2 && job->attempts == 1);
        store_job_free(job);
        CHECK_RC(store_requeue(s, id2, "g", STAGE_RUN), 0); /* counted: the next claim is the second */
        CHECK_RC(store_claim_next(s, STAGE_RUN, "g", 0.05, &job), 0);
        CHECK(job->id == id2 && job->attempts == 2);
        store_job_free(job);
        CHECK_RC(store_requeue_uncharged(s, id2, "g", STAGE_RUN), 0);
        CHECK_RC(store_claim_next(s, STAGE_RUN, "g", 0.05, &job), 0);
        CHECK(job->id == id2 && job->attempts == 2);
        store_job_free(job);
        sleep_s(0.1);
        CHECK_RC(reap(s, 3, &requeued, &failed), 0);
        CHECK(requeued == 1 && failed == 0);
        CHECK(strcmp(get_str(s, id2, "state", &o), "compiled") == 0);
        json_decref(o);

        /* Start-up: every lease of this host goes back, expired or not. */
        int64_t id3 = insert1(s, "t", 0, 0, NULL, NULL, NULL);
        CHECK_RC(store_claim_next(s, STAGE_COMPILE, "testhost/old", 3600, &job), 0);
        CHECK(job->id == id3);
        store_job_free(job);
        CHECK_RC(store_claim_next(s, STAGE_RUN, "testhost/old", 3600, &job), 0);
        CHECK(job->id == id2);
        store_job_free(job);
        CHECK(store_requeue_all_leases(s) == 2);
        CHECK(strcmp(get_str(s, id3, "state", &o), "queued") == 0);
        json_decref(o);
        CHECK(strcmp(get_str(s, id2, "state", &o), "compiled") == 0);
        json_decref(o);
        CHECK(store_requeue_all_leases(s) == 0);
        store_close(s);
}

/*
 * One owner for this process's leases (store_lease_plan()): "HOST/kevald-PID"
 * whatever the host id's length, renewed every lease_s / 3, and the owner
 * that store_requeue_all_leases() takes back at start-up as this host's.
 */
static void test_lease_plan(void)
{
        char path[512], owner[STORE_LEASE_OWNER_BYTES], expect[STORE_LEASE_OWNER_BYTES + 16];
        char longest[LIMIT_HOST_ID_BYTES + 1];
        Store *s = open_fresh(path, sizeof(path));
        double renew_s = -1;
        StoreJob *job;
        json_t *o;
        int ext = -1;

        CHECK_RC(store_lease_plan(30, owner, &renew_s), 0);
        snprintf(expect, sizeof(expect), "testhost/kevald-%d", (int)getpid());
        CHECK(strcmp(owner, expect) == 0);
        CHECK(renew_s == 10.0);
        CHECK_RC(store_lease_plan(1, owner, &renew_s), 0);
        CHECK(renew_s > 0.333 && renew_s < 0.334);
        renew_s = -1;
        CHECK_RC(store_lease_plan(0, owner, &renew_s), -EINVAL);
        CHECK_RC(store_lease_plan(-1, owner, &renew_s), -EINVAL);
        CHECK_RC(store_lease_plan(NAN, owner, &renew_s), -EINVAL);
        CHECK(renew_s == -1);
        /* The longest host id: the owner is whole, not cut. */
        memset(longest, 'h', LIMIT_HOST_ID_BYTES);
        longest[LIMIT_HOST_ID_BYTES] = '\0';
        CHECK_RC(store_set_host_id(longest), 0);
        CHECK_RC(store_lease_plan(30, owner, &renew_s), 0);
        snprintf(expect, sizeof(expect), "%s/kevald-%d", longest, (int)getpid());
        CHECK(strcmp(owner, expect) == 0);
        CHECK_RC(store_set_host_id("testhost"), 0);

        /* A job claimed under the plan's owner is renewed under it, and goes back at this host's restart. */
        CHECK_RC(store_lease_plan(30, owner, &renew_s), 0);
        int64_t id = insert1(s, "t", 0, 0, NULL, NULL, NULL);
        CHECK_RC(store_claim_next(s, STAGE_COMPILE, owner, 30, &job), 0);
        CHECK(job->id == id);
        store_job_free(job);
        CHECK_RC(store_heartbeat_owner(s, owner, 30, &ext), 0);
        CHECK(ext == 1);
        CHECK(store_requeue_all_leases(s) == 1);
        CHECK(strcmp(get_str(s, id, "state", &o), "queued") == 0);
        json_decref(o);
        store_close(s);
}

static void test_cancel(void)
{
        char path[512];
        Store *s = open_fresh(path, sizeof(path));
        StoreJob *job;
        json_t *o;
        int64_t a = insert1(s, "t", 0, 5, NULL, NULL, NULL);
        int64_t b = insert1(s, "t", 0, 5, NULL, NULL, NULL);

        CHECK_RC(store_cancel(s, a, 6), STORE_E_NOT_FOUND); /* another token's */
        CHECK_RC(store_cancel(s, a, 5), 0);
        CHECK_RC(store_cancel(s, a, 5), STORE_E_CONFLICT);
        CHECK_RC(store_cancel(s, 4242, 0), STORE_E_NOT_FOUND);
        CHECK_RC(store_get_submission(s, a, &o), 0);
        CHECK(strcmp(json_string_value(json_object_get(o, "verdict")), "cancelled") == 0);
        CHECK(strcmp(json_string_value(json_object_get(o, "state")), "done") == 0);
        CHECK(strcmp(json_string_value(json_object_get(json_object_get(o, "result"), "verdict")), "cancelled") == 0);
        json_decref(o);
        /* The cancelled job is never claimed; the claimed one cannot be cancelled. */
        CHECK_RC(store_claim_next(s, STAGE_COMPILE, "w", 30, &job), 0);
        CHECK(job->id == b);
        store_job_free(job);
        CHECK_RC(store_cancel(s, b, 0), STORE_E_CONFLICT);
        CHECK_RC(store_claim_next(s, STAGE_COMPILE, "w", 30, &job), STORE_E_EMPTY);
        store_close(s);
}

static void test_idempotency(void)
{
        char path[512];
        Store *s = open_fresh(path, sizeof(path));
        json_t *req = make_request("t", NULL, NULL, NULL);
        StoreNew subs[3];
        int64_t ids[3], ids2[3];
        uint8_t h1[32], h2[32];
        bool replayed = true;

        memset(h1, 1, 32);
        memset(h2, 2, 32);
        for (int i = 0; i < 3; i++)
                subs[i] = (StoreNew){ .request = req, .task = "t", .mode = "full", .token_id = 3 };
        StoreInsert ins = { .subs = subs, .n = 3, .idem_key = "key-1", .body_hash = h1 };
        CHECK_RC(store_insert_request(s, &ins, ids, &replayed), 0);
        CHECK(!replayed);
        CHECK_RC(store_insert_request(s, &ins, ids2, &replayed), 0);
        CHECK(replayed && memcmp(ids, ids2, sizeof(ids)) == 0);
        /* Same key, other body: conflict, nothing inserted. */
        ins.body_hash = h2;
        CHECK_RC(store_insert_request(s, &ins, ids2, &replayed), STORE_E_CONFLICT);
        int64_t q = 0;
        CHECK_RC(store_queue_depth(s, &q, NULL, NULL), 0);
        CHECK(q == 3);
        /* Same key under another token is another key. */
        for (int i = 0; i < 3; i++)
                subs[i].token_id = 4;
        ins.body_hash = h1;
        CHECK_RC(store_insert_request(s, &ins, ids2, &replayed), 0);
        CHECK(!replayed && ids2[0] > ids[2]);
        /* Bad arguments. */
        ins.body_hash = NULL;
        CHECK_RC(store_insert_request(s, &ins, ids2, &replayed), -EINVAL);
        ins.body_hash = h1;
        subs[1].token_id = 5;
        CHECK_RC(store_insert_request(s, &ins, ids2, &replayed), -EINVAL); /* mixed tokens */
        subs[1].token_id = 4;
        subs[1].mode = "bogus";
        CHECK_RC(store_insert_request(s, &ins, ids2, &replayed), -EINVAL);
        ins.n = 0;
        CHECK_RC(store_insert_request(s, &ins, ids2, &replayed), -EINVAL);
        int64_t deleted = -1;
        CHECK_RC(store_prune_idempotency(s, 3600, &deleted), 0);
        CHECK(deleted == 0);
        CHECK_RC(store_prune_idempotency(s, -1, &deleted), 0);
        CHECK(deleted == 2);
        json_decref(req);
        store_close(s);
}

static void test_group(void)
{
        char path[512];
        Store *s = open_fresh(path, sizeof(path));
        json_t *req = make_request("t", NULL, NULL, NULL);
        StoreNew sn = { .request = req, .task = "t", .mode = "full", .token_id = 2 };
        StoreInsert ok = { .subs = &sn, .n = 1 }, quota = { .subs = &sn, .n = 1, .max_queued_token = 1 };
        int64_t a = 0, b = 0, c = 0, q = -1;
        bool rep;
        StoreJob *job;

        CHECK_RC(store_begin_group(s), 0);
        CHECK_RC(store_begin_group(s), -EINVAL);
        CHECK_RC(store_insert_request(s, &ok, &a, &rep), 0);
        CHECK_RC(store_insert_request(s, &quota, &b, &rep), STORE_E_QUOTA); /* sees a: same transaction */
        CHECK_RC(store_insert_request(s, &ok, &c, &rep), 0);                /* the refusal left no trace */
        CHECK(c == a + 1);
        CHECK_RC(store_claim_next(s, STAGE_COMPILE, "w", 30, &job), -EINVAL); /* no other writes in a group */
        CHECK_RC(store_commit_group(s), 0);
        CHECK_RC(store_commit_group(s), -EINVAL);
        CHECK_RC(store_queue_depth(s, &q, NULL, NULL), 0);
        CHECK(q == 2);
        /* A rolled-back group leaves nothing. */
        CHECK_RC(store_begin_group(s), 0);
        CHECK_RC(store_insert_request(s, &ok, &a, &rep), 0);
        store_rollback_group(s);
        CHECK_RC(store_queue_depth(s, &q, NULL, NULL), 0);
        CHECK(q == 2);
        CHECK_RC(store_claim_next(s, STAGE_COMPILE, "w", 30, &job), 0); /* writes work again */
        store_job_free(job);
        json_decref(req);
        store_close(s);
}

static void test_quotas(void)
{
        char path[512];
        Store *s = open_fresh(path, sizeof(path));
        json_t *req = make_request("t", NULL, NULL, NULL);
        StoreNew subs[3];
        int64_t ids[3];
        StoreJob *job;

        for (int i = 0; i < 3; i++)
                subs[i] = (StoreNew){ .request = req, .task = "t", .mode = "full", .token_id = 7 };
        CHECK_RC(store_insert_submissions(s, subs, 3, ids, NULL, NULL, 5, 0), 0);
        CHECK_RC(store_insert_submissions(s, subs, 3, ids, NULL, NULL, 5, 0), STORE_E_FULL);
        CHECK_RC(store_insert_submissions(s, subs, 2, ids, NULL, NULL, 5, 0), 0); /* exactly 5 */
        CHECK_RC(store_insert_submissions(s, subs, 1, ids, NULL, NULL, 5, 0), STORE_E_FULL);
        /* Token quota: token 7 has 5 not done; token 8 none. */
        CHECK_RC(store_insert_submissions(s, subs, 1, ids, NULL, NULL, 0, 5), STORE_E_QUOTA);
        for (int i = 0; i < 3; i++)
                subs[i].token_id = 8;
        CHECK_RC(store_insert_submissions(s, subs, 3, ids, NULL, NULL, 0, 3), 0);
        CHECK_RC(store_insert_submissions(s, subs, 1, ids, NULL, NULL, 0, 3), STORE_E_QUOTA);
        /* Finishing one (and cancelling one) frees room: the counts follow state changes. */
        CHECK_RC(store_cancel(s, ids[0], 8), 0);
        CHECK_RC(store_insert_submissions(s, subs, 1, ids, NULL, NULL, 0, 3), 0);
        CHECK_RC(store_claim_next(s, STAGE_COMPILE, "w", 30, &job), 0);
        json_t *res = json_pack("{s:s}", "verdict", "compile_error");
        CHECK_RC(store_finish(s, job->id, "w", "compile_error", NAN, res), 0);
        json_decref(res);
        store_job_free(job);
        /* Not done now: 5 + 3 + 1 inserted, 1 cancelled, 1 finished = 7. */
        CHECK_RC(store_insert_submissions(s, subs, 3, ids, NULL, NULL, 9, 0), STORE_E_FULL);
        CHECK_RC(store_insert_submissions(s, subs, 2, ids, NULL, NULL, 9, 0), 0);
        CHECK_RC(store_insert_submissions(s, subs, 1, ids, NULL, NULL, 9, 0), STORE_E_FULL);
        json_t *st;
        CHECK_RC(store_stats(s, &st), 0);
        CHECK(json_integer_value(json_object_get(st, "queue_depth")) == 9);
        json_decref(st);
        json_decref(req);
        store_close(s);
}

static void test_cache(void)
{
        char path[512];
        Store *s = open_fresh(path, sizeof(path));
        uint8_t key[32], key2[32], cubin[3000];
        json_t *got = NULL, *st;
        uint8_t *cb = NULL;
        size_t len = 0;

        memset(key, 0xab, 32);
        memset(key2, 0xcd, 32);
        for (size_t i = 0; i < sizeof(cubin); i++)
                cubin[i] = (uint8_t)(i * 31 + 7);
        CHECK_RC(store_cache_get(s, key, &got, &cb, &len), STORE_E_NOT_FOUND);
        json_t *compile = json_pack("{s:b, s:[{s:s, s:i}]}", "ok", 1, "kernels", "name", "k", "registers", 32);
        CHECK_RC(store_cache_put(s, key, compile, cubin, sizeof(cubin)), 0);
        CHECK_RC(store_cache_get(s, key, &got, &cb, &len), 0);
        CHECK(json_equal(got, compile) && len == sizeof(cubin) && memcmp(cb, cubin, len) == 0);
        json_decref(got);
        free(cb);
        CHECK_RC(store_cache_get(s, key, &got, &cb, &len), 0);
        json_decref(got);
        free(cb);
        /* A cached failure has no CUBIN. */
        json_t *bad = json_pack("{s:b, s:s}", "ok", 0, "error", "compile");
        CHECK_RC(store_cache_put(s, key2, bad, NULL, 0), 0);
        CHECK_RC(store_cache_get(s, key2, &got, &cb, &len), 0);
        CHECK(json_equal(got, bad) && cb == NULL && len == 0);
        json_decref(got);
        CHECK_RC(store_cache_put(s, key2, bad, cubin, (size_t)LIMIT_CUBIN_BYTES + 1), -E2BIG);
        CHECK_RC(store_stats(s, &st), 0);
        json_t *cc = json_object_get(st, "compile_cache");
        CHECK(json_integer_value(json_object_get(cc, "entries")) == 2);
        CHECK(json_integer_value(json_object_get(cc, "hits")) == 3);
        CHECK(json_integer_value(json_object_get(cc, "misses")) == 1);
        char *t1 = json_dumps(compile, JSON_COMPACT), *t2 = json_dumps(bad, JSON_COMPACT);
        int64_t size1 = (int64_t)(strlen(t1) + sizeof(cubin)), size2 = (int64_t)strlen(t2);
        free(t1);
        free(t2);
        CHECK(json_integer_value(json_object_get(cc, "bytes")) == size1 + size2);
        json_decref(st);

        /* LRU: key was used before key2 was put; a third entry; then key is used again. */
        uint8_t key3[32];
        memset(key3, 0xef, 32);
        CHECK_RC(store_cache_put(s, key3, compile, cubin, 1000), 0);
        CHECK_RC(store_cache_get(s, key, &got, &cb, &len), 0);
        json_decref(got);
        free(cb);
        int64_t deleted = -1;
        /* Order now: key2 (oldest), key3, key. Fit in size1 + 1: key2 and key3 go, key stays. */
        CHECK_RC(store_cache_prune(s, size1 + 1, &deleted), 0);
        CHECK(deleted == 2);
        CHECK_RC(store_cache_get(s, key, &got, &cb, &len), 0);
        json_decref(got);
        free(cb);
        CHECK_RC(store_cache_get(s, key2, &got, &cb, &len), STORE_E_NOT_FOUND);
        CHECK_RC(store_cache_get(s, key3, &got, &cb, &len), STORE_E_NOT_FOUND);
        CHECK_RC(store_cache_prune(s, size1, &deleted), 0);
        CHECK(deleted == 0);
        CHECK_RC(store_cache_prune(s, 0, &deleted), 0);
        CHECK(deleted == 1);
        CHECK_RC(store_stats(s, &st), 0);
        cc = json_object_get(st, "compile_cache");
        CHECK(json_integer_value(json_object_get(cc, "entries")) == 0 && json_integer_value(json_object_get(cc, "bytes")) == 0);
        json_decref(st);
        json_decref(bad);
        json_decref(compile);
        store_close(s);
}

static void test_tokens(void)
{
        char path[512];
        Store *s = open_fresh(path, sizeof(path));
        uint8_t h1[32], h2[32];
        int64_t id1 = 0, id2 = 0, got = 0;
        json_t *limits = json_pack("{s:i}", "max_queued", 100), *lim = NULL, *list;

        memset(h1, 0x11, 32);
        memset(h2, 0x22, 32);
        CHECK_RC(store_token_create(s, "alice", h1, limits, &id1), 0);
        CHECK_RC(store_token_create(s, "alice", h2, NULL, &id2), STORE_E_CONFLICT);
        CHECK_RC(store_token_create(s, "bob", h2, NULL, &id2), 0);
        CHECK(id1 > 0 && id2 > id1);
        CHECK_RC(store_token_lookup(s, h1, &got, &lim), 0);
        CHECK(got == id1 && json_equal(lim, limits));
        json_decref(lim);
        CHECK_RC(store_token_lookup(s, h2, &got, &lim), 0);
        CHECK(got == id2 && json_is_object(lim) && json_object_size(lim) == 0);
        json_decref(lim);
        CHECK_RC(store_token_revoke(s, "alice"), 0);
        CHECK_RC(store_token_revoke(s, "alice"), STORE_E_NOT_FOUND);
        CHECK_RC(store_token_revoke(s, "carol"), STORE_E_NOT_FOUND);
        CHECK_RC(store_token_lookup(s, h1, &got, &lim), STORE_E_NOT_FOUND);
        CHECK_RC(store_token_list(s, &list), 0);
        CHECK(json_array_size(list) == 2);
        json_t *a = json_array_get(list, 0);
        CHECK(strcmp(json_string_value(json_object_get(a, "name")), "alice") == 0);
        CHECK(json_is_string(json_object_get(a, "revoked_at")) && !json_object_get(a, "hash"));
        CHECK(json_is_null(json_object_get(json_array_get(list, 1), "revoked_at")));
        json_decref(list);
        json_decref(limits);
        store_close(s);
}

static size_t list_count(Store *s, json_t *filters)
{
        json_t *items = NULL;
        int64_t next = -1;
        CHECK_RC(store_list_submissions(s, filters, 0, LIMIT_LIST_PAGE_MAX, &items, &next), 0);
        size_t n = json_array_size(items);
        CHECK(next == 0);
        json_decref(items);
        json_decref(filters);
        return n;
}

/* Finish job @id with a verdict, without claiming it (owner NULL). */
static void finish_one(Store *s, int64_t id, double speedup, const char *verdict)
{
        json_t *res = json_pack("{s:s}", "verdict", verdict);
        CHECK_RC(store_finish(s, id, NULL, verdict, speedup, res), 0);
        json_decref(res);
}

/*
 * Fair share: within a priority, claims go round robin between tokens, so a
 * token's one job is not stuck behind another token's thousand; a higher
 * priority still goes first.
 */
static void test_fair_share(void)
{
        char path[512];
        Store *s = open_fresh(path, sizeof(path));
        int64_t a[6], b[2], hi;
        int64_t want[8], got;

        for (int i = 0; i < 6; i++)
                a[i] = insert1(s, "t", 0, 1, NULL, NULL, NULL);   /* token 1: a rollout */
        for (int i = 0; i < 2; i++)
                b[i] = insert1(s, "t", 0, 2, NULL, NULL, NULL);   /* token 2: an agent, later */
        hi = insert1(s, "t", 1, 1, NULL, NULL, NULL);             /* interactive, newest */
        /* hi first; then a0 (token 1 and 2 both unserved at priority 0: oldest), b0, a1, b1, a2.. */
        want[0] = hi;
        want[1] = b[0]; /* token 1 was just served by hi */
        want[2] = a[0];
        want[3] = b[1];
        want[4] = a[1];
        want[5] = a[2];
        want[6] = a[3];
        want[7] = a[4];
        for (int i = 0; i < 8; i++) {
                StoreJob *job;
                CHECK_RC(store_claim_next(s, STAGE_COMPILE, "w", 30, &job), 0);
                got = job->id;
                store_job_free(job);
                if (got != want[i]) {
                        fprintf(stderr, "fair share: claim %d got job %lld, want %lld\n", i, (long long)got,
                                (long long)want[i]);
                        CHECK(0);
                }
        }
        store_close(s);
}

static void test_list_views_stats(void)
{
        char path[512];
        Store *s = open_fresh(path, sizeof(path));
        json_t *items, *rows, *st;
        int64_t next;
        double t_before = store_now();

        /* 25 submissions: tasks a/b alternating, run r1 for the first 10, labels on every 5th,
         * token 9 for the last 3. */
        for (int i = 0; i < 25; i++)
                insert1(s, i % 2 ? "b" : "a", 0, i >= 22 ? 9 : 0, i < 10 ? "r1" : "r2", i % 5 == 0 ? "exp" : NULL,
                        i % 5 == 0 ? (i % 10 == 0 ? "x" : "y") : NULL);

        /* Pagination: 10, 10, 5, newest first, no overlap. */
        int64_t cursor = 0, prev = INT64_MAX;
        size_t total = 0;
        for (int page = 0; page < 3; page++) {
                CHECK_RC(store_list_submissions(s, NULL, cursor, 10, &items, &next), 0);
                CHECK(json_array_size(items) == (page < 2 ? 10u : 5u));
                for (size_t i = 0; i < json_array_size(items); i++) {
                        json_t *it = json_array_get(items, i);
                        int64_t id = json_integer_value(json_object_get(it, "id"));
                        CHECK(id < prev);
                        prev = id;
                        CHECK(!json_object_get(it, "result") && json_object_get(it, "verdict"));
                        total++;
                }
                CHECK(page < 2 ? next == prev : next == 0);
                cursor = next;
                json_decref(items);
        }
        CHECK(total == 25);
        CHECK_RC(store_list_submissions(s, NULL, 0, LIMIT_LIST_PAGE_MAX + 1, &items, &next), -EINVAL);
        CHECK_RC(store_list_submissions(s, NULL, 0, -1, &items, &next), -EINVAL);

        /* Finish the three oldest (ids 1..3: tasks a, b, a). */
        finish_one(s, 1, 1.2, "correct");
        finish_one(s, 2, 0.4, "correct");
        finish_one(s, 3, 5.0, "correct");
        finish_one(s, 4, NAN, "incorrect"); /* task b */

        CHECK(list_count(s, json_pack("{s:s}", "task", "a")) == 13);
        CHECK(list_count(s, json_pack("{s:s}", "task", "b")) == 12);
        CHECK(list_count(s, json_pack("{s:s}", "verdict", "correct")) == 3);
        CHECK(list_count(s, json_pack("{s:s, s:s}", "verdict", "correct", "task", "a")) == 2);
        CHECK(list_count(s, json_pack("{s:s}", "state", "queued")) == 21);
        CHECK(list_count(s, json_pack("{s:s}", "state", "done")) == 4);
        CHECK(list_count(s, json_pack("{s:s}", "run_id", "r1")) == 10);
        CHECK(list_count(s, json_pack("{s:I}", "token_id", (json_int_t)9)) == 3);
        CHECK(list_count(s, json_pack("{s:s}", "label", "exp=x")) == 3);  /* i = 0, 10, 20 */
        CHECK(list_count(s, json_pack("{s:s}", "label", "exp=y")) == 2);  /* i = 5, 15 */
        CHECK(list_count(s, json_pack("{s:s}", "label", "exp=z")) == 0);
        CHECK(list_count(s, json_pack("{s:f}", "since", t_before - 1)) == 25);
        CHECK(list_count(s, json_pack("{s:f}", "since", store_now() + 60)) == 0);
        CHECK(list_count(s, json_pack("{s:s}", "since", "2000-01-01T00:00:00Z")) == 25);
        CHECK(list_count(s, json_pack("{s:s}", "since", "2999-01-01T00:00:00.5+02:00")) == 0);
        /* since = a row's own created_at includes that row. */
        CHECK_RC(store_list_submissions(s, NULL, 0, 1, &items, &next), 0);
        const char *newest_at = json_string_value(json_object_get(json_array_get(items, 0), "created_at"));
        CHECK(list_count(s, json_pack("{s:s}", "since", newest_at)) >= 1);
        json_decref(items);
        char future[64];
        snprintf(future, sizeof(future), "%.0f", store_now() + 3600);
        CHECK(list_count(s, json_pack("{s:s}", "since", future)) == 0);
        json_t *bad[] = { json_pack("{s:s}", "colour", "red"), json_pack("{s:i}", "task", 3),
                          json_pack("{s:s}", "label", "novalue"), json_pack("{s:s}", "since", "yesterday"),
                          json_pack("{s:s}", "label", "=v") };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                CHECK_RC(store_list_submissions(s, bad[i], 0, 10, &items, &next), -EINVAL);
                json_decref(bad[i]);
        }

        /* Views. */
        CHECK_RC(store_query_view(s, "v_speedup_by_task", 100, &rows), 0);
        CHECK(json_array_size(rows) == 2);
        json_t *ra = json_array_get(rows, 0), *rb = json_array_get(rows, 1);
        CHECK(strcmp(json_string_value(json_object_get(ra, "task")), "a") == 0);
        CHECK(json_integer_value(json_object_get(ra, "n")) == 2);
        CHECK(json_real_value(json_object_get(ra, "min_speedup")) == 1.2);
        CHECK(json_real_value(json_object_get(ra, "max_speedup")) == 5.0);
        CHECK(fabs(json_real_value(json_object_get(ra, "avg_speedup")) - 3.1) < 1e-9);
        CHECK(json_integer_value(json_object_get(ra, "b_1_1_5")) == 1);
        CHECK(json_integer_value(json_object_get(ra, "ge_4")) == 1);
        CHECK(json_integer_value(json_object_get(ra, "lt_0_5")) == 0);
        CHECK(json_integer_value(json_object_get(rb, "lt_0_5")) == 1 && json_integer_value(json_object_get(rb, "n")) == 1);
        json_decref(rows);
        CHECK_RC(store_query_view(s, "v_queue_depth", 100, &rows), 0);
        CHECK(json_array_size(rows) == 1);
        CHECK(strcmp(json_string_value(json_object_get(json_array_get(rows, 0), "state")), "queued") == 0);
        CHECK(json_integer_value(json_object_get(json_array_get(rows, 0), "jobs")) == 21);
        json_decref(rows);
        CHECK_RC(store_query_view(s, "v_submissions_hourly", 100, &rows), 0);
        json_int_t sum = 0, correct_a = 0;
        for (size_t i = 0; i < json_array_size(rows); i++) {
                json_t *r = json_array_get(rows, i);
                sum += json_integer_value(json_object_get(r, "submissions"));
                CHECK(strlen(json_string_value(json_object_get(r, "hour"))) == 20);
                if (!strcmp(json_string_value(json_object_get(r, "task")), "a") &&
                    !strcmp(json_string_value(json_object_get(r, "verdict")), "correct"))
                        correct_a += json_integer_value(json_object_get(r, "submissions"));
        }
        CHECK(sum == 25 && correct_a == 2);
        json_decref(rows);
        CHECK_RC(store_query_view(s, "v_task_summary", 100, &rows), 0);
        CHECK(json_array_size(rows) == 2);
        json_decref(rows);
        CHECK_RC(store_query_view(s, "submissions", 10, &rows), -EINVAL);
        CHECK_RC(store_query_view(s, "v_x; DROP TABLE submissions", 10, &rows), -EINVAL);
        CHECK_RC(store_query_view(s, "v_nope", 10, &rows), STORE_E_NOT_FOUND);

        /* Stats. */
        CHECK_RC(store_stats(s, &st), 0);
        CHECK(json_integer_value(json_object_get(json_object_get(st, "states"), "queued")) == 21);
        CHECK(json_integer_value(json_object_get(json_object_get(st, "states"), "done")) == 4);
        CHECK(json_integer_value(json_object_get(json_object_get(st, "verdicts"), "correct")) == 3);
        CHECK(json_integer_value(json_object_get(json_object_get(st, "verdicts"), "incorrect")) == 1);
        CHECK(json_integer_value(json_object_get(st, "queue_depth")) == 21);
        CHECK(json_integer_value(json_object_get(st, "submissions")) == 25);
        CHECK(json_object_size(json_object_get(st, "verdicts")) == 2);
        json_t *tasks = json_object_get(st, "tasks");
        CHECK(json_array_size(tasks) == 2);
        json_t *ta = json_array_get(tasks, 0), *tb = json_array_get(tasks, 1);
        CHECK(strcmp(json_string_value(json_object_get(ta, "task")), "a") == 0);
        CHECK(json_integer_value(json_object_get(ta, "done")) == 2);
        CHECK(json_real_value(json_object_get(ta, "correct_rate")) == 1.0);
        /* Lower median, from the histogram (within 5%): a has 1.2 and 5.0, b has 0.4. */
        CHECK(fabs(json_real_value(json_object_get(ta, "median_speedup")) / 1.2 - 1) < 0.05);
        CHECK(json_integer_value(json_object_get(ta, "submissions")) == 13);
        CHECK(json_real_value(json_object_get(tb, "correct_rate")) == 0.5);
        CHECK(fabs(json_real_value(json_object_get(tb, "median_speedup")) / 0.4 - 1) < 0.05);
        json_decref(st);
        store_close(s);
}

static void test_pool(void)
{
        char path[512];
        StorePool *pool = NULL;
        fresh_path(path, sizeof(path));
        CHECK_RC(storepool_open(path, 3, &pool), 0);
        Store *a = storepool_get(pool), *b = storepool_get(pool), *c = storepool_get(pool);
        CHECK(a && b && c && a != b && b != c && a != c);
        int64_t id = insert1(a, "t", 0, 0, NULL, NULL, NULL);
        json_t *o;
        CHECK_RC(store_get_submission(c, id, &o), 0); /* another connection sees the commit */
        json_decref(o);
        storepool_put(pool, a);
        storepool_put(pool, b);
        storepool_put(pool, c);
        CHECK_RC(storepool_open(path, 0, &pool), -EINVAL);
        storepool_close(pool);
}

/* Both backends: a PostgreSQL that cannot be reached is a clear -ENOTCONN, the DSN's password never shown. */
static void test_unreachable(void)
{
        Store *s = NULL;
        char *shown;

        CHECK(store_path_is_pg("postgresql://h/db") && store_path_is_pg("postgres://h/db") &&
              store_path_is_pg("postgresql:"));
        CHECK(!store_path_is_pg("kevald.db") && !store_path_is_pg("postgresql") && !store_path_is_pg("./postgresql:x"));
        shown = store_path_redacted("postgresql://kevald:hunter2@127.0.0.1:1/x?sslmode=disable");
        CHECK(shown && !strstr(shown, "hunter2") && strstr(shown, "kevald:***@127.0.0.1:1/x"));
        free(shown);
        shown = store_path_redacted("postgresql://h/x?user=u&password=hunter2&sslmode=disable");
        CHECK(shown && !strstr(shown, "hunter2") && strstr(shown, "password=***&sslmode"));
        free(shown);
        /* Port 1 on loopback: nothing listens there. */
        CHECK_RC(store_open("postgresql://kevald:hunter2@127.0.0.1:1/x?connect_timeout=2", &s), -ENOTCONN);
        CHECK(s == NULL);
        CHECK_RC(store_set_host_id(""), -EINVAL);
        CHECK_RC(store_set_host_id("a b"), -EINVAL);
        CHECK_RC(store_set_host_id("a/b"), -EINVAL);
        CHECK_RC(store_set_host_id("0123456789012345678901234567890123456789012345678901234567890123"), -EINVAL);
        CHECK_RC(store_set_host_id("testhost"), 0);
        CHECK(strcmp(store_host_id(), "testhost") == 0);
}

/* The highest ?N of @sql, -1 when the numbers used are not 1..N (each at least once). */
static int sql_args(const char *sql)
{
        bool used[32] = { false };
        int max = 0;
        char quote = 0;

        for (const char *c = sql; *c; c++) {
                if (quote) {
                        quote = *c == quote ? 0 : quote;
                } else if (*c == '\'' || *c == '"') {
                        quote = *c;
                } else if (*c == '?' && c[1] >= '1' && c[1] <= '9') {
                        int k = (int)strtol(c + 1, NULL, 10);
                        if (k >= 32)
                                return -1;
                        used[k] = true;
                        max = k > max ? k : max;
                }
        }
        for (int k = 1; k <= max; k++)
                if (!used[k])
                        return -1;
        return max;
}

/*
 * The statement table (store_sql.def): every statement has a text in at
 * least one dialect, its arguments are ?1..?N in each, a dialect's two texts
 * take the same arguments, PostgreSQL's are written $N and SQLite's lose
 * their casts (quoted text left alone), and on SQLite every statement of its dialect prepares against the
 * migrated schema (a statement only the rarest path runs is checked too).
 */
static void test_sql_table(void)
{
        char path[512];
        Store *s = open_fresh(path, sizeof(path));
        const char *t = "SELECT '?1::text', \"?2\", ?3::double precision, ?4::bigint OFFSET ?5 WHERE x = ?12::text";
        char *as_pg = store_sql_render(t, true), *as_sq = store_sql_render(t, false);

        CHECK(as_pg && !strcmp(as_pg, "SELECT '?1::text', \"?2\", $3::double precision, $4::bigint OFFSET $5 "
                                      "WHERE x = $12::text"));
        CHECK(as_sq && !strcmp(as_sq, "SELECT '?1::text', \"?2\", ?3, ?4 OFFSET ?5 WHERE x = ?12"));
        free(as_pg);
        free(as_sq);
        CHECK(store_sql_text(STORE_Q__COUNT, false) == NULL && store_sql_text(-1, true) == NULL);
        for (int q = 0; q < STORE_Q__COUNT; q++) {
                const char *sq = store_sql_text(q, false), *pg = store_sql_text(q, true);
                if (!sq && !pg) {
                        fprintf(stderr, "test-store: statement %d has no SQL\n", q);
                        CHECK(false);
                }
                CHECK(!sq || sql_args(sq) >= 0);
                CHECK(!pg || sql_args(pg) >= 0);
                /* LEASES_HOST: SQLite names the host's prefix only to take it (one host holds all). */
                CHECK(!sq || !pg || sql_args(sq) == sql_args(pg));
                if (!sq || strcmp(s->ops->name, "sqlite"))
                        continue;
                StoreRow row;
                int r = s->ops->query(s->be, q, NULL, NULL, 0, &row);
                if (r != 0)
                        fprintf(stderr, "test-store: statement %d does not prepare: %s\n", q, sq);
                CHECK_RC(r, 0);
                s->ops->done(&row);
        }
        store_close(s);
}

/* SQLite: one host, so no wake-ups through the database. */
static void test_sqlite_no_listen(void)
{
        char path[512];
        Store *s = open_fresh(path, sizeof(path));
        StoreEvent ev;
        CHECK_RC(store_listen(s), -EOPNOTSUPP);
        CHECK_RC(store_next_event(s, 0, &ev), -EOPNOTSUPP);
        CHECK_RC(store_host_beat(s), 0);
        CHECK(strcmp(s->ops->name, "sqlite") == 0);
        store_close(s);
}

/*
 * PostgreSQL, two hosts on one database: at start-up a host puts back only
 * its own leases; another host's expired lease is returned by this host's
 * reaper; the dead host's late finish is refused (never scored twice).
 */
static void test_pg_dead_host(void)
{
        char path[512];
        Store *a = open_fresh(path, sizeof(path)), *b = NULL;
        StoreJob *job;
        int requeued = -1, failed = -1;
        json_t *o;

        CHECK(strcmp(a->ops->name, "postgresql") == 0);
        CHECK_RC(store_open(path, &b), 0);
        int64_t ida = insert1(a, "t", 0, 0, NULL, NULL, NULL);
        int64_t idb = insert1(a, "t", 0, 0, NULL, NULL, NULL);
        CHECK_RC(store_claim_next(a, STAGE_COMPILE, "hosta/kevald-1", 2.0, &job), 0);
        CHECK(job->id == ida);
        store_job_free(job);
        CHECK_RC(store_claim_next(b, STAGE_COMPILE, "testhost/kevald-2", 3600, &job), 0);
        CHECK(job->id == idb);
        store_job_free(job);
        CHECK_RC(store_host_beat(a), 0);
        CHECK_RC(store_host_beat(b), 0);
        /* This host (testhost) restarts: only its own lease goes back. */
        CHECK(store_requeue_all_leases(b) == 1);
        CHECK(strcmp(get_str(b, ida, "state", &o), "compiling") == 0);
        json_decref(o);
        CHECK(strcmp(get_str(b, idb, "state", &o), "queued") == 0);
        json_decref(o);
        /* hosta dies: its lease runs out and testhost's reaper returns the job. */
        store_close(a);
        CHECK_RC(reap(b, 3, &requeued, &failed), 0);
        CHECK(requeued == 0);
        sleep_s(2.2);   /* the lease (2 s: long enough for the steps above on a loaded host) runs out */
        CHECK_RC(reap(b, 3, &requeued, &failed), 0);
        CHECK(requeued == 1 && failed == 0);
        CHECK(strcmp(get_str(b, ida, "state", &o), "queued") == 0);
        json_decref(o);
        /* Claimed again by the living host; the dead one's finish is refused. */
        CHECK_RC(store_claim_next(b, STAGE_COMPILE, "testhost/kevald-2", 30, &job), 0);
        store_job_free(job);
        CHECK_RC(store_claim_next(b, STAGE_COMPILE, "testhost/kevald-2", 30, &job), 0);
        store_job_free(job);
        json_t *res = json_pack("{s:s}", "verdict", "correct");
        CHECK_RC(store_finish(b, ida, "hosta/kevald-1", "correct", 2.0, res), STORE_E_CONFLICT);
        CHECK_RC(store_finish(b, ida, "testhost/kevald-2", "correct", 2.0, res), 0);
        CHECK_RC(store_finish(b, ida, "testhost/kevald-2", "correct", 2.0, res), STORE_E_CONFLICT);
        json_decref(res);
        store_close(b);
}

static double mono(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wait for an event of @kind on @l (other kinds are skipped); returns seconds waited, or -1. */
static double wait_event(Store *l, StoreEventKind kind, int64_t id)
{
        double t0 = mono();
        while (mono() - t0 < 5) {
                StoreEvent ev;
                int r = store_next_event(l, 1000, &ev);
                if (r == 0 && ev.kind == kind && (id == 0 || ev.id == id))
                        return mono() - t0;
                CHECK(r == 0 || r == STORE_E_EMPTY);
        }
        return -1;
}

/* PostgreSQL: a commit on one connection wakes a listener on another (within 2 s: without a
 * notification no event would come at all; the bound leaves room for a loaded host). */
static void test_pg_notify(void)
{
        char path[512];
        Store *w = open_fresh(path, sizeof(path)), *l = NULL;
        StoreEvent ev;
        StoreJob *job;

        CHECK_RC(store_open(path, &l), 0);
        CHECK_RC(store_listen(l), 0);
        CHECK_RC(store_next_event(l, 0, &ev), STORE_E_EMPTY);
        int64_t id = insert1(w, "t", 0, 0, NULL, NULL, NULL);
        double dt = wait_event(l, STORE_EVENT_WORK, 0);
        CHECK(dt >= 0 && dt < 2.0);
        CHECK_RC(store_claim_next(w, STAGE_COMPILE, "testhost/w", 30, &job), 0);
        store_job_free(job);
        json_t *res = json_pack("{s:s}", "verdict", "compile_error");
        CHECK_RC(store_finish(w, id, "testhost/w", "compile_error", NAN, res), 0);
        json_decref(res);
        dt = wait_event(l, STORE_EVENT_DONE, id);
        fprintf(stderr, "test-store: done notification after %.1f ms\n", dt * 1000);
        CHECK(dt >= 0 && dt < 2.0);
        /* A rolled-back group wakes nobody: notifications go out only at commit. */
        CHECK_RC(store_begin_group(w), 0);
        insert1(w, "t", 0, 0, NULL, NULL, NULL);
        store_rollback_group(w);
        CHECK_RC(store_next_event(l, 200, &ev), STORE_E_EMPTY);
        store_close(l);
        store_close(w);
}

/*
 * PostgreSQL: while this process listens, a claim that found nothing asks
 * the database again only after a notification (or CLAIM_GATE_MAX_S): a
 * row inserted behind the triggers' back stays unseen, one inserted with
 * its NOTIFY is claimed.
 */
static void test_pg_claim_gate(void)
{
        char path[512], sql[256];
        Store *w = open_fresh(path, sizeof(path)), *l = NULL;
        StoreJob *job;

        CHECK_RC(store_open(path, &l), 0);
        CHECK_RC(store_listen(l), 0);
        CHECK_RC(store_claim_next(w, STAGE_COMPILE, "testhost/w", 30, &job), STORE_E_EMPTY);
        /* A row without its notification: the gate stays shut, no query is made. */
        psql(path, "ALTER TABLE submissions DISABLE TRIGGER submissions_notify_insert");
        int64_t hidden = insert1(w, "t", 0, 0, NULL, NULL, NULL);
        psql(path, "ALTER TABLE submissions ENABLE TRIGGER submissions_notify_insert");
        CHECK_RC(store_claim_next(w, STAGE_COMPILE, "testhost/w", 30, &job), STORE_E_EMPTY);
        /* The next notified commit opens it: both rows are there to claim. */
        insert1(w, "t", 0, 0, NULL, NULL, NULL);
        CHECK(wait_event(l, STORE_EVENT_WORK, 0) >= 0);
        CHECK_RC(store_claim_next(w, STAGE_COMPILE, "testhost/w", 30, &job), 0);
        CHECK(job->id == hidden);
        store_job_free(job);
        CHECK_RC(store_claim_next(w, STAGE_COMPILE, "testhost/w", 30, &job), 0);
        store_job_free(job);
        CHECK_RC(store_claim_next(w, STAGE_COMPILE, "testhost/w", 30, &job), STORE_E_EMPTY);
        /* No listener in the process: every claim asks the database. */
        store_close(l);
        psql(path, "ALTER TABLE submissions DISABLE TRIGGER submissions_notify_insert");
        hidden = insert1(w, "t", 0, 0, NULL, NULL, NULL);
        CHECK_RC(store_claim_next(w, STAGE_COMPILE, "testhost/w", 30, &job), 0);
        CHECK(job->id == hidden);
        store_job_free(job);
        snprintf(sql, sizeof(sql), "ALTER TABLE submissions ENABLE TRIGGER submissions_notify_insert");
        psql(path, sql);
        store_close(w);
}

/* Whether, within @timeout_s, another session of the database at @uri sleeps in pg_sleep after its
 * SELECT ... FOR UPDATE (so holds its row lock). */
static bool wait_row_locked(const char *uri, double timeout_s)
{
        char cmd[1400], line[64];
        double t0 = mono();

        snprintf(cmd, sizeof(cmd), "%s%spsql -q -X -t -A -d '%s' -c \"SELECT count(*) FROM pg_stat_activity WHERE "
                 "wait_event = 'PgSleep' AND query LIKE '%%FOR UPDATE%%' AND pid <> pg_backend_pid()\" 2>/dev/null",
                 pg_bin, pg_bin[0] ? "/" : "", uri);
        while (mono() - t0 < timeout_s) {
                FILE *f = popen(cmd, "r");
                bool held = false;

                if (f) {
                        held = fgets(line, sizeof(line), f) && atoi(line) >= 1;
                        pclose(f);
                }
                if (held)
                        return true;
                sleep_s(0.1);
        }
        return false;
}

/*
 * PostgreSQL: renewing a host's leases does not wait for a row another
 * transaction holds (one being finished): the others are renewed at once.
 */
static void test_pg_heartbeat_skip_locked(void)
{
        char path[512], cmd[1400];
        Store *s = open_fresh(path, sizeof(path));
        StoreJob *job;
        int64_t ids[2];
        int ext = -1;

        for (int i = 0; i < 2; i++) {
                insert1(s, "t", 0, 0, NULL, NULL, NULL);
                CHECK_RC(store_claim_next(s, STAGE_COMPILE, "testhost/hb", 30, &job), 0);
                ids[i] = job->id;
                store_job_free(job);
        }
        /* Another session holds the first row for 5 s; wait until it does (psql starts slowly on a loaded host). */
        snprintf(cmd, sizeof(cmd), "%s%spsql -q -X -d '%s' -c 'BEGIN; SELECT 1 FROM submissions WHERE id = %lld "
                 "FOR UPDATE; SELECT pg_sleep(5); COMMIT' >/dev/null 2>&1 &", pg_bin, pg_bin[0] ? "/" : "", path,
                 (long long)ids[0]);
        CHECK(system(cmd) == 0);
        CHECK(wait_row_locked(path, 20.0));
        double t0 = mono();
        CHECK_RC(store_heartbeat_owner(s, "testhost/hb", 600, &ext), 0);
        CHECK(mono() - t0 < 2.5);       /* not waiting for the 5 s lock */
        CHECK(ext == 1);                /* the free one */
        /* Both, once the other session is gone. */
        t0 = mono();
        do {
                sleep_s(0.2);
                CHECK_RC(store_heartbeat_owner(s, "testhost/hb", 600, &ext), 0);
        } while (ext != 2 && mono() - t0 < 20.0);
        CHECK(ext == 2);                /* both, once the other session is gone */
        store_close(s);
}

static void pg_temp(const char *what)
{
        const char *root = getenv("KEVALD_SOURCE_ROOT");
        char cmd[1024];
        snprintf(cmd, sizeof(cmd), "'%s/scripts/pg-temp' %s", root ? root : KEVALD_SOURCE_DIR, what);
        CHECK(system(cmd) == 0);
}

/*
 * PostgreSQL stopped under live Stores, then started: calls fail with
 * -ENOTCONN (nothing half-done), then succeed again without re-opening;
 * what was acknowledged before is there; the listener resumes.
 */
static void test_pg_restart(void)
{
        char path[512];
        Store *s = open_fresh(path, sizeof(path)), *l = NULL;
        StoreEvent ev;
        json_t *o = NULL;
        int r = 0;

        if (!getenv("KEVALD_TEST_PG_DIR")) {
                fprintf(stderr, "test-store: no KEVALD_TEST_PG_DIR (not under scripts/pg-temp): restart skipped\n");
                store_close(s);
                return;
        }
        CHECK_RC(store_open(path, &l), 0);
        CHECK_RC(store_listen(l), 0);
        int64_t id = insert1(s, "t", 0, 0, NULL, NULL, NULL);
        CHECK(wait_event(l, STORE_EVENT_WORK, 0) >= 0);
        pg_temp("stop");
        json_t *req = make_request("t", NULL, NULL, NULL);
        StoreNew sn = { .request = req, .task = "t", .mode = "full" };
        int64_t id2 = 0;
        CHECK_RC(store_insert_submissions(s, &sn, 1, &id2, NULL, NULL, 0, 0), -ENOTCONN);
        CHECK_RC(store_get_submission(s, id, &o), -ENOTCONN);
        /* The listener notices the loss by itself (the socket closes), without a query. */
        double t1 = mono();
        do
                r = store_next_event(l, 100, &ev);
        while (r == STORE_E_EMPTY && mono() - t1 < 3);
        CHECK_RC(r, -ENOTCONN);
        pg_temp("start");
        double t0 = mono();
        do {
                r = store_get_submission(s, id, &o);
                if (r == -ENOTCONN)
                        sleep_s(0.05);
        } while (r == -ENOTCONN && mono() - t0 < 15);
        CHECK_RC(r, 0);
        fprintf(stderr, "test-store: reconnected %.2f s after the restart\n", mono() - t0);
        CHECK(strcmp(json_string_value(json_object_get(o, "state")), "queued") == 0);
        json_decref(o);
        CHECK_RC(store_insert_submissions(s, &sn, 1, &id2, NULL, NULL, 0, 0), 0);
        CHECK(id2 > id);
        /* The listener comes back by itself, LISTEN renewed: it reports work, then sees new commits. */
        CHECK(wait_event(l, STORE_EVENT_WORK, 0) >= 0);
        insert1(s, "t", 0, 0, NULL, NULL, NULL);
        CHECK(wait_event(l, STORE_EVENT_WORK, 0) >= 0);
        json_decref(req);
        store_close(l);
        store_close(s);
}

/* Two stores answer the same for everything the API and the dashboards read. */
static void check_same(Store *a, Store *b, int64_t max_id)
{
        json_t *x = NULL, *y = NULL;
        uint8_t sa[32], sb[32];

        for (int64_t id = 1; id <= max_id; id++) {
                CHECK_RC(store_get_submission(a, id, &x), 0);
                CHECK_RC(store_get_submission(b, id, &y), 0);
                CHECK(json_equal(x, y));
                json_decref(x);
                json_decref(y);
        }
        CHECK_RC(store_stats(a, &x), 0);
        CHECK_RC(store_stats(b, &y), 0);
        CHECK(json_equal(x, y));
        json_decref(x);
        json_decref(y);
        json_t *args = json_pack("[s,I,I]", "run-c", (json_int_t)-1, (json_int_t)100);
        for (int q = STORE_DASH_RUN_STEPS; q <= STORE_DASH_RUN_TASKS; q++) {
                CHECK_RC(store_dashboard_rows(a, (StoreDash)q, args, &x), 0);
                CHECK_RC(store_dashboard_rows(b, (StoreDash)q, args, &y), 0);
                CHECK(json_array_size(x) > 0);
                CHECK(json_equal(x, y));
                json_decref(x);
                json_decref(y);
        }
        json_decref(args);
        CHECK_RC(store_token_list(a, &x), 0);
        CHECK_RC(store_token_list(b, &y), 0);
        CHECK(json_equal(x, y));
        json_decref(x);
        json_decref(y);
        CHECK_RC(store_secret(a, sa), 0);
        CHECK_RC(store_secret(b, sb), 0);
        CHECK(memcmp(sa, sb, 32) == 0);
}

/* PostgreSQL: a SQLite history copied over answers the same, ids, keys and secret kept. */
static void test_pg_copy(void)
{
        char sq_path[512], pg_path[512];
        const char *saved = pg_base;
        Store *sq, *pg = NULL;
        StoreJob *job;
        uint8_t hash[32] = { 7 }, key[32] = { 9 }, body[32] = { 3 };
        json_t *report = NULL, *o;
        int64_t tok = 0, ids[3];

        pg_base = NULL; /* a SQLite file */
        sq = open_fresh(sq_path, sizeof(sq_path));
        pg_base = saved;
        fresh_path(pg_path, sizeof(pg_path));
        CHECK_RC(store_token_create(sq, "alice", hash, NULL, &tok), 0);
        json_t *req = make_request("copy_task", "run-c", "k", "v");
        json_object_set_new(json_object_get(req, "tags"), "step", json_integer(2));
        StoreNew subs[3];
        for (int i = 0; i < 3; i++)
                subs[i] = (StoreNew){ .request = req, .task = "copy_task", .mode = "full", .token_id = tok };
        CHECK_RC(store_insert_submissions(sq, subs, 3, ids, "key-1", body, 0, 0), 0);
        for (int i = 0; i < 2; i++) {
                CHECK_RC(store_claim_next(sq, STAGE_COMPILE, "testhost/w", 30, &job), 0);
                json_t *res = json_pack("{s:s, s:{s:b}, s:{s:b, s:f}}", "verdict", i ? "incorrect" : "correct",
                                        "reward_fields", "compiled", 1, "compile", "cache_hit", 0, "compile_ms", 12.5);
                CHECK_RC(store_finish(sq, job->id, "testhost/w", i ? "incorrect" : "correct", i ? NAN : 2.5, res), 0);
                json_decref(res);
                store_job_free(job);
        }
        json_t *comp = json_pack("{s:b}", "ok", 1);
        uint8_t cubin[100] = { 1, 2, 3 };
        CHECK_RC(store_cache_put(sq, key, comp, cubin, sizeof(cubin)), 0);
        json_decref(comp);
        json_decref(req);

        CHECK_RC(store_open(pg_path, &pg), 0);
        CHECK_RC(store_copy(pg, sq, false, &report), -EINVAL); /* the direction is SQLite -> PostgreSQL */
        CHECK_RC(store_copy(sq, pg, false, &report), 0);
        CHECK(json_integer_value(json_object_get(report, "submissions")) == 3);
        CHECK(json_integer_value(json_object_get(report, "submission_results")) == 2);
        CHECK(json_integer_value(json_object_get(report, "tokens")) == 1);
        CHECK(json_integer_value(json_object_get(report, "idempotency")) == 1);
        CHECK(json_integer_value(json_object_get(report, "compile_cache")) == 1);
        CHECK(json_integer_value(json_object_get(report, "job_metrics")) == 2);
        json_decref(report);
        check_same(sq, pg, 3);

        /* The idempotency key still replays; the cache hits with the same bytes; the token resolves. */
        int64_t again[3];
        bool replayed = false;
        StoreInsert ins = { .subs = subs, .n = 3, .idem_key = "key-1", .body_hash = body };
        req = make_request("copy_task", NULL, NULL, NULL);
        for (int i = 0; i < 3; i++)
                subs[i] = (StoreNew){ .request = req, .task = "copy_task", .mode = "full", .token_id = tok };
        CHECK_RC(store_insert_request(pg, &ins, again, &replayed), 0);
        CHECK(replayed && again[0] == ids[0] && again[2] == ids[2]);
        uint8_t *got = NULL;
        size_t got_len = 0;
        CHECK_RC(store_cache_get(pg, key, &o, &got, &got_len), 0);
        CHECK(got_len == sizeof(cubin) && memcmp(got, cubin, sizeof(cubin)) == 0);
        free(got);
        json_decref(o);
        int64_t tid = 0;
        CHECK_RC(store_token_lookup(pg, hash, &tid, NULL), 0);
        CHECK(tid == tok);
        /* New rows continue after the copied ids; the queue carries on (the third job). */
        int64_t next = insert1(pg, "copy_task", 0, tok, NULL, NULL, NULL);
        CHECK(next == ids[2] + 1);
        CHECK_RC(store_claim_next(pg, STAGE_COMPILE, "testhost/w", 30, &job), 0);
        CHECK(job->id == ids[2]);
        store_job_free(job);
        json_decref(req);

        /* A store that is not empty is refused, unless forced. */
        CHECK_RC(store_copy(sq, pg, false, &report), STORE_E_CONFLICT);
        CHECK_RC(store_copy(sq, pg, true, &report), 0);
        json_decref(report);
        check_same(sq, pg, 3);
        store_close(pg);
        store_close(sq);
}

/* Run one test, saying how long it took (the PostgreSQL run is bounded by commit latency). */
#define RUN(test)                                                                                  \
        do {                                                                                       \
                double t0_ = mono();                                                               \
                test();                                                                            \
                fprintf(stderr, "test-store: %-24s %6.2f s\n", #test, mono() - t0_);              \
        } while (0)

int main(int argc, char **argv)
{
        const char *base = getenv("TMPDIR");
        log_init("test-store", LOG_LEVEL_WARN);
        if (argc > 1 && !strcmp(argv[1], "--pg")) {
                pg_base = getenv("KEVALD_TEST_PG");
                if (!pg_base) {
                        fprintf(stderr, "test-store: --pg needs KEVALD_TEST_PG (run under scripts/pg-temp run --)\n");
                        return 77;
                }
                if (getenv("KEVALD_TEST_PG_BIN"))
                        snprintf(pg_bin, sizeof(pg_bin), "%s", getenv("KEVALD_TEST_PG_BIN"));
        }
        snprintf(tmpdir, sizeof(tmpdir), "%s/kevald-store-XXXXXX", base ? base : "/tmp");
        CHECK(mkdtemp(tmpdir));

        RUN(test_unreachable);
        RUN(test_migrations);
        RUN(test_lifecycle);
        RUN(test_priority);
        RUN(test_concurrent_claims);
        RUN(test_leases);
        RUN(test_lease_plan);
        RUN(test_cancel);
        RUN(test_idempotency);
        RUN(test_group);
        RUN(test_quotas);
        RUN(test_cache);
        RUN(test_tokens);
        RUN(test_list_views_stats);
        RUN(test_fair_share);
        RUN(test_pool);
        RUN(test_sql_table);
        if (pg_base) {
                RUN(test_pg_dead_host);
                RUN(test_pg_notify);
                RUN(test_pg_copy);
                RUN(test_pg_claim_gate);
                RUN(test_pg_heartbeat_skip_locked);
                RUN(test_pg_restart);
        } else {
                RUN(test_sqlite_no_listen);
        }

        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
                fprintf(stderr, "test-store: could not remove %s\n", tmpdir);
        printf("test-store: all passed (%s)\n", pg_base ? "postgresql" : "sqlite");
        return 0;
}
