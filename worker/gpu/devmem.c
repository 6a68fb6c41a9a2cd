/*
 * devmem - see devmem.h. Invariants: every allocation of a job is in the
 * live table until devmem_free()/devmem_free_all() has enqueued its zeroing
 * on the worker's one stream and given it back to the slab's free ranges or
 * the pool; every free slab range and every pool entry is zero or has its
 * zeroing queued ahead of anything later on that stream, so whatever reuses
 * it (or reads it through a stray pointer) sees zeros; the exception is a
 * stray write of the running job into free memory, which the end of the job
 * erases in the slab up to the farthest range the job had (slab_used). The
 * pool is ordered by the time of the free (oldest first), holds at most
 * pool_limit bytes and DEVMEM_POOL_ENTRIES_MAX entries, and gives memory
 * back with cuMemFree only after a deadline-bounded wait for the stream
 * (cuMemFree may synchronize the device, and nothing in the worker blocks
 * on a spinning kernel without a deadline). The helper result area and the
 * page-locked staging buffers belong to the process, not to a job.
 */
#include "worker/gpu/devmem.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "worker/gpu/extents.h"

#define BLOCK 256
#define RESULT_BYTES 4096
#define STAGING_BYTES (64u << 10)
#define TALLY_BYTES (DEVMEM_TALLY_SLOTS * sizeof(KvCmpStats))
#define DIFF_BYTES (DEVMEM_DIFF_SLOTS * sizeof(KvDiff))
_Static_assert(TALLY_BYTES <= STAGING_BYTES, "the tally is read back through the staging buffer");
_Static_assert(DIFF_BYTES <= STAGING_BYTES, "byte checks are read back through the staging buffer");
/* Batches go by value as the one kernel parameter: 4 KiB is what every driver takes. */
_Static_assert(sizeof(KvFillBatch) <= 4096 && sizeof(KvCmpBatch) <= 4096 && sizeof(KvCheckBatch) <= 4096,
               "a batch must fit the kernel parameter space");

static GpuModule *helpers;
static GpuKernel *k_warm, *k_cmp_init, *k_compare_tol, *k_mismatch_from, *k_l2_normal, *k_l2_flush, *k_fill_batch,
        *k_cmp_init_batch, *k_compare_batch, *k_diff_init_batch, *k_check_batch;
static GpuPtr results;        /* RESULT_BYTES of device memory for helper results */
static GpuPtr tally;          /* DEVMEM_TALLY_SLOTS comparison results (devmem_tally_*) */
static GpuPtr diffs;          /* DEVMEM_DIFF_SLOTS byte-check results (devmem_check_*) */
static GpuPtr ranges;         /* DEVMEM_L2_RANGES_MAX KvRange for kv_l2_normal */
static KvRange *ranges_host;  /* page-locked, the upload's source */
static uint32_t n_ranges;
static uint64_t ranges_most;  /* the largest range: sizes the grid */
static unsigned char *staging; /* STAGING_BYTES, page-locked */
static unsigned char *chunk;   /* DEVMEM_CHUNK_BYTES, page-locked */
static unsigned max_blocks = 1024;

/* Fills and tally comparisons go out as batches: between
 * devmem_batch_begin() and _end() they are collected here and launched
 * together, outside that each is a batch of one; at most one kind is
 * pending. */
static bool batching;
static KvFillBatch fills;
static uint64_t fills_most; /* the largest op's elements: sizes the grid */
static KvCmpBatch cmps;
static uint64_t cmps_most;
/* Queued byte checks (devmem_check_*), batched at any time: launched when
 * full, before any other work of this module, and by devmem_check_fetch(). */
static KvCheckBatch checks;
static uint64_t checks_most;

static DevBuf *live;
static size_t n_live, cap_live;

typedef struct PoolEntry {
        GpuPtr base;
        size_t total;
} PoolEntry;

/* The slab: one allocation made at start-up, carved on the host. Every
 * byte at or past slab_used is zero (or its zeroing queued) unless a kernel
 * wrote there through a stray pointer: slab_used is the end of the
 * farthest range handed out since the job began. */
static GpuPtr slab;
static Extents slab_free;
static uint64_t slab_used;

static PoolEntry *pool;          /* oldest free first */
static size_t n_pool, cap_pool;
static uint64_t pool_bytes;
static uint64_t pool_limit;      /* set by devmem_init(): the memory budget less the slab */
static int64_t driver_alloc_ns;  /* time in gpu_alloc() for pool misses (devmem_alloc_ns_take()) */

