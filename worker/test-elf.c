/*
 * Unit tests for the ELF reader (worker/elf.c) on a small CUDA ELF built
 * here byte by byte, so that every field can be broken on purpose: a
 * well-formed image read back field for field, then each rule of
 * elf_open() broken alone (truncated tables, offsets past the end, offset
 * + size that wraps around, names outside their table, a bad symbol table)
 * and refused, and the cases that are not errors (sections without bytes,
 * symbol names that do not resolve) read without touching memory outside
 * the image (ASan/UBSan watch this). The real CUBINs are tested through
 * cubin.c (test-cubin) and gpu_elf.c (test-gpu-elf).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/elf.h"
#include "common/testcheck.h"

/* Layout of the image: header, .shstrtab, .strtab, .symtab, .nv.info.k, section table. */
enum { S_NULL, S_SHSTRTAB, S_STRTAB, S_SYMTAB, S_GLOBAL, S_INFO, N_SECTIONS };

static const char shstrtab[] = "\0.shstrtab\0.strtab\0.symtab\0.nv.global\0.nv.info.k";
static const char strtab[] = "\0x\0k";
#define SHSTR_OFF 64
#define STR_OFF (SHSTR_OFF + sizeof(shstrtab))
#define SYM_OFF 128
#define N_SYMS 3
#define INFO_OFF (SYM_OFF + N_SYMS * 24)
#define INFO_BYTES 8
#define SH_OFF 256
#define IMAGE_BYTES (SH_OFF + N_SECTIONS * 64)

static void wr16(uint8_t *p, uint16_t v)
{
        p[0] = (uint8_t)v;
        p[1] = (uint8_t)(v >> 8);
}

static void wr32(uint8_t *p, uint32_t v)
{
        wr16(p, (uint16_t)v);
        wr16(p + 2, (uint16_t)(v >> 16));
}

static void wr64(uint8_t *p, uint64_t v)
{
        wr32(p, (uint32_t)v);
        wr32(p + 4, (uint32_t)(v >> 32));
}

static uint8_t *shdr(uint8_t *img, int i)
{
        return img + SH_OFF + i * 64;
}

static void set_section(uint8_t *img, int i, uint32_t name, uint32_t type, uint64_t off, uint64_t size,
                        uint32_t link, uint64_t entsize)
{
        uint8_t *h = shdr(img, i);
        wr32(h, name);
        wr32(h + 0x04, type);
        wr64(h + 0x18, off);
        wr64(h + 0x20, size);
        wr32(h + 0x28, link);
        wr64(h + 0x38, entsize);
}

static void set_symbol(uint8_t *img, int i, uint32_t name, uint8_t type, uint8_t other, uint16_t shndx,
                       uint64_t value, uint64_t size)
{
        uint8_t *s = img + SYM_OFF + i * 24;
        wr32(s, name);
        s[4] = type;
        s[5] = other;
        wr16(s + 6, shndx);
        wr64(s + 8, value);
        wr64(s + 16, size);
}

/* A well-formed CUDA ELF: a variable x in .nv.global and a kernel k. */
static void build(uint8_t *img)
{
        memset(img, 0, IMAGE_BYTES);
        memcpy(img, "\177ELF", 4);
        img[4] = 2; /* ELFCLASS64 */
        img[5] = 1; /* little-endian */
        img[6] = 1;
        wr16(img + 0x10, 2);   /* ET_EXEC */
        wr16(img + 0x12, 190); /* EM_CUDA */
        wr64(img + 0x28, SH_OFF);
        wr16(img + 0x3a, 64);
        wr16(img + 0x3c, N_SECTIONS);
        wr16(img + 0x3e, S_SHSTRTAB);
        memcpy(img + SHSTR_OFF, shstrtab, sizeof(shstrtab));
        memcpy(img + STR_OFF, strtab, sizeof(strtab));
        set_symbol(img, 1, 1, ELF_STT_OBJECT, 0, S_GLOBAL, 16, 4);
        set_symbol(img, 2, 3, ELF_STT_FUNC, 0x10, 0, 0, 0);
        memcpy(img + INFO_OFF, "\004\027\000\000\004\057\000\000", INFO_BYTES);
        set_section(img, S_SHSTRTAB, 1, 3, SHSTR_OFF, sizeof(shstrtab), 0, 0);
        set_section(img, S_STRTAB, 11, 3, STR_OFF, sizeof(strtab), 0, 0);
        set_section(img, S_SYMTAB, 19, ELF_SHT_SYMTAB, SYM_OFF, N_SYMS * 24, S_STRTAB, 24);
        set_section(img, S_GLOBAL, 27, ELF_SHT_NOBITS, 0, 64, 0, 0);
        set_section(img, S_INFO, 38, 0x70000000, INFO_OFF, INFO_BYTES, 0, 0);
}

