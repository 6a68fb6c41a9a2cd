/*
 * kernelbench - `kevald kernelbench RUNS_DIR`: score a folder of KernelBench
 * generations through a running server and print the fast_p table
 * (docs/kernelbench.md).
 *
 * RUNS_DIR is KernelBench's runs/<run_name>/ layout: one file per generation,
 * level_<L>_problem_<P>_sample_<S>_kernel.py (scripts/generate_samples.py
 * writes them, eval_from_generations.py reads them). Each level and problem
 * is mapped to the server's KernelBench task of that level and problem
 * (GET /v1/tasks, then each task's KernelBench document), every generation
 * is submitted as language "kernelbench" (in batches, tagged with the run's
 * folder name as run_id) and waited for.
 *
 * The table is benchmark_eval_analysis.py's: per level, over the n problems
 * that have a generation, fast_p = the share of problems whose scored sample
 * is correct and faster than the baseline by more than p (fast_0: correct at
 * all), for p in 0, 0.5, 0.8, 1, 1.5, 2; against torch eager (the task's
 * reference Model, timed by the worker beside the candidate: timing.speedup)
 * and against torch.compile where the result carries that baseline
 * (timing.speedup_compile), or with --published-h100 against the task's
 * published H100 torch.compile time. The scored sample of a problem is sample 0, or
 * its lowest sample id; every sample is evaluated and listed. A problem the
 * server has no task for counts as not correct.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <linux/limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonutil.h"
#include "common/limits.h"
#include "common/readfile.h"
#include "server/cmd/cli.h"
#include "server/cmd/commands.h"

#define KB_BATCH 256          /* submissions per POST */
static const double fast_p[] = { 0.0, 0.5, 0.8, 1.0, 1.5, 2.0 };
#define N_FAST (sizeof(fast_p) / sizeof(fast_p[0]))

typedef struct Gen {
        int level, problem, sample;
        char file[NAME_MAX + 1];
        const char *task;      /* borrowed from the task map, or NULL */
        double h100_compile_ms; /* the task's published H100 torch.compile time, or 0 */
        long long id;          /* the submission, 0 when not submitted */
        json_t *sub;           /* the finished submission, new reference */
} Gen;

static void usage(FILE *f)
{
        fprintf(f, "usage: kevald kernelbench RUNS_DIR [--level N] [--server URL] [--token T] [--out FILE] [--json]\n"
                   "                          [--timeout S] [--published-h100]\n"
                   "Score KernelBench generations (RUNS_DIR/level_<L>_problem_<P>_sample_<S>_kernel.py) through the\n"
                   "server and print the fast_p table over torch eager and torch.compile.\n"
                   "  --level N      only level N's generations\n"
                   "  --out FILE     also write the JSON report (per-problem rows) to FILE\n"
                   "  --json         print the JSON report instead of the table\n"
                   "  --timeout S    seconds to wait for each submission (default: no limit)\n"
                   "  --published-h100  where a result measured no torch.compile baseline, compare the candidate's\n"
                   "                 median at KernelBench's sizes with the task's published H100 torch.compile\n"
                   "                 time (meaningful on an H100 only)\n"
                   "%s"
                   "exit status: 0 scored, 64 usage error, 69 server unreachable, 70 server error.\n",
                cli_common_usage_text);
}

/* Parse KernelBench's file name; 1 when it is one. */
static int parse_name(const char *name, Gen *g)
{
        int n = 0;

        if (sscanf(name, "level_%d_problem_%d_sample_%d_kernel.py%n", &g->level, &g->problem, &g->sample, &n) != 3 ||
            name[n] != '\0' || g->level < 1 || g->problem < 1 || g->sample < 0 || strlen(name) > NAME_MAX)
                return 0;
        snprintf(g->file, sizeof(g->file), "%s", name);
        return 1;
}

static int gen_cmp(const void *a, const void *b)
{
        const Gen *x = a, *y = b;

        if (x->level != y->level)
                return x->level - y->level;
        if (x->problem != y->problem)
                return x->problem - y->problem;
        return x->sample - y->sample;
}

/*
 * The server's KernelBench tasks as {"<level>/<problem>": name}: GET /v1/tasks,
 * then the KernelBench document of each task that takes kernelbench (of
 * @level, when > 0). Return: 0 or an exit status.
 */
