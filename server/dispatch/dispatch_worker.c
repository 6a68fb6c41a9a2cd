/*
 * dispatch_worker - worker processes: start, frames in and out, exit, kill;
 * which worker is free.
 *
 * Part of the dispatcher: see dispatch.c for the theory of operation and
 * dispatch_int.h for what its files share.
 */
#include "server/dispatch/dispatch_int.h"
#include "worker/exitcode.h"


typedef struct WriteReq {
        uv_write_t req;
        uint8_t *buf;
} WriteReq;

static void on_write(uv_write_t *req, int status)
{
        WriteReq *wr = (WriteReq *)req;

        if (status < 0)
                log_debug("dispatch: write to worker failed: %s", uv_strerror(status));
        free(wr->buf);
        free(wr);
}

int worker_send(Worker *w, uint32_t type, json_t *msg, const uint8_t *blob1, size_t len1,
                       const uint8_t *blob2, size_t len2)
{
        char *json = json_dumps(msg, JSON_COMPACT);
        size_t jl = json ? strlen(json) : 0, total = FRAME_HEADER_BYTES + jl + len1 + len2;
        WriteReq *wr = NULL;
        uint8_t *p;
        uv_buf_t buf;
        int r = -ENOMEM;

        if (!json)
                goto out;
        if (jl > LIMIT_FRAME_JSON_BYTES || len1 + len2 > LIMIT_FRAME_BLOB_BYTES) {
                r = -EMSGSIZE;
                goto out;
        }
        wr = calloc(1, sizeof(*wr));
        if (!wr || !(wr->buf = malloc(total)))
                goto out;
        p = wr->buf;
        uint32_t h[4] = { FRAME_MAGIC, type, (uint32_t)jl, (uint32_t)(len1 + len2) };
        for (int i = 0; i < 4; i++)
                for (int b = 0; b < 4; b++)
                        *p++ = (uint8_t)(h[i] >> (8 * b));
        memcpy(p, json, jl);
        p += jl;
        if (len1)
                memcpy(p, blob1, len1), p += len1;
        if (len2)
                memcpy(p, blob2, len2);
        buf = uv_buf_init((char *)wr->buf, (unsigned)total);
        r = uv_write(&wr->req, (uv_stream_t *)&w->to_child, &buf, 1, on_write);
        if (r == 0)
                wr = NULL;
out:
        if (wr)
                free(wr->buf);
        free(wr);
        free(json);
        return r;
}

void worker_kill(Worker *w, const char *why)
{
        if (w->state == W_STOPPED)
                return;
        w->dying = true;
        if (w->d->stopping)
                log_info("dispatch: stopping %s worker %d (pid %d)", w->spec->name, w->index, w->proc.pid);
        else
                log_warn("dispatch: killing %s worker %d (pid %d): %s", w->spec->name, w->index, w->proc.pid, why);
        /* The worker is the leader of its own process group (UV_PROCESS_DETACHED). */
        if (w->proc.pid > 0 && kill(-w->proc.pid, SIGKILL) < 0)
                kill(w->proc.pid, SIGKILL);
}

/* How long @w waits before its next start: doubling from backoff_min_s with each consecutive failure. */
static double backoff_s(const Worker *w)
{
        double backoff = 0;

        if (w->failures > 0) {
                backoff = w->spec->backoff_min_s * pow(2, w->failures - 1);
                if (backoff > w->spec->backoff_max_s)
                        backoff = w->spec->backoff_max_s;
        }
        return backoff;
}

static void on_handle_closed(uv_handle_t *h)
{
        Worker *w = h->data;

        if (--w->handles_open == 0 && !w->d->stopping) {
                double backoff = backoff_s(w);
                w->restart_at_ms = now_ms(w->d) + (uint64_t)(backoff * 1000);
                if (backoff > 0)
                        log_info("dispatch: restarting %s worker %d in %.2f s (%d consecutive failures)",
                                 w->spec->name, w->index, backoff, w->failures);
                else if (w->state == W_STOPPED)
                        worker_start(w); /* now, not at the next tick: a GPU worker's start is the slow part */
        }
}

