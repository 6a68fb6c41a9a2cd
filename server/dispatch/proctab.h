/*
 * proctab - the table of long-running child processes (like httpd's
 * procs[]): role, executable, sandbox profile, restart policy. The
 * dispatcher starts every worker from here; nothing else spawns processes.
 */
#pragma once

#include <stdbool.h>

typedef enum { PROC_COMPILE = 0, PROC_GPU = 1, PROC_ROLE_MAX = 2 } ProcRole;

typedef struct ProcSpec {
        ProcRole role;
        const char *name;        /* "compile", "gpu": log and metrics label */
        const char *executable;  /* file name, looked up in the libexec folder */
        const char *profile;     /* sandbox profile the worker applies to itself */
        double backoff_min_s;    /* first restart delay after a failure */
        double backoff_max_s;    /* cap of the exponential backoff */
        int failures_to_degrade; /* consecutive start failures before "failed" in /readyz */
        bool sticky_restart;     /* restarted after every sticky error (GPU) */
} ProcSpec;

const ProcSpec *proctab_get(ProcRole role);

/**
 * proctab_env() - the scrubbed environment of a child
 * @role:      which worker
 * @gpu_index: for PROC_GPU, the device it is pinned to
 * @ret_env:   NULL-terminated array of new strings; free with proctab_env_free()
 * Only PATH, LD_LIBRARY_PATH (when the supervisor has one: the CUDA libraries),
 * KEVALD_CUDA_HOME, KEVALD_PARENT_PID and, for GPUs, CUDA_VISIBLE_DEVICES,
 * KEVALD_GPU_INDEX, and KEVALD_DEVMEM_POOL_BYTES and CUDA_DEVICE_MAX_CONNECTIONS
 * (when the supervisor has them) are passed.
 * Return: 0 or -ENOMEM.
 */
int proctab_env(ProcRole role, int gpu_index, char ***ret_env);
void proctab_env_free(char **env);

/* Count GPUs this host exposes (/dev/nvidiaN nodes); 0 when none. */
int proctab_count_gpus(void);
