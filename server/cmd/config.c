/*
 * config - the settings table of `kevald serve` and its three sources:
 * built-in defaults, the config file, the command line (in that order, the
 * later one winning). Every key lives in keys[] below with its bounds, so a
 * value is checked the same way wherever it comes from. Strings in Config
 * are owned by it and freed by config_free().
 */
#include "server/cmd/config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/limits.h"

typedef enum { T_STR, T_INT, T_NUM, T_BOOL, T_SIZE, T_AUTH } KeyType;

typedef struct KeyDef {
        ConfigKey pub;
        KeyType type;
        size_t offset;
        double min, max;
} KeyDef;

#define O(f) offsetof(Config, f)
#define STR(k, f, d, h) { { k, "string", d, h }, T_STR, O(f), 0, 0 }
#define INT(k, f, d, lo, hi, h) { { k, "integer", d, h }, T_INT, O(f), lo, hi }
#define NUM(k, f, d, lo, hi, h) { { k, "number", d, h }, T_NUM, O(f), lo, hi }
#define BOOL(k, f, d, h) { { k, "bool", d, h }, T_BOOL, O(f), 0, 1 }
#define SIZE(k, f, d, lo, hi, h) { { k, "size", d, h }, T_SIZE, O(f), lo, hi }
#define XSTR(x) STR_(x)
#define STR_(x) #x