/* The worker's process is gone: settle its request, then restart later. */
static void on_exit_cb(uv_process_t *proc, int64_t status, int sig)
{
        Worker *w = proc->data;
        Dispatcher *d = w->d;
        bool was_ready = w->hello != NULL && !json_is_false(json_object_get(w->hello, "ok"));
        bool blamed = w->spec->role == PROC_TORCH_RUN && w->job && sig == 0 && status == WORKER_EXIT_FORBIDDEN;

        log_info("dispatch: %s worker %d (pid %d) exited: status %" PRId64 ", signal %d", w->spec->name, w->index,
                 proc->pid, status, sig);
        worker_orphan_queued(d, w); /* it never started: no attempt is charged */
        if (w->n_group) {
                /* uncharged: each is tried alone next, where a source that kills or hangs
                 * its worker is charged as ever */
                log_warn("dispatch: compile worker %d ended during a group of %zu: each again alone", w->index,
                         w->group_left);
                group_release(d, w, NULL);
        }
        if (w->req) {
                CompileReq *req = w->req;
                w->req = NULL;
                req->in_flight = false;
                if (w->killed_by_watchdog)
                        compile_req_hung(d, req, (double)(w->deadline_ms - w->sent_at_ms) / 1000.0);
                else
                        compile_req_fault(d, req, sig ? "the compile worker died" : "the compile worker exited");
        }
        if (w->job) {
                Job *j = w->job;
                w->job = NULL;
                if (w->killed_by_watchdog) {
                        json_t *err = pipeline_error("timeout", "the candidate did not finish within %.0f s and "
                                                     "its worker was killed (infinite loop?)",
                                                     (double)(w->deadline_ms - w->sent_at_ms) / 1000.0);
                        json_t *compile = json_object_get(j->sj->compile, "candidate");
                        json_t *res = pipeline_result(job_task_name(j), "timeout", compile, NULL, err, j->seed);
                        json_decref(err);
                        record_finish(d, j->sj, "timeout", res);
                } else if (blamed) {
                        /* A call the run role's filter forbids, made while the candidate's code ran
                         * (the worker says so by this status: sandbox_blame_candidate()); one made
                         * while the reference or the judge ran is SIGSYS, the worker's fault below. */
                        json_t *err = pipeline_error("sandbox", "the candidate made a system call the run stage's "
                                                     "sandbox forbids, which ended its process (a socket, "
                                                     "ptrace, a mount, ...; a new process or program is "
                                                     "refused with EPERM instead)");
                        json_t *compile = json_object_get(j->sj->compile, "candidate");
                        json_t *res = pipeline_result(job_task_name(j), "runtime_error", compile, NULL, err, j->seed);
                        json_decref(err);
                        log_warn("dispatch: job %" PRId64 ": its torch-run worker was ended by its system-call filter "
                                 "(the candidate's call): runtime_error, not retried", j->sj->id);
                        record_finish(d, j->sj, "runtime_error", res);
                } else if (j->sj->attempts >= d->cfg.max_attempts) {
                        json_t *err = pipeline_error("internal", "the GPU worker died %d times during this job "
                                                     "(infrastructure fault, not the kernel's)", j->sj->attempts);
                        json_t *res = pipeline_result(job_task_name(j), "internal_error", NULL, NULL, err, j->seed);
                        json_decref(err);
                        record_finish(d, j->sj, "internal_error", res);
                } else {
                        log_warn("dispatch: job %" PRId64 " goes back to the queue: its GPU worker died", j->sj->id);
                        record_requeue(d, j->sj->id, STAGE_RUN, j->sj->task);
                }
                job_free(j);
        }
        /* A crash before HELLO, or without a RESULT for a request, counts as a failure; a run worker
         * that the candidate's forbidden call ended (blamed, above) is not failing. */
        if (!was_ready || (!w->result_seen && !w->killed_by_watchdog && !blamed && !d->stopping && status != 0))
                w->failures++;
        else
                w->failures = 0;
        if (w->malformed)
                w->failures++;
        if (w->spec->role == PROC_TORCH_RUN) {
                /* What it leaves in its process group goes first: its compiler helper (SIGKILLed
                 * with it) and a ptxas or cc of a request the helper could not end; then its view
                 * and the helper's folder. */
                if (proc->pid > 0)
                        (void)kill(-proc->pid, SIGKILL);
                torch_view_close(w); /* its view goes with it; the next process gets a fresh one */
        }
        w->state = W_STOPPED;
        w->restarts++;
        json_decref(w->hello);
        w->hello = NULL;
        frame_decoder_clear(&w->dec);
        d->status_dirty = true;
        uv_close((uv_handle_t *)&w->proc, on_handle_closed);
        if (!uv_is_closing((uv_handle_t *)&w->to_child))
                uv_close((uv_handle_t *)&w->to_child, on_handle_closed);
        if (!uv_is_closing((uv_handle_t *)&w->from_child))
                uv_close((uv_handle_t *)&w->from_child, on_handle_closed);
        dispatch_pump(d);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
        (void)h;
        buf->base = malloc(suggested);
        buf->len = buf->base ? suggested : 0;
}

