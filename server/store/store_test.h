/*
 * store_test - store operations for tests and benches only. The server
 * never calls these: store.h is the contract it uses, and this header adds
 * the few hooks that let server/store/test-store.c look at what the server's
 * operations left behind (the schema version, a view's rows, the exact time
 * format) or undo what they did (a group that is never committed). The files that
 * define them include it too; nothing else of the server does.
 */
#pragma once

#include <jansson.h>

#include "server/store/store.h"

/* The number of the last migration applied (SQLite: PRAGMA user_version; PostgreSQL: kevald_schema). */
int store_schema_version(Store *store, int *ret_version);

/*
 * Rows of a view (name "v_" then [a-z0-9_], at most 64 bytes; docs/store.md)
 * as a new array of objects, at most @limit (1..LIMIT_LIST_PAGE_MAX) of
 * them: 0, STORE_E_NOT_FOUND for an unknown view, -EINVAL for a bad name or
 * limit, or a negative errno. The server reads views through
 * store_dashboard_rows()'s named queries instead.
 */
int store_query_view(Store *store, const char *view, int limit, json_t **ret_rows);

/* Drop everything the open group inserted (no-op without one): the server only commits groups. */
void store_rollback_group(Store *store);

/* RFC 3339 UTC truncated to milliseconds, "2026-11-21T14:02:30.123Z", from unix seconds
 * (how the store's rows show their times). */
void store_format_time(double t, char ret_buf[32]);
