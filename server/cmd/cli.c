/*
 * cli - the client subcommands of `kevald`: submit, status, wait, cancel,
 * tasks and history, talking to a running server over HTTP
 * (server/cmd/httpclient.h).
 *
 * The server is --server URL, else $KEVALD_URL, else http://127.0.0.1:8080;
 * the token --token, else $KEVALD_TOKEN. 429 and 503 answers are retried
 * (at most CLI_RETRIES times, honouring Retry-After); a POST carries one
 * Idempotency-Key for all its tries, so a retry never stores a submission
 * twice. The exit status says what happened, so scripts can branch on it
 * (see exit_usage_text and docs/clients.md): the verdict (0 correct or
 * compiled, 1 incorrect, 2 compile_error, 3 runtime_error, 4 timeout,
 * 5 rejected, 6 internal_error or cancelled), or 64 usage, 69 server
 * unreachable, 70 server error (the problem detail is printed), 75 still
 * pending.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/jsonutil.h"
#include "common/limits.h"
#include "common/readfile.h"
#include "common/verdict.h"
#include "server/cmd/cli.h"
#include "server/cmd/cli_summary.h"
#include "server/cmd/commands.h"
#include "server/cmd/httpclient.h"


#define CLI_DEFAULT_URL "http://127.0.0.1:8080"
#define CLI_RETRIES 5
#define CLI_TIMEOUT_MS_DEFAULT 30000    /* one ordinary request; $KEVALD_HTTP_TIMEOUT (seconds) overrides */
#define CLI_POLL_SLICE_S 60             /* one long-poll request at most */
#define CLI_HISTORY_DEFAULT 20
#define CLI_HISTORY_MAX 100000

static const char exit_usage_text[] =
        "exit status: 0 correct or compiled (or accepted, without --wait), 1 incorrect, 2 compile_error,\n"
        "  3 runtime_error, 4 timeout, 5 rejected, 6 internal_error or cancelled, 64 usage error,\n"
        "  69 server unreachable, 70 server error (4xx/5xx; the problem detail is printed),\n"
        "  75 still pending (not done when the wait ended).\n";

const char cli_common_usage_text[] =
        "  --server URL   the kevald server (default: $KEVALD_URL, else " CLI_DEFAULT_URL ")\n"
        "  --token TOKEN  bearer token (default: $KEVALD_TOKEN)\n"
        "  $KEVALD_HTTP_TIMEOUT  seconds one request may take (default 30; a long poll adds its wait)\n";


enum { OPT_SERVER = 256, OPT_TOKEN, OPT_JSON, OPT_HELP, OPT_TASK, OPT_PLAN, OPT_MODE, OPT_OPTION, OPT_TIMING,
       OPT_WAIT, OPT_PRIORITY, OPT_TIMEOUT, OPT_LEVEL, OPT_CATEGORY, OPT_VERDICT, OPT_STATE, OPT_RUN_ID,
       OPT_LIMIT, OPT_LABEL, OPT_RUN_TAG, OPT_FRONTEND, OPT_LANGUAGE };

void cli_free(Cli *c)
{
        free(c->auth);
        c->auth = NULL;
}

int cli_usage_error(const Cli *c, const char *msg, const char *arg)
{
        fprintf(stderr, "kevald %s: ", c->name);
        fprintf(stderr, msg, arg ? arg : "");
        fprintf(stderr, " (kevald %s --help)\n", c->name);
        return CLI_EXIT_USAGE;
}

/* Resolve the server URL and token (flags, then environment, then defaults). */
int cli_setup(Cli *c, const char *server, const char *token)
{
        if (!server || !*server)
                server = getenv("KEVALD_URL");
        if (!server || !*server)
                server = CLI_DEFAULT_URL;
        c->server = server;
        if (httpclient_parse_url(server, &c->url) != 0)
                return cli_usage_error(c, "bad server URL '%s': use http://HOST[:PORT] (no TLS: put a proxy in front)",
                                   server);
        c->timeout_ms = CLI_TIMEOUT_MS_DEFAULT;
        if (getenv("KEVALD_HTTP_TIMEOUT") && *getenv("KEVALD_HTTP_TIMEOUT")) {
                const char *v = getenv("KEVALD_HTTP_TIMEOUT");
                char *end;
                double d = strtod(v, &end);

                if (end == v || *end || !(d >= 0.001 && d <= 3600))
                        return cli_usage_error(c, "KEVALD_HTTP_TIMEOUT must be seconds from 0.001 to 3600, not '%s'", v);
                c->timeout_ms = (int)ceil(d * 1000);
        }
        if (!token || !*token)
                token = getenv("KEVALD_TOKEN");
        if (token && *token) {
                if (strlen(token) > 512 || strpbrk(token, "\r\n"))
                        return cli_usage_error(c, "the token is not a valid bearer token%s", NULL);
                if (asprintf(&c->auth, "Authorization: Bearer %s", token) < 0) {
                        c->auth = NULL;
                        return CLI_EXIT_SOFTWARE;
                }
        }
        return 0;
}

