/*
 * resultcheck - what a worker's RESULT must be before the dispatcher
 * believes it, caches it or stores it as a reward (docs/internals.md,
 * "Checking worker results"). A worker is a sandboxed process that runs
 * untrusted code; a RESULT that fails these checks is the worker's fault
 * (it is killed and the request counts an attempt), never the source's.
 */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

enum {
        RESULTCHECK_E_INVALID = 1,      /* the RESULT is not to be believed; the reason is in @why */
};

/* Reasons are at most this long (NUL included): room for one JSON pointer and a value. */
#define RESULTCHECK_WHY_BYTES 192

int resultcheck_compile(json_t *result, const uint8_t *blob, size_t blob_len, const char *arch,
                        char why[RESULTCHECK_WHY_BYTES]);
int resultcheck_gpu(json_t *result, double deadline_ms, char why[RESULTCHECK_WHY_BYTES]);
/* kevald-torch's build RESULT (no blob; ok, error, log, wall_ms), and a build as the compile cache
 * keeps it (dispatch_torch.c); a run RESULT is checked by resultcheck_gpu(). 0 or RESULTCHECK_E_INVALID. */
int resultcheck_torch_build(json_t *result, size_t blob_len, char why[RESULTCHECK_WHY_BYTES]);
int resultcheck_torch_compile(json_t *compile, char why[RESULTCHECK_WHY_BYTES]);
