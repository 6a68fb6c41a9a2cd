/*
 * gpu_job - see gpu_job.h. The parser walks the JOB once, fills fixed-size
 * structs, and checks every number against common/limits.h and against
 * what the GPU can take (grid and block as unsigned, shared memory in int
 * range, buffer sizes without overflow). On failure @err says which field.
 */
#include "worker/gpu/gpu_job.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPU_JOB_E_INVALID 1

static const char *const dtype_names[KV_DT_COUNT] = { "f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64" };
static const char *const scalar_names[] = { "i32", "u32", "i64", "u64", "f32", "f64", NULL };

const char *gpu_job_dtype_name(int dtype)
{
        return dtype >= 0 && dtype < KV_DT_COUNT ? dtype_names[dtype] : "?";
}

/** gpu_job_dtype_parse() - KV_DT_* for a dtype name, or -1. */
int gpu_job_dtype_parse(const char *name)
{
        for (int i = 0; i < KV_DT_COUNT; i++)
                if (name && strcmp(name, dtype_names[i]) == 0)
                        return i;
        return -1;
}

typedef struct Ctx {
        char *err;
        size_t err_len;
        char path[256];
} Ctx;

__attribute__((format(printf, 2, 3))) static int fail(Ctx *c, const char *fmt, ...)
{
        char msg[384];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        snprintf(c->err, c->err_len, "%s: %s", c->path[0] ? c->path : "job", msg);
        return GPU_JOB_E_INVALID;
}

static int get_int(Ctx *c, json_t *obj, const char *key, bool required, int64_t min, int64_t max, int64_t *ret)
{
        json_t *v = json_object_get(obj, key);

        if (!v) {
                if (required)
                        return fail(c, "'%s' is missing", key);
                return 0;
        }
        if (!json_is_integer(v))
                return fail(c, "'%s' must be an integer", key);
        if (json_integer_value(v) < min || json_integer_value(v) > max)
                return fail(c, "'%s' is %" PRId64 ", outside [%" PRId64 ", %" PRId64 "]", key,
                            (int64_t)json_integer_value(v), min, max);
        *ret = json_integer_value(v);
        return 0;
}

static int get_num(Ctx *c, json_t *obj, const char *key, bool required, double *ret)
{
        json_t *v = json_object_get(obj, key);

        if (!v) {
                if (required)
                        return fail(c, "'%s' is missing", key);
                return 0;
        }
        if (!json_is_number(v) || !isfinite(json_number_value(v)))
                return fail(c, "'%s' must be a finite number", key);
        *ret = json_number_value(v);
        return 0;
}

static int get_bool(Ctx *c, json_t *obj, const char *key, bool *ret)
{
        json_t *v = json_object_get(obj, key);

        if (!v)
                return 0;
        if (!json_is_boolean(v))
                return fail(c, "'%s' must be a boolean", key);
        *ret = json_is_true(v);
        return 0;
}

static int get_name(Ctx *c, json_t *obj, const char *key, char *out)
{
        json_t *v = json_object_get(obj, key);
        const char *s;

        if (!json_is_string(v))
                return fail(c, "'%s' must be a string", key);
        s = json_string_value(v);
        if (json_string_length(v) == 0 || json_string_length(v) >= LIMIT_NAME_BYTES || strlen(s) != json_string_length(v))
                return fail(c, "'%s' must be 1..%d bytes without NUL", key, LIMIT_NAME_BYTES - 1);
        memcpy(out, s, json_string_length(v) + 1);
        return 0;
}

