/*
 * store_queue - the store's writes, written once over a backend's primitives
 * (store_backend.h): acceptance (idempotency, quotas, the aggregates),
 * claims, leases and the reaper, a job's stages and its finish, cancels,
 * and the compile cache. The SQL is store_sql.def's; what differs between
 * SQLite and PostgreSQL is there or in the backend's StoreOps.
 *
 * Every write runs in the backend's write transaction (store_tx_begin(); an
 * insert in a group's, in a savepoint); "lazy" ones (claims, lease renewals, cache
 * bookkeeping: redone if lost) may commit without waiting for the disk.
 * The aggregates (queue_counts, task_stats) are added to once per request
 * here and taken from by the schema's triggers on every path to 'done'.
 */
#include "server/store/store.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/limits.h"
#include "common/log.h"
#include "server/store/store_backend.h"

/* Run @q alone in its own write transaction; @ret_n: rows it wrote (may be NULL). */
static int write_one(Store *s, bool lazy, int q, const StoreVal *args, int n, int64_t *ret_n)
{
        int r = store_tx_begin(s, lazy ? STORE_TX_LAZY : STORE_TX_WRITE);

        if (r < 0)
                return r;
        r = store_db_exec(s, q, args, n, ret_n);
        return s->ops->tx_end(s->be, r);
}

/* STORE_E_NOT_FOUND when @id does not exist (or is not @token_id's), else STORE_E_CONFLICT. */
static int why_not(Store *s, int64_t id, int64_t token_id)
{
        StoreVal a[] = { SV_INT(id) };
        StoreRow row;
        int r = store_db_first(s, STORE_Q_TOKEN_OF, NULL, a, SV_N(a), &row);

        if (r <= 0)
                return r < 0 ? r : STORE_E_NOT_FOUND;
        r = token_id && row.ops->i64(&row, 0) != token_id ? STORE_E_NOT_FOUND : STORE_E_CONFLICT;
        return store_db_end(&row, r);
}

/* ---- acceptance --------------------------------------------------------- */

/* 0 with ids (replay), STORE_E_NOT_FOUND (new key), STORE_E_CONFLICT (other body), or -errno. */
static int idem_get(Store *s, int64_t token_id, const char *key, const uint8_t hash[32], size_t max,
                    int64_t **ret_ids, size_t *ret_n)
{
        StoreVal a[] = { SV_INT(token_id), SV_TEXT(key) };
        StoreRow row;
        uint8_t *h = NULL;
        size_t len = 0;
        int r = store_db_first(s, STORE_Q_IDEM_GET, NULL, a, SV_N(a), &row);

        if (r <= 0)
                return r < 0 ? r : STORE_E_NOT_FOUND;
        r = row.ops->blob(&row, 0, &h, &len);
        if (r == 0 && (len != 32 || memcmp(h, hash, 32) != 0))
                r = STORE_E_CONFLICT;
        else if (r == 0)
                r = store_ids_decode(row.ops->text(&row, 1, NULL), max, ret_ids, ret_n);
        free(h);
        return store_db_end(&row, r);
}

/*
 * An insert's idempotency key, looked up first in its transaction: 0 (a
 * replay, @ids and *@ret_replayed set; or no key, or a new one),
 * STORE_E_CONFLICT when the key was used with another body or another
 * number of submissions, or its stored ids do not read; or a negative errno.
 */
static int idem_replay(Store *s, const StoreInsert *ins, int64_t *ids, bool *ret_replayed)
{
        int64_t *old = NULL;
        size_t n_old = 0;
        int r;

        if (!ins->idem_key)
                return 0;
        r = idem_get(s, ins->subs[0].token_id, ins->idem_key, ins->body_hash, ins->n, &old, &n_old);
        if (r == STORE_E_NOT_FOUND)
                return 0;
        if (r != 0)
                return r == -EBADMSG ? STORE_E_CONFLICT : r;
        if (n_old != ins->n) {
                free(old);
                return STORE_E_CONFLICT;
        }
        memcpy(ids, old, sizeof(*ids) * n_old);
        free(old);
        *ret_replayed = true;
        return 0;
}

/* qsort_r() order of indexes into a StoreNew array (@arg) by task name. */
static int cmp_task(const void *a, const void *b, void *arg)
{
        const StoreNew *subs = arg;
        const char *x = subs[*(const size_t *)a].task, *y = subs[*(const size_t *)b].task;
        return strcmp(x ? x : "", y ? y : "");
}

static int add_active(Store *s, int64_t token_id, int64_t n)
{
        StoreVal a[] = { SV_INT(token_id), SV_INT(n) };
        return store_db_exec(s, STORE_Q_ADD_ACTIVE, a, SV_N(a), NULL);
}

/*
 * Count a request's submissions into the aggregates: queue_counts for all
 * (-1) and for the token, then task_stats once per distinct task, in name
 * order (a fixed lock order). Done once per request rather than by per-row
 * triggers, which cost a third of the insert.
 */
