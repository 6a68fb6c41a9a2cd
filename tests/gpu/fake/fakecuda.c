/*
 * fakecuda - a CPU stand-in for the parts of the CUDA driver API that
 * kevald-gpu uses, built as libcuda.so.1 so that the real worker binary can
 * run its whole protocol (start-up, judge, timing, cleanup) on a host
 * without a GPU (tests/gpu/fake/test_fake.py). It is a test double, not an
 * emulator: "device memory" is host memory, every operation completes at
 * once, and kernels are C functions chosen by name from a table.
 *
 * Modules: an image that starts with "FAKE:<flavor>\n" selects the kernels
 * of that flavor (a candidate's behaviour: correct, wrong, out of bounds,
 * racy, faulting, spinning...); any other image is the worker's helper
 * fatbin, whose kernels (worker/gpu/device.cu) are reimplemented here from the
 * same worker/gpu/devrng.h. Faults are simulated the way the driver reports
 * them: a faulting kernel launches fine and the sticky error appears at the
 * next query, then on every call; a spinning kernel's events never
 * complete.
 *
 * Invariant checked: memory handed to cuMemFree must be all zero (the
 * worker zeroes every allocation before freeing it); otherwise abort().
 *
 * For the buffer pool's tests (worker/gpu/devmem.c): with FAKECUDA_LOG set to
 * a file name, every cuMemAlloc and cuMemFree appends a line
 * "alloc|free <bytes> <bytes in use after>" to it, so a test can count the
 * calls a job made and what stays allocated. Flavor vadd_mark fills its
 * output with LEAK_MARK (a wrong answer: the job fails, its buffers are
 * freed by the cleanup); vadd_mark_scratch is a correct vadd with a fifth
 * parameter, a scratch buffer, that it stamps with LEAK_MARK (the job
 * passes, its buffers are freed one by one); vadd_mark_stray is a correct
 * vadd that writes LEAK_MARK 16 bytes past its output's guard band (use it
 * only where that is memory of the worker's slab); flavor vadd_snoop is a correct
 * vadd that first searches every live allocation for LEAK_MARK and aborts
 * when it finds one: a later job must never see an earlier job's data,
 * whether the memory was freed, pooled, or handed out again.
 *
 * Fenced builds (worker/fence_abi.h, worker/gpu/fenced.c): a module whose
 * flavor starts with "fenced_" owns the three fence symbols, found through
 * cuModuleGetGlobal: the table, the record and the names ("vadd"), zero at
 * load as the driver leaves a .const/.global without initializer, freed
 * with the module. (They are not checked for zero at unload: the worker
 * zeroes a module's variables from the CUBIN's ELF listing, and a fake
 * image lists none.) Its "vadd" runs thread by thread over the launch's
 * grid and block and checks each access as the pass's instrumentation
 * does: [addr, addr + size) inside one (begin, end) range of the table,
 * else the first violation is recorded (only while the record's word 0 is
 * 0) and the thread exits without the access. With the table armed
 * exactly, fenced_vadd records nothing; fenced_vadd_oob's thread n also
 * stores c[n] (line 3); fenced_vadd_wild's thread 0 of block 0 loads from
 * address 0x10 (line 5); fenced_trap's thread 5 of block 1 executes a trap
 * (line 7); fenced_spin's thread 0 of block 0 runs past the loop budget (a
 * hang at line 6: the budget must be set); fenced_assert's thread 3 of block 2 fails an assert (line 9,
 * function unknown); fenced_vadd_misaligned's thread 0 of block 0 loads 4
 * bytes from 2 bytes into a (line 4). An access the table allows is
 * performed, so the table must name only memory that exists.
 */
#include <cuda.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "worker/gpu/devrng.h"
#include "worker/fence_abi.h"

#define FAKE_MEM_TOTAL (512ull << 20)

struct CUctx_st { int dummy; };
struct CUstream_st { int dummy; };
struct CUevent_st { double t; int never; };
struct CUmod_st {
        char flavor[64];
        unsigned launches; /* per-module "__device__" state */
        struct CUfunc_st *funcs[256]; /* freed with the module */
        int n_funcs;
        /* fenced_ flavors: the module's fence symbols, one block of "device
         * memory": table words, record words, then the names */
        uint64_t *fence;
};

#define FENCE_NAMES "vadd" /* with its NUL: the one function, index 0 */
#define FENCE_BYTES ((FENCE_TAB_WORDS + FENCE_REC_WORDS) * sizeof(uint64_t) + sizeof(FENCE_NAMES))

typedef void (*HostKernel)(struct CUmod_st *m, void **p);

typedef struct KDef {
        const char *flavor; /* NULL: any candidate flavor */
        const char *name;
        HostKernel fn;
        int nparams;
        size_t sizes[8];
} KDef;

struct CUfunc_st {
        const KDef *def;
        struct CUmod_st *mod;
        int max_dyn;
};

static struct CUctx_st the_ctx;
static CUresult sticky;
static int spinning;
/* vadd_slow: the stream is busy until then (events recorded meanwhile
 * complete then); vadd_illegal, vadd_late_fault: a sticky fault appears
 * then (fault_after()) */
static double busy_until, fault_at;
static CUresult fault_pending;
static unsigned long long mem_used;

/* every live cuMemAlloc block (its user pointer), for vadd_snoop */
static unsigned char **blocks;
static size_t n_blocks, cap_blocks;

#define LEAK_MARK "kevald-leak-mark"

