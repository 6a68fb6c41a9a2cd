/*
 * judge - see judge.h for the theory of operation. Conventions in this
 * file: helpers return 0 to go on or JUDGE_STOP once the job has its
 * verdict (recorded by fail()/fail_gpu(), first failure wins); `Run`
 * carries where we are (phase, shape, trial, launch, kernel) so every error
 * says exactly what was running. Buffers left allocated by a failure are
 * zeroed and freed by devmem_free_all() in cleanup.
 */
#include "worker/judge.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/limits.h"
#include "common/log.h"
#include "worker/blas.h"
#include "worker/devmem.h"
#include "worker/devrng.h"
#include "worker/fenced.h"
#include "worker/gpu_elf.h"
#include "worker/gpu_job.h"
#include "worker/timing.h"

#define JUDGE_STOP 1
#define EV_PAIRS 64
#define MAX_SET (LIMIT_TASK_BUFFERS_MAX + LIMIT_SCRATCH_BUFFERS_MAX)
#define CLEANUP_NS (20LL * 1000000000LL)
/* Correctness trials per shape set that run the fenced build; the rest run
 * the plain one. The first trial is where a kernel's bad accesses show (the
 * RL corpus: all of them); later trials differ only in their inputs, and the
 * fenced build costs up to ~2x on loop-heavy kernels (BENCHMARKS.md). */
#define FENCE_TRIALS 1

enum { SIDE_CAND = 0, SIDE_REF = 1, SIDE_HELPER = 2 };

static GpuEvent *ev_pool[EV_PAIRS * 4];
static GpuEvent *ev_a, *ev_b;

typedef struct BufSet {
        DevBuf b[MAX_SET];
        int n;
} BufSet;

/* Per output buffer, aggregated over the trials of one shape set. */
typedef struct BufAgg {
        double max_abs, max_rel;
        uint64_t mismatches, nan_inf;
        json_t *first;  /* first_mismatches of the failing trial, or NULL */
} BufAgg;

typedef struct Run {
        const JudgeEnv *env;
        const GpuJob *job;
        GpuModule *cand_mod, *ref_mod;
        GpuKernel **kern[LIMIT_TASK_SHAPES_MAX][2]; /* per shape and side: one per step (NULL: gemm) */
        uint32_t salt;
        double busy_ms;
        /* per shape set: the limit of one plan execution (launch_limit()), and
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
        bool fault_waited;     /* the error being reported surfaced in wait_bounded(): */
        double fault_wait_ms;  /*   after this long a wait, */
        bool fault_late;       /*   and only after the launch limit, */
        double fault_grace_ms; /*   this far into the grace */
        GpuElfGlobals cand_globals; /* the candidate's __device__ variables, zeroed before unloading */
        int globals_zeroed, globals_missed;
        /* the fenced build (worker/fenced.h): the candidate of the correctness phase */
        FenceRun fence;
        bool fence_on;      /* loaded and usable */
        bool fencing;       /* now in a fenced trial: candidate plans run fenced */
        bool state_fenced;  /* the candidate's __device__ state is the fenced module's (else the plain one's) */
        int launches_fenced, launches_unfenced; /* candidate launches of the correctness phase */
        GpuKernel **fkern[LIMIT_TASK_SHAPES_MAX]; /* per shape and step: fenced, or the plain kernel */
} Run;

/**
 * judge_init() - create the events the judge uses (before the sandbox
 * locks). Return: 0, GPU_E_CUDA.
 */
int judge_init(void)
{
        int r;

        for (size_t i = 0; i < sizeof(ev_pool) / sizeof(ev_pool[0]); i++)
                if ((r = gpu_event_create(&ev_pool[i])))
                        return r;
        if ((r = gpu_event_create(&ev_a)) || (r = gpu_event_create(&ev_b)))
                return r;
        if (fenced_init())
                log_warn("gpu: no page-locked buffer for fenced builds; the plain build runs in every phase");
        return 0;
}

/* A JSON number, or a string for what JSON cannot hold ("nan", "inf", "-inf"). */
static json_t *jnum(double v)
{
        if (isnan(v))
                return json_string("nan");
        if (isinf(v))
                return json_string(v > 0 ? "inf" : "-inf");
        return json_real(v);
}

/* A finite number or null. */
static json_t *jfinite(double v)
{
        return isfinite(v) ? json_real(v) : json_null();
}

static void where_into(const Run *r, json_t *e)
{
        const GpuJob *job = r->job;

        json_object_set_new(e, "shape", job && r->shape >= 0 && r->shape < job->n_shapes
                                                ? json_string(job->shapes[r->shape].name)
                                                : json_null());
        json_object_set_new(e, "phase", json_string(r->phase));
        json_object_set_new(e, "trial", r->trial >= 0 ? json_integer(r->trial) : json_null());
        json_object_set_new(e, "launch", r->launch >= 0 ? json_integer(r->launch) : json_null());
        json_object_set_new(e, "kernel", r->kernel ? json_string(r->kernel) : json_null());
        if (r->launch >= 0)
                json_object_set_new(e, "side", json_string(r->side == SIDE_REF ? "reference" : "candidate"));
}

/*
 * Record the verdict and an error of @kind (first failure wins).
 * @extra: more members for the error object; stolen (may be NULL)
 */
__attribute__((format(printf, 5, 6))) static int fail_with(Run *r, const char *verdict, const char *kind,
                                                           json_t *extra, const char *fmt, ...)
{
        char msg[1024];
        va_list ap;
        json_t *e;

        if (r->verdict) {
                json_decref(extra);
                return JUDGE_STOP;
        }
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        e = json_object();
        json_object_set_new(e, "kind", json_string(kind));
        json_object_set_new(e, "message", json_string(msg));
        where_into(r, e);
        if (extra)
                json_object_update(e, extra);
        json_decref(extra);
        r->verdict = verdict;
        r->error = e;
        log_info("gpu: job %" PRId64 ": %s (%s): %s", r->job ? r->job->id : -1, verdict, kind, msg);
        return JUDGE_STOP;
}

#define fail(r, verdict, kind, ...) fail_with((r), (verdict), (kind), NULL, __VA_ARGS__)

/* The limit of one plan execution for the shape set being judged (the
 * ceiling outside one); @ret_ref_ms: the reference time it came from, or 0. */
static int64_t launch_limit(const Run *r, double *ret_ref_ms)
{
        bool in_shape = r->shape >= 0 && r->shape < r->job->n_shapes;

        if (ret_ref_ms)
                *ret_ref_ms = in_shape ? r->shape_ref_ms[r->shape] : 0;
        return in_shape ? r->shape_limit_ms[r->shape] : r->job->launch_timeout_ms;
}

/* Turn a gpu.h/devmem.h return code into the job's verdict. */
static int fail_gpu(Run *r, int rc)
{
        const GpuError *e = gpu_error_last();
        const char *verdict;
        json_t *extra;

        if (rc < 0)
                return fail(r, "internal_error", "internal", "worker failure: %s", strerror(-rc));
        if (rc == GPU_E_TIMEOUT) {
                double ref_ms = 0;
                int64_t limit = r->launch_limit_hit ? launch_limit(r, &ref_ms) : 0;
                r->must_exit = true;
                r->exit_code = 4;
                if (r->launch_limit_hit && ref_ms > 0)
                        return fail_with(r, "timeout", "timeout",
                                         json_pack("{s:I, s:f, s:I}", "launch_limit_ms", (json_int_t)limit,
                                                   "reference_ms", ref_ms, "fault_grace_ms",
                                                   (json_int_t)r->job->fault_grace_ms),
                                         "the GPU work did not finish within the launch time limit of %" PRId64
                                         " ms per plan execution (%g x the reference's %.3f ms on this shape set, "
                                         "at least %" PRId64 " ms), nor in the %" PRId64 " ms after it in which a "
                                         "fault would have been reported: it hangs (phase %s)",
                                         limit, r->job->launch_factor, ref_ms, r->job->launch_floor_ms,
                                         r->job->fault_grace_ms, r->phase);
                if (r->launch_limit_hit)
                        return fail_with(r, "timeout", "timeout",
                                         json_pack("{s:I, s:I}", "launch_limit_ms", (json_int_t)limit, "fault_grace_ms",
                                                   (json_int_t)r->job->fault_grace_ms),
                                         "the GPU work did not finish within the launch time limit (%" PRId64
                                         " ms per plan execution), nor in the %" PRId64 " ms after it in which a "
                                         "fault would have been reported: it hangs (phase %s)",
                                         limit, r->job->fault_grace_ms, r->phase);
                return fail(r, "timeout", "timeout",
                            "the job's deadline of %" PRId64 " ms passed while the GPU was busy (phase %s)",
                            r->job ? r->job->deadline_ms : 0, r->phase);
        }
        if (rc != GPU_E_CUDA)
                return fail(r, "internal_error", "internal", "unexpected worker code %d", rc);
        if (e->sticky || gpu_is_sticky()) {
                r->must_exit = true;
                r->exit_code = 3;
        }
        /* The candidate is the only untrusted code: sticky faults and whatever
         * happens while it runs or while its memory is allocated are its
         * runtime errors; other failures of trusted code are ours. */
        if (r->side == SIDE_CAND || e->sticky || strcmp(e->name, "CUDA_ERROR_OUT_OF_MEMORY") == 0)
                verdict = "runtime_error";
        else
                verdict = "internal_error";
        extra = json_pack("{s:s, s:s, s:b}", "name", e->name, "call", e->where, "sticky", e->sticky);
        if (r->fault_waited) { /* this error surfaced in the last wait_bounded() */
                r->fault_waited = false;
                json_object_set_new(extra, "surfaced_ms", json_real(round(r->fault_wait_ms * 10) / 10));
                json_object_set_new(extra, "after_limit", json_boolean(r->fault_late));
                if (r->fault_late) /* what the dispatcher sizes the grace from (dispatch.c) */
                        json_object_set_new(extra, "grace_used_ms", json_real(round(r->fault_grace_ms * 10) / 10));
        }
        return fail_with(r, verdict, "cuda", extra, "%s: %s (in %s)", e->name, e->message, e->where);
}

#define TRY_GPU(r, call)                                   \
        do {                                               \
                int rc_ = (call);                          \
                if (rc_)                                   \
                        return fail_gpu((r), rc_);         \
        } while (0)

/*
 * Wait for @ev, giving the GPU at most @allowed_ms (and never past the job's
 * deadline). When that limit passes, wait fault_grace_ms more: the driver
 * reports a fault up to a few hundred milliseconds late, and a fault must
 * be named as one (runtime_error with the CUDA error), not as a timeout; a
 * kernel that completes within the grace is slow, and goes on to be judged.
 * Return: as gpu_event_wait(); r->launch_limit_hit says whether a timeout
 * came from the launch limit (and its grace) rather than the job deadline.
 */
