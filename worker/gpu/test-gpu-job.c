/*
 * test-gpu-job - parsing and checking of the GPU worker's resolved JOB
 * (worker/gpu/gpu_job.h): a full valid job, defaults, and one broken field at a
 * time, each of which must be refused with a message naming the field.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/gpu/gpu_job.h"
#include "common/testcheck.h"

static const char *valid =
        "{\"id\": 7, \"seed\": \"9f1c2e0a5b7d3c11\","
        " \"timing\": {\"budget_ms\": 500, \"target_precision\": 0.02, \"min_trials\": 5, \"max_trials\": 100, \"warmup\": 2},"
        " \"mode\": \"full\", \"deadline_ms\": 60000, \"correctness_trials\": 2,"
        " \"cubins\": {\"candidate\": {\"offset\": 0, \"size\": 100}, \"reference\": {\"offset\": 100, \"size\": 50}},"
        " \"shapes\": [{\"name\": \"default\", \"params\": {\"N\": 1000},"
        "   \"buffers\": [{\"name\": \"x\", \"dtype\": \"f32\", \"count\": 1000, \"role\": \"in\","
        "                  \"init\": {\"dist\": \"normal\", \"mean\": 1, \"std\": 2, \"scale\": 0.5}},"
        "                 {\"name\": \"h\", \"dtype\": \"f16\", \"count\": 64, \"role\": \"inout\","
        "                  \"init\": {\"dist\": \"uniform\", \"low\": 0, \"high\": 2, \"offset\": 1}},"
        "                 {\"name\": \"idx\", \"dtype\": \"i32\", \"count\": 10, \"role\": \"in\","
        "                  \"init\": {\"dist\": \"int\", \"low\": 0, \"high\": 7}},"
        "                 {\"name\": \"y\", \"dtype\": \"f32\", \"count\": 1000, \"role\": \"out\", \"atol\": 0.001},"
        "                 {\"name\": \"A\", \"dtype\": \"bf16\", \"count\": 4096, \"role\": \"in\", \"init\": {\"dist\": \"mixed\"}},"
        "                 {\"name\": \"C\", \"dtype\": \"bf16\", \"count\": 4096, \"role\": \"out\"}],"
        "   \"flops\": 2000, \"bytes\": 8000,"
        "   \"candidate\": {\"scratch\": [{\"name\": \"tmp\", \"dtype\": \"f32\", \"count\": 512}],"
        "     \"plan\": [{\"kernel\": \"k1\", \"grid\": [4], \"block\": [256, 1, 1], \"shared\": 65536,"
        "                 \"args\": [{\"buffer\": \"x\"}, {\"buffer\": \"tmp\"}, {\"type\": \"i32\", \"value\": -5},"
        "                          {\"type\": \"u64\", \"value\": 1000}, {\"type\": \"f32\", \"value\": 0.5},"
        "                          {\"type\": \"f64\", \"value\": 2}]},"
        "                {\"kernel\": \"k2\", \"grid\": [1, 2, 3], \"block\": [32], \"args\": [{\"buffer\": \"y\"}]}]},"
        "   \"reference\": {\"scratch\": [],"
        "     \"plan\": [{\"kernel\": \"ref\", \"grid\": [4], \"block\": [256], \"shared\": 0, \"args\": [{\"buffer\": \"y\"}]},"
        "                {\"library\": \"gemm\", \"a\": \"A\", \"b\": \"A\", \"c\": \"C\", \"m\": 64, \"n\": 64, \"k\": 64,"
        "                 \"batch\": 1, \"trans_a\": false, \"trans_b\": true, \"alpha\": 1.0, \"beta\": 0.0}]}}]}";

/* Parse @text with @blob_len; return the code, the job in *ret (or NULL). */
static int parse(const char *text, size_t blob_len, GpuJob **ret, char *err, size_t err_len)
{
        json_error_t je;
        json_t *doc = json_loads(text, 0, &je);
        int r;

        if (!doc) {
                fprintf(stderr, "bad test JSON: %s at %d\n", je.text, je.position);
                exit(2);
        }
        *ret = NULL;
        r = gpu_job_parse(doc, blob_len, ret, err, err_len);
        json_decref(doc);
        return r;
}