static void mem_log(const char *what, size_t bytes)
{
        static FILE *f;
        static int opened;
        const char *path;

        if (!opened) {
                opened = 1;
                if ((path = getenv("FAKECUDA_LOG")) && *path) {
                        f = fopen(path, "a");
                        if (f)
                                setvbuf(f, NULL, _IOLBF, 0);
                }
        }
        if (f)
                fprintf(f, "%s %zu %llu\n", what, bytes, mem_used);
}

static void snoop(void)
{
        static const char mark[] = LEAK_MARK;

        for (size_t i = 0; i < n_blocks; i++) {
                size_t bytes = ((size_t *)(void *)blocks[i])[-2];
                if (memmem(blocks[i], bytes, mark, sizeof(mark) - 1)) {
                        fprintf(stderr, "fakecuda: vadd_snoop found an earlier job's marker in a block of %zu bytes\n",
                                bytes);
                        abort();
                }
        }
}

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#define PTR(T, i) ((T)(uintptr_t)(*(CUdeviceptr *)p[i]))
#define VAL(T, i) (*(T *)p[i])

/* ---- helper kernels (worker/gpu/device.cu) ---- */

static unsigned last_grid[3], last_block[3];

/* A batch kernel's grid has one block row per op (worker/gpu/devrng.h). */
static void check_rows(uint32_t n)
{
        if (n == 0 || n > KV_BATCH_MAX || last_grid[1] != n) {
                fprintf(stderr, "fakecuda: batch of %u ops launched with %u block rows\n", n, last_grid[1]);
                abort();
        }
}

static void h_warm(struct CUmod_st *m, void **p)
{
        int *x = PTR(int *, 0);
        (void)m;
        if (x)
                *x = 1;
}

static void h_diff_init(struct CUmod_st *m, void **p)
{
        KvDiff *d = PTR(KvDiff *, 0);
        (void)m;
        d->count = 0;
        d->first = ~0ull;
        d->last = 0;
}

static void diff_add(KvDiff *d, uint64_t at)
{
        d->count++;
        if (at < d->first)
                d->first = at;
        if (at > d->last)
                d->last = at;
}

static void h_canary_check(struct CUmod_st *m, void **p)
{
        const unsigned char *base = PTR(const unsigned char *, 0);
        uint64_t off = VAL(uint64_t, 1), len = VAL(uint64_t, 2);
        uint32_t salt = VAL(uint32_t, 3);
        KvDiff *d = PTR(KvDiff *, 4);
        (void)m;
        for (uint64_t i = 0; i < len; i++)
                if (base[off + i] != kv_canary_byte(salt, off + i))
                        diff_add(d, off + i);
}

static void h_compare_bits(struct CUmod_st *m, void **p)
{
        const unsigned char *a = PTR(const unsigned char *, 0), *b = PTR(const unsigned char *, 1);
        uint64_t n = VAL(uint64_t, 2);
        KvDiff *d = PTR(KvDiff *, 3);
        (void)m;
        for (uint64_t i = 0; i < n; i++)
                if (a[i] != b[i])
                        diff_add(d, i);
}

static void h_cmp_init(struct CUmod_st *m, void **p)
{
        KvCmpStats *s = PTR(KvCmpStats *, 0);
        (void)m;
        memset(s, 0, sizeof(*s));
        s->first = ~0ull;
}

static void h_compare_tol(struct CUmod_st *m, void **p)
{
        const KvCmpParams *c = p[0];
        const unsigned char *got = PTR(const unsigned char *, 1), *want = PTR(const unsigned char *, 2);
        KvCmpStats *s = PTR(KvCmpStats *, 3);
        double ma = 0, mr = 0;
        (void)m;
        for (uint64_t i = 0; i < c->count; i++) {
                double ab, rel;
                int r = kv_compare_one(c, got, want, i, &ab, &rel);
                if (r == KV_CMP_VALUE)
                        s->mismatches++;
                if (r == KV_CMP_NAN_INF)
                        s->nan_inf++;
                if (r != KV_CMP_MATCH && i < s->first)
                        s->first = i;
                ma = fmax(ma, ab);
                mr = fmax(mr, rel);
        }
        memcpy(&s->max_abs_bits, &ma, 8);
        memcpy(&s->max_rel_bits, &mr, 8);
}

static void h_fill_batch(struct CUmod_st *m, void **p)
{
        const KvFillBatch *b = p[0];
        (void)m;
        check_rows(b->n);
        for (uint32_t k = 0; k < b->n; k++) {
                const KvFillOp *o = &b->op[k];
                unsigned char *dst = (unsigned char *)(uintptr_t)o->dst;
                if (o->kind == KV_FILL_GENERATE)
                        for (uint64_t i = 0; i < o->gen.count; i++)
                                kv_gen_store(&o->gen, i, dst);
                else if (o->kind == KV_FILL_BYTE)
                        memset(dst, (int)(o->value & 0xFF), o->bytes);
                else
                        for (uint64_t i = 0; i < o->bytes; i++)
                                dst[o->off + i] = kv_canary_byte(o->value, o->off + i);
        }
}

static void h_cmp_init_batch(struct CUmod_st *m, void **p)
{
        const KvCmpBatch *b = p[0];
        check_rows(b->n);
        for (uint32_t k = 0; k < b->n; k++) {
                CUdeviceptr s = b->op[k].stats;
                void *q[] = { &s };
                h_cmp_init(m, q);
        }
}