static int wait_bounded(Run *r, GpuEvent *ev, int64_t allowed_ms)
{
        int64_t t0 = gpu_now_ns(), saved = gpu_deadline_get(), lim = t0 + allowed_ms * 1000000LL, now;
        bool late = false;
        int rc;

        r->launch_limit_hit = false;
        if (lim < saved)
                gpu_deadline_set(lim);
        rc = gpu_event_wait(ev);
        if (rc == GPU_E_TIMEOUT && lim < saved) {
                int64_t grace = lim + r->job->fault_grace_ms * 1000000LL;
                late = true;
                gpu_deadline_set(grace < saved ? grace : saved);
                rc = gpu_event_wait(ev);
                r->launch_limit_hit = rc == GPU_E_TIMEOUT && grace < saved;
                if (rc == 0)
                        r->late_runs++;
        }
        gpu_deadline_set(saved);
        /* How late a fault surfaces is what fault_grace_ms is chosen from
         * (bench/faults/surface.py): say it with the error, and warn when it
         * took the grace, so that an operator sees a grace grown too short. */
        r->fault_waited = rc == GPU_E_CUDA;
        if (r->fault_waited) {
                now = gpu_now_ns();
                r->fault_wait_ms = (double)(now - t0) / 1e6;
                r->fault_late = late;
                r->fault_grace_ms = late ? (double)(now - lim) / 1e6 : 0;
                if (late)
                        log_warn("gpu: job %" PRId64 ": a fault surfaced %.1f ms into a wait allowed %" PRId64
                                 " ms, within fault_grace_ms (%" PRId64 " ms)",
                                 r->job->id, r->fault_wait_ms, allowed_ms, r->job->fault_grace_ms);
        }
        return rc;
}

/* ---------------------------------------------------------------- load -- */

static int load_module(Run *r, const uint8_t *blob, size_t off, size_t size, GpuModule **ret)
{
        int rc = gpu_module_load(blob + off, size, ret);

        return rc ? fail_gpu(r, rc) : 0;
}

static const char *scalar_name(int t)
{
        static const char *const n[] = { "i32", "u32", "i64", "u64", "f32", "f64" };
        return t >= 0 && t < 6 ? n[t] : "?";
}

/*
 * Zero the candidate module's __device__ variables before it is unloaded, so
 * that no later job can find them in recycled memory. Each variable by name;
 * one that the driver does not resolve (a static with an odd name) through
 * the section layout from a resolved neighbour of the same section.
 * Asynchronous; the caller waits.
 */
static int zero_globals(Run *r, GpuModule *mod, GpuElfGlobals *g)
{
        GpuPtr base[GPU_ELF_SECTIONS_MAX] = { 0 };

        for (int pass = 0; pass < 2; pass++) {
                for (int i = 0; i < g->n_globals; i++) {
                        const GpuElfGlobal *v = &g->globals[i];
                        GpuPtr p = 0;
                        size_t bytes = 0;
                        int rc;
                        if (pass == 0) {
                                rc = gpu_module_global(mod, v->name, &p, &bytes);
                                if (rc == GPU_E_CUDA && gpu_is_sticky())
                                        return rc;
                                if (rc) /* not found, or refused: try the layout in pass 1 */
                                        continue;
                                if (p >= v->offset)
                                        base[v->section] = p - v->offset;
                                if ((rc = gpu_memset8(p, 0, bytes))) /* the driver's size */
                                        return rc;
                                r->globals_zeroed++;
                        } else {
                                if (gpu_module_global(mod, v->name, &p, &bytes) == 0)
                                        continue; /* done in pass 0 */
                                if (gpu_is_sticky())
                                        return GPU_E_CUDA;
                                if (!base[v->section] ||
                                    v->offset + v->size > g->sections[v->section].size) {
                                        r->globals_missed++;
                                        log_warn("gpu: cannot zero __device__ variable '%s' of job %" PRId64, v->name,
                                                 r->job->id);
                                        continue;
                                }
                                if ((rc = gpu_memset8(base[v->section] + v->offset, 0, v->size)))
                                        return rc;
                                r->globals_zeroed++;
                        }
                }
        }
        return 0;
}

/* Look up and check every kernel of one side's plan for one shape. */
static int load_side(Run *r, int si, int side_idx)
{
        const JobShape *s = &r->job->shapes[si];
        const JobSide *side = side_idx == SIDE_CAND ? &s->cand : &s->ref;
        GpuModule *mod = side_idx == SIDE_CAND ? r->cand_mod : r->ref_mod;
        const GpuInfo *info = r->env->info;
        const char *who = side_idx == SIDE_CAND ? "candidate" : "reference";
        GpuKernel **ks = calloc((size_t)side->n_steps, sizeof(*ks));

        if (!ks)
                return fail_gpu(r, -ENOMEM);
        r->kern[si][side_idx] = ks;
        r->side = side_idx;
        for (int j = 0; j < side->n_steps; j++) {
                const JobStep *st = &side->steps[j];
                size_t sizes[LIMIT_ARGS_MAX], n = 0;
                GpuKernelAttrs at;
                int rc;

                r->launch = j;
                r->kernel = st->kernel;
                if (st->kind == JOB_STEP_GEMM)
                        continue;
                if (!mod)
                        return fail(r, "rejected", "plan", "the %s plan launches kernel '%s' but came without a CUBIN",
                                    who, st->kernel);
                rc = gpu_kernel_get(mod, st->kernel, &ks[j]);
                if (rc == GPU_E_NOT_FOUND)
                        return fail(r, "rejected", "plan", "the %s CUBIN has no kernel '%s'", who, st->kernel);
                TRY_GPU(r, rc);
                TRY_GPU(r, gpu_kernel_params(ks[j], LIMIT_ARGS_MAX, sizes, &n));
                if (n != (size_t)st->n_args)
                        return fail(r, "rejected", "plan", "%s launch %d: kernel '%s' takes %s%zu parameters, the plan passes %d",
                                    who, j, st->kernel, n > LIMIT_ARGS_MAX ? "more than " : "",
                                    n > LIMIT_ARGS_MAX ? (size_t)LIMIT_ARGS_MAX : n, st->n_args);
                for (int k = 0; k < st->n_args; k++) {
                        const JobArg *a = &st->args[k];
                        if (sizes[k] != a->size)
                                return fail(r, "rejected", "plan",
                                            "%s launch %d: parameter %d of kernel '%s' is %zu bytes, the plan passes %s (%zu bytes)",
                                            who, j, k, st->kernel, sizes[k],
                                            a->kind == JOB_ARG_BUFFER ? "a buffer pointer" : scalar_name(a->type), a->size);
                }
                TRY_GPU(r, gpu_kernel_attrs(ks[j], &at));
                if ((int64_t)at.shared_static + st->shared > info->max_shared_optin)
                        return fail(r, "rejected", "plan",
                                    "%s launch %d: kernel '%s' needs %d bytes of static and %u of dynamic shared memory; the device allows %d per block",
                                    who, j, st->kernel, at.shared_static, st->shared, info->max_shared_optin);
                if ((int)st->shared > at.max_dynamic_shared)
                        TRY_GPU(r, gpu_kernel_set_max_dynamic_shared(ks[j], (int)st->shared));
        }
        r->launch = -1;
        r->kernel = NULL;
        return 0;
}

/*
 * The fenced kernels of shape set @si's candidate plan. A step whose fenced
 * kernel is missing, or cannot launch with the plan's block and shared
 * memory (the checks cost registers), runs its plain kernel instead.
 */
static int load_fenced_side(Run *r, int si)
{
        const JobSide *side = &r->job->shapes[si].cand;
        GpuKernel **ks = calloc((size_t)side->n_steps, sizeof(*ks));

        if (!ks)
                return fail_gpu(r, -ENOMEM);
        r->fkern[si] = ks;
        for (int j = 0; j < side->n_steps; j++) {
                const JobStep *st = &side->steps[j];
                int threads = (int)(st->block[0] * st->block[1] * st->block[2]), blocks = 0, rc;
                GpuKernelAttrs at;
                ks[j] = r->kern[si][SIDE_CAND][j];
                if (st->kind == JOB_STEP_GEMM)
                        continue;
                rc = gpu_kernel_get(r->fence.mod, st->kernel, &ks[j]);
                if (rc == 0)
                        rc = gpu_kernel_attrs(ks[j], &at);
                if (rc == 0 && (int)st->shared > at.max_dynamic_shared)
                        rc = gpu_kernel_set_max_dynamic_shared(ks[j], (int)st->shared);
                if (rc == 0 && at.max_threads_per_block >= threads)
                        rc = gpu_kernel_occupancy(ks[j], threads, st->shared, &blocks);
                if (rc == GPU_E_CUDA && gpu_is_sticky())
                        return fail_gpu(r, rc);
                if (rc || blocks < 1) {
                        log_info("gpu: job %" PRId64 ": launch %d runs kernel '%s' unfenced (%s)", r->job->id, j,
                                 st->kernel, rc ? "no fenced kernel" : "the fenced kernel does not fit the block");
                        ks[j] = r->kern[si][SIDE_CAND][j];
                }
        }
        return 0;
}

/* The candidate's resource report for the first shape set's plan. */
static json_t *resources_json(Run *r)
{
        const JobShape *s = &r->job->shapes[0];
        const GpuInfo *info = r->env->info;
        json_t *out = json_array();

        for (int j = 0; j < s->cand.n_steps; j++) {
                const JobStep *st = &s->cand.steps[j];
                GpuKernel *k = r->kern[0][SIDE_CAND][j];
                unsigned threads = st->block[0] * st->block[1] * st->block[2];
                GpuKernelAttrs at;
                int blocks = 0, dup = 0;
                double warps, max_warps;

                if (!k || gpu_kernel_attrs(k, &at))
                        continue;
                for (int i = 0; i < j; i++)
                        if (strcmp(s->cand.steps[i].kernel, st->kernel) == 0 &&
                            s->cand.steps[i].shared == st->shared &&
                            s->cand.steps[i].block[0] * s->cand.steps[i].block[1] * s->cand.steps[i].block[2] == threads)
                                dup = 1;
                if (dup)
                        continue;
                if (gpu_kernel_occupancy(k, (int)threads, st->shared, &blocks))
                        blocks = 0; /* e.g. a block too large: the launch will say so */
                warps = (double)blocks * ((threads + 31) / 32);
                max_warps = info->max_threads_per_sm > 0 ? info->max_threads_per_sm / 32.0 : 64.0;
                json_array_append_new(
                        out, json_pack("{s:s, s:i, s:i, s:I, s:i, s:i, s:I, s:{s:i, s:i, s:o}}", "kernel", st->kernel,
                                       "registers", at.registers, "shared_static", at.shared_static, "shared_dynamic",
                                       (json_int_t)st->shared, "local", at.local, "max_threads_per_block",
                                       at.max_threads_per_block, "block", (json_int_t)threads, "occupancy",
                                       "blocks_per_sm", blocks, "warps_per_sm", (int)warps, "fraction",
                                       jfinite(warps / max_warps)));
        }
        return out;
}

/* ------------------------------------------------------------- buffers -- */

static int set_alloc(Run *r, const JobShape *s, const JobSide *side, bool guards, BufSet *set)
{
        int total = s->n_buffers + side->n_scratch, saved = r->side;

        memset(set, 0, sizeof(*set));
        r->side = SIDE_HELPER;
        for (int i = 0; i < total; i++) {
                const JobBuffer *b = gpu_job_side_buffer(s, side, i);
                int rc = devmem_alloc(b->bytes, guards ? DEVMEM_GUARD_BYTES : 0, &set->b[i]);
                if (gpu_out_of_memory(rc))
                        return fail_with(r, "runtime_error", "cuda",
                                         json_pack("{s:s, s:s, s:b, s:s, s:I}", "name", "CUDA_ERROR_OUT_OF_MEMORY",
                                                   "call", "cuMemAlloc", "sticky", 0, "buffer", b->name, "bytes",
                                                   (json_int_t)b->bytes),
                                         "CUDA_ERROR_OUT_OF_MEMORY: cannot allocate %" PRIu64
                                         " bytes for buffer '%s' (%" PRIu64 " bytes already allocated for this job)",
                                         b->bytes, b->name, devmem_live_bytes());
                if (rc)
                        return fail_gpu(r, rc);
                set->n++;
        }
        r->side = saved;
        return 0;
}

