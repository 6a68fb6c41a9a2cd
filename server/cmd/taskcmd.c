/*
 * taskcmd - `kevald task`: check, list, show and prompt tasks of the task
 * library from the command line. `check` is what task authors run: it
 * parses every task with the same validator the server uses (every field,
 * every limit, every expression evaluated for every shape set, sources
 * present) and prints one line per task; the exit status is 1 on any
 * failure. `prompt --language triton` renders the Triton variant of the
 * prompt (what GET /v1/tasks/{name}/prompt?language=triton answers).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/spec.h"
#include "common/kbtasks.h"
#include "common/tasklib.h"
#include "server/cmd/commands.h"
#include "server/cmd/paths.h"

static void usage(FILE *f)
{
        fprintf(f,
                "usage: kevald task check [--tasks DIR] [FILE|DIR...]\n"
                "       kevald task list [--tasks DIR] [--level N] [--category C] [--json]\n"
                "       kevald task show [--tasks DIR] NAME\n"
                "       kevald task prompt [--tasks DIR] [--language cuda|triton] NAME\n"
                "\n"
                "The task library defaults to $KEVALD_TASKS, else the tasks folder of the\n"
                "source tree or installation that kevald runs from. --language triton prompts for\n"
                "a Triton kernel (submitted with the Python client's kevald.triton); the default is cuda.\n");
}

static bool is_dir(const char *path)
{
        struct stat st;
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Lint beyond the format: every extern "C" kernel a plan names should appear in its source. */
static int lint_kernels(const Task *task, const char *section)
{
        json_t *doc = spec_task_json(task), *sec = json_object_get(doc, section), *step;
        const char *src = json_string_value(json_object_get(sec, "source"));
        size_t i;
        int warnings = 0;

        json_array_foreach(json_object_get(sec, "plan"), i, step) {
                const char *k = json_string_value(json_object_get(step, "kernel"));
                if (k && src && !strstr(src, k) && !strchr(k, '<')) {
                        printf("WARN %s: /%s/plan/%zu/kernel: '%s' does not appear in the %s source\n",
                               spec_task_name(task), section, i, k, section);
                        warnings++;
                }
        }
        return warnings;
}

static void print_ok(const Task *task, const char *file)
{
        json_t *doc = spec_task_json(task);

        printf("OK   %s (%s: %zu shape set%s, %zu buffer%s)\n", spec_task_name(task), file,
               json_array_size(json_object_get(doc, "shapes")),
               json_array_size(json_object_get(doc, "shapes")) == 1 ? "" : "s",
               json_array_size(json_object_get(doc, "buffers")),
               json_array_size(json_object_get(doc, "buffers")) == 1 ? "" : "s");
        lint_kernels(task, "reference");
        if (json_object_get(doc, "example"))
                lint_kernels(task, "example");
}

static void print_fail(const char *file, const char *pointer, const char *message)
{
        printf("FAIL %s: %s: %s\n", file, pointer && pointer[0] ? pointer : "(document)", message);
}

/*
 * The KernelBench index of library @dir (common/kbtasks.h), if it has one:
 * each entry's rules, and its c_task against the library @lib (a C task of
 * that name exists; an entry without c_task is not named as a C task).
 */
static void check_kbtasks(const char *dir, const TaskLib *lib, size_t *ok, size_t *failed)
{
        KbIndex *kb = NULL;
        json_t *errors = NULL, *e;
        char file[4096], ptr[64], msg[600];
        size_t i;
        int r = kbtasks_load(dir, &kb, &errors);

        snprintf(file, sizeof(file), "%s/%s", dir, KBTASKS_INDEX_PATH);
        if (r < 0) {
                print_fail(file, "", strerror(-r));
                (*failed)++;
                return;
        }
        for (i = 0; i < kbtasks_count(kb); i++) {
                const KbTask *k = kbtasks_at(kb, i);
                bool has_c = tasklib_get(lib, k->name) != NULL;
                snprintf(ptr, sizeof(ptr), "/tasks/%zu/c_task", i);
                if (k->c_task && !has_c) {
                        snprintf(msg, sizeof(msg), "c_task '%s' is not a task of the library", k->c_task);
                        print_fail(file, ptr, msg);
                        (*failed)++;
                } else if (!k->c_task && has_c) {
                        snprintf(msg, sizeof(msg), "'%s' is the name of a C task of the library: c_task names it",
                                 k->name);
                        print_fail(file, ptr, msg);
                        (*failed)++;
                } else {
                        printf("OK   %s (%s: KernelBench level %d problem %s, %zu shape set%s)\n", k->name, file,
                               k->level, k->problem_name, json_array_size(k->shapes),
                               json_array_size(k->shapes) == 1 ? "" : "s");
                        (*ok)++;
                }
        }
        json_array_foreach(errors, i, e) {
                print_fail(json_string_value(json_object_get(e, "file")),
                           json_string_value(json_object_get(e, "pointer")),
                           json_string_value(json_object_get(e, "message")));
                (*failed)++;
        }
        json_decref(errors);
        kbtasks_free(kb);
}