/* KEVALD_DEVMEM_POOL_BYTES, a decimal byte count, overrides the default.
 * Return: 0 (@ret_limit set), 1 when unset, -EINVAL. */
static int pool_limit_from_env(uint64_t *ret_limit)
{
        const char *s = getenv("KEVALD_DEVMEM_POOL_BYTES");
        unsigned long long v;
        char *end;

        if (!s || !*s)
                return 1;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || *end || s[0] < '0' || s[0] > '9')
                return -EINVAL;
        *ret_limit = v;
        return 0;
}

/* Allocate the slab and queue its zeroing. No room for it is not an error:
 * every buffer then comes from the pool or the driver. Return: 0,
 * GPU_E_CUDA, -ENOMEM. */
static int slab_init(uint64_t bytes)
{
        int r;

        bytes = bytes / EXTENTS_GRANULE * EXTENTS_GRANULE;
        if (bytes == 0)
                return 0;
        if ((r = gpu_alloc(bytes, &slab))) {
                if (gpu_out_of_memory(r)) {
                        log_warn("devmem: no room for a slab of %llu bytes; buffers come from the driver",
                                 (unsigned long long)bytes);
                        slab = 0;
                        return 0;
                }
                return r;
        }
        if ((r = gpu_memset8(slab, 0, bytes)) || (r = extents_init(&slab_free, bytes))) {
                gpu_free(slab); /* nothing of it handed out; the caller gives up */
                slab = 0;
                return r;
        }
        return 0;
}

/**
 * devmem_init() - load the trusted helper fatbin and set up the result area
 * @fatbin, @len: the embedded image; borrowed (copied to malloc'd, suitably
 *         aligned memory for the loader)
 * @sms: multiprocessor count, to size helper grids
 *
 * Also sizes the worker's memory budget: min(device memory / 16, 4 GiB), or
 * KEVALD_DEVMEM_POOL_BYTES from the environment (0: neither slab nor pool);
 * a 1/DEVMEM_SLAB_SHARE of it is allocated now as the slab, the rest bounds
 * the pool.
 *
 * Return: 0, GPU_E_CUDA, GPU_E_NOT_FOUND (the fatbin lacks a helper: a
 * build error), -ENOMEM, -EINVAL (KEVALD_DEVMEM_POOL_BYTES is not a
 * decimal number).
 */
int devmem_init(const void *fatbin, size_t len, int sms)
{
        struct {
                const char *name;
                GpuKernel **k;
        } table[] = {
                { "kv_warm", &k_warm },
                { "kv_cmp_init", &k_cmp_init },
                { "kv_compare_tol", &k_compare_tol },
                { "kv_mismatch_from", &k_mismatch_from },
                { "kv_l2_normal", &k_l2_normal },
                { "kv_l2_flush", &k_l2_flush },
                { "kv_fill_batch", &k_fill_batch },
                { "kv_cmp_init_batch", &k_cmp_init_batch },
                { "kv_compare_batch", &k_compare_batch },
                { "kv_diff_init_batch", &k_diff_init_batch },
                { "kv_check_batch", &k_check_batch },
        };
        void *host = NULL;
        size_t mem_free, mem_total;
        uint64_t limit = 0;
        int r, from_env;

        if ((from_env = pool_limit_from_env(&limit)) < 0) {
                log_error("devmem: KEVALD_DEVMEM_POOL_BYTES: not a byte count");
                return from_env;
        }
        r = gpu_module_load(fatbin, len, &helpers);
        if (r)
                return r;
        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
                if ((r = gpu_kernel_get(helpers, table[i].name, table[i].k))) {
                        log_error("devmem: helper kernel '%s' missing from the device fatbin", table[i].name);
                        return r;
                }
        }
        if ((r = gpu_alloc(RESULT_BYTES, &results)) || (r = gpu_alloc(TALLY_BYTES, &tally)) ||
            (r = gpu_alloc(DIFF_BYTES, &diffs)) ||
            (r = gpu_alloc(DEVMEM_L2_RANGES_MAX * sizeof(KvRange), &ranges)))
                return r;
        if ((r = gpu_host_alloc(DEVMEM_L2_RANGES_MAX * sizeof(KvRange), &host)))
                return r;
        ranges_host = host;
        if ((r = gpu_host_alloc(STAGING_BYTES, &host)))
                return r;
        staging = host;
        if ((r = gpu_host_alloc(DEVMEM_CHUNK_BYTES, &host)))
                return r;
        chunk = host;
        if (sms > 0)
                max_blocks = (unsigned)sms * 8u;
        if (from_env == 1) {
                if ((r = gpu_mem_info(&mem_free, &mem_total)))
                        return r;
                limit = mem_total / 16 < DEVMEM_POOL_CAP_BYTES ? mem_total / 16 : DEVMEM_POOL_CAP_BYTES;
        }
        if ((r = slab_init(limit / DEVMEM_SLAB_SHARE)))
                return r;
        pool_limit = limit - slab_free.size;
        log_info("devmem: slab of %llu bytes, buffer pool up to %llu bytes", (unsigned long long)slab_free.size,
                 (unsigned long long)pool_limit);
        return 0;
}

