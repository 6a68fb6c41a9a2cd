/*
 * frame - see frame.h. Invariant: nothing is allocated for a frame before
 * its header has been checked against the limits.
 */
#include "common/frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/limits.h"

static void put32(uint8_t *p, uint32_t v)
{
        p[0] = (uint8_t)v;
        p[1] = (uint8_t)(v >> 8);
        p[2] = (uint8_t)(v >> 16);
        p[3] = (uint8_t)(v >> 24);
}

static uint32_t get32(const uint8_t *p)
{
        return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/** frame_clear() - free a frame's buffers and zero it; accepts a zeroed frame. */
void frame_clear(Frame *f)
{
        if (!f)
                return;
        free(f->json);
        free(f->blob);
        memset(f, 0, sizeof(*f));
}

static int write_all(int fd, const void *buf, size_t len)
{
        const uint8_t *p = buf;

        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

/**
 * frame_write() - write one frame, blocking
 * @fd:   a blocking pipe or socket
 * @type: a FrameType
 * @json, @json_len: the JSON text; borrowed
 * @blob, @blob_len: optional binary payload; borrowed
 *
 * Return: 0, -EMSGSIZE when a length exceeds the protocol limits, or a
 * negative errno from write(2).
 */
int frame_write(int fd, uint32_t type, const char *json, size_t json_len, const void *blob,
                size_t blob_len)
{
        uint8_t h[FRAME_HEADER_BYTES];
        int r;

        if (json_len > LIMIT_FRAME_JSON_BYTES || blob_len > LIMIT_FRAME_BLOB_BYTES)
                return -EMSGSIZE;
        put32(h, FRAME_MAGIC);
        put32(h + 4, type);
        put32(h + 8, (uint32_t)json_len);
        put32(h + 12, (uint32_t)blob_len);
        r = write_all(fd, h, sizeof(h));
        if (r == 0 && json_len)
                r = write_all(fd, json, json_len);
        if (r == 0 && blob_len)
                r = write_all(fd, blob, blob_len);
        return r;
}

/* Check a header and allocate the frame's buffers. */
static int frame_begin(const uint8_t *h, Frame *f)
{
        uint32_t type = get32(h + 4), jl = get32(h + 8), bl = get32(h + 12);

        if (get32(h) != FRAME_MAGIC || type == 0 || type > FRAME_TYPE_MAX)
                return FRAME_E_MALFORMED;
        if (jl > LIMIT_FRAME_JSON_BYTES || bl > LIMIT_FRAME_BLOB_BYTES)
                return FRAME_E_TOO_LARGE;
        f->type = type;
        f->json_len = jl;
        f->blob_len = bl;
        f->json = malloc((size_t)jl + 1);
        f->blob = bl ? malloc(bl) : NULL;
        if (!f->json || (bl && !f->blob)) {
                frame_clear(f);
                return -ENOMEM;
        }
        f->json[jl] = '\0';
        return 0;
}

static int read_all(int fd, void *buf, size_t len, int eof_ok)
{
        uint8_t *p = buf;
        size_t got = 0;

        while (got < len) {
                ssize_t n = read(fd, p + got, len - got);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return (got == 0 && eof_ok) ? FRAME_E_EOF : FRAME_E_MALFORMED;
                got += (size_t)n;
        }
        return 0;
}

/**
 * frame_read() - read one whole frame, blocking
 * @fd:        a blocking pipe or socket
 * @ret_frame: on success, the frame; the caller frees it with frame_clear()
 *
 * Return: 0, FRAME_E_EOF at a clean end of stream, FRAME_E_MALFORMED,
 * FRAME_E_TOO_LARGE, or a negative errno.
 */
int frame_read(int fd, Frame *ret_frame)
{
        uint8_t h[FRAME_HEADER_BYTES];
        Frame f = { 0 };
        int r;

        r = read_all(fd, h, sizeof(h), 1);
        if (r != 0)
                return r;
        r = frame_begin(h, &f);
        if (r != 0)
                return r;
        r = read_all(fd, f.json, f.json_len, 0);
        if (r == 0 && f.blob_len)
                r = read_all(fd, f.blob, f.blob_len, 0);
        if (r != 0) {
                frame_clear(&f);
                return r;
        }
        *ret_frame = f;
        return 0;
}

void frame_decoder_init(FrameDecoder *d)
{
        memset(d, 0, sizeof(*d));
}

void frame_decoder_clear(FrameDecoder *d)
{
        frame_clear(&d->cur);
        frame_decoder_init(d);
}

/**
 * frame_decoder_feed() - consume bytes until one frame is complete
 * @d:         decoder state
 * @buf, @len: bytes received; borrowed
 * @ret_used:  always set: how many bytes of @buf were consumed
 * @ret_frame: on 0, the completed frame, owned by the caller
 *
 * Call again with the rest of @buf after a frame completes.
 *
 * Return: 0 with a frame, FRAME_E_AGAIN when all of @buf was consumed without
 * completing one, FRAME_E_MALFORMED or FRAME_E_TOO_LARGE (the stream is
 * unusable: kill the peer), or -ENOMEM.
 */
int frame_decoder_feed(FrameDecoder *d, const uint8_t *buf, size_t len, size_t *ret_used,
                       Frame *ret_frame)
{
        size_t used = 0;
        int r;

        while (used < len) {
                if (d->have < FRAME_HEADER_BYTES) {
                        size_t n = FRAME_HEADER_BYTES - d->have;
                        if (n > len - used)
                                n = len - used;
                        memcpy(d->header + d->have, buf + used, n);
                        d->have += n;
                        used += n;
                        if (d->have == FRAME_HEADER_BYTES) {
                                r = frame_begin(d->header, &d->cur);
                                if (r != 0) {
                                        *ret_used = used;
                                        return r;
                                }
                        }
                } else {
                        size_t off = d->have - FRAME_HEADER_BYTES, n;
                        uint8_t *dst;
                        if (off < d->cur.json_len) {
                                dst = (uint8_t *)d->cur.json + off;
                                n = d->cur.json_len - off;
                        } else {
                                dst = d->cur.blob + (off - d->cur.json_len);
                                n = d->cur.json_len + d->cur.blob_len - off;
                        }
                        if (n > len - used)
                                n = len - used;
                        memcpy(dst, buf + used, n);
                        d->have += n;
                        used += n;
                }
                if (d->have >= FRAME_HEADER_BYTES &&
                    d->have == FRAME_HEADER_BYTES + d->cur.json_len + d->cur.blob_len)
                        break;
        }
        *ret_used = used;
        if (d->have >= FRAME_HEADER_BYTES &&
            d->have == FRAME_HEADER_BYTES + d->cur.json_len + d->cur.blob_len) {
                *ret_frame = d->cur;
                memset(&d->cur, 0, sizeof(d->cur));
                d->have = 0;
                return 0;
        }
        return FRAME_E_AGAIN;
}
