/*
 * dispatch - see dispatch.h.
 *
 * Theory of operation. Everything here runs on one libuv loop in the
 * dispatcher's thread, so no state below needs a lock except the status
 * snapshot that other threads read. The loop owns:
 *
 *   workers[]   one Worker per child process (compile ×K, GPU ×W per GPU;
 *               with torch_workers T > 0 also kevald-torch build ×K and
 *               kevald-torch run ×T per GPU, sharing the GPU's slot),
 *               each with a pipe pair, a FrameDecoder and at most one
 *               outstanding request (a busy GPU worker also holds its next
 *               job in its pipe with gpu_prefetch: `queued`, run_send()). A worker is STARTING until its HELLO,
 *               then IDLE or BUSY (EXITING after a RESULT that says the
 *               process exits); when its process exits it is restarted
 *               with exponential backoff (a clean exit after a sticky CUDA
 *               error restarts at once). Of the W workers of one GPU only
 *               one is BUSY (or EXITING after a timeout) at a time
 *               (gpu_reserved()); the others stand by warm, so the restart
 *               after a sticky error or a timeout happens while the next
 *               job already runs.
 *   compiles    compile requests keyed by the cache key; identical requests
 *               are coalesced, so a rollout of 4,096 kernels for one task
 *               compiles the reference once.
 *   jobs        submissions claimed for the compile stage, waiting for their
 *               candidate and reference CUBINs.
 *
 * A job in the compile stage: claimed (lease) -> its CUBINs come from the
 * compile cache or from compile requests -> plan checked against the real
 * kernel signatures -> done (compile mode, compile_error, rejected) or
 * marked compiled (waiting for a GPU). A job in the run stage is claimed
 * when a GPU worker is idle, or (gpu_prefetch) as the next job of a busy
 * one, sent into its pipe: a worker runs its jobs one after another, so a
 * job's timing never overlaps another job on the same GPU; its CUBINs come
 * back from the cache by key. A queued job that its worker will not run
 * (it exits, is killed or dies) is an orphan, sent next to another worker
 * with its claim and attempt count, or given back to the store, uncharged,
 * when no GPU worker of this host took it within ORPHAN_WAIT_MS.
 *
 * Faults: a watchdog kills a worker that overruns its request (SIGKILL to
 * its process group). For a GPU job that is the kernel's fault (verdict
 * timeout); for a compile request it is the worker's first (the compile
 * worker answers its own time limit): retried once on a fresh worker
 * (compile_req_hung()). A worker that dies on its own without a RESULT is an
 * infrastructure fault: its job goes back to the queue, and after
 * max_attempts ends as internal_error. A malformed frame kills the worker,
 * and so does a RESULT that fails its checks (server/dispatch/resultcheck.h): no
 * RESULT is believed, cached or stored before it is checked.
 *
 * Store writes: a job's outcome (finish, requeue, compiled) that the store
 * refuses (a full disk, a lost connection) is kept in owed and retried from
 * the tick until it is written or the lease is gone; while anything is owed
 * nothing new is claimed. So no job is dropped while this process renews
 * its lease (jobs_held() checks it at each heartbeat).
 *
 * Files (one internal header, dispatch_int.h, declares what they share):
 *   dispatch.c          the loop: start and stop, the tick (watchdog,
 *                       heartbeat, reaper, pruning), dispatch_pump()
 *   dispatch_worker.c   worker processes: start, frames in and out, exit, kill
 *   dispatch_compile.c  the compile stage: artifacts, compile requests, claiming
 *   dispatch_run.c      the run stage: a compiled job to a GPU worker, prefetch,
 *                       orphans, the fault grace, GPU RESULTs
 *   dispatch_torch.c    kernelbench jobs: the build stage and its cache folder,
 *                       the kevald-torch run JOB, pools that cannot start
 *   dispatch_record.c   finishing: store writes of outcomes, owed writes, counters
 *   dispatch_status.c   GPU clocks and the status snapshot
 */
#include "server/dispatch/dispatch_int.h"


static void on_pump_idle(uv_idle_t *h);

/*
 * The run stage: one job per idle GPU worker; then, with prefetch, the next
 * job of each busy one, so its worker starts it the moment it answers the
 * one in flight, without waiting for this loop. Claims that end at once
 * (the task gone, the plan rejected, a CUBIN lost) count against @budget,
 * as compile claims do; nothing is claimed once a store write is owed.
 * Return: the claims made.
 */
