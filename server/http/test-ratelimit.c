/*
 * test-ratelimit - token buckets under an injected clock: a new key starts
 * with a full burst, refills at the rate, never beyond the burst, keys are
 * independent, rate 0 is unlimited, and Retry-After is the whole seconds
 * until the next token (at least 1).
 */
#include <stdio.h>

#include "server/http/ratelimit.h"
#include "common/testcheck.h"

static double fake_now = 1000.0;

static double fake_clock(void *ctx)
{
        (void)ctx;
        return fake_now;
}

int main(void)
{
        RateLimiter *rl;
        int retry = -1, ok = 0;

        CHECK(ratelimit_new(fake_clock, NULL, &rl) == 0);

        /* rate 2/s, burst 3: three at once, the fourth waits. */
        for (int i = 0; i < 3; i++)
                CHECK(ratelimit_take(rl, 7, 2, 3, &retry) == 0);
        CHECK(ratelimit_take(rl, 7, 2, 3, &retry) == RATELIMIT_E_LIMITED);
        CHECK(retry == 1);
        /* Another key is untouched. */
        CHECK(ratelimit_take(rl, 8, 2, 3, &retry) == 0);
        /* Half a second gives one token back (2/s). */
        fake_now += 0.5;
        CHECK(ratelimit_take(rl, 7, 2, 3, &retry) == 0);
        CHECK(ratelimit_take(rl, 7, 2, 3, &retry) == RATELIMIT_E_LIMITED);
        /* A long pause refills to the burst, not beyond. */
        fake_now += 100;
        ok = 0;
        for (int i = 0; i < 10; i++)
                ok += ratelimit_take(rl, 7, 2, 3, &retry) == 0;
        CHECK(ok == 3);

        /* Slow rate: Retry-After counts whole seconds to the next token. */
        CHECK(ratelimit_take(rl, 9, 0.1, 1, &retry) == 0);
        CHECK(ratelimit_take(rl, 9, 0.1, 1, &retry) == RATELIMIT_E_LIMITED);
        CHECK(retry == 10);
        fake_now += 4;
        CHECK(ratelimit_take(rl, 9, 0.1, 1, &retry) == RATELIMIT_E_LIMITED);
        CHECK(retry == 6);

        /* Over a simulated 10 s at 4/s with burst 1, polled every 1/64 s (exact in
         * binary): the first token plus exactly 4 per second pass. */
        ok = 0;
        CHECK(ratelimit_take(rl, 10, 4, 1, &retry) == 0);
        for (int step = 0; step < 640; step++) {
                fake_now += 1.0 / 64;
                ok += ratelimit_take(rl, 10, 4, 1, &retry) == 0;
        }
        CHECK(ok == 40);

        /* Rate 0: unlimited. Burst 0: twice the rate. */
        for (int i = 0; i < 10000; i++)
                CHECK(ratelimit_take(rl, 11, 0, 0, &retry) == 0);
        ok = 0;
        for (int i = 0; i < 100; i++)
                ok += ratelimit_take(rl, 12, 4, 0, &retry) == 0;
        CHECK(ok == 8);

        /* Many keys (chains in the table). */
        for (int64_t k = 1000; k < 3000; k++)
                CHECK(ratelimit_take(rl, k, 1, 1, &retry) == 0);
        for (int64_t k = 1000; k < 3000; k++)
                CHECK(ratelimit_take(rl, k, 1, 1, &retry) == RATELIMIT_E_LIMITED);

        ratelimit_free(rl);
        if (failures)
                fprintf(stderr, "%d check(s) failed\n", failures);
        else
                printf("ratelimit: all checks passed\n");
        return failures ? 1 : 0;
}