static void uuid4(char out[37])
{
        unsigned char b[16];
        size_t got = 0;

        while (got < sizeof(b)) {
                ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
                if (n <= 0) {
                        /* getrandom cannot fail on Linux >= 3.17 short of EINTR; mix the clock in anyway. */
                        struct timespec ts;
                        clock_gettime(CLOCK_REALTIME, &ts);
                        for (size_t i = got; i < sizeof(b); i++)
                                b[i] = (unsigned char)((ts.tv_nsec >> (i % 4 * 8)) ^ (getpid() >> (i % 2 * 8)) ^ i);
                        break;
                }
                got += (size_t)n;
        }
        b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
        b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
        snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
                 b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* Write @value percent-encoded (RFC 3986 unreserved characters kept). */
static void pct_put(FILE *q, const char *value)
{
        for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
                if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                    strchr("-_.~", *p))
                        fputc(*p, q);
                else
                        fprintf(q, "%%%02X", *p);
        }
}

/* Append "?key=value" or "&key=value" (percent-encoded) to the query in @q (a memstream); NULL skips. */
static void query_add(FILE *q, bool *first, const char *key, const char *value)
{
        if (!value)
                return;
        fprintf(q, "%c%s=", *first ? '?' : '&', key);
        *first = false;
        pct_put(q, value);
}

static void print_problem(const Cli *c, const HttpClientResponse *r)
{
        json_t *p = json_loadb(r->body, r->body_len, 0, NULL);
        const char *title = json_string_value(json_object_get(p, "title"));
        const char *detail = json_string_value(json_object_get(p, "detail"));
        const char *ptr = json_string_value(json_object_get(p, "pointer"));

        if (title || detail)
                fprintf(stderr, "kevald %s: server answered %d %s%s%s%s%s%s\n", c->name, r->status, title ? title : "",
                        detail ? ": " : "", detail ? detail : "", ptr && *ptr ? " (at " : "", ptr && *ptr ? ptr : "", ptr && *ptr ? ")" : "");
        else
                fprintf(stderr, "kevald %s: server answered %d: %.300s\n", c->name, r->status, r->body);
        json_decref(p);
}

/*
 * One API call with retries on 429/503. @body is serialized when given;
 * @idem adds an Idempotency-Key. On a 2xx (or a status listed in @also_ok)
 * *ret_status and *ret_json (a new reference; NULL for a non-JSON body, and
 * then *ret_text, a new string, if asked for) are set.
 * Return: 0, CLI_EXIT_UNAVAILABLE or CLI_EXIT_SOFTWARE (message printed).
 */
int cli_call(const Cli *c, const char *method, const char *target, json_t *body, bool idem, int timeout_ms,
                int also_ok, int *ret_status, json_t **ret_json, char **ret_text)
{
        const char *headers[5];
        char key_hdr[64], uuid[37], err[256];
        char *text = NULL;
        size_t n = 0, text_len = 0;
        HttpClientResponse r = { 0 };
        int rc;

        headers[n++] = "Accept: application/json";
        if (c->auth)
                headers[n++] = c->auth;
        if (body) {
                headers[n++] = "Content-Type: application/json";
                text = json_dumps(body, JSON_COMPACT);
                if (!text) {
                        fprintf(stderr, "kevald %s: out of memory\n", c->name);
                        return CLI_EXIT_SOFTWARE;
                }
                text_len = strlen(text);
        }
        if (idem) {
                uuid4(uuid);
                snprintf(key_hdr, sizeof(key_hdr), "Idempotency-Key: %s", uuid);
                headers[n++] = key_hdr;
        }
        headers[n] = NULL;
        for (int attempt = 0;; attempt++) {
                double delay;

                rc = httpclient_request(&c->url, method, target, headers, text, text_len, timeout_ms, &r, err,
                                        sizeof(err));
                if (rc != 0) {
                        fprintf(stderr, "kevald %s: cannot reach the server at %s: %s%s%s\n", c->name, c->server,
                                httpclient_strerror(rc), err[0] ? ": " : "", err);
                        rc = rc == HTTPCLIENT_E_PROTOCOL || rc == HTTPCLIENT_E_TOO_LARGE ? CLI_EXIT_SOFTWARE
                                                                                          : CLI_EXIT_UNAVAILABLE;
                        goto out;
                }
                if ((r.status >= 200 && r.status < 300) || r.status == also_ok)
                        break;
                if ((r.status != 429 && r.status != 503) || attempt >= CLI_RETRIES) {
                        print_problem(c, &r);
                        rc = CLI_EXIT_SOFTWARE;
                        goto out;
                }
                delay = r.retry_after ? strtod(r.retry_after, NULL) : 0;
                if (!(delay >= 0) || delay > 60)
                        delay = 60;
                delay = fmax(delay, 0.25 * (1 << attempt));
                fprintf(stderr, "kevald %s: server answered %d; retrying in %.1f s\n", c->name, r.status, delay);
                httpclient_response_clear(&r);
                {
                        struct timespec ts = { (time_t)delay, (long)((delay - floor(delay)) * 1e9) };
                        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                                ;
                }
        }
        *ret_status = r.status;
        *ret_json = json_loadb(r.body, r.body_len, 0, NULL);
        if (ret_text) {
                *ret_text = r.body;
                r.body = NULL;
        }
        rc = 0;
out:
        httpclient_response_clear(&r);
        free(text);
        return rc;
}

/* ---- printing ---- */

static const char *str(json_t *o, const char *key)
{
        return jsonutil_str(o, key, "");
}

static void print_json(json_t *v)
{
        json_dumpf(v, stdout, JSON_INDENT(2));
        putchar('\n');
}