static int parse_init(Ctx *c, json_t *init, JobBuffer *b)
{
        static const char *const dists[] = { "normal", "uniform", "int", "mixed" };
        KvGenParams *p = &b->init;
        const char *d;
        int r;

        memset(p, 0, sizeof(*p));
        p->dtype = b->dtype;
        p->count = b->count;
        p->scale = 1.0;
        p->dist = -1;
        if (!json_is_object(init))
                return fail(c, "'init' must be an object");
        d = json_string_value(json_object_get(init, "dist"));
        for (int i = 0; i < 4; i++)
                if (d && strcmp(d, dists[i]) == 0)
                        p->dist = i;
        if (p->dist < 0)
                return fail(c, "'init.dist' must be normal, uniform, int or mixed");
        switch (p->dist) {
        case KV_DIST_NORMAL:
                p->a = 0;
                p->b = 1;
                if ((r = get_num(c, init, "mean", false, &p->a)) || (r = get_num(c, init, "std", false, &p->b)))
                        return r;
                break;
        case KV_DIST_UNIFORM:
                p->a = -1;
                p->b = 1;
                if ((r = get_num(c, init, "low", false, &p->a)) || (r = get_num(c, init, "high", false, &p->b)))
                        return r;
                if (!(p->a < p->b))
                        return fail(c, "'init': uniform needs low < high");
                break;
        case KV_DIST_INT: {
                int64_t diff;
                if ((r = get_int(c, init, "low", true, INT64_MIN, INT64_MAX, &p->ilow)) ||
                    (r = get_int(c, init, "high", true, INT64_MIN, INT64_MAX, &p->ihigh)))
                        return r;
                if (p->ihigh <= p->ilow || __builtin_sub_overflow(p->ihigh, p->ilow, &diff))
                        return fail(c, "'init': int needs low < high and a range that fits int64");
                break;
        }
        default:
                break;
        }
        if ((r = get_num(c, init, "offset", false, &p->offset)) || (r = get_num(c, init, "scale", false, &p->scale)))
                return r;
        return 0;
}

static double default_tol(int dtype)
{
        if (!kv_dtype_is_float(dtype))
                return 0;
        return kv_dtype_size(dtype) == 2 ? 1e-2 : 1e-4;
}

/* A task buffer (@scratch false) or a scratch buffer. */
static int parse_buffer(Ctx *c, json_t *o, bool scratch, JobBuffer *b)
{
        static const char *const roles[] = { "in", "out", "inout" };
        json_t *init;
        int64_t count = 0;
        int r;

        memset(b, 0, sizeof(*b));
        if (!json_is_object(o))
                return fail(c, "a buffer must be an object");
        if ((r = get_name(c, o, "name", b->name)))
                return r;
        b->dtype = gpu_job_dtype_parse(json_string_value(json_object_get(o, "dtype")));
        if (b->dtype < 0)
                return fail(c, "buffer '%s': unknown dtype", b->name);
        if ((r = get_int(c, o, "count", true, 0, INT64_MAX / 8, &count)))
                return r;
        b->count = (uint64_t)count;
        b->bytes = b->count * (uint64_t)kv_dtype_size(b->dtype);
        if (scratch) {
                b->role = JOB_ROLE_SCRATCH;
                return 0;
        }
        b->role = (JobRole)-1;
        for (int i = 0; i < 3; i++)
                if (json_is_string(json_object_get(o, "role")) &&
                    strcmp(json_string_value(json_object_get(o, "role")), roles[i]) == 0)
                        b->role = (JobRole)i;
        if ((int)b->role < 0)
                return fail(c, "buffer '%s': role must be in, out or inout", b->name);
        init = json_object_get(o, "init");
        if (b->role == JOB_ROLE_IN || b->role == JOB_ROLE_INOUT) {
                if (!init)
                        return fail(c, "buffer '%s': an input needs 'init'", b->name);
                if ((r = parse_init(c, init, b)))
                        return r;
                b->has_init = true;
        }
        if (b->role == JOB_ROLE_OUT || b->role == JOB_ROLE_INOUT) {
                b->atol = b->rtol = default_tol(b->dtype);
                if ((r = get_num(c, o, "atol", false, &b->atol)) || (r = get_num(c, o, "rtol", false, &b->rtol)))
                        return r;
                if (b->atol < 0 || b->rtol < 0)
                        return fail(c, "buffer '%s': negative tolerance", b->name);
        }
        return 0;
}