/*
 * `kevald eval --dump DIR`: the GPU worker streams the reference side's
 * buffers in PROGRESS frames; write each chunk to DIR/<shape>/<buffer>.<when>.bin.
 * Names come from the resolved job (validated names), never from paths.
 */
static void dump_chunk(Dispatcher *d, json_t *info, const uint8_t *blob, size_t len)
{
        const char *shape = json_string_value(json_object_get(info, "shape"));
        const char *buffer = json_string_value(json_object_get(info, "buffer"));
        const char *when = json_string_value(json_object_get(info, "when"));
        json_int_t offset = json_integer_value(json_object_get(info, "offset"));
        char path[PATH_MAX];
        FILE *f;

        if (!shape || !buffer || !when || offset < 0 || strpbrk(shape, "/.") || strpbrk(buffer, "/.") ||
            (strcmp(when, "input") != 0 && strcmp(when, "output") != 0)) {
                log_warn("dispatch: ignoring a malformed dump chunk");
                return;
        }
        snprintf(path, sizeof(path), "%s/%s", d->cfg.dump_dir, shape);
        mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/%s/%s.%s.bin", d->cfg.dump_dir, shape, buffer, when);
        f = fopen(path, offset == 0 ? "wb" : "r+b");
        if (!f || fseeko(f, (off_t)offset, SEEK_SET) != 0 || fwrite(blob, 1, len, f) != len)
                log_error("dispatch: writing dump file '%s' failed: %s", path, strerror(errno));
        if (f)
                fclose(f);
}

/* A worker's HELLO: ready (the facts the dispatcher keeps from it), or start-up failed. */
static void on_hello(Worker *w, json_t *msg)
{
        Dispatcher *d = w->d;

        if (w->state != W_STARTING) {
                w->malformed = true;
                worker_kill(w, "sent HELLO twice");
                return;
        }
        if (json_is_false(json_object_get(msg, "ok"))) {
                char *e = json_dumps(json_object_get(msg, "error"), JSON_COMPACT);
                log_error("dispatch: %s worker %d failed to start: %s", w->spec->name, w->index,
                          e ? e : "no reason given");
                snprintf(w->start_error, sizeof(w->start_error), "%s: %s",
                         jsonutil_str(json_object_get(msg, "error"), "stage", "start-up"),
                         jsonutil_str(json_object_get(msg, "error"), "message", "no reason given"));
                free(e);
                w->hello = json_incref(msg); /* its layers still show in /readyz */
                worker_kill(w, "start-up failed");
                d->status_dirty = true;
                return;
        }
        w->hello = json_incref(msg);
        w->state = W_IDLE;
        if (w->spec->role == PROC_COMPILE) {
                const char *v = json_string_value(json_object_get(msg, "nvrtc"));
                if (v)
                        snprintf(d->nvrtc, sizeof(d->nvrtc), "%s", v);
        } else if (w->spec->role == PROC_TORCH_BUILD) {
                /* the torch version is part of the build cache's key: builds wait for it */
                const char *v = json_string_value(json_object_get(msg, "torch"));
                snprintf(d->torch_version, sizeof(d->torch_version), "%s", v ? v : "unknown");
                torch_workers_ready(d);
        } else if (w->spec->role == PROC_GPU) {
                const char *arch = json_string_value(json_object_get(msg, "arch"));
                json_t *so = json_object_get(msg, "max_shared_optin");
                if (arch && strcmp(arch, d->arch) != 0) {
                        log_info("dispatch: GPU %d is %s: compiling for it", w->index, arch);
                        free(d->arch);
                        d->arch = strdup(arch);
                }
                if (json_is_integer(so))
                        d->max_shared_optin = (long)json_integer_value(so);
        }
        {
                /* how long its start took (spawn to HELLO), and the worker's own account of it where it
                 * gives one (kevald-torch's startup_ms) */
                char *steps = json_object_get(msg, "startup_ms") ? json_dumps(json_object_get(msg, "startup_ms"),
                                                                              JSON_COMPACT | JSON_REAL_PRECISION(4))
                                                                 : NULL;
                log_info("dispatch: %s worker %d ready (pid %d) in %.2f s%s%s%s%s", w->spec->name, w->index,
                         w->proc.pid, (double)(now_ms(d) - w->sent_at_ms) / 1000.0, w->spec->gpu ? ": " : "",
                         w->spec->gpu ? jsonutil_str(msg, "name", "?") : "", steps ? " " : "", steps ? steps : "");
                free(steps);
        }
        {
                char *layers = json_dumps(json_object_get(msg, "layers"), JSON_COMPACT);
                log_info("dispatch: %s worker sandbox layers: %s", w->spec->name, layers ? layers : "none reported");
                free(layers);
        }
        d->status_dirty = true;
}