static int run_stage(Dispatcher *d, int budget)
{
        int claimed = 0;
        Worker *w;

        /* Orphans first, each to an idle worker that can run it (a kernelbench job waits for its GPU's
         * kevald-torch worker, a CUDA one for a kevald-gpu worker). */
        for (int i = 0; i < d->n_workers && d->orphans && !d->owed && claimed < budget; i++) {
                w = &d->workers[i];
                if (w->spec->gpu && w->state == W_IDLE && !w->dying && !gpu_reserved(d, w->index) &&
                    run_has_orphan_for(d, w) && run_one(d, w) > 0)
                        claimed++;
        }
        while (!d->owed && claimed < budget &&
               ((w = idle_worker(d, PROC_GPU)) || (w = idle_worker(d, PROC_TORCH_RUN)))) {
                if (run_one(d, w) <= 0)
                        break;
                claimed++;
        }
        for (int i = 0; i < d->n_workers && !d->cfg.no_prefetch && !d->owed && claimed < budget; i++) {
                w = &d->workers[i];
                if (w->spec->role == PROC_GPU && w->state == W_BUSY && w->job && !w->queued && !w->dying) {
                        if (run_one(d, w) <= 0)
                                break;
                        claimed++;
                }
        }
        return claimed;
}

/* Everything the loop does when something changed. */
void dispatch_pump(Dispatcher *d)
{
        int claimed = 0, run_claimed;

        if (d->stopping)
                goto out;
        /* The store refuses writes: take no new job (its result could not be
         * recorded either) until what is owed is written. */
        if (d->owed)
                goto out;
        /* Run stage first, so that a GPU's next job never waits behind
         * compile-stage claims. */
        claimed = run_claimed = run_stage(d, PUMP_BATCH);
        /* Compile stage: claim while there is room, PUMP_BATCH per loop turn
         * (each claim is a store write: a long burst would hold up the GPU
         * workers' RESULTs and the first compiles); cache hits finish at once. */
        while (d->n_compile > 0 && d->nvrtc[0] &&
               d->n_jobs < d->n_compile * COMPILE_BACKLOG_PER_WORKER && claimed < PUMP_BATCH && !d->owed) {
                StoreJob *sj = NULL;
                Job *j;
                int r = store_claim_next(d->store, STAGE_COMPILE, d->owner, d->cfg.lease_s, &sj);
                if (r != 0) {
                        if (r < 0)
                                log_error("dispatch: claiming a job failed: %s", strerror(-r));
                        break;
                }
                claimed++;
                j = job_new(d, sj);
                if (!j) {
                        record_requeue(d, sj->id, STAGE_COMPILE, sj->task);
                        store_job_free(sj);
                        break;
                }
                job_begin_compile(d, j);
        }
        send_compiles(d);
        /* ...and again when this turn claimed for the compile stage: a cache hit
         * was marked compiled just now, and SQLite wakes nobody for it
         * (PostgreSQL's trigger does). Not otherwise: each pass costs a claim
         * query per idle or prefetching worker. */
        if (claimed > run_claimed && claimed < PUMP_BATCH)
                claimed += run_stage(d, PUMP_BATCH - claimed);
out:
        if (claimed >= PUMP_BATCH && !d->idle_active) {
                d->idle_active = true;
                uv_idle_start(&d->pump_idle, on_pump_idle);
        }
        if (d->status_dirty)
                status_rebuild(d);
}

static void on_pump_idle(uv_idle_t *h)
{
        Dispatcher *d = h->data;

        uv_idle_stop(h);
        d->idle_active = false;
        dispatch_pump(d);
}

static void on_wake(uv_async_t *h)
{
        dispatch_pump(h->data);
}

static bool all_quiet(Dispatcher *d)
{
        for (int i = 0; i < d->n_workers; i++)
                if (d->workers[i].state == W_BUSY || d->workers[i].state == W_EXITING)
                        return false;
        return true;
}

static void shutdown_now(Dispatcher *d);

/* Jobs whose lease this dispatcher holds: compile-stage jobs, GPU jobs in flight or queued, orphans,
 * owed writes. */