static void h_compare_batch(struct CUmod_st *m, void **p)
{
        const KvCmpBatch *b = p[0];
        check_rows(b->n);
        for (uint32_t k = 0; k < b->n; k++) {
                CUdeviceptr got = b->op[k].got, want = b->op[k].want, s = b->op[k].stats;
                void *q[] = { (void *)&b->op[k].p, &got, &want, &s };
                h_compare_tol(m, q);
        }
}

static void h_diff_init_batch(struct CUmod_st *m, void **p)
{
        const KvCheckBatch *b = p[0];
        check_rows(b->n);
        for (uint32_t k = 0; k < b->n; k++) {
                CUdeviceptr d = b->op[k].diff;
                void *q[] = { &d };
                h_diff_init(m, q);
        }
}

static void h_check_batch(struct CUmod_st *m, void **p)
{
        const KvCheckBatch *b = p[0];
        check_rows(b->n);
        for (uint32_t k = 0; k < b->n; k++) {
                const KvCheckOp *o = &b->op[k];
                CUdeviceptr a = o->a, bb = o->b, d = o->diff;
                uint64_t off = o->off, len = o->bytes;
                uint32_t salt = o->salt;
                if (o->kind == KV_CHECK_CANARY) {
                        void *q[] = { &a, &off, &len, &salt, &d };
                        h_canary_check(m, q);
                } else {
                        void *q[] = { &a, &bb, &len, &d };
                        h_compare_bits(m, q);
                }
        }
}

/* kv_l2_normal: there is no L2 to demote lines in */
static void h_l2_normal(struct CUmod_st *m, void **p)
{
        (void)m;
        (void)p;
}

/* kv_l2_flush: nor one to evict */
static void h_l2_flush(struct CUmod_st *m, void **p)
{
        (void)m;
        (void)p;
}

static void h_mismatch_from(struct CUmod_st *m, void **p)
{
        const KvCmpParams *c = p[0];
        const unsigned char *got = PTR(const unsigned char *, 1), *want = PTR(const unsigned char *, 2);
        uint64_t start = VAL(uint64_t, 3);
        unsigned long long *ret = PTR(unsigned long long *, 4);
        (void)m;
        for (uint64_t i = start; i < c->count; i++) {
                double ab, rel;
                if (kv_compare_one(c, got, want, i, &ab, &rel) != KV_CMP_MATCH) {
                        if (i < *ret)
                                *ret = i;
                        return;
                }
        }
}

/* ---- candidate and reference kernels ---- */

/* vadd_replay: has this input (its first elements, bitwise) been seen before in this process? */
static int seen_before(const float *x, const float *z)
{
        static unsigned long long seen[8192];
        static size_t n_seen;
        unsigned long long key = 1469598103934665603ull;
        unsigned char bytes[16];

        memcpy(bytes, x, 8);
        memcpy(bytes + 8, z, 8);
        for (int i = 0; i < 16; i++)
                key = (key ^ bytes[i]) * 1099511628211ull;
        for (size_t i = 0; i < n_seen; i++)
                if (seen[i] == key)
                        return 1;
        if (n_seen < sizeof(seen) / sizeof(seen[0]))
                seen[n_seen++] = key;
        return 0;
}

/* An illegal address the driver reports @ms after the launch: the stream
 * stays busy until then, and the fault is sticky from then on (one at a time). */
static void fault_after(double ms)
{
        if (fault_pending || sticky)
                return;
        fault_at = busy_until = now_ms() + ms;
        fault_pending = CUDA_ERROR_ILLEGAL_ADDRESS;
}

static void k_vadd(struct CUmod_st *m, void **p)
{
        float *x = PTR(float *, 0), *z = PTR(float *, 1), *y = PTR(float *, 2);
        int n = VAL(int, 3);
        const char *f = m->flavor;
        unsigned epoch = m->launches++;

        /* vadd_lazy: right during correctness (2 shapes x 3 trials x 2 runs),
         * then skips every other launch: only revalidation can see it */
        if (strcmp(f, "vadd_lazy") == 0 && epoch >= 12 && (epoch & 1))
                return;
        if (strcmp(f, "vadd_snoop") == 0)
                snoop();
        /* vadd_replay: a stale cache hit (a wrong answer) whenever an input
         * recurs after the correctness phase (12 launches), where the
         * determinism re-runs repeat inputs on purpose */
        if (strcmp(f, "vadd_replay") == 0 && seen_before(x, z) && epoch >= 12) {
                for (int i = 0; i < n; i++)
                        y[i] = 0.0f;
                return;
        }

        for (int i = 0; i < n; i++) {
                if (strcmp(f, "vadd_partial") == 0 && i >= n / 2)
                        break;
                y[i] = strcmp(f, "vadd_wrong") == 0 ? x[i] - z[i] : x[i] + z[i];
                if (strcmp(f, "vadd_first") == 0 && epoch > 0)
                        y[i] += 1.0f;
                if (strcmp(f, "vadd_nondet") == 0 && (epoch & 1) && i == n / 3)
                        y[i] = nextafterf(y[i], INFINITY); /* one ulp: within tolerance, other bits */
                if (strcmp(f, "vadd_mutate") == 0)
                        x[i] = 0.0f;
        }
        if (strcmp(f, "vadd_oob") == 0)
                y[n] = 1.0f;
        if (strcmp(f, "vadd_under") == 0)
                y[-3] = 2.0f;
        /* as the driver does: the launch and the next event record succeed, a
         * query after the kernel's (short) run finds the fault */
        if (strcmp(f, "vadd_illegal") == 0)
                fault_after(20.0);
        if (strcmp(f, "vadd_spin") == 0)
                spinning = 1;
        /* a kernel that completes after 150 ms: past a 100 ms launch limit, within the grace */
        if (strcmp(f, "vadd_slow") == 0)
                busy_until = now_ms() + 150.0;
        /* a fault the driver reports 300 ms late; the stream stays busy until then */
        if (strcmp(f, "vadd_late_fault") == 0)
                fault_after(300.0);
        if (strcmp(f, "vadd_crash") == 0)
                abort(); /* the worker dies mid-job (for the runner's own tests) */
        if (strcmp(f, "vadd_mark") == 0)
                for (size_t i = 0; i + 16 <= (size_t)n * sizeof(float); i += 16)
                        memcpy((char *)y + i, LEAK_MARK, 16);
        if (strcmp(f, "vadd_mark_scratch") == 0)
                memcpy(PTR(char *, 4), LEAK_MARK, 16);
        /* just past the output's guard band (64 KiB): in the slab's granule slack at N = 5000 */
        if (strcmp(f, "vadd_mark_stray") == 0)
                memcpy((char *)y + (size_t)n * sizeof(float) + (64u << 10) + 16, LEAK_MARK, 16);
}

