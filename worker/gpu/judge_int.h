/*
 * judge_int - what the judge's files share (worker/gpu/judge*.c): the Run that
 * carries one job through its phases, buffer sets, the failure recorders
 * and the waits. Not for other modules, which see judge.h only.
 *
 *   judge.c         the job's flow: load, dump, the phases in order,
 *                   cleanup, the RESULT; failures and bounded waits.
 *   judge_plan.c    buffer sets (allocate, generate, poison, free) and
 *                   running one side's plan on a set, fenced or not.
 *   judge_check.c   the device checks (guards, inputs, outputs,
 *                   determinism) and the correctness phase.
 *   judge_timing.c  the timing phase: timed pairs, their revalidation,
 *                   statistics, the roofline.
 *
 * Conventions: helpers return 0 to go on or JUDGE_STOP once the job has
 * its verdict (recorded by fail()/judge_fail_gpu(), first failure wins);
 * `Run` carries where we are (phase, shape, trial, launch, kernel) so every
 * error says exactly what was running.
 */
#pragma once

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/limits.h"
#include "worker/gpu/devmem.h"
#include "worker/gpu/fenced.h"
#include "worker/gpu/gpu_elf.h"
#include "worker/gpu/gpu_job.h"
#include "worker/gpu/judge.h"

#define JUDGE_STOP 1
#define EV_PAIRS 64
#define MAX_SET (LIMIT_TASK_BUFFERS_MAX + LIMIT_SCRATCH_BUFFERS_MAX)

enum { SIDE_CAND = 0, SIDE_REF = 1, SIDE_HELPER = 2 };

/* Events created by judge_init(): EV_PAIRS timed pairs of four, and the
 * pair that brackets one launch. */
extern GpuEvent *judge_ev_pool[EV_PAIRS * 4];
extern GpuEvent *judge_ev_a, *judge_ev_b;

typedef struct BufSet {
        DevBuf b[MAX_SET];
        int n;
} BufSet;

typedef struct Run {
        const JudgeEnv *env;
        const GpuJob *job;
        GpuModule *cand_mod, *ref_mod;
        GpuKernel **kern[LIMIT_TASK_SHAPES_MAX][2]; /* per shape and side: one per step (NULL: gemm) */
        uint32_t salt;
        double busy_ms;
        /* per shape set: the limit of one plan execution (judge_launch_limit()), and
         * the reference's time it was derived from (0: not derived) */
        int64_t shape_limit_ms[LIMIT_TASK_SHAPES_MAX];
        double shape_ref_ms[LIMIT_TASK_SHAPES_MAX];
        /* where we are */
        const char *phase;
        int shape, trial, launch, side;
        const char *kernel;
        /* outcome */
        const char *verdict; /* NULL while all is well */
        json_t *error;
        bool must_exit;
        int exit_code;
        bool suspicious;
        bool launch_limit_hit; /* the last timeout was the per-launch limit, not the job deadline */
        int late_runs;         /* waits that outlasted the launch limit and completed within the grace */
        bool fault_waited;     /* the error being reported surfaced in judge_wait_bounded(): */
        double fault_wait_ms;  /*   after this long a wait, */
        bool fault_late;       /*   and only after the launch limit, */
        double fault_grace_ms; /*   this far into the grace */
        GpuElfGlobals cand_globals; /* the candidate's __device__ variables, zeroed before unloading */
        int globals_zeroed, globals_missed;
        /* the fenced build (worker/gpu/fenced.h): the candidate of the correctness phase */
        FenceRun fence;
        bool fence_on;      /* loaded and usable */
        bool fencing;       /* now in a fenced trial: candidate plans run fenced */
        bool state_fenced;  /* the candidate's __device__ state is the fenced module's (else the plain one's) */
        int launches_fenced, launches_unfenced; /* candidate launches of the correctness phase */
        GpuKernel **fkern[LIMIT_TASK_SHAPES_MAX]; /* per shape and step: fenced, or the plain kernel */
} Run;

/* A finite number or null. */
static inline json_t *jfinite(double v)
{
        return isfinite(v) ? json_real(v) : json_null();
}

/* ---- judge.c ---- */

/*
 * judge_fail_with() - record the verdict and an error of @kind (first
 * failure wins), with where the run is (Run's phase, shape, trial, launch).
 * @extra: more members for the error object; stolen (may be NULL)
 * Return: JUDGE_STOP.
 */
__attribute__((format(printf, 5, 6))) int judge_fail_with(Run *r, const char *verdict, const char *kind,
                                                          json_t *extra, const char *fmt, ...);
#define fail(r, verdict, kind, ...) judge_fail_with((r), (verdict), (kind), NULL, __VA_ARGS__)
int judge_fail_gpu(Run *r, int rc);
#define TRY_GPU(r, call)                                   \
        do {                                               \
                int rc_ = (call);                          \
                if (rc_)                                   \
                        return judge_fail_gpu((r), rc_);   \
        } while (0)
int64_t judge_launch_limit(const Run *r, double *ret_ref_ms);
int judge_wait_bounded(Run *r, GpuEvent *ev, int64_t allowed_ms);
int judge_wait_all(Run *r);
int judge_fence_state(Run *r, bool fenced);

/* ---- judge_plan.c ---- */

int judge_plan_alloc(Run *r, const JobShape *s, const JobSide *side, bool guards, BufSet *set);
int judge_plan_free(Run *r, BufSet *set);
int judge_plan_inputs(Run *r, const JobShape *s, const JobSide *side, BufSet *set, uint64_t seed, bool cand);
int judge_plan_batch_end(Run *r, int rc);
int judge_plan_prepare(Run *r, const JobShape *s, const JobSide *side, BufSet *set, uint64_t seed, bool cand);
int judge_plan_launch_step(Run *r, const JobShape *s, const JobSide *side, GpuKernel *k, const JobStep *st,
                           const BufSet *set);
bool judge_plan_has_gemm(const JobSide *side);
int judge_plan_run(Run *r, int si, int side_idx, const BufSet *set, bool wait_each);

/* ---- judge_check.c ---- */

int judge_check_queue_guards(Run *r, const BufSet *set, unsigned *slot);
int judge_check_guards_verdict(Run *r, const JobShape *s, const JobSide *side, const BufSet *set, const KvDiff *d);
int judge_check_queue_inputs(Run *r, const JobShape *s, const BufSet *cand, const BufSet *ref, unsigned *slot);
int judge_check_inputs_verdict(Run *r, const JobShape *s, const KvDiff *d);
int judge_check_fetch(Run *r, unsigned n, KvDiff *d);
int judge_check_shape(Run *r, int si, json_t *shapes_out);

/* ---- judge_timing.c ---- */

int judge_timing_phase(Run *r, json_t *corr_shapes, json_t **ret_timing);
