/*
 * test-sandbox - each confinement layer on its own, then the whole sequence,
 * each in a forked child that applies the layer and checks its effect from
 * the inside; the parent checks how the child ended (exit code or SIGSYS).
 * The compile profile is also checked with real NVRTC and nvJitLink compiles
 * after the filter is locked. Runs as root (uid drop, netns) or not (user
 * namespace path).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <netinet/in.h>
#include <nvJitLink.h>
#include <nvrtc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/limits.h"
#include "sandbox/layers.h"
#include "sandbox/sandbox.h"

#if defined(__SANITIZE_ADDRESS__)
#define ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN 1
#endif
#endif

#define CUDA_HEADER "/usr/local/cuda/include/cuda_fp16.h"

#define CHECK(c)                                                                             \
        do {                                                                                 \
                if (!(c)) {                                                                  \
                        fprintf(stderr, "%s:%d: check failed: %s (errno %s)\n", __FILE__,   \
                                __LINE__, #c, strerror(errno));                             \
                        _exit(1);                                                            \
                }                                                                            \
        } while (0)

static int failures;
static int landlock_abi;   /* asked before any child locks itself */

/* Run @fn in a child; return its wait status. */
static int in_child(void (*fn)(void))
{
        int st = 0;
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
                perror("fork");
                exit(1);
        }
        if (pid == 0) {
                fn();
                _exit(0);
        }
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
        return st;
}

static void expect_exit0(const char *name, void (*fn)(void))
{
        int st = in_child(fn);
        bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        printf("%s %s\n", ok ? "ok  " : "FAIL", name);
        if (!ok) {
                failures++;
                if (WIFSIGNALED(st))
                        printf("     killed by signal %d\n", WTERMSIG(st));
        }
}

static void expect_sigsys(const char *name, void (*fn)(void))
{
        int st = in_child(fn);
        bool ok = WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS;
        printf("%s %s\n", ok ? "ok  " : "FAIL", name);
        if (!ok) {
                failures++;
                printf("     status: %s %d\n", WIFSIGNALED(st) ? "signal" : "exit",
                       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        }
}

static bool layer_active(json_t *layers, const char *name)
{
        return json_is_true(json_object_get(json_object_get(layers, name), "active"));
}

static void enter_or_die(SandboxProfile p, SandboxReport *rep)
{
        CHECK(sandbox_enter(p, NULL, 0, rep) == 0);
}

/* A TCP listener on 127.0.0.1 (made by the parent: reachable from the host
 * network namespace); its port. */
static int listen_port;

static int make_listener(void)
{
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(a);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4) < 0 ||
            getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
                perror("listener");
                exit(1);
        }
        listen_port = ntohs(a.sin_port);
        return fd;
}

static int connect_local(void)
{
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)listen_port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
                return -errno;
        int r = connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ? -errno : 0;
        close(fd);
        return r;
}

/* ---- rlimit ------------------------------------------------------------ */

static void t_rlimit_compile(void)
{
        json_t *l = json_object();
        struct rlimit rl;
        CHECK(sandbox_rlimit_apply(SANDBOX_PROFILE_COMPILE, l) == 0);
        CHECK(layer_active(l, "rlimit"));
        CHECK(getrlimit(RLIMIT_CPU, &rl) == 0 && rl.rlim_max == LIMIT_WORKER_CPU_LIFETIME_S);
        CHECK(getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur == LIMIT_WORKER_FILE_BYTES);
        CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur == LIMIT_COMPILE_NOFILE &&
              rl.rlim_max == LIMIT_COMPILE_NOFILE);
        CHECK(getrlimit(RLIMIT_CORE, &rl) == 0 && rl.rlim_max == 0);
#ifndef ASAN
        CHECK(getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_max == LIMIT_COMPILE_AS_BYTES);
        /* A 5 GiB allocation is refused. */
        void *p = malloc(5ull << 30);
        CHECK(p == NULL);
