/*
 * test-resultcheck - what a worker's RESULT must be before it is believed.
 *
 * GPU: a correct verdict whose medians back its speedup passes, and so does
 * one that states no speedup; a speedup its medians do not give (per shape
 * set or as their geometric mean), a median out of range, an unflagged time
 * under half the roofline bound, correctness that did not pass or is no
 * object, and fields of the wrong types fail; other verdicts need only the
 * types.
 *
 * Compile: a failed compile passes without a CUBIN and fails with one;
 * ok:true fails without a CUBIN, with a blob that is no ELF, with fields of
 * the wrong types. With a real CUBIN (argv[1], built by nvcc for argv[2],
 * e.g. sm_90): its own kernel list passes; another arch, a kernel missing,
 * an extra one, a parameter of another size, a fenced part that is not an
 * ELF or that fence.offset/size do not place exactly, all fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testcheck.h"
#include "common/limits.h"
#include "server/dispatch/resultcheck.h"
#include "worker/cubin.h"

static char why[RESULTCHECK_WHY_BYTES];

static json_t *correct(double cand_ms, double ref_ms, double shape_speedup, double speedup)
{
        return json_pack("{s:s, s:{s:b, s:[{s:s, s:b}]}, s:{s:f, s:[{s:s, s:f, s:{s:f}, s:{s:f}, s:{s:f, s:b}}]},"
                         " s:f, s:f}",
                         "verdict", "correct", "correctness", "passed", 1, "shapes", "shape", "default", "passed", 1,
                         "timing", "speedup", speedup, "shapes", "shape", "default", "speedup", shape_speedup,
                         "candidate", "median_ms", cand_ms, "reference", "median_ms", ref_ms, "roofline", "min_ms",
                         0.01, "suspicious", 0, "wall_ms", 12.5, "gpu_busy_ms", 3.0);
}

static int gpu(json_t *res)
{
        int r = resultcheck_gpu(res, 120000.0, why);

        json_decref(res);
        return r;
}

static void test_gpu(void)
{
        json_t *res;

        CHECK(gpu(correct(0.5, 1.0, 2.0, 2.0)) == 0);
        /* the forgery: 1e308 over medians of 1 ms and 1 ms */
        CHECK(gpu(correct(1.0, 1.0, 1e308, 1e308)) == RESULTCHECK_E_INVALID);
        CHECK(strstr(why, "/timing/shapes/0/speedup"));
        CHECK(gpu(correct(0.5, 1.0, 2.0, 3.0)) == RESULTCHECK_E_INVALID);
        CHECK(strstr(why, "/timing/speedup"));
        /* medians out of range: none under 100 ns, none past the deadline */
        CHECK(gpu(correct(1e-300, 1.0, 1e300, 1e300)) == RESULTCHECK_E_INVALID);
        CHECK(gpu(correct(1.0, 1e9, 1e9, 1e9)) == RESULTCHECK_E_INVALID);
        /* under half the roofline bound (0.01 ms) and not flagged */
        CHECK(gpu(correct(0.004, 1.0, 250.0, 250.0)) == RESULTCHECK_E_INVALID);
        CHECK(strstr(why, "roofline"));
        res = correct(0.004, 1.0, 250.0, 250.0);
        json_object_set_new(json_object_get(json_array_get(json_object_get(json_object_get(res, "timing"), "shapes"),
                                                           0), "roofline"), "suspicious", json_true());
        CHECK(gpu(res) == 0);
        /* correctness */
        res = correct(0.5, 1.0, 2.0, 2.0);
        json_object_set_new(res, "correctness", json_integer(7));
        CHECK(gpu(res) == RESULTCHECK_E_INVALID && strstr(why, "/correctness"));
        res = correct(0.5, 1.0, 2.0, 2.0);
        json_object_set_new(json_object_get(res, "correctness"), "passed", json_false());
        CHECK(gpu(res) == RESULTCHECK_E_INVALID);
        res = correct(0.5, 1.0, 2.0, 2.0);
        json_object_set_new(json_array_get(json_object_get(json_object_get(res, "correctness"), "shapes"), 0),
                            "passed", json_false());
        CHECK(gpu(res) == RESULTCHECK_E_INVALID);
        /* a median too small to time (0, as a fake driver's events give): no speedup stated, believed;
         * the same with a speedup stated is not */
        res = correct(150.6, 0.0, 1.0, 0.0);
        json_object_set_new(json_array_get(json_object_get(json_object_get(res, "timing"), "shapes"), 0), "speedup",
                            json_null());
        CHECK(gpu(res) == 0);
        res = correct(150.6, 0.0, 1.0, 1e6);
        json_object_set_new(json_array_get(json_object_get(json_object_get(res, "timing"), "shapes"), 0), "speedup",
                            json_null());
        CHECK(gpu(res) == RESULTCHECK_E_INVALID && strstr(why, "not every timed shape set"));
        /* no timed shape set: nothing backs the speedup */
        res = correct(0.5, 1.0, 2.0, 2.0);
        json_array_clear(json_object_get(json_object_get(res, "timing"), "shapes"));
        CHECK(gpu(res) == RESULTCHECK_E_INVALID);
        /* types */
        res = correct(0.5, 1.0, 2.0, 2.0);
        json_object_set_new(res, "wall_ms", json_string("fast"));
        CHECK(gpu(res) == RESULTCHECK_E_INVALID && strstr(why, "/wall_ms"));
        res = correct(0.5, 1.0, 2.0, 2.0);
        json_object_set_new(res, "error", json_pack("{s:i}", "kind", 3));
        CHECK(gpu(res) == RESULTCHECK_E_INVALID);
        /* other verdicts: types only */
        CHECK(gpu(json_pack("{s:s, s:{s:b, s:[]}, s:n, s:{s:s}}", "verdict", "incorrect", "correctness", "passed", 0,
                            "shapes", "timing", "error", "kind", "mismatch")) == 0);
        CHECK(gpu(json_pack("{s:s, s:s}", "verdict", "timeout", "exiting", "timeout")) == 0);
        CHECK(gpu(json_pack("{s:s, s:i}", "verdict", "timeout", "exiting", 3)) == RESULTCHECK_E_INVALID);
        CHECK(gpu(json_pack("{s:i}", "verdict", 1)) == RESULTCHECK_E_INVALID);
}