static int find_buffer(const JobShape *s, const JobSide *side, const char *name)
{
        for (int i = 0; i < s->n_buffers; i++)
                if (strcmp(s->buffers[i].name, name) == 0)
                        return i;
        for (int i = 0; i < side->n_scratch; i++)
                if (strcmp(side->scratch[i].name, name) == 0)
                        return s->n_buffers + i;
        return -1;
}

/** gpu_job_side_buffer() - buffer @i of a side's buffer space (task buffers, then scratch); borrowed. */
const JobBuffer *gpu_job_side_buffer(const JobShape *s, const JobSide *side, int i)
{
        return i < s->n_buffers ? &s->buffers[i] : &side->scratch[i - s->n_buffers];
}

static int parse_scalar(Ctx *c, json_t *o, JobArg *a)
{
        const char *t = json_string_value(json_object_get(o, "type"));
        json_t *v = json_object_get(o, "value");

        a->kind = JOB_ARG_SCALAR;
        a->type = -1;
        for (int i = 0; scalar_names[i]; i++)
                if (t && strcmp(t, scalar_names[i]) == 0)
                        a->type = i;
        if (a->type < 0)
                return fail(c, "scalar type must be one of i32 u32 i64 u64 f32 f64");
        if (a->type <= JOB_SCALAR_U64) {
                json_int_t x;
                if (!json_is_integer(v))
                        return fail(c, "an integer scalar needs an integer value");
                x = json_integer_value(v);
                switch (a->type) {
                case JOB_SCALAR_I32: {
                        int32_t y = (int32_t)x;
                        if (x < INT32_MIN || x > INT32_MAX)
                                return fail(c, "value %" PRId64 " does not fit i32", (int64_t)x);
                        memcpy(a->value, &y, 4);
                        a->size = 4;
                        break;
                }
                case JOB_SCALAR_U32: {
                        uint32_t y = (uint32_t)x;
                        if (x < 0 || x > (json_int_t)UINT32_MAX)
                                return fail(c, "value %" PRId64 " does not fit u32", (int64_t)x);
                        memcpy(a->value, &y, 4);
                        a->size = 4;
                        break;
                }
                case JOB_SCALAR_I64: {
                        int64_t y = (int64_t)x;
                        memcpy(a->value, &y, 8);
                        a->size = 8;
                        break;
                }
                default: {
                        uint64_t y = (uint64_t)x;
                        if (x < 0)
                                return fail(c, "value %" PRId64 " does not fit u64", (int64_t)x);
                        memcpy(a->value, &y, 8);
                        a->size = 8;
                        break;
                }
                }
        } else {
                double d;
                if (!json_is_number(v) || !isfinite(json_number_value(v)))
                        return fail(c, "a float scalar needs a finite number");
                d = json_number_value(v);
                if (a->type == JOB_SCALAR_F32) {
                        float f = (float)d;
                        memcpy(a->value, &f, 4);
                        a->size = 4;
                } else {
                        memcpy(a->value, &d, 8);
                        a->size = 8;
                }
        }
        return 0;
}

static int parse_dims(Ctx *c, json_t *o, const char *key, unsigned out[3])
{
        json_t *a = json_object_get(o, key);
        size_t n;

        if (!json_is_array(a) || (n = json_array_size(a)) < 1 || n > 3)
                return fail(c, "'%s' must be an array of 1 to 3 integers", key);
        for (size_t i = 0; i < 3; i++) {
                json_t *v = json_array_get(a, i);
                if (i >= n) {
                        out[i] = 1;
                        continue;
                }
                if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > (json_int_t)UINT32_MAX)
                        return fail(c, "'%s[%zu]' must be an integer in [1, 2^32)", key, i);
                out[i] = (unsigned)json_integer_value(v);
        }
        return 0;
}

static int gemm_buffer(Ctx *c, const JobShape *s, const JobSide *side, json_t *o, const char *key, int *ret)
{
        const char *name = json_string_value(json_object_get(o, key));
        int i = name ? find_buffer(s, side, name) : -1;

        if (i < 0)
                return fail(c, "gemm '%s' names no buffer", key);
        *ret = i;
        return 0;
}

