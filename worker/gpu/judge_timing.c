/*
 * judge_timing - the timing phase (judge.h): per shape set, timed pairs of
 * candidate and reference runs on fresh inputs, every timed run's output
 * checked against the reference's (revalidation), the statistics
 * (worker/gpu/timing.h) and the roofline bound.
 */
#include "worker/gpu/judge_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "worker/gpu/blas.h"
#include "worker/gpu/devrng.h"
#include "worker/gpu/timing.h"

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
                if ((rc = judge_plan_inputs(r, s, &s->cand, &ts->cand[j], seed, true)) ||
                    (rc = judge_plan_inputs(r, s, &s->ref, &ts->ref[j], seed, false)))
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
        if ((rc = judge_plan_batch_end(r, pair_inputs(r, s, si, ts))))
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
                        if ((rc = judge_plan_run(r, si, side, &sets[j], false)))
                                return rc;
                r->side = side;
                TRY_GPU(r, gpu_event_record(ev[2 * side + 1]));
        }
        devmem_batch_begin();
        if ((rc = judge_plan_batch_end(r, pair_checks(r, s, ts, slot))))
                return rc;
        if (judge_plan_has_gemm(&s->ref))
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
                return judge_fail_gpu(r, -ENOMEM);
        r->side = SIDE_HELPER;
        if ((rc = devmem_tally_fetch(n_slots, st))) {
                free(st);
                return judge_fail_gpu(r, rc);
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
                rc = judge_fail_with(r, "incorrect", "mismatch",
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

        if (ts->per < 2 || judge_plan_has_gemm(side) || gpu_capture_begin())
                return;
        for (int j = 0; j < ts->per && rc == 0; j++)
                for (int k = 0; k < side->n_steps && rc == 0; k++)
                        rc = judge_plan_launch_step(r, s, side, r->kern[si][side_idx][k], &side->steps[k], &sets[j]);
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
                if ((rc = judge_plan_alloc(r, s, &s->cand, true, c)) ||
                    (rc = judge_plan_prepare(r, s, &s->cand, c, 0, true)) ||
                    (rc = judge_plan_alloc(r, s, &s->ref, false, f)) ||
                    (rc = judge_plan_prepare(r, s, &s->ref, f, 0, false)))
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
                if ((rc = judge_plan_free(r, &ts->cand[j])) || (rc = judge_plan_free(r, &ts->ref[j])))
                        return rc;
        ts->n_sets = 0;
        return devmem_l2_ranges(NULL, 0);
}

/*
 * Queue @b pairs (events from judge_ev_pool), wait for them within the launch
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
                if ((rc = timed_pair(r, si, ts, &judge_ev_pool[4 * p], &slot)))
                        return rc;
        r->side = SIDE_CAND; /* a fault surfacing while waiting comes from a candidate run */
        r->launch = -1;
        r->kernel = NULL;
        if ((rc = judge_wait_bounded(r, judge_ev_pool[4 * (b - 1) + 3],
                                           judge_launch_limit(r, NULL) * (int64_t)(2 * b * (size_t)ts->per))))
                return judge_fail_gpu(r, rc);
        for (size_t p = 0; p < b; p++) {
                double c = 0, f = 0;
                r->side = SIDE_HELPER;
                if ((rc = gpu_event_elapsed_ms(judge_ev_pool[4 * p], judge_ev_pool[4 * p + 1], &c)) ||
                    (rc = gpu_event_elapsed_ms(judge_ev_pool[4 * p + 2], judge_ev_pool[4 * p + 3], &f)))
                        return judge_fail_gpu(r, rc);
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
                return judge_fail_gpu(r, -ENOMEM);
        while (j < ts->n_sets && rc == 0) {
                unsigned n = 0, first[TIMING_SETS_MAX];
                int k = j;
                while (k < ts->n_sets && rc == 0 && n + 2 * MAX_SET + MAX_SET <= DEVMEM_DIFF_SLOTS) {
                        first[k - j] = n;
                        if ((rc = judge_check_queue_guards(r, &ts->cand[k], &n)) == 0)
                                rc = judge_check_queue_inputs(r, s, &ts->cand[k], &ts->ref[k], &n);
                        k++;
                }
                if (rc == 0)
                        rc = judge_check_fetch(r, n, d);
                for (int i = j; i < k && rc == 0; i++) {
                        const KvDiff *at = d + first[i - j];
                        if ((rc = judge_check_guards_verdict(r, s, &s->cand, &ts->cand[i], at)) == 0)
                                rc = judge_check_inputs_verdict(r, s, at + 2 * ts->cand[i].n);
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
                return judge_fail_gpu(r, -ENOMEM);
        ts->per = 1;
        ts->cs = malloc((size_t)(job->max_trials > job->warmup ? job->max_trials : job->warmup) * sizeof(double));
        ts->rs = malloc((size_t)(job->max_trials > job->warmup ? job->max_trials : job->warmup) * sizeof(double));
        if (!ts->cs || !ts->rs) {
                rc = judge_fail_gpu(r, -ENOMEM);
                goto out;
        }
        tp[0] = gpu_now_ns();
        (void)devmem_alloc_ns_take();
        if ((rc = grow_sets(r, s, ts, 1)) || (rc = judge_wait_all(r)))
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
                        rc = judge_fail_gpu(r, -ENOMEM);
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
                if ((rc = gpu_event_elapsed_ms(judge_ev_pool[0], judge_ev_pool[1], &c)) ||
                    (rc = gpu_event_elapsed_ms(judge_ev_pool[2], judge_ev_pool[3], &f))) {
                        rc = judge_fail_gpu(r, rc);
                        goto out;
                }
                ts->per = choose_per(s, c, f, job->target_precision);
                tp[2] = gpu_now_ns();
                if (ts->per > 1) {
                        if ((rc = grow_sets(r, s, ts, ts->per)) || (rc = judge_wait_all(r)))
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
                        rc = judge_fail_gpu(r, -ENOMEM);
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

static void mark_revalidated(json_t *corr_shapes, int si, bool ok)
{
        json_t *o = json_array_get(corr_shapes, (size_t)si);

        if (o)
                json_object_set_new(o, "revalidated", json_boolean(ok));
}

/**
 * judge_timing_phase() - time every shape set the job times (all, or the
 * first with time_first_only), each within its share of the budget and of
 * the time left before the deadline, and mark each shape set's correctness
 * report as revalidated or not
 * @r:           the job, its correctness phase passed
 * @corr_shapes: the correctness phase's shape reports; borrowed
 * @ret_timing:  on success, the RESULT's "timing" object (new reference)
 * Return: 0 or JUDGE_STOP.
 */
int judge_timing_phase(Run *r, json_t *corr_shapes, json_t **ret_timing)
{
        const GpuJob *job = r->job;
        double speedups[LIMIT_TASK_SHAPES_MAX];
        int rc, n_timed = 0;
        json_t *timing, *tshapes = json_array();
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
                        return rc;
                }
                n_timed++;
        }
        timing = json_pack("{s:o, s:o, s:b}", "speedup", jfinite(timing_geomean(speedups, (size_t)n_timed)),
                           "shapes", tshapes, "suspicious", r->suspicious);
        if (r->suspicious)
                json_object_set_new(timing, "note",
                                    json_string("the candidate ran faster than half the roofline bound "
                                                "(flops/peak, bytes/bandwidth) for at least one shape set; "
                                                "the verdict is unchanged, but the timing deserves a look"));
        *ret_timing = timing;
        return 0;
}
