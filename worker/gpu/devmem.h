/*
 * devmem - the GPU worker's device memory: every buffer of a job is
 * allocated here, tracked, surrounded (for candidate buffers) by canary
 * guard bands, and zeroed when it is freed, so that no later job can read
 * what this one left behind (cuMemAlloc does not zero). The trusted device
 * helpers (worker/gpu/device.cu, embedded as a fatbin) are loaded here too, and
 * the functions below that use them are synchronous: they enqueue, wait with
 * the deadline (gpu_deadline_set()), and copy small results back through
 * page-locked memory.
 *
 * Slab: at start-up each worker allocates one block of device memory (a
 * 1/DEVMEM_SLAB_SHARE of its memory budget, below) and zeroes it; buffers
 * that fit are placed in it on the host (worker/gpu/extents.h: first fit, 512
 * byte granules), with no driver call, and freeing one queues its zeroing
 * and gives the range back at once. cuMemAlloc is not free: pool misses
 * cost 9 ms a shape set on one H100 with the RL corpus, and 42 ms on each
 * of two busy H100s of one host (BENCHMARKS.md).
 * The price: a candidate's stray write more than a guard band past its
 * buffer lands in another slab range (another buffer of the job, the
 * reference's included, or free slab memory) where a separate cuMemAlloc
 * might have faulted; the driver sub-allocates small cuMemAllocs from
 * shared pages and every buffer is in the one address space of the
 * process, so that was never a guarantee. The end of a job zeroes the slab
 * up to the farthest range the job had, so what such writes left there
 * does not outlive the job; a write farther into the slab than any of the
 * job's ranges is not erased (later buffers are still generated, poisoned
 * or zeroed before any use). The slab is not given back when the device
 * runs out of memory (the pool is): each worker, standbys included, keeps
 * its quarter of the budget, 1 GiB on an 80 GB card.
 *
 * Buffer pool: a freed allocation is not given back to the driver but kept
 * for the next devmem_alloc() of the same total size (the same shapes recur
 * within a job and across the jobs of a task), which saves a cuMemAlloc, a
 * cuMemFree and a wait for the stream per buffer. Freeing still zeroes the
 * whole allocation, guards included; the zeroing is queued on the worker's
 * single stream, so every later use of the memory (by the helpers, cuBLAS,
 * copies, or a later job's kernels, stray pointers included) is ordered
 * after it, and devmem_free() need not wait. Pooled memory belongs to no
 * job: devmem_live_*() do not count it. The memory budget is
 * min(device memory / 16, 4 GiB), or KEVALD_DEVMEM_POOL_BYTES bytes when
 * that is set in the environment (0: no slab and no pool, every free waits
 * and calls cuMemFree); the pool holds at most the budget less the slab,
 * and at most DEVMEM_POOL_ENTRIES_MAX allocations;
 * beyond that the least recently freed go back to the driver. When
 * cuMemAlloc runs out of memory the whole pool is released and the
 * allocation tried once more. Memory goes back to the driver only after a
 * wait for the stream with the deadline (cuMemFree may synchronize the
 * device, and must not block on a spinning kernel).
 *
 * Return codes are those of gpu.h: 0, GPU_E_CUDA, GPU_E_TIMEOUT.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "worker/gpu/devrng.h"
#include "worker/gpu/gpu.h"

/* Guard band on each side of every candidate buffer. */
#define DEVMEM_GUARD_BYTES (64u << 10)

typedef struct DevBuf {
        GpuPtr base;   /* the allocation */
        GpuPtr ptr;    /* the buffer: base + guard, 256-byte aligned */
        size_t bytes;  /* the buffer's size */
        size_t guard;  /* guard band bytes on each side (0: none) */
        size_t total;  /* allocation size: guard + bytes + guard (at least 256) */
} DevBuf;

typedef struct DevGuardReport {
        uint64_t before_bytes;  /* damaged bytes in the band before the buffer */
        uint64_t before_far;    /* farthest damaged byte before the start, in bytes (1 = just before) */
        uint64_t after_bytes;   /* damaged bytes in the band after the buffer */
        uint64_t after_first;   /* offset past the end of the first damaged byte (0 = just past) */
        uint64_t after_last;    /* offset past the end of the last damaged byte */
} DevGuardReport;

/* The memory budget's default is min(device memory / 16, this; every worker
 * process of a GPU, standbys included, keeps its own slab and pool); the
 * slab's share of it; most allocations the pool keeps (each is at least 256
 * bytes). */
#define DEVMEM_POOL_CAP_BYTES (4ull << 30)
#define DEVMEM_SLAB_SHARE 4
#define DEVMEM_POOL_ENTRIES_MAX 1024

int devmem_init(const void *fatbin, size_t len, int sms);
int devmem_warm(void);

int devmem_alloc(size_t bytes, size_t guard, DevBuf *ret_buf);
int devmem_free(DevBuf *buf);
int devmem_free_all(void);
size_t devmem_live_count(void);
uint64_t devmem_live_bytes(void);
int devmem_pool_release(void);
size_t devmem_pool_count(void);
uint64_t devmem_pool_bytes(void);
uint64_t devmem_pool_limit(void);

/* Fills and tally comparisons between these two go out in batched launches. */
void devmem_batch_begin(void);
int devmem_batch_end(void);
int devmem_generate(const DevBuf *buf, const KvGenParams *params);
int devmem_poison(const DevBuf *buf, int dtype);
int devmem_zero(const DevBuf *buf);
int devmem_guard_fill(const DevBuf *buf, uint32_t salt);
int devmem_compare_tol(GpuPtr got, GpuPtr want, const KvCmpParams *params, KvCmpStats *ret_stats);
/* Comparisons queued without waiting and read back together (the timing
 * loop checks every timed run this way); fits in the staging buffer. */
#define DEVMEM_TALLY_SLOTS 1024u
int devmem_tally_compare(unsigned slot, GpuPtr got, GpuPtr want, const KvCmpParams *params);
int devmem_tally_fetch(unsigned n, KvCmpStats *ret);
/* Byte checks (guard bands, bitwise equality) queued without waiting and
 * read back together. */
#define DEVMEM_DIFF_SLOTS 1024u
int devmem_check_guards(unsigned slot, const DevBuf *buf, uint32_t salt);
int devmem_check_bits(unsigned slot, GpuPtr a, GpuPtr b, size_t bytes);
int devmem_check_fetch(unsigned n, KvDiff *ret);
void devmem_guard_report(const DevBuf *buf, const KvDiff *before, const KvDiff *after, DevGuardReport *ret);
/* L2 lines a candidate marked evict_last, back to evict_normal before a flush. */
#define DEVMEM_L2_RANGES_MAX 4096u
int devmem_l2_ranges(const DevBuf *const *bufs, size_t n);
int devmem_l2_normal(void);
int devmem_l2_flush(GpuPtr buf, size_t bytes);
int64_t devmem_alloc_ns_take(void);
int devmem_mismatch_from(GpuPtr got, GpuPtr want, const KvCmpParams *params, uint64_t start,
                         uint64_t *ret_index);
int devmem_read(GpuPtr src, void *dst, size_t bytes);

/* Largest piece devmem_read_chunk() copies at once (page-locked buffer). */
#define DEVMEM_CHUNK_BYTES (4u << 20)
int devmem_read_chunk(GpuPtr src, size_t bytes, const void **ret_view);
