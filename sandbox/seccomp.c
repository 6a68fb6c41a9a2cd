/*
 * seccomp - the system-call allowlist a worker locks itself into once its
 * libraries are warm (the only file that includes <seccomp.h>).
 *
 * Policy: a forbidden call ends the whole worker with SIGSYS (the supervisor
 * sees it, gives the job an infrastructure verdict and starts a fresh
 * worker). The filter's default action is TRAP rather than KILL_PROCESS so
 * that the worker first writes one line naming the call to stderr (the
 * supervisor's log): "sandbox: seccomp: forbidden system call N". The
 * handler then makes a second forbidden call; SIGSYS is blocked inside its
 * own handler, so the kernel resets it to the default action and the
 * process dies by SIGSYS exactly as with KILL_PROCESS. No untrusted code
 * runs on a worker's CPU, so the handler cannot be subverted by a kernel. One deliberate exception answers with an error instead of
 * killing: opening a file for writing or creating one (openat with O_WRONLY,
 * O_RDWR, O_CREAT, O_TRUNC, O_APPEND or O_TMPFILE) fails with EACCES, the
 * same answer Landlock gives, so a library that tries to write a cache file
 * reports an error instead of taking the worker down. In the GPU profile
 * every openat fails with EACCES: after warm-up the driver has no file left
 * to open (PTX is linked to CUBIN before the GPU worker sees it).
 *
 * The compile list was measured with `strace -f` of NVRTC and nvJitLink
 * compiles made after a first, warm-up compile (CUDA 13.0): NVRTC reads
 * headers (openat, read, lseek, fstat/newfstatat/stat, close), asks getcwd,
 * raises and restores RLIMIT_STACK (prlimit64), and allocates with brk/mmap.
 * The GPU list is the one measured on the GPU host after cuInit, a context
 * and a module load (see /work/shared/gpu/README.md), plus what every worker
 * needs for its frames and clocks. prlimit64 is allowed on the process
 * itself only (pid 0), for RLIMIT_STACK (NVRTC) and RLIMIT_CPU
 * (sandbox_rearm_cpu()). No profile allows socket, connect, execve, fork,
 * clone, ptrace, kill, mount, unshare, setns or any *at() that writes the
 * file system.
 *
 * The filter is loaded with SECCOMP_FILTER_FLAG_TSYNC so threads that the
 * CUDA driver started during warm-up are covered too.
 */
#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/layers.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZER_ASAN 1
#endif
#endif

static bool filter_loaded;

#ifdef SANITIZER_ASAN
/* LeakSanitizer stops the world with clone and ptrace at exit, which the
 * filter forbids: leak checking is off in a process that locked itself. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
        return filter_loaded;
}
#endif

/* Both profiles: memory, clocks, frames on stdin/stdout, logs on stderr,
 * futexes for the threads that already exist, signal return, exit. */
static const char *const allow_common[] = {
        "read", "write", "readv", "writev", "pread64", "pwrite64", "lseek", "close",
        "fstat", "newfstatat", "brk", "mmap", "munmap", "mremap", "mprotect", "madvise",
        "futex", "clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep",
        "gettimeofday", "sched_yield", "getpid", "gettid", "getrandom", "poll", "ppoll",
        "rt_sigreturn", "rt_sigprocmask", "restart_syscall", "exit", "exit_group",
        "sched_getaffinity", "getrusage", "sigaltstack",
        /* A thread that pthread_create() started just before the lock still
         * registers itself with these (TSYNC reaches it first). */
        "rseq", "set_robust_list",
};

/* Compile profile: NVRTC reading headers; nvJitLink dlopening. */
static const char *const allow_compile[] = {
        "stat", "lstat", "statx", "getcwd", "readlink", "access", "faccessat", "faccessat2",
        "fcntl", "getdents64",
};

/* GPU profile: the driver after warm-up (ioctls on its device nodes; epoll
 * and eventfd reads of its helper threads). */
static const char *const allow_gpu[] = {
        "ioctl", "epoll_wait", "epoll_pwait", "fcntl",
};

static void on_sigsys(int sig, siginfo_t *si, void *ctx)
{
        static const char head[] = "sandbox: seccomp: forbidden system call ";
        char buf[sizeof(head) + 32];
        char digits[16];
        size_t n = sizeof(head) - 1, k = 0;
        unsigned v = si->si_syscall < 0 ? 0 : (unsigned)si->si_syscall;

        (void)sig;
        (void)ctx;
        memcpy(buf, head, n);
        do {
                digits[k++] = (char)('0' + v % 10);
                v /= 10;
        } while (v && k < sizeof(digits));
        while (k)
                buf[n++] = digits[--k];
        memcpy(buf + n, ": ending the worker\n", 20);
        n += 20;
        (void)!write(STDERR_FILENO, buf, n);
        /* Forbidden in every profile: with SIGSYS blocked here, the kernel
         * resets it to the default action and ends the process by SIGSYS. */
        syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0);
        _exit(128 + SIGSYS);
}

