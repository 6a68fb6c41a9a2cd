/*
 * Unit tests for common/tasklib.c: the fixture library loads sorted, lookups
 * and filters work, and a folder of broken files reports each one (bad JSON,
 * name/file mismatch, duplicate names, invalid tasks) while the good load.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/tasklib.h"
#include "common/testcheck.h"

static const char *TASK_FMT =
        "{\"name\": \"%s\", \"description\": \"d\", \"level\": %d, \"category\": \"%s\","
        " \"params\": {\"N\": \"n\"}, \"shapes\": [{\"name\": \"default\", \"N\": %d}],"
        " \"buffers\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"inout\","
        " \"init\": {\"dist\": \"mixed\"}}],"
        " \"reference\": {\"source\": \"extern \\\"C\\\" __global__ void k(float *x) {}\","
        " \"plan\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [\"N\"], \"args\": [\"x\"]}]}}";

static void write_task_n(const char *dir, const char *file, const char *name, int level,
                         const char *cat, int n)
{
        char text[2048];

        snprintf(text, sizeof(text), TASK_FMT, name, level, cat, n);
        test_write_file(dir, file, text);
}

static void write_task(const char *dir, const char *file, const char *name, int level,
                       const char *cat)
{
        write_task_n(dir, file, name, level, cat, 8);
}

static const char *error_for(json_t *errors, const char *file_suffix, const char **ret_ptr)
{
        size_t i;
        json_t *e;

        json_array_foreach(errors, i, e) {
                const char *f = json_string_value(json_object_get(e, "file"));
                size_t n = strlen(f), m = strlen(file_suffix);
                if (n >= m && strcmp(f + n - m, file_suffix) == 0) {
                        *ret_ptr = json_string_value(json_object_get(e, "pointer"));
                        return json_string_value(json_object_get(e, "message"));
                }
        }
        return NULL;
}

static void test_fixtures(const char *root)
{
        char dir[4096];
        TaskLib *lib = NULL;
        json_t *errors = NULL, *list;

        snprintf(dir, sizeof(dir), "%s/tests/fixtures/tasks", root);
        CHECK(tasklib_load(dir, &lib, &errors) == 0);
        CHECK(json_array_size(errors) == 0);
        CHECK(tasklib_count(lib) == 4);
        CHECK(strcmp(spec_task_name(tasklib_task_at(lib, 0)), "gather_rows") == 0);
        CHECK(strcmp(spec_task_name(tasklib_task_at(lib, 3)), "vadd") == 0);
        CHECK(tasklib_task_at(lib, 4) == NULL);
        CHECK(tasklib_get(lib, "rownorm") != NULL);
        CHECK(tasklib_get(lib, "gemm_f16") != NULL);
        CHECK(tasklib_get(lib, "nope") == NULL);
        CHECK(tasklib_get(lib, "") == NULL);
        list = tasklib_list(lib, 0, NULL);
        CHECK(json_array_size(list) == 4);
        json_decref(list);
        list = tasklib_list(lib, 2, NULL);
        CHECK(json_array_size(list) == 1);
        CHECK(strcmp(json_string_value(json_object_get(json_array_get(list, 0), "name")),
                     "rownorm") == 0);
        json_decref(list);
        list = tasklib_list(lib, 1, "gemm");
        CHECK(json_array_size(list) == 1);
        CHECK(json_integer_value(json_object_get(
                      json_array_get(json_object_get(json_array_get(list, 0), "shapes"), 1),
                      "K")) == 33);
        json_decref(list);
        list = tasklib_list(lib, 0, "nosuch");
        CHECK(json_array_size(list) == 0);
        json_decref(list);
        json_decref(errors);
        tasklib_free(lib);
}

static void test_broken(void)
{
        char tmpl[] = "/tmp/kevald-tasklib-XXXXXX", sub[4200], hidden[4200], bl[4200];
        const char *dir = mkdtemp(tmpl), *msg, *ptr = NULL;
        TaskLib *lib = NULL;
        json_t *errors = NULL;
        char cmd[4400];

        CHECK(dir != NULL);
        snprintf(sub, sizeof(sub), "%s/cat", dir);
        snprintf(hidden, sizeof(hidden), "%s/.git", dir);
        snprintf(bl, sizeof(bl), "%s/baselines", dir);
        CHECK(mkdir(sub, 0700) == 0 && mkdir(hidden, 0700) == 0 && mkdir(bl, 0700) == 0);
        test_write_file(bl, "nvidia-h100.json", "{\"gpu\": \"not a task\"}"); /* baselines/ is skipped */
        write_task(dir, "good.json", "good", 1, "a");
        write_task(sub, "deep.json", "deep", 3, "b");
        write_task(sub, "good2.json", "good", 1, "a"); /* named 'good' in good2.json */
        write_task(dir, "twin.json", "twin", 1, "a");
        write_task(sub, "twin.json", "twin", 1, "a");  /* duplicate name */
        test_write_file(dir, "broken.json", "{\"name\": ");
        test_write_file(dir, "example.plan.json", "not even JSON"); /* skipped */
        test_write_file(hidden, "x.json", "not JSON either");        /* skipped */
        test_write_file(dir, "notes.txt", "ignored");
        write_task_n(dir, "bad.json", "bad", 1, "a", 2048); /* block ["N"] too large */
        CHECK(tasklib_load(dir, &lib, &errors) == 0);
        CHECK(tasklib_count(lib) == 3);
        CHECK(tasklib_get(lib, "good") && tasklib_get(lib, "deep") && tasklib_get(lib, "twin"));
        CHECK(json_array_size(errors) == 4);
        msg = error_for(errors, "/broken.json", &ptr);
        CHECK(msg && strncmp(msg, "not valid JSON: line 1", 22) == 0 && ptr && !ptr[0]);
        msg = error_for(errors, "/cat/good2.json", &ptr);
        CHECK(msg && strcmp(msg, "task name 'good' differs from the file name 'good2.json'") == 0);
        CHECK(ptr && strcmp(ptr, "/name") == 0);
        msg = error_for(errors, "/twin.json", &ptr);
        CHECK(msg && strcmp(msg, "duplicate task name 'twin'") == 0);
        msg = error_for(errors, "/bad.json", &ptr);
        CHECK(msg && strcmp(msg, "block x is 2048 in shape 'default'; it must be in [1, 1024]") == 0);
        CHECK(ptr && strcmp(ptr, "/reference/plan/0/block/0") == 0);
        json_decref(errors);
        tasklib_free(lib);

        /* a missing folder is an error, not an empty library */
        lib = NULL;
        errors = NULL;
        snprintf(sub, sizeof(sub), "%s/missing", dir);
        CHECK(tasklib_load(sub, &lib, &errors) == -ENOENT);
        CHECK(lib == NULL);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0);
}