static unsigned grid_for(uint64_t n)
{
        uint64_t g = (n + BLOCK - 1) / BLOCK;

        if (g < 1)
                g = 1;
        if (g > max_blocks)
                g = max_blocks;
        return (unsigned)g;
}

static int settle(void);

static int launch(GpuKernel *k, uint64_t n, void **params)
{
        unsigned grid[3] = { grid_for(n), 1, 1 };
        unsigned block[3] = { BLOCK, 1, 1 };
        int r = settle();

        return r ? r : gpu_launch(k, grid, block, 0, params);
}

static int launch1(GpuKernel *k, void **params)
{
        unsigned one[3] = { 1, 1, 1 };
        int r = settle();

        return r ? r : gpu_launch(k, one, one, 0, params);
}

/* @rows block rows, each as wide as @most elements need, together at most
 * about twice what launch() uses for one buffer. */
static int launch_rows(GpuKernel *k, uint64_t most, unsigned rows, unsigned block_x, void **params)
{
        unsigned wide = grid_for(most), cap = 2 * max_blocks / rows;
        unsigned grid[3] = { wide < cap ? wide : cap, rows, 1 };
        unsigned block[3] = { block_x, 1, 1 };

        if (grid[0] < 1)
                grid[0] = 1;
        return gpu_launch(k, grid, block, 0, params);
}

/* Launch a batch of *@n ops (@init once per row first, when given; @work
 * sized by @most elements), then empty it, launched or not: a failed launch
 * is the job's end, and nothing of it is launched twice. */
static int flush_batch(GpuKernel *init, GpuKernel *work, void *batch, uint32_t *n, uint64_t most)
{
        void *args[] = { batch };
        int r = 0;

        if (!*n)
                return 0;
        if (init)
                r = launch_rows(init, 1, *n, 32, args);
        if (r == 0 && most)
                r = launch_rows(work, most, *n, BLOCK, args);
        *n = 0;
        return r;
}

static int flush_fills(void)
{
        return flush_batch(NULL, k_fill_batch, &fills, &fills.n, fills_most);
}

static int flush_cmps(void)
{
        return flush_batch(k_cmp_init_batch, k_compare_batch, &cmps, &cmps.n, cmps_most);
}

static int flush_checks(void)
{
        return flush_batch(k_diff_init_batch, k_check_batch, &checks, &checks.n, checks_most);
}

/* Launch what is pending (one kind at most); every other enqueue of this
 * module comes after it. */
static int settle(void)
{
        int r = flush_fills();

        if (r == 0)
                r = flush_cmps();
        return r ? r : flush_checks();
}

/**
 * devmem_batch_begin() - collect the fills (generate, poison, zero, guard
 * fill) and tally comparisons that follow into as few launches as possible
 * (KV_BATCH_MAX ops each), until devmem_batch_end(). Between the two only
 * this module's calls may enqueue work: they keep the stream's order (ops
 * on the same bytes, or of the other kind, launch what is pending first).
 */
void devmem_batch_begin(void)
{
        batching = true;
}

/** devmem_batch_end() - launch what is pending and stop collecting. */
int devmem_batch_end(void)
{
        int r = settle();

        batching = false;
        return r;
}

/* The first byte a fill op writes, and the byte past its last. */
static void fill_span(const KvFillOp *o, uint64_t *ret_lo, uint64_t *ret_hi)
{
        *ret_lo = o->dst + o->off;
        *ret_hi = *ret_lo + (o->kind == KV_FILL_GENERATE ? o->gen.count * (uint64_t)kv_dtype_size(o->gen.dtype)
                                                         : o->bytes);
}

static bool fill_overlaps(const KvFillOp *op)
{
        uint64_t lo, hi, olo, ohi;

        fill_span(op, &lo, &hi);
        for (uint32_t i = 0; i < fills.n; i++) {
                fill_span(&fills.op[i], &olo, &ohi);
                if (lo < ohi && olo < hi)
                        return true;
        }
        return false;
}

