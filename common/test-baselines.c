/*
 * Unit tests for common/baselines.c: GPU names slug as documented; a
 * library's baseline files load, are found by any spelling of the GPU name
 * with the same slug, and give 0 for a failed mode; entries of unknown
 * tasks or shape sets, or measured with other params, are dropped; bad
 * files (not JSON, wrong format or shape, not named by the GPU's slug) are
 * skipped and reported; no folder is no baselines.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/baselines.h"
#include "common/log.h"
#include "common/tasklib.h"
#include "common/testcheck.h"

static const char *TASK =
        "{\"name\": \"t\", \"description\": \"d\", \"level\": 1, \"category\": \"c\","
        " \"params\": {\"N\": \"n\"}, \"shapes\": [{\"name\": \"default\", \"N\": 8}, {\"name\": \"small\", \"N\": 4}],"
        " \"buffers\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"inout\","
        " \"init\": {\"dist\": \"mixed\"}}],"
        " \"reference\": {\"source\": \"extern \\\"C\\\" __global__ void k(float *x) {}\","
        " \"plan\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [\"N\"], \"args\": [\"x\"]}]}}";

static const char *H100 =
        "{\"format\": 1, \"gpu\": \"NVIDIA H100 80GB HBM3\", \"torch\": \"2.11.0\", \"tasks\": {"
        " \"t\": {\"default\": {\"params\": {\"N\": 8}, \"eager_ms\": 0.5, \"compile_ms\": null,"
        "                       \"compile_error\": \"RuntimeError: boom\"},"
        "        \"small\": {\"params\": {\"N\": 5}, \"eager_ms\": 0.1, \"compile_ms\": 0.2},"
        "        \"huge\": {\"params\": {\"N\": 8}, \"eager_ms\": 0.1, \"compile_ms\": 0.2}},"
        " \"gone\": {\"default\": {\"params\": {\"N\": 8}, \"eager_ms\": 1, \"compile_ms\": 1}}}}";

static const char *error_for(json_t *errors, const char *file_suffix, const char *pointer)
{
        size_t i, n = strlen(file_suffix);
        json_t *e;

        json_array_foreach(errors, i, e) {
                const char *f = json_string_value(json_object_get(e, "file"));
                const char *p = json_string_value(json_object_get(e, "pointer"));
                if (f && strlen(f) >= n && !strcmp(f + strlen(f) - n, file_suffix) && (!pointer || !strcmp(p, pointer)))
                        return json_string_value(json_object_get(e, "message"));
        }
        return NULL;
}

static void test_slug(void)
{
        char s[BASELINES_SLUG_BYTES], tiny[6];

        baselines_slug("NVIDIA H100 80GB HBM3", s, sizeof(s));
        CHECK(!strcmp(s, "nvidia-h100-80gb-hbm3"));
        baselines_slug("  NVIDIA  H200 (NVL) ", s, sizeof(s));
        CHECK(!strcmp(s, "nvidia-h200-nvl"));
        baselines_slug("NVIDIA H100 PCIe", s, sizeof(s));
        CHECK(!strcmp(s, "nvidia-h100-pcie"));
        baselines_slug("", s, sizeof(s));
        CHECK(!strcmp(s, ""));
        baselines_slug(NULL, s, sizeof(s));
        CHECK(!strcmp(s, ""));
        baselines_slug("ABCDEFGH", tiny, sizeof(tiny));
        CHECK(!strcmp(tiny, "abcde"));
        baselines_slug("AB CD", tiny, sizeof(tiny)); /* never a trailing '-' when truncated */
        CHECK(!strcmp(tiny, "ab-cd"));
        baselines_slug("ABCD EF", tiny, sizeof(tiny));
        CHECK(!strcmp(tiny, "abcd"));
}