static int add_list(scmp_filter_ctx ctx, const char *const *names, size_t n, int *ret_count)
{
        for (size_t i = 0; i < n; i++) {
                int nr = seccomp_syscall_resolve_name(names[i]);
                if (nr == __NR_SCMP_ERROR)
                        continue;   /* not a system call on this architecture */
                int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
                if (r < 0)
                        return r;
                (*ret_count)++;
        }
        return 0;
}

#define WRITE_FLAGS (O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND | __O_TMPFILE)

/* {mask, value} pairs of openat flags that ask for write access. */
static const scmp_datum_t write_masks[][2] = {
        {O_ACCMODE, O_WRONLY}, {O_ACCMODE, O_RDWR}, {O_CREAT, O_CREAT},
        {O_TRUNC, O_TRUNC},    {O_APPEND, O_APPEND}, {__O_TMPFILE, __O_TMPFILE},
};

static int add_rules(scmp_filter_ctx ctx, SandboxProfile profile, int *ret_count)
{
        int r;

        r = add_list(ctx, allow_common, sizeof(allow_common) / sizeof(allow_common[0]), ret_count);
        if (r < 0)
                return r;
        /* prlimit64(0, RLIMIT_STACK | RLIMIT_CPU, ...) on itself only. */
        r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 2, SCMP_A0(SCMP_CMP_EQ, 0),
                             SCMP_A1(SCMP_CMP_EQ, RLIMIT_STACK));
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 2,
                                     SCMP_A0(SCMP_CMP_EQ, 0), SCMP_A1(SCMP_CMP_EQ, RLIMIT_CPU));
        if (r < 0)
                return r;
        (*ret_count)++;
        if (profile == SANDBOX_PROFILE_GPU) {
                r = add_list(ctx, allow_gpu, sizeof(allow_gpu) / sizeof(allow_gpu[0]), ret_count);
                if (r == 0)
                        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(openat), 0);
                if (r == 0)
                        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(open), 0);
                return r;
        }
        r = add_list(ctx, allow_compile, sizeof(allow_compile) / sizeof(allow_compile[0]), ret_count);
        if (r < 0)
                return r;
        r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
                             SCMP_A2(SCMP_CMP_MASKED_EQ, WRITE_FLAGS, 0));
        /* Every way of asking for write access: EACCES. The conditions never
         * overlap the allow rule above; anything else (access mode 3) kills. */
        for (size_t i = 0; i < sizeof(write_masks) / sizeof(write_masks[0]) && r == 0; i++)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(openat), 1,
                                     SCMP_A2(SCMP_CMP_MASKED_EQ, write_masks[i][0],
                                             write_masks[i][1]));
        if (r < 0)
                return r;
        (*ret_count)++;
        return 0;
}

/*
 * sandbox_seccomp_apply() - load the allowlist of @profile for every thread
 * of the process (TSYNC).
 * Return: 0 or a negative errno (this layer must work).
 */
int sandbox_seccomp_apply(SandboxProfile profile, json_t *layers)
{
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
        struct sigaction sa;
        int count = 0;
        int r;

        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_sigsys;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGSYS, &sa, NULL) < 0) {
                r = -errno;
                goto out;
        }
        if (!ctx) {
                r = -ENOMEM;
                goto out;
        }
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
        if (r < 0)
                goto out;
        r = add_rules(ctx, profile, &count);
        if (r < 0)
                goto out;
        r = seccomp_load(ctx);
        if (r < 0)
                goto out;
        filter_loaded = true;
        sandbox_report_add(layers, "seccomp", true,
                           "%s allowlist: %d system calls; any other ends the worker (SIGSYS, logged); %s; TSYNC",
                           profile == SANDBOX_PROFILE_GPU ? "gpu" : "compile", count,
                           profile == SANDBOX_PROFILE_GPU
                                   ? "openat answers EACCES"
                                   : "openat read-only, opening for writing answers EACCES");
out:
        if (r < 0)
                sandbox_report_add(layers, "seccomp", false, "loading the filter: %s",
                                   strerror(-r));
        seccomp_release(ctx);
        return r;
}
