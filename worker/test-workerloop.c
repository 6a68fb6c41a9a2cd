/*
 * Unit tests for the workers' frame loop (worker/workerloop.c): a pipe is
 * filled with what a supervisor (or a broken one) would send, closed, and
 * the loop run on its other end with a recording handler. Each case checks
 * the exit status (worker/exitcode.h) and which frames the handler saw:
 * JOBs in order until EOF or SHUTDOWN, nothing after SHUTDOWN, malformed,
 * oversized and truncated frames and unexpected types refused before any
 * handler runs, and a handler's own status, failure and done() obeyed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/frame.h"
#include "common/limits.h"
#include "worker/exitcode.h"
#include "worker/workerloop.h"
#include "common/testcheck.h"

typedef struct Seen {
        int n;                  /* frames handled */
        char json[8][64];       /* their JSON texts */
        size_t blob_len[8];
        int answer_at;          /* the call (1-based) that returns `answer`; 0: never */
        int answer;
        int done_at;            /* done() says true after this many calls; 0: never */
} Seen;

static int record(void *ctx, const Frame *f)
{
        Seen *s = ctx;

        if (s->n < 8) {
                snprintf(s->json[s->n], sizeof(s->json[0]), "%s", f->json);
                s->blob_len[s->n] = f->blob_len;
        }
        s->n++;
        return s->n == s->answer_at ? s->answer : 0;
}

static bool done_after(void *ctx)
{
        Seen *s = ctx;

        return s->done_at && s->n >= s->done_at;
}

/* A pipe holding @n frames (@types, JSON "{\"id\":i}") then @tail's raw bytes, write end closed. */
static int feed(const uint32_t *types, int n, const void *tail, size_t tail_len)
{
        int p[2];
        char json[32];

        if (pipe(p) != 0) {
                perror("pipe");
                exit(1);
        }
        for (int i = 0; i < n; i++) {
                snprintf(json, sizeof(json), "{\"id\":%d}", i);
                if (frame_write(p[1], types[i], json, strlen(json), i == 1 ? "blob" : NULL, i == 1 ? 4 : 0) != 0) {
                        fprintf(stderr, "frame_write failed\n");
                        exit(1);
                }
        }
        if (tail_len && write(p[1], tail, tail_len) != (ssize_t)tail_len) {
                perror("write");
                exit(1);
        }
        close(p[1]);
        return p[0];
}

static int run(int fd, Seen *s)
{
        WorkerLoop loop = { .role = "test", .fd = fd, .handlers = { [FRAME_JOB] = record }, .done = done_after,
                            .ctx = s };
        int r = workerloop_run(&loop);

        close(fd);
        return r;
}

static void header(uint8_t *h, uint32_t magic, uint32_t type, uint32_t json_len, uint32_t blob_len)
{
        uint32_t v[4] = { magic, type, json_len, blob_len };

        for (int i = 0; i < 4; i++)
                for (int b = 0; b < 4; b++)
                        h[i * 4 + b] = (uint8_t)(v[i] >> (8 * b));
}