static int count_inserted(Store *s, const StoreInsert *ins)
{
        size_t *order;
        int r = add_active(s, -1, (int64_t)ins->n);

        if (r == 0)
                r = add_active(s, ins->subs[0].token_id, (int64_t)ins->n);
        if (r < 0)
                return r;
        order = malloc(ins->n * sizeof(*order));
        if (!order)
                return -ENOMEM;
        for (size_t i = 0; i < ins->n; i++)
                order[i] = i;
        qsort_r(order, ins->n, sizeof(*order), cmp_task, (void *)ins->subs);
        for (size_t i = 0; i < ins->n && r == 0;) {
                size_t j = i + 1;
                const char *task = ins->subs[order[i]].task;
                while (j < ins->n && cmp_task(&order[i], &order[j], (void *)ins->subs) == 0)
                        j++;
                StoreVal a[] = { SV_TEXT(task ? task : ""), SV_INT((int64_t)(j - i)) };
                r = store_db_exec(s, STORE_Q_ADD_TASK, a, SV_N(a), NULL);
                i = j;
        }
        free(order);
        return r;
}

static int put_result(Store *s, int64_t id, const char *text)
{
        StoreVal a[] = { SV_INT(id), SV_TEXT(text) };
        return store_db_exec(s, STORE_Q_PUT_RESULT, a, SV_N(a), NULL);
}

/*
 * Move @id to done with @verdict and store @text as its result, inside a
 * transaction: 0, STORE_E_NOT_FOUND, STORE_E_CONFLICT (done already; @owner
 * given and not the lease holder), or a negative errno.
 */
static int finish_row(Store *s, int64_t id, const char *owner, const char *verdict, double speedup, const char *text)
{
        StoreVal a[] = { SV_INT(id), SV_TEXT(verdict), isfinite(speedup) && speedup > 0 ? SV_REAL(speedup) : SV_NULL,
                         SV_REAL(store_now()), SV_TEXT(owner) };
        int64_t n = 0;
        int r = store_db_exec(s, STORE_Q_FINISH, a, SV_N(a), &n);

        if (r == 0 && n == 0)
                r = why_not(s, id, 0);
        return r == 0 ? put_result(s, id, text) : r;
}

/*
 * Finish the rows of @ins that are done at insert: a candidate rejected at
 * acceptance is finished in the insert's transaction by the same update as
 * any finish, so the done-triggers keep every aggregate (queue_counts,
 * task_stats, verdict_counts, the dashboard's) exactly as for a job that ran.
 */
static int finish_at_insert(Store *s, const StoreInsert *ins, const int64_t *ids)
{
        int r = 0;

        for (size_t i = 0; i < ins->n && r == 0; i++) {
                char *text;

                if (!ins->subs[i].verdict)
                        continue;
                text = json_dumps(ins->subs[i].result, JSON_COMPACT);
                if (!text)
                        return -ENOMEM;
                r = finish_row(s, ids[i], NULL, ins->subs[i].verdict, NAN, text);
                free(text);
        }
        return r;
}

/* One submission and its request, a row at a time (a backend without ->insert_rows). */
static int insert_one(Store *s, const StoreNew *sn, double now, int64_t *ret_id)
{
        json_t *tags = json_object_get(sn->request, "tags");
        const char *run_id = json_string_value(json_object_get(tags, "run_id"));
        char *tags_text = NULL, *req_text = NULL;
        const char *req = sn->request_json;
        StoreRow row;
        int64_t id = 0;
        int r = -ENOMEM;

        if (json_is_object(tags) && !(tags_text = json_dumps(tags, JSON_COMPACT)))
                goto out;
        if (!req && !(req = req_text = json_dumps(sn->request, JSON_COMPACT)))
                goto out;
        StoreVal a[] = { SV_TEXT(sn->task), SV_TEXT(sn->mode), SV_INT(sn->priority), SV_INT(sn->token_id),
                         SV_TEXT(run_id), SV_REAL(now), SV_TEXT(tags_text) };
        r = s->ops->query(s->be, STORE_Q_INSERT_SUB, NULL, a, SV_N(a), &row);
        if (r < 0)
                goto out;
        while ((r = s->ops->step(&row)) > 0)
                ;
        if (r == 0)
                id = s->ops->inserted_id(&row);
        s->ops->done(&row);
        if (r < 0)
                goto out;
        StoreVal b[] = { SV_INT(id), SV_TEXT(req) };
        r = store_db_exec(s, STORE_Q_INSERT_REQ, b, SV_N(b), NULL);
        if (r == 0)
                *ret_id = id;
out:
        free(tags_text);
        free(req_text);
        return r;
}

typedef struct Insert {
        Store *s;
        const StoreInsert *ins;
        int64_t *ids;
        bool replayed;
} Insert;

