/* Unit tests for the small common pieces: sha256/hmac vectors, frames. */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/frame.h"
#include "common/limits.h"
#include "common/sha256.h"
#include "common/verdict.h"

static void check_hex(const uint8_t *d, const char *want)
{
        char hex[65];
        hex_encode(d, 32, hex);
        if (strcmp(hex, want) != 0) {
                fprintf(stderr, "got %s want %s\n", hex, want);
                assert(0);
        }
}

static void test_sha256(void)
{
        uint8_t d[32];
        sha256("abc", 3, d);
        check_hex(d, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        sha256("", 0, d);
        check_hex(d, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, d);
        check_hex(d, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
        /* RFC 4231 test case 2 */
        hmac_sha256((const uint8_t *)"Jefe", 4, "what do ya want for nothing?", 28, d);
        check_hex(d, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

static void test_hex_decode(void)
{
        uint8_t b[4], want[4] = { 0x00, 0xab, 0xcd, 0xff }, d[32];
        char hex[65];

        assert(hex_decode("00abCDff", b, 4) == 0 && memcmp(b, want, 4) == 0);
        assert(hex_decode("00abcdf", b, 4) == -EINVAL);   /* odd length */
        assert(hex_decode("00abcdff00", b, 4) == -EINVAL); /* too long */
        assert(hex_decode("00abcdfg", b, 4) == -EINVAL);  /* not hex */
        assert(hex_decode(NULL, b, 4) == -EINVAL);
        sha256("abc", 3, d);
        hex_encode(d, 32, hex);
        assert(hex_decode(hex, b, 4) == -EINVAL);
        {
                uint8_t back[32];
                assert(hex_decode(hex, back, 32) == 0 && memcmp(back, d, 32) == 0);
        }
}

static void test_verdicts(void)
{
        static const char *const gpu[] = { "correct", "incorrect", "runtime_error", "timeout", "rejected",
                                           "internal_error" };
        for (size_t i = 0; i < sizeof(gpu) / sizeof(gpu[0]); i++)
                assert(verdict_known(gpu[i]) && verdict_from_gpu(gpu[i]));
        assert(verdict_known("compiled") && !verdict_from_gpu("compiled"));
        assert(verdict_known("compile_error") && !verdict_from_gpu("compile_error"));
        assert(verdict_known("cancelled") && !verdict_from_gpu("cancelled"));
        assert(!verdict_known("bogus") && !verdict_from_gpu("bogus") && !verdict_known(NULL) && !verdict_from_gpu(NULL));
        assert(verdict_exit_code("correct") == 0 && verdict_exit_code("compiled") == 0);
        assert(verdict_exit_code("incorrect") == 1 && verdict_exit_code("compile_error") == 2);
        assert(verdict_exit_code("runtime_error") == 3 && verdict_exit_code("timeout") == 4);
        assert(verdict_exit_code("rejected") == 5 && verdict_exit_code("internal_error") == 6);
        assert(verdict_exit_code("cancelled") == 6 && verdict_exit_code("bogus") == 6 && verdict_exit_code(NULL) == 6);
}

static void test_frames(void)
{
        int p[2];
        Frame f = { 0 };
        FrameDecoder dec;
        uint8_t buf[256];
        ssize_t n;
        size_t used, off = 0;
        int r;

        assert(pipe(p) == 0);
        assert(frame_write(p[1], FRAME_RESULT, "{\"a\":1}", 7, "xyz", 3) == 0);
        assert(frame_read(p[0], &f) == 0);
        assert(f.type == FRAME_RESULT && f.json_len == 7 && strcmp(f.json, "{\"a\":1}") == 0);
        assert(f.blob_len == 3 && memcmp(f.blob, "xyz", 3) == 0);
        frame_clear(&f);

        /* Decoder, fed one byte at a time, yields the same frame. */
        assert(frame_write(p[1], FRAME_HELLO, "{}", 2, NULL, 0) == 0);
        n = read(p[0], buf, sizeof(buf));
        assert(n == FRAME_HEADER_BYTES + 2);
        frame_decoder_init(&dec);
        for (off = 0; off < (size_t)n - 1; off++)
                assert(frame_decoder_feed(&dec, buf + off, 1, &used, &f) == FRAME_E_AGAIN && used == 1);
        assert(frame_decoder_feed(&dec, buf + off, 1, &used, &f) == 0);
        assert(f.type == FRAME_HELLO && strcmp(f.json, "{}") == 0);
        frame_clear(&f);

        /* Garbage and oversize headers are refused before allocation. */
        memset(buf, 'A', 16);
        frame_decoder_init(&dec);
        assert(frame_decoder_feed(&dec, buf, 16, &used, &f) == FRAME_E_MALFORMED);
        buf[0] = 'K', buf[1] = 'V', buf[2] = 'F', buf[3] = '1';
        buf[4] = 1, buf[5] = buf[6] = buf[7] = 0;
        buf[8] = buf[9] = buf[10] = buf[11] = 0xff; /* 4 GiB of JSON */
        frame_decoder_init(&dec);
        r = frame_decoder_feed(&dec, buf, 16, &used, &f);
        assert(r == FRAME_E_TOO_LARGE);
        assert(frame_write(p[1], FRAME_JOB, "x", LIMIT_FRAME_JSON_BYTES + 1, NULL, 0) == -EMSGSIZE);
        close(p[1]);
        assert(frame_read(p[0], &f) == FRAME_E_EOF);
        close(p[0]);
}

int main(void)
{
        test_sha256();
        test_hex_decode();
        test_verdicts();
        test_frames();
        printf("ok\n");
        return 0;
}
