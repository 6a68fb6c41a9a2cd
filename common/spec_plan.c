/*
 * spec_plan - the validators that tasks and submissions share: the dtype
 * table, per-shape evaluation of expressions, scratch lists, launch plans
 * (kernel launches and, in references, library calls), compile options and
 * name expressions. Every expression is checked against the task's params
 * and evaluated for every shape set, so a plan that validates here resolves
 * for every shape set later (spec_resolve()).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/expr.h"
#include "common/jsonutil.h"
#include "common/options.h"
#include "common/spec_internal.h"

const DType spec_dtypes[] = {
        { "f32", 4, false, 0, 0 },
        { "f16", 2, false, 0, 0 },
        { "bf16", 2, false, 0, 0 },
        { "f64", 8, false, 0, 0 },
        { "i8", 1, true, -128, 127 },
        { "u8", 1, true, 0, 255 },
        { "i32", 4, true, INT32_MIN, INT32_MAX },
        { "i64", 8, true, INT64_MIN, INT64_MAX },
        { NULL, 0, false, 0, 0 },
};
const char *const spec_dtype_names[] = { "f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64",
                                         NULL };
const char *const spec_role_names[] = { "in", "out", "inout", NULL };
const char *const spec_dist_names[] = { "normal", "uniform", "int", "mixed", NULL };
const char *const spec_scalar_types[] = { "i32", "u32", "i64", "u64", "f32", "f64", NULL };

/**
 * spec_dtype_find() - look up a buffer dtype by name
 * Return: the static entry, or NULL.
 */
const DType *spec_dtype_find(const char *name)
{
        for (const DType *d = spec_dtypes; d->name; d++)
                if (strcmp(d->name, name) == 0)
                        return d;
        return NULL;
}

/**
 * spec_scalar_size() - bytes of a scalar argument type
 * Return: 4 or 8, or 0 for an unknown type.
 */
int spec_scalar_size(const char *type)
{
        if (!strcmp(type, "i32") || !strcmp(type, "u32") || !strcmp(type, "f32"))
                return 4;
        if (!strcmp(type, "i64") || !strcmp(type, "u64") || !strcmp(type, "f64"))
                return 8;
        return 0;
}

/**
 * spec_tolerance_default() - default atol and rtol for an output dtype
 * Return: 1e-4 for f32/f64, 1e-2 for f16/bf16, 0 for integers.
 */
double spec_tolerance_default(const DType *dtype)
{
        if (dtype->is_int)
                return 0;
        return dtype->size == 2 ? 1e-2 : 1e-4;
}

/**
 * spec_task_buffer_index() - position of a task buffer
 * Return: the index, or -1 when @name is not a task buffer.
 */
int spec_task_buffer_index(const Task *task, const char *name)
{
        for (size_t i = 0; i < task->nbuffers; i++)
                if (strcmp(json_string_value(json_object_get(task->buffers[i], "name")), name) ==
                    0)
                        return (int)i;
        return -1;
}

static int range_fail(SpecError *err, const char *ptr, const char *what, int64_t v,
                      const char *shape, int64_t min, int64_t max)
{
        if (max == INT64_MAX)
                return jsonutil_fail(err, ptr, "%s is %lld in shape '%s'; it must be at least %lld",
                                     what, (long long)v, shape, (long long)min);
        if (min == INT64_MIN)
                return jsonutil_fail(err, ptr, "%s is %lld in shape '%s'; it must be at most %lld",
                                     what, (long long)v, shape, (long long)max);
        return jsonutil_fail(err, ptr, "%s is %lld in shape '%s'; it must be in [%lld, %lld]",
                             what, (long long)v, shape, (long long)min, (long long)max);
}

/**
 * spec_expr_all() - check and evaluate an expression for every shape set
 * @task:       borrowed; its params and shape sets are used
 * @v:          JSON integer or expression string; borrowed
 * @ptr:        pointer of @v for messages
 * @what:       what the value is, for messages
 * @ret_values: NULL or room for task->nshapes values
 * Return: 0 or SPEC_E_INVALID.
 */
