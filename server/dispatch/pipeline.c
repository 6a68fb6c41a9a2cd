/*
 * pipeline - see pipeline.h. The feedback text is written for a model's
 * next turn: the verdict first, then the one fact it needs to act on (the
 * first compile error, the first mismatch, the CUDA error and where it
 * happened, or the speed and what limits it), in a few short sentences.
 */
#include "server/dispatch/pipeline.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/baselines.h"
#include "common/jsonutil.h"
#include "common/sha256.h"



static void hash_str(Sha256 *s, const char *str)
{
        if (str)
                sha256_update(s, str, strlen(str));
        sha256_update(s, "", 1);
}

static void hash_array(Sha256 *s, json_t *arr)
{
        size_t i;
        json_t *v;
        char n[32];

        snprintf(n, sizeof(n), "%zu", json_is_array(arr) ? json_array_size(arr) : 0);
        hash_str(s, n);
        json_array_foreach(arr, i, v) hash_str(s, json_is_string(v) ? json_string_value(v) : "");
}

void pipeline_cache_key(const char *language, const char *arch, const char *nvrtc, bool fence, json_t *options,
                        json_t *name_expressions, const char *source, size_t source_len,
                        uint8_t ret_key[32])
{
        Sha256 s;

        sha256_init(&s);
        hash_str(&s, "kevald-compile-v3"); /* v3: standard header shims, the prelude, the host code check */
        hash_str(&s, language);
        hash_str(&s, arch);
        hash_str(&s, nvrtc);
        hash_str(&s, fence ? "fenced" : "plain"); /* with a fenced build beside the plain one, or without */
        hash_array(&s, options);
        hash_array(&s, name_expressions);
        sha256_update(&s, source, source_len);
        sha256_final(&s, ret_key);
}

uint64_t pipeline_seed(const uint8_t secret[32], int64_t id, int attempt)
{
        char msg[64];
        uint8_t mac[32];
        uint64_t seed = 0;
        int n = snprintf(msg, sizeof(msg), "seed:%" PRId64 ":%d", id, attempt);

        hmac_sha256(secret, 32, msg, (size_t)n, mac);
        for (int i = 0; i < 8; i++)
                seed = seed << 8 | mac[i];
        return seed;
}

json_t *pipeline_compile_section(json_t *compile_result, int cache_hit)
{
        static const char *const keep[] = { "ok", "compile_ms", "arch", "nvrtc", "log",
                                            "log_truncated", "kernels", "lowered_names", "error", "torch" };
        json_t *out = json_object();

        for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
                json_t *v = json_object_get(compile_result, keep[i]);
                if (v)
                        json_object_set(out, keep[i], v);
        }
        json_object_set_new(out, "cache_hit", json_boolean(cache_hit));
        return out;
}

/* Is @p valid UTF-8 (what jansson takes)? */
static bool pointer_ok(const char *p)
{
        json_t *t = json_string(p);
        bool ok = t != NULL;

        json_decref(t);
        return ok;
}

/** pipeline_rejected() - see pipeline.h. */
json_t *pipeline_rejected(const char *task, const char *message, const char *pointer)
{
        json_t *e = json_pack("{s:s, s:s, s:s}", "kind", "submission", "message", message, "pointer", pointer),
               *res = NULL;
        const char *msg, *at;
        char *fb = NULL;

        if (!e) /* a message or pointer cut inside a UTF-8 sequence (quoting the client): say it plainly */
                e = json_pack("{s:s, s:s, s:s}", "kind", "submission", "message",
                              "the candidate breaks the submission format (the detail was not valid UTF-8)",
                              "pointer", pointer_ok(pointer) ? pointer : "");
        if (!e)
                return NULL;
        msg = json_string_value(json_object_get(e, "message"));
        at = json_string_value(json_object_get(e, "pointer"));
        if (asprintf(&fb, "Rejected: %s (at %s).", msg, *at ? at : "/") >= 0)
                res = pipeline_result(task, "rejected", NULL, NULL, e, 0);
        /* nothing ran: no seed to reproduce; the feedback names the field */
        if (res && (json_object_del(res, "seed") || json_object_set_new(res, "feedback", json_string(fb)))) {
                json_decref(res);
                res = NULL;
        }
        free(fb);
        json_decref(e);
        return res;
}

