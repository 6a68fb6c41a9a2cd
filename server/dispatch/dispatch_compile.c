/*
 * dispatch_compile - the compile stage: artifacts (compiled CUBINs) and the
 * compile cache, compile requests and their coalescing, claiming a job and
 * waiting for its CUBINs.
 *
 * Part of the dispatcher: see dispatch.c for the theory of operation and
 * dispatch_int.h for what its files share.
 */
#include "server/dispatch/dispatch_int.h"

void artifact_free(Artifact *a)
{
        if (!a)
                return;
        json_decref(a->compile);
        free(a->cubin);
        free(a);
}

/*
 * Where the plain and the fenced build lie in the blob: compile.fence's
 * offset and size when they describe exactly the blob's tail after a
 * non-empty plain part; otherwise the whole blob is the plain build.
 */
static void artifact_split(Artifact *a)
{
        json_t *fence = json_object_get(a->compile, "fence");
        json_int_t off = json_integer_value(json_object_get(fence, "offset"));
        json_int_t size = json_integer_value(json_object_get(fence, "size"));

        a->plain_len = a->cubin_len;
        a->fenced_len = 0;
        if (off > 0 && size > 0 && (uint64_t)off + (uint64_t)size == a->cubin_len) {
                a->plain_len = (size_t)off;
                a->fenced_len = (size_t)size;
        }
}

Artifact *artifact_new(const uint8_t key[32], json_t *compile, const uint8_t *cubin, size_t len, int cache_hit)
{
        Artifact *a = calloc(1, sizeof(*a));

        if (!a)
                return NULL;
        memcpy(a->key, key, 32);
        a->compile = json_incref(compile);
        a->cache_hit = cache_hit;
        if (len) {
                a->cubin = malloc(len);
                if (!a->cubin) {
                        artifact_free(a);
                        return NULL;
                }
                memcpy(a->cubin, cubin, len);
                a->cubin_len = len;
        }
        artifact_split(a);
        return a;
}

static Artifact *artifact_copy(const Artifact *a, int cache_hit)
{
        return artifact_new(a->key, a->compile, a->cubin, a->cubin_len, cache_hit);
}

/* Keep a copy of a reference artifact in the ring of recent ones (oldest replaced). */
static void ref_remember(Dispatcher *d, const Artifact *a)
{
        artifact_free(d->refs[d->ref_next]);
        d->refs[d->ref_next] = artifact_copy(a, 1);
        d->ref_next = (d->ref_next + 1) % REF_CACHE_SLOTS;
}

/*
 * Look in the in-memory reference slots, then in the store's compile cache.
 * A cache entry is checked as a fresh RESULT would be (an entry written
 * before RESULTs were checked may be forged): one that fails is a miss, and
 * the compile that follows replaces it.
 */
static Artifact *artifact_lookup(Dispatcher *d, const uint8_t key[32], bool remember, bool compile_only)
{
        char why[RESULTCHECK_WHY_BYTES];
        json_t *compile = NULL;
        uint8_t *cubin = NULL;
        size_t len = 0;
        Artifact *a;

        for (int i = 0; i < REF_CACHE_SLOTS; i++)
                if (d->refs[i] && memcmp(d->refs[i]->key, key, 32) == 0)
                        return artifact_copy(d->refs[i], 1);
        if (store_cache_get(d->store, key, &compile, &cubin, &len) != 0)
                return NULL;
        if (resultcheck_compile(compile, cubin, len, d->arch, why) != 0) {
                log_warn("dispatch: ignoring a compile cache entry that fails its checks: %s", why);
                json_decref(compile);
                free(cubin);
                return NULL;
        }
        if (!compile_only && json_object_get(compile, "group_prefix")) {
                /* a merged compile's (on_group_result()): its CUBIN names the kernels otherwise, so it
                 * answers a compile-only candidate alone; a miss here, and the compile that follows
                 * replaces it */
                json_decref(compile);
                free(cubin);
                return NULL;
        }
        a = artifact_new(key, compile, cubin, len, 1);
        json_decref(compile);
        free(cubin);
        if (a && remember)
                ref_remember(d, a);
        return a;
}

/* ---- compile requests ----------------------------------------------------- */

