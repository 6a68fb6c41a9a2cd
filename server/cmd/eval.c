/*
 * eval - `kevald eval`: one evaluation from the command line, through the
 * same pipeline as the server. It validates the submission with the same
 * rules, writes it to a private temporary store, starts the real dispatcher
 * with its real compile and GPU workers, waits for the verdict and prints
 * the result JSON. Nothing here is a second implementation of the pipeline.
 *
 *   kevald eval --task FILE|NAME --source kernel.cu --plan plan.json
 *   kevald eval --compile --source kernel.cu
 *
 * Exit status: 0 verdict correct or compiled, 1 any other verdict, 2 usage
 * or invalid submission, 3 infrastructure failure.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/expr.h"
#include "common/limits.h"
#include "common/verdict.h"
#include "common/readfile.h"
#include "common/jsonutil.h"
#include "common/log.h"
#include "common/spec.h"
#include "common/tasklib.h"
#include "server/cmd/commands.h"
#include "server/dispatch/dispatch.h"
#include "server/cmd/paths.h"
#include "server/dispatch/pipeline.h"
#include "server/store/store.h"

static void usage(FILE *f)
{
        fprintf(f,
                "usage: kevald eval [--task FILE|NAME] --source FILE [--plan FILE] [options]\n"
                "       kevald eval --compile --source FILE [options]\n"
                "\n"
                "  --task FILE|NAME       a task file, or a name from the task library\n"
                "  --tasks DIR            the task library (default: %s)\n"
                "  --source FILE          the candidate: CUDA C++ (or PTX with --language ptx)\n"
                "  --plan FILE            the launch plan: a JSON array of launches, or an object\n"
                "                         with \"plan\" (and optionally \"scratch\", \"options\", ...)\n"
                "  --compile              stop after compilation (needs no GPU, no task)\n"
                "  --language cuda|ptx    source language (default cuda)\n"
                "  --option OPT           a compile option (repeatable; allowlisted)\n"
                "  --name-expression E    a template instantiation to compile (repeatable)\n"
                "  --timing fast|precise|JSON  timing budget (default: the server default)\n"
                "  --seed HEX             reproduce a result: use this seed instead of a fresh one\n"
                "  --shapes A,B           evaluate only these shape sets of the task\n"
                "  --gpus auto|none|LIST  GPUs to use (default auto)\n"
                "  --libexec DIR          where kevald-compile and kevald-gpu are\n"
                "  --no-sandbox           run the workers unconfined (benchmarks only)\n"
                "  --timeout S            give up after S seconds (default 600)\n"
                "  --submission           print the whole submission object, not just the result\n"
                "  --dump DIR             write the reference's inputs and outputs of every shape set\n"
                "                         to DIR (raw little-endian) with DIR/manifest.json; without\n"
                "                         --source the candidate is a no-op (only the dump matters)\n"
                "\n"
                "exit status (the same as kevald submit's): 0 correct or compiled, 1 incorrect,\n"
                "  2 compile_error, 3 runtime_error, 4 timeout, 5 rejected, 6 internal_error,\n"
                "  64 usage error or unreadable input, 69 no GPU or workers that do not start,\n"
                "  70 internal failure, 75 no verdict within --timeout.\n",
                paths_default_tasks_dir());
}

static int is_file(const char *p)
{
        struct stat st;

        return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Load --task: a file (parsed as an inline task) or a library name. */
