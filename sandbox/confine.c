/*
 * confine - libkevald-confine.so: the sandbox (sandbox.h) and a frame
 * watchdog behind a small C ABI for kevald-torch, the Python worker, which
 * loads this library with ctypes (no Python module of ours is compiled).
 *
 * Theory of operation. kevald-torch calls, in this order:
 *   kevald_confine_profile("torch-run")   the profile's number
 *   kevald_confine_enter()                sandbox_enter_paths(), single-threaded,
 *                                         before it imports torch
 *   kevald_confine_watchdog_start(fd)     the watchdog thread (below)
 *   kevald_confine_lock()                 sandbox_lock() once CUDA is up (run
 *                                         role) or the toolchain has run once
 *                                         (build role)
 *   kevald_confine_narrow(build_dir)      build role, in the child it forks for
 *                                         a job, before the job's module runs:
 *                                         sandbox_narrow() with the trees given
 *                                         to kevald_confine_enter() (kept here)
 *                                         and the job's folder as the one write
 *                                         tree
 * and writes every frame through kevald_confine_send(). A build worker is its
 * descendants' subreaper (set by kevald_confine_enter()): after a job,
 * kevald_confine_kill_descendants() kills what the job's module left
 * running, orphans included, and so does the watchdog armed with kill_tree
 * (the "subreaper" entry of the report says whether the kernel took it).
 * The run role calls kevald_confine_blame(1) before each call into the
 * candidate and kevald_confine_blame(0) after (sandbox_blame_candidate()): a
 * system call its filter forbids, made meanwhile, is the candidate's.
 * The report of every layer (sandbox_report_add()'s object) accumulates in
 * this library between
 * the calls; each call copies all of it, as JSON text, into the caller's
 * buffer, also when a layer failed, so the HELLO can say which one.
 *
 * The watchdog is C, not a Python thread, because a candidate's extension
 * can spin in C with the interpreter's lock held, where no Python thread
 * runs again. Before a job, the worker arms it with the job's deadline and
 * the job's timeout RESULT, already framed; past the deadline the thread
 * writes that frame and ends the process with WORKER_EXIT_TIMEOUT. One mutex
 * covers every frame write and the disarming, so exactly one RESULT per JOB
 * goes out: the worker's (sent with @disarm) or the watchdog's.
 *
 * Every function returns 0 (or a count) or a negative errno; none exits but
 * the watchdog. Not thread-safe before kevald_confine_watchdog_start().
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/layers.h"
#include "sandbox/sandbox.h"
#include "worker/exitcode.h"

/* The largest timeout frame the watchdog keeps: a header and a small RESULT. */
#define CONFINE_FRAME_MAX (64u << 10)
/* Bytes of one path list given to kevald_confine_enter(). */
#define CONFINE_PATHS_BYTES (64u << 10)

int kevald_confine_profile(const char *name);
int kevald_confine_enter(int profile, const char *read_paths, const char *exec_paths,
                         const char *write_path, const int *keep_fds, int n_keep, char *report,
                         size_t len);
int kevald_confine_lock(int profile, char *report, size_t len);
int kevald_confine_narrow(const char *write_path, char *report, size_t len);
int kevald_confine_watchdog_start(int fd);
int kevald_confine_watchdog_arm(const void *frame, size_t len, long long deadline_ms, int kill_tree);
int kevald_confine_send(int fd, const void *buf, size_t len, int disarm);
int kevald_confine_kill_descendants(void);
int kevald_confine_blame(int on);

static SandboxReport report_all;

/* What kevald_confine_enter() applied, for kevald_confine_narrow(): the
 * profile (-1: not entered) and its read and exec trees, split in place. */
static struct {
        int profile;
        char *rcopy, *ecopy;
        const char *rd[SANDBOX_PATHS_MAX], *ex[SANDBOX_PATHS_MAX];
        int n_read, n_exec;
} entered = {.profile = -1};