/* Free a set (zeroed first); failures leave the rest to cleanup. */
static int set_free(Run *r, BufSet *set)
{
        int saved = r->side;

        r->side = SIDE_HELPER;
        for (int i = 0; i < set->n; i++)
                TRY_GPU(r, devmem_free(&set->b[i]));
        set->n = 0;
        r->side = saved;
        return 0;
}

/* Inputs (in and inout) from @seed; a candidate set's outputs poisoned and
 * its scratch zeroed. A reference set's outputs and scratch are left as
 * they are (zeroed at set_prepare() and by every wipe). Asynchronous. */
static int set_inputs(Run *r, const JobShape *s, const JobSide *side, BufSet *set, uint64_t seed, bool cand)
{
        int total = s->n_buffers + side->n_scratch;

        r->side = SIDE_HELPER;
        for (int i = 0; i < total; i++) {
                const JobBuffer *b = gpu_job_side_buffer(s, side, i);
                if (b->has_init) {
                        KvGenParams p = b->init;
                        p.seed = seed;
                        p.stream = (uint32_t)i;
                        p.count = b->count;
                        p.dtype = b->dtype;
                        TRY_GPU(r, devmem_generate(&set->b[i], &p));
                } else if (cand && b->role == JOB_ROLE_OUT) {
                        TRY_GPU(r, devmem_poison(&set->b[i], b->dtype));
                } else if (cand) {
                        TRY_GPU(r, devmem_zero(&set->b[i]));
                }
        }
        return 0;
}

/* End a devmem batch begun by the caller; @rc is the batch's work so far. */
static int batch_end(Run *r, int rc)
{
        int e = devmem_batch_end();

        r->side = SIDE_HELPER;
        return rc ? rc : e ? fail_gpu(r, e) : 0;
}

static int set_prepare_ops(Run *r, const JobShape *s, const JobSide *side, BufSet *set, uint64_t seed, bool cand)
{
        int total = s->n_buffers + side->n_scratch, rc;

        if ((rc = set_inputs(r, s, side, set, seed, cand)))
                return rc;
        for (int i = 0; i < total; i++) {
                const JobBuffer *b = gpu_job_side_buffer(s, side, i);
                if (!cand && !b->has_init)
                        TRY_GPU(r, devmem_zero(&set->b[i]));
                TRY_GPU(r, devmem_guard_fill(&set->b[i], r->salt));
        }
        return 0;
}

/* Inputs from @seed, candidate outputs poisoned (reference outputs zeroed),
 * scratch zeroed, canaries filled when the set has guards: one batch.
 * Asynchronous. */
static int set_prepare(Run *r, const JobShape *s, const JobSide *side, BufSet *set, uint64_t seed, bool cand)
{
        devmem_batch_begin();
        return batch_end(r, set_prepare_ops(r, s, side, set, seed, cand));
}

/* -------------------------------------------------------------- plans -- */

static int launch_step(Run *r, const JobShape *s, const JobSide *side, GpuKernel *k, const JobStep *st,
                       const BufSet *set)
{
        if (st->kind == JOB_STEP_GEMM) {
                BlasGemm g = { .dtype = gpu_job_side_buffer(s, side, st->a)->dtype,
                               .a = set->b[st->a].ptr, .b = set->b[st->b].ptr, .c = set->b[st->c].ptr,
                               .m = st->m, .n = st->n, .k = st->k, .batch = st->batch,
                               .trans_a = st->trans_a, .trans_b = st->trans_b,
                               .alpha = st->alpha, .beta = st->beta };
                return blas_gemm(&g);
        } else {
                GpuPtr ptrs[LIMIT_ARGS_MAX];
                void *params[LIMIT_ARGS_MAX];
                for (int i = 0; i < st->n_args; i++) {
                        const JobArg *a = &st->args[i];
                        if (a->kind == JOB_ARG_BUFFER) {
                                ptrs[i] = set->b[a->buffer].ptr;
                                params[i] = &ptrs[i];
                        } else {
                                params[i] = (void *)a->value; /* the driver only reads it */
                        }
                }
                return gpu_launch(k, st->grid, st->block, st->shared, st->n_args ? params : NULL);
        }
}

static bool side_has_gemm(const JobSide *side)
{
        for (int j = 0; j < side->n_steps; j++)
                if (side->steps[j].kind == JOB_STEP_GEMM)
                        return true;
        return false;
}

/*
 * The ranges of a candidate @set for the fence: its buffers, exactly. A
 * read or write one element past the end is stopped and named as such, as
 * compute-sanitizer would; without the fence such a write is found later in
 * the guard band (an incorrect verdict), such a read not at all.
 */
static int fence_buffers(const JobShape *s, const BufSet *set, FenceBuffer *bufs)
{
        for (int i = 0; i < set->n; i++) {
                const JobBuffer *b = gpu_job_side_buffer(s, &s->cand, i);
                bufs[i] = (FenceBuffer){ .name = b->name, .ptr = set->b[i].ptr, .bytes = b->bytes,
                                         .elem = (unsigned)kv_dtype_size(b->dtype) };
        }
        return set->n;
}

/* The fenced build stopped a thread: the verdict, with where and what. */
static int fence_fail(Run *r, const JobShape *s, const BufSet *set, const FenceRecord *rec)
{
        FenceBuffer bufs[MAX_SET + FENCE_GLOBALS_MAX];
        char fn[GPU_ELF_NAME_BYTES] = "", msg[768];
        int n = fence_buffers(s, set, bufs);
        unsigned fi = fence_site_func(rec->site);
        json_t *extra;

        for (int i = 0; i < r->fence.n_globals_ranges; i++)
                bufs[n++] = r->fence.globals_ranges[i];
        if (fi != FENCE_FUNC_UNKNOWN) {
                int rc = fenced_function(&r->fence, fi, fn, sizeof(fn));
                if (rc == GPU_E_CUDA)
                        return fail_gpu(r, rc);
        }
        extra = fence_report(rec, bufs, n, r->kernel ? r->kernel : "?", fn,
                             "kernel.cu", msg, sizeof(msg));
        if (!extra)
                return fail_gpu(r, -ENOMEM);
        if (fence_site_kind(rec->site) == FENCE_KIND_HANG) {
                double ref_ms = 0;
                int64_t limit = launch_limit(r, &ref_ms);
                json_object_del(extra, "name");
                json_object_set_new(extra, "launch_limit_ms", json_integer((json_int_t)limit));
                if (ref_ms > 0)
                        json_object_set_new(extra, "reference_ms", json_real(ref_ms));
                return fail_with(r, "timeout", "timeout", extra,
                                 "the GPU work did not finish within the launch time limit of %" PRId64
                                 " ms per plan execution: %s", limit, msg);
        }
        return fail_with(r, "runtime_error", "cuda", extra, "%s: %s", fence_error_name(rec->site), msg);
}

/*
 * Run one side's plan. With @wait_each every launch is bracketed by events
 * and waited for (exact blame; its GPU time is added to busy_ms); otherwise
 * the launches are only enqueued.
 */
static int run_plan(Run *r, int si, int side_idx, const BufSet *set, bool wait_each)
{
        const JobShape *s = &r->job->shapes[si];
        const JobSide *side = side_idx == SIDE_CAND ? &s->cand : &s->ref;
        bool fenced = wait_each && side_idx == SIDE_CAND && r->fencing && r->fkern[si];
        GpuKernel **ks = fenced ? r->fkern[si] : r->kern[si][side_idx];

        if (fenced) {
                FenceBuffer bufs[MAX_SET];
                /* a thread that runs longer than the launch limit means the launch did */
                int rc = fenced_arm(&r->fence, bufs, fence_buffers(s, set, bufs),
                                    (uint64_t)launch_limit(r, NULL) * 1000000u);
                r->side = SIDE_HELPER;
                if (rc == FENCED_E_UNUSABLE) { /* more ranges than the table holds */
                        log_info("gpu: job %" PRId64 ": more ranges than the fence's table holds; shape set %d "
                                 "runs unfenced", r->job->id, si);
                        fenced = false;
                        ks = r->kern[si][side_idx];
                } else if (rc) {
                        return fail_gpu(r, rc);
                }
        }
        for (int j = 0; j < side->n_steps; j++) {
                double ms = 0;
                FenceRecord rec;
                r->side = side_idx;
                r->launch = j;
                r->kernel = side->steps[j].kernel;
                if (wait_each)
                        TRY_GPU(r, gpu_event_record(ev_a));
                TRY_GPU(r, launch_step(r, s, side, ks[j], &side->steps[j], set));
                if (side_idx == SIDE_CAND && r->fencing && side->steps[j].kind != JOB_STEP_GEMM) {
                        if (fenced && ks[j] != r->kern[si][side_idx][j])
                                r->launches_fenced++;
                        else
                                r->launches_unfenced++;
                }
                if (fenced)
                        TRY_GPU(r, fenced_fetch(&r->fence));
                if (wait_each) {
                        TRY_GPU(r, gpu_event_record(ev_b));
                        TRY_GPU(r, wait_bounded(r, ev_b, launch_limit(r, NULL)));
                        TRY_GPU(r, gpu_event_elapsed_ms(ev_a, ev_b, &ms));
                        r->busy_ms += ms;
                }
                if (fenced && fenced_tripped(&r->fence, &rec))
                        return fence_fail(r, s, set, &rec);
        }
        r->launch = -1;
        r->kernel = NULL;
        r->side = SIDE_HELPER;
        /* no reference partials left for the candidate; timed runs wipe after
         * their end event instead (pair_checks()) */
        if (wait_each && side_idx == SIDE_REF && side_has_gemm(side))
                TRY_GPU(r, blas_wipe());
        return 0;
}

/* ------------------------------------------------------------- checks -- */

/* Queue the guard checks of @set into diff slots from *@slot on (two per buffer). */
static int queue_guards(Run *r, const BufSet *set, unsigned *slot)
{
        r->side = SIDE_HELPER;
        for (int i = 0; i < set->n; i++, *slot += 2)
                TRY_GPU(r, devmem_check_guards(*slot, &set->b[i], r->salt));
        return 0;
}

/* The verdict of @set's guard checks, read into @d (queue_guards() order). */
static int guards_verdict(Run *r, const JobShape *s, const JobSide *side, const BufSet *set, const KvDiff *d)
{
        for (int i = 0; i < set->n; i++) {
                const JobBuffer *b = gpu_job_side_buffer(s, side, i);
                DevGuardReport g;
                devmem_guard_report(&set->b[i], &d[2 * i], &d[2 * i + 1], &g);
                if (g.after_bytes)
                        return fail_with(r, "incorrect", "guard",
                                         json_pack("{s:s, s:s, s:I, s:I, s:I}", "buffer", b->name, "where", "after",
                                                   "bytes", (json_int_t)g.after_bytes, "first_offset",
                                                   (json_int_t)g.after_first, "last_offset", (json_int_t)g.after_last),
                                         "out-of-bounds write: %" PRIu64 " byte(s) changed after the end of buffer '%s' "
                                         "(%" PRIu64 " bytes, %" PRIu64 " elements), from %" PRIu64 " to %" PRIu64
                                         " bytes past its end",
                                         g.after_bytes, b->name, b->bytes, b->count, g.after_first, g.after_last);
                if (g.before_bytes)
                        return fail_with(r, "incorrect", "guard",
                                         json_pack("{s:s, s:s, s:I, s:I}", "buffer", b->name, "where", "before",
                                                   "bytes", (json_int_t)g.before_bytes, "farthest",
                                                   (json_int_t)g.before_far),
                                         "out-of-bounds write: %" PRIu64 " byte(s) changed before the start of buffer '%s', "
                                         "up to %" PRIu64 " bytes before it",
                                         g.before_bytes, b->name, g.before_far);
        }
        return 0;
}

