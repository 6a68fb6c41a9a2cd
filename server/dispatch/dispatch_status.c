/*
 * dispatch_status - GPU clocks and the status snapshot other threads read.
 *
 * Part of the dispatcher: see dispatch.c for the theory of operation and
 * dispatch_int.h for what its files share.
 */
#include "server/dispatch/dispatch_int.h"

static const char *worker_state_name(const Worker *w)
{
        switch (w->state) {
        case W_STARTING:
                return "starting";
        case W_IDLE:
                return "ready";
        case W_BUSY:
        case W_EXITING:
                return "busy";
        default:
                return w->failures >= w->spec->failures_to_degrade ? "failed" : "restarting";
        }
}

static int gpu_time_state(Dispatcher *d, int index)
{
        bool ready = false;

        for (int i = 0; i < d->n_workers; i++) {
                const Worker *w = &d->workers[i];
                if (!w->spec->gpu || w->index != index || w->state == W_STOPPED)
                        continue;
                /* a job, or a hung one's worker on its way out; not a standby or a
                 * start-up that is being killed (that is time without a worker) */
                if (w->state == W_BUSY || (w->state == W_EXITING && w->holds_gpu) ||
                    (w->dying && w->killed_by_watchdog))
                        return GPU_T_RUNNING;
                if (w->state == W_IDLE && !w->dying)
                        ready = true;
        }
        return ready ? GPU_T_NO_WORK : GPU_T_NO_WORKER;
}

/* Charge the time since the last settle to each GPU's state then, and take
 * its state now. */
static void gpu_clocks_settle(Dispatcher *d)
{
        uint64_t now = uv_hrtime();

        for (int i = 0; i < d->n_clocks; i++) {
                GpuClock *c = &d->clocks[i];
                c->s[c->state] += (double)(now - c->since_ns) / 1e9;
                c->since_ns = now;
                c->state = gpu_time_state(d, c->index);
        }
}

void on_prepare(uv_prepare_t *h)
{
        gpu_clocks_settle(h->data);
}

static const GpuClock *gpu_clock(const Dispatcher *d, int index)
{
        for (int i = 0; i < d->n_clocks; i++)
                if (d->clocks[i].index == index)
                        return &d->clocks[i];
        return NULL;
}

/* Fold GPU worker @w into the status entry of its GPU (one per GPU). */
static void gpu_status_add(json_t *gpus, const Worker *w)
{
        static const char *const rank[] = { "failed", "restarting", "starting", "ready", "busy" };
        const char *state = worker_state_name(w), *name, *arch;
        json_t *g = NULL;
        size_t i;
        int a = 0, b = 0;

        json_array_foreach(gpus, i, g) {
                if (json_integer_value(json_object_get(g, "index")) == w->index)
                        break;
        }
        if (i == json_array_size(gpus)) {
                const GpuClock *c = gpu_clock(w->d, w->index);
                json_t *t = json_object();
                g = json_pack("{s:i, s:s, s:i, s:f, s:i, s:i, s:n}", "index", w->index, "state", state, "restarts", 0,
                              "busy_s", 0.0, "workers", 0, "workers_ready", 0, "queued");
                for (int k = 0; c && k < GPU_T_N; k++)
                        json_object_set_new(t, gpu_time_name[k], json_real(c->s[k]));
                json_object_set_new(g, "time_s", t);
                json_array_append_new(gpus, g);
        }
        /* the GPU's state is its most useful worker's: busy > ready > starting > restarting > failed */
        for (int k = 0; k < 5; k++) {
                if (strcmp(rank[k], state) == 0)
                        a = k;
                if (strcmp(rank[k], json_string_value(json_object_get(g, "state"))) == 0)
                        b = k;
        }
        if (a > b)
                json_object_set_new(g, "state", json_string(state));
        name = json_string_value(json_object_get(w->hello, "name"));
        arch = json_string_value(json_object_get(w->hello, "arch"));
        if (name && !json_object_get(g, "name"))
                json_object_set_new(g, "name", json_string(name));
        if (arch && !json_object_get(g, "arch"))
                json_object_set_new(g, "arch", json_string(arch));
        json_object_set_new(g, "restarts", json_integer(json_integer_value(json_object_get(g, "restarts")) + w->restarts));
        json_object_set_new(g, "busy_s", json_real(json_number_value(json_object_get(g, "busy_s")) + w->busy_s));
        json_object_set_new(g, "workers", json_integer(json_integer_value(json_object_get(g, "workers")) + 1));
        if (w->queued)
                json_object_set_new(g, "queued", json_integer(w->queued->sj->id));
        json_object_set_new(g, "workers_ready", json_integer(json_integer_value(json_object_get(g, "workers_ready")) +
                                                             (w->state == W_IDLE || w->state == W_BUSY ||
                                                              w->state == W_EXITING)));
}

