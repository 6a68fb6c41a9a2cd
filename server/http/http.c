/*
 * http - the libmicrohttpd boundary (see http.h for the contract).
 *
 * Theory of operation. libmicrohttpd calls on_request() several times per
 * request: once with the headers, once per piece of body, once at the end,
 * and once more after each resume of a suspended connection. The first call
 * allocates the HttpRequest, routes the path (404/405 answered at once),
 * runs the gate (auth, rate limit) and decides 413 from Content-Length, all
 * before a byte of body is read. Body pieces are appended up to the limit;
 * past it (a chunked body has no Content-Length) they are counted and
 * dropped, and the last call answers 413. The last call runs the handler.
 *
 * Long-polls: http_request_wait() registers the request's embedded Waiter;
 * when the handler returns HTTP_SUSPENDED the connection is suspended under
 * the request's mutex unless the waiter has already fired (then the handler
 * simply runs again). The waiter callback, on the dispatcher's or the timer
 * thread, marks the request fired and resumes it if it is suspended;
 * libmicrohttpd then calls on_request() again on its own thread, which runs
 * the handler with http_request_resumed() set. A suspended connection is
 * never closed by libmicrohttpd, and a request's Waiter is cancelled before
 * the request is freed, so a callback never touches freed memory.
 *
 * The listening socket is made here (to report bind errors and the port
 * precisely) and handed to libmicrohttpd; quiesce takes it back.
 *
 * Abuse. Request bodies are counted against body_inflight_limit as their
 * bytes arrive (the buffer grows with them, at most twice what was sent): a
 * body that does not fit is answered 503 with Retry-After, unless nothing
 * else is held; a declared Content-Length that cannot fit beside what is
 * held now is refused before its body is read, but a declaration reserves
 * nothing, so connections that declare large bodies and trickle them hold
 * no more than they sent. Every connection is an HttpConn in a list (NOTIFY_CONNECTION): it
 * carries the deadline by which its request header must be complete (the
 * connection's start plus header_timeout_s; after an answer on a kept-alive
 * connection, connection_timeout_s more). on_request()'s first call clears
 * it. The sweeper thread, four times a second, writes a 408 problem straight
 * to each connection past its deadline and shuts the socket down, which
 * libmicrohttpd sees as the peer closing. libmicrohttpd runs NOTIFY_CLOSED
 * before it closes the socket, and the list's mutex is held around both the
 * unlink and the sweeper's writes, so the sweeper never touches a reused fd
 * (it also checks the fd's peer is still the connection's).
 * The sweeper also calls malloc_trim() after a large request has ended, off
 * the request threads. libmicrohttpd's own error answers (400, 413, 414,
 * 431 before a request reaches us) are HTML without a content type in
 * 0.9.75, with no option to change them: MHD_create_response_from_buffer()
 * and MHD_queue_response() are interposed below (the library calls them
 * through its PLT) to send problem+json instead.
 */
#include "server/http/http_int.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/jsondump.h"
#include "common/limits.h"
#include "common/log.h"

#define MAX_PARAMS 2
#define MAX_HEADERS 8
#define BODY_DISCARD_SLACK (64u << 20)   /* past 4 * limit + this, a chunked body is cut off */
#define TRIM_AFTER_BYTES (1u << 20)      /* a request whose body reached this asks for malloc_trim() */

struct HttpRequest {
        HttpServer *srv;
        struct MHD_Connection *conn;
        const HttpRoute *route;
        size_t route_index;
        HttpMethod method;
        char *path;                      /* copy of the URL path, split for params */
        const char *params[MAX_PARAMS];
        char *body;
        size_t body_len, body_cap, body_seen;
        size_t body_reserved;            /* bytes counted in srv->body_bytes */
        bool body_too_large;
        bool body_refused;               /* over body_inflight_limit: 503 at the end */
        HttpConn *hconn;
        bool checked;                    /* first_call() has run */
        bool responded;
        int status;
        double t0;
        HttpPrincipal principal;
        char *hdr_name[MAX_HEADERS];
        char *hdr_value[MAX_HEADERS];
        int n_hdrs;
        /* long-poll */
        Waiter waiter;
        pthread_mutex_t mu;
        int fired;                       /* WaiterReason, or -1 */
        bool suspended;
        bool waiting;
        int resumed;                     /* WaiterReason, or -1 */
        int64_t slot;
};

