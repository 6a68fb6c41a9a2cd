/*
 * storewatch - LISTEN/NOTIFY into dispatch_notify() and waiters_notify()
 * (see storewatch.h).
 *
 * The thread blocks in store_next_event(), which waits in poll() on the
 * connection's socket: while nothing happens no query is sent. It wakes at
 * least every WAIT_MS to see the stop flag and to beat. When the connection
 * is lost, store_next_event() re-establishes it (with backoff) and reports
 * one WORK event afterwards, because jobs may have become claimable
 * meanwhile. A DONE missed while disconnected is not replayed: such a
 * long-poll answers at its own deadline with the job as stored.
 *
 * As often as the dispatcher (store_lease_plan(): every lease_s / 3) it
 * also renews this process's leases, under the same owner and for the same
 * lease_s, so that a dispatcher loop held up in a slow store call does not
 * lose its leases to another host's reaper: these are one-row UPDATEs at
 * synchronous_commit=off, which do not wait for a disk.
 */
#include "server/dispatch/storewatch.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "server/store/store.h"

#define WAIT_MS 250

struct StoreWatch {
        Store *store;
        Dispatcher *dispatcher;
        Waiters *waiters;
        double lease_s;         /* the dispatcher's lease length */
        double beat_s;          /* seconds between beats: store_lease_plan()'s renewal interval */
        char owner[STORE_LEASE_OWNER_BYTES]; /* the dispatcher's lease owner (store_lease_plan()) */
        atomic_bool stop;
        pthread_t thread;
};

static double mono_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *watch_main(void *arg)
{
        StoreWatch *w = arg;
        double next_beat = 0;
        bool lost = false;

        while (!atomic_load(&w->stop)) {
                StoreEvent ev;
                int r;

                if (mono_s() >= next_beat) {
                        r = store_host_beat(w->store);
                        /* The dispatcher's leases too, from this thread: its loop waits on its
                         * own store calls (a commit stuck behind a slow disk), this one does
                         * not, and these commits do not wait for the disk. */
                        if (r == 0)
                                r = store_heartbeat_owner(w->store, w->owner, w->lease_s, NULL);
                        next_beat = mono_s() + w->beat_s;
                        if (r < 0 && r != -ENOTCONN)
                                log_warn("storewatch: host heartbeat failed: %s", strerror(-r));
                }
                r = store_next_event(w->store, WAIT_MS, &ev);
                if (r == STORE_E_EMPTY)
                        continue;
                if (r < 0) {
                        if (!lost && r != -ENOTCONN)
                                log_warn("storewatch: waiting for notifications failed: %s", strerror(-r));
                        lost = true;
                        continue;
                }
                lost = false;
                if (ev.kind == STORE_EVENT_WORK)
                        dispatch_notify(w->dispatcher);
                else if (ev.kind == STORE_EVENT_DONE && w->waiters)
                        waiters_notify(w->waiters, ev.id);
        }
        return NULL;
}

/**
 * storewatch_start() - see storewatch.h
 */
int storewatch_start(const char *db_path, Dispatcher *dispatcher, Waiters *waiters, double lease_s,
                     StoreWatch **ret_watch)
{
        StoreWatch *w;
        int r;

        if (!store_path_is_pg(db_path)) {
                *ret_watch = NULL;
                return 0;
        }
        if (!dispatcher || !(lease_s > 0))
                return -EINVAL;
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->dispatcher = dispatcher;
        w->waiters = waiters;
        w->lease_s = lease_s;
        store_lease_plan(lease_s, w->owner, &w->beat_s); /* lease_s > 0: cannot fail */
        atomic_init(&w->stop, false);
        r = store_open(db_path, &w->store);
        if (r != 0) {
                free(w);
                return r < 0 ? r : -EIO;
        }
        r = store_listen(w->store);
        if (r == 0)
                r = -pthread_create(&w->thread, NULL, watch_main, w);
        if (r < 0) {
                store_close(w->store);
                free(w);
                return r;
        }
        *ret_watch = w;
        return 0;
}

/**
 * storewatch_stop() - see storewatch.h
 */
void storewatch_stop(StoreWatch *watch)
{
        if (!watch)
                return;
        atomic_store(&watch->stop, true);
        pthread_join(watch->thread, NULL);
        store_close(watch->store);
        free(watch);
}