#endif
        /* Per-job CPU re-arm: soft limit near "used + 2", then back to hard. */
        CHECK(sandbox_rearm_cpu(2) == 0);
        CHECK(getrlimit(RLIMIT_CPU, &rl) == 0 && rl.rlim_cur <= 4 && rl.rlim_cur >= 2);
        CHECK(sandbox_rearm_cpu(0) == 0);
        CHECK(getrlimit(RLIMIT_CPU, &rl) == 0 && rl.rlim_cur == rl.rlim_max);
        json_decref(l);
}

static void t_rlimit_gpu(void)
{
        json_t *l = json_object();
        struct rlimit as_before, rl;
        CHECK(getrlimit(RLIMIT_AS, &as_before) == 0);
        CHECK(sandbox_rlimit_apply(SANDBOX_PROFILE_GPU, l) == 0);
        CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max == LIMIT_GPU_NOFILE);
        CHECK(getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_max == as_before.rlim_max);
        json_decref(l);
}

/* The CPU soft limit really ends a spinning process with SIGXCPU. */
static void t_rlimit_cpu_kills(void)
{
        json_t *l = json_object();
        CHECK(sandbox_rlimit_apply(SANDBOX_PROFILE_COMPILE, l) == 0);
        CHECK(sandbox_rearm_cpu(1) == 0);
        for (volatile unsigned long i = 0;; i++)
                ;
}

/* ---- landlock ---------------------------------------------------------- */

/* Naming another thread writes /proc/self/task/TID/comm (naming oneself is a
 * prctl): what the CUDA driver does at cuInit. 0 or an error number. */
static int hold_pipe[2];
static void *thread_hold(void *arg)
{
        char c;
        (void)!read(hold_pipe[0], &c, 1);
        return arg;
}

static int name_other_thread(void)
{
        pthread_t th;
        CHECK(pipe(hold_pipe) == 0);
        CHECK(pthread_create(&th, NULL, thread_hold, NULL) == 0);
        int r = pthread_setname_np(th, "kevald-named");
        CHECK(write(hold_pipe[1], "x", 1) == 1);
        pthread_join(th, NULL);
        close(hold_pipe[0]);
        close(hold_pipe[1]);
        return r;
}

static void t_landlock_compile(void)
{
        json_t *l = json_object();
        CHECK(sandbox_proc_apply_nnp(l) == 0);
        CHECK(sandbox_landlock_apply(SANDBOX_PROFILE_COMPILE, l) == 0);
        CHECK(layer_active(l, "landlock"));
        int fd = open(CUDA_HEADER, O_RDONLY);
        CHECK(fd >= 0);
        close(fd);
        errno = 0;
        CHECK(open("/etc/passwd", O_RDONLY) < 0 && errno == EACCES);
        CHECK(open("/proc/self/environ", O_RDONLY) < 0 && errno == EACCES);
        CHECK(name_other_thread() != 0);   /* no /proc at all */
        CHECK(open("/etc", O_RDONLY | O_DIRECTORY) < 0 && errno == EACCES);
        CHECK(open("/tmp/kevald-sandbox-test-file", O_WRONLY | O_CREAT, 0600) < 0 &&
              errno == EACCES);
        fd = open("/dev/null", O_WRONLY);
        CHECK(fd >= 0 && write(fd, "x", 1) == 1);
        close(fd);
        /* Readable libraries, but no right to execute anything. */
        char *argv[] = {"true", NULL};
        execv("/bin/true", argv);
        CHECK(errno == EACCES);
        json_decref(l);
}

