/*
 * fenced - see fenced.h. The table and the record travel through one
 * page-locked buffer made at start-up (fenced_init(), before the sandbox
 * locks), so that arming and fetching are asynchronous copies on the
 * worker's one stream, ordered with the launches between them: arm, the
 * launch, fetch, then the launch's end event, whose wait covers all three.
 */
#include "worker/gpu/fenced.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

#define NAMES_MAX 4096

static uint64_t *pinned; /* table words, then record words, then names */

/** fenced_init() - the page-locked buffer. Return: 0, GPU_E_CUDA. */
int fenced_init(void)
{
        void *p;
        int r = gpu_host_alloc((FENCE_TAB_WORDS + FENCE_REC_WORDS) * sizeof(uint64_t) + NAMES_MAX, &p);

        if (r == 0)
                pinned = p;
        return r;
}

static uint64_t *tab_words(void)
{
        return pinned;
}

static uint64_t *rec_words(void)
{
        return pinned + FENCE_TAB_WORDS;
}

static char *names_bytes(void)
{
        return (char *)(pinned + FENCE_TAB_WORDS + FENCE_REC_WORDS);
}

/* A sticky error ends the process; anything else only this build's use. */
static int unusable(FenceRun *f, int rc, const char *what)
{
        if (rc == GPU_E_CUDA && gpu_is_sticky())
                return GPU_E_CUDA;
        log_warn("gpu: the fenced build is not usable (%s); the plain build runs instead", what);
        fenced_close(f);
        return FENCED_E_UNUSABLE;
}

static int by_ptr(const void *a, const void *b)
{
        const FenceBuffer *x = a, *y = b;

        return x->ptr < y->ptr ? -1 : x->ptr > y->ptr;
}

/*
 * The module's __device__ variables as ranges: each one the driver resolves
 * by name, at the driver's address and size (a variable it does not resolve,
 * a static with an odd name, is not allowed). Neighbours less than
 * GLOBALS_GAP apart are merged (alignment padding); when more than
 * FENCE_GLOBALS_MAX ranges remain, one range spans them all.
 */
#define GLOBALS_GAP 256

static int place_globals(FenceRun *f)
{
        GpuElfGlobals *g = &f->globals;
        FenceBuffer *v = calloc((size_t)g->n_globals + 1, sizeof(*v));
        int n = 0, m = 0;

        if (!v)
                return -ENOMEM;
        for (int i = 0; i < g->n_globals; i++) {
                GpuPtr p = 0;
                size_t bytes = 0;
                int rc = gpu_module_global(f->mod, g->globals[i].name, &p, &bytes);
                if (rc == GPU_E_CUDA && gpu_is_sticky()) {
                        free(v);
                        return rc;
                }
                if (rc || bytes == 0)
                        continue;
                v[n++] = (FenceBuffer){ .name = g->globals[i].name, .ptr = p, .bytes = bytes, .elem = 1,
                                        .is_global = 1 };
        }
        qsort(v, (size_t)n, sizeof(*v), by_ptr);
        for (int i = 0; i < n; i++) {
                FenceBuffer *last = m ? &v[m - 1] : NULL;
                if (last && v[i].ptr <= last->ptr + last->bytes + GLOBALS_GAP) {
                        uint64_t end = v[i].ptr + v[i].bytes;
                        if (end > last->ptr + last->bytes)
                                last->bytes = end - last->ptr;
                        continue;
                }
                v[m++] = v[i];
        }
        if (m > FENCE_GLOBALS_MAX) {
                v[0].bytes = v[m - 1].ptr + v[m - 1].bytes - v[0].ptr;
                m = 1;
        }
        memcpy(f->globals_ranges, v, (size_t)m * sizeof(*v));
        f->n_globals_ranges = m;
        free(v);
        return 0;
}

/**
 * fenced_open() - load a fenced build and find its table and record
 * @f:     zeroed; filled on success
 * @image: the fenced CUBIN; borrowed
 * @size:  its size
 *
 * Return: 0; FENCED_E_UNUSABLE when the build cannot be used (logged; @f is
 * left closed); GPU_E_CUDA after a sticky error.
 */
int fenced_open(FenceRun *f, const uint8_t *image, size_t size)
{
        size_t bytes = 0;
        int rc;

        memset(f, 0, sizeof(*f));
        if (!pinned)
                return FENCED_E_UNUSABLE;
        rc = gpu_module_load(image, size, &f->mod);
        if (rc) {
                f->mod = NULL;
                return rc < 0 ? rc : unusable(f, rc, "it does not load");
        }
        if ((rc = gpu_module_global(f->mod, FENCE_SYM_TABLE, &f->tab, &bytes)) ||
            bytes < FENCE_TAB_WORDS * sizeof(uint64_t))
                return unusable(f, rc, "no allocation table");
        if ((rc = gpu_module_global(f->mod, FENCE_SYM_RECORD, &f->rec, &bytes)) ||
            bytes < FENCE_REC_WORDS * sizeof(uint64_t))
                return unusable(f, rc, "no violation record");
        if ((rc = gpu_module_global(f->mod, FENCE_SYM_NAMES, &f->names, &f->names_bytes)))
                return unusable(f, rc, "no names");
        rc = gpu_elf_globals(image, size, &f->globals);
        if (rc < 0) {
                fenced_close(f);
                return rc;
        } /* GPU_ELF_E_MALFORMED: no __device__ data is listed, only the job's buffers are allowed */
        if ((rc = place_globals(f)))
                return rc < 0 ? (fenced_close(f), rc) : unusable(f, rc, "its variables cannot be placed");
        return 0;
}