/* The body of an insert, in its transaction or savepoint (insert_tx()). */
static int insert_body(void *arg)
{
        Insert *c = arg;
        Store *s = c->s;
        const StoreInsert *ins = c->ins;
        int64_t token_id = ins->subs[0].token_id, active = 0, queued = store_insert_queued(ins);
        double now = store_now();
        int r;

        c->replayed = false;
        r = idem_replay(s, ins, c->ids, &c->replayed);
        if (r != 0 || c->replayed)
                return r;
        /* -1 first, then the token's row: a shared store locks them, every insert of the fleet in
         * this order, so that quotas hold across hosts. */
        StoreVal all[] = { SV_INT(-1) }, tok[] = { SV_INT(token_id) };
        if (ins->max_queued_total > 0 || s->ops->shared) {
                r = store_db_scalar(s, STORE_Q_COUNT_ACTIVE, all, 1, &active);
                if (r < 0)
                        return r;
                if (ins->max_queued_total > 0 && active + queued > ins->max_queued_total)
                        return STORE_E_FULL;
        }
        if (ins->max_queued_token > 0) {
                r = store_db_scalar(s, STORE_Q_COUNT_ACTIVE, tok, 1, &active);
                if (r < 0)
                        return r;
                if (active + queued > ins->max_queued_token)
                        return STORE_E_QUOTA;
        }
        if (s->ops->insert_rows)
                r = s->ops->insert_rows(s->be, ins->subs, ins->n, c->ids, now);
        for (size_t i = 0; !s->ops->insert_rows && r == 0 && i < ins->n; i++)
                r = insert_one(s, &ins->subs[i], now, &c->ids[i]);
        if (r == 0)
                r = count_inserted(s, ins);
        if (r == 0)
                r = finish_at_insert(s, ins, c->ids);
        if (r != 0 || !ins->idem_key)
                return r;
        char *text = store_ids_encode(c->ids, ins->n);
        if (!text)
                return -ENOMEM;
        StoreVal a[] = { SV_INT(token_id), SV_TEXT(ins->idem_key), SV_BLOB(ins->body_hash, 32), SV_TEXT(text),
                         SV_REAL(now) };
        r = store_db_exec(s, STORE_Q_IDEM_PUT, a, SV_N(a), NULL);
        free(text);
        return r;
}

/*
 * The insert's transaction: outside a group its own, durable at its commit
 * (SQLite: synchronous=FULL; PostgreSQL: synchronous_commit on); inside one
 * a savepoint of the group's, so that its outcome is independent of the
 * group's other requests. On a shared store a unique violation (the same
 * idempotency key accepted at the same moment by another host) is retried
 * once in a savepoint: the lookup then sees the other's committed record.
 * A transaction the backend lost (-EIO, -ENOTCONN) loses the whole group.
 */
static int insert_tx(Insert *c)
{
        Store *s = c->s;
        bool nested = s->in_group, save = nested || s->ops->shared;
        int r = nested ? (s->group_lost ? -EIO : s->ops->tx_lost(s->be)) : store_tx_begin(s, STORE_TX_DURABLE);

        if (r < 0) {
                s->group_lost = nested;
                return r;
        }
        r = -EEXIST;
        for (int attempt = 0; attempt < (save ? 2 : 1) && r == -EEXIST; attempt++) {
                int lost;

                r = save ? s->ops->exec(s->be, "SAVEPOINT store_ins") : 0;
                if (r < 0)
                        break;
                r = insert_body(c);
                lost = s->ops->tx_lost(s->be);
                if (lost) {
                        r = r < 0 ? r : lost;
                        s->group_lost = nested;
                        break;
                }
                if (!save)
                        break;
                if (r != 0)
                        s->ops->exec(s->be, "ROLLBACK TO SAVEPOINT store_ins");
                lost = s->ops->exec(s->be, "RELEASE SAVEPOINT store_ins");
                if (r == 0 && lost < 0)
                        r = lost;
        }
        return nested ? r : s->ops->tx_end(s->be, r);
}

/**
 * store_insert_request() - accept one POST's submissions durably, or refuse them all
 * @store:        open store; borrowed
 * @ins:          the submissions, idempotency key and limits; borrowed
 * @ret_ids:      on success, the @ins->n ids (caller's array of @ins->n)
 * @ret_replayed: on success, true when the idempotency key was seen before with
 *                the same body and @ret_ids are the original ids (nothing
 *                inserted); may be NULL
 *
 * Outside a group this runs in its own transaction and returns after its
 * durable commit (SQLite: synchronous=FULL; PostgreSQL: synchronous_commit
 * on). Inside a group (store_begin_group()) it runs in a savepoint: its
 * outcome is independent of the other requests of the group, but nothing is
 * durable before store_commit_group() succeeds. The idempotency record is
 * written in the same transaction as the rows.
 *
 * Return: 0; STORE_E_CONFLICT when the key was used with another body;
 * STORE_E_FULL when the not-done total would exceed max_queued_total;
 * STORE_E_QUOTA when the token's would exceed max_queued_token; -EINVAL for
 * a bad argument (empty or over LIMIT_BATCH_MAX, bad mode, mixed tokens, key
 * too long or without a hash); -EIO when the group's transaction was lost;
 * -ENOTCONN when PostgreSQL is unreachable (nothing was accepted); another
 * negative errno on a database failure.
 */