int spec_expr_all(const Task *task, json_t *v, const char *ptr, const char *what, int64_t min,
                  int64_t max, int64_t *ret_values, SpecError *err)
{
        char msg[256];
        int64_t x;
        int r;

        if (!v)
                return jsonutil_fail(err, ptr, "missing %s", what);
        if (json_is_string(v)) {
                if (strlen(json_string_value(v)) != json_string_length(v))
                        return jsonutil_fail(err, ptr, "%s contains a NUL character", what);
                r = expr_check(json_string_value(v), task->params, msg, sizeof(msg));
                if (r)
                        return jsonutil_fail(err, ptr, "%s", msg);
        } else if (!json_is_integer(v)) {
                return jsonutil_fail(err, ptr, "%s must be an integer or an expression string, not %s",
                                     what, jsonutil_type_name(v));
        }
        for (size_t s = 0; s < task->nshapes; s++) {
                r = expr_eval_json(v, task->shape_params[s], &x, msg, sizeof(msg));
                if (r)
                        return jsonutil_fail(err, ptr, "in shape '%s': %s", task->shape_names[s],
                                             msg);
                if (x < min || x > max)
                        return range_fail(err, ptr, what, x, task->shape_names[s], min, max);
                if (ret_values)
                        ret_values[s] = x;
        }
        return 0;
}

/**
 * spec_options_validate() - check compile options against the allowlist
 * @options:     array of strings or NULL; borrowed
 * @ret_options: on success a new array (a copy; empty when @options is NULL)
 * Return: 0 or SPEC_E_INVALID.
 */
int spec_options_validate(json_t *options, const char *ptr, json_t **ret_options, SpecError *err)
{
        char p[JSONUTIL_PTR_BYTES], why[256];
        size_t i;
        json_t *o;

        if (!options) {
                *ret_options = json_array();
                return *ret_options ? 0 : -ENOMEM;
        }
        if (!json_is_array(options))
                return jsonutil_fail(err, ptr, "'options' must be an array, not %s",
                                     jsonutil_type_name(options));
        if (json_array_size(options) > LIMIT_OPTIONS_MAX)
                return jsonutil_fail(err, ptr, "%zu options; the limit is %d",
                                     json_array_size(options), LIMIT_OPTIONS_MAX);
        json_array_foreach(options, i, o) {
                jsonutil_ptr_index(p, ptr, i);
                if (!json_is_string(o))
                        return jsonutil_fail(err, p, "an option must be a string, not %s",
                                             jsonutil_type_name(o));
                if (json_string_length(o) > LIMIT_OPTION_BYTES ||
                    strlen(json_string_value(o)) != json_string_length(o))
                        return jsonutil_fail(err, p, "option is longer than %d bytes or holds NUL",
                                             LIMIT_OPTION_BYTES);
                why[0] = '\0';
                if (options_check(json_string_value(o), why, sizeof(why)) != 0)
                        return jsonutil_fail(err, p, "%s",
                                             why[0] ? why : "option is not on the allowlist");
        }
        *ret_options = json_deep_copy(options);
        return *ret_options ? 0 : -ENOMEM;
}

/**
 * spec_name_exprs_validate() - check a list of kernel name expressions
 * @names:     array of non-empty strings (<= LIMIT_NAME_BYTES) or NULL; borrowed
 * @ret_names: on success a new array
 * Return: 0 or SPEC_E_INVALID.
 */
int spec_name_exprs_validate(json_t *names, const char *ptr, json_t **ret_names, SpecError *err)
{
        char p[JSONUTIL_PTR_BYTES];
        size_t i;
        json_t *o;

        if (!names) {
                *ret_names = json_array();
                return *ret_names ? 0 : -ENOMEM;
        }
        if (!json_is_array(names))
                return jsonutil_fail(err, ptr, "'name_expressions' must be an array, not %s",
                                     jsonutil_type_name(names));
        if (json_array_size(names) > LIMIT_NAME_EXPRESSIONS_MAX)
                return jsonutil_fail(err, ptr, "%zu name expressions; the limit is %d",
                                     json_array_size(names), LIMIT_NAME_EXPRESSIONS_MAX);
        json_array_foreach(names, i, o) {
                jsonutil_ptr_index(p, ptr, i);
                if (!json_is_string(o) || json_string_length(o) == 0 ||
                    json_string_length(o) > LIMIT_NAME_BYTES ||
                    strlen(json_string_value(o)) != json_string_length(o))
                        return jsonutil_fail(err, p,
                                             "a name expression must be a non-empty string of at most %d bytes",
                                             LIMIT_NAME_BYTES);
        }
        *ret_names = json_deep_copy(names);
        return *ret_names ? 0 : -ENOMEM;
}

