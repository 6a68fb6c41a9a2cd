/*
 * dispatch_torch - kernelbench jobs (language "kernelbench",
 * docs/kernelbench.md): the build stage, the run JOB, the build cache.
 *
 * A kernelbench job goes through the same stages as a CUDA one, with
 * kevald-torch workers in place of kevald-compile and kevald-gpu:
 *
 *   compile stage  the ModelNew module is built (imported with CUDA hidden,
 *                  load_inline's extension compiled) by a build worker into
 *                  its build folder <torch_ext_root>/<key>/, where key =
 *                  sha256(source, torch version, arch); the torch version is
 *                  the build workers' HELLO's, so a job claimed before the
 *                  first HELLO waits (wait_torch) until one comes. A build
 *                  RESULT is a compile request's answer like any other
 *                  (coalesced by key, retried, watchdog), cached in the
 *                  store's compile cache without a CUBIN; an entry counts
 *                  only while its folder exists.
 *   run stage      a run worker of a GPU (sharing the GPU's slot with the
 *                  kevald-gpu workers: one job on a GPU at a time) gets the
 *                  task's shape sets, the build folder and both sources (the
 *                  candidate, then the task's reference module) in the blob;
 *                  its RESULT is a GPU RESULT (resultcheck_gpu(),
 *                  gpu_done()).
 *
 * The build cache's folder is bounded (LIMIT_TORCH_EXT_BYTES_DEFAULT): the
 * least recently used build folders go first (torch_prune(), from the
 * tick, as the compile cache is pruned); a cache hit touches its folder.
 *
 * The build cache belongs to the build workers' user (65534 when the server
 * runs as root), and the modules they build are hostile code that may leave
 * links, files and folders anywhere in it (a build folder's name is
 * predictable: the torch version and the arch are public). So nothing here
 * that runs as root follows a link there: build folders are made and given
 * away through descriptors (torch_build_msg()), touched and examined without
 * following, and walked, given away and removed by fstree's descriptor-based
 * walks (torch_root_own(), torch_prune()).
 *
 * Part of the dispatcher: see dispatch.c for the theory of operation and
 * dispatch_int.h for what its files share.
 */
#include "server/dispatch/dispatch_int.h"

#include <dirent.h>
#include <fcntl.h>

#include "sandbox/sandbox.h"
#include "server/dispatch/fstree.h"

#define KB_CORRECTNESS_TRIALS 5 /* KernelBench's num_correct_trials */

static const char *request_source(const Job *j)
{
        const char *s = json_string_value(json_object_get(j->sj->request, "source"));

        return s ? s : "";
}

static void torch_key(Dispatcher *d, const char *source, uint8_t key[32])
{
        Sha256 s;

        sha256_init(&s);
        sha256_update(&s, "kevald-torch-build\0", 19);
        sha256_update(&s, source, strlen(source) + 1);
        sha256_update(&s, d->torch_version, strlen(d->torch_version) + 1);
        sha256_update(&s, d->arch, strlen(d->arch) + 1);
        sha256_final(&s, key);
}

static void build_dir_of(Dispatcher *d, const uint8_t key[32], char out[PATH_MAX])
{
        char hex[65];

        hex_encode(key, 32, hex);
        snprintf(out, PATH_MAX, "%s/%s", d->torch_ext_root, hex);
}

/*
 * A checked build RESULT from the store's compile cache whose build folder
 * still exists (touched: the prune keeps recently used ones); NULL on a miss.
 */
static Artifact *torch_lookup(Dispatcher *d, const uint8_t key[32])
{
        char why[RESULTCHECK_WHY_BYTES], dir[PATH_MAX];
        json_t *compile = NULL;
        uint8_t *blob = NULL;
        size_t len = 0;
        Artifact *a = NULL;
        struct stat st;

        if (store_cache_get(d->store, key, &compile, &blob, &len) != 0)
                return NULL;
        build_dir_of(d, key, dir);
        if (len != 0 || resultcheck_torch_compile(compile, why) != 0) {
                log_warn("dispatch: ignoring a kernelbench build cache entry that fails its checks: %s",
                         len ? "it holds a blob" : why);
                goto out;
        }
        /* a link where the folder was (a build's) is no folder: built again, torch_build_msg() replaces it */
        if (json_is_true(json_object_get(compile, "ok")) && (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)))
                goto out; /* pruned: build again */
        utimensat(AT_FDCWD, dir, NULL, AT_SYMLINK_NOFOLLOW);
        a = artifact_new(key, compile, NULL, 0, 1);
