/*
 * gpu_elf - see gpu_elf.h. The ELF structure comes from worker/elf.h (one
 * reader for the whole tree): CUBINs as NVRTC, nvJitLink and nvcc -cubin
 * write them; fatbins and anything else are GPU_ELF_E_MALFORMED.
 */
#include "worker/gpu/gpu_elf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/elf.h"

#define GLOBALS_MAX 4096

/* Append one variable; GPU_ELF_E_MALFORMED past GLOBALS_MAX. */
static int add_global(GpuElfGlobals *g, const ElfSymbol *sym, int sec)
{
        GpuElfGlobal *v;

        if (g->n_globals == GLOBALS_MAX)
                return GPU_ELF_E_MALFORMED;
        if (g->n_globals % 64 == 0) {
                GpuElfGlobal *n = realloc(g->globals, ((size_t)g->n_globals + 64) * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                g->globals = n;
        }
        v = &g->globals[g->n_globals++];
        snprintf(v->name, GPU_ELF_NAME_BYTES, "%s", sym->name);
        v->section = sec;
        v->offset = sym->value;
        v->size = sym->size;
        return 0;
}

/**
 * gpu_elf_globals() - list the __device__ variables of a CUBIN
 * @image, @size: the CUBIN; borrowed (nothing points into it afterwards)
 * @ret: filled on success (gpu_elf_globals_clear())
 *
 * The variables are the OBJECT symbols defined in a section whose name
 * starts with ".nv.global" (the first GPU_ELF_SECTIONS_MAX such sections);
 * symbols without a name, or with one of GPU_ELF_NAME_BYTES or more, are
 * left out.
 *
 * Return: 0, GPU_ELF_E_MALFORMED (worker/elf.h's rules, or more than 4096
 * variables), -ENOMEM.
 */
int gpu_elf_globals(const void *image, size_t size, GpuElfGlobals *ret)
{
        ElfImage e = { 0 };
        GpuElfGlobals g = { 0 };
        int sec_index[GPU_ELF_SECTIONS_MAX]; /* ELF section index of each listed section */
        int r;

        r = elf_open(image, size, &e);
        if (r != 0) {
                r = r == ELF_E_MALFORMED ? GPU_ELF_E_MALFORMED : r;
                goto out;
        }
        for (size_t i = 0; i < e.n_sections && g.n_sections < GPU_ELF_SECTIONS_MAX; i++) {
                if (strncmp(e.sections[i].name, ".nv.global", 10) != 0)
                        continue;
                snprintf(g.sections[g.n_sections].name, sizeof(g.sections[0].name), "%s", e.sections[i].name);
                g.sections[g.n_sections].size = e.sections[i].size;
                sec_index[g.n_sections++] = (int)i;
        }
        /* without symbols or without such sections: nothing to zero */
        for (size_t i = 0; g.n_sections > 0 && i < e.n_symbols; i++) {
                ElfSymbol sym;
                int sec = -1;
                r = elf_get_symbol(&e, i, &sym);
                if (r != 0)
                        goto out;
                if (sym.type != ELF_STT_OBJECT)
                        continue;
                for (int k = 0; k < g.n_sections; k++)
                        if (sym.shndx == sec_index[k])
                                sec = k;
                if (sec < 0 || !sym.name || !*sym.name || strlen(sym.name) >= GPU_ELF_NAME_BYTES)
                        continue;
                r = add_global(&g, &sym, sec);
                if (r != 0)
                        goto out;
        }
        *ret = g;
        g = (GpuElfGlobals){ 0 };
        r = 0;
out:
        gpu_elf_globals_clear(&g);
        elf_close(&e);
        return r;
}

/** gpu_elf_globals_clear() - free the list; accepts a zeroed struct. */
void gpu_elf_globals_clear(GpuElfGlobals *g)
{
        free(g->globals);
        memset(g, 0, sizeof(*g));
}
