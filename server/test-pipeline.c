/*
 * test-pipeline - the result a GPU worker's RESULT becomes: reward_fields
 * carries compiled, correct, speedup and suspicious; a timing faster than
 * the roofline allows (timing.suspicious, or a shape's roofline.suspicious)
 * keeps its verdict and timing.speedup but gets no reward speedup, and the
 * feedback says the speedup is withheld; results without timing (compile
 * only, failures) say suspicious false.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "server/pipeline.h"
#include "common/testcheck.h"

static json_t *rf_get(json_t *res, const char *key)
{
        return json_object_get(json_object_get(res, "reward_fields"), key);
}

static json_t *gpu_result(double speedup, int timing_flag, int shape_flag)
{
        json_t *shape = json_pack("{s:s, s:f, s:{s:f, s:b}}", "shape", "default", "speedup", speedup, "roofline",
                                  "min_ms", 0.01, "suspicious", shape_flag);
        json_t *timing = json_pack("{s:f, s:[o]}", "speedup", speedup, "shapes", shape);

        if (timing_flag >= 0)
                json_object_set_new(timing, "suspicious", json_boolean(timing_flag));
        return json_pack("{s:s, s:{s:b, s:[]}, s:o}", "verdict", "correct", "correctness", "passed", 1, "shapes",
                         "timing", timing);
}

static const char *feedback(json_t *res)
{
        return json_string_value(json_object_get(res, "feedback"));
}

int main(void)
{
        json_t *compile = json_pack("{s:b, s:[]}", "ok", 1, "kernels");
        json_t *gpu, *res, *err;

        /* Believable timing: the measured speedup is the reward's. */
        gpu = gpu_result(1.83, 0, 0);
        res = pipeline_result("t", "correct", compile, gpu, NULL, 1);
        CHECK(json_is_true(rf_get(res, "compiled")) && json_is_true(rf_get(res, "correct")));
        CHECK(json_is_real(rf_get(res, "speedup")) && fabs(json_real_value(rf_get(res, "speedup")) - 1.83) < 1e-12);
        CHECK(json_is_false(rf_get(res, "suspicious")));
        CHECK(json_object_size(json_object_get(res, "reward_fields")) == 4);
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
        CHECK(json_is_true(rf_get(res, "compiled")) && json_is_false(rf_get(res, "correct")));
        json_decref(res);
        err = pipeline_error("timeout", "too slow");
        res = pipeline_result("t", "timeout", NULL, NULL, err, 1);
        CHECK(json_is_false(rf_get(res, "suspicious")) && json_is_null(rf_get(res, "speedup")));
        CHECK(json_is_false(rf_get(res, "compiled")));
        json_decref(res);
        json_decref(err);

        json_decref(compile);
        if (failures)
                fprintf(stderr, "%d check(s) failed\n", failures);
        else
                printf("pipeline: all checks passed\n");
        return failures ? 1 : 0;
}