/* @w answered its JOB in full: idle again, its busy time counted. */
static void worker_answered(Dispatcher *d, Worker *w)
{
        w->result_seen = true;
        w->failures = 0;
        w->state = W_IDLE;
        w->busy_s += (double)(now_ms(d) - w->sent_at_ms) / 1000.0;
}

/* The requests of @w's group JOB not yet answered go back to the queue, each
 * to be sent alone from now on; with @why, charged an attempt (compile_req_fault()). */
void group_release(Dispatcher *d, Worker *w, const char *why)
{
        for (size_t i = 0; i < w->n_group; i++) {
                CompileReq *req = w->group[i];
                if (!req)
                        continue;
                w->group[i] = NULL;
                req->in_flight = false;
                req->no_group = true;
                req->grouped = false; /* alone from now on: a full-mode job may join it again */
                if (why)
                        compile_req_fault(d, req, why);
        }
        w->n_group = w->group_left = 0;
}

/*
 * One RESULT of a group JOB (send_group()): "member" names the request it
 * answers, checked as a lone compile's (a merged member's kernels against
 * the CUBIN's under its "group_prefix"). A merged member's result is cached
 * with its prefix and the merged CUBIN, whose kernels have other names:
 * artifact_lookup() serves it to compile-only candidates alone.
 * "group_timeout": the group ran past its deadline, and its requests go
 * back to be compiled alone, uncharged (which of them ran long is not known).
 */
static void on_group_result(Worker *w, json_t *msg, Frame *f)
{
        Dispatcher *d = w->d;
        json_t *m = json_object_get(msg, "member");
        char why[RESULTCHECK_WHY_BYTES];
        CompileReq *req;
        size_t i;

        if (json_is_true(json_object_get(msg, "group_timeout"))) {
                log_warn("dispatch: a group of %zu compiles ran past its deadline: each again alone", w->group_left);
                group_release(d, w, NULL);
                w->result_seen = true;
                /* it exits now (its watchdog's exit): nothing more is sent to it */
                w->state = W_EXITING;
                w->deadline_ms = now_ms(d) + EXIT_GRACE_MS;
                d->status_dirty = true;
                return;
        }
        if (!json_is_integer(m) || json_integer_value(m) < 0 || (size_t)json_integer_value(m) >= w->n_group ||
            !w->group[json_integer_value(m)]) {
                snprintf(why, sizeof(why), "/member names no unanswered request of its group");
                goto invalid;
        }
        i = (size_t)json_integer_value(m);
        req = w->group[i];
        if (resultcheck_compile(msg, f->blob, f->blob_len, req->arch, why) != 0)
                goto invalid;
        w->group[i] = NULL;
        req->in_flight = false;
        d->compile_answers++;
        {
                const char *err = json_string_value(json_object_get(msg, "error"));
                d->compile_merged += json_object_get(msg, "group_prefix") != NULL;
                json_object_del(msg, "member");
                compile_done(d, req, msg, f->blob, f->blob_len, !err || strcmp(err, "compile") == 0);
        }
        if (--w->group_left == 0) {
                w->n_group = 0;
                worker_answered(d, w);
        }
        d->status_dirty = true;
        return;
invalid:
        w->malformed = true;
        worker_kill(w, "sent an invalid compile RESULT");
        log_warn("dispatch: compile worker %d's group RESULT: %s", w->index, why);
        group_release(d, w, why);
        d->status_dirty = true;
}

