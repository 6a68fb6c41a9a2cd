/*
 * Unit tests for common/spec*.c: task parsing and normalization on the
 * fixtures in tests/fixtures/tasks, exact pointers and messages for invalid
 * tasks and submissions, plan checks against compile results, the resolved
 * GPU job, prompts, and the JSON Schemas in schema/ against the C constants.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonutil.h"
#include "common/kbtasks.h"
#include "common/limits.h"
#include "common/spec.h"
#include "common/spec_internal.h"
#include "common/tasklib.h"
#include "common/testcheck.h"

static char root[2048];

#define CHECK_STR(got, want)                                                               \
        do {                                                                               \
                const char *g_ = (got), *w_ = (want);                                      \
                if (!g_ || strcmp(g_, w_) != 0) {                                          \
                        fprintf(stderr, "%s:%d: got '%s', want '%s'\n", __FILE__, __LINE__, \
                                g_ ? g_ : "(null)", w_);                                   \
                        failures++;                                                        \
                }                                                                          \
        } while (0)

static json_t *load_json(const char *rel)
{
        char path[4096];
        json_error_t e;
        json_t *j;

        snprintf(path, sizeof(path), "%s/%s", root, rel);
        j = json_load_file(path, 0, &e);
        if (!j) {
                fprintf(stderr, "cannot load %s: %s\n", path, e.text);
                exit(1);
        }
        return j;
}

static Task *load_task(const char *rel)
{
        char path[4096];
        SpecError err = { { 0 }, { 0 } };
        Task *t = NULL;
        int r;

        snprintf(path, sizeof(path), "%s/tests/fixtures/tasks/%s", root, rel);
        r = tasklib_load_file(path, &t, &err);
        if (r) {
                fprintf(stderr, "cannot parse %s: %d %s: %s\n", path, r, err.pointer, err.message);
                exit(1);
        }
        return t;
}

/* Walk a simple pointer (no escapes) to the parent of its last token. */
static json_t *walk(json_t *doc, const char *ptr, char *last)
{
        char buf[512], *tok, *save = NULL, *next;
        json_t *cur = doc;

        snprintf(buf, sizeof(buf), "%s", ptr + 1);
        tok = strtok_r(buf, "/", &save);
        while (tok) {
                next = strtok_r(NULL, "/", &save);
                if (!next) {
                        snprintf(last, 128, "%s", tok);
                        return cur;
                }
                cur = json_is_array(cur) ? json_array_get(cur, (size_t)atoi(tok))
                                         : json_object_get(cur, tok);
                tok = next;
        }
        return NULL;
}

/* Set (steals @v) or, with @v NULL, delete the member at @ptr. */
static void set_ptr(json_t *doc, const char *ptr, json_t *v)
{
        char last[128];
        json_t *parent = walk(doc, ptr, last);

        if (!parent) {
                fprintf(stderr, "bad pointer %s\n", ptr);
                exit(1);
        }
        if (json_is_array(parent)) {
                size_t i = (size_t)atoi(last);
                if (!v)
                        json_array_remove(parent, i);
                else if (i < json_array_size(parent))
                        json_array_set_new(parent, i, v);
                else
                        json_array_append_new(parent, v);
        } else if (!v) {
                json_object_del(parent, last);
        } else {
                json_object_set_new(parent, last, v);
        }
}

static json_t *js(const char *text)
{
        json_error_t e;
        json_t *j = json_loads(text, JSON_DECODE_ANY, &e);

        if (!j) {
                fprintf(stderr, "bad JSON in test: %s: %s\n", text, e.text);
                exit(1);
        }
        return j;
}

static char fixture_dir[4096];

/* Parse the vadd fixture with one change; expect @code, @pointer and @message. */
static void task_bad(const char *fixture, const char *ptr, const char *value, int want_code,
                     const char *want_ptr, const char *want_msg, int line)
{
        char rel[512], dir[4096];
        SpecError err = { { 0 }, { 0 } };
        Task *t = NULL;
        json_t *doc;
        int r;

        snprintf(rel, sizeof(rel), "tests/fixtures/tasks/%s", fixture);
        doc = load_json(rel);
        snprintf(dir, sizeof(dir), "%s/tests/fixtures/tasks/%s", root, fixture);
        *strrchr(dir, '/') = '\0';
        if (ptr)
                set_ptr(doc, ptr, value ? js(value) : NULL);
        r = spec_task_parse(doc, dir, &t, &err);
        if (r != want_code || strcmp(err.pointer, want_ptr) != 0 ||
            (want_msg[strlen(want_msg) - 1] == '*'
                     ? strncmp(err.message, want_msg, strlen(want_msg) - 1) != 0
                     : strcmp(err.message, want_msg) != 0)) {
                fprintf(stderr,
                        "test-spec.c:%d: %s %s=%s: got %d '%s' '%s', want %d '%s' '%s'\n", line,
                        fixture, ptr ? ptr : "-", value ? value : "(deleted)", r, err.pointer,
                        err.message, want_code, want_ptr, want_msg);
                failures++;
        }
        spec_task_free(t);
        json_decref(doc);
}
#define TASK_BAD(f, p, v, ptr, msg) task_bad(f, p, v, SPEC_E_INVALID, ptr, msg, __LINE__)

static void test_task_fixtures(void)
{
        Task *t = load_task("elementwise/vadd.json");
        json_t *d = spec_task_json(t), *ref = json_object_get(d, "reference"), *sum;
        char *prompt;

        CHECK_STR(spec_task_name(t), "vadd");
        CHECK(json_object_get(ref, "source_file") == NULL);
        CHECK(strstr(spec_task_reference_source(t), "vadd_ref(const float *a") != NULL);
        CHECK(json_array_size(spec_task_reference_options(t)) == 1);
        CHECK(json_integer_value(json_object_get(d, "correctness_trials")) == 3);
        CHECK(json_integer_value(json_object_get(json_array_get(json_object_get(
                                                                     json_object_get(d, "example"),
                                                                     "plan"),
                                                             0),
                                                 "shared")) == 0);
        CHECK(json_array_size(json_object_get(ref, "scratch")) == 0);
        sum = spec_task_summary(t);
        CHECK_STR(json_string_value(json_object_get(sum, "title")), "Vector add");
        CHECK(json_integer_value(json_object_get(sum, "level")) == 1);
        CHECK(json_array_size(json_object_get(sum, "dtypes")) == 1);
        CHECK(json_array_size(json_object_get(sum, "shapes")) == 2);
        json_decref(sum);
        prompt = spec_task_prompt(t, NULL);
        CHECK(prompt && strstr(prompt, "c[i] = a[i] + b[i]"));
        CHECK(prompt && strstr(prompt, "- odd: N=1001"));
        CHECK(prompt && strstr(prompt, "a -> const float*, b -> const float*, c -> float*"));
        CHECK(prompt && strstr(prompt, "- c: atol 0.0001, rtol 0.0001"));
        CHECK(prompt && strstr(prompt, "Example of a correct submission"));
        CHECK(prompt && strstr(prompt, "\"kernel\": \"vadd\""));
        free(prompt);
        /* the served document parses again as an inline task_spec */
        {
                SpecError err = { { 0 }, { 0 } };
                Task *t2 = NULL;
                CHECK(spec_task_parse(d, NULL, &t2, &err) == 0);
                CHECK(t2 && json_equal(spec_task_json(t2), d));
                spec_task_free(t2);
        }
        spec_task_free(t);

        t = load_task("gemm/gemm_f16.json");
        CHECK(spec_task_reference_source(t) == NULL);
        prompt = spec_task_prompt(t, NULL);
        CHECK(prompt && strstr(prompt, "cuBLAS gemm"));
        CHECK(prompt && strstr(prompt, "- C: atol 0.01, rtol 0.01"));
        free(prompt);
        spec_task_free(t);

        t = load_task("gather/gather_rows.json");
        prompt = spec_task_prompt(t, NULL);
        CHECK(prompt && strstr(prompt, "random integers in [0, T)"));
        CHECK(prompt && strstr(prompt, "- labels: exact"));
        free(prompt);
        spec_task_free(t);
}