static int parse_step(Ctx *c, const JobShape *s, const JobSide *side, json_t *o, bool reference, JobStep *st)
{
        json_t *args;
        int64_t shared = 0;
        int r;

        memset(st, 0, sizeof(*st));
        if (!json_is_object(o))
                return fail(c, "a step must be an object");
        if (json_object_get(o, "library")) {
                const JobBuffer *ba, *bb, *bc;
                uint64_t need_a, need_b, need_c;
                if (!reference)
                        return fail(c, "library steps are for references only");
                if (!json_is_string(json_object_get(o, "library")) ||
                    strcmp(json_string_value(json_object_get(o, "library")), "gemm") != 0)
                        return fail(c, "the only library step is \"gemm\"");
                st->kind = JOB_STEP_GEMM;
                snprintf(st->kernel, sizeof(st->kernel), "cublas_gemm");
                st->batch = 1;
                st->alpha = 1.0;
                st->beta = 0.0;
                if ((r = gemm_buffer(c, s, side, o, "a", &st->a)) || (r = gemm_buffer(c, s, side, o, "b", &st->b)) ||
                    (r = gemm_buffer(c, s, side, o, "c", &st->c)) ||
                    (r = get_int(c, o, "m", true, 1, INT32_MAX, &st->m)) ||
                    (r = get_int(c, o, "n", true, 1, INT32_MAX, &st->n)) ||
                    (r = get_int(c, o, "k", true, 1, INT32_MAX, &st->k)) ||
                    (r = get_int(c, o, "batch", false, 1, INT32_MAX, &st->batch)) ||
                    (r = get_bool(c, o, "trans_a", &st->trans_a)) || (r = get_bool(c, o, "trans_b", &st->trans_b)) ||
                    (r = get_num(c, o, "alpha", false, &st->alpha)) || (r = get_num(c, o, "beta", false, &st->beta)))
                        return r;
                ba = gpu_job_side_buffer(s, side, st->a);
                bb = gpu_job_side_buffer(s, side, st->b);
                bc = gpu_job_side_buffer(s, side, st->c);
                if (ba->dtype != bb->dtype || ba->dtype != bc->dtype ||
                    (ba->dtype != KV_DT_F32 && ba->dtype != KV_DT_F16 && ba->dtype != KV_DT_BF16))
                        return fail(c, "gemm needs a, b and c of one dtype among f32, f16, bf16");
                /* m, n, k, batch <= 2^31 each: the products below fit in uint64 */
                need_a = (uint64_t)st->batch * (uint64_t)st->m * (uint64_t)st->k;
                need_b = (uint64_t)st->batch * (uint64_t)st->k * (uint64_t)st->n;
                need_c = (uint64_t)st->batch * (uint64_t)st->m * (uint64_t)st->n;
                if ((uint64_t)st->batch > 1 && (need_a / (uint64_t)st->batch != (uint64_t)st->m * (uint64_t)st->k ||
                                                need_b / (uint64_t)st->batch != (uint64_t)st->k * (uint64_t)st->n ||
                                                need_c / (uint64_t)st->batch != (uint64_t)st->m * (uint64_t)st->n))
                        return fail(c, "gemm size overflows");
                if (need_a > ba->count || need_b > bb->count || need_c > bc->count)
                        return fail(c, "gemm of %" PRId64 "x%" PRId64 "x%" PRId64 " (batch %" PRId64
                                       ") does not fit its buffers",
                                    st->m, st->n, st->k, st->batch);
                return 0;
        }
        st->kind = JOB_STEP_LAUNCH;
        if ((r = get_name(c, o, "kernel", st->kernel)) || (r = parse_dims(c, o, "grid", st->grid)) ||
            (r = parse_dims(c, o, "block", st->block)) || (r = get_int(c, o, "shared", false, 0, INT32_MAX, &shared)))
                return r;
        st->shared = (unsigned)shared;
        args = json_object_get(o, "args");
        if (!json_is_array(args) || json_array_size(args) > LIMIT_ARGS_MAX)
                return fail(c, "'args' must be an array of at most %d", LIMIT_ARGS_MAX);
        st->n_args = (int)json_array_size(args);
        st->args = calloc(st->n_args ? (size_t)st->n_args : 1, sizeof(*st->args));
        if (!st->args)
                return -ENOMEM;
        for (int i = 0; i < st->n_args; i++) {
                json_t *a = json_array_get(args, (size_t)i);
                JobArg *ja = &st->args[i];
                if (json_is_object(a) && json_object_get(a, "buffer")) {
                        const char *name = json_string_value(json_object_get(a, "buffer"));
                        ja->kind = JOB_ARG_BUFFER;
                        ja->buffer = name ? find_buffer(s, side, name) : -1;
                        ja->size = 8;
                        if (ja->buffer < 0)
                                return fail(c, "argument %d names no buffer", i);
                } else if (json_is_object(a)) {
                        if ((r = parse_scalar(c, a, ja)))
                                return r;
                } else {
                        return fail(c, "argument %d must be {\"buffer\": ...} or {\"type\": ..., \"value\": ...}", i);
                }
        }
        return 0;
}

