/*
 * compile_scan - the pre-compile check of a CUDA C++ source (the rules are
 * compile.h's): #include-like directives, __has_include, host code.
 * compile_check_source() calls it with the Compiler's include folders;
 * it needs nothing else of the compile module, includes no compiler
 * header, and keeps no state between calls.
 */
#pragma once

#include <stddef.h>

#include "worker/compile/merge_scan.h"

/* The folders a toolkit header name must resolve under, symlinks and all
 * (realpaths, without a trailing slash). */
typedef struct CompileScanDirs {
        const char *const *include_dirs;
        size_t n_include_dirs;
} CompileScanDirs;

int compile_scan_source(const CompileScanDirs *c, const char *src, size_t len, unsigned *ret_flags,
                        char *msg, size_t msglen);
int compile_scan_merge(const CompileScanDirs *c, const char *src, size_t len, unsigned *ret_flags,
                       char *msg, size_t msglen, MergeFacts *facts);