/**
 * spec_scratch_validate() - validate and normalize a scratch list
 * Return: 0, SPEC_E_INVALID, or -ENOMEM.
 */
int spec_scratch_validate(const Task *task, json_t *scratch, const char *ptr,
                          json_t **ret_scratch, SpecError *err)
{
        static const char *const fields[] = { "name", "dtype", "count", NULL };
        uint64_t total[LIMIT_TASK_SHAPES_MAX] = { 0 };
        char p[JSONUTIL_PTR_BYTES], pc[JSONUTIL_PTR_BYTES];
        json_t *out = NULL, *s;
        size_t i;
        int r;

        if (scratch && !json_is_array(scratch))
                return jsonutil_fail(err, ptr, "'scratch' must be an array, not %s",
                                     jsonutil_type_name(scratch));
        if (scratch && json_array_size(scratch) > LIMIT_SCRATCH_BUFFERS_MAX)
                return jsonutil_fail(err, ptr, "%zu scratch buffers; the limit is %d",
                                     json_array_size(scratch), LIMIT_SCRATCH_BUFFERS_MAX);
        out = json_array();
        if (!out)
                return -ENOMEM;
        json_array_foreach(scratch, i, s) {
                const char *name = NULL;
                int dt = 0;
                int64_t counts[LIMIT_TASK_SHAPES_MAX];
                const DType *d;

                jsonutil_ptr_index(p, ptr, i);
                if (!json_is_object(s)) {
                        r = jsonutil_fail(err, p, "a scratch buffer must be an object, not %s",
                                          jsonutil_type_name(s));
                        goto out;
                }
                if ((r = jsonutil_check_fields(s, p, fields, err)) ||
                    (r = jsonutil_get_name(s, p, "name", true, &name, err)) ||
                    (r = jsonutil_get_enum(s, p, "dtype", true, spec_dtype_names, &dt, err)))
                        goto out;
                jsonutil_ptr_key(pc, p, "name");
                if (spec_task_buffer_index(task, name) >= 0) {
                        r = jsonutil_fail(err, pc, "scratch '%s' has the name of a task buffer",
                                          name);
                        goto out;
                }
                for (size_t j = 0; j < i; j++) {
                        if (!strcmp(json_string_value(json_object_get(json_array_get(out, j),
                                                                      "name")),
                                    name)) {
                                r = jsonutil_fail(err, pc, "duplicate scratch name '%s'", name);
                                goto out;
                        }
                }
                d = &spec_dtypes[dt];
                jsonutil_ptr_key(pc, p, "count");
                r = spec_expr_all(task, json_object_get(s, "count"), pc, "count", 1,
                                  (int64_t)(LIMIT_SCRATCH_BYTES_MAX / (uint64_t)d->size), counts,
                                  err);
                if (r)
                        goto out;
                for (size_t k = 0; k < task->nshapes; k++) {
                        total[k] += (uint64_t)counts[k] * (uint64_t)d->size;
                        if (total[k] > LIMIT_SCRATCH_BYTES_MAX) {
                                r = jsonutil_fail(err, pc,
                                                  "scratch of shape '%s' totals %llu bytes; the limit is %llu",
                                                  task->shape_names[k],
                                                  (unsigned long long)total[k],
                                                  (unsigned long long)LIMIT_SCRATCH_BYTES_MAX);
                                goto out;
                        }
                }
                if (json_array_append_new(out, json_pack("{s:s, s:s, s:O}", "name", name, "dtype",
                                                         d->name, "count",
                                                         json_object_get(s, "count"))) != 0) {
                        r = -ENOMEM;
                        goto out;
                }
        }
        *ret_scratch = out;
        out = NULL;
        r = 0;
out:
        json_decref(out);
        return r;
}

