/*
 * httpclient - a blocking HTTP/1.1 client for the `kevald` command line.
 *
 * One request per connection: the request says `Connection: close`, so the
 * server may also end the body by closing. The socket is non-blocking and
 * every wait is a poll() against one absolute deadline, so a stalled server
 * cannot hold the caller past its timeout. The response is read into one
 * buffer (status line and headers at most LIMIT_CLIENT_HEADER_BYTES, the
 * body at most LIMIT_CLIENT_RESPONSE_BYTES); a chunked body is decoded in
 * place once its last chunk has arrived.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/cmd/httpclient.h"

static int64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void seterr(char *errbuf, size_t errlen, const char *fmt, const char *arg)
{
        if (errbuf && errlen)
                snprintf(errbuf, errlen, fmt, arg ? arg : "");
}

/**
 * httpclient_strerror() - a short name for an HTTPCLIENT_E_* code
 * Return: a static string.
 */
const char *httpclient_strerror(int code)
{
        switch (code) {
        case HTTPCLIENT_E_URL: return "bad URL";
        case HTTPCLIENT_E_CONNECT: return "cannot connect";
        case HTTPCLIENT_E_TIMEOUT: return "timed out";
        case HTTPCLIENT_E_PROTOCOL: return "malformed HTTP answer";
        case HTTPCLIENT_E_TOO_LARGE: return "answer too large";
        default: return code < 0 ? strerror(-code) : "unknown error";
        }
}

/**
 * httpclient_parse_url() - split http://HOST[:PORT][/PREFIX]
 * @url:     the URL text; borrowed
 * @ret_url: filled on success (port defaults to 80; [v6] hosts lose brackets)
 *
 * Return: 0, or HTTPCLIENT_E_URL (https, another scheme, empty or
 * oversized host, bad port, a query or fragment, longer than
 * LIMIT_CLIENT_URL_BYTES).
 */
int httpclient_parse_url(const char *url, HttpClientUrl *ret_url)
{
        HttpClientUrl u = { .port = "80" };
        const char *p, *host_end, *path;
        size_t hlen;

        if (!url || strlen(url) > LIMIT_CLIENT_URL_BYTES || strncasecmp(url, "http://", 7) != 0)
                return HTTPCLIENT_E_URL;
        p = url + 7;
        path = p + strcspn(p, "/?#");
        if (*path == '?' || *path == '#' || strpbrk(path, "?#"))
                return HTTPCLIENT_E_URL;
        if (*p == '[') {
                host_end = memchr(p, ']', (size_t)(path - p));
                if (!host_end)
                        return HTTPCLIENT_E_URL;
                hlen = (size_t)(host_end - p - 1);
                memcpy(u.host, p + 1, hlen < sizeof(u.host) ? hlen : 0);
                p = host_end + 1;
        } else {
                host_end = memchr(p, ':', (size_t)(path - p));
                if (!host_end)
                        host_end = path;
                hlen = (size_t)(host_end - p);
                if (hlen < sizeof(u.host))
                        memcpy(u.host, p, hlen);
                p = host_end;
        }
        if (hlen == 0 || hlen >= sizeof(u.host))
                return HTTPCLIENT_E_URL;
        u.host[hlen] = 0;
        if (*p == ':') {
                size_t plen = (size_t)(path - p - 1);
                long v = 0;

                if (plen == 0 || plen > 5)
                        return HTTPCLIENT_E_URL;
                for (size_t i = 1; i <= plen; i++) {
                        if (p[i] < '0' || p[i] > '9')
                                return HTTPCLIENT_E_URL;
                        v = v * 10 + (p[i] - '0');
                }
                if (v < 1 || v > 65535)
                        return HTTPCLIENT_E_URL;
                snprintf(u.port, sizeof(u.port), "%ld", v);
        } else if (p != path) {
                return HTTPCLIENT_E_URL;
        }
        hlen = strlen(path);
        while (hlen > 0 && path[hlen - 1] == '/')
                hlen--;
        if (hlen >= sizeof(u.prefix))
                return HTTPCLIENT_E_URL;
        memcpy(u.prefix, path, hlen);
        u.prefix[hlen] = 0;
        *ret_url = u;
        return 0;
}