static const char *const method_names[] = { "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "OTHER" };

/**
 * http_method_parse() - "GET" etc. to HttpMethod; anything unknown is HTTP_OTHER.
 */
HttpMethod http_method_parse(const char *s)
{
        for (int i = 0; i < HTTP_OTHER; i++)
                if (!strcmp(s, method_names[i]))
                        return (HttpMethod)i;
        return HTTP_OTHER;
}

/**
 * http_method_name() - the method's name; static storage.
 */
const char *http_method_name(HttpMethod m)
{
        return (unsigned)m <= HTTP_OTHER ? method_names[m] : "OTHER";
}

/* Match @path against @pattern segment by segment; {x} captures one non-empty segment. */
static bool match(const char *pattern, const char *path, const char **caps, size_t *ret_ncaps,
                  size_t *cap_off, size_t *cap_len)
{
        const char *p = pattern, *u = path;
        size_t nc = 0;

        while (*p && *u) {
                if (*p == '{') {
                        const char *pe = strchr(p, '}');
                        const char *ue = strchr(u, '/');

                        if (!pe)
                                return false;
                        if (!ue)
                                ue = u + strlen(u);
                        if (ue == u || nc >= MAX_PARAMS)
                                return false;
                        cap_off[nc] = (size_t)(u - path);
                        cap_len[nc] = (size_t)(ue - u);
                        nc++;
                        p = pe + 1;
                        u = ue;
                        continue;
                }
                if (*p != *u)
                        return false;
                p++;
                u++;
        }
        (void)caps;
        if (*p || *u)
                return false;
        *ret_ncaps = nc;
        return true;
}

static bool method_allowed(const HttpRoute *r, HttpMethod m)
{
        if (m == HTTP_HEAD && (r->methods & HTTP_M(HTTP_GET)))
                return true;
        return m < HTTP_OTHER && (r->methods & HTTP_M(m));
}

/* Route @req; returns the route or NULL, and fills @allow for a path whose method is wrong. */
static const HttpRoute *route_request(HttpRequest *req, const char *url, char *allow, size_t allowlen)
{
        const HttpServerConfig *cfg = &req->srv->cfg;
        size_t off[MAX_PARAMS], len[MAX_PARAMS], nc;

        allow[0] = 0;
        for (size_t i = 0; i < cfg->n_routes; i++) {
                const HttpRoute *r = &cfg->routes[i];

                if (!match(r->pattern, url, NULL, &nc, off, len))
                        continue;
                req->route_index = i;
                if (!method_allowed(r, req->method)) {
                        size_t o = 0;

                        for (int m = 0; m < HTTP_OTHER; m++)
                                if (method_allowed(r, (HttpMethod)m))
                                        o += (size_t)snprintf(allow + o, allowlen - o, "%s%s",
                                                              o ? ", " : "", method_names[m]);
                        return NULL;
                }
                req->path = strdup(url);
                if (!req->path)
                        return NULL;
                for (size_t k = 0; k < nc; k++) {
                        req->path[off[k] + len[k]] = 0;
                        req->params[k] = req->path + off[k];
                }
                return r;
        }
        return NULL;
}

/* ---- responses ---- */

static int queue(HttpRequest *req, int status, const char *content_type, void *data, size_t len,
                 enum MHD_ResponseMemoryMode mode)
{
        struct MHD_Response *resp;

        if (req->responded) {
                if (mode == MHD_RESPMEM_MUST_FREE)
                        free(data);
                return HTTP_DONE;
        }
        resp = MHD_create_response_from_buffer(len, data, mode);
        if (!resp) {
                if (mode == MHD_RESPMEM_MUST_FREE)
                        free(data);
                return HTTP_DONE;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
        for (int i = 0; i < req->n_hdrs; i++)
                MHD_add_response_header(resp, req->hdr_name[i], req->hdr_value[i]);
        if (MHD_queue_response(req->conn, (unsigned)status, resp) == MHD_YES) {
                req->responded = true;
                req->status = status;
        } else
                log_warn("http: cannot queue a %d answer for %s", status, http_method_name(req->method));
        MHD_destroy_response(resp);
        return HTTP_DONE;
}

/**
 * http_response_header() - add a header (copied) to the answer about to be sent;
 * at most MAX_HEADERS, the rest are dropped.
 */
void http_response_header(HttpRequest *req, const char *name, const char *value)
{
        if (req->n_hdrs >= MAX_HEADERS)
                return;
        req->hdr_name[req->n_hdrs] = strdup(name);
        req->hdr_value[req->n_hdrs] = strdup(value);
        if (!req->hdr_name[req->n_hdrs] || !req->hdr_value[req->n_hdrs]) {
                free(req->hdr_name[req->n_hdrs]);
                free(req->hdr_value[req->n_hdrs]);
                return;
        }
        req->n_hdrs++;
}

static int respond_dump(HttpRequest *req, int status, const char *ctype, json_t *body)
{
        char *text = body ? jsondump_text(body, JSON_COMPACT) : NULL;

        json_decref(body);
        if (!text) {
                static const char oom[] = "{\"type\":\"" PROBLEM_TYPE_BASE "internal\",\"title\":"
                                          "\"Internal server error\",\"status\":500,\"detail\":\"out of memory\"}";

                return queue(req, 500, PROBLEM_CONTENT_TYPE, (void *)oom, sizeof(oom) - 1,
                             MHD_RESPMEM_PERSISTENT);
        }
        return queue(req, status, ctype, text, strlen(text), MHD_RESPMEM_MUST_FREE);
}

/**
 * http_respond_json() - answer @status with @body (stolen) as JSON
 * Return: HTTP_DONE.
 */
int http_respond_json(HttpRequest *req, int status, json_t *body)
{
        return respond_dump(req, status, "application/json", body);
}

/**
 * http_respond_problem() - answer @problem (stolen) as problem+json with
 * the status it carries. Return: HTTP_DONE.
 */
int http_respond_problem(HttpRequest *req, json_t *problem)
{
        int status = (int)json_integer_value(json_object_get(problem, "status"));

        if (status < 400 || status > 599)
                status = 500;
        return respond_dump(req, status, PROBLEM_CONTENT_TYPE, problem);
}

/**
 * http_respond_error() - build a problem of @kind and answer it.
 * Return: HTTP_DONE.
 */
int http_respond_error(HttpRequest *req, ProblemKind kind, const char *pointer, const char *fmt, ...)
{
        va_list ap;
        json_t *p;

        va_start(ap, fmt);
        p = problem_newv(kind, pointer, fmt, ap);
        va_end(ap);
        return http_respond_problem(req, p);
}

/**
 * http_respond_text() - answer @status with a copy of @text. Return: HTTP_DONE.
 */
int http_respond_text(HttpRequest *req, int status, const char *content_type, const char *text, size_t len)
{
        char *copy = malloc(len + 1);

        if (!copy)
                return respond_dump(req, 500, PROBLEM_CONTENT_TYPE, NULL);
        memcpy(copy, text, len);
        return queue(req, status, content_type, copy, len, MHD_RESPMEM_MUST_FREE);
}

/* ---- accessors ---- */

/**
 * http_request_method() - the request's method.
 */
HttpMethod http_request_method(HttpRequest *req)
{
        return req->method;
}

/**
 * http_request_path() - the matched route template (for logs), or "".
 */
const char *http_request_path(HttpRequest *req)
{
        return req->route ? req->route->pattern : "";
}

/**
 * http_request_param() - the @i-th {param} of the route; borrowed, or NULL.
 */
const char *http_request_param(HttpRequest *req, int i)
{
        return i >= 0 && i < MAX_PARAMS ? req->params[i] : NULL;
}

/**
 * http_request_query() - the first query argument named @key; borrowed, or
 * NULL when absent or given without a value.
 */
const char *http_request_query(HttpRequest *req, const char *key)
{
        return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

typedef struct QueryIter {
        int (*fn)(void *ctx, const char *key, const char *value);
        void *ctx;
        int r;
} QueryIter;

static enum MHD_Result query_iter(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
        QueryIter *it = cls;

        (void)kind;
        it->r = it->fn(it->ctx, key, value);
        return it->r == 0 ? MHD_YES : MHD_NO;
}

/**
 * http_request_query_foreach() - call @fn for each query argument in order
 * Return: the first non-zero value @fn returned, or 0.
 */
int http_request_query_foreach(HttpRequest *req, int (*fn)(void *ctx, const char *key, const char *value),
                               void *ctx)
{
        QueryIter it = { fn, ctx, 0 };

        MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, query_iter, &it);
        return it.r;
}

/**
 * http_request_header() - a request header (case-insensitive name); borrowed, or NULL.
 */
const char *http_request_header(HttpRequest *req, const char *name)
{
        return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

/**
 * http_request_body() - the whole body, NUL-terminated; borrowed, or NULL (0).
 */
const char *http_request_body(HttpRequest *req, size_t *ret_len)
{
        *ret_len = req->body_len;
        return req->body;
}

/**
 * http_request_app() - the HttpServerConfig.app pointer.
 */
void *http_request_app(HttpRequest *req)
{
        return req->srv->cfg.app;
}

/**
 * http_request_principal() - who is asking, as the gate set it; borrowed.
 */
HttpPrincipal *http_request_principal(HttpRequest *req)
{
        return &req->principal;
}

/**
 * http_request_slot() - one integer the handler keeps across a wait.
 */
int64_t *http_request_slot(HttpRequest *req)
{
        return &req->slot;
}

/**
 * http_request_resumed() - -1 on the first run of the handler, else the
 * WaiterReason that ended the wait.
 */
int http_request_resumed(HttpRequest *req)
{
        return req->resumed;
}

/* ---- long-poll ---- */

static void on_waiter(void *ctx, WaiterReason reason)
{
        HttpRequest *req = ctx;

        pthread_mutex_lock(&req->mu);
        req->fired = (int)reason;
        if (req->suspended) {
                req->suspended = false;
                MHD_resume_connection(req->conn);
        }
        pthread_mutex_unlock(&req->mu);
}

/**
 * http_request_wait() - see http.h.
 */
int http_request_wait(HttpRequest *req, int64_t id, double timeout_s)
{
        int r;

        if (!req->srv->cfg.waiters)
                return WAITERS_E_CLOSED;
        r = waiters_add(req->srv->cfg.waiters, &req->waiter, id, timeout_s, on_waiter, req);
        if (r == 0)
                req->waiting = true;
        return r;
}

/**
 * http_request_unwait() - withdraw the request's waiter before answering at
 * once; safe whether or not it has fired (the connection is not suspended).
 */
void http_request_unwait(HttpRequest *req)
{
        if (!req->waiting)
                return;
        (void)waiters_cancel(req->srv->cfg.waiters, &req->waiter);
        pthread_mutex_lock(&req->mu);
        req->fired = -1;
        req->waiting = false;
        pthread_mutex_unlock(&req->mu);
}

/* Run the handler until it responds or parks the connection. */
static enum MHD_Result run_handler(HttpRequest *req)
{
        for (;;) {
                int r = req->route->handler(req);

                if (r != HTTP_SUSPENDED || !req->waiting) {
                        if (!req->responded) {
                                log_error("http: handler for %s %s answered nothing",
                                          http_method_name(req->method), req->route->pattern);
                                http_respond_error(req, PROBLEM_INTERNAL, NULL, "the handler gave no answer");
                        }
                        return MHD_YES;
                }
                pthread_mutex_lock(&req->mu);
                if (req->fired >= 0) {
                        req->resumed = req->fired;
                        req->fired = -1;
                        req->waiting = false;
                        pthread_mutex_unlock(&req->mu);
                        continue;
                }
                MHD_suspend_connection(req->conn);
                req->suspended = true;
                pthread_mutex_unlock(&req->mu);
                return MHD_YES;
        }
}

/* ---- the request cycle ---- */

/*
 * Count @n more body bytes for @req against body_inflight_limit. A request
 * that holds everything counted (or nothing is counted) always gets its
 * bytes, so a body within body_limit is never refused on an idle server.
 */
/* Do @n more bytes fit beside @cur counted in all, @mine of them this request's? */
static bool body_fits(const HttpServer *s, size_t cur, size_t mine, size_t n)
{
        return !s->cfg.body_inflight_limit || cur <= mine || cur + n <= s->cfg.body_inflight_limit;
}

static bool body_reserve(HttpRequest *req, size_t n)
{
        HttpServer *s = req->srv;
        size_t cur = atomic_load(&s->body_bytes);

        do {
                if (!body_fits(s, cur, req->body_reserved, n))
                        return false;
        } while (!atomic_compare_exchange_weak(&s->body_bytes, &cur, cur + n));
        req->body_reserved += n;
        return true;
}

static void body_drop(HttpRequest *req)
{
        free(req->body);
        req->body = NULL;
        req->body_len = req->body_cap = 0;
        atomic_fetch_sub(&req->srv->body_bytes, req->body_reserved);
        req->body_reserved = 0;
}

static int respond_busy(HttpRequest *req)
{
        http_response_header(req, "Retry-After", "1");
        return http_respond_error(req, PROBLEM_UNAVAILABLE, NULL,
                                  "the server holds as many request bodies as it may at once (%zu bytes); "
                                  "retry shortly", req->srv->cfg.body_inflight_limit);
}

/* @c's request header is now due by @deadline (0: no deadline). */
static void conn_set_deadline(HttpServer *s, HttpConn *c, double deadline)
{
        if (!c)
                return;
        pthread_mutex_lock(&s->conn_mu);
        c->deadline = deadline;
        pthread_mutex_unlock(&s->conn_mu);
}

static void request_free(HttpRequest *req)
{
        if (!req)
                return;
        if (req->waiting && req->srv->cfg.waiters)
                (void)waiters_cancel(req->srv->cfg.waiters, &req->waiter);
        for (int i = 0; i < req->n_hdrs; i++) {
                free(req->hdr_name[i]);
                free(req->hdr_value[i]);
        }
        pthread_mutex_destroy(&req->mu);
        body_drop(req);
        free(req->path);
        free(req);
}

static bool parse_length(const char *s, unsigned long long *ret)
{
        char *end;

        if (!s || *s < '0' || *s > '9')
                return false;
        errno = 0;
        *ret = strtoull(s, &end, 10);
        return errno == 0 && *end == 0;
}

/*
 * Route, gate and decide 413 from Content-Length. Runs on the first call
 * for a request that announces a body (so nothing is read that would be
 * refused), else on the last call: libmicrohttpd closes the connection after
 * an answer queued on the first call, and a bodyless GET keeps it alive.
 */
static enum MHD_Result first_call(HttpRequest *req, const char *url)
{
        HttpServer *s = req->srv;
        char allow[128];
        unsigned long long clen;

        req->route = route_request(req, url, allow, sizeof(allow));
        if (!req->route) {
                if (allow[0]) {
                        http_response_header(req, "Allow", allow);
                        http_respond_error(req, PROBLEM_METHOD_NOT_ALLOWED, NULL,
                                           "%s is not allowed here; allowed: %s",
                                           http_method_name(req->method), allow);
                } else {
                        req->route_index = s->cfg.n_routes;
                        http_respond_error(req, PROBLEM_NOT_FOUND, NULL, "no route for this path");
                }
                return MHD_YES;
        }
        if (s->cfg.gate && s->cfg.gate(req, req->route) == HTTP_DONE && req->responded)
                return MHD_YES;
        if (parse_length(http_request_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH), &clen) &&
            clen > s->cfg.body_limit) {
                http_respond_error(req, PROBLEM_BODY_TOO_LARGE, NULL,
                                   "the request body is larger than the limit of %zu bytes",
                                   s->cfg.body_limit);
                return MHD_YES;
        }
        /* A declared body that cannot fit beside what others hold now is refused before a byte of it
         * is read; nothing is reserved on a declaration, though: bytes count as they arrive, so
         * connections that declare large bodies and trickle them hold no more than they sent. */
        if (parse_length(http_request_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH), &clen) && clen > 0 &&
            !body_fits(s, atomic_load(&s->body_bytes), 0, (size_t)clen + 1))
                respond_busy(req);
        return MHD_YES;
}

static bool announces_body(HttpRequest *req)
{
        unsigned long long clen;

        if (http_request_header(req, MHD_HTTP_HEADER_TRANSFER_ENCODING))
                return true;
        return parse_length(http_request_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH), &clen) && clen > 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
        HttpServer *s = cls;
        HttpRequest *req = *con_cls;

        (void)version;
        if (!req) {
                req = calloc(1, sizeof(*req));
                if (!req)
                        return MHD_NO;
                req->srv = s;
                req->conn = conn;
                req->t0 = http_now_s();
                req->method = http_method_parse(method);
                req->route_index = s->cfg.n_routes;
                req->fired = -1;
                req->resumed = -1;
                pthread_mutex_init(&req->mu, NULL);
                *con_cls = req;
                atomic_fetch_add(&s->inflight, 1);
                /* The header is complete: the connection's deadline is off while the request runs. */
                {
                        const union MHD_ConnectionInfo *ci =
                                MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

                        req->hconn = ci ? ci->socket_context : NULL;
                        conn_set_deadline(s, req->hconn, 0);
                }
                if (!announces_body(req))
                        return MHD_YES;
                /*
                 * A client that wrote the header and the body apart (Nagle)
                 * holds the body until the header is acknowledged: send the
                 * ACK the kernel would delay now (quick-ack mode does not last).
                 */
                if (req->hconn && req->hconn->fd >= 0) {
                        int one = 1;

                        (void)setsockopt(req->hconn->fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
                }
                req->checked = true;
                return first_call(req, url);
        }
        if (!req->checked) {
                req->checked = true;
                first_call(req, url);
        }
        if (req->responded) {
                /* Answered before the body (404, 401, 413...): drop what comes. */
                *upload_data_size = 0;
                return MHD_YES;
        }
        if (*upload_data_size > 0) {
                size_t n = *upload_data_size;

                *upload_data_size = 0;
                req->body_seen += n;
                if (req->body_len + n > s->cfg.body_limit)
                        req->body_too_large = true;
                if (req->body_too_large || req->body_refused) {
                        /* libmicrohttpd cannot answer in the middle of a body: count, drop, answer at the end. */
                        body_drop(req);
                        /* An endless chunked body: stop reading, close the connection. */
                        return req->body_seen > 4 * s->cfg.body_limit + BODY_DISCARD_SLACK ? MHD_NO : MHD_YES;
                }
                if (req->body_len + n + 1 > req->body_cap) {
                        unsigned long long clen;
                        size_t cap = req->body_cap ? req->body_cap * 2 : 16384;
                        char *b;

                        /* grown with what arrives (and counted with it), never to the declared
                         * length at once: a declared body costs what was sent of it, at most twice */
                        while (cap < req->body_len + n + 1)
                                cap *= 2;
                        if (parse_length(http_request_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH), &clen) &&
                            cap > (size_t)clen + 1 && (size_t)clen + 1 >= req->body_len + n + 1)
                                cap = (size_t)clen + 1;
                        if (cap > s->cfg.body_limit + 1)
                                cap = s->cfg.body_limit + 1;
                        if (cap > req->body_reserved && !body_reserve(req, cap - req->body_reserved)) {
                                req->body_refused = true;
                                body_drop(req);
                                return MHD_YES;
                        }
                        b = realloc(req->body, cap);
                        if (!b)
                                return MHD_NO;
                        req->body = b;
                        req->body_cap = cap;
                }
                memcpy(req->body + req->body_len, upload_data, n);
                req->body_len += n;
                req->body[req->body_len] = 0;
                return MHD_YES;
        }
        if (req->body_too_large) {
                http_respond_error(req, PROBLEM_BODY_TOO_LARGE, NULL,
                                   "the request body is larger than the limit of %zu bytes",
                                   s->cfg.body_limit);
                return MHD_YES;
        }
        if (req->body_refused) {
                respond_busy(req);
                return MHD_YES;
        }
        if (req->waiting) {
                /* Called again after a resume. */
                pthread_mutex_lock(&req->mu);
                if (req->fired < 0) {
                        MHD_suspend_connection(conn);
                        req->suspended = true;
                        pthread_mutex_unlock(&req->mu);
                        return MHD_YES;
                }
                req->resumed = req->fired;
                req->fired = -1;
                req->waiting = false;
                pthread_mutex_unlock(&req->mu);
        }
        return run_handler(req);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
        HttpServer *s = cls;
        HttpRequest *req = *con_cls;

        (void)conn;
        if (!req)
                return;
        metrics_http_observe(s->cfg.metrics, req->route_index, req->responded ? req->status : 499,
                             http_now_s() - req->t0);
        if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
                log_debug("http: request ended early (%d)", (int)toe);
        /* A kept-alive connection's next header: after the idle timeout, the header deadline. */
        if (s->cfg.header_timeout_s > 0)
                conn_set_deadline(s, req->hconn,
                                  http_now_s() + s->cfg.connection_timeout_s + s->cfg.header_timeout_s);
        if (req->body_seen >= TRIM_AFTER_BYTES)
                atomic_store(&s->trim_wanted, true);
        request_free(req);
        *con_cls = NULL;
        atomic_fetch_sub(&s->inflight, 1);
}

