/*
 * main - the `kevald` command: one table of subcommands, each a function
 * declared in server/cmd/commands.h that gets argv with argv[0] = its name and
 * returns the exit status.
 */
#include <stdio.h>
#include <string.h>

#include "server/cmd/commands.h"

static const struct {
        const char *name;
        int (*fn)(int argc, char **argv);
        const char *help;
} commands[] = {
        { "serve", cmd_serve, "run the service (HTTP API, dispatcher, workers)" },
        { "token", cmd_token, "create, revoke and list API tokens" },
        { "store", cmd_store, "copy a SQLite store into PostgreSQL (a fleet's store)" },
        { "eval", cmd_eval, "evaluate one kernel locally, without the HTTP service" },
        { "task", cmd_task, "check, list, show and prompt tasks of a task library" },
        { "submit", cmd_submit, "submit a kernel to a server and print the result" },
        { "status", cmd_status, "show a submission" },
        { "wait", cmd_wait, "wait for a submission to finish" },
        { "cancel", cmd_cancel, "cancel a queued submission" },
        { "tasks", cmd_tasks, "list, show and prompt the server's tasks" },
        { "history", cmd_history, "list past submissions" },
        { "kernelbench", cmd_kernelbench, "score a folder of KernelBench generations (fast_p table)" },
};

static void usage(FILE *f)
{
        fprintf(f, "usage: kevald COMMAND [ARGS...]   (kevald COMMAND --help for its options)\n\ncommands:\n");
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].help);
}

/**
 * main() - dispatch argv[1] to its subcommand. Return: its exit status,
 * 2 for an unknown command.
 */
int main(int argc, char **argv)
{
        if (argc < 2) {
                usage(stderr);
                return 2;
        }
        if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
                usage(stdout);
                return 0;
        }
        if (!strcmp(argv[1], "--version")) {
                printf("kevald 0.1.0\n");
                return 0;
        }
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (!strcmp(argv[1], commands[i].name))
                        return commands[i].fn(argc - 1, argv + 1);
        fprintf(stderr, "kevald: unknown command '%s'\n", argv[1]);
        usage(stderr);
        return 2;
}
