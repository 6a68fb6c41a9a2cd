/*
 * options - the allowlist of client compile options, shared by the server
 * (checked at submission, 422 on a forbidden option) and the compile worker
 * (checked again before NVRTC sees them). Nothing that names a file, a path
 * or an output, and nothing that enables relocatable device code, passes.
 * Owned by the compile work; common/options.c.
 */
#pragma once

#include <stddef.h>

enum {
        OPTIONS_E_FORBIDDEN = 1,  /* not on the allowlist; msg says why */
};

/**
 * options_check() - is @opt an allowed client option?
 * @msg: on OPTIONS_E_FORBIDDEN, a reason ("option '-I/etc' names a path"); may be NULL
 * Return: 0 or OPTIONS_E_FORBIDDEN.
 */
int options_check(const char *opt, char *msg, size_t msglen);
