/*
 * proc - process-level layers: parent-death signal, dumpability, descriptor
 * hygiene, an empty working directory, the unprivileged identity, and
 * no_new_privs.
 *
 * Parent death: PR_SET_PDEATHSIG(SIGKILL), then getppid() is compared with
 * KEVALD_PARENT_PID (set by the supervisor): if the parent died before the
 * signal was armed, the worker must exit. The kernel clears the setting (and
 * dumpability) when the effective uid or gid changes, so sandbox.c applies
 * both again after the uid layer. Note that the signal follows the parent
 * *thread*: the supervisor must spawn workers from a thread that lives as
 * long as it does (the dispatcher's loop thread).
 *
 * Working directory: /tmp/kevald-empty-<euid>, an empty folder of mode 0555
 * created once and shared by the workers of one user; after the uid drop and
 * under Landlock nothing can be listed or created in it, so relative paths
 * (`#include "x.h"`) find nothing. (A removed directory would be tidier, but
 * getcwd() then fails and NVRTC reads its uninitialised path buffer: seen
 * with AddressSanitizer.) If /tmp is not usable, the worker goes to "/",
 * where Landlock still denies everything, and says so.
 *
 * Identity: a worker started as root drops to nobody/nogroup (65534) with no
 * supplementary groups, which also clears every capability. The GPU profile
 * drops only when every /dev/nvidia* node is open to others (the usual 0666);
 * otherwise it keeps root and reports why. The torch run profile follows the
 * GPU rule, and keeps root when nobody may not read one of its read trees (a
 * Python installed under /root): dropping would only make the worker fail to
 * import torch. The torch build profile never keeps root (it runs
 * submitters' code and compilers): it drops when nobody may write its write
 * tree (the artifact root; owned by 65534 or open to others) and read its
 * read trees, and otherwise fails (-EPERM) with the reason in the report, so
 * the worker takes no job (the server gives the artifact root to 65534 when
 * it runs as root). A worker that is not root but sits
 * in the user namespace that netns.c created drops the capabilities that
 * namespace gave it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/layers.h"

/* The effective capability set of the calling process (first 64 bits). */
static int read_caps(unsigned long long *ret_eff)
{
        struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
        struct __user_cap_data_struct d[2];

        if (syscall(SYS_capget, &h, d) < 0)
                return -errno;
        *ret_eff = (unsigned long long)d[0].effective | ((unsigned long long)d[1].effective << 32);
        return 0;
}

static int drop_caps(void)
{
        struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
        struct __user_cap_data_struct d[2];

        memset(d, 0, sizeof(d));
        if (syscall(SYS_capset, &h, d) < 0)
                return -errno;
        return 0;
}

/*
 * sandbox_proc_apply_pdeathsig() - SIGKILL when the parent dies, and a check
 * that it has not died already.
 * @layers: report object; borrowed
 *
 * Return: 0, -ESRCH when the parent is already gone (the caller must exit),
 * or another negative errno.
 */
int sandbox_proc_apply_pdeathsig(json_t *layers)
{
        const char *want = getenv("KEVALD_PARENT_PID");
        pid_t ppid;
        int r = 0;

        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) {
                r = -errno;
                sandbox_report_add(layers, "pdeathsig", false, "prctl: %s", strerror(errno));
                goto out;
        }
        ppid = getppid();
        if (want && *want) {
                char *end;
                long expect = strtol(want, &end, 10);
                if (*end || expect <= 0) {
                        r = -EINVAL;
                        sandbox_report_add(layers, "pdeathsig", false,
                                           "KEVALD_PARENT_PID is not a pid: \"%.32s\"", want);
                        goto out;
                }
                if ((long)ppid != expect) {
                        r = -ESRCH;
                        sandbox_report_add(layers, "pdeathsig", false,
                                           "parent %ld is gone (parent is now %ld)", expect,
                                           (long)ppid);
                        goto out;
                }
                sandbox_report_add(layers, "pdeathsig", true, "SIGKILL when parent %ld exits",
                                   expect);
        } else {
                sandbox_report_add(layers, "pdeathsig", true,
                                   "SIGKILL when parent %ld exits (no KEVALD_PARENT_PID to check)",
                                   (long)ppid);
        }
out:
        return r;
}

/*
 * sandbox_proc_apply_dumpable() - no core dumps, no ptrace by same-uid peers,
 * /proc/self owned by root.
 * Return: 0 or a negative errno.
 */
