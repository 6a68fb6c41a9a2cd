/*
 * test-pipeline - the result a GPU worker's RESULT becomes: reward_fields
 * carries compiled, correct, speedup and suspicious; a timing faster than
 * the roofline allows (timing.suspicious, or a shape's roofline.suspicious)
 * keeps its verdict and timing.speedup but gets no reward speedup, and the
 * feedback says the speedup is withheld; results without timing (compile
 * only, failures) say suspicious false.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"

#include "server/dispatch/pipeline.h"
#include "common/testcheck.h"

static json_t *rf_get(json_t *res, const char *key)
{
        return json_object_get(json_object_get(res, "reward_fields"), key);
}

static const char *feedback(json_t *res)
{
        return json_string_value(json_object_get(res, "feedback"));
}

static json_t *timed_shape(const char *name, double speedup, double median_ms, double roofline_ms, int flag)
{
        return json_pack("{s:s, s:f, s:{s:f}, s:{s:o, s:b}}", "shape", name, "speedup", speedup, "candidate",
                         "median_ms", median_ms, "roofline", "min_ms",
                         roofline_ms > 0 ? json_real(roofline_ms) : json_null(), "suspicious", flag);
}

static json_t *gpu_result(double speedup, int timing_flag, int shape_flag)
{
        json_t *shape = timed_shape("default", speedup, 0.04, 0.01, shape_flag);
        json_t *timing = json_pack("{s:f, s:[o]}", "speedup", speedup, "shapes", shape);

        if (timing_flag >= 0)
                json_object_set_new(timing, "suspicious", json_boolean(timing_flag));
        return json_pack("{s:s, s:{s:b, s:[]}, s:o, s:{s:s}}", "verdict", "correct", "correctness", "passed", 1,
                         "shapes", "timing", timing, "gpu", "name", "NVIDIA H100 80GB HBM3");
}

static json_t *path(json_t *v, const char *a, const char *b, const char *c)
{
        v = json_object_get(v, a);
        if (b)
                v = json_object_get(v, b);
        if (c)
                v = json_object_get(v, c);
        return v;
}

static bool near(json_t *v, double want)
{
        return json_is_real(v) && fabs(json_real_value(v) - want) < 1e-9 * fabs(want);
}

/* A task library folder with one baseline file for the H100; the caller removes it. */
static Baselines *baselines_fixture(char *dir)
{
        char sub[256];
        Baselines *bl = NULL;
        FILE *f;

        CHECK(mkdtemp(dir) != NULL);
        snprintf(sub, sizeof(sub), "%s/baselines", dir);
        CHECK(mkdir(sub, 0700) == 0);
        snprintf(sub, sizeof(sub), "%s/baselines/nvidia-h100-80gb-hbm3.json", dir);
        f = fopen(sub, "w");
        CHECK(f != NULL);
        if (!f)
                return NULL;
        fputs("{\"format\": 1, \"gpu\": \"NVIDIA H100 80GB HBM3\", \"tasks\": {\"t\": {"
              "\"default\": {\"params\": {\"N\": 8}, \"eager_ms\": 0.02, \"compile_ms\": 0.05},"
              "\"small\": {\"params\": {\"N\": 2}, \"eager_ms\": 0.004, \"compile_ms\": null}}}}", f);
        fclose(f);
        CHECK(baselines_load(dir, NULL, &bl, NULL) == 0 && baselines_count(bl) == 1);
        return bl;
}

