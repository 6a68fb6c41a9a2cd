/*
 * cli - what the client subcommands share (server/cmd/cli.c: submit, status,
 * wait, cancel, tasks, history; server/cmd/kernelbench.c): the server and
 * token of a command, one API call with its retries, the long-poll of a
 * submission. Exit statuses are those of commands.h.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "server/cmd/httpclient.h"

typedef struct Cli {
        const char *name;               /* the subcommand, for messages */
        const char *server;
        HttpClientUrl url;
        char *auth;                     /* "Authorization: Bearer ..." or NULL */
        bool json;
        int timeout_ms;                 /* one ordinary request (a long poll adds its wait) */
} Cli;

/* The --server and --token lines of every client command's usage. */
extern const char cli_common_usage_text[];

/* Resolve the server URL and token (flags, then $KEVALD_URL/$KEVALD_TOKEN, then defaults).
 * Return: 0 or CLI_EXIT_USAGE/CLI_EXIT_SOFTWARE (message printed). */
int cli_setup(Cli *c, const char *server, const char *token);
void cli_free(Cli *c);
/* Print "kevald NAME: MSG (kevald NAME --help)" (@msg a format with one %s, @arg); CLI_EXIT_USAGE. */
int cli_usage_error(const Cli *c, const char *msg, const char *arg);
/*
 * cli_call() - one API call, retried on 429 and 503 (Retry-After honoured)
 * @body: serialized when not NULL; borrowed. @idem: add an Idempotency-Key.
 * @also_ok: a non-2xx status to return rather than print (0: none).
 * On 0, *@ret_status and *@ret_json (new reference, NULL for a non-JSON body; and *@ret_text,
 * a new string, when asked for) are set.
 * Return: 0, CLI_EXIT_UNAVAILABLE or CLI_EXIT_SOFTWARE (message printed).
 */
int cli_call(const Cli *c, const char *method, const char *target, json_t *body, bool idem, int timeout_ms,
             int also_ok, int *ret_status, json_t **ret_json, char **ret_text);
/* Long-poll submission @id until done or @timeout_s (< 0: no limit); *@ret_sub the last answer
 * (new reference). Return: 0 or the exit status of a failed call. */
int cli_wait_done(const Cli *c, long long id, double timeout_s, json_t **ret_sub);