/* ---- fenced builds ---- */

/* One thread of a fenced launch: where it records itself from. */
typedef struct FThread {
        uint32_t tid[3], ctaid[3];
} FThread;

/* The first violation wins (the pass's compare-and-swap on word 0). */
static void fence_record(struct CUmod_st *m, const FThread *th, uint64_t site, uint64_t addr)
{
        uint64_t *rec = m->fence + FENCE_TAB_WORDS;
        uint32_t who[6] = { th->tid[0], th->tid[1], th->tid[2], th->ctaid[0], th->ctaid[1], th->ctaid[2] };

        if (rec[0] != 0)
                return;
        rec[0] = site;
        rec[1] = addr;
        memcpy(&rec[2], who, sizeof(who)); /* six u32 from byte 16 on */
}

/*
 * The check the pass puts before an access of @size bytes at @addr (line
 * @line of function 0): 1 when the access may run; otherwise the violation
 * is recorded and the thread must exit (0). The count is word 0's low 32
 * bits, as the pass loads it.
 */
static int fence_check(struct CUmod_st *m, const FThread *th, unsigned kind, unsigned line, uint64_t addr,
                       unsigned size)
{
        const uint64_t *tab = m->fence;
        uint32_t count = (uint32_t)tab[0];
        uint64_t site = fence_site_word(line, kind, 0, size, 0);

        if (size > 1 && addr % size != 0) {
                fence_record(m, th, site | FENCE_SITE_MISALIGNED, addr);
                return 0;
        }
        if (count > FENCE_RANGES_MAX)
                count = FENCE_RANGES_MAX; /* past the table: the fake has no more */
        for (uint32_t k = 0; k < count; k++)
                if (addr >= tab[FENCE_TAB_FIRST + 2 * k] && addr + size <= tab[FENCE_TAB_FIRST + 1 + 2 * k])
                        return 1;
        fence_record(m, th, site, addr);
        return 0;
}

/* A load the table allowed must be of memory that exists: a table that allows 0x10 is the worker's bug. */
static float fence_load(const float *a)
{
        if ((uintptr_t)a < 4096) {
                fprintf(stderr, "fakecuda: the fence table allowed a load from %p\n", (const void *)a);
                abort();
        }
        return *a;
}

/*
 * vadd(a, b, c, n) as the pass would leave it, thread by thread over a 1-D
 * launch: i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] =
 * a[i] + b[i] (line 3), each access checked first.
 */