static int comp(json_t *res, const uint8_t *blob, size_t len, const char *arch)
{
        int r = resultcheck_compile(res, blob, len, arch, why);

        json_decref(res);
        return r;
}

static void test_compile_without_cubin(void)
{
        static const uint8_t junk[16] = "NOT-AN-ELF-CUBIN";

        CHECK(comp(json_pack("{s:b, s:s, s:s}", "ok", 0, "error", "compile", "log", "x.cu(1): error"), NULL, 0,
                   "sm_90a") == 0);
        CHECK(comp(json_pack("{s:b, s:s}", "ok", 0, "error", "compile"), junk, sizeof(junk), "sm_90a") ==
              RESULTCHECK_E_INVALID);
        CHECK(comp(json_pack("{s:b, s:[]}", "ok", 1, "kernels"), NULL, 0, "sm_90a") == RESULTCHECK_E_INVALID);
        CHECK(strstr(why, "without a CUBIN"));
        CHECK(comp(json_pack("{s:b, s:[]}", "ok", 1, "kernels"), junk, sizeof(junk), "sm_90a") ==
              RESULTCHECK_E_INVALID);
        CHECK(strstr(why, "not a CUDA ELF"));
        CHECK(comp(json_pack("{s:b, s:i, s:s, s:s}", "ok", 1, "log", 7, "compile_ms", "fast", "kernels", "all"), junk,
                   sizeof(junk), "sm_90a") == RESULTCHECK_E_INVALID);
        CHECK(comp(json_pack("{s:s}", "ok", "yes"), NULL, 0, "sm_90a") == RESULTCHECK_E_INVALID);
}