static int open_rc(const uint8_t *img, size_t len)
{
        ElfImage e;
        int r = elf_open(img, len, &e);

        if (r == 0)
                elf_close(&e);
        return r;
}

static void check_good(const uint8_t *img)
{
        ElfImage e = { 0 };
        ElfSymbol sym;
        const ElfSection *s;

        CHECK(elf_open(img, IMAGE_BYTES, &e) == 0);
        CHECK(e.n_sections == N_SECTIONS);
        if (e.n_sections != N_SECTIONS)
                return;
        CHECK(strcmp(e.sections[S_NULL].name, "") == 0 && e.sections[S_NULL].data == NULL);
        CHECK(strcmp(e.sections[S_SYMTAB].name, ".symtab") == 0);
        CHECK(e.symtab == &e.sections[S_SYMTAB] && e.strtab == &e.sections[S_STRTAB] && e.n_symbols == N_SYMS);
        s = elf_find_section(&e, ".nv.info.", "k");
        CHECK(s == &e.sections[S_INFO]);
        CHECK(s && s->data == img + INFO_OFF && s->size == INFO_BYTES);
        s = elf_find_section(&e, ".nv.global", "");
        CHECK(s == &e.sections[S_GLOBAL]);
        CHECK(s && s->data == NULL && s->size == 64); /* NOBITS: a size, no bytes */
        CHECK(elf_find_section(&e, ".nv.info.", "") == NULL);
        CHECK(elf_find_section(&e, ".nv.info.", "kk") == NULL);

        CHECK(elf_get_symbol(&e, 0, &sym) == 0 && sym.name && *sym.name == '\0');
        CHECK(elf_get_symbol(&e, 1, &sym) == 0);
        CHECK(sym.name && strcmp(sym.name, "x") == 0 && sym.type == ELF_STT_OBJECT && sym.shndx == S_GLOBAL &&
              sym.value == 16 && sym.size == 4);
        CHECK(elf_get_symbol(&e, 2, &sym) == 0);
        CHECK(sym.name && strcmp(sym.name, "k") == 0 && sym.type == ELF_STT_FUNC && sym.other == 0x10);
        sym.name = "unchanged";
        CHECK(elf_get_symbol(&e, N_SYMS, &sym) == -ERANGE && strcmp(sym.name, "unchanged") == 0);
        elf_close(&e);
        CHECK(e.sections == NULL && e.n_sections == 0);
        elf_close(&e); /* twice, and NULL: no-ops */
        elf_close(NULL);
}