/* The exit status for a submission as it stands (printed per --json). */
static int report(const Cli *c, json_t *sub)
{
        bool done = !strcmp(str(sub, "state"), "done");

        if (c->json)
                print_json(sub);
        else
                cli_summary_print(stdout, sub);
        fflush(stdout);
        if (!done) {
                if (!c->json)
                        fprintf(stderr, "kevald %s: submission %lld is still %s\n", c->name,
                                (long long)json_integer_value(json_object_get(sub, "id")), str(sub, "state"));
                return CLI_EXIT_TEMPFAIL;
        }
        return verdict_exit_code(json_string_value(json_object_get(sub, "verdict")));
}

/* ---- waiting ---- */

static double mono_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Long-poll submission @id until done or @timeout_s (< 0: no limit) passes.
 * *ret_sub: the last answer (new reference). On a terminal, a spinner line
 * with the state and elapsed time goes to stderr and is cleared at the end.
 * Return: 0 or the exit status of a failed call.
 */
int cli_wait_done(const Cli *c, long long id, double timeout_s, json_t **ret_sub)
{
        static const char spin[] = "|/-\\";
        bool tty = isatty(STDERR_FILENO), drew = false;
        double t0 = mono_s();
        json_t *sub = NULL;
        int rc = 0;

        for (unsigned k = 0;; k++) {
                double left = timeout_s < 0 ? CLI_POLL_SLICE_S : timeout_s - (mono_s() - t0);
                double w = fmax(0, fmin(left, tty ? 1.0 : CLI_POLL_SLICE_S));
                char target[128];
                int status;

                snprintf(target, sizeof(target), "/v1/submissions/%lld?wait=%.3f", id, w);
                json_decref(sub);
                sub = NULL;
                rc = cli_call(c, "GET", target, NULL, false, (int)(w * 1000) + c->timeout_ms, 0, &status, &sub, NULL);
                if (rc)
                        break;
                if (!json_is_object(sub)) {
                        fprintf(stderr, "kevald %s: the server's answer is not a submission\n", c->name);
                        rc = CLI_EXIT_SOFTWARE;
                        break;
                }
                if (!strcmp(str(sub, "state"), "done") || (timeout_s >= 0 && mono_s() - t0 >= timeout_s))
                        break;
                if (tty && mono_s() - t0 >= 1.0) {
                        fprintf(stderr, "\r%c waiting for submission %lld: %s, %.0f s\033[K", spin[k % 4], id,
                                str(sub, "state"), mono_s() - t0);
                        drew = true;
                }
        }
        if (drew)
                fprintf(stderr, "\r\033[K");
        if (rc) {
                json_decref(sub);
                return rc;
        }
        *ret_sub = sub;
        return 0;
}

static int parse_seconds(const Cli *c, const char *flag, const char *v, double *ret)
{
        char *end;
        double d;

        errno = 0;
        d = strtod(v, &end);
        if (errno || end == v || *end || !isfinite(d) || d < 0 || d > 7 * 86400.0) {
                fprintf(stderr, "kevald %s: %s must be seconds from 0 to 604800, not '%s'\n", c->name, flag, v);
                return CLI_EXIT_USAGE;
        }
        *ret = d;
        return 0;
}

static int parse_id(const Cli *c, const char *v, long long *ret)
{
        char *end;
        long long id;

        errno = 0;
        id = strtoll(v, &end, 10);
        if (errno || end == v || *end || id < 1)
                return cli_usage_error(c, "'%s' is not a submission id", v);
        *ret = id;
        return 0;
}

/* ---- submit ---- */

static void submit_usage(FILE *f)
{
        fprintf(f,
                "usage: kevald submit FILE.cu [--task NAME] [--plan FILE] [--mode compile|full] [--option OPT]...\n"
                "                     [--timing fast|precise] [--priority interactive|bulk] [--run-id ID]\n"
                "                     [--frontend NAME]\n"
                "                     [--wait[=S]] [--json] [--server URL] [--token TOKEN]\n"
                "\n"
                "Submit one kernel (CUDA C++; a .ptx file is sent as PTX) and print the result.\n"
                "  --task NAME    a task of the server's library; without --plan, its example plan is used\n"
                "  --plan FILE    JSON: a plan (array of launches), or an object whose members (plan,\n"
                "                 scratch, options, name_expressions, timing, tags, ...) join the submission\n"
                "  --mode M       compile (default without a task) or full (default with one)\n"
                "  --option OPT   a compile option (repeatable), e.g. --option=-use_fast_math\n"
                "  --timing P     fast or precise timing preset\n"
                "  --frontend NAME  the tool that made a PTX submission, e.g. \"triton 3.6.0\" (at most %d\n"
                "                 bytes; results and the dashboard split runs by it)\n"
                "  --wait[=S]     wait for the result (at most S seconds; no limit without =S)\n"
                "  --json         print the server's JSON instead of a summary\n"
                "%s\n%s",
                LIMIT_FRONTEND_BYTES, cli_common_usage_text, exit_usage_text);
}

static int read_file(const Cli *c, const char *path, size_t max, char **ret, size_t *ret_len)
{
        int r = readfile_all(path, max, ret, ret_len);

        if (r == -ENOMEM)
                return CLI_EXIT_SOFTWARE;
        if (r == -EFBIG)
                fprintf(stderr, "kevald %s: '%s' is too large\n", c->name, path);
        else if (r < 0)
                fprintf(stderr, "kevald %s: cannot read '%s': %s\n", c->name, path, strerror(-r));
        return r < 0 ? CLI_EXIT_USAGE : 0;
}