static void test_task_invalid(void)
{
        const char *v = "elementwise/vadd.json", *g = "gather/gather_rows.json",
                   *m = "gemm/gemm_f16.json";

        TASK_BAD(v, "/colour", "\"red\"", "/colour", "unknown field 'colour' (allowed: $schema, *");
        TASK_BAD(v, "/name", "\"1bad\"", "/name",
                 "'1bad' is not a valid name ([A-Za-z_][A-Za-z0-9_]*)");
        TASK_BAD(v, "/description", NULL, "/description", "missing required field 'description'");
        TASK_BAD(v, "/buffers/0/dtype", "\"f8\"", "/buffers/0/dtype",
                 "'dtype' is 'f8'; it must be one of: f32, f16, bf16, f64, i8, u8, i32, i64");
        TASK_BAD(v, "/buffers/0/role", "\"output\"", "/buffers/0/role",
                 "'role' is 'output'; it must be one of: in, out, inout");
        TASK_BAD(v, "/buffers/0/shape/0", "\"Q\"", "/buffers/0/shape/0", "unknown param 'Q'");
        TASK_BAD(v, "/buffers/0/shape", "[1,1,1,1,1,1,1,1,1]", "/buffers/0/shape",
                 "'shape' has 9 elements; the limit is 8");
        TASK_BAD(v, "/buffers/1/name", "\"a\"", "/buffers/1/name", "duplicate buffer name 'a'");
        TASK_BAD(v, "/buffers/0/init", NULL, "/buffers/0/init", "an in buffer needs 'init'");
        TASK_BAD(v, "/buffers/2/init", "{\"dist\": \"normal\"}", "/buffers/2/init",
                 "an out buffer has no 'init' (it is poisoned before each run)");
        TASK_BAD(v, "/buffers/0/init/std", "0", "/buffers/0/init/std",
                 "'std' must be greater than 0");
        TASK_BAD(v, "/buffers/1/init/high", "-2", "/buffers/1/init/high",
                 "'high' must be greater than 'low'");
        TASK_BAD(v, "/buffers/0/init/dist", "\"cauchy\"", "/buffers/0/init/dist",
                 "'dist' is 'cauchy'; it must be one of: normal, uniform, int, mixed");
        TASK_BAD(v, "/buffers/0/init/low", "1", "/buffers/0/init/low",
                 "unknown field 'low' (allowed: dist, mean, std, offset, fan_in)");
        TASK_BAD(v, "/buffers/2/role", "\"in\"", "/buffers/2/init", "an in buffer needs 'init'");
        TASK_BAD(v, "/shapes/1/N", NULL, "/shapes/1", "shape 'odd' gives no value for param 'N'");
        TASK_BAD(v, "/shapes/1/M", "3", "/shapes/1/M",
                 "unknown param 'M' (declare it in 'params')");
        TASK_BAD(v, "/shapes/1/name", "\"default\"", "/shapes/1/name",
                 "duplicate shape name 'default'");
        TASK_BAD(v, "/shapes/1/N", "-1", "/shapes/1/N", "param 'N' must be a non-negative integer");
        TASK_BAD(v, "/shapes",
                 "[{\"name\":\"a\",\"N\":1},{\"name\":\"b\",\"N\":1},{\"name\":\"c\",\"N\":1},"
                 "{\"name\":\"d\",\"N\":1},{\"name\":\"e\",\"N\":1},{\"name\":\"f\",\"N\":1},"
                 "{\"name\":\"g\",\"N\":1},{\"name\":\"h\",\"N\":1},{\"name\":\"i\",\"N\":1}]",
                 "/shapes", "'shapes' has 9 elements; the limit is 8");
        TASK_BAD(v, "/params/name", "\"x\"", "/params/name", "'name' is not a valid param name");
        /* total buffer bytes per shape set: 3 x 4 x 3e9 > 24 GiB */
        TASK_BAD(v, "/shapes/0/N", "3000000000", "/buffers/2",
                 "the task's buffers total 36000000000 bytes in shape 'default'; the limit is 25769803776");
        /* expressions evaluated for every shape set */
        TASK_BAD(v, "/reference/plan/0/grid/0", "\"N / 1001 - 1\"", "/reference/plan/0/grid/0",
                 "grid x is 0 in shape 'odd'; it must be in [1, 2147483647]");
        TASK_BAD(v, "/reference/plan/0/grid/1", "\"70000\"", "/reference/plan/0/grid/1",
                 "grid y is 70000 in shape 'default'; it must be in [1, 65535]");
        TASK_BAD(v, "/reference/plan/0/grid", "[1, 1, 1, 1]", "/reference/plan/0/grid",
                 "'grid' has 4 elements; the limit is 3");
        TASK_BAD(v, "/reference/plan/0/block", "[64, 32]", "/reference/plan/0/block",
                 "block has 2048 threads in shape 'default'; the limit is 1024");
        TASK_BAD(v, "/reference/plan/0/shared", "\"N\"", "/reference/plan/0/shared",
                 "shared is 1000000 in shape 'default'; it must be in [0, 232448]");
        TASK_BAD(v, "/reference/plan/0/args/2", "\"d\"", "/reference/plan/0/args/2",
                 "'d' is neither a task buffer nor a reference scratch buffer");
        TASK_BAD(v, "/reference/plan/0/args/3/value", "\"N * N * N\"",
                 "/reference/plan/0/args/3/value",
                 "value is 1000000000000000000 in shape 'default'; it must be in [-2147483648, 2147483647]");
        TASK_BAD(v, "/reference/plan/0/args/3/value", "\"N*N*N*N\"",
                 "/reference/plan/0/args/3/value", "in shape 'default': overflow in 'N*N*N*N'");
        TASK_BAD(v, "/reference/plan/0/args/3/value", "\"N / (N - 1001)\"",
                 "/reference/plan/0/args/3/value",
                 "in shape 'odd': division by zero in 'N / (N - 1001)'");
        TASK_BAD(v, "/reference/plan/0/args/3/value", "1.5", "/reference/plan/0/args/3/value",
                 "type i32 needs an integer value");
        TASK_BAD(v, "/reference/plan/0/args/3/type", "\"int\"", "/reference/plan/0/args/3/type",
                 "'type' is 'int'; it must be one of: i32, u32, i64, u64, f32, f64");
        TASK_BAD(v, "/reference/plan/0/kernel", "\"vadd<float>\"", "/reference/plan/0/kernel",
                 "kernel 'vadd<float>' is neither an extern \"C\" name nor one of the name_expressions");
        TASK_BAD(v, "/reference/options/0", "\"-I/etc\"", "/reference/options/0", "*");
        TASK_BAD(v, "/reference/source_file", "\"nope.cu\"", "/reference/source_file",
                 "cannot read 'nope.cu': No such file or directory");
        TASK_BAD(v, "/reference/source_file", "\"../x.cu\"", "/reference/source_file",
                 "'source_file' must be a relative path without '..', not '../x.cu'");
        TASK_BAD(v, "/reference/source", "\"x\"", "/reference/source_file",
                 "give 'source' or 'source_file', not both");
        TASK_BAD(v, "/reference/plan", "[]", "/reference/plan",
                 "the plan needs at least one launch");
        TASK_BAD(v, "/reference/scratch", "[{\"name\": \"a\", \"dtype\": \"f32\", \"count\": 1}]",
                 "/reference/scratch/0/name", "scratch 'a' has the name of a task buffer");
        TASK_BAD(v, "/reference/scratch",
                 "[{\"name\": \"s\", \"dtype\": \"f32\", \"count\": \"N * N\"}]",
                 "/reference/scratch/0/count",
                 "count is 1000000000000 in shape 'default'; it must be in [1, 1073741824]");
        TASK_BAD(v, "/example/plan/0", "{\"library\": \"gemm\"}", "/example/plan/0/library",
                 "library steps are allowed in task references only");
        TASK_BAD(v, "/correctness_trials", "17", "/correctness_trials",
                 "'correctness_trials' is 17; it must be in [1, 16]");
        TASK_BAD(v, "/flops", "\"N - 2000\"", "/flops",
                 "flops is -999 in shape 'odd'; it must be at least 0");
        TASK_BAD(v, "/tolerance", "{\"atol\": -1}", "/tolerance/atol", "tolerances must not be negative");
        TASK_BAD(v, "/buffers/2/role", "\"in\"", "/buffers/2/init", "an in buffer needs 'init'");
        /* int distributions */
        TASK_BAD(g, "/buffers/1/init/high", "1", "/buffers/1/init/high",
                 "[0, 1) draws only zeros in shape 'default'");
        TASK_BAD(g, "/buffers/1/init/high", "\"T - 7\"", "/buffers/1/init/high",
                 "'high' (0) must be greater than 'low' (0) in shape 'tiny'");
        TASK_BAD(g, "/buffers/2/init/high", "300", "/buffers/2/init/high",
                 "high is 300 in shape 'default'; it must be in [1, 256]");
        TASK_BAD(g, "/buffers/1/init", "{\"dist\": \"normal\"}", "/buffers/1/init/dist",
                 "i64 buffers need the 'int' distribution");
        TASK_BAD(g, "/reference/plan/0/kernel", "\"gather_ref<256>\"", "/reference/plan/0/kernel",
                 "kernel 'gather_ref<256>' is neither an extern \"C\" name nor one of the name_expressions");
        /* library steps */
        TASK_BAD(m, "/reference/plan/0/c", "\"A\"", "/reference/plan/0/c",
                 "gemm writes 'c', but 'A' is an input");
        TASK_BAD(m, "/reference/plan/0/k", "\"K + 1\"", "/reference/plan/0/a",
                 "gemm needs 16781312 elements in 'A' for shape 'default'; it has 16777216");
        TASK_BAD(m, "/buffers/1/dtype", "\"f32\"", "/reference/plan/0/b",
                 "gemm operands must share one dtype (f32 vs f16)");
        TASK_BAD(m, "/reference/plan/0/library", "\"conv\"", "/reference/plan/0/library",
                 "'library' is 'conv'; it must be one of: gemm");
        TASK_BAD(m, "/reference/plan/1", "{\"kernel\": \"k\", \"grid\": [1], \"block\": [1], \"args\": []}",
                 "/reference", "the plan launches kernels but there is no 'source' or 'source_file'");
        TASK_BAD(m, "/buffers/1/init/fan_in", "\"K - 4096\"", "/buffers/1/init/fan_in",
                 "fan_in is 0 in shape 'default'; it must be at least 1");
        TASK_BAD(m, "/buffers/2/role", "\"in\"", "/buffers/2/init", "an in buffer needs 'init'");
        TASK_BAD(m, "/buffers/2/role", "\"inout\"", "/buffers/2/init", "an inout buffer needs 'init'");
        /* inline tasks cannot name files */
        {
                SpecError err = { { 0 }, { 0 } };
                Task *t = NULL;
                json_t *doc = load_json("tests/fixtures/tasks/elementwise/vadd.json");
                CHECK(spec_task_parse(doc, NULL, &t, &err) == SPEC_E_INVALID);
                CHECK_STR(err.pointer, "/reference/source_file");
                CHECK_STR(err.message,
                          "'source_file' is only allowed in library tasks; send the text as 'source'");
                json_decref(doc);
        }
}

/* ---- submissions ---- */

static json_t *vadd_submission(void)
{
        return js("{\"task\": \"vadd\", \"source\": \"extern \\\"C\\\" __global__ void vadd() {}\","
                  " \"plan\": [{\"kernel\": \"vadd\", \"grid\": [\"ceil_div(N, 128)\"], \"block\": [128],"
                  " \"args\": [\"a\", \"b\", \"c\", {\"type\": \"i32\", \"value\": \"N\"}]}]}");
}

