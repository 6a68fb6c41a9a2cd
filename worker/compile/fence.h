/*
 * fence - a pure pass from PTX to PTX that bounds-checks a candidate's
 * memory accesses against the job's allocation table (worker/fence_abi.h),
 * so that a bad access stops the thread with a record instead of faulting
 * the context. The compile worker runs it on NVRTC's PTX (and on PTX
 * submissions) and links the result into a second, "fenced" CUBIN that the
 * GPU worker runs in the correctness phase; timing runs the plain CUBIN.
 *
 * What is checked, before it executes: every ld, ldu, st, atom and red in
 * the global or the generic state space, and every cp.async from global
 * memory, inline asm included, whose address is a register (plus an
 * offset). Generic addresses outside the global window (shared, local)
 * pass. Each checked access must be aligned to its size and lie wholly
 * inside one range of the table. `trap` and a failing assert
 * (__assertfail) record themselves the same way and exit. Every backward
 * branch of a kernel's body looks at the clock every FENCE_LOOP_EVERY times
 * it is taken: a thread that has run longer than the loop budget records a
 * hang and exits (fence_abi.h).
 *
 * What is not checked (the plain path's fault handling still covers it):
 * addresses named by a symbol (a module variable at a constant offset),
 * explicit .shared/.local/.const/.param accesses, wmma/ldmatrix/stmatrix,
 * bulk and tensor copies (cp.async.bulk, TMA), textures and surfaces,
 * cp.async with an ignore-src operand, and 32-bit addressing (the pass
 * refuses a module without `.address_size 64`); loops in device functions
 * that are not inlined, and indirect branches (brx.idx), get no loop budget.
 */
#pragma once

#include <stddef.h>

enum {
        FENCE_E_UNSUPPORTED = 1, /* the module cannot be fenced; the report's note says why */
};

typedef struct FenceReport {
        unsigned sites;     /* accesses checked (plus traps and the assert hook) */
        unsigned unchecked; /* memory instructions the pass saw but cannot check */
        unsigned functions; /* function bodies */
        unsigned loops;     /* backward branches of kernels given the loop budget */
        char note[160];     /* why FENCE_E_UNSUPPORTED, or the first unchecked kind */
} FenceReport;

int fence_ptx(const char *ptx, size_t len, const char *source_name, char **ret_ptx, size_t *ret_len,
              FenceReport *ret_report);