int store_insert_request(Store *store, const StoreInsert *ins, int64_t *ret_ids, bool *ret_replayed)
{
        Insert c = { .s = store, .ins = ins };
        int r = store_check_insert(ins);

        if (r < 0)
                return r;
        c.ids = calloc(ins->n, sizeof(*c.ids));
        if (!c.ids)
                return -ENOMEM;
        r = insert_tx(&c);
        if (r == 0) {
                memcpy(ret_ids, c.ids, sizeof(*c.ids) * ins->n);
                if (ret_replayed)
                        *ret_replayed = c.replayed;
        }
        free(c.ids);
        return store_note_write(r, true);
}

/**
 * store_prune_idempotency() - forget idempotency keys older than @older_than_s
 * @store:        open store; borrowed
 * @older_than_s: age in seconds (e.g. 86400)
 * @ret_deleted:  on success, how many keys were dropped (may be NULL)
 * Return: 0 or a negative errno.
 */
int store_prune_idempotency(Store *store, double older_than_s, int64_t *ret_deleted)
{
        StoreVal a[] = { SV_REAL(store_now() - older_than_s) };
        int64_t n = 0;
        int r = write_one(store, false, STORE_Q_PRUNE_IDEM, a, SV_N(a), &n);

        if (r == 0 && ret_deleted)
                *ret_deleted = n;
        return r;
}

/* ---- queue -------------------------------------------------------------- */

/* The JSON of side table @q's row for @id: *@ret NULL when there is none; -EBADMSG when it does not parse. */
static int load_side_json(Store *s, int q, int64_t id, json_t **ret)
{
        StoreVal a[] = { SV_INT(id) };
        StoreRow row;
        int r = store_db_first(s, q, NULL, a, SV_N(a), &row);

        *ret = NULL;
        if (r <= 0)
                return r;
        *ret = store_row_json(&row, 0);
        return store_db_end(&row, *ret ? 0 : -EBADMSG);
}

/* The claimed row (STORE_Q_CLAIM_*'s columns) into @job. */
static int job_from_row(const StoreRow *row, StoreJob *job)
{
        const char *task = row->ops->text(row, 4, NULL), *mode = row->ops->text(row, 5, NULL);

        job->id = row->ops->i64(row, 0);
        job->attempts = (int)row->ops->i64(row, 1);
        job->priority = (int)row->ops->i64(row, 2);
        job->token_id = row->ops->i64(row, 3);
        job->task = task ? strdup(task) : NULL;
        job->mode = mode ? strdup(mode) : NULL;
        return job->mode ? 0 : -ENOMEM;
}

/**
 * store_claim_job() - take the next job for a stage (store_claim_next() without the claim gate)
 *
 * Highest priority first, then round robin between tokens (the token this
 * stage served longest ago), then oldest; one UPDATE over the pick
 * (SQLite: under its write lock; PostgreSQL: FOR UPDATE SKIP LOCKED, with a
 * sort of every waiting row when each best one is locked), the token's
 * service time recorded in the same transaction.
 *
 * Return: as store_claim_next().
 */
int store_claim_job(Store *s, Stage stage, const char *owner, double lease_s, StoreJob **ret_job)
{
        static const int any[2] = { STORE_Q_ANY_QUEUED, STORE_Q_ANY_COMPILED };
        static const int claim[2] = { STORE_Q_CLAIM_COMPILE, STORE_Q_CLAIM_RUN };
        static const int claim_any[2] = { STORE_Q_CLAIM_ANY_COMPILE, STORE_Q_CLAIM_ANY_RUN };
        static const int served[2] = { STORE_Q_SERVED_COMPILE, STORE_Q_SERVED_RUN };
        static const int served_new[2] = { STORE_Q_SERVED_NEW_COMPILE, STORE_Q_SERVED_NEW_RUN };
        double now = store_now();
        StoreVal a[] = { SV_TEXT(owner), SV_REAL(now + lease_s), SV_REAL(now) };
        StoreJob *job = NULL;
        StoreRow row;
        int64_t n = 0;
        int r;

        /* Nothing waiting: one index probe, no transaction (new work comes with its own wake-up). */
        r = store_db_first(s, any[stage], NULL, NULL, 0, &row);
        if (r <= 0)
                return r < 0 ? r : STORE_E_EMPTY;
        r = store_db_end(&row, 0);
        if (r < 0)
                return r;
        r = store_tx_begin(s, STORE_TX_LAZY);
        if (r < 0)
                return r;
        r = store_db_first(s, claim[stage], NULL, a, SV_N(a), &row);
        if (r == 0 && store_db_has(s, claim_any[stage]))
                r = store_db_first(s, claim_any[stage], NULL, a, SV_N(a), &row);
        if (r <= 0) {
                r = r < 0 ? r : STORE_E_EMPTY;
                goto out;
        }
        job = calloc(1, sizeof(*job));
        r = store_db_end(&row, job ? job_from_row(&row, job) : -ENOMEM);
        if (r == 0)
                r = load_side_json(s, STORE_Q_GET_REQ, job->id, &job->request);
        if (r == 0 && !job->request)
                r = -EBADMSG;
        if (r == 0 && stage == STAGE_RUN)
                r = load_side_json(s, STORE_Q_GET_COMPILE, job->id, &job->compile);
        if (r < 0)
                goto out;
        /* Last, just before the commit: the token_service row stays locked for the shortest time. */
        StoreVal b[] = { SV_INT(job->token_id), SV_REAL(now) };
        r = store_db_exec(s, served[stage], b, SV_N(b), &n);
        if (r == 0 && n == 0 && store_db_has(s, served_new[stage]))
                r = store_db_exec(s, served_new[stage], b, SV_N(b), NULL);
out:
        if (r == STORE_E_EMPTY) {
                int r2 = s->ops->tx_end(s->be, 0);
                r = r2 < 0 ? r2 : r;
        } else {
                r = s->ops->tx_end(s->be, r);
        }
        if (r == 0) {
                *ret_job = job;
                job = NULL;
        }
        store_job_free(job);
        return r;
}

