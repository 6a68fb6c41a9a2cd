/*
 * httpclient - a small blocking HTTP/1.1 client over TCP for the `kevald`
 * command line: one request per connection (Connection: close), a response
 * framed by Content-Length, chunked transfer coding, or the end of the
 * connection. No TLS, no redirects, no proxies. One deadline covers the
 * whole exchange (resolve, connect, send, receive).
 */
#pragma once

#include <stddef.h>

#include "common/limits.h"

enum {
        HTTPCLIENT_E_URL = 1,      /* the URL is not http://HOST[:PORT][/PATH] */
        HTTPCLIENT_E_CONNECT,      /* name not resolved, connection refused or reset */
        HTTPCLIENT_E_TIMEOUT,      /* the deadline passed */
        HTTPCLIENT_E_PROTOCOL,     /* the answer is not HTTP/1.x as we read it */
        HTTPCLIENT_E_TOO_LARGE,    /* headers or body beyond LIMIT_CLIENT_*_BYTES */
};

typedef struct HttpClientUrl {
        char host[256];
        char port[8];
        char prefix[512];           /* path prefix without a trailing '/', "" for none */
} HttpClientUrl;

typedef struct HttpClientResponse {
        int status;
        char *content_type;         /* NULL when absent */
        char *retry_after;          /* NULL when absent */
        char *body;                 /* NUL-terminated; never NULL after success */
        size_t body_len;
} HttpClientResponse;

int httpclient_parse_url(const char *url, HttpClientUrl *ret_url);
int httpclient_request(const HttpClientUrl *url, const char *method, const char *target,
                       const char *const *headers, const char *body, size_t body_len, int timeout_ms,
                       HttpClientResponse *ret_resp, char *errbuf, size_t errlen);
void httpclient_response_clear(HttpClientResponse *resp);
const char *httpclient_strerror(int code);
