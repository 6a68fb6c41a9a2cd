/*
 * sandbox - the confinement a worker applies to itself, one mechanism per
 * file (rlimit.c, netns.c, landlock.c, seccomp.c, proc.c), applied in a
 * fixed order. Workers call sandbox_enter() first thing after exec (before
 * reading any job) and sandbox_lock() once their libraries are warm (NVRTC
 * has compiled once; CUDA has a context and has loaded a module).
 *
 * Every layer is reported: applied, or not available on this host with the
 * reason. Nothing is skipped silently; the report goes into the worker's
 * HELLO and from there to `kevald serve`'s start-up log and /readyz.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

/* The unprivileged identity a root-started worker drops to (nobody/nogroup;
 * fixed numbers so that no NSS module is loaded). The server gives the torch
 * build cache's folder to it when it runs as root. */
#define SANDBOX_NOBODY_UID 65534u
#define SANDBOX_NOBODY_GID 65534u

typedef enum {
        SANDBOX_PROFILE_COMPILE = 0,
        SANDBOX_PROFILE_GPU = 1,
        SANDBOX_PROFILE_NONE = 2,   /* --no-sandbox: for the overhead benchmark only */
        SANDBOX_PROFILE_TORCH_BUILD = 3, /* kevald-torch --role build: may exec the toolchain,
                                          * writes only below SandboxPaths.write (each job's
                                          * child: its build folder, sandbox_narrow()); never root */
        SANDBOX_PROFILE_TORCH_RUN = 4,   /* kevald-torch --role run: the GPU, Python's trees
                                          * read-only, no exec, no new processes */
} SandboxProfile;

/*
 * SandboxPaths - the trees a torch profile needs beyond the fixed ones (the
 * Python installation, the worker's package, the artifact root). Borrowed
 * by sandbox_enter_paths() for the duration of the call only. Each entry is
 * an absolute path; missing ones are skipped and counted like the fixed
 * paths. The compile and GPU profiles ignore it.
 */
typedef struct SandboxPaths {
        const char *const *read;   /* read-only trees */
        int n_read;
        const char *const *exec;   /* read-and-execute trees (the build profile only) */
        int n_exec;
        const char *write;         /* the one read-write tree (build), or NULL */
} SandboxPaths;

#define SANDBOX_PATHS_MAX 64   /* entries of SandboxPaths.read, and of .exec */

typedef struct SandboxReport {
        json_t *layers;   /* object: layer name -> {"active": bool, "detail": "..."} */
} SandboxReport;

/**
 * sandbox_enter() - pre-init layers: PR_SET_PDEATHSIG (and exit if the
 * parent already died), no core dumps, rlimits (CPU, FSIZE, NOFILE, CORE; AS
 * for the compile profile only), closing every fd above 2 except @keep_fds,
 * an empty working directory, private network namespace (user namespace
 * first when not root), dropping to an unprivileged uid when root, Landlock.
 * @report: layers are added to report->layers (created if NULL)
 * Call it while the process is single-threaded (Landlock and user namespaces
 * need that); @keep_fds holds at most 64 entries; fds 0-2 always stay.
 * Return: 0, or a negative errno when a layer that must work failed (-ESRCH:
 * the parent in KEVALD_PARENT_PID is already gone); the caller must exit.
 * Which layers must work, and the order: see sandbox/sandbox.c and
 * docs/SECURITY.md.
 */
int sandbox_enter(SandboxProfile profile, const int *keep_fds, int n_keep, SandboxReport *report);

/**
 * sandbox_enter_paths() - sandbox_enter() with the extra trees of a torch
 * profile (@paths, borrowed, may be NULL: no extra trees). The torch build
 * profile refuses (-EINVAL) a @paths without a write tree.
 * Return: as sandbox_enter(); for the torch build profile started as root,
 * -EPERM where it would keep root (uid 65534 may not write @paths->write or
 * read a read tree): it never builds as root.
 */
int sandbox_enter_paths(SandboxProfile profile, const int *keep_fds, int n_keep,
                        const SandboxPaths *paths, SandboxReport *report);

/**
 * sandbox_narrow() - a further Landlock layer over a process already in
 * @profile: the layers stack (the intersection applies), so the caller keeps
 * every right it had only where @paths grants it again, and cannot regain
 * the rest. The torch build role calls it in the child that runs one job's
 * module, with the trees it entered with and its job's build folder as the
 * write tree (@paths, borrowed; the write tree must exist).
 * Call it while the process has one thread (Landlock restricts the calling
 * thread only): a child just forked from a threaded process has one.
 * @report: the "landlock" layer of the narrowing is set in report->layers
 * (created if NULL)
 * Return: 0 (narrowed, or reported unavailable: no Landlock in this
 * kernel), -EBUSY with several threads, -EINVAL (a profile other than the
 * torch build one, no write tree, too many trees), -ENOENT the write tree
 * does not exist, or another negative errno; the caller must not run the
 * job on any error.
 */
int sandbox_narrow(SandboxProfile profile, const SandboxPaths *paths, SandboxReport *report);

/** sandbox_profile_name() - "compile", "gpu", "none", "torch-build", "torch-run" or "?" */
const char *sandbox_profile_name(SandboxProfile profile);

/**
 * sandbox_lock() - post-init layer: the seccomp allowlist for @profile,
 * loaded with SECCOMP_FILTER_FLAG_TSYNC so threads the driver started are
 * covered too. Return: 0 or a negative errno.
 */
int sandbox_lock(SandboxProfile profile, SandboxReport *report);

/**
 * sandbox_rearm_cpu() - bound the CPU time of the next job: the RLIMIT_CPU
 * soft limit becomes "CPU used so far + @seconds" (SIGXCPU ends the worker
 * past it); @seconds 0 restores it to the lifetime hard limit
 * (LIMIT_WORKER_CPU_LIFETIME_S) after the job. Works after sandbox_lock().
 * Return: 0 or a negative errno.
 */
int sandbox_rearm_cpu(unsigned seconds);

/**
 * sandbox_blame_candidate() - whose code runs now, for a forbidden system call's
 * verdict: with @on non-zero, a call the filter forbids ends the process with
 * WORKER_EXIT_FORBIDDEN (the job's untrusted code made it) instead of SIGSYS
 * (the worker's own call: an infrastructure fault). Async-signal-safe; the
 * kevald-torch run role turns it on around each call into the candidate.
 */
void sandbox_blame_candidate(int on);

void sandbox_report_clear(SandboxReport *report);