/* Yardsticks with baselines: per shape set, overall, in reward_fields and in the feedback. */
static void test_yardsticks(json_t *compile)
{
        char dir[] = "/tmp/kevald-pipeline-XXXXXX", cmd[128];
        Baselines *bl = baselines_fixture(dir);
        json_t *gpu, *res, *ts;

        /* One timed shape set: candidate 0.04 ms, reference 2x slower, eager 0.02 ms, compile 0.05 ms. */
        gpu = gpu_result(2.0, 0, 0);
        res = pipeline_result_measured("t", "correct", compile, gpu, NULL, 1, bl);
        ts = json_array_get(path(res, "timing", "shapes", NULL), 0);
        CHECK(near(path(ts, "speedup_vs", "reference", NULL), 2.0));
        CHECK(near(path(ts, "speedup_vs", "torch_eager", NULL), 0.5));
        CHECK(near(path(ts, "speedup_vs", "torch_compile", NULL), 1.25));
        CHECK(near(json_object_get(ts, "roofline_fraction"), 0.25));
        CHECK(near(path(res, "timing", "speedup_vs", "torch_eager"), 0.5));
        CHECK(near(path(res, "timing", "roofline_fraction", NULL), 0.25));
        CHECK(near(path(res, "reward_fields", "speedup_vs", "torch_eager"), 0.5));
        CHECK(near(path(res, "reward_fields", "speedup_vs", "torch_compile"), 1.25));
        CHECK(near(path(res, "reward_fields", "speedup_vs", "reference"), 2.0));
        CHECK(near(path(res, "reward_fields", "roofline_fraction", NULL), 0.25));
        CHECK(strstr(feedback(res), "2x faster than the reference"));
        CHECK(strstr(feedback(res), "Yardsticks: 2x the reference, 0.5x torch eager (the strongest baseline), "
                                    "1.25x torch.compile. 25% of the roofline bound."));
        /* the GPU worker's RESULT is borrowed, not changed */
        CHECK(!path(json_array_get(path(gpu, "timing", "shapes", NULL), 0), "speedup_vs", NULL, NULL));
        CHECK(!path(gpu, "timing", "speedup_vs", NULL));
        json_decref(res);

        /* Another GPU model: no baseline, never a guess; the reference and roofline stay. */
        json_object_set_new(json_object_get(gpu, "gpu"), "name", json_string("NVIDIA H200"));
        res = pipeline_result_measured("t", "correct", compile, gpu, NULL, 1, bl);
        CHECK(json_is_null(path(res, "timing", "speedup_vs", "torch_eager")));
        CHECK(json_is_null(path(res, "timing", "speedup_vs", "torch_compile")));
        CHECK(near(path(res, "timing", "speedup_vs", "reference"), 2.0));
        CHECK(json_is_null(path(res, "reward_fields", "speedup_vs", "torch_compile")));
        CHECK(near(path(res, "reward_fields", "roofline_fraction", NULL), 0.25));
        CHECK(!strstr(feedback(res), "Yardsticks") && strstr(feedback(res), "25% of the roofline bound."));
        json_decref(res);
        /* Another task of the same name sent inline gets NULL baselines from the dispatcher: the same. */
        json_object_set_new(json_object_get(gpu, "gpu"), "name", json_string("NVIDIA H100 80GB HBM3"));
        res = pipeline_result_measured("t", "correct", compile, gpu, NULL, 1, NULL);
        CHECK(json_is_null(path(res, "timing", "speedup_vs", "torch_eager")));
        json_decref(res);
        /* An unknown task name: no baseline. */
        res = pipeline_result_measured("u", "correct", compile, gpu, NULL, 1, bl);
        CHECK(json_is_null(path(res, "timing", "speedup_vs", "torch_eager")));
        json_decref(res);
        json_decref(gpu);

        /* Two timed shape sets: overall values are geometric means; a null anywhere is null overall. */
        gpu = gpu_result(2.0, 0, 0);
        json_array_append_new(path(gpu, "timing", "shapes", NULL), timed_shape("small", 8.0, 0.001, 0.002, 0));
        json_object_set_new(json_object_get(gpu, "timing"), "speedup", json_real(4.0));
        res = pipeline_result_measured("t", "correct", compile, gpu, NULL, 1, bl);
        ts = json_array_get(path(res, "timing", "shapes", NULL), 1);
        CHECK(near(path(ts, "speedup_vs", "torch_eager", NULL), 4.0));
        CHECK(json_is_null(path(ts, "speedup_vs", "torch_compile", NULL)));
        CHECK(near(json_object_get(ts, "roofline_fraction"), 1.0)); /* 2 / 1, clamped */
        CHECK(near(path(res, "timing", "speedup_vs", "reference"), 4.0));
        CHECK(near(path(res, "timing", "speedup_vs", "torch_eager"), sqrt(0.5 * 4.0)));
        CHECK(json_is_null(path(res, "timing", "speedup_vs", "torch_compile")));
        CHECK(near(path(res, "timing", "roofline_fraction", NULL), 0.5));
        CHECK(strstr(feedback(res), "Yardsticks: 4x the reference, 1.41x torch eager (the strongest baseline). "
                                    "50% of the roofline bound."));
        json_decref(res);
        /* No roofline on one shape set: roofline_fraction null there and overall. */
        json_object_set_new(path(ts = json_array_get(path(gpu, "timing", "shapes", NULL), 1), "roofline", NULL, NULL),
                            "min_ms", json_null());
        res = pipeline_result_measured("t", "correct", compile, gpu, NULL, 1, bl);
        CHECK(json_is_null(json_object_get(json_array_get(path(res, "timing", "shapes", NULL), 1), "roofline_fraction")));
        CHECK(json_is_null(path(res, "timing", "roofline_fraction", NULL)));
        CHECK(json_is_null(path(res, "reward_fields", "roofline_fraction", NULL)));
        CHECK(!strstr(feedback(res), "roofline bound"));
        json_decref(res);
        json_decref(gpu);

        /* Suspicious or incorrect: the timing keeps its yardsticks, the reward gets none. */
        gpu = gpu_result(40.0, 1, 1);
        res = pipeline_result_measured("t", "correct", compile, gpu, NULL, 1, bl);
        CHECK(near(path(res, "timing", "speedup_vs", "torch_eager"), 0.5));
        CHECK(json_is_null(path(res, "reward_fields", "speedup_vs", NULL)));
        CHECK(json_is_null(path(res, "reward_fields", "roofline_fraction", NULL)));
        json_decref(res);
        json_decref(gpu);
        gpu = gpu_result(2.0, 0, 0);
        res = pipeline_result_measured("t", "incorrect", compile, gpu, NULL, 1, bl);
        CHECK(json_is_null(path(res, "reward_fields", "speedup_vs", NULL)));
        CHECK(json_is_null(path(res, "reward_fields", "roofline_fraction", NULL)));
        json_decref(res);
        json_decref(gpu);

        /* A correct result that states no speedup (a reference median of 0): no PyTorch yardstick
         * from its candidate median either, nothing for the reward to take. */
        gpu = gpu_result(2.0, 0, 0);
        json_object_set_new(json_array_get(path(gpu, "timing", "shapes", NULL), 0), "speedup", json_null());
        json_object_set_new(json_object_get(gpu, "timing"), "speedup", json_null());
        res = pipeline_result_measured("t", "correct", compile, gpu, NULL, 1, bl);
        CHECK(json_is_null(path(res, "timing", "speedup_vs", "torch_eager")));
        CHECK(json_is_null(path(res, "timing", "speedup_vs", "torch_compile")));
        CHECK(json_is_null(path(res, "reward_fields", "speedup", NULL)));
        CHECK(json_is_null(path(res, "reward_fields", "speedup_vs", NULL)));
        json_decref(res);
        json_decref(gpu);

        baselines_free(bl);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0);
}

