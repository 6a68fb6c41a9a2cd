/*
 * devrng - the element-level rules of the evaluation contract, written once
 * for both sides: the trusted device helpers (worker/gpu/device.cu, compiled by
 * nvcc) and the host (unit tests, the host oracle). Everything here is a pure
 * function of its arguments, so a buffer's contents are a pure function of
 * (trial seed, buffer index, element index) and can be regenerated bit for
 * bit on the device at any time.
 *
 * Contents: splitmix64 and the per-trial seed; Philox4x32-10; the input
 * distributions (normal by Box-Muller, uniform, int, mixed; then scale and
 * offset) and their conversion to every dtype (f16/bf16 by integer
 * round-to-nearest-even, so no cuda_fp16 header is needed on either side);
 * the poison bytes; the canary pattern of the guard bands; and the
 * per-element tolerance rule (|got - want| <= atol + rtol * |want|, NaN and
 * Inf must agree, integers exact unless a tolerance is given).
 *
 * This header must stay valid C11 and CUDA C++ and must not use anything
 * but <stdint.h>, <string.h> and <math.h>.
 */
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define KV_HD static inline __host__ __device__
#else
#define KV_HD static inline
#endif

/* dtypes, in the order of docs/internals.md */
enum {
        KV_DT_F32 = 0,
        KV_DT_F16 = 1,
        KV_DT_BF16 = 2,
        KV_DT_F64 = 3,
        KV_DT_I8 = 4,
        KV_DT_U8 = 5,
        KV_DT_I32 = 6,
        KV_DT_I64 = 7,
        KV_DT_COUNT = 8,
};

enum {
        KV_DIST_NORMAL = 0,
        KV_DIST_UNIFORM = 1,
        KV_DIST_INT = 2,
        KV_DIST_MIXED = 3,
};

/* Outputs are filled with these bytes before the candidate runs: all-ones is
 * a NaN in f32, f64, f16 and bf16 alike; integers get 0xA5. */
#define KV_POISON_FLOAT_BYTE 0xFFu
#define KV_POISON_INT_BYTE 0xA5u

/* Parameters of one generated buffer, inside a KvFillOp of kv_fill_batch. The
 * layout is plain (no padding surprises) so C and CUDA C++ agree on it. */
typedef struct KvGenParams {
        uint64_t seed;     /* per-trial seed (kv_trial_seed) */
        uint64_t count;    /* elements */
        uint32_t stream;   /* the buffer's index in the task */
        int32_t dtype;     /* KV_DT_* */
        int32_t dist;      /* KV_DIST_* */
        int32_t pad;
        double a, b;       /* normal: mean, std; uniform: low, high */
        int64_t ilow, ihigh; /* int: [ilow, ihigh) */
        double offset;     /* added after drawing */
        double scale;      /* multiplied after drawing, before the offset */
} KvGenParams;

/* Parameters of one tolerance comparison; passed by value. */
typedef struct KvCmpParams {
        uint64_t count;
        int32_t dtype;
        int32_t pad;
        double atol, rtol;
} KvCmpParams;

/* Device-side result of a tolerance comparison. max_* hold the bits of
 * non-negative doubles, whose order as integers is their numeric order. */
typedef struct KvCmpStats {
        unsigned long long mismatches;  /* value mismatches (finite) */
        unsigned long long nan_inf;     /* NaN/Inf disagreements */
        unsigned long long first;       /* lowest mismatching index, ~0 if none */
        unsigned long long max_abs_bits;
        unsigned long long max_rel_bits;
} KvCmpStats;

/* A device address range (kv_l2_normal()). */
typedef struct KvRange {
        uint64_t ptr;
        uint64_t bytes;
} KvRange;

/* Device-side result of a byte comparison (canaries, bitwise equality). */
typedef struct KvDiff {
        unsigned long long count;  /* differing bytes */
        unsigned long long first;  /* lowest differing byte offset, ~0 if none */
        unsigned long long last;   /* highest differing byte offset */
} KvDiff;

