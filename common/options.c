/*
 * options - the allowlist of client compile options (see options.h and
 * docs/internals.md, "Submission format").
 *
 * The check is an exact-match allowlist: an option passes only when it is
 * spelled exactly as one of the forms below (one array element per option,
 * values joined with '='). Everything else is refused with a reason, and the
 * reasons name the families that are refused on purpose: anything naming a
 * file or a path (-I, --pre-include, --pch-dir, --create-pch, --use-pch,
 * --time, --fdevice-time-trace, -o), relocatable device code and link-time
 * optimisation (-rdc, -dc, -dlto: device-side launches would escape the
 * timer), and the target architecture (the server chooses it).
 *
 * -D/-U macro names must look like C identifiers and must not be reserved
 * to the implementation (leading "__" or "_" + capital: __CUDA_ARCH__,
 * __THRUST_*_HEADER and friends steer the toolkit headers); macro values
 * use a small character set with no quotes, angle brackets, slashes or
 * '#', so no option can spell a header name or a comment.
 *
 * This file is pure: no allocation, no state, safe from any thread.
 */
#include "common/options.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/limits.h"

/* Options accepted exactly as written. */
static const char *const exact[] = {
        "-use_fast_math",
        "--use_fast_math",
        "-lineinfo",
        "--generate-line-info",
        "--extra-device-vectorization",
        "-extra-device-vectorization",
        "-restrict",
        "--restrict",
        "-default-device",
        "--device-as-default-execution-space",
        "-dopt=on",
        "--dopt=on",
        "-std=c++11",
        "-std=c++14",
        "-std=c++17",
        "-std=c++20",
        "--std=c++11",
        "--std=c++14",
        "--std=c++17",
        "--std=c++20",
        "-O0", "-O1", "-O2", "-O3",
        "--ptxas-options=-O0", "--ptxas-options=-O1", "--ptxas-options=-O2", "--ptxas-options=-O3",
        "-Xptxas=-O0", "-Xptxas=-O1", "-Xptxas=-O2", "-Xptxas=-O3",
};

/* Boolean options: NAME=true|false, with one or two leading dashes. */
static const char *const booleans[] = { "ftz", "prec-div", "prec-sqrt", "fmad" };

/* Prefixes refused with a specific reason (checked before anything else). */
static const struct {
        const char *prefix;
        const char *why;
} refused[] = {
        { "-I", "names an include path; only the CUDA toolkit headers are available" },
        { "--include-path", "names an include path; only the CUDA toolkit headers are available" },
        { "-include", "names a file (pre-include)" },
        { "--pre-include", "names a file (pre-include)" },
        { "--create-pch", "writes a file (precompiled header)" },
        { "-create-pch", "writes a file (precompiled header)" },
        { "--pch-dir", "names a path (precompiled headers)" },
        { "-pch-dir", "names a path (precompiled headers)" },
        { "--use-pch", "reads a file (precompiled header)" },
        { "-use-pch", "reads a file (precompiled header)" },
        { "-pch", "uses precompiled headers (files)" },
        { "--pch", "uses precompiled headers (files)" },
        { "--time", "writes a file (timing trace)" },
        { "-time", "writes a file (timing trace)" },
        { "--fdevice-time-trace", "writes a file (time trace)" },
        { "-fdevice-time-trace", "writes a file (time trace)" },
        { "-o", "names an output file" },
        { "--output", "names an output file" },
        { "-rdc", "enables relocatable device code, which is not allowed" },
        { "--relocatable-device-code", "enables relocatable device code, which is not allowed" },
        { "-dc", "enables relocatable device code, which is not allowed" },
        { "--device-c", "enables relocatable device code, which is not allowed" },
        { "-dlto", "enables link-time optimisation of relocatable code, which is not allowed" },
        { "--dlink-time-opt", "enables link-time optimisation of relocatable code, which is not allowed" },
        { "-arch", "sets the target architecture, which the server chooses" },
        { "--gpu-architecture", "sets the target architecture, which the server chooses" },
        { "-gencode", "sets the target architecture, which the server chooses" },
        { "--generate-code", "sets the target architecture, which the server chooses" },
        { "-code", "sets the target architecture, which the server chooses" },
        { "--ptxas-options", "passes options to ptxas; only -O0..-O3 is allowed there" },
        { "-Xptxas", "passes options to ptxas; only -O0..-O3 is allowed there" },
};

