/*
 * http_int - what the HTTP front end's files share (server/http/http*.c): the
 * server and its connection list. Not for the rest of the server, which
 * sees http.h only; nothing here needs <microhttpd.h> (http.c is the only
 * file that includes it).
 *
 *   http.c        the libmicrohttpd boundary: daemon, requests, routing,
 *                 responses, long-polls, the connection list.
 *   http_sweep.c  the sweeper thread: the 408 for connections whose
 *                 request header is overdue, malloc_trim() after large
 *                 bodies.
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <time.h>

#include "server/http/http.h"

struct MHD_Daemon;

/* One open connection (libmicrohttpd's socket context). */
typedef struct HttpConn {
        struct HttpConn *prev, *next;
        int fd;
        struct sockaddr_storage peer;    /* the client, to know the fd still is this connection */
        socklen_t peer_len;
        double deadline;                 /* the request header is due by then; 0: none (a request is on) */
        bool expired;                    /* the sweeper answered 408 and shut it down */
} HttpConn;

struct HttpServer {
        HttpServerConfig cfg;
        struct MHD_Daemon *daemon;
        int listen_fd;
        atomic_long inflight;
        atomic_size_t body_bytes;        /* reserved by requests' bodies */
        atomic_bool trim_wanted;
        pthread_mutex_t conn_mu;         /* conns and each HttpConn's deadline */
        HttpConn *conns;
        long conns_expired;              /* since the last log line about them */
        pthread_t sweeper;
        bool sweeper_started;
        pthread_mutex_t sweep_mu;
        pthread_cond_t sweep_cv;
        bool stopping;
        char *resp408;                   /* the whole raw 408 answer */
        size_t resp408_len;
        pthread_mutex_t log_mu;          /* the log budget */
        double log_window;
        int log_lines;
        long log_dropped;
};

static inline double http_now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- http.c ---- */

bool http_log_budget(HttpServer *s, long *ret_dropped);

/* ---- http_sweep.c ---- */

void *http_sweep_main(void *arg);
int http_sweep_make_408(HttpServer *s);
