/*
 * api_submissions - POST/GET /v1/submissions and GET/DELETE
 * /v1/submissions/{id}.
 *
 * Acceptance: the body is parsed once and every item is validated (task
 * looked up or parsed inline, spec_submission_validate()) before anything
 * is stored. A fault in the envelope (not JSON, an unknown task, bad tags,
 * timing, mode, an unknown field) fails the whole request with a 422 and a
 * pointer under /submissions/N. A fault in a candidate's own content (its
 * source, plan, scratch, options, name expressions) is a verdict: the item
 * is stored done, verdict "rejected", with the message and the pointer, so
 * every policy output has a row, a reward and a place in the history. The
 * normalized items then go to the ingest writer in one request (group
 * commit, durable before the 202). The Idempotency-Key and
 * the body's SHA-256 travel with it; the store answers a replay with the
 * original ids. With ?wait=S a single submission's request is parked on the
 * Waiters until the dispatcher finishes it or S passes.
 *
 * Visibility: with auth on, a token that is not admin sees, waits on and
 * cancels only its own submissions; another token's id is 404.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/limits.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/jsonutil.h"
#include "common/spec.h"
#include "common/verdict.h"
#include "server/http/api.h"
#include "server/http/bodyscan.h"
#include "server/dispatch/pipeline.h"

/* ---- shared helpers (declared in api.h) ---- */

/**
 * api_respond_store_error() - answer a failed store or ingest call
 * @r: the negative errno; -EBUSY, -ENOTCONN, -ESHUTDOWN and a storage fault
 *     (-ENOSPC, -EROFS, -EIO, -EDQUOT: store_error_is_storage()) answer 503
 *     with Retry-After, anything else 500
 * Return: HTTP_DONE.
 */
int api_respond_store_error(HttpRequest *req, int r, const char *what)
{
        if (r == -EBUSY) {
                http_response_header(req, "Retry-After", "1");
                return http_respond_error(req, PROBLEM_UNAVAILABLE, NULL, "the store is busy (%s); retry", what);
        }
        if (r == -ENOTCONN) {
                /* PostgreSQL is away: nothing of this request was stored; the store reconnects by itself. */
                http_response_header(req, "Retry-After", "5");
                return http_respond_error(req, PROBLEM_UNAVAILABLE, NULL, "the database is unreachable (%s); retry",
                                          what);
        }
        if (store_error_is_storage(r)) {
                /* A full disk, a read-only file or server, an I/O error: nothing of this request
                 * was stored; it may succeed once the operator has made room (/readyz says so). */
                const char *how = r == -EIO ? "the store's storage failed" : "the store cannot write";
                log_warn("api: %s failed: %s: %s", what, how, strerror(-r));
                http_response_header(req, "Retry-After", "5");
                return http_respond_error(req, PROBLEM_UNAVAILABLE, NULL, "%s (%s: %s); retry later", how, what,
                                          strerror(-r));
        }
        if (r == -ESHUTDOWN) {
                http_response_header(req, "Retry-After", "5");
                return http_respond_error(req, PROBLEM_UNAVAILABLE, NULL, "the server is shutting down");
        }
        log_error("api: %s failed: %s", what, strerror(r < 0 ? -r : EIO));
        return http_respond_error(req, PROBLEM_INTERNAL, NULL, "%s failed: %s", what,
                                  strerror(r < 0 ? -r : EIO));
}

typedef struct QueryCheck {
        const char *const *allowed;
        const char *bad;
} QueryCheck;

static int query_known(void *ctx, const char *key, const char *value)
{
        QueryCheck *qc = ctx;

        (void)value;
        for (const char *const *a = qc->allowed; *a; a++)
                if (!strcmp(*a, key))
                        return 0;
        qc->bad = key;
        return 1;
}

/**
 * api_check_query() - see api.h.
 */
int api_check_query(HttpRequest *req, const char *const *allowed)
{
        QueryCheck qc = { allowed, NULL };
        char ptr[300];

        if (http_request_query_foreach(req, query_known, &qc) == 0)
                return 0;
        snprintf(ptr, sizeof(ptr), "/query/%.256s", qc.bad);
        return http_respond_error(req, PROBLEM_INVALID, ptr, "unknown query parameter '%.256s'", qc.bad);
}

/**
 * api_parse_wait() - see api.h.
 */