static uint8_t *read_file(const char *path, size_t *ret_len)
{
        FILE *f = fopen(path, "rb");
        uint8_t *buf = NULL;
        long n;

        if (!f)
                return NULL;
        if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
            (buf = malloc((size_t)n)) && fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                buf = NULL;
        }
        if (buf)
                *ret_len = (size_t)n;
        fclose(f);
        return buf;
}

/* The kernels of @cubin as the compile worker lists them (name and params); a new array. */
static json_t *kernels_of(const uint8_t *cubin, size_t len)
{
        CubinInfo *info = NULL;
        json_t *arr = json_array();

        CHECK(cubin_parse(cubin, len, &info) == 0);
        for (size_t i = 0; i < info->n_kernels; i++) {
                json_t *params = json_array();
                for (size_t p = 0; p < info->kernels[i].n_params; p++)
                        json_array_append_new(params, json_pack("{s:i, s:i}", "offset", info->kernels[i].params[p].offset,
                                                                "size", info->kernels[i].params[p].size));
                json_array_append_new(arr, json_pack("{s:s, s:o, s:i}", "name", info->kernels[i].name, "params",
                                                     params, "registers", 16));
        }
        cubin_info_free(info);
        return arr;
}

/* An ok compile RESULT listing a copy of @kernels (borrowed). */
static json_t *ok_result(json_t *kernels, const char *arch)
{
        return json_pack("{s:b, s:s, s:f, s:s, s:o, s:{}}", "ok", 1, "log", "", "compile_ms", 12.0, "arch", arch,
                         "kernels", json_deep_copy(kernels), "lowered_names");
}

static void test_compile_cubin(const char *path, const char *arch)
{
        size_t len = 0;
        uint8_t *cubin = read_file(path, &len), *two;
        json_t *k, *res;

        CHECK(cubin != NULL);
        k = kernels_of(cubin, len);
        CHECK(json_array_size(k) >= 1);
        CHECK(comp(ok_result(k, arch), cubin, len, arch) == 0);
        /* another architecture */
        CHECK(comp(ok_result(k, "sm_75"), cubin, len, "sm_75") == RESULTCHECK_E_INVALID);
        CHECK(strstr(why, "sm_75"));
        CHECK(comp(ok_result(k, "sm_75"), cubin, len, arch) == RESULTCHECK_E_INVALID); /* /arch not the requested */
        /* a kernel renamed, one more, one fewer, a parameter of another size */
        res = ok_result(k, arch);
        json_object_set_new(json_array_get(json_object_get(res, "kernels"), 0), "name", json_string("evil"));
        CHECK(comp(json_deep_copy(res), cubin, len, arch) == RESULTCHECK_E_INVALID);
        json_decref(res);
        res = ok_result(k, arch);
        json_array_append_new(json_object_get(res, "kernels"), json_pack("{s:s, s:[]}", "name", "extra", "params"));
        CHECK(comp(res, cubin, len, arch) == RESULTCHECK_E_INVALID);
        res = ok_result(k, arch);
        json_array_clear(json_object_get(res, "kernels"));
        CHECK(comp(res, cubin, len, arch) == RESULTCHECK_E_INVALID);
        if (json_array_size(json_object_get(json_array_get(k, 0), "params")) > 0) {
                res = ok_result(k, arch);
                json_object_set_new(json_array_get(json_object_get(json_array_get(json_object_get(res, "kernels"), 0),
                                                                   "params"), 0), "size", json_integer(3));
                CHECK(comp(res, cubin, len, arch) == RESULTCHECK_E_INVALID);
        }
        /* a fenced part: the CUBIN twice is fine, a fence that is no ELF or misplaced is not */
        two = malloc(2 * len);
        CHECK(two != NULL);
        memcpy(two, cubin, len);
        memcpy(two + len, cubin, len);
        res = ok_result(k, arch);
        json_object_set_new(res, "fence", json_pack("{s:I, s:I}", "offset", (json_int_t)len, "size", (json_int_t)len));
        CHECK(comp(json_deep_copy(res), two, 2 * len, arch) == 0);
        CHECK(comp(json_deep_copy(res), two, 2 * len - 1, arch) == RESULTCHECK_E_INVALID); /* not exactly placed */
        memset(two + len, 'x', 64);
        CHECK(comp(res, two, 2 * len, arch) == RESULTCHECK_E_INVALID && strstr(why, "fenced"));
        free(two);
        json_decref(k);
        free(cubin);
}

