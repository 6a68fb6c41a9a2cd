/*
 * baselines - the measured PyTorch times a result's speedup is compared
 * with besides the task's own reference: per GPU model, per task and shape
 * set, torch eager and torch.compile medians written by tools/baselines
 * into the task library's `baselines/` folder (docs/tasks.md, "Baselines").
 * Loaded once at start-up, immutable after, so any thread may read it.
 */
#pragma once

#include <stddef.h>

#include <jansson.h>

#include "common/tasklib.h"

/* Expected outcomes (positive). */
enum {
        BASELINES_E_NONE = 1, /* no baseline for this GPU model, task and shape set */
};

/* Longest GPU slug kept (a GPU name is at most 255 bytes, CUDA's limit). */
#define BASELINES_SLUG_BYTES 256

typedef struct Baselines Baselines;

/* One shape set's baseline medians; 0 where that mode failed or was not run. */
typedef struct BaselineTimes {
        double eager_ms;
        double compile_ms;
} BaselineTimes;

int baselines_load(const char *tasks_dir, const TaskLib *lib, Baselines **ret_bl, json_t **errors);
void baselines_free(Baselines *bl);
size_t baselines_count(const Baselines *bl);
void baselines_slug(const char *gpu_name, char *out, size_t len);
int baselines_lookup(const Baselines *bl, const char *gpu_name, const char *task, const char *shape,
                     BaselineTimes *ret_times);