/**
 * store_heartbeat_owner() - extend every lease held by @owner
 * @store:        open store; borrowed
 * @owner:        the lease owner
 * @lease_s:      new lease length from now
 * @ret_extended: on success, how many leases were extended (may be NULL)
 * Return: 0 or a negative errno.
 */
int store_heartbeat_owner(Store *store, const char *owner, double lease_s, int *ret_extended)
{
        int64_t n = 0;
        int r;

        if (!owner || !(lease_s > 0))
                return -EINVAL;
        StoreVal a[] = { SV_TEXT(owner), SV_REAL(store_now() + lease_s) };
        r = write_one(store, true, STORE_Q_HEARTBEAT_OWNER, a, SV_N(a), &n);
        if (r == 0 && ret_extended)
                *ret_extended = (int)n;
        return store_note_write(r, false);
}

/**
 * store_host_beat() - record that this host is alive (PostgreSQL: hosts.last_seen)
 * @store: open store; borrowed
 * Return: 0 (always on SQLite, a single host), or a negative errno.
 */
int store_host_beat(Store *store)
{
        StoreVal a[] = { SV_TEXT(store_host_id()), SV_REAL(store_now()) };

        if (!store_db_has(store, STORE_Q_HOST_BEAT))
                return 0;
        return write_one(store, true, STORE_Q_HOST_BEAT, a, SV_N(a), NULL);
}

/**
 * store_set_compiled() - compiling -> compiled: store the compile section, release the lease
 * @store:           open store; borrowed
 * @id:              the job
 * @owner:           the lease owner, or NULL to skip the owner check
 * @compile_section: the result's "compile" object; borrowed; returned by the
 *                   run-stage claim as StoreJob.compile
 *
 * The stage's attempt count starts again from 0 for the run stage.
 *
 * Return: 0, STORE_E_NOT_FOUND, STORE_E_CONFLICT when the job is not
 * compiling under @owner's lease, or a negative errno.
 */
int store_set_compiled(Store *store, int64_t id, const char *owner, json_t *compile_section)
{
        StoreVal a[] = { SV_INT(id), SV_TEXT(owner) };
        int64_t n = 0;
        char *text;
        int r;

        if (!compile_section)
                return -EINVAL;
        text = json_dumps(compile_section, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!text)
                return -ENOMEM;
        StoreVal b[] = { SV_INT(id), SV_TEXT(text) };
        r = store_tx_begin(store, STORE_TX_WRITE);
        if (r == 0) {
                r = store_db_exec(store, STORE_Q_SET_COMPILED, a, SV_N(a), &n);
                if (r == 0 && n == 0)
                        r = why_not(store, id, 0);
                if (r == 0)
                        r = store_db_exec(store, STORE_Q_PUT_COMPILE, b, SV_N(b), NULL);
                r = store->ops->tx_end(store->be, r);
        }
        free(text);
        return store_note_write(r, true);
}

/**
 * store_finish() - end a job with its verdict and result
 * @store:   open store; borrowed
 * @id:      the job
 * @owner:   the lease owner, or NULL to skip the owner check
 * @verdict: non-empty
 * @speedup: recorded when finite and > 0
 * @result:  the result object; borrowed
 * Return: 0, STORE_E_NOT_FOUND, STORE_E_CONFLICT (done already, or the lease
 * is not @owner's), -EINVAL, or a negative errno.
 */
int store_finish(Store *store, int64_t id, const char *owner, const char *verdict, double speedup, json_t *result)
{
        char *text;
        int r = store_check_finish(verdict, result, &text);

        if (r != 0)
                return r;
        r = store_tx_begin(store, STORE_TX_WRITE);
        if (r == 0)
                r = store->ops->tx_end(store->be, finish_row(store, id, owner, verdict, speedup, text));
        free(text);
        return store_note_write(r, true);
}