static void k_fenced_vadd(struct CUmod_st *m, void **p)
{
        const float *x = PTR(const float *, 0), *z = PTR(const float *, 1);
        float *y = PTR(float *, 2);
        int n = VAL(int, 3);
        const char *f = m->flavor;
        int oob = strcmp(f, "fenced_vadd_oob") == 0, wild = strcmp(f, "fenced_vadd_wild") == 0;
        int trap = strcmp(f, "fenced_trap") == 0, assert_ = strcmp(f, "fenced_assert") == 0;
        int mis = strcmp(f, "fenced_vadd_misaligned") == 0, spin = strcmp(f, "fenced_spin") == 0;

        if (!m->fence) {
                fprintf(stderr, "fakecuda: a fenced kernel in module '%s' without fence symbols\n", f);
                abort();
        }
        for (uint32_t b = 0; b < last_grid[0]; b++)
                for (uint32_t t = 0; t < last_block[0]; t++) {
                        FThread th = { { t, 0, 0 }, { b, 0, 0 } };
                        int64_t i = (int64_t)b * last_block[0] + t;
                        float a, c;
                        if (spin && b == 0 && t == 0) {
                                /* spins until the loop budget (table word 1, set by the worker) is spent */
                                uint64_t budget = m->fence[1];
                                if (budget == 0) {
                                        fprintf(stderr, "fakecuda: fenced_spin without a loop budget\n");
                                        abort();
                                }
                                fence_record(m, &th, fence_site_word(6, FENCE_KIND_HANG, 0, 0, 0), budget + 1);
                                continue;
                        }
                        if (trap && b == 1 && t == 5) {
                                fence_record(m, &th, fence_site_word(7, FENCE_KIND_TRAP, 0, 0, 0), 0);
                                continue;
                        }
                        if (assert_ && b == 2 && t == 3) {
                                fence_record(m, &th, fence_site_word(9, FENCE_KIND_ASSERT, 0, 0, FENCE_FUNC_UNKNOWN),
                                             0);
                                continue;
                        }
                        if (wild && b == 0 && t == 0) {
                                if (!fence_check(m, &th, FENCE_KIND_LOAD, 5, 0x10, 4))
                                        continue;
                                (void)fence_load((const float *)(uintptr_t)0x10);
                        }
                        if (mis && b == 0 && t == 0) {
                                if (!fence_check(m, &th, FENCE_KIND_LOAD, 4, (uint64_t)(uintptr_t)x + 2, 4))
                                        continue;
                                fprintf(stderr, "fakecuda: the fence allowed a misaligned load\n");
                                abort();
                        }
                        if (i > n || (i == n && !oob))
                                continue;
                        if (i == n) { /* fenced_vadd_oob: if (i <= n) c[i] = ...; only the store is past the end */
                                if (fence_check(m, &th, FENCE_KIND_STORE, 3, (uint64_t)(uintptr_t)(y + i), 4))
                                        y[i] = 1.0f;
                                continue;
                        }
                        if (!fence_check(m, &th, FENCE_KIND_LOAD, 3, (uint64_t)(uintptr_t)(x + i), 4))
                                continue;
                        a = fence_load(x + i);
                        if (!fence_check(m, &th, FENCE_KIND_LOAD, 3, (uint64_t)(uintptr_t)(z + i), 4))
                                continue;
                        c = fence_load(z + i);
                        if (fence_check(m, &th, FENCE_KIND_STORE, 3, (uint64_t)(uintptr_t)(y + i), 4))
                                y[i] = a + c;
                }
}

static void k_axpy(struct CUmod_st *m, void **p)
{
        float a = VAL(float, 0), *x = PTR(float *, 1), *y = PTR(float *, 2);
        int n = VAL(int, 3);
        (void)m;
        for (int i = 0; i < n; i++)
                y[i] = a * x[i] + y[i];
}

static void k_copy4(struct CUmod_st *m, void **p)
{
        unsigned *x = PTR(unsigned *, 0), *y = PTR(unsigned *, 1);
        int n = VAL(int, 2);
        (void)m;
        for (int i = 0; i < n; i++)
                y[i] = strcmp(m->flavor, "zero4") == 0 ? 0u : x[i];
}

/* row-major C[M,N] = A[M,K] B[K,N], f32 */
static void k_gemm(struct CUmod_st *m, void **p)
{
        const float *A = PTR(const float *, 0), *B = PTR(const float *, 1);
        float *C = PTR(float *, 2);
        int M = VAL(int, 3), N = VAL(int, 4), K = VAL(int, 5);
        (void)m;
        for (int r = 0; r < M; r++)
                for (int c = 0; c < N; c++) {
                        float acc = 0;
                        for (int k = 0; k < K; k++)
                                acc = fmaf(A[(size_t)r * K + k], B[(size_t)k * N + c], acc);
                        C[(size_t)r * N + c] = acc;
                }
}

/* row-major C[M,N] = A[M,K] B[N,K]^T, f16 */
static void k_gemm_tb(struct CUmod_st *m, void **p)
{
        const uint16_t *A = PTR(const uint16_t *, 0), *B = PTR(const uint16_t *, 1);
        uint16_t *C = PTR(uint16_t *, 2);
        int M = VAL(int, 3), N = VAL(int, 4), K = VAL(int, 5);
        for (int r = 0; r < M; r++)
                for (int c = 0; c < N; c++) {
                        float acc = 0;
                        for (int k = 0; k < K; k++) /* flavor gemm_notrans forgets that B is [N, K] */
                                acc += kv_f16_to_f32(A[(size_t)r * K + k]) *
                                       kv_f16_to_f32(strcmp(m->flavor, "gemm_notrans") == 0 ? B[(size_t)k * N + c]
                                                                                            : B[(size_t)c * K + k]);
                        C[(size_t)r * N + c] = kv_f32_to_f16(acc);
                }
}

/* batched row-major C[g][M,N] = A[g][K,M]^T B[g][K,N], bf16; grid.z is the batch */
static void k_gemm_ta(struct CUmod_st *m, void **p)
{
        const uint16_t *A = PTR(const uint16_t *, 0), *B = PTR(const uint16_t *, 1);
        uint16_t *C = PTR(uint16_t *, 2);
        int M = VAL(int, 3), N = VAL(int, 4), K = VAL(int, 5);
        (void)m;
        for (unsigned g = 0; g < last_grid[2]; g++)
                for (int r = 0; r < M; r++)
                        for (int c = 0; c < N; c++) {
                                float acc = 0;
                                for (int k = 0; k < K; k++)
                                        acc += kv_bf16_to_f32(A[(size_t)g * K * M + (size_t)k * M + r]) *
                                               kv_bf16_to_f32(B[(size_t)g * K * N + (size_t)k * N + c]);
                                C[(size_t)g * M * N + (size_t)r * N + c] = kv_f32_to_bf16(acc);
                        }
}