out:
        json_decref(compile);
        free(blob);
        return a;
}

/* Get @j's build: from the cache, or a build request (coalesced). */
static void torch_job_need(Dispatcher *d, Job *j)
{
        const char *src = request_source(j);
        uint8_t key[32];
        int r;

        j->wait_torch = false;
        torch_key(d, src, key);
        j->art[SLOT_CAND] = torch_lookup(d, key);
        if (j->art[SLOT_CAND]) {
                d->cache_hits++;
                torch_job_built(d, j);
                return;
        }
        d->cache_misses++;
        r = compile_request(d, j, SLOT_CAND, key, "kernelbench", NULL, NULL, src, false);
        if (r < 0) {
                log_error("dispatch: job %" PRId64 ": %s; back to the queue", j->sj->id, strerror(-r));
                record_requeue(d, j->sj->id, STAGE_COMPILE, j->sj->task);
                job_unlink(d, j);
                job_free(j);
        }
}

/* Start the compile stage of a claimed kernelbench job (linked into d->jobs). */
void torch_job_begin(Dispatcher *d, Job *j)
{
        j->kb = kbtasks_get(d->cfg.kbtasks, j->sj->task);
        if (!j->kb) {
                job_finish(d, j, "internal_error", pipeline_error("internal", "task '%s' has no KernelBench entry "
                                                                  "on this host", j->sj->task ? j->sj->task : "?"));
                return;
        }
        if (d->n_torch_build == 0) {
                job_finish(d, j, "internal_error", pipeline_error("internal", "this host runs no kevald-torch "
                                                                  "workers (torch_workers = 0): a fleet's hosts "
                                                                  "set torch_workers alike"));
                return;
        }
        if (!d->torch_version[0]) {
                j->wait_torch = true; /* torch_workers_ready() goes on with it */
                return;
        }
        torch_job_need(d, j);
}

/* A build worker said HELLO: jobs that waited for the torch version go on. */
void torch_workers_ready(Dispatcher *d)
{
        bool again = true;

        /* torch_job_need() may end and unlink a job: restart the walk after each */
        while (again) {
                again = false;
                for (Job *j = d->jobs; j; j = j->next)
                        if (j->wait_torch) {
                                torch_job_need(d, j);
                                again = true;
                                break;
                        }
        }
}

/* The build is in (a RESULT, or the cache): decide what happens to the job. */
void torch_job_built(Dispatcher *d, Job *j)
{
        json_t *cand = j->art[SLOT_CAND]->compile, *section;
        const char *e = json_string_value(json_object_get(cand, "error"));
        const char *log = jsonutil_str(cand, "log", "");
        char hex[65];

        if (!json_is_true(json_object_get(cand, "ok"))) {
                if (e && strcmp(e, "no_model_new") == 0) {
                        json_t *err = pipeline_error("submission", "the module's ModelNew is not a torch.nn.Module "
                                                     "subclass (or is missing after import)");
                        json_object_set_new(err, "pointer", json_string("/source"));
                        job_finish(d, j, "rejected", err);
                } else if (e && (strcmp(e, "compile") == 0 || strcmp(e, "import") == 0)) {
                        job_finish(d, j, "compile_error",
                                   pipeline_error("compile", "%s", strcmp(e, "compile") == 0
                                                  ? "the module's extension did not build (load_inline)"
                                                  : "importing the ModelNew module failed"));
                } else if (e && strcmp(e, "timeout") == 0) {
                        bool hung = strstr(log, "stopped answering") != NULL;
                        job_finish(d, j, "compile_error", pipeline_error("compile", "the build exceeded the time "
                                                                         "limit%s%s", hung ? ": " : "",
                                                                         hung ? log : ""));
                } else {
                        job_finish(d, j, "internal_error", pipeline_error("internal", "%s",
                                                                          log[0] ? log : "build worker failure"));
                }
                return;
        }
        if (strcmp(j->sj->mode, "full") != 0) {
                job_finish(d, j, "compiled", NULL);
                return;
        }
        section = json_object();
        json_object_set_new(section, "candidate", compile_section_of(j, SLOT_CAND));
        hex_encode(j->art[SLOT_CAND]->key, 32, hex);
        json_object_set_new(section, "candidate_key", json_string(hex));
        record_owe(d, OWE_COMPILED, j->sj->id, STAGE_COMPILE, NULL, 0, section, j->sj->task);
        job_unlink(d, j);
        job_free(j);
}