/* ---- connections: the header deadline (the sweeper: http_sweep.c), socket options ---- */

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
        HttpServer *s = cls;
        HttpConn *c;

        if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
                const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
                int one = 1;

                c = calloc(1, sizeof(*c));
                if (!c)
                        return;         /* no deadline for this one; the idle timeout still holds */
                c->fd = ci ? ci->connect_fd : -1;
                c->peer_len = sizeof(c->peer);
                if (c->fd >= 0 && getpeername(c->fd, (struct sockaddr *)&c->peer, &c->peer_len) < 0)
                        c->fd = -1;     /* no deadline for it */
                if (c->fd >= 0) {
                        /* An answer goes out at once, and a request's second segment is acknowledged at once. */
                        (void)setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                        (void)setsockopt(c->fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
                }
                c->deadline = s->cfg.header_timeout_s > 0 ? http_now_s() + s->cfg.header_timeout_s : 0;
                pthread_mutex_lock(&s->conn_mu);
                c->next = s->conns;
                if (s->conns)
                        s->conns->prev = c;
                s->conns = c;
                pthread_mutex_unlock(&s->conn_mu);
                *socket_context = c;
                return;
        }
        c = *socket_context;
        if (!c)
                return;
        pthread_mutex_lock(&s->conn_mu);
        if (c->prev)
                c->prev->next = c->next;
        else
                s->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        pthread_mutex_unlock(&s->conn_mu);
        free(c);
        *socket_context = NULL;
}