static const KeyDef keys[] = {
        STR("listen", listen, "127.0.0.1:8080",
            "address to listen on, HOST:PORT ([v6]:PORT); port 0 picks a free port"),
        STR("db", db, "kevald.db",
            "the store: a SQLite file (created if missing), or PostgreSQL for a fleet: a postgresql:// URI, "
            "or postgresql: for the PG* environment"),
        STR("host_id", host_id, NULL,
            "this host's id in a fleet (leases, the hosts table): [A-Za-z0-9._-], at most 63; unset: the hostname"),
        STR("tasks", tasks, NULL, "task library folder; unset: <source tree>/tasks or <prefix>/share/kevald/tasks"),
        STR("libexec", libexec, NULL,
            "folder holding kevald-compile and kevald-gpu; unset: beside the kevald binary"),
        STR("gpus", gpus, "auto", "GPUs to use: auto, none, or a list such as 0,1"),
        STR("port_file", port_file, NULL, "write the bound port number to this file once listening"),
        STR("log_level", log_level, "info", "error, warn, info or debug"),
        STR("arch", arch, "sm_90a", "compile target when no GPU says otherwise"),
        { { "auth", "auth", "auto",
            "bearer-token auth: auto (off on loopback, on elsewhere), on, off" },
          T_AUTH, O(auth), 0, 0 },
        BOOL("insecure_no_auth", insecure_no_auth, "false",
             "allow auth off on a non-loopback address"),
        BOOL("sandbox", sandbox, "true", "confine the workers (off only for the overhead benchmark)"),
        INT("compile_workers", compile_workers, "0", 0, 256, "compile worker processes; 0: one per core"),
        INT("threads", threads, "0", 0, 1024, "HTTP thread pool size; 0: two per core"),
        INT("connection_limit", connection_limit, "4096", 1, 1000000, "open HTTP connections at most"),
        INT("connection_timeout_s", connection_timeout_s, "60", 1, 3600,
            "idle HTTP connection timeout in seconds"),
        INT("per_ip_connection_limit", per_ip_connection_limit, XSTR(LIMIT_PER_IP_CONNECTIONS_DEFAULT), 0, 1000000,
            "open HTTP connections from one client address at most; 0: no per-address limit"),
        INT("header_timeout_s", header_timeout_s, XSTR(LIMIT_HEADER_TIMEOUT_S_DEFAULT), 1, 3600,
            "a request's whole header must arrive within this many seconds (of the connection opening, or "
            "on a kept-alive connection of connection_timeout_s after the previous answer); 408 and close beyond"),
        SIZE("body_limit", body_limit, "32M", 1024, LIMIT_BODY_BYTES_MAX,
             "largest request body in bytes (K, M, G suffixes); 413 beyond"),
        SIZE("body_inflight_limit", body_inflight_limit, "128M", 1 << 20, 16ull << 30,
             "request body bytes held by all requests at once; a body that would pass it is answered 503"),
        INT("batch_limit", batch_limit, XSTR(LIMIT_BATCH_DEFAULT), 1, LIMIT_BATCH_MAX,
            "most submissions in one POST"),
        INT("max_queued", max_queued, "100000", 1, 100000000,
            "most unfinished submissions in all; 503 beyond"),
        INT("max_queued_per_token", max_queued_per_token, "0", 0, 100000000,
            "default per-token unfinished quota (0: only max_queued); 429 beyond"),
        INT("max_attempts", max_attempts, "3", 1, 100, "attempts per job before internal_error"),
        INT("store_pool", store_pool, "0", 0, 1024,
            "read connections to the store; 0: one per HTTP thread"),
        NUM("rate", rate, "0", 0, 1e9,
            "default per-token request rate per second (0: unlimited)"),
        NUM("burst", burst, "0", 0, 1e9, "default per-token burst (0: twice the rate, at least 1)"),
        NUM("retry_after_s", retry_after_s, "1", 1, 3600,
            "Retry-After seconds for 503 queue full and 429 quota answers"),
        NUM("shutdown_grace_s", shutdown_grace_s, "30", 0, 3600,
            "on SIGTERM, how long running jobs may finish before they are re-queued"),
        NUM("lease_s", lease_s, "30", 1, 3600, "job lease length; heartbeats every third of it"),
        NUM("job_timeout_s", job_timeout_s, "120", 1, 3600, "watchdog per GPU job"),
        INT("compile_timeout_ms", compile_timeout_ms, XSTR(LIMIT_COMPILE_WALL_MS), 100,
            LIMIT_COMPILE_WALL_MS, "wall-clock limit of one compile; the worker is killed past it"),
        INT("compile_group", compile_group, "8", 1, 8,
            "compile-only candidates queued beyond the idle compile workers go to a worker this many "
            "at a time, merged into one NVRTC program where each gets its result alone (1: never)"),
        INT("launch_timeout_ms", launch_timeout_ms, "10000", 100, 600000,
            "ceiling of one plan execution on the GPU; a kernel still running past it is a timeout"),
        NUM("launch_factor", launch_factor, "1000", 0, 1e6,
            "per shape set, a plan execution may take this many times the reference's own time "
            "(at least launch_floor_ms, at most launch_timeout_ms) before it counts as hung; "
            "a slower kernel that completes is judged and timed; 0: always the ceiling"),
        INT("launch_floor_ms", launch_floor_ms, XSTR(LIMIT_LAUNCH_FLOOR_MS_DEFAULT), 1, 600000,
            "lower bound of the derived launch limit"),
        INT("fault_grace_ms", fault_grace_ms, XSTR(LIMIT_FAULT_GRACE_MS_DEFAULT), 0, 60000,
            "after a launch limit passes, how long to wait for a fault the driver reports late "
            "before the kernel counts as hung (runtime_error, not timeout)"),
        INT("compile_nice", compile_nice, "10", 0, 19,
            "how much nicer than the server the compile worker processes run (at most 19), so that a burst of "
            "compiles on every core does not starve the GPU workers and the dispatcher (0: the server's own)"),
        BOOL("gpu_prefetch", gpu_prefetch, "true",
             "send a busy GPU worker its next job, so that it starts it the moment it answers the one in "
             "flight (server/dispatch/dispatch_run.c, run_send())"),
        BOOL("fence", fence, "true",
             "run the correctness phase on the candidate's fenced build, whose bad memory accesses, traps "
             "and asserts stop with a precise report and keep the GPU worker's context (worker/compile/fence.h)"),
        INT("gpu_workers_per_gpu", gpu_workers_per_gpu, "3", 1, 8,
            "GPU worker processes per GPU, one running a job at a time; the others stand by warm, "
            "so a restart after a sticky error or a timeout costs no GPU time"),
        INT("torch_workers", torch_workers, "0", 0, 8,
            "kevald-torch run workers per GPU (language \"kernelbench\"; docs/kernelbench.md), one running at "
            "a time and sharing the GPU with the kevald-gpu workers; with more than 0, torch_build_workers "
            "kevald-torch build workers too. 0: kernelbench submissions are refused (503)"),
        INT("torch_build_workers", torch_build_workers, "0", 0, 128,
            "kevald-torch build worker processes (with torch_workers > 0): how many load_inline builds run at "
            "once, niced as compile workers are (compile_nice); 0: half as many again as compile_workers, at "
            "most one per 3 GiB of memory"),
        STR("torch_python", torch_python, "python3",
            "the Python interpreter (with PyTorch) that runs <libexec>/kevald-torch"),
        NUM("torch_build_timeout_s", torch_build_timeout_s, "300", 1, 600,
            "wall-clock limit of one kernelbench build (the ModelNew module's import, load_inline's compile)"),
        STR("torch_ext_dir", torch_ext_dir, NULL,
            "the kernelbench build cache (one folder per source, torch version and arch); "
            "unset: torch-ext beside a SQLite store, ./torch-ext with PostgreSQL"),
        NUM("auth_cache_s", auth_cache_s, "1", 0, 60,
            "how long a token lookup is cached (a revoke takes effect within this)"),
};