static int task_map(const Cli *c, int level, json_t *map)
{
        json_t *list = NULL, *t;
        char target[512];
        size_t i;
        int status, rc;

        if (level > 0)
                snprintf(target, sizeof(target), "/v1/tasks?level=%d", level);
        else
                snprintf(target, sizeof(target), "/v1/tasks");
        if ((rc = cli_call(c, "GET", target, NULL, false, c->timeout_ms, 0, &status, &list, NULL)))
                return rc;
        json_array_foreach(json_object_get(list, "items"), i, t) {
                const char *name = json_string_value(json_object_get(t, "name"));
                json_t *langs = json_object_get(t, "languages"), *l, *doc = NULL;
                bool kb = false;
                size_t k;
                json_array_foreach(langs, k, l)
                        kb |= json_is_string(l) && !strcmp(json_string_value(l), "kernelbench");
                if (!kb || !name || !jsonutil_is_name(name))
                        continue;
                snprintf(target, sizeof(target), "/v1/tasks/%s?language=kernelbench", name);
                if ((rc = cli_call(c, "GET", target, NULL, false, c->timeout_ms, 0, &status, &doc, NULL))) {
                        json_decref(list);
                        return rc;
                }
                {
                        json_t *kbd = json_object_get(doc, "kernelbench");
                        int lv = (int)json_integer_value(json_object_get(kbd, "level"));
                        int num = atoi(jsonutil_str(kbd, "problem", "0"));
                        char key[32];
                        snprintf(key, sizeof(key), "%d/%d", lv, num);
                        if (num > 0)
                                json_object_set_new(map, key, json_pack("{s:s, s:O?}", "name", name, "compile_ms",
                                                                        json_object_get(kbd, "h100_torch_compile_ms")));
                }
                json_decref(doc);
        }
        json_decref(list);
        return 0;
}

/* Submit @gens[0, n) that have a task, KB_BATCH at a time; their ids. Return: 0 or an exit status. */
static int submit_all(const Cli *c, const char *dir, const char *run_id, Gen *gens, size_t n)
{
        for (size_t start = 0; start < n; start += KB_BATCH) {
                json_t *subs = json_array(), *body, *ans = NULL;
                size_t idx[KB_BATCH], m = 0;
                int status, rc;

                for (size_t i = start; i < n && i < start + KB_BATCH; i++) {
                        char path[PATH_MAX], *src = NULL;
                        if (!gens[i].task)
                                continue;
                        snprintf(path, sizeof(path), "%s/%s", dir, gens[i].file);
                        rc = readfile_all(path, LIMIT_SOURCE_BYTES, &src, NULL);
                        if (rc < 0) {
                                fprintf(stderr, "kevald kernelbench: %s: %s\n", path,
                                        rc == -EFBIG ? "larger than the source limit" : strerror(-rc));
                                json_decref(subs);
                                return CLI_EXIT_USAGE;
                        }
                        json_array_append_new(subs, json_pack("{s:s, s:s, s:s, s:{s:s, s:i}}", "task", gens[i].task,
                                                              "language", "kernelbench", "source", src, "tags",
                                                              "run_id", run_id, "sample", gens[i].sample));
                        free(src);
                        idx[m++] = i;
                }
                if (m == 0) {
                        json_decref(subs);
                        continue;
                }
                body = json_pack("{s:o}", "submissions", subs);
                rc = cli_call(c, "POST", "/v1/submissions", body, true, c->timeout_ms, 0, &status, &ans, NULL);
                json_decref(body);
                if (rc)
                        return rc;
                if (json_array_size(json_object_get(ans, "ids")) != m) {
                        fprintf(stderr, "kevald kernelbench: the server's answer lists no ids for the batch\n");
                        json_decref(ans);
                        return CLI_EXIT_SOFTWARE;
                }
                for (size_t k = 0; k < m; k++)
                        gens[idx[k]].id = (long long)json_integer_value(json_array_get(json_object_get(ans, "ids"), k));
                json_decref(ans);
        }
        return 0;
}

static double speedup_of(json_t *sub, const char *key)
{
        json_t *res = json_object_get(sub, "result"), *v = json_object_get(json_object_get(res, "timing"), key);

        if (strcmp(jsonutil_str(res, "verdict", ""), "correct") != 0)
                return -1;
        return json_is_number(v) && json_number_value(v) > 0 ? json_number_value(v) : 0;
}