json_t *pipeline_error(const char *kind, const char *fmt, ...)
{
        char msg[1024];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        return json_pack("{s:s, s:s}", "kind", kind, "message", msg);
}

/* First line of the log that mentions an error, or the first line. */
static void first_error_line(const char *log, char *out, size_t outlen)
{
        const char *line = log, *pick = NULL;

        out[0] = '\0';
        if (!log)
                return;
        while (line && *line) {
                if (!pick && strstr(line, "error") && (!strchr(line, '\n') || strstr(line, "error") < strchr(line, '\n')))
                        pick = line;
                line = strchr(line, '\n');
                if (line)
                        line++;
        }
        if (!pick)
                pick = log;
        size_t n = strcspn(pick, "\n");
        if (n >= outlen)
                n = outlen - 1;
        memcpy(out, pick, n);
        out[n] = '\0';
}

/* A compared value: a number, or NaN/Inf, which JSON carries as strings. */
static void value_text(json_t *v, char *out, size_t len)
{
        if (json_is_string(v))
                snprintf(out, len, "%s", json_string_value(v));
        else
                snprintf(out, len, "%.9g", json_number_value(v));
}

/*
 * Whether a GPU worker's timing section says the candidate ran faster than
 * half the roofline bound: timing.suspicious, or any timing.shapes[].roofline
 * .suspicious (a RESULT that carries only the per-shape flags).
 */
static bool timing_suspicious(json_t *timing)
{
        size_t i;
        json_t *s;

        if (json_is_true(json_object_get(timing, "suspicious")))
                return true;
        json_array_foreach(json_object_get(timing, "shapes"), i, s) {
                if (json_is_true(json_object_get(json_object_get(s, "roofline"), "suspicious")))
                        return true;
        }
        return false;
}

/* A positive finite number as a new real, else null. */
static json_t *positive_or_null(double x)
{
        return isfinite(x) && x > 0 ? json_real(x) : json_null();
}

/*
 * Every yardstick of one timed shape set @s (a timing.shapes[] member of
 * the result's own copy): speedup_vs {reference, torch_eager,
 * torch_compile} and roofline_fraction, each null where unknown.
 */
static int shape_yardsticks(json_t *s, const char *task, const char *gpu_name, const Baselines *baselines)
{
        double cand = json_number_value(json_object_get(json_object_get(s, "candidate"), "median_ms"));
        double roof = json_number_value(json_object_get(json_object_get(s, "roofline"), "min_ms"));
        BaselineTimes bt = { 0, 0 };
        json_t *vs;

        double ref = json_number_value(json_object_get(s, "speedup"));

        if (!(isfinite(cand) && cand > 0))
                cand = 0;
        /* A time the reference comparison does not back (no speedup stated: a reference median of 0,
         * say) is not a yardstick for PyTorch either: only the speedup the checks believed is. */
        if (!cand || !(isfinite(ref) && ref > 0) || baselines_lookup(baselines, gpu_name, task, json_string_value(json_object_get(s, "shape")), &bt))
                bt.eager_ms = bt.compile_ms = 0;
        vs = json_pack("{s:o, s:o, s:o}", "reference", positive_or_null(json_number_value(json_object_get(s, "speedup"))),
                       "torch_eager", positive_or_null(cand ? bt.eager_ms / cand : 0), "torch_compile",
                       positive_or_null(cand ? bt.compile_ms / cand : 0));
        if (!vs || json_object_set_new(s, "speedup_vs", vs))
                return -ENOMEM;
        return json_object_set_new(s, "roofline_fraction",
                                   cand && isfinite(roof) && roof > 0 ? json_real(fmin(1.0, roof / cand))
                                                                     : json_null())
                       ? -ENOMEM : 0;
}

/* Geometric mean of member @key (or @key2 of it) over @shapes; NaN when any is missing or none. */
static double shapes_geomean(json_t *shapes, const char *key, const char *key2)
{
        double logsum = 0;
        size_t i, n = 0;
        json_t *s;

        json_array_foreach(shapes, i, s) {
                json_t *v = json_object_get(s, key);
                double x;
                if (key2)
                        v = json_object_get(v, key2);
                x = json_is_number(v) ? json_number_value(v) : NAN;
                if (!(isfinite(x) && x > 0))
                        return NAN;
                logsum += log(x);
                n++;
        }
        return n ? exp(logsum / (double)n) : NAN;
}