/**
 * fenced_arm() - queue the table for the launches that follow, and clear the record
 * @f:    an open FenceRun
 * @bufs: the job's buffers of the set the launches use; borrowed
 * @n:    how many
 * @loop_budget_ns: how long a kernel's thread may run before it counts as
 *        hung (fence_abi.h); 0: as long as it likes
 *
 * Asynchronous; the caller waits (the launches' end event).
 * Return: 0, GPU_E_CUDA, or FENCED_E_UNUSABLE when there are more ranges
 * than the table holds.
 */
int fenced_arm(FenceRun *f, const FenceBuffer *bufs, int n, uint64_t loop_budget_ns)
{
        uint64_t *t = tab_words();
        int k = 0, rc;

        if (n + f->n_globals_ranges > FENCE_RANGES_MAX)
                return FENCED_E_UNUSABLE;
        for (int i = 0; i < n + f->n_globals_ranges; i++) {
                const FenceBuffer *b = i < n ? &bufs[i] : &f->globals_ranges[i - n];
                t[FENCE_TAB_FIRST + 2 * k] = b->ptr;
                t[FENCE_TAB_FIRST + 1 + 2 * k] = b->ptr + b->bytes;
                k++;
        }
        t[0] = (uint64_t)k;
        t[1] = loop_budget_ns;
        if ((rc = gpu_copy_htod(f->tab, t, (size_t)(FENCE_TAB_FIRST + 2 * k) * sizeof(uint64_t))) ||
            (rc = gpu_memset8(f->rec, 0, FENCE_REC_WORDS * sizeof(uint64_t))))
                return rc;
        memset(rec_words(), 0, FENCE_REC_WORDS * sizeof(uint64_t));
        return 0;
}

/** fenced_fetch() - queue the record's copy to the host. Return: 0, GPU_E_CUDA. */
int fenced_fetch(FenceRun *f)
{
        return gpu_copy_dtoh(rec_words(), f->rec, FENCE_REC_WORDS * sizeof(uint64_t));
}

/** fenced_tripped() - after the fetch completed: whether a violation was recorded, and which. */
bool fenced_tripped(const FenceRun *f, FenceRecord *ret)
{
        (void)f;
        if (rec_words()[0] == 0)
                return false;
        fence_record_decode(rec_words(), ret);
        return true;
}

/**
 * fenced_function() - the name of the function of index @index (synchronous)
 * Return: 0, GPU_E_NOT_FOUND (no such index), GPU_E_CUDA.
 */
int fenced_function(FenceRun *f, unsigned index, char *buf, size_t len)
{
        size_t n = f->names_bytes < NAMES_MAX ? f->names_bytes : NAMES_MAX;
        const char *s = names_bytes(), *end = s + n;
        int rc;

        if ((rc = gpu_copy_dtoh(names_bytes(), f->names, n)) || (rc = gpu_stream_wait()))
                return rc;
        while (index > 0 && s < end) {
                s += strnlen(s, (size_t)(end - s)) + 1;
                index--;
        }
        if (s >= end || strnlen(s, (size_t)(end - s)) == (size_t)(end - s))
                return GPU_E_NOT_FOUND;
        snprintf(buf, len, "%s", s);
        return 0;
}

/**
 * fenced_handoff() - carry the candidate's __device__ state from one build to the other
 * @f:        an open FenceRun
 * @plain:    the plain module; borrowed
 * @g:        the plain module's variables (its ELF); borrowed
 * @to_plain: true: fenced to plain; false: plain to fenced
 *
 * Each variable of @g that both modules resolve by name gets the other
 * module's bytes, so that state a candidate keeps across launches (a launch
 * counter, say) goes on where the last launch left it, whichever build ran
 * it, as it would with one build. Asynchronous.
 * Return: 0, GPU_E_CUDA.
 */
int fenced_handoff(FenceRun *f, GpuModule *plain, const GpuElfGlobals *g, bool to_plain)
{
        for (int i = 0; i < g->n_globals; i++) {
                GpuPtr pp = 0, fp = 0;
                size_t pb = 0, fb = 0;
                int rc = gpu_module_global(plain, g->globals[i].name, &pp, &pb);
                if (rc == 0)
                        rc = gpu_module_global(f->mod, g->globals[i].name, &fp, &fb);
                if (rc == GPU_E_CUDA && gpu_is_sticky())
                        return rc;
                if (rc)
                        continue; /* not resolved by name in one of them */
                if ((rc = gpu_copy_dtod(to_plain ? pp : fp, to_plain ? fp : pp, pb < fb ? pb : fb)))
                        return rc;
        }
        return 0;
}

/** fenced_close() - unload and forget; accepts a closed one. The caller zeroes the globals first. */
void fenced_close(FenceRun *f)
{
        if (f->mod)
                gpu_module_unload(f->mod);
        gpu_elf_globals_clear(&f->globals);
        memset(f, 0, sizeof(*f));
}