/* One fill op: queued into the batch, or launched alone outside one;
 * @elements sizes its row. */
static int fill(const KvFillOp *op, uint64_t elements)
{
        int r;

        if ((r = flush_cmps()) || (r = flush_checks()))
                return r;
        if ((fills.n == KV_BATCH_MAX || fill_overlaps(op)) && (r = flush_fills()))
                return r;
        if (fills.n == 0)
                fills_most = 0;
        fills.op[fills.n++] = *op;
        if (elements > fills_most)
                fills_most = elements;
        return batching ? 0 : flush_fills();
}

/* Wait for the stream, then copy @bytes of the result area to @dst. The
 * copy goes through page-locked memory and is waited for with the deadline
 * as well, so nothing here can block on a spinning kernel. */
static int fetch(void *dst, GpuPtr src, size_t bytes)
{
        int r;

        if ((r = settle()) || (r = gpu_copy_dtoh(staging, src, bytes)) || (r = gpu_stream_wait()))
                return r;
        memcpy(dst, staging, bytes);
        return 0;
}

/** devmem_warm() - a first tiny launch and wait, so the context is fully up before the sandbox locks. */
int devmem_warm(void)
{
        GpuPtr p = results;
        void *params[] = { &p };
        int one = 0, r;

        if ((r = launch1(k_warm, params)) || (r = fetch(&one, results, sizeof(one))))
                return r;
        if (one != 1) {
                gpu_error_set(-1, "KEVALD_WARM_FAILED", "the warm-up kernel did not write its flag",
                              "devmem_warm", false);
                return GPU_E_CUDA;
        }
        return 0;
}

/* ---------------------------------------------------------------- pool -- */

/* Take the most recently freed entry of exactly @total bytes. */
static GpuPtr pool_take(size_t total)
{
        for (size_t i = n_pool; i-- > 0;) {
                if (pool[i].total == total) {
                        GpuPtr base = pool[i].base;
                        memmove(&pool[i], &pool[i + 1], (n_pool - i - 1) * sizeof(*pool));
                        n_pool--;
                        pool_bytes -= total;
                        return base;
                }
        }
        return 0;
}

/* @arr (holding @n of @*cap elements of @elem bytes) with room for one more:
 * the same array, or a doubled one (64 at first). NULL: out of memory, @arr intact. */
static void *room_for_one(void *arr, size_t n, size_t *cap, size_t elem)
{
        size_t c = *cap ? *cap * 2 : 64;
        void *p;

        if (n < *cap)
                return arr;
        if (!(p = realloc(arr, c * elem)))
                return NULL;
        *cap = c;
        return p;
}

/* Append a zeroed (or zeroing-queued) allocation as the newest entry.
 * Return: 0, -ENOMEM (not pooled: the caller frees it). */
static int pool_put(GpuPtr base, size_t total)
{
        PoolEntry *grown = room_for_one(pool, n_pool, &cap_pool, sizeof(*pool));

        if (!grown)
                return -ENOMEM;
        pool = grown;
        pool[n_pool].base = base;
        pool[n_pool].total = total;
        n_pool++;
        pool_bytes += total;
        return 0;
}

/*
 * Free the oldest entries until the pool holds at most @max_bytes and
 * @max_count entries. Waits for the stream first (the zeroing must be done,
 * and cuMemFree may synchronize the device: it must not block on a
 * spinning kernel without the deadline). Return: 0, GPU_E_CUDA,
 * GPU_E_TIMEOUT (entries not yet freed stay in the pool).
 */
static int pool_trim(uint64_t max_bytes, size_t max_count)
{
        size_t drop = 0;
        uint64_t bytes = pool_bytes;
        int r = 0;

        while (drop < n_pool && (bytes > max_bytes || n_pool - drop > max_count))
                bytes -= pool[drop++].total;
        if (drop == 0)
                return 0;
        if ((r = gpu_stream_wait()))
                return r;
        for (size_t i = 0; i < drop; i++) {
                if ((r = gpu_free(pool[i].base))) {
                        drop = i;
                        break;
                }
                pool_bytes -= pool[i].total;
        }
        memmove(pool, pool + drop, (n_pool - drop) * sizeof(*pool));
        n_pool -= drop;
        return r;
}

/* Move a live allocation whose zeroing is queued into the pool (or, when
 * the pool table cannot grow, wait and free it), then bound the pool. */
static int pool_return(GpuPtr base, size_t total)
{
        int r;

        if (pool_put(base, total) < 0) {
                if ((r = gpu_stream_wait()) || (r = gpu_free(base)))
                        return r;
        }
        return pool_trim(pool_limit, DEVMEM_POOL_ENTRIES_MAX);
}

