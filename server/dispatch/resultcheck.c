/*
 * resultcheck - see resultcheck.h.
 *
 * A compile RESULT is believed when its fields have the types of
 * schema/result.schema.json's compile section and, when it says ok, its
 * CUBIN is a CUDA ELF for the requested architecture whose kernels (names,
 * parameter offsets and sizes) are exactly those the RESULT lists; a fenced
 * build, when the RESULT places one after the plain one, is a CUDA ELF for
 * the same architecture. The CUBIN is read with worker/cubin.c, the reader
 * the compile worker itself uses (it includes no third-party header).
 *
 * A GPU RESULT is believed when its fields have the types of the result
 * schema and, when its verdict is correct: correctness passed on every shape
 * set; a candidate median under half the reported roofline bound is flagged
 * suspicious; and a speedup, where one is stated, is what its own medians
 * say (each shape set's reference median / candidate median, between
 * MEDIAN_MIN_MS and the job's deadline; timing.speedup their geometric
 * mean, as worker/gpu/judge_timing.c computes them). A correct RESULT that states no
 * speedup (timing.speedup null or 0: a median too small to time) is
 * believed, and its reward has no speedup.
 */
#include "server/dispatch/resultcheck.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/limits.h"
#include "worker/cubin.h"

/* No plan execution is timed under 100 ns: one CUDA event pair alone costs more. */
#define MEDIAN_MIN_MS 1e-4
/* Speedups are recomputed from medians printed with 17 digits: equal up to rounding. */
#define SPEEDUP_REL_TOL 1e-6