static int parse_side(Ctx *c, JobShape *s, json_t *o, bool reference, JobSide *side)
{
        json_t *scratch, *plan;
        uint64_t total = 0;
        size_t base_len = strlen(c->path);
        int r;

        if (!json_is_object(o))
                return fail(c, "must be an object");
        scratch = json_object_get(o, "scratch");
        plan = json_object_get(o, "plan");
        if (scratch && (!json_is_array(scratch) || json_array_size(scratch) > LIMIT_SCRATCH_BUFFERS_MAX))
                return fail(c, "'scratch' must be an array of at most %d", LIMIT_SCRATCH_BUFFERS_MAX);
        if (!json_is_array(plan) || json_array_size(plan) < 1 || json_array_size(plan) > LIMIT_LAUNCHES_MAX)
                return fail(c, "'plan' must be an array of 1 to %d steps", LIMIT_LAUNCHES_MAX);
        side->n_scratch = scratch ? (int)json_array_size(scratch) : 0;
        side->scratch = calloc(side->n_scratch ? (size_t)side->n_scratch : 1, sizeof(*side->scratch));
        side->n_steps = (int)json_array_size(plan);
        side->steps = calloc((size_t)side->n_steps, sizeof(*side->steps));
        if (!side->scratch || !side->steps) {
                side->n_steps = 0;
                return -ENOMEM;
        }
        for (int i = 0; i < side->n_scratch; i++) {
                snprintf(c->path + base_len, sizeof(c->path) - base_len, "/scratch/%d", i);
                if ((r = parse_buffer(c, json_array_get(scratch, (size_t)i), true, &side->scratch[i])))
                        return r;
                for (int j = 0; j < s->n_buffers; j++)
                        if (strcmp(s->buffers[j].name, side->scratch[i].name) == 0)
                                return fail(c, "scratch '%s' has a task buffer's name", side->scratch[i].name);
                for (int j = 0; j < i; j++)
                        if (strcmp(side->scratch[j].name, side->scratch[i].name) == 0)
                                return fail(c, "scratch '%s' appears twice", side->scratch[i].name);
                total += side->scratch[i].bytes;
                if (total > LIMIT_SCRATCH_BYTES_MAX)
                        return fail(c, "scratch totals more than %llu bytes",
                                    (unsigned long long)LIMIT_SCRATCH_BYTES_MAX);
        }
        for (int i = 0; i < side->n_steps; i++) {
                snprintf(c->path + base_len, sizeof(c->path) - base_len, "/plan/%d", i);
                if ((r = parse_step(c, s, side, json_array_get(plan, (size_t)i), reference, &side->steps[i])))
                        return r;
        }
        c->path[base_len] = '\0';
        return 0;
}