/**
 * devmem_pool_release() - give every pooled allocation back to the driver
 * (waits for the stream first, with the deadline).
 * Return: 0, GPU_E_CUDA, GPU_E_TIMEOUT (what was not freed stays pooled).
 */
int devmem_pool_release(void)
{
        return pool_trim(0, 0);
}

/** devmem_pool_count() - allocations in the pool (not part of any job). */
size_t devmem_pool_count(void)
{
        return n_pool;
}

/** devmem_pool_bytes() - bytes in the pool (not part of any job). */
uint64_t devmem_pool_bytes(void)
{
        return pool_bytes;
}

/** devmem_pool_limit() - the most bytes the pool keeps (0: no pool). */
uint64_t devmem_pool_limit(void)
{
        return pool_limit;
}

/* ------------------------------------------------------------- buffers -- */

static bool in_slab(GpuPtr base)
{
        return slab && base >= slab && base - slab < slab_free.size;
}

/* Bytes of device memory @b occupies: its total, rounded up to the granule in the slab. */
static size_t span(const DevBuf *b)
{
        return in_slab(b->base) ? (size_t)extents_round(b->total) : b->total;
}

/* Place @b (total set) in the slab. Return: 0 (base set), -ENOSPC. */
static int slab_take(DevBuf *b)
{
        uint64_t off;

        if (!slab || extents_take(&slab_free, b->total, &off))
                return -ENOSPC;
        b->base = slab + off;
        if (off + span(b) > slab_used)
                slab_used = off + span(b);
        return 0;
}

/* Give a slab allocation back (its zeroing queued). Cannot fail for a range
 * slab_take() placed, except when the free table cannot grow: then the
 * range is lost to the slab until the process ends. */
static void slab_give(GpuPtr base, size_t total)
{
        if (extents_give(&slab_free, base - slab, total))
                log_warn("devmem: slab range at +%llu not given back", (unsigned long long)(base - slab));
}

/* Queue the zeroing of @b's whole allocation (guards and granule slack included). */
static int zero_all(const DevBuf *b)
{
        return gpu_memset8(b->base, 0, span(b));
}

/* A zeroed (or zeroing-queued) allocation goes back where it came from. */
static int give_back(GpuPtr base, size_t total)
{
        if (in_slab(base)) {
                slab_give(base, total);
                return 0;
        }
        return pool_return(base, total);
}

/**
 * devmem_alloc() - allocate a buffer with @guard bytes of guard band on each
 * side, and track it. The slab is tried first (first fit, no driver call),
 * then a pooled allocation of the same total size (both read as zeros);
 * otherwise cuMemAlloc, and when that runs out of memory, the pool is
 * released and cuMemAlloc tried once more. The
 * contents are undefined until generated, poisoned or zeroed.
 * @ret_buf: filled on success
 * Return: 0, GPU_E_CUDA (CUDA_ERROR_OUT_OF_MEMORY in gpu_error_last() when
 * even the retry found no room), GPU_E_TIMEOUT (waiting to release the
 * pool), -ENOMEM, -EOVERFLOW.
 */
int devmem_alloc(size_t bytes, size_t guard, DevBuf *ret_buf)
{
        DevBuf b;
        int r;

        memset(&b, 0, sizeof(b));
        if (bytes > SIZE_MAX / 2 - 2 * (size_t)guard)
                return -EOVERFLOW;
        b.bytes = bytes;
        b.guard = guard;
        b.total = 2 * guard + bytes;
        if (b.total < 256)
                b.total = 256;
        {
                DevBuf *grown = room_for_one(live, n_live, &cap_live, sizeof(*live));
                if (!grown)
                        return -ENOMEM;
                live = grown;
        }
        if (slab_take(&b) < 0 && !(b.base = pool_take(b.total))) {
                int64_t t0 = gpu_now_ns();
                r = gpu_alloc(b.total, &b.base);
                if (n_pool > 0 && gpu_out_of_memory(r)) {
                        log_debug("devmem: out of memory for %zu bytes; releasing the pool (%llu bytes)", b.total,
                                  (unsigned long long)pool_bytes);
                        if ((r = devmem_pool_release()) == 0)
                                r = gpu_alloc(b.total, &b.base);
                }
                driver_alloc_ns += gpu_now_ns() - t0; /* the release and the retry count too */
                if (r)
                        return r;
        }
        b.ptr = b.base + guard;
        live[n_live++] = b;
        *ret_buf = b;
        return 0;
}