/*
 * Read the --plan file @plan_path into @sub: a JSON array is the plan, an
 * object joins the submission (task, task_spec, scratch, options, ...).
 * Return: 0 or the exit status (said on stderr).
 */
static int merge_plan_file(const Cli *c, json_t *sub, const char *plan_path)
{
        json_t *plan_doc = NULL;
        char *plan_text = NULL;
        size_t plan_len;
        json_error_t jerr;
        int rc;

        if ((rc = read_file(c, plan_path, LIMIT_CLIENT_RESPONSE_BYTES, &plan_text, &plan_len)) != 0)
                goto out;
        plan_doc = json_loadb(plan_text, plan_len, JSON_REJECT_DUPLICATES, &jerr);
        if (json_is_array(plan_doc)) {
                json_object_set(sub, "plan", plan_doc);
        } else if (json_is_object(plan_doc)) {
                json_object_update(sub, plan_doc);
        } else {
                fprintf(stderr, "kevald submit: '%s' is not a JSON plan (array) or object: %s (line %d)\n",
                        plan_path, plan_doc ? "neither" : jerr.text, jerr.line);
                rc = CLI_EXIT_USAGE;
                goto out;
        }
        rc = 0;
out:
        json_decref(plan_doc);
        free(plan_text);
        return rc;
}

/*
 * No plan given with a task: the task's example plan (and scratch), what
 * its prompt shows. In compile mode too, so the plan is checked against the
 * compiled kernels as the API does with a plan.
 * Return: 0 or the exit status (said on stderr).
 */
static int add_example_plan(const Cli *c, json_t *sub, const char *task)
{
        FILE *q;
        json_t *doc = NULL, *ex;
        char *tt = NULL;
        size_t tl = 0;
        int status, rc;

        q = open_memstream(&tt, &tl);
        if (!q)
                return CLI_EXIT_SOFTWARE;
        fputs("/v1/tasks/", q);
        pct_put(q, task);
        fclose(q);
        rc = cli_call(c, "GET", tt, NULL, false, c->timeout_ms, 0, &status, &doc, NULL);
        free(tt);
        if (rc)
                return rc;
        ex = json_object_get(doc, "example");
        if (!json_is_array(json_object_get(ex, "plan"))) {
                fprintf(stderr, "kevald submit: task '%s' has no example plan; give --plan FILE\n", task);
                json_decref(doc);
                return CLI_EXIT_USAGE;
        }
        fprintf(stderr, "kevald submit: using the example plan of task '%s' (give --plan FILE for another)\n",
                task);
        json_object_set(sub, "plan", json_object_get(ex, "plan"));
        if (json_array_size(json_object_get(ex, "scratch")))
                json_object_set(sub, "scratch", json_object_get(ex, "scratch"));
        json_decref(doc);
        return 0;
}

/*
 * POST @sub (idempotent: one key for every retry); with --wait (@wait_s
 * -1: no limit, else seconds), wait for the verdict in long-poll slices.
 * Print what the user asked for (a summary, or --json).
 * Return: the exit status.
 */
static int post_and_report(const Cli *c, json_t *sub, double wait_s)
{
        json_t *ans = NULL, *done = NULL;
        char target[64];
        double t0;
        int rc, status;
        long long id;

        if (wait_s == -2)
                snprintf(target, sizeof(target), "/v1/submissions");
        else
                snprintf(target, sizeof(target), "/v1/submissions?wait=%.3f",
                         wait_s < 0 ? (double)CLI_POLL_SLICE_S : fmin(wait_s, CLI_POLL_SLICE_S));
        t0 = mono_s();
        rc = cli_call(c, "POST", target, sub, true,
                  wait_s == -2 ? c->timeout_ms : c->timeout_ms + CLI_POLL_SLICE_S * 1000, 0, &status, &ans, NULL);
        if (rc)
                goto out;
        id = json_integer_value(json_object_get(ans, "id"));
        if (id < 1) {
                fprintf(stderr, "kevald submit: the server's answer has no id\n");
                rc = CLI_EXIT_SOFTWARE;
                goto out;
        }
        if (wait_s == -2 && !strcmp(str(ans, "state"), "done")) {
                /* Rejected at acceptance: the verdict is known now; report it as a wait would. */
                rc = cli_wait_done(c, id, 0, &done);
                if (rc == 0)
                        rc = report(c, done);
                goto out;
        }
        if (wait_s == -2) {
                if (c->json)
                        print_json(ans);
                else
                        printf("submitted %lld (%s); see `kevald wait %lld`\n", id, str(ans, "state"), id);
                rc = 0;
                goto out;
        }
        if (status == 200 || wait_s == 0) {
                rc = report(c, ans);
                goto out;
        }
        rc = cli_wait_done(c, id, wait_s < 0 ? -1 : fmax(0, wait_s - (mono_s() - t0)), &done);
        if (rc)
                goto out;
        rc = report(c, done);
out:
        json_decref(ans);
        json_decref(done);
        return rc;
}