#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

_Static_assert(LIMIT_BODY_BYTES_DEFAULT == 32u << 20, "body_limit's default above says 32M");
_Static_assert(LIMIT_BODY_INFLIGHT_BYTES_DEFAULT == 128u << 20, "body_inflight_limit's default above says 128M");

/**
 * config_keys() - the public view of the key table; static storage.
 */
const ConfigKey *config_keys(size_t *ret_n)
{
        static ConfigKey pub[N_KEYS];

        for (size_t i = 0; i < N_KEYS; i++)
                pub[i] = keys[i].pub;
        *ret_n = N_KEYS;
        return pub;
}

static const KeyDef *find_key(const char *key)
{
        char norm[64];
        size_t n = strlen(key);

        if (n >= sizeof(norm))
                return NULL;
        for (size_t i = 0; i <= n; i++)
                norm[i] = key[i] == '-' ? '_' : key[i];
        for (size_t i = 0; i < N_KEYS; i++)
                if (strcmp(keys[i].pub.key, norm) == 0)
                        return &keys[i];
        return NULL;
}

static int parse_int(const char *s, int64_t *ret)
{
        char *end;
        long long v;

        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno || end == s || *end)
                return -1;
        *ret = v;
        return 0;
}

static int parse_size(const char *s, int64_t *ret)
{
        char *end;
        unsigned long long v;
        int shift = 0;

        if (*s == '-')
                return -1;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || end == s)
                return -1;
        switch (toupper((unsigned char)*end)) {
        case 0: break;
        case 'K': shift = 10; end++; break;
        case 'M': shift = 20; end++; break;
        case 'G': shift = 30; end++; break;
        default: return -1;
        }
        if (*end == 'i' || *end == 'B')
                end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
        if (*end || v > (UINT64_MAX >> 2) >> shift)
                return -1;
        *ret = (int64_t)(v << shift);
        return 0;
}

static int parse_bool(const char *s, bool *ret)
{
        if (!strcmp(s, "true") || !strcmp(s, "on") || !strcmp(s, "yes") || !strcmp(s, "1"))
                *ret = true;
        else if (!strcmp(s, "false") || !strcmp(s, "off") || !strcmp(s, "no") || !strcmp(s, "0"))
                *ret = false;
        else
                return -1;
        return 0;
}

/**
 * config_set() - see config.h.
 */