int api_parse_wait(HttpRequest *req, double *ret_s)
{
        const char *v = http_request_query(req, "wait");
        char *end;
        double s;

        *ret_s = 0;
        if (!v)
                return 0;
        s = strtod(v, &end);
        if (end == v || *end || !isfinite(s) || s < 0 || s > LIMIT_WAIT_SECONDS_MAX)
                return http_respond_error(req, PROBLEM_INVALID, "/query/wait",
                                          "wait must be a number of seconds from 0 to %d", LIMIT_WAIT_SECONDS_MAX);
        *ret_s = s;
        return 0;
}

static bool visible_to_all(HttpRequest *req)
{
        Api *api = http_request_app(req);

        return !api->auth || http_request_principal(req)->admin;
}

/** api_parse_id() - see api.h. */
bool api_parse_id(const char *s, int64_t *ret)
{
        int64_t v = 0;

        if (!s || !*s || *s == '0' || strlen(s) > 19)
                return false;
        for (; *s; s++) {
                if (*s < '0' || *s > '9' || v > (INT64_MAX - (*s - '0')) / 10)
                        return false;
                v = v * 10 + (*s - '0');
        }
        *ret = v;
        return true;
}

/* Is submission @id this request's to see? 0 yes, STORE_E_NOT_FOUND, or -errno. */
static int check_owner(HttpRequest *req, Store *store, int64_t id)
{
        json_t *filters, *items = NULL;
        int64_t next;
        int r;

        if (visible_to_all(req))
                return 0;
        if (id == INT64_MAX)
                return STORE_E_NOT_FOUND;   /* no such id; and id + 1 below must not overflow */
        /* One seek on submissions_token(token_id, id): the newest of this token's at or below id. */
        filters = json_pack("{s:I}", "token_id", (json_int_t)http_request_principal(req)->token_id);
        if (!filters)
                return -ENOMEM;
        r = store_list_submissions(store, filters, id + 1, 1, &items, &next);
        json_decref(filters);
        if (r == 0 && json_integer_value(json_object_get(json_array_get(items, 0), "id")) != id)
                r = STORE_E_NOT_FOUND;
        json_decref(items);
        return r;
}

/* Fetch submission @id if visible; answers 404/500 itself. Return 0 with @ret_obj, or HTTP_DONE. */
static int fetch(HttpRequest *req, int64_t id, json_t **ret_obj)
{
        Api *api = http_request_app(req);
        Store *store = storepool_get(api->pool);
        int r;

        r = check_owner(req, store, id);
        if (r == 0)
                r = store_get_submission(store, id, ret_obj);
        storepool_put(api->pool, store);
        if (r == STORE_E_NOT_FOUND)
                return http_respond_error(req, PROBLEM_NOT_FOUND, NULL, "no submission %lld", (long long)id);
        if (r != 0)
                return api_respond_store_error(req, r, "reading the submission");
        return 0;
}

static bool is_done(json_t *obj)
{
        const char *st = json_string_value(json_object_get(obj, "state"));

        return st && !strcmp(st, "done");
}

/* 202 for one submission: "queued", or "done" with its verdict when it was rejected at acceptance. */
static int respond_accepted_single(HttpRequest *req, int64_t id, const char *verdict)
{
        char loc[64];

        snprintf(loc, sizeof(loc), "/v1/submissions/%lld", (long long)id);
        http_response_header(req, "Location", loc);
        return http_respond_json(req, 202, json_pack("{s:I, s:s, s:s, s:s*}", "id", (json_int_t)id, "state",
                                                     verdict ? "done" : "queued", "location", loc, "verdict",
                                                     verdict));
}

/* ---- POST /v1/submissions ---- */

static bool content_type_ok(const char *ct)
{
        size_t n;

        if (!ct)
                return true;
        n = strcspn(ct, ";");
        while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
                n--;
        if (n == 16 && !strncasecmp(ct, "application/json", 16))
                return true;
        return n > 5 && !strncasecmp(ct + n - 5, "+json", 5);
}

