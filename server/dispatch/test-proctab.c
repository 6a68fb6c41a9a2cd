/*
 * test-proctab - the scrubbed environment of the workers (server/dispatch/proctab.h):
 * what is passed, to which role, and what is not.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/dispatch/proctab.h"
#include "common/testcheck.h"

static bool has(char **env, const char *entry)
{
        for (char **e = env; *e; e++)
                if (strcmp(*e, entry) == 0)
                        return true;
        return false;
}

static bool has_name(char **env, const char *name)
{
        size_t n = strlen(name);

        for (char **e = env; *e; e++)
                if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
                        return true;
        return false;
}

int main(void)
{
        char **env;

        setenv("KEVALD_DEVMEM_POOL_BYTES", "268435456", 1);
        setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1", 1);
        setenv("KEVALD_TEST_SECRET", "x", 1);
        CHECK(proctab_env(PROC_GPU, 3, &env) == 0);
        CHECK(has(env, "CUDA_VISIBLE_DEVICES=3") && has(env, "KEVALD_GPU_INDEX=0"));
        CHECK(has(env, "KEVALD_DEVMEM_POOL_BYTES=268435456") && has(env, "CUDA_DEVICE_MAX_CONNECTIONS=1"));
        CHECK(has(env, "PATH=/usr/bin:/bin") && !has_name(env, "KEVALD_TEST_SECRET") && !has_name(env, "HOME"));
        proctab_env_free(env);
        CHECK(proctab_env(PROC_COMPILE, 0, &env) == 0);
        CHECK(!has_name(env, "KEVALD_DEVMEM_POOL_BYTES") && !has_name(env, "CUDA_VISIBLE_DEVICES") &&
              !has_name(env, "CUDA_DEVICE_MAX_CONNECTIONS"));
        proctab_env_free(env);
        /* kevald-torch: the run role is pinned like a GPU worker, without the kevald-gpu settings */
        CHECK(proctab_env_torch(PROC_TORCH_RUN, 2, "debug", "/lx", "/ext", "/ext.pyc", &env) == 0);
        CHECK(has(env, "CUDA_VISIBLE_DEVICES=2") && has(env, "KEVALD_GPU_INDEX=0") &&
              has(env, "KEVALD_LOG_LEVEL=debug"));
        CHECK(has(env, "KEVALD_TORCH_EXT_ROOT=/ext") && has(env, "KEVALD_CONFINE_LIB=/lx/libkevald-confine.so"));
        CHECK(!has_name(env, "KEVALD_DEVMEM_POOL_BYTES") && !has_name(env, "KEVALD_TEST_SECRET"));
        CHECK(has(env, "KEVALD_TORCH_PYCACHE=/ext.pyc"));
        proctab_env_free(env);
        CHECK(proctab_env_torch(PROC_TORCH_BUILD, 0, NULL, "/lx", "/ext", NULL, &env) == 0);
        CHECK(!has_name(env, "CUDA_VISIBLE_DEVICES") && !has_name(env, "KEVALD_GPU_INDEX") &&
              has(env, "KEVALD_LOG_LEVEL=info") && has(env, "KEVALD_TORCH_EXT_ROOT=/ext"));
        CHECK(!has_name(env, "KEVALD_TORCH_PYCACHE"));
        CHECK(proctab_get(PROC_TORCH_RUN)->gpu && !proctab_get(PROC_TORCH_BUILD)->gpu &&
              !strcmp(proctab_get(PROC_TORCH_RUN)->role_arg, "run"));
        proctab_env_free(env);
        unsetenv("KEVALD_DEVMEM_POOL_BYTES");
        unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
        CHECK(proctab_env(PROC_GPU, 0, &env) == 0);
        CHECK(!has_name(env, "KEVALD_DEVMEM_POOL_BYTES") && !has_name(env, "CUDA_DEVICE_MAX_CONNECTIONS"));
        proctab_env_free(env);
        if (failures)
                fprintf(stderr, "test-proctab: %d failure(s)\n", failures);
        return failures ? 1 : 0;
}