/*
 * Batches of helper work, passed by value (__grid_constant__) to one launch
 * each, block row y doing op[y]: the timing loop fills and compares dozens
 * of small buffers per pair, and one launch per buffer cost more than the
 * work (BENCHMARKS.md). Ops of one batch must not overlap (devmem.c keeps
 * that). Both structs stay under the 4 KiB of kernel parameters that every
 * driver takes.
 */
#define KV_BATCH_MAX 32

enum {
        KV_FILL_GENERATE = 0, /* gen.count elements from gen into dst */
        KV_FILL_BYTE = 1,     /* bytes bytes of value into dst */
        KV_FILL_CANARY = 2,   /* the canary of salt value into bytes [off, off + bytes) of dst */
};

typedef struct KvFillOp {
        uint64_t dst;
        uint64_t off;
        uint64_t bytes;
        int32_t kind;    /* KV_FILL_* */
        uint32_t value;  /* KV_FILL_BYTE: the byte; KV_FILL_CANARY: the salt */
        KvGenParams gen; /* KV_FILL_GENERATE */
} KvFillOp;

typedef struct KvFillBatch {
        uint32_t n;
        uint32_t pad;
        KvFillOp op[KV_BATCH_MAX];
} KvFillBatch;

typedef struct KvCmpOp {
        KvCmpParams p;
        uint64_t got, want;
        uint64_t stats; /* a KvCmpStats, initialised by kv_cmp_init_batch */
} KvCmpOp;

typedef struct KvCmpBatch {
        uint32_t n;
        uint32_t pad;
        KvCmpOp op[KV_BATCH_MAX];
} KvCmpBatch;

enum {
        KV_CHECK_CANARY = 0, /* bytes [off, off + bytes) of a against the canary of salt */
        KV_CHECK_BITS = 1,   /* bytes bytes of a against b */
};

typedef struct KvCheckOp {
        uint64_t a, b;
        uint64_t off;
        uint64_t bytes;
        uint64_t diff; /* a KvDiff, initialised by kv_diff_init_batch */
        int32_t kind;  /* KV_CHECK_* */
        uint32_t salt;
} KvCheckOp;

typedef struct KvCheckBatch {
        uint32_t n;
        uint32_t pad;
        KvCheckOp op[KV_BATCH_MAX];
} KvCheckBatch;

KV_HD uint64_t kv_mix64(uint64_t x)
{
        x += 0x9E3779B97F4A7C15ull;
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
        x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
        return x ^ (x >> 31);
}

/* The seed of one correctness trial of one shape set. */
KV_HD uint64_t kv_trial_seed(uint64_t job_seed, uint32_t shape, uint32_t trial)
{
        return kv_mix64(job_seed ^ kv_mix64(((uint64_t)shape << 32) | trial | (1ull << 63)));
}

KV_HD int kv_dtype_size(int dtype)
{
        switch (dtype) {
        case KV_DT_F32: return 4;
        case KV_DT_F16: return 2;
        case KV_DT_BF16: return 2;
        case KV_DT_F64: return 8;
        case KV_DT_I8: return 1;
        case KV_DT_U8: return 1;
        case KV_DT_I32: return 4;
        case KV_DT_I64: return 8;
        default: return 0;
        }
}

KV_HD int kv_dtype_is_float(int dtype)
{
        return dtype == KV_DT_F32 || dtype == KV_DT_F16 || dtype == KV_DT_BF16 || dtype == KV_DT_F64;
}

/* ---- Philox4x32-10 (Salmon et al., SC'11) ---- */

KV_HD void kv_philox(uint32_t ctr[4], uint32_t k0, uint32_t k1)
{
        for (int r = 0; r < 10; r++) {
                uint64_t p0 = (uint64_t)0xD2511F53u * ctr[0];
                uint64_t p1 = (uint64_t)0xCD9E8D57u * ctr[2];
                uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
                uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
                uint32_t n0 = hi1 ^ ctr[1] ^ k0;
                uint32_t n2 = hi0 ^ ctr[3] ^ k1;
                ctr[0] = n0;
                ctr[1] = lo1;
                ctr[2] = n2;
                ctr[3] = lo0;
                k0 += 0x9E3779B9u;
                k1 += 0xBB67AE85u;
        }
}