/*
 * Add the yardsticks to the result's timing, per shape set and overall
 * (the overall values follow timing.speedup: the geometric mean over the
 * timed shape sets, which is the one shape set's value when one was timed).
 * The result's timing is replaced by a copy first: the GPU RESULT it came
 * from is borrowed.
 */
static int add_yardsticks(json_t *res, const char *task, const Baselines *baselines)
{
        json_t *timing = json_object_get(res, "timing"), *shapes, *s, *vs;
        const char *gpu_name = json_string_value(json_object_get(json_object_get(res, "gpu"), "name"));
        size_t i;

        if (!json_is_object(timing) || !json_is_array(json_object_get(timing, "shapes")))
                return 0;
        timing = json_deep_copy(timing);
        if (!timing || json_object_set_new(res, "timing", timing))
                return -ENOMEM;
        shapes = json_object_get(timing, "shapes");
        json_array_foreach(shapes, i, s) {
                if (json_is_object(s) && shape_yardsticks(s, task, gpu_name, baselines))
                        return -ENOMEM;
        }
        /* overall against the reference is timing.speedup itself, the same rule by construction */
        vs = json_pack("{s:o, s:o, s:o}", "reference", positive_or_null(json_number_value(json_object_get(timing, "speedup"))),
                       "torch_eager", positive_or_null(shapes_geomean(shapes, "speedup_vs", "torch_eager")),
                       "torch_compile", positive_or_null(shapes_geomean(shapes, "speedup_vs", "torch_compile")));
        if (!vs || json_object_set_new(timing, "speedup_vs", vs))
                return -ENOMEM;
        return json_object_set_new(timing, "roofline_fraction",
                                   positive_or_null(shapes_geomean(shapes, "roofline_fraction", NULL))) ? -ENOMEM : 0;
}

/*
 * The sentences that name every yardstick of a correct result and the
 * strongest baseline (the one with the smallest speedup; only when a
 * PyTorch baseline exists), then the fraction of the roofline bound; ""
 * when there is neither.
 */
static void yardstick_line(json_t *timing, char *out, size_t len)
{
        static const struct {
                const char *key, *label;
        } names[] = { { "reference", "the reference" }, { "torch_eager", "torch eager" },
                      { "torch_compile", "torch.compile" } };
        json_t *vs = json_object_get(timing, "speedup_vs");
        json_t *rf = json_object_get(timing, "roofline_fraction");
        size_t n = 0, strongest = 0, count = 0;
        bool baseline = false;

        out[0] = '\0';
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                json_t *v = json_object_get(vs, names[i].key);
                if (!json_is_number(v))
                        continue;
                if (i > 0)
                        baseline = true;
                if (!count++ || json_number_value(v) < json_number_value(json_object_get(vs, names[strongest].key)))
                        strongest = i;
        }
        for (size_t i = 0; baseline && i < sizeof(names) / sizeof(names[0]) && n < len; i++) {
                json_t *v = json_object_get(vs, names[i].key);
                if (json_is_number(v))
                        n += (size_t)snprintf(out + n, len - n, "%s%.3gx %s%s", n ? ", " : "Yardsticks: ",
                                              json_number_value(v), names[i].label,
                                              i == strongest ? " (the strongest baseline)" : "");
        }
        if (baseline && n < len)
                n += (size_t)snprintf(out + n, len - n, ".");
        if (json_is_number(rf) && n < len)
                snprintf(out + n, len - n, "%s%.3g%% of the roofline bound.", n ? " " : "",
                         100 * json_number_value(rf));
}