/* The values of `kevald submit`'s enumerated options: 0, or the usage error's exit status. */
static int submit_check_values(const Cli *c, const char *mode, const char *timing, const char *priority,
                               const char *frontend)
{
        if (mode && strcmp(mode, "compile") && strcmp(mode, "full"))
                return cli_usage_error(c, "--mode must be compile or full, not '%s'", mode);
        if (timing && strcmp(timing, "fast") && strcmp(timing, "precise"))
                return cli_usage_error(c, "--timing must be fast or precise, not '%s'", timing);
        if (priority && strcmp(priority, "interactive") && strcmp(priority, "bulk"))
                return cli_usage_error(c, "--priority must be interactive or bulk, not '%s'", priority);
        if (frontend && (!*frontend || strlen(frontend) > LIMIT_FRONTEND_BYTES)) {
                char msg[96];

                snprintf(msg, sizeof(msg), "--frontend takes a name of 1 to %d bytes, not '%%s'", LIMIT_FRONTEND_BYTES);
                return cli_usage_error(c, msg, frontend);
        }
        return 0;
}

/**
 * cmd_submit() - `kevald submit FILE [options]`
 * @argv: argv[0] is "submit"
 * Return: the exit status (see exit_usage_text).
 */
int cmd_submit(int argc, char **argv)
{
        static const struct option longopts[] = {
                { "server", required_argument, NULL, OPT_SERVER }, { "token", required_argument, NULL, OPT_TOKEN },
                { "json", no_argument, NULL, OPT_JSON }, { "help", no_argument, NULL, OPT_HELP },
                { "task", required_argument, NULL, OPT_TASK }, { "plan", required_argument, NULL, OPT_PLAN },
                { "mode", required_argument, NULL, OPT_MODE }, { "option", required_argument, NULL, OPT_OPTION },
                { "timing", required_argument, NULL, OPT_TIMING }, { "wait", optional_argument, NULL, OPT_WAIT },
                { "priority", required_argument, NULL, OPT_PRIORITY }, { "run-id", required_argument, NULL, OPT_RUN_ID },
                { "frontend", required_argument, NULL, OPT_FRONTEND },
                { NULL, 0, NULL, 0 },
        };
        Cli c = { .name = "submit" };
        const char *server = NULL, *token = NULL, *task = NULL, *plan_path = NULL, *mode = NULL, *timing = NULL;
        const char *priority = NULL, *run_id = NULL, *frontend = NULL, *file;
        json_t *sub = json_object(), *options = json_array();
        char *src = NULL;
        size_t src_len;
        double wait_s = -2;     /* -2: no --wait; -1: no limit */
        int opt, rc;

        while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
                switch (opt) {
                case OPT_SERVER: server = optarg; break;
                case OPT_TOKEN: token = optarg; break;
                case OPT_JSON: c.json = true; break;
                case OPT_TASK: task = optarg; break;
                case OPT_PLAN: plan_path = optarg; break;
                case OPT_MODE: mode = optarg; break;
                case OPT_OPTION:
                        if (json_array_size(options) >= LIMIT_OPTIONS_MAX) {
                                rc = cli_usage_error(&c, "too many --option (the server takes at most 32)%s", NULL);
                                goto out;
                        }
                        json_array_append_new(options, json_string(optarg));
                        break;
                case OPT_TIMING: timing = optarg; break;
                case OPT_PRIORITY: priority = optarg; break;
                case OPT_RUN_ID: run_id = optarg; break;
                case OPT_FRONTEND: frontend = optarg; break;
                case OPT_WAIT:
                        wait_s = -1;
                        if (optarg && (rc = parse_seconds(&c, "--wait", optarg, &wait_s)) != 0)
                                goto out;
                        break;
                case 'h':
                case OPT_HELP:
                        submit_usage(stdout);
                        rc = 0;
                        goto out;
                default:
                        rc = cli_usage_error(&c, "bad option%s", NULL);
                        goto out;
                }
        }
        if (optind != argc - 1) {
                rc = cli_usage_error(&c, "give exactly one source file%s", NULL);
                goto out;
        }
        file = argv[optind];
        if ((rc = submit_check_values(&c, mode, timing, priority, frontend)) != 0)
                goto out;
        if ((rc = cli_setup(&c, server, token)) != 0)
                goto out;
        if ((rc = read_file(&c, file, LIMIT_SOURCE_BYTES, &src, &src_len)) != 0)
                goto out;
        if (src_len == 0) {
                rc = cli_usage_error(&c, "'%s' is empty", file);
                goto out;
        }
        json_object_set_new(sub, "source", json_stringn(src, src_len));
        if (!json_object_get(sub, "source")) {
                rc = cli_usage_error(&c, "'%s' is not UTF-8 text", file);
                goto out;
        }
        if (strlen(file) > 4 && !strcmp(file + strlen(file) - 4, ".ptx"))
                json_object_set_new(sub, "language", json_string("ptx"));
        if (plan_path && (rc = merge_plan_file(&c, sub, plan_path)) != 0)
                goto out;
        if (frontend) {
                /* the server says the same (422 at /frontend); said here, the user sees which flag */
                const char *lang = json_string_value(json_object_get(sub, "language"));

                if (!lang || strcmp(lang, "ptx")) {
                        rc = cli_usage_error(&c, "--frontend goes with PTX: a .ptx file, or \"language\": \"ptx\" "
                                         "in the --plan file%s", NULL);
                        goto out;
                }
                if (json_object_set_new(sub, "frontend", json_string(frontend))) {
                        rc = cli_usage_error(&c, "--frontend '%s' is not UTF-8 text", frontend);
                        goto out;
                }
        }
        if (task)
                json_object_set_new(sub, "task", json_string(task));
        task = json_string_value(json_object_get(sub, "task"));
        if (!mode)
                mode = json_string_value(json_object_get(sub, "mode"));
        if (!mode)
                mode = task || json_object_get(sub, "task_spec") ? "full" : "compile";
        json_object_set_new(sub, "mode", json_string(mode));
        if (!strcmp(mode, "full") && !task && !json_object_get(sub, "task_spec")) {
                rc = cli_usage_error(&c, "--mode full needs --task NAME (or a task_spec in the --plan file)%s", NULL);
                goto out;
        }
        if (task && !json_object_get(sub, "plan") && (rc = add_example_plan(&c, sub, task)) != 0)
                goto out;
        if (json_array_size(options)) {
                json_t *have = json_object_get(sub, "options");

                if (json_is_array(have))
                        json_array_extend(have, options);
                else
                        json_object_set(sub, "options", options);
        }
        if (timing)
                json_object_set_new(sub, "timing", json_string(timing));
        if (priority)
                json_object_set_new(sub, "priority", json_string(priority));
        if (run_id) {
                json_t *tags = json_object_get(sub, "tags");

                if (!json_is_object(tags)) {
                        tags = json_object();
                        json_object_set_new(sub, "tags", tags);
                }
                json_object_set_new(tags, "run_id", json_string(run_id));
        }
        rc = post_and_report(&c, sub, wait_s);