static int jobs_held(Dispatcher *d)
{
        int n = d->n_jobs + d->n_owed;

        n += d->n_orphans;
        for (int i = 0; i < d->n_workers; i++)
                n += (d->workers[i].job != NULL) + (d->workers[i].queued != NULL);
        return n;
}

/* Whether this dispatcher holds job @id (the places jobs_held() counts). */
static bool holds(Dispatcher *d, int64_t id)
{
        for (Job *j = d->jobs; j; j = j->next)
                if (j->sj->id == id)
                        return true;
        for (Job *j = d->orphans; j; j = j->next)
                if (j->sj->id == id)
                        return true;
        for (Owed *o = d->owed; o; o = o->next)
                if (o->id == id)
                        return true;
        for (int i = 0; i < d->n_workers; i++) {
                const Worker *w = &d->workers[i];
                if ((w->job && w->job->sj->id == id) || (w->queued && w->queued->sj->id == id))
                        return true;
        }
        return false;
}

/*
 * The heartbeat renewed more leases than this dispatcher holds: a job is
 * leased to this process that nothing here will finish, and the heartbeat
 * would keep it leased for as long as the process lives. It happens when a
 * claim's answer is lost (PostgreSQL committed it, then the connection was
 * cut before the row came back). Put every such job back in its queue.
 * Claims happen on this loop only, so every job claimed so far is held.
 */
static void leases_reconcile(Dispatcher *d)
{
        json_t *leases = NULL, *l;
        size_t i;

        if (store_leases_of(d->store, d->owner, &leases) != 0)
                return;
        json_array_foreach(leases, i, l) {
                int64_t id = json_integer_value(json_object_get(l, "id"));
                Stage stage = strcmp(jsonutil_str(l, "state", ""), "running") == 0 ? STAGE_RUN : STAGE_COMPILE;
                if (holds(d, id))
                        continue;
                int r = store_requeue(d->store, id, d->owner, stage);
                log_warn("dispatch: job %" PRId64 ": leased to this process but held by nobody here (a claim whose "
                         "answer was lost): %s", id, r == 0 ? "back in its queue" : r < 0 ? strerror(-r) : "moot");
        }
        json_decref(leases);
}

static void on_tick(uv_timer_t *t)
{
        Dispatcher *d = t->data;
        uint64_t now = now_ms(d);
        int requeued = 0;

        for (int i = 0; i < d->n_workers; i++) {
                Worker *w = &d->workers[i];
                if (w->state == W_STOPPED && w->handles_open == 0 && !d->stopping && now >= w->restart_at_ms)
                        worker_start(w);
                else if ((w->state == W_BUSY || w->state == W_STARTING || w->state == W_EXITING) &&
                         now > w->deadline_ms && !w->killed_by_watchdog && !w->dying) {
                        w->killed_by_watchdog = w->state == W_BUSY;
                        worker_kill(w, w->state == W_BUSY       ? "watchdog: the request overran its deadline"
                                       : w->state == W_EXITING ? "did not exit after saying it would"
                                                               : "did not say HELLO in time");
                }
        }
        /* Orphans that no GPU worker of this host took for ORPHAN_WAIT_MS (every one
         * failing or restarting: a ready worker takes them first) go back to the store. */
        if (d->orphans && now - d->orphans->orphaned_ms > ORPHAN_WAIT_MS) {
                log_warn("dispatch: %d job(s) back to the run queue: no GPU worker took them in %d s", d->n_orphans,
                         ORPHAN_WAIT_MS / 1000);
                run_orphans_release(d);
        }
        /* kernelbench jobs whose kevald-torch pool cannot start end rather than wait. */
        torch_check_pools(d);
        /* Store writes the store refused: before the heartbeat, which renews their leases. */
        if (d->owed && now >= d->owed_retry_ms)
                record_owed_retry(d);
        /* Heartbeats: one write renews every lease this supervisor holds (the owed ones included). */
        if (now - d->last_heartbeat_ms > d->lease_renew_ms) {
                int extended = 0, held = jobs_held(d);
                if (store_heartbeat_owner(d->store, d->owner, d->cfg.lease_s, &extended) < 0)
                        log_warn("dispatch: renewing leases failed");
                else if (extended > held) /* a lease nobody here holds would never expire */
                        leases_reconcile(d);
                d->last_heartbeat_ms = now;
        }
        /* The reaper: leases of dead supervisors (other hosts, or a crash). */
        if (now - d->last_reap_ms > 1000) {
                int64_t *failed_ids = NULL;
                size_t n_failed = 0;
                d->last_reap_ms = now;
                if (store_reap_collect(d->store, d->cfg.max_attempts, &requeued, &failed_ids, &n_failed) == 0) {
                        if (requeued || n_failed)
                                log_warn("dispatch: reaper: %d expired lease(s) re-queued, %zu job(s) ended as "
                                         "internal_error", requeued, n_failed);
                        for (size_t i = 0; i < n_failed; i++) {
                                record_count_verdict(d, "internal_error");
                                record_notify_done(d, failed_ids[i]);
                        }
                }
                free(failed_ids);
        }
        /* Bounded tables: the compile cache by size, idempotency keys by age. */
        if (now - d->last_prune_ms > 60000) {
                d->last_prune_ms = now;
                if (store_cache_prune(d->store, LIMIT_COMPILE_CACHE_BYTES_DEFAULT, NULL) < 0 ||
                    store_prune_idempotency(d->store, 86400, NULL) < 0)
                        log_warn("dispatch: pruning the compile cache or idempotency keys failed");
                torch_prune(d); /* the kernelbench build folders, least recently used first */
        }
        if (d->stopping && (all_quiet(d) || now >= d->stop_deadline_ms)) {
                shutdown_now(d);
                return;
        }
        if (d->n_clocks > 0) /* the GPU clocks in the status stay within a tick of now */
                d->status_dirty = true;
        dispatch_pump(d);
}

