/*
 * seccomp - the system-call allowlist a worker locks itself into once its
 * libraries are warm (the only file that includes <seccomp.h>).
 *
 * Policy: a forbidden call ends the whole worker with SIGSYS (the supervisor
 * sees it, gives the job an infrastructure verdict and starts a fresh
 * worker). The one exception is the kevald-torch run role, where the
 * candidate's Python runs in the worker: while it runs
 * (sandbox_blame_candidate()), a forbidden call ends the worker with
 * WORKER_EXIT_FORBIDDEN instead, and the supervisor gives the job a
 * runtime_error of kind sandbox, not retried. The filter's default action is TRAP rather than KILL_PROCESS so
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
 * The torch run profile (kevald-torch --role run; the candidate's Python runs
 * in this process) is an allowlist too: the GPU list, the compile profile's
 * read-only file calls (torch loads libraries and Python modules lazily),
 * openat read-only (writing answers EACCES), new threads but no new
 * processes (clone only with CLONE_THREAD; clone3 answers ENOSYS so glibc
 * falls back to clone), signals to its own threads only, and the calls
 * Python's runtime makes (uname, sysinfo, dup, eventfd2, epoll, prctl's
 * thread names). No exec, fork, socket, ptrace, kill; a process or a program
 * (clone without CLONE_THREAD, fork, vfork, execve, execveat) answers EPERM
 * instead of SIGSYS, because Python's subprocess makes them with every
 * signal blocked, where the handler below cannot run.
 * The torch build profile must run a toolchain (ninja, nvcc, cicc, ptxas,
 * g++, ld), whose calls were not measured call by call: it is a denylist,
 * reported as one. Forbidden there, and in no other profile allowed either:
 * socket and socketpair of every family, AF_UNIX included (EACCES: a unix
 * socket bound to a path reaches local daemons past Landlock; an `strace -f`
 * of a ninja-driven nvcc and g++ build of a CUDA extension, started through
 * Python's subprocess, made no socket call), ptrace,
 * process_vm_readv/writev, mount and its family, unshare, setns, bpf,
 * keyrings, perf_event_open, kernel modules, kexec, reboot, swap,
 * userfaultfd, io_uring, open_by_handle_at, the clocks' setters, iopl/ioperm.
 *
 * The filter is loaded with SECCOMP_FILTER_FLAG_TSYNC so threads that the
 * CUDA driver started during warm-up are covered too.
 */
#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/layers.h"
#include "worker/exitcode.h"

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

/* Torch run profile: Python's runtime and torch after CUDA init (beyond the
 * common, GPU and file-reading lists). */
static const char *const allow_torch_run[] = {
        "stat", "lstat", "statx", "getcwd", "readlink", "readlinkat", "access", "faccessat",
        "faccessat2", "getdents64", "statfs", "fstatfs", "uname", "sysinfo", "dup", "dup2",
        "dup3", "eventfd2", "epoll_create1", "epoll_ctl", "pipe2", "select", "pselect6",
        "rt_sigaction", "rt_sigtimedwait", "set_tid_address", "getuid", "geteuid", "getgid",
        "getegid", "getppid", "getpgrp", "sched_setaffinity", "sched_getparam",
        "sched_getscheduler", "sched_get_priority_max", "sched_get_priority_min", "getpriority",
        "mincore", "membarrier", "get_mempolicy", "mlock", "munlock", "shmdt", "getresuid",
        "getresgid", "timerfd_create", "timerfd_settime", "timerfd_gettime", "fadvise64",
        "times", "getitimer", "mbind", "getcpu", "sched_getattr", "msync",
        /* its own children only, of which it has one at most (kevald_torch/tritontools.py's
         * helper, started before the lock): Python's subprocess reaps before it spawns */
        "wait4", "waitid",
};

/* Torch build profile: the denylist (see the opening comment). */
static const char *const deny_torch_build[] = {
        "ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2", "pivot_root",
        "chroot", "unshare", "setns", "bpf", "keyctl", "add_key", "request_key",
        "perf_event_open", "init_module", "finit_module", "delete_module", "kexec_load",
        "kexec_file_load", "reboot", "swapon", "swapoff", "userfaultfd", "io_uring_setup",
        "io_uring_enter", "io_uring_register", "open_by_handle_at", "name_to_handle_at",
        "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "iopl", "ioperm",
        "acct", "quotactl", "syslog", "fanotify_init", "move_mount", "fsopen", "fsmount",
        "fsconfig", "open_tree", "mount_setattr", "lookup_dcookie", "vhangup", "personality",
};

