/*
 * proctab - the table of long-running child processes (like httpd's
 * procs[]): role, executable, sandbox profile, restart policy. The
 * dispatcher starts every worker from here; nothing else spawns processes.
 */
#pragma once

#include <stdbool.h>

/* PROC_TORCH_BUILD and PROC_TORCH_RUN are kevald-torch (language "kernelbench",
 * docs/kernelbench.md), a Python program run as `<torch_python> <libexec>/kevald-torch
 * --role build|run`: build workers beside the compile workers, run workers pinned to a GPU
 * whose slot they share with the kevald-gpu workers. */
typedef enum {
        PROC_COMPILE = 0,
        PROC_GPU = 1,
        PROC_TORCH_BUILD = 2,
        PROC_TORCH_RUN = 3,
        PROC_ROLE_MAX = 4
} ProcRole;

typedef struct ProcSpec {
        ProcRole role;
        const char *name;        /* "compile", "gpu": log and metrics label */
        const char *executable;  /* file name, looked up in the libexec folder */
        const char *profile;     /* sandbox profile the worker applies to itself */
        double backoff_min_s;    /* first restart delay after a failure */
        double backoff_max_s;    /* cap of the exponential backoff */
        int failures_to_degrade; /* consecutive start failures before "failed" in /readyz */
        bool sticky_restart;     /* restarted after every sticky error (GPU) */
        bool gpu;                /* pinned to one GPU, whose slot it shares with the others of that GPU */
        const char *role_arg;    /* kevald-torch's --role, or NULL (a C worker) */
        double hello_s;          /* the time it has from its start to its HELLO */
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
/**
 * proctab_env_torch() - proctab_env() for a kevald-torch worker, and what it adds: KEVALD_LOG_LEVEL
 * (@log_level), KEVALD_TORCH_EXT_ROOT (@ext_root: the build cache's folder) and KEVALD_CONFINE_LIB
 * (@libexec/libkevald-confine.so), and KEVALD_TORCH_PYCACHE (@pycache, the bytecode folder) unless
 * @pycache is NULL; for PROC_TORCH_RUN the GPU as for PROC_GPU (CUDA_VISIBLE_DEVICES,
 * KEVALD_GPU_INDEX 0), without the kevald-gpu worker's memory settings.
 * Return: 0 or -ENOMEM.
 */
int proctab_env_torch(ProcRole role, int gpu_index, const char *log_level, const char *libexec,
                      const char *ext_root, const char *pycache, char ***ret_env);
void proctab_env_free(char **env);

/* Count GPUs this host exposes (/dev/nvidiaN nodes); 0 when none. */
int proctab_count_gpus(void);