static int load_task(const char *arg, const char *tasks_dir, TaskLib **ret_lib, const Task **ret_task,
                     Task **ret_owned, json_t **ret_spec)
{
        SpecError err = { 0 };
        json_error_t jerr;

        if (is_file(arg)) {
                char dir[PATH_MAX];
                json_t *doc = json_load_file(arg, JSON_REJECT_DUPLICATES, &jerr);
                const char *slash = strrchr(arg, '/');
                Task *t = NULL;
                int r;

                if (!doc) {
                        fprintf(stderr, "kevald eval: %s:%d: %s\n", arg, jerr.line, jerr.text);
                        return -EINVAL;
                }
                snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - arg) : 1, slash ? arg : ".");
                r = spec_task_parse(doc, dir, &t, &err);
                json_decref(doc);
                if (r != 0) {
                        fprintf(stderr, "kevald eval: %s: invalid task at %s: %s\n", arg, err.pointer, err.message);
                        return -EINVAL;
                }
                *ret_owned = t;
                *ret_task = t;
                *ret_spec = json_deep_copy(spec_task_json(t));
                return 0;
        }
        if (tasklib_load(tasks_dir, ret_lib, NULL) < 0) {
                fprintf(stderr, "kevald eval: cannot read the task library '%s'\n", tasks_dir);
                return -ENOENT;
        }
        *ret_task = tasklib_get(*ret_lib, arg);
        if (!*ret_task) {
                fprintf(stderr, "kevald eval: no task named '%s' (and no such file)\n", arg);
                return -ENOENT;
        }
        return 0;
}

/* Merge the --plan file into the submission: an array is the plan, an object is merged. */
static int merge_plan(json_t *sub, const char *path)
{
        json_error_t jerr;
        json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);

        if (!doc) {
                fprintf(stderr, "kevald eval: %s:%d: %s\n", path, jerr.line, jerr.text);
                return -EINVAL;
        }
        if (json_is_array(doc))
                json_object_set(sub, "plan", doc);
        else if (json_is_object(doc))
                json_object_update(sub, doc);
        else {
                fprintf(stderr, "kevald eval: %s: a plan is a JSON array or object\n", path);
                json_decref(doc);
                return -EINVAL;
        }
        json_decref(doc);
        return 0;
}

/* Evaluate a buffer's shape expressions for one shape set. */
static json_t *dims_of(json_t *shape_exprs, json_t *params)
{
        json_t *dims = json_array(), *e;
        size_t i;

        json_array_foreach(shape_exprs, i, e) {
                int64_t v = 0;
                char msg[128];
                if (expr_eval_json(e, params, &v, msg, sizeof(msg)) != 0) {
                        json_decref(dims);
                        return NULL;
                }
                json_array_append_new(dims, json_integer(v));
        }
        return dims;
}

/*
 * DIR/manifest.json: one entry per shape set: {"task", "shape", "params",
 * "seed", "buffers": [{"name", "dtype", "shape": [dims], "role", "file"
 * (inputs for role in, the reference's output for out and inout),
 * "file_in" (inout: the input)}]}. Files are relative to DIR.
 */
static int write_manifest(const char *dir, const Task *task, json_t *seed)
{
        json_t *doc = spec_task_json(task), *out = json_array(), *shape, *buf;
        char path[PATH_MAX];
        size_t i, k;
        int r = 0;

        json_array_foreach(json_object_get(doc, "shapes"), i, shape) {
                const char *sname = json_string_value(json_object_get(shape, "name"));
                json_t *params = json_deep_copy(shape), *bufs = json_array();
                json_object_del(params, "name");
                json_array_foreach(json_object_get(doc, "buffers"), k, buf) {
                        const char *name = json_string_value(json_object_get(buf, "name"));
                        const char *role = json_string_value(json_object_get(buf, "role"));
                        json_t *b = json_pack("{s:s, s:O, s:o, s:s}", "name", name, "dtype", json_object_get(buf, "dtype"),
                                              "shape", dims_of(json_object_get(buf, "shape"), params), "role", role);
                        char file[PATH_MAX];
                        snprintf(file, sizeof(file), "%s/%s.%s.bin", sname, name, strcmp(role, "in") == 0 ? "input" : "output");
                        json_object_set_new(b, "file", json_string(file));
                        if (strcmp(role, "inout") == 0) {
                                snprintf(file, sizeof(file), "%s/%s.input.bin", sname, name);
                                json_object_set_new(b, "file_in", json_string(file));
                        }
                        json_array_append_new(bufs, b);
                }
                json_array_append_new(out, json_pack("{s:s, s:s, s:o, s:O, s:o}", "task", spec_task_name(task), "shape", sname,
                                                     "params", params, "seed", seed ? seed : json_null(), "buffers", bufs));
        }
        snprintf(path, sizeof(path), "%s/manifest.json", dir);
        if (json_dump_file(out, path, JSON_INDENT(1)) != 0) {
                fprintf(stderr, "kevald eval: writing '%s' failed\n", path);
                r = -EIO;
        }
        json_decref(out);
        return r;
}


