/*
 * elf - the one reader of a CUBIN's ELF structure: the header, the section
 * table, the section names, the symbol table and its string table. Both
 * uses of a CUBIN's ELF build on it: the compile report's kernels
 * (worker/cubin.c, in the server and the compile worker) and the GPU
 * worker's list of __device__ variables to zero (worker/gpu/gpu_elf.c).
 * What a section holds (.nv.info attributes, .nv.global data) is for those
 * callers; this module knows only ELF.
 *
 * The image is hostile. elf_open() walks the structure once and checks it
 * before anything is read: every offset and size against the image (as
 * differences, so no sum can overflow), every section's name against the
 * section-name table, the symbol table's entry size and link. A CUBIN that
 * breaks a rule is ELF_E_MALFORMED. Afterwards every ElfSection.data lies
 * inside the image, and elf_get_symbol() reads only inside the symbol table.
 * Counts are bounded by the image: the section table (at most 65535 entries,
 * a u16) and the symbol table must fit in it, and the image is at most
 * LIMIT_CUBIN_BYTES (compile worker) or LIMIT_FRAME_BLOB_BYTES (a frame).
 *
 * Accepted: ELF64, little-endian, EM_CUDA (what NVRTC, nvJitLink and
 * nvcc -cubin produce). Extended section numbering (e_shnum 0, e_shstrndx
 * SHN_XINDEX) is refused: no CUDA toolchain writes it.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

enum {
        ELF_E_MALFORMED = 1, /* not a 64-bit little-endian CUDA ELF, or inconsistent */
};

#define ELF_SHT_NULL 0
#define ELF_SHT_SYMTAB 2
#define ELF_SHT_NOBITS 8
#define ELF_STT_OBJECT 1
#define ELF_STT_FUNC 2

typedef struct ElfSection {
        const char *name;       /* NUL-terminated, in the image's section-name table */
        uint32_t type;          /* sh_type */
        const uint8_t *data;    /* [data, data + size) inside the image; NULL for
                                 * SHT_NULL and SHT_NOBITS, which hold no bytes */
        uint64_t size;          /* sh_size (a NOBITS section's size in memory) */
        uint32_t link, info;    /* sh_link, sh_info */
        uint64_t entsize;       /* sh_entsize */
} ElfSection;

typedef struct ElfSymbol {
        const char *name;       /* in the symbol string table; NULL when st_name is
                                 * not a NUL-terminated string there */
        uint8_t type;           /* ELF64_ST_TYPE(st_info): ELF_STT_* */
        uint8_t other;          /* st_other (STO_CUDA_ENTRY 0x10 marks a kernel) */
        uint16_t shndx;         /* st_shndx */
        uint64_t value, size;   /* st_value, st_size */
} ElfSymbol;

typedef struct ElfImage {
        const uint8_t *data;    /* the image; borrowed */
        size_t len;
        ElfSection *sections;   /* owned; all of the section table, in order */
        size_t n_sections;
        const ElfSection *symtab; /* the (last) SHT_SYMTAB section, or NULL */
        const ElfSection *strtab; /* the section symtab links to; NULL without symtab */
        size_t n_symbols;       /* entries of symtab; 0 without one */
} ElfImage;

int elf_open(const void *data, size_t len, ElfImage *ret_elf);
const ElfSection *elf_find_section(const ElfImage *elf, const char *prefix, const char *suffix);
int elf_get_symbol(const ElfImage *elf, size_t index, ElfSymbol *ret_sym);
void elf_close(ElfImage *elf);
