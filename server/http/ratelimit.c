/*
 * ratelimit - token buckets keyed by token id, in a striped hash table: a
 * key's stripe is chosen by its hash, and each stripe has its own mutex, so
 * HTTP threads serving different tokens rarely contend. Buckets are never
 * removed; there is one per token that has made a request, and tokens are
 * created only by an operator.
 */
#include "server/http/ratelimit.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define STRIPES 16
#define BUCKETS_PER_STRIPE 64

typedef struct Bucket {
        int64_t key;
        double tokens;
        double last;
        struct Bucket *next;
} Bucket;

typedef struct Stripe {
        pthread_mutex_t lock;
        Bucket *heads[BUCKETS_PER_STRIPE];
} Stripe;

struct RateLimiter {
        RateClock clock;
        void *clock_ctx;
        Stripe stripes[STRIPES];
};

static double clock_monotonic(void *ctx)
{
        struct timespec ts;

        (void)ctx;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/**
 * ratelimit_new() - see ratelimit.h.
 */
int ratelimit_new(RateClock clock, void *clock_ctx, RateLimiter **ret_rl)
{
        RateLimiter *rl = calloc(1, sizeof(*rl));

        if (!rl)
                return -ENOMEM;
        rl->clock = clock ? clock : clock_monotonic;
        rl->clock_ctx = clock_ctx;
        for (int i = 0; i < STRIPES; i++)
                pthread_mutex_init(&rl->stripes[i].lock, NULL);
        *ret_rl = rl;
        return 0;
}

/**
 * ratelimit_free() - free every bucket; NULL ok.
 */
void ratelimit_free(RateLimiter *rl)
{
        if (!rl)
                return;
        for (int i = 0; i < STRIPES; i++) {
                for (int j = 0; j < BUCKETS_PER_STRIPE; j++) {
                        Bucket *b = rl->stripes[i].heads[j], *next;

                        for (; b; b = next) {
                                next = b->next;
                                free(b);
                        }
                }
                pthread_mutex_destroy(&rl->stripes[i].lock);
        }
        free(rl);
}

static uint64_t mix(int64_t key)
{
        uint64_t x = (uint64_t)key;

        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdull;
        x ^= x >> 33;
        return x;
}

/**
 * ratelimit_take() - see ratelimit.h.
 */
int ratelimit_take(RateLimiter *rl, int64_t key, double rate, double burst, int *ret_retry_after_s)
{
        uint64_t h = mix(key);
        Stripe *s = &rl->stripes[h % STRIPES];
        Bucket **head = &s->heads[(h / STRIPES) % BUCKETS_PER_STRIPE];
        Bucket *b;
        double now, wait;
        int r = 0;

        if (rate <= 0)
                return 0;
        if (burst <= 0)
                burst = fmax(1.0, 2.0 * rate);
        now = rl->clock(rl->clock_ctx);
        pthread_mutex_lock(&s->lock);
        for (b = *head; b; b = b->next)
                if (b->key == key)
                        break;
        if (!b) {
                b = malloc(sizeof(*b));
                if (!b) {
                        r = -ENOMEM;
                        goto out;
                }
                b->key = key;
                b->tokens = burst;
                b->last = now;
                b->next = *head;
                *head = b;
        }
        if (now > b->last) {
                b->tokens = fmin(burst, b->tokens + (now - b->last) * rate);
                b->last = now;
        }
        if (b->tokens >= 1.0) {
                b->tokens -= 1.0;
                goto out;
        }
        wait = (1.0 - b->tokens) / rate;
        *ret_retry_after_s = wait < 1.0 ? 1 : (int)fmin(ceil(wait), 86400.0);
        r = RATELIMIT_E_LIMITED;
out:
        pthread_mutex_unlock(&s->lock);
        return r;
}
