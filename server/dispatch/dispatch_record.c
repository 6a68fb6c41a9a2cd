/*
 * dispatch_record - finishing jobs: verdict counters, the store writes a job's
 * outcome takes, and the writes owed when the store refuses them.
 *
 * Part of the dispatcher: see dispatch.c for the theory of operation and
 * dispatch_int.h for what its files share.
 */
#include "server/dispatch/dispatch_int.h"

const char *job_task_name(const Job *j)
{
        return j->task ? spec_task_name(j->task) : j->kb ? j->kb->name : NULL;
}

void record_count_verdict(Dispatcher *d, const char *verdict)
{
        json_t *v = json_object_get(d->verdicts, verdict);

        json_object_set_new(d->verdicts, verdict, json_integer(v ? json_integer_value(v) + 1 : 1));
        d->jobs_done++;
        d->status_dirty = true;
}

void record_notify_done(Dispatcher *d, int64_t id)
{
        if (d->cfg.waiters)
                waiters_notify(d->cfg.waiters, id);
}

static const char *const owe_what[] = { "recording the result", "re-queueing", "marking it compiled", "re-queueing" };

/* The store may take the write later: the storage or the connection failed, not the write itself. */
static bool store_error_transient(int r)
{
        return store_error_is_storage(r) || r == -ENOTCONN || r == -EBUSY || r == -ENOMEM || r == -EAGAIN;
}

/*
 * Try one owed write. A write the store refuses for good becomes an
 * internal_error finish, tried at once. Return: 0 done (or moot: the lease
 * is gone), or the negative errno of a refusal to retry later.
 */
static int owed_try(Dispatcher *d, Owed *o)
{
        int r;

        switch (o->kind) {
        case OWE_FINISH:
                r = store_finish(d->store, o->id, d->owner, o->verdict, o->speedup, o->doc);
                break;
        case OWE_REQUEUE:
                r = store_requeue(d->store, o->id, d->owner, o->stage);
                break;
        case OWE_REQUEUE_UNCHARGED:
                r = store_requeue_uncharged(d->store, o->id, d->owner, o->stage);
                break;
        default:
                r = store_set_compiled(d->store, o->id, d->owner, o->doc);
        }
        o->tries++;
        if (r < 0 && !store_error_transient(r) && !o->fallback) {
                /* Refused for good (a result the store cannot hold, a bug): never retried
                 * forever behind a paused dispatcher; the job ends as internal_error. */
                json_t *err = pipeline_error("internal", "%s failed: %s (the store refused it; not the kernel's "
                                             "fault)", owe_what[o->kind], strerror(-r));
                json_t *res = pipeline_result(o->task, "internal_error", NULL, NULL, err,
                                              strtoull(jsonutil_str(o->doc, "seed", "0"), NULL, 16));
                log_error("dispatch: job %" PRId64 ": %s failed for good: %s; ending it as internal_error", o->id,
                          owe_what[o->kind], strerror(-r));
                json_decref(err);
                json_decref(o->doc);
                o->doc = res;
                o->kind = OWE_FINISH;
                snprintf(o->verdict, sizeof(o->verdict), "internal_error");
                o->speedup = 0;
                o->fallback = true;
                return owed_try(d, o);
        }
        if (r < 0 && !store_error_transient(r)) {
                log_error("dispatch: job %" PRId64 ": even its internal_error result was refused: %s; it stays "
                          "leased until this process restarts", o->id, strerror(-r));
                return 0;
        }
        if (r < 0)
                return r;
        if (r > 0)
                log_warn("dispatch: job %" PRId64 ": lease lost before %s was recorded%s", o->id, owe_what[o->kind],
                         o->tries > 1 ? " (another host or the reaper took it meanwhile)" : "");
        else if (o->kind == OWE_FINISH) {
                record_count_verdict(d, o->verdict);
                record_notify_done(d, o->id);
        }
        if (r == 0 && o->tries > 1)
                log_info("dispatch: job %" PRId64 ": %s succeeded on try %d", o->id, owe_what[o->kind], o->tries);
        return 0;
}

void record_owed_free(Owed *o)
{
        if (o) {
                json_decref(o->doc);
                free(o->task);
                free(o);
        }
}

/*
 * Do a store write for job @id now, or keep it to retry (OWED_RETRY_MS)
 * when the store refuses it; takes ownership of @doc. While anything is
 * owed the dispatcher claims nothing new (dispatch_pump()).
 */
