/*
 * waiters - the registry behind long-polls (see waiters.h for the contract).
 *
 * Pending waiters sit in two structures under one mutex: a hash table of
 * chains keyed by submission id (for waiters_notify()) and a binary min-heap
 * by deadline (for the timer thread). Firing a waiter removes it from both,
 * marks it fired and calls its callback, still under the mutex; that is what
 * makes waiters_cancel() race-free for the caller. The timer thread sleeps on
 * a CLOCK_MONOTONIC condition variable until the earliest deadline, and is
 * woken when a new earliest deadline arrives or at shutdown.
 */
#include "server/http/waiters.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "common/log.h"

#define HASH_BUCKETS 4096

enum { W_IDLE = 0, W_PENDING = 1, W_FIRED = 2 };

struct Waiters {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        pthread_t timer;
        bool timer_started;
        bool closed;
        bool stop;
        Waiter *buckets[HASH_BUCKETS];
        Waiter **heap;
        size_t heap_len, heap_cap;
};

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t bucket_of(int64_t id)
{
        uint64_t x = (uint64_t)id * 0x9e3779b97f4a7c15ull;

        return (size_t)(x >> 52) % HASH_BUCKETS;
}

static void heap_swap(Waiters *w, size_t a, size_t b)
{
        Waiter *t = w->heap[a];

        w->heap[a] = w->heap[b];
        w->heap[b] = t;
        w->heap[a]->heap_index = a;
        w->heap[b]->heap_index = b;
}

static void heap_up(Waiters *w, size_t i)
{
        while (i > 0) {
                size_t p = (i - 1) / 2;

                if (w->heap[p]->deadline <= w->heap[i]->deadline)
                        break;
                heap_swap(w, i, p);
                i = p;
        }
}

static void heap_down(Waiters *w, size_t i)
{
        for (;;) {
                size_t l = 2 * i + 1, r = l + 1, m = i;

                if (l < w->heap_len && w->heap[l]->deadline < w->heap[m]->deadline)
                        m = l;
                if (r < w->heap_len && w->heap[r]->deadline < w->heap[m]->deadline)
                        m = r;
                if (m == i)
                        break;
                heap_swap(w, i, m);
                i = m;
        }
}

static void heap_remove(Waiters *w, size_t i)
{
        w->heap_len--;
        if (i != w->heap_len) {
                w->heap[i] = w->heap[w->heap_len];
                w->heap[i]->heap_index = i;
                heap_down(w, i);
                heap_up(w, i);
        }
}

/* Unlink @x from both structures and run its callback; lock held. */
static void fire(Waiters *w, Waiter *x, WaiterReason reason)
{
        size_t b = bucket_of(x->id);

        if (x->prev)
                x->prev->next = x->next;
        else
                w->buckets[b] = x->next;
        if (x->next)
                x->next->prev = x->prev;
        x->prev = x->next = NULL;
        heap_remove(w, x->heap_index);
        x->state = W_FIRED;
        x->fn(x->ctx, reason);
}

static void *timer_main(void *arg)
{
        Waiters *w = arg;

        pthread_mutex_lock(&w->lock);
        while (!w->stop) {
                double now = now_s();

                while (w->heap_len > 0 && w->heap[0]->deadline <= now)
                        fire(w, w->heap[0], WAITER_TIMEOUT);
                if (w->heap_len == 0) {
                        pthread_cond_wait(&w->cond, &w->lock);
                } else {
                        double d = w->heap[0]->deadline;
                        struct timespec ts;

                        ts.tv_sec = (time_t)d;
                        ts.tv_nsec = (long)((d - (double)ts.tv_sec) * 1e9);
                        if (ts.tv_nsec >= 1000000000L) {
                                ts.tv_sec++;
                                ts.tv_nsec -= 1000000000L;
                        }
                        pthread_cond_timedwait(&w->cond, &w->lock, &ts);
                }
        }
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

/**
 * waiters_new() - make a registry and start its timer thread
 * @ret_w: on success, a new registry (waiters_free())
 * Return: 0, -ENOMEM, or the negative errno of pthread_create().
 */
int waiters_new(Waiters **ret_w)
{
        pthread_condattr_t ca;
        Waiters *w;
        int r;

        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        pthread_mutex_init(&w->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&w->cond, &ca);
        pthread_condattr_destroy(&ca);
        r = pthread_create(&w->timer, NULL, timer_main, w);
        if (r != 0) {
                waiters_free(w);
                return -r;
        }
        w->timer_started = true;
        *ret_w = w;
        return 0;
}

/**
 * waiters_free() - fire what is pending with WAITER_SHUTDOWN, stop the
 * timer thread and free the registry. NULL is allowed.
 */
void waiters_free(Waiters *w)
{
        if (!w)
                return;
        waiters_shutdown(w);
        pthread_mutex_lock(&w->lock);
        w->stop = true;
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
        if (w->timer_started)
                pthread_join(w->timer, NULL);
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w->heap);
        free(w);
}