/**
 * torch_root_own() - give the build cache's folder to the build workers' identity
 * @root: the folder (torch_ext_root, a real path); borrowed
 *
 * A kevald-torch build worker started as root drops to nobody
 * (SANDBOX_NOBODY_UID:GID) only where nobody may write its artifact root, and
 * refuses every job otherwise (sandbox/proc.c): it never builds as root. So a
 * server running as root gives the folder to nobody once at start when root owns
 * it (it just made it, or found it so), with what root owns beneath it (builds
 * left by an older server whose build workers kept root, which a rebuild of the
 * same key must be able to write); a folder another user owns is left as the
 * operator made it. Not root: nothing to do. Logs what it did or why it could not.
 *
 * What lies beneath may be a build's doing (a link to /etc, a hard link to a
 * file of root's, a folder swapped for a link while the walk runs), so the walk
 * is fstree_own_at()'s: through descriptors, a link given itself and never what
 * it names, a file with a second name skipped, each folder after its entries
 * and the top last, on the top's file system only.
 *
 * Return: 0 (given, or nothing to do), or a negative errno: the folder could not
 * be examined or given.
 */
int torch_root_own(const char *root)
{
        struct stat st;
        unsigned left = 0;
        int r = 0;

        if (geteuid() != 0)
                goto out;
        if (stat(root, &st) < 0) {
                r = -errno;
                log_error("dispatch: cannot examine the kernelbench build cache '%s': %s", root, strerror(errno));
                goto out;
        }
        if (st.st_uid != 0)
                goto out;
        r = fstree_own_at(AT_FDCWD, root, SANDBOX_NOBODY_UID, SANDBOX_NOBODY_GID, &left);
        if (r < 0) {
                log_error("dispatch: cannot give the kernelbench build cache '%s' to uid %u: %s (its build "
                          "workers will refuse to build as root)", root, SANDBOX_NOBODY_UID, strerror(-r));
                goto out;
        }
        log_info("dispatch: gave the kernelbench build cache '%s' to uid %u gid %u: build workers run as that "
                 "user, never as root", root, SANDBOX_NOBODY_UID, SANDBOX_NOBODY_GID);
        if (left > 0)
                log_warn("dispatch: %u entries beneath '%s' stay root's (a change failed, a file with a second "
                         "name, deeper than %d folders, another file system): rebuilds there may fail", left, root,
                         FSTREE_DEPTH_MAX);
out:
        return r;
}

#define BUILD_DIR_TRIES 3 /* torch_build_msg(): what stood in the folder's place removed, made again */

/**
 * torch_build_msg() - the build JOB of a kernelbench compile request, its folder made
 * @d:       the dispatcher; borrowed
 * @req:     the request ("arch" the GPUs', for which load_inline builds: part of the key); borrowed
 * @ret_msg: on success, a new object: the JOB
 *
 * The build folder <torch_ext_root>/<key hex> is made (or kept, a folder already) and
 * given to the artifact root's owner: a build worker started as root drops to nobody
 * when nobody owns the root (sandbox/proc.c), and must then be able to write it. Its
 * name is predictable and the root writable by the build workers' user, so a build may
 * have put anything there: a link (to /etc, say) or a file in the folder's place is
 * removed, never followed (unlinkat(); logged), and the folder made again; the owner
 * changes through the folder's own descriptor (opened with O_NOFOLLOW), never by path.
 *
 * Return: 0, or a negative errno: no folder could be made there (logged); the request
 * must not be sent (torch_build_fail()).
 */