void compile_req_free(CompileReq *req)
{
        if (!req)
                return;
        free(req->language);
        free(req->arch);
        json_decref(req->options);
        json_decref(req->name_expressions);
        free(req->source);
        free(req->waiting);
        free(req->slots);
        free(req);
}

static void job_artifact_ready(Dispatcher *d, Job *j, Slot slot, Artifact *a);

/* Deliver a compile outcome to every job waiting for it. */
void compile_done(Dispatcher *d, CompileReq *req, json_t *result, const uint8_t *cubin, size_t len,
                         bool cacheable)
{
        for (CompileReq **p = &d->compiles; *p; p = &(*p)->next)
                if (*p == req) {
                        *p = req->next;
                        break;
                }
        if (cacheable && store_cache_put(d->store, req->key, result, cubin, len) < 0)
                log_warn("dispatch: storing a compile result in the cache failed");
        for (size_t i = 0; i < req->n_waiting; i++) {
                Artifact *a = artifact_new(req->key, result, cubin, len, 0);
                if (req->slots[i] == SLOT_REF && a && json_is_true(json_object_get(result, "ok")))
                        ref_remember(d, a);
                job_artifact_ready(d, req->waiting[i], req->slots[i], a);
        }
        compile_req_free(req);
}

/*
 * A request ended abnormally on its worker (it died, exited, or sent an
 * invalid RESULT): that counts an attempt; it goes to the next worker until
 * max_attempts, then every job waiting for it ends as internal_error.
 */
void compile_req_fault(Dispatcher *d, CompileReq *req, const char *why)
{
        json_t *res;

        if (++req->attempts < d->cfg.max_attempts) {
                log_warn("dispatch: compile request goes to another worker (attempt %d of %d): %s", req->attempts + 1,
                         d->cfg.max_attempts, why);
                return; /* it stays queued */
        }
        res = json_pack("{s:b, s:s, s:s+}", "ok", 0, "error", "internal", "log",
                        "the compile worker failed on this source on every attempt (an infrastructure fault, not the "
                        "source's); last: ", why);
        compile_done(d, req, res, NULL, 0, false);
        json_decref(res);
}

/*
 * The watchdog killed a compile worker that did not answer @limit_s after
 * the request: the worker's own time limit answers a compile that runs too
 * long (a timeout RESULT), so silence is the worker's fault first. The
 * request is retried once on a fresh worker; if that one stops answering
 * too, the source is blamed (compile_error) only when some other compile
 * was answered since the first hang (the workers are sound); otherwise
 * every worker hangs, and the jobs end as internal_error. The log says which.
 */
void compile_req_hung(Dispatcher *d, CompileReq *req, double limit_s)
{
        bool first = req->hangs++ == 0;
        json_t *res;
        char log[320];

        req->attempts++;
        if (first)
                req->answers_at_hang = d->compile_answers;
        if (first && req->attempts < d->cfg.max_attempts) {
                log_warn("dispatch: a compile worker stopped answering (killed after %.0f s): the request goes to a "
                         "fresh worker", limit_s);
                return;
        }
        if (!first && d->compile_answers > req->answers_at_hang) {
                snprintf(log, sizeof(log), "compilation did not finish: the compile worker stopped answering on this "
                         "source twice, on two workers (each killed after %.0f s), while other compiles completed; "
                         "the source is taken to be the cause (runaway template instantiation or macro expansion?)",
                         limit_s);
                res = json_pack("{s:b, s:s, s:s, s:b}", "ok", 0, "error", "timeout", "log", log, "log_truncated", 0);
        } else {
                snprintf(log, sizeof(log), "the compile worker stopped answering (killed after %.0f s) %s: an "
                         "infrastructure fault, not the source's", limit_s,
                         first ? "on the last attempt this source had"
                               : "on this source twice while no other compile completed");
                res = json_pack("{s:b, s:s, s:s}", "ok", 0, "error", "internal", "log", log);
        }
        compile_done(d, req, res, NULL, 0, false);
        json_decref(res);
}