static int forbid(char *msg, size_t msglen, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static int forbid(char *msg, size_t msglen, const char *fmt, ...)
{
        va_list ap;

        if (msg && msglen > 0) {
                va_start(ap, fmt);
                vsnprintf(msg, msglen, fmt, ap);
                va_end(ap);
        }
        return OPTIONS_E_FORBIDDEN;
}

static bool is_ident_start(char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool is_ident_char(char c)
{
        return is_ident_start(c) || (c >= '0' && c <= '9');
}

static bool is_value_char(char c)
{
        return is_ident_char(c) || strchr(".+-*(),: ", c) != NULL;
}

/* Check "NAME" or "NAME=VALUE" after -D / -U; @allow_value for -D only. */
static int check_macro(const char *opt, const char *def, bool allow_value, char *msg, size_t msglen)
{
        const char *eq = strchr(def, '=');
        size_t nlen = eq ? (size_t)(eq - def) : strlen(def);

        if (nlen == 0)
                return forbid(msg, msglen, "option '%s' has no macro name", opt);
        if (nlen > LIMIT_MACRO_NAME_BYTES)
                return forbid(msg, msglen, "option '%s': macro name longer than %d bytes", opt,
                              LIMIT_MACRO_NAME_BYTES);
        if (!is_ident_start(def[0]))
                return forbid(msg, msglen, "option '%s': macro name must match [A-Za-z_][A-Za-z0-9_]*",
                              opt);
        for (size_t i = 1; i < nlen; i++)
                if (!is_ident_char(def[i]))
                        return forbid(msg, msglen,
                                      "option '%s': macro name must match [A-Za-z_][A-Za-z0-9_]*", opt);
        if (def[0] == '_' && (def[1] == '_' || (def[1] >= 'A' && def[1] <= 'Z')))
                return forbid(msg, msglen,
                              "option '%s': macro names starting with '__' or '_' and a capital "
                              "letter are reserved to the compiler and the toolkit", opt);
        if (!eq)
                return 0;
        if (!allow_value)
                return forbid(msg, msglen, "option '%s': -U takes a macro name only", opt);
        if (strlen(eq + 1) > LIMIT_MACRO_VALUE_BYTES)
                return forbid(msg, msglen, "option '%s': macro value longer than %d bytes", opt,
                              LIMIT_MACRO_VALUE_BYTES);
        for (const char *p = eq + 1; *p; p++)
                if (!is_value_char(*p))
                        return forbid(msg, msglen,
                                      "option '%s': macro values may contain only letters, digits, "
                                      "spaces and . + - * ( ) , : _", opt);
        return 0;
}

static bool has_prefix(const char *s, const char *prefix)
{
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

/**
 * options_check() - is @opt an allowed client option?
 * @opt:    one option, exactly as the client sent it; borrowed
 * @msg:    on OPTIONS_E_FORBIDDEN, a reason ("option '-I/etc' names an
 *          include path; ..."); may be NULL
 * @msglen: size of @msg
 *
 * Return: 0 when @opt is on the allowlist, OPTIONS_E_FORBIDDEN otherwise.
 */
int options_check(const char *opt, char *msg, size_t msglen)
{
        size_t len;

        if (!opt)
                return forbid(msg, msglen, "option is null");
        len = strlen(opt);
        if (len == 0)
                return forbid(msg, msglen, "empty option");
        if (len > LIMIT_OPTION_BYTES)
                return forbid(msg, msglen, "option longer than %u bytes", (unsigned)LIMIT_OPTION_BYTES);
        for (size_t i = 0; i < len; i++)
                if ((unsigned char)opt[i] < 0x20 || (unsigned char)opt[i] >= 0x7f)
                        return forbid(msg, msglen,
                                      "option contains a control or non-ASCII character");

        for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
                if (strcmp(opt, exact[i]) == 0)
                        return 0;

        for (size_t i = 0; i < sizeof(booleans) / sizeof(booleans[0]); i++) {
                const char *p = opt + (opt[1] == '-' ? 2 : 1);
                size_t blen = strlen(booleans[i]);
                if (opt[0] != '-' || strncmp(p, booleans[i], blen) != 0 || p[blen] != '=')
                        continue;
                if (strcmp(p + blen + 1, "true") == 0 || strcmp(p + blen + 1, "false") == 0)
                        return 0;
                return forbid(msg, msglen, "option '%s': the value must be true or false", opt);
        }

        if (has_prefix(opt, "-maxrregcount=") || has_prefix(opt, "--maxrregcount=")) {
                const char *v = strchr(opt, '=') + 1;
                long n = 0;
                if (*v == '\0' || strlen(v) > 3)
                        goto bad_regs;
                for (const char *p = v; *p; p++) {
                        if (*p < '0' || *p > '9')
                                goto bad_regs;
                        n = n * 10 + (*p - '0');
                }
                if (n >= 16 && n <= 255)
                        return 0;
bad_regs:
                return forbid(msg, msglen, "option '%s': the register count must be 16..255", opt);
        }

        if (has_prefix(opt, "--define-macro="))
                return check_macro(opt, opt + strlen("--define-macro="), true, msg, msglen);
        if (has_prefix(opt, "-D"))
                return check_macro(opt, opt + 2, true, msg, msglen);
        if (has_prefix(opt, "--undefine-macro="))
                return check_macro(opt, opt + strlen("--undefine-macro="), false, msg, msglen);
        if (has_prefix(opt, "-U"))
                return check_macro(opt, opt + 2, false, msg, msglen);

        if (has_prefix(opt, "-std=") || has_prefix(opt, "--std="))
                return forbid(msg, msglen, "option '%s': the language standard must be c++11, "
                              "c++14, c++17 or c++20", opt);
        if (has_prefix(opt, "-dopt") || has_prefix(opt, "--dopt"))
                return forbid(msg, msglen, "option '%s': only -dopt=on is accepted", opt);
        if (opt[0] == '-' && opt[1] == 'O')
                return forbid(msg, msglen, "option '%s': the optimisation level must be -O0..-O3", opt);

        for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
                if (has_prefix(opt, refused[i].prefix))
                        return forbid(msg, msglen, "option '%s' %s", opt, refused[i].why);

        return forbid(msg, msglen, "option '%s' is not on the allowlist (see the options list "
                      "in the API documentation)", opt);
}
