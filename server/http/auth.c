/*
 * auth - bearer-token authentication with a small time-bounded cache.
 *
 * The cache maps a token hash to its AuthToken and an expiry; it holds at
 * most CACHE_MAX entries and is simply emptied when full (tokens are few;
 * a miss costs one indexed read). Only successful lookups are cached, so a
 * revoked token stops working within auth_cache_s and an unknown one is
 * always checked against the store.
 */
#include "server/http/auth.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "common/log.h"
#include "common/sha256.h"

#define CACHE_BUCKETS 256
#define CACHE_MAX 4096

typedef struct Entry {
        uint8_t hash[32];
        AuthToken tok;
        double expires;
        struct Entry *next;
} Entry;

struct Auth {
        StorePool *pool;
        double cache_s;
        pthread_mutex_t lock;
        Entry *buckets[CACHE_BUCKETS];
        size_t n;
};

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/**
 * auth_new() - see auth.h.
 */
int auth_new(StorePool *pool, double cache_s, Auth **ret_auth)
{
        Auth *a = calloc(1, sizeof(*a));

        if (!a)
                return -ENOMEM;
        a->pool = pool;
        a->cache_s = cache_s;
        pthread_mutex_init(&a->lock, NULL);
        *ret_auth = a;
        return 0;
}

static void cache_clear(Auth *a)
{
        for (size_t i = 0; i < CACHE_BUCKETS; i++) {
                Entry *e = a->buckets[i], *next;

                for (; e; e = next) {
                        next = e->next;
                        free(e);
                }
                a->buckets[i] = NULL;
        }
        a->n = 0;
}

/**
 * auth_free() - free the authenticator and its cache; NULL ok.
 */
void auth_free(Auth *a)
{
        if (!a)
                return;
        cache_clear(a);
        pthread_mutex_destroy(&a->lock);
        free(a);
}

/**
 * auth_token_well_formed() - "kvd_" and 32 lower-case hex digits?
 */
bool auth_token_well_formed(const char *text)
{
        size_t plen = strlen(AUTH_TOKEN_PREFIX);

        if (strncmp(text, AUTH_TOKEN_PREFIX, plen) != 0 || strlen(text) != plen + 32)
                return false;
        for (const char *p = text + plen; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

/**
 * auth_token_hash() - SHA-256 of the token text, the form the store keeps.
 */
void auth_token_hash(const char *text, uint8_t ret_hash[32])
{
        sha256(text, strlen(text), ret_hash);
}

/**
 * auth_token_generate() - see auth.h.
 */
int auth_token_generate(char ret_text[AUTH_TOKEN_TEXT_BYTES])
{
        uint8_t raw[16];
        size_t got = 0;

        while (got < sizeof(raw)) {
                ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                got += (size_t)n;
        }
        memcpy(ret_text, AUTH_TOKEN_PREFIX, strlen(AUTH_TOKEN_PREFIX));
        hex_encode(raw, sizeof(raw), ret_text + strlen(AUTH_TOKEN_PREFIX));
        return 0;
}

/**
 * auth_limits_parse() - read {"rate", "burst", "max_queued", "admin"} into
 * @ret; an absent limit is -1 ("the server's default").
 */
void auth_limits_parse(json_t *limits, AuthToken *ret)
{
        json_t *v;

        ret->admin = json_is_true(json_object_get(limits, "admin"));
        v = json_object_get(limits, "rate");
        ret->rate = json_is_number(v) ? json_number_value(v) : -1;
        v = json_object_get(limits, "burst");
        ret->burst = json_is_number(v) ? json_number_value(v) : -1;
        v = json_object_get(limits, "max_queued");
        ret->max_queued = json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

/**
 * auth_check() - see auth.h.
 */
int auth_check(Auth *a, const char *authorization, AuthToken *ret_token)
{
        const char *text;
        uint8_t hash[32];
        size_t b;
        Entry *e;
        json_t *limits = NULL;
        AuthToken tok;
        Store *store;
        double now;
        int r;

        if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
                return AUTH_E_MISSING;
        text = authorization + 7;
        while (*text == ' ')
                text++;
        if (!auth_token_well_formed(text))
                return AUTH_E_INVALID;
        auth_token_hash(text, hash);
        b = hash[0] % CACHE_BUCKETS;
        now = now_s();
        if (a->cache_s > 0) {
                pthread_mutex_lock(&a->lock);
                for (e = a->buckets[b]; e; e = e->next)
                        if (!memcmp(e->hash, hash, 32) && e->expires > now) {
                                *ret_token = e->tok;
                                pthread_mutex_unlock(&a->lock);
                                return 0;
                        }
                pthread_mutex_unlock(&a->lock);
        }
        store = storepool_get(a->pool);
        r = store_token_lookup(store, hash, &tok.id, &limits);
        storepool_put(a->pool, store);
        if (r == STORE_E_NOT_FOUND)
                return AUTH_E_INVALID;
        if (r != 0)
                return r < 0 ? r : -EIO;
        auth_limits_parse(limits, &tok);
        json_decref(limits);
        if (a->cache_s > 0) {
                pthread_mutex_lock(&a->lock);
                for (e = a->buckets[b]; e; e = e->next)
                        if (!memcmp(e->hash, hash, 32))
                                break;
                if (!e) {
                        if (a->n >= CACHE_MAX)
                                cache_clear(a);
                        e = malloc(sizeof(*e));
                        if (e) {
                                memcpy(e->hash, hash, 32);
                                e->next = a->buckets[b];
                                a->buckets[b] = e;
                                a->n++;
                        }
                }
                if (e) {
                        e->tok = tok;
                        e->expires = now + a->cache_s;
                }
                pthread_mutex_unlock(&a->lock);
        }
        *ret_token = tok;
        return 0;
}
