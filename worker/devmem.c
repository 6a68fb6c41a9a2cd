/*
 * devmem - see devmem.h. Invariants: every allocation of a job is in the
 * live table until devmem_free()/devmem_free_all() has zeroed it on the
 * device, waited for the zeroing, and freed it; the helper result area and
 * the page-locked staging buffer belong to the process, not to a job.
 */
#include "worker/devmem.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

#define BLOCK 256
#define RESULT_BYTES 4096
#define STAGING_BYTES (64u << 10)

static GpuModule *helpers;
static GpuKernel *k_warm, *k_generate, *k_canary_fill, *k_canary_check, *k_diff_init, *k_compare_bits,
        *k_cmp_init, *k_compare_tol, *k_mismatch_from;
static GpuPtr results;        /* RESULT_BYTES of device memory for helper results */
static unsigned char *staging; /* STAGING_BYTES, page-locked */
static unsigned char *chunk;   /* DEVMEM_CHUNK_BYTES, page-locked */
static unsigned max_blocks = 1024;

static DevBuf *live;
static size_t n_live, cap_live;

/**
 * devmem_init() - load the trusted helper fatbin and set up the result area
 * @fatbin, @len: the embedded image; borrowed (copied to malloc'd, suitably
 *         aligned memory for the loader)
 * @sms: multiprocessor count, to size helper grids
 * Return: 0, GPU_E_CUDA, GPU_E_NOT_FOUND (the fatbin lacks a helper: a
 * build error), -ENOMEM.
 */
int devmem_init(const void *fatbin, size_t len, int sms)
{
        struct {
                const char *name;
                GpuKernel **k;
        } table[] = {
                { "kv_warm", &k_warm },
                { "kv_generate", &k_generate },
                { "kv_canary_fill", &k_canary_fill },
                { "kv_canary_check", &k_canary_check },
                { "kv_diff_init", &k_diff_init },
                { "kv_compare_bits", &k_compare_bits },
                { "kv_cmp_init", &k_cmp_init },
                { "kv_compare_tol", &k_compare_tol },
                { "kv_mismatch_from", &k_mismatch_from },
        };
        void *host = NULL, *copy = malloc(len ? len : 1);
        int r;

        if (!copy)
                return -ENOMEM;
        memcpy(copy, fatbin, len);
        r = gpu_module_load(copy, len, &helpers);
        free(copy);
        if (r)
                return r;
        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
                if ((r = gpu_kernel_get(helpers, table[i].name, table[i].k))) {
                        log_error("devmem: helper kernel '%s' missing from the device fatbin", table[i].name);
                        return r;
                }
        }
        if ((r = gpu_alloc(RESULT_BYTES, &results)))
                return r;
        if ((r = gpu_host_alloc(STAGING_BYTES, &host)))
                return r;
        staging = host;
        if ((r = gpu_host_alloc(DEVMEM_CHUNK_BYTES, &host)))
                return r;
        chunk = host;
        if (sms > 0)
                max_blocks = (unsigned)sms * 8u;
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

static int launch(GpuKernel *k, uint64_t n, void **params)
{
        unsigned grid[3] = { grid_for(n), 1, 1 };
        unsigned block[3] = { BLOCK, 1, 1 };

        return gpu_launch(k, grid, block, 0, params);
}

static int launch1(GpuKernel *k, void **params)
{
        unsigned one[3] = { 1, 1, 1 };

        return gpu_launch(k, one, one, 0, params);
}

/* Wait for the stream, then copy @bytes of the result area to @dst. The
 * copy goes through page-locked memory and is waited for with the deadline
 * as well, so nothing here can block on a spinning kernel. */
