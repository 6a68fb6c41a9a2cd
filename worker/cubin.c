/*
 * cubin - see cubin.h. The ELF structure (sections, their names, the
 * symbols) comes from worker/elf.h, which has checked it against the image;
 * this file reads what the CUDA toolchain puts in it.
 *
 * Layout facts this file relies on (CUDA 11..13, checked against kernels
 * with known signatures in worker/test-cubin.c):
 *
 * - Kernels are FUNC symbols whose st_other carries STO_CUDA_ENTRY (0x10).
 * - .nv.info (global) and .nv.info.<kernel> (per kernel) are sequences of
 *   attributes: u8 format, u8 attribute, then for EIFMT_SVAL (4) a u16 size
 *   and that many bytes, otherwise a u16 value (EIFMT_NVAL 1, BVAL 2,
 *   HVAL 3).
 * - EIATTR_KPARAM_INFO (0x17), 12 bytes: u32 index, u16 ordinal,
 *   u16 offset, u32 flags whose bits 18..31 are the size in bytes.
 * - EIATTR_REGCOUNT (0x2f), EIATTR_FRAME_SIZE (0x11),
 *   EIATTR_MIN_STACK_SIZE (0x12), EIATTR_MAX_STACK_SIZE (0x23) in .nv.info:
 *   u32 symbol index, u32 value.
 * - EIATTR_MAX_THREADS (0x05) and EIATTR_REQNTID (0x10): three u32.
 * - EIATTR_CBANK_PARAM_SIZE (0x19): HVAL, the parameter buffer size.
 */
#include "worker/cubin.h"
#include "worker/elf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define STO_CUDA_ENTRY 0x10

#define EIFMT_SVAL 4
#define EIATTR_MAX_THREADS 0x05
#define EIATTR_REQNTID 0x10
#define EIATTR_FRAME_SIZE 0x11
#define EIATTR_MIN_STACK_SIZE 0x12
#define EIATTR_KPARAM_INFO 0x17
#define EIATTR_CBANK_PARAM_SIZE 0x19
#define EIATTR_MAX_STACK_SIZE 0x23
#define EIATTR_REGCOUNT 0x2f