/* kevald-torch's build RESULT (docs/internals.md, the kevald-torch worker) */
static int torch(const char *json, size_t blob_len)
{
        json_t *res = json_loads(json, 0, NULL);
        int r = resultcheck_torch_build(res, blob_len, why);

        json_decref(res);
        return r;
}

static void test_torch_build(void)
{
        char *big = malloc(LIMIT_KB_BUILD_LOG_BYTES + 64);
        json_t *res;

        CHECK(torch("{\"id\": 1, \"ok\": true, \"error\": null, \"log\": \"\", \"wall_ms\": 5}", 0) == 0);
        CHECK(torch("{\"ok\": false, \"error\": \"compile\", \"log\": \"x\", \"wall_ms\": 0}", 0) == 0);
        CHECK(torch("{\"ok\": false, \"error\": \"no_model_new\", \"wall_ms\": 1.5}", 0) == 0);
        CHECK(torch("{\"ok\": true, \"error\": \"compile\", \"wall_ms\": 1}", 0) == RESULTCHECK_E_INVALID);
        CHECK(torch("{\"ok\": false, \"error\": \"segfault\", \"wall_ms\": 1}", 0) == RESULTCHECK_E_INVALID);
        CHECK(torch("{\"ok\": 1, \"wall_ms\": 1}", 0) == RESULTCHECK_E_INVALID && strstr(why, "/ok"));
        CHECK(torch("{\"ok\": true, \"wall_ms\": -1}", 0) == RESULTCHECK_E_INVALID && strstr(why, "/wall_ms"));
        CHECK(torch("{\"ok\": true, \"log\": 3, \"wall_ms\": 1}", 0) == RESULTCHECK_E_INVALID);
        CHECK(torch("{\"ok\": true, \"wall_ms\": 1}", 16) == RESULTCHECK_E_INVALID && strstr(why, "blob"));
        if (big) {
                memset(big, 'x', LIMIT_KB_BUILD_LOG_BYTES + 1);
                big[LIMIT_KB_BUILD_LOG_BYTES + 1] = '\0';
                res = json_pack("{s:b, s:s, s:i}", "ok", 1, "log", big, "wall_ms", 1);
                CHECK(resultcheck_torch_build(res, 0, why) == RESULTCHECK_E_INVALID && strstr(why, "/log"));
                json_decref(res);
                free(big);
        }
        /* the cache's form: torch_build_result() keeps torch and compile_ms */
        res = json_pack("{s:b, s:n, s:s, s:f, s:s}", "ok", 1, "error", "log", "", "compile_ms", 3.0, "torch", "2.9");
        CHECK(resultcheck_torch_compile(res, why) == 0);
        json_object_del(res, "torch");
        CHECK(resultcheck_torch_compile(res, why) == RESULTCHECK_E_INVALID);
        json_decref(res);
}

int main(int argc, char **argv)
{
        test_gpu();
        test_torch_build();
        test_compile_without_cubin();
        if (argc >= 3)
                test_compile_cubin(argv[1], argv[2]);
        else
                printf("test-resultcheck: no CUBIN given (no nvcc at build time): the real-ELF cases are skipped\n");
        return failures ? 1 : 0;
}
