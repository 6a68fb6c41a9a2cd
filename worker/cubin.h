/*
 * cubin - read what the compile report needs out of a CUBIN (an ELF file
 * for the CUDA machine): the kernels, each kernel's parameter layout
 * (EIATTR_KPARAM_INFO in .nv.info.<kernel>), and the resource attributes
 * the toolchain records (EIATTR_REGCOUNT, EIATTR_FRAME_SIZE,
 * EIATTR_MIN_STACK_SIZE in .nv.info; EIATTR_MAX_THREADS / EIATTR_REQNTID
 * from __launch_bounds__ or .maxntid/.reqntid; the .nv.shared.<kernel> size).
 *
 * The parser treats its input as hostile: every offset and size is checked
 * against the buffer before it is read (the ELF structure by worker/elf.h,
 * the attributes here), and a CUBIN that breaks a rule is refused as
 * CUBIN_E_MALFORMED rather than half-read.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

enum {
        CUBIN_E_MALFORMED = 1, /* not a 64-bit little-endian CUDA ELF, or inconsistent */
};

#define CUBIN_KERNELS_MAX 1024
#define CUBIN_PARAMS_MAX 4096

typedef struct CubinParam {
        uint32_t offset; /* byte offset in the parameter buffer */
        uint32_t size;   /* bytes */
} CubinParam;

typedef struct CubinKernel {
        char *name;             /* the symbol name (lowered for C++ kernels) */
        CubinParam *params;     /* in ordinal order; NULL when n_params is 0 */
        size_t n_params;
        int64_t param_bytes;    /* EIATTR_CBANK_PARAM_SIZE; -1 when absent */
        int64_t registers;      /* EIATTR_REGCOUNT; -1 when absent */
        int64_t frame_bytes;    /* EIATTR_FRAME_SIZE; -1 when absent */
        int64_t stack_bytes;    /* EIATTR_MIN_STACK_SIZE (or MAX_STACK_SIZE); -1 when absent */
        int64_t shared_section; /* size of .nv.shared.<name> (includes the 1 KiB the
                                 * toolchain reserves on sm_90); -1 when absent */
        int64_t max_threads;    /* x*y*z of EIATTR_MAX_THREADS, else EIATTR_REQNTID; -1 */
} CubinKernel;

typedef struct CubinInfo {
        CubinKernel *kernels;   /* in symbol-table order */
        size_t n_kernels;
} CubinInfo;

int cubin_parse(const void *data, size_t len, CubinInfo **ret_info);
const CubinKernel *cubin_find_kernel(const CubinInfo *info, const char *name);
void cubin_info_free(CubinInfo *info);