/* Queue bitwise comparisons of @a's and @b's `in` buffers (@inputs) or of
 * all the others, into diff slots from *@slot on, in buffer order. */
static int queue_bits(Run *r, const JobShape *s, const BufSet *a, const BufSet *b, bool inputs, unsigned *slot)
{
        r->side = SIDE_HELPER;
        for (int i = 0; i < s->n_buffers; i++)
                if ((s->buffers[i].role == JOB_ROLE_IN) == inputs)
                        TRY_GPU(r, devmem_check_bits((*slot)++, a->b[i].ptr, b->b[i].ptr, s->buffers[i].bytes));
        return 0;
}

/* Queue the comparison of the candidate's `in` buffers with a fresh regeneration (in @ref). */
static int queue_inputs(Run *r, const JobShape *s, const BufSet *cand, const BufSet *ref, unsigned *slot)
{
        return queue_bits(r, s, cand, ref, true, slot);
}

static int inputs_verdict(Run *r, const JobShape *s, const KvDiff *d)
{
        for (int i = 0, k = 0; i < s->n_buffers; i++) {
                const JobBuffer *b = &s->buffers[i];
                uint64_t el;
                if (b->role != JOB_ROLE_IN || d[k++].count == 0)
                        continue;
                el = d[k - 1].first / (uint64_t)kv_dtype_size(b->dtype);
                return fail_with(r, "incorrect", "input_mutation",
                                 json_pack("{s:s, s:I, s:I}", "buffer", b->name, "bytes", (json_int_t)d[k - 1].count,
                                           "first_index", (json_int_t)el),
                                 "the candidate wrote into input buffer '%s': %" PRIu64
                                 " byte(s) differ from the generated input, first in element %" PRIu64,
                                 b->name, (uint64_t)d[k - 1].count, el);
        }
        return 0;
}

/* Read back diff slots [0, @n) into @d (waits). */
static int fetch_checks(Run *r, unsigned n, KvDiff *d)
{
        r->side = SIDE_HELPER;
        TRY_GPU(r, devmem_check_fetch(n, d));
        return 0;
}

static int check_guards(Run *r, const JobShape *s, const JobSide *side, const BufSet *set)
{
        KvDiff d[2 * MAX_SET];
        unsigned n = 0;
        int rc;

        if ((rc = queue_guards(r, set, &n)) || (rc = fetch_checks(r, n, d)))
                return rc;
        return guards_verdict(r, s, side, set, d);
}

/* The candidate's `in` buffers must equal a fresh regeneration (in @ref). */
static int check_inputs(Run *r, const JobShape *s, const BufSet *cand, const BufSet *ref)
{
        KvDiff d[MAX_SET];
        unsigned n = 0;
        int rc;

        if ((rc = queue_inputs(r, s, cand, ref, &n)) || (rc = fetch_checks(r, n, d)))
                return rc;
        return inputs_verdict(r, s, d);
}

static json_t *element_json(int dtype, GpuPtr buf, uint64_t index, int *rc)
{
        unsigned char e[8];
        int size = kv_dtype_size(dtype);

        *rc = devmem_read(buf + index * (uint64_t)size, e, (size_t)size);
        if (*rc)
                return NULL;
        if (kv_dtype_is_float(dtype))
                return jnum(kv_load_f64(dtype, e, 0));
        return json_integer((json_int_t)kv_load_i64(dtype, e, 0));
}

/* The first LIMIT_FIRST_MISMATCHES mismatches, in index order. */
static int first_mismatches(Run *r, const JobBuffer *b, GpuPtr got, GpuPtr want, const KvCmpParams *p,
                            uint64_t first, json_t **ret)
{
        json_t *list = json_array();
        uint64_t idx = first;

        for (int n = 0; n < LIMIT_FIRST_MISMATCHES && idx != UINT64_MAX; n++) {
                int rc = 0;
                json_t *g = element_json(b->dtype, got, idx, &rc), *w = NULL;
                if (!rc)
                        w = element_json(b->dtype, want, idx, &rc);
                if (rc) {
                        json_decref(g);
                        json_decref(list);
                        return fail_gpu(r, rc);
                }
                json_array_append_new(list, json_pack("{s:I, s:o, s:o}", "index", (json_int_t)idx, "got", g, "want", w));
                if (n + 1 < LIMIT_FIRST_MISMATCHES) {
                        int rc2 = devmem_mismatch_from(got, want, p, idx + 1, &idx);
                        if (rc2) {
                                json_decref(list);
                                return fail_gpu(r, rc2);
                        }
                }
        }
        *ret = list;
        return 0;
}

/* Compare every out/inout buffer of @cand against @ref within tolerance. */
static int check_outputs(Run *r, const JobShape *s, const BufSet *cand, const BufSet *ref, BufAgg *agg)
{
        for (int i = 0; i < s->n_buffers; i++) {
                const JobBuffer *b = &s->buffers[i];
                KvCmpParams p = { .count = b->count, .dtype = b->dtype, .atol = b->atol, .rtol = b->rtol };
                KvCmpStats st;
                double max_abs, max_rel;
                json_t *first = NULL;
                int rc;

                if (b->role == JOB_ROLE_IN)
                        continue;
                TRY_GPU(r, devmem_compare_tol(cand->b[i].ptr, ref->b[i].ptr, &p, &st));
                memcpy(&max_abs, &st.max_abs_bits, sizeof(max_abs));
                memcpy(&max_rel, &st.max_rel_bits, sizeof(max_rel));
                agg[i].max_abs = fmax(agg[i].max_abs, max_abs);
                agg[i].max_rel = fmax(agg[i].max_rel, max_rel);
                agg[i].mismatches += st.mismatches;
                agg[i].nan_inf += st.nan_inf;
                if (st.mismatches == 0 && st.nan_inf == 0)
                        continue;
                if ((rc = first_mismatches(r, b, cand->b[i].ptr, ref->b[i].ptr, &p, st.first, &first)))
                        return rc;
                agg[i].first = first;
                {
                        json_t *f0 = json_array_get(first, 0);
                        char *gs = json_dumps(json_object_get(f0, "got"), JSON_ENCODE_ANY);
                        char *ws = json_dumps(json_object_get(f0, "want"), JSON_ENCODE_ANY);
                        rc = fail_with(r, "incorrect", "mismatch",
                                       json_pack("{s:s, s:I, s:I, s:I}", "buffer", b->name, "mismatches",
                                                 (json_int_t)st.mismatches, "nan_inf_mismatches", (json_int_t)st.nan_inf,
                                                 "count", (json_int_t)b->count),
                                       "output '%s': %" PRIu64 " of %" PRIu64 " elements outside atol=%g rtol=%g, %" PRIu64
                                       " NaN/Inf disagreements (max abs error %g, max rel error %g); first at index %" PRIu64
                                       ": got %s, want %s",
                                       b->name, (uint64_t)st.mismatches, b->count, b->atol, b->rtol, (uint64_t)st.nan_inf,
                                       max_abs, max_rel, (uint64_t)st.first, gs ? gs : "?", ws ? ws : "?");
                        free(gs);
                        free(ws);
                        return rc;
                }
        }
        return 0;
}

/* Outputs of two candidate runs on the same inputs must be bit-identical. */
static int check_determinism(Run *r, const JobShape *s, const BufSet *a, const BufSet *b)
{
        KvDiff diffs[MAX_SET];
        unsigned n = 0;
        int rc;

        if ((rc = queue_bits(r, s, a, b, false, &n)) || (rc = fetch_checks(r, n, diffs)))
                return rc;
        for (int i = 0, k = 0; i < s->n_buffers; i++) {
                const JobBuffer *bf = &s->buffers[i];
                KvDiff d;
                uint64_t el;
                if (bf->role == JOB_ROLE_IN)
                        continue;
                d = diffs[k++];
                if (!d.count)
                        continue;
                el = d.first / (uint64_t)kv_dtype_size(bf->dtype);
                return fail_with(r, "incorrect", "nondeterministic",
                                 json_pack("{s:s, s:I, s:I}", "buffer", bf->name, "bytes", (json_int_t)d.count,
                                           "first_index", (json_int_t)el),
                                 "two runs of the candidate on the same inputs disagree in output '%s': %" PRIu64
                                 " byte(s) differ, first in element %" PRIu64 " (a race, or state kept between launches)",
                                 bf->name, (uint64_t)d.count, el);
        }
        return 0;
}

static int wait_all(Run *r)
{
        int saved = r->side;

        r->side = SIDE_HELPER;
        TRY_GPU(r, gpu_stream_wait());
        r->side = saved;
        return 0;
}

/* --------------------------------------------------------- correctness -- */

static json_t *tri(int v)
{
        return v < 0 ? json_null() : json_boolean(v);
}

typedef struct ShapeReport {
        int trials_done;
        int guard_ok, inputs_intact, deterministic; /* 1 passed, 0 failed, -1 not reached */
        BufAgg agg[LIMIT_TASK_BUFFERS_MAX];
} ShapeReport;

static json_t *shape_report_json(const JobShape *s, ShapeReport *rep, bool passed)
{
        json_t *bufs = json_array();

        for (int i = 0; i < s->n_buffers; i++) {
                const JobBuffer *b = &s->buffers[i];
                BufAgg *a = &rep->agg[i];
                if (b->role == JOB_ROLE_IN)
                        continue;
                json_array_append_new(bufs, json_pack("{s:s, s:o, s:o, s:I, s:I, s:I, s:o}", "name", b->name, "max_abs",
                                                      jfinite(a->max_abs), "max_rel", jfinite(a->max_rel), "mismatches",
                                                      (json_int_t)a->mismatches, "count", (json_int_t)b->count,
                                                      "nan_inf_mismatches", (json_int_t)a->nan_inf, "first_mismatches",
                                                      a->first ? a->first : json_array()));
                a->first = NULL; /* stolen */
        }
        return json_pack("{s:s, s:b, s:i, s:o, s:o, s:o, s:n, s:o}", "shape", s->name, "passed", passed, "trials",
                         rep->trials_done, "guard_ok", tri(rep->guard_ok), "inputs_intact", tri(rep->inputs_intact),
                         "deterministic", tri(rep->deterministic), "revalidated", "buffers", bufs);
}

/* A check passed in this trial: true unless it failed before (it cannot have). */
static void passed(int *flag)
{
        if (*flag < 0)
                *flag = 1;
}