/* Find a buffer of the task or of @scratch: dtype, per-shape counts, writable. */
static bool lookup_buffer(const Task *task, json_t *scratch, const char *name,
                          const DType **ret_dtype, int *ret_task_index, json_t **ret_scratch)
{
        size_t i;
        json_t *s;
        int b = spec_task_buffer_index(task, name);

        if (b >= 0) {
                *ret_dtype = task->buffer_dtype[b];
                *ret_task_index = b;
                *ret_scratch = NULL;
                return true;
        }
        json_array_foreach(scratch, i, s) {
                if (!strcmp(json_string_value(json_object_get(s, "name")), name)) {
                        *ret_dtype = spec_dtype_find(json_string_value(json_object_get(s, "dtype")));
                        *ret_task_index = -1;
                        *ret_scratch = s;
                        return true;
                }
        }
        return false;
}

static int validate_arg(const Task *task, json_t *arg, json_t *scratch, bool reference,
                        const char *ptr, json_t **ret_arg, SpecError *err)
{
        static const char *const fields[] = { "type", "value", NULL };
        const DType *d;
        int ti, type = 0;
        json_t *sc, *v;
        int r;

        if (json_is_null(arg)) {
                /* a null pointer: a parameter the kernel takes but does not use here, such
                 * as the scratch pointers Triton appends (docs/internals.md) */
                *ret_arg = json_null();
                return 0;
        }
        if (json_is_string(arg)) {
                if (!lookup_buffer(task, scratch, json_string_value(arg), &d, &ti, &sc))
                        return jsonutil_fail(err, ptr,
                                             "'%.100s' is neither a task buffer nor a %s scratch buffer",
                                             json_string_value(arg),
                                             reference ? "reference" : "candidate");
                *ret_arg = json_incref(arg);
                return 0;
        }
        if (!json_is_object(arg))
                return jsonutil_fail(err, ptr,
                                     "an argument is a buffer name, {\"type\", \"value\"} or null (a null pointer), not %s",
                                     jsonutil_type_name(arg));
        if ((r = jsonutil_check_fields(arg, ptr, fields, err)) ||
            (r = jsonutil_get_enum(arg, ptr, "type", true, spec_scalar_types, &type, err)))
                return r;
        v = json_object_get(arg, "value");
        if (type <= 3) { /* i32 u32 i64 u64 */
                static const int64_t lo[] = { INT32_MIN, 0, INT64_MIN, 0 };
                static const int64_t hi[] = { INT32_MAX, UINT32_MAX, INT64_MAX, INT64_MAX };
                char p[JSONUTIL_PTR_BYTES];

                jsonutil_ptr_key(p, ptr, "value");
                if (v && json_is_real(v))
                        return jsonutil_fail(err, p, "type %s needs an integer value",
                                             spec_scalar_types[type]);
                r = spec_expr_all(task, v, p, "value", lo[type], hi[type], NULL, err);
                if (r)
                        return r;
        } else {
                double x = 0;
                if ((r = jsonutil_get_number(arg, ptr, "value", true, &x, err)))
                        return r;
        }
        *ret_arg = json_pack("{s:s, s:O}", "type", spec_scalar_types[type], "value", v);
        return *ret_arg ? 0 : -ENOMEM;
}