int main(void)
{
        const uint32_t jobs3[] = { FRAME_JOB, FRAME_JOB, FRAME_JOB };
        const uint32_t shut[] = { FRAME_JOB, FRAME_SHUTDOWN, FRAME_JOB };
        const uint32_t result[] = { FRAME_JOB, FRAME_RESULT, FRAME_JOB };
        const uint32_t hello[] = { FRAME_HELLO };
        uint8_t h[FRAME_HEADER_BYTES + 4];
        Seen s;

        /* JOBs in order, the blob with them, then EOF: 0. */
        s = (Seen){ 0 };
        CHECK(run(feed(jobs3, 3, NULL, 0), &s) == WORKER_EXIT_OK);
        CHECK(s.n == 3 && strcmp(s.json[0], "{\"id\":0}") == 0 && strcmp(s.json[2], "{\"id\":2}") == 0);
        CHECK(s.blob_len[0] == 0 && s.blob_len[1] == 4);
        /* Nothing at all: 0, no call. */
        s = (Seen){ 0 };
        CHECK(run(feed(NULL, 0, NULL, 0), &s) == WORKER_EXIT_OK && s.n == 0);
        /* SHUTDOWN: 0, and the JOB after it is not read. */
        s = (Seen){ 0 };
        CHECK(run(feed(shut, 3, NULL, 0), &s) == WORKER_EXIT_OK && s.n == 1);
        /* A type the worker has no handler for (RESULT, HELLO): 2, nothing after it. */
        s = (Seen){ 0 };
        CHECK(run(feed(result, 3, NULL, 0), &s) == WORKER_EXIT_PROTOCOL && s.n == 1);
        s = (Seen){ 0 };
        CHECK(run(feed(hello, 1, NULL, 0), &s) == WORKER_EXIT_PROTOCOL && s.n == 0);
        /* Garbage after a good JOB: 2. */
        s = (Seen){ 0 };
        CHECK(run(feed(jobs3, 1, "GET / HTTP/1.1\r\n\r\n", 18), &s) == WORKER_EXIT_PROTOCOL && s.n == 1);
        /* A type beyond the protocol's: 2. */
        s = (Seen){ 0 };
        header(h, FRAME_MAGIC, 99, 2, 0);
        memcpy(h + FRAME_HEADER_BYTES, "{}", 2);
        CHECK(run(feed(NULL, 0, h, FRAME_HEADER_BYTES + 2), &s) == WORKER_EXIT_PROTOCOL && s.n == 0);
        /* A JSON length past LIMIT_FRAME_JSON_BYTES: 2 before anything is allocated or read. */
        s = (Seen){ 0 };
        header(h, FRAME_MAGIC, FRAME_JOB, LIMIT_FRAME_JSON_BYTES + 1, 0);
        CHECK(run(feed(NULL, 0, h, FRAME_HEADER_BYTES), &s) == WORKER_EXIT_PROTOCOL && s.n == 0);
        s = (Seen){ 0 };
        header(h, FRAME_MAGIC, FRAME_JOB, 2, LIMIT_FRAME_BLOB_BYTES + 1);
        CHECK(run(feed(NULL, 0, h, FRAME_HEADER_BYTES), &s) == WORKER_EXIT_PROTOCOL && s.n == 0);
        /* A frame cut short by EOF (header, then 4 of 40 JSON bytes): 2, not a clean end. */
        s = (Seen){ 0 };
        header(h, FRAME_MAGIC, FRAME_JOB, 40, 0);
        memcpy(h + FRAME_HEADER_BYTES, "{\"id", 4);
        CHECK(run(feed(NULL, 0, h, FRAME_HEADER_BYTES + 4), &s) == WORKER_EXIT_PROTOCOL && s.n == 0);
        s = (Seen){ 0 };
        CHECK(run(feed(NULL, 0, h, 7), &s) == WORKER_EXIT_PROTOCOL && s.n == 0); /* half a header */
        /* The pipe cannot be read (not a descriptor): 1. */
        s = (Seen){ 0 };
        {
                WorkerLoop loop = { .role = "test", .fd = -1, .handlers = { [FRAME_JOB] = record }, .ctx = &s };
                CHECK(workerloop_run(&loop) == WORKER_EXIT_FAILED && s.n == 0);
        }
        /* A handler's status ends the loop with it; a negative errno is 1. */
        s = (Seen){ .answer_at = 2, .answer = WORKER_EXIT_PROTOCOL };
        CHECK(run(feed(jobs3, 3, NULL, 0), &s) == WORKER_EXIT_PROTOCOL && s.n == 2);
        s = (Seen){ .answer_at = 1, .answer = WORKER_EXIT_TIMEOUT };
        CHECK(run(feed(jobs3, 3, NULL, 0), &s) == WORKER_EXIT_TIMEOUT && s.n == 1);
        s = (Seen){ .answer_at = 2, .answer = -EIO };
        CHECK(run(feed(jobs3, 3, NULL, 0), &s) == WORKER_EXIT_FAILED && s.n == 2);
        /* done() after the second answered JOB: 0, the third is not read. */
        s = (Seen){ .done_at = 2 };
        CHECK(run(feed(jobs3, 3, NULL, 0), &s) == WORKER_EXIT_OK && s.n == 2);

        if (failures)
                fprintf(stderr, "test-workerloop: %d failure(s)\n", failures);
        else
                printf("test-workerloop: ok\n");
        return failures ? 1 : 0;
}