static int correctness_trial(Run *r, int si, int t, ShapeReport *rep)
{
        const JobShape *s = &r->job->shapes[si];
        uint64_t seed = kv_trial_seed(r->job->seed, (uint32_t)si, (uint32_t)t);
        BufSet *a = calloc(1, sizeof(*a)), *ref = calloc(1, sizeof(*ref)), *b = calloc(1, sizeof(*b));
        int rc;

        r->trial = t;
        if (!a || !ref || !b) {
                rc = fail_gpu(r, -ENOMEM);
                goto out;
        }
        /* 1-2: the candidate first, on guarded buffers */
        if ((rc = set_alloc(r, s, &s->cand, true, a)) || (rc = set_prepare(r, s, &s->cand, a, seed, true)) ||
            (rc = wait_all(r)) || (rc = run_plan(r, si, SIDE_CAND, a, true)))
                goto out;
        /* 3: guard bands */
        if ((rc = check_guards(r, s, &s->cand, a))) {
                rep->guard_ok = 0;
                goto out;
        }
        passed(&rep->guard_ok);
        /* 4: fresh inputs for the reference; they also witness the candidate's inputs */
        if ((rc = set_alloc(r, s, &s->ref, false, ref)) || (rc = set_prepare(r, s, &s->ref, ref, seed, false)) ||
            (rc = wait_all(r)))
                goto out;
        if ((rc = check_inputs(r, s, a, ref))) {
                rep->inputs_intact = 0;
                goto out;
        }
        passed(&rep->inputs_intact);
        if ((rc = run_plan(r, si, SIDE_REF, ref, true)))
                goto out;
        if ((rc = check_outputs(r, s, a, ref, rep->agg)))
                goto out;
        if ((rc = set_free(r, ref)))
                goto out;
        /* 5: again from the same seed, fresh poison: the bits must agree */
        if ((rc = set_alloc(r, s, &s->cand, true, b)) || (rc = set_prepare(r, s, &s->cand, b, seed, true)) ||
            (rc = wait_all(r)) || (rc = run_plan(r, si, SIDE_CAND, b, true)))
                goto out;
        if ((rc = check_guards(r, s, &s->cand, b))) {
                rep->guard_ok = 0;
                goto out;
        }
        if ((rc = check_determinism(r, s, a, b))) {
                rep->deterministic = 0;
                goto out;
        }
        passed(&rep->deterministic);
        if ((rc = set_free(r, b)) || (rc = set_free(r, a)))
                goto out;
        rep->trials_done = t + 1;
out:
        free(a);
        free(ref);
        free(b);
        return rc;
}

/*
 * The per-launch limit for shape set @si: with launch_factor set, run the
 * reference once (fresh inputs from the trial-0 seed, outputs zeroed with
 * the buffers before the candidate runs) and allow every plan execution
 * launch_factor times its time, at least launch_floor_ms, at most
 * launch_timeout_ms. A hanging candidate then costs milliseconds on small
 * shapes instead of the 10 s ceiling; the reference is trusted, so its own
 * run gets the ceiling.
 */
static int calibrate_limit(Run *r, int si)
{
        const GpuJob *job = r->job;
        const JobShape *s = &job->shapes[si];
        BufSet *set;
        double before = r->busy_ms, ms, lim;
        int rc;

        if (job->launch_factor <= 0)
                return 0;
        if (!(set = calloc(1, sizeof(*set))))
                return fail_gpu(r, -ENOMEM);
        r->trial = 0;
        if ((rc = set_alloc(r, s, &s->ref, false, set)) ||
            (rc = set_prepare(r, s, &s->ref, set, kv_trial_seed(job->seed, (uint32_t)si, 0), false)) ||
            (rc = wait_all(r)))
                goto out;
        /* cuBLAS loads a kernel at its first use, between the events of that
         * run: a side with a library step is run once more, and timed then */
        for (int i = side_has_gemm(&s->ref) ? 2 : 1; i > 0 && rc == 0; i--) {
                before = r->busy_ms;
                rc = run_plan(r, si, SIDE_REF, set, true);
        }
        if (rc || (rc = set_free(r, set)))
                goto out;
        ms = r->busy_ms - before;
        lim = ceil(job->launch_factor * ms);
        if (lim < (double)job->launch_floor_ms)
                lim = (double)job->launch_floor_ms;
        if (lim > (double)job->launch_timeout_ms)
                lim = (double)job->launch_timeout_ms;
        r->shape_limit_ms[si] = (int64_t)lim;
        r->shape_ref_ms[si] = ms > 0 ? ms : 1e-6;
out:
        r->trial = -1;
        free(set);
        return rc;
}

/*
 * Make the build that runs next (@fenced or plain) hold the candidate's
 * __device__ state, copying it over from the other build if that one ran
 * last. Return: 0 or JUDGE_STOP.
 */
static int fence_state(Run *r, bool fenced)
{
        int saved = r->side;

        if (!r->fence_on || r->state_fenced == fenced)
                return 0;
        r->side = SIDE_HELPER;
        TRY_GPU(r, fenced_handoff(&r->fence, r->cand_mod, &r->cand_globals, !fenced));
        r->state_fenced = fenced;
        r->side = saved;
        return 0;
}

static int correctness_shape(Run *r, int si, json_t *shapes_out)
{
        const JobShape *s = &r->job->shapes[si];
        ShapeReport *rep = calloc(1, sizeof(*rep));
        int rc = 0;

        if (!rep)
                return fail_gpu(r, -ENOMEM);
        rep->guard_ok = rep->inputs_intact = rep->deterministic = -1;
        r->shape = si;
        r->phase = "correctness";
        if (r->env->progress)
                r->env->progress(r->env->progress_userdata, r->job->id, "correctness", s->name);
        rc = calibrate_limit(r, si);
        for (int t = 0; t < r->job->trials && rc == 0; t++) {
                /* the first trial fenced (FENCE_TRIALS), the others plain: see docs/internals.md */
                r->fencing = r->fence_on && t < FENCE_TRIALS;
                rc = fence_state(r, r->fencing);
                if (rc == 0)
                        rc = correctness_trial(r, si, t, rep);
        }
        r->fencing = false;
        {
                json_t *o = shape_report_json(s, rep, rc == 0);
                json_object_set_new(o, "launch_limit_ms", json_integer((json_int_t)r->shape_limit_ms[si]));
                json_array_append_new(shapes_out, o);
        }
        for (int i = 0; i < LIMIT_TASK_BUFFERS_MAX; i++)
                json_decref(rep->agg[i].first);
        free(rep);
        r->trial = -1;
        return rc;
}

/* ---------------------------------------------------------------- dump -- */

static int dump_buffer(Run *r, const JobShape *s, const JobBuffer *b, GpuPtr ptr, const char *when)
{
        for (uint64_t off = 0; off < b->bytes || off == 0; off += DEVMEM_CHUNK_BYTES) {
                size_t n = b->bytes - off < DEVMEM_CHUNK_BYTES ? (size_t)(b->bytes - off) : DEVMEM_CHUNK_BYTES;
                const void *view = NULL;
                int rc;
                if (n && (rc = devmem_read_chunk(ptr + off, n, &view)))
                        return fail_gpu(r, rc);
                if ((rc = r->env->dump(r->env->progress_userdata, r->job->id, s->name, b->name, when, off, b->bytes,
                                       view, n)) < 0)
                        return fail_gpu(r, rc);
                if (b->bytes == 0)
                        break;
        }
        return 0;
}

/* The reference side of every shape set from the trial-0 seed: inputs, run, outputs. */
static int dump_all(Run *r)
{
        const GpuJob *job = r->job;
        int rc = 0;

        r->phase = "dump";
        for (int si = 0; si < job->n_shapes && rc == 0; si++) {
                const JobShape *s = &job->shapes[si];
                BufSet *set = calloc(1, sizeof(*set));
                if (!set)
                        return fail_gpu(r, -ENOMEM);
                r->shape = si;
                r->trial = 0;
                if ((rc = set_alloc(r, s, &s->ref, false, set)) ||
                    (rc = set_prepare(r, s, &s->ref, set, kv_trial_seed(job->seed, (uint32_t)si, 0), false)) ||
                    (rc = wait_all(r)))
                        goto next;
                for (int i = 0; i < s->n_buffers && rc == 0; i++)
                        if (s->buffers[i].role != JOB_ROLE_OUT)
                                rc = dump_buffer(r, s, &s->buffers[i], set->b[i].ptr, "input");
                if (rc || (rc = run_plan(r, si, SIDE_REF, set, true)))
                        goto next;
                for (int i = 0; i < s->n_buffers && rc == 0; i++)
                        if (s->buffers[i].role != JOB_ROLE_IN)
                                rc = dump_buffer(r, s, &s->buffers[i], set->b[i].ptr, "output");
                if (rc == 0)
                        rc = set_free(r, set);
next:
                free(set);
        }
        r->shape = r->trial = -1;
        return rc;
}

/* -------------------------------------------------------------- timing -- */

/*
 * Peak rates for the roofline check, by device name. The compute peak is
 * the highest the dtype can reach (dense tensor cores: TF32 for f32, fp16
 * for f16/bf16, fp64 tensor for f64, int8 for integers), so a legitimately
 * fast kernel is never flagged; the flag only says "faster than physics".
 * Unknown devices get 0 (no roofline).
 */
void judge_roofline_peaks(const char *name, int dtype, double *ret_flops, double *ret_bytes_per_s)
{
        struct {
                const char *match, *also;
                double bw, f32, f16, f64, i8;
        } table[] = {
                { "H200", NULL, 4.8e12, 494.7e12, 989.4e12, 66.9e12, 1978.9e12 },
                { "H100", "PCIe", 2.0e12, 378.0e12, 756.0e12, 51.2e12, 1513.0e12 },
                { "H100", NULL, 3.35e12, 494.7e12, 989.4e12, 66.9e12, 1978.9e12 },
                { "H800", NULL, 3.35e12, 494.7e12, 989.4e12, 66.9e12, 1978.9e12 },
                { "A100", NULL, 2.039e12, 156.0e12, 312.0e12, 19.5e12, 624.0e12 },
        };

        *ret_flops = 0;
        *ret_bytes_per_s = 0;
        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
                if (!strstr(name, table[i].match) || (table[i].also && !strstr(name, table[i].also)))
                        continue;
                *ret_bytes_per_s = table[i].bw;
                switch (dtype) {
                case KV_DT_F32: *ret_flops = table[i].f32; break;
                case KV_DT_F16:
                case KV_DT_BF16: *ret_flops = table[i].f16; break;
                case KV_DT_F64: *ret_flops = table[i].f64; break;
                default: *ret_flops = table[i].i8; break;
                }
                return;
        }
}

static double roofline_min_ms(const Run *r, const JobShape *s)
{
        double peak_flops = 0, bw = 0, t = 0;

        for (int i = 0; i < s->n_buffers; i++) {
                double f, b;
                judge_roofline_peaks(r->env->info->name, s->buffers[i].dtype, &f, &b);
                peak_flops = fmax(peak_flops, f);
                bw = b;
        }
        if (bw <= 0)
                return 0;
        if (s->has_flops && peak_flops > 0)
                t = fmax(t, s->flops / peak_flops);
        if (s->has_bytes)
                t = fmax(t, s->bytes / bw);
        return t * 1e3;
}

static json_t *stats_json(const TimingStats *st)
{
        return json_pack("{s:o, s:o, s:o, s:o, s:o, s:I, s:o}", "median_ms", jfinite(st->median), "mean_ms",
                         jfinite(st->mean), "stdev_ms", jfinite(st->stdev), "min_ms", jfinite(st->min), "max_ms",
                         jfinite(st->max), "trials", (json_int_t)st->n, "precision", jfinite(st->precision));
}