/** devmem_alloc_ns_take() - ns spent allocating from the driver (pool misses) since the last call; resets it. */
int64_t devmem_alloc_ns_take(void)
{
        int64_t v = driver_alloc_ns;

        driver_alloc_ns = 0;
        return v;
}

/* Remove @base from the live table. Return: its total size, 0 if untracked. */
static size_t untrack(GpuPtr base)
{
        for (size_t i = 0; i < n_live; i++) {
                if (live[i].base == base) {
                        size_t total = live[i].total;
                        live[i] = live[--n_live];
                        return total;
                }
        }
        return 0;
}

/**
 * devmem_free() - zero the whole allocation (guards included), give it back
 * to the slab or the pool, and clear @buf. A zeroed DevBuf is accepted. The zeroing is
 * queued on the worker's stream, not waited for: everything that can touch
 * the memory later is queued behind it. Only when the pool must shrink
 * does this wait (pool_trim()).
 * Return: 0; GPU_E_CUDA when the zeroing cannot be queued (the buffer stays
 * live); GPU_E_CUDA or GPU_E_TIMEOUT from shrinking the pool (@buf has
 * been released all the same).
 */
int devmem_free(DevBuf *buf)
{
        size_t total;
        int r;

        if (!buf || !buf->base)
                return 0;
        if ((r = settle()) || (r = zero_all(buf)))
                return r;
        total = untrack(buf->base);
        r = give_back(buf->base, total ? total : buf->total);
        memset(buf, 0, sizeof(*buf));
        return r;
}

/**
 * devmem_free_all() - zero every live allocation, wait once (so that a
 * failure or a timeout of anything queued before shows here), and give
 * them all back to the slab or the pool. Return: 0, GPU_E_CUDA, GPU_E_TIMEOUT (nothing
 * released when the zeroing or the wait failed: the caller exits, and the
 * process's death frees the memory; an error while shrinking the pool
 * leaves the live table empty).
 */
int devmem_free_all(void)
{
        int r;

        batching = false; /* a job's end: nothing of it is collected further */
        if ((r = settle()))
                return r;
        /* the slab up to the farthest range the job had, in one go: its
         * buffers, and what stray writes left in the gaps and slack */
        if (slab_used && (r = gpu_memset8(slab, 0, slab_used)))
                return r;
        for (size_t i = 0; i < n_live; i++)
                if (!in_slab(live[i].base) && (r = zero_all(&live[i])))
                        return r;
        if ((r = gpu_stream_wait()))
                return r;
        slab_used = 0;
        while (n_live > 0) {
                DevBuf *b = &live[n_live - 1];
                if (in_slab(b->base))
                        slab_give(b->base, b->total);
                else if (pool_put(b->base, b->total) < 0 && (r = gpu_free(b->base)))
                        return r;
                n_live--;
        }
        return pool_trim(pool_limit, DEVMEM_POOL_ENTRIES_MAX);
}

/** devmem_live_count() - allocations of the current job (the pool not included). */
size_t devmem_live_count(void)
{
        return n_live;
}

/** devmem_live_bytes() - bytes of the current job's allocations (the pool not included). */
uint64_t devmem_live_bytes(void)
{
        uint64_t s = 0;

        for (size_t i = 0; i < n_live; i++)
                s += live[i].total;
        return s;
}

/** devmem_generate() - fill @buf from @params (asynchronous). */
int devmem_generate(const DevBuf *buf, const KvGenParams *params)
{
        if (params->count == 0)
                return 0;
        return fill(&(KvFillOp){ .dst = buf->ptr, .kind = KV_FILL_GENERATE, .gen = *params }, params->count);
}

static int fill_bytes(GpuPtr dst, uint8_t value, size_t bytes)
{
        if (bytes == 0)
                return 0;
        return fill(&(KvFillOp){ .dst = dst, .bytes = bytes, .kind = KV_FILL_BYTE, .value = value }, (bytes + 3) / 4);
}

/** devmem_poison() - fill @buf with the poison of @dtype (asynchronous). */
int devmem_poison(const DevBuf *buf, int dtype)
{
        return fill_bytes(buf->ptr, kv_dtype_is_float(dtype) ? KV_POISON_FLOAT_BYTE : KV_POISON_INT_BYTE,
                          buf->bytes);
}

/** devmem_zero() - zero @buf (asynchronous). */
int devmem_zero(const DevBuf *buf)
{
        return fill_bytes(buf->ptr, 0, buf->bytes);
}