/* The candidate's median on shape set "default" (KernelBench's sizes) of a correct result, or 0. */
static double default_median_ms(json_t *sub)
{
        json_t *res = json_object_get(sub, "result"), *s;
        size_t i;

        if (strcmp(jsonutil_str(res, "verdict", ""), "correct") != 0)
                return 0;
        json_array_foreach(json_object_get(json_object_get(res, "timing"), "shapes"), i, s) {
                json_t *m = json_object_get(json_object_get(s, "candidate"), "median_ms");
                if (!strcmp(jsonutil_str(s, "shape", ""), "default") && json_is_number(m) && json_number_value(m) > 0)
                        return json_number_value(m);
        }
        return 0;
}

/*
 * The report of one level: rows, n, and fast_p over eager and torch.compile.
 * With @published, a correct sample whose result measured no torch.compile
 * baseline is compared with the task's published H100 torch.compile time at
 * KernelBench's sizes (its median on shape set "default"), as KernelBench's
 * own analysis compares with its published baselines of the hardware chosen.
 */
static json_t *level_report(const Gen *gens, size_t n, int level, bool published)
{
        json_t *rows = json_array(), *eager = json_object(), *comp = json_object();
        size_t problems = 0, hits_e[N_FAST] = { 0 }, hits_c[N_FAST] = { 0 }, with_compile = 0;
        char key[32];

        for (size_t i = 0; i < n; i++) {
                const Gen *g = &gens[i];
                json_t *res = json_object_get(g->sub, "result"), *row;
                const char *src;
                bool scored;
                double se, sc;
                if (g->level != level)
                        continue;
                /* the problem's lowest sample is the one scored (gens is sorted) */
                scored = i == 0 || gens[i - 1].level != g->level || gens[i - 1].problem != g->problem;
                se = g->sub ? speedup_of(g->sub, "speedup") : -1;
                sc = g->sub ? speedup_of(g->sub, "speedup_compile") : -1;
                src = sc > 0 ? "measured" : NULL;
                if (sc == 0 && published && g->h100_compile_ms > 0 && default_median_ms(g->sub) > 0) {
                        sc = g->h100_compile_ms / default_median_ms(g->sub);
                        src = "published-h100";
                }
                row = json_pack("{s:i, s:i, s:i, s:s, s:s?, s:b}", "level", g->level, "problem", g->problem, "sample",
                                g->sample, "file", g->file, "task", g->task, "scored", scored);
                json_object_set_new(row, "id", g->id ? json_integer(g->id) : json_null());
                json_object_set_new(row, "verdict", res ? json_string(jsonutil_str(res, "verdict", "?"))
                                                        : json_null());
                json_object_set_new(row, "speedup_eager", se > 0 ? json_real(se) : json_null());
                json_object_set_new(row, "speedup_compile", sc > 0 ? json_real(sc) : json_null());
                json_object_set_new(row, "compile_baseline", src ? json_string(src) : json_null());
                if (!g->task)
                        json_object_set_new(row, "error", json_string("the server has no KernelBench task for this "
                                                                      "level and problem"));
                else if (json_is_object(json_object_get(res, "error")))
                        json_object_set(row, "error", json_object_get(json_object_get(res, "error"), "message"));
                json_array_append_new(rows, row);
                if (!scored)
                        continue;
                problems++;
                with_compile += sc > 0;
                for (size_t k = 0; k < N_FAST; k++) {
                        hits_e[k] += se >= 0 && (k == 0 || se > fast_p[k]);
                        hits_c[k] += sc > 0 && sc > fast_p[k];
                }
        }
        for (size_t k = 0; k < N_FAST; k++) {
                snprintf(key, sizeof(key), "%g", fast_p[k]);
                json_object_set_new(eager, key, json_real(problems ? (double)hits_e[k] / (double)problems : 0));
                json_object_set_new(comp, key, json_real(problems ? (double)hits_c[k] / (double)problems : 0));
        }
        if (!with_compile) { /* no result carried a torch.compile baseline: no table to make */
                json_decref(comp);
                comp = json_null();
        }
        return json_pack("{s:i, s:I, s:I, s:{s:o, s:o}, s:o}", "level", level, "problems", (json_int_t)problems,
                         "problems_with_compile_baseline", (json_int_t)with_compile, "fast_p", "eager", eager,
                         "compile", comp, "rows", rows);
}