static int compile_req_wait(CompileReq *req, Job *j, Slot slot)
{
        if (req->n_waiting == req->cap_waiting) {
                size_t cap = req->cap_waiting ? req->cap_waiting * 2 : 4;
                Job **w = realloc(req->waiting, cap * sizeof(*w));
                Slot *s;
                if (!w)
                        return -ENOMEM;
                req->waiting = w;
                s = realloc(req->slots, cap * sizeof(*s));
                if (!s)
                        return -ENOMEM;
                req->slots = s;
                req->cap_waiting = cap;
        }
        req->waiting[req->n_waiting] = j;
        req->slots[req->n_waiting++] = slot;
        j->pending++;
        return 0;
}

/* Get the artifact for (source, options...) into @slot of @j: cache, coalesced request, or new request. */
static int job_need(Dispatcher *d, Job *j, Slot slot, const char *language, json_t *options, json_t *names,
                    const char *source)
{
        /* a fenced build for every candidate a GPU may run: a compile-only one too where this host
         * has a GPU (its cached artifact serves a later evaluation of the same source), not on a
         * host without one (the fenced build is half again the compile's time, and only a GPU run
         * uses it); never for a trusted reference */
        bool compile_only = j->sj->mode && !strcmp(j->sj->mode, "compile");
        bool fence = slot == SLOT_CAND && !d->cfg.no_fence && (!compile_only || d->n_clocks > 0);
        uint8_t key[32];

        pipeline_cache_key(language, d->arch, d->nvrtc, fence, options, names, source, strlen(source), key);
        j->art[slot] = artifact_lookup(d, key, slot == SLOT_REF, compile_only && slot == SLOT_CAND);
        if (j->art[slot]) {
                d->cache_hits++;
                return 0;
        }
        d->cache_misses++;
        return compile_request(d, j, slot, key, language, options, names, source, fence);
}

/*
 * Make @j wait in @slot for the artifact of @key: join the request of that
 * key in flight or queued (coalescing), or queue a new one (oldest first).
 * Return: 0, or -ENOMEM.
 */
int compile_request(Dispatcher *d, Job *j, Slot slot, const uint8_t key[32], const char *language, json_t *options,
                    json_t *names, const char *source, bool fence)
{
        size_t len = strlen(source);
        CompileReq *req;

        bool compile_only = slot == SLOT_CAND && j->sj->mode && strcmp(j->sj->mode, "compile") == 0;

        for (req = d->compiles; req; req = req->next)
                if (memcmp(req->key, key, 32) == 0 && (!req->grouped || compile_only))
                        return compile_req_wait(req, j, slot); /* a merged result serves compile-only jobs alone */
        req = calloc(1, sizeof(*req));
        if (!req)
                return -ENOMEM;
        memcpy(req->key, key, 32);
        req->language = strdup(language);
        req->arch = strdup(d->arch);
        req->options = options ? json_incref(options) : json_array();
        req->name_expressions = names ? json_incref(names) : json_array();
        req->source = strdup(source);
        req->source_len = len;
        req->fence = fence;
        if (!req->language || !req->arch || !req->source || compile_req_wait(req, j, slot) < 0) {
                compile_req_free(req);
                return -ENOMEM;
        }
        /* append: oldest first */
        CompileReq **p = &d->compiles;
        while (*p)
                p = &(*p)->next;
        *p = req;
        return 0;
}

static void job_compiled(Dispatcher *d, Job *j);

static void job_artifact_ready(Dispatcher *d, Job *j, Slot slot, Artifact *a)
{
        j->art[slot] = a;
        if (--j->pending == 0)
                job_compiled(d, j);
}