/*
 * The split the API relies on: a fault in the candidate's own fields is a
 * verdict to store (SPEC_E_CANDIDATE, with the envelope normalized beside
 * it), anything else refuses the request (SPEC_E_INVALID).
 */
static int want_code(const char *ptr)
{
        static const char *const cand[] = { "/source", "/plan", "/scratch", "/options", "/name_expressions" };

        for (size_t i = 0; i < sizeof(cand) / sizeof(cand[0]); i++)
                if (!strncmp(ptr, cand[i], strlen(cand[i])) &&
                    (ptr[strlen(cand[i])] == '/' || ptr[strlen(cand[i])] == '\0'))
                        return SPEC_E_CANDIDATE;
        return SPEC_E_INVALID;
}

static void sub_bad(const Task *task, const char *ptr, const char *value, const char *want_ptr,
                    const char *want_msg, int line)
{
        SpecError err = { { 0 }, { 0 } };
        json_t *doc = vadd_submission(), *norm = NULL;
        int r;

        if (ptr)
                set_ptr(doc, ptr, value ? js(value) : NULL);
        r = spec_submission_validate(doc, task, &norm, &err);
        if (r != want_code(want_ptr) || strcmp(err.pointer, want_ptr) != 0 ||
            (want_msg[strlen(want_msg) - 1] == '*'
                     ? strncmp(err.message, want_msg, strlen(want_msg) - 1) != 0
                     : strcmp(err.message, want_msg) != 0)) {
                fprintf(stderr, "test-spec.c:%d: %s=%s: got %d '%s' '%s', want '%s' '%s'\n", line,
                        ptr ? ptr : "-", value ? value : "(deleted)", r, err.pointer, err.message,
                        want_ptr, want_msg);
                failures++;
        }
        if (r == SPEC_E_CANDIDATE && (!norm || !json_object_get(norm, "task") ||
                                      !json_is_object(json_object_get(norm, "timing")))) {
                fprintf(stderr, "test-spec.c:%d: a rejected candidate came without its normalized envelope\n",
                        line);
                failures++;
        }
        json_decref(norm);
        json_decref(doc);
}
#define SUB_BAD(p, v, ptr, msg) sub_bad(task, p, v, ptr, msg, __LINE__)

static void test_submissions(void)
{
        Task *task = load_task("elementwise/vadd.json");
        SpecError err = { { 0 }, { 0 } };
        json_t *doc = vadd_submission(), *norm = NULL, *t;

        /* defaults */
        CHECK(spec_submission_validate(doc, task, &norm, &err) == 0);
        CHECK_STR(json_string_value(json_object_get(norm, "task")), "vadd");
        CHECK(json_object_get(norm, "task_spec") == NULL);
        CHECK_STR(json_string_value(json_object_get(norm, "language")), "cuda");
        CHECK_STR(json_string_value(json_object_get(norm, "mode")), "full");
        CHECK_STR(json_string_value(json_object_get(norm, "priority")), "bulk");
        t = json_object_get(norm, "timing");
        CHECK(json_integer_value(json_object_get(t, "budget_ms")) == 2000);
        CHECK(json_real_value(json_object_get(t, "target_precision")) == 0.01);
        CHECK(json_integer_value(json_object_get(t, "max_trials")) == 1000);
        CHECK(json_integer_value(json_object_get(t, "min_trials")) == 6);
        CHECK(json_integer_value(json_object_get(t, "warmup")) == 3);
        CHECK_STR(json_string_value(json_object_get(t, "shapes")), "first");
        CHECK(json_array_size(json_object_get(norm, "scratch")) == 0);
        CHECK(json_array_size(json_object_get(norm, "options")) == 0);
        CHECK(json_integer_value(json_object_get(json_array_get(json_object_get(norm, "plan"), 0),
                                                 "shared")) == 0);
        json_decref(norm);
        norm = NULL;

        /* every shape set timed on request */
        set_ptr(doc, "/timing", js("{\"shapes\": \"all\", \"budget_ms\": 50}"));
        CHECK(spec_submission_validate(doc, task, &norm, &err) == 0);
        t = json_object_get(norm, "timing");
        CHECK_STR(json_string_value(json_object_get(t, "shapes")), "all");
        CHECK(json_integer_value(json_object_get(t, "budget_ms")) == 50);
        json_decref(norm);
        norm = NULL;

        /* presets, tags, options */
        set_ptr(doc, "/timing", js("\"fast\""));
        set_ptr(doc, "/tags", js("{\"run_id\": \"r17\", \"step\": 3, \"sample\": 0, \"turn\": 1,"
                                 " \"parent\": 41, \"labels\": {\"k\": \"v\"}}"));
        set_ptr(doc, "/options", js("[\"-use_fast_math\", \"-DBLOCK=128\"]"));
        set_ptr(doc, "/priority", js("\"interactive\""));
        CHECK(spec_submission_validate(doc, task, &norm, &err) == 0);
        t = json_object_get(norm, "timing");
        CHECK(json_integer_value(json_object_get(t, "budget_ms")) == 300);
        CHECK(json_real_value(json_object_get(t, "target_precision")) == 0.05);
        CHECK_STR(json_string_value(json_object_get(t, "shapes")), "first");
        CHECK(json_integer_value(json_object_get(json_object_get(norm, "tags"), "parent")) == 41);
        CHECK(json_array_size(json_object_get(norm, "options")) == 2);
        CHECK_STR(json_string_value(json_object_get(norm, "priority")), "interactive");
        {
                /* normalizing is idempotent: the stored form validates to itself */
                json_t *again = NULL;
                CHECK(spec_submission_validate(norm, task, &again, &err) == 0);
                CHECK(again && json_equal(again, norm));
                json_decref(again);
        }
        json_decref(norm);
        norm = NULL;
        set_ptr(doc, "/timing", js("\"precise\""));
        CHECK(spec_submission_validate(doc, task, &norm, &err) == 0);
        CHECK(json_integer_value(json_object_get(json_object_get(norm, "timing"), "budget_ms")) ==
              10000);
        json_decref(norm);
        norm = NULL;
        json_decref(doc);

        /* an inline task_spec is kept, normalized */
        {
                json_t *spec = json_deep_copy(spec_task_json(task));
                Task *inl = NULL;
                doc = vadd_submission();
                json_object_del(doc, "task");
                json_object_set_new(doc, "task_spec", spec);
                CHECK(spec_task_parse(spec, NULL, &inl, &err) == 0);
                CHECK(spec_submission_validate(doc, inl, &norm, &err) == 0);
                CHECK(json_object_get(norm, "task") == NULL);
                CHECK(json_equal(json_object_get(norm, "task_spec"), spec_task_json(inl)));
                CHECK(strstr(json_string_value(json_object_get(
                                     json_object_get(json_object_get(norm, "task_spec"),
                                                     "reference"),
                                     "source")),
                             "vadd_ref") != NULL);
                json_decref(norm);
                norm = NULL;
                /* both */
                json_object_set_new(doc, "task", json_string("vadd"));
                CHECK(spec_submission_validate(doc, inl, &norm, &err) == SPEC_E_INVALID);
                CHECK_STR(err.pointer, "/task_spec");
                CHECK_STR(err.message, "give 'task' or 'task_spec', not both");
                spec_task_free(inl);
                json_decref(doc);
        }

        /* compile mode needs no task, and then takes no plan */
        doc = js("{\"mode\": \"compile\", \"source\": \"x\", \"language\": \"ptx\"}");
        CHECK(spec_submission_validate(doc, NULL, &norm, &err) == 0);
        CHECK(norm && json_object_get(norm, "plan") == NULL);
        json_decref(norm);
        norm = NULL;
        set_ptr(doc, "/name_expressions", js("[\"k<1>\"]"));
        CHECK(spec_submission_validate(doc, NULL, &norm, &err) == SPEC_E_CANDIDATE);
        /* the stored form keeps the candidate as given and the envelope normalized */
        CHECK(norm && json_equal(json_object_get(norm, "name_expressions"), json_object_get(doc, "name_expressions")));
        CHECK_STR(json_string_value(json_object_get(norm, "source")), "x");
        CHECK_STR(json_string_value(json_object_get(norm, "mode")), "compile");
        json_decref(norm);
        norm = NULL;
        CHECK_STR(err.pointer, "/name_expressions");
        CHECK_STR(err.message, "name expressions apply to CUDA C++, not PTX");
        set_ptr(doc, "/name_expressions", NULL);
        set_ptr(doc, "/plan", js("[]"));
        CHECK(spec_submission_validate(doc, NULL, &norm, &err) == SPEC_E_INVALID);
        CHECK_STR(err.pointer, "/plan");
        CHECK_STR(err.message, "a plan needs a task ('task' or 'task_spec')");
        json_decref(doc);

        /* unknown task: the caller found none */
        doc = vadd_submission();
        CHECK(spec_submission_validate(doc, NULL, &norm, &err) == SPEC_E_INVALID);
        CHECK_STR(err.pointer, "/task");
        CHECK_STR(err.message, "unknown task 'vadd'");
        json_decref(doc);

        SUB_BAD("/colour", "1", "/colour", "unknown field 'colour' (allowed: task, task_spec, *");
        SUB_BAD("/task", NULL, "", "missing 'task' or 'task_spec' (only mode \"compile\" may go "
                                   "without a task)");
        SUB_BAD("/source", NULL, "/source", "missing required field 'source'");
        SUB_BAD("/source", "\"\"", "/source", "'source' is empty");
        SUB_BAD("/source", "7", "/source", "'source' must be a string, not integer");
        SUB_BAD("/plan", NULL, "/plan", "missing required field 'plan'");
        SUB_BAD("/mode", "\"fast\"", "/mode", "'mode' is 'fast'; it must be one of: full, compile");
        SUB_BAD("/language", "\"opencl\"", "/language",
                "'language' is 'opencl'; it must be one of: cuda, ptx");
        SUB_BAD("/plan/0/library", "\"gemm\"", "/plan/0/library",
                "library steps are allowed in task references only");
        SUB_BAD("/plan/0/args/1", "\"tmp\"", "/plan/0/args/1",
                "'tmp' is neither a task buffer nor a candidate scratch buffer");
        SUB_BAD("/plan/0/kernel", "\"vadd<float>\"", "/plan/0/kernel",
                "kernel 'vadd<float>' is neither an extern \"C\" name nor one of the name_expressions");
        SUB_BAD("/plan/0/block/0", "\"N\"", "/plan/0/block/0",
                "block x is 1000000 in shape 'default'; it must be in [1, 1024]");
        SUB_BAD("/plan/0/grid/0", "\"N - 1001\"", "/plan/0/grid/0",
                "grid x is 0 in shape 'odd'; it must be in [1, 2147483647]");
        SUB_BAD("/scratch", "[{\"name\": \"t\", \"dtype\": \"f32\", \"count\": \"N * N * N\"}]",
                "/scratch/0/count",
                "count is 1000000000000000000 in shape 'default'; it must be in [1, 1073741824]");
        SUB_BAD("/scratch",
                "[{\"name\": \"t\", \"dtype\": \"f64\", \"count\": \"N * 400\"},"
                " {\"name\": \"u\", \"dtype\": \"f64\", \"count\": \"N * 200\"}]",
                "/scratch/1/count",
                "scratch of shape 'default' totals 4800000000 bytes; the limit is 4294967296");
        SUB_BAD("/scratch", "[{\"name\": \"t\", \"dtype\": \"f32\", \"count\": 4},"
                            " {\"name\": \"t\", \"dtype\": \"f32\", \"count\": 4}]",
                "/scratch/1/name", "duplicate scratch name 't'");
        SUB_BAD("/options", "[\"-I/etc\"]", "/options/0", "*");
        SUB_BAD("/options", "[\"--ptxas-options=-O3\", 5]", "/options/1",
                "an option must be a string, not integer");
        SUB_BAD("/timing", "\"slow\"", "/timing",
                "'timing' is 'slow'; it must be one of: fast, precise");
        SUB_BAD("/timing", "{\"budget_ms\": 60001}", "/timing/budget_ms",
                "'budget_ms' is 60001; it must be in [1, 60000]");
        SUB_BAD("/timing", "{\"budget\": 5}", "/timing/budget", "unknown field 'budget'*");
        SUB_BAD("/timing", "{\"max_trials\": 5, \"min_trials\": 6}", "/timing/min_trials",
                "'min_trials' (6) exceeds 'max_trials' (5)");
        SUB_BAD("/timing", "{\"target_precision\": 0}", "/timing/target_precision",
                "'target_precision' must be in (0, 1]");
        SUB_BAD("/timing", "{\"shapes\": \"largest\"}", "/timing/shapes",
                "'shapes' is 'largest'; it must be one of: first, all");
        SUB_BAD("/tags", "{\"parent\": 0}", "/tags/parent", "'parent' is 0; it must be in [1, 9223372036854775807]");
        SUB_BAD("/tags", "{\"step\": -1}", "/tags/step", "'step' is -1; it must be in [0, 9223372036854775807]");
        SUB_BAD("/tags", "{\"run_id\": 5}", "/tags/run_id", "'run_id' must be a string, not integer");
        SUB_BAD("/tags", "{\"labels\": {\"a/b\": true}}", "/tags/labels/a~1b",
                "a label value must be a string or a number, not boolean");
        SUB_BAD("/tags", "{\"temperature\": -0.5}", "/tags/temperature", "'temperature' must be a number in [0, 100]");
        SUB_BAD("/tags", "{\"temperature\": \"hot\"}", "/tags/temperature", "'temperature' must be a number, not string");
        SUB_BAD("/tags", "{\"policy_version\": 3}", "/tags/policy_version", "'policy_version' must be a string, not integer");
        SUB_BAD("/task", "\"other\"", "/task", "task 'other' was resolved to 'vadd'");
        {
                char big[LIMIT_TAG_STRING_BYTES + 16], val[LIMIT_TAG_STRING_BYTES + 32];
                memset(big, 'x', LIMIT_TAG_STRING_BYTES + 1);
                big[LIMIT_TAG_STRING_BYTES + 1] = '\0';
                snprintf(val, sizeof(val), "{\"run_id\": \"%s\"}", big);
                SUB_BAD("/tags", val, "/tags/run_id", "'run_id' is 257 bytes long; the limit is 256");
        }
        {
                /* 33 labels */
                char labels[2048] = "{\"labels\": {";
                for (int i = 0; i < LIMIT_TAGS_MAX + 1; i++)
                        snprintf(labels + strlen(labels), sizeof(labels) - strlen(labels),
                                 "%s\"k%d\": \"v\"", i ? ", " : "", i);
                strcat(labels, "}}");
                SUB_BAD("/tags", labels, "/tags/labels", "33 labels; the limit is 32");
        }
        {
                /* 65 launches */
                json_t *d = vadd_submission(), *plan = json_object_get(d, "plan"), *n = NULL;
                for (int i = 0; i < LIMIT_LAUNCHES_MAX; i++)
                        json_array_append(plan, json_array_get(plan, 0));
                CHECK(spec_submission_validate(d, task, &n, &err) == SPEC_E_CANDIDATE);
                CHECK_STR(err.pointer, "/plan");
                CHECK_STR(err.message, "the plan has 65 launches; the limit is 64");
                json_decref(n);
                n = NULL;
                json_decref(d);
        }
        spec_task_free(task);
}

