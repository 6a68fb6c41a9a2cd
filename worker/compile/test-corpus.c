/*
 * The header corpus (tests/compile/corpus/, manifest.json): kernels written
 * the way models and people write them for nvcc, compiled by compile_run()
 * with the real NVRTC and nvJitLink exactly as a candidate is (the fenced
 * build included).
 *
 *   - every .cu file of the folder is listed; at least
 *     manifest.min_compile_rate of the "kernels" compile, each
 *     failure listed with the first lines of its log; every one that
 *     compiles has a fenced build without an error;
 *   - each "host" sample (a main(), launches, the CUDA runtime API, a
 *     PyTorch extension, host-only headers) is refused before NVRTC runs
 *     (error "compile") with exactly the log lines the manifest lists, in
 *     their order, each a line of the log;
 *   - no compiled kernel's log warns of a macro redefinition (the prelude's
 *     INFINITY against libcu++'s, say).
 */
#include <dirent.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/testcheck.h"
#include "common/readfile.h"
#include "worker/compile/compile.h"

static Compiler *comp;

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* @path whole, NUL-terminated (common/readfile.h), or NULL. */
static char *read_file(const char *path, size_t *ret_len)
{
        char *buf = NULL;

        return readfile_all(path, 256u << 20, &buf, ret_len) == 0 ? buf : NULL;
}

static const char *jstr(json_t *o, const char *key)
{
        const char *s = json_string_value(json_object_get(o, key));
        return s ? s : "";
}

/* Compile corpus file @file (relative to @dir) with @names; the caller clears @out. */
static int compile_file(const char *dir, const char *file, json_t *names, CompileOutput *out)
{
        const char *exprs[64];
        char path[4096];
        size_t len = 0, n = 0, i;
        json_t *v;
        char *src;
        int r;

        snprintf(path, sizeof(path), "%s/%s", dir, file);
        src = read_file(path, &len);
        if (!src) {
                fprintf(stderr, "corpus: cannot read %s\n", path);
                return -1;
        }
        json_array_foreach(names, i, v)
                if (n < 64)
                        exprs[n++] = json_string_value(v);
        CompileJob job = { .language = "cuda", .source = src, .source_len = len,
                           .name_expressions = exprs, .n_name_expressions = n };
        memset(out, 0, sizeof(*out));
        r = compile_run(comp, &job, out);
        free(src);
        return r;
}

/* How many *.cu files @dir holds (not its sub-folders). */
static size_t count_sources(const char *dir)
{
        DIR *d = opendir(dir);
        struct dirent *de;
        size_t n = 0, len;

        while (d && (de = readdir(d))) {
                len = strlen(de->d_name);
                n += len > 3 && strcmp(de->d_name + len - 3, ".cu") == 0;
        }
        if (d)
                closedir(d);
        return n;
}

/* The first @lines lines of @log, indented, to stderr. */
static void print_head(const char *log, int lines)
{
        while (*log && lines-- > 0) {
                size_t n = strcspn(log, "\n");
                fprintf(stderr, "    %.*s\n", (int)n, log);
                log += n + (log[n] == '\n');
        }
}

static void t_kernels(const char *dir, json_t *manifest)
{
        json_t *kernels = json_object_get(manifest, "kernels"), *k;
        double rate = json_number_value(json_object_get(manifest, "min_compile_rate"));
        size_t i, ok = 0, total = json_array_size(kernels);
        double t0 = now_ms();

        CHECK(total >= 60);
        CHECK(rate >= 0.95);
        CHECK(count_sources(dir) == total); /* every .cu of the folder is in the manifest */
        json_array_foreach(kernels, i, k) {
                CompileOutput out;
                const char *file = jstr(k, "file");
                json_t *fence;
                if (compile_file(dir, file, json_object_get(k, "name_expressions"), &out) != 0) {
                        CHECK(!"corpus file compiled");
                        continue;
                }
                if (json_is_true(json_object_get(out.result, "ok"))) {
                        ok++;
                        if (strstr(jstr(out.result, "log"), "redefinition")) {
                                fprintf(stderr, "corpus: %s: a macro redefinition:\n", file);
                                print_head(jstr(out.result, "log"), 6);
                                failures++;
                        }
                        fence = json_object_get(out.result, "fence");
                        if (!json_is_object(fence) || json_object_get(fence, "error") || !out.fenced) {
                                fprintf(stderr, "corpus: %s: no fenced build: %s\n", file,
                                        json_is_object(fence) ? jstr(fence, "error") : "(no fence)");
                                failures++;
                        }
                } else {
                        fprintf(stderr, "corpus: %s does not compile (%s):\n", file,
                                jstr(out.result, "error"));
                        print_head(jstr(out.result, "log"), 6);
                }
                compile_output_clear(&out);
        }
        printf("corpus: %zu of %zu kernels compile (%.1f %%) in %.1f s\n", ok, total,
               total ? 100.0 * (double)ok / (double)total : 0.0, (now_ms() - t0) / 1000.0);
        CHECK(total > 0 && (double)ok >= rate * (double)total);
}

/* Each expected line is a whole line of @log, in order. */
static bool has_lines(const char *log, json_t *want)
{
        const char *p = log;
        json_t *v;
        size_t i;

        json_array_foreach(want, i, v) {
                const char *w = json_string_value(v), *hit;
                size_t n = strlen(w);
                for (hit = strstr(p, w); hit; hit = strstr(hit + 1, w))
                        if ((hit == log || hit[-1] == '\n') && (hit[n] == '\n' || hit[n] == '\0'))
                                break;
                if (!hit)
                        return false;
                p = hit + n;
        }
        return true;
}

static void t_host(const char *dir, json_t *manifest)
{
        json_t *host = json_object_get(manifest, "host"), *h;
        size_t i;

        CHECK(json_array_size(host) >= 4);
        json_array_foreach(host, i, h) {
                CompileOutput out;
                const char *file = jstr(h, "file"), *log;
                if (compile_file(dir, file, NULL, &out) != 0) {
                        CHECK(!"host sample compiled");
                        continue;
                }
                log = jstr(out.result, "log");
                if (json_is_true(json_object_get(out.result, "ok")) ||
                    strcmp(jstr(out.result, "error"), "compile") != 0 ||
                    !has_lines(log, json_object_get(h, "log"))) {
                        fprintf(stderr, "corpus: host sample %s not refused as the manifest says; log:\n%s\n",
                                file, log);
                        failures++;
                }
                /* Refused by the check: NVRTC never ran, so no NVRTC summary line. */
                CHECK(!strstr(log, "detected in the compilation"));
                compile_output_clear(&out);
        }
}

int main(void)
{
        const char *root = getenv("KEVALD_SOURCE_ROOT");
        char dir[4096], path[4200];
        json_error_t err;
        json_t *manifest;

        snprintf(dir, sizeof(dir), "%s/tests/compile/corpus", root ? root : KEVALD_SOURCE_DIR);
        snprintf(path, sizeof(path), "%s/manifest.json", dir);
        manifest = json_load_file(path, 0, &err);
        if (!manifest) {
                fprintf(stderr, "corpus: %s: %s\n", path, err.text);
                return 1;
        }
        CHECK(compile_open(getenv("KEVALD_CUDA_HOME"), &comp) == 0);
        if (!comp)
                return 1;
        t_kernels(dir, manifest);
        t_host(dir, manifest);
        compile_close(comp);
        json_decref(manifest);
        if (failures)
                fprintf(stderr, "test-corpus: %d failure(s)\n", failures);
        return failures ? 1 : 0;
}
