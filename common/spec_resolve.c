/*
 * spec_resolve - a validated task and submission turned into the GPU
 * worker's JOB (docs/internals.md, "GPU worker"): every expression
 * evaluated per shape set, kernel names replaced by the names in the CUBIN,
 * tolerances and init parameters resolved, so the worker does no parsing
 * beyond reading numbers.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/expr.h"
#include "common/jsonutil.h"
#include "common/spec_internal.h"

#define DEADLINE_BASE_MS 10000
#define DEADLINE_PER_TRIAL_MS 2000
#define DEADLINE_MAX_MS 600000

static int eval(const Task *t, size_t s, json_t *v, const char *ptr, int64_t *ret, SpecError *err)
{
        char msg[256];
        int r = expr_eval_json(v, t->shape_params[s], ret, msg, sizeof(msg));

        if (r)
                return jsonutil_fail(err, ptr, "in shape '%s': %s", t->shape_names[s], msg);
        return 0;
}

static json_t *resolve_init(const Task *t, size_t s, json_t *init, const char *ptr, int *ret_r,
                            SpecError *err)
{
        const char *dist = json_string_value(json_object_get(init, "dist"));
        json_t *v, *out;
        double scale = 1.0, offset = 0.0;
        int64_t x;

        *ret_r = 0;
        if (!strcmp(dist, "int")) {
                int64_t lo = 0, hi = 0;
                if ((v = json_object_get(init, "low")) && (*ret_r = eval(t, s, v, ptr, &lo, err)))
                        return NULL;
                if ((*ret_r = eval(t, s, json_object_get(init, "high"), ptr, &hi, err)))
                        return NULL;
                return json_pack("{s:s, s:I, s:I}", "dist", "int", "low", (json_int_t)lo, "high",
                                 (json_int_t)hi);
        }
        if ((v = json_object_get(init, "fan_in"))) {
                if ((*ret_r = eval(t, s, v, ptr, &x, err)))
                        return NULL;
                scale = 1.0 / sqrt((double)x);
        }
        if ((v = json_object_get(init, "offset")))
                offset = json_number_value(v);
        if (!strcmp(dist, "normal")) {
                json_t *m = json_object_get(init, "mean"), *sd = json_object_get(init, "std");
                out = json_pack("{s:s, s:f, s:f}", "dist", "normal", "mean",
                                m ? json_number_value(m) : 0.0, "std",
                                sd ? json_number_value(sd) : 1.0);
        } else if (!strcmp(dist, "uniform")) {
                json_t *lo = json_object_get(init, "low"), *hi = json_object_get(init, "high");
                out = json_pack("{s:s, s:f, s:f}", "dist", "uniform", "low",
                                lo ? json_number_value(lo) : -1.0, "high",
                                hi ? json_number_value(hi) : 1.0);
        } else {
                out = json_pack("{s:s}", "dist", "mixed");
        }
        if (out) {
                json_object_set_new(out, "offset", json_real(offset));
                json_object_set_new(out, "scale", json_real(scale));
        }
        return out;
}

static json_t *resolve_buffers(const Task *t, size_t s, int *ret_r, SpecError *err)
{
        json_t *tol = json_object_get(t->doc, "tolerance");
        json_t *arr = json_array(), *b = NULL, *v;
        char p[JSONUTIL_PTR_BYTES];

        *ret_r = -ENOMEM;
        for (size_t i = 0; arr && i < t->nbuffers; i++) {
                json_t *buf = t->buffers[i], *shape = json_array(), *dim;
                const DType *dt = t->buffer_dtype[i];
                size_t j;

                if (!shape)
                        goto fail;
                jsonutil_ptr_index(p, "/buffers", i);
                json_array_foreach(json_object_get(buf, "shape"), j, dim) {
                        int64_t x;
                        if ((*ret_r = eval(t, s, dim, p, &x, err))) {
                                json_decref(shape);
                                goto fail;
                        }
                        json_array_append_new(shape, json_integer(x));
                }
                b = json_pack("{s:O, s:s, s:I, s:o, s:s}", "name", json_object_get(buf, "name"),
                              "dtype", dt->name, "count", (json_int_t)t->buffer_count[s][i],
                              "shape", shape, "role", spec_role_names[t->buffer_role[i]]);
                if (!b)
                        goto fail;
                if ((v = json_object_get(buf, "init"))) {
                        json_t *init;
                        jsonutil_ptr_key(p, p, "init");
                        init = resolve_init(t, s, v, p, ret_r, err);
                        if (!init) {
                                if (!*ret_r)
                                        *ret_r = -ENOMEM;
                                goto fail;
                        }
                        json_object_set_new(b, "init", init);
                }
                if (t->buffer_role[i] != ROLE_IN) {
                        json_t *bt = json_object_get(buf, "tolerance");
                        json_t *src = bt ? bt : (!dt->is_int ? tol : NULL);
                        double atol = spec_tolerance_default(dt), rtol = atol;
                        if (src && (v = json_object_get(src, "atol")))
                                atol = json_number_value(v);
                        if (src && (v = json_object_get(src, "rtol")))
                                rtol = json_number_value(v);
                        json_object_set_new(b, "atol", json_real(atol));
                        json_object_set_new(b, "rtol", json_real(rtol));
                }
                json_array_append_new(arr, b);
                b = NULL;
        }
        if (!arr)
                return NULL;
        *ret_r = 0;
        return arr;
fail:
        json_decref(b);
        json_decref(arr);
        return NULL;
}

static json_t *resolve_scratch(const Task *t, size_t s, json_t *scratch, const char *base,
                               int *ret_r, SpecError *err)
{
        json_t *arr = json_array(), *sc;
        char p[JSONUTIL_PTR_BYTES];
        size_t i;

        *ret_r = -ENOMEM;
        if (!arr)
                return NULL;
        json_array_foreach(scratch, i, sc) {
                int64_t n;
                jsonutil_ptr_index(p, base, i);
                jsonutil_ptr_key(p, p, "count");
                if ((*ret_r = eval(t, s, json_object_get(sc, "count"), p, &n, err))) {
                        json_decref(arr);
                        return NULL;
                }
                json_array_append_new(arr, json_pack("{s:O, s:O, s:I}", "name",
                                                     json_object_get(sc, "name"), "dtype",
                                                     json_object_get(sc, "dtype"), "count",
                                                     (json_int_t)n));
        }
        *ret_r = 0;
        return arr;
}

static json_t *resolve_dims(const Task *t, size_t s, json_t *dims, const char *ptr, int *ret_r,
                            SpecError *err)
{
        int64_t v[3] = { 1, 1, 1 };

        for (size_t i = 0; i < json_array_size(dims) && i < 3; i++)
                if ((*ret_r = eval(t, s, json_array_get(dims, i), ptr, &v[i], err)))
                        return NULL;
        *ret_r = 0;
        return json_pack("[I, I, I]", (json_int_t)v[0], (json_int_t)v[1], (json_int_t)v[2]);
}

static json_t *resolve_plan(const Task *t, size_t s, json_t *plan, json_t *compile,
                            const char *base, int *ret_r, SpecError *err)
{
        json_t *arr = json_array(), *step, *out = NULL;
        char p[JSONUTIL_PTR_BYTES], pk[JSONUTIL_PTR_BYTES];
        size_t i;

        *ret_r = -ENOMEM;
        if (!arr)
                return NULL;
        json_array_foreach(plan, i, step) {
                jsonutil_ptr_index(p, base, i);
                if (json_object_get(step, "library")) {
                        int64_t m, n, k, batch;
                        const char *a = json_string_value(json_object_get(step, "a"));
                        int bi = spec_task_buffer_index(t, a);
                        const char *dtype = NULL;
                        json_t *sc;
                        size_t j;
                        if ((*ret_r = eval(t, s, json_object_get(step, "m"), p, &m, err)) ||
                            (*ret_r = eval(t, s, json_object_get(step, "n"), p, &n, err)) ||
                            (*ret_r = eval(t, s, json_object_get(step, "k"), p, &k, err)) ||
                            (*ret_r = eval(t, s, json_object_get(step, "batch"), p, &batch, err)))
                                goto fail;
                        if (bi >= 0)
                                dtype = t->buffer_dtype[bi]->name;
                        json_array_foreach(json_object_get(json_object_get(t->doc, "reference"),
                                                           "scratch"),
                                           j, sc)
                                if (!strcmp(json_string_value(json_object_get(sc, "name")), a))
                                        dtype = json_string_value(json_object_get(sc, "dtype"));
                        out = json_pack("{s:s, s:s, s:O, s:O, s:O, s:I, s:I, s:I, s:I, s:O, s:O, "
                                        "s:O, s:O}",
                                        "library", "gemm", "dtype", dtype ? dtype : "f32", "a",
                                        json_object_get(step, "a"), "b",
                                        json_object_get(step, "b"), "c",
                                        json_object_get(step, "c"), "m", (json_int_t)m, "n",
                                        (json_int_t)n, "k", (json_int_t)k, "batch",
                                        (json_int_t)batch, "trans_a",
                                        json_object_get(step, "trans_a"), "trans_b",
                                        json_object_get(step, "trans_b"), "alpha",
                                        json_object_get(step, "alpha"), "beta",
                                        json_object_get(step, "beta"));
                } else {
                        const char *kname = json_string_value(json_object_get(step, "kernel"));
                        const char *lowered = json_string_value(
                                json_object_get(json_object_get(compile, "lowered_names"), kname));
                        json_t *grid, *block, *args, *arg;
                        int64_t shared = 0;
                        size_t j;

                        jsonutil_ptr_key(pk, p, "grid");
                        if (!(grid = resolve_dims(t, s, json_object_get(step, "grid"), pk, ret_r,
                                                  err)))
                                goto fail;
                        jsonutil_ptr_key(pk, p, "block");
                        if (!(block = resolve_dims(t, s, json_object_get(step, "block"), pk,
                                                   ret_r, err))) {
                                json_decref(grid);
                                goto fail;
                        }
                        jsonutil_ptr_key(pk, p, "shared");
                        if (json_object_get(step, "shared") &&
                            (*ret_r = eval(t, s, json_object_get(step, "shared"), pk, &shared,
                                           err))) {
                                json_decref(grid);
                                json_decref(block);
                                goto fail;
                        }
                        args = json_array();
                        out = json_pack("{s:s, s:o, s:o, s:I, s:o}", "kernel",
                                        lowered ? lowered : kname, "grid", grid, "block", block,
                                        "shared", (json_int_t)shared, "args", args);
                        if (!out)
                                goto fail;
                        json_array_foreach(json_object_get(step, "args"), j, arg) {
                                const char *type;
                                json_t *v, *a;
                                if (json_is_string(arg)) {
                                        json_array_append_new(args,
                                                              json_pack("{s:O}", "buffer", arg));
                                        continue;
                                }
                                if (json_is_null(arg)) { /* a null pointer: 8 zero bytes */
                                        json_array_append_new(args, json_pack("{s:s, s:i}", "type",
                                                                              "u64", "value", 0));
                                        continue;
                                }
                                type = json_string_value(json_object_get(arg, "type"));
                                v = json_object_get(arg, "value");
                                if (type[0] == 'f') {
                                        a = json_pack("{s:s, s:f}", "type", type, "value",
                                                      json_number_value(v));
                                } else {
                                        int64_t x;
                                        jsonutil_ptr_key(pk, p, "args");
                                        jsonutil_ptr_index(pk, pk, j);
                                        if ((*ret_r = eval(t, s, v, pk, &x, err)))
                                                goto fail;
                                        a = json_pack("{s:s, s:I}", "type", type, "value",
                                                      (json_int_t)x);
                                }
                                json_array_append_new(args, a);
                        }
                }
                if (!out) {
                        *ret_r = -ENOMEM;
                        goto fail;
                }
                json_array_append_new(arr, out);
                out = NULL;
        }
        *ret_r = 0;
        return arr;