static char *feedback_text(const char *verdict, json_t *result)
{
        json_t *error = json_object_get(result, "error");
        json_t *compile = json_object_get(result, "compile");
        json_t *timing = json_object_get(result, "timing");
        json_t *corr = json_object_get(result, "correctness");
        const char *msg = json_string_value(json_object_get(error, "message"));
        char *text = NULL, line[512];
        int r = -1;

        if (strcmp(verdict, "compiled") == 0) {
                json_t *kernels = json_object_get(compile, "kernels");
                r = asprintf(&text, "Compiled: %zu kernel(s). Submit with mode \"full\" to check correctness and speed.",
                             json_array_size(kernels));
        } else if (strcmp(verdict, "compile_error") == 0) {
                first_error_line(json_string_value(json_object_get(compile, "log")), line, sizeof(line));
                r = asprintf(&text, "Compilation failed. First error: %s", line[0] ? line : (msg ? msg : "see compile.log"));
        } else if (strcmp(verdict, "correct") == 0) {
                double sp = json_number_value(json_object_get(timing, "speedup"));
                size_t shapes = json_array_size(json_object_get(corr, "shapes"));
                bool sus = timing_suspicious(timing);
                yardstick_line(timing, line, sizeof(line));
                r = asprintf(&text, "Correct on %zu shape set(s); %.3gx %s than the reference (geometric mean of medians).%s%s",
                             shapes, sp >= 1 ? sp : (sp > 0 ? 1 / sp : 0), sp >= 1 ? "faster" : "slower",
                             line[0] ? " " : "", line);
                if (r >= 0 && sus) {
                        const char *shape = NULL;
                        size_t i;
                        json_t *s, *rf;
                        char *t2 = NULL;
                        json_array_foreach(json_object_get(timing, "shapes"), i, s) {
                                rf = json_object_get(s, "roofline");
                                if (json_is_true(json_object_get(rf, "suspicious"))) {
                                        shape = json_string_value(json_object_get(s, "shape"));
                                        break;
                                }
                        }
                        if (asprintf(&t2, "%s Warning: %s%s%s ran faster than the hardware allows (under half the "
                                     "roofline bound); the speedup is withheld from the reward until the timing "
                                     "is explained.", text, shape ? "shape '" : "a shape set", shape ? shape : "",
                                     shape ? "'" : "") >= 0) {
                                free(text);
                                text = t2;
                        }
                }
        } else if (strcmp(verdict, "incorrect") == 0) {
                const char *kind = json_string_value(json_object_get(error, "kind"));
                const char *shape = json_string_value(json_object_get(error, "shape"));
                json_t *fm = NULL;
                size_t i;
                json_t *s, *b;
                json_array_foreach(json_object_get(corr, "shapes"), i, s) {
                        size_t j;
                        json_array_foreach(json_object_get(s, "buffers"), j, b) {
                                json_t *list = json_object_get(b, "first_mismatches");
                                if (json_array_size(list) > 0 && !fm) {
                                        fm = json_array_get(list, 0);
                                        if (!shape)
                                                shape = json_string_value(json_object_get(s, "shape"));
                                        char got[32], want[32];
                                        value_text(json_object_get(fm, "got"), got, sizeof(got));
                                        value_text(json_object_get(fm, "want"), want, sizeof(want));
                                        snprintf(line, sizeof(line), "buffer '%s' index %" JSON_INTEGER_FORMAT
                                                 ": got %s, expected %s (%" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT
                                                 " elements outside the tolerance, %" JSON_INTEGER_FORMAT " NaN/Inf disagreements)",
                                                 json_string_value(json_object_get(b, "name")),
                                                 json_integer_value(json_object_get(fm, "index")), got, want,
                                                 json_integer_value(json_object_get(b, "mismatches")),
                                                 json_integer_value(json_object_get(b, "count")),
                                                 json_integer_value(json_object_get(b, "nan_inf_mismatches")));
                                }
                        }
                }
                if (fm)
                        r = asprintf(&text, "Incorrect on shape set '%s': first mismatch in %s.%s%s", shape ? shape : "?", line,
                                     msg ? " " : "", msg ? msg : "");
                else
                        r = asprintf(&text, "Incorrect (%s)%s%s%s: %s", kind ? kind : "mismatch", shape ? " on shape set '" : "",
                                     shape ? shape : "", shape ? "'" : "", msg ? msg : "outputs differ from the reference");
        } else if (strcmp(verdict, "runtime_error") == 0 && !json_is_integer(json_object_get(error, "launch"))) {
                /* kevald-torch's: a forward pass, no launch or kernel of a plan to name */
                r = asprintf(&text, "Runtime error %s, shape set '%s', %s phase: %s", jsonutil_str(error, "name", "?"),
                             jsonutil_str(error, "shape", "?"), jsonutil_str(error, "phase", "?"), msg ? msg : "");
        } else if (strcmp(verdict, "runtime_error") == 0) {
                r = asprintf(&text, "Runtime error %s in launch %" JSON_INTEGER_FORMAT " (kernel '%s'), shape set '%s', %s phase: %s",
                             jsonutil_str(error, "name", "?"),
                             json_integer_value(json_object_get(error, "launch")),
                             jsonutil_str(error, "kernel", "?"),
                             jsonutil_str(error, "shape", "?"),
                             jsonutil_str(error, "phase", "?"), msg ? msg : "");
        } else if (strcmp(verdict, "timeout") == 0) {
                r = asprintf(&text, "Timed out: %s", msg ? msg : "the kernel did not finish within the time limit (infinite loop or far too slow).");
        } else if (strcmp(verdict, "rejected") == 0) {
                r = asprintf(&text, "Rejected: %s", msg ? msg : "the submission breaks the contract.");
        } else {
                r = asprintf(&text, "%s: %s", verdict, msg ? msg : "no details");
        }
        return r < 0 ? NULL : text;
}

