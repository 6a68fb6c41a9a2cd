/*
 * test-devrng - the element rules shared by the device helpers and the host
 * (worker/gpu/devrng.h), checked on the CPU: Philox known-answer vectors, f16
 * and bf16 rounding against the compiler's own conversions, the input
 * distributions, the tolerance rule, poison and canaries.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/gpu/devrng.h"
#include "common/testcheck.h"

static void test_philox(void)
{
        /* Random123 kat_vectors, philox4x32_10 */
        uint32_t a[4] = { 0, 0, 0, 0 };
        uint32_t b[4] = { 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu };
        uint32_t c[4] = { 0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u };

        kv_philox(a, 0, 0);
        kv_philox(b, 0xffffffffu, 0xffffffffu);
        kv_philox(c, 0xa4093822u, 0x299f31d0u);
        CHECK(a[0] == 0x6627e8d5u && a[1] == 0xe169c58du && a[2] == 0xbc57ac4cu && a[3] == 0x9b00dbd8u);
        CHECK(b[0] == 0x408f276du && b[1] == 0x41c83b0eu && b[2] == 0xa20bc7c6u && b[3] == 0x6d5451fdu);
        CHECK(c[0] == 0xd16cfe09u && c[1] == 0x94fdccebu && c[2] == 0x5001e420u && c[3] == 0x24126ea1u);
}

static uint16_t ref_f16(float f)
{
        __extension__ _Float16 h = (_Float16)f;
        uint16_t b;

        memcpy(&b, &h, 2);
        return b;
}

static float ref_f16_to_f32(uint16_t b)
{
        __extension__ _Float16 h;

        memcpy(&h, &b, 2);
        return (float)h;
}

static void test_f16(void)
{
        uint64_t x = 12345;
        int bad = 0;

        /* every half decodes like the compiler decodes it, and encodes back */
        for (uint32_t h = 0; h < 65536; h++) {
                float f = kv_f16_to_f32((uint16_t)h), g = ref_f16_to_f32((uint16_t)h);
                if (isnan(g)) {
                        bad += !isnan(f);
                        continue;
                }
                bad += kv_f32_bits(f) != kv_f32_bits(g);
                bad += kv_f32_to_f16(f) != (uint16_t)h;
        }
        CHECK(bad == 0);
        /* random floats over the whole range, and the edges, round like the compiler */
        bad = 0;
        for (int i = 0; i < 2000000; i++) {
                float f;
                x = kv_mix64(x);
                f = kv_bits_f32((uint32_t)x);
                if (isnan(f))
                        continue;
                bad += kv_f32_to_f16(f) != ref_f16(f);
        }
        CHECK(bad == 0);
        CHECK(kv_f32_to_f16(1.0f) == 0x3C00);
        CHECK(kv_f32_to_f16(65504.0f) == 0x7BFF);
        CHECK(kv_f32_to_f16(65520.0f) == 0x7C00);          /* tie at the top rounds to Inf */
        CHECK(kv_f32_to_f16(ldexpf(1, -24)) == 0x0001);
        CHECK(kv_f32_to_f16(ldexpf(1, -25)) == 0x0000);    /* tie to even: 0 */
        CHECK(kv_f32_to_f16(ldexpf(1.5f, -25)) == 0x0001);
        CHECK(kv_f32_to_f16(-0.0f) == 0x8000);
        CHECK((kv_f32_to_f16(NAN) & 0x7C00) == 0x7C00 && (kv_f32_to_f16(NAN) & 0x3FF));
}

static void test_bf16(void)
{
        CHECK(kv_f32_to_bf16(1.0f) == 0x3F80);
        CHECK(kv_f32_to_bf16(kv_bits_f32(0x3F808000u)) == 0x3F80); /* tie, even */
        CHECK(kv_f32_to_bf16(kv_bits_f32(0x3F818000u)) == 0x3F82); /* tie, odd -> up */
        CHECK(kv_f32_to_bf16(kv_bits_f32(0x3F808001u)) == 0x3F81);
        CHECK(kv_bf16_to_f32(0x3F80) == 1.0f);
        CHECK(isnan(kv_bf16_to_f32(kv_f32_to_bf16(NAN))));
        CHECK(kv_f32_to_bf16(kv_bits_f32(0x7F7FFFFFu)) == 0x7F80); /* FLT_MAX rounds to Inf */
}

static void gen_stats(KvGenParams p, uint64_t n, double *ret_mean, double *ret_sd, double *ret_min, double *ret_max)
{
        unsigned char *buf = malloc(n * 8);
        double s = 0, sq = 0, mn = INFINITY, mx = -INFINITY;

        p.count = n;
        for (uint64_t i = 0; i < n; i++)
                kv_gen_store(&p, i, buf);
        for (uint64_t i = 0; i < n; i++) {
                double v = kv_load_f64(p.dtype, buf, i);
                s += v;
                sq += v * v;
                mn = fmin(mn, v);
                mx = fmax(mx, v);
        }
        *ret_mean = s / (double)n;
        *ret_sd = sqrt(sq / (double)n - *ret_mean * *ret_mean);
        *ret_min = mn;
        *ret_max = mx;
        free(buf);
}