/* Both CUBINs are in: decide what happens to the job. */
static void job_compiled(Dispatcher *d, Job *j)
{
        json_t *req = j->sj->request;
        json_t *cand = j->art[SLOT_CAND] ? j->art[SLOT_CAND]->compile : NULL;
        json_t *ref = j->art[SLOT_REF] ? j->art[SLOT_REF]->compile : NULL;
        bool full = strcmp(j->sj->mode, "full") == 0;
        json_t *plan = json_object_get(req, "plan");
        SpecError err = { 0 };
        json_t *section;
        char hex[65];

        if (!j->art[SLOT_CAND]) {
                job_finish(d, j, "internal_error", pipeline_error("internal", "out of memory"));
                return;
        }
        if (j->kb) {
                torch_job_built(d, j);
                return;
        }
        if (!json_is_true(json_object_get(cand, "ok"))) {
                const char *e = json_string_value(json_object_get(cand, "error"));
                const char *log = jsonutil_str(cand, "log", "");
                bool hung = strstr(log, "stopped answering") != NULL; /* compile_req_hung() blamed the source */
                if (e && strcmp(e, "internal") == 0)
                        job_finish(d, j, "internal_error", pipeline_error("internal", "%s",
                                   jsonutil_str(cand, "log", "compile worker failure")));
                else if (e && strcmp(e, "timeout") == 0)
                        job_finish(d, j, "compile_error", pipeline_error("compile",
                                   "compilation exceeded the time limit%s%s", hung ? ": " : "", hung ? log : ""));
                else
                        job_finish(d, j, "compile_error", pipeline_error("compile", "the candidate did not compile"));
                return;
        }
        if (j->task && json_is_array(plan) &&
            spec_check_plan(j->task, plan, json_object_get(req, "scratch"), cand, d->max_shared_optin, &err) != 0) {
                job_finish(d, j, "rejected", pipeline_error("plan", "%s (at %s)", err.message, err.pointer));
                return;
        }
        if (!full) {
                job_finish(d, j, "compiled", NULL);
                return;
        }
        if (!ref || !json_is_true(json_object_get(ref, "ok"))) {
                job_finish(d, j, "internal_error",
                           pipeline_error("internal", "the reference of task '%s' does not compile: %s",
                                          job_task_name(j), ref ? jsonutil_str(ref, "log", "") : "?"));
                return;
        }
        memset(&err, 0, sizeof(err));
        json_t *ref_plan = json_object_get(json_object_get(spec_task_json(j->task), "reference"), "plan");
        if (spec_check_plan(j->task, ref_plan, json_object_get(json_object_get(spec_task_json(j->task), "reference"), "scratch"),
                            ref, 0, &err) != 0) {
                job_finish(d, j, "internal_error", pipeline_error("internal", "task '%s': the reference plan does not "
                                                                  "match its kernels: %s", job_task_name(j), err.message));
                return;
        }
        /* Keep what the run stage needs: both compile sections and the cache keys. */
        section = json_object();
        json_object_set_new(section, "candidate", compile_section_of(j, SLOT_CAND));
        hex_encode(j->art[SLOT_CAND]->key, 32, hex);
        json_object_set_new(section, "candidate_key", json_string(hex));
        hex_encode(j->art[SLOT_REF]->key, 32, hex);
        json_object_set_new(section, "reference_key", json_string(hex));
        json_object_set_new(section, "reference", json_deep_copy(ref));
        record_owe(d, OWE_COMPILED, j->sj->id, STAGE_COMPILE, NULL, 0, section, j->sj->task);
        job_unlink(d, j);
        job_free(j);
}

/* ---- claiming ----------------------------------------------------------------- */

int job_resolve_task(Dispatcher *d, Job *j)
{
        json_t *req = j->sj->request;
        json_t *spec = json_object_get(req, "task_spec");
        SpecError err = { 0 };

        if (spec) {
                int r = spec_task_parse(spec, NULL, &j->own_task, &err);
                if (r != 0)
                        return r;
                j->task = j->own_task;
        } else if (j->sj->task) {
                j->task = d->cfg.tasks ? tasklib_get(d->cfg.tasks, j->sj->task) : NULL;
                if (!j->task)
                        return -ENOENT;
        }
        return 0;
}

Job *job_new(Dispatcher *d, StoreJob *sj)
{
        Job *j = calloc(1, sizeof(*j));

        if (!j)
                return NULL;
        j->sj = sj;
        j->seed = d->cfg.has_fixed_seed ? d->cfg.fixed_seed : pipeline_seed(d->secret, sj->id, sj->attempts);
        j->claimed_ms = now_ms(d);
        return j;
}