/* First node deeper than LIMIT_JSON_DEPTH: fills @ptr and returns true. */
static bool too_deep(json_t *v, int depth, char *ptr, size_t len)
{
        size_t used = strlen(ptr);
        const char *key;
        json_t *x;
        size_t i;

        if (depth > LIMIT_JSON_DEPTH)
                return true;
        if (json_is_object(v)) {
                json_object_foreach(v, key, x) {
                        if (!json_is_object(x) && !json_is_array(x))
                                continue;
                        snprintf(ptr + used, len - used, "/%.64s", key);
                        if (too_deep(x, depth + 1, ptr, len))
                                return true;
                        ptr[used] = 0;
                }
        } else if (json_is_array(v)) {
                json_array_foreach(v, i, x) {
                        if (!json_is_object(x) && !json_is_array(x))
                                continue;
                        snprintf(ptr + used, len - used, "/%zu", i);
                        if (too_deep(x, depth + 1, ptr, len))
                                return true;
                        ptr[used] = 0;
                }
        }
        return false;
}

typedef struct Item {
        json_t *norm;          /* new reference */
        json_t *rejected;      /* new reference: the result of a candidate rejected at acceptance, or NULL */
        char *norm_json;       /* norm serialized here, off the single ingest writer thread */
        Task *inline_task;     /* parsed task_spec, freed after insert */
        const char *task_name; /* borrowed from the library or inline_task */
} Item;

/* Validate one submission at @base ("" or "/submissions/N"). Return 0, or HTTP_DONE after a 422/500. */
static int validate_item(HttpRequest *req, json_t *doc, const char *base, Item *it)
{
        Api *api = http_request_app(req);
        json_t *task_v, *spec_v;
        const Task *task = NULL;
        SpecError err = { "", "" };
        char ptr[1200];
        int r;

        if (!json_is_object(doc)) {
                snprintf(ptr, sizeof(ptr), "%s", base);
                return http_respond_error(req, PROBLEM_INVALID, ptr, "a submission must be an object, not %s",
                                          json_is_array(doc) ? "an array" : "a scalar");
        }
        task_v = json_object_get(doc, "task");
        spec_v = json_object_get(doc, "task_spec");
        if (json_is_string(json_object_get(doc, "language")) &&
            strcmp(json_string_value(json_object_get(doc, "language")), "kernelbench") == 0) {
                const KbTask *kb = NULL;
                /* a host without kevald-torch workers could only queue it forever: say so now */
                if (api->cfg->torch_workers <= 0) {
                        /* a configuration, not a moment: a client that retries learns nothing sooner */
                        http_response_header(req, "Retry-After", "3600");
                        return http_respond_error(req, PROBLEM_UNAVAILABLE, NULL,
                                                  "this server runs no kevald-torch workers (torch_workers = 0): "
                                                  "kernelbench submissions are not taken here");
                }
                if (json_is_string(task_v))
                        kb = kbtasks_get(api->kbtasks, json_string_value(task_v));
                if (kb)
                        it->task_name = kb->name;
                r = spec_submission_validate_kernelbench(doc, kb, &it->norm, &err);
                goto validated;
        }
        if (task_v && spec_v) {
                snprintf(ptr, sizeof(ptr), "%s/task_spec", base);
                return http_respond_error(req, PROBLEM_INVALID, ptr, "give either task or task_spec, not both");
        }
        if (task_v) {
                snprintf(ptr, sizeof(ptr), "%s/task", base);
                if (!json_is_string(task_v))
                        return http_respond_error(req, PROBLEM_INVALID, ptr, "task must be a string (a task name)");
                task = tasklib_get(api->tasks, json_string_value(task_v));
                if (!task)
                        return http_respond_error(req, PROBLEM_INVALID, ptr,
                                                  "unknown task '%.256s'; GET /v1/tasks lists them",
                                                  json_string_value(task_v));
        } else if (spec_v) {
                snprintf(ptr, sizeof(ptr), "%s/task_spec", base);
                if (!json_is_object(spec_v))
                        return http_respond_error(req, PROBLEM_INVALID, ptr, "task_spec must be an object");
                r = spec_task_parse(spec_v, NULL, &it->inline_task, &err);
                if (r == SPEC_E_INVALID) {
                        snprintf(ptr, sizeof(ptr), "%s/task_spec%s", base, err.pointer);
                        return http_respond_error(req, PROBLEM_INVALID, ptr, "%s", err.message);
                }
                if (r != 0)
                        return http_respond_error(req, PROBLEM_INTERNAL, ptr, "cannot parse the task: %s",
                                                  strerror(r < 0 ? -r : EIO));
                task = it->inline_task;
        }
        if (task)
                it->task_name = spec_task_name(task);
        r = spec_submission_validate(doc, task, &it->norm, &err);
validated:
        if (r == SPEC_E_CANDIDATE) {
                it->rejected = pipeline_rejected(it->task_name, err.message, err.pointer);
                /* as record_finish() does for a finished job: the front end that made the PTX */
                if (it->rejected && json_object_get(it->norm, "frontend") &&
                    json_object_set(it->rejected, "frontend", json_object_get(it->norm, "frontend"))) {
                        json_decref(it->rejected);
                        it->rejected = NULL;
                }
                return it->rejected ? 0 : http_respond_error(req, PROBLEM_INTERNAL, NULL, "out of memory");
        }
        if (r == SPEC_E_INVALID || r == SPEC_E_REJECTED) {
                snprintf(ptr, sizeof(ptr), "%s%s", base, err.pointer);
                return http_respond_error(req, PROBLEM_INVALID, ptr, "%s", err.message);
        }
        if (r != 0)
                return http_respond_error(req, PROBLEM_INTERNAL, NULL, "cannot validate the submission: %s",
                                          strerror(r < 0 ? -r : EIO));
        return 0;
}

