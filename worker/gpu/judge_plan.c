/*
 * judge_plan - buffer sets and plans (judge_int.h): a set holds one side's
 * buffers of one shape set; preparing it generates the inputs from a seed,
 * poisons a candidate's outputs, zeroes scratch and fills the canaries;
 * running a plan launches one side's steps on a set, through the fence
 * while a fenced trial runs.
 */
#include "worker/gpu/judge_int.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "common/log.h"
#include "worker/gpu/blas.h"
#include "worker/gpu/devrng.h"

/* ------------------------------------------------------------- buffers -- */

int judge_plan_alloc(Run *r, const JobShape *s, const JobSide *side, bool guards, BufSet *set)
{
        int total = s->n_buffers + side->n_scratch, saved = r->side;

        memset(set, 0, sizeof(*set));
        r->side = SIDE_HELPER;
        for (int i = 0; i < total; i++) {
                const JobBuffer *b = gpu_job_side_buffer(s, side, i);
                int rc = devmem_alloc(b->bytes, guards ? DEVMEM_GUARD_BYTES : 0, &set->b[i]);
                if (gpu_out_of_memory(rc))
                        return judge_fail_with(r, "runtime_error", "cuda",
                                               json_pack("{s:s, s:s, s:b, s:s, s:I}", "name", "CUDA_ERROR_OUT_OF_MEMORY",
                                                         "call", "cuMemAlloc", "sticky", 0, "buffer", b->name, "bytes",
                                                         (json_int_t)b->bytes),
                                               "CUDA_ERROR_OUT_OF_MEMORY: cannot allocate %" PRIu64
                                               " bytes for buffer '%s' (%" PRIu64 " bytes already allocated for this job)",
                                               b->bytes, b->name, devmem_live_bytes());
                if (rc)
                        return judge_fail_gpu(r, rc);
                set->n++;
        }
        r->side = saved;
        return 0;
}

/* Free a set (zeroed first); failures leave the rest to cleanup. */
int judge_plan_free(Run *r, BufSet *set)
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
 * they are (zeroed at judge_plan_prepare() and by every wipe). Asynchronous. */
int judge_plan_inputs(Run *r, const JobShape *s, const JobSide *side, BufSet *set, uint64_t seed, bool cand)
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
int judge_plan_batch_end(Run *r, int rc)
{
        int e = devmem_batch_end();

        r->side = SIDE_HELPER;
        return rc ? rc : e ? judge_fail_gpu(r, e) : 0;
}

static int set_prepare_ops(Run *r, const JobShape *s, const JobSide *side, BufSet *set, uint64_t seed, bool cand)
{
        int total = s->n_buffers + side->n_scratch, rc;

        if ((rc = judge_plan_inputs(r, s, side, set, seed, cand)))
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
int judge_plan_prepare(Run *r, const JobShape *s, const JobSide *side, BufSet *set, uint64_t seed, bool cand)
{
        devmem_batch_begin();
        return judge_plan_batch_end(r, set_prepare_ops(r, s, side, set, seed, cand));
}

/* -------------------------------------------------------------- plans -- */

int judge_plan_launch_step(Run *r, const JobShape *s, const JobSide *side, GpuKernel *k, const JobStep *st,
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

bool judge_plan_has_gemm(const JobSide *side)
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
                        return judge_fail_gpu(r, rc);
        }
        extra = fence_report(rec, bufs, n, r->kernel ? r->kernel : "?", fn,
                             "kernel.cu", msg, sizeof(msg));
        if (!extra)
                return judge_fail_gpu(r, -ENOMEM);
        if (fence_site_kind(rec->site) == FENCE_KIND_HANG) {
                double ref_ms = 0;
                int64_t limit = judge_launch_limit(r, &ref_ms);
                json_object_del(extra, "name");
                json_object_set_new(extra, "launch_limit_ms", json_integer((json_int_t)limit));
                if (ref_ms > 0)
                        json_object_set_new(extra, "reference_ms", json_real(ref_ms));
                return judge_fail_with(r, "timeout", "timeout", extra,
                                       "the GPU work did not finish within the launch time limit of %" PRId64
                                       " ms per plan execution: %s", limit, msg);
        }
        return judge_fail_with(r, "runtime_error", "cuda", extra, "%s: %s", fence_error_name(rec->site), msg);
}

/*
 * Run one side's plan. With @wait_each every launch is bracketed by events
 * and waited for (exact blame; its GPU time is added to busy_ms); otherwise
 * the launches are only enqueued.
 */
int judge_plan_run(Run *r, int si, int side_idx, const BufSet *set, bool wait_each)
{
        const JobShape *s = &r->job->shapes[si];
        const JobSide *side = side_idx == SIDE_CAND ? &s->cand : &s->ref;
        bool fenced = wait_each && side_idx == SIDE_CAND && r->fencing && r->fkern[si];
        GpuKernel **ks = fenced ? r->fkern[si] : r->kern[si][side_idx];

        if (fenced) {
                FenceBuffer bufs[MAX_SET];
                /* a thread that runs longer than the launch limit means the launch did */
                int rc = fenced_arm(&r->fence, bufs, fence_buffers(s, set, bufs),
                                    (uint64_t)judge_launch_limit(r, NULL) * 1000000u);
                r->side = SIDE_HELPER;
                if (rc == FENCED_E_UNUSABLE) { /* more ranges than the table holds */
                        log_info("gpu: job %" PRId64 ": more ranges than the fence's table holds; shape set %d "
                                 "runs unfenced", r->job->id, si);
                        fenced = false;
                        ks = r->kern[si][side_idx];
                } else if (rc) {
                        return judge_fail_gpu(r, rc);
                }
        }
        for (int j = 0; j < side->n_steps; j++) {
                double ms = 0;
                FenceRecord rec;
                r->side = side_idx;
                r->launch = j;
                r->kernel = side->steps[j].kernel;
                if (wait_each)
                        TRY_GPU(r, gpu_event_record(judge_ev_a));
                TRY_GPU(r, judge_plan_launch_step(r, s, side, ks[j], &side->steps[j], set));
                if (side_idx == SIDE_CAND && r->fencing && side->steps[j].kind != JOB_STEP_GEMM) {
                        if (fenced && ks[j] != r->kern[si][side_idx][j])
                                r->launches_fenced++;
                        else
                                r->launches_unfenced++;
                }
                if (fenced)
                        TRY_GPU(r, fenced_fetch(&r->fence));
                if (wait_each) {
                        TRY_GPU(r, gpu_event_record(judge_ev_b));
                        TRY_GPU(r, judge_wait_bounded(r, judge_ev_b, judge_launch_limit(r, NULL)));
                        TRY_GPU(r, gpu_event_elapsed_ms(judge_ev_a, judge_ev_b, &ms));
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
        if (wait_each && side_idx == SIDE_REF && judge_plan_has_gemm(side))
                TRY_GPU(r, blas_wipe());
        return 0;
}