static void sleep_ms(long ms)
{
        struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

        nanosleep(&ts, NULL);
}

/* What `kevald eval`'s options say; the submission's own fields go into the JSON. */
typedef struct EvalArgs {
        const char *task_arg, *tasks_dir, *source_path, *plan_path, *gpus, *libexec, *timing, *dump_dir;
        bool compile_only, sandbox, whole, has_seed;
        uint64_t seed;
        double timeout_s;
} EvalArgs;

/*
 * Parse the command line into @a, and the submission's options into @sub,
 * @options and @names. Return: 0 to go on, or 1 to exit with *@ret_exit
 * (--help, a usage error).
 */
static int parse_args(int argc, char **argv, EvalArgs *a, json_t *sub, json_t *options, json_t *names,
                      int *ret_exit)
{
        static const struct option longopts[] = {
                { "task", required_argument, NULL, 't' },        { "tasks", required_argument, NULL, 'T' },
                { "source", required_argument, NULL, 's' },      { "plan", required_argument, NULL, 'p' },
                { "compile", no_argument, NULL, 'c' },           { "language", required_argument, NULL, 'l' },
                { "option", required_argument, NULL, 'o' },      { "name-expression", required_argument, NULL, 'n' },
                { "timing", required_argument, NULL, 'm' },      { "seed", required_argument, NULL, 'S' },
                { "gpus", required_argument, NULL, 'g' },        { "libexec", required_argument, NULL, 'L' },
                { "no-sandbox", no_argument, NULL, 'N' },        { "timeout", required_argument, NULL, 'O' },
                { "submission", no_argument, NULL, 'P' },        { "log-level", required_argument, NULL, 'v' },
                { "dump", required_argument, NULL, 'D' },        { "shapes", required_argument, NULL, 'Z' },        { "help", no_argument, NULL, 'h' },
                { 0, 0, 0, 0 },
        };
        int c;

        optind = 1;
        while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
                switch (c) {
                case 't': a->task_arg = optarg; break;
                case 'T': a->tasks_dir = optarg; break;
                case 's': a->source_path = optarg; break;
                case 'p': a->plan_path = optarg; break;
                case 'c': a->compile_only = true; break;
                case 'l': json_object_set_new(sub, "language", json_string(optarg)); break;
                case 'o': json_array_append_new(options, json_string(optarg)); break;
                case 'n': json_array_append_new(names, json_string(optarg)); break;
                case 'm': a->timing = optarg; break;
                case 'S': {
                        char *end;
                        errno = 0;
                        a->seed = strtoull(optarg, &end, 16);
                        if (errno || *end || end == optarg) {
                                fprintf(stderr, "kevald eval: --seed wants up to 16 hex digits\n");
                                *ret_exit = CLI_EXIT_USAGE;
                                return 1;
                        }
                        a->has_seed = true;
                        break;
                }
                case 'g': a->gpus = optarg; break;
                case 'L': a->libexec = optarg; break;
                case 'N': a->sandbox = false; break;
                case 'O': a->timeout_s = atof(optarg); break;
                case 'P': a->whole = true; break;
                case 'D': a->dump_dir = optarg; break;
                case 'Z': {
                        json_t *list = json_array();
                        char *copy = strdup(optarg), *save = NULL;
                        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
                                json_array_append_new(list, json_string(t));
                        free(copy);
                        json_object_set_new(sub, "shapes", list);
                        break;
                }
                case 'v': {
                        LogLevel lvl;
                        if (log_level_parse(optarg, &lvl) == 0)
                                log_init("kevald", lvl);
                        break;
                }
                case 'h': usage(stdout); *ret_exit = 0; return 1;
                default: usage(stderr); *ret_exit = CLI_EXIT_USAGE; return 1;
                }
        }
        if ((!a->source_path && !a->dump_dir) || (!a->compile_only && !a->task_arg) || optind != argc ||
            (a->dump_dir && a->compile_only)) {
                usage(stderr);
                *ret_exit = CLI_EXIT_USAGE;
                return 1;
        }
        return 0;
}