static double mono_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static bool is_interactive(json_t *norm)
{
        const char *p = json_string_value(json_object_get(norm, "priority"));

        return p && !strcmp(p, "interactive");
}

/* Answer a waited single submission: 200 with the object when done, else the 202. */
static int answer_waited(HttpRequest *req, int64_t id)
{
        json_t *obj = NULL;

        if (fetch(req, id, &obj) != 0)
                return HTTP_DONE;
        if (is_done(obj))
                return http_respond_json(req, 200, obj);
        json_decref(obj);
        return respond_accepted_single(req, id, NULL);
}

/* Park a single submission's answer for up to @wait_s; or answer now. */
static int wait_for(HttpRequest *req, int64_t id, double wait_s, bool accepted)
{
        json_t *obj = NULL;

        *http_request_slot(req) = id;
        if (wait_s <= 0 || http_request_wait(req, id, wait_s) != 0)
                return accepted ? respond_accepted_single(req, id, NULL) : answer_waited(req, id);
        /* Registered first, then read: a finish in between is not lost. */
        if (fetch(req, id, &obj) != 0) {
                http_request_unwait(req);
                return HTTP_DONE;
        }
        if (is_done(obj)) {
                http_request_unwait(req);
                return http_respond_json(req, 200, obj);
        }
        json_decref(obj);
        return HTTP_SUSPENDED;
}

/*
 * The body's shape: one submission object, or {"submissions": [...]} with
 * 1 to batch_limit submissions and no other member (and no ?wait).
 * Return: 0 with the batch's array (borrowed from @doc; NULL for a single
 * submission) in *@ret_list and the number of submissions in *@ret_n, or
 * -1 once the problem is answered.
 */
static int body_items(HttpRequest *req, Api *api, json_t *doc, double wait_s, json_t **ret_list, size_t *ret_n)
{
        json_t *list = json_object_get(doc, "submissions");
        size_t n;

        if (list) {
                const char *k;
                json_t *v;

                json_object_foreach(doc, k, v)
                        if (strcmp(k, "submissions") != 0) {
                                char kp[300];

                                snprintf(kp, sizeof(kp), "/%.256s", k);
                                http_respond_error(req, PROBLEM_INVALID, kp,
                                                   "a batch holds only \"submissions\"; unknown member '%.256s'", k);
                                return -1;
                        }
                if (!json_is_array(list) || json_array_size(list) == 0) {
                        http_respond_error(req, PROBLEM_INVALID, "/submissions",
                                           "submissions must be a non-empty array");
                        return -1;
                }
                n = json_array_size(list);
                if (n > (size_t)api->cfg->batch_limit) {
                        http_respond_error(req, PROBLEM_INVALID, "/submissions",
                                           "a batch holds at most %lld submissions; this one has %zu",
                                           (long long)api->cfg->batch_limit, n);
                        return -1;
                }
                if (wait_s > 0) {
                        http_respond_error(req, PROBLEM_INVALID, "/query/wait",
                                           "wait applies to a single submission, not a batch");
                        return -1;
                }
        } else {
                n = 1;
        }
        *ret_list = list;
        *ret_n = n;
        return 0;
}