static int fetch(void *dst, GpuPtr src, size_t bytes)
{
        int r;

        if ((r = gpu_copy_dtoh(staging, src, bytes)) || (r = gpu_stream_wait()))
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

/**
 * devmem_alloc() - allocate a buffer with @guard bytes of guard band on each
 * side, and track it. The contents are undefined until generated, poisoned
 * or zeroed.
 * @ret_buf: filled on success
 * Return: 0, GPU_E_CUDA (CUDA_ERROR_OUT_OF_MEMORY), -ENOMEM, -EOVERFLOW.
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
        if (n_live == cap_live) {
                size_t cap = cap_live ? cap_live * 2 : 64;
                DevBuf *n = realloc(live, cap * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                live = n;
                cap_live = cap;
        }
        if ((r = gpu_alloc(b.total, &b.base)))
                return r;
        b.ptr = b.base + guard;
        live[n_live++] = b;
        *ret_buf = b;
        return 0;
}

static void untrack(GpuPtr base)
{
        for (size_t i = 0; i < n_live; i++) {
                if (live[i].base == base) {
                        live[i] = live[--n_live];
                        return;
                }
        }
}

/**
 * devmem_free() - zero the whole allocation (guards included), wait, free,
 * and clear @buf. A zeroed DevBuf is accepted.
 * Return: 0, GPU_E_CUDA, GPU_E_TIMEOUT (the buffer stays allocated).
 */
int devmem_free(DevBuf *buf)
{
        int r;

        if (!buf || !buf->base)
                return 0;
        if ((r = gpu_memset8(buf->base, 0, buf->total)) || (r = gpu_stream_wait()) || (r = gpu_free(buf->base)))
                return r;
        untrack(buf->base);
        memset(buf, 0, sizeof(*buf));
        return 0;
}

/**
 * devmem_free_all() - zero every live allocation, wait once, free them all.
 * Return: 0, GPU_E_CUDA, GPU_E_TIMEOUT (nothing freed then: the caller
 * exits, and the process's death frees the memory).
 */
int devmem_free_all(void)
{
        int r;

        for (size_t i = 0; i < n_live; i++)
                if ((r = gpu_memset8(live[i].base, 0, live[i].total)))
                        return r;
        if ((r = gpu_stream_wait()))
                return r;
        while (n_live > 0) {
                if ((r = gpu_free(live[n_live - 1].base)))
                        return r;
                n_live--;
        }
        return 0;
}

size_t devmem_live_count(void)
{
        return n_live;
}

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
        KvGenParams p = *params;
        GpuPtr dst = buf->ptr;
        void *args[] = { &p, &dst };

        if (p.count == 0)
                return 0;
        return launch(k_generate, p.count, args);
}

/** devmem_poison() - fill @buf with the poison of @dtype (asynchronous). */
int devmem_poison(const DevBuf *buf, int dtype)
{
        return gpu_memset8(buf->ptr, kv_dtype_is_float(dtype) ? KV_POISON_FLOAT_BYTE : KV_POISON_INT_BYTE,
                           buf->bytes);
}

/** devmem_zero() - zero @buf (asynchronous). */
int devmem_zero(const DevBuf *buf)
{
        return gpu_memset8(buf->ptr, 0, buf->bytes);
}

/** devmem_guard_fill() - write the canary pattern into both bands (asynchronous). */
int devmem_guard_fill(const DevBuf *buf, uint32_t salt)
{
        GpuPtr base = buf->base;
        uint64_t off, len;
        void *args[] = { &base, &off, &len, &salt };
        int r;

        if (!buf->guard)
                return 0;
        off = 0;
        len = buf->guard;
        if ((r = launch(k_canary_fill, len, args)))
                return r;
        off = buf->guard + buf->bytes;
        len = buf->total - off;
        return launch(k_canary_fill, len, args);
}

static int canary_check(const DevBuf *buf, uint64_t off, uint64_t len, uint32_t salt, KvDiff *ret)
{
        GpuPtr base = buf->base, d = results;
        void *init_args[] = { &d };
        void *args[] = { &base, &off, &len, &salt, &d };
        int r;

        if ((r = launch1(k_diff_init, init_args)) || (r = launch(k_canary_check, len, args)))
                return r;
        return fetch(ret, results, sizeof(*ret));
}

/**
 * devmem_guard_check() - count damaged canary bytes on both sides (waits)
 * @ret_report: filled on success; all zero means intact
 */
int devmem_guard_check(const DevBuf *buf, uint32_t salt, DevGuardReport *ret_report)
{
        DevGuardReport rep;
        KvDiff d;
        uint64_t end;
        int r;

        memset(&rep, 0, sizeof(rep));
        if (buf->guard) {
                if ((r = canary_check(buf, 0, buf->guard, salt, &d)))
                        return r;
                rep.before_bytes = d.count;
                if (d.count)
                        rep.before_far = buf->guard - d.first; /* the lowest offset is the farthest */
                end = buf->guard + buf->bytes;
                if ((r = canary_check(buf, end, buf->total - end, salt, &d)))
                        return r;
                rep.after_bytes = d.count;
                if (d.count) {
                        rep.after_first = d.first - end;
                        rep.after_last = d.last - end;
                }
        }
        *ret_report = rep;
        return 0;
}

/** devmem_compare_bits() - bitwise comparison of two device ranges (waits). */
int devmem_compare_bits(GpuPtr a, GpuPtr b, size_t bytes, KvDiff *ret_diff)
{
        GpuPtr d = results;
        uint64_t n = bytes;
        void *init_args[] = { &d };
        void *args[] = { &a, &b, &n, &d };
        int r;

        if ((r = launch1(k_diff_init, init_args)) || (r = launch(k_compare_bits, (n + 3) / 4, args)))
                return r;
        return fetch(ret_diff, results, sizeof(*ret_diff));
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

        if ((r = gpu_memset8(s, 0xFF, 8)) || (r = launch(k_mismatch_from, p.count > start ? p.count - start : 1, args)))
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
        if ((r = gpu_copy_dtoh(chunk, src, bytes)) || (r = gpu_stream_wait()))
                return r;
        *ret_view = chunk;
        return 0;
}