/** devmem_guard_fill() - write the canary pattern into both bands (asynchronous). */
int devmem_guard_fill(const DevBuf *buf, uint32_t salt)
{
        KvFillOp op = { .dst = buf->base, .off = 0, .bytes = buf->guard, .kind = KV_FILL_CANARY, .value = salt };
        int r;

        if (!buf->guard)
                return 0;
        if ((r = fill(&op, op.bytes)))
                return r;
        op.off = buf->guard + buf->bytes;
        op.bytes = buf->total - op.off;
        return fill(&op, op.bytes);
}

static int check_add(unsigned slot, const KvCheckOp *op)
{
        uint64_t elements = op->kind == KV_CHECK_BITS ? (op->bytes + 3) / 4 : op->bytes; /* words, bytes */
        int r;

        if (slot >= DEVMEM_DIFF_SLOTS)
                return -EINVAL;
        if ((r = flush_fills()) || (r = flush_cmps()) || (checks.n == KV_BATCH_MAX && (r = flush_checks())))
                return r;
        if (checks.n == 0)
                checks_most = 0;
        checks.op[checks.n] = *op;
        checks.op[checks.n].diff = diffs + (GpuPtr)slot * sizeof(KvDiff);
        checks.n++;
        if (elements > checks_most)
                checks_most = elements;
        return 0;
}

/**
 * devmem_check_guards() - queue the canary checks of both bands of @buf
 * into diff slots @slot (before) and @slot + 1 (after); a buffer without
 * guards gets two empty checks. Read with devmem_check_fetch(), then
 * devmem_guard_report().
 */
int devmem_check_guards(unsigned slot, const DevBuf *buf, uint32_t salt)
{
        KvCheckOp op = { .a = buf->base, .off = 0, .bytes = buf->guard, .kind = KV_CHECK_CANARY, .salt = salt };
        int r;

        if (slot + 1 >= DEVMEM_DIFF_SLOTS) /* both or neither */
                return -EINVAL;
        if ((r = check_add(slot, &op)))
                return r;
        op.off = buf->guard + buf->bytes;
        op.bytes = buf->guard ? buf->total - op.off : 0;
        return check_add(slot + 1, &op);
}

/** devmem_check_bits() - queue a bitwise comparison of two ranges into diff slot @slot. */
int devmem_check_bits(unsigned slot, GpuPtr a, GpuPtr b, size_t bytes)
{
        return check_add(slot, &(KvCheckOp){ .a = a, .b = b, .bytes = bytes, .kind = KV_CHECK_BITS });
}

/** devmem_check_fetch() - launch the queued checks, wait, copy diff slots [0, @n) to @ret (waits). */
int devmem_check_fetch(unsigned n, KvDiff *ret)
{
        if (n > DEVMEM_DIFF_SLOTS)
                return -EINVAL;
        return n ? fetch(ret, diffs, n * sizeof(KvDiff)) : settle();
}

/** devmem_guard_report() - the report of @buf's bands from its two diff slots. */
void devmem_guard_report(const DevBuf *buf, const KvDiff *before, const KvDiff *after, DevGuardReport *ret)
{
        uint64_t end = buf->guard + buf->bytes;

        memset(ret, 0, sizeof(*ret));
        if (!buf->guard)
                return;
        ret->before_bytes = before->count;
        if (before->count)
                ret->before_far = buf->guard - before->first; /* the lowest offset is the farthest */
        ret->after_bytes = after->count;
        if (after->count) {
                ret->after_first = after->first - end;
                ret->after_last = after->last - end;
        }
}

/** devmem_compare_tol() - tolerance comparison of @got against @want (waits). */
int devmem_compare_tol(GpuPtr got, GpuPtr want, const KvCmpParams *params, KvCmpStats *ret_stats)
{
        KvCmpParams p = *params;
        GpuPtr s = results;
        void *init_args[] = { &s };
        void *args[] = { &p, &got, &want, &s };
        int r;

        if ((r = launch1(k_cmp_init, init_args)) || (r = launch(k_compare_tol, p.count, args)))
                return r;
        return fetch(ret_stats, results, sizeof(*ret_stats));
}

/**
 * devmem_tally_compare() - tolerance comparison of @got against @want into
 * tally slot @slot (asynchronous: nothing waits; devmem_tally_fetch() reads
 * the slots back). Return: also -EINVAL for a slot out of range.
 */