int sandbox_proc_apply_dumpable(json_t *layers)
{
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
                sandbox_report_add(layers, "dumpable", false, "prctl: %s", strerror(errno));
                return -errno;
        }
        sandbox_report_add(layers, "dumpable", true,
                           "PR_SET_DUMPABLE 0: no core dump, no ptrace attach by peers");
        return 0;
}

static int cmp_int(const void *a, const void *b)
{
        int x = *(const int *)a, y = *(const int *)b;
        return (x > y) - (x < y);
}

static int close_from(unsigned lo, unsigned hi)
{
        if (lo > hi)
                return 0;
#ifdef SYS_close_range
        if (syscall(SYS_close_range, lo, hi, 0) == 0)
                return 0;
        if (errno != ENOSYS)
                return -errno;
#endif
        /* Old kernel: walk the descriptors that exist. */
        DIR *d = opendir("/proc/self/fd");
        if (!d)
                return -errno;
        int dfd = dirfd(d);
        struct dirent *e;
        while ((e = readdir(d))) {
                long fd = strtol(e->d_name, NULL, 10);
                if (e->d_name[0] == '.' || fd == dfd || fd < (long)lo || fd > (long)hi)
                        continue;
                close((int)fd);
        }
        closedir(d);
        return 0;
}

/*
 * sandbox_proc_apply_fds() - close every descriptor above 2 that is not in
 * @keep_fds.
 * @keep_fds: descriptors to keep (values <= 2 are ignored); borrowed
 * @n_keep:   entries in @keep_fds (at most 64)
 *
 * Return: 0, -EINVAL for too many @keep_fds, or another negative errno.
 */
int sandbox_proc_apply_fds(const int *keep_fds, int n_keep, json_t *layers)
{
        int keep[64], n = 0;
        unsigned next = 3;
        int r = 0;

        if (n_keep < 0 || n_keep > 64) {
                r = -EINVAL;
                goto out;
        }
        for (int i = 0; i < n_keep; i++)
                if (keep_fds[i] > 2)
                        keep[n++] = keep_fds[i];
        qsort(keep, (size_t)n, sizeof(keep[0]), cmp_int);
        for (int i = 0; i < n; i++) {
                r = close_from(next, (unsigned)keep[i] - 1);
                if (r < 0)
                        goto out;
                next = (unsigned)keep[i] + 1;
        }
        r = close_from(next, ~0u);
        if (r < 0)
                goto out;
        sandbox_report_add(layers, "fds", true, "closed every descriptor above 2 but %d kept", n);
out:
        if (r < 0)
                sandbox_report_add(layers, "fds", false, "closing descriptors: %s", strerror(-r));
        return r;
}

/* Nothing but "." and ".." in the directory open at @fd. */
static int dir_is_empty(int fd)
{
        int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        DIR *d;
        struct dirent *e;
        int n = 0;

        if (dup_fd < 0)
                return -errno;
        d = fdopendir(dup_fd);
        if (!d) {
                close(dup_fd);
                return -errno;
        }
        while ((e = readdir(d)))
                if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                        n++;
        closedir(d);
        return n == 0;
}

/*
 * sandbox_proc_apply_cwd() - make the working directory an empty folder that
 * the worker cannot write: /tmp/kevald-empty-<euid>, mode 0555, owned by the
 * supervisor's user, shared by every worker of that user (so nothing piles
 * up in /tmp). A folder of that name that is not ours, is a symlink, is
 * writable or is not empty is not used.
 * Return: 0 (active, or reported with the fallback to "/"), or a negative
 * errno when not even "/" could be entered.
 */
int sandbox_proc_apply_cwd(json_t *layers)
{
        char path[64], why[160] = "";
        struct stat st;
        int fd = -1, r = 0;

        snprintf(path, sizeof(path), "/tmp/kevald-empty-%u", (unsigned)geteuid());
        if (mkdir(path, 0555) < 0 && errno != EEXIST) {
                snprintf(why, sizeof(why), "mkdir %s: %s", path, strerror(errno));
                goto fallback;
        }
        fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0) {
                snprintf(why, sizeof(why), "open %s: %s", path, strerror(errno));
                goto fallback;
        }
        if (st.st_uid != geteuid()) {
                snprintf(why, sizeof(why), "%s belongs to uid %u", path, (unsigned)st.st_uid);
                goto fallback;
        }
        if ((st.st_mode & 07777) != 0555 && fchmod(fd, 0555) < 0) {
                snprintf(why, sizeof(why), "chmod %s: %s", path, strerror(errno));
                goto fallback;
        }
        if (dir_is_empty(fd) != 1) {
                snprintf(why, sizeof(why), "%s is not empty", path);
                goto fallback;
        }
        if (fchdir(fd) < 0) {
                snprintf(why, sizeof(why), "chdir %s: %s", path, strerror(errno));
                goto fallback;
        }
        sandbox_report_add(layers, "cwd", true, "%s: empty, mode 0555, owner uid %u", path,
                           (unsigned)st.st_uid);
        goto out;