static void test_valid(void)
{
        char err[512];
        GpuJob *job;
        const JobShape *s;
        const JobStep *st;
        int32_t i32;
        uint64_t u64;
        float f32;
        double f64;

        CHECK(parse(valid, 150, &job, err, sizeof(err)) == 0);
        if (!job) {
                fprintf(stderr, "valid job refused: %s\n", err);
                failures++;
                return;
        }
        CHECK(job->id == 7 && job->seed == 0x9f1c2e0a5b7d3c11ull && strcmp(job->seed_text, "9f1c2e0a5b7d3c11") == 0);
        CHECK(job->budget_ms == 500 && job->target_precision == 0.02 && job->min_trials == 5 && job->max_trials == 100);
        CHECK(job->warmup == 2 && job->deadline_ms == 60000 && job->trials == 2);
        CHECK(job->cand_off == 0 && job->cand_size == 100 && job->ref_off == 100 && job->ref_size == 50);
        CHECK(job->n_shapes == 1);
        s = &job->shapes[0];
        CHECK(strcmp(s->name, "default") == 0 && s->n_buffers == 6);
        CHECK(json_integer_value(json_object_get(s->params, "N")) == 1000);
        CHECK(s->has_flops && s->flops == 2000 && s->has_bytes && s->bytes == 8000);
        CHECK(s->buffers[0].dtype == KV_DT_F32 && s->buffers[0].bytes == 4000 && s->buffers[0].role == JOB_ROLE_IN);
        CHECK(s->buffers[0].init.dist == KV_DIST_NORMAL && s->buffers[0].init.a == 1 && s->buffers[0].init.b == 2 &&
              s->buffers[0].init.scale == 0.5 && s->buffers[0].init.offset == 0);
        CHECK(s->buffers[1].role == JOB_ROLE_INOUT && s->buffers[1].bytes == 128 && s->buffers[1].init.offset == 1);
        CHECK(s->buffers[1].atol == 1e-2 && s->buffers[1].rtol == 1e-2); /* f16 default */
        CHECK(s->buffers[2].init.dist == KV_DIST_INT && s->buffers[2].init.ilow == 0 && s->buffers[2].init.ihigh == 7);
        CHECK(s->buffers[3].atol == 0.001 && s->buffers[3].rtol == 1e-4 && !s->buffers[3].has_init);
        CHECK(s->buffers[4].init.dist == KV_DIST_MIXED && s->buffers[4].init.scale == 1);
        CHECK(s->cand.n_scratch == 1 && s->cand.scratch[0].role == JOB_ROLE_SCRATCH && s->cand.scratch[0].bytes == 2048);
        CHECK(s->cand.n_steps == 2);
        st = &s->cand.steps[0];
        CHECK(st->kind == JOB_STEP_LAUNCH && strcmp(st->kernel, "k1") == 0 && st->grid[0] == 4 && st->grid[1] == 1 &&
              st->block[0] == 256 && st->shared == 65536 && st->n_args == 6);
        CHECK(st->args[0].kind == JOB_ARG_BUFFER && st->args[0].buffer == 0 && st->args[0].size == 8);
        CHECK(st->args[1].kind == JOB_ARG_BUFFER && st->args[1].buffer == 6); /* scratch after the 6 task buffers */
        memcpy(&i32, st->args[2].value, 4);
        memcpy(&u64, st->args[3].value, 8);
        memcpy(&f32, st->args[4].value, 4);
        memcpy(&f64, st->args[5].value, 8);
        CHECK(st->args[2].size == 4 && i32 == -5 && st->args[3].size == 8 && u64 == 1000);
        CHECK(st->args[4].size == 4 && f32 == 0.5f && st->args[5].size == 8 && f64 == 2.0);
        CHECK(s->cand.steps[1].grid[1] == 2 && s->cand.steps[1].grid[2] == 3 && s->cand.steps[1].block[1] == 1);
        st = &s->ref.steps[1];
        CHECK(st->kind == JOB_STEP_GEMM && st->a == 4 && st->b == 4 && st->c == 5 && st->m == 64 && st->trans_b &&
              !st->trans_a && st->batch == 1 && st->alpha == 1.0);
        CHECK(gpu_job_side_buffer(s, &s->cand, 6) == &s->cand.scratch[0]);
        gpu_job_free(job);
}

/* Replace the first occurrence of @from in the valid job by @to; it must be refused, naming @want. */
static void refuse(const char *from, const char *to, size_t blob_len, const char *want)
{
        const char *p = strstr(valid, from);
        char *text, err[512] = "";
        GpuJob *job = NULL;
        int r;

        if (!p) {
                fprintf(stderr, "test bug: '%s' not in the job\n", from);
                failures++;
                return;
        }
        text = malloc(strlen(valid) + strlen(to) + 1);
        memcpy(text, valid, (size_t)(p - valid));
        strcpy(text + (p - valid), to);
        strcat(text, p + strlen(from));
        r = parse(text, blob_len, &job, err, sizeof(err));
        if (r != 1 || job || !strstr(err, want)) {
                fprintf(stderr, "replacing '%s' by '%s': r=%d err='%s' (wanted '%s')\n", from, to, r, err, want);
                failures++;
        }
        gpu_job_free(job);
        free(text);
}

