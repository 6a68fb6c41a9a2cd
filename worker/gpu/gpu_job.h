/*
 * gpu_job - the GPU worker's JOB (docs/internals.md, "GPU worker"): parse
 * and check the resolved JSON into plain structs before anything touches the
 * GPU. The supervisor is trusted, but the job is still checked against every
 * limit (defence in depth, and so a supervisor bug becomes internal_error
 * rather than a crash). Host-only: unit-tested on the CPU.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/limits.h"
#include "worker/gpu/devrng.h"

typedef enum {
        JOB_ROLE_IN = 0,
        JOB_ROLE_OUT = 1,
        JOB_ROLE_INOUT = 2,
        JOB_ROLE_SCRATCH = 3,
} JobRole;

typedef struct JobBuffer {
        char name[LIMIT_NAME_BYTES];
        int dtype;              /* KV_DT_* */
        uint64_t count;         /* elements */
        uint64_t bytes;         /* count * element size */
        JobRole role;
        bool has_init;          /* in and inout buffers */
        KvGenParams init;       /* seed and stream filled in per trial */
        double atol, rtol;      /* out and inout buffers */
} JobBuffer;

typedef enum {
        JOB_ARG_BUFFER = 0,
        JOB_ARG_SCALAR = 1,
} JobArgKind;

typedef struct JobArg {
        JobArgKind kind;
        int buffer;             /* index into the side's buffer space (below) */
        int type;               /* JOB_SCALAR_* */
        unsigned char value[8]; /* the scalar, little-endian, `size` bytes */
        size_t size;
} JobArg;

enum {
        JOB_SCALAR_I32 = 0,
        JOB_SCALAR_U32,
        JOB_SCALAR_I64,
        JOB_SCALAR_U64,
        JOB_SCALAR_F32,
        JOB_SCALAR_F64,
};

typedef enum {
        JOB_STEP_LAUNCH = 0,
        JOB_STEP_GEMM = 1,
} JobStepKind;

typedef struct JobStep {
        JobStepKind kind;
        char kernel[LIMIT_NAME_BYTES];
        unsigned grid[3], block[3];
        unsigned shared;
        JobArg *args;
        int n_args;
        /* gemm: buffer indices into the side's buffer space */
        int a, b, c;
        int64_t m, n, k, batch;
        bool trans_a, trans_b;
        double alpha, beta;
} JobStep;

/*
 * A side (candidate or reference) sees a buffer space: indices
 * [0, n_buffers) are the shape's task buffers, [n_buffers, n_buffers +
 * n_scratch) its own scratch buffers.
 */
typedef struct JobSide {
        JobBuffer *scratch;
        int n_scratch;
        JobStep *steps;
        int n_steps;
} JobSide;

typedef struct JobShape {
        char name[LIMIT_NAME_BYTES];
        json_t *params;         /* the resolved params object; owned (a reference) */
        JobBuffer *buffers;
        int n_buffers;
        bool has_flops, has_bytes;
        double flops, bytes;
        JobSide cand, ref;
} JobShape;

typedef struct GpuJob {
        int64_t id;
        uint64_t seed;
        char seed_text[32];
        double budget_ms, target_precision;
        bool time_first_only;       /* timing.shapes "first": time the first shape set only */
        int64_t min_trials, max_trials, warmup;
        int64_t deadline_ms;        /* the whole job */
        int64_t launch_timeout_ms;  /* one plan execution (default 10000); the ceiling when derived */
        double launch_factor;       /* > 0: per shape set, the limit is launch_factor x the reference's
                                     * own time there, at least launch_floor_ms (default 0: off) */
        int64_t launch_floor_ms;    /* default LIMIT_LAUNCH_FLOOR_MS_DEFAULT */
        int64_t fault_grace_ms;     /* after a launch limit: how long a fault may take to surface */
        int trials;             /* correctness trials */
        bool dump;              /* kevald eval --dump: stream the reference side's buffers first */
        size_t cand_off, cand_size, ref_off, ref_size; /* ref_size 0: no reference CUBIN */
        size_t fenced_off, fenced_size;                /* the candidate's fenced build; size 0: none */
        JobShape *shapes;
        int n_shapes;
} GpuJob;

/* The driver reports a kernel fault (illegal or misaligned address, trap,
 * assert) up to a few hundred milliseconds after the kernel stopped
 * (bench/faults, BENCHMARKS.md): when a launch limit expires the judge waits
 * this much longer before it calls the kernel hung, so that a fault is named
 * as the fault it is, and a kernel that completes meanwhile is slow, not
 * hung. */
#define GPU_JOB_FAULT_GRACE_MS LIMIT_FAULT_GRACE_MS_DEFAULT

int gpu_job_parse(json_t *doc, size_t blob_len, GpuJob **ret_job, char *err, size_t err_len);
void gpu_job_free(GpuJob *job);
const JobBuffer *gpu_job_side_buffer(const JobShape *shape, const JobSide *side, int index);
const char *gpu_job_dtype_name(int dtype);
int gpu_job_dtype_parse(const char *name);