/*
 * Answer what ingest_submit() refused (@r, not 0): an Idempotency-Key @key
 * used before with another body, a full queue or the token's quota (with
 * Retry-After), a request the store finds invalid, or a store error.
 * Return: what the handler returns (HTTP_DONE).
 */
static int respond_ingest_error(HttpRequest *req, Api *api, const HttpPrincipal *who, const char *key, int r)
{
        if (r == STORE_E_CONFLICT) {
                http_respond_error(req, PROBLEM_IDEMPOTENCY_MISMATCH, "/",
                                   "Idempotency-Key '%.255s' was already used with a different request body; "
                                   "use a new key for a new request", key ? key : "");
                return HTTP_DONE;
        }
        if (r == STORE_E_FULL || r == STORE_E_QUOTA) {
                char ra[32];

                snprintf(ra, sizeof(ra), "%.0f", ceil(api->cfg->retry_after_s));
                http_response_header(req, "Retry-After", ra);
                if (r == STORE_E_FULL)
                        http_respond_error(req, PROBLEM_QUEUE_FULL, NULL,
                                           "the queue is full (%lld unfinished submissions); retry later",
                                           (long long)api->cfg->max_queued);
                else
                        http_respond_error(req, PROBLEM_QUOTA, NULL,
                                           "this token may have at most %lld unfinished submissions; "
                                           "retry when some are done", (long long)who->max_queued);
                return HTTP_DONE;
        }
        if (r == -EINVAL) {
                http_respond_error(req, PROBLEM_INVALID, "", "the store refused the request as invalid");
                return HTTP_DONE;
        }
        return api_respond_store_error(req, r, "storing the submissions");
}