static int requeue(Store *store, int64_t id, const char *owner, Stage stage, int q)
{
        int64_t n = 0;
        int r;

        if (!owner || (stage != STAGE_COMPILE && stage != STAGE_RUN))
                return -EINVAL;
        StoreVal a[] = { SV_INT(id), SV_TEXT(owner), SV_STR(stage == STAGE_COMPILE ? "queued" : "compiled"),
                         SV_STR(stage == STAGE_COMPILE ? "compiling" : "running") };
        r = write_one(store, false, q, a, SV_N(a), &n);
        return store_note_write(r == 0 && n == 0 ? why_not(store, id, 0) : r, false);
}

/**
 * store_requeue() - give a claimed job back to its stage's queue
 * @store: open store; borrowed
 * @id:    the job
 * @owner: the lease owner
 * @stage: STAGE_COMPILE (compiling -> queued) or STAGE_RUN (running -> compiled)
 * The attempt stays counted.
 * Return: 0, STORE_E_NOT_FOUND, STORE_E_CONFLICT when the job is not in that
 * stage under @owner's lease, or a negative errno.
 */
int store_requeue(Store *store, int64_t id, const char *owner, Stage stage)
{
        return requeue(store, id, owner, stage, STORE_Q_REQUEUE);
}

/**
 * store_requeue_uncharged() - store_requeue() for a claim that ran nothing (a
 *   job queued behind a worker that went away, which no other worker took):
 *   the claim is taken back from attempts and stage_attempts, so that its
 *   stage's faults still get max_attempts tries and its attempts count runs.
 */
int store_requeue_uncharged(Store *store, int64_t id, const char *owner, Stage stage)
{
        return requeue(store, id, owner, stage, STORE_Q_REQUEUE_UNCHARGED);
}

/**
 * store_cancel() - cancel a submission that has not started running: queued, or
 *   compiled and waiting for a GPU (DELETE /v1/submissions/{id})
 * @store:    open store; borrowed
 * @id:       the submission
 * @token_id: the caller's token; 0 skips the ownership check (auth off, admin)
 * Ends the job with verdict cancelled and a result {"verdict": "cancelled"}.
 * Return: 0, STORE_E_NOT_FOUND (no such id, or another token's),
 * STORE_E_CONFLICT when it is not queued any more, or a negative errno.
 */
int store_cancel(Store *store, int64_t id, int64_t token_id)
{
        StoreVal a[] = { SV_INT(id), SV_INT(token_id), SV_REAL(store_now()) };
        char *task = NULL, *text = NULL;
        StoreRow row;
        int r = store_tx_begin(store, STORE_TX_WRITE);

        if (r < 0)
                return r;
        r = store_db_first(store, STORE_Q_CANCEL, NULL, a, SV_N(a), &row);
        if (r == 0)
                r = why_not(store, id, token_id);
        else if (r > 0)
                r = 0;
        if (r != 0)
                goto out;
        const char *t = row.ops->text(&row, 0, NULL);
        r = store_db_end(&row, t && !(task = strdup(t)) ? -ENOMEM : 0);
        if (r < 0)
                goto out;
        json_t *res = json_pack("{s:s, s:s?, s:s}", "verdict", "cancelled", "task", task, "feedback",
                                "Cancelled before it ran (queued, or compiled and waiting for a GPU).");
        text = res ? json_dumps(res, JSON_COMPACT) : NULL;
        json_decref(res);
        r = text ? put_result(store, id, text) : -ENOMEM;
out:
        free(task);
        free(text);
        return store->ops->tx_end(store->be, r);
}

/* ---- the reaper --------------------------------------------------------- */

/* A leased row as the reaper reads it. */
typedef struct Lease {
        int64_t id;
        int attempts;           /* claims of its stage, this one included */
        char state[16];         /* "compiling" or "running" */
        char *task;             /* NULL: none */
} Lease;

static void leases_free(Lease *l, size_t n)
{
        for (size_t i = 0; l && i < n; i++)
                free(l[i].task);
        free(l);
}

/*
 * The leases expired before @before, or (@before NaN) every lease this host
 * holds (at start-up: its dead predecessor's, owners "<host id>/..."; SQLite:
 * all of them), locked until the end of the transaction: a new array.
 */
