/*
 * baselines - see baselines.h. One file per GPU model,
 * `<tasks>/baselines/<slug>.json`, written by tools/baselines/baselines.py:
 *
 *   {"format": 1, "gpu": "NVIDIA H100 80GB HBM3", "date": ..., "torch": ...,
 *    "tasks": {"<task>": {"<shape set>": {"params": {...}, "eager_ms": 0.41,
 *                                          "compile_ms": null, "compile_error": "..."}}}}
 *
 * A GPU model is known by its slug (baselines_slug(): the name lower-cased,
 * every run of other characters than letters and digits one '-'), and the
 * file's name must be that slug, so a result's gpu.name finds its file by
 * the same function. Never a guess: with a task library, an entry whose
 * task is not in it, or whose params differ from the task's shape set of
 * that name (the task changed since the measurement), is dropped and
 * reported. A time that is not a positive finite number counts as absent.
 * Invariant after load: every kept entry is {slug: {task: {shape: [eager_ms,
 * compile_ms]}}} with each a positive real or 0 (absent).
 */
#include "common/baselines.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/spec.h"

#define BASELINES_FILES_MAX 256
#define BASELINES_FILE_BYTES (16u << 20)
#define BASELINES_FORMAT 1

struct Baselines {
        json_t *by_slug; /* slug -> task -> shape -> [eager_ms, compile_ms] */
};

/**
 * baselines_slug() - the slug of a GPU model name
 * @gpu_name: e.g. "NVIDIA H100 80GB HBM3"; NULL gives ""
 * @out:      receives e.g. "nvidia-h100-80gb-hbm3", truncated to @len - 1 bytes
 * @len:      size of @out, at least 1
 *
 * ASCII letters lower-cased and digits kept; every run of anything else
 * becomes one '-', none at either end.
 */
void baselines_slug(const char *gpu_name, char *out, size_t len)
{
        size_t n = 0;
        bool dash = false;

        for (const char *p = gpu_name ? gpu_name : ""; *p && n + 1 < len; p++) {
                char c = *p;
                if (c >= 'A' && c <= 'Z')
                        c = (char)(c - 'A' + 'a');
                if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
                        if (dash && n > 0) {
                                if (n + 2 >= len)
                                        break; /* no room for "-x": end at a whole word */
                                out[n++] = '-';
                        }
                        dash = false;
                        out[n++] = c;
                } else {
                        dash = true;
                }
        }
        out[n] = '\0';
}

static void add_error(json_t *errors, const char *file, const char *pointer, const char *message)
{
        if (errors)
                json_array_append_new(errors, json_pack("{s:s, s:s, s:s}", "file", file, "pointer", pointer,
                                                        "message", message));
}

/* A measured time: a positive finite number, else 0 (null, absent, failed). */
static double time_ms(json_t *v)
{
        double x = json_is_number(v) ? json_number_value(v) : 0;

        return isfinite(x) && x > 0 ? x : 0;
}

/* The task's shape set @shape as params (the shape object without "name"); new reference or NULL. */
static json_t *task_shape_params(const Task *t, const char *shape)
{
        size_t i;
        json_t *s;

        json_array_foreach(json_object_get(spec_task_json(t), "shapes"), i, s) {
                const char *name = json_string_value(json_object_get(s, "name"));
                if (name && strcmp(name, shape) == 0) {
                        json_t *p = json_deep_copy(s);
                        if (p)
                                json_object_del(p, "name");
                        return p;
                }
        }
        return NULL;
}

/*
 * Keep the valid entries of one file's "tasks" object in a new object
 * (task -> shape -> [eager, compile]); each dropped entry is reported.
 * Return: the number of entries dropped, or -ENOMEM.
 */