/**
 * http_log_budget() - at most LIMIT_HTTP_LOG_PER_MINUTE lines a minute from the front door
 * (libmicrohttpd's reports, the sweeper's); the rest are counted and the
 * count is told with the next line let through.
 * Return: true to log, with the lines dropped since the last one in @ret_dropped.
 */
bool http_log_budget(HttpServer *s, long *ret_dropped)
{
        double now = http_now_s();
        bool ok;

        pthread_mutex_lock(&s->log_mu);
        if (now - s->log_window >= 60) {
                s->log_window = now;
                s->log_lines = 0;
        }
        ok = s->log_lines < LIMIT_HTTP_LOG_PER_MINUTE;
        if (ok) {
                s->log_lines++;
                *ret_dropped = s->log_dropped;
                s->log_dropped = 0;
        } else
                s->log_dropped++;
        pthread_mutex_unlock(&s->log_mu);
        return ok;
}

/* ---- libmicrohttpd's own error answers, as problem+json ---- */

#define OWN_PROBLEM(slug, title, status, detail)                                                   \
        "{\"type\":\"" PROBLEM_TYPE_BASE slug "\",\"title\":\"" title "\",\"status\":" #status \
        ",\"detail\":\"" detail "\"}"

static const struct {
        unsigned status;
        const char *body;
} own_problems[] = {
        { 400, OWN_PROBLEM("bad-request", "Bad request", 400,
                           "the HTTP request is malformed (request line, header, Content-Length or chunk)") },
        { 413, OWN_PROBLEM("body-too-large", "Request body too large", 413,
                           "Content-Length or a chunk size is larger than the server reads") },
        { 414, OWN_PROBLEM("uri-too-long", "URI too long", 414,
                           "the request line is longer than the server reads") },
        { 431, OWN_PROBLEM("headers-too-large", "Request header fields too large", 431,
                           "the request header is larger than the server reads") },
        { 505, OWN_PROBLEM("http-version-not-supported", "HTTP version not supported", 505,
                           "the server speaks HTTP/1.0 and HTTP/1.1") },
        { 500, OWN_PROBLEM("internal", "Internal server error", 500, "the HTTP layer failed") },
};