static void t_landlock_gpu(void)
{
        json_t *l = json_object();
        CHECK(sandbox_proc_apply_nnp(l) == 0);
        CHECK(sandbox_landlock_apply(SANDBOX_PROFILE_GPU, l) == 0);
        CHECK(layer_active(l, "landlock"));
        int fd = open("/proc/self/status", O_RDONLY);
        CHECK(fd >= 0);
        close(fd);
        CHECK(open("/etc/passwd", O_RDONLY) < 0 && errno == EACCES);
        /* The driver names its threads (/proc/self/task/TID/comm) at cuInit. */
        CHECK(name_other_thread() == 0);
        CHECK(open("/proc/self/oom_score_adj", O_WRONLY) < 0 && errno == EACCES);
        /* ABI >= 4: TCP connect denied even to a reachable listener. */
        if (landlock_abi >= 4)
                CHECK(connect_local() == -EACCES);
        json_decref(l);
}

/* ---- netns ------------------------------------------------------------- */

static void t_netns(void)
{
        json_t *l = json_object();
        CHECK(connect_local() == 0);   /* the listener is reachable before */
        CHECK(sandbox_netns_apply(l) == 0);
        if (!layer_active(l, "netns")) {
                /* e.g. a container without CAP_SYS_ADMIN: reported, with why */
                json_t *n = json_object_get(l, "netns");
                CHECK(json_string_length(json_object_get(n, "detail")) > 0);
                printf("     (no network namespace here: %s)\n",
                       json_string_value(json_object_get(n, "detail")));
                CHECK(connect_local() == 0);
                json_decref(l);
                return;
        }
        int r = connect_local();
        CHECK(r == -ENETUNREACH);
        json_decref(l);
}

/* As an unprivileged user: the user namespace path, then capabilities dropped. */
static void t_netns_unprivileged(void)
{
        json_t *l = json_object();
        if (getuid() == 0)
                CHECK(setgroups(0, NULL) == 0 && setresgid(65534, 65534, 65534) == 0 &&
                      setresuid(65534, 65534, 65534) == 0);
        CHECK(sandbox_netns_apply(l) == 0);
        json_t *n = json_object_get(l, "netns");
        CHECK(n && json_string_length(json_object_get(n, "detail")) > 0);
        if (layer_active(l, "netns")) {
                CHECK(connect_local() == -ENETUNREACH);
                CHECK(sandbox_proc_apply_uid(SANDBOX_PROFILE_COMPILE, l) == 0);
                CHECK(layer_active(l, "uid"));
        } else {
                printf("     (user namespaces refused here: %s)\n",
                       json_string_value(json_object_get(n, "detail")));
        }
        json_decref(l);
}

/* ---- seccomp ----------------------------------------------------------- */

static void lock_compile(void)
{
        SandboxReport rep = {0};
        enter_or_die(SANDBOX_PROFILE_COMPILE, &rep);
        CHECK(sandbox_lock(SANDBOX_PROFILE_COMPILE, &rep) == 0);
        CHECK(layer_active(rep.layers, "seccomp"));
}

static void lock_gpu(void)
{
        SandboxReport rep = {0};
        enter_or_die(SANDBOX_PROFILE_GPU, &rep);
        CHECK(sandbox_lock(SANDBOX_PROFILE_GPU, &rep) == 0);
}

static void t_seccomp_allowed(void)
{
        char buf[64];
        struct timespec ts;
        lock_compile();
        CHECK(getpid() > 0);
        CHECK(clock_gettime(CLOCK_MONOTONIC, &ts) == 0);
        int fd = open(CUDA_HEADER, O_RDONLY | O_CLOEXEC);
        CHECK(fd >= 0 && read(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf));
        close(fd);
        void *p = malloc(64 << 20);   /* mmap */
        CHECK(p);
        memset(p, 1, 64 << 20);
        free(p);
        CHECK(sandbox_rearm_cpu(5) == 0 && sandbox_rearm_cpu(0) == 0);
        CHECK(write(2, "", 0) == 0);
        /* Opening for writing answers EACCES instead of killing. */
        errno = 0;
        CHECK(open("/dev/null", O_WRONLY) < 0 && errno == EACCES);
        CHECK(open("/dev/null", O_RDONLY | O_CREAT, 0600) < 0 && errno == EACCES);
}