/* bench/timing/kernels.cu, for a dry run of bench/timing/fidelity.py --fake */
static void k_bt_copy(struct CUmod_st *m, void **p)
{
        const float *x = PTR(const float *, 0);
        float *y = PTR(float *, 1);
        long long n = VAL(long long, 2);
        (void)m;
        memcpy(y, x, (size_t)n * sizeof(float));
}

static void k_bt_fma(struct CUmod_st *m, void **p)
{
        const float *x = PTR(const float *, 0);
        float *y = PTR(float *, 1);
        int iters = VAL(int, 2);
        (void)m;
        for (unsigned i = 0; i < last_grid[0] * 256u; i++) {
                float a = x[i];
                for (int k = 0; k < iters / 1000; k++)
                        a = fmaf(a, 0.9999f, 1e-4f);
                y[i] = a;
        }
}

static void k_bt_gemm(struct CUmod_st *m, void **p)
{
        void *q[6];
        int n = VAL(int, 3);
        q[0] = p[0];
        q[1] = p[1];
        q[2] = p[2];
        q[3] = &n;
        q[4] = &n;
        q[5] = &n;
        k_gemm(m, q);
}

static const KDef kernels[] = {
        { NULL, "bt_copy", k_bt_copy, 3, { 8, 8, 8 } },
        { NULL, "bt_fma", k_bt_fma, 3, { 8, 8, 4 } },
        { NULL, "bt_gemm", k_bt_gemm, 4, { 8, 8, 8, 4 } },
        { "helpers", "kv_warm", h_warm, 1, { 8 } },
        { "helpers", "kv_cmp_init", h_cmp_init, 1, { 8 } },
        { "helpers", "kv_compare_tol", h_compare_tol, 4, { sizeof(KvCmpParams), 8, 8, 8 } },
        { "helpers", "kv_mismatch_from", h_mismatch_from, 5, { sizeof(KvCmpParams), 8, 8, 8, 8 } },
        { "helpers", "kv_l2_normal", h_l2_normal, 2, { 8, 4 } },
        { "helpers", "kv_l2_flush", h_l2_flush, 3, { 8, 8, 8 } },
        { "helpers", "kv_fill_batch", h_fill_batch, 1, { sizeof(KvFillBatch) } },
        { "helpers", "kv_cmp_init_batch", h_cmp_init_batch, 1, { sizeof(KvCmpBatch) } },
        { "helpers", "kv_compare_batch", h_compare_batch, 1, { sizeof(KvCmpBatch) } },
        { "helpers", "kv_diff_init_batch", h_diff_init_batch, 1, { sizeof(KvCheckBatch) } },
        { "helpers", "kv_check_batch", h_check_batch, 1, { sizeof(KvCheckBatch) } },
        { "ref", "vadd_ref", k_vadd, 4, { 8, 8, 8, 4 } },
        { "ref", "axpy_ref", k_axpy, 4, { 4, 8, 8, 4 } },
        { "ref", "copy4", k_copy4, 3, { 8, 8, 4 } },
        { "vadd_mark_scratch", "vadd", k_vadd, 5, { 8, 8, 8, 4, 8 } },
        { "fenced_vadd", "vadd", k_fenced_vadd, 4, { 8, 8, 8, 4 } },
        { "fenced_vadd_oob", "vadd", k_fenced_vadd, 4, { 8, 8, 8, 4 } },
        { "fenced_vadd_wild", "vadd", k_fenced_vadd, 4, { 8, 8, 8, 4 } },
        { "fenced_trap", "vadd", k_fenced_vadd, 4, { 8, 8, 8, 4 } },
        { "fenced_assert", "vadd", k_fenced_vadd, 4, { 8, 8, 8, 4 } },
        { "fenced_spin", "vadd", k_fenced_vadd, 4, { 8, 8, 8, 4 } },
        { "fenced_vadd_misaligned", "vadd", k_fenced_vadd, 4, { 8, 8, 8, 4 } },
        { NULL, "vadd", k_vadd, 4, { 8, 8, 8, 4 } },
        { NULL, "axpy", k_axpy, 4, { 4, 8, 8, 4 } },
        { NULL, "zero4", k_copy4, 3, { 8, 8, 4 } },
        { NULL, "gemm", k_gemm, 6, { 8, 8, 8, 4, 4, 4 } },
        { NULL, "gemm_tb", k_gemm_tb, 6, { 8, 8, 8, 4, 4, 4 } },
        { NULL, "gemm_ta", k_gemm_ta, 6, { 8, 8, 8, 4, 4, 4 } },
};

/* ---- the driver API ---- */

#define STICKY()                                                         \
        do {                                                             \
                if (fault_pending && now_ms() >= fault_at) {             \
                        sticky = fault_pending;                          \
                        fault_pending = 0;                               \
                }                                                        \
                if (sticky)                                              \
                        return sticky;                                   \
        } while (0)

CUresult cuGetErrorName(CUresult e, const char **s)
{
        switch (e) {
        case CUDA_SUCCESS: *s = "CUDA_SUCCESS"; break;
        case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
        case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
        case CUDA_ERROR_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
        case CUDA_ERROR_NOT_READY: *s = "CUDA_ERROR_NOT_READY"; break;
        case CUDA_ERROR_ILLEGAL_ADDRESS: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
        case CUDA_ERROR_INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; break;
        default: *s = "CUDA_ERROR_UNKNOWN"; return CUDA_ERROR_INVALID_VALUE;
        }
        return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult e, const char **s)
{
        *s = e == CUDA_ERROR_ILLEGAL_ADDRESS ? "an illegal memory access was encountered (fake)" : "fake driver error";
        return CUDA_SUCCESS;
}