static int check_dir(const char *dir, size_t *ok, size_t *failed)
{
        TaskLib *lib = NULL;
        json_t *errors = NULL, *e;
        size_t i;
        int r;

        r = tasklib_load(dir, &lib, &errors);
        if (r < 0) {
                print_fail(dir, "", strerror(-r));
                (*failed)++;
                return r;
        }
        for (i = 0; i < tasklib_count(lib); i++) {
                const Task *t = tasklib_task_at(lib, i);
                print_ok(t, dir);
                (*ok)++;
        }
        json_array_foreach(errors, i, e) {
                print_fail(json_string_value(json_object_get(e, "file")),
                           json_string_value(json_object_get(e, "pointer")),
                           json_string_value(json_object_get(e, "message")));
                (*failed)++;
        }
        check_kbtasks(dir, lib, ok, failed);
        json_decref(errors);
        tasklib_free(lib);
        return 0;
}

static int check_file(const char *file, size_t *ok, size_t *failed)
{
        SpecError err = { { 0 }, { 0 } };
        Task *t = NULL;
        int r = tasklib_load_file(file, &t, &err);

        if (r < 0) {
                print_fail(file, "", strerror(-r));
                (*failed)++;
        } else if (r) {
                print_fail(file, err.pointer, err.message);
                (*failed)++;
        } else {
                const char *base = strrchr(file, '/');
                size_t n;
                base = base ? base + 1 : file;
                n = strlen(base);
                if (n > 5 && !strcmp(base + n - 5, ".json") &&
                    (strlen(spec_task_name(t)) != n - 5 ||
                     strncmp(spec_task_name(t), base, n - 5) != 0)) {
                        char msg[600];
                        snprintf(msg, sizeof(msg), "task name '%s' differs from the file name '%s'",
                                 spec_task_name(t), base);
                        print_fail(file, "/name", msg);
                        (*failed)++;
                        r = SPEC_E_INVALID;
                } else {
                        print_ok(t, file);
                        (*ok)++;
                }
        }
        spec_task_free(t);
        return r;
}

static int do_check(int argc, char **argv, const char *tasks_dir)
{
        size_t ok = 0, failed = 0;

        if (argc == 0) {
                check_dir(tasks_dir, &ok, &failed);
        } else {
                for (int i = 0; i < argc; i++) {
                        if (is_dir(argv[i]))
                                check_dir(argv[i], &ok, &failed);
                        else
                                check_file(argv[i], &ok, &failed);
                }
        }
        printf("%zu task%s OK, %zu failed\n", ok, ok == 1 ? "" : "s", failed);
        return failed || ok == 0 ? 1 : 0;
}

static int load_lib(const char *dir, TaskLib **ret_lib)
{
        json_t *errors = NULL;
        int r = tasklib_load(dir, ret_lib, &errors);

        if (r < 0)
                fprintf(stderr, "kevald task: cannot read the task library '%s': %s\n", dir,
                        strerror(-r));
        else if (json_array_size(errors))
                fprintf(stderr,
                        "kevald task: %zu task file%s failed to load; run 'kevald task check'\n",
                        json_array_size(errors), json_array_size(errors) == 1 ? "" : "s");
        json_decref(errors);
        return r;
}