/* Start the compile stage of a claimed job. */
void job_begin_compile(Dispatcher *d, Job *j)
{
        json_t *req = j->sj->request;
        const char *lang = jsonutil_str(req, "language", "cuda");
        const char *src = json_string_value(json_object_get(req, "source"));
        int r;

        j->next = d->jobs;
        d->jobs = j;
        d->n_jobs++;
        if (strcmp(lang, "kernelbench") == 0) {
                torch_job_begin(d, j);
                return;
        }
        if (job_resolve_task(d, j) != 0) {
                job_finish(d, j, "internal_error", pipeline_error("internal", "task '%s' is no longer available",
                                                                  j->sj->task ? j->sj->task : "(inline)"));
                return;
        }
        j->pending = 1; /* held while requests are made, so none completes the job early */
        r = job_need(d, j, SLOT_CAND, lang, json_object_get(req, "options"), json_object_get(req, "name_expressions"),
                     src ? src : "");
        if (r == 0 && strcmp(j->sj->mode, "full") == 0 && j->task) {
                json_t *ref = json_object_get(spec_task_json(j->task), "reference");
                const char *rsrc = spec_task_reference_source(j->task);
                r = job_need(d, j, SLOT_REF, "cuda", spec_task_reference_options(j->task),
                             json_object_get(ref, "name_expressions"), rsrc ? rsrc : "");
        }
        if (r < 0) {
                /* Give it back rather than leave it to the reaper: this process renews
                 * its leases, so a job it holds but forgot would never expire. */
                log_error("dispatch: job %" PRId64 ": %s; back to the queue", j->sj->id, strerror(-r));
                if (j->pending == 1) {
                        record_requeue(d, j->sj->id, STAGE_COMPILE, j->sj->task);
                        job_unlink(d, j);
                        job_free(j);
                        return;
                }
                /* a request it waits for still completes it (a missing artifact ends it as internal_error) */
        }
        if (--j->pending == 0)
                job_compiled(d, j);
}

/* May @req go in a group JOB? CUDA without name expressions or a fenced build, waited for by
 * compile-only candidates alone (a merged member's CUBIN holds its kernels under other names:
 * nothing may run it). */
static bool req_groupable(const CompileReq *req)
{
        if (req->in_flight || req->no_group || req->fence || strcmp(req->language, "cuda") != 0 ||
            json_array_size(req->name_expressions) > 0 || req->n_waiting == 0)
                return false;
        for (size_t i = 0; i < req->n_waiting; i++) {
                const char *mode = req->waiting[i]->sj->mode;
                if (req->slots[i] != SLOT_CAND || !mode || strcmp(mode, "compile") != 0)
                        return false;
        }
        return true;
}

/*
 * The group JOB that @first starts, into @g: the groupable queue shared out
 * over the idle compile workers (a group each, of at most
 * COMPILE_GROUP_JOB_MAX), so that a short queue still uses every worker and
 * a long one pays NVRTC's cost per program once per group. Members share
 * @first's arch and options. Return: how many (0: send @first alone).
 */
static size_t gather_group(Dispatcher *d, CompileReq *first, CompileReq **g)
{
        size_t queued = 0, idle = 0, k, n = 0;

        if (!req_groupable(first))
                return 0;
        for (CompileReq *r = d->compiles; r; r = r->next)
                queued += req_groupable(r);
        for (int i = 0; i < d->n_workers; i++)
                idle += d->workers[i].spec->role == PROC_COMPILE && d->workers[i].state == W_IDLE &&
                        !d->workers[i].dying;
        k = (queued + (idle ? idle : 1) - 1) / (idle ? idle : 1);
        if (k > COMPILE_GROUP_JOB_MAX)
                k = COMPILE_GROUP_JOB_MAX;
        if (k > (size_t)(d->cfg.compile_group > 0 ? d->cfg.compile_group : 1))
                k = (size_t)(d->cfg.compile_group > 0 ? d->cfg.compile_group : 1);
        for (CompileReq *r = first; r && n < k; r = r->next)
                if (req_groupable(r) && strcmp(r->arch, first->arch) == 0 && json_equal(r->options, first->options))
                        g[n++] = r;
        return n >= 2 ? n : 0;
}