/* Natural order: digit runs compare as numbers; the library sorts and finds by it. */
static void test_natural_order(void)
{
        static const char *const sorted[] = { "a", "l1_1_x", "l1_2_x", "l1_10_x", "l1_100_x", "l2_1",
                                              "l2_09", "l2_9", "l2_10", "l10_1", "lx" };
        char tmpl[] = "/tmp/kevald-tasklib-XXXXXX", cmd[4200];
        const char *dir = mkdtemp(tmpl);
        size_t n = sizeof(sorted) / sizeof(sorted[0]);
        TaskLib *lib = NULL;
        json_t *list;

        for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < n; j++) {
                        int c = tasklib_name_cmp(sorted[i], sorted[j]);
                        CHECK(i < j ? c < 0 : i > j ? c > 0 : c == 0);
                }
        CHECK(dir != NULL);
        write_task(dir, "l1_100.json", "l1_100", 1, "a");
        write_task(dir, "l1_2.json", "l1_2", 1, "a");
        write_task(dir, "l1_10.json", "l1_10", 1, "a");
        write_task(dir, "l1_1.json", "l1_1", 1, "a");
        CHECK(tasklib_load(dir, &lib, NULL) == 0);
        list = tasklib_list(lib, 0, NULL);
        CHECK(json_array_size(list) == 4);
        CHECK(!strcmp(json_string_value(json_object_get(json_array_get(list, 0), "name")), "l1_1"));
        CHECK(!strcmp(json_string_value(json_object_get(json_array_get(list, 1), "name")), "l1_2"));
        CHECK(!strcmp(json_string_value(json_object_get(json_array_get(list, 2), "name")), "l1_10"));
        CHECK(!strcmp(json_string_value(json_object_get(json_array_get(list, 3), "name")), "l1_100"));
        for (size_t i = 0; i < 4; i++)
                CHECK(tasklib_get(lib, json_string_value(json_object_get(json_array_get(list, i), "name"))));
        CHECK(tasklib_get(lib, "l1_3") == NULL);
        json_decref(list);
        tasklib_free(lib);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0);
}

int main(void)
{
        const char *root = getenv("KEVALD_SOURCE_ROOT");

        log_init("test-tasklib", LOG_LEVEL_ERROR);
        test_fixtures(root ? root : "..");
        test_broken();
        test_natural_order();
        if (failures) {
                fprintf(stderr, "%d failure(s)\n", failures);
                return 1;
        }
        printf("tasklib: all tests passed\n");
        return 0;
}
