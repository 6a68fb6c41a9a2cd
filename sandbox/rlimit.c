/*
 * rlimit - resource limits of a worker process (RLIMIT_*), soft and hard
 * set equal so that the process cannot raise them again.
 *
 * CPU: the hard limit is a lifetime budget (LIMIT_WORKER_CPU_LIFETIME_S,
 * SIGKILL); sandbox_rearm_cpu() lowers the soft limit around one job (SIGXCPU
 * ends a runaway compile even if the supervisor's watchdog did not).
 * FSIZE: workers open no file for writing (Landlock, seccomp); the limit is a
 * backstop, and SIGXFSZ is ignored so that an inherited stderr that is a big
 * log file costs log lines, not the worker. NOFILE bounds descriptors; CORE 0
 * keeps memory images (inputs, seeds) off the disk. AS is for compile workers
 * only: CUDA reserves large virtual ranges and cuInit fails below ~16 GB.
 * Under AddressSanitizer the shadow mapping is already larger than any AS
 * limit, so AS is then reported as not applied.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common/limits.h"
#include "sandbox/layers.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZER_ASAN 1
#endif
#endif

typedef struct {
        int resource;
        const char *name;
        rlim_t compile;
        rlim_t gpu;     /* RLIM_INFINITY: left alone for this profile */
        rlim_t torch;   /* both torch profiles: as the GPU profile (no AS: CUDA, and the build's
                         * cicc and cc1plus, reserve large ranges); FSIZE bounds a built .so */
} Limit;

static const Limit limits[] = {
        {RLIMIT_CPU, "cpu_s", LIMIT_WORKER_CPU_LIFETIME_S, LIMIT_WORKER_CPU_LIFETIME_S,
         LIMIT_WORKER_CPU_LIFETIME_S},
        {RLIMIT_FSIZE, "fsize", LIMIT_WORKER_FILE_BYTES, LIMIT_WORKER_FILE_BYTES, LIMIT_WORKER_FILE_BYTES},
        {RLIMIT_NOFILE, "nofile", LIMIT_COMPILE_NOFILE, LIMIT_GPU_NOFILE, LIMIT_GPU_NOFILE},
        {RLIMIT_CORE, "core", 0, 0, 0},
        {RLIMIT_AS, "as", LIMIT_COMPILE_AS_BYTES, RLIM_INFINITY, RLIM_INFINITY},
};

static rlim_t limit_of(const Limit *l, SandboxProfile profile)
{
        switch (profile) {
        case SANDBOX_PROFILE_GPU: return l->gpu;
        case SANDBOX_PROFILE_TORCH_BUILD:
        case SANDBOX_PROFILE_TORCH_RUN: return l->torch;
        default: return l->compile;
        }
}

/*
 * sandbox_rlimit_apply() - set the profile's resource limits.
 * @profile: SANDBOX_PROFILE_COMPILE, _GPU, _TORCH_BUILD or _TORCH_RUN
 * @layers:  report object; borrowed
 *
 * Return: 0, or a negative errno when a limit could not be set (these must
 * work: lowering one's own limits needs no privilege).
 */
int sandbox_rlimit_apply(SandboxProfile profile, json_t *layers)
{
        char detail[512];
        size_t off = 0;
        const char *skipped = "";
        int r = 0;

        for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
                rlim_t v = limit_of(&limits[i], profile);
                struct rlimit cur;
                if (v == RLIM_INFINITY)
                        continue;
#ifdef SANITIZER_ASAN
                if (limits[i].resource == RLIMIT_AS) {
                        skipped = "; as not set: AddressSanitizer build (its shadow memory exceeds any address-space limit)";
                        continue;
                }
#endif
                if (getrlimit(limits[i].resource, &cur) < 0) {
                        r = -errno;
                        goto out;
                }
                /* Never raise: an operator's tighter hard limit stays. */
                if (cur.rlim_max != RLIM_INFINITY && cur.rlim_max < v)
                        v = cur.rlim_max;
                struct rlimit rl = {.rlim_cur = v, .rlim_max = v};
                if (setrlimit(limits[i].resource, &rl) < 0) {
                        r = -errno;
                        sandbox_report_add(layers, "rlimit", false, "setrlimit(%s): %s",
                                           limits[i].name, strerror(errno));
                        goto out;
                }
                off += (size_t)snprintf(detail + off, sizeof(detail) - off, "%s%s=%llu",
                                        off ? " " : "", limits[i].name, (unsigned long long)v);
                if (off >= sizeof(detail))
                        off = sizeof(detail) - 1;
        }
        signal(SIGXFSZ, SIG_IGN);
        sandbox_report_add(layers, "rlimit", true, "%s%s", detail, skipped);
out:
        return r;
}

/**
 * sandbox_rearm_cpu() - bound the CPU time of the next job
 * @seconds: CPU seconds from now before SIGXCPU ends the process; 0 puts the
 *           soft limit back at the lifetime (hard) limit after a job
 *
 * Lowers (or restores) the RLIMIT_CPU soft limit; the hard limit set by
 * sandbox_enter() never moves, so the job cannot buy more than the worker's
 * lifetime budget. Allowed after sandbox_lock() (prlimit64 on itself).
 *
 * Return: 0, or a negative errno.
 */
int sandbox_rearm_cpu(unsigned seconds)
{
        struct rlimit rl;
        struct timespec ts;
        int r = 0;

        if (getrlimit(RLIMIT_CPU, &rl) < 0 || clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) < 0) {
                r = -errno;
                goto out;
        }
        if (seconds == 0) {
                rl.rlim_cur = rl.rlim_max;
        } else {
                rlim_t want = (rlim_t)ts.tv_sec + 1 + seconds;
                rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && want > rl.rlim_max ? rl.rlim_max : want;
        }
        if (setrlimit(RLIMIT_CPU, &rl) < 0)
                r = -errno;
out:
        return r;
}