static int keep_entries(const char *path, json_t *tasks, const TaskLib *lib, json_t *errors, json_t *kept)
{
        const char *tname, *sname;
        json_t *shapes, *e;
        int dropped = 0;

        json_object_foreach(tasks, tname, shapes) {
                const Task *t = lib ? tasklib_get(lib, tname) : NULL;
                json_t *out = NULL;
                char ptr[512];

                if (lib && !t) {
                        snprintf(ptr, sizeof(ptr), "/tasks/%s", tname);
                        add_error(errors, path, ptr, "no such task in the library");
                        dropped++;
                        continue;
                }
                if (!json_is_object(shapes)) {
                        snprintf(ptr, sizeof(ptr), "/tasks/%s", tname);
                        add_error(errors, path, ptr, "must be an object of shape sets");
                        dropped++;
                        continue;
                }
                json_object_foreach(shapes, sname, e) {
                        json_t *want = t ? task_shape_params(t, sname) : NULL;
                        json_t *params = json_object_get(e, "params");
                        const char *why = NULL;

                        if (!json_is_object(e))
                                why = "must be an object";
                        else if (!json_is_object(params))
                                why = "params must be an object (the shape set measured)";
                        else if (t && !want)
                                why = "the task has no shape set of this name";
                        else if (t && !json_equal(want, params))
                                why = "params differ from the task's shape set (measured before the task changed)";
                        json_decref(want);
                        if (why) {
                                snprintf(ptr, sizeof(ptr), "/tasks/%s/%s", tname, sname);
                                add_error(errors, path, ptr, why);
                                dropped++;
                                continue;
                        }
                        if (!out && (!(out = json_object()) || json_object_set_new(kept, tname, out)))
                                return -ENOMEM;
                        if (json_object_set_new(out, sname,
                                                json_pack("[f, f]", time_ms(json_object_get(e, "eager_ms")),
                                                          time_ms(json_object_get(e, "compile_ms")))))
                                return -ENOMEM;
                }
        }
        return dropped;
}

/* Load one baseline file into bl->by_slug; a bad file is reported and skipped. Return 0 or -ENOMEM. */
static int load_file(Baselines *bl, const char *path, const char *base, const TaskLib *lib, json_t *errors)
{
        char slug[BASELINES_SLUG_BYTES], msg[512];
        json_error_t jerr;
        json_t *doc = NULL, *kept = NULL;
        const char *gpu;
        struct stat st;
        int r = 0, dropped;

        if (stat(path, &st) != 0 || st.st_size > (off_t)BASELINES_FILE_BYTES) {
                snprintf(msg, sizeof(msg), "cannot be read or is larger than %u bytes", BASELINES_FILE_BYTES);
                add_error(errors, path, "", msg);
                goto skip;
        }
        doc = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
        if (!doc) {
                snprintf(msg, sizeof(msg), "not valid JSON: line %d column %d: %s", jerr.line, jerr.column, jerr.text);
                add_error(errors, path, "", msg);
                goto skip;
        }
        gpu = json_string_value(json_object_get(doc, "gpu"));
        if (json_integer_value(json_object_get(doc, "format")) != BASELINES_FORMAT) {
                add_error(errors, path, "/format", "must be 1");
                goto skip;
        }
        if (!gpu || !*gpu || !json_is_object(json_object_get(doc, "tasks"))) {
                add_error(errors, path, !gpu || !*gpu ? "/gpu" : "/tasks",
                          !gpu || !*gpu ? "must be the GPU's name" : "must be an object");
                goto skip;
        }
        baselines_slug(gpu, slug, sizeof(slug));
        if (!slug[0] || strlen(base) != strlen(slug) + 5 || strncmp(base, slug, strlen(slug)) != 0) {
                snprintf(msg, sizeof(msg), "the file of GPU '%s' must be named '%s.json'", gpu, slug);
                add_error(errors, path, "/gpu", msg);
                goto skip;
        }
        if (json_object_get(bl->by_slug, slug)) {
                add_error(errors, path, "/gpu", "a second file for this GPU model");
                goto skip;
        }
        if (!(kept = json_object())) {
                r = -ENOMEM;
                goto out;
        }
        dropped = keep_entries(path, json_object_get(doc, "tasks"), lib, errors, kept);
        if (dropped < 0) {
                r = dropped;
                goto out;
        }
        if (dropped > 0)
                log_warn("baselines: '%s': %d entr%s dropped (task or shape set changed or missing)", path,
                         dropped, dropped == 1 ? "y" : "ies");
        log_info("baselines: %zu task(s) measured on '%s' from '%s'", json_object_size(kept), gpu, path);
        if (json_object_set_new(bl->by_slug, slug, kept)) {
                kept = NULL;
                r = -ENOMEM;
                goto out;
        }
        kept = NULL;
        goto out;
skip:
        log_warn("baselines: skipping '%s' (see the errors)", path);
out:
        json_decref(kept);
        json_decref(doc);
        return r;
}

