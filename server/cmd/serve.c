/*
 * serve - `kevald serve`: the supervisor's start-up and shutdown.
 *
 * Start-up, in order: settings (defaults, --config file, flags), logging,
 * the auth decision (off by default on loopback, on elsewhere; auth off on
 * a non-loopback address needs --insecure-no-auth), the task library, the
 * store's read pool, the long-poll waiters, the dispatcher (which opens its
 * own store and starts the workers), the ingest writer (whose commits wake
 * the dispatcher), and last the HTTP server. Then "kevald: listening on
 * http://HOST:PORT" goes to stderr and the port to --port-file.
 *
 * SIGTERM/SIGINT are blocked in every thread and taken by sigwait() here.
 * Shutdown: refuse new submissions, stop accepting connections, answer
 * every parked long-poll with the current state, let requests in flight
 * finish, stop the dispatcher with the grace period (running jobs finish or
 * go back to the queue), stop the ingest writer, close the HTTP server and
 * the store. Exit 0.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/limits.h"
#include "common/log.h"
#include "common/jsonutil.h"
#include "common/kbtasks.h"
#include "common/tasklib.h"
#include "server/http/api.h"
#include "server/cmd/commands.h"
#include "server/cmd/paths.h"
#include "server/store/store.h"
#include "server/dispatch/storewatch.h"

static void usage(FILE *f)
{
        size_t n;
        const ConfigKey *keys = config_keys(&n);

        fprintf(f, "usage: kevald serve [--config FILE] [--KEY VALUE ...]\n\n"
                   "Every setting is a flag (--key-name VALUE, --key-name=VALUE, or --flag for\n"
                   "booleans) and a config file line (key_name = value). Flags override the file.\n\n");
        for (size_t i = 0; i < n; i++) {
                char flag[64];

                snprintf(flag, sizeof(flag), "--%s", keys[i].key);
                for (char *p = flag + 2; *p; p++)
                        if (*p == '_')
                                *p = '-';
                fprintf(f, "  %-24s %s (default: %s)\n", flag, keys[i].help, keys[i].def ? keys[i].def : "unset");
        }
}

static int write_port_file(const char *path, int port)
{
        char tmp[4200];
        FILE *f;

        snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
        f = fopen(tmp, "we");
        if (!f)
                return -errno;
        fprintf(f, "%d\n", port);
        if (fclose(f) != 0 || rename(tmp, path) != 0) {
                int r = -errno;

                unlink(tmp);
                return r;
        }
        return 0;
}

static void on_ingest_commit(void *arg)
{
        dispatch_notify(arg);
}

static long cores(void)
{
        long n = sysconf(_SC_NPROCESSORS_ONLN);

        return n > 0 ? n : 1;
}

/*
 * Settings: the flags over the --config file, the log level (logging
 * starts here), the listen address into @host and *@port, the auth
 * decision into *@ret_auth_on (auth off on a non-loopback address needs
 * --insecure-no-auth), the host id.
 * Return: 0, or 2 for bad settings (said on stderr).
 */
static int check_settings(Config *cfg, int argc, char **argv, char *host, size_t hostlen, int *port,
                          bool *ret_auth_on)
{
        char err[512];
        LogLevel lvl;
        bool loopback, auth_on;
        int r;

        r = config_parse_args(cfg, argc - 1, argv + 1, err, sizeof(err));
        if (r != 0) {
                fprintf(stderr, "kevald serve: %s\n", err);
                return 2;
        }
        if (log_level_parse(cfg->log_level, &lvl) < 0) {
                fprintf(stderr, "kevald serve: --log-level must be error, warn, info or debug\n");
                return 2;
        }
        log_init("kevald", lvl);
        if (config_split_listen(cfg->listen, host, hostlen, port) != 0) {
                fprintf(stderr, "kevald serve: --listen '%s' is not HOST:PORT\n", cfg->listen);
                return 2;
        }
        loopback = config_host_is_loopback(host);
        auth_on = cfg->auth == CONFIG_AUTH_ON || (cfg->auth == CONFIG_AUTH_AUTO && !loopback);
        if (!auth_on && !loopback && !cfg->insecure_no_auth) {
                fprintf(stderr, "kevald serve: refusing to listen on '%s' with auth off; use --auth on "
                                "(tokens from `kevald token create`) or --insecure-no-auth\n", host);
                return 2;
        }
        if (cfg->host_id && store_set_host_id(cfg->host_id) < 0) {
                fprintf(stderr, "kevald serve: --host-id '%s' must be 1..%d characters of [A-Za-z0-9._-]\n",
                        cfg->host_id, LIMIT_HOST_ID_BYTES);
                return 2;
        }
        *ret_auth_on = auth_on;
        return 0;
}