static void t_seccomp_socket(void) { lock_compile(); socket(AF_INET, SOCK_STREAM, 0); }
static void t_seccomp_execve(void)
{
        char *argv[] = {"true", NULL};
        lock_compile();
        execv("/bin/true", argv);
}
static void t_seccomp_fork(void) { lock_compile(); fork(); }
static void t_seccomp_ptrace(void) { lock_compile(); ptrace(PTRACE_TRACEME, 0, NULL, NULL); }
static void t_seccomp_kill(void) { lock_compile(); kill(getpid(), 0); }

/* The worker names the forbidden call on stderr before it dies. */
static int err_pipe[2];
static void t_seccomp_names_the_call(void)
{
        CHECK(dup2(err_pipe[1], 2) == 2);
        lock_compile();
        socket(AF_INET6, SOCK_DGRAM, 0);
}
static void t_seccomp_prlimit_nofile(void)
{
        struct rlimit rl = {.rlim_cur = 16, .rlim_max = 16};
        lock_compile();
        setrlimit(RLIMIT_NOFILE, &rl);
}

static void t_seccomp_gpu_allowed(void)
{
        int n = 0;
        lock_gpu();
        /* ioctl is the driver's channel; it must not kill. */
        (void)ioctl(0, FIONREAD, &n);
        errno = 0;
        CHECK(open(CUDA_HEADER, O_RDONLY) < 0 && errno == EACCES);
        CHECK(getpid() > 0);
}

static void t_seccomp_gpu_socket(void) { lock_gpu(); socket(AF_UNIX, SOCK_STREAM, 0); }

/* TSYNC: a thread started before the lock is covered too. */
static int go_pipe[2];
static void *thread_socket(void *arg)
{
        char c;
        (void)arg;
        if (read(go_pipe[0], &c, 1) == 1)
                socket(AF_INET, SOCK_DGRAM, 0);
        return NULL;
}

static void t_seccomp_tsync(void)
{
        pthread_t th;
        SandboxReport rep = {0};
        enter_or_die(SANDBOX_PROFILE_GPU, &rep);
        CHECK(pipe(go_pipe) == 0);
        CHECK(pthread_create(&th, NULL, thread_socket, NULL) == 0);
        CHECK(sandbox_lock(SANDBOX_PROFILE_GPU, &rep) == 0);
        CHECK(write(go_pipe[1], "g", 1) == 1);
        pthread_join(th, NULL);
}

/* A thread started right before the lock registers itself (rseq,
 * set_robust_list) after TSYNC reached it: that must not kill. */
static void *thread_noop(void *arg) { return arg; }

static void t_seccomp_thread_race(void)
{
        for (int i = 0; i < 40; i++) {
                fflush(NULL);
                pid_t pid = fork();
                CHECK(pid >= 0);
                if (pid == 0) {
                        pthread_t th;
                        SandboxReport rep = {0};
                        if (pthread_create(&th, NULL, thread_noop, NULL) != 0 ||
                            sandbox_lock(i % 2 ? SANDBOX_PROFILE_GPU : SANDBOX_PROFILE_COMPILE, &rep) != 0)
                                _exit(2);
                        pthread_join(th, NULL);
                        _exit(0);
                }
                int st;
                CHECK(waitpid(pid, &st, 0) == pid);
                CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        }
}

/* ---- proc ------------------------------------------------------------- */

static void t_fds(void)
{
        json_t *l = json_object();
        int keep[] = {11};
        CHECK(dup2(2, 10) == 10 && dup2(2, 11) == 11 && dup2(2, 40) == 40);
        CHECK(sandbox_proc_apply_fds(keep, 1, l) == 0);
        CHECK(fcntl(10, F_GETFD) < 0 && errno == EBADF);
        CHECK(fcntl(11, F_GETFD) >= 0);
        CHECK(fcntl(40, F_GETFD) < 0 && errno == EBADF);
        CHECK(fcntl(2, F_GETFD) >= 0);
        json_decref(l);
}