typedef struct MHD_Response *(*CreateFromBufferFn)(size_t, void *, enum MHD_ResponseMemoryMode);
typedef enum MHD_Result (*QueueResponseFn)(struct MHD_Connection *, unsigned int, struct MHD_Response *);

static CreateFromBufferFn real_create;
static QueueResponseFn real_queue;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;
/* The answer libmicrohttpd just made for one of its HTML error pages on this thread, or NULL. */
static _Thread_local struct MHD_Response *own_error;

static void find_real(void)
{
        void *c = dlsym(RTLD_NEXT, "MHD_create_response_from_buffer");
        void *q = dlsym(RTLD_NEXT, "MHD_queue_response");

        /* POSIX lets a data pointer from dlsym() hold a function; ISO C needs the copy. */
        memcpy(&real_create, &c, sizeof(c));
        memcpy(&real_queue, &q, sizeof(q));
}

/*
 * MHD_create_response_from_buffer() - libmicrohttpd's, noting the answers it
 * makes for its own HTML error pages (a static page, "<html><head><title>").
 */
struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer, enum MHD_ResponseMemoryMode mode)
{
        static const char html[] = "<html><head><title>";
        struct MHD_Response *r;

        pthread_once(&real_once, find_real);
        if (!real_create)
                return NULL;
        r = real_create(size, buffer, mode);
        own_error = mode == MHD_RESPMEM_PERSISTENT && buffer && size >= sizeof(html) - 1 &&
                                    !memcmp(buffer, html, sizeof(html) - 1)
                            ? r
                            : NULL;
        return r;
}