/* A message cut inside a UTF-8 sequence (it quotes the client) still makes a rejected result. */
static void test_rejected_bad_utf8(void)
{
        json_t *res = pipeline_rejected("t", "unknown buffer 'ab\xc3'", "/plan/0/args/1");

        CHECK(res != NULL);
        CHECK(!strcmp(json_string_value(path(res, "verdict", NULL, NULL)), "rejected"));
        CHECK(!strcmp(json_string_value(path(res, "error", "pointer", NULL)), "/plan/0/args/1"));
        CHECK(strstr(feedback(res), "not valid UTF-8") && strstr(feedback(res), "(at /plan/0/args/1)"));
        json_decref(res);
        res = pipeline_rejected("t", "bad", "/plan/0/k\xc3");
        CHECK(res && !strcmp(json_string_value(path(res, "error", "pointer", NULL)), ""));
        json_decref(res);
}

int main(void)
{
        log_init("test-pipeline", LOG_LEVEL_ERROR);
        json_t *compile = json_pack("{s:b, s:[]}", "ok", 1, "kernels");
        json_t *gpu, *res, *err;

        /* Believable timing: the measured speedup is the reward's. */
        gpu = gpu_result(1.83, 0, 0);
        res = pipeline_result("t", "correct", compile, gpu, NULL, 1);
        CHECK(json_is_true(rf_get(res, "compiled")) && json_is_true(rf_get(res, "correct")));
        CHECK(json_is_real(rf_get(res, "speedup")) && fabs(json_real_value(rf_get(res, "speedup")) - 1.83) < 1e-12);
        CHECK(json_is_false(rf_get(res, "suspicious")));
        CHECK(json_object_size(json_object_get(res, "reward_fields")) == 6);
        /* no baselines: the reference's speedup only, and the roofline fraction 0.01 / 0.04 */
        CHECK(near(path(res, "reward_fields", "speedup_vs", "reference"), 1.83));
        CHECK(json_is_null(path(res, "reward_fields", "speedup_vs", "torch_eager")));
        CHECK(near(path(res, "reward_fields", "roofline_fraction", NULL), 0.25));
        CHECK(strstr(feedback(res), "1.83x faster") && !strstr(feedback(res), "withheld"));
        json_decref(res);
        json_decref(gpu);

        /* timing.suspicious: still correct, timing keeps its number, the reward gets none. */
        gpu = gpu_result(40.0, 1, 1);
        res = pipeline_result("t", "correct", compile, gpu, NULL, 1);
        CHECK(!strcmp(json_string_value(json_object_get(res, "verdict")), "correct"));
        CHECK(json_is_true(rf_get(res, "correct")));
        CHECK(json_is_null(rf_get(res, "speedup")));
        CHECK(json_is_true(rf_get(res, "suspicious")));
        CHECK(json_real_value(json_object_get(json_object_get(res, "timing"), "speedup")) == 40.0);
        CHECK(strstr(feedback(res), "shape 'default' ran faster than the hardware allows"));
        CHECK(strstr(feedback(res), "the speedup is withheld from the reward"));
        json_decref(res);
        json_decref(gpu);

        /* Only a shape's roofline flag (no timing.suspicious): the same. */
        gpu = gpu_result(40.0, -1, 1);
        res = pipeline_result("t", "correct", compile, gpu, NULL, 1);
        CHECK(json_is_null(rf_get(res, "speedup")) && json_is_true(rf_get(res, "suspicious")));
        CHECK(strstr(feedback(res), "withheld"));
        json_decref(res);
        json_decref(gpu);

        /* timing.suspicious without any flagged shape: withheld, the feedback names no shape. */
        gpu = gpu_result(40.0, 1, 0);
        res = pipeline_result("t", "correct", compile, gpu, NULL, 1);
        CHECK(json_is_null(rf_get(res, "speedup")) && json_is_true(rf_get(res, "suspicious")));
        CHECK(strstr(feedback(res), "Warning: a shape set ran faster") && strstr(feedback(res), "withheld"));
        json_decref(res);
        json_decref(gpu);

        /* No timing at all: a compile-only result and a supervisor-decided failure. */
        res = pipeline_result(NULL, "compiled", compile, NULL, NULL, 1);
        CHECK(json_is_false(rf_get(res, "suspicious")) && json_is_null(rf_get(res, "speedup")));
        CHECK(json_is_null(rf_get(res, "speedup_vs")) && json_is_null(rf_get(res, "roofline_fraction")));
        CHECK(!json_object_get(res, "timing"));
        CHECK(json_is_true(rf_get(res, "compiled")) && json_is_false(rf_get(res, "correct")));
        json_decref(res);
        err = pipeline_error("timeout", "too slow");
        res = pipeline_result("t", "timeout", NULL, NULL, err, 1);
        CHECK(json_is_false(rf_get(res, "suspicious")) && json_is_null(rf_get(res, "speedup")));
        CHECK(json_is_false(rf_get(res, "compiled")));
        json_decref(res);
        json_decref(err);

        test_yardsticks(compile);
        test_rejected_bad_utf8();
        json_decref(compile);
        if (failures)
                fprintf(stderr, "%d check(s) failed\n", failures);
        else
                printf("pipeline: all checks passed\n");
        return failures ? 1 : 0;
}
