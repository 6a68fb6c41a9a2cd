/*
 * tasklib - the task library: every task file under a folder, parsed once
 * at start-up into Tasks sorted by name in natural order (tasklib_name_cmp():
 * l1_2 before l1_10). Immutable after tasklib_load(), so any thread may read
 * it without locks.
 *
 * Files: every `*.json` under the folder (recursively, symlinks not
 * followed, hidden entries skipped) is a task, except `*.plan.json`
 * (example plans kept beside tasks), the top-level `kernelbench/` folder (its
 * index, common/kbtasks.c) and the top-level `baselines/` folder
 * (measured PyTorch times per GPU model, common/baselines.c). A task's `name` must equal its file
 * name without `.json`, and names are unique; `source_file` paths are
 * relative to the task file's folder. A file that fails is skipped and
 * reported in the error list; the rest load.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/spec.h"
#include "common/tasklib.h"
#include "common/kbtasks.h"

#define TASKLIB_FILES_MAX 100000
#define TASKLIB_DEPTH_MAX 16
#define TASKLIB_FILE_BYTES (4u << 20)

struct TaskLib {
        Task **tasks;  /* sorted by tasklib_name_cmp() */
        size_t count;
};

typedef struct PathList {
        char **paths;
        size_t count, cap;
} PathList;

static const Task *tasklib_get_linear(const TaskLib *lib, const char *name);

static bool has_suffix(const char *s, const char *suffix)
{
        size_t n = strlen(s), m = strlen(suffix);
        return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int walk(const char *dir, int depth, PathList *out)
{
        DIR *d;
        struct dirent *e;
        int r = 0;

        if (depth > TASKLIB_DEPTH_MAX)
                return 0;
        d = opendir(dir);
        if (!d)
                return -errno;
        while ((e = readdir(d))) {
                char path[4096];
                struct stat st;

                if (e->d_name[0] == '.')
                        continue;
                if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path))
                        continue;
                if (lstat(path, &st) != 0)
                        continue;
                if (S_ISDIR(st.st_mode)) {
                        if (depth == 0 && (strcmp(e->d_name, TASKLIB_BASELINES_DIR) == 0 ||
                                           strcmp(e->d_name, KBTASKS_DIR) == 0))
                                continue;
                        if ((r = walk(path, depth + 1, out)) < 0 && r != -EACCES)
                                break;
                        r = 0;
                } else if (S_ISREG(st.st_mode) && has_suffix(e->d_name, ".json") &&
                           !has_suffix(e->d_name, ".plan.json")) {
                        if (out->count >= TASKLIB_FILES_MAX) {
                                r = -E2BIG;
                                break;
                        }
                        if (out->count == out->cap) {
                                size_t cap = out->cap ? out->cap * 2 : 64;
                                char **p = realloc(out->paths, cap * sizeof(*p));
                                if (!p) {
                                        r = -ENOMEM;
                                        break;
                                }
                                out->paths = p;
                                out->cap = cap;
                        }
                        if (!(out->paths[out->count] = strdup(path))) {
                                r = -ENOMEM;
                                break;
                        }
                        out->count++;
                }
        }
        closedir(d);
        return r;
}

