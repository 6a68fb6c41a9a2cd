/*
 * config - the settings of `kevald serve`: one table of keys, each with its
 * type, default, bounds and meaning. The same key is a line of the config
 * file (`key = value`, `#` comments) and a flag (`--key-with-dashes VALUE`,
 * `--key=VALUE`, or `--flag` alone for booleans); flags override the file.
 * docs/configuration.md lists the table; test-config.c keeps them in step.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
        CONFIG_E_UNKNOWN = 1,  /* no such key or flag */
        CONFIG_E_INVALID = 2,  /* bad value: wrong type or out of bounds */
        CONFIG_E_SYNTAX = 3,   /* config file line is not `key = value` */
};

typedef enum { CONFIG_AUTH_AUTO = 0, CONFIG_AUTH_ON = 1, CONFIG_AUTH_OFF = 2 } ConfigAuth;

typedef struct Config {
        char *listen;              /* HOST:PORT */
        char *db;                  /* SQLite file, or postgresql:// URI (store_open()) */
        char *host_id;             /* NULL: the hostname */
        char *tasks;               /* NULL: <source or install>/tasks */
        char *libexec;             /* NULL: the folder of /proc/self/exe */
        char *gpus;                /* auto | none | 0,1 */
        char *port_file;
        char *log_level;
        char *arch;
        int auth;                  /* ConfigAuth */
        bool insecure_no_auth;
        bool sandbox;
        bool gpu_prefetch;         /* a busy GPU worker gets its next job in its pipe */
        bool fence;               /* fenced correctness runs (worker/compile/fence.h) */
        int64_t compile_workers;
        int64_t threads;
        int64_t connection_limit;
        int64_t connection_timeout_s;
        int64_t per_ip_connection_limit;  /* 0: none */
        int64_t header_timeout_s;
        int64_t body_limit;
        int64_t body_inflight_limit;
        int64_t batch_limit;
        int64_t max_queued;
        int64_t max_queued_per_token;
        int64_t max_attempts;
        int64_t store_pool;
        double rate;
        double burst;
        double retry_after_s;
        double shutdown_grace_s;
        double lease_s;
        double job_timeout_s;
        int64_t compile_timeout_ms;
        int64_t compile_group;
        int64_t launch_timeout_ms;
        double launch_factor;
        int64_t launch_floor_ms;
        int64_t fault_grace_ms;
        int64_t gpu_workers_per_gpu;
        int64_t compile_nice;
        double auth_cache_s;
        int64_t torch_workers;     /* kevald-torch run workers per GPU; 0: no kernelbench */
        int64_t torch_build_workers; /* kevald-torch build workers; 0: the default (dispatch.c) */
        char *torch_python;
        double torch_build_timeout_s;
        char *torch_ext_dir;       /* NULL: beside the store (serve.c) */
} Config;

/* Description of one setting, for docs and tests. */
typedef struct ConfigKey {
        const char *key;
        const char *type;          /* "string", "integer", "number", "bool", "size", "auth" */
        const char *def;           /* default, as text; NULL: unset */
        const char *help;
} ConfigKey;

/* Fill @cfg with the defaults. Free with config_free(). */
void config_init(Config *cfg);
void config_free(Config *cfg);

/**
 * config_set() - set one key from its text value
 * @key:  config-file spelling (underscores); a flag's dashes are accepted too
 * @err:  on failure, a message naming the key and the reason
 * Return: 0, CONFIG_E_UNKNOWN, or CONFIG_E_INVALID (@cfg unchanged).
 */
int config_set(Config *cfg, const char *key, const char *value, char *err, size_t errlen);

/**
 * config_load_file() - apply every `key = value` line of @path
 * Return: 0, CONFIG_E_SYNTAX, CONFIG_E_UNKNOWN, CONFIG_E_INVALID (@err says
 * "path:line: ..."), or a negative errno if @path cannot be read.
 */
int config_load_file(Config *cfg, const char *path, char *err, size_t errlen);

/**
 * config_parse_args() - apply `--config FILE` first, then every other flag
 * @argv: the arguments after the subcommand name; borrowed
 * Return: as config_load_file(); CONFIG_E_UNKNOWN also for a stray argument.
 */
int config_parse_args(Config *cfg, int argc, char **argv, char *err, size_t errlen);

/* The key table, @ret_n entries; static storage. */
const ConfigKey *config_keys(size_t *ret_n);

/*
 * Split "HOST:PORT" (or "[v6]:PORT") into @host (hostlen bytes) and @port.
 * Return: 0 or CONFIG_E_INVALID.
 */
int config_split_listen(const char *listen, char *host, size_t hostlen, int *ret_port);
/* Does @host resolve (as the listener resolves it) to a loopback address (127.0.0.0/8, ::1)? */
bool config_host_is_loopback(const char *host);
