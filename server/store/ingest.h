/*
 * ingest - group commit for accepting submissions. One writer thread owns a
 * Store; HTTP threads hand it requests with ingest_submit() and block until
 * their request is durable (or refused). The writer drains every pending
 * request into ONE durable transaction (store_begin_group(), one savepoint
 * per request, store_commit_group(): one fsync for the lot) and then wakes
 * each caller with its own outcome. After a commit that inserted anything it
 * calls the notify callback (the dispatcher's dispatch_notify()).
 *
 * No SQLite here: ingest.c talks to the store through server/store/store.h.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/store/store.h"

typedef struct Ingest Ingest;

/* One POST: its submissions, optional idempotency key + body hash, limits. */
typedef StoreInsert IngestRequest;

typedef struct IngestReply {
        int64_t *ids;           /* new array of n ids (free() or ingest_reply_clear()) */
        size_t n;
        bool replayed;          /* idempotent replay: the original ids, nothing inserted */
} IngestReply;

typedef struct IngestStats {
        uint64_t commits;       /* group transactions committed */
        uint64_t requests;      /* requests answered (any outcome) */
        uint64_t submissions;   /* submissions inserted */
        uint64_t max_group;     /* most requests in one commit */
        uint64_t pending;       /* requests waiting for the writer now */
} IngestStats;

/* Called from the writer thread after a commit that inserted submissions. */
typedef void (*IngestNotify)(void *arg);

int ingest_start(const char *db_path, IngestNotify notify, void *notify_arg, Ingest **ret_ingest);
int ingest_submit(Ingest *ingest, const IngestRequest *req, IngestReply *ret);
void ingest_reply_clear(IngestReply *reply);
void ingest_get_stats(Ingest *ingest, IngestStats *ret_stats);
void ingest_stop(Ingest *ingest);
void ingest_free(Ingest *ingest);