/**
 * baselines_load() - read every baseline file of a task library
 * @tasks_dir: the task library folder; its `baselines/` folder is read
 *             (`*.json`, hidden entries skipped, not recursive)
 * @lib:       the loaded library to check entries against, or NULL to keep
 *             every well-formed entry unchecked; borrowed
 * @ret_bl:    on success a new Baselines (baselines_free()); empty when the
 *             folder does not exist
 * @errors:    when not NULL, a new array of {"file", "pointer", "message"}
 *             for every file skipped and entry dropped
 *
 * Return: 0, or a negative errno (-ENOMEM, -E2BIG past BASELINES_FILES_MAX
 * files, or the errno of a folder that exists but cannot be read).
 */
int baselines_load(const char *tasks_dir, const TaskLib *lib, Baselines **ret_bl, json_t **errors)
{
        Baselines *bl = calloc(1, sizeof(*bl));
        json_t *errs = errors ? json_array() : NULL;
        char dir[4096];
        DIR *d = NULL;
        struct dirent *e;
        size_t files = 0;
        int r = 0;

        if (!bl || !(bl->by_slug = json_object()) || (errors && !errs)) {
                r = -ENOMEM;
                goto out;
        }
        if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", tasks_dir, TASKLIB_BASELINES_DIR) >= sizeof(dir)) {
                r = -ENAMETOOLONG;
                goto out;
        }
        d = opendir(dir);
        if (!d && errno != ENOENT) {
                r = -errno;
                goto out;
        }
        while (d && (e = readdir(d))) {
                char path[4400];
                size_t n = strlen(e->d_name);
                struct stat st;

                if (e->d_name[0] == '.' || n <= 5 || strcmp(e->d_name + n - 5, ".json") != 0)
                        continue;
                snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
                if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
                        continue;
                if (++files > BASELINES_FILES_MAX) {
                        r = -E2BIG;
                        goto out;
                }
                if ((r = load_file(bl, path, e->d_name, lib, errs)) < 0)
                        goto out;
        }
        *ret_bl = bl;
        bl = NULL;
        if (errors) {
                *errors = errs;
                errs = NULL;
        }
out:
        if (d)
                closedir(d);
        baselines_free(bl);
        json_decref(errs);
        return r;
}

/** baselines_free() - free @bl; NULL is allowed */
void baselines_free(Baselines *bl)
{
        if (!bl)
                return;
        json_decref(bl->by_slug);
        free(bl);
}

/** baselines_count() - the number of GPU models with a baseline file; 0 for NULL */
size_t baselines_count(const Baselines *bl)
{
        return bl ? json_object_size(bl->by_slug) : 0;
}

/**
 * baselines_lookup() - the baseline medians of one shape set on one GPU model
 * @bl:        loaded baselines, or NULL (none)
 * @gpu_name:  the GPU's name as the worker reports it (result gpu.name);
 *             matched by slug
 * @task:      task name
 * @shape:     shape set name
 * @ret_times: on success the medians, 0 where a mode has no figure
 *
 * Return: 0, or BASELINES_E_NONE when there is no entry (or an argument is NULL).
 */
int baselines_lookup(const Baselines *bl, const char *gpu_name, const char *task, const char *shape,
                     BaselineTimes *ret_times)
{
        char slug[BASELINES_SLUG_BYTES];
        json_t *e;

        if (!bl || !gpu_name || !task || !shape)
                return BASELINES_E_NONE;
        baselines_slug(gpu_name, slug, sizeof(slug));
        e = json_object_get(json_object_get(json_object_get(bl->by_slug, slug), task), shape);
        if (!json_is_array(e))
                return BASELINES_E_NONE;
        ret_times->eager_ms = json_real_value(json_array_get(e, 0));
        ret_times->compile_ms = json_real_value(json_array_get(e, 1));
        return 0;
}
