/*
 * kbtasks - the KernelBench task index: tasks/kernelbench/index.json under
 * the task library's folder, each entry a problem of KernelBench with its
 * reference module (a Python file in KernelBench's format), its shape sets
 * (module-level constants), its tolerance and its published H100 times.
 * Loaded once at start-up beside the task library (common/tasklib.h) and
 * immutable after, so any thread may read it. A task named here takes
 * `language: "kernelbench"` submissions; c_task names the library's C task
 * of the same problem, if any. docs/kernelbench.md gives the format.
 */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "common/spec.h"

/* The index's file, relative to the task library's folder. */
#define KBTASKS_INDEX_PATH "kernelbench/index.json"
/* The folder of the index (skipped by tasklib's walk: it holds no C task). */
#define KBTASKS_DIR "kernelbench"

typedef struct KbIndex KbIndex;

typedef struct KbTask {
        char *name;          /* c_task where there is one, else l<level>_<num>_<snake> */
        int level;           /* 1..4 */
        int problem;         /* the number of "23_Softmax" */
        char *problem_name;  /* "23_Softmax" */
        char *module;        /* the module's path relative to the index's folder */
        char *source;        /* the module's text */
        char *c_task;        /* the C task of the same problem, or NULL */
        json_t *shapes;      /* [{"name", "constants"}], shapes[0] "default" */
        double atol, rtol;
        double eager_ms;     /* h100_torch_eager_ms, or 0 where the index has none */
        double compile_ms;   /* h100_torch_compile_ms, or 0 */
} KbTask;

/**
 * kbtasks_load() - read @dir/kernelbench/index.json and every module it names
 * @dir:       the task library's folder
 * @ret_index: on success, a new index (kbtasks_free()); empty when the
 *             library has no index
 * @errors:    when not NULL, a new array of {"file", "pointer", "message"},
 *             one per fault (an entry with a fault is skipped)
 * Return: 0, or a negative errno (out of memory).
 */
int kbtasks_load(const char *dir, KbIndex **ret_index, json_t **errors);
void kbtasks_free(KbIndex *index);
size_t kbtasks_count(const KbIndex *index);
/* The @i-th entry in the index's order, borrowed; NULL past the end. */
const KbTask *kbtasks_at(const KbIndex *index, size_t i);
/* The entry named @name, borrowed; NULL when none (or @index is NULL). */
const KbTask *kbtasks_get(const KbIndex *index, const char *name);
/* The entry of KernelBench's level @level, problem number @problem; NULL when none. */
const KbTask *kbtasks_find_problem(const KbIndex *index, int level, int problem);
/* What GET /v1/tasks/{name} says of it: {level, problem, module, c_task, shapes, tolerance,
 * h100_torch_eager_ms, h100_torch_compile_ms, source}; a new object. */
json_t *kbtasks_json(const KbTask *t);