/* ---- start and stop ------------------------------------------------------------ */

static void close_cb_noop(uv_handle_t *h)
{
        (void)h;
}

static void shutdown_now(Dispatcher *d)
{
        /* Requeue what this supervisor still holds; drop the compile requests
         * (they point at those jobs); kill the workers. */
        while (d->compiles) {
                CompileReq *req = d->compiles;
                d->compiles = req->next;
                compile_req_free(req);
        }
        while (d->jobs) {
                Job *j = d->jobs;
                d->jobs = j->next;
                d->n_jobs--;
                store_requeue(d->store, j->sj->id, d->owner, STAGE_COMPILE);
                job_free(j);
        }
        for (int i = 0; i < d->n_workers; i++) {
                Worker *w = &d->workers[i];
                w->req = NULL;
                w->n_group = w->group_left = 0;
                if (w->job) {
                        store_requeue(d->store, w->job->sj->id, d->owner, STAGE_RUN);
                        job_free(w->job);
                        w->job = NULL;
                }
                worker_orphan_queued(d, w);
                if (w->state != W_STOPPED)
                        worker_kill(w, "shutting down");
        }
        while (d->orphans) {   /* queued behind a worker, never ran */
                Job *j = d->orphans;
                d->orphans = j->next;
                d->n_orphans--;
                store_requeue_uncharged(d->store, j->sj->id, d->owner, STAGE_RUN);
                job_free(j);
        }
        if (d->owed)
                record_owed_retry(d);
        if (d->owed)
                log_error("dispatch: %d store write(s) still owed at shutdown: their jobs are re-queued at the next "
                          "start (store_requeue_all_leases()) and run again", d->n_owed);
        while (d->owed) {
                Owed *o = d->owed;
                d->owed = o->next;
                d->n_owed--;
                record_owed_free(o);
        }
        uv_timer_stop(&d->tick);
        uv_close((uv_handle_t *)&d->tick, close_cb_noop);
        uv_close((uv_handle_t *)&d->wake, close_cb_noop);
        uv_close((uv_handle_t *)&d->stop_async, close_cb_noop);
        uv_close((uv_handle_t *)&d->pump_idle, close_cb_noop);
        uv_prepare_stop(&d->settle);
        uv_close((uv_handle_t *)&d->settle, close_cb_noop);
        status_rebuild(d);
        /* The loop ends once the workers' exit callbacks have closed their handles. */
}