static int parse_shape(Ctx *c, json_t *o, JobShape *s)
{
        json_t *bufs;
        uint64_t total = 0;
        size_t base_len = strlen(c->path);
        int64_t iv;
        int r;

        if (!json_is_object(o))
                return fail(c, "a shape must be an object");
        if ((r = get_name(c, o, "name", s->name)))
                return r;
        s->params = json_object_get(o, "params");
        if (s->params && !json_is_object(s->params))
                return fail(c, "'params' must be an object");
        s->params = s->params ? json_incref(s->params) : json_object();
        bufs = json_object_get(o, "buffers");
        if (!json_is_array(bufs) || json_array_size(bufs) < 1 || json_array_size(bufs) > LIMIT_TASK_BUFFERS_MAX)
                return fail(c, "'buffers' must be an array of 1 to %d", LIMIT_TASK_BUFFERS_MAX);
        s->n_buffers = (int)json_array_size(bufs);
        s->buffers = calloc((size_t)s->n_buffers, sizeof(*s->buffers));
        if (!s->buffers)
                return -ENOMEM;
        for (int i = 0; i < s->n_buffers; i++) {
                snprintf(c->path + base_len, sizeof(c->path) - base_len, "/buffers/%d", i);
                if ((r = parse_buffer(c, json_array_get(bufs, (size_t)i), false, &s->buffers[i])))
                        return r;
                for (int j = 0; j < i; j++)
                        if (strcmp(s->buffers[j].name, s->buffers[i].name) == 0)
                                return fail(c, "buffer '%s' appears twice", s->buffers[i].name);
                total += s->buffers[i].bytes;
                if (total > LIMIT_TASK_BYTES_MAX)
                        return fail(c, "task buffers total more than %llu bytes",
                                    (unsigned long long)LIMIT_TASK_BYTES_MAX);
        }
        c->path[base_len] = '\0';
        iv = 0;
        if (json_object_get(o, "flops") && !json_is_null(json_object_get(o, "flops"))) {
                if ((r = get_int(c, o, "flops", true, 0, INT64_MAX, &iv)))
                        return r;
                s->has_flops = true;
                s->flops = (double)iv;
        }
        if (json_object_get(o, "bytes") && !json_is_null(json_object_get(o, "bytes"))) {
                if ((r = get_int(c, o, "bytes", true, 0, INT64_MAX, &iv)))
                        return r;
                s->has_bytes = true;
                s->bytes = (double)iv;
        }
        snprintf(c->path + base_len, sizeof(c->path) - base_len, "/candidate");
        if ((r = parse_side(c, s, json_object_get(o, "candidate"), false, &s->cand)))
                return r;
        snprintf(c->path + base_len, sizeof(c->path) - base_len, "/reference");
        if ((r = parse_side(c, s, json_object_get(o, "reference"), true, &s->ref)))
                return r;
        c->path[base_len] = '\0';
        return 0;
}

static int parse_seed(Ctx *c, json_t *doc, GpuJob *job)
{
        json_t *v = json_object_get(doc, "seed");
        const char *s = json_string_value(v);
        char *end = NULL;

        if (json_is_integer(v) && json_integer_value(v) >= 0) {
                job->seed = (uint64_t)json_integer_value(v);
        } else if (s && strlen(s) >= 1 && strlen(s) <= 16 && s[0] != '-' && s[0] != '+') {
                errno = 0;
                job->seed = strtoull(s, &end, 16);
                if (errno || *end)
                        return fail(c, "'seed' must be up to 16 hex digits");
        } else {
                return fail(c, "'seed' must be up to 16 hex digits");
        }
        snprintf(job->seed_text, sizeof(job->seed_text), "%016" PRIx64, job->seed);
        return 0;
}

/**
 * gpu_job_parse() - check and convert a resolved GPU JOB
 * @doc: the JOB JSON; borrowed (the shapes' params are referenced)
 * @blob_len: the length of the frame's blob, for the CUBIN ranges
 * @ret_job: on success, a new GpuJob (gpu_job_free())
 * @err, @err_len: on GPU_JOB_E_INVALID (1), what is wrong and where
 * Return: 0, 1 (invalid; see @err), -ENOMEM.
 */
