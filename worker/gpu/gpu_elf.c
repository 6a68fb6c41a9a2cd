/*
 * gpu_elf - see gpu_elf.h. Reads ELF64 little-endian CUBINs (what NVRTC,
 * nvJitLink and nvcc -cubin produce); fatbins and anything else are
 * GPU_ELF_E_MALFORMED.
 */
#include "worker/gpu/gpu_elf.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GLOBALS_MAX 4096

static int in_bounds(size_t size, uint64_t off, uint64_t len)
{
        return off <= size && len <= size - off;
}

/* A NUL-terminated string at @off of the string table [@base, @base + @len). */
static const char *str_at(const unsigned char *img, uint64_t base, uint64_t len, uint64_t off)
{
        const char *s;

        if (off >= len)
                return NULL;
        s = (const char *)img + base + off;
        return memchr(s, '\0', len - off) ? s : NULL;
}

/**
 * gpu_elf_globals() - list the __device__ variables of a CUBIN
 * @image, @size: the CUBIN; borrowed
 * @ret: filled on success (gpu_elf_globals_clear())
 * Return: 0, GPU_ELF_E_MALFORMED, -ENOMEM.
 */
int gpu_elf_globals(const void *image, size_t size, GpuElfGlobals *ret)
{
        const unsigned char *img = image;
        Elf64_Ehdr eh;
        Elf64_Shdr sym_sh, str_sh, shstr;
        GpuElfGlobals g;
        int sec_index[GPU_ELF_SECTIONS_MAX]; /* ELF section index of each listed section */
        uint64_t nsyms;

        memset(&g, 0, sizeof(g));
        if (size < sizeof(eh))
                return GPU_ELF_E_MALFORMED;
        memcpy(&eh, img, sizeof(eh));
        if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
            eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
            eh.e_shstrndx >= eh.e_shnum || !in_bounds(size, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr)))
                return GPU_ELF_E_MALFORMED;
        memcpy(&shstr, img + eh.e_shoff + (uint64_t)eh.e_shstrndx * sizeof(Elf64_Shdr), sizeof(shstr));
        if (!in_bounds(size, shstr.sh_offset, shstr.sh_size))
                return GPU_ELF_E_MALFORMED;
        memset(&sym_sh, 0, sizeof(sym_sh));
        for (unsigned i = 0; i < eh.e_shnum; i++) {
                Elf64_Shdr sh;
                const char *name;
                memcpy(&sh, img + eh.e_shoff + (uint64_t)i * sizeof(Elf64_Shdr), sizeof(sh));
                if (sh.sh_type == SHT_SYMTAB)
                        sym_sh = sh;
                name = str_at(img, shstr.sh_offset, shstr.sh_size, sh.sh_name);
                if (name && strncmp(name, ".nv.global", 10) == 0 && g.n_sections < GPU_ELF_SECTIONS_MAX) {
                        snprintf(g.sections[g.n_sections].name, sizeof(g.sections[0].name), "%s", name);
                        g.sections[g.n_sections].size = sh.sh_size;
                        sec_index[g.n_sections++] = (int)i;
                }
        }
        if (sym_sh.sh_type != SHT_SYMTAB || g.n_sections == 0) {
                *ret = g; /* no symbols or no globals: nothing to zero */
                return 0;
        }
        if (sym_sh.sh_entsize != sizeof(Elf64_Sym) || sym_sh.sh_link >= eh.e_shnum ||
            !in_bounds(size, sym_sh.sh_offset, sym_sh.sh_size))
                return GPU_ELF_E_MALFORMED;
        memcpy(&str_sh, img + eh.e_shoff + (uint64_t)sym_sh.sh_link * sizeof(Elf64_Shdr), sizeof(str_sh));
        if (!in_bounds(size, str_sh.sh_offset, str_sh.sh_size))
                return GPU_ELF_E_MALFORMED;
        nsyms = sym_sh.sh_size / sizeof(Elf64_Sym);
        for (uint64_t i = 0; i < nsyms; i++) {
                Elf64_Sym sym;
                const char *name;
                int sec = -1;
                memcpy(&sym, img + sym_sh.sh_offset + i * sizeof(Elf64_Sym), sizeof(sym));
                if (ELF64_ST_TYPE(sym.st_info) != STT_OBJECT)
                        continue;
                for (int k = 0; k < g.n_sections; k++)
                        if (sym.st_shndx == sec_index[k])
                                sec = k;
                name = str_at(img, str_sh.sh_offset, str_sh.sh_size, sym.st_name);
                if (sec < 0 || !name || !*name || strlen(name) >= GPU_ELF_NAME_BYTES)
                        continue;
                if (g.n_globals == GLOBALS_MAX) {
                        gpu_elf_globals_clear(&g);
                        return GPU_ELF_E_MALFORMED;
                }
                if (g.n_globals % 64 == 0) {
                        GpuElfGlobal *n = realloc(g.globals, ((size_t)g.n_globals + 64) * sizeof(*n));
                        if (!n) {
                                gpu_elf_globals_clear(&g);
                                return -ENOMEM;
                        }
                        g.globals = n;
                }
                snprintf(g.globals[g.n_globals].name, GPU_ELF_NAME_BYTES, "%s", name);
                g.globals[g.n_globals].section = sec;
                g.globals[g.n_globals].offset = sym.st_value;
                g.globals[g.n_globals].size = sym.st_size;
                g.n_globals++;
        }
        *ret = g;
        return 0;
}

/** gpu_elf_globals_clear() - free the list; accepts a zeroed struct. */
void gpu_elf_globals_clear(GpuElfGlobals *g)
{
        free(g->globals);
        memset(g, 0, sizeof(*g));
}
