/*
 * compile - CUDA C++ (NVRTC) and PTX (nvJitLink) to CUBIN, with the
 * resource report and the client log. The only module that includes
 * <nvrtc.h> and <nvJitLink.h>.
 *
 * A Compiler is made once per process (compile_open()) and serves every
 * job: nothing is re-initialised per job. It is not thread-safe; NVRTC
 * does not compile in parallel inside one process anyway.
 *
 * Before NVRTC sees a source it is checked: size (LIMIT_SOURCE_BYTES),
 * UTF-8 without NUL bytes, the options against the allowlist
 * (common/options.h), and every #include-like directive (#include,
 * #include_next, #import, #embed, in any spelling: digraphs, comments,
 * line continuations) must name a standard header shim (worker/compile/stdshim.h)
 * or a CUDA toolkit header by a relative path that resolves, symlinks and
 * all, under <cuda>/include or <cuda>/include/cccl. Computed includes
 * (#include MACRO) are refused. So is host code (main, <<<>>> launches,
 * the CUDA runtime API, PyTorch, host-only headers), each line named,
 * outside branches NVRTC is known to skip.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
        COMPILE_E_REJECTED = 1, /* the source breaks a pre-compile rule; msg says why */
};

/* What compile_check_source() found that the compile must know. */
enum {
        COMPILE_SOURCE_LIBCUDACXX = 1u << 0, /* includes libcu++, CUB or Thrust */
        COMPILE_SOURCE_INF_NAN = 1u << 1,    /* names INFINITY or NAN */
        COMPILE_SOURCE_REDEFINES_PRELUDE = 1u << 2, /* #defines a macro of kevald_prelude.h */
};

typedef struct Compiler Compiler;

typedef struct CompileJob {
        const char *language;                 /* "cuda" or "ptx" */
        const char *arch;                     /* "sm_90a"; NULL for the default */
        const char *const *options;           /* client options (re-checked) */
        size_t n_options;
        const char *const *name_expressions;  /* CUDA only */
        size_t n_name_expressions;
        const char *source;                   /* not necessarily NUL-terminated */
        size_t source_len;
        bool no_fence;                        /* the plain CUBIN only (no fenced build) */
} CompileJob;

typedef struct CompileOutput {
        json_t *result;     /* the RESULT object of docs/internals.md, without "id" */
        uint8_t *cubin;     /* NULL unless result.ok */
        size_t cubin_len;
        uint8_t *fenced;    /* the fenced build (worker/compile/fence.h) of the same PTX, or NULL;
                             * result.fence says what it checks or why there is none */
        size_t fenced_len;
        char *raw_log;      /* the untrimmed compiler log (ptxas lines and all), for the
                             * worker's debug log and tests; never for clients; may be NULL */
} CompileOutput;

#define COMPILE_ARCH_DEFAULT "sm_90a"
#define COMPILE_GROUP_MAX 16 /* jobs of one compile_run_group() */
#define COMPILE_SOURCE_NAME "kernel.cu"
#define COMPILE_PTX_NAME "kernel.ptx"

int compile_open(const char *cuda_home, Compiler **ret_compiler);
void compile_close(Compiler *c);
const char *compile_nvrtc_version(const Compiler *c);
int compile_run(Compiler *c, const CompileJob *job, CompileOutput *ret_out);
int compile_run_group(Compiler *c, const CompileJob *jobs, size_t n, uint64_t tag, CompileOutput *outs,
                      size_t *ret_merged);
void compile_output_clear(CompileOutput *out);
int compile_check_source(const Compiler *c, const char *src, size_t len, unsigned *ret_flags,
                         char *msg, size_t msglen);
json_t *compile_timeout_result(const char *arch, double deadline_ms, const char *nvrtc_version);
json_t *compile_internal_result(const char *arch, const char *nvrtc_version);