static struct {
        pthread_mutex_t mu;
        pthread_cond_t cv;
        bool started, armed, kill_tree;
        int fd;
        struct timespec deadline;   /* CLOCK_MONOTONIC */
        unsigned char *frame;
        size_t frame_len;
} dog = {.mu = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

/**
 * kevald_confine_profile() - the number of a profile by name
 * @name: "torch-build", "torch-run" or "none"; borrowed
 * Return: the SandboxProfile value, or -EINVAL for another name.
 */
int kevald_confine_profile(const char *name)
{
        static const SandboxProfile known[] = {SANDBOX_PROFILE_TORCH_BUILD, SANDBOX_PROFILE_TORCH_RUN,
                                               SANDBOX_PROFILE_NONE};

        for (size_t i = 0; name && i < sizeof(known) / sizeof(known[0]); i++)
                if (strcmp(name, sandbox_profile_name(known[i])) == 0)
                        return (int)known[i];
        return -EINVAL;
}

/* The report so far as JSON text in @buf (NUL-terminated); -ENOSPC when it does not fit. */
static int copy_report(char *buf, size_t len)
{
        char *text;
        size_t n;
        int r = 0;

        if (!buf || len == 0)
                return 0;
        buf[0] = '\0';
        text = report_all.layers ? json_dumps(report_all.layers, JSON_COMPACT) : strdup("{}");
        if (!text)
                return -ENOMEM;
        n = strlen(text);
        if (n >= len) {
                r = -ENOSPC;
                goto out;
        }
        memcpy(buf, text, n + 1);
out:
        free(text);
        return r;
}

/* Split the '\n'-separated @list into @out (at most SANDBOX_PATHS_MAX entries, pointing
 * into @copy). Return: the count, or -EINVAL (too many, too long). */
static int split_paths(const char *list, char *copy, const char **out)
{
        int n = 0;

        if (!list || !*list)
                return 0;
        if (strlen(list) >= CONFINE_PATHS_BYTES)
                return -EINVAL;
        strcpy(copy, list);
        for (char *save = NULL, *p = strtok_r(copy, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
                if (n == SANDBOX_PATHS_MAX)
                        return -EINVAL;
                out[n++] = p;
        }
        return n;
}

/**
 * kevald_confine_enter() - sandbox_enter_paths() for a torch profile
 * @profile:    kevald_confine_profile()'s number
 * @read_paths: '\n'-separated absolute read-only trees; borrowed; may be NULL
 * @exec_paths: '\n'-separated trees the build profile may execute beneath; may be NULL
 * @write_path: the build profile's one write tree (must exist); may be NULL otherwise
 * @keep_fds:   descriptors above 2 to keep; borrowed; may be NULL
 * @n_keep:     entries of @keep_fds
 * @report:     receives every layer so far as JSON text (NUL-terminated), also on failure
 * @len:        bytes of @report
 *
 * Call while the process has one thread. Return: 0, or a negative errno (a
 * layer that must work failed, -ESRCH the parent is gone, -EBUSY several
 * threads, -EINVAL bad arguments, -EPERM the torch build profile would have
 * kept root, -ENOSPC @report too small): the caller must not go on confined
 * less than asked.
 */
int kevald_confine_enter(int profile, const char *read_paths, const char *exec_paths,
                         const char *write_path, const int *keep_fds, int n_keep, char *report,
                         size_t len)
{
        const char *rd[SANDBOX_PATHS_MAX], *ex[SANDBOX_PATHS_MAX];
        char *rcopy = malloc(CONFINE_PATHS_BYTES), *ecopy = malloc(CONFINE_PATHS_BYTES);
        SandboxPaths paths = {0};
        int r, c;

        if (!rcopy || !ecopy) {
                r = -ENOMEM;
                goto out;
        }
        r = split_paths(read_paths, rcopy, rd);
        if (r < 0)
                goto out;
        paths.read = rd;
        paths.n_read = r;
        r = split_paths(exec_paths, ecopy, ex);
        if (r < 0)
                goto out;
        paths.exec = ex;
        paths.n_exec = r;
        paths.write = write_path && *write_path ? write_path : NULL;
        r = sandbox_enter_paths((SandboxProfile)profile, keep_fds, n_keep, &paths, &report_all);
        /* What a build's module starts and orphans is reparented here, where kill_descendants() finds it
         * (best effort: where the kernel refuses, only the processes still parented are found). */
        if (r == 0 && profile == SANDBOX_PROFILE_TORCH_BUILD) {
                if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
                        sandbox_report_add(report_all.layers, "subreaper", true,
                                           "orphans of a build come back to the worker, which kills every "
                                           "process descending from it after each job");
                else
                        sandbox_report_add(report_all.layers, "subreaper", false,
                                           "PR_SET_CHILD_SUBREAPER: %s (a process a build orphans is not "
                                           "found after the job)", strerror(errno));
        }
        if (r == 0 && entered.profile < 0) {
                /* kept for kevald_confine_narrow(): the pointers in rd and ex point into the copies */
                entered.profile = profile;
                entered.rcopy = rcopy;
                entered.ecopy = ecopy;
                for (int i = 0; i < paths.n_read; i++)
                        entered.rd[i] = rd[i];
                for (int i = 0; i < paths.n_exec; i++)
                        entered.ex[i] = ex[i];
                entered.n_read = paths.n_read;
                entered.n_exec = paths.n_exec;
                rcopy = ecopy = NULL;
        }
out:
        c = copy_report(report, len);
        free(rcopy);
        free(ecopy);
        return r < 0 ? r : c;
}

/**
 * kevald_confine_lock() - sandbox_lock(): the profile's system-call filter, all threads
 * @profile: as given to kevald_confine_enter()
 * @report:  receives every layer so far as JSON text, also on failure
 * @len:     bytes of @report
 * Return: 0, or a negative errno (the caller must exit).
 */
int kevald_confine_lock(int profile, char *report, size_t len)
{
        int r = sandbox_lock((SandboxProfile)profile, &report_all);
        int c = copy_report(report, len);

        return r < 0 ? r : c;
}

/**
 * kevald_confine_narrow() - confine the caller to one job's build folder
 * @write_path: the job's build folder (must exist); borrowed
 * @report:     receives the narrowing's layers as JSON text (NUL-terminated),
 *              also on failure
 * @len:        bytes of @report
 *
 * For the torch build role's per-job child, right after fork() and before
 * the job's module runs: a second Landlock layer (sandbox_narrow()) with the
 * read and exec trees kevald_confine_enter() was given and @write_path as the
 * only write tree, so that the module can neither write nor read the rest of
 * the artifact root (other jobs' builds and sources). The process must have
 * one thread. Its report is its own (the worker's HELLO report is not
 * changed).
 * Return: 0, or a negative errno: -EINVAL (not entered in the torch build
 * profile, no @write_path), -EBUSY (several threads), -ENOENT (@write_path
 * does not exist), or the Landlock layer's; the caller must not run the job.
 */
int kevald_confine_narrow(const char *write_path, char *report, size_t len)
{
        SandboxReport narrowed = {0};
        SandboxPaths paths = {0};
        char *text = NULL;
        int r;

        if (entered.profile != (int)SANDBOX_PROFILE_TORCH_BUILD || !write_path || !*write_path) {
                r = -EINVAL;
                goto out;
        }
        paths.read = entered.rd;
        paths.n_read = entered.n_read;
        paths.exec = entered.ex;
        paths.n_exec = entered.n_exec;
        paths.write = write_path;
        r = sandbox_narrow(SANDBOX_PROFILE_TORCH_BUILD, &paths, &narrowed);
out:
        if (report && len > 0) {
                report[0] = '\0';
                text = narrowed.layers ? json_dumps(narrowed.layers, JSON_COMPACT) : NULL;
                if (text && strlen(text) < len)
                        memcpy(report, text, strlen(text) + 1);
        }
        free(text);
        sandbox_report_clear(&narrowed);
        return r;
}

/* Write all of @buf to @fd. */
static int write_all(int fd, const unsigned char *buf, size_t len)
{
        while (len > 0) {
                ssize_t n = write(fd, buf, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : -EIO;
                buf += n;
                len -= (size_t)n;
        }
        return 0;
}

static bool past(const struct timespec *t)
{
        struct timespec now;

        clock_gettime(CLOCK_MONOTONIC, &now);
        return now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

/* The parent and state of process @pid from /proc/PID/stat; -1 when it is gone. */
static long proc_parent(long pid, char *ret_state)
{
        char path[64], buf[512], *close_paren;
        long ppid;
        ssize_t n;
        int fd;

        snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        close_paren = strrchr(buf, ')');
        /* "pid (comm) S ppid ...": the state, then the parent */
        if (!close_paren || sscanf(close_paren + 1, " %c %ld", ret_state, &ppid) != 2)
                return -1;
        return ppid;
}

/* One process of /proc: its pid, parent, state and whether it descends from this one. */
typedef struct {
        long pid, parent;
        char state;
        bool mine;
} ProcEntry;

/* How many processes descend from this one (found through their parents in
 * /proc), SIGKILLed each; zombies are neither counted nor signalled. Every
 * process of /proc is read (no cap: the table grows), so none is missed on a
 * host with many. */
static int kill_descendants_once(void)
{
        long self = (long)getpid();
        ProcEntry *t = NULL, *bigger;
        size_t n = 0, cap = 0;
        struct dirent *e;
        int killed = 0;
        bool grew = true;
        DIR *d = opendir("/proc");

        if (!d)
                return 0;
        while ((e = readdir(d))) {
                long pid = strtol(e->d_name, NULL, 10), parent;
                char state;

                if (pid <= 0 || pid == self || (parent = proc_parent(pid, &state)) < 0)
                        continue;
                if (n == cap) {
                        cap = cap ? 2 * cap : 1024;
                        bigger = realloc(t, cap * sizeof(*t));
                        if (!bigger)
                                break;   /* what was read is still walked */
                        t = bigger;
                }
                t[n++] = (ProcEntry){.pid = pid, .parent = parent, .state = state, .mine = parent == self};
        }
        closedir(d);
        while (grew) {   /* the closure: a process whose parent is one of ours is ours */
                grew = false;
                for (size_t i = 0; i < n; i++)
                        for (size_t j = 0; j < n && !t[i].mine; j++)
                                if (t[j].mine && t[i].parent == t[j].pid)
                                        t[i].mine = grew = true;
        }
        for (size_t i = 0; i < n; i++)
                if (t[i].mine && t[i].state != 'Z' && kill((pid_t)t[i].pid, SIGKILL) == 0)
                        killed++;
        free(t);
        return killed;
}

/*
 * kill_descendants() - SIGKILL every process descending from this one until
 * none is left alive (a process that forks while it is being killed: the
 * next pass finds its children). The build role is its descendants'
 * subreaper (kevald_confine_enter()), so what a module started and
 * orphaned, in a session or process group of its own, is still found here.
 * Return: how many were signalled.
 */
static int kill_descendants(void)
{
        static pthread_mutex_t walk = PTHREAD_MUTEX_INITIALIZER;   /* one walk at a time: watchdog, worker */
        int total = 0, k;

        pthread_mutex_lock(&walk);
        for (int pass = 0; pass < 64 && (k = kill_descendants_once()) > 0; pass++) {
                struct timespec ts = {0, 2 * 1000 * 1000};

                total += k;
                nanosleep(&ts, NULL);
        }
        pthread_mutex_unlock(&walk);
        return total;
}

/**
 * kevald_confine_kill_descendants() - kill_descendants() for the worker: what
 * a build's module left running ends with its build.
 * Return: how many processes were signalled.
 */
int kevald_confine_kill_descendants(void)
{
        return kill_descendants();
}

static void *watchdog_main(void *arg)
{
        (void)arg;
        pthread_mutex_lock(&dog.mu);
        for (;;) {
                if (!dog.armed) {
                        pthread_cond_wait(&dog.cv, &dog.mu);
                        continue;
                }
                if (past(&dog.deadline)) {
                        (void)write_all(dog.fd, dog.frame, dog.frame_len);
                        if (dog.kill_tree)
                                kill_descendants();
                        _exit(WORKER_EXIT_TIMEOUT);
                }
                pthread_cond_timedwait(&dog.cv, &dog.mu, &dog.deadline);
        }
        return NULL;
}

/**
 * kevald_confine_watchdog_start() - start the watchdog thread (once)
 * @fd: the descriptor frames go to (the supervisor's pipe)
 * Return: 0, -EALREADY when started before, or a negative errno.
 */
int kevald_confine_watchdog_start(int fd)
{
        pthread_condattr_t ca;
        pthread_t t;
        int r;

        pthread_mutex_lock(&dog.mu);
        if (dog.started) {
                r = -EALREADY;
                goto out;
        }
        r = -pthread_condattr_init(&ca);
        if (r < 0)
                goto out;
        r = -pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        if (r == 0)
                r = -pthread_cond_init(&dog.cv, &ca);
        pthread_condattr_destroy(&ca);
        if (r < 0)
                goto out;
        r = -pthread_create(&t, NULL, watchdog_main, NULL);
        if (r < 0) {
                pthread_cond_destroy(&dog.cv);
                goto out;
        }
        pthread_detach(t);
        dog.fd = fd;
        dog.started = true;
out:
        pthread_mutex_unlock(&dog.mu);
        return r;
}

/**
 * kevald_confine_watchdog_arm() - arm the watchdog for one job
 * @frame:       the job's timeout RESULT, a whole frame; copied
 * @len:         its bytes (at most 64 KiB)
 * @deadline_ms: milliseconds from now
 * @kill_tree:   nonzero: before exiting, SIGKILL every process descending
 *               from this one (kill_descendants(): the build role's job child,
 *               its compilers and whatever its module started, which would
 *               outlive it otherwise)
 * Return: 0, -EINVAL (too large, not started, a negative deadline), -ENOMEM.
 */
int kevald_confine_watchdog_arm(const void *frame, size_t len, long long deadline_ms, int kill_tree)
{
        unsigned char *copy;
        struct timespec t;
        int r = 0;

        if (!frame || len == 0 || len > CONFINE_FRAME_MAX || deadline_ms < 0)
                return -EINVAL;
        copy = malloc(len);
        if (!copy)
                return -ENOMEM;
        memcpy(copy, frame, len);
        clock_gettime(CLOCK_MONOTONIC, &t);
        t.tv_sec += (time_t)(deadline_ms / 1000);
        t.tv_nsec += (long)(deadline_ms % 1000) * 1000000L;
        if (t.tv_nsec >= 1000000000L) {
                t.tv_sec++;
                t.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&dog.mu);
        if (!dog.started) {
                r = -EINVAL;
                goto out;
        }
        free(dog.frame);
        dog.frame = copy;
        copy = NULL;
        dog.frame_len = len;
        dog.deadline = t;
        dog.kill_tree = kill_tree != 0;
        dog.armed = true;
        pthread_cond_signal(&dog.cv);
out:
        pthread_mutex_unlock(&dog.mu);
        free(copy);
        return r;
}

/**
 * kevald_confine_send() - write one whole frame, under the watchdog's mutex
 * @fd:     the descriptor
 * @buf:    the frame; borrowed
 * @len:    its bytes
 * @disarm: nonzero for a job's RESULT: the watchdog is disarmed in the same
 *          critical section, so it can no longer send its own
 * Return: 0, or a negative errno of write() (-EPIPE: the supervisor is gone).
 */
int kevald_confine_send(int fd, const void *buf, size_t len, int disarm)
{
        int r;

        pthread_mutex_lock(&dog.mu);
        r = write_all(fd, buf, len);
        if (disarm && dog.armed) {
                dog.armed = false;
                free(dog.frame);
                dog.frame = NULL;
                if (dog.started)
                        pthread_cond_signal(&dog.cv);
        }
        pthread_mutex_unlock(&dog.mu);
        return r;
}

/**
 * kevald_confine_blame() - whether the candidate's code runs now (@on non-zero) or
 * the worker's: sandbox_blame_candidate(). Return: 0.
 */
int kevald_confine_blame(int on)
{
        sandbox_blame_candidate(on);
        return 0;
}