int torch_build_msg(Dispatcher *d, const CompileReq *req, json_t **ret_msg)
{
        char dir[PATH_MAX], hex[65];
        struct stat root;
        json_t *msg;
        int rootfd, fd = -1, r = 0, e;

        build_dir_of(d, req->key, dir);
        hex_encode(req->key, 32, hex);
        rootfd = open(d->torch_ext_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0 || fstat(rootfd, &root) < 0) {
                r = -errno;
                log_warn("dispatch: cannot open the kernelbench build cache '%s': %s", d->torch_ext_root,
                         strerror(-r));
                goto out;
        }
        for (int tries = 1; fd < 0; tries++) {
                if (mkdirat(rootfd, hex, 0755) < 0 && errno != EEXIST) {
                        r = -errno;
                        log_warn("dispatch: cannot make the build folder '%s': %s", dir, strerror(-r));
                        goto out;
                }
                fd = openat(rootfd, hex, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0)
                        break;
                e = errno;
                if ((e != ELOOP && e != ENOTDIR && e != ENOENT) || tries == BUILD_DIR_TRIES) {
                        r = -e;
                        log_warn("dispatch: cannot make the build folder '%s' safely: %s", dir, strerror(e));
                        goto out;
                }
                if (e == ENOENT)
                        continue; /* removed meanwhile: made again */
                log_warn("dispatch: the build folder '%s' was not a folder (a link or a file a build left?): "
                         "removed, not followed, and made again", dir);
                if (unlinkat(rootfd, hex, 0) < 0 && errno != ENOENT) {
                        r = -errno;
                        log_warn("dispatch: cannot remove what stands in the build folder's place '%s': %s", dir,
                                 strerror(-r));
                        goto out;
                }
        }
        if (root.st_uid != geteuid() && fchown(fd, root.st_uid, root.st_gid) < 0)
                log_warn("dispatch: cannot give the build folder '%s' to uid %u: %s", dir, (unsigned)root.st_uid,
                         strerror(errno));
        msg = json_pack("{s:I, s:s, s:i, s:s, s:s}", "id", (json_int_t)d->compiles_sent + 1, "kind", "build",
                        "deadline_ms", d->cfg.torch_build_timeout_ms, "build_dir", dir, "arch", req->arch);
        if (!msg) {
                r = -ENOMEM;
                goto out;
        }
        *ret_msg = msg;
out:
        if (fd >= 0)
                close(fd);
        if (rootfd >= 0)
                close(rootfd);
        return r;
}

/**
 * torch_build_fail() - end a kernelbench compile request that no build worker answered
 * @d:   the dispatcher; borrowed
 * @req: the request, in d->compiles and not in flight; freed (compile_done())
 * @log: why, for the jobs' internal_error: an infrastructure fault, not the source's; borrowed
 *
 * Not cached: the same source is built again by a later job.
 */
void torch_build_fail(Dispatcher *d, CompileReq *req, const char *log)
{
        json_t *res = json_pack("{s:b, s:s, s:s, s:s, s:f, s:s}", "ok", 0, "error", "internal", "log", log, "arch",
                                d->arch, "compile_ms", 0.0, "torch", d->torch_version);

        compile_done(d, req, res, NULL, 0, false);
        json_decref(res);
}

/*
 * A checked build RESULT as the compile section stores it: ok, error, log
 * (with log_truncated), compile_ms (its wall_ms), arch and torch. A new object.
 */
json_t *torch_build_result(Dispatcher *d, json_t *msg)
{
        json_t *e = json_object_get(msg, "error");
        json_t *out = json_pack("{s:O, s:O, s:s, s:b, s:f, s:s, s:s}", "ok", json_object_get(msg, "ok"), "error",
                                e ? e : json_null(), "log", jsonutil_str(msg, "log", ""), "log_truncated",
                                json_is_true(json_object_get(msg, "log_truncated")), "compile_ms",
                                json_number_value(json_object_get(msg, "wall_ms")), "arch", d->arch, "torch",
                                d->torch_version);
        return out;
}

Artifact *torch_artifact_by_hex(Dispatcher *d, const char *hex)
{
        uint8_t key[32];

        return hex && hex_decode(hex, key, sizeof(key)) == 0 ? torch_lookup(d, key) : NULL;
}

/*
 * The run JOB of claimed kernelbench job @j (j->gjob). Return: 1 ready to
 * send, 0 the job ended or went back to the compile stage here, <0 error.
 */