static int do_list(const char *dir, int level, const char *category, bool as_json)
{
        TaskLib *lib = NULL;
        json_t *list, *s;
        size_t i;

        if (load_lib(dir, &lib) < 0)
                return 1;
        list = tasklib_list(lib, level, category);
        if (as_json) {
                json_dumpf(list, stdout, JSON_INDENT(2));
                putchar('\n');
        } else {
                json_array_foreach(list, i, s) {
                        const char *cat = json_string_value(json_object_get(s, "category"));
                        printf("%-32s L%lld %-16s %zu shape%s  %s\n",
                               json_string_value(json_object_get(s, "name")),
                               (long long)json_integer_value(json_object_get(s, "level")),
                               cat ? cat : "-", json_array_size(json_object_get(s, "shapes")),
                               json_array_size(json_object_get(s, "shapes")) == 1 ? " " : "s",
                               json_string_value(json_object_get(s, "title")));
                }
        }
        json_decref(list);
        tasklib_free(lib);
        return 0;
}

/* @prompt: print the prompt (for a Triton kernel with @triton) instead of the task's JSON. */
static int do_show(const char *dir, const char *name, bool prompt, bool triton)
{
        TaskLib *lib = NULL;
        const Task *t;
        int rc = 1;

        if (load_lib(dir, &lib) < 0)
                return 1;
        t = tasklib_get(lib, name);
        if (!t) {
                fprintf(stderr, "kevald task: no task named '%s' in '%s'\n", name, dir);
                goto out;
        }
        if (prompt) {
                char *text = triton ? spec_task_prompt_triton(t) : spec_task_prompt(t, NULL);
                if (!text) {
                        fprintf(stderr, "kevald task: out of memory\n");
                        goto out;
                }
                fputs(text, stdout);
                free(text);
        } else {
                json_dumpf(spec_task_json(t), stdout, JSON_INDENT(2));
                putchar('\n');
        }
        rc = 0;
out:
        tasklib_free(lib);
        return rc;
}

/**
 * cmd_task() - `kevald task ACTION ...`
 * @argc, @argv: argv[0] is "task", argv[1] the action
 * Return: the exit status: 0, 1 on failed checks or errors, 2 on usage errors.
 */
int cmd_task(int argc, char **argv)
{
        static const struct option longopts[] = {
                { "tasks", required_argument, NULL, 't' },
                { "level", required_argument, NULL, 'l' },
                { "category", required_argument, NULL, 'c' },
                { "json", no_argument, NULL, 'j' },
                { "language", required_argument, NULL, 'L' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        const char *dir = NULL, *category = NULL, *language = NULL, *action;
        bool as_json = false;
        int level = 0, c;

        if (argc < 2) {
                usage(stderr);
                return 2;
        }
        action = argv[1];
        if (!strcmp(action, "--help") || !strcmp(action, "-h") || !strcmp(action, "help")) {
                usage(stdout);
                return 0;
        }
        optind = 2;
        while ((c = getopt_long(argc, argv, "+t:l:c:jL:h", longopts, NULL)) != -1) {
                switch (c) {
                case 't':
                        dir = optarg;
                        break;
                case 'l': {
                        char *end;
                        long v = strtol(optarg, &end, 10);
                        if (*end || v < 0 || v > 100) {
                                fprintf(stderr, "kevald task: bad --level '%s'\n", optarg);
                                return 2;
                        }
                        level = (int)v;
                        break;
                }
                case 'c':
                        category = optarg;
                        break;
                case 'j':
                        as_json = true;
                        break;
                case 'L':
                        if (strcmp(optarg, "cuda") && strcmp(optarg, "triton")) {
                                fprintf(stderr, "kevald task: --language must be cuda or triton, not '%s'\n",
                                        optarg);
                                return 2;
                        }
                        language = optarg;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (!dir)
                dir = paths_default_tasks_dir();
        /* the FAIL lines say what the library's per-file warnings would */
        if (log_level_current < LOG_LEVEL_DEBUG)
                log_level_current = LOG_LEVEL_ERROR;
        argc -= optind;
        argv += optind;
        if (language && strcmp(action, "prompt")) {
                fprintf(stderr, "kevald task: --language goes with 'task prompt'\n");
                return 2;
        }
        if (!strcmp(action, "check"))
                return do_check(argc, argv, dir);
        if (!strcmp(action, "list") && argc == 0)
                return do_list(dir, level, category, as_json);
        if ((!strcmp(action, "show") || !strcmp(action, "prompt")) && argc == 1)
                return do_show(dir, argv[0], action[0] == 'p', language && !strcmp(language, "triton"));
        usage(stderr);
        return 2;
}