/*
 * MHD_queue_response() - libmicrohttpd's; an HTML error page of its own
 * goes out as the problem+json of its status instead.
 */
enum MHD_Result MHD_queue_response(struct MHD_Connection *conn, unsigned int status, struct MHD_Response *resp)
{
        pthread_once(&real_once, find_real);
        if (!real_queue)
                return MHD_NO;
        if (resp && resp == own_error) {
                own_error = NULL;
                for (size_t i = 0; i < sizeof(own_problems) / sizeof(own_problems[0]); i++) {
                        struct MHD_Response *p;
                        enum MHD_Result r;

                        if (own_problems[i].status != status)
                                continue;
                        p = real_create(strlen(own_problems[i].body), (void *)own_problems[i].body,
                                        MHD_RESPMEM_PERSISTENT);
                        if (!p)
                                break;
                        MHD_add_response_header(p, MHD_HTTP_HEADER_CONTENT_TYPE, PROBLEM_CONTENT_TYPE);
                        r = real_queue(conn, status, p);
                        MHD_destroy_response(p);
                        return r;
                }
        }
        return real_queue(conn, status, resp);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
        HttpServer *s = cls;
        char msg[512];
        long dropped;
        size_t n;

        if (!http_log_budget(s, &dropped))
                return;
        vsnprintf(msg, sizeof(msg), fmt, ap);
        n = strlen(msg);
        while (n > 0 && msg[n - 1] == '\n')
                msg[--n] = 0;
        if (dropped)
                log_warn("http: libmicrohttpd: %s (%ld lines dropped before this one)", msg, dropped);
        else
                log_warn("http: libmicrohttpd: %s", msg);
}

