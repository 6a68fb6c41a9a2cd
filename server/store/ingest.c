/*
 * ingest - group commit of accepted submissions (see ingest.h).
 *
 * Theory of operation: callers (HTTP threads) serialize their requests'
 * JSON on their own thread, put a Pending on the queue and wait on their
 * own condition variable. The writer thread takes everything queued (up to
 * INGEST_GROUP_SUBS_MAX submissions, at least one request), runs
 * store_begin_group(), one store_insert_request() per request (each in its
 * own savepoint, so a quota refusal or an idempotency conflict touches only
 * its request), store_commit_group(), and only then marks each Pending done
 * and signals it. A caller is never told "accepted" before the commit that
 * made its rows durable has returned; if the commit fails, every request of
 * the group gets the commit's error. While the writer is in fsync, new
 * requests pile up and form the next group, so the group size follows the
 * load without any timer.
 *
 * Invariants: the queue and every Pending's done/rc fields are guarded by
 * Ingest.lock; a Pending lives on its caller's stack and is not touched by
 * the writer after it is marked done.
 */
#include "server/store/ingest.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

#define INGEST_GROUP_SUBS_MAX 65536

typedef struct Pending {
        const IngestRequest *req;
        StoreInsert ins;        /* req with the serialized copies of subs */
        StoreNew *subs;
        char **texts;
        int64_t *ids;
        bool replayed;
        bool done;
        int rc;
        pthread_cond_t cond;
        struct Pending *next;
} Pending;

struct Ingest {
        pthread_mutex_t lock;
        pthread_cond_t work;
        pthread_t thread;
        bool started;
        bool stopping;
        Pending *head, *tail;
        Store *store;           /* the writer's own connection */
        IngestNotify notify;
        void *notify_arg;
        IngestStats stats;
};

static void pending_free_copies(Pending *p)
{
        if (p->texts)
                for (size_t i = 0; i < p->ins.n; i++)
                        free(p->texts[i]);
        free(p->texts);
        free(p->subs);
}

/* Take a group off the queue (caller holds the lock). */
static Pending *take_group(Ingest *ing)
{
        Pending *first = ing->head, *last = first;
        size_t subs = first->ins.n;

        while (last->next && subs + last->next->ins.n <= INGEST_GROUP_SUBS_MAX) {
                last = last->next;
                subs += last->ins.n;
        }
        ing->head = last->next;
        for (Pending *p = first; p != last->next; p = p->next)
                ing->stats.pending--;
        if (!ing->head)
                ing->tail = NULL;
        last->next = NULL;
        return first;
}

static void *writer_main(void *arg)
{
        Ingest *ing = arg;

        pthread_mutex_lock(&ing->lock);
        for (;;) {
                while (!ing->head && !ing->stopping)
                        pthread_cond_wait(&ing->work, &ing->lock);
                if (!ing->head)
                        break; /* stopping, and everything queued has been answered */
                Pending *group = take_group(ing);
                pthread_mutex_unlock(&ing->lock);

                uint64_t n_req = 0, n_inserted = 0;
                int r = store_begin_group(ing->store);
                for (Pending *p = group; p; p = p->next) {
                        n_req++;
                        p->rc = r < 0 ? r : store_insert_request(ing->store, &p->ins, p->ids, &p->replayed);
                }
                if (r == 0) {
                        r = store_commit_group(ing->store);
                        if (r < 0)
                                log_error("ingest: group commit of %llu request(s) failed: %s",
                                          (unsigned long long)n_req, strerror(-r));
                } else {
                        log_error("ingest: cannot begin a group: %s", strerror(-r));
                }
                for (Pending *p = group; p; p = p->next) {
                        if (p->rc == 0 && r < 0)
                                p->rc = r;
                        if (p->rc == 0 && !p->replayed)
                                n_inserted += p->ins.n;
                }

                pthread_mutex_lock(&ing->lock);
                if (r == 0)
                        ing->stats.commits++;
                ing->stats.requests += n_req;
                ing->stats.submissions += n_inserted;
                if (n_req > ing->stats.max_group)
                        ing->stats.max_group = n_req;
                for (Pending *p = group, *next; p; p = next) {
                        next = p->next;
                        p->done = true;
                        pthread_cond_signal(&p->cond);
                }
                if (n_inserted && ing->notify) {
                        pthread_mutex_unlock(&ing->lock);
                        ing->notify(ing->notify_arg);
                        pthread_mutex_lock(&ing->lock);
                }
        }
        pthread_mutex_unlock(&ing->lock);
        return NULL;
}

/**
 * ingest_start() - open the writer's Store and start the writer thread
 * @db_path:    the database (opened here, so schema errors surface now)
 * @notify:     called from the writer thread after each commit that inserted
 *              submissions; may be NULL
 * @notify_arg: passed to @notify
 * @ret_ingest: on success, a new Ingest (ingest_stop(), then ingest_free())
 * Return: 0, STORE_E_NEWER_DB, or a negative errno.
 */
