/*
 * waiters - long-poll waiters: HTTP connections suspended until a
 * submission is done or their deadline passes. The dispatcher calls
 * waiters_notify() when a job reaches done; the HTTP layer registers and
 * resumes connections (libmicrohttpd suspend/resume). Owned by the HTTP work.
 */
#pragma once

#include <stdint.h>

typedef struct Waiters Waiters;

/* Thread-safe: wake every waiter for submission @id. */
void waiters_notify(Waiters *w, int64_t id);
