/*
 * gpu_elf - what a CUBIN keeps in device global memory: the __device__
 * variables (sections .nv.global and .nv.global.init) of a candidate's
 * module, listed from the ELF symbol table so that the worker can zero them
 * before it unloads the module (a later job must not find what this one
 * stored there). Host-only; the ELF structure is read by worker/elf.h, the
 * reader the compile report uses too, which checks every offset and count
 * against the image's size: a malformed CUBIN gives an error, never a read
 * out of bounds, and a CUBIN the compile worker accepted is read here.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define GPU_ELF_NAME_BYTES 256

typedef struct GpuElfGlobal {
        char name[GPU_ELF_NAME_BYTES];
        int section;        /* index into the section list below */
        uint64_t offset;    /* within the section */
        uint64_t size;
} GpuElfGlobal;

typedef struct GpuElfSection {
        char name[32];      /* ".nv.global", ".nv.global.init" */
        uint64_t size;
} GpuElfSection;

#define GPU_ELF_SECTIONS_MAX 8

typedef struct GpuElfGlobals {
        GpuElfSection sections[GPU_ELF_SECTIONS_MAX];
        int n_sections;
        GpuElfGlobal *globals;  /* owned; gpu_elf_globals_clear() */
        int n_globals;
} GpuElfGlobals;

enum { GPU_ELF_E_MALFORMED = 1 };

int gpu_elf_globals(const void *image, size_t size, GpuElfGlobals *ret);
void gpu_elf_globals_clear(GpuElfGlobals *g);