static void print_table(json_t *report)
{
        json_t *lv;
        size_t i;

        printf("kevald kernelbench: %s\n", jsonutil_str(report, "runs_dir", ""));
        json_array_foreach(json_object_get(report, "levels"), i, lv) {
                json_t *fp = json_object_get(lv, "fast_p"), *rows = json_object_get(lv, "rows"), *r;
                json_t *verdicts = json_object();
                const char *k;
                json_t *v;
                size_t j;

                printf("\nlevel %d: %" JSON_INTEGER_FORMAT " problems, %zu generations (fast_p over the problems; "
                       "each problem's lowest sample scored)\n", (int)json_integer_value(json_object_get(lv, "level")),
                       json_integer_value(json_object_get(lv, "problems")), json_array_size(rows));
                printf("  %-15s", "baseline");
                for (size_t q = 0; q < N_FAST; q++) {
                        char h[32];
                        snprintf(h, sizeof(h), "fast_%g", fast_p[q]);
                        printf(" %9s", h);
                }
                printf("\n");
                for (int b = 0; b < 2; b++) {
                        json_t *t = json_object_get(fp, b ? "compile" : "eager");
                        printf("  %-15s", b ? "torch.compile" : "torch eager");
                        for (size_t q = 0; q < N_FAST; q++) {
                                char key[32];
                                snprintf(key, sizeof(key), "%g", fast_p[q]);
                                if (json_is_object(t))
                                        printf(" %8.1f%%", 100 * json_number_value(json_object_get(t, key)));
                                else
                                        printf(" %9s", "n/a");
                        }
                        printf("\n");
                }
                json_array_foreach(rows, j, r) {
                        const char *vd = json_is_string(json_object_get(r, "verdict"))
                                                 ? json_string_value(json_object_get(r, "verdict"))
                                                 : "no task";
                        json_int_t seen = json_integer_value(json_object_get(verdicts, vd));
                        json_object_set_new(verdicts, vd, json_integer(seen + 1));
                }
                printf("  verdicts:");
                json_object_foreach(verdicts, k, v)
                        printf(" %s %" JSON_INTEGER_FORMAT, k, json_integer_value(v));
                printf("\n");
                json_decref(verdicts);
        }
}

/**
 * cmd_kernelbench() - `kevald kernelbench RUNS_DIR [--level N] [--server URL] [--token T] [--out FILE] [--json]`
 * Return: the exit status: 0 scored (whatever the verdicts), CLI_EXIT_USAGE, CLI_EXIT_UNAVAILABLE,
 * CLI_EXIT_SOFTWARE.
 */