int main(void)
{
        uint8_t *img = malloc(IMAGE_BYTES), *t;
        ElfImage e = { 0 };
        ElfSymbol sym;

        if (!img)
                return 1;
        build(img);
        check_good(img);

        /* Every truncation cuts the section table at the end: refused, no read past the end. */
        for (size_t len = 0; len < IMAGE_BYTES; len++) {
                t = malloc(len ? len : 1);
                if (!t)
                        return 1;
                memcpy(t, img, len);
                CHECK(open_rc(t, len) == ELF_E_MALFORMED);
                free(t);
        }

        /* The header. */
        build(img);
        img[4] = 1; /* ELFCLASS32 */
        CHECK(open_rc(img, IMAGE_BYTES) == ELF_E_MALFORMED);
        build(img);
        img[5] = 2; /* big-endian */
        CHECK(open_rc(img, IMAGE_BYTES) == ELF_E_MALFORMED);
        build(img);
        wr16(img + 0x12, 62); /* EM_X86_64 */
        CHECK(open_rc(img, IMAGE_BYTES) == ELF_E_MALFORMED);
        build(img);
        wr16(img + 0x3a, 40); /* section headers smaller than ELF64's */
        CHECK(open_rc(img, IMAGE_BYTES) == ELF_E_MALFORMED);
        build(img);
        wr16(img + 0x3c, 0); /* extended numbering */
        CHECK(open_rc(img, IMAGE_BYTES) == ELF_E_MALFORMED);
        build(img);
        wr16(img + 0x3c, N_SECTIONS + 1); /* the table runs past the end */
        CHECK(open_rc(img, IMAGE_BYTES) == ELF_E_MALFORMED);
        build(img);
        wr16(img + 0x3e, N_SECTIONS); /* e_shstrndx past the table */
        CHECK(open_rc(img, IMAGE_BYTES) == ELF_E_MALFORMED);
        build(img);
        wr64(img + 0x28, IMAGE_BYTES + 64); /* e_shoff past the end */
        CHECK(open_rc(img, IMAGE_BYTES) == ELF_E_MALFORMED);
        build(img);
        wr64(img + 0x28, UINT64_MAX - 63); /* e_shoff + table size wraps to a small number */
        CHECK(open_rc(img, IMAGE_BYTES) == ELF_E_MALFORMED);

        /* A section's bytes. */
        build(img);
        wr64(shdr(img, S_INFO) + 0x18, IMAGE_BYTES + 1); /* offset past the end */
        CHECK(open_rc(img, IMAGE_BYTES) == ELF_E_MALFORMED);
        build(img);
        wr64(shdr(img, S_INFO) + 0x20, IMAGE_BYTES); /* size past the end */
        CHECK(open_rc(img, IMAGE_BYTES) == ELF_E_MALFORMED);
        build(img);
        wr64(shdr(img, S_INFO) + 0x20, UINT64_MAX - INFO_OFF + 16); /* offset + size wraps */
        CHECK(open_rc(img, IMAGE_BYTES) == ELF_E_MALFORMED);
        build(img);
        wr64(shdr(img, S_SYMTAB) + 0x18, UINT64_MAX - 8); /* the symbol table's offset wraps */
        CHECK(open_rc(img, IMAGE_BYTES) == ELF_E_MALFORMED);
        /* Sections without bytes may say anything about where: never read. */
        build(img);
        wr64(shdr(img, S_GLOBAL) + 0x18, UINT64_MAX);
        wr64(shdr(img, S_GLOBAL) + 0x20, UINT64_MAX);
        wr64(shdr(img, S_NULL) + 0x18, UINT64_MAX - 1);
        wr64(shdr(img, S_NULL) + 0x20, 1u << 30);
        CHECK(elf_open(img, IMAGE_BYTES, &e) == 0);
        if (e.sections) {
                CHECK(e.sections[S_GLOBAL].data == NULL && e.sections[S_GLOBAL].size == UINT64_MAX);
                CHECK(e.sections[S_NULL].data == NULL);
                elf_close(&e);
        }

        /* Names. */
        build(img);
        wr32(shdr(img, S_INFO), sizeof(shstrtab)); /* one past the name table */
        CHECK(open_rc(img, IMAGE_BYTES) == ELF_E_MALFORMED);
        build(img);
        wr32(shdr(img, S_INFO), UINT32_MAX);
        CHECK(open_rc(img, IMAGE_BYTES) == ELF_E_MALFORMED);
        build(img);
        wr64(shdr(img, S_SHSTRTAB) + 0x20, sizeof(shstrtab) - 1); /* the last name loses its NUL */
        CHECK(open_rc(img, IMAGE_BYTES) == ELF_E_MALFORMED);
        build(img);
        wr16(img + 0x3e, S_NULL); /* the name table is a section without bytes (at a wild offset) */
        wr64(shdr(img, S_NULL) + 0x18, UINT64_MAX - 1);
        wr64(shdr(img, S_NULL) + 0x20, 1u << 30);
        CHECK(open_rc(img, IMAGE_BYTES) == ELF_E_MALFORMED);
        build(img);
        wr16(img + 0x3e, S_GLOBAL); /* ... or a NOBITS one */
        CHECK(open_rc(img, IMAGE_BYTES) == ELF_E_MALFORMED);

        /* The symbol table. */
        build(img);
        wr64(shdr(img, S_SYMTAB) + 0x38, 16); /* entries smaller than Elf64_Sym */
        CHECK(open_rc(img, IMAGE_BYTES) == ELF_E_MALFORMED);
        build(img);
        wr64(shdr(img, S_SYMTAB) + 0x38, 0);
        CHECK(open_rc(img, IMAGE_BYTES) == ELF_E_MALFORMED);
        build(img);
        wr32(shdr(img, S_SYMTAB) + 0x28, N_SECTIONS); /* sh_link past the table */
        CHECK(open_rc(img, IMAGE_BYTES) == ELF_E_MALFORMED);
        build(img);
        wr64(shdr(img, S_SYMTAB) + 0x20, N_SYMS * 24 + 23); /* a partial entry at the end is not one */
        CHECK(elf_open(img, IMAGE_BYTES, &e) == 0 && e.n_symbols == N_SYMS);
        elf_close(&e);
        build(img);
        wr64(shdr(img, S_SYMTAB) + 0x38, 48); /* wider entries: read at their stride */
        CHECK(elf_open(img, IMAGE_BYTES, &e) == 0 && e.n_symbols == 1);
        CHECK(elf_get_symbol(&e, 1, &sym) == -ERANGE);
        elf_close(&e);
        build(img);
        set_section(img, S_SYMTAB, 19, 0x70000000, SYM_OFF, N_SYMS * 24, S_STRTAB, 24); /* not SHT_SYMTAB */
        CHECK(elf_open(img, IMAGE_BYTES, &e) == 0 && e.symtab == NULL && e.n_symbols == 0);
        CHECK(elf_get_symbol(&e, 0, &sym) == -ERANGE);
        elf_close(&e);
        /* Symbol names that do not resolve are NULL, not an error: the caller decides. */
        build(img);
        set_symbol(img, 1, sizeof(strtab), ELF_STT_OBJECT, 0, S_GLOBAL, 16, 4); /* past the table */
        set_symbol(img, 2, UINT32_MAX, ELF_STT_FUNC, 0x10, 0, 0, 0);
        CHECK(elf_open(img, IMAGE_BYTES, &e) == 0);
        CHECK(elf_get_symbol(&e, 1, &sym) == 0 && sym.name == NULL && sym.size == 4);
        CHECK(elf_get_symbol(&e, 2, &sym) == 0 && sym.name == NULL && sym.other == 0x10);
        elf_close(&e);
        build(img);
        wr64(shdr(img, S_STRTAB) + 0x20, sizeof(strtab) - 1); /* "k" loses its NUL */
        CHECK(elf_open(img, IMAGE_BYTES, &e) == 0);
        CHECK(elf_get_symbol(&e, 1, &sym) == 0 && sym.name && strcmp(sym.name, "x") == 0);
        CHECK(elf_get_symbol(&e, 2, &sym) == 0 && sym.name == NULL);
        elf_close(&e);
        build(img);
        wr32(shdr(img, S_SYMTAB) + 0x28, S_GLOBAL); /* the string table has no bytes */
        CHECK(elf_open(img, IMAGE_BYTES, &e) == 0);
        CHECK(elf_get_symbol(&e, 1, &sym) == 0 && sym.name == NULL);
        elf_close(&e);
        build(img);
        wr32(shdr(img, S_SYMTAB) + 0x28, S_NULL); /* ... nor does SHT_NULL, wherever it says it is */
        wr64(shdr(img, S_NULL) + 0x18, UINT64_MAX - 1);
        wr64(shdr(img, S_NULL) + 0x20, 1u << 30);
        CHECK(elf_open(img, IMAGE_BYTES, &e) == 0);
        CHECK(elf_get_symbol(&e, 2, &sym) == 0 && sym.name == NULL);
        elf_close(&e);

        /* Still the same image after all that: the reader wrote nothing into it. */
        build(img);
        check_good(img);
        free(img);
        if (failures)
                fprintf(stderr, "test-elf: %d failure(s)\n", failures);
        else
                printf("test-elf: ok\n");
        return failures ? 1 : 0;
}