/* A worker's RESULT: checked before anything in it is believed, then the
 * compile request or the GPU job it answers is done. */
static void on_result(Worker *w, json_t *msg, Frame *f)
{
        Dispatcher *d = w->d;
        char why[RESULTCHECK_WHY_BYTES];

        if (w->state != W_BUSY) {
                w->malformed = true;
                worker_kill(w, "sent a RESULT without a job");
                return;
        }
        if (w->n_group) {
                on_group_result(w, msg, f);
                return;
        }
        /* Nothing a worker says is believed before it is checked: an invalid
         * RESULT is the worker's fault (killed; the request counts an attempt). */
        /* ...and a GPU RESULT must answer the job in flight (with a job
         * queued behind it, two are in the worker's pipe) */
        if (w->job && json_integer_value(json_object_get(msg, "id")) != w->job->sj->id)
                snprintf(why, sizeof(why), "it answers job %" JSON_INTEGER_FORMAT ", not job %" PRId64
                         " in flight", json_integer_value(json_object_get(msg, "id")), w->job->sj->id);
        else
                why[0] = '\0';
        if (why[0] ||
            (w->req ? (w->spec->role == PROC_TORCH_BUILD
                               ? resultcheck_torch_build(msg, f->blob_len, why)
                               : resultcheck_compile(msg, f->blob, f->blob_len, w->req->arch, why)) != 0
                    : resultcheck_gpu(msg, (double)d->cfg.job_timeout_s * 1000.0, why) != 0)) {
                if (w->job) {
                        Job *j = w->job;
                        w->job = NULL;
                        gpu_invalid(d, w, j, why);
                } else {
                        CompileReq *req = w->req;
                        w->req = NULL;
                        req->in_flight = false;
                        w->malformed = true;
                        worker_kill(w, "sent an invalid compile RESULT");
                        log_warn("dispatch: compile worker %d's RESULT: %s", w->index, why);
                        compile_req_fault(d, req, why);
                }
                d->status_dirty = true;
                return;
        }
        worker_answered(d, w);
        /* A GPU worker, or a kevald-torch build worker (after its timeout),
         * that says it exits gets nothing more;
         * its exit after a RESULT is no failure (on_exit_cb: no backoff). */
        if ((w->job || w->spec->role == PROC_TORCH_BUILD) && (json_is_true(json_object_get(msg, "exiting")) ||
                                                             json_is_string(json_object_get(msg, "exiting")))) {
                w->state = W_EXITING;
                w->deadline_ms = now_ms(d) + EXIT_GRACE_MS;
                /* after a sticky fault the context is dead and nothing of
                 * it runs: the standby may start at once; otherwise (a
                 * spinning kernel) the GPU waits for the process to go */
                w->holds_gpu = w->spec->gpu && strcmp(jsonutil_str(msg, "exiting", ""), "sticky") != 0;
        }
        if (w->req) {
                CompileReq *req = w->req;
                const char *err = json_string_value(json_object_get(msg, "error"));
                w->req = NULL;
                req->in_flight = false;
                d->compile_answers++;
                if (w->spec->role == PROC_TORCH_BUILD) {
                        /* a build's fault is the source's (and the torch version's): cached */
                        json_t *c = torch_build_result(d, msg);
                        bool cacheable = !err || strcmp(err, "compile") == 0 || strcmp(err, "import") == 0 ||
                                         strcmp(err, "no_model_new") == 0;
                        if (c)
                                compile_done(d, req, c, NULL, 0, cacheable);
                        else
                                compile_req_fault(d, req, "out of memory");
                        json_decref(c);
                } else {
                        compile_done(d, req, msg, f->blob, f->blob_len, !err || strcmp(err, "compile") == 0);
                }
        } else if (w->job) {
                /* Keep the GPU busy. The job queued behind this one
                 * (prefetch) is already running in the worker; an idle
                 * worker is handed its next job before the result is
                 * written and waiters woken. An exiting worker runs
                 * nothing more: its queued job goes to the next worker,
                 * on a standby of the same GPU once the process is gone. */
                Job *done = w->job;
                bool valid = verdict_from_gpu(json_string_value(json_object_get(msg, "verdict")));
                w->job = NULL;
                if (w->state == W_EXITING) {
                        worker_orphan_queued(d, w);
                } else if (w->queued && valid) {
                        Job *next = w->queued;
                        w->queued = NULL;
                        worker_begin_job(d, w, next);
                }
                if (!d->stopping && !d->owed && valid &&
                    (w->state == W_IDLE || (w->state == W_BUSY && !w->queued && !d->cfg.no_prefetch)))
                        run_one(d, w);
                gpu_done(d, w, done, msg);
        }
        d->status_dirty = true;
}