int cmd_kernelbench(int argc, char **argv)
{
        enum { O_SERVER = 256, O_TOKEN, O_OUT, O_JSON, O_LEVEL, O_TIMEOUT, O_PUBLISHED, O_HELP };
        static const struct option longopts[] = {
                { "server", required_argument, NULL, O_SERVER }, { "token", required_argument, NULL, O_TOKEN },
                { "out", required_argument, NULL, O_OUT },       { "json", no_argument, NULL, O_JSON },
                { "level", required_argument, NULL, O_LEVEL },   { "timeout", required_argument, NULL, O_TIMEOUT },
                { "published-h100", no_argument, NULL, O_PUBLISHED },
                { "help", no_argument, NULL, O_HELP },           { NULL, 0, NULL, 0 },
        };
        Cli c = { .name = "kernelbench" };
        const char *server = NULL, *token = NULL, *out = NULL, *dir;
        double timeout_s = -1;
        json_t *map = json_object(), *report = NULL, *levels = json_array();
        Gen *gens = NULL;
        size_t n = 0, cap = 0;
        int level = 0, opt, rc;
        bool published = false;
        char run_id[LIMIT_TAG_STRING_BYTES + 1], *end;
        DIR *d = NULL;
        struct dirent *e;

        while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
                switch (opt) {
                case O_SERVER: server = optarg; break;
                case O_TOKEN: token = optarg; break;
                case O_OUT: out = optarg; break;
                case O_JSON: c.json = true; break;
                case O_PUBLISHED: published = true; break;
                case O_LEVEL:
                        level = (int)strtol(optarg, &end, 10);
                        if (*end || level < 1 || level > 4) {
                                rc = cli_usage_error(&c, "--level is 1 to 4, not '%s'", optarg);
                                goto out;
                        }
                        break;
                case O_TIMEOUT:
                        timeout_s = strtod(optarg, &end);
                        if (*end || !(timeout_s >= 0)) {
                                rc = cli_usage_error(&c, "--timeout is seconds, not '%s'", optarg);
                                goto out;
                        }
                        break;
                case 'h':
                case O_HELP: usage(stdout); rc = 0; goto out;
                default: usage(stderr); rc = CLI_EXIT_USAGE; goto out;
                }
        }
        if (optind != argc - 1) {
                rc = cli_usage_error(&c, "give one RUNS_DIR%s", NULL);
                goto out;
        }
        dir = argv[optind];
        if ((rc = cli_setup(&c, server, token)))
                goto out;
        d = opendir(dir);
        if (!d) {
                rc = cli_usage_error(&c, "cannot open RUNS_DIR '%s'", dir);
                goto out;
        }
        while ((e = readdir(d))) {
                Gen g = { 0 };
                if (!parse_name(e->d_name, &g) || (level > 0 && g.level != level))
                        continue;
                if (n >= LIMIT_KB_RUNS_FILES_MAX) {
                        rc = cli_usage_error(&c, "RUNS_DIR holds more generations than LIMIT_KB_RUNS_FILES_MAX%s",
                                             NULL);
                        goto out;
                }
                if (n == cap) {
                        Gen *grown = realloc(gens, (cap = cap ? 2 * cap : 64) * sizeof(*gens));
                        if (!grown) {
                                rc = CLI_EXIT_SOFTWARE;
                                goto out;
                        }
                        gens = grown;
                }
                gens[n++] = g;
        }
        if (n == 0) {
                rc = cli_usage_error(&c, "no level_<L>_problem_<P>_sample_<S>_kernel.py in '%s'", dir);
                goto out;
        }
        qsort(gens, n, sizeof(*gens), gen_cmp);
        if ((rc = task_map(&c, level, map)))
                goto out;
        for (size_t i = 0; i < n; i++) {
                char key[32];
                snprintf(key, sizeof(key), "%d/%d", gens[i].level, gens[i].problem);
                gens[i].task = json_string_value(json_object_get(json_object_get(map, key), "name"));
                gens[i].h100_compile_ms = json_number_value(json_object_get(json_object_get(map, key), "compile_ms"));
        }
        {
                /* the run's folder name (KernelBench's run_name) tags every submission */
                char name[PATH_MAX], *base;
                size_t len;
                snprintf(name, sizeof(name), "%s", dir);
                while ((len = strlen(name)) > 1 && name[len - 1] == '/')
                        name[len - 1] = '\0';
                base = strrchr(name, '/');
                snprintf(run_id, sizeof(run_id), "kernelbench-%.200s", base && base[1] ? base + 1 : name);
        }
        if ((rc = submit_all(&c, dir, run_id, gens, n)))
                goto out;
        for (size_t i = 0; i < n; i++)
                if (gens[i].id && (rc = cli_wait_done(&c, gens[i].id, timeout_s, &gens[i].sub)))
                        goto out;
        for (size_t i = 0; i < n; i++)
                if (i == 0 || gens[i].level != gens[i - 1].level)
                        json_array_append_new(levels, level_report(gens, n, gens[i].level, published));
        report = json_pack("{s:s, s:s, s:O}", "runs_dir", dir, "run_id", run_id, "levels", levels);
        if (out && json_dump_file(report, out, JSON_INDENT(2)) != 0) {
                fprintf(stderr, "kevald kernelbench: cannot write '%s'\n", out);
                rc = CLI_EXIT_USAGE;
                goto out;
        }
        if (c.json) {
                json_dumpf(report, stdout, JSON_INDENT(2));
                putchar('\n');
        } else {
                print_table(report);
        }
        rc = 0;
out:
        if (d)
                closedir(d);
        for (size_t i = 0; i < n; i++)
                json_decref(gens[i].sub);
        free(gens);
        json_decref(map);
        json_decref(levels);
        json_decref(report);
        cli_free(&c);
        return rc;
}
