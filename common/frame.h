/*
 * frame - the framed protocol between the supervisor and its children.
 *
 * A frame is a 16-byte header (magic "KVF1", type, JSON length, blob length;
 * little-endian u32 each), a JSON text and an optional binary blob (a CUBIN,
 * a source). Both lengths are checked against LIMIT_FRAME_* before anything
 * is allocated; a frame that breaks them, or a bad magic or type, is
 * malformed, and the reader must kill the peer that sent it.
 *
 * Workers use the blocking frame_read()/frame_write(). The supervisor feeds
 * bytes from its libuv pipes into a FrameDecoder and gets whole frames out.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define FRAME_MAGIC 0x3146564bu /* "KVF1" */
#define FRAME_HEADER_BYTES 16

typedef enum {
        FRAME_HELLO = 1,    /* child -> supervisor: ready; capabilities, layers, GPU */
        FRAME_JOB = 2,      /* supervisor -> child: one job */
        FRAME_RESULT = 3,   /* child -> supervisor: the job's outcome */
        FRAME_PROGRESS = 4, /* child -> supervisor: heartbeat / phase of the job */
        FRAME_SHUTDOWN = 5, /* supervisor -> child: exit after the current job */
        FRAME_TYPE_MAX = 5,
} FrameType;

enum {
        FRAME_E_EOF = 1,       /* clean end of stream before a header */
        FRAME_E_MALFORMED = 2, /* bad magic, type, or truncated frame */
        FRAME_E_TOO_LARGE = 3, /* a length beyond LIMIT_FRAME_* */
        FRAME_E_AGAIN = 4,     /* decoder: need more bytes */
};

typedef struct Frame {
        uint32_t type;
        char *json;      /* NUL-terminated; json_len excludes the NUL */
        size_t json_len;
        uint8_t *blob;   /* NULL when blob_len is 0 */
        size_t blob_len;
} Frame;

void frame_clear(Frame *f);
int frame_write(int fd, uint32_t type, const char *json, size_t json_len, const void *blob,
                size_t blob_len);
int frame_read(int fd, Frame *ret_frame);

typedef struct FrameDecoder {
        uint8_t header[FRAME_HEADER_BYTES];
        size_t have;      /* bytes of the current frame received */
        Frame cur;
} FrameDecoder;

void frame_decoder_init(FrameDecoder *d);
void frame_decoder_clear(FrameDecoder *d);
int frame_decoder_feed(FrameDecoder *d, const uint8_t *buf, size_t len, size_t *ret_used,
                       Frame *ret_frame);
