/*
 * http_sweep - the sweeper thread of the HTTP front end (see http.c's
 * theory of operation, "Abuse"): four times a second it writes a 408
 * problem straight to each connection whose request header is past its
 * deadline and shuts the socket down, which libmicrohttpd sees as the peer
 * closing; and it calls malloc_trim() after a large request has ended, off
 * the request threads. The connection list's mutex is held around the
 * writes, and libmicrohttpd unlinks a connection (NOTIFY_CLOSED) under the
 * same mutex before it closes the socket, so the sweeper never writes to a
 * reused fd.
 */
#include "server/http/http_int.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/log.h"

#define SWEEP_INTERVAL_NS (250 * 1000 * 1000L)

/* Is @c->fd still the socket of @c (its peer unchanged)? */
static bool conn_same_socket(const HttpConn *c)
{
        struct sockaddr_storage now;
        socklen_t len = sizeof(now);

        return getpeername(c->fd, (struct sockaddr *)&now, &len) == 0 && len == c->peer_len &&
               memcmp(&now, &c->peer, len) == 0;
}

/* Answer 408 on every connection whose header is overdue, and shut it down. */
static void sweep_once(HttpServer *s)
{
        double now = http_now_s();
        long expired, dropped;

        pthread_mutex_lock(&s->conn_mu);
        for (HttpConn *c = s->conns; c; c = c->next) {
                if (c->expired || c->deadline <= 0 || now < c->deadline || c->fd < 0)
                        continue;
                c->expired = true;
                /* Belt and braces: libmicrohttpd closes the fd only after NOTIFY_CLOSED. */
                if (!conn_same_socket(c))
                        continue;
                (void)send(c->fd, s->resp408, s->resp408_len, MSG_NOSIGNAL | MSG_DONTWAIT);
                (void)shutdown(c->fd, SHUT_RDWR);
                s->conns_expired++;
        }
        expired = s->conns_expired;
        if (expired && http_log_budget(s, &dropped)) {
                s->conns_expired = 0;
                log_warn("http: closed %ld connection(s) whose request header took over %d s (408)%s", expired,
                         s->cfg.header_timeout_s, dropped ? "; other lines were dropped" : "");
        }
        pthread_mutex_unlock(&s->conn_mu);
        if (atomic_exchange(&s->trim_wanted, false))
                malloc_trim(0);
}

/**
 * http_sweep_main() - the sweeper thread: sweep_once() every
 * SWEEP_INTERVAL_NS until @arg (the HttpServer) is stopping.
 */
void *http_sweep_main(void *arg)
{
        HttpServer *s = arg;

        pthread_mutex_lock(&s->sweep_mu);
        while (!s->stopping) {
                struct timespec ts;

                clock_gettime(CLOCK_MONOTONIC, &ts);
                ts.tv_nsec += SWEEP_INTERVAL_NS;
                if (ts.tv_nsec >= 1000000000L) {
                        ts.tv_sec++;
                        ts.tv_nsec -= 1000000000L;
                }
                (void)pthread_cond_timedwait(&s->sweep_cv, &s->sweep_mu, &ts);
                if (s->stopping)
                        break;
                pthread_mutex_unlock(&s->sweep_mu);
                sweep_once(s);
                pthread_mutex_lock(&s->sweep_mu);
        }
        pthread_mutex_unlock(&s->sweep_mu);
        return NULL;
}

/**
 * http_sweep_make_408() - the raw 408 answer the sweeper writes, built once
 * into @s->resp408. Return: 0 or -ENOMEM.
 */
int http_sweep_make_408(HttpServer *s)
{
        char body[512], *text;
        int n, m;

        n = snprintf(body, sizeof(body),
                     "{\"type\":\"" PROBLEM_TYPE_BASE "request-timeout\",\"title\":\"Request timeout\","
                     "\"status\":408,\"detail\":\"the request header did not arrive within %d s\"}",
                     s->cfg.header_timeout_s);
        m = snprintf(NULL, 0, "HTTP/1.1 408 Request Timeout\r\nContent-Type: " PROBLEM_CONTENT_TYPE
                     "\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", n, body);
        text = malloc((size_t)m + 1);
        if (!text)
                return -ENOMEM;
        snprintf(text, (size_t)m + 1, "HTTP/1.1 408 Request Timeout\r\nContent-Type: " PROBLEM_CONTENT_TYPE
                 "\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", n, body);
        s->resp408 = text;
        s->resp408_len = (size_t)m;
        return 0;
}