/* The four random words of element @i of buffer @stream. */
KV_HD void kv_random4(uint64_t seed, uint32_t stream, uint64_t i, uint32_t out[4])
{
        out[0] = (uint32_t)i;
        out[1] = (uint32_t)(i >> 32);
        out[2] = stream;
        out[3] = 0x4B56u; /* "KV" */
        kv_philox(out, (uint32_t)seed, (uint32_t)(seed >> 32));
}

/* [0, 1) with 53 random bits */
KV_HD double kv_u53(uint32_t a, uint32_t b)
{
        return (double)(((uint64_t)a << 21) | (b >> 11)) * (1.0 / 9007199254740992.0);
}

/* ---- float conversions (round to nearest even) ---- */

KV_HD uint32_t kv_f32_bits(float f)
{
        uint32_t x;
        memcpy(&x, &f, sizeof(x));
        return x;
}

KV_HD float kv_bits_f32(uint32_t x)
{
        float f;
        memcpy(&f, &x, sizeof(f));
        return f;
}

KV_HD uint16_t kv_f32_to_f16(float f)
{
        uint32_t x = kv_f32_bits(f);
        uint32_t sign = (x >> 16) & 0x8000u;
        uint32_t exp = (x >> 23) & 0xFFu;
        uint32_t mant = x & 0x7FFFFFu;
        int e;
        uint32_t h, rem;

        if (exp == 0xFFu) /* Inf, or NaN (kept quiet) */
                return (uint16_t)(sign | 0x7C00u | (mant ? 0x200u | (mant >> 13) : 0u));
        e = (int)exp - 127 + 15;
        if (e >= 0x1F)
                return (uint16_t)(sign | 0x7C00u);
        if (e <= 0) {
                int shift;
                uint32_t mid;
                if (e < -10)
                        return (uint16_t)sign;
                mant |= 0x800000u;
                shift = 14 - e;
                h = mant >> shift;
                rem = mant & ((1u << shift) - 1u);
                mid = 1u << (shift - 1);
                if (rem > mid || (rem == mid && (h & 1u)))
                        h++;
                return (uint16_t)(sign | h);
        }
        h = ((uint32_t)e << 10) | (mant >> 13);
        rem = mant & 0x1FFFu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
                h++; /* a carry into the exponent is right, up to Inf */
        return (uint16_t)(sign | h);
}

KV_HD float kv_f16_to_f32(uint16_t h)
{
        uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
        uint32_t exp = (h >> 10) & 0x1Fu;
        uint32_t mant = h & 0x3FFu;
        uint32_t x;

        if (exp == 0x1Fu) {
                x = sign | 0x7F800000u | (mant << 13);
        } else if (exp == 0) {
                if (mant == 0) {
                        x = sign;
                } else {
                        int e = -1;
                        do {
                                e++;
                                mant <<= 1;
                        } while (!(mant & 0x400u));
                        mant &= 0x3FFu;
                        x = sign | ((uint32_t)(127 - 15 - e) << 23) | (mant << 13);
                }
        } else {
                x = sign | ((exp + 112u) << 23) | (mant << 13);
        }
        return kv_bits_f32(x);
}

KV_HD uint16_t kv_f32_to_bf16(float f)
{
        uint32_t x = kv_f32_bits(f);

        if ((x & 0x7F800000u) == 0x7F800000u && (x & 0x7FFFFFu))
                return (uint16_t)((x >> 16) | 0x40u);
        x += 0x7FFFu + ((x >> 16) & 1u);
        return (uint16_t)(x >> 16);
}

KV_HD float kv_bf16_to_f32(uint16_t b)
{
        return kv_bits_f32((uint32_t)b << 16);
}

/* ---- generation ---- */