static int post_submissions(HttpRequest *req)
{
        static const char *const known_q[] = { "wait", NULL };
        Api *api = http_request_app(req);
        HttpPrincipal *who = http_request_principal(req);
        const char *body, *key;
        size_t len, n = 0;
        json_t *doc = NULL, *list = NULL;
        json_error_t jerr;
        Item *items = NULL;
        StoreNew *subs = NULL;
        IngestRequest ir = { 0 };
        IngestReply reply = { 0 };
        uint8_t hash[32];
        char ptr[JSONUTIL_PTR_BYTES];
        double wait_s, t0 = 0, t_parse = 0, t_valid = 0;
        int r = HTTP_DONE;

        if (http_request_resumed(req) >= 0)
                return answer_waited(req, *http_request_slot(req));
        if (api_check_query(req, known_q) || api_parse_wait(req, &wait_s))
                return HTTP_DONE;
        if (atomic_load(&api->stopping)) {
                http_response_header(req, "Retry-After", "5");
                return http_respond_error(req, PROBLEM_UNAVAILABLE, NULL, "the server is shutting down");
        }
        if (!content_type_ok(http_request_header(req, "Content-Type")))
                return http_respond_error(req, PROBLEM_UNSUPPORTED_MEDIA, "/headers/Content-Type",
                                          "the body must be application/json");
        key = http_request_header(req, "Idempotency-Key");
        if (key && (!*key || strlen(key) > LIMIT_IDEMPOTENCY_KEY_BYTES))
                return http_respond_error(req, PROBLEM_INVALID, "/headers/Idempotency-Key",
                                          "Idempotency-Key must be 1 to %d bytes", LIMIT_IDEMPOTENCY_KEY_BYTES);
        body = http_request_body(req, &len);
        if (!body || len == 0)
                return http_respond_error(req, PROBLEM_MALFORMED_JSON, NULL, "the request body is empty");
        t0 = mono_ms();
        /* Refuse a batch, a depth or a tree over the limits before building it. */
        if (bodyscan_submissions(body, len, (size_t)api->cfg->batch_limit, &doc) != 0)
                return http_respond_problem(req, doc);
        doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
        t_parse = mono_ms();
        if (!doc)
                return http_respond_error(req, PROBLEM_MALFORMED_JSON, NULL,
                                          "the body is not valid JSON: %s (line %d, column %d)", jerr.text,
                                          jerr.line, jerr.column);
        ptr[0] = 0;
        if (too_deep(doc, 1, ptr, sizeof(ptr))) {
                http_respond_error(req, PROBLEM_INVALID, ptr, "JSON nested deeper than %d levels", LIMIT_JSON_DEPTH);
                goto out;
        }
        if (!json_is_object(doc)) {
                http_respond_error(req, PROBLEM_INVALID, "",
                                   "the body must be a submission object or {\"submissions\": [...]}");
                goto out;
        }
        if (body_items(req, api, doc, wait_s, &list, &n) != 0)
                goto out;
        items = calloc(n, sizeof(*items));
        subs = calloc(n, sizeof(*subs));
        if (!items || !subs) {
                http_respond_error(req, PROBLEM_INTERNAL, NULL, "out of memory");
                goto out;
        }
        for (size_t i = 0; i < n; i++) {
                char base[48] = "";

                if (list)
                        snprintf(base, sizeof(base), "/submissions/%zu", i);
                if (validate_item(req, list ? json_array_get(list, i) : doc, base, &items[i]) != 0)
                        goto out;
                subs[i].request = items[i].norm;
                items[i].norm_json = json_dumps(items[i].norm, JSON_COMPACT);
                subs[i].request_json = items[i].norm_json;   /* NULL: the store dumps it */
                subs[i].task = items[i].task_name;
                subs[i].mode = json_string_value(json_object_get(items[i].norm, "mode"));
                if (!subs[i].mode)
                        subs[i].mode = "full";
                subs[i].priority = is_interactive(items[i].norm) ? 1 : 0;
                subs[i].token_id = who->token_id;
                if (items[i].rejected) {
                        subs[i].verdict = "rejected";
                        subs[i].result = items[i].rejected;
                }
        }
        t_valid = mono_ms();
        sha256(body, len, hash);
        ir.subs = subs;
        ir.n = n;
        ir.idem_key = key;
        ir.body_hash = hash;
        ir.max_queued_total = api->cfg->max_queued;
        ir.max_queued_token = who->max_queued;
        r = ingest_submit(api->ingest, &ir, &reply);
        log_debug("api: POST of %zu: parse %.2f ms, validate %.2f ms, store %.2f ms (%d)", n, t_parse - t0,
                  t_valid - t_parse, mono_ms() - t_valid, r);
        if (r != 0) {
                r = respond_ingest_error(req, api, who, key, r);
                goto out;
        }
        if (!list && items[0].rejected) {
                /* Done already: with ?wait the whole object, as for any finished job. */
                r = wait_s > 0 ? answer_waited(req, reply.ids[0])
                               : respond_accepted_single(req, reply.ids[0], "rejected");
        } else if (!list) {
                r = wait_for(req, reply.ids[0], wait_s, true);
        } else {
                json_t *ids = json_array(), *rejected = json_array();

                for (size_t i = 0; i < reply.n; i++) {
                        json_array_append_new(ids, json_integer(reply.ids[i]));
                        if (items[i].rejected)
                                json_array_append_new(rejected, json_integer((json_int_t)i));
                }
                r = http_respond_json(req, 202, json_pack("{s:o, s:I, s:o}", "ids", ids, "count", (json_int_t)reply.n,
                                                          "rejected", rejected));
        }
out:
        if (items)
                for (size_t i = 0; i < n; i++) {
                        json_decref(items[i].norm);
                        json_decref(items[i].rejected);
                        free(items[i].norm_json);
                        spec_task_free(items[i].inline_task);
                }
        free(items);
        free(subs);
        ingest_reply_clear(&reply);
        json_decref(doc);
        return r;
}

/* ---- GET /v1/submissions ---- */

static const char *const states[] = { "queued", "compiling", "compiled", "running", "done", NULL };

static bool one_of(const char *v, const char *const *list)
{
        for (; *list; list++)
                if (!strcmp(v, *list))
                        return true;
        return false;
}

static int count_label(void *ctx, const char *key, const char *value)
{
        (void)value;
        if (!strcmp(key, "label"))
                (*(int *)ctx)++;
        return 0;
}

static bool looks_like_time(const char *s)
{
        char *end;
        int y, mo, d;

        (void)strtod(s, &end);
        if (end != s && !*end)
                return true;
        return sscanf(s, "%4d-%2d-%2d", &y, &mo, &d) == 3 && strlen(s) >= 10;
}

