/*
 * sandbox - the order in which a worker confines itself, and the report of
 * every layer (active, or why not). Theory of operation:
 *
 * sandbox_enter(), first thing after exec, single-threaded, before any job:
 *   1. pdeathsig     SIGKILL when the supervisor dies; exit if it already has
 *   2. fds           close every descriptor above 2 but the kept ones
 *   3. rlimit        CPU, FSIZE, NOFILE, CORE (and AS for compile workers)
 *   4. cwd           a removed, empty working directory
 *   5. netns         a private network namespace (user namespace first when
 *                    not root), while we may still create namespaces
 *   6. uid           root drops to nobody; a user namespace's caps are dropped
 *   7. pdeathsig, dumpable   again: a credential change clears both
 *   8. no_new_privs  needed by Landlock and seccomp without privilege
 *   9. landlock      the file-system (and TCP) allowlist
 * sandbox_lock(), after warm-up (NVRTC compiled once; CUDA has a context):
 *  10. seccomp       the system-call allowlist, TSYNC
 *
 * Layers that must work (an error from sandbox_enter()/sandbox_lock(), and
 * the worker exits): pdeathsig, fds, rlimit, dumpable, uid (once attempted),
 * no_new_privs, seccomp, and landlock where the kernel has it. Layers that
 * may be unavailable and are then reported inactive with the reason: netns
 * (user namespaces disabled), landlock (kernel without it), cwd (no usable
 * /tmp: the worker stays in "/"), uid (GPU nodes that only root may open;
 * never for the torch build profile, which fails rather than keep root).
 * SANDBOX_PROFILE_NONE (--no-sandbox, for the overhead benchmark) applies
 * pdeathsig only and reports every other layer as disabled.
 *
 * The torch profiles (kevald-torch, through libkevald-confine.so: confine.c)
 * take the same steps in the same order with the same must-work rules; what
 * differs is each layer's table (rlimit.c, landlock.c, seccomp.c) and the
 * extra trees of SandboxPaths (the Python installation, the artifact root).
 * sandbox_narrow() adds one more Landlock layer later, in the torch build
 * role's per-job child: the same trees with the job's build folder as the
 * only write tree.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "sandbox/layers.h"
#include "sandbox/sandbox.h"

/**
 * sandbox_report_add() - record one layer in a report
 * @layers: the report object; borrowed; the entry replaces one of the same name
 * @name:   layer name
 * @active: whether the layer is in force
 * @fmt:    printf format of the detail (what was applied, or why not)
 */
void sandbox_report_add(json_t *layers, const char *name, bool active, const char *fmt, ...)
{
        char detail[768];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(detail, sizeof(detail), fmt, ap);
        va_end(ap);
        if (layers)
                json_object_set_new(layers, name,
                                    json_pack("{s:b, s:s}", "active", active, "detail", detail));
}

static const char *const layer_names[] = {
        "pdeathsig", "fds", "rlimit", "cwd", "netns", "uid", "dumpable", "no_new_privs",
        "landlock", "seccomp",
};

static int ensure_layers(SandboxReport *report)
{
        if (!report->layers)
                report->layers = json_object();
        return report->layers ? 0 : -ENOMEM;
}

/**
 * sandbox_enter() - apply the pre-initialisation layers for @profile
 * @profile:  SANDBOX_PROFILE_COMPILE, _GPU, or _NONE (pdeathsig only)
 * @keep_fds: descriptors above 2 to keep open; borrowed; may be NULL
 * @n_keep:   number of entries in @keep_fds (0..64)
 * @report:   the layers are added to report->layers (created if NULL); the
 *            caller clears it with sandbox_report_clear()
 *
 * Must be called while the process has a single thread. On an error the
 * report says which layer failed; the caller must exit.
 *
 * Return: 0; -ESRCH when the parent (KEVALD_PARENT_PID) is already gone;
 * -EBUSY when called with several threads; -ENOMEM; or the negative errno of
 * a layer that must work.
 */
int sandbox_enter(SandboxProfile profile, const int *keep_fds, int n_keep, SandboxReport *report)
{
        return sandbox_enter_paths(profile, keep_fds, n_keep, NULL, report);
}

const char *sandbox_profile_name(SandboxProfile profile)
{
        switch (profile) {
        case SANDBOX_PROFILE_COMPILE: return "compile";
        case SANDBOX_PROFILE_GPU: return "gpu";
        case SANDBOX_PROFILE_NONE: return "none";
        case SANDBOX_PROFILE_TORCH_BUILD: return "torch-build";
        case SANDBOX_PROFILE_TORCH_RUN: return "torch-run";
        }
        return "?";
}

static bool profile_known(SandboxProfile profile)
{
        return profile == SANDBOX_PROFILE_COMPILE || profile == SANDBOX_PROFILE_GPU ||
               profile == SANDBOX_PROFILE_TORCH_BUILD || profile == SANDBOX_PROFILE_TORCH_RUN;
}

/**
 * sandbox_enter_paths() - sandbox_enter() with the extra trees of a torch profile
 * @profile:  any SandboxProfile
 * @keep_fds: as sandbox_enter()
 * @n_keep:   as sandbox_enter()
 * @paths:    the torch profiles' extra trees; borrowed; may be NULL (none);
 *            SANDBOX_PROFILE_TORCH_BUILD needs paths->write
 * @report:   as sandbox_enter()
 *
 * Return: as sandbox_enter(); -EINVAL for an unknown profile, a torch build
 * profile without a write tree, or more than SANDBOX_PATHS_MAX entries;
 * -EPERM for the torch build profile started as root where it would keep
 * root.
 */
