/*
 * ratelimit - per-token token buckets: each key (a token id) holds up to
 * `burst` tokens, refilled at `rate` per second; a request takes one. The
 * clock is injected so tests can drive time. Thread-safe.
 */
#pragma once

#include <stdint.h>

enum {
        RATELIMIT_E_LIMITED = 1,  /* bucket empty; retry after the given seconds */
};

typedef struct RateLimiter RateLimiter;

/* Monotonic seconds. */
typedef double (*RateClock)(void *ctx);

/**
 * ratelimit_new() - make an empty limiter
 * @clock: time source, or NULL for CLOCK_MONOTONIC
 * @ret_rl: on success, a new limiter (ratelimit_free())
 * Return: 0 or -ENOMEM.
 */
int ratelimit_new(RateClock clock, void *clock_ctx, RateLimiter **ret_rl);
void ratelimit_free(RateLimiter *rl);

/**
 * ratelimit_take() - take one token from @key's bucket
 * @rate:  tokens per second; <= 0 means unlimited (always 0)
 * @burst: bucket size; <= 0 means max(1, 2 * rate). A new key starts full.
 * @ret_retry_after_s: on RATELIMIT_E_LIMITED, whole seconds until a token
 *                     is there (at least 1)
 * Return: 0, RATELIMIT_E_LIMITED, or -ENOMEM (the request is let through
 * by callers that choose to).
 */
int ratelimit_take(RateLimiter *rl, int64_t key, double rate, double burst, int *ret_retry_after_s);