static int open_listener(const char *host, int port, bool *ret_v6, int *ret_fd, int *ret_port)
{
        struct addrinfo hints = { 0 }, *ai = NULL;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        char portstr[16];
        int fd = -1, one = 1, r;

        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
        snprintf(portstr, sizeof(portstr), "%d", port);
        r = getaddrinfo(host, portstr, &hints, &ai);
        if (r != 0) {
                log_error("http: cannot resolve '%s': %s", host, gai_strerror(r));
                return -EINVAL;
        }
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
                r = -errno;
                goto out;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 1024) < 0 ||
            getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
                r = -errno;
                goto out;
        }
        *ret_v6 = ss.ss_family == AF_INET6;
        *ret_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                   : ((struct sockaddr_in *)&ss)->sin_port);
        *ret_fd = fd;
        fd = -1;
        r = 0;
out:
        if (fd >= 0)
                close(fd);
        freeaddrinfo(ai);
        return r;
}

static void server_free(HttpServer *s)
{
        if (!s)
                return;
        if (s->sweeper_started) {
                pthread_mutex_lock(&s->sweep_mu);
                s->stopping = true;
                pthread_cond_signal(&s->sweep_cv);
                pthread_mutex_unlock(&s->sweep_mu);
                pthread_join(s->sweeper, NULL);
        }
        if (s->daemon)
                MHD_stop_daemon(s->daemon);   /* closes the listening socket unless quiesced */
        else if (s->listen_fd >= 0)
                close(s->listen_fd);
        pthread_mutex_destroy(&s->conn_mu);
        pthread_mutex_destroy(&s->sweep_mu);
        pthread_cond_destroy(&s->sweep_cv);
        pthread_mutex_destroy(&s->log_mu);
        free(s->resp408);
        free(s);
}

