/*
 * stdshim - the C and C++ standard headers that device code reaches for,
 * as NVRTC can compile them, and the names of host-only headers.
 *
 * NVRTC has no standard library headers: `#include <cmath>` fails, and
 * INFINITY, M_PI and INT_MAX, which nvcc's implicit host headers define
 * behind every .cu file, are undefined. The shims (worker/compile/stdshim/, one
 * file per header name, embedded at build time) are handed to NVRTC as
 * in-memory headers, so no file is opened for them and the sandbox grants
 * nothing new; each maps its header onto the CUDA math library NVRTC
 * declares itself, onto libcu++ (<cuda/std/...>), or onto a few lines of
 * its own. kevald_prelude.h is pre-included into every compile.
 *
 * The table is static data, nothing to free; it is filled on the first
 * call, so the first call must not race another (the compile worker makes
 * them all from its one compiling thread).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define STDSHIM_PRELUDE "kevald_prelude.h"
#define STDSHIM_MAX_NAMES 64 /* the most shims the table holds */
/* Defined (-D) for a source that includes libcu++: see kevald_math.h. */
#define STDSHIM_LIBCUDACXX "__KEVALD_LIBCUDACXX"

size_t stdshim_count(void);
const char *const *stdshim_names(void);
const char *const *stdshim_texts(void);
const char *stdshim_find(const char *name);
const char *stdshim_host_header(const char *name);
bool stdshim_prelude_macro(const char *name, size_t len);