static void test_distributions(void)
{
        KvGenParams p;
        double mean, sd, mn, mx;

        memset(&p, 0, sizeof(p));
        p.seed = 0x9f1c2e0a5b7d3c11ull;
        p.stream = 3;
        p.scale = 1.0;

        p.dtype = KV_DT_F32;
        p.dist = KV_DIST_NORMAL;
        p.a = 0;
        p.b = 1;
        gen_stats(p, 1000000, &mean, &sd, &mn, &mx);
        CHECK(fabs(mean) < 0.005 && fabs(sd - 1) < 0.005 && mn < -4 && mx > 4);

        p.a = 2;
        p.b = 3; /* normal(2, 3), then scale 0.5 and offset 1: mean 2, sd 1.5 */
        p.scale = 0.5;
        p.offset = 1;
        gen_stats(p, 400000, &mean, &sd, &mn, &mx);
        CHECK(fabs(mean - 2) < 0.01 && fabs(sd - 1.5) < 0.01);
        p.scale = 1;
        p.offset = 0;

        p.dist = KV_DIST_UNIFORM;
        p.a = -1;
        p.b = 3;
        p.dtype = KV_DT_F64;
        gen_stats(p, 400000, &mean, &sd, &mn, &mx);
        CHECK(fabs(mean - 1) < 0.01 && mn >= -1 && mx < 3 && mn < -0.999 && mx > 2.999);
        CHECK(fabs(sd - 4 / sqrt(12)) < 0.01);

        p.dist = KV_DIST_INT;
        p.ilow = -3;
        p.ihigh = 5;
        p.dtype = KV_DT_I32;
        gen_stats(p, 100000, &mean, &sd, &mn, &mx);
        CHECK(mn == -3 && mx == 4 && fabs(mean - 0.5) < 0.05);
        p.dtype = KV_DT_I64; /* exact integers above 2^53 */
        p.ilow = (int64_t)1 << 60;
        p.ihigh = p.ilow + 10;
        {
                unsigned char buf[8 * 64];
                int ok = 1;
                p.count = 64;
                for (int i = 0; i < 64; i++) {
                        int64_t v;
                        kv_gen_store(&p, (uint64_t)i, buf);
                        v = kv_load_i64(KV_DT_I64, buf, (uint64_t)i);
                        ok &= v >= p.ilow && v < p.ihigh;
                }
                CHECK(ok);
        }
        p.dtype = KV_DT_U8; /* normal into u8: rounded and clamped */
        p.dist = KV_DIST_NORMAL;
        p.a = 100;
        p.b = 200;
        gen_stats(p, 100000, &mean, &sd, &mn, &mx);
        CHECK(mn == 0 && mx == 255);

        p.dtype = KV_DT_F32;
        p.dist = KV_DIST_MIXED;
        {
                unsigned char buf[4 * 100000];
                int neg = 0, pos = 0, small = 0, big = 0, out = 0;
                p.count = 100000;
                for (uint64_t i = 0; i < p.count; i++) {
                        double v;
                        kv_gen_store(&p, i, buf);
                        v = kv_load_f64(KV_DT_F32, buf, i);
                        neg += v < 0;
                        pos += v > 0;
                        small += fabs(v) < 1e-2;
                        big += fabs(v) > 1e2;
                        out += fabs(v) < 0.999e-3 || fabs(v) > 1.001e3;
                }
                CHECK(neg > 45000 && pos > 45000 && out == 0);
                CHECK(small > 15500 && small < 17800 && big > 15500 && big < 17800); /* 1/6 each */
        }

        p.dtype = KV_DT_BF16;
        p.dist = KV_DIST_UNIFORM;
        p.a = 0;
        p.b = 1;
        p.offset = 0.5;
        gen_stats(p, 100000, &mean, &sd, &mn, &mx);
        CHECK(mn >= 0.5 && mx <= 1.5 && fabs(mean - 1.0) < 0.01);
}