/* Send @n requests to @w as one group JOB: "group" their sources' lengths, the blob the sources. */
static int send_group(Dispatcher *d, Worker *w, CompileReq **g, size_t n)
{
        json_t *msg, *lens = json_array();
        size_t total = 0, off = 0;
        uint8_t *blob;
        int r;

        for (size_t i = 0; i < n; i++) {
                total += g[i]->source_len;
                if (!lens || json_array_append_new(lens, json_integer((json_int_t)g[i]->source_len))) {
                        json_decref(lens);
                        return -ENOMEM;
                }
        }
        msg = json_pack("{s:I, s:s, s:s, s:O, s:[], s:i, s:b, s:o}", "id", (json_int_t)d->compiles_sent + 1,
                        "language", "cuda", "arch", g[0]->arch, "options", g[0]->options, "name_expressions",
                        "deadline_ms", d->cfg.compile_timeout_ms, "fence", 0, "group", lens);
        blob = malloc(total ? total : 1);
        if (!msg || !blob) {
                json_decref(msg);
                free(blob);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                memcpy(blob + off, g[i]->source, g[i]->source_len);
                off += g[i]->source_len;
        }
        r = worker_send(w, FRAME_JOB, msg, blob, total, NULL, 0);
        json_decref(msg);
        free(blob);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                g[i]->in_flight = true;
                g[i]->grouped = true;
                w->group[i] = g[i];
        }
        w->n_group = w->group_left = n;
        return 0;
}

/* A compile JOB went to @w: @req, or a group (NULL; send_group() holds its requests). */
static void compile_sent(Dispatcher *d, Worker *w, CompileReq *req, int64_t timeout_ms)
{
        d->compiles_sent++;
        w->req = req;
        w->state = W_BUSY;
        w->result_seen = false;
        w->sent_at_ms = now_ms(d);
        w->deadline_ms = w->sent_at_ms + (uint64_t)timeout_ms + WATCHDOG_GRACE_MS;
        d->status_dirty = true;
}

void send_compiles(Dispatcher *d)
{
        char log[200];
        int r;

        /* a kernelbench request whose build folder cannot be made ends here (it leaves d->compiles):
         * the walk then starts again */
        for (bool again = true; again;) {
                again = false;
                for (CompileReq *req = d->compiles; req; req = req->next) {
                        Worker *w;
                        json_t *msg = NULL;
                        bool torch = strcmp(req->language, "kernelbench") == 0;
                        if (req->in_flight)
                                continue;
                        w = idle_worker(d, torch ? PROC_TORCH_BUILD : PROC_COMPILE);
                        if (!w)
                                continue; /* the other kind of worker may be free for a later request */
                        if (torch && (r = torch_build_msg(d, req, &msg)) < 0) {
                                snprintf(log, sizeof(log), "the build folder could not be made in the build cache: "
                                         "%s (an infrastructure fault, not the source's)", strerror(-r));
                                torch_build_fail(d, req, log);
                                again = true;
                                break;
                        }
                        if (!torch) {
                                CompileReq *g[COMPILE_GROUP_JOB_MAX];
                                size_t ng = gather_group(d, req, g);
                                if (ng) {
                                        if (send_group(d, w, g, ng) < 0) {
                                                worker_kill(w, "could not send a job");
                                                return;
                                        }
                                        d->compile_groups++;
                                        compile_sent(d, w, NULL, d->cfg.compile_timeout_ms);
                                        continue;
                                }
                        }
                        if (!torch)
                                msg = json_pack("{s:I, s:s, s:s, s:O, s:O, s:i, s:b}", "id",
                                                (json_int_t)d->compiles_sent + 1, "language", req->language, "arch",
                                                req->arch, "options", req->options, "name_expressions",
                                                req->name_expressions, "deadline_ms", d->cfg.compile_timeout_ms,
                                                "fence", req->fence);
                        if (!msg || worker_send(w, FRAME_JOB, msg, (const uint8_t *)req->source, req->source_len,
                                                NULL, 0) < 0) {
                                json_decref(msg);
                                worker_kill(w, "could not send a job");
                                return;
                        }
                        json_decref(msg);
                        req->in_flight = true;
                        compile_sent(d, w, req, torch ? d->cfg.torch_build_timeout_ms : d->cfg.compile_timeout_ms);
                }
        }
}

Artifact *artifact_by_hex(Dispatcher *d, const char *hex)
{
        uint8_t key[32];

        return hex_decode(hex, key, sizeof(key)) == 0 ? artifact_lookup(d, key, false, false) : NULL;
}
