/*
 * sha256 - SHA-256 and HMAC-SHA-256 (FIPS 180-4, RFC 2104). Used for token
 * hashes, idempotency body hashes, compile cache keys and seed derivation.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef struct Sha256 {
        uint32_t h[8];
        uint64_t len;
        uint8_t buf[64];
        size_t fill;
} Sha256;

void sha256_init(Sha256 *s);
void sha256_update(Sha256 *s, const void *data, size_t len);
void sha256_final(Sha256 *s, uint8_t ret_digest[32]);
void sha256(const void *data, size_t len, uint8_t ret_digest[32]);
void hmac_sha256(const uint8_t *key, size_t key_len, const void *msg, size_t msg_len,
                 uint8_t ret_mac[32]);
/* Lower-case hex of @len bytes into @out (2 * len + 1 bytes). */
void hex_encode(const uint8_t *bytes, size_t len, char *out);
/* @len bytes from exactly 2 * @len hex digits of @hex (either case) into @out.
 * Return: 0, or -EINVAL (NULL, a wrong length or a non-hex character; @out then undefined). */
int hex_decode(const char *hex, uint8_t *out, size_t len);