/* What /readyz says of a kevald-torch worker: its state and its HELLO's fields. */
static json_t *torch_worker_status(const Worker *w)
{
        static const char *const fields[] = { "role", "pid", "ok", "device", "name", "arch", "torch", "cuda",
                                              "python", "pycache", "error", NULL };
        json_t *o = json_pack("{s:i, s:s, s:i, s:f}", w->spec->role == PROC_TORCH_RUN ? "gpu" : "slot", w->index,
                              "state", worker_state_name(w), "restarts", w->restarts, "busy_s", w->busy_s);

        for (const char *const *f = fields; o && *f; f++) {
                json_t *v = json_object_get(w->hello, *f);
                if (v)
                        json_object_set(o, *f, v);
        }
        return o;
}

/* The kevald-torch pools: {"configured", "torch", "build": {...counts, "workers"}, "run": [...]} */
static json_t *torch_status(Dispatcher *d)
{
        json_t *build = json_array(), *run = json_array();
        int ready = 0, busy = 0, restarts = 0, failed = 0;

        for (int i = 0; i < d->n_workers; i++) {
                const Worker *w = &d->workers[i];
                if (w->spec->role == PROC_TORCH_RUN) {
                        json_array_append_new(run, torch_worker_status(w));
                } else if (w->spec->role == PROC_TORCH_BUILD) {
                        ready += w->state == W_IDLE || w->state == W_BUSY;
                        busy += w->state == W_BUSY;
                        restarts += w->restarts;
                        failed += strcmp(worker_state_name(w), "failed") == 0;
                        json_array_append_new(build, torch_worker_status(w));
                }
        }
        return json_pack("{s:i, s:s?, s:{s:i, s:i, s:i, s:i, s:i, s:o}, s:o}", "workers_per_gpu",
                         d->cfg.torch_workers, "torch", d->torch_version[0] ? d->torch_version : NULL, "build",
                         "configured", d->n_torch_build, "ready", ready, "busy", busy, "restarts", restarts, "failed",
                         failed, "workers", build, "run", run);
}

void status_rebuild(Dispatcher *d)
{
        json_t *st = json_object(), *gpus = json_array(), *layers = json_object();
        int c_ready = 0, c_busy = 0, c_restarts = 0, c_failed = 0, g_ready = 0;
        bool ready;

        gpu_clocks_settle(d);
        for (int i = 0; i < d->n_workers; i++) {
                Worker *w = &d->workers[i];
                json_t *wl = json_object_get(w->hello, "layers");
                if (wl && !json_object_get(layers, w->spec->name))
                        json_object_set(layers, w->spec->name, wl);
                if (w->spec->role == PROC_COMPILE) {
                        c_ready += w->state == W_IDLE || w->state == W_BUSY;
                        c_busy += w->state == W_BUSY;
                        c_restarts += w->restarts;
                        c_failed += strcmp(worker_state_name(w), "failed") == 0;
                } else if (w->spec->role == PROC_GPU) {
                        gpu_status_add(gpus, w);
                }
        }
        for (size_t i = 0; i < json_array_size(gpus); i++) {
                json_t *g = json_array_get(gpus, i);
                g_ready += json_integer_value(json_object_get(g, "workers_ready")) > 0;
        }
        ready = c_ready > 0 && !d->stopping;
        json_object_set_new(st, "compile_workers",
                            json_pack("{s:i, s:i, s:i, s:i, s:i}", "configured", d->n_compile, "ready", c_ready, "busy",
                                      c_busy, "restarts", c_restarts, "failed", c_failed));
        json_object_set_new(st, "gpus", gpus);
        json_object_set_new(st, "gpu_ready", json_integer(g_ready));
        json_object_set_new(st, "fault_grace_ms", json_integer(d->fault_grace_now));
        json_object_set_new(st, "torch", torch_status(d));
        json_object_set_new(st, "layers", layers);
        json_object_set_new(st, "counters",
                            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "jobs_done", (json_int_t)d->jobs_done,
                                      "cache_hits", (json_int_t)d->cache_hits, "cache_misses",
                                      (json_int_t)d->cache_misses, "compiles", (json_int_t)d->compiles_sent,
                                      "compile_groups", (json_int_t)d->compile_groups, "compile_merged",
                                      (json_int_t)d->compile_merged, "verdicts", json_deep_copy(d->verdicts)));
        json_object_set_new(st, "ready", json_boolean(ready));
        json_object_set_new(st, "reason",
                            json_string(d->stopping ? "shutting down"
                                        : c_ready == 0 ? "no compile worker is ready"
                                        : d->n_clocks == 0
                                                ? "no GPU on this host: compile-only submissions complete, full evaluations wait"
                                        : g_ready == 0 ? "no GPU worker is ready yet: full evaluations wait"
                                                       : "ok"));
        pthread_mutex_lock(&d->status_lock);
        json_decref(d->status);
        d->status = st;
        pthread_mutex_unlock(&d->status_lock);
        d->status_dirty = false;
}

json_t *dispatch_status(Dispatcher *d)
{
        json_t *copy;

        pthread_mutex_lock(&d->status_lock);
        copy = json_deep_copy(d->status);
        pthread_mutex_unlock(&d->status_lock);
        return copy;
}