out:
        json_decref(sub);
        json_decref(options);
        free(src);
        cli_free(&c);
        return rc;
}

/* ---- status, wait, cancel ---- */

static const struct option id_longopts[] = {
        { "server", required_argument, NULL, OPT_SERVER }, { "token", required_argument, NULL, OPT_TOKEN },
        { "json", no_argument, NULL, OPT_JSON }, { "help", no_argument, NULL, OPT_HELP },
        { "timeout", required_argument, NULL, OPT_TIMEOUT }, { NULL, 0, NULL, 0 },
};

static void id_usage(FILE *f, const char *name)
{
        if (!strcmp(name, "wait"))
                fprintf(f, "usage: kevald wait ID [--timeout S] [--json] [--server URL] [--token TOKEN]\n\n"
                           "Wait until submission ID is done (long polls; at most S seconds, default no limit)\n"
                           "and print its result; a spinner shows the state on a terminal.\n");
        else if (!strcmp(name, "status"))
                fprintf(f, "usage: kevald status ID [--json] [--server URL] [--token TOKEN]\n\n"
                           "Print submission ID as it stands now.\n");
        else
                fprintf(f, "usage: kevald cancel ID [--json] [--server URL] [--token TOKEN]\n\n"
                           "Cancel submission ID before it runs: queued, or compiled and waiting for a GPU\n"
                           "(one compiling, running or done answers 409: exit 70).\n");
        fprintf(f, "%s\n%s", cli_common_usage_text, exit_usage_text);
}

/* status, wait and cancel share their options; @name picks the action. */
static int id_command(const char *name, int argc, char **argv)
{
        Cli c = { .name = name };
        const char *server = NULL, *token = NULL;
        double timeout_s = -1;
        json_t *sub = NULL;
        long long id = 0;
        int opt, rc, status;

        while ((opt = getopt_long(argc, argv, "h", id_longopts, NULL)) != -1) {
                switch (opt) {
                case OPT_SERVER: server = optarg; break;
                case OPT_TOKEN: token = optarg; break;
                case OPT_JSON: c.json = true; break;
                case OPT_TIMEOUT:
                        if (strcmp(name, "wait") != 0) {
                                rc = cli_usage_error(&c, "--timeout applies to wait only%s", NULL);
                                goto out;
                        }
                        if ((rc = parse_seconds(&c, "--timeout", optarg, &timeout_s)) != 0)
                                goto out;
                        break;
                case 'h':
                case OPT_HELP:
                        id_usage(stdout, name);
                        rc = 0;
                        goto out;
                default:
                        rc = cli_usage_error(&c, "bad option%s", NULL);
                        goto out;
                }
        }
        if (optind != argc - 1) {
                rc = cli_usage_error(&c, "give one submission id%s", NULL);
                goto out;
        }
        if ((rc = parse_id(&c, argv[optind], &id)) != 0 || (rc = cli_setup(&c, server, token)) != 0)
                goto out;
        if (!strcmp(name, "wait")) {
                rc = cli_wait_done(&c, id, timeout_s, &sub);
        } else {
                char target[64];

                snprintf(target, sizeof(target), "/v1/submissions/%lld", id);
                rc = cli_call(&c, !strcmp(name, "cancel") ? "DELETE" : "GET", target, NULL, false, c.timeout_ms, 0,
                          &status, &sub, NULL);
        }
        if (rc)
                goto out;
        if (!json_is_object(sub)) {
                fprintf(stderr, "kevald %s: the server's answer is not a submission\n", name);
                rc = CLI_EXIT_SOFTWARE;
                goto out;
        }
        rc = report(&c, sub);
out:
        json_decref(sub);
        cli_free(&c);
        return rc;
}

/**
 * cmd_status() - `kevald status ID`: the submission now
 * Return: the exit status: the verdict's, 75 when not done, 64/69/70.
 */
int cmd_status(int argc, char **argv)
{
        return id_command("status", argc, argv);
}

/**
 * cmd_wait() - `kevald wait ID [--timeout S]`: long-poll until done
 * Return: the exit status: the verdict's, 75 when not done in time, 64/69/70.
 */