/*
 * Timed runs. Every plan execution of the timing phase, warm-up included,
 * runs on inputs generated just before from its own seed (timing_seed(): a
 * run number that only grows), so no two timed runs see the same values
 * and no per-content cache can hit; the reference of the same pair runs on
 * the same inputs in its own buffers. A trial is one event pair around
 * `per` plan executions on `per` buffer sets (so pointers rotate too); its
 * sample is the pair's time divided by `per`. All sets are generated before
 * the L2 flush, so each execution reads inputs that are not in the L2, as a
 * single launch after a flush does (the flush reads, so it leaves no dirty
 * lines for the timed runs to write back); `per` is chosen after the
 * warm-up so that a trial lasts about trial_target_ms(), which takes the
 * event and launch overhead out of short kernels' times. The output of
 * every execution is compared on the device with the reference's on the
 * same inputs (queued without a wait, read back per batch by
 * check_tally()): every timed run is checked, not a sample of them.
 */
#define TIMING_SETS_MAX 32
#define TRIAL_TARGET_MS 1.0
#define TRIAL_MAX_MS 25.0
#define TIMING_SETS_BYTES (1ull << 30)
#define TIMING_SEED_SALT 0x74696d696e67ull /* "timing" */

typedef struct TimingState {
        BufSet cand[TIMING_SETS_MAX], ref[TIMING_SETS_MAX];
        int n_sets;    /* buffer sets allocated */
        int per;       /* plan executions per trial, <= n_sets */
        uint32_t runs; /* executions per side so far: the next seed */
        uint32_t checked;
        GpuGraph *graph[2]; /* per side: its `per` executions as one graph, or NULL */
        double *cs, *rs;    /* samples, ms per execution */
} TimingState;

static uint64_t timing_seed(const Run *r, int si, uint32_t run)
{
        return kv_trial_seed(r->job->seed ^ TIMING_SEED_SALT, (uint32_t)si, run);
}

static int flush_l2(Run *r)
{
        r->side = SIDE_HELPER;
        TRY_GPU(r, devmem_l2_flush(r->env->flush, r->env->flush_bytes));
        return 0;
}

static int out_buffers(const JobShape *s)
{
        int n = 0;

        for (int i = 0; i < s->n_buffers; i++)
                n += s->buffers[i].role != JOB_ROLE_IN;
        return n;
}

/*
 * Queue one pair: fresh inputs into every set of both sides, the timed
 * candidate trial (ev[0], ev[1]) and reference trial (ev[2], ev[3]), the
 * comparison of every set's outputs into tally slots from *@slot on, and
 * the wipe of the reference's outputs. Nothing waits.
 */
static int pair_inputs(Run *r, const JobShape *s, int si, TimingState *ts)
{
        int rc;

        for (int j = 0; j < ts->per; j++) {
                uint64_t seed = timing_seed(r, si, ts->runs++);
                if ((rc = set_inputs(r, s, &s->cand, &ts->cand[j], seed, true)) ||
                    (rc = set_inputs(r, s, &s->ref, &ts->ref[j], seed, false)))
                        return rc;
        }
        return 0;
}

/* Every set's outputs against the reference's into the tally, then the
 * reference's outputs wiped (the wipes come after the comparisons: a fill
 * after a comparison in a batch launches the comparisons first). */
static int pair_checks(Run *r, const JobShape *s, TimingState *ts, unsigned *slot)
{
        r->side = SIDE_HELPER;
        for (int j = 0; j < ts->per; j++) {
                for (int i = 0; i < s->n_buffers; i++) {
                        const JobBuffer *b = &s->buffers[i];
                        KvCmpParams p = { .count = b->count, .dtype = b->dtype, .atol = b->atol, .rtol = b->rtol };
                        if (b->role == JOB_ROLE_IN)
                                continue;
                        TRY_GPU(r, devmem_tally_compare((*slot)++, ts->cand[j].b[i].ptr, ts->ref[j].b[i].ptr, &p));
                }
        }
        for (int j = 0; j < ts->per; j++) {
                for (int i = 0; i < s->n_buffers; i++)
                        if (s->buffers[i].role != JOB_ROLE_IN)
                                TRY_GPU(r, devmem_zero(&ts->ref[j].b[i]));
                for (int i = 0; i < s->ref.n_scratch; i++)
                        TRY_GPU(r, devmem_zero(&ts->ref[j].b[s->n_buffers + i]));
        }
        return 0;
}

static int timed_pair(Run *r, int si, TimingState *ts, GpuEvent *const *ev, unsigned *slot)
{
        const JobShape *s = &r->job->shapes[si];
        int rc;

        devmem_batch_begin();
        if ((rc = batch_end(r, pair_inputs(r, s, si, ts))))
                return rc;
        /* lines the candidate marked evict_last would outlive the flush */
        r->side = SIDE_HELPER;
        TRY_GPU(r, devmem_l2_normal());
        for (int side = SIDE_CAND; side <= SIDE_REF; side++) {
                const BufSet *sets = side == SIDE_CAND ? ts->cand : ts->ref;
                if ((rc = flush_l2(r)))
                        return rc;
                r->side = side;
                TRY_GPU(r, gpu_event_record(ev[2 * side]));
                if (ts->graph[side])
                        TRY_GPU(r, gpu_graph_launch(ts->graph[side]));
                for (int j = 0; j < ts->per && !ts->graph[side]; j++)
                        if ((rc = run_plan(r, si, side, &sets[j], false)))
                                return rc;
                r->side = side;
                TRY_GPU(r, gpu_event_record(ev[2 * side + 1]));
        }
        devmem_batch_begin();
        if ((rc = batch_end(r, pair_checks(r, s, ts, slot))))
                return rc;
        if (side_has_gemm(&s->ref))
                TRY_GPU(r, blas_wipe());
        return 0;
}

/*
 * Read back @n_slots tally slots, filled by pairs whose first execution was
 * run @first_run; the first disagreement fails the job (phase
 * "revalidation": a timed run's output is checked after the fact).
 */
static int check_tally(Run *r, int si, TimingState *ts, unsigned n_slots, uint32_t first_run)
{
        const JobShape *s = &r->job->shapes[si];
        int n_out = out_buffers(s), rc = 0;
        KvCmpStats *st = calloc(n_slots ? n_slots : 1, sizeof(*st));

        if (!st)
                return fail_gpu(r, -ENOMEM);
        r->side = SIDE_HELPER;
        if ((rc = devmem_tally_fetch(n_slots, st))) {
                free(st);
                return fail_gpu(r, rc);
        }
        for (unsigned k = 0; k < n_slots && n_out > 0; k++) {
                uint32_t run = first_run + k / (unsigned)n_out;
                const JobBuffer *b = NULL;
                double max_abs, max_rel;
                for (int i = 0, o = 0; i < s->n_buffers; i++)
                        if (s->buffers[i].role != JOB_ROLE_IN && o++ == (int)(k % (unsigned)n_out))
                                b = &s->buffers[i];
                if (!b || (st[k].mismatches == 0 && st[k].nan_inf == 0))
                        continue;
                memcpy(&max_abs, &st[k].max_abs_bits, sizeof(max_abs));
                memcpy(&max_rel, &st[k].max_rel_bits, sizeof(max_rel));
                r->phase = "revalidation";
                rc = fail_with(r, "incorrect", "mismatch",
                               json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:o, s:o}", "buffer", b->name, "mismatches",
                                         (json_int_t)st[k].mismatches, "nan_inf_mismatches",
                                         (json_int_t)st[k].nan_inf, "count", (json_int_t)b->count, "timed_run",
                                         (json_int_t)run, "first_index", (json_int_t)st[k].first, "max_abs",
                                         jfinite(max_abs), "max_rel", jfinite(max_rel)),
                               "timed run %" PRIu32 " (fresh inputs from its own seed): output '%s' disagrees with the "
                               "reference on the same inputs: %llu of %" PRIu64 " elements outside atol=%g rtol=%g, "
                               "%llu NaN/Inf disagreements (max abs error %g, max rel error %g), first at index %llu; "
                               "the kernel passed the correctness trials but not this run",
                               run, b->name, st[k].mismatches, b->count, b->atol, b->rtol, st[k].nan_inf, max_abs,
                               max_rel, st[k].first);
                break;
        }
        if (rc == 0)
                ts->checked += n_out > 0 ? n_slots / (unsigned)n_out : 0;
        free(st);
        return rc;
}

/*
 * The `per` executions of one side as one CUDA graph, replayed by every
 * trial: in a graph they run back to back, without the gap a stream leaves
 * between two launches (about 1 µs on the H100, a sixth of a 6 µs kernel;
 * BENCHMARKS.md). Only for per > 1 (a trial of one execution has no gap to
 * remove) and sides without a library step; a side whose capture fails in
 * any way keeps plain launches, which then report the failure as usual.
 */
static void capture_side(Run *r, int si, TimingState *ts, int side_idx)
{
        const JobShape *s = &r->job->shapes[si];
        const JobSide *side = side_idx == SIDE_CAND ? &s->cand : &s->ref;
        const BufSet *sets = side_idx == SIDE_CAND ? ts->cand : ts->ref;
        GpuGraph *g = NULL;
        int rc = 0;

        if (ts->per < 2 || side_has_gemm(side) || gpu_capture_begin())
                return;
        for (int j = 0; j < ts->per && rc == 0; j++)
                for (int k = 0; k < side->n_steps && rc == 0; k++)
                        rc = launch_step(r, s, side, r->kern[si][side_idx][k], &side->steps[k], &sets[j]);
        if (gpu_capture_end(rc ? NULL : &g) == 0 && rc == 0)
                ts->graph[side_idx] = g;
        else
                log_info("gpu: job %" PRId64 ": %s launches per trial not captured as a graph (%s); plain launches",
                         r->job->id, side_idx == SIDE_CAND ? "candidate" : "reference", gpu_error_last()->name);
}

static void drop_graphs(TimingState *ts)
{
        for (int i = 0; i < 2; i++) {
                gpu_graph_destroy(ts->graph[i]);
                ts->graph[i] = NULL;
        }
}

/* Bytes of one candidate set (guards included) and one reference set. */
static uint64_t pair_set_bytes(const JobShape *s)
{
        uint64_t total = 0;

        for (int i = 0; i < s->n_buffers + s->cand.n_scratch; i++)
                total += gpu_job_side_buffer(s, &s->cand, i)->bytes + 2 * DEVMEM_GUARD_BYTES;
        for (int i = 0; i < s->n_buffers + s->ref.n_scratch; i++)
                total += gpu_job_side_buffer(s, &s->ref, i)->bytes;
        return total;
}

/*
 * How long a trial should last. A trial carries a fixed ~3 µs of event and
 * graph-launch time (BENCHMARKS.md), 0.3% of TRIAL_TARGET_MS: a third of
 * the default 1% precision. A coarser target precision keeps that ratio
 * with shorter trials (`fast`, 5%: 0.2 ms), so it costs fewer executions
 * and fewer fresh buffer sets; finer ones keep TRIAL_TARGET_MS.
 */
static double trial_target_ms(double target_precision)
{
        double t = TRIAL_TARGET_MS * 0.01 / target_precision;

        return t < TRIAL_TARGET_MS ? t : TRIAL_TARGET_MS;
}

/* Executions per trial for the times of one execution of each side. */
static int choose_per(const JobShape *s, double cand_ms, double ref_ms, double target_precision)
{
        double fast = fmin(cand_ms, ref_ms), slow = fmax(cand_ms, ref_ms);
        uint64_t bytes = pair_set_bytes(s);
        int per;

        if (!(fast > 0))
                return 1;
        per = (int)fmin(floor(trial_target_ms(target_precision) / fast), TIMING_SETS_MAX);
        while (per > 1 && ((double)per * slow > TRIAL_MAX_MS || (uint64_t)per * bytes > TIMING_SETS_BYTES ||
                           (unsigned)(per * out_buffers(s)) > DEVMEM_TALLY_SLOTS))
                per--;
        return per < 1 ? 1 : per;
}