static int validate_dims(const Task *task, json_t *step, const char *ptr, const char *key,
                         json_t **ret, SpecError *err)
{
        static const char *const axis[] = { "x", "y", "z" };
        char p[JSONUTIL_PTR_BYTES], pi[JSONUTIL_PTR_BYTES], what[32];
        int64_t vals[3][LIMIT_TASK_SHAPES_MAX];
        bool grid = key[0] == 'g';
        json_t *arr = NULL;
        size_t i, n;
        int r;

        if ((r = jsonutil_get_array(step, ptr, key, true, 1, 3, &arr, err)))
                return r;
        jsonutil_ptr_key(p, ptr, key);
        n = json_array_size(arr);
        for (i = 0; i < n; i++) {
                int64_t max = grid ? (i == 0 ? SPEC_GRID_X_MAX : SPEC_GRID_YZ_MAX)
                                   : (i == 2 ? 64 : SPEC_BLOCK_THREADS_MAX);
                jsonutil_ptr_index(pi, p, i);
                snprintf(what, sizeof(what), "%s %s", key, axis[i]);
                r = spec_expr_all(task, json_array_get(arr, i), pi, what, 1, max, vals[i], err);
                if (r)
                        return r;
        }
        if (!grid) {
                for (size_t s = 0; s < task->nshapes; s++) {
                        int64_t t = 1;
                        for (i = 0; i < n; i++)
                                t *= vals[i][s];
                        if (t > SPEC_BLOCK_THREADS_MAX)
                                return jsonutil_fail(err, p,
                                                     "block has %lld threads in shape '%s'; the limit is %d",
                                                     (long long)t, task->shape_names[s],
                                                     SPEC_BLOCK_THREADS_MAX);
                }
        }
        *ret = json_deep_copy(arr);
        return *ret ? 0 : -ENOMEM;
}

static int validate_launch(const Task *task, json_t *step, json_t *scratch, bool reference,
                           json_t *name_exprs, const char *ptr, json_t **ret_step,
                           SpecError *err)
{
        static const char *const fields[] = { "kernel", "grid", "block", "shared", "args", NULL };
        char p[JSONUTIL_PTR_BYTES], pa[JSONUTIL_PTR_BYTES];
        const char *kernel = NULL;
        json_t *out = NULL, *grid = NULL, *block = NULL, *args = NULL, *nargs = NULL, *a,
               *shared;
        size_t i;
        int r;

        if ((r = jsonutil_check_fields(step, ptr, fields, err)) ||
            (r = jsonutil_get_string(step, ptr, "kernel", true, LIMIT_NAME_BYTES, &kernel,
                                     err)))
                goto out;
        if (!jsonutil_is_name(kernel)) {
                bool found = false;
                json_array_foreach(name_exprs, i, a)
                        if (!strcmp(json_string_value(a), kernel))
                                found = true;
                if (!found) {
                        jsonutil_ptr_key(p, ptr, "kernel");
                        r = jsonutil_fail(err, p,
                                          "kernel '%.100s' is neither an extern \"C\" name nor one of the name_expressions",
                                          kernel);
                        goto out;
                }
        }
        if ((r = validate_dims(task, step, ptr, "grid", &grid, err)) ||
            (r = validate_dims(task, step, ptr, "block", &block, err)))
                goto out;
        shared = json_object_get(step, "shared");
        jsonutil_ptr_key(p, ptr, "shared");
        if (shared && (r = spec_expr_all(task, shared, p, "shared", 0, SPEC_SHARED_BYTES_MAX, NULL,
                                         err)))
                goto out;
        if ((r = jsonutil_get_array(step, ptr, "args", true, 0, LIMIT_ARGS_MAX, &args, err)))
                goto out;
        jsonutil_ptr_key(p, ptr, "args");
        nargs = json_array();
        if (!nargs) {
                r = -ENOMEM;
                goto out;
        }
        json_array_foreach(args, i, a) {
                json_t *na = NULL;
                jsonutil_ptr_index(pa, p, i);
                if ((r = validate_arg(task, a, scratch, reference, pa, &na, err)))
                        goto out;
                json_array_append_new(nargs, na);
        }
        out = json_pack("{s:s, s:O, s:O, s:o, s:O}", "kernel", kernel, "grid", grid, "block",
                        block, "shared", shared ? json_incref(shared) : json_integer(0), "args",
                        nargs);
        if (!out) {
                r = -ENOMEM;
                goto out;
        }
        *ret_step = out;
        out = NULL;
        r = 0;
out:
        json_decref(out);
        json_decref(grid);
        json_decref(block);
        json_decref(nargs);
        return r;
}