int cmd_wait(int argc, char **argv)
{
        return id_command("wait", argc, argv);
}

/**
 * cmd_cancel() - `kevald cancel ID`: cancel a submission that has not started running
 * Return: 6 (cancelled) on success, 70 when it is compiling, running or done (409), 64/69.
 */
int cmd_cancel(int argc, char **argv)
{
        return id_command("cancel", argc, argv);
}

/* ---- tasks ---- */

static void tasks_usage(FILE *f)
{
        fprintf(f, "usage: kevald tasks [list] [--level N] [--category C] [--json]\n"
                   "       kevald tasks show NAME        the task document (JSON) as the server has it\n"
                   "       kevald tasks prompt [--language cuda|triton] NAME\n"
                   "                                     the task's prompt text (for a CUDA or a Triton kernel)\n"
                   "options: --server URL, --token TOKEN (as for every client command)\n\n"
                   "These ask the server; `kevald task ...` reads a local task library instead.\n"
                   "exit status: 0, 64 usage, 69 server unreachable, 70 server error (unknown task: 404).\n");
}

/**
 * cmd_tasks() - `kevald tasks [list|show NAME|prompt NAME]` against the server
 * Return: the exit status: 0, 64, 69 or 70.
 */
int cmd_tasks(int argc, char **argv)
{
        static const struct option longopts[] = {
                { "server", required_argument, NULL, OPT_SERVER }, { "token", required_argument, NULL, OPT_TOKEN },
                { "json", no_argument, NULL, OPT_JSON }, { "help", no_argument, NULL, OPT_HELP },
                { "level", required_argument, NULL, OPT_LEVEL }, { "category", required_argument, NULL, OPT_CATEGORY },
                { "language", required_argument, NULL, OPT_LANGUAGE },
                { NULL, 0, NULL, 0 },
        };
        Cli c = { .name = "tasks" };
        const char *server = NULL, *token = NULL, *level = NULL, *category = NULL, *action = "list", *name = NULL;
        const char *language = NULL;
        json_t *doc = NULL, *t;
        char *target = NULL, *text = NULL;
        size_t tlen = 0, i;
        bool first = true;
        FILE *q = NULL;
        int opt, rc, status;

        while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
                switch (opt) {
                case OPT_SERVER: server = optarg; break;
                case OPT_TOKEN: token = optarg; break;
                case OPT_JSON: c.json = true; break;
                case OPT_LEVEL: level = optarg; break;
                case OPT_CATEGORY: category = optarg; break;
                case OPT_LANGUAGE: language = optarg; break;
                case 'h':
                case OPT_HELP:
                        tasks_usage(stdout);
                        rc = 0;
                        goto out;
                default:
                        rc = cli_usage_error(&c, "bad option%s", NULL);
                        goto out;
                }
        }
        if (optind < argc)
                action = argv[optind++];
        if (!strcmp(action, "show") || !strcmp(action, "prompt")) {
                if (optind != argc - 1 || level || category) {
                        rc = cli_usage_error(&c, "tasks %s takes one task NAME", action);
                        goto out;
                }
                name = argv[optind];
        } else if (strcmp(action, "list") != 0 || optind != argc) {
                rc = cli_usage_error(&c, "unknown action '%s': list, show NAME or prompt NAME", action);
                goto out;
        }
        if (language && strcmp(action, "prompt")) {
                rc = cli_usage_error(&c, "--language goes with 'tasks prompt'%s", NULL);
                goto out;
        }
        if ((rc = cli_setup(&c, server, token)) != 0)
                goto out;
        q = open_memstream(&target, &tlen);
        if (!q) {
                rc = CLI_EXIT_SOFTWARE;
                goto out;
        }
        fputs("/v1/tasks", q);
        if (name) {
                fputc('/', q);
                pct_put(q, name);
                if (action[0] == 'p')
                        fputs("/prompt", q);
        }
        query_add(q, &first, "level", level);
        query_add(q, &first, "category", category);
        query_add(q, &first, "language", language);     /* the server checks it: 422 at /query/language */
        fclose(q);
        q = NULL;
        rc = cli_call(&c, "GET", target, NULL, false, c.timeout_ms, 0, &status, &doc, action[0] == 'p' ? &text : NULL);
        if (rc)
                goto out;
        if (action[0] == 'p') {
                fputs(text, stdout);
                if (*text && text[strlen(text) - 1] != '\n')
                        putchar('\n');
        } else if (name || c.json) {
                print_json(name ? doc : json_object_get(doc, "items"));
        } else {
                printf("%-28s %5s %-14s %s\n", "NAME", "LEVEL", "CATEGORY", "TITLE");
                json_array_foreach(json_object_get(doc, "items"), i, t)
                        printf("%-28s %5lld %-14s %s\n", str(t, "name"),
                               (long long)json_integer_value(json_object_get(t, "level")), str(t, "category"),
                               str(t, "title"));
                printf("(%lld tasks)\n", (long long)json_integer_value(json_object_get(doc, "count")));
        }
        rc = 0;
out:
        if (q)
                fclose(q);
        free(target);
        free(text);
        json_decref(doc);
        cli_free(&c);
        return rc;
}

/* ---- history ---- */