int torch_run_prepare(Dispatcher *d, Job *j)
{
        StoreJob *sj = j->sj;
        const char *cand = request_source(j);
        size_t n_cand = strlen(cand), n_ref;
        char seedhex[17];
        double deadline;
        json_t *shapes = json_array(), *s;
        size_t i;

        j->kb = kbtasks_get(d->cfg.kbtasks, sj->task);
        if (!j->kb || !d->torch_ext_root) {
                json_t *e = !j->kb ? pipeline_error("internal", "task '%s' has no KernelBench entry on this host",
                                                    sj->task ? sj->task : "?")
                                   : pipeline_error("internal", "this host runs no kevald-torch workers "
                                                    "(torch_workers = 0): a fleet's hosts set torch_workers alike");
                json_t *res = pipeline_result(sj->task, "internal_error", NULL, NULL, e, j->seed);
                json_decref(e);
                json_decref(shapes);
                record_finish(d, sj, "internal_error", res);
                return 0;
        }
        j->art[SLOT_CAND] = torch_artifact_by_hex(d, json_string_value(json_object_get(sj->compile, "candidate_key")));
        if (!j->art[SLOT_CAND] || !json_is_true(json_object_get(j->art[SLOT_CAND]->compile, "ok"))) {
                json_decref(shapes);
                record_requeue(d, sj->id, STAGE_COMPILE, sj->task); /* the build folder was pruned: build again */
                return 0;
        }
        n_ref = strlen(j->kb->source);
        json_array_foreach(j->kb->shapes, i, s)
                json_array_append_new(shapes, json_pack("{s:O, s:O, s:f, s:f}", "name", json_object_get(s, "name"),
                                                        "constants", json_object_get(s, "constants"), "atol",
                                                        j->kb->atol, "rtol", j->kb->rtol));
        snprintf(seedhex, sizeof(seedhex), "%016" PRIx64, j->seed);
        deadline = d->cfg.job_timeout_s * 1000 < LIMIT_KB_DEADLINE_MS_MAX ? d->cfg.job_timeout_s * 1000
                                                                           : LIMIT_KB_DEADLINE_MS_MAX;
        j->gjob = json_pack("{s:I, s:s, s:s, s:s, s:I, s:O, s:i, s:{s:{s:i, s:I}, s:{s:I, s:I}}, s:o}", "id",
                            (json_int_t)sj->id, "kind", "run", "seed", seedhex, "mode", "full", "deadline_ms",
                            (json_int_t)deadline, "timing",
                            json_object_get(sj->request, "timing"), "correctness_trials", KB_CORRECTNESS_TRIALS,
                            "sources", "candidate", "offset", 0, "size", (json_int_t)n_cand,
                            "reference", "offset", (json_int_t)n_cand, "size", (json_int_t)n_ref, "shapes", shapes);
        if (!j->gjob)
                return -ENOMEM;
        run_job_launch_limits(d, j->gjob);
        return 1;
}

/*
 * Send @j's run JOB to kevald-torch run worker @w: its blob is the candidate's
 * source, then the reference's; its "build_dir" is @w's view, filled now with
 * the build's extensions (torchview_fill()). Return: 0 sent; 1 the job ended
 * or moved here (its build folder is gone, pruned since the claim: back to the
 * compile stage; its module built more extensions than TORCHVIEW_EXTS_MAX, or
 * larger ones than a view copies: rejected); <0 the view could not be filled
 * or the send failed (the caller sends the job back to the run queue and
 * retires the worker, whose next process gets a fresh view).
 */
int torch_run_send(Worker *w, Job *j)
{
        Dispatcher *d = w->d;
        const char *cand = request_source(j);
        char dir[PATH_MAX], view[PATH_MAX];
        unsigned linked = 0;
        int r = -ENOENT;

        build_dir_of(d, j->art[SLOT_CAND]->key, dir);
        if (w->view[0])
                r = torchview_fill(d->torch_run_root, w->view, dir, &linked);
        if (r == -ENOENT || r == -ELOOP || r == -ENOTDIR) {
                record_requeue(d, j->sj->id, STAGE_COMPILE, j->sj->task); /* pruned: build again */
                return 1;
        }
        if (r == -E2BIG || r == -EFBIG) {
                json_t *e = r == -E2BIG ? pipeline_error("submission", "the module built more than %d extensions "
                                                         "(load_inline calls): a run loads at most that many",
                                                         TORCHVIEW_EXTS_MAX)
                                        : pipeline_error("submission", "the module's extensions are larger than a "
                                                         "run loads (%llu MiB in all)",
                                                         TORCHVIEW_COPY_BYTES_MAX >> 20);
                json_t *res = pipeline_result(job_task_name(j), "rejected", json_object_get(j->sj->compile, "candidate"),
                                              NULL, e, j->seed);
                json_decref(e);
                record_finish(d, j->sj, "rejected", res);
                return 1;
        }
        if (r < 0) {
                log_warn("dispatch: job %" PRId64 ": filling torch-run worker %d's view '%s' from '%s': %s",
                         j->sj->id, w->index, w->view, dir, strerror(-r));
                return r;
        }
        snprintf(view, sizeof(view), "%s/%s", d->torch_run_root, w->view);
        if (json_object_set_new(j->gjob, "build_dir", json_string(view)) < 0)
                return -ENOMEM;
        return worker_send(w, FRAME_JOB, j->gjob, (const uint8_t *)cand, strlen(cand),
                           (const uint8_t *)j->kb->source, strlen(j->kb->source));
}

