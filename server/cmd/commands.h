/*
 * commands - the `kevald` subcommands; server/cmd/main.c dispatches to them.
 * Each returns the process exit status.
 */
#pragma once

int cmd_serve(int argc, char **argv);   /* server/cmd/serve.c */
/* `kevald serve` exit status when the PostgreSQL of --db is unreachable at start-up. */
#define SERVE_EXIT_DB_UNREACHABLE 3
int cmd_token(int argc, char **argv);   /* server/cmd/token.c */
int cmd_store(int argc, char **argv);   /* server/cmd/storecopy.c */
int cmd_eval(int argc, char **argv);    /* server/cmd/eval.c */
int cmd_task(int argc, char **argv);    /* server/cmd/taskcmd.c */
int cmd_submit(int argc, char **argv);  /* server/cmd/cli.c: client commands */
int cmd_status(int argc, char **argv);
int cmd_wait(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_tasks(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_kernelbench(int argc, char **argv); /* server/cmd/kernelbench.c */

/*
 * Exit status of the commands that end in a verdict (submit, wait, status,
 * cancel, eval), one table for all (docs/clients.md): verdict_exit_code()
 * of the verdict (0 correct or compiled, 1 incorrect, 2 compile_error,
 * 3 runtime_error, 4 timeout, 5 rejected, 6 internal_error or cancelled),
 * else one of these (sysexits.h).
 */
#define CLI_EXIT_USAGE 64       /* bad arguments or input files */
#define CLI_EXIT_UNAVAILABLE 69 /* no server, no GPU, workers that do not start */
#define CLI_EXIT_SOFTWARE 70    /* the server or the pipeline failed */
#define CLI_EXIT_TEMPFAIL 75    /* not done yet */
