/*
 * fence_abi - the contract between the fence pass (worker/compile/fence.c, in the
 * compile worker) and the GPU worker that runs a fenced build
 * (worker/gpu/judge.c): the names and layouts of the symbols the pass adds to
 * a candidate's module, and how a site word encodes what was checked.
 * Host-only; no CUDA headers.
 *
 * A fenced module has three symbols of its own:
 *
 *   __kevald_fence_tab    .const u64[FENCE_TAB_WORDS], 16-byte aligned: word 0
 *                         the number of ranges, word 1 the loop budget in
 *                         nanoseconds (0: none; see below), then from
 *                         word FENCE_TAB_FIRST (begin, end) byte address
 *                         pairs, end exclusive (each pair 16-byte aligned,
 *                         read with one ld.const.v2.u64). Written by the GPU
 *                         worker before the module's kernels run.
 *   __kevald_fence_rec    .global u64[FENCE_REC_WORDS]: the first
 *                         violation. Word 0 is its site word (0: none; set
 *                         once with a compare-and-swap), word 1 the address,
 *                         then six u32: tid.x, tid.y, tid.z, ctaid.x,
 *                         ctaid.y, ctaid.z. The GPU worker zeroes it.
 *   __kevald_fence_names  .global u8[]: the module's function names, NUL
 *                         after each, in the order of a site word's
 *                         function index.
 *
 * A thread that fails a check records itself (if first) and exits; exited
 * threads release the barriers they would hold up, so the kernel ends
 * normally and the context stays usable.
 *
 * The loop budget: every thread of a kernel notes %globaltimer at entry, and
 * every 64th time it takes a backward branch of the kernel's body it
 * compares the time since with the budget; past it, it records a
 * FENCE_KIND_HANG site (address: the nanoseconds it ran) and exits. A
 * thread that ran longer than the launch limit means the launch did, so a
 * hung kernel ends itself at its limit and the context is kept. A kernel's
 * thread also exits when it finds the record already claimed, at its start
 * and at those looks at the clock, so that the rest of a launch stops soon
 * after its first violation (later waves of blocks at once).
 */
#pragma once

#include <stdint.h>

#define FENCE_SYM_TABLE "__kevald_fence_tab"
#define FENCE_SYM_RECORD "__kevald_fence_rec"
#define FENCE_SYM_NAMES "__kevald_fence_names"
#define FENCE_SYM_PREFIX "__kevald_fence_"

#define FENCE_RANGES_MAX 128
#define FENCE_TAB_FIRST 2
#define FENCE_TAB_WORDS (FENCE_TAB_FIRST + 2 * FENCE_RANGES_MAX)
#define FENCE_REC_WORDS 5 /* 2 u64 + 6 u32 */
#define FENCE_LOOP_EVERY 64 /* backward branches between two looks at the clock */

/* What a site checks (site word bits 24-27). */
enum {
        FENCE_KIND_LOAD = 1,
        FENCE_KIND_STORE = 2,
        FENCE_KIND_ATOMIC = 3, /* atom and red: read-modify-write */
        FENCE_KIND_COPY = 4,   /* cp.async: a load into shared memory */
        FENCE_KIND_TRAP = 5,
        FENCE_KIND_ASSERT = 6,
        FENCE_KIND_HANG = 7,   /* a loop ran past the budget */
};

/*
 * Site word: bit 63 always set (a recorded word is never 0); bits 0-23 the
 * line (0: unknown); 24-27 the kind; bit 28 the line is the PTX's own line
 * (a PTX submission) rather than the CUDA source's; bit 29 the address was
 * misaligned (set at run time); bits 32-47 the access size in bytes;
 * bits 48-62 the function index (FENCE_FUNC_UNKNOWN: not known, as for an
 * assert).
 */
#define FENCE_SITE_SET (1ull << 63)
#define FENCE_SITE_PTX_LINE (1ull << 28)
#define FENCE_SITE_MISALIGNED (1ull << 29)
#define FENCE_FUNC_UNKNOWN 0x7fffu
#define FENCE_LINE_MAX 0xffffffu

static inline uint64_t fence_site_word(unsigned line, unsigned kind, int ptx_line, unsigned size, unsigned func)
{
        return FENCE_SITE_SET | (uint64_t)(line > FENCE_LINE_MAX ? 0 : line) | (uint64_t)(kind & 0xf) << 24 |
               (ptx_line ? FENCE_SITE_PTX_LINE : 0) | (uint64_t)(size & 0xffff) << 32 |
               (uint64_t)(func & 0x7fff) << 48;
}

static inline unsigned fence_site_line(uint64_t w) { return (unsigned)(w & FENCE_LINE_MAX); }
static inline unsigned fence_site_kind(uint64_t w) { return (unsigned)(w >> 24 & 0xf); }
static inline int fence_site_ptx_line(uint64_t w) { return (w & FENCE_SITE_PTX_LINE) != 0; }
static inline int fence_site_misaligned(uint64_t w) { return (w & FENCE_SITE_MISALIGNED) != 0; }
static inline unsigned fence_site_size(uint64_t w) { return (unsigned)(w >> 32 & 0xffff); }
static inline unsigned fence_site_func(uint64_t w) { return (unsigned)(w >> 48 & 0x7fff); }