static int bad(char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(char *why, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(why, RESULTCHECK_WHY_BYTES, fmt, ap);
        va_end(ap);
        return RESULTCHECK_E_INVALID;
}

/* Absent or JSON null. */
static bool none(const json_t *v)
{
        return !v || json_is_null(v);
}

static bool finite_nonneg(const json_t *v)
{
        return json_is_number(v) && isfinite(json_number_value(v)) && json_number_value(v) >= 0;
}

/* ---- compile ------------------------------------------------------------- */

/* "sm_90a" -> 90; 0 when @arch names no SM version. */
static int arch_sm(const char *arch)
{
        char *end;
        long v;

        if (!arch || strncmp(arch, "sm_", 3) != 0)
                return 0;
        v = strtol(arch + 3, &end, 10);
        return end != arch + 3 && v > 0 && v < 256 ? (int)v : 0;
}

/* The SM version of a CUDA ELF's e_flags: bits 8..15 (CUDA 12.8 and later) or 0..7 (earlier). */
static bool elf_for_sm(const uint8_t *elf, size_t len, int sm)
{
        uint32_t flags;

        if (len < 52)
                return false;
        flags = (uint32_t)elf[48] | (uint32_t)elf[49] << 8 | (uint32_t)elf[50] << 16 | (uint32_t)elf[51] << 24;
        return sm == 0 || (int)((flags >> 8) & 0xff) == sm || (int)(flags & 0xff) == sm;
}

static int check_kernel_fields(json_t *k, size_t i, char *why)
{
        static const char *const ints[] = { "registers", "shared_static", "local", "spill_stores", "spill_loads",
                                            "stack", "barriers", "max_threads_per_block" };
        json_t *params = json_object_get(k, "params");

        if (!json_is_object(k) || !json_is_string(json_object_get(k, "name")))
                return bad(why, "/kernels/%zu is not an object with a string name", i);
        if (!json_is_array(params))
                return bad(why, "/kernels/%zu/params is not an array", i);
        for (size_t n = 0; n < sizeof(ints) / sizeof(ints[0]); n++) {
                json_t *v = json_object_get(k, ints[n]);
                if (v && !(json_is_integer(v) && json_integer_value(v) >= 0))
                        return bad(why, "/kernels/%zu/%s is not a non-negative integer", i, ints[n]);
        }
        return 0;
}

/* The plain CUBIN against the kernels the RESULT lists; with @prefix (a merged
 * compile's member), against the CUBIN's kernels whose names begin with it. */
static int check_cubin(const uint8_t *cubin, size_t len, int sm, json_t *kernels, const char *prefix, const char *what,
                       char *why)
{
        CubinInfo *info = NULL;
        json_t *k;
        size_t i, n_own = 0, plen = prefix ? strlen(prefix) : 0;
        int r = cubin_parse(cubin, len, &info);

        if (r == -ENOMEM)
                return r;
        if (r != 0)
                return bad(why, "the %s is not a CUDA ELF", what);
        if (!elf_for_sm(cubin, len, sm)) {
                r = bad(why, "the %s is not built for sm_%d", what, sm);
                goto out;
        }
        if (!kernels)
                goto out;
        for (i = 0; i < info->n_kernels; i++)
                n_own += !prefix || strncmp(info->kernels[i].name, prefix, plen) == 0;
        if (n_own != json_array_size(kernels)) {
                r = bad(why, "the %s has %zu kernel(s), the RESULT lists %zu", what, n_own, json_array_size(kernels));
                goto out;
        }
        json_array_foreach(kernels, i, k) {
                const char *name = json_string_value(json_object_get(k, "name"));
                char full[512];
                const CubinKernel *ck;
                if (prefix && snprintf(full, sizeof(full), "%s%s", prefix, name) >= (int)sizeof(full)) {
                        r = bad(why, "/kernels/%zu/name is too long", i);
                        goto out;
                }
                ck = cubin_find_kernel(info, prefix ? full : name);
                json_t *params = json_object_get(k, "params"), *p;
                size_t n;

                if (!ck) {
                        r = bad(why, "/kernels/%zu/name: the %s has no kernel of that name", i, what);
                        goto out;
                }
                if (json_array_size(params) != ck->n_params) {
                        r = bad(why, "/kernels/%zu/params: %zu listed, the %s says %zu", i, json_array_size(params),
                                what, ck->n_params);
                        goto out;
                }
                json_array_foreach(params, n, p) {
                        json_t *off = json_object_get(p, "offset"), *size = json_object_get(p, "size");
                        if (!json_is_integer(off) || !json_is_integer(size) ||
                            json_integer_value(off) != (json_int_t)ck->params[n].offset ||
                            json_integer_value(size) != (json_int_t)ck->params[n].size) {
                                r = bad(why, "/kernels/%zu/params/%zu does not match the %s", i, n, what);
                                goto out;
                        }
                }
        }
out:
        cubin_info_free(info);
        return r;
}

/**
 * resultcheck_compile() - check a compile worker's RESULT before it is believed or cached
 * @result:   the RESULT JSON; borrowed
 * @blob:     the frame's blob: the plain CUBIN, then the fenced one if
 *            result.fence places one; borrowed
 * @blob_len: its length
 * @arch:     the architecture the request asked for ("sm_90a")
 * @why:      on RESULTCHECK_E_INVALID, the reason (a JSON pointer into the
 *            RESULT where one applies)
 * Return: 0, RESULTCHECK_E_INVALID, or -ENOMEM.
 */
int resultcheck_compile(json_t *result, const uint8_t *blob, size_t blob_len, const char *arch,
                        char why[RESULTCHECK_WHY_BYTES])
{
        static const char *const strs[] = { "log", "nvrtc", "arch" };
        json_t *ok = json_object_get(result, "ok"), *kernels = json_object_get(result, "kernels");
        json_t *fence = json_object_get(result, "fence"), *v, *names = json_object_get(result, "lowered_names");
        const char *key;
        size_t i, plain = blob_len;
        int sm = arch_sm(arch), r;

        if (!json_is_boolean(ok))
                return bad(why, "/ok is not a boolean");
        for (i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
                if ((v = json_object_get(result, strs[i])) && !json_is_string(v))
                        return bad(why, "/%s is not a string", strs[i]);
        if (!none(v = json_object_get(result, "error")) && !json_is_string(v))
                return bad(why, "/error is not a string");
        if ((v = json_object_get(result, "compile_ms")) && !finite_nonneg(v))
                return bad(why, "/compile_ms is not a non-negative number");
        if ((v = json_object_get(result, "log_truncated")) && !json_is_boolean(v))
                return bad(why, "/log_truncated is not a boolean");
        if (names && !json_is_object(names))
                return bad(why, "/lowered_names is not an object");
        json_object_foreach(names, key, v) {
                if (!json_is_string(v))
                        return bad(why, "/lowered_names: a value is not a string");
        }
        if (kernels && !json_is_array(kernels))
                return bad(why, "/kernels is not an array");
        json_array_foreach(kernels, i, v) {
                if ((r = check_kernel_fields(v, i, why)) != 0)
                        return r;
        }
        if (fence && !json_is_object(fence))
                return bad(why, "/fence is not an object");
        if (!json_is_true(ok))
                return blob_len ? bad(why, "/ok is false but a CUBIN came with it") : 0;
        if (blob_len == 0)
                return bad(why, "/ok is true without a CUBIN");
        if (!kernels)
                return bad(why, "/ok is true without /kernels");
        if ((v = json_object_get(result, "arch")) && sm && arch_sm(json_string_value(v)) != sm)
                return bad(why, "/arch is not the requested %s", arch);
        if (json_object_get(fence, "offset") || json_object_get(fence, "size")) {
                json_t *off = json_object_get(fence, "offset"), *size = json_object_get(fence, "size");
                if (!json_is_integer(off) || !json_is_integer(size) || json_integer_value(off) <= 0 ||
                    json_integer_value(size) <= 0 ||
                    (uint64_t)json_integer_value(off) + (uint64_t)json_integer_value(size) != blob_len)
                        return bad(why, "/fence: offset and size do not place the fenced CUBIN after the plain one");
                plain = (size_t)json_integer_value(off);
        }
        if ((v = json_object_get(result, "group_prefix")) &&
            (!json_is_string(v) || !json_string_length(v) || json_string_length(v) > 64 || fence))
                return bad(why, "/group_prefix is not a short string, or comes with a fenced build");
        r = check_cubin(blob, plain, sm, kernels, json_string_value(v), "CUBIN", why);
        if (r == 0 && plain < blob_len)
                r = check_cubin(blob + plain, blob_len - plain, sm, NULL, NULL, "fenced CUBIN", why);
        return r;
}

/* ---- GPU ------------------------------------------------------------------ */

static int check_gpu_types(json_t *res, char *why)
{
        static const char *const nums[] = { "gpu_busy_ms", "gpu_active_ms", "wall_ms" };
        json_t *v, *s;
        const char *key;
        size_t i;

        for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
                if (!none(v = json_object_get(res, nums[i])) && !finite_nonneg(v))
                        return bad(why, "/%s is not a non-negative number", nums[i]);
        if (!none(v = json_object_get(res, "late_waits")) && !(json_is_integer(v) && json_integer_value(v) >= 0))
                return bad(why, "/late_waits is not a non-negative integer");
        if ((v = json_object_get(res, "exiting")) && !json_is_boolean(v) && !json_is_string(v))
                return bad(why, "/exiting is neither a boolean nor a string");
        if (!none(v = json_object_get(res, "error")) &&
            (!json_is_object(v) || !json_is_string(json_object_get(v, "kind"))))
                return bad(why, "/error is not an object with a string kind");
        if (!none(v = json_object_get(res, "gpu")) && !json_is_object(v))
                return bad(why, "/gpu is not an object");
        if (!none(v = json_object_get(res, "resources")) && !json_is_array(v))
                return bad(why, "/resources is not an array");
        if (!none(v = json_object_get(res, "phases_ms"))) {
                if (!json_is_object(v))
                        return bad(why, "/phases_ms is not an object");
                json_object_foreach(v, key, s) {
                        if (!finite_nonneg(s))
                                return bad(why, "/phases_ms: a value is not a non-negative number");
                }
        }
        if (!none(v = json_object_get(res, "correctness"))) {
                if (!json_is_object(v) || !json_is_boolean(json_object_get(v, "passed")) ||
                    !json_is_array(json_object_get(v, "shapes")))
                        return bad(why, "/correctness is not an object with a boolean passed and a shapes array");
                json_array_foreach(json_object_get(v, "shapes"), i, s) {
                        if (!json_is_object(s) || !json_is_boolean(json_object_get(s, "passed")))
                                return bad(why, "/correctness/shapes/%zu has no boolean passed", i);
                }
        }
        if (!none(v = json_object_get(res, "timing"))) {
                json_t *sp = json_object_get(v, "speedup");
                if (!json_is_object(v))
                        return bad(why, "/timing is not an object");
                if (!none(sp) && !(json_is_number(sp) && isfinite(json_number_value(sp))))
                        return bad(why, "/timing/speedup is not a finite number");
                if ((s = json_object_get(v, "suspicious")) && !json_is_boolean(s))
                        return bad(why, "/timing/suspicious is not a boolean");
                if ((s = json_object_get(v, "shapes")) && !json_is_array(s))
                        return bad(why, "/timing/shapes is not an array");
        }
        return 0;
}

/*
 * One timed shape set of a correct RESULT. Its roofline flag is checked
 * whenever it has a candidate median; when it states a speedup, both medians
 * must be in range and give it. @ret_ratio: that speedup, or 0 when it
 * states none.
 */
static int check_shape_timing(json_t *s, size_t i, double deadline_ms, char *why, double *ret_ratio)
{
        json_t *cm = json_object_get(json_object_get(s, "candidate"), "median_ms");
        json_t *rm = json_object_get(json_object_get(s, "reference"), "median_ms");
        json_t *sp = json_object_get(s, "speedup"), *roof = json_object_get(s, "roofline");
        json_t *min = json_object_get(roof, "min_ms");
        double c, ref, ratio;

        if (!json_is_object(s))
                return bad(why, "/timing/shapes/%zu is not an object", i);
        if ((cm && !finite_nonneg(cm)) || (rm && !finite_nonneg(rm)))
                return bad(why, "/timing/shapes/%zu: a median is not a non-negative number", i);
        if (roof && (!json_is_object(roof) || (!none(min) && !finite_nonneg(min)) ||
                     !json_is_boolean(json_object_get(roof, "suspicious"))))
                return bad(why, "/timing/shapes/%zu/roofline is not {min_ms: number, suspicious: boolean}", i);
        if (cm && json_is_number(min) && json_number_value(min) > 0 &&
            json_number_value(cm) < 0.5 * json_number_value(min) && !json_is_true(json_object_get(roof, "suspicious")))
                return bad(why, "/timing/shapes/%zu: the candidate's %g ms is under half the roofline bound but not "
                           "flagged suspicious", i, json_number_value(cm));
        *ret_ratio = 0;
        if (none(sp))
                return 0; /* no speedup stated for this shape set (e.g. a median of 0: too fast to time) */
        if (!json_is_number(sp) || !cm || !rm)
                return bad(why, "/timing/shapes/%zu states a speedup without both medians", i);
        c = json_number_value(cm);
        ref = json_number_value(rm);
        if (!(c >= MEDIAN_MIN_MS && ref >= MEDIAN_MIN_MS) || !(c <= deadline_ms && ref <= deadline_ms))
                return bad(why, "/timing/shapes/%zu: a median of %g ms or %g ms is outside [%g, %g] ms", i, c, ref,
                           MEDIAN_MIN_MS, deadline_ms);
        ratio = ref / c;
        if (fabs(json_number_value(sp) - ratio) > SPEEDUP_REL_TOL * ratio)
                return bad(why, "/timing/shapes/%zu/speedup is not the reference median over the candidate's (%g)", i,
                           ratio);
        *ret_ratio = ratio;
        return 0;
}

/**
 * resultcheck_gpu() - check a GPU worker's RESULT before it is believed
 * @result:      the RESULT JSON (its verdict already one a GPU worker may
 *               give); borrowed
 * @deadline_ms: the job's deadline: no median can be longer
 * @why:         on RESULTCHECK_E_INVALID, the reason
 * Return: 0 or RESULTCHECK_E_INVALID.
 */
int resultcheck_gpu(json_t *result, double deadline_ms, char why[RESULTCHECK_WHY_BYTES])
{
        const char *verdict = json_string_value(json_object_get(result, "verdict"));
        json_t *corr = json_object_get(result, "correctness"), *timing = json_object_get(result, "timing");
        json_t *shapes, *s, *ts;
        double logsum = 0, geo;
        bool stated = true;
        size_t i, n;
        int r;

        if (!verdict)
                return bad(why, "/verdict is not a string");
        if ((r = check_gpu_types(result, why)) != 0)
                return r;
        if (strcmp(verdict, "correct") != 0)
                return 0;
        if (!json_is_true(json_object_get(corr, "passed")))
                return bad(why, "/correctness/passed is not true for a correct verdict");
        json_array_foreach(json_object_get(corr, "shapes"), i, s) {
                if (!json_is_true(json_object_get(s, "passed")))
                        return bad(why, "/correctness/shapes/%zu/passed is not true for a correct verdict", i);
        }
        shapes = json_object_get(timing, "shapes");
        n = json_array_size(shapes);
        json_array_foreach(shapes, i, s) {
                double ratio = 0;
                if ((r = check_shape_timing(s, i, deadline_ms, why, &ratio)) != 0)
                        return r;
                if (ratio > 0)
                        logsum += log(ratio);
                else
                        stated = false;
        }
        /* A speedup (the reward's) only where every timed shape set's medians back it. */
        ts = json_object_get(timing, "speedup");
        if (!json_is_number(ts) || !(json_number_value(ts) > 0))
                return 0; /* none claimed: the reward gets none (pipeline_result()) */
        if (n == 0 || !stated)
                return bad(why, "/timing/speedup is stated but not every timed shape set's medians back it");
        geo = exp(logsum / (double)n);
        if (fabs(json_number_value(ts) - geo) > SPEEDUP_REL_TOL * geo)
                return bad(why, "/timing/speedup is not the geometric mean of the shape sets' medians' ratios (%g)",
                           geo);
        return 0;
}

static const char *const torch_errors[] = { "compile", "import", "no_model_new", "timeout", "internal", NULL };

static bool torch_error_ok(const json_t *e, bool ok)
{
        if (none(e))
                return true;
        if (ok || !json_is_string(e))
                return false;
        for (const char *const *p = torch_errors; *p; p++)
                if (strcmp(*p, json_string_value(e)) == 0)
                        return true;
        return false;
}

/**
 * resultcheck_torch_build() - check a kevald-torch build RESULT (docs/internals.md "kevald-torch")
 * @result:   the RESULT JSON; borrowed
 * @blob_len: bytes of the frame's blob: a build RESULT carries none
 * @why:      on failure, the reason
 * Rules: ok a boolean; error null, or with ok false one of compile, import,
 * no_model_new, timeout, internal; log a string of at most
 * LIMIT_KB_BUILD_LOG_BYTES; wall_ms finite and non-negative.
 * Return: 0 or RESULTCHECK_E_INVALID.
 */
int resultcheck_torch_build(json_t *result, size_t blob_len, char why[RESULTCHECK_WHY_BYTES])
{
        json_t *ok = json_object_get(result, "ok"), *log = json_object_get(result, "log");

        if (blob_len)
                return bad(why, "a build RESULT carries no blob (%zu bytes)", blob_len);
        if (!json_is_boolean(ok))
                return bad(why, "/ok is not a boolean");
        if (!torch_error_ok(json_object_get(result, "error"), json_is_true(ok)))
                return bad(why, "/error is not null or one of compile, import, no_model_new, timeout (with ok "
                                "false)");
        if (log && !json_is_string(log))
                return bad(why, "/log is not a string");
        if (json_string_length(log) > LIMIT_KB_BUILD_LOG_BYTES)
                return bad(why, "/log is longer than %u bytes", LIMIT_KB_BUILD_LOG_BYTES);
        if (!finite_nonneg(json_object_get(result, "wall_ms")))
                return bad(why, "/wall_ms is not a finite non-negative number");
        return 0;
}

/**
 * resultcheck_torch_compile() - check a kernelbench build as the compile cache keeps it
 * (torch_build_result(): ok, error, log, compile_ms, arch, torch)
 * Return: 0 or RESULTCHECK_E_INVALID.
 */
int resultcheck_torch_compile(json_t *compile, char why[RESULTCHECK_WHY_BYTES])
{
        json_t *ok = json_object_get(compile, "ok");

        if (!json_is_object(compile) || !json_is_boolean(ok))
                return bad(why, "/ok is not a boolean");
        if (!torch_error_ok(json_object_get(compile, "error"), json_is_true(ok)))
                return bad(why, "/error is not a build error");
        if (!json_is_string(json_object_get(compile, "log")) || !json_is_string(json_object_get(compile, "torch")) ||
            !finite_nonneg(json_object_get(compile, "compile_ms")))
                return bad(why, "/log, /torch or /compile_ms is missing or of the wrong type");
        return 0;
}