static int list_submissions(HttpRequest *req)
{
        static const char *const known_q[] = { "task", "verdict", "state", "run_id", "label", "since",
                                               "cursor", "limit", "step", "include", NULL };
        static const char *const str_q[] = { "task", "run_id", NULL };
        Api *api = http_request_app(req);
        json_t *filters = json_object(), *items = NULL;
        const char *v;
        int64_t cursor = 0, next = 0, limit = 100;
        int labels = 0, r;
        Store *store;
        char *end;

        if (!filters)
                return http_respond_error(req, PROBLEM_INTERNAL, NULL, "out of memory");
        if (api_check_query(req, known_q))
                goto done;
        for (const char *const *q = str_q; *q; q++) {
                v = http_request_query(req, *q);
                if (!v)
                        continue;
                if (!*v || strlen(v) > LIMIT_TAG_STRING_BYTES) {
                        char p[32];

                        snprintf(p, sizeof(p), "/query/%s", *q);
                        http_respond_error(req, PROBLEM_INVALID, p, "%s must be 1 to %d bytes", *q,
                                           LIMIT_TAG_STRING_BYTES);
                        goto done;
                }
                json_object_set_new(filters, *q, json_string(v));
        }
        if ((v = http_request_query(req, "state"))) {
                if (!one_of(v, states)) {
                        http_respond_error(req, PROBLEM_INVALID, "/query/state",
                                           "state must be one of queued, compiling, compiled, running, done");
                        goto done;
                }
                json_object_set_new(filters, "state", json_string(v));
        }
        if ((v = http_request_query(req, "verdict"))) {
                if (!verdict_known(v)) {
                        http_respond_error(req, PROBLEM_INVALID, "/query/verdict",
                                           "verdict must be one of " VERDICT_NAMES);
                        goto done;
                }
                json_object_set_new(filters, "verdict", json_string(v));
        }
        http_request_query_foreach(req, count_label, &labels);
        if ((v = http_request_query(req, "label"))) {
                const char *eq = strchr(v, '=');

                if (labels > 1 || !eq || eq == v || strlen(v) > LIMIT_TAG_STRING_BYTES) {
                        http_respond_error(req, PROBLEM_INVALID, "/query/label",
                                           "label must be one KEY=VALUE pair (at most %d bytes)",
                                           LIMIT_TAG_STRING_BYTES);
                        goto done;
                }
                json_object_set_new(filters, "label", json_string(v));
        }
        if ((v = http_request_query(req, "since"))) {
                if (!*v || strlen(v) > 64 || !looks_like_time(v)) {
                        http_respond_error(req, PROBLEM_INVALID, "/query/since",
                                           "since must be an RFC 3339 time or unix seconds");
                        goto done;
                }
                json_object_set_new(filters, "since", json_string(v));
        }
        if ((v = http_request_query(req, "step"))) {
                long long step;

                errno = 0;
                step = strtoll(v, &end, 10);
                if (errno || end == v || *end || step < 0 || *v == '-' || *v == '+') {
                        http_respond_error(req, PROBLEM_INVALID, "/query/step",
                                           "step must be a non-negative integer (tags.step)");
                        goto done;
                }
                json_object_set_new(filters, "step", json_integer(step));
        }
        if ((v = http_request_query(req, "include"))) {
                if (strcmp(v, "result") != 0) {
                        http_respond_error(req, PROBLEM_INVALID, "/query/include",
                                           "include takes one value: result (each done item with its result)");
                        goto done;
                }
                json_object_set_new(filters, "include_result", json_true());
        }
        if ((v = http_request_query(req, "cursor"))) {
                errno = 0;
                cursor = strtoll(v, &end, 10);
                if (errno || end == v || *end || cursor < 0) {
                        http_respond_error(req, PROBLEM_INVALID, "/query/cursor",
                                           "cursor must be a next_cursor value from a previous page");
                        goto done;
                }
        }
        if ((v = http_request_query(req, "limit"))) {
                errno = 0;
                limit = strtoll(v, &end, 10);
                if (errno || end == v || *end || limit < 1 || limit > LIMIT_LIST_PAGE_MAX) {
                        http_respond_error(req, PROBLEM_INVALID, "/query/limit",
                                           "limit must be an integer from 1 to %d", LIMIT_LIST_PAGE_MAX);
                        goto done;
                }
        }
        if (!visible_to_all(req))
                json_object_set_new(filters, "token_id", json_integer(http_request_principal(req)->token_id));
        store = storepool_get(api->pool);
        r = store_list_submissions(store, filters, cursor, (int)limit, &items, &next);
        storepool_put(api->pool, store);
        if (r == -EINVAL) {
                /* Every other filter was checked above; the store parses since itself. */
                http_respond_error(req, PROBLEM_INVALID, "/query/since",
                                   "since must be an RFC 3339 time or unix seconds");
                goto done;
        }
        if (r != 0) {
                api_respond_store_error(req, r, "listing submissions");
                goto done;
        }
        http_respond_json(req, 200, json_pack("{s:o, s:o}", "items", items,
                                              "next_cursor", next > 0 ? json_integer(next) : json_null()));
done:
        json_decref(filters);
        return HTTP_DONE;
}