/* The dispatcher's settings from @cfg, with the task library @lib, its
 * @baselines and the long-poll @waiters (all borrowed). */
static void dispatch_config(const Config *cfg, TaskLib *lib, Baselines *baselines, Waiters *waiters,
                            DispatchConfig *dc)
{
        dc->db_path = cfg->db;
        dc->tasks = lib;
        dc->baselines = baselines;
        dc->waiters = waiters;
        dc->libexec_dir = cfg->libexec ? cfg->libexec : paths_libexec_dir();
        dc->compile_workers = (int)cfg->compile_workers;
        dc->gpus = cfg->gpus;
        dc->max_attempts = (int)cfg->max_attempts;
        dc->lease_s = cfg->lease_s;
        dc->sandbox = cfg->sandbox;
        dc->arch = cfg->arch;
        dc->job_timeout_s = cfg->job_timeout_s;
        dc->compile_timeout_ms = (int)cfg->compile_timeout_ms;
        dc->compile_group = (int)cfg->compile_group;
        dc->launch_timeout_ms = (int)cfg->launch_timeout_ms;
        dc->launch_factor = cfg->launch_factor > 0 ? cfg->launch_factor : -1;
        dc->launch_floor_ms = (int)cfg->launch_floor_ms;
        dc->fault_grace_ms = cfg->fault_grace_ms > 0 ? (int)cfg->fault_grace_ms : -1;
        dc->gpu_workers_per_gpu = (int)cfg->gpu_workers_per_gpu;
        dc->no_fence = !cfg->fence;
        dc->no_prefetch = !cfg->gpu_prefetch;
        dc->compile_nice = (int)cfg->compile_nice;
        dc->torch_workers = (int)cfg->torch_workers;
        dc->torch_build_workers = (int)cfg->torch_build_workers;
        dc->torch_python = cfg->torch_python;
        dc->torch_build_timeout_ms = (int)(cfg->torch_build_timeout_s * 1000);
        dc->log_level = cfg->log_level;
}

/* The HTTP server's settings from @cfg, serving @api (borrowed) on @host:@port. */
static void http_config(const Config *cfg, Api *api, const char *host, int port, long threads,
                        HttpServerConfig *hc)
{
        hc->host = host;
        hc->port = port;
        hc->threads = (int)threads;
        hc->connection_limit = (int)cfg->connection_limit;
        hc->connection_timeout_s = (int)cfg->connection_timeout_s;
        hc->per_ip_connection_limit = (int)cfg->per_ip_connection_limit;
        hc->header_timeout_s = (int)cfg->header_timeout_s;
        hc->body_limit = (size_t)cfg->body_limit;
        hc->body_inflight_limit = (size_t)cfg->body_inflight_limit;
        hc->routes = api_routes(&hc->n_routes);
        hc->gate = api_gate;
        hc->app = api;
        hc->waiters = api->waiters;
        hc->metrics = api->metrics;
}

/*
 * The API's parts: the store's read pool (@threads connections unless
 * store_pool says), the long-poll waiters, the rate limiter, the metrics
 * and, with @auth_on, the token cache. Each is freed by the caller from
 * @api, whatever the outcome.
 * Return: 0, 1 (logged), or SERVE_EXIT_DB_UNREACHABLE.
 */