/* ---- plan checks against compile results ---- */

static void test_check_plan(void)
{
        Task *task = load_task("elementwise/vadd.json");
        Task *gather = load_task("gather/gather_rows.json");
        SpecError err = { { 0 }, { 0 } };
        json_t *doc = vadd_submission(), *norm = NULL, *comp, *plan, *refplan;

        CHECK(spec_submission_validate(doc, task, &norm, &err) == 0);
        plan = json_object_get(norm, "plan");
        comp = js("{\"ok\": true, \"lowered_names\": {}, \"kernels\": [{\"name\": \"vadd\","
                  " \"params\": [{\"offset\": 0, \"size\": 8}, {\"offset\": 8, \"size\": 8},"
                  " {\"offset\": 16, \"size\": 8}, {\"offset\": 24, \"size\": 4}],"
                  " \"shared_static\": 1024, \"max_threads_per_block\": 1024}]}");
        CHECK(spec_check_plan(task, plan, json_object_get(norm, "scratch"), comp, 232448, &err) ==
              0);
        /* size mismatch: the kernel takes a size_t */
        set_ptr(comp, "/kernels/0/params/3/size", json_integer(8));
        CHECK(spec_check_plan(task, plan, NULL, comp, 0, &err) == SPEC_E_REJECTED);
        CHECK_STR(err.pointer, "/plan/0/args/3");
        CHECK_STR(err.message, "launch 0 ('vadd'): argument 3 is i32 (4 bytes) but the kernel's "
                               "parameter 3 is 8 bytes");
        set_ptr(comp, "/kernels/0/params/3/size", json_integer(4));
        set_ptr(comp, "/kernels/0/params/0/size", json_integer(4));
        CHECK(spec_check_plan(task, plan, NULL, comp, 0, &err) == SPEC_E_REJECTED);
        CHECK_STR(err.message, "launch 0 ('vadd'): argument 0 is a pointer (8 bytes) but the "
                               "kernel's parameter 0 is 4 bytes");
        set_ptr(comp, "/kernels/0/params/0/size", json_integer(8));
        /* count mismatch */
        set_ptr(comp, "/kernels/0/params/4", js("{\"offset\": 32, \"size\": 4}"));
        CHECK(spec_check_plan(task, plan, NULL, comp, 0, &err) == SPEC_E_REJECTED);
        CHECK_STR(err.pointer, "/plan/0/args");
        CHECK_STR(err.message,
                  "launch 0 ('vadd'): 4 arguments given, but the kernel has 5 parameters");
        set_ptr(comp, "/kernels/0/params/4", NULL);
        /* block larger than the kernel allows */
        set_ptr(comp, "/kernels/0/max_threads_per_block", json_integer(64));
        CHECK(spec_check_plan(task, plan, NULL, comp, 0, &err) == SPEC_E_REJECTED);
        CHECK_STR(err.pointer, "/plan/0/block");
        CHECK_STR(err.message, "launch 0 ('vadd'): the block has 128 threads in shape 'default', "
                               "but the kernel allows at most 64 (registers or __launch_bounds__)");
        set_ptr(comp, "/kernels/0/max_threads_per_block", json_integer(1024));
        /* shared memory: static 1024 + dynamic 0 > 1000 */
        CHECK(spec_check_plan(task, plan, NULL, comp, 1000, &err) == SPEC_E_REJECTED);
        CHECK_STR(err.pointer, "/plan/0/shared");
        CHECK_STR(err.message, "launch 0 ('vadd'): 1024 bytes of static plus 0 of dynamic shared "
                               "memory in shape 'default' exceed the device's 1000");
        /* unknown kernel */
        set_ptr(comp, "/kernels/0/name", json_string("vadd2"));
        CHECK(spec_check_plan(task, plan, NULL, comp, 0, &err) == SPEC_E_REJECTED);
        CHECK_STR(err.pointer, "/plan/0/kernel");
        CHECK_STR(err.message, "launch 0: kernel 'vadd' is not in the compiled module (a kernel "
                               "the plan names must be extern \"C\" __global__, or a name expression)");
        /* the task's own reference plan: pointer under /reference */
        refplan = json_object_get(json_object_get(spec_task_json(task), "reference"), "plan");
        CHECK(spec_check_plan(task, refplan, NULL, comp, 0, &err) == SPEC_E_REJECTED);
        CHECK_STR(err.pointer, "/reference/plan/0/kernel");
        json_decref(comp);

        /* name expressions: looked up through lowered_names */
        refplan = json_object_get(json_object_get(spec_task_json(gather), "reference"), "plan");
        comp = js("{\"ok\": true, \"lowered_names\": {\"gather_ref<128>\": \"_Z10gather_refILi128EEvPK13__nv_bfloat16PKxPhPS0_xf\"},"
                  " \"kernels\": [{\"name\": \"_Z10gather_refILi128EEvPK13__nv_bfloat16PKxPhPS0_xf\","
                  " \"params\": [{\"offset\": 0, \"size\": 8}, {\"offset\": 8, \"size\": 8},"
                  " {\"offset\": 16, \"size\": 8}, {\"offset\": 24, \"size\": 8},"
                  " {\"offset\": 32, \"size\": 8}, {\"offset\": 40, \"size\": 4}],"
                  " \"shared_static\": 0, \"max_threads_per_block\": 1024}]}");
        CHECK(spec_check_plan(gather, refplan, NULL, comp, 232448, &err) == 0);
        set_ptr(comp, "/lowered_names/gather_ref<128>", json_string("_Z3foov"));
        CHECK(spec_check_plan(gather, refplan, NULL, comp, 0, &err) == SPEC_E_REJECTED);
        CHECK_STR(err.pointer, "/reference/plan/0/kernel");
        json_decref(comp);
        json_decref(norm);
        json_decref(doc);
        spec_task_free(task);
        spec_task_free(gather);
}

