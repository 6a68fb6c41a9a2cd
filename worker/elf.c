/*
 * elf - see elf.h. Fields are read byte by byte as little-endian, so the
 * image needs no alignment and the host's byte order does not matter.
 *
 * ELF64 layout used here: the header's e_machine at 0x12, e_shoff at 0x28,
 * e_shentsize, e_shnum, e_shstrndx at 0x3a, 0x3c, 0x3e; a section header's
 * sh_name 0x00, sh_type 0x04, sh_offset 0x18, sh_size 0x20, sh_link 0x28,
 * sh_info 0x2c, sh_entsize 0x38 (64 bytes); a symbol's st_name 0x00,
 * st_info 0x04, st_other 0x05, st_shndx 0x06, st_value 0x08, st_size 0x10
 * (24 bytes).
 */
#include "worker/elf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define EHDR_BYTES 64
#define SHDR_BYTES 64
#define SYM_BYTES 24
#define EM_CUDA 190

static uint16_t rd16(const uint8_t *p)
{
        return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
        return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
        return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* [off, off + size) inside [0, len), without computing off + size. */
static bool in_bounds(size_t len, uint64_t off, uint64_t size)
{
        return off <= len && size <= len - off;
}

/* The NUL-terminated string at @off of the string table @tab, or NULL. */
static const char *tab_string(const ElfSection *tab, uint64_t off)
{
        const char *s;

        if (!tab || !tab->data || off >= tab->size)
                return NULL;
        s = (const char *)tab->data + off;
        return memchr(s, '\0', tab->size - off) ? s : NULL;
}

/**
 * elf_open() - check a CUBIN's ELF structure and index its sections
 * @data, @len: the image; borrowed, and must outlive the ElfImage (its
 *              sections' names and data point into it)
 * @ret_elf:    on success, the index; release it with elf_close()
 *
 * Return: 0, ELF_E_MALFORMED when @data is not a 64-bit little-endian CUDA
 * ELF or its tables do not fit in it, or -ENOMEM.
 */
int elf_open(const void *data, size_t len, ElfImage *ret_elf)
{
        const uint8_t *d = data;
        ElfImage e = { .data = data, .len = len };
        uint64_t shoff;
        uint16_t shentsize, shnum, shstrndx;
        int r = ELF_E_MALFORMED;

        if (len < EHDR_BYTES || memcmp(d, "\177ELF", 4) != 0 || d[4] != 2 /* ELFCLASS64 */ ||
            d[5] != 1 /* ELFDATA2LSB */ || rd16(d + 0x12) != EM_CUDA)
                goto out;
        shoff = rd64(d + 0x28);
        shentsize = rd16(d + 0x3a);
        shnum = rd16(d + 0x3c);
        shstrndx = rd16(d + 0x3e);
        if (shentsize < SHDR_BYTES || shnum == 0 || shstrndx >= shnum ||
            !in_bounds(len, shoff, (uint64_t)shentsize * shnum))
                goto out;
        e.sections = calloc(shnum, sizeof(ElfSection));
        if (!e.sections) {
                r = -ENOMEM;
                goto out;
        }
        e.n_sections = shnum;
        for (size_t i = 0; i < shnum; i++) {
                const uint8_t *h = d + shoff + i * shentsize;
                ElfSection *s = &e.sections[i];
                uint64_t off = rd64(h + 0x18);
                s->type = rd32(h + 0x04);
                s->size = rd64(h + 0x20);
                s->link = rd32(h + 0x28);
                s->info = rd32(h + 0x2c);
                s->entsize = rd64(h + 0x38);
                if (s->type == ELF_SHT_NULL || s->type == ELF_SHT_NOBITS)
                        continue; /* no bytes in the file: data stays NULL */
                if (!in_bounds(len, off, s->size))
                        goto out;
                s->data = d + off;
                if (s->type == ELF_SHT_SYMTAB)
                        e.symtab = s;
        }
        for (size_t i = 0; i < shnum; i++) {
                e.sections[i].name = tab_string(&e.sections[shstrndx], rd32(d + shoff + i * shentsize));
                if (!e.sections[i].name)
                        goto out;
        }
        if (e.symtab) {
                if (e.symtab->entsize < SYM_BYTES || e.symtab->link >= shnum)
                        goto out;
                e.strtab = &e.sections[e.symtab->link];
                e.n_symbols = e.symtab->size / e.symtab->entsize;
        }
        *ret_elf = e;
        e.sections = NULL;
        r = 0;
out:
        free(e.sections);
        return r;
}

/**
 * elf_find_section() - the first section named @prefix followed by @suffix
 * @elf:    an open ElfImage
 * @prefix: e.g. ".nv.info."
 * @suffix: e.g. a kernel's name; "" for @prefix alone
 *
 * Return: the section, borrowed from @elf, or NULL when there is none.
 */
const ElfSection *elf_find_section(const ElfImage *elf, const char *prefix, const char *suffix)
{
        size_t plen = strlen(prefix);

        for (size_t i = 0; i < elf->n_sections; i++) {
                const char *n = elf->sections[i].name;
                if (strncmp(n, prefix, plen) == 0 && strcmp(n + plen, suffix) == 0)
                        return &elf->sections[i];
        }
        return NULL;
}

/**
 * elf_get_symbol() - read one entry of the symbol table
 * @elf:     an open ElfImage
 * @index:   0 .. elf->n_symbols - 1
 * @ret_sym: on success, the entry; its name is borrowed from the image
 *           (NULL when st_name is no string of the symbol string table:
 *           the caller decides whether that makes the CUBIN malformed)
 *
 * Return: 0, or -ERANGE when @index is not below elf->n_symbols.
 */
int elf_get_symbol(const ElfImage *elf, size_t index, ElfSymbol *ret_sym)
{
        const uint8_t *s;

        if (index >= elf->n_symbols)
                return -ERANGE;
        /* index < size / entsize and entsize >= SYM_BYTES: the entry lies inside symtab */
        s = elf->symtab->data + index * elf->symtab->entsize;
        *ret_sym = (ElfSymbol){
                .name = tab_string(elf->strtab, rd32(s)),
                .type = s[4] & 0xf,
                .other = s[5],
                .shndx = rd16(s + 6),
                .value = rd64(s + 8),
                .size = rd64(s + 16),
        };
        return 0;
}

/** elf_close() - free the index (not the image); accepts NULL and a zeroed ElfImage. */
void elf_close(ElfImage *elf)
{
        if (!elf)
                return;
        free(elf->sections);
        *elf = (ElfImage){ 0 };
}
