/*
 * judge_check - the correctness phase (judge.h, steps 1-5): the device
 * checks of guard bands, inputs, outputs and determinism, queued into diff
 * slots and read back in one copy, and the per-shape report. The timing
 * phase's revalidation uses the same guard and input checks.
 */
#include "worker/gpu/judge_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "worker/gpu/devrng.h"

/* Correctness trials per shape set that run the fenced build; the rest run
 * the plain one. The first trial is where a kernel's bad accesses show (the
 * RL corpus: all of them); later trials differ only in their inputs, and the
 * fenced build costs up to ~2x on loop-heavy kernels (BENCHMARKS.md). */
#define FENCE_TRIALS 1

/* Per output buffer, aggregated over the trials of one shape set. */
typedef struct BufAgg {
        double max_abs, max_rel;
        uint64_t mismatches, nan_inf;
        json_t *first;  /* first_mismatches of the failing trial, or NULL */
} BufAgg;

/* A JSON number, or a string for what JSON cannot hold ("nan", "inf", "-inf"). */
static json_t *jnum(double v)
{
        if (isnan(v))
                return json_string("nan");
        if (isinf(v))
                return json_string(v > 0 ? "inf" : "-inf");
        return json_real(v);
}

/* ------------------------------------------------------------- checks -- */

/* Queue the guard checks of @set into diff slots from *@slot on (two per buffer). */
int judge_check_queue_guards(Run *r, const BufSet *set, unsigned *slot)
{
        r->side = SIDE_HELPER;
        for (int i = 0; i < set->n; i++, *slot += 2)
                TRY_GPU(r, devmem_check_guards(*slot, &set->b[i], r->salt));
        return 0;
}