/* ---- the resolved GPU job ---- */

static json_t *jget(json_t *doc, const char *ptr)
{
        char last[128];
        json_t *parent = walk(doc, ptr, last);

        if (!parent)
                return NULL;
        return json_is_array(parent) ? json_array_get(parent, (size_t)atoi(last))
                                     : json_object_get(parent, last);
}

static long long jint(json_t *doc, const char *ptr)
{
        json_t *v = jget(doc, ptr);
        if (!json_is_integer(v)) {
                fprintf(stderr, "%s is not an integer\n", ptr);
                failures++;
                return -999;
        }
        return json_integer_value(v);
}

static double jnum(json_t *doc, const char *ptr)
{
        json_t *v = jget(doc, ptr);
        if (!json_is_number(v)) {
                fprintf(stderr, "%s is not a number\n", ptr);
                failures++;
                return -999;
        }
        return json_number_value(v);
}

static const char *jstr(json_t *doc, const char *ptr)
{
        return json_string_value(jget(doc, ptr));
}

static void test_resolve(void)
{
        Task *task = load_task("elementwise/vadd.json");
        SpecError err = { { 0 }, { 0 } };
        json_t *doc = vadd_submission(), *norm = NULL, *job = NULL;

        set_ptr(doc, "/scratch", js("[{\"name\": \"tmp\", \"dtype\": \"f16\", \"count\": \"ceil_div(N, 128)\"}]"));
        set_ptr(doc, "/plan/1", js("{\"kernel\": \"fix\", \"grid\": [2, \"min(N, 7)\"], \"block\": [32, 4],"
                                   " \"shared\": \"N % 100\", \"args\": [\"tmp\", {\"type\": \"f32\", \"value\": 0.5},"
                                   " {\"type\": \"u64\", \"value\": \"N * N\"}]}"));
        set_ptr(doc, "/timing", js("{\"budget_ms\": 500, \"warmup\": 1}"));
        CHECK(spec_submission_validate(doc, task, &norm, &err) == 0);
        CHECK(spec_resolve(task, norm, NULL, NULL, 7, 0xdeadbeefULL, &job, &err) == 0);
        if (!job) {
                fprintf(stderr, "resolve: %s: %s\n", err.pointer, err.message);
                failures++;
                goto out;
        }
        CHECK(jint(job, "/id") == 7);
        CHECK_STR(jstr(job, "/seed"), "00000000deadbeef");
        CHECK_STR(jstr(job, "/mode"), "full");
        CHECK(jint(job, "/correctness_trials") == 3);
        CHECK(jint(job, "/timing/budget_ms") == 500);
        CHECK(jint(job, "/timing/warmup") == 1);
        CHECK(jint(job, "/timing/min_trials") == 6);
        CHECK(jint(job, "/deadline_ms") == 10000 + 2 * (3 * 2000 + 2 * 500));
        CHECK(json_array_size(jget(job, "/shapes")) == 2);
        CHECK_STR(jstr(job, "/shapes/1/name"), "odd");
        CHECK(jint(job, "/shapes/1/params/N") == 1001);
        CHECK_STR(jstr(job, "/shapes/0/buffers/0/name"), "a");
        CHECK_STR(jstr(job, "/shapes/0/buffers/0/dtype"), "f32");
        CHECK(jint(job, "/shapes/0/buffers/0/count") == 1000000);
        CHECK(jint(job, "/shapes/1/buffers/0/shape/0") == 1001);
        CHECK_STR(jstr(job, "/shapes/0/buffers/0/role"), "in");
        CHECK_STR(jstr(job, "/shapes/0/buffers/0/init/dist"), "normal");
        CHECK(jnum(job, "/shapes/0/buffers/0/init/std") == 1.0);
        CHECK(jnum(job, "/shapes/0/buffers/0/init/scale") == 1.0);
        CHECK(jget(job, "/shapes/0/buffers/0/atol") == NULL);
        CHECK_STR(jstr(job, "/shapes/0/buffers/1/init/dist"), "uniform");
        CHECK(jnum(job, "/shapes/0/buffers/1/init/low") == -2.0);
        CHECK(jnum(job, "/shapes/0/buffers/1/init/high") == 2.0);
        CHECK(jnum(job, "/shapes/0/buffers/1/init/offset") == 0.5);
        CHECK_STR(jstr(job, "/shapes/0/buffers/2/role"), "out");
        CHECK(jget(job, "/shapes/0/buffers/2/init") == NULL);
        CHECK(jnum(job, "/shapes/0/buffers/2/atol") == 1e-4);
        CHECK(jnum(job, "/shapes/0/buffers/2/rtol") == 1e-4);
        CHECK(jint(job, "/shapes/0/flops") == 1000000);
        CHECK(jint(job, "/shapes/1/bytes") == 12012);
        /* candidate */
        CHECK_STR(jstr(job, "/shapes/0/candidate/scratch/0/name"), "tmp");
        CHECK_STR(jstr(job, "/shapes/0/candidate/scratch/0/dtype"), "f16");
        CHECK(jint(job, "/shapes/0/candidate/scratch/0/count") == 7813);
        CHECK(jint(job, "/shapes/1/candidate/scratch/0/count") == 8);
        CHECK_STR(jstr(job, "/shapes/0/candidate/plan/0/kernel"), "vadd");
        CHECK(jint(job, "/shapes/0/candidate/plan/0/grid/0") == 7813);
        CHECK(jint(job, "/shapes/0/candidate/plan/0/grid/1") == 1);
        CHECK(jint(job, "/shapes/0/candidate/plan/0/grid/2") == 1);
        CHECK(jint(job, "/shapes/0/candidate/plan/0/block/0") == 128);
        CHECK(jint(job, "/shapes/0/candidate/plan/0/shared") == 0);
        CHECK_STR(jstr(job, "/shapes/0/candidate/plan/0/args/0/buffer"), "a");
        CHECK_STR(jstr(job, "/shapes/0/candidate/plan/0/args/3/type"), "i32");
        CHECK(jint(job, "/shapes/1/candidate/plan/0/args/3/value") == 1001);
        CHECK(jint(job, "/shapes/1/candidate/plan/1/grid/1") == 7);
        CHECK(jint(job, "/shapes/1/candidate/plan/1/block/1") == 4);
        CHECK(jint(job, "/shapes/1/candidate/plan/1/block/2") == 1);
        CHECK(jint(job, "/shapes/1/candidate/plan/1/shared") == 1);
        CHECK(jnum(job, "/shapes/0/candidate/plan/1/args/1/value") == 0.5);
        CHECK(jint(job, "/shapes/0/candidate/plan/1/args/2/value") == 1000000000000LL);
        /* reference */
        CHECK(json_array_size(jget(job, "/shapes/0/reference/scratch")) == 0);
        CHECK_STR(jstr(job, "/shapes/0/reference/plan/0/kernel"), "vadd_ref");
        CHECK(jint(job, "/shapes/0/reference/plan/0/grid/0") == 3907);
        CHECK(jint(job, "/shapes/1/reference/plan/0/grid/0") == 4);
out:
        json_decref(job);
        json_decref(norm);
        json_decref(doc);
        spec_task_free(task);
}

/* "shapes" selects shape sets: validated by name, and only those are resolved. */
static void test_shape_selection(void)
{
        Task *task = load_task("elementwise/vadd.json");
        SpecError err = { { 0 }, { 0 } };
        json_t *doc, *norm = NULL, *job = NULL;
        static const struct { const char *shapes, *pointer; } bad[] = {
                { "[]", "/shapes" },
                { "\"odd\"", "/shapes" },
                { "[\"odd\", \"nope\"]", "/shapes/1" },
                { "[\"odd\", \"odd\"]", "/shapes/1" },
                { "[3]", "/shapes/0" },
        };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                doc = vadd_submission();
                set_ptr(doc, "/shapes", js(bad[i].shapes));
                memset(&err, 0, sizeof(err));
                CHECK(spec_submission_validate(doc, task, &norm, &err) == SPEC_E_INVALID);
                CHECK_STR(err.pointer, bad[i].pointer);
                json_decref(doc);
        }
        doc = vadd_submission();
        set_ptr(doc, "/shapes", js("[\"odd\"]"));
        CHECK(spec_submission_validate(doc, task, &norm, &err) == 0);
        CHECK(spec_resolve(task, norm, NULL, NULL, 1, 1, &job, &err) == 0);
        CHECK(json_array_size(json_object_get(job, "shapes")) == 1);
        CHECK_STR(jstr(job, "/shapes/0/name"), "odd");
        json_decref(job);
        json_decref(norm);
        json_decref(doc);
        /* without "shapes": every shape set */
        doc = vadd_submission();
        CHECK(spec_submission_validate(doc, task, &norm, &err) == 0);
        CHECK(spec_resolve(task, norm, NULL, NULL, 1, 1, &job, &err) == 0);
        CHECK(json_array_size(json_object_get(job, "shapes")) == 2);
        json_decref(job);
        json_decref(norm);
        json_decref(doc);
        spec_task_free(task);
}

