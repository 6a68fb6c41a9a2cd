/*
 * cli_summary - the human summary that `kevald submit`, `status` and
 * `wait` print for a submission (without --json): a few lines from the
 * submission object of the API, nothing that the JSON does not hold.
 */
#include "server/cmd/cli_summary.h"

#include <stdbool.h>
#include <string.h>

#include "common/jsonutil.h"

static const char *str(json_t *o, const char *key)
{
        return jsonutil_str(o, key, "");
}

static void print_number(FILE *f, json_t *v)
{
        if (json_is_number(v))
                fprintf(f, "%.6g", json_number_value(v));
        else if (json_is_string(v))
                fputs(json_string_value(v), f);
        else
                fputs("null", f);
}

/* The compile log from its first error line, at most @max_lines lines, indented. */
static void print_first_error(FILE *f, const char *log, int max_lines)
{
        const char *p = strstr(log, "error");
        int lines = 0;

        if (!p)
                p = log;
        while (p > log && p[-1] != '\n')
                p--;
        while (*p && lines < max_lines) {
                const char *eol = strchr(p, '\n');
                size_t len = eol ? (size_t)(eol - p) : strlen(p);

                if (len > 0 || lines > 0)
                        fprintf(f, "  %.*s\n", (int)(len > 400 ? 400 : len), p);
                lines++;
                if (!eol)
                        break;
                p = eol + 1;
        }
        if (*p && lines >= max_lines)
                fprintf(f, "  ...\n");
}

/**
 * cli_summary_print() - a submission as a person reads it: the verdict,
 * the compile (kernels and resources, or the log from its first error),
 * correctness per shape set (what failed, the first wrong element), timing
 * per shape set, the error and where it happened, the feedback
 * @f:   where to print
 * @sub: the submission object of the API; borrowed
 */