/* The value of element @i before conversion to the dtype. For the int
 * distribution on an integer dtype with scale 1, *ret_exact holds the exact
 * integer and the function returns 1. */
KV_HD int kv_gen_value(const KvGenParams *p, uint64_t i, double *ret_v, int64_t *ret_exact)
{
        uint32_t r[4];
        double v;

        kv_random4(p->seed, p->stream, i, r);
        switch (p->dist) {
        case KV_DIST_UNIFORM:
                v = p->a + (p->b - p->a) * kv_u53(r[0], r[1]);
                break;
        case KV_DIST_INT: {
                uint64_t range = (uint64_t)(p->ihigh - p->ilow);
                uint64_t w = ((uint64_t)r[0] << 32) | r[1];
                int64_t iv = p->ilow + (int64_t)(range ? w % range : 0);
                if (!kv_dtype_is_float(p->dtype) && p->scale == 1.0 && p->offset == floor(p->offset)) {
                        *ret_exact = iv + (int64_t)p->offset;
                        return 1;
                }
                v = (double)iv;
                break;
        }
        case KV_DIST_MIXED: {
                double mag = exp(2.302585092994045684 * (6.0 * kv_u53(r[0], r[1]) - 3.0));
                v = (r[2] & 1u) ? -mag : mag;
                break;
        }
        case KV_DIST_NORMAL:
        default: {
                double u1 = ((double)r[0] + 0.5) * (1.0 / 4294967296.0); /* (0, 1) */
                double u2 = (double)r[1] * (1.0 / 4294967296.0);
                double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586477 * u2);
                v = p->a + p->b * z;
                break;
        }
        }
        *ret_v = v * p->scale + p->offset;
        return 0;
}

KV_HD int64_t kv_clamp_int(int dtype, int64_t v)
{
        int64_t lo, hi;

        switch (dtype) {
        case KV_DT_I8: lo = -128; hi = 127; break;
        case KV_DT_U8: lo = 0; hi = 255; break;
        case KV_DT_I32: lo = -2147483647LL - 1; hi = 2147483647LL; break;
        default: return v;
        }
        return v < lo ? lo : v > hi ? hi : v;
}

KV_HD int64_t kv_double_to_int(double v)
{
        if (!(v == v))
                return 0;
        if (v >= 9.2e18)
                return INT64_MAX;
        if (v <= -9.2e18)
                return INT64_MIN;
        return (int64_t)floor(v + 0.5);
}

/* Write element @i of the buffer described by @p into @dst (the buffer's
 * first byte). */
KV_HD void kv_gen_store(const KvGenParams *p, uint64_t i, unsigned char *dst)
{
        double v = 0.0;
        int64_t iv = 0;
        int exact = kv_gen_value(p, i, &v, &iv);

        switch (p->dtype) {
        case KV_DT_F32: {
                float f = (float)v;
                memcpy(dst + i * 4, &f, 4);
                break;
        }
        case KV_DT_F64:
                memcpy(dst + i * 8, &v, 8);
                break;
        case KV_DT_F16: {
                uint16_t h = kv_f32_to_f16((float)v);
                memcpy(dst + i * 2, &h, 2);
                break;
        }
        case KV_DT_BF16: {
                uint16_t h = kv_f32_to_bf16((float)v);
                memcpy(dst + i * 2, &h, 2);
                break;
        }
        default: {
                int64_t x = kv_clamp_int(p->dtype, exact ? iv : kv_double_to_int(v));
                if (p->dtype == KV_DT_I8) {
                        int8_t y = (int8_t)x;
                        memcpy(dst + i, &y, 1);
                } else if (p->dtype == KV_DT_U8) {
                        uint8_t y = (uint8_t)x;
                        memcpy(dst + i, &y, 1);
                } else if (p->dtype == KV_DT_I32) {
                        int32_t y = (int32_t)x;
                        memcpy(dst + i * 4, &y, 4);
                } else {
                        memcpy(dst + i * 8, &x, 8);
                }
                break;
        }
        }
}

/* ---- loading for comparison ---- */