/*
 * The submission's source (read from --source, or a no-op kernel for a
 * dump alone), mode, options, name expressions, timing and plan into @sub.
 * Return: 0, CLI_EXIT_USAGE (said on stderr), or 3 (out of memory).
 */
static int fill_submission(const EvalArgs *a, json_t *sub, json_t *options, json_t *names)
{
        char *source = NULL;
        int r, rc = 0;

        if (!a->source_path) {
                /* --dump alone: a candidate that does nothing; the reference side is what is dumped. */
                source = strdup("extern \"C\" __global__ void kevald_dump_noop() {}\n");
                json_object_set_new(sub, "plan", json_pack("[{s:s, s:[i], s:[i], s:[]}]", "kernel", "kevald_dump_noop",
                                                           "grid", 1, "block", 1, "args"));
        } else if ((r = readfile_all(a->source_path, LIMIT_SOURCE_BYTES, &source, NULL)) < 0) {
                fprintf(stderr, "kevald eval: cannot read '%s': %s\n", a->source_path,
                        r == -EFBIG ? "larger than the source limit" : strerror(-r));
                rc = CLI_EXIT_USAGE;
                goto out;
        }
        if (!source) {
                rc = 3;
                goto out;
        }
        json_object_set_new(sub, "source", json_string(source));
        if (!json_object_get(sub, "source")) {
                fprintf(stderr, "kevald eval: '%s' is not valid UTF-8 text\n", a->source_path);
                rc = CLI_EXIT_USAGE;
                goto out;
        }
        json_object_set_new(sub, "mode", json_string(a->compile_only ? "compile" : "full"));
        if (json_array_size(options))
                json_object_set(sub, "options", options);
        if (json_array_size(names))
                json_object_set(sub, "name_expressions", names);
        if (a->timing) {
                json_t *t = json_loads(a->timing, 0, NULL);
                json_object_set_new(sub, "timing", t ? t : json_string(a->timing));
        }
        if (a->plan_path && merge_plan(sub, a->plan_path) < 0) {
                rc = CLI_EXIT_USAGE;
                goto out;
        }
out:
        free(source);
        return rc;
}

/*
 * Start the dispatcher on the private store at @dbpath, with one compile
 * worker and (unless compile only) one GPU worker per GPU. A task from the
 * library is compared with its baselines, loaded into *@baselines (the
 * caller frees them; none is no error).
 * Return: 0 with the dispatcher in *@ret_d, or -1 (said on stderr).
 */
static int start_workers(const EvalArgs *a, const char *dbpath, TaskLib *lib, Baselines **baselines,
                         Dispatcher **ret_d)
{
        DispatchConfig cfg = { 0 };
        int r;

        cfg.db_path = dbpath;
        cfg.tasks = lib;
        /* a task from the library (not a file) is compared with its baselines; none is no error */
        if (lib && baselines_load(a->tasks_dir, lib, baselines, NULL) < 0)
                fprintf(stderr, "kevald eval: cannot read the baselines of '%s'; results carry none\n", a->tasks_dir);
        cfg.baselines = *baselines;
        cfg.libexec_dir = a->libexec ? a->libexec : paths_libexec_dir();
        cfg.compile_workers = 1;
        cfg.gpus = a->gpus ? a->gpus : (a->compile_only ? "none" : "auto");
        cfg.sandbox = a->sandbox;
        cfg.dump_dir = a->dump_dir;
        cfg.gpu_workers_per_gpu = 1; /* one job: a standby would only cost its start-up */
        if (a->dump_dir && mkdir(a->dump_dir, 0755) < 0 && errno != EEXIST) {
                fprintf(stderr, "kevald eval: cannot create '%s': %s\n", a->dump_dir, strerror(errno));
                return -1;
        }
        cfg.has_fixed_seed = a->has_seed;
        cfg.fixed_seed = a->seed;
        r = dispatch_start(&cfg, ret_d);
        if (r != 0) {
                fprintf(stderr, "kevald eval: starting the workers failed: %s\n", strerror(-r));
                return -1;
        }
        return 0;
}