static void history_usage(FILE *f)
{
        fprintf(f, "usage: kevald history [--task NAME] [--verdict V] [--state S] [--run-id ID] [--label K=V]\n"
                   "                      [--limit N] [--json] [--server URL] [--token TOKEN]\n\n"
                   "List submissions, newest first: at most N (default %d, at most %d), following the\n"
                   "server's cursor across pages.\n"
                   "exit status: 0, 64 usage, 69 server unreachable, 70 server error.\n",
                CLI_HISTORY_DEFAULT, CLI_HISTORY_MAX);
}

/**
 * cmd_history() - `kevald history [filters]`
 * Return: the exit status: 0, 64, 69 or 70.
 */
int cmd_history(int argc, char **argv)
{
        static const struct option longopts[] = {
                { "server", required_argument, NULL, OPT_SERVER }, { "token", required_argument, NULL, OPT_TOKEN },
                { "json", no_argument, NULL, OPT_JSON }, { "help", no_argument, NULL, OPT_HELP },
                { "task", required_argument, NULL, OPT_TASK }, { "verdict", required_argument, NULL, OPT_VERDICT },
                { "state", required_argument, NULL, OPT_STATE }, { "run-id", required_argument, NULL, OPT_RUN_ID },
                { "label", required_argument, NULL, OPT_LABEL }, { "limit", required_argument, NULL, OPT_LIMIT },
                { NULL, 0, NULL, 0 },
        };
        Cli c = { .name = "history" };
        const char *server = NULL, *token = NULL, *task = NULL, *verdict = NULL, *state = NULL, *run_id = NULL;
        const char *label = NULL;
        long long limit = CLI_HISTORY_DEFAULT, cursor = -1, got = 0;
        json_t *all = json_array(), *doc = NULL, *it;
        int opt, rc, status;
        size_t i;

        while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
                switch (opt) {
                case OPT_SERVER: server = optarg; break;
                case OPT_TOKEN: token = optarg; break;
                case OPT_JSON: c.json = true; break;
                case OPT_TASK: task = optarg; break;
                case OPT_VERDICT: verdict = optarg; break;
                case OPT_STATE: state = optarg; break;
                case OPT_RUN_ID: run_id = optarg; break;
                case OPT_LABEL: label = optarg; break;
                case OPT_LIMIT: {
                        char *end;

                        errno = 0;
                        limit = strtoll(optarg, &end, 10);
                        if (errno || end == optarg || *end || limit < 1 || limit > CLI_HISTORY_MAX) {
                                rc = cli_usage_error(&c, "--limit must be 1 to 100000, not '%s'", optarg);
                                goto out;
                        }
                        break;
                }
                case 'h':
                case OPT_HELP:
                        history_usage(stdout);
                        rc = 0;
                        goto out;
                default:
                        rc = cli_usage_error(&c, "bad option%s", NULL);
                        goto out;
                }
        }
        if (optind != argc) {
                rc = cli_usage_error(&c, "unexpected argument '%s'", argv[optind]);
                goto out;
        }
        if ((rc = cli_setup(&c, server, token)) != 0)
                goto out;
        while (got < limit) {
                char *target = NULL, num[32];
                size_t tlen = 0;
                bool first = true;
                FILE *q = open_memstream(&target, &tlen);

                if (!q) {
                        rc = CLI_EXIT_SOFTWARE;
                        goto out;
                }
                fputs("/v1/submissions", q);
                query_add(q, &first, "task", task);
                query_add(q, &first, "verdict", verdict);
                query_add(q, &first, "state", state);
                query_add(q, &first, "run_id", run_id);
                query_add(q, &first, "label", label);
                snprintf(num, sizeof(num), "%lld", limit - got < LIMIT_LIST_PAGE_MAX ? limit - got : LIMIT_LIST_PAGE_MAX);
                query_add(q, &first, "limit", num);
                if (cursor >= 0) {
                        snprintf(num, sizeof(num), "%lld", cursor);
                        query_add(q, &first, "cursor", num);
                }
                fclose(q);
                json_decref(doc);
                doc = NULL;
                rc = cli_call(&c, "GET", target, NULL, false, c.timeout_ms, 0, &status, &doc, NULL);
                free(target);
                if (rc)
                        goto out;
                json_array_foreach(json_object_get(doc, "items"), i, it)
                        if (got < limit) {
                                json_array_append(all, it);
                                got++;
                        }
                if (!json_is_integer(json_object_get(doc, "next_cursor")) || json_array_size(json_object_get(doc, "items")) == 0)
                        break;
                cursor = json_integer_value(json_object_get(doc, "next_cursor"));
        }
        if (c.json) {
                print_json(all);
        } else {
                printf("%-8s %-24s %-9s %-14s %-24s %s\n", "ID", "CREATED", "STATE", "VERDICT", "TASK", "SPEEDUP");
                json_array_foreach(all, i, it) {
                        printf("%-8lld %-24s %-9s %-14s %-24s ", (long long)json_integer_value(json_object_get(it, "id")),
                               str(it, "created_at"), str(it, "state"),
                               json_is_string(json_object_get(it, "verdict")) ? str(it, "verdict") : "-",
                               json_is_string(json_object_get(it, "task")) ? str(it, "task") : "-");
                        if (json_is_number(json_object_get(it, "speedup")))
                                printf("%.3gx\n", json_number_value(json_object_get(it, "speedup")));
                        else
                                printf("-\n");
                }
        }
        rc = 0;
out:
        json_decref(all);
        json_decref(doc);
        cli_free(&c);
        return rc;
}
