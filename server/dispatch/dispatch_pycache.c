/*
 * dispatch_pycache - the kevald-torch workers' bytecode folder,
 * <torch_ext_root>.pyc (KEVALD_TORCH_PYCACHE, docs/kernelbench.md).
 *
 * Every kevald-torch worker is a fresh Python that imports torch, and the
 * workers may not write bytecode (PYTHONDONTWRITEBYTECODE, and a sandbox
 * that refuses the installation): where the installation ships without
 * it (876 of the 1,114 modules of `import torch` on the GPU host), each
 * worker compiles torch's Python again, seconds of every start. So the
 * server, when it runs as root, makes this folder (root's, 0755, never
 * a link) and has `kevald-torch --role pycache` fill it, as root and
 * unconfined: it imports torch, its extension builder, the worker's own
 * modules and Triton with sys.pycache_prefix set there. That is the
 * host's installed code; nothing of a submitter's runs in it. The workers
 * read the folder (sys.pycache_prefix, after they dropped root; a Landlock
 * read tree) and never write it: a folder they could write would let one
 * job's code plant bytecode that the next job's worker runs, so a worker
 * refuses one that is not root's or that others may write, and a server
 * that is not root makes none.
 *
 * The fill runs beside the workers' first start, not before it: the first
 * workers import as before, later starts read what it left (Python writes
 * each file under a temporary name and renames it, so a reader finds no
 * bytecode or whole bytecode). A thread of its own spawns it and waits for
 * it; dispatch stop kills it if it still runs.
 *
 * Part of the dispatcher: see dispatch.c for the theory of operation and
 * dispatch_int.h for what its files share.
 */
#include "server/dispatch/dispatch_int.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

/* @name as the workers' PATH (/usr/bin:/bin) finds it, or @name itself when it is a path. */
static int find_program(const char *name, char out[PATH_MAX])
{
        static const char *const dirs[] = { "/usr/bin", "/bin" };

        if (strchr(name, '/')) {
                snprintf(out, PATH_MAX, "%s", name);
                return 0;
        }
        for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
                snprintf(out, PATH_MAX, "%s/%s", dirs[i], name);
                if (access(out, X_OK) == 0)
                        return 0;
        }
        return -ENOENT;
}

/* Whether @st is a folder of root's that no other user can write, or only with the sticky bit when
 * @sticky_ok (so that no other user can put something of their own in its place or in it). */
static bool root_only(const struct stat *st, bool sticky_ok)
{
        return S_ISDIR(st->st_mode) && st->st_uid == 0 &&
               (!(st->st_mode & 022) || (sticky_ok && (st->st_mode & S_ISVTX)));
}

/* The folder at @path, made if missing: root's, a folder (not a link), writable by root alone, below
 * folders that only root can change (a shared one only with the sticky bit, as /tmp). */
static int pycache_folder(const char *path)
{
        char up[PATH_MAX];
        struct stat st;
        char *slash;

        snprintf(up, sizeof(up), "%s", path);
        while ((slash = strrchr(up, '/'))) {
                slash[slash == up] = '\0'; /* "/a" -> "/" */
                if (lstat(up, &st) < 0)
                        return -errno;
                if (!root_only(&st, true))
                        return -EPERM;
                if (strcmp(up, "/") == 0)
                        break;
        }
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
                return -errno;
        if (lstat(path, &st) < 0)
                return -errno;
        return root_only(&st, false) ? 0 : -EPERM;
}

static void *pycache_wait(void *arg)
{
        Dispatcher *d = arg;
        uint64_t t0 = uv_hrtime();
        pid_t pid = d->pycache_pid;
        siginfo_t si;
        int status = 0, r;

        /* it ends: left a zombie (WNOWAIT), so that torch_pycache_stop() never signals a pid that
         * another process has since taken; reaped once that can no longer happen */
        do
                r = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT);
        while (r < 0 && errno == EINTR);
        pthread_mutex_lock(&d->status_lock);
        d->pycache_pid = 0;
        pthread_mutex_unlock(&d->status_lock);
        do
                r = waitpid(pid, &status, 0);
        while (r < 0 && errno == EINTR);
        if (r < 0)
                log_warn("dispatch: waiting for the bytecode fill: %s", strerror(errno));
        else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                log_info("dispatch: kevald-torch's bytecode is in '%s' (%.1f s): workers started from now on read it",
                         d->torch_pycache, (double)(uv_hrtime() - t0) / 1e9);
        else
                log_warn("dispatch: filling kevald-torch's bytecode folder '%s' failed (%s %d): workers compile "
                         "torch's Python themselves", d->torch_pycache, WIFSIGNALED(status) ? "signal" : "status",
                         WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        return NULL;
}

void torch_pycache_start(Dispatcher *d)
{
        char python[PATH_MAX], script[PATH_MAX], **env = NULL;
        char *args[5];
        posix_spawn_file_actions_t fa;
        pid_t pid;
        int r;

        if (geteuid() != 0) {
                log_info("dispatch: no bytecode folder for kevald-torch: the server is not root, and workers of its "
                         "own user could write one");
                return;
        }
        if (asprintf(&d->torch_pycache, "%s.pyc", d->torch_ext_root) < 0) {
                d->torch_pycache = NULL;
                return;
        }
        r = pycache_folder(d->torch_pycache);
        if (r == 0)
                r = find_program(d->cfg.torch_python, python);
        if (r == 0)
                r = proctab_env_torch(PROC_TORCH_BUILD, 0, d->cfg.log_level, d->libexec_dir, d->torch_ext_root,
                                      d->torch_pycache, &env);
        if (r < 0) {
                log_warn("dispatch: no bytecode folder for kevald-torch ('%s'): %s", d->torch_pycache,
                         r == -EPERM ? "it, or a folder above it, is not root's alone" : strerror(-r));
                free(d->torch_pycache);
                d->torch_pycache = NULL;
                return;
        }
        snprintf(script, sizeof(script), "%s/kevald-torch", d->libexec_dir);
        args[0] = python;
        args[1] = script;
        args[2] = "--role";
        args[3] = "pycache";
        args[4] = NULL;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addchdir_np(&fa, "/");
        r = posix_spawn(&pid, python, &fa, NULL, args, env);
        posix_spawn_file_actions_destroy(&fa);
        proctab_env_free(env);
        if (r != 0) {
                log_warn("dispatch: starting %s --role pycache: %s", script, strerror(r));
                return; /* the folder stays: workers read what an earlier fill left */
        }
        d->pycache_pid = pid;
        if (pthread_create(&d->pycache_thread, NULL, pycache_wait, d) != 0) {
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                d->pycache_pid = 0;
                return;
        }
        d->pycache_thread_on = true;
}

void torch_pycache_stop(Dispatcher *d)
{
        if (!d->pycache_thread_on)
                return;
        pthread_mutex_lock(&d->status_lock);
        if (d->pycache_pid > 0)
                kill(d->pycache_pid, SIGKILL);
        pthread_mutex_unlock(&d->status_lock);
        pthread_join(d->pycache_thread, NULL);
        d->pycache_thread_on = false;
}