static uint16_t rd16(const uint8_t *p)
{
        return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
        return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int cmp_ordinal(const void *a, const void *b)
{
        uint32_t x = ((const uint32_t *)a)[0], y = ((const uint32_t *)b)[0];
        return x < y ? -1 : x > y;
}

/*
 * Walk the attributes of one .nv.info section. For each attribute calls
 * @fn with its code, format, value pointer and size (SVAL), or the u16
 * value (other formats, @val).
 */
typedef int (*AttrFn)(void *ctx, uint8_t attr, uint8_t fmt, const uint8_t *p, uint16_t size);

static int walk_attrs(const ElfSection *s, AttrFn fn, void *ctx)
{
        const uint8_t *p = s->data, *end;
        int r;

        if (!p) /* SHT_NOBITS or SHT_NULL: attributes need bytes in the file */
                return s->size ? CUBIN_E_MALFORMED : 0;
        end = p + s->size;

        while (p < end) {
                uint8_t fmt, attr;
                uint16_t v;
                if (end - p < 4)
                        return CUBIN_E_MALFORMED;
                fmt = p[0];
                attr = p[1];
                v = rd16(p + 2);
                p += 4;
                if (fmt == EIFMT_SVAL) {
                        if ((size_t)(end - p) < v)
                                return CUBIN_E_MALFORMED;
                        r = fn(ctx, attr, fmt, p, v);
                        p += v;
                } else if (fmt >= 1 && fmt <= 3) {
                        r = fn(ctx, attr, fmt, p - 2, 2);
                } else {
                        return CUBIN_E_MALFORMED;
                }
                if (r != 0)
                        return r;
        }
        return 0;
}

typedef struct KernelCtx {
        CubinKernel *k;
        uint32_t (*ords)[3]; /* ordinal, offset, size */
        size_t n, cap;
} KernelCtx;

static int kernel_attr(void *ctx, uint8_t attr, uint8_t fmt, const uint8_t *p, uint16_t size)
{
        KernelCtx *c = ctx;

        switch (attr) {
        case EIATTR_KPARAM_INFO:
                if (fmt != EIFMT_SVAL || size < 12)
                        return CUBIN_E_MALFORMED;
                if (c->n == c->cap) {
                        size_t cap = c->cap ? c->cap * 2 : 16;
                        void *n;
                        if (cap > CUBIN_PARAMS_MAX)
                                return CUBIN_E_MALFORMED;
                        n = realloc(c->ords, cap * sizeof(*c->ords));
                        if (!n)
                                return -ENOMEM;
                        c->ords = n;
                        c->cap = cap;
                }
                c->ords[c->n][0] = rd16(p + 4);
                c->ords[c->n][1] = rd16(p + 6);
                c->ords[c->n][2] = (rd32(p + 8) >> 18) & 0x3fff;
                c->n++;
                break;
        case EIATTR_CBANK_PARAM_SIZE:
                if (fmt != EIFMT_SVAL)
                        c->k->param_bytes = rd16(p);
                break;
        case EIATTR_MAX_THREADS:
        case EIATTR_REQNTID:
                if (fmt == EIFMT_SVAL && size >= 12) {
                        uint64_t t = (uint64_t)rd32(p) * rd32(p + 4) * rd32(p + 8);
                        if (attr == EIATTR_MAX_THREADS || c->k->max_threads < 0)
                                c->k->max_threads = (int64_t)(t > INT32_MAX ? INT32_MAX : t);
                }
                break;
        default:
                break;
        }
        return 0;
}

typedef struct GlobalCtx {
        CubinInfo *info;
        const uint32_t *sym_of_kernel; /* symbol index of each kernel */
} GlobalCtx;

static int global_attr(void *ctx, uint8_t attr, uint8_t fmt, const uint8_t *p, uint16_t size)
{
        GlobalCtx *g = ctx;
        uint32_t sym, val;

        if (fmt != EIFMT_SVAL || size < 8)
                return 0;
        if (attr != EIATTR_REGCOUNT && attr != EIATTR_FRAME_SIZE && attr != EIATTR_MIN_STACK_SIZE &&
            attr != EIATTR_MAX_STACK_SIZE)
                return 0;
        sym = rd32(p);
        val = rd32(p + 4);
        for (size_t i = 0; i < g->info->n_kernels; i++) {
                CubinKernel *k = &g->info->kernels[i];
                if (g->sym_of_kernel[i] != sym)
                        continue;
                if (attr == EIATTR_REGCOUNT)
                        k->registers = val;
                else if (attr == EIATTR_FRAME_SIZE)
                        k->frame_bytes = val;
                else if (attr == EIATTR_MIN_STACK_SIZE || k->stack_bytes < 0)
                        k->stack_bytes = val;
        }
        return 0;
}

static int kernel_fill(const ElfImage *e, CubinKernel *k)
{
        const ElfSection *s;
        KernelCtx c = { .k = k };
        int r = 0;

        s = elf_find_section(e, ".nv.shared.", k->name);
        if (s)
                k->shared_section = (int64_t)s->size;
        s = elf_find_section(e, ".nv.info.", k->name);
        if (!s)
                return 0;
        r = walk_attrs(s, kernel_attr, &c);
        if (r != 0)
                goto out;
        if (c.n > 0) {
                qsort(c.ords, c.n, sizeof(*c.ords), cmp_ordinal);
                for (size_t i = 0; i < c.n; i++)
                        if (c.ords[i][0] != i) {
                                r = CUBIN_E_MALFORMED; /* a gap or a duplicate ordinal */
                                goto out;
                        }
                k->params = calloc(c.n, sizeof(CubinParam));
                if (!k->params) {
                        r = -ENOMEM;
                        goto out;
                }
                for (size_t i = 0; i < c.n; i++) {
                        k->params[i].offset = c.ords[i][1];
                        k->params[i].size = c.ords[i][2];
                }
                k->n_params = c.n;
        }
out:
        free(c.ords);
        return r;
}

/**
 * cubin_parse() - list the kernels of a CUBIN with their parameters and
 * resource attributes
 * @data, @len: the CUBIN; borrowed (nothing points into it afterwards)
 * @ret_info:   on success, a new CubinInfo; free with cubin_info_free()
 *
 * Return: 0, CUBIN_E_MALFORMED when @data is not a well-formed CUDA ELF
 * (or has more than CUBIN_KERNELS_MAX kernels), or -ENOMEM.
 */
int cubin_parse(const void *data, size_t len, CubinInfo **ret_info)
{
        ElfImage e = { 0 };
        CubinInfo *info = NULL;
        uint32_t *syms = NULL;
        size_t n_syms;
        int r;

        r = elf_open(data, len, &e);
        if (r != 0) {
                r = r == ELF_E_MALFORMED ? CUBIN_E_MALFORMED : r;
                goto out;
        }
        info = calloc(1, sizeof(*info));
        if (!info) {
                r = -ENOMEM;
                goto out;
        }
        if (!e.symtab)
                goto done; /* no symbols: no kernels */
        n_syms = e.n_symbols;
        info->kernels = calloc(n_syms ? n_syms : 1, sizeof(CubinKernel));
        syms = calloc(n_syms ? n_syms : 1, sizeof(uint32_t));
        if (!info->kernels || !syms) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < n_syms; i++) {
                ElfSymbol sym;
                CubinKernel *k;
                r = elf_get_symbol(&e, i, &sym);
                if (r != 0)
                        goto out;
                if (sym.type != ELF_STT_FUNC || !(sym.other & STO_CUDA_ENTRY))
                        continue;
                if (!sym.name || !*sym.name || info->n_kernels >= CUBIN_KERNELS_MAX) {
                        r = CUBIN_E_MALFORMED;
                        goto out;
                }
                k = &info->kernels[info->n_kernels];
                k->name = strdup(sym.name);
                if (!k->name) {
                        r = -ENOMEM;
                        goto out;
                }
                k->param_bytes = k->registers = k->frame_bytes = k->stack_bytes = -1;
                k->shared_section = k->max_threads = -1;
                syms[info->n_kernels++] = (uint32_t)i;
        }
        for (size_t i = 0; i < info->n_kernels; i++) {
                r = kernel_fill(&e, &info->kernels[i]);
                if (r != 0)
                        goto out;
        }
        for (size_t i = 0; i < e.n_sections; i++) {
                if (strcmp(e.sections[i].name, ".nv.info") != 0)
                        continue;
                GlobalCtx g = { .info = info, .sym_of_kernel = syms };
                r = walk_attrs(&e.sections[i], global_attr, &g);
                if (r != 0)
                        goto out;
        }
done:
        *ret_info = info;
        info = NULL;
        r = 0;
out:
        cubin_info_free(info);
        free(syms);
        elf_close(&e);
        return r;
}

/** cubin_find_kernel() - the kernel named @name, or NULL; borrowed from @info. */
const CubinKernel *cubin_find_kernel(const CubinInfo *info, const char *name)
{
        if (!info || !name)
                return NULL;
        for (size_t i = 0; i < info->n_kernels; i++)
                if (strcmp(info->kernels[i].name, name) == 0)
                        return &info->kernels[i];
        return NULL;
}

/** cubin_info_free() - free a CubinInfo; accepts NULL. */
void cubin_info_free(CubinInfo *info)
{
        if (!info)
                return;
        for (size_t i = 0; i < info->n_kernels; i++) {
                free(info->kernels[i].name);
                free(info->kernels[i].params);
        }
        free(info->kernels);
        free(info);
}
