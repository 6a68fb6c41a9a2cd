/*
 * storewatch - the fleet's wake-ups into this process: a thread with its own
 * store connection that LISTENs (PostgreSQL) and turns other hosts' commits
 * into local wake-ups: new or re-queued work -> dispatch_notify(), a job
 * done -> waiters_notify() (long-polls answer within milliseconds of the
 * commit on whichever host made it). It also records this host's heartbeat
 * in the hosts table and renews the dispatcher's leases, independently of
 * the dispatcher's loop, with the owner and at the interval the dispatcher
 * uses (store_lease_plan()). On SQLite (one host) there is nothing to watch
 * and storewatch_start() returns without a thread. server/dispatch/storewatch.c.
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
 * @lease_s:     the dispatcher's lease length (> 0, DispatchConfig.lease_s): the leases
 *               and the host heartbeat are renewed at store_lease_plan()'s interval
 * @ret_watch:   on success, a new StoreWatch (storewatch_stop()), or NULL on SQLite
 * Return: 0, or a negative errno (-ENOTCONN: the database is unreachable).
 */
int storewatch_start(const char *db_path, Dispatcher *dispatcher, Waiters *waiters, double lease_s,
                     StoreWatch **ret_watch);
/* Stop the thread (within ~0.25 s), close its connection, free; NULL is a no-op. */
void storewatch_stop(StoreWatch *watch);