/* The verdict of @set's guard checks, read into @d (judge_check_queue_guards() order). */
int judge_check_guards_verdict(Run *r, const JobShape *s, const JobSide *side, const BufSet *set, const KvDiff *d)
{
        for (int i = 0; i < set->n; i++) {
                const JobBuffer *b = gpu_job_side_buffer(s, side, i);
                DevGuardReport g;
                devmem_guard_report(&set->b[i], &d[2 * i], &d[2 * i + 1], &g);
                if (g.after_bytes)
                        return judge_fail_with(r, "incorrect", "guard",
                                               json_pack("{s:s, s:s, s:I, s:I, s:I}", "buffer", b->name, "where", "after",
                                                         "bytes", (json_int_t)g.after_bytes, "first_offset",
                                                         (json_int_t)g.after_first, "last_offset", (json_int_t)g.after_last),
                                               "out-of-bounds write: %" PRIu64 " byte(s) changed after the end of buffer '%s' "
                                               "(%" PRIu64 " bytes, %" PRIu64 " elements), from %" PRIu64 " to %" PRIu64
                                               " bytes past its end",
                                               g.after_bytes, b->name, b->bytes, b->count, g.after_first, g.after_last);
                if (g.before_bytes)
                        return judge_fail_with(r, "incorrect", "guard",
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
int judge_check_queue_inputs(Run *r, const JobShape *s, const BufSet *cand, const BufSet *ref, unsigned *slot)
{
        return queue_bits(r, s, cand, ref, true, slot);
}

int judge_check_inputs_verdict(Run *r, const JobShape *s, const KvDiff *d)
{
        for (int i = 0, k = 0; i < s->n_buffers; i++) {
                const JobBuffer *b = &s->buffers[i];
                uint64_t el;
                if (b->role != JOB_ROLE_IN || d[k++].count == 0)
                        continue;
                el = d[k - 1].first / (uint64_t)kv_dtype_size(b->dtype);
                return judge_fail_with(r, "incorrect", "input_mutation",
                                       json_pack("{s:s, s:I, s:I}", "buffer", b->name, "bytes", (json_int_t)d[k - 1].count,
                                                 "first_index", (json_int_t)el),
                                       "the candidate wrote into input buffer '%s': %" PRIu64
                                       " byte(s) differ from the generated input, first in element %" PRIu64,
                                       b->name, (uint64_t)d[k - 1].count, el);
        }
        return 0;
}

/* Read back diff slots [0, @n) into @d (waits). */
int judge_check_fetch(Run *r, unsigned n, KvDiff *d)
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

        if ((rc = judge_check_queue_guards(r, set, &n)) || (rc = judge_check_fetch(r, n, d)))
                return rc;
        return judge_check_guards_verdict(r, s, side, set, d);
}

/* The candidate's `in` buffers must equal a fresh regeneration (in @ref). */
static int check_inputs(Run *r, const JobShape *s, const BufSet *cand, const BufSet *ref)
{
        KvDiff d[MAX_SET];
        unsigned n = 0;
        int rc;

        if ((rc = judge_check_queue_inputs(r, s, cand, ref, &n)) || (rc = judge_check_fetch(r, n, d)))
                return rc;
        return judge_check_inputs_verdict(r, s, d);
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
                        return judge_fail_gpu(r, rc);
                }
                json_array_append_new(list, json_pack("{s:I, s:o, s:o}", "index", (json_int_t)idx, "got", g, "want", w));
                if (n + 1 < LIMIT_FIRST_MISMATCHES) {
                        int rc2 = devmem_mismatch_from(got, want, p, idx + 1, &idx);
                        if (rc2) {
                                json_decref(list);
                                return judge_fail_gpu(r, rc2);
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
                        rc = judge_fail_with(r, "incorrect", "mismatch",
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

        if ((rc = queue_bits(r, s, a, b, false, &n)) || (rc = judge_check_fetch(r, n, diffs)))
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
                return judge_fail_with(r, "incorrect", "nondeterministic",
                                       json_pack("{s:s, s:I, s:I}", "buffer", bf->name, "bytes", (json_int_t)d.count,
                                                 "first_index", (json_int_t)el),
                                       "two runs of the candidate on the same inputs disagree in output '%s': %" PRIu64
                                       " byte(s) differ, first in element %" PRIu64 " (a race, or state kept between launches)",
                                       bf->name, (uint64_t)d.count, el);
        }
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
                rc = judge_fail_gpu(r, -ENOMEM);
                goto out;
        }
        /* 1-2: the candidate first, on guarded buffers */
        if ((rc = judge_plan_alloc(r, s, &s->cand, true, a)) ||
            (rc = judge_plan_prepare(r, s, &s->cand, a, seed, true)) ||
            (rc = judge_wait_all(r)) || (rc = judge_plan_run(r, si, SIDE_CAND, a, true)))
                goto out;
        /* 3: guard bands */
        if ((rc = check_guards(r, s, &s->cand, a))) {
                rep->guard_ok = 0;
                goto out;
        }
        passed(&rep->guard_ok);
        /* 4: fresh inputs for the reference; they also witness the candidate's inputs */
        if ((rc = judge_plan_alloc(r, s, &s->ref, false, ref)) ||
            (rc = judge_plan_prepare(r, s, &s->ref, ref, seed, false)) ||
            (rc = judge_wait_all(r)))
                goto out;
        if ((rc = check_inputs(r, s, a, ref))) {
                rep->inputs_intact = 0;
                goto out;
        }
        passed(&rep->inputs_intact);
        if ((rc = judge_plan_run(r, si, SIDE_REF, ref, true)))
                goto out;
        if ((rc = check_outputs(r, s, a, ref, rep->agg)))
                goto out;
        if ((rc = judge_plan_free(r, ref)))
                goto out;
        /* 5: again from the same seed, fresh poison: the bits must agree */
        if ((rc = judge_plan_alloc(r, s, &s->cand, true, b)) ||
            (rc = judge_plan_prepare(r, s, &s->cand, b, seed, true)) ||
            (rc = judge_wait_all(r)) || (rc = judge_plan_run(r, si, SIDE_CAND, b, true)))
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
        if ((rc = judge_plan_free(r, b)) || (rc = judge_plan_free(r, a)))
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
                return judge_fail_gpu(r, -ENOMEM);
        r->trial = 0;
        if ((rc = judge_plan_alloc(r, s, &s->ref, false, set)) ||
            (rc = judge_plan_prepare(r, s, &s->ref, set, kv_trial_seed(job->seed, (uint32_t)si, 0), false)) ||
            (rc = judge_wait_all(r)))
                goto out;
        /* cuBLAS loads a kernel at its first use, between the events of that
         * run: a side with a library step is run once more, and timed then */
        for (int i = judge_plan_has_gemm(&s->ref) ? 2 : 1; i > 0 && rc == 0; i--) {
                before = r->busy_ms;
                rc = judge_plan_run(r, si, SIDE_REF, set, true);
        }
        if (rc || (rc = judge_plan_free(r, set)))
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

int judge_check_shape(Run *r, int si, json_t *shapes_out)
{
        const JobShape *s = &r->job->shapes[si];
        ShapeReport *rep = calloc(1, sizeof(*rep));
        int rc = 0;

        if (!rep)
                return judge_fail_gpu(r, -ENOMEM);
        rep->guard_ok = rep->inputs_intact = rep->deterministic = -1;
        r->shape = si;
        r->phase = "correctness";
        if (r->env->progress)
                r->env->progress(r->env->progress_userdata, r->job->id, "correctness", s->name);
        rc = calibrate_limit(r, si);
        for (int t = 0; t < r->job->trials && rc == 0; t++) {
                /* the first trial fenced (FENCE_TRIALS), the others plain: see docs/internals.md */
                r->fencing = r->fence_on && t < FENCE_TRIALS;
                rc = judge_fence_state(r, r->fencing);
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