fail:
        if (!*ret_r)
                *ret_r = -ENOMEM;
        json_decref(out);
        json_decref(arr);
        return NULL;
}

static json_t *resolve_side(const Task *t, size_t s, json_t *scratch, json_t *plan,
                            json_t *compile, const char *base, int *ret_r, SpecError *err)
{
        char p[JSONUTIL_PTR_BYTES];
        json_t *sc, *pl;

        jsonutil_ptr_key(p, base, "scratch");
        if (!(sc = resolve_scratch(t, s, scratch, p, ret_r, err)))
                return NULL;
        jsonutil_ptr_key(p, base, "plan");
        if (!(pl = resolve_plan(t, s, plan, compile, p, ret_r, err))) {
                json_decref(sc);
                return NULL;
        }
        return json_pack("{s:o, s:o}", "scratch", sc, "plan", pl);
}

/**
 * spec_resolve() - build the GPU worker's JOB JSON
 * @task:         borrowed
 * @submission:   the normalized submission (spec_submission_validate()); borrowed
 * @cand_compile: the candidate's compile RESULT (for lowered_names); borrowed;
 *                may be NULL (names are used as given)
 * @ref_compile:  the reference's compile RESULT; borrowed; may be NULL
 * @job_id:       copied into "id"
 * @seed:         copied into "seed" as 16 lower-case hex digits
 * @ret_job:      on success a new object {id, seed, mode, timing, deadline_ms,
 *                correctness_trials, shapes[]}; the dispatcher adds "cubins"
 * Return: 0, SPEC_E_INVALID (an expression failed for some shape set; @err
 * says which, with a pointer into the submission or "/reference/..."), or a
 * negative errno.
 */