/* ---- a run worker's view of the build cache (torchview.h) ----------------------- */

/**
 * torch_view_open() - a fresh, empty view for the process run worker @w starts now
 * @w:    a kevald-torch run worker; its view's name is kept in w->view
 * @path: on success, the view's path: the process's KEVALD_TORCH_EXT_ROOT, which its
 *        sandbox lets it read (and nothing else of the cache)
 *
 * Return: 0, or a negative errno (logged): the worker must not start.
 */
int torch_view_open(Worker *w, char path[PATH_MAX])
{
        Dispatcher *d = w->d;
        int r;

        torch_view_close(w);
        r = d->torch_run_root ? torchview_make(d->torch_run_root, ++d->torch_views, w->view) : -ENOENT;
        if (r == -ENOENT && d->torch_run_root && mkdir(d->torch_run_root, 0755) == 0) {
                log_warn("dispatch: the views' folder '%s' was gone: made again", d->torch_run_root);
                r = torchview_make(d->torch_run_root, ++d->torch_views, w->view);
        }
        if (r < 0) {
                w->view[0] = '\0';
                log_error("dispatch: cannot make a view of the kernelbench build cache for torch-run worker %d: %s",
                          w->index, strerror(-r));
                return r;
        }
        snprintf(path, PATH_MAX, "%s/%s", d->torch_run_root, w->view);
        return 0;
}

/* torch_view_close() - remove run worker @w's view (its process is gone), if it has one. */
void torch_view_close(Worker *w)
{
        int r;

        if (!w->view[0])
                return;
        r = torchview_drop(w->d->torch_run_root, w->view);
        if (r < 0)
                log_warn("dispatch: could not remove torch-run worker %d's view '%s': %s", w->index, w->view,
                         strerror(-r));
        w->view[0] = '\0';
}

/* ---- the build cache's folder -------------------------------------------------- */

typedef struct ExtDir {
        char name[65];
        time_t mtime;
        uint64_t bytes;
} ExtDir;

static int by_age(const void *a, const void *b)
{
        time_t x = ((const ExtDir *)a)->mtime, y = ((const ExtDir *)b)->mtime;

        return x < y ? -1 : x > y;
}

/*
 * Bound the build cache's folder to LIMIT_TORCH_EXT_BYTES_DEFAULT: the least
 * recently used build folders (by their mtime: a cache hit touches it) are
 * removed until the rest fit. A folder a queued or running build writes to
 * is never the oldest for long; a job whose folder goes is built again
 * (torch_run_prepare()). The folders are written by the build workers' user
 * while this runs as root: they are examined without following a link (one
 * that stands in a folder's place is not a build: skipped), sized and removed
 * by fstree's walks through descriptors relative to the open root, which
 * never follow a link and stay on its file system.
 */
