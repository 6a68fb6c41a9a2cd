/*
 * logtrim - turn a raw NVRTC / nvJitLink log into the log a client sees,
 * and read the ptxas resource report (--ptxas-options=-v) out of it.
 *
 * The client log: ptxas "info" lines removed (they become the per-kernel
 * resource report), the block of the first error moved to the front with
 * its context lines, capped at a byte budget with a
 * "... (N more bytes, M more errors)" note, valid UTF-8. Diagnostics
 * located in a file that is neither the submission nor a trusted toolkit
 * header are withheld, echoed source line and all: NVRTC echoes the text of
 * an #include'd file into its log, and no host file content may reach a
 * client (Landlock and the #include check come first; this is the last
 * layer).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct LogtrimConfig {
        const char *const *source_names;     /* the submission's files: "kernel.cu", and
                                              * "__nv_name_map" (NVRTC's name expressions) */
        size_t n_source_names;
        const char *const *trusted_prefixes; /* e.g. "/usr/local/cuda/include/" */
        size_t n_trusted;
        size_t cap;                          /* byte budget of the result */
} LogtrimConfig;

/* One kernel's line of the ptxas -v report; -1 where ptxas said nothing. */
typedef struct PtxasKernel {
        char *name;
        int64_t registers;
        int64_t barriers;
        int64_t smem;          /* "N bytes smem" (static shared memory) */
        int64_t stack_frame;   /* "N bytes stack frame" */
        int64_t spill_stores;
        int64_t spill_loads;
        int64_t stack;         /* "N bytes cumulative stack size" */
} PtxasKernel;

/* Does [@p, @p + @len) hold @needle? */
bool logtrim_has(const char *p, size_t len, const char *needle);

int logtrim_clean(const char *raw, const LogtrimConfig *cfg, char **ret_log, bool *ret_truncated);
int logtrim_parse_ptxas(const char *raw, PtxasKernel **ret_kernels, size_t *ret_n);
const PtxasKernel *logtrim_find_ptxas(const PtxasKernel *kernels, size_t n, const char *name);
void logtrim_ptxas_free(PtxasKernel *kernels, size_t n);
size_t logtrim_utf8_prefix(const unsigned char *p, size_t len);
