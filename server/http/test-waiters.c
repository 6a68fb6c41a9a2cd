/*
 * test-waiters - the long-poll registry without HTTP: notify wakes exactly
 * the waiters of that id, once; deadlines fire in order on the timer thread;
 * cancel before firing means never, after firing reports it; shutdown fires
 * everything and refuses new waiters; many concurrent notifies and adds do
 * not lose or double-fire anything.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "server/http/waiters.h"
#include "common/testcheck.h"

typedef struct Rec {
        atomic_int calls;
        atomic_int reason;
        atomic_int order;
} Rec;

static atomic_int seq;

static void on_fire(void *ctx, WaiterReason reason)
{
        Rec *r = ctx;

        atomic_fetch_add(&r->calls, 1);
        atomic_store(&r->reason, (int)reason);
        atomic_store(&r->order, atomic_fetch_add(&seq, 1));
}

static void sleep_ms(int ms)
{
        struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

        nanosleep(&ts, NULL);
}

static void test_notify(Waiters *w)
{
        Waiter a = { 0 }, b = { 0 }, c = { 0 };
        Rec ra = { 0 }, rb = { 0 }, rc = { 0 };

        CHECK(waiters_add(w, &a, 5, 10, on_fire, &ra) == 0);
        CHECK(waiters_add(w, &b, 5, 10, on_fire, &rb) == 0);
        CHECK(waiters_add(w, &c, 6, 10, on_fire, &rc) == 0);
        CHECK(waiters_add(w, &c, 6, 10, on_fire, &rc) == -EINVAL);   /* already pending */
        CHECK(waiters_count(w) == 3);
        waiters_notify(w, 5);
        CHECK(ra.calls == 1 && ra.reason == WAITER_DONE);
        CHECK(rb.calls == 1 && rb.reason == WAITER_DONE);
        CHECK(rc.calls == 0);
        CHECK(waiters_count(w) == 1);
        waiters_notify(w, 5);              /* nobody left for 5 */
        CHECK(ra.calls == 1 && rb.calls == 1);
        waiters_notify(w, 4096 + 6);       /* same hash bucket size apart: must not wake 6 */
        CHECK(rc.calls == 0);
        CHECK(waiters_cancel(w, &c) == 0);
        CHECK(waiters_cancel(w, &c) == WAITERS_E_FIRED);
        CHECK(waiters_cancel(w, &a) == WAITERS_E_FIRED);
        waiters_notify(w, 6);
        CHECK(rc.calls == 0);
        CHECK(waiters_count(w) == 0);
        /* A fired waiter can be reused. */
        CHECK(waiters_add(w, &a, 7, 10, on_fire, &ra) == 0);
        waiters_notify(w, 7);
        CHECK(ra.calls == 2);
}

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Wait up to @max_s for @r to fire; return when it did (monotonic seconds), or 0. */
static double wait_fired(Rec *r, double max_s)
{
        double end = now_s() + max_s;

        while (now_s() < end) {
                if (atomic_load(&r->calls) > 0)
                        return now_s();
                sleep_ms(2);
        }
        return 0;
}

/*
 * Deadlines: never early (checked against the clock, so a loaded machine
 * cannot make this flaky), in deadline order, and not much late.
 */
static void test_timeout(Waiters *w)
{
        Waiter a = { 0 }, b = { 0 }, c = { 0 };
        Rec ra = { 0 }, rb = { 0 }, rc = { 0 };
        double t0 = now_s(), tb, ta;

        atomic_store(&seq, 0);
        CHECK(waiters_add(w, &a, 1, 0.40, on_fire, &ra) == 0);
        CHECK(waiters_add(w, &b, 2, 0.10, on_fire, &rb) == 0);
        CHECK(waiters_add(w, &c, 3, 60.0, on_fire, &rc) == 0);
        tb = wait_fired(&rb, 5);
        if (atomic_load(&ra.calls) != 0)
                CHECK(now_s() - t0 >= 0.40);  /* a fired already: its deadline is indeed past */
        ta = wait_fired(&ra, 5);
        CHECK(tb > 0 && ta > 0);
        CHECK(tb - t0 >= 0.10);
        CHECK(ta - t0 >= 0.40);
        CHECK(ta - t0 < 3.0);
        CHECK(rb.reason == WAITER_TIMEOUT && ra.reason == WAITER_TIMEOUT);
        CHECK(rb.order < ra.order);
        CHECK(rc.calls == 0);
        waiters_notify(w, 1);              /* already timed out: nothing more */
        CHECK(ra.calls == 1);
        CHECK(waiters_cancel(w, &c) == 0);
}

typedef struct Storm {
        Waiters *w;
        Waiter ws[500];
        Rec rs[500];
} Storm;

static void *notifier(void *arg)
{
        Storm *s = arg;

        for (int round = 0; round < 50; round++)
                for (int64_t id = 0; id < 100; id++)
                        waiters_notify(s->w, id);
        return NULL;
}

static void test_concurrent(Waiters *w)
{
        static Storm s;
        pthread_t t;
        int total = 0;

        memset(&s, 0, sizeof(s));
        s.w = w;
        pthread_create(&t, NULL, notifier, &s);
        for (int i = 0; i < 500; i++)
                CHECK(waiters_add(w, &s.ws[i], i % 100, 0.3, on_fire, &s.rs[i]) == 0);
        pthread_join(t, NULL);
        for (int i = 0; i < 5000 && waiters_count(w) > 0; i++)
                sleep_ms(2);
        sleep_ms(20);
        for (int i = 0; i < 500; i++) {
                CHECK(s.rs[i].calls == 1);
                total += s.rs[i].calls;
        }
        CHECK(total == 500);
        CHECK(waiters_count(w) == 0);
}

static void test_shutdown(void)
{
        Waiters *w;
        Waiter a = { 0 }, b = { 0 };
        Rec ra = { 0 }, rb = { 0 };

        CHECK(waiters_new(&w) == 0);
        CHECK(waiters_add(w, &a, 1, 100, on_fire, &ra) == 0);
        waiters_shutdown(w);
        CHECK(ra.calls == 1 && ra.reason == WAITER_SHUTDOWN);
        CHECK(waiters_add(w, &b, 2, 100, on_fire, &rb) == WAITERS_E_CLOSED);
        CHECK(rb.calls == 0);
        waiters_free(w);

        /* Freeing with pending waiters fires them with SHUTDOWN. */
        CHECK(waiters_new(&w) == 0);
        memset(&a, 0, sizeof(a));
        CHECK(waiters_add(w, &a, 1, 100, on_fire, &ra) == 0);
        waiters_free(w);
        CHECK(ra.calls == 2 && ra.reason == WAITER_SHUTDOWN);
        waiters_notify(NULL, 1);   /* allowed */
}

int main(void)
{
        Waiters *w;

        CHECK(waiters_new(&w) == 0);
        test_notify(w);
        test_timeout(w);
        test_concurrent(w);
        waiters_free(w);
        test_shutdown();
        if (failures)
                fprintf(stderr, "%d check(s) failed\n", failures);
        else
                printf("waiters: all checks passed\n");
        return failures ? 1 : 0;
}