static int cmp_path(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/**
 * tasklib_name_cmp() - natural order of task names: runs of digits compare
 * as numbers (l1_2 before l1_10, l2_9 before l2_10), everything else byte by
 * byte; names equal that way (l1_02, l1_2) fall back to strcmp(), so the
 * order is total and a binary search finds every name.
 * Return: <0, 0 or >0 as strcmp().
 */
int tasklib_name_cmp(const char *a, const char *b)
{
        const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;

        while (*p && *q) {
                if (isdigit(*p) && isdigit(*q)) {
                        const unsigned char *ps, *qs;
                        size_t np, nq;
                        int c;

                        while (*p == '0' && isdigit(p[1]))
                                p++;
                        while (*q == '0' && isdigit(q[1]))
                                q++;
                        for (ps = p; isdigit(*p); p++)
                                ;
                        for (qs = q; isdigit(*q); q++)
                                ;
                        np = (size_t)(p - ps), nq = (size_t)(q - qs);
                        if (np != nq)
                                return np < nq ? -1 : 1;
                        c = memcmp(ps, qs, np);
                        if (c)
                                return c;
                        continue;
                }
                if (*p != *q)
                        return *p < *q ? -1 : 1;
                p++, q++;
        }
        if (*p || *q)
                return *p ? 1 : -1;
        return strcmp(a, b);
}

static int cmp_task(const void *a, const void *b)
{
        return tasklib_name_cmp(spec_task_name(*(Task *const *)a), spec_task_name(*(Task *const *)b));
}

static void add_error(json_t *errors, const char *file, const char *pointer, const char *message)
{
        if (errors)
                json_array_append_new(errors, json_pack("{s:s, s:s, s:s}", "file", file, "pointer",
                                                        pointer, "message", message));
}

/**
 * tasklib_load_file() - parse one task file
 * @path:     the task file
 * @ret_task: on success a new Task
 * @err:      on SPEC_E_INVALID, the pointer and message (a file that is not
 *            JSON reports pointer "" and the parser's message)
 * Return: 0, SPEC_E_INVALID, or a negative errno.
 */
int tasklib_load_file(const char *path, Task **ret_task, SpecError *err)
{
        json_error_t jerr;
        json_t *doc = NULL;
        char *dir = NULL, *slash;
        struct stat st;
        int r;

        if (stat(path, &st) != 0)
                return -errno;
        if (st.st_size > (off_t)TASKLIB_FILE_BYTES) {
                snprintf(err->pointer, sizeof(err->pointer), "%s", "");
                snprintf(err->message, sizeof(err->message), "task file is larger than %u bytes",
                         TASKLIB_FILE_BYTES);
                return SPEC_E_INVALID;
        }
        doc = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
        if (!doc) {
                snprintf(err->pointer, sizeof(err->pointer), "%s", "");
                snprintf(err->message, sizeof(err->message), "not valid JSON: line %d column %d: %s",
                         jerr.line, jerr.column, jerr.text);
                r = SPEC_E_INVALID;
                goto out;
        }
        dir = strdup(path);
        if (!dir) {
                r = -ENOMEM;
                goto out;
        }
        slash = strrchr(dir, '/');
        if (slash)
                *slash = '\0';
        r = spec_task_parse(doc, slash ? dir : ".", ret_task, err);
out:
        free(dir);
        json_decref(doc);
        return r;
}

/**
 * tasklib_load() - parse every task under @dir
 * @dir:     the library folder
 * @ret_lib: on success a new TaskLib (tasklib_free())
 * @errors:  when not NULL, a new array of {"file", "pointer", "message"}
 *           for every file that failed to load (those are skipped)
 * Return: 0, or a negative errno if @dir cannot be read.
 */
int tasklib_load(const char *dir, TaskLib **ret_lib, json_t **errors)
{
        PathList pl = { 0 };
        TaskLib *lib = NULL;
        json_t *errs = errors ? json_array() : NULL;
        int r;

        r = walk(dir, 0, &pl);
        if (r < 0)
                goto out;
        qsort(pl.paths, pl.count, sizeof(*pl.paths), cmp_path);
        lib = calloc(1, sizeof(*lib));
        if (!lib || (pl.count && !(lib->tasks = calloc(pl.count, sizeof(*lib->tasks))))) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < pl.count; i++) {
                SpecError err = { { 0 }, { 0 } };
                Task *t = NULL;
                const char *base = strrchr(pl.paths[i], '/');
                size_t blen;

                base = base ? base + 1 : pl.paths[i];
                blen = strlen(base) - strlen(".json");
                r = tasklib_load_file(pl.paths[i], &t, &err);
                if (r < 0) {
                        snprintf(err.message, sizeof(err.message), "cannot read: %s",
                                 strerror(-r));
                        err.pointer[0] = '\0';
                }
                if (r == 0 && (strlen(spec_task_name(t)) != blen ||
                               strncmp(spec_task_name(t), base, blen) != 0)) {
                        snprintf(err.pointer, sizeof(err.pointer), "/name");
                        snprintf(err.message, sizeof(err.message),
                                 "task name '%s' differs from the file name '%s'",
                                 spec_task_name(t), base);
                        r = SPEC_E_INVALID;
                }
                if (r == 0 && tasklib_get_linear(lib, spec_task_name(t))) {
                        snprintf(err.pointer, sizeof(err.pointer), "/name");
                        snprintf(err.message, sizeof(err.message), "duplicate task name '%s'",
                                 spec_task_name(t));
                        r = SPEC_E_INVALID;
                }
                if (r != 0) {
                        log_warn("tasklib: skipping '%s': %s: %s", pl.paths[i],
                                 err.pointer[0] ? err.pointer : "(document)", err.message);
                        add_error(errs, pl.paths[i], err.pointer, err.message);
                        spec_task_free(t);
                        continue;
                }
                lib->tasks[lib->count++] = t;
        }
        qsort(lib->tasks, lib->count, sizeof(*lib->tasks), cmp_task);
        log_info("tasklib: loaded %zu task%s from '%s' (%zu skipped)", lib->count,
                 lib->count == 1 ? "" : "s", dir, pl.count - lib->count);
        *ret_lib = lib;
        lib = NULL;
        if (errors) {
                *errors = errs;
                errs = NULL;
        }
        r = 0;
out:
        for (size_t i = 0; i < pl.count; i++)
                free(pl.paths[i]);
        free(pl.paths);
        tasklib_free(lib);
        json_decref(errs);
        return r;
}