static void t_cwd(void)
{
        SandboxReport rep = {0};
        char cwd[256], want[64];
        struct stat st;
        snprintf(want, sizeof(want), "/tmp/kevald-empty-%u", (unsigned)geteuid());
        enter_or_die(SANDBOX_PROFILE_COMPILE, &rep);
        CHECK(layer_active(rep.layers, "cwd"));
        CHECK(getcwd(cwd, sizeof(cwd)) && strcmp(cwd, want) == 0);
        CHECK(stat(".", &st) == 0 && (st.st_mode & 0777) == 0555);
        errno = 0;
        CHECK(open("x", O_WRONLY | O_CREAT, 0600) < 0 && errno == EACCES);
        CHECK(mkdir("d", 0700) < 0 && errno == EACCES);
        CHECK(open(".", O_RDONLY | O_DIRECTORY) < 0 && errno == EACCES);   /* no listing */
        sandbox_report_clear(&rep);
}

static void t_uid(void)
{
        SandboxReport rep = {0};
        struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
        struct __user_cap_data_struct d[2];
        enter_or_die(SANDBOX_PROFILE_COMPILE, &rep);
        CHECK(layer_active(rep.layers, "uid"));
        CHECK(syscall(SYS_capget, &h, d) == 0);
        CHECK(d[0].effective == 0 && d[1].effective == 0 && d[0].permitted == 0);
        if (getuid() == 0 || geteuid() == 0)
                CHECK(!"still root");
        if (rep.layers && json_string_value(json_object_get(json_object_get(rep.layers, "uid"), "detail")) &&
            strstr(json_string_value(json_object_get(json_object_get(rep.layers, "uid"), "detail")), "root dropped")) {
                CHECK(getuid() == 65534 && getgid() == 65534 && getgroups(0, NULL) == 0);
                CHECK(setuid(0) < 0 && errno == EPERM);
        }
        /* Limits cannot be raised again without capabilities. */
        struct rlimit rl = {.rlim_cur = 4096, .rlim_max = 4096};
        CHECK(setrlimit(RLIMIT_NOFILE, &rl) < 0 && errno == EPERM);
        CHECK(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0);
        CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1);
        int sig = 0;
        CHECK(prctl(PR_GET_PDEATHSIG, &sig) == 0 && sig == SIGKILL);   /* re-armed */
        sandbox_report_clear(&rep);
}

static void t_parent_check(void)
{
        SandboxReport rep = {0};
        setenv("KEVALD_PARENT_PID", "1", 1);   /* not our parent */
        CHECK(sandbox_enter(SANDBOX_PROFILE_COMPILE, NULL, 0, &rep) == -ESRCH);
        CHECK(!layer_active(rep.layers, "pdeathsig"));
        sandbox_report_clear(&rep);
}