static int validate_gemm(const Task *task, json_t *step, json_t *scratch, const char *ptr,
                         json_t **ret_step, SpecError *err)
{
        static const char *const fields[] = { "library", "a", "b", "c", "m", "n", "k", "batch",
                                              "trans_a", "trans_b", "alpha", "beta", NULL };
        static const char *const mats[] = { "a", "b", "c" };
        char p[JSONUTIL_PTR_BYTES];
        const char *names[3] = { NULL, NULL, NULL };
        const DType *dts[3] = { NULL, NULL, NULL };
        int64_t m[LIMIT_TASK_SHAPES_MAX], n[LIMIT_TASK_SHAPES_MAX], k[LIMIT_TASK_SHAPES_MAX],
                batch[LIMIT_TASK_SHAPES_MAX];
        bool trans_a = false, trans_b = false;
        double alpha = 1.0, beta = 0.0;
        json_t *sc[3] = { NULL, NULL, NULL };
        int ti[3] = { -1, -1, -1 };
        int r;

        if ((r = jsonutil_check_fields(step, ptr, fields, err)))
                return r;
        for (int i = 0; i < 3; i++) {
                if ((r = jsonutil_get_name(step, ptr, mats[i], true, &names[i], err)))
                        return r;
                jsonutil_ptr_key(p, ptr, mats[i]);
                if (!lookup_buffer(task, scratch, names[i], &dts[i], &ti[i], &sc[i]))
                        return jsonutil_fail(err, p,
                                             "'%s' is neither a task buffer nor a reference scratch buffer",
                                             names[i]);
                if (strcmp(dts[i]->name, "f32") && strcmp(dts[i]->name, "f16") &&
                    strcmp(dts[i]->name, "bf16"))
                        return jsonutil_fail(err, p, "gemm supports f32, f16 and bf16, not %s",
                                             dts[i]->name);
                if (i > 0 && dts[i] != dts[0])
                        return jsonutil_fail(err, p, "gemm operands must share one dtype (%s vs %s)",
                                             dts[i]->name, dts[0]->name);
        }
        jsonutil_ptr_key(p, ptr, "c");
        if (ti[2] >= 0 && task->buffer_role[ti[2]] == ROLE_IN)
                return jsonutil_fail(err, p, "gemm writes 'c', but '%s' is an input", names[2]);
        if (!strcmp(names[2], names[0]) || !strcmp(names[2], names[1]))
                return jsonutil_fail(err, p, "gemm output '%s' aliases an operand", names[2]);
        jsonutil_ptr_key(p, ptr, "m");
        if ((r = spec_expr_all(task, json_object_get(step, "m"), p, "m", 1, INT32_MAX, m, err)))
                return r;
        jsonutil_ptr_key(p, ptr, "n");
        if ((r = spec_expr_all(task, json_object_get(step, "n"), p, "n", 1, INT32_MAX, n, err)))
                return r;
        jsonutil_ptr_key(p, ptr, "k");
        if ((r = spec_expr_all(task, json_object_get(step, "k"), p, "k", 1, INT32_MAX, k, err)))
                return r;
        jsonutil_ptr_key(p, ptr, "batch");
        if (json_object_get(step, "batch")) {
                if ((r = spec_expr_all(task, json_object_get(step, "batch"), p, "batch", 1,
                                       INT32_MAX, batch, err)))
                        return r;
        } else {
                for (size_t s = 0; s < task->nshapes; s++)
                        batch[s] = 1;
        }
        if ((r = jsonutil_get_bool(step, ptr, "trans_a", false, &trans_a, err)) ||
            (r = jsonutil_get_bool(step, ptr, "trans_b", false, &trans_b, err)) ||
            (r = jsonutil_get_number(step, ptr, "alpha", false, &alpha, err)) ||
            (r = jsonutil_get_number(step, ptr, "beta", false, &beta, err)))
                return r;
        /* every operand must hold batch * rows * cols elements */
        for (size_t s = 0; s < task->nshapes; s++) {
                int64_t need[3] = { m[s] * k[s], k[s] * n[s], m[s] * n[s] };
                for (int i = 0; i < 3; i++) {
                        int64_t have, want;
                        char msg[256];
                        if (__builtin_mul_overflow(need[i], batch[s], &want))
                                want = INT64_MAX;
                        if (ti[i] >= 0) {
                                have = task->buffer_count[s][ti[i]];
                        } else if (expr_eval_json(json_object_get(sc[i], "count"),
                                                  task->shape_params[s], &have, msg,
                                                  sizeof(msg))) {
                                have = 0;
                        }
                        if (have < want) {
                                jsonutil_ptr_key(p, ptr, mats[i]);
                                return jsonutil_fail(err, p,
                                                     "gemm needs %lld elements in '%s' for shape '%s'; it has %lld",
                                                     (long long)want, names[i],
                                                     task->shape_names[s], (long long)have);
                        }
                }
        }
        *ret_step = json_pack("{s:s, s:s, s:s, s:s, s:O, s:O, s:O, s:o, s:b, s:b, s:f, s:f}",
                              "library", "gemm", "a", names[0], "b", names[1], "c", names[2],
                              "m", json_object_get(step, "m"), "n", json_object_get(step, "n"),
                              "k", json_object_get(step, "k"), "batch",
                              json_object_get(step, "batch")
                                      ? json_incref(json_object_get(step, "batch"))
                                      : json_integer(1),
                              "trans_a", trans_a, "trans_b", trans_b, "alpha", alpha, "beta",
                              beta);
        return *ret_step ? 0 : -ENOMEM;
}

