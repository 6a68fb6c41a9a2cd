/*
 * commands - the `kevald` subcommands; server/main.c dispatches to them.
 * Each returns the process exit status.
 */
#pragma once

int cmd_serve(int argc, char **argv);   /* server/serve.c */
/* `kevald serve` exit status when the PostgreSQL of --db is unreachable at start-up. */
#define SERVE_EXIT_DB_UNREACHABLE 3
int cmd_token(int argc, char **argv);   /* server/token.c */
int cmd_store(int argc, char **argv);   /* server/storecopy.c */
int cmd_eval(int argc, char **argv);    /* server/eval.c */
int cmd_task(int argc, char **argv);    /* server/taskcmd.c */
int cmd_submit(int argc, char **argv);  /* server/cli.c: client commands */
int cmd_status(int argc, char **argv);
int cmd_wait(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_tasks(int argc, char **argv);
int cmd_history(int argc, char **argv);