static void on_stop(uv_async_t *h)
{
        Dispatcher *d = h->data;

        if (d->stopping)
                return;
        d->stopping = true;
        d->stop_deadline_ms = now_ms(d) + (uint64_t)(d->stop_grace_s * 1000);
        d->status_dirty = true;
        log_info("dispatch: stopping: no new jobs; waiting for running ones");
        /* Compile-stage jobs are cheap to redo: hand them back now. */
        while (d->jobs) {
                Job *j = d->jobs;
                if (j->pending > 0)
                        break; /* waiting on a worker; settled in shutdown_now */
                d->jobs = j->next;
                d->n_jobs--;
                record_requeue(d, j->sj->id, STAGE_COMPILE, j->sj->task);
                job_free(j);
        }
        /* ...and so are run-stage jobs that no worker holds. */
        run_orphans_release(d);
        status_rebuild(d);
}

static void loop_main(void *arg)
{
        Dispatcher *d = arg;

        pthread_setname_np(pthread_self(), "dispatch"); /* top -H, /proc/PID/task/TID/comm */
        uv_run(&d->loop, UV_RUN_DEFAULT);
}

static int parse_gpus(const char *spec, int *ret, int max)
{
        int n = 0;

        if (!spec || strcmp(spec, "auto") == 0) {
                int count = proctab_count_gpus();
                for (int i = 0; i < count && n < max; i++)
                        ret[n++] = i;
                return n;
        }
        if (strcmp(spec, "none") == 0 || !*spec)
                return 0;
        for (const char *p = spec; *p && n < max;) {
                char *end;
                long v = strtol(p, &end, 10);
                if (end == p || v < 0 || v > 1024)
                        return -EINVAL;
                ret[n++] = (int)v;
                p = *end == ',' ? end + 1 : end;
                if (*end && *end != ',')
                        return -EINVAL;
        }
        return n;
}

/*
 * How many kevald-torch build workers by default (torch_build_workers 0): half as many again as
 * compile workers, at most one per TORCH_BUILD_MEM_BYTES of the host's memory, at least one. A
 * load_inline build keeps ~1.3 processes busy with a serial chain of about 70 s that more cores
 * do not shorten, so builds that share the cores end a batch sooner than a second wave that runs
 * mostly alone (BENCHMARKS.md, "Issue 29's 41 samples: the build waves and the run workers'
 * start").
 */
#define TORCH_BUILD_MEM_BYTES (3LL << 30) /* measured: 24 builds at once held ~67 GB */
static int torch_build_default(int n_compile)
{
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        long long by_mem = pages > 0 && page > 0 ? (long long)pages * page / TORCH_BUILD_MEM_BYTES : 0;
        int n = n_compile + n_compile / 2;

        if (by_mem > 0 && n > by_mem)
                n = (int)by_mem;
        return n > 0 ? n : 1;
}

/**
 * dispatch_start() - start the dispatcher's loop, its workers and its thread
 * @cfg: settings; copied (the strings too), tasks and waiters borrowed
 * Return: 0, -EINVAL for a bad GPU list, or a negative errno.
 */