int config_set(Config *cfg, const char *key, const char *value, char *err, size_t errlen)
{
        const KeyDef *k = find_key(key);
        char *p = (char *)cfg;
        int64_t iv;
        double dv;
        char *end;
        bool bv;

        if (!k) {
                snprintf(err, errlen, "unknown setting '%s'", key);
                return CONFIG_E_UNKNOWN;
        }
        switch (k->type) {
        case T_STR: {
                char *dup;

                if (strlen(value) > 4096)
                        goto invalid;
                dup = strdup(value);
                if (!dup)
                        return -ENOMEM;
                free(*(char **)(p + k->offset));
                *(char **)(p + k->offset) = dup;
                return 0;
        }
        case T_INT:
        case T_SIZE:
                if ((k->type == T_INT ? parse_int(value, &iv) : parse_size(value, &iv)) < 0)
                        goto invalid;
                if ((double)iv < k->min || (double)iv > k->max)
                        goto bounds;
                *(int64_t *)(p + k->offset) = iv;
                return 0;
        case T_NUM:
                errno = 0;
                dv = strtod(value, &end);
                if (errno || end == value || *end || !isfinite(dv))
                        goto invalid;
                if (dv < k->min || dv > k->max)
                        goto bounds;
                *(double *)(p + k->offset) = dv;
                return 0;
        case T_BOOL:
                if (parse_bool(value, &bv) < 0)
                        goto invalid;
                *(bool *)(p + k->offset) = bv;
                return 0;
        case T_AUTH:
                if (!strcmp(value, "auto"))
                        cfg->auth = CONFIG_AUTH_AUTO;
                else if (parse_bool(value, &bv) == 0)
                        cfg->auth = bv ? CONFIG_AUTH_ON : CONFIG_AUTH_OFF;
                else
                        goto invalid;
                return 0;
        }
invalid:
        snprintf(err, errlen, "%s: invalid %s value '%.64s'", k->pub.key, k->pub.type, value);
        return CONFIG_E_INVALID;
bounds:
        snprintf(err, errlen, "%s: value '%.64s' is outside [%.17g, %.17g]", k->pub.key, value,
                 k->min, k->max);
        return CONFIG_E_INVALID;
}

/**
 * config_init() - every key to its default. Free with config_free().
 */
void config_init(Config *cfg)
{
        char err[256];

        memset(cfg, 0, sizeof(*cfg));
        for (size_t i = 0; i < N_KEYS; i++)
                if (keys[i].pub.def)
                        (void)config_set(cfg, keys[i].pub.key, keys[i].pub.def, err, sizeof(err));
}

/**
 * config_free() - free the strings @cfg owns; NULL ok.
 */
void config_free(Config *cfg)
{
        if (!cfg)
                return;
        for (size_t i = 0; i < N_KEYS; i++)
                if (keys[i].type == T_STR) {
                        char **s = (char **)((char *)cfg + keys[i].offset);

                        free(*s);
                        *s = NULL;
                }
}

static char *trim(char *s)
{
        char *e;

        while (isspace((unsigned char)*s))
                s++;
        e = s + strlen(s);
        while (e > s && isspace((unsigned char)e[-1]))
                *--e = 0;
        return s;
}

/**
 * config_load_file() - see config.h.
 */
int config_load_file(Config *cfg, const char *path, char *err, size_t errlen)
{
        FILE *f;
        char line[8192];
        char msg[256];
        int lineno = 0;
        int r = 0;

        f = fopen(path, "re");
        if (!f) {
                r = -errno;
                snprintf(err, errlen, "%s: %s", path, strerror(errno));
                return r;
        }
        while (fgets(line, sizeof(line), f)) {
                char *s, *eq, *hash;

                lineno++;
                if (!strchr(line, '\n') && !feof(f)) {
                        snprintf(err, errlen, "%s:%d: line too long", path, lineno);
                        r = CONFIG_E_SYNTAX;
                        goto out;
                }
                hash = strchr(line, '#');
                if (hash)
                        *hash = 0;
                s = trim(line);
                if (!*s)
                        continue;
                eq = strchr(s, '=');
                if (!eq) {
                        snprintf(err, errlen, "%s:%d: expected 'key = value'", path, lineno);
                        r = CONFIG_E_SYNTAX;
                        goto out;
                }
                *eq = 0;
                r = config_set(cfg, trim(s), trim(eq + 1), msg, sizeof(msg));
                if (r != 0) {
                        snprintf(err, errlen, "%s:%d: %s", path, lineno, msg);
                        goto out;
                }
        }
out:
        fclose(f);
        return r;
}

