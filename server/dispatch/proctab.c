/*
 * proctab - see proctab.h. The environment of a child is built from
 * scratch, never inherited: a submission must not see the operator's
 * variables (tokens, paths), and NVRTC/CUDA must not pick up settings from
 * it (CUDA_CACHE_PATH, NVRTC options from the environment).
 */
#include "server/dispatch/proctab.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const ProcSpec proc_table[PROC_ROLE_MAX] = {
        [PROC_COMPILE] = { .role = PROC_COMPILE, .name = "compile", .executable = "kevald-compile",
                           .profile = "compile", .backoff_min_s = 0.05, .backoff_max_s = 30,
                           .failures_to_degrade = 5, .sticky_restart = false, .hello_s = 30 },
        [PROC_GPU] = { .role = PROC_GPU, .name = "gpu", .executable = "kevald-gpu", .profile = "gpu",
                       .backoff_min_s = 0.05, .backoff_max_s = 60, .failures_to_degrade = 5,
                       .sticky_restart = true, .gpu = true, .hello_s = 60 },
        [PROC_TORCH_BUILD] = { .role = PROC_TORCH_BUILD, .name = "torch-build", .executable = "kevald-torch",
                               .profile = "torch-build", .backoff_min_s = 0.5, .backoff_max_s = 60,
                               .failures_to_degrade = 5, .sticky_restart = false, .role_arg = "build",
                               .hello_s = 120 },
        [PROC_TORCH_RUN] = { .role = PROC_TORCH_RUN, .name = "torch-run", .executable = "kevald-torch",
                             .profile = "torch-run", .backoff_min_s = 0.5, .backoff_max_s = 60,
                             .failures_to_degrade = 5, .sticky_restart = true, .gpu = true, .role_arg = "run",
                             .hello_s = 120 },
};

const ProcSpec *proctab_get(ProcRole role)
{
        return (role >= 0 && role < PROC_ROLE_MAX) ? &proc_table[role] : NULL;
}

void proctab_env_free(char **env)
{
        if (!env)
                return;
        for (char **e = env; *e; e++)
                free(*e);
        free(env);
}

int proctab_env(ProcRole role, int gpu_index, char ***ret_env)
{
        const char *cuda = getenv("KEVALD_CUDA_HOME");
        const char *ld = getenv("LD_LIBRARY_PATH");
        const char *budget = getenv("KEVALD_DEVMEM_POOL_BYTES");
        const char *conns = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
        char **env = calloc(12, sizeof(char *)); /* at most 9 entries and the NULL */
        int n = 0;

        if (!env)
                return -ENOMEM;
        if (asprintf(&env[n++], "PATH=/usr/bin:/bin") < 0)
                goto fail;
        if (asprintf(&env[n++], "KEVALD_CUDA_HOME=%s", cuda ? cuda : "/usr/local/cuda") < 0)
                goto fail;
        if (asprintf(&env[n++], "KEVALD_PARENT_PID=%d", (int)getpid()) < 0)
                goto fail;
        if (ld && asprintf(&env[n++], "LD_LIBRARY_PATH=%s", ld) < 0)
                goto fail;
        if (role == PROC_GPU || role == PROC_TORCH_RUN) {
                if (asprintf(&env[n++], "CUDA_DEVICE_ORDER=PCI_BUS_ID") < 0)
                        goto fail;
                if (asprintf(&env[n++], "CUDA_VISIBLE_DEVICES=%d", gpu_index) < 0)
                        goto fail;
                /* Pinned through CUDA_VISIBLE_DEVICES, the worker's device is 0. */
                if (asprintf(&env[n++], "KEVALD_GPU_INDEX=0") < 0)
                        goto fail;
        }
        if (role == PROC_GPU) {
                /* The worker's device-memory budget (worker/gpu/devmem.h), for operators and benchmarks. */
                if (budget && asprintf(&env[n++], "KEVALD_DEVMEM_POOL_BYTES=%s", budget) < 0)
                        goto fail;
                if (conns && asprintf(&env[n++], "CUDA_DEVICE_MAX_CONNECTIONS=%s", conns) < 0)
                        goto fail;
        }
        env[n] = NULL;
        *ret_env = env;
        return 0;
fail:
        env[n > 0 ? n - 1 : 0] = NULL;
        proctab_env_free(env);
        return -ENOMEM;
}

int proctab_env_torch(ProcRole role, int gpu_index, const char *log_level, const char *libexec,
                      const char *ext_root, const char *pycache, char ***ret_env)
{
        char **env = NULL, **grown;
        size_t n = 0;
        int r = proctab_env(role, gpu_index, &env);

        if (r < 0)
                return r;
        while (env[n])
                n++;
        grown = realloc(env, (n + 5) * sizeof(*env));
        if (!grown)
                goto fail;
        env = grown;
        env[n] = NULL;
        if (asprintf(&env[n], "KEVALD_LOG_LEVEL=%s", log_level ? log_level : "info") < 0)
                goto fail;
        env[++n] = NULL;
        if (asprintf(&env[n], "KEVALD_TORCH_EXT_ROOT=%s", ext_root ? ext_root : "") < 0)
                goto fail;
        env[++n] = NULL;
        if (asprintf(&env[n], "KEVALD_CONFINE_LIB=%s/libkevald-confine.so", libexec ? libexec : ".") < 0)
                goto fail;
        env[++n] = NULL;
        if (pycache) {
                if (asprintf(&env[n], "KEVALD_TORCH_PYCACHE=%s", pycache) < 0)
                        goto fail;
                env[++n] = NULL;
        }
        *ret_env = env;
        return 0;
fail:
        env[n] = NULL;
        proctab_env_free(env);
        return -ENOMEM;
}

int proctab_count_gpus(void)
{
        DIR *d = opendir("/dev");
        struct dirent *e;
        int n = 0;

        if (!d)
                return 0;
        while ((e = readdir(d))) {
                const char *p = e->d_name;
                if (strncmp(p, "nvidia", 6) != 0 || p[6] < '0' || p[6] > '9')
                        continue;
                p += 6;
                while (*p >= '0' && *p <= '9')
                        p++;
                if (*p == '\0')
                        n++;
        }
        closedir(d);
        return n;
}
