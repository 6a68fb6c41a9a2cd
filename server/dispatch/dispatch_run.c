/*
 * dispatch_run - the run stage: claiming a compiled job, sending it to a GPU
 * worker (prefetch and orphans), the fault grace, and what a GPU RESULT
 * becomes.
 *
 * Part of the dispatcher: see dispatch.c for the theory of operation and
 * dispatch_int.h for what its files share.
 */
#include "server/dispatch/dispatch_int.h"

/*
 * The launch limits a run JOB of either worker kind carries (docs/configuration.md,
 * launch_timeout_ms, launch_factor, launch_floor_ms): kevald-gpu holds each plan execution
 * to them, kevald-torch each forward.
 */
void run_job_launch_limits(const Dispatcher *d, json_t *gjob)
{
        json_object_set_new(gjob, "launch_timeout_ms", json_integer(d->cfg.launch_timeout_ms));
        if (d->cfg.launch_factor > 0) {
                json_object_set_new(gjob, "launch_factor", json_real(d->cfg.launch_factor));
                json_object_set_new(gjob, "launch_floor_ms", json_integer(d->cfg.launch_floor_ms));
        }
}

/*
 * Claim the next compiled job and build its JOB. Return: 1 with *@ret_job
 * set (ready to send), 1 with NULL (the job ended here: its task is gone,
 * its plan no longer resolves, or its CUBINs are back to compiling), 0
 * nothing to claim, <0 error.
 */
static int run_claim(Dispatcher *d, Job **ret_job)
{
        StoreJob *sj = NULL;
        Job *j = NULL;
        json_t *gjob = NULL;
        SpecError err = { 0 };
        int r = store_claim_next(d->store, STAGE_RUN, d->owner, d->cfg.lease_s, &sj);

        *ret_job = NULL;
        if (r != 0)
                return r == STORE_E_EMPTY ? 0 : r;
        j = job_new(d, sj);
        if (!j) {
                record_requeue(d, sj->id, STAGE_RUN, sj->task);
                store_job_free(sj);
                return -ENOMEM;
        }
        if (strcmp(jsonutil_str(sj->request, "language", ""), "kernelbench") == 0) {
                r = torch_run_prepare(d, j);
                if (r <= 0) {
                        if (r < 0)
                                record_requeue(d, sj->id, STAGE_RUN, sj->task);
                        job_free(j);
                        return r < 0 ? r : 1;
                }
                *ret_job = j;
                return 1;
        }
        if (job_resolve_task(d, j) != 0 || !j->task) {
                json_t *e = pipeline_error("internal", "task '%s' is no longer available",
                                           sj->task ? sj->task : "(inline)");
                json_t *res = pipeline_result(sj->task, "internal_error", NULL, NULL, e, j->seed);
                json_decref(e);
                record_finish(d, sj, "internal_error", res);
                job_free(j);
                return 1;
        }
        j->art[SLOT_CAND] = artifact_by_hex(d, json_string_value(json_object_get(sj->compile, "candidate_key")));
        j->art[SLOT_REF] = artifact_by_hex(d, json_string_value(json_object_get(sj->compile, "reference_key")));
        if (!j->art[SLOT_CAND] || !j->art[SLOT_REF]) {
                /* The cache lost a CUBIN: compile again. */
                record_requeue(d, sj->id, STAGE_COMPILE, sj->task);
                job_free(j);
                return 1;
        }
        r = spec_resolve(j->task, sj->request, j->art[SLOT_CAND]->compile, j->art[SLOT_REF]->compile, sj->id, j->seed,
                         &gjob, &err);
        if (r != 0) {
                json_t *e = pipeline_error("plan", "%s (at %s)", err.message, err.pointer);
                json_t *res = pipeline_result(job_task_name(j), "rejected", json_object_get(sj->compile, "candidate"),
                                              NULL, e, j->seed);
                json_decref(e);
                record_finish(d, sj, "rejected", res);
                job_free(j);
                return 1;
        }
        /* the candidate's plain build, its fenced build (none with fence = false: the cache key
         * asked for none), the reference's plain build */
        {
                const Artifact *ca = j->art[SLOT_CAND], *ra = j->art[SLOT_REF];
                json_t *cubins = json_pack("{s:{s:i, s:I}, s:{s:I, s:I}}", "candidate", "offset", 0, "size",
                                           (json_int_t)ca->plain_len, "reference", "offset",
                                           (json_int_t)ca->cubin_len, "size", (json_int_t)ra->plain_len);
                if (cubins && ca->fenced_len)
                        json_object_set_new(cubins, "candidate_fenced",
                                            json_pack("{s:I, s:I}", "offset", (json_int_t)ca->plain_len, "size",
                                                      (json_int_t)ca->fenced_len));
                json_object_set_new(gjob, "cubins", cubins);
        }
        json_object_set_new(gjob, "deadline_ms", json_integer((json_int_t)(d->cfg.job_timeout_s * 1000)));
        run_job_launch_limits(d, gjob);
        if (d->cfg.dump_dir)
                json_object_set_new(gjob, "dump", json_true());
        if (!json_object_get(gjob, "mode"))
                json_object_set_new(gjob, "mode", json_string("full"));
        j->gjob = gjob;
        *ret_job = j;
        return 1;
}