void record_owe(Dispatcher *d, OweKind kind, int64_t id, Stage stage, const char *verdict, double speedup,
                json_t *doc, const char *task)
{
        Owed *o = calloc(1, sizeof(*o));
        int r;

        if (!o) {
                /* nothing to keep it in: its lease expires once the process is gone */
                log_error("dispatch: job %" PRId64 ": out of memory", id);
                json_decref(doc);
                return;
        }
        o->kind = kind;
        o->id = id;
        o->stage = stage;
        snprintf(o->verdict, sizeof(o->verdict), "%s", verdict ? verdict : "");
        o->speedup = speedup;
        o->doc = doc;
        o->task = task ? strdup(task) : NULL;
        r = owed_try(d, o);
        if (r == 0) {
                record_owed_free(o);
                return;
        }
        log_error("dispatch: job %" PRId64 ": %s failed: %s; kept, retried every %d ms (no new claims meanwhile)",
                  id, owe_what[kind], strerror(-r), OWED_RETRY_MS);
        Owed **p = &d->owed;
        while (*p)
                p = &(*p)->next;
        *p = o;
        d->n_owed++;
        d->owed_retry_ms = now_ms(d) + OWED_RETRY_MS;
        d->status_dirty = true;
}

/* Retry the owed writes, oldest first, until one still fails. */
void record_owed_retry(Dispatcher *d)
{
        int r = 0;

        while (d->owed && (r = owed_try(d, d->owed)) == 0) {
                Owed *o = d->owed;
                d->owed = o->next;
                d->n_owed--;
                record_owed_free(o);
                d->status_dirty = true;
        }
        d->owed_retry_ms = now_ms(d) + OWED_RETRY_MS;
        if (r < 0 && d->owed->tries % 30 == 0)
                log_warn("dispatch: %d store write(s) still owed: %s", d->n_owed, strerror(-r));
}

/* Record the final result of job @sj; takes ownership of @result. A PTX
 * submission's "frontend" (spec_submission.c) goes into its result. */
void record_finish(Dispatcher *d, const StoreJob *sj, const char *verdict, json_t *result)
{
        json_t *frontend = json_object_get(sj->request, "frontend");
        double speedup = json_number_value(json_object_get(json_object_get(result, "reward_fields"), "speedup"));

        if (result && json_is_string(frontend))
                json_object_set(result, "frontend", frontend);
        record_owe(d, OWE_FINISH, sj->id, STAGE_COMPILE, verdict, speedup, result,
            json_string_value(json_object_get(result, "task")));
}

/* Give a held job back to @stage's queue (its attempt stays counted); @task: its task name or NULL. */
void record_requeue(Dispatcher *d, int64_t id, Stage stage, const char *task)
{
        record_owe(d, OWE_REQUEUE, id, stage, NULL, 0, NULL, task);
}

/* record_requeue() for a claim under which nothing ran: not counted as an attempt. */
void record_requeue_uncharged(Dispatcher *d, int64_t id, Stage stage, const char *task)
{
        record_owe(d, OWE_REQUEUE_UNCHARGED, id, stage, NULL, 0, NULL, task);
}

json_t *compile_section_of(const Job *j, Slot s)
{
        const Artifact *a = j->art[s];

        return a ? pipeline_compile_section(a->compile, a->cache_hit) : NULL;
}

void job_free(Job *j)
{
        if (!j)
                return;
        store_job_free(j->sj);
        json_decref(j->gjob);
        spec_task_free(j->own_task);
        artifact_free(j->art[0]);
        artifact_free(j->art[1]);
        free(j);
}

void job_unlink(Dispatcher *d, Job *j)
{
        for (Job **p = &d->jobs; *p; p = &(*p)->next)
                if (*p == j) {
                        *p = j->next;
                        d->n_jobs--;
                        return;
                }
}

/* End a compile-stage job with a verdict decided here. */
void job_finish(Dispatcher *d, Job *j, const char *verdict, json_t *error)
{
        json_t *compile = compile_section_of(j, SLOT_CAND);
        json_t *res = pipeline_result(job_task_name(j), verdict, compile, NULL, error, j->seed);

        json_decref(compile);
        json_decref(error);
        record_finish(d, j->sj, verdict, res);
        job_unlink(d, j);
        job_free(j);
}