static int open_api(Api *api, const Config *cfg, bool auth_on, long threads)
{
        const char *const *route_names;
        size_t n_routes;
        int r;

        r = storepool_open(cfg->db, (int)(cfg->store_pool > 0 ? cfg->store_pool : threads), &api->pool);
        if (r != 0) {
                char *shown = store_path_redacted(cfg->db);
                log_error("serve: cannot open the store '%s': %s", shown ? shown : "?",
                          r == STORE_E_NEWER_DB ? "the database is newer than this kevald"
                          : r == -ENOTCONN      ? "PostgreSQL is unreachable (see above)"
                                                : strerror(-r));
                free(shown);
                return r == -ENOTCONN ? SERVE_EXIT_DB_UNREACHABLE : 1;
        }
        log_info("serve: store: %s, host id '%s'", store_path_is_pg(cfg->db) ? "postgresql" : "sqlite",
                 store_host_id());
        r = waiters_new(&api->waiters);
        if (r == 0)
                r = ratelimit_new(NULL, NULL, &api->limiter);
        route_names = api_route_names(&n_routes);
        if (r == 0)
                r = metrics_new(route_names, n_routes, &api->metrics);
        if (r == 0 && auth_on)
                r = auth_new(api->pool, cfg->auth_cache_s, &api->auth);
        if (r != 0) {
                log_error("serve: start-up failed: %s", strerror(-r));
                return 1;
        }
        return 0;
}

/*
 * The task library of @tasks_dir, its KernelBench index and its baselines,
 * each logged. Return: 0, or a negative errno (logged) when one cannot be
 * read at all; a task file or an index entry that is wrong is skipped.
 */
static int load_library(const char *tasks_dir, TaskLib **ret_lib, KbIndex **ret_kb, Baselines **ret_baselines)
{
        json_t *errors = NULL;
        int r = tasklib_load(tasks_dir, ret_lib, &errors);

        if (r < 0) {
                log_error("serve: cannot load the task library '%s': %s", tasks_dir, strerror(-r));
                return r;
        }
        if (json_array_size(errors) > 0)
                log_warn("serve: %zu task file(s) skipped (see above)", json_array_size(errors));
        log_info("serve: %zu tasks from '%s'", tasklib_count(*ret_lib), tasks_dir);
        json_decref(errors);
        errors = NULL;
        r = kbtasks_load(tasks_dir, ret_kb, &errors);
        if (r < 0) {
                log_error("serve: cannot load the KernelBench index of '%s': %s", tasks_dir, strerror(-r));
                return r;
        }
        for (size_t i = 0; i < json_array_size(errors); i++)
                log_warn("serve: %s: %s: %s (entry skipped)", jsonutil_str(json_array_get(errors, i), "file", ""),
                         jsonutil_str(json_array_get(errors, i), "pointer", ""),
                         jsonutil_str(json_array_get(errors, i), "message", ""));
        json_decref(errors);
        if (kbtasks_count(*ret_kb))
                log_info("serve: %zu KernelBench tasks", kbtasks_count(*ret_kb));
        r = baselines_load(tasks_dir, *ret_lib, ret_baselines, NULL);
        if (r < 0)
                log_error("serve: cannot load the baselines of '%s': %s", tasks_dir, strerror(-r));
        return r < 0 ? r : 0;
}

/* "<the SQLite store's folder>/@name" (new), or NULL for PostgreSQL, a store in the working
 * folder, or no memory. */
static char *beside_store(const char *db, const char *name)
{
        char *path = NULL;

        if (strncmp(db, "postgresql:", 11) == 0 || !strchr(db, '/'))
                return NULL;
        if (asprintf(&path, "%.*s/%s", (int)(strrchr(db, '/') - db), db, name) < 0)
                return NULL;
        return path;
}

/**
 * cmd_serve() - `kevald serve [flags]`
 * @argv: argv[0] is "serve"
 * Return: the exit status: 0 after a clean shutdown, 1 when a part fails
 * to start, 2 for bad settings, 3 (SERVE_EXIT_DB_UNREACHABLE) when the
 * PostgreSQL of --db cannot be reached at start-up.
 */