static int leases(Store *s, double before, Lease **ret, size_t *ret_n)
{
        char prefix[LIMIT_HOST_ID_BYTES + 2];
        Lease *l = NULL;
        size_t n = 0, cap = 0;
        StoreRow row;
        int r;

        snprintf(prefix, sizeof(prefix), "%s/", store_host_id());
        StoreVal a[] = { isnan(before) ? SV_STR(prefix) : SV_REAL(before) };
        r = s->ops->query(s->be, isnan(before) ? STORE_Q_LEASES_HOST : STORE_Q_LEASES_EXPIRED, NULL, a, 1, &row);
        if (r < 0)
                return r;
        while ((r = s->ops->step(&row)) > 0) {
                if (n == cap) {
                        size_t ncap = cap ? cap * 2 : 16;
                        Lease *nl = realloc(l, ncap * sizeof(*l));
                        if (!nl) {
                                r = -ENOMEM;
                                break;
                        }
                        l = nl;
                        cap = ncap;
                }
                const char *state = row.ops->text(&row, 1, NULL), *task = row.ops->text(&row, 3, NULL);
                l[n].id = row.ops->i64(&row, 0);
                snprintf(l[n].state, sizeof(l[n].state), "%s", state ? state : "");
                l[n].attempts = (int)row.ops->i64(&row, 2);
                l[n].task = task ? strdup(task) : NULL;
                n++;
        }
        s->ops->done(&row);
        if (r < 0) {
                leases_free(l, n);
                return r;
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

/*
 * The reaper's policy for one expired lease, in its transaction: a lease
 * whose stage was claimed @max_attempts times (0: never) ends the job as
 * internal_error (store_internal_error_result()), logged, its id added to
 * @failed; any other goes back one stage (compiling -> queued, running ->
 * compiled), counted in @requeued.
 */
static int reap_one(Store *s, const Lease *l, int max_attempts, int *requeued, int64_t *failed, size_t *n_failed)
{
        StoreVal a[] = { SV_INT(l->id) };
        json_t *res;
        char *text;
        int r;

        if (max_attempts <= 0 || l->attempts < max_attempts) {
                r = store_db_exec(s, STORE_Q_BACK_ONE, a, SV_N(a), NULL);
                if (r == 0)
                        (*requeued)++;
                return r;
        }
        res = store_internal_error_result(l->task, l->state, l->attempts);
        text = res ? json_dumps(res, JSON_COMPACT) : NULL;
        json_decref(res);
        if (!text)
                return -ENOMEM;
        r = finish_row(s, l->id, NULL, "internal_error", NAN, text);
        free(text);
        if (r != 0)
                return r;
        failed[(*n_failed)++] = l->id;
        log_warn("store: job %" PRId64 " failed after %d expired leases", l->id, l->attempts);
        return 0;
}

/* The leases expired before @before (NaN: every lease of this host), in one transaction. */
static int reap_leases(Store *s, double before, int max_attempts, int *ret_requeued, int64_t **ret_failed,
                       size_t *ret_n_failed)
{
        Lease *l = NULL;
        int64_t *failed = NULL;
        size_t n = 0, n_failed = 0;
        int requeued = 0;
        int r = store_tx_begin(s, STORE_TX_WRITE);

        if (r < 0)
                return r;
        r = leases(s, before, &l, &n);
        if (r < 0)
                goto out;
        failed = calloc(n ? n : 1, sizeof(*failed));
        if (!failed) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < n && r == 0; i++)
                r = reap_one(s, &l[i], max_attempts, &requeued, failed, &n_failed);
out:
        r = s->ops->tx_end(s->be, r);
        leases_free(l, n);
        if (r == 0) {
                if (ret_requeued)
                        *ret_requeued = requeued;
                if (ret_failed) {
                        *ret_failed = failed;
                        failed = NULL;
                }
                if (ret_n_failed)
                        *ret_n_failed = n_failed;
        }
        free(failed);
        return r;
}

/**
 * store_reap_collect() - deal with expired leases, reporting which jobs ended
 * @store:          open store; borrowed
 * @max_attempts:   a job whose stage was claimed this many times ends as
 *                  internal_error instead of going back (0: never)
 * @ret_requeued:   on success, jobs put back one stage (may be NULL)
 * @ret_failed_ids: on success, a new array (free()) of the jobs ended as
 *                  internal_error, for waking their waiters (may be NULL)
 * @ret_n_failed:   on success, its length (may be NULL)
 * Return: 0 or a negative errno. On PostgreSQL, the leases of every host.
 */
int store_reap_collect(Store *store, int max_attempts, int *ret_requeued, int64_t **ret_failed_ids,
                       size_t *ret_n_failed)
{
        return reap_leases(store, store_now(), max_attempts, ret_requeued, ret_failed_ids, ret_n_failed);
}

/**
 * store_requeue_all_leases() - at start-up, put this host's claimed jobs back one stage
 * @store: open store; borrowed
 *
 * The previous supervisor is gone, so its leases are stale whatever their
 * expiry; attempts stay counted. SQLite: every lease (one host). PostgreSQL:
 * only the leases whose owner starts with "<store_host_id()>/"; the other
 * hosts of the fleet are alive and hold theirs (a dead host's leases expire
 * and any host's reaper returns them).
 *
 * Return: the number of jobs put back (≥ 0), or a negative errno.
 */
int store_requeue_all_leases(Store *store)
{
        int requeued = 0;
        int r = reap_leases(store, NAN, 0, &requeued, NULL, NULL);

        return r < 0 ? r : requeued;
}

/* ---- compile cache ------------------------------------------------------ */

static int counter_add(Store *s, const char *name)
{
        StoreVal a[] = { SV_STR(name), SV_INT(1) };
        return store_db_exec(s, STORE_Q_COUNTER_ADD, a, SV_N(a), NULL);
}

/* The entry of @key, counting the hit or (STORE_E_NOT_FOUND) the miss, in a transaction. */
static int cache_lookup(Store *s, const uint8_t key[32], json_t **ret_compile, uint8_t **ret_cubin, size_t *ret_len)
{
        StoreVal a[] = { SV_BLOB(key, 32) }, b[] = { SV_BLOB(key, 32), SV_REAL(store_now()) };
        StoreRow row;
        int r = store_db_first(s, STORE_Q_CACHE_GET, NULL, a, SV_N(a), &row);

        if (r == 0) {
                r = counter_add(s, "cache_misses");
                return r < 0 ? r : STORE_E_NOT_FOUND;
        }
        if (r < 0)
                return r;
        *ret_compile = store_row_json(&row, 0);
        r = store_db_end(&row, *ret_compile ? row.ops->blob(&row, 1, ret_cubin, ret_len) : -EBADMSG);
        if (r == 0)
                r = store_db_exec(s, STORE_Q_CACHE_HIT, b, SV_N(b), NULL);
        if (r == 0)
                r = counter_add(s, "cache_hits");
        return r;
}

/**
 * store_cache_get() - look up a compile, counting the hit or the miss
 * @store:         open store; borrowed
 * @key:           32-byte cache key
 * @ret_compile:   on success, a new reference to the stored compile RESULT JSON
 * @ret_cubin:     on success, a new buffer (free()) with the CUBIN, or NULL
 *                 when the entry has none (a cached compile failure); may be NULL
 * @ret_cubin_len: on success, its length (may be NULL)
 * Return: 0, STORE_E_NOT_FOUND on a miss, or a negative errno.
 */
int store_cache_get(Store *store, const uint8_t key[32], json_t **ret_compile, uint8_t **ret_cubin,
                    size_t *ret_cubin_len)
{
        json_t *compile = NULL;
        uint8_t *cubin = NULL;
        size_t len = 0;
        int r;

        if (!key)
                return -EINVAL;
        r = store_tx_begin(store, STORE_TX_LAZY);
        if (r < 0)
                return r;
        r = cache_lookup(store, key, &compile, &cubin, &len);
        /* A miss is committed too: it carries the miss count. */
        if (r == STORE_E_NOT_FOUND) {
                r = store->ops->tx_end(store->be, 0);
                r = r < 0 ? r : STORE_E_NOT_FOUND;
        } else {
                r = store->ops->tx_end(store->be, r);
        }
        if (r == 0) {
                *ret_compile = compile;
                compile = NULL;
                if (ret_cubin) {
                        *ret_cubin = cubin;
                        cubin = NULL;
                }
                if (ret_cubin_len)
                        *ret_cubin_len = len;
        }
        json_decref(compile);
        free(cubin);
        return r;
}

/**
 * store_cache_put() - store (or replace) a compile under its key
 * @store:     open store; borrowed
 * @key:       32-byte cache key
 * @compile:   the compile RESULT JSON; borrowed
 * @cubin:     the CUBIN, or NULL for a compile failure; borrowed
 * @cubin_len: its length (≤ LIMIT_CUBIN_BYTES)
 * The hit count of an existing entry is kept.
 * Return: 0, -EINVAL (-E2BIG for an oversized CUBIN), or a negative errno.
 */
int store_cache_put(Store *store, const uint8_t key[32], json_t *compile, const uint8_t *cubin, size_t cubin_len)
{
        char *text;
        int r;

        if (!key || !compile)
                return -EINVAL;
        if (cubin_len > LIMIT_CUBIN_BYTES)
                return -E2BIG;
        text = json_dumps(compile, JSON_COMPACT);
        if (!text)
                return -ENOMEM;
        StoreVal a[] = { SV_BLOB(key, 32), SV_TEXT(text), cubin ? SV_BLOB(cubin, cubin_len) : SV_NULL,
                         SV_REAL(store_now()) };
        r = write_one(store, true, STORE_Q_CACHE_PUT, a, SV_N(a), NULL);
        free(text);
        return store_note_write(r, true);
}

/**
 * store_cache_prune() - bound the compile cache, least recently used first
 * @store:       open store; borrowed
 * @max_bytes:   what the cache may hold (compile JSON + CUBINs), ≥ 0
 * @ret_deleted: on success, entries dropped (may be NULL)
 * Deletes in rounds of at most 64 entries, each its own short transaction,
 * so that claims are not held up behind a large prune.
 * Return: 0, -EINVAL, or a negative errno.
 */
int store_cache_prune(Store *store, int64_t max_bytes, int64_t *ret_deleted)
{
        StoreVal name[] = { SV_STR("cache_bytes") };
        int64_t deleted = 0, bytes = 0, n;
        int r;

        if (max_bytes < 0)
                return -EINVAL;
        for (;;) {
                r = store_db_scalar(store, STORE_Q_COUNTER, name, SV_N(name), &bytes);
                if (r < 0 || bytes <= max_bytes)
                        break;
                StoreVal a[] = { SV_INT(bytes - max_bytes) };
                n = 0;
                r = write_one(store, true, STORE_Q_CACHE_PRUNE, a, SV_N(a), &n);
                if (r < 0)
                        break;
                deleted += n;
                if (n == 0)
                        break; /* empty, and the counter disagrees: nothing more to drop */
        }
        if (r == 0 && ret_deleted)
                *ret_deleted = deleted;
        return r;
}