/* Worker @w starts running @j now (it was sent, or was next in its pipe). */
void worker_begin_job(Dispatcher *d, Worker *w, Job *j)
{
        w->job = j;
        w->state = W_BUSY;
        w->result_seen = false;
        w->sent_at_ms = now_ms(d);
        w->deadline_ms = w->sent_at_ms + (uint64_t)(d->cfg.job_timeout_s * 1000) + WATCHDOG_GRACE_MS;
        d->status_dirty = true;
}

/*
 * Send @j to GPU worker @w: to run at once if @w is idle, else as its next
 * job (prefetch: it waits in the pipe and starts the moment the job in
 * flight is answered). Takes ownership of @j. Return 1 sent, <0 error (the
 * job is back in its queue; the worker killed, unless it is running
 * another job: a failed write sent nothing, so its pipe is intact).
 */
static int run_send(Dispatcher *d, Worker *w, Job *j)
{
        int r;

        /* the grace as of now: an orphan sent again after a late fault gets the raised one */
        json_object_set_new(j->gjob, "fault_grace_ms", json_integer(d->fault_grace_now));
        r = j->kb ? torch_run_send(w, j)
                  : worker_send(w, FRAME_JOB, j->gjob, j->art[SLOT_CAND]->cubin, j->art[SLOT_CAND]->cubin_len,
                                j->art[SLOT_REF]->cubin, j->art[SLOT_REF]->plain_len);
        if (r > 0) { /* ended by torch_run_send() */
                job_free(j);
                return 1;
        }
        if (r < 0) {
                log_warn("dispatch: job %" PRId64 ": sending it to GPU worker %d failed: %s; back to the queue",
                         j->sj->id, w->index, strerror(-r));
                record_requeue(d, j->sj->id, STAGE_RUN, j->sj->task);
                job_free(j);
                if (!w->job)
                        worker_kill(w, "could not send a job");
                return r;
        }
        if (w->job) {
                w->queued = j;
                d->status_dirty = true;
        } else {
                worker_begin_job(d, w, j);
        }
        return 1;
}

/*
 * A job sent to @w that @w will not run (it is exiting or gone): it keeps
 * its claim, lease and attempt count, and runs next on another worker
 * (run_one() takes orphans first). The job did not run, so nothing is
 * charged to it.
 */
void worker_orphan_queued(Dispatcher *d, Worker *w)
{
        Job *j = w->queued, **p = &d->orphans;

        if (!j)
                return;
        w->queued = NULL;
        while (*p)
                p = &(*p)->next;
        j->next = NULL;
        j->orphaned_ms = now_ms(d);
        *p = j;
        d->n_orphans++;
        d->status_dirty = true;
}

/*
 * Give every orphan back to the store's run queue when no GPU worker of this
 * host is ready to take it for ORPHAN_WAIT_MS, so that another host may (the
 * lease would otherwise be renewed here for as long as the workers keep
 * failing). It did not run: its claim is not counted as an attempt (a
 * kevald-torch run worker restarts after every job, so on a busy host a
 * kernelbench job can be an orphan several times; counted, its claims used
 * up the retries of a later fault).
 */