fallback:
        if (chdir("/") < 0) {
                r = -errno;
                sandbox_report_add(layers, "cwd", false, "chdir(\"/\"): %s", strerror(errno));
                goto out;
        }
        sandbox_report_add(layers, "cwd", false, "%s; working directory is \"/\"", why);
out:
        if (fd >= 0)
                close(fd);
        return r;
}

/* True when every /dev/nvidia* node can be read and written by others. */
static bool nvidia_nodes_open_to_all(char *why, size_t size)
{
        glob_t g;
        bool ok = true;

        if (glob("/dev/nvidia*", 0, NULL, &g) != 0)
                return true;   /* no nodes here: nothing the drop could break */
        for (size_t i = 0; i < g.gl_pathc; i++) {
                struct stat st;
                if (stat(g.gl_pathv[i], &st) < 0 || !S_ISCHR(st.st_mode))
                        continue;
                if ((st.st_mode & (S_IROTH | S_IWOTH)) != (S_IROTH | S_IWOTH)) {
                        snprintf(why, size, "%s has mode %04o", g.gl_pathv[i],
                                 (unsigned)(st.st_mode & 07777));
                        ok = false;
                        break;
                }
        }
        globfree(&g);
        return ok;
}

/*
 * sandbox_proc_apply_uid() - run as an unprivileged identity with no
 * capabilities.
 * @profile: the GPU profile keeps root when the device nodes need it
 *
 * Return: 0 (dropped, or reported why not), or a negative errno when a drop
 * was attempted and failed (the worker must not go on half-privileged).
 */
int sandbox_proc_apply_uid(SandboxProfile profile, json_t *layers)
{
        return sandbox_proc_apply_uid_paths(profile, NULL, layers);
}

static bool nobody_may_read(const char *path, char *why, size_t size);