/* Wait for @events on @fd until @deadline. Return 0, or HTTPCLIENT_E_TIMEOUT / -errno. */
static int wait_fd(int fd, short events, int64_t deadline)
{
        for (;;) {
                struct pollfd pfd = { .fd = fd, .events = events };
                int64_t left = deadline - now_ms();
                int r;

                if (left <= 0)
                        return HTTPCLIENT_E_TIMEOUT;
                r = poll(&pfd, 1, left > INT32_MAX ? INT32_MAX : (int)left);
                if (r > 0)
                        return 0;
                if (r == 0)
                        return HTTPCLIENT_E_TIMEOUT;
                if (errno != EINTR)
                        return -errno;
        }
}

static int connect_to(const HttpClientUrl *url, int64_t deadline, int *ret_fd, char *errbuf, size_t errlen)
{
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL, *ai;
        int r, fd = -1, rc = HTTPCLIENT_E_CONNECT;

        r = getaddrinfo(url->host, url->port, &hints, &res);
        if (r != 0) {
                seterr(errbuf, errlen, "cannot resolve '%s'", url->host);
                return HTTPCLIENT_E_CONNECT;
        }
        for (ai = res; ai; ai = ai->ai_next) {
                int soerr = 0;
                socklen_t sl = sizeof(soerr);

                fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
                if (fd < 0)
                        continue;
                r = connect(fd, ai->ai_addr, ai->ai_addrlen);
                if (r < 0 && errno == EINPROGRESS) {
                        r = wait_fd(fd, POLLOUT, deadline);
                        if (r == HTTPCLIENT_E_TIMEOUT) {
                                seterr(errbuf, errlen, "connecting to %s timed out", url->host);
                                rc = HTTPCLIENT_E_TIMEOUT;
                                close(fd);
                                fd = -1;
                                break;
                        }
                        if (r == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0)
                                break;
                        errno = soerr ? soerr : ECONNREFUSED;
                } else if (r == 0) {
                        break;
                }
                seterr(errbuf, errlen, "%s", strerror(errno));
                close(fd);
                fd = -1;
        }
        freeaddrinfo(res);
        if (fd < 0)
                return rc;
        *ret_fd = fd;
        return 0;
}

static int send_all(int fd, const char *buf, size_t len, int64_t deadline)
{
        while (len > 0) {
                ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

                if (n > 0) {
                        buf += n;
                        len -= (size_t)n;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                        int r = wait_fd(fd, POLLOUT, deadline);
                        if (r)
                                return r;
                        continue;
                }
                return HTTPCLIENT_E_CONNECT;
        }
        return 0;
}

/* Case-insensitive search for header @name in the header block [h, end); value trimmed into a new string. */
static char *header_value(const char *h, const char *end, const char *name)
{
        size_t nlen = strlen(name);

        while (h < end) {
                const char *eol = memchr(h, '\n', (size_t)(end - h));
                const char *stop = eol ? eol : end;

                if ((size_t)(stop - h) > nlen && !strncasecmp(h, name, nlen) && h[nlen] == ':') {
                        const char *v = h + nlen + 1, *ve = stop;

                        while (v < ve && (*v == ' ' || *v == '\t'))
                                v++;
                        while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
                                ve--;
                        return strndup(v, (size_t)(ve - v));
                }
                h = stop + 1;
        }
        return NULL;
}

/*
 * Decode a chunked body in [p, p + len) into @out (which may alias @p: the
 * output never overtakes the input), or with @out NULL only check that it is
 * complete (a partial decode in place would spoil the input). Return 1 when the last chunk was seen
 * (*ret_len = decoded size), 0 when more input is needed, -1 on a bad framing.
 */