/** pipeline_result() - see pipeline.h. */
json_t *pipeline_result(const char *task, const char *verdict, json_t *compile, json_t *gpu,
                        json_t *error, uint64_t seed)
{
        return pipeline_result_measured(task, verdict, compile, gpu, error, seed, NULL);
}

/** pipeline_result_measured() - see pipeline.h. */
json_t *pipeline_result_measured(const char *task, const char *verdict, json_t *compile, json_t *gpu,
                                 json_t *error, uint64_t seed, const Baselines *baselines)
{
        static const char *const from_gpu[] = { "correctness", "timing", "resources", "error", "gpu",
                                                "gpu_busy_ms", "gpu_active_ms", "wall_ms", "cleanup",
                                                "late_waits", "phases_ms" };
        json_t *res = json_object();
        json_t *timing, *vs, *rf;
        char seedhex[17];
        char *fb;
        double speedup = 0;
        bool suspicious, rewarded;

        json_object_set_new(res, "verdict", json_string(verdict));
        json_object_set_new(res, "task", task ? json_string(task) : json_null());
        snprintf(seedhex, sizeof(seedhex), "%016" PRIx64, seed);
        json_object_set_new(res, "seed", json_string(seedhex));
        if (compile)
                json_object_set(res, "compile", compile);
        for (size_t i = 0; gpu && i < sizeof(from_gpu) / sizeof(from_gpu[0]); i++) {
                json_t *v = json_object_get(gpu, from_gpu[i]);
                if (v && !json_is_null(v))
                        json_object_set(res, from_gpu[i], v);
        }
        if (error)
                json_object_set(res, "error", error);
        if (!json_object_get(res, "error"))
                json_object_set_new(res, "error", json_null());
        if (add_yardsticks(res, task, baselines)) {
                json_decref(res);
                return NULL;
        }
        /* A time under half the roofline bound is not believed: the verdict
         * and timing.speedup stay as measured, the reward gets no speedup. */
        timing = json_object_get(res, "timing");
        suspicious = timing_suspicious(timing);
        rewarded = strcmp(verdict, "correct") == 0 && !suspicious;
        if (rewarded && json_is_number(json_object_get(timing, "speedup")))
                speedup = json_number_value(json_object_get(timing, "speedup"));
        vs = json_object_get(timing, "speedup_vs");
        rf = json_object_get(timing, "roofline_fraction");
        json_object_set_new(res, "reward_fields",
                            json_pack("{s:b, s:b, s:o, s:o, s:o, s:b}", "compiled", json_is_true(json_object_get(compile, "ok")),
                                      "correct", strcmp(verdict, "correct") == 0,
                                      "speedup", speedup > 0 && isfinite(speedup) ? json_real(speedup) : json_null(),
                                      "speedup_vs", rewarded && vs && speedup > 0 && isfinite(speedup)
                                                            ? json_deep_copy(vs) : json_null(),
                                      "roofline_fraction", rewarded && rf ? json_deep_copy(rf) : json_null(),
                                      "suspicious", suspicious));
        fb = feedback_text(verdict, res);
        json_object_set_new(res, "feedback", json_string(fb ? fb : verdict));
        free(fb);
        return res;
}
