/*
 * auth - bearer tokens. A token is "kvd_" and 32 lower-case hex digits from
 * getrandom(); the store keeps only its SHA-256 and the token's limits
 * ({"rate", "burst", "max_queued", "admin"}). Lookups are cached for a short
 * time (auth_cache_s) so that a busy client costs no database read per
 * request; a revoke takes effect when the cached entry expires.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/store/store.h"

#define AUTH_TOKEN_PREFIX "kvd_"
#define AUTH_TOKEN_TEXT_BYTES 37   /* prefix + 32 hex + NUL */

enum {
        AUTH_E_MISSING = 1,   /* no Authorization header, or not "Bearer <token>" */
        AUTH_E_INVALID = 2,   /* unknown, malformed or revoked token */
};

typedef struct Auth Auth;

/* A token's identity and limits; a limit < 0 means "the server's default". */
typedef struct AuthToken {
        int64_t id;
        bool admin;
        double rate;
        double burst;
        int64_t max_queued;
} AuthToken;

/**
 * auth_new() - an authenticator over @pool
 * @pool:    borrowed; must outlive the Auth
 * @cache_s: how long a successful lookup is reused (0: never)
 * Return: 0 or -ENOMEM.
 */
int auth_new(StorePool *pool, double cache_s, Auth **ret_auth);
void auth_free(Auth *auth);

/**
 * auth_check() - authenticate an Authorization header value
 * @authorization: the header, or NULL
 * @ret_token:     on 0, who it is
 * Return: 0, AUTH_E_MISSING, AUTH_E_INVALID, or a negative errno (store failure).
 */
int auth_check(Auth *auth, const char *authorization, AuthToken *ret_token);

/* Parse a token's stored limits JSON into @ret (members absent: -1). */
void auth_limits_parse(json_t *limits, AuthToken *ret);

/**
 * auth_token_generate() - a new random token text
 * @ret_text: AUTH_TOKEN_TEXT_BYTES bytes
 * Return: 0 or a negative errno from getrandom().
 */
int auth_token_generate(char ret_text[AUTH_TOKEN_TEXT_BYTES]);
/* SHA-256 of the token text, as stored. */
void auth_token_hash(const char *text, uint8_t ret_hash[32]);
/* Does @text look like a token ("kvd_" + 32 lower-case hex)? */
bool auth_token_well_formed(const char *text);