static void test_resolve_others(void)
{
        SpecError err = { { 0 }, { 0 } };
        json_t *doc, *norm = NULL, *job = NULL, *comp;
        Task *gemm = load_task("gemm/gemm_f16.json");
        Task *gather = load_task("gather/gather_rows.json");
        Task *rn = load_task("reduction/rownorm.json");

        /* gemm: library step, fan_in scale, f16 tolerance */
        doc = js("{\"task\": \"gemm_f16\", \"source\": \"s\", \"plan\": [{\"kernel\": \"k\", \"grid\": [1],"
                 " \"block\": [1], \"args\": [\"A\", \"B\", \"C\"]}]}");
        CHECK(spec_submission_validate(doc, gemm, &norm, &err) == 0);
        CHECK(spec_resolve(gemm, norm, NULL, NULL, 1, 1, &job, &err) == 0);
        CHECK_STR(jstr(job, "/seed"), "0000000000000001");
        CHECK_STR(jstr(job, "/shapes/0/reference/plan/0/library"), "gemm");
        CHECK_STR(jstr(job, "/shapes/0/reference/plan/0/dtype"), "f16");
        CHECK_STR(jstr(job, "/shapes/0/reference/plan/0/c"), "C");
        CHECK(jint(job, "/shapes/1/reference/plan/0/m") == 100);
        CHECK(jint(job, "/shapes/1/reference/plan/0/n") == 72);
        CHECK(jint(job, "/shapes/1/reference/plan/0/k") == 33);
        CHECK(jint(job, "/shapes/1/reference/plan/0/batch") == 1);
        CHECK(json_is_false(jget(job, "/shapes/1/reference/plan/0/trans_a")));
        CHECK(jnum(job, "/shapes/1/reference/plan/0/alpha") == 1.0);
        CHECK(jnum(job, "/shapes/1/reference/plan/0/beta") == 0.0);
        CHECK(jnum(job, "/shapes/0/buffers/0/init/scale") == 1.0 / 64);
        CHECK(fabs(jnum(job, "/shapes/1/buffers/0/init/scale") - 1.0 / sqrt(33.0)) < 1e-15);
        CHECK(jnum(job, "/shapes/0/buffers/2/atol") == 1e-2);
        CHECK(jint(job, "/shapes/0/flops") == 2LL * 4096 * 4096 * 4096);
        json_decref(job);
        json_decref(norm);
        json_decref(doc);
        job = norm = NULL;

        /* gather: int init bounds, integer tolerance, lowered reference names */
        doc = js("{\"task\": \"gather_rows\", \"source\": \"s\", \"name_expressions\": [\"g<4>\"],"
                 " \"plan\": [{\"kernel\": \"g<4>\", \"grid\": [\"I\"], \"block\": [4], \"args\": [\"table\"]}]}");
        comp = js("{\"lowered_names\": {\"gather_ref<128>\": \"_Z10gather_refILi128EE\"}}");
        {
                json_t *cc = js("{\"lowered_names\": {\"g<4>\": \"_Z1gILi4EEv\"}}");
                CHECK(spec_submission_validate(doc, gather, &norm, &err) == 0);
                CHECK(spec_resolve(gather, norm, cc, comp, 2, 0xffffffffffffffffULL, &job, &err) ==
                      0);
                json_decref(cc);
        }
        CHECK_STR(jstr(job, "/seed"), "ffffffffffffffff");
        CHECK_STR(jstr(job, "/shapes/0/candidate/plan/0/kernel"), "_Z1gILi4EEv");
        CHECK_STR(jstr(job, "/shapes/0/reference/plan/0/kernel"), "_Z10gather_refILi128EE");
        CHECK_STR(jstr(job, "/shapes/0/buffers/1/init/dist"), "int");
        CHECK(jint(job, "/shapes/0/buffers/1/init/low") == 0);
        CHECK(jint(job, "/shapes/0/buffers/1/init/high") == 50000);
        CHECK(jint(job, "/shapes/1/buffers/1/init/high") == 7);
        CHECK(jint(job, "/shapes/0/buffers/2/init/low") == 1);
        CHECK(jint(job, "/shapes/0/buffers/2/init/high") == 200);
        CHECK(jint(job, "/shapes/1/buffers/2/init/high") == 7);
        CHECK_STR(jstr(job, "/shapes/0/buffers/2/role"), "inout");
        CHECK(jnum(job, "/shapes/0/buffers/2/atol") == 0);
        CHECK(jnum(job, "/shapes/0/buffers/2/rtol") == 0);
        CHECK(jnum(job, "/shapes/0/buffers/3/atol") == 1e-2);
        CHECK(jint(job, "/shapes/1/reference/plan/0/args/4/value") == 3);
        CHECK_STR(jstr(job, "/shapes/1/reference/plan/0/args/4/type"), "i64");
        CHECK(jnum(job, "/shapes/1/reference/plan/0/args/5/value") == 1.0);
        CHECK(jget(job, "/shapes/0/flops") == NULL);
        json_decref(comp);
        json_decref(job);
        json_decref(norm);
        json_decref(doc);
        job = norm = NULL;

        /* rownorm: reference scratch, per-buffer tolerance over the task's */
        doc = js("{\"task\": \"rownorm\", \"source\": \"s\", \"plan\": [{\"kernel\": \"k\", \"grid\": [\"R\"],"
                 " \"block\": [256], \"args\": [\"x\", \"y\"]}]}");
        CHECK(spec_submission_validate(doc, rn, &norm, &err) == 0);
        CHECK(spec_resolve(rn, norm, NULL, NULL, 3, 3, &job, &err) == 0);
        CHECK(jint(job, "/correctness_trials") == 2);
        CHECK_STR(jstr(job, "/shapes/0/reference/scratch/0/name"), "sums");
        CHECK(jint(job, "/shapes/0/reference/scratch/0/count") == 64);
        CHECK(jint(job, "/shapes/1/reference/scratch/0/count") == 3);
        CHECK_STR(jstr(job, "/shapes/0/reference/plan/1/args/1/buffer"), "sums");
        CHECK(jnum(job, "/shapes/0/buffers/1/atol") == 1e-5);
        CHECK(jnum(job, "/shapes/0/buffers/1/rtol") == 1e-3);
        CHECK_STR(jstr(job, "/shapes/0/buffers/0/init/dist"), "mixed");
        json_decref(job);
        json_decref(norm);
        json_decref(doc);
        spec_task_free(gemm);
        spec_task_free(gather);
        spec_task_free(rn);
}

/* ---- every field replaced by every kind of wrong value: no crash, a clean answer ---- */

static size_t mutations;

static void mutate_each(json_t *root_doc, json_t *node, const char *fixture, const char *dir,
                        const Task *task)
{
        static const char *const values[] = { "null", "0", "-1", "1.5", "\"\"", "\"x\"",
                                              "\"N * N * N * N\"", "[]", "{}", "true",
                                              "[\"a\", {\"type\": \"i32\", \"value\": 1}]",
                                              "9223372036854775807", NULL };
        const char *key;
        json_t *v, *tmp;
        size_t i;

        if (json_is_object(node)) {
                void *iter;
                for (iter = json_object_iter(node); iter;
                     iter = json_object_iter_next(node, iter)) {
                        key = json_object_iter_key(iter);
                        v = json_incref(json_object_iter_value(iter));
                        for (size_t k = 0; values[k]; k++) {
                                SpecError err = { { 0 }, { 0 } };
                                Task *t = NULL;
                                json_t *norm = NULL, *job = NULL;
                                int r;
                                json_object_set_new(node, key, js(values[k]));
                                if (task) {
                                        r = spec_submission_validate(root_doc, task, &norm, &err);
                                        if (r == 0 && json_object_get(norm, "plan")) {
                                                int rr = spec_resolve(task, norm, NULL, NULL, 1, 1,
                                                                      &job, &err);
                                                CHECK(rr == 0);
                                        }
                                } else {
                                        r = spec_task_parse(root_doc, dir, &t, &err);
                                        if (r == 0) {
                                                char *pr = spec_task_prompt(t, NULL);
                                                json_t *sum = spec_task_summary(t);
                                                CHECK(pr != NULL && sum != NULL);
                                                free(pr);
                                                json_decref(sum);
                                        }
                                }
                                CHECK(r == 0 || r == SPEC_E_INVALID || r == SPEC_E_CANDIDATE);
                                CHECK(r == 0 || err.message[0] != '\0');
                                spec_task_free(t);
                                json_decref(norm);
                                json_decref(job);
                                mutations++;
                        }
                        json_object_set(node, key, v);
                        /* the iterator stays valid: the key set is unchanged */
                        mutate_each(root_doc, v, fixture, dir, task);
                        json_decref(v);
                }
        } else if (json_is_array(node)) {
                json_array_foreach(node, i, tmp) {
                        v = json_incref(tmp);
                        for (size_t k = 0; values[k]; k++) {
                                SpecError err = { { 0 }, { 0 } };
                                Task *t = NULL;
                                json_t *norm = NULL;
                                int r;
                                json_array_set_new(node, i, js(values[k]));
                                r = task ? spec_submission_validate(root_doc, task, &norm, &err)
                                         : spec_task_parse(root_doc, dir, &t, &err);
                                CHECK(r == 0 || r == SPEC_E_INVALID || r == SPEC_E_CANDIDATE);
                                spec_task_free(t);
                                json_decref(norm);
                                mutations++;
                        }
                        json_array_set(node, i, v);
                        mutate_each(root_doc, v, fixture, dir, task);
                        json_decref(v);
                }
        }
}