/*
 * Wait for submission @id in the private @store to be done, polling it
 * every 5 ms; give up when every GPU worker (unless @compile_only) or the
 * compile worker keeps failing to start, or after @timeout_s.
 * Return: 0 with the submission (new) in *@ret_obj, CLI_EXIT_UNAVAILABLE or
 * CLI_EXIT_TEMPFAIL.
 */
static int wait_verdict(Store *store, Dispatcher *d, int64_t id, bool compile_only, double timeout_s,
                        json_t **ret_obj)
{
        /* A CLI waiting on its one job may poll its own private store. */
        for (long tick = 0;; tick++) {   /* one tick = 5 ms */
                json_t *cur = NULL;
                if (store_get_submission(store, id, &cur) == 0) {
                        const char *state = json_string_value(json_object_get(cur, "state"));
                        if (state && strcmp(state, "done") == 0) {
                                *ret_obj = cur;
                                return 0;
                        }
                        json_decref(cur);
                }
                if (tick % 100 == 0) {
                        /* Give up when every GPU worker, or the compile worker, keeps failing to start. */
                        json_t *st = dispatch_status(d), *g, *cw = json_object_get(st, "compile_workers");
                        size_t i, failed = 0;
                        bool gpus_failed, compile_failed;
                        json_array_foreach(json_object_get(st, "gpus"), i, g)
                                failed += strcmp(jsonutil_str(g, "state", ""), "failed") == 0;
                        gpus_failed = !compile_only && failed > 0 && failed == json_array_size(json_object_get(st, "gpus"));
                        compile_failed = json_integer_value(json_object_get(cw, "failed")) > 0 &&
                                         json_integer_value(json_object_get(cw, "failed")) ==
                                                 json_integer_value(json_object_get(cw, "configured"));
                        json_decref(st);
                        if (gpus_failed || compile_failed) {
                                fprintf(stderr, "kevald eval: the %s worker keeps failing to start (see the log above)\n",
                                        gpus_failed ? "GPU" : "compile");
                                return CLI_EXIT_UNAVAILABLE;
                        }
                }
                if (tick * 0.005 > timeout_s) {
                        fprintf(stderr, "kevald eval: no verdict after %.0f s\n", timeout_s);
                        return CLI_EXIT_TEMPFAIL;
                }
                sleep_ms(5);
        }
}

