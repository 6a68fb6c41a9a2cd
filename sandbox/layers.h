/*
 * layers - the private interface between sandbox.c (order and report) and
 * the one-mechanism-per-file layers. Each sandbox_*_apply() applies its
 * layer for a profile and records it in @layers with sandbox_report_add():
 * it returns 0 when the layer is active or honestly reported as unavailable,
 * and a negative errno only when the layer must work and did not. The unit
 * test calls these one at a time to check each layer on its own.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "sandbox/sandbox.h"

void sandbox_report_add(json_t *layers, const char *name, bool active, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* proc.c */
int sandbox_proc_apply_pdeathsig(json_t *layers);
int sandbox_proc_apply_dumpable(json_t *layers);
int sandbox_proc_apply_fds(const int *keep_fds, int n_keep, json_t *layers);
int sandbox_proc_apply_cwd(json_t *layers);
int sandbox_proc_apply_uid(SandboxProfile profile, json_t *layers);
int sandbox_proc_apply_uid_paths(SandboxProfile profile, const SandboxPaths *paths, json_t *layers);
int sandbox_proc_apply_nnp(json_t *layers);
int sandbox_proc_count_threads(void);

/* rlimit.c */
int sandbox_rlimit_apply(SandboxProfile profile, json_t *layers);

/* netns.c */
int sandbox_netns_apply(json_t *layers);

/* landlock.c */
int sandbox_landlock_abi(void);
int sandbox_landlock_apply(SandboxProfile profile, json_t *layers);
int sandbox_landlock_apply_paths(SandboxProfile profile, const SandboxPaths *paths, json_t *layers);

/* seccomp.c */
int sandbox_seccomp_apply(SandboxProfile profile, json_t *layers);
