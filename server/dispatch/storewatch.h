/*
 * storewatch - the fleet's wake-ups into this process: a thread with its own
 * store connection that LISTENs (PostgreSQL) and turns other hosts' commits
 * into local wake-ups: new or re-queued work -> dispatch_notify(), a job
 * done -> waiters_notify() (long-polls answer within milliseconds of the
 * commit on whichever host made it). It also records this host's heartbeat
 * in the hosts table and renews the dispatcher's leases (lease_s = 3 x
 * beat_s), independently of the dispatcher's loop. On SQLite (one host) there is nothing to watch and
 * storewatch_start() returns without a thread. server/dispatch/storewatch.c.
 */
#pragma once

#include "server/dispatch/dispatch.h"
#include "server/http/waiters.h"

typedef struct StoreWatch StoreWatch;

/**
 * storewatch_start() - start watching the database at @db_path
 * @db_path:     the --db value; borrowed for the call
 * @dispatcher:  woken on STORE_EVENT_WORK; borrowed, must outlive the watch
 * @waiters:     notified on STORE_EVENT_DONE; borrowed, must outlive the watch
 * @beat_s:      seconds between host heartbeats (> 0)
 * @ret_watch:   on success, a new StoreWatch (storewatch_stop()), or NULL on SQLite
 * Return: 0, or a negative errno (-ENOTCONN: the database is unreachable).
 */
int storewatch_start(const char *db_path, Dispatcher *dispatcher, Waiters *waiters, double beat_s,
                     StoreWatch **ret_watch);
/* Stop the thread (within ~0.25 s), close its connection, free; NULL is a no-op. */
void storewatch_stop(StoreWatch *watch);