static void test_library(void)
{
        char tmpl[] = "/tmp/kevald-baselines-XXXXXX", bl_dir[4200], cmd[4400];
        const char *dir = mkdtemp(tmpl), *msg;
        TaskLib *lib = NULL;
        Baselines *bl = NULL;
        json_t *errors = NULL;
        BaselineTimes bt = { -1, -1 };

        CHECK(dir != NULL);
        /* No baselines folder: no baselines, not an error. */
        test_write_file(dir, "t.json", TASK);
        CHECK(tasklib_load(dir, &lib, NULL) == 0 && tasklib_count(lib) == 1);
        CHECK(baselines_load(dir, lib, &bl, &errors) == 0 && baselines_count(bl) == 0);
        CHECK(json_array_size(errors) == 0);
        CHECK(baselines_lookup(bl, "NVIDIA H100 80GB HBM3", "t", "default", &bt) == BASELINES_E_NONE);
        baselines_free(bl);
        json_decref(errors);
        bl = NULL;
        errors = NULL;

        snprintf(bl_dir, sizeof(bl_dir), "%s/baselines", dir);
        CHECK(mkdir(bl_dir, 0700) == 0);
        test_write_file(bl_dir, "nvidia-h100-80gb-hbm3.json", H100);
        test_write_file(bl_dir, "h200.json", "{\"format\": 1, \"gpu\": \"NVIDIA H200\", \"tasks\": {}}");
        test_write_file(bl_dir, "broken.json", "{\"format\": ");
        test_write_file(bl_dir, "nvidia-a100.json", "{\"format\": 2, \"gpu\": \"NVIDIA A100\", \"tasks\": {}}");
        test_write_file(bl_dir, "nvidia-b200.json", "{\"format\": 1, \"gpu\": \"NVIDIA B200\", \"tasks\": []}");
        test_write_file(bl_dir, ".hidden.json", "not read");
        test_write_file(bl_dir, "notes.txt", "not read");
        CHECK(baselines_load(dir, lib, &bl, &errors) == 0);
        CHECK(baselines_count(bl) == 1);

        CHECK(baselines_lookup(bl, "NVIDIA H100 80GB HBM3", "t", "default", &bt) == 0);
        CHECK(bt.eager_ms == 0.5 && bt.compile_ms == 0);
        bt.eager_ms = -1;
        CHECK(baselines_lookup(bl, "nvidia h100-80gb_hbm3", "t", "default", &bt) == 0 && bt.eager_ms == 0.5);
        CHECK(baselines_lookup(bl, "NVIDIA H100 PCIe", "t", "default", &bt) == BASELINES_E_NONE);
        CHECK(baselines_lookup(bl, "NVIDIA H200", "t", "default", &bt) == BASELINES_E_NONE);
        CHECK(baselines_lookup(bl, "NVIDIA H100 80GB HBM3", "t", "small", &bt) == BASELINES_E_NONE);
        CHECK(baselines_lookup(bl, "NVIDIA H100 80GB HBM3", "t", "huge", &bt) == BASELINES_E_NONE);
        CHECK(baselines_lookup(bl, "NVIDIA H100 80GB HBM3", "gone", "default", &bt) == BASELINES_E_NONE);
        CHECK(baselines_lookup(bl, NULL, "t", "default", &bt) == BASELINES_E_NONE);
        CHECK(baselines_lookup(bl, "NVIDIA H100 80GB HBM3", NULL, "default", &bt) == BASELINES_E_NONE);
        CHECK(baselines_lookup(NULL, "NVIDIA H100 80GB HBM3", "t", "default", &bt) == BASELINES_E_NONE);

        msg = error_for(errors, "/nvidia-h100-80gb-hbm3.json", "/tasks/t/small");
        CHECK(msg && strstr(msg, "params differ"));
        msg = error_for(errors, "/nvidia-h100-80gb-hbm3.json", "/tasks/t/huge");
        CHECK(msg && strstr(msg, "no shape set"));
        msg = error_for(errors, "/nvidia-h100-80gb-hbm3.json", "/tasks/gone");
        CHECK(msg && strstr(msg, "no such task"));
        msg = error_for(errors, "/h200.json", "/gpu");
        CHECK(msg && !strcmp(msg, "the file of GPU 'NVIDIA H200' must be named 'nvidia-h200.json'"));
        msg = error_for(errors, "/broken.json", "");
        CHECK(msg && !strncmp(msg, "not valid JSON", 14));
        CHECK(error_for(errors, "/nvidia-a100.json", "/format") != NULL);
        CHECK(error_for(errors, "/nvidia-b200.json", "/tasks") != NULL);
        CHECK(json_array_size(errors) == 7);
        baselines_free(bl);
        json_decref(errors);
        bl = NULL;
        errors = NULL;

        /* Without a library every well-formed entry is kept; a file not named by its GPU's slug is skipped. */
        test_write_file(bl_dir, "nvidia-h100-80gb-hbm3-copy.json",
                   "{\"format\": 1, \"gpu\": \"NVIDIA H100 80GB HBM3 copy\", \"tasks\": {}}");
        CHECK(baselines_load(dir, NULL, &bl, NULL) == 0 && baselines_count(bl) == 2);
        CHECK(baselines_lookup(bl, "NVIDIA H100 80GB HBM3", "t", "small", &bt) == 0 && bt.eager_ms == 0.1 &&
              bt.compile_ms == 0.2);
        CHECK(baselines_lookup(bl, "NVIDIA H100 80GB HBM3", "gone", "default", &bt) == 0 && bt.eager_ms == 1);
        baselines_free(bl);
        bl = NULL;
        test_write_file(bl_dir, "nvidia-h100-80gb-hbm3-2.json",
                   "{\"format\": 1, \"gpu\": \"NVIDIA H100 80GB HBM3\", \"tasks\": {}}");
        CHECK(baselines_load(dir, lib, &bl, &errors) == 0 && baselines_count(bl) == 2);
        CHECK(error_for(errors, "/nvidia-h100-80gb-hbm3-2.json", "/gpu") != NULL);
        baselines_free(bl);
        json_decref(errors);
        baselines_free(NULL);
        CHECK(baselines_count(NULL) == 0);

        tasklib_free(lib);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0);
}

int main(void)
{
        log_init("test-baselines", LOG_LEVEL_ERROR);
        test_slug();
        test_library();
        if (failures) {
                fprintf(stderr, "%d failure(s)\n", failures);
                return 1;
        }
        printf("baselines: all tests passed\n");
        return 0;
}