void run_orphans_release(Dispatcher *d)
{
        while (d->orphans) {
                Job *j = d->orphans;
                d->orphans = j->next;
                d->n_orphans--;
                record_requeue_uncharged(d, j->sj->id, STAGE_RUN, j->sj->task);
                job_free(j);
        }
        d->status_dirty = true;
}

/* Can worker @w run @j: a kernelbench job on a kevald-torch run worker, any other on a kevald-gpu one? */
static bool suits(const Worker *w, const Job *j)
{
        return (j->kb != NULL) == (w->spec->role == PROC_TORCH_RUN);
}

/* Is an orphan waiting that @w can run? */
bool run_has_orphan_for(const Dispatcher *d, const Worker *w)
{
        for (const Job *j = d->orphans; j; j = j->next)
                if (suits(w, j))
                        return true;
        return false;
}

/* An idle worker of @w's GPU that can run @j, or NULL. */
static Worker *sibling_for(Dispatcher *d, const Worker *w, const Job *j)
{
        for (int i = 0; i < d->n_workers; i++) {
                Worker *s = &d->workers[i];
                if (s != w && s->spec->gpu && s->index == w->index && s->state == W_IDLE && !s->dying && suits(s, j))
                        return s;
        }
        return NULL;
}

/*
 * Give GPU worker @w (kevald-gpu or kevald-torch run) a job: the oldest
 * orphan it can run first, else the next compiled one of the store. With @w
 * busy this is its next job (prefetch). The run queue holds both kinds of
 * job: one that @w cannot run goes to an idle worker of the other kind on
 * the same GPU (the GPU is free when @w is idle), or else waits as an
 * orphan for one (given back to the store after ORPHAN_WAIT_MS).
 * Return: 1 a job was sent or ended here, 0 nothing to do (or a claimed job
 * now waits as an orphan), <0 error.
 */
int run_one(Dispatcher *d, Worker *w)
{
        Job *j = NULL, **p = &d->orphans;
        Worker *other;
        int r = 1;

        /* An orphan that waits for the other kind of worker has the GPU next: it goes to this GPU's
         * idle worker of that kind now, and while it waits nothing is queued behind a busy worker
         * (prefetch), or a stream of jobs of one kind would keep the GPU from the other for as long
         * as it lasts. (An idle worker whose GPU has no ready worker of that kind runs its own.) */
        while (*p && suits(w, *p))
                p = &(*p)->next;
        if (*p && (other = w->state == W_IDLE ? sibling_for(d, w, *p) : NULL)) {
                j = *p;
                *p = j->next;
                d->n_orphans--;
                j->next = NULL;
                return run_send(d, other, j);
        }
        if (*p && w->state != W_IDLE)
                return 0;
        p = &d->orphans;
        while (*p && !suits(w, *p))
                p = &(*p)->next;
        if (*p) {
                j = *p;
                *p = j->next;
                d->n_orphans--;
                j->next = NULL;
        } else {
                r = run_claim(d, &j);
        }
        if (r <= 0 || !j)
                return r;
        if (suits(w, j))
                return run_send(d, w, j);
        other = w->state == W_IDLE ? sibling_for(d, w, j) : NULL;
        if (other)
                return run_send(d, other, j);
        j->next = NULL;
        j->orphaned_ms = now_ms(d);
        for (p = &d->orphans; *p; p = &(*p)->next)
                ;
        *p = j;
        d->n_orphans++;
        d->status_dirty = true;
        return 0;
}

/*
 * The grace adapts to the host. How late the driver reports a fault grows
 * with what else the host's driver is doing: under the RL mix, the faults
 * that surfaced after their 100 ms launch limit used at most 76 ms of the
 * grace with one H200 busy, and 148 ms with two (restarting workers'
 * context creations queue in the driver; BENCHMARKS.md). The
 * configured fault_grace_ms is the least grace; a runtime error that
 * surfaced only within the grace says how much of it it used
 * (error.grace_used_ms), and every job after it gets GRACE_MARGIN times the
 * most that any of the last GRACE_SEEN_N such faults used, at most
 * GRACE_ADAPT_MAX_MS. So a fault stays named as one on a busy host, and a
 * hang on a quiet one costs no more than the configured grace. A grace of 0
 * (none) is left alone.
 */