int spec_resolve(const Task *task, json_t *submission, json_t *cand_compile, json_t *ref_compile,
                 int64_t job_id, uint64_t seed, json_t **ret_job, SpecError *err)
{
        json_t *job = NULL, *shapes = NULL, *shape = NULL, *v;
        json_t *ref = json_object_get(task->doc, "reference");
        json_t *timing = json_object_get(submission, "timing");
        char seedhex[17], p[JSONUTIL_PTR_BYTES];
        int64_t trials = json_integer_value(json_object_get(task->doc, "correctness_trials"));
        int64_t budget = json_integer_value(json_object_get(timing, "budget_ms"));
        int64_t deadline;
        int r = -ENOMEM;

        if (!json_is_array(json_object_get(submission, "plan")))
                return jsonutil_fail(err, "/plan", "the submission has no plan to resolve");
        snprintf(seedhex, sizeof(seedhex), "%016" PRIx64, seed);
        deadline = DEADLINE_BASE_MS +
                   (int64_t)task->nshapes * (trials * DEADLINE_PER_TRIAL_MS + 2 * budget);
        if (deadline > DEADLINE_MAX_MS)
                deadline = DEADLINE_MAX_MS;
        shapes = json_array();
        job = json_pack("{s:I, s:s, s:O, s:O, s:I, s:I}", "id", (json_int_t)job_id, "seed",
                        seedhex, "mode", json_object_get(submission, "mode"), "timing", timing,
                        "deadline_ms", (json_int_t)deadline, "correctness_trials",
                        (json_int_t)trials);
        if (!job || !shapes)
                goto out;
        for (size_t s = 0; s < task->nshapes; s++) {
                json_t *side, *only = json_object_get(submission, "shapes");
                int64_t x;
                bool wanted = !only;

                for (size_t k = 0; k < json_array_size(only); k++)
                        wanted |= strcmp(json_string_value(json_array_get(only, k)), task->shape_names[s]) == 0;
                if (!wanted)
                        continue;

                shape = json_pack("{s:s, s:O}", "name", task->shape_names[s], "params",
                                  task->shape_params[s]);
                if (!shape)
                        goto out;
                if (!(v = resolve_buffers(task, s, &r, err)))
                        goto out;
                json_object_set_new(shape, "buffers", v);
                if ((v = json_object_get(task->doc, "flops"))) {
                        if ((r = eval(task, s, v, "/flops", &x, err)))
                                goto out;
                        json_object_set_new(shape, "flops", json_integer(x));
                }
                if ((v = json_object_get(task->doc, "bytes"))) {
                        if ((r = eval(task, s, v, "/bytes", &x, err)))
                                goto out;
                        json_object_set_new(shape, "bytes", json_integer(x));
                }
                side = resolve_side(task, s, json_object_get(submission, "scratch"),
                                    json_object_get(submission, "plan"), cand_compile, "", &r,
                                    err);
                if (!side)
                        goto out;
                json_object_set_new(shape, "candidate", side);
                snprintf(p, sizeof(p), "/reference");
                side = resolve_side(task, s, json_object_get(ref, "scratch"),
                                    json_object_get(ref, "plan"), ref_compile, p, &r, err);
                if (!side)
                        goto out;
                json_object_set_new(shape, "reference", side);
                json_array_append_new(shapes, shape);
                shape = NULL;
        }
        json_object_set(job, "shapes", shapes);
        *ret_job = job;
        job = NULL;
        r = 0;
out:
        if (r == 0 && job)
                r = -ENOMEM;
        json_decref(shape);
        json_decref(shapes);
        json_decref(job);
        return r;
}