static bool is_torch(SandboxProfile profile)
{
        return profile == SANDBOX_PROFILE_TORCH_BUILD || profile == SANDBOX_PROFILE_TORCH_RUN;
}

static atomic_int blame_candidate; /* set by the run role's main thread, read by whichever thread traps */

void sandbox_blame_candidate(int on)
{
        atomic_store(&blame_candidate, on ? 1 : 0);
}

static void on_sigsys(int sig, siginfo_t *si, void *ctx)
{
        static const char head[] = "sandbox: seccomp: forbidden system call ";
        char buf[sizeof(head) + 80];
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
        if (atomic_load(&blame_candidate)) {
                static const char tail[] = " (the candidate's code ran): ending the worker\n";
                memcpy(buf + n, tail, sizeof(tail) - 1);
                n += sizeof(tail) - 1;
                (void)!write(STDERR_FILENO, buf, n);
                _exit(WORKER_EXIT_FORBIDDEN);
        }
        memcpy(buf + n, ": ending the worker\n", 20);
        n += 20;
        (void)!write(STDERR_FILENO, buf, n);
        /* Trapped by every allowlist: with SIGSYS blocked here, the kernel
         * resets it to the default action and ends the process by SIGSYS. */
        syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0);
        /* The torch build profile answers socket with EACCES: ptrace (an
         * invalid request, harmless were it allowed) is trapped by every filter. */
        syscall(SYS_ptrace, -1L, 0L, 0L, 0L);
        _exit(128 + SIGSYS);
}

/*
 * One rule of @action for each of the @n system calls @names; a name this
 * architecture lacks (libseccomp's pseudo-number, < 0: arm64's fork, vfork,
 * poll, stat) is skipped. Each rule added counts in *@ret_count, unless it is NULL.
 */
static int add_list(scmp_filter_ctx ctx, uint32_t action, const char *const *names, size_t n, int *ret_count)
{
        for (size_t i = 0; i < n; i++) {
                int nr = seccomp_syscall_resolve_name(names[i]);
                if (nr < 0)
                        continue;
                int r = seccomp_rule_add(ctx, action, nr, 0);
                if (r < 0)
                        return r;
                if (ret_count)
                        (*ret_count)++;
        }
        return 0;
}

#define ADD_LIST(ctx, action, list, ret_count) add_list(ctx, action, list, sizeof(list) / sizeof(list[0]), ret_count)

#define WRITE_FLAGS (O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND | __O_TMPFILE)

/* {mask, value} pairs of openat flags that ask for write access. */
static const scmp_datum_t write_masks[][2] = {
        {O_ACCMODE, O_WRONLY}, {O_ACCMODE, O_RDWR}, {O_CREAT, O_CREAT},
        {O_TRUNC, O_TRUNC},    {O_APPEND, O_APPEND}, {__O_TMPFILE, __O_TMPFILE},
};

/* The torch build profile's denylist: the filter's default is ALLOW. */
static int add_torch_build_rules(scmp_filter_ctx ctx, int *ret_count)
{
        int r = ADD_LIST(ctx, SCMP_ACT_TRAP, deny_torch_build, ret_count);

        /* No socket of any family: EACCES. A unix socket named by a path is a
         * channel to local daemons that Landlock does not cover; the toolchain
         * makes none (ninja, nvcc, g++ and Python's subprocess run on pipes),
         * and glibc's name lookups fall back from nscd to the files. */
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 0);
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socketpair), 0);
        if (r == 0)
                *ret_count += 2;
        return r;
}

/* What the torch run profile answers with EPERM: a new process, a new program. */
static const char *const no_process[] = {"fork", "vfork", "execve", "execveat"};

/* The torch run profile asks only O_TMPFILE's own bit (glibc's __O_TMPFILE
 * carries O_DIRECTORY too, and Python lists folders while it imports). */
#define TORCH_TMPFILE_BIT 020000000
#define TORCH_WRITE_FLAGS (O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND | TORCH_TMPFILE_BIT)
static const scmp_datum_t torch_write_masks[][2] = {
        {O_ACCMODE, O_WRONLY}, {O_ACCMODE, O_RDWR}, {O_CREAT, O_CREAT},
        {O_TRUNC, O_TRUNC},    {O_APPEND, O_APPEND}, {TORCH_TMPFILE_BIT, TORCH_TMPFILE_BIT},
};