/** tasklib_free() - free the library and its tasks; NULL is allowed */
void tasklib_free(TaskLib *lib)
{
        if (!lib)
                return;
        for (size_t i = 0; i < lib->count; i++)
                spec_task_free(lib->tasks[i]);
        free(lib->tasks);
        free(lib);
}

/* Lookup without relying on the sort order (used while loading). */
static const Task *tasklib_get_linear(const TaskLib *lib, const char *name)
{
        for (size_t i = 0; i < lib->count; i++)
                if (!strcmp(spec_task_name(lib->tasks[i]), name))
                        return lib->tasks[i];
        return NULL;
}

/**
 * tasklib_get() - find a task by name (binary search)
 * Return: the Task, borrowed from @lib, or NULL.
 */
const Task *tasklib_get(const TaskLib *lib, const char *name)
{
        size_t lo = 0, hi = lib ? lib->count : 0;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = tasklib_name_cmp(spec_task_name(lib->tasks[mid]), name);
                if (c == 0)
                        return lib->tasks[mid];
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/** tasklib_count() - number of loaded tasks */
size_t tasklib_count(const TaskLib *lib)
{
        return lib ? lib->count : 0;
}

/** tasklib_task_at() - the @index-th task in natural name order; borrowed; NULL past the end */
const Task *tasklib_task_at(const TaskLib *lib, size_t index)
{
        return lib && index < lib->count ? lib->tasks[index] : NULL;
}

/**
 * tasklib_list() - summaries of the tasks, in natural name order (tasklib_name_cmp())
 * @level:    only this level when > 0
 * @category: only this category when not NULL
 * Return: a new array of spec_task_summary() objects, or NULL on ENOMEM.
 */
json_t *tasklib_list(const TaskLib *lib, int level, const char *category)
{
        json_t *arr = json_array();

        for (size_t i = 0; arr && lib && i < lib->count; i++) {
                json_t *doc = spec_task_json(lib->tasks[i]);
                const char *cat = json_string_value(json_object_get(doc, "category"));
                if (level > 0 && json_integer_value(json_object_get(doc, "level")) != level)
                        continue;
                if (category && (!cat || strcmp(cat, category) != 0))
                        continue;
                if (json_array_append_new(arr, spec_task_summary(lib->tasks[i])) != 0) {
                        json_decref(arr);
                        return NULL;
                }
        }
        return arr;
}
