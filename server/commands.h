/*
 * commands - the `kevald` subcommands; server/main.c dispatches to them.
 * Each returns the process exit status.
 */
#pragma once

int cmd_serve(int argc, char **argv);   /* server/serve.c */
int cmd_token(int argc, char **argv);   /* server/token.c */
int cmd_eval(int argc, char **argv);    /* server/eval.c */
int cmd_task(int argc, char **argv);    /* server/taskcmd.c */