static void grace_note(Dispatcher *d, json_t *error)
{
        json_t *used = json_object_get(error, "grace_used_ms");
        int before = d->fault_grace_now, least = d->cfg.fault_grace_ms;
        int most = least > GRACE_ADAPT_MAX_MS ? least : GRACE_ADAPT_MAX_MS;
        double m = 0, want;

        if (least <= 0 || !json_is_true(json_object_get(error, "after_limit")) || !json_is_number(used))
                return;
        d->grace_seen[d->grace_seen_next] = json_number_value(used);
        d->grace_seen_next = (d->grace_seen_next + 1) % GRACE_SEEN_N;
        for (int i = 0; i < GRACE_SEEN_N; i++)
                if (d->grace_seen[i] > m)
                        m = d->grace_seen[i];
        want = ceil(m * GRACE_MARGIN);
        d->fault_grace_now = want < least ? least : want > most ? most : (int)want;
        if (d->fault_grace_now != before) {
                log_info("dispatch: fault_grace_ms %d -> %d: a fault surfaced %.1f ms into the grace",
                         before, d->fault_grace_now, json_number_value(used));
                d->status_dirty = true;
        }
}

/*
 * A GPU RESULT that is not to be believed (resultcheck_gpu(), or no valid
 * verdict): the worker is killed and the job goes back to the run queue; a
 * job that got such answers on every attempt ends as internal_error, never
 * with the RESULT's verdict or speedup. Takes ownership of @j.
 */
void gpu_invalid(Dispatcher *d, Worker *w, Job *j, const char *why)
{
        w->malformed = true;
        worker_kill(w, "sent an invalid RESULT");
        log_warn("dispatch: job %" PRId64 ": GPU worker %d's RESULT: %s", j->sj->id, w->index, why);
        if (j->sj->attempts >= d->cfg.max_attempts) {
                json_t *err = pipeline_error("internal", "the GPU worker's RESULT was invalid on every attempt "
                                             "(%d; an infrastructure fault, not the kernel's); last: %s",
                                             j->sj->attempts, why);
                json_t *res = pipeline_result(job_task_name(j), "internal_error", NULL, NULL, err, j->seed);
                json_decref(err);
                record_finish(d, j->sj, "internal_error", res);
        } else {
                record_requeue(d, j->sj->id, STAGE_RUN, j->sj->task);
        }
        job_free(j);
}

void gpu_done(Dispatcher *d, Worker *w, Job *j, json_t *result)
{
        const char *verdict = json_string_value(json_object_get(result, "verdict"));
        json_t *res;

        if (!verdict_from_gpu(verdict)) {
                gpu_invalid(d, w, j, "without a valid verdict");
                return;
        }
        if (strcmp(verdict, "internal_error") == 0 && j->sj->attempts < d->cfg.max_attempts) {
                log_warn("dispatch: job %" PRId64 ": GPU worker reported an internal error; retrying", j->sj->id);
                record_requeue(d, j->sj->id, STAGE_RUN, j->sj->task);
                job_free(j);
                return;
        }
        if (strcmp(verdict, "runtime_error") == 0)
                grace_note(d, json_object_get(result, "error"));
        /* the worker sees its GPU as device 0 (CUDA_VISIBLE_DEVICES): say which one of the host it was */
        if (json_is_object(json_object_get(result, "gpu")))
                json_object_set_new(json_object_get(result, "gpu"), "index", json_integer(w->index));
        /* an inline task_spec's name is no proof it is the library's task: no baselines; the C task's
         * baselines time another program than a kernelbench job's reference (the Python module) */
        res = pipeline_result_measured(job_task_name(j), verdict, json_object_get(j->sj->compile, "candidate"), result,
                                       NULL, j->seed, j->own_task || j->kb ? NULL : d->cfg.baselines);
        /* A task sent inline (task_spec) names itself: its name is no proof that it is the library's
         * task of that name, so what is recorded per library task (reference times) leaves it out. */
        if (res && j->own_task)
                json_object_set_new(res, "task_inline", json_true());
        /* ...and so does a kernelbench result on a task the library also has as a C task: its reference
         * is the PyTorch module at KernelBench's shapes, not the C reference the task's records time. */
        if (res && j->kb && d->cfg.tasks && tasklib_get(d->cfg.tasks, j->kb->name))
                json_object_set_new(res, "task_inline", json_true());
        record_finish(d, j->sj, verdict, res);
        job_free(j);
}
