/*
 * pipeline - see pipeline.h. The feedback text is written for a model's
 * next turn: the verdict first, then the one fact it needs to act on (the
 * first compile error, the first mismatch, the CUDA error and where it
 * happened, or the speed and what limits it), in a few short sentences.
 */
#include "server/pipeline.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
                                            "log_truncated", "kernels", "lowered_names", "error" };
        json_t *out = json_object();

        for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
                json_t *v = json_object_get(compile_result, keep[i]);
                if (v)
                        json_object_set(out, keep[i], v);
        }
        json_object_set_new(out, "cache_hit", json_boolean(cache_hit));
        return out;
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
                r = asprintf(&text, "Correct on %zu shape set(s); %.3gx %s than the reference (geometric mean of medians).",
                             shapes, sp >= 1 ? sp : (sp > 0 ? 1 / sp : 0), sp >= 1 ? "faster" : "slower");
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

json_t *pipeline_result(const char *task, const char *verdict, json_t *compile, json_t *gpu,
                        json_t *error, uint64_t seed)
{
        static const char *const from_gpu[] = { "correctness", "timing", "resources", "error", "gpu",
                                                "gpu_busy_ms", "gpu_active_ms", "wall_ms", "cleanup",
                                                "late_waits", "phases_ms" };
        json_t *res = json_object();
        json_t *timing;
        char seedhex[17];
        char *fb;
        double speedup = 0;
        bool suspicious;

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
        /* A time under half the roofline bound is not believed: the verdict
         * and timing.speedup stay as measured, the reward gets no speedup. */
        timing = json_object_get(res, "timing");
        suspicious = timing_suspicious(timing);
        if (strcmp(verdict, "correct") == 0 && !suspicious && json_is_number(json_object_get(timing, "speedup")))
                speedup = json_number_value(json_object_get(timing, "speedup"));
        json_object_set_new(res, "reward_fields",
                            json_pack("{s:b, s:b, s:o, s:b}", "compiled", json_is_true(json_object_get(compile, "ok")),
                                      "correct", strcmp(verdict, "correct") == 0,
                                      "speedup", speedup > 0 && isfinite(speedup) ? json_real(speedup) : json_null(),
                                      "suspicious", suspicious));
        fb = feedback_text(verdict, res);
        json_object_set_new(res, "feedback", json_string(fb ? fb : verdict));
        free(fb);
        return res;
}