static void test_mutations(void)
{
        static const char *const fixtures[] = { "elementwise/vadd.json", "reduction/rownorm.json",
                                                "gemm/gemm_f16.json", "gather/gather_rows.json",
                                                NULL };
        Task *task = load_task("elementwise/vadd.json");
        json_t *sub = vadd_submission();

        for (size_t f = 0; fixtures[f]; f++) {
                char rel[512], dir[4096];
                json_t *doc;
                snprintf(rel, sizeof(rel), "tests/fixtures/tasks/%s", fixtures[f]);
                doc = load_json(rel);
                snprintf(dir, sizeof(dir), "%s/%s", root, rel);
                *strrchr(dir, '/') = '\0';
                mutate_each(doc, doc, fixtures[f], dir, NULL);
                json_decref(doc);
        }
        set_ptr(sub, "/scratch", js("[{\"name\": \"t\", \"dtype\": \"f32\", \"count\": \"N\"}]"));
        set_ptr(sub, "/tags", js("{\"run_id\": \"r\", \"labels\": {\"a\": \"b\"}}"));
        set_ptr(sub, "/timing", js("{\"budget_ms\": 100, \"min_trials\": 2}"));
        mutate_each(sub, sub, "submission", NULL, task);
        CHECK(mutations > 1000);
        json_decref(sub);
        spec_task_free(task);
}

/* ---- JSON Schemas agree with the C constants ---- */

static bool enum_equals(json_t *e, const char *const *names)
{
        size_t n = 0;
        while (names[n])
                n++;
        if (!json_is_array(e) || json_array_size(e) != n)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!json_is_string(json_array_get(e, i)) ||
                    strcmp(json_string_value(json_array_get(e, i)), names[i]) != 0)
                        return false;
        return true;
}

#define CHECK_ENUM(doc, ptr, names)                                                    \
        do {                                                                            \
                if (!enum_equals(jget(doc, ptr), names)) {                              \
                        fprintf(stderr, "%s:%d: schema enum %s differs from the C list\n", \
                                __FILE__, __LINE__, ptr);                               \
                        failures++;                                                     \
                }                                                                       \
        } while (0)