/* The worker (grandchild) dies when its parent (child) dies. */
static void t_pdeathsig(void)
{
        int to_test[2], to_mid[2];
        char c;
        int st;
        CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);   /* orphans come back to us */
        CHECK(pipe(to_test) == 0 && pipe(to_mid) == 0);
        pid_t mid = fork();
        CHECK(mid >= 0);
        if (mid == 0) {
                char ppid[32];
                snprintf(ppid, sizeof(ppid), "%d", (int)getpid());
                pid_t w = fork();
                if (w == 0) {
                        SandboxReport rep = {0};
                        int keep[] = {to_test[1], to_mid[1]};
                        pid_t self = getpid();
                        setenv("KEVALD_PARENT_PID", ppid, 1);
                        if (sandbox_enter(SANDBOX_PROFILE_COMPILE, keep, 2, &rep) != 0)
                                _exit(3);
                        if (write(to_test[1], &self, sizeof(self)) < 0 || write(to_mid[1], "r", 1) < 0)
                                _exit(4);
                        for (;;)
                                pause();
                }
                if (read(to_mid[0], &c, 1) != 1)   /* the worker is sandboxed */
                        _exit(6);
                _exit(0);
        }
        pid_t w;
        CHECK(read(to_test[0], &w, sizeof(w)) == sizeof(w));
        CHECK(waitpid(mid, &st, 0) == mid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
        /* The worker was sandboxed (uid dropped, which clears the setting
         * unless re-armed), then its parent exited: it must die by SIGKILL. */
        alarm(10);
        CHECK(waitpid(w, &st, 0) == w);
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

/* ---- the whole sequence, and the report -------------------------------- */

static void t_report(void)
{
        static const char *const must[] = {"pdeathsig", "fds", "rlimit", "dumpable",
                                           "no_new_privs", "seccomp"};
        static const char *const all[] = {"pdeathsig", "fds", "rlimit", "cwd", "netns", "uid",
                                          "dumpable", "no_new_privs", "landlock", "seccomp"};
        SandboxReport rep = {0};
        enter_or_die(SANDBOX_PROFILE_COMPILE, &rep);
        CHECK(!layer_active(rep.layers, "seccomp"));
        CHECK(sandbox_lock(SANDBOX_PROFILE_COMPILE, &rep) == 0);
        for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
                json_t *e = json_object_get(rep.layers, all[i]);
                CHECK(json_is_boolean(json_object_get(e, "active")));
                CHECK(json_string_length(json_object_get(e, "detail")) > 0);
        }
        for (size_t i = 0; i < sizeof(must) / sizeof(must[0]); i++)
                CHECK(layer_active(rep.layers, must[i]));
        if (landlock_abi > 0)
                CHECK(layer_active(rep.layers, "landlock"));
        char *s = json_dumps(rep.layers, JSON_INDENT(2) | JSON_SORT_KEYS);
        CHECK(s);
        printf("     compile profile report on this host:\n%s\n", s);
        fflush(stdout);
        free(s);
}

static void t_none(void)
{
        SandboxReport rep = {0};
        enter_or_die(SANDBOX_PROFILE_NONE, &rep);
        CHECK(sandbox_lock(SANDBOX_PROFILE_NONE, &rep) == 0);
        CHECK(layer_active(rep.layers, "pdeathsig"));
        CHECK(!layer_active(rep.layers, "landlock") && !layer_active(rep.layers, "seccomp"));
        CHECK(json_object_size(rep.layers) == 10);
        int fd = open("/etc/passwd", O_RDONLY);
        CHECK(fd >= 0);
        close(fd);
        sandbox_report_clear(&rep);
}

static void t_threads_refused(void)
{
        pthread_t th;
        SandboxReport rep = {0};
        CHECK(pipe(go_pipe) == 0);
        CHECK(pthread_create(&th, NULL, thread_socket, NULL) == 0);
        CHECK(sandbox_enter(SANDBOX_PROFILE_COMPILE, NULL, 0, &rep) == -EBUSY);
        close(go_pipe[1]);
        pthread_join(th, NULL);
        sandbox_report_clear(&rep);
}

/* ---- real NVRTC / nvJitLink compiles under the compile profile ---------- */

static int compile(const char *src, char *log, size_t log_size, size_t *ret_cubin)
{
        const char *opts[] = {"-arch=sm_90a", "-I/usr/local/cuda/include",
                              "-I/usr/local/cuda/include/cccl", "--ptxas-options=-v"};
        nvrtcProgram p;
        size_t n = 0;
        if (nvrtcCreateProgram(&p, src, "kernel.cu", 0, NULL, NULL) != NVRTC_SUCCESS)
                return -1;
        nvrtcResult r = nvrtcCompileProgram(p, 4, opts);
        log[0] = '\0';
        if (nvrtcGetProgramLogSize(p, &n) == NVRTC_SUCCESS && n < log_size)
                nvrtcGetProgramLog(p, log);
        *ret_cubin = 0;
        if (r == NVRTC_SUCCESS)
                nvrtcGetCUBINSize(p, ret_cubin);
        nvrtcDestroyProgram(&p);
        return r == NVRTC_SUCCESS ? 0 : 1;
}