int ingest_start(const char *db_path, IngestNotify notify, void *notify_arg, Ingest **ret_ingest)
{
        Ingest *ing = calloc(1, sizeof(*ing));
        int r;

        if (!ing)
                return -ENOMEM;
        pthread_mutex_init(&ing->lock, NULL);
        pthread_cond_init(&ing->work, NULL);
        ing->notify = notify;
        ing->notify_arg = notify_arg;
        r = store_open(db_path, &ing->store);
        if (r != 0)
                goto out;
        r = -pthread_create(&ing->thread, NULL, writer_main, ing);
        if (r < 0) {
                log_error("ingest: cannot start the writer thread: %s", strerror(-r));
                goto out;
        }
        ing->started = true;
        *ret_ingest = ing;
        ing = NULL;
out:
        ingest_free(ing);
        return r;
}

/**
 * ingest_submit() - accept one request durably; blocks until its group commits
 * @ingest: the ingest; borrowed
 * @req:    the request (its subs, key, hash, limits); borrowed until return
 * @ret:    on success, the ids (a new array) and whether it was a replay
 *
 * Thread-safe. The submissions' JSON is serialized on the calling thread.
 *
 * Return: 0 (the ids are durable); STORE_E_CONFLICT (idempotency key reused
 * with another body); STORE_E_FULL (queue full); STORE_E_QUOTA (token quota);
 * -EINVAL (bad request, see store_insert_request()); -ESHUTDOWN after
 * ingest_stop(); another negative errno when the store failed.
 */
int ingest_submit(Ingest *ingest, const IngestRequest *req, IngestReply *ret)
{
        Pending p = { .req = req };
        int r;

        if (!req || !req->subs || req->n == 0 || !ret)
                return -EINVAL;
        p.ins = *req;
        p.subs = calloc(req->n, sizeof(*p.subs));
        p.texts = calloc(req->n, sizeof(*p.texts));
        p.ids = calloc(req->n, sizeof(*p.ids));
        if (!p.subs || !p.texts || !p.ids) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < req->n; i++) {
                p.subs[i] = req->subs[i];
                if (!p.subs[i].request_json && p.subs[i].request) {
                        p.texts[i] = json_dumps(p.subs[i].request, JSON_COMPACT);
                        if (!p.texts[i]) {
                                r = -ENOMEM;
                                goto out;
                        }
                        p.subs[i].request_json = p.texts[i];
                }
        }
        p.ins.subs = p.subs;
        pthread_cond_init(&p.cond, NULL);

        pthread_mutex_lock(&ingest->lock);
        if (ingest->stopping) {
                pthread_mutex_unlock(&ingest->lock);
                pthread_cond_destroy(&p.cond);
                r = -ESHUTDOWN;
                goto out;
        }
        if (ingest->tail)
                ingest->tail->next = &p;
        else
                ingest->head = &p;
        ingest->tail = &p;
        ingest->stats.pending++;
        pthread_cond_signal(&ingest->work);
        while (!p.done)
                pthread_cond_wait(&p.cond, &ingest->lock);
        pthread_mutex_unlock(&ingest->lock);
        pthread_cond_destroy(&p.cond);

        r = p.rc;
        if (r == 0) {
                ret->ids = p.ids;
                ret->n = req->n;
                ret->replayed = p.replayed;
                p.ids = NULL;
        }
out:
        pending_free_copies(&p);
        free(p.ids);
        return r;
}

/**
 * ingest_reply_clear() - free a reply's ids
 * @reply: the reply, or NULL
 */
void ingest_reply_clear(IngestReply *reply)
{
        if (!reply)
                return;
        free(reply->ids);
        reply->ids = NULL;
        reply->n = 0;
}

/**
 * ingest_get_stats() - counters since start (thread-safe)
 * @ingest:    the ingest; borrowed
 * @ret_stats: receives a snapshot
 */
void ingest_get_stats(Ingest *ingest, IngestStats *ret_stats)
{
        pthread_mutex_lock(&ingest->lock);
        *ret_stats = ingest->stats;
        pthread_mutex_unlock(&ingest->lock);
}

/**
 * ingest_stop() - refuse new requests, answer the queued ones, join the writer
 * @ingest: the ingest, or NULL; safe to call twice
 */
void ingest_stop(Ingest *ingest)
{
        if (!ingest)
                return;
        pthread_mutex_lock(&ingest->lock);
        ingest->stopping = true;
        pthread_cond_signal(&ingest->work);
        pthread_mutex_unlock(&ingest->lock);
        if (ingest->started) {
                pthread_join(ingest->thread, NULL);
                ingest->started = false;
        }
}

/**
 * ingest_free() - stop (if needed) and free, closing the writer's Store
 * @ingest: the ingest, or NULL
 */
void ingest_free(Ingest *ingest)
{
        if (!ingest)
                return;
        ingest_stop(ingest);
        store_close(ingest->store);
        pthread_mutex_destroy(&ingest->lock);
        pthread_cond_destroy(&ingest->work);
        free(ingest);
}
