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

typedef enum {
        SANDBOX_PROFILE_COMPILE = 0,
        SANDBOX_PROFILE_GPU = 1,
        SANDBOX_PROFILE_NONE = 2,   /* --no-sandbox: for the overhead benchmark only */
} SandboxProfile;

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

void sandbox_report_clear(SandboxReport *report);