static void worker_on_frame(Worker *w, Frame *f)
{
        Dispatcher *d = w->d;
        json_error_t jerr;
        json_t *msg = json_loadb(f->json, f->json_len, 0, &jerr);

        if (!json_is_object(msg)) {
                w->malformed = true;
                worker_kill(w, "sent a frame that is not a JSON object");
                goto out;
        }
        switch (f->type) {
        case FRAME_HELLO:
                on_hello(w, msg);
                break;
        case FRAME_PROGRESS:
                if (json_object_get(msg, "dump") && d->cfg.dump_dir && w->job)
                        dump_chunk(d, json_object_get(msg, "dump"), f->blob, f->blob_len);
                break;
        case FRAME_RESULT:
                on_result(w, msg, f);
                break;
        default:
                w->malformed = true;
                worker_kill(w, "sent a frame of an unexpected type");
        }
out:
        json_decref(msg);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
        Worker *w = s->data;
        size_t off = 0;

        if (nread < 0) {
                uv_read_stop(s);
                free(buf->base);
                return; /* EOF or error: on_exit_cb settles the worker */
        }
        /* A worker being killed is no longer believed: what it still says
         * (the RESULT of a job that was next in its pipe) is dropped. */
        while (off < (size_t)nread && w->state != W_STOPPED && !w->dying) {
                Frame f = { 0 };
                size_t used = 0;
                int r = frame_decoder_feed(&w->dec, (uint8_t *)buf->base + off, (size_t)nread - off, &used, &f);
                off += used;
                if (r == FRAME_E_AGAIN)
                        break;
                if (r != 0) {
                        w->malformed = true;
                        worker_kill(w, r == FRAME_E_TOO_LARGE ? "sent an oversized frame" : "sent a malformed frame");
                        uv_read_stop(s);
                        break;
                }
                worker_on_frame(w, &f);
                frame_clear(&f);
        }
        free(buf->base);
        dispatch_pump(w->d);
}