/* The torch run profile's additions to the common list. */
static int add_torch_run_rules(scmp_filter_ctx ctx, int *ret_count)
{
        static const int prctl_ok[] = {PR_SET_NAME, PR_GET_NAME, PR_GET_DUMPABLE, PR_SET_VMA,
                                       PR_GET_NO_NEW_PRIVS, PR_GET_SECCOMP, PR_CAPBSET_READ};
        int r;

        r = ADD_LIST(ctx, SCMP_ACT_ALLOW, allow_gpu, ret_count);
        if (r == 0)
                r = ADD_LIST(ctx, SCMP_ACT_ALLOW, allow_torch_run, ret_count);
        /* Threads, never processes. */
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                                     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
        /* A new process or program answers EPERM rather than ending the worker:
         * Python's subprocess (Triton runs ptxas, a library `ldconfig -p`) makes
         * them with every signal blocked (vfork), where the filter's SIGSYS
         * cannot reach its handler and the kernel would end the worker as if
         * the worker itself had failed. So the candidate's code gets an error
         * it reports as its own (PermissionError), and nothing runs. */
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                                     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
        if (r == 0) /* not counted: the report counts what the profile allows */
                r = ADD_LIST(ctx, SCMP_ACT_ERRNO(EPERM), no_process, NULL);
        /* Signals to its own threads only (pthread_kill, abort). */
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
                                     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid()));
        for (size_t i = 0; i < sizeof(prctl_ok) / sizeof(prctl_ok[0]) && r == 0; i++)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
                                     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)prctl_ok[i]));
        /* getrlimit() is prlimit64(0, any, NULL, &old): reading is allowed. */
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 2, SCMP_A0(SCMP_CMP_EQ, 0),
                                     SCMP_A2(SCMP_CMP_EQ, 0));
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
                                     SCMP_A2(SCMP_CMP_MASKED_EQ, TORCH_WRITE_FLAGS, 0));
        for (size_t i = 0; i < sizeof(torch_write_masks) / sizeof(torch_write_masks[0]) && r == 0; i++)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(openat), 1,
                                     SCMP_A2(SCMP_CMP_MASKED_EQ, torch_write_masks[i][0],
                                             torch_write_masks[i][1]));
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(open), 0);
        if (r == 0)
                *ret_count += 6;
        return r;
}

static int add_rules(scmp_filter_ctx ctx, SandboxProfile profile, int *ret_count)
{
        int r;

        if (profile == SANDBOX_PROFILE_TORCH_BUILD)
                return add_torch_build_rules(ctx, ret_count);

        r = ADD_LIST(ctx, SCMP_ACT_ALLOW, allow_common, ret_count);
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
        if (profile == SANDBOX_PROFILE_TORCH_RUN)
                return add_torch_run_rules(ctx, ret_count);
        if (profile == SANDBOX_PROFILE_GPU) {
                r = ADD_LIST(ctx, SCMP_ACT_ALLOW, allow_gpu, ret_count);
                if (r == 0)
                        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(openat), 0);
                if (r == 0)
                        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(open), 0);
                return r;
        }
        r = ADD_LIST(ctx, SCMP_ACT_ALLOW, allow_compile, ret_count);
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
        scmp_filter_ctx ctx = seccomp_init(profile == SANDBOX_PROFILE_TORCH_BUILD ? SCMP_ACT_ALLOW
                                                                                 : SCMP_ACT_TRAP);
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
        if (is_torch(profile)) {
                sandbox_report_add(layers, "seccomp", true,
                                   profile == SANDBOX_PROFILE_TORCH_BUILD
                                           ? "torch-build denylist: %d rules (ptrace, mount, namespaces, bpf, "
                                             "keyrings, modules, ...: SIGSYS, logged; every socket, unix too: EACCES); "
                                             "exec and fork allowed for the toolchain; TSYNC"
                                           : "torch-run allowlist: %d system calls; any other ends the worker "
                                             "(SIGSYS, logged); threads but no processes, no exec; openat "
                                             "read-only, opening for writing answers EACCES; TSYNC",
                                   count);
                goto out;
        }
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