void cli_summary_print(FILE *f, json_t *sub)
{
        json_t *res = json_object_get(sub, "result"), *comp, *corr, *tim, *err, *v;
        const char *state = str(sub, "state");
        size_t i;

        fprintf(f, "submission %lld: %s", (long long)json_integer_value(json_object_get(sub, "id")),
                json_is_string(json_object_get(sub, "verdict")) ? str(sub, "verdict") : state);
        if (strcmp(state, "done") != 0)
                fprintf(f, " (not done yet)");
        fprintf(f, "  [task %s, mode %s", json_is_string(json_object_get(sub, "task")) ? str(sub, "task") : "none",
                str(sub, "mode"));
        if (json_is_number(json_object_get(sub, "speedup")))
                fprintf(f, ", %.3gx", json_number_value(json_object_get(sub, "speedup")));
        fprintf(f, "]\n");
        if (!res)
                return;
        comp = json_object_get(res, "compile");
        if (json_is_object(comp)) {
                if (json_is_true(json_object_get(comp, "ok"))) {
                        json_t *k;

                        fprintf(f, "compile: ok in %.1f ms%s; kernels:", json_number_value(json_object_get(comp, "compile_ms")),
                                json_is_true(json_object_get(comp, "cache_hit")) ? " (cache hit)" : "");
                        json_array_foreach(json_object_get(comp, "kernels"), i, k)
                                fprintf(f, "%s %s (%lld registers, %lld B shared, %lld B local)", i ? "," : "",
                                        str(k, "name"), (long long)json_integer_value(json_object_get(k, "registers")),
                                        (long long)json_integer_value(json_object_get(k, "shared_static")),
                                        (long long)json_integer_value(json_object_get(k, "local")));
                        fputc('\n', f);
                } else {
                        fprintf(f, "compile: FAILED (%s); from the first error:\n",
                                json_is_string(json_object_get(comp, "error")) ? str(comp, "error") : "error");
                        print_first_error(f, str(comp, "log"), 8);
                }
        }
        corr = json_object_get(res, "correctness");
        if (json_is_object(corr)) {
                json_t *sh;

                fprintf(f, "correctness: %s\n", json_is_true(json_object_get(corr, "passed")) ? "passed" : "FAILED");
                json_array_foreach(json_object_get(corr, "shapes"), i, sh) {
                        json_t *b;
                        size_t j;

                        fprintf(f, "  %-10s %s", str(sh, "shape"), json_is_true(json_object_get(sh, "passed")) ? "passed" : "FAILED");
                        if (json_is_integer(json_object_get(sh, "trials")))
                                fprintf(f, " (%lld trials)", (long long)json_integer_value(json_object_get(sh, "trials")));
                        if (json_is_false(json_object_get(sh, "guard_ok")))
                                fprintf(f, "; wrote out of bounds");
                        if (json_is_false(json_object_get(sh, "inputs_intact")))
                                fprintf(f, "; modified an input");
                        if (json_is_false(json_object_get(sh, "deterministic")))
                                fprintf(f, "; not deterministic");
                        json_array_foreach(json_object_get(sh, "buffers"), j, b) {
                                json_t *m = json_array_get(json_object_get(b, "first_mismatches"), 0);

                                long long wrong = json_integer_value(json_object_get(b, "mismatches")) +
                                                  json_integer_value(json_object_get(b, "nan_inf_mismatches"));

                                if (wrong <= 0)
                                        continue;
                                fprintf(f, "; %s: %lld of %lld wrong (", str(b, "name"), wrong,
                                        (long long)json_integer_value(json_object_get(b, "count")));
                                if (json_integer_value(json_object_get(b, "nan_inf_mismatches")) > 0)
                                        fprintf(f, "%lld NaN/Inf, ",
                                                (long long)json_integer_value(json_object_get(b, "nan_inf_mismatches")));
                                fprintf(f, "max abs ");
                                print_number(f, json_object_get(b, "max_abs"));
                                fputc(')', f);
                                if (m) {
                                        fprintf(f, ", first [%lld] got ", (long long)json_integer_value(json_object_get(m, "index")));
                                        print_number(f, json_object_get(m, "got"));
                                        fprintf(f, " want ");
                                        print_number(f, json_object_get(m, "want"));
                                }
                        }
                        fputc('\n', f);
                }
        }
        tim = json_object_get(res, "timing");
        if (json_is_object(tim)) {
                json_t *sh;

                if (json_is_number(json_object_get(tim, "speedup")))
                        fprintf(f, "timing: %.3gx the reference's speed (geometric mean over shape sets)\n",
                                json_number_value(json_object_get(tim, "speedup")));
                json_array_foreach(json_object_get(tim, "shapes"), i, sh) {
                        fprintf(f, "  %-10s %.4g ms vs %.4g ms reference", str(sh, "shape"),
                                json_number_value(json_object_get(json_object_get(sh, "candidate"), "median_ms")),
                                json_number_value(json_object_get(json_object_get(sh, "reference"), "median_ms")));
                        if (json_is_number(json_object_get(sh, "speedup")))
                                fprintf(f, " (%.3gx)", json_number_value(json_object_get(sh, "speedup")));
                        if (json_is_true(json_object_get(json_object_get(sh, "roofline"), "suspicious")))
                                fprintf(f, " [faster than the roofline: suspicious]");
                        fputc('\n', f);
                }
        }
        err = json_object_get(res, "error");
        if (json_is_object(err) && strcmp(str(err, "kind"), "compile") != 0) {
                static const char *const where[] = { "shape", "phase", "trial", "launch", "kernel" };
                bool first = true;

                fprintf(f, "error: %s", str(err, "kind"));
                if (*str(err, "name"))
                        fprintf(f, " %s", str(err, "name"));
                if (*str(err, "message"))
                        fprintf(f, ": %s", str(err, "message"));
                for (i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
                        v = json_object_get(err, where[i]);
                        if (!v || json_is_null(v))
                                continue;
                        fprintf(f, "%s%s ", first ? " (" : ", ", where[i]);
                        if (json_is_integer(v))
                                fprintf(f, "%lld", (long long)json_integer_value(v));
                        else
                                fputs(json_is_string(v) ? json_string_value(v) : "?", f);
                        first = false;
                }
                fprintf(f, "%s\n", first ? "" : ")");
        }
        if (*str(res, "feedback"))
                fprintf(f, "feedback: %s\n", str(res, "feedback"));
}