static int dechunk(const char *p, size_t len, char *out, size_t *ret_len)
{
        size_t i = 0, o = 0;

        for (;;) {
                size_t size = 0, digits = 0;
                const char *eol;

                while (i < len && ((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f') ||
                                   (p[i] >= 'A' && p[i] <= 'F'))) {
                        int d = p[i] <= '9' ? p[i] - '0' : (p[i] | 0x20) - 'a' + 10;

                        if (size > (SIZE_MAX >> 4) || ++digits > 16)
                                return -1;
                        size = size * 16 + (size_t)d;
                        i++;
                }
                eol = memchr(p + i, '\n', len - i);
                if (!eol)
                        return 0;
                if (digits == 0)
                        return -1;
                i = (size_t)(eol - p) + 1;     /* chunk extensions ignored */
                if (size == 0) {
                        /* Trailers end with an empty line. */
                        for (;;) {
                                eol = memchr(p + i, '\n', len - i);
                                if (!eol)
                                        return 0;
                                if (eol == p + i || (eol == p + i + 1 && p[i] == '\r')) {
                                        *ret_len = o;
                                        return 1;
                                }
                                i = (size_t)(eol - p) + 1;
                        }
                }
                if (len - i < size + 1)
                        return 0;
                if (out)
                        memmove(out + o, p + i, size);
                o += size;
                i += size;
                if (p[i] == '\r') {
                        if (len - i < 2)
                                return 0;
                        i++;
                }
                if (p[i] != '\n')
                        return -1;
                i++;
        }
}

/* The request line and headers of one exchange, as one new string in
 * *@ret_req (*@ret_len bytes). Return: 0 or -ENOMEM. */
static int build_request(const HttpClientUrl *url, const char *method, const char *target,
                         const char *const *headers, const char *body, size_t body_len, char **ret_req,
                         size_t *ret_len)
{
        char *req = NULL;
        size_t reqlen = 0;
        FILE *f;

        f = open_memstream(&req, &reqlen);
        if (!f)
                return -ENOMEM;
        fprintf(f, "%s %s%s HTTP/1.1\r\nHost: %s%s%s:%s\r\nConnection: close\r\nUser-Agent: kevald-cli/0.1.0\r\n",
                method, url->prefix, target, strchr(url->host, ':') ? "[" : "", url->host,
                strchr(url->host, ':') ? "]" : "", url->port);
        for (size_t i = 0; headers && headers[i]; i++)
                fprintf(f, "%s\r\n", headers[i]);
        if (body)
                fprintf(f, "Content-Length: %zu\r\n", body_len);
        fputs("\r\n", f);
        if (fclose(f) != 0) {
                free(req);
                return -ENOMEM;
        }
        *ret_req = req;
        *ret_len = reqlen;
        return 0;
}

/* Double the read buffer *@buf (*@cap bytes, @len used), up to the client's
 * limits on a head and a body. Return: 0, HTTPCLIENT_E_TOO_LARGE, -ENOMEM. */
static int grow_buffer(char **buf, size_t *cap, size_t len, char *errbuf, size_t errlen)
{
        size_t ncap = *cap ? *cap * 2 : 32768;
        char *nb;

        if (ncap > LIMIT_CLIENT_HEADER_BYTES + (size_t)LIMIT_CLIENT_RESPONSE_BYTES + 32768)
                ncap = LIMIT_CLIENT_HEADER_BYTES + (size_t)LIMIT_CLIENT_RESPONSE_BYTES + 32768;
        if (ncap <= len + 1) {
                seterr(errbuf, errlen, "the answer is larger than the client's limit%s", NULL);
                return HTTPCLIENT_E_TOO_LARGE;
        }
        nb = realloc(*buf, ncap);
        if (!nb)
                return -ENOMEM;
        *buf = nb;
        *cap = ncap;
        return 0;
}

/*
 * The answer's head in @buf, up to @hend (its blank line): the status, the
 * Content-Type and Retry-After into @resp, Transfer-Encoding and
 * Content-Length (new strings, the caller frees them) into *@te and *@cl,
 * and how the body ends: *@chunked, or *@have_len with *@want bytes (none
 * for HEAD, 204 and 304).
 * Return: 0, HTTPCLIENT_E_PROTOCOL, HTTPCLIENT_E_TOO_LARGE.
 */
static int parse_head(const char *buf, char *hend, bool is_head, HttpClientResponse *resp, char **te, char **cl,
                      bool *chunked, bool *have_len, size_t *want, char *errbuf, size_t errlen)
{
        if (sscanf(buf, "HTTP/1.%*1[01] %3d", &resp->status) != 1 || resp->status < 100 ||
            resp->status > 599) {
                seterr(errbuf, errlen, "not an HTTP/1.x status line%s", NULL);
                return HTTPCLIENT_E_PROTOCOL;
        }
        *te = header_value(buf, hend + 2, "Transfer-Encoding");
        *cl = header_value(buf, hend + 2, "Content-Length");
        resp->content_type = header_value(buf, hend + 2, "Content-Type");
        resp->retry_after = header_value(buf, hend + 2, "Retry-After");
        *chunked = *te && strcasestr(*te, "chunked");
        if (is_head || resp->status == 204 || resp->status == 304) {
                *have_len = true;
                *want = 0;
        } else if (!*chunked && *cl) {
                char *end;
                unsigned long long v;

                errno = 0;
                v = strtoull(*cl, &end, 10);
                if (errno || end == *cl || *end) {
                        seterr(errbuf, errlen, "bad Content-Length '%s'", *cl);
                        return HTTPCLIENT_E_PROTOCOL;
                }
                if (v > LIMIT_CLIENT_RESPONSE_BYTES) {
                        seterr(errbuf, errlen, "the answer (%s bytes) is larger than the client's limit",
                               *cl);
                        return HTTPCLIENT_E_TOO_LARGE;
                }
                *have_len = true;
                *want = (size_t)v;
        }
        return 0;
}

/**
 * httpclient_request() - one HTTP/1.1 exchange
 * @url:       the server (httpclient_parse_url()); borrowed
 * @method:    "GET", "POST", "DELETE", ...
 * @target:    path and query, starting with '/'; the URL's prefix goes first
 * @headers:   NULL-terminated "Name: value" lines to add, or NULL
 * @body:      request body (@body_len bytes), or NULL for none
 * @timeout_ms: the deadline for the whole exchange
 * @ret_resp:  on success, the response; free with httpclient_response_clear()
 * @errbuf:    on failure, a message (may be NULL)
 *
 * Any HTTP status is a success here; the caller reads @ret_resp->status.
 *
 * Return: 0; HTTPCLIENT_E_URL (target too long), HTTPCLIENT_E_CONNECT,
 * HTTPCLIENT_E_TIMEOUT, HTTPCLIENT_E_PROTOCOL, HTTPCLIENT_E_TOO_LARGE; or
 * -ENOMEM.
 */
int httpclient_request(const HttpClientUrl *url, const char *method, const char *target,
                       const char *const *headers, const char *body, size_t body_len, int timeout_ms,
                       HttpClientResponse *ret_resp, char *errbuf, size_t errlen)
{
        int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 1);
        char *req = NULL, *buf = NULL, *hend = NULL, *te = NULL, *cl = NULL;
        size_t reqlen = 0, cap = 0, len = 0, hlen = 0, want = 0, blen = 0;
        bool chunked = false, have_len = false, eof = false, got_headers = false, chunk_done = false, is_head;
        HttpClientResponse resp = { 0 };
        int fd = -1, rc;

        if (errbuf && errlen)
                errbuf[0] = 0;
        if (strlen(target) > LIMIT_CLIENT_URL_BYTES) {
                seterr(errbuf, errlen, "request target too long%s", NULL);
                return HTTPCLIENT_E_URL;
        }
        is_head = !strcmp(method, "HEAD");
        if (build_request(url, method, target, headers, body, body_len, &req, &reqlen) < 0)
                return -ENOMEM;
        rc = connect_to(url, deadline, &fd, errbuf, errlen);
        if (rc)
                goto out;
        rc = send_all(fd, req, reqlen, deadline);
        if (!rc && body && body_len)
                rc = send_all(fd, body, body_len, deadline);
        if (rc) {
                if (rc == HTTPCLIENT_E_TIMEOUT)
                        seterr(errbuf, errlen, "sending the request timed out%s", NULL);
                else if (errbuf && !errbuf[0])
                        seterr(errbuf, errlen, "the connection failed while sending: %s", strerror(errno));
                goto out;
        }
        for (;;) {
                ssize_t n;

                if (got_headers) {
                        if (have_len && len - hlen >= want)
                                break;
                        if (chunked) {
                                int d = dechunk(buf + hlen, len - hlen, NULL, &blen);
                                if (d < 0) {
                                        seterr(errbuf, errlen, "bad chunked framing%s", NULL);
                                        rc = HTTPCLIENT_E_PROTOCOL;
                                        goto out;
                                }
                                if (d > 0) {
                                        dechunk(buf + hlen, len - hlen, buf + hlen, &blen);
                                        chunk_done = true;
                                        len = hlen + blen;
                                        want = blen;
                                        break;
                                }
                        }
                }
                if (eof)
                        break;
                if (cap - len < 16385 && (rc = grow_buffer(&buf, &cap, len, errbuf, errlen)) != 0)
                        goto out;
                n = recv(fd, buf + len, cap - len - 1, 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                        rc = wait_fd(fd, POLLIN, deadline);
                        if (rc) {
                                if (rc == HTTPCLIENT_E_TIMEOUT)
                                        seterr(errbuf, errlen, "no complete answer before the deadline%s", NULL);
                                goto out;
                        }
                        continue;
                }
                if (n < 0) {
                        seterr(errbuf, errlen, "the connection failed while reading: %s", strerror(errno));
                        rc = HTTPCLIENT_E_CONNECT;
                        goto out;
                }
                if (n == 0)
                        eof = true;
                len += (size_t)n;
                buf[len] = 0;
                if (!got_headers) {
                        hend = strstr(buf, "\r\n\r\n");
                        if (!hend && len > LIMIT_CLIENT_HEADER_BYTES) {
                                seterr(errbuf, errlen, "the answer's headers are too large%s", NULL);
                                rc = HTTPCLIENT_E_TOO_LARGE;
                                goto out;
                        }
                        if (!hend) {
                                if (eof) {
                                        seterr(errbuf, errlen, "the connection closed before a complete answer%s",
                                               NULL);
                                        rc = len ? HTTPCLIENT_E_PROTOCOL : HTTPCLIENT_E_CONNECT;
                                        goto out;
                                }
                                continue;
                        }
                        got_headers = true;
                        hlen = (size_t)(hend - buf) + 4;
                        rc = parse_head(buf, hend, is_head, &resp, &te, &cl, &chunked, &have_len, &want, errbuf,
                                        errlen);
                        if (rc)
                                goto out;
                }
                if (got_headers && len - hlen > LIMIT_CLIENT_RESPONSE_BYTES + (chunked ? 32768u : 0u)) {
                        seterr(errbuf, errlen, "the answer is larger than the client's limit%s", NULL);
                        rc = HTTPCLIENT_E_TOO_LARGE;
                        goto out;
                }
        }
        if (!got_headers) {
                rc = HTTPCLIENT_E_PROTOCOL;
                goto out;
        }
        if (have_len && len - hlen < want) {
                seterr(errbuf, errlen, "the connection closed before the whole body arrived%s", NULL);
                rc = HTTPCLIENT_E_PROTOCOL;
                goto out;
        }
        if (chunked && !chunk_done) {
                seterr(errbuf, errlen, "the connection closed inside a chunked body%s", NULL);
                rc = HTTPCLIENT_E_PROTOCOL;
                goto out;
        }
        if (!have_len && !chunked)
                want = len - hlen;
        resp.body = malloc(want + 1);
        if (!resp.body) {
                rc = -ENOMEM;
                goto out;
        }
        memcpy(resp.body, buf + hlen, want);
        resp.body[want] = 0;
        resp.body_len = want;
        *ret_resp = resp;
        memset(&resp, 0, sizeof(resp));
        rc = 0;
out:
        if (rc == HTTPCLIENT_E_TIMEOUT && errbuf && !errbuf[0])
                seterr(errbuf, errlen, "timed out%s", NULL);
        httpclient_response_clear(&resp);
        if (fd >= 0)
                close(fd);
        free(te);
        free(cl);
        free(buf);
        free(req);
        return rc;
}

/**
 * httpclient_response_clear() - free what a response owns and zero it
 * @resp: may be NULL
 */
void httpclient_response_clear(HttpClientResponse *resp)
{
        if (!resp)
                return;
        free(resp->content_type);
        free(resp->retry_after);
        free(resp->body);
        memset(resp, 0, sizeof(*resp));
}