static void test_determinism(void)
{
        KvGenParams p;
        unsigned char a[4 * 1000], b[4 * 1000], c[4 * 1000];

        memset(&p, 0, sizeof(p));
        p.seed = kv_trial_seed(42, 0, 0);
        p.dtype = KV_DT_F32;
        p.dist = KV_DIST_NORMAL;
        p.b = 1;
        p.scale = 1;
        p.count = 1000;
        for (uint64_t i = 0; i < 1000; i++)
                kv_gen_store(&p, i, a);
        for (uint64_t i = 1000; i-- > 0;) /* any order gives the same bits */
                kv_gen_store(&p, i, b);
        CHECK(memcmp(a, b, sizeof(a)) == 0);
        p.stream = 1;
        for (uint64_t i = 0; i < 1000; i++)
                kv_gen_store(&p, i, c);
        CHECK(memcmp(a, c, sizeof(a)) != 0);
        CHECK(kv_trial_seed(42, 0, 0) != kv_trial_seed(42, 0, 1));
        CHECK(kv_trial_seed(42, 0, 1) != kv_trial_seed(42, 1, 0));
        CHECK(kv_trial_seed(42, 0, 0) != kv_trial_seed(43, 0, 0));
}

static int cmp(int dtype, double atol, double rtol, const void *got, const void *want)
{
        KvCmpParams p = { .count = 1, .dtype = dtype, .atol = atol, .rtol = rtol };
        double ab, rel;

        return kv_compare_one(&p, got, want, 0, &ab, &rel);
}

static void test_compare(void)
{
        float one = 1, near = 1.00005f, far = 1.001f, nan = NAN, inf = INFINITY, ninf = -INFINITY, zero = 0;
        int64_t big = (int64_t)1 << 60, big1 = big + 1;
        int32_t i3 = 3, i4 = 4;
        KvCmpParams p = { .count = 1, .dtype = KV_DT_F32, .atol = 1e-4, .rtol = 1e-4 };
        double ab, rel;

        CHECK(cmp(KV_DT_F32, 1e-4, 1e-4, &near, &one) == KV_CMP_MATCH);
        CHECK(cmp(KV_DT_F32, 1e-4, 1e-4, &far, &one) == KV_CMP_VALUE);
        CHECK(cmp(KV_DT_F32, 1e-4, 1e-4, &nan, &nan) == KV_CMP_MATCH);
        CHECK(cmp(KV_DT_F32, 1e-4, 1e-4, &nan, &one) == KV_CMP_NAN_INF);
        CHECK(cmp(KV_DT_F32, 1e-4, 1e-4, &one, &nan) == KV_CMP_NAN_INF);
        CHECK(cmp(KV_DT_F32, 1e-4, 1e-4, &inf, &inf) == KV_CMP_MATCH);
        CHECK(cmp(KV_DT_F32, 1e-4, 1e-4, &inf, &ninf) == KV_CMP_NAN_INF);
        CHECK(cmp(KV_DT_F32, 1e9, 1e9, &inf, &one) == KV_CMP_NAN_INF);
        CHECK(cmp(KV_DT_I64, 0, 0, &big1, &big) == KV_CMP_VALUE); /* exact, even above 2^53 */
        CHECK(cmp(KV_DT_I64, 0, 0, &big, &big) == KV_CMP_MATCH);
        CHECK(cmp(KV_DT_I32, 0, 0, &i3, &i4) == KV_CMP_VALUE);
        CHECK(cmp(KV_DT_I32, 1, 0, &i3, &i4) == KV_CMP_MATCH);
        CHECK(kv_compare_one(&p, (const unsigned char *)&far, (const unsigned char *)&one, 0, &ab, &rel) == KV_CMP_VALUE);
        CHECK(fabs(ab - 0.001) < 1e-6 && fabs(rel - 0.001) < 1e-6);
        CHECK(kv_compare_one(&p, (const unsigned char *)&one, (const unsigned char *)&zero, 0, &ab, &rel) == KV_CMP_VALUE);
        CHECK(ab == 1 && rel == 0); /* no relative error against 0 */
}

static void test_poison_canary(void)
{
        unsigned char ff[8];
        int distinct = 0, seen[256] = { 0 }, same = 0;

        memset(ff, KV_POISON_FLOAT_BYTE, sizeof(ff));
        CHECK(isnan(kv_load_f64(KV_DT_F32, ff, 0)));
        CHECK(isnan(kv_load_f64(KV_DT_F64, ff, 0)));
        CHECK(isnan(kv_load_f64(KV_DT_F16, ff, 0)));
        CHECK(isnan(kv_load_f64(KV_DT_BF16, ff, 0)));
        for (uint64_t off = 0; off < 65536; off++) {
                unsigned char c = kv_canary_byte(7, off);
                distinct += !seen[c];
                seen[c] = 1;
                same += c == kv_canary_byte(8, off);
        }
        CHECK(distinct == 256);
        CHECK(same < 65536 / 128); /* another salt, another pattern */
}

int main(void)
{
        test_philox();
        test_f16();
        test_bf16();
        test_distributions();
        test_determinism();
        test_compare();
        test_poison_canary();
        if (failures) {
                fprintf(stderr, "test-devrng: %d failure(s)\n", failures);
                return 1;
        }
        printf("test-devrng: ok\n");
        return 0;
}