#define CHECK_NUM(doc, ptr, want)                                                        \
        do {                                                                              \
                json_t *v_ = jget(doc, ptr);                                              \
                if (!json_is_number(v_) || json_number_value(v_) != (double)(want)) {     \
                        fprintf(stderr, "%s:%d: schema %s is not %s\n", __FILE__, __LINE__, \
                                ptr, #want);                                              \
                        failures++;                                               \
                }                                                                         \
        } while (0)

static void test_schemas(void)
{
        static const char *const verdicts[] = { "compiled", "correct", "incorrect",
                                                "compile_error", "runtime_error", "timeout",
                                                "rejected", "internal_error", "cancelled", NULL };
        static const char *const scalar_types[] = { "i32", "u32", "i64", "u64", "f32", "f64",
                                                    NULL };
        static const char *const langs[] = { "cuda", "ptx", "kernelbench", NULL };
        static const char *const modes[] = { "full", "compile", NULL };
        static const char *const prios[] = { "bulk", "interactive", NULL };
        static const char *const libraries[] = { "gemm", NULL };
        json_t *task = load_json("schema/task.schema.json");
        json_t *sub = load_json("schema/submission.schema.json");
        json_t *res = load_json("schema/result.schema.json");

        CHECK_STR(jstr(task, "/$schema"), "https://json-schema.org/draft/2020-12/schema");
        CHECK_STR(jstr(sub, "/$schema"), "https://json-schema.org/draft/2020-12/schema");
        CHECK_STR(jstr(res, "/$schema"), "https://json-schema.org/draft/2020-12/schema");
        CHECK_ENUM(task, "/$defs/dtype/enum", spec_dtype_names);
        CHECK_ENUM(task, "/$defs/buffer/properties/role/enum", spec_role_names);
        CHECK_ENUM(task, "/$defs/init/properties/dist/enum", spec_dist_names);
        CHECK_ENUM(task, "/$defs/scalarArg/properties/type/enum", scalar_types);
        CHECK_ENUM(task, "/$defs/gemmStep/properties/library/enum", libraries);
        CHECK_ENUM(sub, "/properties/language/enum", langs);
        CHECK_ENUM(sub, "/properties/mode/enum", modes);
        CHECK_ENUM(sub, "/properties/priority/enum", prios);
        CHECK_ENUM(res, "/properties/verdict/enum", verdicts);
        CHECK_NUM(task, "/$defs/name/maxLength", LIMIT_NAME_BYTES);
        CHECK_NUM(task, "/$defs/expr/oneOf/1/maxLength", LIMIT_EXPR_BYTES);
        CHECK_NUM(task, "/properties/shapes/maxItems", LIMIT_TASK_SHAPES_MAX);
        CHECK_NUM(task, "/properties/params/maxProperties", LIMIT_TASK_PARAMS_MAX);
        CHECK_NUM(task, "/properties/buffers/maxItems", LIMIT_TASK_BUFFERS_MAX);
        CHECK_NUM(task, "/$defs/buffer/properties/shape/maxItems", LIMIT_TASK_DIMS_MAX);
        CHECK_NUM(task, "/properties/description/maxLength", LIMIT_TASK_TEXT_BYTES);
        CHECK_NUM(task, "/properties/correctness_trials/maximum", LIMIT_CORRECTNESS_TRIALS_MAX);
        CHECK_NUM(task, "/$defs/plan/maxItems", LIMIT_LAUNCHES_MAX);
        CHECK_NUM(task, "/$defs/launch/properties/args/maxItems", LIMIT_ARGS_MAX);
        CHECK_NUM(task, "/$defs/launch/properties/grid/maxItems", 3);
        CHECK_NUM(task, "/$defs/scratch/maxItems", LIMIT_SCRATCH_BUFFERS_MAX);
        CHECK_NUM(task, "/$defs/options/maxItems", LIMIT_OPTIONS_MAX);
        CHECK_NUM(task, "/$defs/options/items/maxLength", LIMIT_OPTION_BYTES);
        CHECK_NUM(task, "/$defs/nameExpressions/maxItems", LIMIT_NAME_EXPRESSIONS_MAX);
        CHECK_NUM(task, "/$defs/code/properties/source/maxLength", LIMIT_SOURCE_BYTES);
        CHECK_NUM(sub, "/properties/source/maxLength", LIMIT_SOURCE_BYTES);
        CHECK_NUM(sub, "/properties/frontend/maxLength", LIMIT_FRONTEND_BYTES);
        CHECK_NUM(sub, "/$defs/timing/properties/budget_ms/maximum", LIMIT_TIMING_BUDGET_MS_MAX);
        CHECK_NUM(sub, "/$defs/timing/properties/max_trials/maximum", LIMIT_TIMING_TRIALS_MAX);
        CHECK_NUM(sub, "/$defs/tags/properties/run_id/maxLength", LIMIT_TAG_STRING_BYTES);
        CHECK_NUM(sub, "/$defs/tags/properties/labels/maxProperties", LIMIT_TAGS_MAX);
        CHECK_NUM(res, "/$defs/bufferCheck/properties/first_mismatches/maxItems",
                  LIMIT_FIRST_MISMATCHES);
        json_decref(task);
        json_decref(sub);
        json_decref(res);
}

/*
 * Triton's launch ABI (issue 28): the user's arguments, then the
 * global_scratch and profile_scratch pointers, each null when its size is 0
 * (a JSON null argument) or a scratch buffer sized from the grid; and the
 * "frontend" envelope field, PTX only.
 */
static void test_triton_abi(void)
{
        Task *task = load_task("elementwise/vadd.json");
        SpecError err = { { 0 }, { 0 } };
        json_t *doc, *norm = NULL, *comp, *job = NULL, *args;

        doc = js("{\"task\": \"vadd\", \"language\": \"ptx\", \"frontend\": \"triton 3.6.0\","
                 " \"source\": \".version 8.7\","
                 " \"scratch\": [{\"name\": \"gs\", \"dtype\": \"u8\", \"count\": \"(ceil_div(N, 128)) * 1 * 1 * 1 * 96\"}],"
                 " \"plan\": [{\"kernel\": \"vadd_kernel\", \"grid\": [\"ceil_div(N, 128)\"], \"block\": [128],"
                 " \"shared\": 0, \"args\": [\"a\", \"b\", \"c\", {\"type\": \"i32\", \"value\": \"N\"}, \"gs\", null]}]}");
        CHECK(spec_submission_validate(doc, task, &norm, &err) == 0);
        CHECK_STR(json_string_value(json_object_get(norm, "frontend")), "triton 3.6.0");
        args = json_object_get(json_array_get(json_object_get(norm, "plan"), 0), "args");
        CHECK(json_array_size(args) == 6 && json_is_null(json_array_get(args, 5)));
        /* the PTX entry: four user parameters and the two scratch pointers, 8 bytes each */
        comp = js("{\"ok\": true, \"lowered_names\": {}, \"kernels\": [{\"name\": \"vadd_kernel\","
                  " \"params\": [{\"offset\": 0, \"size\": 8}, {\"offset\": 8, \"size\": 8},"
                  " {\"offset\": 16, \"size\": 8}, {\"offset\": 24, \"size\": 4},"
                  " {\"offset\": 32, \"size\": 8}, {\"offset\": 40, \"size\": 8}],"
                  " \"shared_static\": 0, \"max_threads_per_block\": 128}]}");
        CHECK(spec_check_plan(task, json_object_get(norm, "plan"), json_object_get(norm, "scratch"), comp, 0,
                              &err) == 0);
        /* a null where the kernel takes a 4-byte scalar is named as a null pointer */
        set_ptr(comp, "/kernels/0/params/5/size", json_integer(4));
        CHECK(spec_check_plan(task, json_object_get(norm, "plan"), NULL, comp, 0, &err) == SPEC_E_REJECTED);
        CHECK_STR(err.pointer, "/plan/0/args/5");
        CHECK_STR(err.message, "launch 0 ('vadd_kernel'): argument 5 is a null pointer (8 bytes) but the "
                               "kernel's parameter 5 is 4 bytes");
        /* one pointer short (a Triton without profile_scratch): the count says so */
        set_ptr(comp, "/kernels/0/params/5", NULL);
        CHECK(spec_check_plan(task, json_object_get(norm, "plan"), NULL, comp, 0, &err) == SPEC_E_REJECTED);
        CHECK_STR(err.message, "launch 0 ('vadd_kernel'): 6 arguments given, but the kernel has 5 parameters");
        /* the worker gets 8 zero bytes for the null, the scratch sized per shape set */
        CHECK(spec_resolve(task, norm, NULL, NULL, 1, 7, &job, &err) == 0);
        args = json_object_get(json_array_get(json_object_get(json_object_get(json_array_get(
                                       json_object_get(job, "shapes"), 1), "candidate"), "plan"), 0), "args");
        CHECK_STR(json_string_value(json_object_get(json_array_get(args, 5), "type")), "u64");
        CHECK(json_integer_value(json_object_get(json_array_get(args, 5), "value")) == 0);
        CHECK_STR(json_string_value(json_object_get(json_array_get(args, 4), "buffer")), "gs");
        CHECK(json_integer_value(json_object_get(json_array_get(json_object_get(json_object_get(json_array_get(
                      json_object_get(job, "shapes"), 1), "candidate"), "scratch"), 0), "count")) == 8 * 96);
        json_decref(job);
        json_decref(comp);
        json_decref(norm);
        norm = NULL;

        /* the Triton prompt: the same task, the kevald.triton contract, the family's example */
        {
                char *prompt = spec_task_prompt_triton(task);
                CHECK(prompt && strstr(prompt, "c[i] = a[i] + b[i]"));
                CHECK(prompt && strstr(prompt, "- odd: N=1001"));
                CHECK(prompt && strstr(prompt, "(a -> *fp32, b -> *fp32, c -> *fp32)"));
                CHECK(prompt && strstr(prompt, "kevald.triton.evaluate(client, kernel, task=\"vadd\""));
                CHECK(prompt && strstr(prompt, "## Example of the elementwise pattern (written for task l1_19_relu"));
                CHECK(prompt && !strstr(prompt, "extern \"C\""));
                free(prompt);
        }

        /* frontend: PTX only, bounded, a plain name */
        set_ptr(doc, "/language", json_string("cuda"));
        CHECK(spec_submission_validate(doc, task, &norm, &err) == SPEC_E_INVALID);
        CHECK_STR(err.pointer, "/frontend");
        CHECK_STR(err.message, "'frontend' names the tool that produced PTX; it needs \"language\": \"ptx\"");
        set_ptr(doc, "/language", json_string("ptx"));
        set_ptr(doc, "/frontend", json_string("triton\n3.6"));
        CHECK(spec_submission_validate(doc, task, &norm, &err) == SPEC_E_INVALID);
        CHECK_STR(err.pointer, "/frontend");
        set_ptr(doc, "/frontend", json_string(""));
        CHECK(spec_submission_validate(doc, task, &norm, &err) == SPEC_E_INVALID);
        CHECK_STR(err.message, "'frontend' is empty");
        set_ptr(doc, "/frontend", json_string("triton 3.6.0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"));
        CHECK(spec_submission_validate(doc, task, &norm, &err) == SPEC_E_INVALID);
        CHECK_STR(err.message, "'frontend' is 65 bytes long; the limit is 64");
        set_ptr(doc, "/frontend", json_integer(3));
        CHECK(spec_submission_validate(doc, task, &norm, &err) == SPEC_E_INVALID);
        CHECK_STR(err.pointer, "/frontend");
        set_ptr(doc, "/frontend", NULL);
        CHECK(spec_submission_validate(doc, task, &norm, &err) == 0);
        CHECK(json_object_get(norm, "frontend") == NULL);
        json_decref(norm);
        json_decref(doc);
        spec_task_free(task);
}

/* language "kernelbench": the envelope's faults are SPEC_E_INVALID, the source's SPEC_E_CANDIDATE */
static int kb_validate(const char *json, const KbTask *kb, json_t **ret_norm, SpecError *err)
{
        json_t *doc = json_loads(json, 0, NULL);
        int r;

        *ret_norm = NULL;
        memset(err, 0, sizeof(*err));
        r = spec_submission_validate_kernelbench(doc, kb, ret_norm, err);
        json_decref(doc);
        return r;
}

static void test_kernelbench_submissions(void)
{
        KbTask kb = { .name = "l1_23_softmax" };
        json_t *norm;
        SpecError err;

        CHECK(kb_validate("{\"task\": \"l1_23_softmax\", \"language\": \"kernelbench\", \"source\": "
                          "\"import torch\\nclass ModelNew(torch.nn.Module):\\n    pass\\n\", \"timing\": \"fast\"}",
                          &kb, &norm, &err) == 0);
        CHECK(!strcmp(jsonutil_str(norm, "language", ""), "kernelbench") &&
              !strcmp(jsonutil_str(norm, "mode", ""), "full"));
        CHECK(json_integer_value(json_object_get(json_object_get(norm, "timing"), "budget_ms")) == 300);
        CHECK(!json_object_get(norm, "plan") && !json_object_get(norm, "options"));
        json_decref(norm);
        /* the envelope */
        CHECK(kb_validate("{\"task\": \"other\", \"language\": \"kernelbench\", \"source\": \"class ModelNew: pass\"}",
                          NULL, &norm, &err) == SPEC_E_INVALID && !strcmp(err.pointer, "/task"));
        CHECK(kb_validate("{\"language\": \"kernelbench\", \"source\": \"class ModelNew: pass\"}", &kb, &norm,
                          &err) == SPEC_E_INVALID && !strcmp(err.pointer, "/task"));
        CHECK(kb_validate("{\"task\": \"l1_23_softmax\", \"language\": \"kernelbench\", \"source\": \"class ModelNew: "
                          "pass\", \"plan\": []}", &kb, &norm, &err) == SPEC_E_INVALID && !strcmp(err.pointer, "/plan"));
        CHECK(kb_validate("{\"task\": \"l1_23_softmax\", \"language\": \"kernelbench\", \"source\": \"class ModelNew: "
                          "pass\", \"mode\": \"x\"}", &kb, &norm, &err) == SPEC_E_INVALID &&
              !strcmp(err.pointer, "/mode"));
        CHECK(kb_validate("{\"task\": \"l1_23_softmax\", \"language\": \"cuda\", \"source\": \"class ModelNew: pass\"}",
                          &kb, &norm, &err) == SPEC_E_INVALID && !strcmp(err.pointer, "/language"));
        /* the candidate */
        CHECK(kb_validate("{\"task\": \"l1_23_softmax\", \"language\": \"kernelbench\", \"source\": \"class Model: "
                          "pass\\n# class ModelNew(nn.Module)\\n\"}", &kb, &norm, &err) == SPEC_E_CANDIDATE &&
              !strcmp(err.pointer, "/source") && strstr(err.message, "class ModelNew"));
        CHECK(json_is_string(json_object_get(norm, "source")) &&
              !strcmp(jsonutil_str(norm, "task", ""), "l1_23_softmax"));
        json_decref(norm);
        CHECK(kb_validate("{\"task\": \"l1_23_softmax\", \"language\": \"kernelbench\", \"source\": \"\"}", &kb, &norm,
                          &err) == SPEC_E_CANDIDATE && !strcmp(err.pointer, "/source"));
        json_decref(norm);
        CHECK(kb_validate("{\"task\": \"l1_23_softmax\", \"language\": \"kernelbench\", \"source\": 7}", &kb, &norm,
                          &err) == SPEC_E_CANDIDATE && !strcmp(err.pointer, "/source"));
        json_decref(norm);
        CHECK(kb_validate("{\"task\": \"l1_23_softmax\", \"language\": \"kernelbench\", \"source\": \"x\\nclass  "
                          "ModelNew :\\n  pass\"}", &kb, &norm, &err) == 0); /* blanks between the words */
        json_decref(norm);
        CHECK(kb_validate("{\"task\": \"l1_23_softmax\", \"language\": \"kernelbench\", \"source\": \"x = 1  # class "
                          "ModelNew(\\nclass ModelNewer(object):\\n  pass\"}", &kb, &norm, &err) == SPEC_E_CANDIDATE);
        json_decref(norm);
}

int main(void)
{
        const char *src = getenv("KEVALD_SOURCE_ROOT");

        snprintf(root, sizeof(root), "%s", src ? src : "..");
        snprintf(fixture_dir, sizeof(fixture_dir), "%s/tests/fixtures/tasks", root);
        test_task_fixtures();
        test_task_invalid();
        test_submissions();
        test_check_plan();
        test_resolve();
        test_resolve_others();
        test_shape_selection();
        test_schemas();
        test_mutations();
        test_triton_abi();
        test_kernelbench_submissions();
        if (failures) {
                fprintf(stderr, "%d failure(s)\n", failures);
                return 1;
        }
        printf("spec: all tests passed\n");
        return 0;
}