int cmd_eval(int argc, char **argv)
{
        EvalArgs a = { .tasks_dir = paths_default_tasks_dir(), .sandbox = true, .timeout_s = 600 };
        char dbdir[] = "/tmp/kevald-eval-XXXXXX", dbpath[PATH_MAX];
        json_t *sub = json_object(), *options = json_array(), *names = json_array();
        json_t *norm = NULL, *spec_doc = NULL, *obj = NULL, *rejected = NULL;
        TaskLib *lib = NULL;
        Baselines *baselines = NULL;
        const Task *task = NULL;
        Task *owned = NULL;
        Store *store = NULL;
        Dispatcher *d = NULL;
        SpecError err = { 0 };
        bool have_db = false;
        int64_t id = 0;
        int r, rc = CLI_EXIT_SOFTWARE;

        log_init("kevald", LOG_LEVEL_WARN);
        if (parse_args(argc, argv, &a, sub, options, names, &rc))
                goto out;
        if ((r = fill_submission(&a, sub, options, names))) {
                rc = r;
                goto out;
        }
        if (a.task_arg) {
                if (load_task(a.task_arg, a.tasks_dir, &lib, &task, &owned, &spec_doc) < 0) {
                        rc = CLI_EXIT_USAGE;
                        goto out;
                }
                if (spec_doc)
                        json_object_set(sub, "task_spec", spec_doc);
                else
                        json_object_set_new(sub, "task", json_string(spec_task_name(task)));
        }
        r = spec_submission_validate(sub, task, &norm, &err);
        if (r == SPEC_E_CANDIDATE) {
                /* The candidate itself is wrong: a verdict, stored and printed like the server's. */
                rejected = pipeline_rejected(task ? spec_task_name(task) : NULL, err.message, err.pointer);
                if (!rejected)
                        goto out;
        } else if (r != 0) {
                fprintf(stderr, "kevald eval: invalid submission at %s: %s\n", err.pointer[0] ? err.pointer : "/",
                        err.message);
                rc = CLI_EXIT_USAGE;
                goto out;
        }

        /* A private store: the same queue, the same dispatcher, the same workers. */
        if (!mkdtemp(dbdir)) {
                fprintf(stderr, "kevald eval: mkdtemp: %s\n", strerror(errno));
                goto out;
        }
        have_db = true;
        snprintf(dbpath, sizeof(dbpath), "%s/eval.db", dbdir);
        r = store_open(dbpath, &store);
        if (r != 0) {
                fprintf(stderr, "kevald eval: opening the store failed (%d)\n", r);
                goto out;
        }
        {
                StoreNew sn = { .request = norm,
                                .task = task ? spec_task_name(task) : NULL,
                                .mode = a.compile_only ? "compile" : "full",
                                .priority = 1,
                                .token_id = 0,
                                .verdict = rejected ? "rejected" : NULL,
                                .result = rejected };
                uint8_t zero[32] = { 0 };
                r = store_insert_submissions(store, &sn, 1, &id, NULL, zero, 0, 0);
                if (r != 0) {
                        fprintf(stderr, "kevald eval: queueing the submission failed (%d)\n", r);
                        goto out;
                }
        }
        if (rejected) {
                /* Refused at acceptance, stored done: nothing to compile or run, no worker to start. */
                if (store_get_submission(store, id, &obj) != 0)
                        goto out;
                goto report;
        }
        if (start_workers(&a, dbpath, lib, &baselines, &d) < 0)
                goto out;
        if (!a.compile_only) {
                json_t *st = dispatch_status(d);
                bool none = json_array_size(json_object_get(st, "gpus")) == 0;
                json_decref(st);
                if (none) {
                        fprintf(stderr, "kevald eval: no GPU on this host; use --compile for a compile-only check\n");
                        dispatch_stop(d, 1);
                        rc = CLI_EXIT_UNAVAILABLE;
                        goto out;
                }
        }
        r = wait_verdict(store, d, id, a.compile_only, a.timeout_s, &obj);
        if (r)
                rc = r;
        dispatch_stop(d, 5);
report:
        if (obj) {
                json_t *res = json_object_get(obj, "result");
                const char *verdict = json_string_value(json_object_get(obj, "verdict"));
                json_dumpf(a.whole ? obj : res, stdout, JSON_INDENT(2));
                fputc('\n', stdout);
                rc = verdict_exit_code(verdict);
                if (a.dump_dir && !a.source_path)
                        rc = 0; /* a dump-only run succeeds with its dump */
                if (a.dump_dir && write_manifest(a.dump_dir, task, json_object_get(json_object_get(obj, "result"), "seed")) < 0)
                        rc = CLI_EXIT_SOFTWARE;
        }
out:
        dispatch_free(d);
        store_close(store);
        if (have_db) {
                char p[PATH_MAX + 8];
                const char *sfx[] = { "", "-wal", "-shm" };
                for (int i = 0; i < 3; i++) {
                        snprintf(p, sizeof(p), "%s%s", dbpath, sfx[i]);
                        unlink(p);
                }
                rmdir(dbdir);
        }
        json_decref(obj);
        json_decref(rejected);
        json_decref(norm);
        json_decref(spec_doc);
        json_decref(sub);
        json_decref(options);
        json_decref(names);
        spec_task_free(owned);
        tasklib_free(lib);
        baselines_free(baselines);
        return rc;
}