/**
 * waiters_add() - see waiters.h.
 */
int waiters_add(Waiters *w, Waiter *x, int64_t id, double timeout_s, WaiterFn fn, void *ctx)
{
        size_t b = bucket_of(id);
        int r = 0;

        pthread_mutex_lock(&w->lock);
        if (w->closed) {
                r = WAITERS_E_CLOSED;
                goto out;
        }
        if (x->state == W_PENDING) {
                r = -EINVAL;
                goto out;
        }
        if (w->heap_len == w->heap_cap) {
                size_t cap = w->heap_cap ? 2 * w->heap_cap : 256;
                Waiter **h = realloc(w->heap, cap * sizeof(*h));

                if (!h) {
                        r = -ENOMEM;
                        goto out;
                }
                w->heap = h;
                w->heap_cap = cap;
        }
        x->id = id;
        x->deadline = now_s() + (timeout_s > 0 ? timeout_s : 0);
        x->fn = fn;
        x->ctx = ctx;
        x->state = W_PENDING;
        x->prev = NULL;
        x->next = w->buckets[b];
        if (x->next)
                x->next->prev = x;
        w->buckets[b] = x;
        x->heap_index = w->heap_len;
        w->heap[w->heap_len++] = x;
        heap_up(w, x->heap_index);
        if (x->heap_index == 0)
                pthread_cond_signal(&w->cond);
out:
        pthread_mutex_unlock(&w->lock);
        return r;
}

/**
 * waiters_cancel() - see waiters.h.
 */
int waiters_cancel(Waiters *w, Waiter *x)
{
        int r = WAITERS_E_FIRED;

        pthread_mutex_lock(&w->lock);
        if (x->state == W_PENDING) {
                size_t b = bucket_of(x->id);

                if (x->prev)
                        x->prev->next = x->next;
                else
                        w->buckets[b] = x->next;
                if (x->next)
                        x->next->prev = x->prev;
                x->prev = x->next = NULL;
                heap_remove(w, x->heap_index);
                x->state = W_IDLE;
                r = 0;
        }
        pthread_mutex_unlock(&w->lock);
        return r;
}

/**
 * waiters_notify() - wake every waiter for submission @id (WAITER_DONE).
 * Thread-safe; cheap when nobody waits. NULL @w is allowed.
 */
void waiters_notify(Waiters *w, int64_t id)
{
        size_t b = bucket_of(id);
        Waiter *x, *next;

        if (!w)
                return;
        pthread_mutex_lock(&w->lock);
        for (x = w->buckets[b]; x; x = next) {
                next = x->next;
                if (x->id == id)
                        fire(w, x, WAITER_DONE);
        }
        pthread_mutex_unlock(&w->lock);
}

/**
 * waiters_shutdown() - fire every pending waiter with WAITER_SHUTDOWN;
 * later waiters_add() calls answer WAITERS_E_CLOSED.
 */
void waiters_shutdown(Waiters *w)
{
        pthread_mutex_lock(&w->lock);
        w->closed = true;
        while (w->heap_len > 0)
                fire(w, w->heap[0], WAITER_SHUTDOWN);
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
}

/**
 * waiters_count() - how many waiters are pending (for tests and stats).
 */
size_t waiters_count(Waiters *w)
{
        size_t n;

        pthread_mutex_lock(&w->lock);
        n = w->heap_len;
        pthread_mutex_unlock(&w->lock);
        return n;
}