/**
 * config_parse_args() - see config.h.
 */
int config_parse_args(Config *cfg, int argc, char **argv, char *err, size_t errlen)
{
        char name[64];
        char msg[256];
        int r;

        /* The file first, so that flags override it wherever they stand. */
        for (int i = 0; i < argc; i++) {
                const char *file = NULL;

                if (!strcmp(argv[i], "--config") && i + 1 < argc)
                        file = argv[i + 1];
                else if (!strncmp(argv[i], "--config=", 9))
                        file = argv[i] + 9;
                if (file) {
                        r = config_load_file(cfg, file, err, errlen);
                        if (r != 0)
                                return r;
                }
        }
        for (int i = 0; i < argc; i++) {
                const char *arg = argv[i], *value, *eq;
                const KeyDef *k;
                size_t n;

                if (strncmp(arg, "--", 2) != 0) {
                        snprintf(err, errlen, "unexpected argument '%s'", arg);
                        return CONFIG_E_UNKNOWN;
                }
                arg += 2;
                eq = strchr(arg, '=');
                n = eq ? (size_t)(eq - arg) : strlen(arg);
                if (n >= sizeof(name)) {
                        snprintf(err, errlen, "unknown flag '--%.64s'", arg);
                        return CONFIG_E_UNKNOWN;
                }
                memcpy(name, arg, n);
                name[n] = 0;
                if (!strcmp(name, "config")) {
                        if (!eq)
                                i++;
                        continue;
                }
                k = find_key(name);
                if (!k) {
                        snprintf(err, errlen, "unknown flag '--%s'", name);
                        return CONFIG_E_UNKNOWN;
                }
                if (eq)
                        value = eq + 1;
                else if (k->type == T_BOOL)
                        value = "true";
                else if (i + 1 < argc)
                        value = argv[++i];
                else {
                        snprintf(err, errlen, "flag '--%s' needs a value", name);
                        return CONFIG_E_INVALID;
                }
                r = config_set(cfg, name, value, msg, sizeof(msg));
                if (r != 0) {
                        snprintf(err, errlen, "--%s", msg);
                        return r;
                }
        }
        return 0;
}

/**
 * config_split_listen() - see config.h.
 */
int config_split_listen(const char *listen, char *host, size_t hostlen, int *ret_port)
{
        const char *colon, *h = listen;
        size_t hl;
        int64_t port;

        if (listen[0] == '[') {
                const char *close = strchr(listen, ']');

                if (!close || close[1] != ':')
                        return CONFIG_E_INVALID;
                h = listen + 1;
                hl = (size_t)(close - h);
                colon = close + 1;
        } else {
                colon = strrchr(listen, ':');
                if (!colon)
                        return CONFIG_E_INVALID;
                hl = (size_t)(colon - listen);
        }
        if (hl == 0 || hl >= hostlen || parse_int(colon + 1, &port) < 0 || port < 0 || port > 65535)
                return CONFIG_E_INVALID;
        memcpy(host, h, hl);
        host[hl] = 0;
        *ret_port = (int)port;
        return 0;
}

/**
 * config_host_is_loopback() - does @host resolve to a loopback address?
 * Resolved the way the listener resolves it (getaddrinfo(), the first
 * answer), so the answer is about the address actually bound: 127.0.0.0/8,
 * ::1 or ::ffff:127.0.0.0/104. A name that does not resolve is not loopback.
 */
bool config_host_is_loopback(const char *host)
{
        struct addrinfo hints = { 0 }, *ai = NULL;
        bool loopback = false;

        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_PASSIVE;
        if (getaddrinfo(host, NULL, &hints, &ai) != 0 || !ai)
                return false;
        if (ai->ai_family == AF_INET) {
                const struct sockaddr_in *in = (const struct sockaddr_in *)ai->ai_addr;

                loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
        } else if (ai->ai_family == AF_INET6) {
                const struct in6_addr *a = &((const struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;

                loopback = IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
        }
        freeaddrinfo(ai);
        return loopback;
}
