/*
 * problem - the table of problem kinds (slug, title, status) and the one
 * builder that turns a kind, a pointer and a detail into RFC 9457 JSON.
 */
#include "server/http/problem.h"

#include <stdio.h>
#include <string.h>

static const struct {
        const char *slug;
        const char *title;
        int status;
} kinds[PROBLEM__COUNT] = {
        [PROBLEM_MALFORMED_JSON] = { "malformed-json", "Malformed JSON", 400 },
        [PROBLEM_BAD_REQUEST] = { "bad-request", "Bad request", 400 },
        [PROBLEM_UNAUTHORIZED] = { "unauthorized", "Missing or invalid bearer token", 401 },
        [PROBLEM_FORBIDDEN] = { "forbidden", "Forbidden", 403 },
        [PROBLEM_NOT_FOUND] = { "not-found", "Not found", 404 },
        [PROBLEM_METHOD_NOT_ALLOWED] = { "method-not-allowed", "Method not allowed", 405 },
        [PROBLEM_CONFLICT] = { "conflict", "Conflict with the resource's state", 409 },
        [PROBLEM_BODY_TOO_LARGE] = { "body-too-large", "Request body too large", 413 },
        [PROBLEM_UNSUPPORTED_MEDIA] = { "unsupported-media-type", "Unsupported media type", 415 },
        [PROBLEM_INVALID] = { "invalid-field", "Invalid field", 422 },
        [PROBLEM_IDEMPOTENCY_MISMATCH] = { "idempotency-key-reused",
                                           "Idempotency-Key reused with a different body", 422 },
        [PROBLEM_RATE_LIMITED] = { "rate-limited", "Too many requests", 429 },
        [PROBLEM_QUOTA] = { "quota-exceeded", "Too many queued submissions for this token", 429 },
        [PROBLEM_INTERNAL] = { "internal", "Internal server error", 500 },
        [PROBLEM_QUEUE_FULL] = { "queue-full", "Queue full", 503 },
        [PROBLEM_UNAVAILABLE] = { "unavailable", "Service unavailable", 503 },
};

/**
 * problem_status() - the HTTP status of @kind (500 for an unknown kind).
 */
int problem_status(ProblemKind kind)
{
        return (unsigned)kind < PROBLEM__COUNT ? kinds[kind].status : 500;
}

/**
 * problem_slug() - the last segment of @kind's type URI; static.
 */
const char *problem_slug(ProblemKind kind)
{
        return (unsigned)kind < PROBLEM__COUNT ? kinds[kind].slug : "internal";
}

/**
 * problem_title() - the short, fixed title of @kind; static.
 */
const char *problem_title(ProblemKind kind)
{
        return (unsigned)kind < PROBLEM__COUNT ? kinds[kind].title : "Internal server error";
}

/**
 * problem_newv() - see problem_new().
 */
json_t *problem_newv(ProblemKind kind, const char *pointer, const char *fmt, va_list ap)
{
        char type[128];
        char detail[2048];
        json_t *p;

        if ((unsigned)kind >= PROBLEM__COUNT)
                kind = PROBLEM_INTERNAL;
        snprintf(type, sizeof(type), PROBLEM_TYPE_BASE "%s", kinds[kind].slug);
        vsnprintf(detail, sizeof(detail), fmt, ap);
        p = json_object();
        if (!p)
                return NULL;
        json_object_set_new(p, "type", json_string(type));
        json_object_set_new(p, "title", json_string(kinds[kind].title));
        json_object_set_new(p, "status", json_integer(kinds[kind].status));
        /* A detail may quote client bytes; json_string() refuses bad UTF-8. */
        if (json_object_set_new(p, "detail", json_string(detail)) < 0)
                json_object_set_new(p, "detail", json_string(kinds[kind].title));
        if (pointer && json_object_set_new(p, "pointer", json_string(pointer)) < 0)
                json_object_set_new(p, "pointer", json_string(""));
        return p;
}

/**
 * problem_new() - build a problem object
 * @kind:    which problem; sets type, title and status
 * @pointer: JSON pointer to the offending field, or NULL
 * @fmt:     printf format of the detail
 * Return: a new reference, or NULL on allocation failure.
 */
json_t *problem_new(ProblemKind kind, const char *pointer, const char *fmt, ...)
{
        va_list ap;
        json_t *p;

        va_start(ap, fmt);
        p = problem_newv(kind, pointer, fmt, ap);
        va_end(ap);
        return p;
}