int devmem_tally_compare(unsigned slot, GpuPtr got, GpuPtr want, const KvCmpParams *params)
{
        int r;

        if (slot >= DEVMEM_TALLY_SLOTS)
                return -EINVAL;
        if ((r = flush_fills()) || (r = flush_checks()) || (cmps.n == KV_BATCH_MAX && (r = flush_cmps())))
                return r;
        if (cmps.n == 0)
                cmps_most = 0;
        cmps.op[cmps.n++] = (KvCmpOp){ .p = *params, .got = got, .want = want,
                                       .stats = tally + (GpuPtr)slot * sizeof(KvCmpStats) };
        if (params->count > cmps_most)
                cmps_most = params->count;
        return batching ? 0 : flush_cmps();
}

/**
 * devmem_l2_ranges() - the allocations (guards included) that
 * devmem_l2_normal() demotes from now on: @n buffers of @bufs (waits, once
 * per timed shape set). Return: also -EINVAL for more than DEVMEM_L2_RANGES_MAX.
 */
int devmem_l2_ranges(const DevBuf *const *bufs, size_t n)
{
        if (n > DEVMEM_L2_RANGES_MAX)
                return -EINVAL;
        ranges_most = 0;
        for (size_t i = 0; i < n; i++) {
                ranges_host[i] = (KvRange){ .ptr = bufs[i]->base, .bytes = bufs[i]->total };
                if (bufs[i]->total > ranges_most)
                        ranges_most = bufs[i]->total;
        }
        n_ranges = (uint32_t)n;
        if (!n)
                return 0;
        int r = settle();

        if (r == 0)
                r = gpu_copy_htod(ranges, ranges_host, n * sizeof(KvRange));
        return r ? r : gpu_stream_wait();
}

/** devmem_l2_normal() - demote those ranges' L2 lines to evict_normal (asynchronous, one launch). */
int devmem_l2_normal(void)
{
        GpuPtr rp = ranges;
        uint32_t n = n_ranges;
        void *args[] = { &rp, &n };

        return n ? launch(k_l2_normal, (ranges_most + 127) / 128, args) : 0;
}

/**
 * devmem_l2_flush() - evict the L2 by reading @bytes of @buf (a multiple of
 * 16, at least twice the L2; asynchronous, one launch). Return: 0, GPU_E_CUDA.
 */
int devmem_l2_flush(GpuPtr buf, size_t bytes)
{
        uint64_t n = bytes / 16;
        GpuPtr sink = results + RESULT_BYTES - 16; /* never written in practice; no helper reads it */
        void *args[] = { &buf, &n, &sink };

        return launch(k_l2_flush, n, args);
}

/** devmem_tally_fetch() - wait, then copy tally slots [0, @n) to @ret (waits). */
int devmem_tally_fetch(unsigned n, KvCmpStats *ret)
{
        if (n > DEVMEM_TALLY_SLOTS)
                return -EINVAL;
        return n ? fetch(ret, tally, n * sizeof(KvCmpStats)) : 0;
}

/**
 * devmem_mismatch_from() - the lowest mismatching index >= @start (waits)
 * @ret_index: UINT64_MAX when there is none
 */
int devmem_mismatch_from(GpuPtr got, GpuPtr want, const KvCmpParams *params, uint64_t start,
                         uint64_t *ret_index)
{
        KvCmpParams p = *params;
        GpuPtr s = results;
        uint64_t idx;
        void *args[] = { &p, &got, &want, &start, &s };
        int r;

        if ((r = settle()) || (r = gpu_memset8(s, 0xFF, 8)) ||
            (r = launch(k_mismatch_from, p.count > start ? p.count - start : 1, args)))
                return r;
        if ((r = fetch(&idx, results, sizeof(idx))))
                return r;
        *ret_index = idx;
        return 0;
}

/** devmem_read() - copy up to 64 KiB from the device (waits). Return: also -EINVAL when too large. */
int devmem_read(GpuPtr src, void *dst, size_t bytes)
{
        if (bytes > STAGING_BYTES)
                return -EINVAL;
        return fetch(dst, src, bytes);
}

/**
 * devmem_read_chunk() - copy up to DEVMEM_CHUNK_BYTES from the device (waits)
 * @ret_view: the bytes, in a buffer owned by devmem and valid until the next call
 * Return: 0, GPU_E_CUDA, GPU_E_TIMEOUT, -EINVAL when too large.
 */
int devmem_read_chunk(GpuPtr src, size_t bytes, const void **ret_view)
{
        int r;

        if (bytes > DEVMEM_CHUNK_BYTES)
                return -EINVAL;
        if ((r = settle()) || (r = gpu_copy_dtoh(chunk, src, bytes)) || (r = gpu_stream_wait()))
                return r;
        *ret_view = chunk;
        return 0;
}