static void test_refused(void)
{
        refuse("\"id\": 7", "\"id\": \"7\"", 150, "'id' must be an integer");
        refuse("9f1c2e0a5b7d3c11", "xyz", 150, "'seed'");
        refuse("9f1c2e0a5b7d3c11", "19f1c2e0a5b7d3c11", 150, "'seed'");
        refuse("\"mode\": \"full\"", "\"mode\": \"compile\"", 150, "'mode'");
        refuse("\"size\": 50", "\"size\": 51", 150, "outside the blob");
        refuse("\"correctness_trials\": 2", "\"correctness_trials\": 17", 150, "correctness_trials");
        refuse("\"max_trials\": 100", "\"max_trials\": 100000", 150, "max_trials");
        refuse("\"budget_ms\": 500", "\"budget_ms\": 600000", 150, "budget_ms");
        refuse("\"dtype\": \"f32\", \"count\": 1000, \"role\": \"in\"", "\"dtype\": \"f8\", \"count\": 1000, \"role\": \"in\"",
               150, "unknown dtype");
        refuse("\"count\": 1000, \"role\": \"in\"", "\"count\": -1, \"role\": \"in\"", 150, "'count'");
        refuse("\"role\": \"in\",", "\"role\": \"input\",", 150, "role must be");
        refuse("\"init\": {\"dist\": \"int\", \"low\": 0, \"high\": 7}", "\"init\": {\"dist\": \"int\", \"low\": 7, \"high\": 7}",
               150, "low < high");
        refuse("\"init\": {\"dist\": \"mixed\"}", "\"init\": {\"dist\": \"cauchy\"}", 150, "init.dist");
        refuse("\"role\": \"in\", \"init\": {\"dist\": \"mixed\"}", "\"role\": \"in\"", 150, "needs 'init'");
        refuse("{\"buffer\": \"tmp\"}", "{\"buffer\": \"nope\"}", 150, "argument 1 names no buffer");
        refuse("{\"type\": \"i32\", \"value\": -5}", "{\"type\": \"i32\", \"value\": 3000000000}", 150, "does not fit i32");
        refuse("{\"type\": \"u64\", \"value\": 1000}", "{\"type\": \"u64\", \"value\": -1}", 150, "does not fit u64");
        refuse("{\"type\": \"f32\", \"value\": 0.5}", "{\"type\": \"f16\", \"value\": 0.5}", 150, "scalar type");
        refuse("{\"type\": \"i32\", \"value\": -5}", "{\"type\": \"i32\", \"value\": 1.5}", 150, "integer value");
        refuse("\"grid\": [4], \"block\": [256, 1, 1]", "\"grid\": [0], \"block\": [256, 1, 1]", 150, "'grid[0]'");
        refuse("\"grid\": [4], \"block\": [256, 1, 1]", "\"grid\": [4], \"block\": [1, 1, 1, 1]", 150, "'block'");
        refuse("\"shared\": 65536", "\"shared\": -1", 150, "'shared'");
        refuse("\"name\": \"tmp\"", "\"name\": \"x\"", 150, "has a task buffer's name");
        refuse("\"a\": \"A\", \"b\": \"A\"", "\"a\": \"x\", \"b\": \"A\"", 150, "one dtype");
        refuse("\"m\": 64", "\"m\": 65", 150, "does not fit its buffers");
        refuse("\"batch\": 1", "\"batch\": 2", 150, "does not fit its buffers");
        refuse("{\"kernel\": \"k2\", \"grid\": [1, 2, 3]",
               "{\"library\": \"gemm\", \"a\": \"A\", \"b\": \"A\", \"c\": \"C\", \"m\": 1, \"n\": 1, \"k\": 1}, {\"kernel\": \"k2\", \"grid\": [1, 2, 3]",
               150, "references only");
        refuse("\"scratch\": [{\"name\": \"tmp\", \"dtype\": \"f32\", \"count\": 512}]",
               "\"scratch\": [{\"name\": \"tmp\", \"dtype\": \"f32\", \"count\": 2000000000}]", 150, "scratch totals");
        refuse("\"plan\": [{\"kernel\": \"ref\"", "\"plan\": [], \"x\": [{\"kernel\": \"ref\"", 150, "'plan'");
}

int main(void)
{
        test_valid();
        test_refused();
        if (failures) {
                fprintf(stderr, "test-gpu-job: %d failure(s)\n", failures);
                return 1;
        }
        printf("test-gpu-job: ok\n");
        return 0;
}