static int grow_sets(Run *r, const JobShape *s, TimingState *ts, int want)
{
        const DevBuf *bufs[TIMING_SETS_MAX * MAX_SET];
        size_t n = 0;
        int rc;

        while (ts->n_sets < want) {
                BufSet *c = &ts->cand[ts->n_sets], *f = &ts->ref[ts->n_sets];
                /* the seed is overwritten before any run; this fills guards, poison and zeros */
                if ((rc = set_alloc(r, s, &s->cand, true, c)) || (rc = set_prepare(r, s, &s->cand, c, 0, true)) ||
                    (rc = set_alloc(r, s, &s->ref, false, f)) || (rc = set_prepare(r, s, &s->ref, f, 0, false)))
                        return rc;
                ts->n_sets++;
        }
        /* every candidate allocation, for devmem_l2_normal() before each flush */
        for (int j = 0; j < ts->n_sets; j++)
                for (int i = 0; i < ts->cand[j].n; i++)
                        bufs[n++] = &ts->cand[j].b[i];
        r->side = SIDE_HELPER;
        TRY_GPU(r, devmem_l2_ranges(bufs, n));
        return 0;
}

static int free_sets(Run *r, TimingState *ts)
{
        int rc;

        for (int j = 0; j < ts->n_sets; j++)
                if ((rc = set_free(r, &ts->cand[j])) || (rc = set_free(r, &ts->ref[j])))
                        return rc;
        ts->n_sets = 0;
        return devmem_l2_ranges(NULL, 0);
}

/*
 * Queue @b pairs (events from ev_pool), wait for them within the launch
 * limits, collect their samples (when @record) and check their outputs.
 * Tally slots are used from 0; the caller keeps b * per * outputs within
 * DEVMEM_TALLY_SLOTS.
 */
static int timed_batch(Run *r, int si, TimingState *ts, size_t b, bool record, size_t *n)
{
        uint32_t first_run = ts->runs;
        unsigned slot = 0;
        int rc;

        for (size_t p = 0; p < b; p++)
                if ((rc = timed_pair(r, si, ts, &ev_pool[4 * p], &slot)))
                        return rc;
        r->side = SIDE_CAND; /* a fault surfacing while waiting comes from a candidate run */
        r->launch = -1;
        r->kernel = NULL;
        if ((rc = wait_bounded(r, ev_pool[4 * (b - 1) + 3], launch_limit(r, NULL) * (int64_t)(2 * b * (size_t)ts->per))))
                return fail_gpu(r, rc);
        for (size_t p = 0; p < b; p++) {
                double c = 0, f = 0;
                r->side = SIDE_HELPER;
                if ((rc = gpu_event_elapsed_ms(ev_pool[4 * p], ev_pool[4 * p + 1], &c)) ||
                    (rc = gpu_event_elapsed_ms(ev_pool[4 * p + 2], ev_pool[4 * p + 3], &f)))
                        return fail_gpu(r, rc);
                r->busy_ms += c + f;
                if (record) {
                        ts->cs[*n] = c / ts->per;
                        ts->rs[*n] = f / ts->per;
                        (*n)++;
                }
        }
        return check_tally(r, si, ts, slot, first_run);
}

/*
 * After the last batch: the guard bands of every candidate set, and its
 * inputs against the reference set's (the last pair generated both from the
 * same seed). Queued for as many sets as the diff slots hold, read back
 * once, judged in set order.
 */
static int final_checks(Run *r, const JobShape *s, TimingState *ts)
{
        KvDiff *d = malloc(DEVMEM_DIFF_SLOTS * sizeof(*d));
        int rc = 0, j = 0;

        if (!d)
                return fail_gpu(r, -ENOMEM);
        while (j < ts->n_sets && rc == 0) {
                unsigned n = 0, first[TIMING_SETS_MAX];
                int k = j;
                while (k < ts->n_sets && rc == 0 && n + 2 * MAX_SET + MAX_SET <= DEVMEM_DIFF_SLOTS) {
                        first[k - j] = n;
                        if ((rc = queue_guards(r, &ts->cand[k], &n)) == 0)
                                rc = queue_inputs(r, s, &ts->cand[k], &ts->ref[k], &n);
                        k++;
                }
                if (rc == 0)
                        rc = fetch_checks(r, n, d);
                for (int i = j; i < k && rc == 0; i++) {
                        const KvDiff *at = d + first[i - j];
                        if ((rc = guards_verdict(r, s, &s->cand, &ts->cand[i], at)) == 0)
                                rc = inputs_verdict(r, s, at + 2 * ts->cand[i].n);
                }
                j = k;
        }
        free(d);
        return rc;
}

static int time_shape(Run *r, int si, double budget_ms, json_t *shapes_out, double *ret_speedup)
{
        const JobShape *s = &r->job->shapes[si];
        const GpuJob *job = r->job;
        TimingPolicy pol = { .budget_ms = budget_ms, .target_precision = job->target_precision,
                             .min_trials = job->min_trials, .max_trials = job->max_trials, .warmup = job->warmup };
        TimingState *ts = calloc(1, sizeof(*ts));
        TimingStats cst, rst;
        TimingStop stop = TIMING_GO_ON;
        size_t n = 0, pair_slots, max_b;
        double pair_ms = 0, elapsed = 0, min_ms, speedup;
        int64_t t_start, tp[5] = { 0 }, t_graphs[2] = { 0 };
        int rc;

        memset(&cst, 0, sizeof(cst));
        memset(&rst, 0, sizeof(rst));
        r->shape = si;
        r->phase = "timing";
        if (r->env->progress)
                r->env->progress(r->env->progress_userdata, job->id, "timing", s->name);
        if (!ts)
                return fail_gpu(r, -ENOMEM);
        ts->per = 1;
        ts->cs = malloc((size_t)(job->max_trials > job->warmup ? job->max_trials : job->warmup) * sizeof(double));
        ts->rs = malloc((size_t)(job->max_trials > job->warmup ? job->max_trials : job->warmup) * sizeof(double));
        if (!ts->cs || !ts->rs) {
                rc = fail_gpu(r, -ENOMEM);
                goto out;
        }
        tp[0] = gpu_now_ns();
        (void)devmem_alloc_ns_take();
        if ((rc = grow_sets(r, s, ts, 1)) || (rc = wait_all(r)))
                goto out;
        /* warm-up: one execution per trial, checked, its samples kept for one
         * decision: a candidate that the warm-up pairs already show far slower
         * than the reference (timing_too_slow(), the loop's own rule) stops
         * here, with those samples; otherwise they are dropped, and the last
         * pair's times choose the executions per trial */
        t_start = tp[1] = gpu_now_ns();
        for (int64_t w = 0; w < job->warmup; w++)
                if ((rc = timed_batch(r, si, ts, 1, true, &n)))
                        goto out;
        if (job->warmup > 0) {
                if (timing_stats_compute(ts->cs, n, &cst) || timing_stats_compute(ts->rs, n, &rst)) {
                        rc = fail_gpu(r, -ENOMEM);
                        goto out;
                }
                if (timing_too_slow(n, cst.median, rst.median))
                        stop = TIMING_STOP_TOO_SLOW;
                else
                        n = 0;
        }
        if (job->warmup > 0 && stop == TIMING_GO_ON) {
                double c = 0, f = 0;
                pair_ms = (double)(gpu_now_ns() - t_start) / 1e6 / (double)job->warmup;
                r->side = SIDE_HELPER;
                if ((rc = gpu_event_elapsed_ms(ev_pool[0], ev_pool[1], &c)) ||
                    (rc = gpu_event_elapsed_ms(ev_pool[2], ev_pool[3], &f))) {
                        rc = fail_gpu(r, rc);
                        goto out;
                }
                ts->per = choose_per(s, c, f, job->target_precision);
                tp[2] = gpu_now_ns();
                if (ts->per > 1) {
                        if ((rc = grow_sets(r, s, ts, ts->per)) || (rc = wait_all(r)))
                                goto out;
                        t_graphs[0] = gpu_now_ns();
                        capture_side(r, si, ts, SIDE_CAND);
                        capture_side(r, si, ts, SIDE_REF);
                        t_graphs[1] = gpu_now_ns();
                        if ((rc = timed_batch(r, si, ts, 1, false, &n)))
                                goto out;
                        pair_ms *= ts->per;
                }
        }
        tp[3] = gpu_now_ns();
        pair_slots = (size_t)ts->per * (size_t)out_buffers(s);
        max_b = pair_slots ? DEVMEM_TALLY_SLOTS / pair_slots : EV_PAIRS;
        if (max_b > EV_PAIRS)
                max_b = EV_PAIRS;
        if (max_b < 1)
                max_b = 1; /* choose_per() keeps per * outputs within the tally */
        t_start = gpu_now_ns();
        while (stop == TIMING_GO_ON) {
                size_t b = timing_batch_size(&pol, n, elapsed, pair_ms);
                int64_t t_batch = gpu_now_ns();
                if (b > max_b)
                        b = max_b;
                if ((rc = timed_batch(r, si, ts, b, true, &n)))
                        goto out;
                pair_ms = (double)(gpu_now_ns() - t_batch) / 1e6 / (double)b;
                elapsed = (double)(gpu_now_ns() - t_start) / 1e6;
                if (timing_stats_compute(ts->cs, n, &cst) || timing_stats_compute(ts->rs, n, &rst)) {
                        rc = fail_gpu(r, -ENOMEM);
                        goto out;
                }
                stop = timing_should_stop(&pol, n, elapsed, cst.precision, rst.precision, cst.median, rst.median);
                if (gpu_now_ns() > gpu_deadline_get() && stop == TIMING_GO_ON)
                        stop = TIMING_STOP_BUDGET;
        }
        r->phase = "timing";
        r->trial = -1;
        tp[4] = gpu_now_ns();
        if ((rc = final_checks(r, s, ts)))
                goto out;
        min_ms = roofline_min_ms(r, s);
        speedup = cst.median > 0 ? rst.median / cst.median : 0;
        {
                bool sus = min_ms > 0 && cst.median < 0.5 * min_ms;
                json_t *roof = json_pack("{s:o, s:b}", "min_ms", min_ms > 0 ? json_real(min_ms) : json_null(),
                                         "suspicious", sus);
                if (sus)
                        r->suspicious = true;
                json_array_append_new(shapes_out,
                                      json_pack("{s:s, s:o, s:o, s:o, s:s, s:o, s:i, s:I, s:s}", "shape", s->name,
                                                "candidate", stats_json(&cst), "reference", stats_json(&rst),
                                                "speedup", jfinite(speedup > 0 ? speedup : NAN), "stop",
                                                timing_stop_name(stop), "roofline", roof, "launches_per_trial",
                                                ts->per, "runs_checked", (json_int_t)ts->checked, "inputs",
                                                "fresh per run"));
                json_object_set_new(json_array_get(shapes_out, json_array_size(shapes_out) - 1), "launched_as",
                                    json_pack("{s:s, s:s}", "candidate", ts->graph[SIDE_CAND] ? "graph" : "stream",
                                              "reference", ts->graph[SIDE_REF] ? "graph" : "stream"));
                /* where the shape set's timing went: first buffer set, warm-up pairs, the
                 * other sets (with the first pair on them), of which the graphs' capture
                 * and instantiation, the driver allocations of setup and sets (pool
                 * misses), the timed pairs, the final guard and input checks */
                if (!tp[2])
                        tp[2] = tp[3];
                json_object_set_new(json_array_get(shapes_out, json_array_size(shapes_out) - 1), "phases_ms",
                                    json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "setup", (double)(tp[1] - tp[0]) / 1e6,
                                              "warmup", (double)(tp[2] - tp[1]) / 1e6, "sets",
                                              (double)(tp[3] - tp[2]) / 1e6, "graphs",
                                              (double)(t_graphs[1] - t_graphs[0]) / 1e6, "alloc",
                                              (double)devmem_alloc_ns_take() / 1e6, "pairs",
                                              (double)(tp[4] - tp[3]) / 1e6, "final_checks",
                                              (double)(gpu_now_ns() - tp[4]) / 1e6));
        }
        *ret_speedup = speedup;
        drop_graphs(ts);
        rc = free_sets(r, ts);