/**
 * http_server_start() - see http.h.
 */
int http_server_start(const HttpServerConfig *cfg, HttpServer **ret_server, int *ret_port)
{
        HttpServer *s;
        /*
         * poll(), not epoll: libmicrohttpd 0.9.75 (Debian 12) races with
         * itself when a thread-pool epoll daemon is quiesced. MHD_quiesce_daemon()
         * and a pool thread both remove the listening socket from the thread's
         * epoll set; the loser gets ENOENT and MHD_PANIC() aborts the process
         * (seen in CI as "daemon.c:5531: Failed to remove listen FD from epoll
         * set" on SIGTERM). With poll() quiesce only signals each thread through
         * its ITC, and nothing is removed twice. test-http's quiesce loop
         * aborts within a few hundred cycles with MHD_USE_EPOLL.
         */
        unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
                         MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
        pthread_condattr_t ca;
        bool v6 = false;
        int port = 0, r;

        /* The interposed libmicrohttpd calls below need the real ones: a build where dlsym() cannot
         * find them (a static libmicrohttpd) would answer nothing, so it must not start. */
        pthread_once(&real_once, find_real);
        if (!real_create || !real_queue) {
                log_error("http: libmicrohttpd's MHD_create_response_from_buffer/MHD_queue_response not found "
                          "behind ours (a static libmicrohttpd?): cannot serve");
                return -ENOSYS;
        }
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->cfg = *cfg;
        s->listen_fd = -1;
        pthread_mutex_init(&s->conn_mu, NULL);
        pthread_mutex_init(&s->sweep_mu, NULL);
        pthread_mutex_init(&s->log_mu, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&s->sweep_cv, &ca);
        pthread_condattr_destroy(&ca);
        s->log_window = http_now_s();
        r = http_sweep_make_408(s);
        if (r < 0)
                goto out;
        r = open_listener(cfg->host, cfg->port, &v6, &s->listen_fd, &port);
        if (r < 0) {
                log_error("http: cannot listen on %s:%d: %s", cfg->host, cfg->port, strerror(-r));
                goto out;
        }
        if (v6)
                flags |= MHD_USE_IPv6;
        s->daemon = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, s,
                                     MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
                                     MHD_OPTION_LISTEN_SOCKET, s->listen_fd,
                                     MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(cfg->threads > 0 ? cfg->threads : 1),
                                     MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->connection_limit,
                                     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->connection_timeout_s,
                                     /* 0: no per-address limit */
                                     MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                     (unsigned)(cfg->per_ip_connection_limit > 0 ? cfg->per_ip_connection_limit : 0),
                                     MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                                     MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
                                     MHD_OPTION_END);
        if (!s->daemon) {
                log_error("http: libmicrohttpd did not start");
                r = -EIO;
                goto out;
        }
        r = -pthread_create(&s->sweeper, NULL, http_sweep_main, s);
        if (r < 0) {
                log_error("http: cannot start the sweeper thread: %s", strerror(-r));
                goto out;
        }
        s->sweeper_started = true;
        *ret_server = s;
        *ret_port = port;
        s = NULL;
        r = 0;
out:
        server_free(s);
        return r;
}

/**
 * http_server_quiesce() - stop accepting connections (the listening socket is
 * closed); open connections and requests in flight go on.
 */
void http_server_quiesce(HttpServer *s)
{
        MHD_socket fd;

        if (!s || !s->daemon || s->listen_fd < 0)
                return;
        fd = MHD_quiesce_daemon(s->daemon);
        if (fd != MHD_INVALID_SOCKET)
                close(fd);
        s->listen_fd = -1;
}

/**
 * http_server_drain() - wait up to @timeout_s for requests in flight to end.
 * Return: how many are still in flight.
 */
long http_server_drain(HttpServer *s, double timeout_s)
{
        double end = http_now_s() + timeout_s;
        long n;

        while ((n = atomic_load(&s->inflight)) > 0 && http_now_s() < end) {
                struct timespec ts = { 0, 5 * 1000 * 1000 };

                nanosleep(&ts, NULL);
        }
        return n;
}

/**
 * http_server_connections() - connections libmicrohttpd holds, over all its
 * threads; a connection the client closed counts until its thread sweeps it.
 */
unsigned http_server_connections(HttpServer *s)
{
        const union MHD_DaemonInfo *info;

        if (!s || !s->daemon)
                return 0;
        info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        return info ? info->num_connections : 0;
}

/* http_server_body_bytes() - request body bytes counted against body_inflight_limit now. */
size_t http_server_body_bytes(HttpServer *s)
{
        return s ? atomic_load(&s->body_bytes) : 0;
}

/**
 * http_server_stop() - close every connection, join the pool, free; NULL ok.
 * Parked requests must have been woken first (waiters_shutdown()).
 */
void http_server_stop(HttpServer *s)
{
        server_free(s);
}