/**
 * api_submissions_collection() - POST and GET /v1/submissions
 * Return: HTTP_DONE, or HTTP_SUSPENDED for a parked ?wait.
 */
int api_submissions_collection(HttpRequest *req)
{
        if (http_request_method(req) == HTTP_POST)
                return post_submissions(req);
        return list_submissions(req);
}

/* ---- /v1/submissions/{id} ---- */

static int get_submission(HttpRequest *req, int64_t id)
{
        static const char *const known_q[] = { "wait", NULL };
        json_t *obj = NULL;
        double wait_s;

        if (http_request_resumed(req) >= 0) {
                if (fetch(req, id, &obj) != 0)
                        return HTTP_DONE;
                return http_respond_json(req, 200, obj);
        }
        if (api_check_query(req, known_q) || api_parse_wait(req, &wait_s))
                return HTTP_DONE;
        if (fetch(req, id, &obj) != 0)
                return HTTP_DONE;
        if (wait_s <= 0 || is_done(obj) || http_request_wait(req, id, wait_s) != 0)
                return http_respond_json(req, 200, obj);
        json_decref(obj);
        /* Registered first, then read again: a finish in between is not lost. */
        if (fetch(req, id, &obj) != 0) {
                http_request_unwait(req);
                return HTTP_DONE;
        }
        if (is_done(obj)) {
                http_request_unwait(req);
                return http_respond_json(req, 200, obj);
        }
        json_decref(obj);
        return HTTP_SUSPENDED;
}

static int delete_submission(HttpRequest *req, int64_t id)
{
        static const char *const known_q[] = { NULL };
        Api *api = http_request_app(req);
        json_t *obj = NULL;
        Store *store;
        int r;

        if (api_check_query(req, known_q))
                return HTTP_DONE;
        store = storepool_get(api->pool);
        r = store_cancel(store, id, visible_to_all(req) ? 0 : http_request_principal(req)->token_id);
        if (r == STORE_E_CONFLICT)
                r = store_get_submission(store, id, &obj) == 0 ? STORE_E_CONFLICT : STORE_E_NOT_FOUND;
        else if (r == 0)
                r = store_get_submission(store, id, &obj);
        storepool_put(api->pool, store);
        if (r == STORE_E_NOT_FOUND)
                return http_respond_error(req, PROBLEM_NOT_FOUND, NULL, "no submission %lld", (long long)id);
        if (r == STORE_E_CONFLICT) {
                const char *st = json_string_value(json_object_get(obj, "state"));
                char detail[160];

                snprintf(detail, sizeof(detail), "submission %lld is %s; only queued or compiled (waiting for a GPU) submissions can be cancelled",
                         (long long)id, st ? st : "not queued");
                json_decref(obj);
                return http_respond_error(req, PROBLEM_CONFLICT, NULL, "%s", detail);
        }
        if (r != 0)
                return api_respond_store_error(req, r, "cancelling the submission");
        waiters_notify(api->waiters, id);
        if (api->dispatcher)
                dispatch_notify(api->dispatcher);
        return http_respond_json(req, 200, obj);
}

/**
 * api_submissions_item() - GET and DELETE /v1/submissions/{id}
 * Return: HTTP_DONE, or HTTP_SUSPENDED for a parked ?wait.
 */
int api_submissions_item(HttpRequest *req)
{
        int64_t id;

        if (!api_parse_id(http_request_param(req, 0), &id))
                return http_respond_error(req, PROBLEM_NOT_FOUND, NULL, "no submission '%.64s'",
                                          http_request_param(req, 0));
        if (http_request_method(req) == HTTP_DELETE)
                return delete_submission(req, id);
        return get_submission(req, id);
}