/**
 * spec_plan_validate() - validate and normalize a launch plan
 * @task:          borrowed; params, shape sets and buffers are used
 * @plan:          the plan array; borrowed
 * @scratch:       normalized scratch of the same side; borrowed
 * @allow_library: library steps allowed (task reference only)
 * @name_exprs:    name expressions the kernel names may use, or NULL
 * @ptr:           pointer of @plan
 * @ret_plan:      on success a new normalized plan ("shared" filled in,
 *                 library defaults filled in)
 * Return: 0, SPEC_E_INVALID, or -ENOMEM.
 */
int spec_plan_validate(const Task *task, json_t *plan, json_t *scratch, bool allow_library,
                       json_t *name_exprs, const char *ptr, json_t **ret_plan, SpecError *err)
{
        char p[JSONUTIL_PTR_BYTES];
        json_t *out, *step;
        size_t i;
        int r = 0;

        if (!json_is_array(plan))
                return jsonutil_fail(err, ptr, "'plan' must be an array, not %s",
                                     plan ? jsonutil_type_name(plan) : "missing");
        if (json_array_size(plan) < 1)
                return jsonutil_fail(err, ptr, "the plan needs at least one launch");
        if (json_array_size(plan) > LIMIT_LAUNCHES_MAX)
                return jsonutil_fail(err, ptr, "the plan has %zu launches; the limit is %d",
                                     json_array_size(plan), LIMIT_LAUNCHES_MAX);
        out = json_array();
        if (!out)
                return -ENOMEM;
        json_array_foreach(plan, i, step) {
                json_t *ns = NULL;

                jsonutil_ptr_index(p, ptr, i);
                if (!json_is_object(step)) {
                        r = jsonutil_fail(err, p, "a plan step must be an object, not %s",
                                          jsonutil_type_name(step));
                        goto out;
                }
                if (json_object_get(step, "library")) {
                        int lib = 0;
                        static const char *const libs[] = { "gemm", NULL };
                        if (!allow_library) {
                                jsonutil_ptr_key(p, p, "library");
                                r = jsonutil_fail(err, p,
                                                  "library steps are allowed in task references only");
                                goto out;
                        }
                        if ((r = jsonutil_get_enum(step, p, "library", true, libs, &lib, err)) ||
                            (r = validate_gemm(task, step, scratch, p, &ns, err)))
                                goto out;
                } else if ((r = validate_launch(task, step, scratch, allow_library, name_exprs, p,
                                                &ns, err))) {
                        goto out;
                }
                json_array_append_new(out, ns);
        }
        *ret_plan = out;
        out = NULL;
out:
        json_decref(out);
        return r;
}