int dispatch_start(const DispatchConfig *cfg, Dispatcher **ret_dispatcher)
{
        Dispatcher *d = calloc(1, sizeof(*d));
        int gpus[MAX_WORKERS], n_gpus, n_compile, n_build, avail, per_gpu, r;
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        double renew_s;

        if (!d)
                return -ENOMEM;
        d->torch_run_lock = -1;
        d->cfg = *cfg;
        if (d->cfg.max_attempts <= 0)
                d->cfg.max_attempts = 3;
        if (!(d->cfg.lease_s > 0))     /* unset (0), or not a number */
                d->cfg.lease_s = 60;
        if (d->cfg.job_timeout_s <= 0)
                d->cfg.job_timeout_s = 120;
        if (d->cfg.compile_timeout_ms <= 0)
                d->cfg.compile_timeout_ms = LIMIT_COMPILE_WALL_MS;
        if (d->cfg.launch_timeout_ms <= 0)
                d->cfg.launch_timeout_ms = 10000;
        if (d->cfg.launch_factor == 0)
                d->cfg.launch_factor = 1000;
        if (d->cfg.fault_grace_ms == 0)
                d->cfg.fault_grace_ms = LIMIT_FAULT_GRACE_MS_DEFAULT;
        if (d->cfg.fault_grace_ms < 0)
                d->cfg.fault_grace_ms = 0;
        d->fault_grace_now = d->cfg.fault_grace_ms;
        if (d->cfg.launch_floor_ms <= 0)
                d->cfg.launch_floor_ms = LIMIT_LAUNCH_FLOOR_MS_DEFAULT;
        if (d->cfg.gpu_workers_per_gpu <= 0)
                d->cfg.gpu_workers_per_gpu = 3;
        if (d->cfg.gpu_workers_per_gpu > 8)
                d->cfg.gpu_workers_per_gpu = 8;
        /* absolute: the workers start in "/" (a relative folder would name nothing there) */
        d->libexec_dir = realpath(cfg->libexec_dir ? cfg->libexec_dir : ".", NULL);
        if (!d->libexec_dir)
                d->libexec_dir = strdup(cfg->libexec_dir ? cfg->libexec_dir : ".");
        d->arch = strdup(cfg->arch ? cfg->arch : "sm_90a");
        d->verdicts = json_object();
        d->cfg.libexec_dir = d->libexec_dir;
        d->cfg.arch = d->arch;
        d->cfg.gpus = NULL;
        pthread_mutex_init(&d->status_lock, NULL);
        store_lease_plan(d->cfg.lease_s, d->owner, &renew_s); /* lease_s > 0 (above): cannot fail */
        d->lease_renew_ms = (uint64_t)(renew_s * 1000);

        if (d->cfg.torch_workers < 0)
                d->cfg.torch_workers = 0;
        if (d->cfg.torch_workers > 8)
                d->cfg.torch_workers = 8;
        if (d->cfg.torch_build_timeout_ms <= 0)
                d->cfg.torch_build_timeout_ms = LIMIT_KB_BUILD_MS_DEFAULT;
        if (!d->cfg.torch_python)
                d->cfg.torch_python = "python3";
        per_gpu = d->cfg.gpu_workers_per_gpu + d->cfg.torch_workers;
        n_gpus = parse_gpus(cfg->gpus, gpus, MAX_WORKERS / 2 / per_gpu);
        if (n_gpus < 0) {
                r = -EINVAL;
                goto fail;
        }
        n_compile = cfg->compile_workers > 0 ? cfg->compile_workers : (int)(cores > 0 ? cores : 1);
        /* with kevald-torch, torch_build_workers build workers; the two pools share what the GPUs'
         * workers leave of MAX_WORKERS */
        n_build = d->cfg.torch_workers <= 0 ? 0 : d->cfg.torch_build_workers > 0 ? d->cfg.torch_build_workers
                                                                                  : torch_build_default(n_compile);
        avail = MAX_WORKERS - n_gpus * per_gpu;
        if (n_compile > (n_build ? avail / 2 : avail))
                n_compile = n_build ? avail / 2 : avail;
        if (n_build > avail - n_compile)
                n_build = avail - n_compile;
        if (d->cfg.torch_workers > 0) {
                const char *root = d->cfg.torch_ext_dir ? d->cfg.torch_ext_dir : "torch-ext";
                if (mkdir(root, 0755) < 0 && errno != EEXIST) {
                        r = -errno;
                        log_error("dispatch: cannot make the kernelbench build cache '%s': %s", root, strerror(errno));
                        goto fail;
                }
                d->torch_ext_root = realpath(root, NULL);
                if (!d->torch_ext_root) {
                        r = -errno;
                        goto fail;
                }
                (void)torch_root_own(d->torch_ext_root); /* logged; a build worker then says why it cannot start */
                if (asprintf(&d->torch_run_root, "%s.run", d->torch_ext_root) < 0) {
                        d->torch_run_root = NULL;
                        r = -ENOMEM;
                        goto fail;
                }
                r = torchview_root_make(d->torch_run_root, &d->torch_run_lock);
                if (r < 0) {
                        log_error("dispatch: cannot make the run workers' views of the kernelbench build cache "
                                  "('%s', beside it): %s", d->torch_run_root,
                                  r == -EBUSY ? "another kevald serve uses this torch_ext_dir" : strerror(-r));
                        goto fail;
                }
        }
        r = store_open(cfg->db_path, &d->store);
        if (r != 0) {
                r = r < 0 ? r : -EIO;
                goto fail;
        }
        r = store_secret(d->store, d->secret);
        if (r != 0)
                goto fail;
        r = store_requeue_all_leases(d->store);
        if (r < 0)
                goto fail;

        uv_loop_init(&d->loop);
        uv_async_init(&d->loop, &d->wake, on_wake);
        uv_async_init(&d->loop, &d->stop_async, on_stop);
        uv_timer_init(&d->loop, &d->tick);
        uv_idle_init(&d->loop, &d->pump_idle);
        uv_prepare_init(&d->loop, &d->settle);
        d->wake.data = d->stop_async.data = d->tick.data = d->pump_idle.data = d->settle.data = d;
        for (int i = 0; i < n_compile; i++) {
                Worker *w = &d->workers[d->n_workers++];
                w->d = d;
                w->spec = proctab_get(PROC_COMPILE);
                w->index = i;
        }
        d->n_compile = n_compile;
        for (int i = 0; i < n_gpus; i++) {
                d->clocks[d->n_clocks++] = (GpuClock){ .index = gpus[i], .state = GPU_T_NO_WORKER,
                                                       .since_ns = uv_hrtime() };
                for (int k = 0; k < per_gpu; k++) {
                        Worker *w = &d->workers[d->n_workers++];
                        w->d = d;
                        w->spec = proctab_get(k < d->cfg.gpu_workers_per_gpu ? PROC_GPU : PROC_TORCH_RUN);
                        w->index = gpus[i];
                }
        }
        for (int i = 0; i < n_build; i++) {
                Worker *w = &d->workers[d->n_workers++];
                w->d = d;
                w->spec = proctab_get(PROC_TORCH_BUILD);
                w->index = i;
                d->n_torch_build++;
        }
        log_info("dispatch: %d compile worker(s), %d GPU(s) with %d worker(s) each%s", n_compile, n_gpus,
                 d->cfg.gpu_workers_per_gpu,
                 n_gpus == 0 ? " (no GPU: compile-only submissions complete, full evaluations wait)" : "");
        if (d->cfg.torch_workers > 0) {
                log_info("dispatch: kevald-torch: %d build worker(s), %d run worker(s) per GPU, build cache '%s'",
                         d->n_torch_build, d->cfg.torch_workers, d->torch_ext_root);
                torch_pycache_start(d);
        }
        for (int i = 0; i < d->n_workers; i++)
                worker_start(&d->workers[i]);
        status_rebuild(d);
        uv_prepare_start(&d->settle, on_prepare);
        uv_timer_start(&d->tick, on_tick, 100, 100);
        r = uv_thread_create(&d->thread, loop_main, d);
        if (r < 0) {
                r = -EAGAIN;
                goto fail;
        }
        *ret_dispatcher = d;
        return 0;
fail:
        torch_pycache_stop(d);
        free(d->torch_pycache);
        store_close(d->store);
        torchview_root_remove(d->torch_run_root, d->torch_run_lock);
        free(d->torch_run_root);
        free(d->torch_ext_root);
        free(d->libexec_dir);
        free(d->arch);
        json_decref(d->verdicts);
        free(d);
        return r;
}

