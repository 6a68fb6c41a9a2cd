/*
 * judge - the evaluation contract (DESIGN.md, "The evaluation contract";
 * docs/internals.md, "GPU worker"): one JOB in, one RESULT out.
 *
 * Theory of operation, per job:
 *   dump   (only for `kevald eval --dump`): per shape set, the trial-0
 *          inputs on reference buffers, streamed; the reference run; its
 *          outputs streamed. Then the job goes on as usual.
 *   load   both CUBINs; look up every kernel of every plan; check each
 *          launch's arguments against cuFuncGetParamInfo (count and sizes)
 *          and its shared memory against the device (-> rejected); opt in to
 *          more than 48 KiB of dynamic shared memory where asked.
 *   correctness, per shape set and trial (seed = kv_trial_seed(job seed,
 *          shape, trial)):
 *          1. candidate buffers A (guard bands on every buffer): generate the
 *             inputs, poison the outputs, zero the scratch, fill the canaries;
 *          2. run the candidate plan on A, waiting after every launch (exact
 *             blame for faults) - the reference has not run for this trial;
 *          3. check every guard band of A (-> incorrect, kind "guard");
 *          4. reference buffers R: generate the inputs again, compare A's
 *             inputs with them bitwise (-> "input_mutation"), run the
 *             reference on R, compare every out/inout buffer of A with R
 *             within tolerance (-> "mismatch"); free R (zeroed);
 *          5. candidate buffers B from the same seed (fresh poison), run,
 *             check B's guards, compare B's outputs with A's bitwise
 *             (-> "nondeterministic"); free A and B (zeroed).
 *   timing (only when every shape set passed), per shape set: the last
 *          trial's inputs in fresh candidate and reference buffers; warm-up;
 *          then pairs of (candidate, reference) trials, each = restore inout
 *          buffers, poison outputs, zero scratch, L2 flush, event, the whole
 *          plan, event; the reference's outputs are zeroed after each of its
 *          trials, so no reference answer is in memory while the candidate
 *          runs. Stop on precision, budget or max_trials (timing.h).
 *   revalidation, after every batch of timed pairs (untimed): run the
 *          reference once more on its inputs and compare the candidate's
 *          output of its latest timed run (-> "mismatch", phase
 *          "revalidation"); after the last batch, check guards and inputs
 *          again.
 *   cleanup: zero and free every buffer, unload both modules.
 *
 * Failure policy: the first failure ends the job. Sticky CUDA errors and
 * timeouts set must_exit (the context is lost or a kernel still spins).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "worker/gpu/gpu.h"

typedef void (*JudgeProgressFn)(void *userdata, int64_t job_id, const char *phase, const char *shape);
/* One piece of a dumped buffer (docs/internals.md, "Dumps"); returns 0 or a negative errno. */
typedef int (*JudgeDumpFn)(void *userdata, int64_t job_id, const char *shape, const char *buffer, const char *when,
                           uint64_t offset, uint64_t total, const void *data, size_t len);

typedef struct JudgeEnv {
        const GpuInfo *info;
        GpuPtr flush;             /* the L2 flush buffer */
        size_t flush_bytes;       /* >= 2x the L2 size; a multiple of 4 */
        JudgeProgressFn progress; /* may be NULL */
        JudgeDumpFn dump;         /* may be NULL: dump requests are then ignored */
        void *progress_userdata;  /* for both callbacks */
} JudgeEnv;

typedef struct JudgeOutcome {
        json_t *result;   /* new: the RESULT JSON */
        bool must_exit;   /* sticky error or timeout: send the RESULT, then exit */
        int exit_code;    /* 3 sticky CUDA error, 4 timeout */
} JudgeOutcome;

int judge_init(void);
int judge_run(const JudgeEnv *env, json_t *job_json, const uint8_t *blob, size_t blob_len,
              JudgeOutcome *ret_outcome);
json_t *judge_gpu_json(const GpuInfo *info);
void judge_roofline_peaks(const char *device_name, int dtype, double *ret_flops, double *ret_bytes_per_s);
