/*
 * spec_internal - what the spec_*.c files share: the Task structure, the
 * dtype table, and the validators for plans, scratch lists and per-shape
 * expressions that both tasks and submissions use. Not for other modules.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/limits.h"
#include "common/spec.h"

/* Largest dynamic shared memory a launch may ask for: 227 KiB (sm_90). */
#define SPEC_SHARED_BYTES_MAX (227 * 1024)
#define SPEC_BLOCK_THREADS_MAX 1024
#define SPEC_GRID_X_MAX 2147483647LL
#define SPEC_GRID_YZ_MAX 65535
#define SPEC_CORRECTNESS_TRIALS_DEFAULT 3

typedef struct DType {
        const char *name;
        int size;
        bool is_int;
        int64_t min, max;  /* representable range for integer dtypes */
} DType;

extern const DType spec_dtypes[];        /* NULL-name terminated */
extern const char *const spec_dtype_names[];  /* NULL-terminated, same order */
extern const char *const spec_role_names[];   /* in, out, inout */
extern const char *const spec_dist_names[];   /* normal, uniform, int, mixed */
extern const char *const spec_scalar_types[]; /* i32 u32 i64 u64 f32 f64 */
const DType *spec_dtype_find(const char *name);
/* Size in bytes of a scalar argument type, 0 when unknown. */
int spec_scalar_size(const char *type);

enum { ROLE_IN = 0, ROLE_OUT = 1, ROLE_INOUT = 2 };

struct Task {
        json_t *doc;            /* normalized document; owned */
        const char *name;       /* borrowed from doc */
        const char *ref_source; /* borrowed from doc; NULL for library-only references */
        json_t *params;         /* borrowed from doc: name -> description */
        size_t nshapes;
        const char *shape_names[LIMIT_TASK_SHAPES_MAX];  /* borrowed from doc */
        json_t *shape_params[LIMIT_TASK_SHAPES_MAX];     /* owned: name -> integer */
        size_t nbuffers;
        json_t *buffers[LIMIT_TASK_BUFFERS_MAX];         /* borrowed from doc */
        const DType *buffer_dtype[LIMIT_TASK_BUFFERS_MAX];
        int buffer_role[LIMIT_TASK_BUFFERS_MAX];
        int64_t buffer_count[LIMIT_TASK_SHAPES_MAX][LIMIT_TASK_BUFFERS_MAX];
};

/* Index of task buffer @name, or -1. */
int spec_task_buffer_index(const Task *task, const char *name);

/*
 * spec_expr_all() - check @v (JSON integer or expression string) against the
 * task's params and evaluate it for every shape set; every value must lie in
 * [@min, @max]. @what names the quantity in messages ("grid x").
 * @ret_values: when not NULL, receives one value per shape set.
 * Return: 0 or SPEC_E_INVALID.
 */
int spec_expr_all(const Task *task, json_t *v, const char *ptr, const char *what, int64_t min,
                  int64_t max, int64_t *ret_values, SpecError *err);

/*
 * spec_scratch_validate() - validate a scratch list (reference or candidate)
 * @scratch:     array or NULL (= empty); borrowed
 * @ret_scratch: on success a new normalized array
 * Names must be unique and differ from the task buffers; counts >= 1 for
 * every shape set; the total per shape set <= LIMIT_SCRATCH_BYTES_MAX.
 */
int spec_scratch_validate(const Task *task, json_t *scratch, const char *ptr,
                          json_t **ret_scratch, SpecError *err);

/*
 * spec_plan_validate() - validate a launch plan
 * @plan:          array; borrowed
 * @scratch:       the normalized scratch list of the same side; borrowed
 * @allow_library: true for the task reference (library steps allowed)
 * @name_exprs:    array of name expressions a kernel may name, or NULL
 * @ret_plan:      on success a new normalized plan (defaults filled)
 */
int spec_plan_validate(const Task *task, json_t *plan, json_t *scratch, bool allow_library,
                       json_t *name_exprs, const char *ptr, json_t **ret_plan, SpecError *err);

/* Validate compile options (array or NULL) against options_check(); new normalized array. */
int spec_options_validate(json_t *options, const char *ptr, json_t **ret_options, SpecError *err);
/* Validate name expressions (array or NULL); new normalized array. */
int spec_name_exprs_validate(json_t *names, const char *ptr, json_t **ret_names, SpecError *err);

/* Default atol/rtol for an output of @dtype (f32/f64 1e-4, f16/bf16 1e-2, ints 0). */
double spec_tolerance_default(const DType *dtype);
