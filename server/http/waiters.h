/*
 * waiters - long-poll waiters: HTTP connections suspended until a
 * submission is done or their deadline passes. The dispatcher calls
 * waiters_notify() when a job reaches done; the HTTP layer registers and
 * resumes connections (libmicrohttpd suspend/resume). Owned by the HTTP work.
 *
 * The core knows nothing of HTTP: a Waiter is a caller-owned record with a
 * callback that is called exactly once - when its submission is notified,
 * when its deadline passes (a timer thread), or at shutdown - unless the
 * caller cancels it first. Callbacks run with the Waiters lock held, so a
 * successful waiters_cancel() means the callback has not run and never will,
 * and a failed one means it has already returned: either way the caller may
 * free the record afterwards. A callback must be short and must not call
 * back into Waiters.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef struct Waiters Waiters;

enum {
        WAITERS_E_FIRED = 1,     /* waiters_cancel(): the callback already ran */
        WAITERS_E_CLOSED = 2,    /* waiters_add(): shutting down, nothing registered */
};

typedef enum {
        WAITER_DONE = 0,         /* waiters_notify() for its id */
        WAITER_TIMEOUT = 1,      /* its deadline passed */
        WAITER_SHUTDOWN = 2,     /* waiters_shutdown() */
} WaiterReason;

typedef void (*WaiterFn)(void *ctx, WaiterReason reason);

/* Caller-owned; treat the members as private. Zero it before first use. */
typedef struct Waiter {
        int64_t id;
        double deadline;
        WaiterFn fn;
        void *ctx;
        struct Waiter *prev, *next;   /* chain of one hash bucket */
        size_t heap_index;
        int state;                    /* 0 idle, 1 pending, 2 fired */
} Waiter;

/**
 * waiters_new() - make a registry and start its timer thread
 * Return: 0 or a negative errno.
 */
int waiters_new(Waiters **ret_w);
/* Shut down (firing what is pending with WAITER_SHUTDOWN), join the timer, free. NULL ok. */
void waiters_free(Waiters *w);

/**
 * waiters_add() - register @waiter for submission @id
 * @waiter:    caller-owned, idle (zeroed or fired/cancelled before)
 * @timeout_s: seconds from now until WAITER_TIMEOUT
 * @fn, @ctx:  callback and its argument
 * Return: 0, WAITERS_E_CLOSED after waiters_shutdown(), -EINVAL if
 * @waiter is already pending, or -ENOMEM.
 */
int waiters_add(Waiters *w, Waiter *waiter, int64_t id, double timeout_s, WaiterFn fn, void *ctx);

/**
 * waiters_cancel() - unregister @waiter if its callback has not run
 * Return: 0 (will never run), or WAITERS_E_FIRED (already ran; also for a
 * waiter that was never added).
 */
int waiters_cancel(Waiters *w, Waiter *waiter);

/* Thread-safe: wake every waiter for submission @id. */
void waiters_notify(Waiters *w, int64_t id);

/* Fire every pending waiter with WAITER_SHUTDOWN and refuse new ones. */
void waiters_shutdown(Waiters *w);

/* How many waiters are pending. */
size_t waiters_count(Waiters *w);