void worker_start(Worker *w)
{
        Dispatcher *d = w->d;
        char path[PATH_MAX], view[PATH_MAX], **env = NULL;
        char *args[7];
        int n = 0;
        uv_process_options_t opt = { 0 };
        uv_stdio_container_t stdio[3];
        int r;

        snprintf(path, sizeof(path), "%s/%s", d->libexec_dir, w->spec->executable);
        if (w->spec->role_arg) {
                /* kevald-torch: <torch_python> <libexec>/kevald-torch --role build|run */
                args[n++] = (char *)d->cfg.torch_python;
                args[n++] = path;
                args[n++] = "--role";
                args[n++] = (char *)w->spec->role_arg;
        } else {
                args[n++] = path;
        }
        if (!d->cfg.sandbox)
                args[n++] = "--no-sandbox";
        args[n] = NULL;
        /* a run worker reads its own view of the build cache, not the cache (torchview.h); without
         * one it does not start: a failed start, retried after the backoff, that /readyz shows */
        if (w->spec->role == PROC_TORCH_RUN && (r = torch_view_open(w, view)) < 0) {
                w->failures++;
                w->restarts++;
                snprintf(w->start_error, sizeof(w->start_error), "view: %s", strerror(-r));
                w->restart_at_ms = now_ms(d) + (uint64_t)(backoff_s(w) * 1000);
                d->status_dirty = true;
                return;
        }
        if ((w->spec->role_arg ? proctab_env_torch(w->spec->role, w->index, d->cfg.log_level, d->libexec_dir,
                                                   w->spec->role == PROC_TORCH_RUN ? view : d->torch_ext_root,
                                                   d->torch_pycache, &env)
                               : proctab_env(w->spec->role, w->index, &env)) < 0)
                return;
        uv_pipe_init(&d->loop, &w->to_child, 0);
        uv_pipe_init(&d->loop, &w->from_child, 0);
        w->to_child.data = w->from_child.data = w->proc.data = w;
        stdio[0].flags = UV_CREATE_PIPE | UV_READABLE_PIPE;
        stdio[0].data.stream = (uv_stream_t *)&w->to_child;
        stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
        stdio[1].data.stream = (uv_stream_t *)&w->from_child;
        stdio[2].flags = UV_INHERIT_FD;
        stdio[2].data.fd = 2;
        opt.file = args[0];
        opt.args = args;
        opt.env = env;
        opt.cwd = "/";
        opt.flags = UV_PROCESS_DETACHED;
        opt.stdio_count = 3;
        opt.stdio = stdio;
        opt.exit_cb = on_exit_cb;
        frame_decoder_init(&w->dec);
        w->killed_by_watchdog = w->result_seen = w->malformed = w->dying = false;
        w->handles_open = 3;
        r = uv_spawn(&d->loop, &w->proc, &opt);
        proctab_env_free(env);
        if (r < 0) {
                log_error("dispatch: starting %s failed: %s", args[0], uv_strerror(r));
                d->status_dirty = true;
                w->failures++;
                w->state = W_STOPPED;
                w->restarts++;
                uv_close((uv_handle_t *)&w->proc, on_handle_closed);
                uv_close((uv_handle_t *)&w->to_child, on_handle_closed);
                uv_close((uv_handle_t *)&w->from_child, on_handle_closed);
                return;
        }
        /* Compiles and kernelbench builds are throughput work and may fill
         * every core (one worker per core by default; a load_inline build
         * is nvcc and g++ for over a minute); the GPU workers' launches,
         * the kevald-torch run workers' start-up and judging (Python that
         * launches the kernels it times) and this loop are on the GPUs'
         * critical path. A higher nice value (a smaller CPU share under
         * contention, none lost on an idle host) keeps a burst of builds
         * from starving them. Relative to the server's own nice value; set
         * on the new process's only thread (its threads and the compilers
         * it starts inherit it). */
        if ((w->spec->role == PROC_COMPILE || w->spec->role == PROC_TORCH_BUILD) && d->cfg.compile_nice > 0) {
                int own, want;
                errno = 0;
                own = getpriority(PRIO_PROCESS, 0);
                want = (errno ? 0 : own) + d->cfg.compile_nice;
                if (setpriority(PRIO_PROCESS, (id_t)w->proc.pid, want > 19 ? 19 : want) < 0)
                        log_warn("dispatch: cannot lower %s worker %d's priority: %s", w->spec->name, w->index,
                                 strerror(errno));
        }
        w->state = W_STARTING;
        w->sent_at_ms = now_ms(d);
        w->deadline_ms = w->sent_at_ms + (uint64_t)(w->spec->hello_s * 1000);
        uv_read_start((uv_stream_t *)&w->from_child, on_alloc, on_read);
        d->status_dirty = true;
}

/* Is a worker of GPU @index (kevald-gpu or kevald-torch) running a job, or on its way out after one? */
bool gpu_reserved(Dispatcher *d, int index)
{
        for (int i = 0; i < d->n_workers; i++) {
                const Worker *w = &d->workers[i];
                if (w->spec->gpu && w->index == index && w->state != W_STOPPED &&
                    (w->state == W_BUSY || (w->state == W_EXITING && w->holds_gpu) || w->dying))
                        return true;
        }
        return false;
}

/* An idle worker of @role; for GPU workers, one whose GPU is not reserved. */
Worker *idle_worker(Dispatcher *d, ProcRole role)
{
        for (int i = 0; i < d->n_workers; i++) {
                Worker *w = &d->workers[i];
                if (w->spec->role == role && w->state == W_IDLE && !w->dying &&
                    (!w->spec->gpu || !gpu_reserved(d, w->index)))
                        return w;
        }
        return NULL;
}