static void t_nvrtc(void)
{
        static char log[1 << 16];
        SandboxReport rep = {0};
        size_t cubin;
        const char *secret = "kevald-secret-7f3a9c";
        setenv("KEVALD_TEST_SECRET", secret, 1);
        enter_or_die(SANDBOX_PROFILE_COMPILE, &rep);
        /* Warm-up: the first compile dlopens libnvrtc-builtins. */
        CHECK(compile("extern \"C\" __global__ void k(float *x) { x[0] = 1; }", log, sizeof(log),
                      &cubin) == 0 && cubin > 0);
        CHECK(sandbox_lock(SANDBOX_PROFILE_COMPILE, &rep) == 0);
        CHECK(compile("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
                      "extern \"C\" __global__ void k(__half *x) { x[threadIdx.x] = __hadd(x[0], x[1]); }",
                      log, sizeof(log), &cubin) == 0 && cubin > 0);
        CHECK(compile("#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
                      "extern \"C\" __global__ void k(float *x) { cg::this_thread_block().sync(); x[0] = 2; }",
                      log, sizeof(log), &cubin) == 0);
        CHECK(compile("#include \"/etc/passwd\"\n", log, sizeof(log), &cubin) == 1);
        CHECK(!strstr(log, "root:x:0:0") && !strstr(log, "/bin/bash") && !strstr(log, "nologin"));
        CHECK(strstr(log, "cannot open") || strstr(log, "could not open") || strstr(log, "not found"));
        CHECK(compile("#include \"/proc/self/environ\"\n", log, sizeof(log), &cubin) == 1);
        CHECK(!strstr(log, secret));
        CHECK(compile("#include \"../../../../etc/hostname\"\n#include \"kernel.h\"\n", log,
                      sizeof(log), &cubin) == 1);
        /* PTX -> CUBIN with nvJitLink after the lock. */
        const char *ptx_opts[] = {"-arch=compute_90a"};
        nvrtcProgram p;
        size_t n = 0;
        CHECK(nvrtcCreateProgram(&p, "extern \"C\" __global__ void k(float *x) { x[1] = 3; }",
                                 "k.cu", 0, NULL, NULL) == NVRTC_SUCCESS);
        CHECK(nvrtcCompileProgram(p, 1, ptx_opts) == NVRTC_SUCCESS);
        CHECK(nvrtcGetPTXSize(p, &n) == NVRTC_SUCCESS);
        char *ptx = malloc(n);
        CHECK(ptx && nvrtcGetPTX(p, ptx) == NVRTC_SUCCESS);
        nvrtcDestroyProgram(&p);
        nvJitLinkHandle h;
        const char *link_opts[] = {"-arch=sm_90a"};
        CHECK(nvJitLinkCreate(&h, 1, link_opts) == NVJITLINK_SUCCESS);
        CHECK(nvJitLinkAddData(h, NVJITLINK_INPUT_PTX, ptx, strlen(ptx), "k.ptx") == NVJITLINK_SUCCESS);
        CHECK(nvJitLinkComplete(h) == NVJITLINK_SUCCESS);
        CHECK(nvJitLinkGetLinkedCubinSize(h, &n) == NVJITLINK_SUCCESS && n > 0);
        nvJitLinkDestroy(&h);
        free(ptx);
        sandbox_report_clear(&rep);
}

