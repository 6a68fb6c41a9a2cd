/*
 * judge - the job's flow (see judge.h for the theory of operation and
 * judge_int.h for how the judge's files divide the work): load both
 * builds, dump, correctness (judge_check.c), timing (judge_timing.c),
 * cleanup, the RESULT; the failure recorders and the bounded waits every
 * phase uses. Buffers left allocated by a failure are zeroed and freed by
 * devmem_free_all() in cleanup.
 */
#include "worker/gpu/judge_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/limits.h"
#include "common/log.h"
#include "worker/gpu/blas.h"
#include "worker/gpu/devmem.h"
#include "worker/gpu/devrng.h"
#include "worker/exitcode.h"
#include "worker/gpu/fenced.h"
#include "worker/gpu/gpu_elf.h"
#include "worker/gpu/gpu_job.h"
#include "worker/gpu/timing.h"

#define CLEANUP_NS (20LL * 1000000000LL)

GpuEvent *judge_ev_pool[EV_PAIRS * 4];
GpuEvent *judge_ev_a, *judge_ev_b;

/**
 * judge_init() - create the events the judge uses (before the sandbox
 * locks). Return: 0, GPU_E_CUDA.
 */
int judge_init(void)
{
        int r;

        for (size_t i = 0; i < sizeof(judge_ev_pool) / sizeof(judge_ev_pool[0]); i++)
                if ((r = gpu_event_create(&judge_ev_pool[i])))
                        return r;
        if ((r = gpu_event_create(&judge_ev_a)) || (r = gpu_event_create(&judge_ev_b)))
                return r;
        if (fenced_init())
                log_warn("gpu: no page-locked buffer for fenced builds; the plain build runs in every phase");
        return 0;
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

/**
 * judge_fail_with() - record the verdict and an error of @kind (first
 * failure wins), with where the run is.
 * @extra: more members for the error object; stolen (may be NULL)
 * Return: JUDGE_STOP.
 */
int judge_fail_with(Run *r, const char *verdict, const char *kind, json_t *extra, const char *fmt, ...)
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

/* The limit of one plan execution for the shape set being judged (the
 * ceiling outside one); @ret_ref_ms: the reference time it came from, or 0. */
int64_t judge_launch_limit(const Run *r, double *ret_ref_ms)
{
        bool in_shape = r->shape >= 0 && r->shape < r->job->n_shapes;

        if (ret_ref_ms)
                *ret_ref_ms = in_shape ? r->shape_ref_ms[r->shape] : 0;
        return in_shape ? r->shape_limit_ms[r->shape] : r->job->launch_timeout_ms;
}

/* Turn a gpu.h/devmem.h return code into the job's verdict. */
int judge_fail_gpu(Run *r, int rc)
{
        const GpuError *e = gpu_error_last();
        const char *verdict;
        json_t *extra;

        if (rc < 0)
                return fail(r, "internal_error", "internal", "worker failure: %s", strerror(-rc));
        if (rc == GPU_E_TIMEOUT) {
                double ref_ms = 0;
                int64_t limit = r->launch_limit_hit ? judge_launch_limit(r, &ref_ms) : 0;
                r->must_exit = true;
                r->exit_code = WORKER_EXIT_TIMEOUT;
                if (r->launch_limit_hit && ref_ms > 0)
                        return judge_fail_with(r, "timeout", "timeout",
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
                        return judge_fail_with(r, "timeout", "timeout",
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
                r->exit_code = WORKER_EXIT_STICKY;
        }
        /* The candidate is the only untrusted code: sticky faults and whatever
         * happens while it runs or while its memory is allocated are its
         * runtime errors; other failures of trusted code are ours. */
        if (r->side == SIDE_CAND || e->sticky || strcmp(e->name, "CUDA_ERROR_OUT_OF_MEMORY") == 0)
                verdict = "runtime_error";
        else
                verdict = "internal_error";
        extra = json_pack("{s:s, s:s, s:b}", "name", e->name, "call", e->where, "sticky", e->sticky);
        if (r->fault_waited) { /* this error surfaced in the last judge_wait_bounded() */
                r->fault_waited = false;
                json_object_set_new(extra, "surfaced_ms", json_real(round(r->fault_wait_ms * 10) / 10));
                json_object_set_new(extra, "after_limit", json_boolean(r->fault_late));
                if (r->fault_late) /* what the dispatcher sizes the grace from (dispatch.c) */
                        json_object_set_new(extra, "grace_used_ms", json_real(round(r->fault_grace_ms * 10) / 10));
        }
        return judge_fail_with(r, verdict, "cuda", extra, "%s: %s (in %s)", e->name, e->message, e->where);
}

/*
 * Wait for @ev, giving the GPU at most @allowed_ms (and never past the job's
 * deadline). When that limit passes, wait fault_grace_ms more: the driver
 * reports a fault up to a few hundred milliseconds late, and a fault must
 * be named as one (runtime_error with the CUDA error), not as a timeout; a
 * kernel that completes within the grace is slow, and goes on to be judged.
 * Return: as gpu_event_wait(); r->launch_limit_hit says whether a timeout
 * came from the launch limit (and its grace) rather than the job deadline.
 */
int judge_wait_bounded(Run *r, GpuEvent *ev, int64_t allowed_ms)
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

int judge_wait_all(Run *r)
{
        int saved = r->side;

        r->side = SIDE_HELPER;
        TRY_GPU(r, gpu_stream_wait());
        r->side = saved;
        return 0;
}

/* ---------------------------------------------------------------- load -- */

static int load_module(Run *r, const uint8_t *blob, size_t off, size_t size, GpuModule **ret)
{
        int rc = gpu_module_load(blob + off, size, ret);

        return rc ? judge_fail_gpu(r, rc) : 0;
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
                return judge_fail_gpu(r, -ENOMEM);
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
                return judge_fail_gpu(r, -ENOMEM);
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
                        return judge_fail_gpu(r, rc);
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

/*
 * Make the build that runs next (@fenced or plain) hold the candidate's
 * __device__ state, copying it over from the other build if that one ran
 * last. Return: 0 or JUDGE_STOP.
 */
int judge_fence_state(Run *r, bool fenced)
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

/* ---------------------------------------------------------------- dump -- */

static int dump_buffer(Run *r, const JobShape *s, const JobBuffer *b, GpuPtr ptr, const char *when)
{
        for (uint64_t off = 0; off < b->bytes || off == 0; off += DEVMEM_CHUNK_BYTES) {
                size_t n = b->bytes - off < DEVMEM_CHUNK_BYTES ? (size_t)(b->bytes - off) : DEVMEM_CHUNK_BYTES;
                const void *view = NULL;
                int rc;
                if (n && (rc = devmem_read_chunk(ptr + off, n, &view)))
                        return judge_fail_gpu(r, rc);
                if ((rc = r->env->dump(r->env->progress_userdata, r->job->id, s->name, b->name, when, off, b->bytes,
                                       view, n)) < 0)
                        return judge_fail_gpu(r, rc);
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
                        return judge_fail_gpu(r, -ENOMEM);
                r->shape = si;
                r->trial = 0;
                if ((rc = judge_plan_alloc(r, s, &s->ref, false, set)) ||
                    (rc = judge_plan_prepare(r, s, &s->ref, set, kv_trial_seed(job->seed, (uint32_t)si, 0), false)) ||
                    (rc = judge_wait_all(r)))
                        goto next;
                for (int i = 0; i < s->n_buffers && rc == 0; i++)
                        if (s->buffers[i].role != JOB_ROLE_OUT)
                                rc = dump_buffer(r, s, &s->buffers[i], set->b[i].ptr, "input");
                if (rc || (rc = judge_plan_run(r, si, SIDE_REF, set, true)))
                        goto next;
                for (int i = 0; i < s->n_buffers && rc == 0; i++)
                        if (s->buffers[i].role != JOB_ROLE_IN)
                                rc = dump_buffer(r, s, &s->buffers[i], set->b[i].ptr, "output");
                if (rc == 0)
                        rc = judge_plan_free(r, set);
next:
                free(set);
        }
        r->shape = r->trial = -1;
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

/*
 * Cleanup: unless the worker must exit anyway, zero the candidate's
 * __device__ variables, zero and free every buffer (a hang here is fatal:
 * the worker exits after the result), and unload the modules; then free the
 * kernel tables.
 */
static void release_job(Run *r)
{
        int rc;

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
                        log_error("gpu: job %" PRId64 ": cleanup failed (%s); exiting after the result", r->job->id,
                                  rc == GPU_E_TIMEOUT ? "timeout" : gpu_error_last()->name);
                        if (!r->verdict || strcmp(r->verdict, "correct") == 0) {
                                r->verdict = NULL;
                                judge_fail_gpu(r, rc);
                        }
                        r->must_exit = true;
                        if (!r->exit_code)
                                r->exit_code = rc == GPU_E_TIMEOUT ? WORKER_EXIT_TIMEOUT : WORKER_EXIT_STICKY;
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
}

/**
 * judge_run() - evaluate one JOB
 * @env: the worker's device and helpers; borrowed
 * @job_json: the JOB; borrowed
 * @blob, @blob_len: the frame's blob with both CUBINs; borrowed
 * @ret_outcome: the RESULT (new) and whether the process must exit
 * Return: 0 (the outcome is always filled, whatever the verdict).
 */
int judge_run(const JudgeEnv *env, json_t *job_json, const uint8_t *blob, size_t blob_len, JudgeOutcome *ret_outcome)
{
        Run run;
        Run *r = &run;
        GpuJob *job = NULL;
        char err[512];
        int64_t t0 = gpu_now_ns();
        json_t *corr_shapes = json_array(), *timing = json_null(), *timed, *resources = json_array(), *result;
        int rc;
        int64_t t_phase[3] = { 0 }; /* when correctness, timing and cleanup began (0: never) */

        memset(r, 0, sizeof(*r));
        r->env = env;
        r->phase = "load";
        r->shape = r->trial = r->launch = -1;
        r->side = SIDE_HELPER;
        rc = gpu_job_parse(job_json, blob_len, &job, err, sizeof(err));
        if (rc) {
                if (rc < 0)
                        judge_fail_gpu(r, rc);
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
                judge_fail_gpu(r, -ENOMEM);
                goto cleanup;
        } /* GPU_ELF_E_MALFORMED (not a plain CUBIN): nothing listed to zero */
        if (job->fenced_size > 0) {
                rc = fenced_open(&r->fence, blob + job->fenced_off, job->fenced_size);
                if (rc != 0 && rc != FENCED_E_UNUSABLE) {
                        judge_fail_gpu(r, rc);
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
                if (judge_check_shape(r, si, corr_shapes))
                        goto cleanup;

        /* the plain build goes on from the fenced one's __device__ state */
        if (judge_fence_state(r, false))
                goto cleanup;

        /* timing and revalidation */
        t_phase[1] = gpu_now_ns();
        if (judge_timing_phase(r, corr_shapes, &timed))
                goto cleanup;
        json_decref(timing);
        timing = timed;
        r->verdict = "correct";

cleanup:
        t_phase[2] = gpu_now_ns();
        r->phase = "cleanup";
        release_job(r);
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