void dispatch_notify(Dispatcher *d)
{
        if (d)
                uv_async_send(&d->wake);
}

/**
 * dispatch_stop() - graceful stop: no new jobs, running ones get @grace_s to
 * finish, the rest go back to the queue, workers are killed, the thread joins.
 * Return: 0.
 */
int dispatch_stop(Dispatcher *d, double grace_s)
{
        if (!d)
                return 0;
        d->stop_grace_s = grace_s; /* read by on_stop, on the loop thread, after the wake-up */
        uv_async_send(&d->stop_async);
        uv_thread_join(&d->thread);
        torch_pycache_stop(d);
        return 0;
}

void dispatch_free(Dispatcher *d)
{
        if (!d)
                return;
        torch_pycache_stop(d); /* dispatch_stop() did, unless it never ran */
        uv_loop_close(&d->loop);
        while (d->compiles) {
                CompileReq *r = d->compiles;
                d->compiles = r->next;
                compile_req_free(r);
        }
        for (int i = 0; i < REF_CACHE_SLOTS; i++)
                artifact_free(d->refs[i]);
        for (int i = 0; i < d->n_workers; i++) {
                json_decref(d->workers[i].hello);
                frame_decoder_clear(&d->workers[i].dec);
        }
        store_close(d->store);
        json_decref(d->status);
        json_decref(d->verdicts);
        pthread_mutex_destroy(&d->status_lock);
        torchview_root_remove(d->torch_run_root, d->torch_run_lock);
        free(d->torch_pycache);
        free(d->torch_run_root);
        free(d->torch_ext_root);
        free(d->libexec_dir);
        free(d->arch);
        free(d);
}