int main(void)
{
        int lfd = make_listener();
        setvbuf(stdout, NULL, _IOLBF, 0);
        unsetenv("KEVALD_PARENT_PID");
        landlock_abi = sandbox_landlock_abi();

        expect_exit0("rlimit: compile profile values, AS refuses 5 GiB, CPU re-arm", t_rlimit_compile);
        expect_exit0("rlimit: gpu profile values, no AS limit", t_rlimit_gpu);
        {
                int st = in_child(t_rlimit_cpu_kills);
                bool ok = WIFSIGNALED(st) && (WTERMSIG(st) == SIGXCPU || WTERMSIG(st) == SIGKILL);
                printf("%s rlimit: a 1 s CPU re-arm ends a spinning process\n", ok ? "ok  " : "FAIL");
                failures += !ok;
        }
        if (sandbox_landlock_abi() > 0) {
                expect_exit0("landlock: compile profile (CUDA header yes; /etc/passwd, /proc, /tmp, exec no)",
                             t_landlock_compile);
                expect_exit0("landlock: gpu profile (/proc read, own thread names; /etc/passwd no; TCP connect denied)",
                             t_landlock_gpu);
        } else {
                printf("skip landlock: not in this kernel (%s)\n", strerror(-sandbox_landlock_abi()));
        }
        expect_exit0("netns: 127.0.0.1 unreachable (ENETUNREACH)", t_netns);
        expect_exit0("netns: unprivileged path (user namespace), capabilities dropped",
                     t_netns_unprivileged);
        expect_exit0("seccomp: compile profile allows what workers do; open-for-write is EACCES",
                     t_seccomp_allowed);
        expect_sigsys("seccomp: socket() kills", t_seccomp_socket);
        expect_sigsys("seccomp: execve() kills", t_seccomp_execve);
        expect_sigsys("seccomp: fork() kills", t_seccomp_fork);
        expect_sigsys("seccomp: ptrace() kills", t_seccomp_ptrace);
        expect_sigsys("seccomp: kill() kills", t_seccomp_kill);
        expect_sigsys("seccomp: prlimit(RLIMIT_NOFILE) kills", t_seccomp_prlimit_nofile);
        {
                char buf[256] = "", want[64];
                CHECK(pipe(err_pipe) == 0);
                expect_sigsys("seccomp: the forbidden call is named on stderr", t_seccomp_names_the_call);
                close(err_pipe[1]);
                ssize_t n = read(err_pipe[0], buf, sizeof(buf) - 1);
                buf[n > 0 ? n : 0] = '\0';
                close(err_pipe[0]);
                snprintf(want, sizeof(want), "forbidden system call %d:", (int)SYS_socket);
                bool ok = strstr(buf, want) != NULL;
                printf("%s seccomp: stderr says \"%s\"\n", ok ? "ok  " : "FAIL", want);
                failures += !ok;
        }
        expect_exit0("seccomp: gpu profile allows ioctl; openat is EACCES", t_seccomp_gpu_allowed);
        expect_sigsys("seccomp: gpu profile socket() kills", t_seccomp_gpu_socket);
        expect_sigsys("seccomp: TSYNC covers a thread started before the lock", t_seccomp_tsync);
        expect_exit0("seccomp: a thread started just before the lock survives (40 tries)",
                     t_seccomp_thread_race);
        expect_exit0("fds: all above 2 closed but the kept one", t_fds);
        expect_exit0("cwd: shared empty 0555 folder, nothing can be listed or created", t_cwd);
        expect_exit0("uid: unprivileged, no caps, limits fixed, dumpable 0, nnp, pdeathsig re-armed",
                     t_uid);
        expect_exit0("pdeathsig: a changed parent is detected (-ESRCH)", t_parent_check);
        expect_exit0("pdeathsig: the worker dies with its parent", t_pdeathsig);
        expect_exit0("sandbox_enter refuses a multi-threaded process", t_threads_refused);
        expect_exit0("none profile: pdeathsig only, every other layer reported disabled", t_none);
        expect_exit0("report: every layer reported; required ones active", t_report);
        expect_exit0("nvrtc: real compiles under the locked compile profile; host files stay out",
                     t_nvrtc);
        close(lfd);
        printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
        return failures ? 1 : 0;
}