int cmd_serve(int argc, char **argv)
{
        Config cfg;
        Api api = { 0 };
        HttpServer *http = NULL;
        StoreWatch *watch = NULL;
        HttpServerConfig hc = { 0 };
        DispatchConfig dc = { 0 };
        TaskLib *lib = NULL;
        KbIndex *kb = NULL;
        char *ext_dir = NULL;
        Baselines *baselines = NULL;
        char host[256];
        const char *tasks_dir;
        sigset_t sigs;
        bool auth_on;
        int port = 0, bound = 0, r, rc = 1, sig = 0;
        long threads;

        config_init(&cfg);
        for (int i = 1; i < argc; i++)
                if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
                        usage(stdout);
                        config_free(&cfg);
                        return 0;
                }
        if ((rc = check_settings(&cfg, argc, argv, host, sizeof(host), &port, &auth_on)) != 0)
                goto out;
        rc = 1;
        threads = cfg.threads > 0 ? cfg.threads : 2 * cores();

        /* Every thread started from here on inherits the blocked signals. */
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGTERM);
        sigaddset(&sigs, SIGINT);
        pthread_sigmask(SIG_BLOCK, &sigs, NULL);
        signal(SIGPIPE, SIG_IGN);

        tasks_dir = cfg.tasks ? cfg.tasks : paths_default_tasks_dir();
        if (load_library(tasks_dir, &lib, &kb, &baselines) != 0)
                goto out;

        if ((r = open_api(&api, &cfg, auth_on, threads)) != 0) {
                rc = r;
                goto out;
        }
        api.cfg = &cfg;
        api.tasks = lib;
        api.kbtasks = kb;

        dispatch_config(&cfg, lib, baselines, api.waiters, &dc);
        dc.kbtasks = kb;
        /* the kernelbench build cache: beside a SQLite store unless set */
        if (cfg.torch_ext_dir)
                dc.torch_ext_dir = cfg.torch_ext_dir;
        else
                dc.torch_ext_dir = ext_dir = beside_store(cfg.db, "torch-ext");
        r = dispatch_start(&dc, &api.dispatcher);
        if (r != 0) {
                log_error("serve: cannot start the dispatcher: %s", r < 0 ? strerror(-r) : "see above");
                goto out;
        }
        /* Other hosts' commits (PostgreSQL): wake the dispatcher and the long-polls here. */
        r = storewatch_start(cfg.db, api.dispatcher, api.waiters, cfg.lease_s, &watch);
        if (r != 0) {
                log_error("serve: cannot listen for the fleet's notifications: %s", strerror(-r));
                goto out;
        }
        r = ingest_start(cfg.db, on_ingest_commit, api.dispatcher, &api.ingest);
        if (r != 0) {
                log_error("serve: cannot start the ingest writer: %s", r < 0 ? strerror(-r) : "store refused");
                goto out;
        }

        http_config(&cfg, &api, host, port, threads, &hc);
        r = http_server_start(&hc, &http, &bound);
        if (r != 0)
                goto out;
        log_info("serve: auth %s, %ld HTTP threads, body limit %lld bytes, batch limit %lld", auth_on ? "on" : "off",
                 threads, (long long)cfg.body_limit, (long long)cfg.batch_limit);
        fprintf(stderr, strchr(host, ':') ? "kevald: listening on http://[%s]:%d\n" : "kevald: listening on http://%s:%d\n",
                host, bound);
        fflush(stderr);
        if (cfg.port_file) {
                r = write_port_file(cfg.port_file, bound);
                if (r < 0) {
                        log_error("serve: cannot write the port file '%s': %s", cfg.port_file, strerror(-r));
                        goto out;
                }
        }

        for (;;) {
                r = sigwait(&sigs, &sig);
                if (r == 0 && (sig == SIGTERM || sig == SIGINT))
                        break;
        }
        log_info("serve: %s: shutting down (grace %.0f s)", sig == SIGTERM ? "SIGTERM" : "SIGINT",
                 cfg.shutdown_grace_s);
        atomic_store(&api.stopping, true);
        http_server_quiesce(http);
        waiters_shutdown(api.waiters);
        if (http_server_drain(http, 5.0) > 0)
                log_warn("serve: requests still in flight after 5 s; closing them");
        rc = 0;
out:
        storewatch_stop(watch);
        if (api.dispatcher) {
                dispatch_stop(api.dispatcher, rc == 0 ? cfg.shutdown_grace_s : 0);
        }
        if (api.ingest)
                ingest_stop(api.ingest);
        http_server_stop(http);
        ingest_free(api.ingest);
        dispatch_free(api.dispatcher);
        auth_free(api.auth);
        metrics_free(api.metrics);
        ratelimit_free(api.limiter);
        waiters_free(api.waiters);
        if (api.pool)
                storepool_close(api.pool);
        tasklib_free(lib);
        kbtasks_free(kb);
        free(ext_dir);
        baselines_free(baselines);
        if (rc == 0)
                log_info("serve: stopped");
        config_free(&cfg);
        return rc;
}
