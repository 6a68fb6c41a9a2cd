/* paths - see paths.h. Results are computed once and cached (not thread-safe before first use from main). */
#include "server/cmd/paths.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef KEVALD_SOURCE_DIR
#define KEVALD_SOURCE_DIR ""
#endif

static int exe_dir(char *out, size_t len)
{
        char buf[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
        char *slash;

        if (n <= 0)
                return -1;
        buf[n] = '\0';
        slash = strrchr(buf, '/');
        if (!slash)
                return -1;
        *slash = '\0';
        if ((size_t)(slash - buf) >= len)
                return -1;
        memcpy(out, buf, (size_t)(slash - buf) + 1);
        return 0;
}

static int exists(const char *dir, const char *name)
{
        char p[PATH_MAX + 64];
        struct stat st;

        snprintf(p, sizeof(p), "%s/%s", dir, name);
        return stat(p, &st) == 0;
}

const char *paths_libexec_dir(void)
{
        static char dir[PATH_MAX];
        char base[PATH_MAX - 32];
        const char *env = getenv("KEVALD_LIBEXEC");

        if (dir[0])
                return dir;
        if (env && *env) {
                snprintf(dir, sizeof(dir), "%s", env);
                return dir;
        }
        if (exe_dir(base, sizeof(base)) < 0) {
                snprintf(dir, sizeof(dir), ".");
                return dir;
        }
        snprintf(dir, sizeof(dir), "%s", base);
        if (exists(dir, "kevald-compile"))
                return dir;
        snprintf(dir, sizeof(dir), "%s/../worker", base);
        if (exists(dir, "kevald-compile"))
                return dir;
        snprintf(dir, sizeof(dir), "%s/../libexec/kevald", base);
        return dir;
}

const char *paths_default_tasks_dir(void)
{
        static char dir[PATH_MAX];
        char base[PATH_MAX - 32];
        const char *env = getenv("KEVALD_TASKS");

        if (dir[0])
                return dir;
        if (env && *env) {
                snprintf(dir, sizeof(dir), "%s", env);
                return dir;
        }
        if (exe_dir(base, sizeof(base)) == 0 && exists(base, "../meson-private") && KEVALD_SOURCE_DIR[0]) {
                snprintf(dir, sizeof(dir), "%s/tasks", KEVALD_SOURCE_DIR);
                return dir;
        }
        if (exe_dir(base, sizeof(base)) == 0)
                snprintf(dir, sizeof(dir), "%s/../share/kevald/tasks", base);
        else
                snprintf(dir, sizeof(dir), "tasks");
        return dir;
}