/* Whether uid/gid 65534 may reach @dir and create files in it. */
static bool nobody_may_write(const char *dir, char *why, size_t size)
{
        struct stat st;

        if (!dir || stat(dir, &st) < 0) {
                snprintf(why, size, "its write tree %s%s%s cannot be examined", dir ? "\"" : "",
                         dir ? dir : "(none)", dir ? "\"" : "");
                return false;
        }
        if ((st.st_uid == SANDBOX_NOBODY_UID && (st.st_mode & S_IWUSR)) ||
            (st.st_gid == SANDBOX_NOBODY_GID && (st.st_mode & S_IWGRP)) || (st.st_mode & S_IWOTH))
                return nobody_may_read(dir, why, size);
        snprintf(why, size, "nobody may not write its write tree \"%s\" (owner %u, mode %o)", dir,
                 (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
        return false;
}

/* Whether uid/gid 65534 may reach @path (search every folder on the way) and
 * read it. */
static bool nobody_may_read(const char *path, char *why, size_t size)
{
        char buf[4096];
        struct stat st;
        size_t n = strlen(path);

        if (n == 0 || n >= sizeof(buf) || path[0] != '/')
                return true;   /* not a tree: the layer skips it */
        memcpy(buf, path, n + 1);
        for (size_t i = 1; i <= n; i++) {
                if (buf[i] != '/' && buf[i] != '\0')
                        continue;
                char c = buf[i];
                buf[i] = '\0';
                if (stat(buf, &st) == 0) {
                        mode_t need = c == '\0' ? (S_ISDIR(st.st_mode) ? 05 : 04) : 01;
                        bool ok = (st.st_mode & need) == need ||
                                  (st.st_uid == SANDBOX_NOBODY_UID && ((st.st_mode >> 6) & need) == need);
                        if (!ok) {
                                snprintf(why, size, "nobody may not read \"%.80s\" (on the way to \"%.80s\": owner %u, "
                                         "mode %o)", buf, path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
                                return false;
                        }
                }
                buf[i] = c;
        }
        return true;
}

/*
 * sandbox_proc_apply_uid_paths() - sandbox_proc_apply_uid() for a profile
 * with extra trees: the torch build profile fails rather than keep root when
 * nobody may not write @paths->write or read one of @paths->read; the torch
 * run profile keeps root as the GPU profile does, or when nobody may not read
 * a read tree.
 * @paths: borrowed; may be NULL
 * Return: as sandbox_proc_apply_uid(); -EPERM when the torch build profile
 * would have kept root.
 */
int sandbox_proc_apply_uid_paths(SandboxProfile profile, const SandboxPaths *paths, json_t *layers)
{
        unsigned long long eff = 0;
        char why[256];
        int r = 0;

        if (getuid() != 0 && geteuid() != 0) {
                /* Capabilities may come from the user namespace of netns.c. */
                r = read_caps(&eff);
                if (r == 0 && eff != 0)
                        r = drop_caps();
                if (r == 0)
                        r = read_caps(&eff);
                if (r < 0 || eff != 0) {
                        r = r < 0 ? r : -EPERM;
                        sandbox_report_add(layers, "uid", false, "dropping capabilities: %s",
                                           strerror(-r));
                        goto out;
                }
                sandbox_report_add(layers, "uid", true, "unprivileged uid %u gid %u, no capabilities",
                                   (unsigned)getuid(), (unsigned)getgid());
                goto out;
        }
        if (profile == SANDBOX_PROFILE_TORCH_BUILD &&
            !nobody_may_write(paths ? paths->write : NULL, why, sizeof(why))) {
                r = -EPERM;
                sandbox_report_add(layers, "uid", false,
                                   "refused to build as root: %s (give the artifact root to uid %u:%u)", why,
                                   SANDBOX_NOBODY_UID, SANDBOX_NOBODY_GID);
                goto out;
        }
        for (int i = 0; paths && (profile == SANDBOX_PROFILE_TORCH_BUILD || profile == SANDBOX_PROFILE_TORCH_RUN) &&
                        i < paths->n_read; i++) {
                if (!nobody_may_read(paths->read[i], why, sizeof(why))) {
                        bool build = profile == SANDBOX_PROFILE_TORCH_BUILD;
                        r = build ? -EPERM : 0;
                        sandbox_report_add(layers, "uid", false,
                                           "%s: %s (Python and its packages must be readable by uid %u to drop)",
                                           build ? "refused to build as root" : "kept root", why,
                                           SANDBOX_NOBODY_UID);
                        goto out;
                }
        }
        if ((profile == SANDBOX_PROFILE_GPU || profile == SANDBOX_PROFILE_TORCH_RUN) &&
            !nvidia_nodes_open_to_all(why, sizeof(why))) {
                sandbox_report_add(layers, "uid", false,
                                   "kept root: %s (the GPU needs it; make the nodes 0666 to drop)",
                                   why);
                goto out;
        }
        if (setgroups(0, NULL) < 0 ||
            setresgid(SANDBOX_NOBODY_GID, SANDBOX_NOBODY_GID, SANDBOX_NOBODY_GID) < 0 ||
            setresuid(SANDBOX_NOBODY_UID, SANDBOX_NOBODY_UID, SANDBOX_NOBODY_UID) < 0) {
                r = -errno;
                sandbox_report_add(layers, "uid", false, "dropping root: %s", strerror(errno));
                goto out;
        }
        r = read_caps(&eff);
        if (r < 0 || eff != 0 || getuid() == 0) {
                r = r < 0 ? r : -EPERM;
                sandbox_report_add(layers, "uid", false, "root was not fully dropped");
                goto out;
        }
        sandbox_report_add(layers, "uid", true,
                           "root dropped to uid %u gid %u, no groups, no capabilities",
                           SANDBOX_NOBODY_UID, SANDBOX_NOBODY_GID);
out:
        return r;
}

/*
 * sandbox_proc_apply_nnp() - PR_SET_NO_NEW_PRIVS: no exec can gain
 * privileges (set-uid, file capabilities); required by Landlock and seccomp
 * for an unprivileged process.
 * Return: 0 or a negative errno.
 */
int sandbox_proc_apply_nnp(json_t *layers)
{
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
                sandbox_report_add(layers, "no_new_privs", false, "prctl: %s", strerror(errno));
                return -errno;
        }
        sandbox_report_add(layers, "no_new_privs", true, "PR_SET_NO_NEW_PRIVS 1");
        return 0;
}

/* The number of threads of the calling process, or a negative errno. */
int sandbox_proc_count_threads(void)
{
        DIR *d = opendir("/proc/self/task");
        struct dirent *e;
        int n = 0;

        if (!d)
                return -errno;
        while ((e = readdir(d)))
                if (e->d_name[0] != '.')
                        n++;
        closedir(d);
        return n;
}