void torch_prune(Dispatcher *d)
{
        DIR *dir = d->torch_ext_root ? opendir(d->torch_ext_root) : NULL;
        ExtDir *list = NULL;
        size_t n = 0, cap = 0;
        uint64_t total = 0;
        struct dirent *e;
        int r;

        if (!dir)
                return;
        while ((e = readdir(dir))) {
                struct stat st;
                uint64_t bytes;
                if (strlen(e->d_name) != 64)
                        continue;
                if (fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
                    fstree_size_at(dirfd(dir), e->d_name, &bytes) != 0)
                        continue;
                if (n == cap) {
                        ExtDir *g = realloc(list, (cap = cap ? cap * 2 : 64) * sizeof(*g));
                        if (!g)
                                break;
                        list = g;
                }
                snprintf(list[n].name, sizeof(list[n].name), "%s", e->d_name);
                list[n].mtime = st.st_mtime;
                list[n].bytes = bytes;
                total += bytes;
                n++;
        }
        if (n > 1)      /* qsort() wants a non-null array even for no elements */
                qsort(list, n, sizeof(*list), by_age);
        for (size_t i = 0; i < n && total > LIMIT_TORCH_EXT_BYTES_DEFAULT; i++) {
                r = fstree_remove_at(dirfd(dir), list[i].name);
                total -= list[i].bytes;
                if (r < 0)
                        log_warn("dispatch: kernelbench build cache: could not remove all of '%s': %s", list[i].name,
                                 strerror(-r));
                else
                        log_info("dispatch: kernelbench build cache: removed '%s' (least recently used)",
                                 list[i].name);
        }
        closedir(dir);
        free(list);
}

/*
 * Is every kevald-torch worker of @role failing to start (failures_to_degrade
 * consecutive failed starts each, none ready)? @why gets the start-up error
 * one of them last reported in a HELLO (Worker.start_error).
 */
static bool pool_failed(Dispatcher *d, ProcRole role, char *why, size_t why_len)
{
        int n = 0;

        snprintf(why, why_len, "no reason given");
        for (int i = 0; i < d->n_workers; i++) {
                const Worker *w = &d->workers[i];
                if (w->spec->role != role)
                        continue;
                if (w->state == W_IDLE || w->state == W_BUSY || w->failures < w->spec->failures_to_degrade)
                        return false;
                if (w->start_error[0])
                        snprintf(why, why_len, "%s", w->start_error);
                n++;
        }
        return n > 0;
}

/*
 * A kevald-torch pool that cannot start (no PyTorch, no GPU, the sandbox)
 * would leave its jobs waiting for as long as it fails: while every build
 * worker has failed its starts, the builds waiting for one (and the jobs
 * waiting for a build worker's HELLO) end as internal_error, naming the
 * worker's own start-up error; while every run worker has, so do the
 * kernelbench jobs waiting as orphans for one. Called from the tick.
 */
void torch_check_pools(Dispatcher *d)
{
        char why[400], log[600];
        json_t *res;

        if (d->cfg.torch_workers <= 0)
                return;
        if (pool_failed(d, PROC_TORCH_BUILD, why, sizeof(why))) {
                snprintf(log, sizeof(log), "no kevald-torch build worker could start (an infrastructure fault, not "
                         "the source's): %s", why);
                for (bool again = true; again;) {
                        again = false;
                        for (Job *j = d->jobs; j; j = j->next)
                                if (j->wait_torch) {
                                        log_warn("dispatch: job %" PRId64 ": %s", j->sj->id, log);
                                        job_finish(d, j, "internal_error", pipeline_error("internal", "%s", log));
                                        again = true;
                                        break;
                                }
                }
                for (bool again = true; again;) {
                        again = false;
                        for (CompileReq *req = d->compiles; req; req = req->next)
                                if (!req->in_flight && strcmp(req->language, "kernelbench") == 0) {
                                        torch_build_fail(d, req, log);
                                        again = true;
                                        break;
                                }
                }
        }
        if (d->orphans && pool_failed(d, PROC_TORCH_RUN, why, sizeof(why))) {
                Job **p = &d->orphans;
                snprintf(log, sizeof(log), "no kevald-torch run worker could start (an infrastructure fault, not "
                         "the kernel's): %s", why);
                while (*p) {
                        Job *j = *p;
                        json_t *e;
                        if (!j->kb) {
                                p = &j->next;
                                continue;
                        }
                        *p = j->next;
                        d->n_orphans--;
                        e = pipeline_error("internal", "%s", log);
                        res = pipeline_result(job_task_name(j), "internal_error",
                                              json_object_get(j->sj->compile, "candidate"), NULL, e, j->seed);
                        json_decref(e);
                        record_finish(d, j->sj, "internal_error", res);
                        job_free(j);
                }
                d->status_dirty = true;
        }
}