CUresult cuInit(unsigned flags)
{
        const char *conns = getenv("CUDA_DEVICE_MAX_CONNECTIONS");

        (void)flags;
        /* what the worker asked of the driver's hardware queues (0: unset) */
        mem_log("init_max_connections", conns ? (size_t)atoi(conns) : 0);
        return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *n)
{
        *n = 1;
        return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int i)
{
        if (i != 0)
                return CUDA_ERROR_INVALID_DEVICE;
        *d = 0;
        return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
        (void)d;
        *c = &the_ctx;
        return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext c)
{
        (void)c;
        return CUDA_SUCCESS;
}

CUresult cuCtxSetLimit(CUlimit l, size_t v)
{
        (void)l;
        (void)v;
        return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *s, unsigned flags)
{
        (void)flags;
        *s = calloc(1, sizeof(struct CUstream_st));
        return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
        (void)d;
        snprintf(name, (size_t)len, "Fake H100 (CPU test double)");
        return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
        (void)d;
        switch (a) {
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
        case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 4; break;
        case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 1 << 20; break;
        case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 48 << 10; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 227 << 10; break;
        default: *v = 1000; break;
        }
        return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t *b, CUdevice d)
{
        (void)d;
        *b = FAKE_MEM_TOTAL;
        return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *v)
{
        *v = 13000;
        return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *m, const void *image)
{
        struct CUmod_st *mod;
        const char *s = image;

        STICKY();
        mod = calloc(1, sizeof(*mod));
        if (strncmp(s, "FAKE:", 5) == 0) {
                size_t n = strcspn(s + 5, "\n");
                snprintf(mod->flavor, sizeof(mod->flavor), "%.*s", (int)n, s + 5);
        } else {
                snprintf(mod->flavor, sizeof(mod->flavor), "helpers");
        }
        if (strncmp(mod->flavor, "fenced_", 7) == 0) {
                if (!(mod->fence = calloc(1, FENCE_BYTES))) {
                        free(mod);
                        return CUDA_ERROR_OUT_OF_MEMORY;
                }
                memcpy(mod->fence + FENCE_TAB_WORDS + FENCE_REC_WORDS, FENCE_NAMES, sizeof(FENCE_NAMES));
        }
        *m = mod;
        return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule m)
{
        STICKY();
        for (int i = 0; i < m->n_funcs; i++)
                free(m->funcs[i]);
        free(m->fence);
        free(m);
        return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
        STICKY();
        for (size_t i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++) {
                const KDef *k = &kernels[i];
                int helper = strcmp(m->flavor, "helpers") == 0, ref = strcmp(m->flavor, "ref") == 0;
                int fenced = m->fence != NULL; /* a fenced module has only its flavor's own kernels */
                if (strcmp(k->name, name) != 0)
                        continue;
                if (k->flavor ? strcmp(k->flavor, m->flavor) != 0 : (helper || ref || fenced))
                        continue;
                if (m->n_funcs == 256)
                        return CUDA_ERROR_OUT_OF_MEMORY;
                *f = calloc(1, sizeof(struct CUfunc_st));
                m->funcs[m->n_funcs++] = *f;
                (*f)->def = k;
                (*f)->mod = m;
                (*f)->max_dyn = 48 << 10;
                return CUDA_SUCCESS;
        }
        return CUDA_ERROR_NOT_FOUND;
}

/* Fake images are not ELF: the only globals are a fenced_ flavor's fence symbols. */
CUresult cuModuleGetGlobal(CUdeviceptr *p, size_t *bytes, CUmodule m, const char *name)
{
        uint64_t *at = NULL;
        size_t n = 0;

        STICKY();
        if (m->fence && strcmp(name, FENCE_SYM_TABLE) == 0) {
                at = m->fence;
                n = FENCE_TAB_WORDS * sizeof(uint64_t);
        } else if (m->fence && strcmp(name, FENCE_SYM_RECORD) == 0) {
                at = m->fence + FENCE_TAB_WORDS;
                n = FENCE_REC_WORDS * sizeof(uint64_t);
        } else if (m->fence && strcmp(name, FENCE_SYM_NAMES) == 0) {
                at = m->fence + FENCE_TAB_WORDS + FENCE_REC_WORDS;
                n = sizeof(FENCE_NAMES);
        } else {
                return CUDA_ERROR_NOT_FOUND;
        }
        if (p)
                *p = (CUdeviceptr)(uintptr_t)at;
        if (bytes)
                *bytes = n;
        return CUDA_SUCCESS;
}

CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size)
{
        size_t o = 0;

        STICKY();
        if ((int)i >= f->def->nparams)
                return CUDA_ERROR_INVALID_VALUE;
        for (size_t j = 0; j < i; j++)
                o += f->def->sizes[j];
        *off = o;
        if (size)
                *size = f->def->sizes[i];
        return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f)
{
        STICKY();
        switch (a) {
        case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = 32; break;
        case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
        case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = f->max_dyn; break;
        default: *v = 0; break;
        }
        return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v)
{
        STICKY();
        if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
                if (v > (227 << 10))
                        return CUDA_ERROR_INVALID_VALUE;
                f->max_dyn = v;
        }
        return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int block, size_t dyn)
{
        (void)f;
        (void)dyn;
        STICKY();
        *n = block > 0 && block <= 1024 ? 2048 / (block < 64 ? 64 : block) : 0;
        return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream s, void **params, void **extra)
{
        (void)s;
        (void)extra;
        STICKY();
        if ((unsigned long long)bx * by * bz > 1024 || gx == 0 || gy == 0 || gz == 0 || gy > 65535 || gz > 65535)
                return CUDA_ERROR_INVALID_VALUE;
        if ((int)shared > f->max_dyn)
                return CUDA_ERROR_INVALID_VALUE;
        if (spinning)
                return CUDA_SUCCESS; /* queued behind a kernel that never ends */
        last_grid[0] = gx;
        last_grid[1] = gy;
        last_grid[2] = gz;
        last_block[0] = bx;
        last_block[1] = by;
        last_block[2] = bz;
        f->def->fn(f->mod, params);
        return CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr *p, size_t bytes)
{
        size_t *h;

        STICKY();
        if (bytes == 0)
                return CUDA_ERROR_INVALID_VALUE;
        if (mem_used + bytes > FAKE_MEM_TOTAL)
                return CUDA_ERROR_OUT_OF_MEMORY;
        if (n_blocks == cap_blocks) {
                size_t cap = cap_blocks ? cap_blocks * 2 : 256;
                unsigned char **n = realloc(blocks, cap * sizeof(*n));
                if (!n)
                        return CUDA_ERROR_OUT_OF_MEMORY;
                blocks = n;
                cap_blocks = cap;
        }
        h = malloc(bytes + 16);
        if (!h)
                return CUDA_ERROR_OUT_OF_MEMORY;
        h[0] = bytes;
        memset(h + 2, 0x5A, bytes); /* cuMemAlloc does not zero: leave something visible */
        mem_used += bytes;
        blocks[n_blocks++] = (unsigned char *)(h + 2);
        mem_log("alloc", bytes);
        *p = (CUdeviceptr)(uintptr_t)(h + 2);
        return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr p)
{
        size_t *h = (size_t *)(uintptr_t)p - 2;
        const unsigned char *b = (const unsigned char *)(uintptr_t)p;

        STICKY();
        for (size_t i = 0; i < h[0]; i++) {
                if (b[i]) {
                        fprintf(stderr, "fakecuda: cuMemFree of %zu bytes that are not all zero (byte %zu is %#x)\n",
                                h[0], i, b[i]);
                        abort();
                }
        }
        for (size_t i = 0; i < n_blocks; i++) {
                if (blocks[i] == b) {
                        blocks[i] = blocks[--n_blocks];
                        break;
                }
        }
        mem_used -= h[0];
        mem_log("free", h[0]);
        free(h);
        return CUDA_SUCCESS;
}

CUresult cuMemAllocHost(void **p, size_t bytes)
{
        STICKY();
        *p = calloc(1, bytes);
        return CUDA_SUCCESS;
}

CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s)
{
        (void)s;
        STICKY();
        if (!spinning)
                memset((void *)(uintptr_t)d, v, n);
        return CUDA_SUCCESS;
}

CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream s)
{
        unsigned *w = (unsigned *)(uintptr_t)d;
        (void)s;
        STICKY();
        for (size_t i = 0; i < n && !spinning; i++)
                w[i] = v;
        return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
        (void)st;
        STICKY();
        if (!spinning)
                memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
        return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoHAsync(void *d, CUdeviceptr s, size_t n, CUstream st)
{
        (void)st;
        STICKY();
        if (!spinning)
                memcpy(d, (const void *)(uintptr_t)s, n);
        return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void *s, size_t n, CUstream st)
{
        (void)st;
        STICKY();
        if (!spinning)
                memcpy((void *)(uintptr_t)d, s, n);
        return CUDA_SUCCESS;
}

CUresult cuMemGetInfo(size_t *f, size_t *t)
{
        *f = FAKE_MEM_TOTAL - mem_used;
        *t = FAKE_MEM_TOTAL;
        return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *e, unsigned flags)
{
        (void)flags;
        *e = calloc(1, sizeof(struct CUevent_st));
        return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent e)
{
        free(e);
        return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent e, CUstream s)
{
        (void)s;
        STICKY();
        e->t = now_ms() > busy_until ? now_ms() : busy_until;
        e->never = spinning;
        return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent e)
{
        STICKY();
        return e->never || now_ms() < e->t ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
        STICKY();
        *ms = (float)(b->t - a->t);
        return CUDA_SUCCESS;
}

/* Stream capture is not emulated: the judge falls back to plain launches,
 * which is the path these tests then take (the GPU suite takes the other). */
CUresult cuStreamBeginCapture(CUstream s, CUstreamCaptureMode mode)
{
        (void)s;
        (void)mode;
        STICKY();
        return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuStreamEndCapture(CUstream s, CUgraph *g)
{
        (void)s;
        *g = NULL;
        return CUDA_ERROR_ILLEGAL_STATE;
}

CUresult cuGraphInstantiate(CUgraphExec *e, CUgraph g, unsigned long long flags)
{
        (void)g;
        (void)flags;
        *e = NULL;
        return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuGraphLaunch(CUgraphExec e, CUstream s)
{
        (void)e;
        (void)s;
        return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuGraphDestroy(CUgraph g)
{
        (void)g;
        return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec e)
{
        (void)e;
        return CUDA_SUCCESS;
}