KV_HD double kv_load_f64(int dtype, const unsigned char *src, uint64_t i)
{
        switch (dtype) {
        case KV_DT_F32: {
                float f;
                memcpy(&f, src + i * 4, 4);
                return (double)f;
        }
        case KV_DT_F64: {
                double d;
                memcpy(&d, src + i * 8, 8);
                return d;
        }
        case KV_DT_F16: {
                uint16_t h;
                memcpy(&h, src + i * 2, 2);
                return (double)kv_f16_to_f32(h);
        }
        case KV_DT_BF16: {
                uint16_t h;
                memcpy(&h, src + i * 2, 2);
                return (double)kv_bf16_to_f32(h);
        }
        case KV_DT_I8: return (double)(int8_t)src[i];
        case KV_DT_U8: return (double)src[i];
        case KV_DT_I32: {
                int32_t x;
                memcpy(&x, src + i * 4, 4);
                return (double)x;
        }
        case KV_DT_I64: {
                int64_t x;
                memcpy(&x, src + i * 8, 8);
                return (double)x;
        }
        default: return 0.0;
        }
}

KV_HD int64_t kv_load_i64(int dtype, const unsigned char *src, uint64_t i)
{
        switch (dtype) {
        case KV_DT_I8: return (int8_t)src[i];
        case KV_DT_U8: return src[i];
        case KV_DT_I32: {
                int32_t x;
                memcpy(&x, src + i * 4, 4);
                return x;
        }
        case KV_DT_I64: {
                int64_t x;
                memcpy(&x, src + i * 8, 8);
                return x;
        }
        default: return 0;
        }
}

enum {
        KV_CMP_MATCH = 0,
        KV_CMP_VALUE = 1,   /* finite values too far apart */
        KV_CMP_NAN_INF = 2, /* NaN or Inf on one side only, or different Infs */
};

/* Compare element @i of @got against @want. *ret_abs and *ret_rel get the
 * absolute and relative error for finite pairs (0 otherwise; the relative
 * error is 0 where want is 0). */
KV_HD int kv_compare_one(const KvCmpParams *p, const unsigned char *got, const unsigned char *want,
                         uint64_t i, double *ret_abs, double *ret_rel)
{
        double g, w, diff;

        *ret_abs = 0.0;
        *ret_rel = 0.0;
        if (!kv_dtype_is_float(p->dtype)) {
                int64_t gi = kv_load_i64(p->dtype, got, i);
                int64_t wi = kv_load_i64(p->dtype, want, i);
                if (gi == wi)
                        return KV_CMP_MATCH;
                diff = fabs((double)gi - (double)wi);
                *ret_abs = diff;
                *ret_rel = wi != 0 ? diff / fabs((double)wi) : 0.0;
                if (p->atol == 0.0 && p->rtol == 0.0)
                        return KV_CMP_VALUE;
                return diff <= p->atol + p->rtol * fabs((double)wi) ? KV_CMP_MATCH : KV_CMP_VALUE;
        }
        g = kv_load_f64(p->dtype, got, i);
        w = kv_load_f64(p->dtype, want, i);
        if (isnan(g) || isnan(w))
                return (isnan(g) && isnan(w)) ? KV_CMP_MATCH : KV_CMP_NAN_INF;
        if (isinf(g) || isinf(w))
                return g == w ? KV_CMP_MATCH : KV_CMP_NAN_INF;
        diff = fabs(g - w);
        *ret_abs = diff;
        *ret_rel = w != 0.0 ? diff / fabs(w) : 0.0;
        return diff <= p->atol + p->rtol * fabs(w) ? KV_CMP_MATCH : KV_CMP_VALUE;
}

/* ---- guard bands ---- */

/* The canary byte at byte offset @off of an allocation (both guards use the
 * pattern of their own offsets), salted per job so no kernel can know it. */
KV_HD unsigned char kv_canary_byte(uint32_t salt, uint64_t off)
{
        return (unsigned char)(kv_mix64(off ^ ((uint64_t)salt << 32)) >> 56);
}