out:
        if (ts) {
                drop_graphs(ts);
                free(ts->cs);
                free(ts->rs);
                free(ts);
        }
        return rc;
}

/* ----------------------------------------------------------------- run -- */

/** judge_gpu_json() - the result's "gpu" object; new reference. */
json_t *judge_gpu_json(const GpuInfo *info)
{
        char cc[16];

        snprintf(cc, sizeof(cc), "%d.%d", info->cc_major, info->cc_minor);
        return json_pack("{s:s, s:s, s:s, s:i}", "name", info->name, "driver", info->driver, "cc", cc, "index",
                         info->index);
}

static void mark_revalidated(json_t *corr_shapes, int si, bool ok)
{
        json_t *o = json_array_get(corr_shapes, (size_t)si);

        if (o)
                json_object_set_new(o, "revalidated", json_boolean(ok));
}

/**
 * judge_run() - evaluate one JOB
 * @env: the worker's device and helpers; borrowed
 * @job_json: the JOB; borrowed
 * @blob, @blob_len: the frame's blob with both CUBINs; borrowed
 * @ret_outcome: the RESULT (new) and whether the process must exit
 * Return: 0 (the outcome is always filled, whatever the verdict).
 */
/*
 * Where the job's wall time went, in ms: load (modules, plans), correctness,
 * timing (and revalidation), cleanup. @t: when correctness, timing and
 * cleanup began (0: never). A phase the job never reached is absent.
 */
static json_t *phases_json(int64_t t0, const int64_t t[3], int64_t end)
{
        json_t *o = json_object();
        int64_t cleanup = t[2] ? t[2] : end;

#define PHASE(name, from, to) json_object_set_new(o, (name), json_real((double)((to) - (from)) / 1e6))
        PHASE("load", t0, t[0] ? t[0] : cleanup);
        if (t[0])
                PHASE("correctness", t[0], t[1] ? t[1] : cleanup);
        if (t[1])
                PHASE("timing", t[1], cleanup);
        if (t[2])
                PHASE("cleanup", t[2], end);
#undef PHASE
        return o;
}

int judge_run(const JudgeEnv *env, json_t *job_json, const uint8_t *blob, size_t blob_len, JudgeOutcome *ret_outcome)
{
        Run run;
        Run *r = &run;
        GpuJob *job = NULL;
        char err[512];
        int64_t t0 = gpu_now_ns();
        json_t *corr_shapes = json_array(), *timing = json_null(), *resources = json_array(), *result;
        double speedups[LIMIT_TASK_SHAPES_MAX];
        int rc, n_timed = 0;
        int64_t t_phase[3] = { 0 }; /* when correctness, timing and cleanup began (0: never) */

        memset(r, 0, sizeof(*r));
        r->env = env;
        r->phase = "load";
        r->shape = r->trial = r->launch = -1;
        r->side = SIDE_HELPER;
        rc = gpu_job_parse(job_json, blob_len, &job, err, sizeof(err));
        if (rc) {
                if (rc < 0)
                        fail_gpu(r, rc);
                else
                        fail(r, "internal_error", "internal", "malformed job: %s", err);
                goto done;
        }
        r->job = job;
        for (int si = 0; si < job->n_shapes; si++)
                r->shape_limit_ms[si] = job->launch_timeout_ms; /* until calibrate_limit() */
        (void)gpu_activity_take(); /* what came before this job is not its activity */
        r->salt = (uint32_t)kv_mix64(job->seed ^ 0x6775617264ull);
        gpu_deadline_set(t0 + job->deadline_ms * 1000000LL);

        /* load */
        if (load_module(r, blob, job->cand_off, job->cand_size, &r->cand_mod) ||
            (job->ref_size > 0 && load_module(r, blob, job->ref_off, job->ref_size, &r->ref_mod)))
                goto cleanup;
        if (gpu_elf_globals(blob + job->cand_off, job->cand_size, &r->cand_globals) < 0) {
                fail_gpu(r, -ENOMEM);
                goto cleanup;
        } /* GPU_ELF_E_MALFORMED (not a plain CUBIN): nothing listed to zero */
        if (job->fenced_size > 0) {
                rc = fenced_open(&r->fence, blob + job->fenced_off, job->fenced_size);
                if (rc != 0 && rc != FENCED_E_UNUSABLE) {
                        fail_gpu(r, rc);
                        goto cleanup;
                }
                r->fence_on = rc == 0;
        }
        /* The reference first: a dump (kevald eval --dump) needs only the
         * reference side, and must not depend on the candidate's plan. */
        for (int si = 0; si < job->n_shapes; si++) {
                r->shape = si;
                if (load_side(r, si, SIDE_REF))
                        goto cleanup;
        }
        r->shape = -1;
        if (job->dump && env->dump && dump_all(r))
                goto cleanup;
        for (int si = 0; si < job->n_shapes; si++) {
                r->shape = si;
                if (load_side(r, si, SIDE_CAND) || (r->fence_on && load_fenced_side(r, si)))
                        goto cleanup;
        }
        r->shape = -1;
        json_decref(resources);
        resources = resources_json(r);

        /* correctness */
        t_phase[0] = gpu_now_ns();
        for (int si = 0; si < job->n_shapes; si++)
                if (correctness_shape(r, si, corr_shapes))
                        goto cleanup;

        /* the plain build goes on from the fenced one's __device__ state */
        if (fence_state(r, false))
                goto cleanup;

        /* timing and revalidation */
        t_phase[1] = gpu_now_ns();
        {
                json_t *tshapes = json_array();
                /* "first": correctness on every shape set, timing on the first
                 * (the largest by the library's convention; a launch-bound tiny
                 * set says little about speed and costs as many trials) */
                int n_time = job->time_first_only ? 1 : job->n_shapes;
                for (int si = 0; si < n_time; si++) {
                        double left_ms = (double)(gpu_deadline_get() - gpu_now_ns()) / 1e6;
                        double budget = job->budget_ms / n_time;
                        double cap = left_ms * 0.5 / (n_time - si);
                        if (budget > cap)
                                budget = cap > 0 ? cap : 0;
                        rc = time_shape(r, si, budget, tshapes, &speedups[si]);
                        if (rc == 0)
                                mark_revalidated(corr_shapes, si, true);
                        else if (r->error && strcmp(json_string_value(json_object_get(r->error, "phase")),
                                                    "revalidation") == 0)
                                mark_revalidated(corr_shapes, si, false);
                        if (rc) {
                                json_decref(tshapes);
                                goto cleanup;
                        }
                        n_timed++;
                }
                json_decref(timing);
                timing = json_pack("{s:o, s:o, s:b}", "speedup", jfinite(timing_geomean(speedups, (size_t)n_timed)),
                                   "shapes", tshapes, "suspicious", r->suspicious);
                if (r->suspicious)
                        json_object_set_new(timing, "note",
                                            json_string("the candidate ran faster than half the roofline bound "
                                                        "(flops/peak, bytes/bandwidth) for at least one shape set; "
                                                        "the verdict is unchanged, but the timing deserves a look"));
        }
        r->verdict = "correct";

cleanup:
        t_phase[2] = gpu_now_ns();
        r->phase = "cleanup";
        if (!r->must_exit) {
                /* zero and free everything, then unload; a hang here is fatal */
                int64_t saved = gpu_deadline_get();
                gpu_deadline_set(gpu_now_ns() + CLEANUP_NS);
                r->side = SIDE_HELPER;
                rc = r->cand_mod ? zero_globals(r, r->cand_mod, &r->cand_globals) : 0;
                if (rc == 0 && r->fence.mod)
                        rc = zero_globals(r, r->fence.mod, &r->fence.globals);
                if (rc == 0)
                        rc = devmem_free_all();
                if (rc) {
                        log_error("gpu: job %" PRId64 ": cleanup failed (%s); exiting after the result", job->id,
                                  rc == GPU_E_TIMEOUT ? "timeout" : gpu_error_last()->name);
                        if (!r->verdict || strcmp(r->verdict, "correct") == 0) {
                                r->verdict = NULL;
                                fail_gpu(r, rc);
                        }
                        r->must_exit = true;
                        if (!r->exit_code)
                                r->exit_code = rc == GPU_E_TIMEOUT ? 4 : 3;
                } else {
                        gpu_module_unload(r->cand_mod);
                        gpu_module_unload(r->ref_mod);
                        fenced_close(&r->fence);
                }
                gpu_deadline_set(saved);
        }
        for (int si = 0; si < LIMIT_TASK_SHAPES_MAX; si++) {
                free(r->kern[si][0]);
                free(r->kern[si][1]);
                free(r->fkern[si]);
        }
done:
        result = json_object();
        json_object_set_new(result, "id", json_integer(job ? job->id : json_integer_value(json_object_get(job_json, "id"))));
        json_object_set_new(result, "verdict", json_string(r->verdict ? r->verdict : "internal_error"));
        json_object_set_new(result, "correctness",
                            json_pack("{s:b, s:o, s:b}", "passed", r->verdict && strcmp(r->verdict, "correct") == 0,
                                      "shapes", corr_shapes, "fenced",
                                      r->launches_fenced > 0 && r->launches_unfenced == 0));
        json_object_set_new(result, "timing", timing);
        json_object_set_new(result, "resources", resources);
        json_object_set_new(result, "error", r->error ? r->error : json_null());
        json_object_set_new(result, "gpu", judge_gpu_json(env->info));
        json_object_set_new(result, "gpu_busy_ms", json_real(r->busy_ms));
        json_object_set_new(result, "gpu_active_ms", json_real(gpu_activity_take()));
        json_object_set_new(result, "cleanup", json_pack("{s:I, s:i, s:i}", "allocations_left",
                                                         (json_int_t)devmem_live_count(), "globals_zeroed",
                                                         r->globals_zeroed, "globals_missed", r->globals_missed));
        gpu_elf_globals_clear(&r->cand_globals);
        gpu_elf_globals_clear(&r->fence.globals);
        json_object_set_new(result, "wall_ms", json_real((double)(gpu_now_ns() - t0) / 1e6));
        json_object_set_new(result, "late_waits", json_integer(r->late_runs));
        json_object_set_new(result, "phases_ms", phases_json(t0, t_phase, gpu_now_ns()));
        if (job)
                json_object_set_new(result, "seed", json_string(job->seed_text));
        ret_outcome->result = result;
        ret_outcome->must_exit = r->must_exit;
        ret_outcome->exit_code = r->exit_code;
        gpu_job_free(job);
        gpu_deadline_set(INT64_MAX);
        return 0;
}
