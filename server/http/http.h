/*
 * http - kevald's HTTP front end over libmicrohttpd (the only file that
 * includes <microhttpd.h>). It owns the daemon (internal thread pool, epoll,
 * keep-alive, suspend/resume), routing by path template, the request body
 * (limit decided from Content-Length before reading, and by counting when
 * chunked), the response, long-poll suspension through Waiters, and the
 * per-request metrics. Route handlers (server/http/api_*.c) see an HttpRequest
 * through the accessors below and never touch libmicrohttpd.
 *
 * Under abuse it keeps memory proportional to what it accepts (request
 * bodies held at once are capped: 503 beyond; freed memory is handed back
 * to the kernel after a large request) and stays fair: a per-address
 * connection limit, a deadline for a whole request header (408), sockets
 * with TCP_NODELAY and quick ACKs, rate-limited logging of what
 * libmicrohttpd reports, and problem+json for libmicrohttpd's own errors.
 *
 * A handler returns HTTP_DONE after it has responded, or HTTP_SUSPENDED
 * after http_request_wait(): the connection is parked until the waiter fires,
 * then the same handler is called again with http_request_resumed() saying
 * why. A handler that returns HTTP_DONE without responding gets a 500.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/http/metrics.h"
#include "server/http/problem.h"
#include "server/http/waiters.h"

typedef struct HttpServer HttpServer;
typedef struct HttpRequest HttpRequest;

typedef enum {
        HTTP_GET = 0,
        HTTP_HEAD,
        HTTP_POST,
        HTTP_PUT,
        HTTP_DELETE,
        HTTP_PATCH,
        HTTP_OPTIONS,
        HTTP_OTHER,
} HttpMethod;

#define HTTP_M(m) (1u << (m))

/* Non-zero, so that "0 or HTTP_DONE after answering" helpers can be chained with ||. */
enum { HTTP_DONE = 1, HTTP_SUSPENDED = 2 };

typedef int (*HttpHandler)(HttpRequest *req);

typedef struct HttpRoute {
        const char *pattern;      /* "/v1/submissions/{id}": {x} matches one non-empty segment */
        unsigned methods;         /* HTTP_M(HTTP_GET) | ...; HEAD is served wherever GET is */
        HttpHandler handler;
        bool public_route;        /* no authentication (health, metrics) */
} HttpRoute;

/*
 * Called once per request after routing and before the body is read:
 * authenticate, rate-limit. Return HTTP_DONE after responding to refuse
 * the request, or 0 to go on.
 */
typedef int (*HttpGate)(HttpRequest *req, const HttpRoute *route);

/* Who is asking; the gate fills it in (token 0 when auth is off). */
typedef struct HttpPrincipal {
        int64_t token_id;
        bool admin;
        int64_t max_queued;       /* per-token quota; 0: none of its own */
} HttpPrincipal;

typedef struct HttpServerConfig {
        const char *host;         /* numeric address or name; resolved with getaddrinfo */
        int port;                 /* 0: any free port */
        int threads;              /* pool size, >= 1 */
        int connection_limit;
        int connection_timeout_s;
        int per_ip_connection_limit; /* open connections from one address; 0: no limit */
        int header_timeout_s;     /* a whole request header, else 408 and close; 0: no deadline */
        size_t body_limit;        /* bytes; 413 beyond */
        size_t body_inflight_limit; /* body bytes held by all requests; 503 beyond; 0: no limit */
        const HttpRoute *routes;  /* borrowed, must outlive the server */
        size_t n_routes;
        HttpGate gate;            /* may be NULL */
        void *app;                /* handed to handlers by http_request_app() */
        Waiters *waiters;         /* borrowed; needed for http_request_wait() */
        Metrics *metrics;         /* borrowed; may be NULL */
} HttpServerConfig;

/**
 * http_server_start() - bind, listen and start the thread pool
 * @ret_server: on success, a new server (http_server_stop())
 * @ret_port:   the bound port (the real one when @cfg->port is 0)
 * Return: 0, -EADDRINUSE / -EACCES / -EADDRNOTAVAIL (cannot bind), -EINVAL
 * (bad host), or -EIO (libmicrohttpd refused to start; it logged why).
 */
int http_server_start(const HttpServerConfig *cfg, HttpServer **ret_server, int *ret_port);
/* Stop accepting new connections; requests in flight go on. */
void http_server_quiesce(HttpServer *s);
/* Wait up to @timeout_s for requests in flight to finish. Return: how many are left. */
long http_server_drain(HttpServer *s, double timeout_s);
/* Connections the server holds now, closed ones not yet swept included (they still count against the per-address limit). */
unsigned http_server_connections(HttpServer *s);
/* Request body bytes held now, counted against body_inflight_limit. */
size_t http_server_body_bytes(HttpServer *s);
/* Close every connection, join the threads, free. NULL is allowed. */
void http_server_stop(HttpServer *s);

/* Request accessors; every returned string is borrowed from the request. */
HttpMethod http_request_method(HttpRequest *req);
const char *http_request_path(HttpRequest *req);
/* The @i-th {param} of the route pattern, or NULL. */
const char *http_request_param(HttpRequest *req, int i);
/* A query argument (the first if repeated), or NULL. */
const char *http_request_query(HttpRequest *req, const char *key);
/* Call @fn for each query argument in order (value may be NULL); stops at a non-zero return. */
int http_request_query_foreach(HttpRequest *req, int (*fn)(void *ctx, const char *key, const char *value),
                               void *ctx);
const char *http_request_header(HttpRequest *req, const char *name);
/* The whole body (NUL-terminated; @ret_len without the NUL), or NULL with 0 when there is none. */
const char *http_request_body(HttpRequest *req, size_t *ret_len);
void *http_request_app(HttpRequest *req);
HttpPrincipal *http_request_principal(HttpRequest *req);

/* Add a header to the response about to be sent (copied; up to 8). */
void http_response_header(HttpRequest *req, const char *name, const char *value);
/* Respond with @body (stolen) as application/json. Return: HTTP_DONE. */
int http_respond_json(HttpRequest *req, int status, json_t *body);
/* Respond with @problem (stolen; status read from it) as problem+json. Return: HTTP_DONE. */
int http_respond_problem(HttpRequest *req, json_t *problem);
/* Build and send a problem in one call. Return: HTTP_DONE. */
int http_respond_error(HttpRequest *req, ProblemKind kind, const char *pointer, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* Respond with @text (copied, @len bytes) and @content_type. Return: HTTP_DONE. */
int http_respond_text(HttpRequest *req, int status, const char *content_type, const char *text,
                      size_t len);

/**
 * http_request_wait() - park the request until submission @id is notified
 * or @timeout_s passes; the handler then returns HTTP_SUSPENDED, or, if it
 * finds the job already done after registering, calls http_request_unwait()
 * and responds at once.
 * Return: 0, or WAITERS_E_CLOSED when shutting down (respond at once).
 */
int http_request_wait(HttpRequest *req, int64_t id, double timeout_s);
void http_request_unwait(HttpRequest *req);
/* -1 on the first call; the WaiterReason when called again after a wait. */
int http_request_resumed(HttpRequest *req);
/* A per-request slot for the handler across a wait (not freed by http). */
int64_t *http_request_slot(HttpRequest *req);

/* Parse "GET" etc. */
HttpMethod http_method_parse(const char *s);
const char *http_method_name(HttpMethod m);
