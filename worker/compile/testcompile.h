/*
 * testcompile - what the compile library's unit tests (test-compile.c,
 * test-compile-scan.c) share: the compiler they open, one compile of a
 * source, and reading the result. Test-only; include after
 * common/testcheck.h.
 */
#ifndef KEVALD_WORKER_TESTCOMPILE_H
#define KEVALD_WORKER_TESTCOMPILE_H

#include <jansson.h>
#include <stdbool.h>
#include <string.h>

#include "common/testcheck.h"
#include "worker/compile/compile.h"

static Compiler *comp; /* opened by the test's main() */

/* Compile @src with @opts (NULL-terminated) and @names; the caller clears @out. */
static inline void run(const char *lang, const char *src, size_t len, const char *const *opts,
                       const char *const *names, CompileOutput *out)
{
        CompileJob job = { .language = lang, .source = src, .source_len = len, .options = opts,
                           .name_expressions = names };
        for (; opts && opts[job.n_options];)
                job.n_options++;
        for (; names && names[job.n_name_expressions];)
                job.n_name_expressions++;
        memset(out, 0, sizeof(*out));
        CHECK(compile_run(comp, &job, out) == 0);
        CHECK(out->result != NULL);
}

static inline const char *jstr(json_t *o, const char *key)
{
        const char *s = json_string_value(json_object_get(o, key));
        return s ? s : "";
}

static inline bool is_ok(const CompileOutput *out)
{
        return out->result && json_is_true(json_object_get(out->result, "ok"));
}

#endif
