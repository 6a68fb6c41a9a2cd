/*
 * problem - RFC 9457 problem details (application/problem+json): every
 * error kevald answers is one of these, with a stable `type` URI per kind,
 * a short `title`, the HTTP `status`, a `detail` a client (or a model) can
 * act on, and, for errors caused by one field, `pointer` (RFC 6901) to it:
 * "/submissions/7/plan/0/grid", "/query/limit", "/headers/Idempotency-Key".
 */
#pragma once

#include <jansson.h>
#include <stdarg.h>

#define PROBLEM_CONTENT_TYPE "application/problem+json"
#define PROBLEM_TYPE_BASE "https://kevald.dev/problems/"

/* Kinds; the type URI is PROBLEM_TYPE_BASE + the kind's slug. */
typedef enum {
        PROBLEM_MALFORMED_JSON = 0,  /* 400 */
        PROBLEM_BAD_REQUEST,         /* 400 */
        PROBLEM_UNAUTHORIZED,        /* 401 */
        PROBLEM_FORBIDDEN,           /* 403 */
        PROBLEM_NOT_FOUND,           /* 404 */
        PROBLEM_METHOD_NOT_ALLOWED,  /* 405 */
        PROBLEM_CONFLICT,            /* 409 */
        PROBLEM_BODY_TOO_LARGE,      /* 413 */
        PROBLEM_UNSUPPORTED_MEDIA,   /* 415 */
        PROBLEM_INVALID,             /* 422: a field breaks the format or a limit */
        PROBLEM_IDEMPOTENCY_MISMATCH,/* 422: key reused with another body */
        PROBLEM_RATE_LIMITED,        /* 429: request rate */
        PROBLEM_QUOTA,               /* 429: too many queued submissions for this token */
        PROBLEM_INTERNAL,            /* 500 */
        PROBLEM_QUEUE_FULL,          /* 503 */
        PROBLEM_UNAVAILABLE,         /* 503: not ready, shutting down */
        PROBLEM__COUNT,
} ProblemKind;

/* The status that goes with @kind. */
int problem_status(ProblemKind kind);
/* The slug ("invalid-field") and title ("Invalid field") of @kind; static. */
const char *problem_slug(ProblemKind kind);
const char *problem_title(ProblemKind kind);

/**
 * problem_new() - build a problem object
 * @pointer: JSON pointer to the offending field, or NULL for none
 * @fmt:     printf format of the detail
 * Return: a new reference, or NULL on allocation failure.
 */
json_t *problem_new(ProblemKind kind, const char *pointer, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
json_t *problem_newv(ProblemKind kind, const char *pointer, const char *fmt, va_list ap);
