/*
 * tasklib - the task library: every task file (*.json) under tasks/ parsed into a Task
 * at start-up, looked up by name, listed with filters. Immutable after load,
 * so any thread may read it.
 */
#pragma once

#include <jansson.h>

#include "common/spec.h"

typedef struct TaskLib TaskLib;

/* The library's top-level folder of baseline files (common/baselines.h); not tasks. */
#define TASKLIB_BASELINES_DIR "baselines"


/**
 * tasklib_load() - parse every task under @dir
 * @errors: when not NULL, a new array of {"file", "pointer", "message"} for
 *          each task that failed to load (those are skipped)
 * Return: 0, or a negative errno if @dir cannot be read.
 */
int tasklib_load(const char *dir, TaskLib **ret_lib, json_t **errors);
void tasklib_free(TaskLib *lib);
/* Parse one task file (source_file relative to its folder); 0, SPEC_E_INVALID or -errno. */
int tasklib_load_file(const char *path, Task **ret_task, SpecError *err);
/* Natural order of names (l1_2 before l1_10), total; <0, 0 or >0 as strcmp(). */
int tasklib_name_cmp(const char *a, const char *b);
/* The @index-th task in natural name order, borrowed; NULL past the end. */
const Task *tasklib_task_at(const TaskLib *lib, size_t index);
const Task *tasklib_get(const TaskLib *lib, const char *name);
size_t tasklib_count(const TaskLib *lib);
/* New array of spec_task_summary() objects; level <= 0 and NULL category match all. */
json_t *tasklib_list(const TaskLib *lib, int level, const char *category);
