/*
 * bench-enter - the cost of the confinement itself: sandbox_enter() and
 * sandbox_lock() for each profile, each in a fresh forked child (as a worker
 * does it once after exec), and the per-system-call cost of the seccomp
 * filter (getpid() before and after the lock).
 *
 * Build (from the repository root, after `ninja -C BUILD`):
 *   cc -O2 -D_GNU_SOURCE -I. bench/sandbox/bench-enter.c BUILD/sandbox/libkevald-sandbox.a \
 *      BUILD/common/libkevald-common.a -ljansson -lseccomp -lm -o /tmp/bench-enter
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/sandbox.h"

static double now_us(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

#define REPS 30

int main(void)
{
        static const char *names[] = {"compile", "gpu"};
        for (int prof = 0; prof < 2; prof++) {
                double enter[REPS], lock[REPS], sc_before = 0, sc_after = 0;
                for (int i = 0; i < REPS; i++) {
                        int fds[2];
                        if (pipe(fds) < 0)
                                return 1;
                        pid_t pid = fork();
                        if (pid == 0) {
                                SandboxReport rep = {0};
                                double t[4];
                                int keep[] = {fds[1]};
                                t[0] = now_us();
                                if (sandbox_enter((SandboxProfile)prof, keep, 1, &rep) != 0)
                                        _exit(1);
                                t[1] = now_us();
                                double s0 = now_us();
                                for (int k = 0; k < 100000; k++)
                                        getpid();
                                t[2] = (now_us() - s0) / 100000;
                                s0 = now_us();
                                if (sandbox_lock((SandboxProfile)prof, &rep) != 0)
                                        _exit(1);
                                double l = now_us() - s0;
                                s0 = now_us();
                                for (int k = 0; k < 100000; k++)
                                        getpid();
                                t[3] = (now_us() - s0) / 100000;
                                double out[4] = {t[1] - t[0], l, t[2], t[3]};
                                if (write(fds[1], out, sizeof(out)) != sizeof(out))
                                        _exit(1);
                                _exit(0);
                        }
                        double out[4];
                        close(fds[1]);
                        if (read(fds[0], out, sizeof(out)) != sizeof(out))
                                return 1;
                        close(fds[0]);
                        waitpid(pid, NULL, 0);
                        enter[i] = out[0];
                        lock[i] = out[1];
                        sc_before += out[2] / REPS;
                        sc_after += out[3] / REPS;
                }
                qsort(enter, REPS, sizeof(double), cmp);
                qsort(lock, REPS, sizeof(double), cmp);
                printf("%-8s sandbox_enter median %.0f us (p90 %.0f); sandbox_lock median %.0f us; "
                       "getpid %.3f us -> %.3f us under the filter\n",
                       names[prof], enter[REPS / 2], enter[REPS * 9 / 10], lock[REPS / 2], sc_before,
                       sc_after);
        }
        return 0;
}