int gpu_job_parse(json_t *doc, size_t blob_len, GpuJob **ret_job, char *err, size_t err_len)
{
        Ctx c = { .err = err, .err_len = err_len };
        GpuJob *job;
        json_t *timing, *cubins, *shapes;
        int64_t v;
        int r;

        if (err_len)
                err[0] = '\0';
        job = calloc(1, sizeof(*job));
        if (!job)
                return -ENOMEM;
        job->budget_ms = 2000;
        job->target_precision = 0.01;
        job->min_trials = 6;
        job->max_trials = 1000;
        job->warmup = 3;
        job->deadline_ms = 120000;
        job->launch_timeout_ms = 10000;
        job->launch_floor_ms = LIMIT_LAUNCH_FLOOR_MS_DEFAULT;
        job->fault_grace_ms = GPU_JOB_FAULT_GRACE_MS;
        job->trials = 3;
        if (!json_is_object(doc)) {
                r = fail(&c, "the job must be an object");
                goto out;
        }
        if ((r = get_int(&c, doc, "id", true, INT64_MIN, INT64_MAX, &job->id)) || (r = parse_seed(&c, doc, job)))
                goto out;
        if (json_object_get(doc, "mode") && (!json_is_string(json_object_get(doc, "mode")) ||
                                             strcmp(json_string_value(json_object_get(doc, "mode")), "full") != 0)) {
                r = fail(&c, "'mode' must be \"full\"");
                goto out;
        }
        timing = json_object_get(doc, "timing");
        if (timing) {
                if (!json_is_object(timing)) {
                        r = fail(&c, "'timing' must be an object");
                        goto out;
                }
                snprintf(c.path, sizeof(c.path), "/timing");
                json_t *which = json_object_get(timing, "shapes");
                if (which && (!json_is_string(which) || (strcmp(json_string_value(which), "first") != 0 &&
                                                         strcmp(json_string_value(which), "all") != 0))) {
                        r = fail(&c, "'shapes' must be \"first\" or \"all\"");
                        goto out;
                }
                job->time_first_only = which && strcmp(json_string_value(which), "first") == 0;
                if ((r = get_num(&c, timing, "budget_ms", false, &job->budget_ms)) ||
                    (r = get_num(&c, timing, "target_precision", false, &job->target_precision)) ||
                    (r = get_int(&c, timing, "min_trials", false, 1, LIMIT_TIMING_TRIALS_MAX, &job->min_trials)) ||
                    (r = get_int(&c, timing, "max_trials", false, 1, LIMIT_TIMING_TRIALS_MAX, &job->max_trials)) ||
                    (r = get_int(&c, timing, "warmup", false, 0, 1000, &job->warmup)))
                        goto out;
                if (job->budget_ms < 0 || job->budget_ms > LIMIT_TIMING_BUDGET_MS_MAX || job->target_precision <= 0 ||
                    job->target_precision > 1) {
                        r = fail(&c, "budget_ms must be in [0, %d] and target_precision in (0, 1]",
                                 LIMIT_TIMING_BUDGET_MS_MAX);
                        goto out;
                }
                if (job->min_trials > job->max_trials)
                        job->min_trials = job->max_trials;
                c.path[0] = '\0';
        }
        if ((r = get_int(&c, doc, "deadline_ms", false, 1, 3600000, &job->deadline_ms)))
                goto out;
        v = job->trials;
        if ((r = get_int(&c, doc, "correctness_trials", false, 1, LIMIT_CORRECTNESS_TRIALS_MAX, &v)))
                goto out;
        job->trials = (int)v;
        if ((r = get_int(&c, doc, "launch_timeout_ms", false, 1, 3600000, &job->launch_timeout_ms)) ||
            (r = get_int(&c, doc, "launch_floor_ms", false, 1, 3600000, &job->launch_floor_ms)) ||
            (r = get_int(&c, doc, "fault_grace_ms", false, 0, 60000, &job->fault_grace_ms)) ||
            (r = get_num(&c, doc, "launch_factor", false, &job->launch_factor)) ||
            (r = get_bool(&c, doc, "dump", &job->dump)))
                goto out;
        if (!(job->launch_factor >= 0 && job->launch_factor <= 1e6)) {
                snprintf(c.path, sizeof(c.path), "/launch_factor");
                r = fail(&c, "must be in [0, 1e6]");
                goto out;
        }
        cubins = json_object_get(doc, "cubins");
        {
                /* A reference made only of library steps may come without a CUBIN
                 * (absent, or size 0); the candidate always has one. */
                json_t *cand = json_object_get(cubins, "candidate"), *ref = json_object_get(cubins, "reference");
                json_t *fenced = json_object_get(cubins, "candidate_fenced");
                int64_t co = 0, cs = 0, ro = 0, rs = 0, fo = 0, fs = 0;
                snprintf(c.path, sizeof(c.path), "/cubins");
                if (!json_is_object(cand) || (ref && !json_is_object(ref)) || (fenced && !json_is_object(fenced))) {
                        r = fail(&c, "needs a 'candidate' object (and 'reference' and 'candidate_fenced', if any, "
                                     "objects)");
                        goto out;
                }
                if ((r = get_int(&c, cand, "offset", true, 0, (int64_t)blob_len, &co)) ||
                    (r = get_int(&c, cand, "size", true, 1, (int64_t)blob_len, &cs)) ||
                    (ref && (r = get_int(&c, ref, "offset", true, 0, (int64_t)blob_len, &ro))) ||
                    (ref && (r = get_int(&c, ref, "size", true, 0, (int64_t)blob_len, &rs))) ||
                    (fenced && (r = get_int(&c, fenced, "offset", true, 0, (int64_t)blob_len, &fo))) ||
                    (fenced && (r = get_int(&c, fenced, "size", true, 1, (int64_t)blob_len, &fs))))
                        goto out;
                if ((uint64_t)co + (uint64_t)cs > blob_len || (uint64_t)ro + (uint64_t)rs > blob_len ||
                    (uint64_t)fo + (uint64_t)fs > blob_len) {
                        r = fail(&c, "a CUBIN range lies outside the blob of %zu bytes", blob_len);
                        goto out;
                }
                job->cand_off = (size_t)co;
                job->cand_size = (size_t)cs;
                job->ref_off = (size_t)ro;
                job->ref_size = (size_t)rs;
                job->fenced_off = (size_t)fo;
                job->fenced_size = (size_t)fs;
                c.path[0] = '\0';
        }
        shapes = json_object_get(doc, "shapes");
        if (!json_is_array(shapes) || json_array_size(shapes) < 1 || json_array_size(shapes) > LIMIT_TASK_SHAPES_MAX) {
                r = fail(&c, "'shapes' must be an array of 1 to %d", LIMIT_TASK_SHAPES_MAX);
                goto out;
        }
        job->n_shapes = (int)json_array_size(shapes);
        job->shapes = calloc((size_t)job->n_shapes, sizeof(*job->shapes));
        if (!job->shapes) {
                r = -ENOMEM;
                goto out;
        }
        for (int i = 0; i < job->n_shapes; i++) {
                snprintf(c.path, sizeof(c.path), "/shapes/%d", i);
                if ((r = parse_shape(&c, json_array_get(shapes, (size_t)i), &job->shapes[i])))
                        goto out;
        }
        r = 0;
out:
        if (r) {
                gpu_job_free(job);
                return r;
        }
        *ret_job = job;
        return 0;
}

static void side_free(JobSide *side)
{
        for (int i = 0; i < side->n_steps; i++)
                free(side->steps[i].args);
        free(side->steps);
        free(side->scratch);
}

/** gpu_job_free() - free a job; accepts NULL. */
void gpu_job_free(GpuJob *job)
{
        if (!job)
                return;
        for (int i = 0; i < job->n_shapes; i++) {
                json_decref(job->shapes[i].params);
                free(job->shapes[i].buffers);
                side_free(&job->shapes[i].cand);
                side_free(&job->shapes[i].ref);
        }
        free(job->shapes);
        free(job);
}