int sandbox_enter_paths(SandboxProfile profile, const int *keep_fds, int n_keep,
                        const SandboxPaths *paths, SandboxReport *report)
{
        json_t *l;
        int r;

        r = ensure_layers(report);
        if (r < 0)
                goto out;
        l = report->layers;
        r = sandbox_proc_apply_pdeathsig(l);
        if (r < 0)
                goto out;
        if (profile == SANDBOX_PROFILE_NONE) {
                for (size_t i = 1; i < sizeof(layer_names) / sizeof(layer_names[0]); i++)
                        sandbox_report_add(l, layer_names[i], false, "disabled (--no-sandbox)");
                goto out;
        }
        if (!profile_known(profile) ||
            (profile == SANDBOX_PROFILE_TORCH_BUILD && (!paths || !paths->write)) ||
            (paths && (paths->n_read < 0 || paths->n_read > SANDBOX_PATHS_MAX || paths->n_exec < 0 ||
                       paths->n_exec > SANDBOX_PATHS_MAX))) {
                r = -EINVAL;
                goto out;
        }
        r = sandbox_proc_count_threads();
        if (r != 1) {
                sandbox_report_add(l, "landlock", false, "sandbox_enter() needs a single thread; "
                                   "the process has %d", r);
                r = r < 0 ? r : -EBUSY;
                goto out;
        }
        r = sandbox_proc_apply_fds(keep_fds, n_keep, l);
        if (r < 0)
                goto out;
        r = sandbox_rlimit_apply(profile, l);
        if (r < 0)
                goto out;
        r = sandbox_proc_apply_cwd(l);
        if (r < 0)
                goto out;
        r = sandbox_netns_apply(l);
        if (r < 0)
                goto out;
        r = sandbox_proc_apply_uid_paths(profile, paths, l);
        if (r < 0)
                goto out;
        r = sandbox_proc_apply_pdeathsig(l);
        if (r < 0)
                goto out;
        r = sandbox_proc_apply_dumpable(l);
        if (r < 0)
                goto out;
        r = sandbox_proc_apply_nnp(l);
        if (r < 0)
                goto out;
        r = sandbox_landlock_apply_paths(profile, paths, l);
        if (r < 0)
                goto out;
        sandbox_report_add(l, "seccomp", false, "not yet locked (sandbox_lock() after warm-up)");
out:
        if (r < 0)
                log_error("sandbox: entering the %s profile: %s", sandbox_profile_name(profile),
                          strerror(-r));
        return r;
}

/**
 * sandbox_narrow() - a further Landlock layer for one job (see sandbox.h)
 * @profile: SANDBOX_PROFILE_TORCH_BUILD, the profile the process entered
 * @paths:   the read and exec trees it entered with and the job's write tree; borrowed
 * @report:  as sandbox_enter()
 *
 * Return: 0, -EBUSY (several threads), -EINVAL, or the negative errno of the
 * Landlock layer; the caller must not go on.
 */
int sandbox_narrow(SandboxProfile profile, const SandboxPaths *paths, SandboxReport *report)
{
        int r = ensure_layers(report);

        if (r < 0)
                goto out;
        if (profile != SANDBOX_PROFILE_TORCH_BUILD || !paths || !paths->write || paths->n_read < 0 ||
            paths->n_read > SANDBOX_PATHS_MAX || paths->n_exec < 0 || paths->n_exec > SANDBOX_PATHS_MAX) {
                r = -EINVAL;
                goto out;
        }
        r = sandbox_proc_count_threads();
        if (r != 1) {
                sandbox_report_add(report->layers, "landlock", false,
                                   "narrowing needs a single thread; the process has %d", r);
                r = r < 0 ? r : -EBUSY;
                goto out;
        }
        r = sandbox_landlock_apply_paths(profile, paths, report->layers);
out:
        if (r < 0)
                log_error("sandbox: narrowing the %s profile: %s", sandbox_profile_name(profile), strerror(-r));
        return r;
}

/**
 * sandbox_lock() - load the system-call allowlist of @profile (all threads)
 * @profile: as given to sandbox_enter(); SANDBOX_PROFILE_NONE loads nothing
 * @report:  the "seccomp" layer is set in report->layers (created if NULL)
 *
 * Return: 0, or a negative errno (the caller must exit: this layer must work).
 */
int sandbox_lock(SandboxProfile profile, SandboxReport *report)
{
        int r = ensure_layers(report);

        if (r < 0)
                goto out;
        if (profile == SANDBOX_PROFILE_NONE) {
                sandbox_report_add(report->layers, "seccomp", false, "disabled (--no-sandbox)");
                goto out;
        }
        if (!profile_known(profile)) {
                r = -EINVAL;
                goto out;
        }
        r = sandbox_seccomp_apply(profile, report->layers);
out:
        if (r < 0)
                log_error("sandbox: locking: %s", strerror(-r));
        return r;
}

/**
 * sandbox_report_clear() - free the layers of @report; accepts NULL
 */
void sandbox_report_clear(SandboxReport *report)
{
        if (!report)
                return;
        json_decref(report->layers);
        report->layers = NULL;
}
