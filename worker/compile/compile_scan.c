/*
 * compile_scan - the source scanner behind compile_check_source() (see
 * compile.h for the rules): the source is spliced (line continuations
 * removed, each byte mapped back to its offset), then scanned once as the
 * preprocessor would tokenize it, so that a directive hidden by a digraph,
 * a comment or a continuation is still seen. Every #include-like directive
 * and __has_include must name a standard header shim or a toolkit header
 * under one of the include folders; host code is collected line by line,
 * outside branches NVRTC is known to skip. Refusals are written in NVRTC's
 * own diagnostic form. Pure: no state outside the call.
 */
#include "worker/compile/compile_scan.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/limits.h"
#include "worker/compile/compile.h"
#include "worker/compile/merge_scan.h"
#include "worker/compile/stdshim.h"

#define COMPILE_HOST_SITES_MAX 8 /* host code lines named in one refusal */
#define COMPILE_COND_DEPTH 64     /* #if nesting followed for the host code check */

/* The source with line continuations removed, and where each byte came from. */
typedef struct Spliced {
        const char *src;
        size_t src_len;
        char *t;
        uint32_t *orig;
        size_t n;
} Spliced;

static size_t line_of(const Spliced *sp, size_t i)
{
        size_t o = sp->orig[i], line = 1;

        for (size_t k = 0; k < o && k < sp->src_len; k++)
                if (sp->src[k] == '\n')
                        line++;
        return line;
}

/* Append one diagnostic line in NVRTC's form for offset @at to @msg (NUL-terminated). */
static void diag_vappend(char *msg, size_t msglen, const Spliced *sp, size_t at, const char *fmt,
                         va_list ap) __attribute__((format(printf, 5, 0)));

static void diag_vappend(char *msg, size_t msglen, const Spliced *sp, size_t at, const char *fmt,
                         va_list ap)
{
        size_t used = msg && msglen > 0 ? strnlen(msg, msglen - 1) : 0;
        int n;

        if (!msg || msglen == 0 || used + 1 >= msglen)
                return;
        n = snprintf(msg + used, msglen - used, "%s" COMPILE_SOURCE_NAME "(%zu): error: ",
                     used > 0 ? "\n" : "", line_of(sp, at));
        if (n > 0 && used + (size_t)n < msglen)
                vsnprintf(msg + used + (size_t)n, msglen - used - (size_t)n, fmt, ap);
}

static void diag_append(char *msg, size_t msglen, const Spliced *sp, size_t at, const char *fmt, ...)
        __attribute__((format(printf, 5, 6)));

static void diag_append(char *msg, size_t msglen, const Spliced *sp, size_t at, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        diag_vappend(msg, msglen, sp, at, fmt, ap);
        va_end(ap);
}

static int reject(char *msg, size_t msglen, const Spliced *sp, size_t at, const char *fmt, ...)
        __attribute__((format(printf, 5, 6)));

static int reject(char *msg, size_t msglen, const Spliced *sp, size_t at, const char *fmt, ...)
{
        va_list ap;

        if (msg && msglen > 0)
                msg[0] = '\0';
        va_start(ap, fmt);
        diag_vappend(msg, msglen, sp, at, fmt, ap);
        va_end(ap);
        return COMPILE_E_REJECTED;
}

/*
 * Host code: what a source written for nvcc and a host program (or a
 * PyTorch extension) holds besides its kernels. NVRTC compiles device code
 * only, so any of it is refused before NVRTC runs, each place by line.
 * Code in a branch NVRTC is known to skip (#if 0, #ifndef __CUDACC_RTC__,
 * #ifndef __CUDA_ARCH__, the #else of #ifdef __CUDACC_RTC__) is not host
 * code to refuse; #include lines are checked wherever they are.
 */
enum { COND_UNKNOWN, COND_TRUE, COND_FALSE, COND_DONE /* a branch before was taken */ };

/* What the scan follows and finds besides refusals: host code, #if branches, libcu++. */
typedef struct ScanState {
        size_t n;                                 /* lines with host code, also past the maximum */
        size_t last;                              /* offset of the last site */
        size_t at[COMPILE_HOST_SITES_MAX];        /* offsets in the spliced text */
        char what[COMPILE_HOST_SITES_MAX][112];
        size_t depth;                             /* #if nesting, also past COMPILE_COND_DEPTH */
        uint8_t cond[COMPILE_COND_DEPTH];         /* COND_* of each level */
        bool libcudacxx;                          /* an #include of libcu++, CUB or Thrust */
        bool inf_nan;                             /* the identifier INFINITY or NAN */
        bool redefines_prelude;                   /* #define of a macro the prelude defines */
        MergeScan merge;                          /* merge.f NULL: no merge facts wanted */
} ScanState;

static void host_site(ScanState *hs, const Spliced *sp, size_t at, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* Record host code at @at, once per line. */
static void host_site(ScanState *hs, const Spliced *sp, size_t at, const char *fmt, ...)
{
        va_list ap;

        if (hs->n > 0 && !memchr(sp->src + sp->orig[hs->last], '\n', sp->orig[at] - sp->orig[hs->last]))
                return;
        hs->last = at;
        if (hs->n < COMPILE_HOST_SITES_MAX) {
                hs->at[hs->n] = at;
                va_start(ap, fmt);
                vsnprintf(hs->what[hs->n], sizeof(hs->what[0]), fmt, ap);
                va_end(ap);
        }
        hs->n++;
}

/* Is the scan inside a branch that NVRTC is known to skip? */
static bool host_skipped(const ScanState *hs)
{
        for (size_t i = 0; i < hs->depth && i < COMPILE_COND_DEPTH; i++)
                if (hs->cond[i] == COND_FALSE || hs->cond[i] == COND_DONE)
                        return true;
        return false;
}

static bool is_ident(char ch)
{
        return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
               ch == '_' || ch == '$' || (unsigned char)ch >= 0x80;
}

static bool is_hspace(char ch)
{
        return ch == ' ' || ch == '\t' || ch == '\f' || ch == '\v' || ch == '\r';
}

/* Skip horizontal space and comments inside a directive; stops at '\n'. */
static size_t skip_directive_space(const Spliced *sp, size_t j)
{
        for (;;) {
                if (j < sp->n && is_hspace(sp->t[j])) {
                        j++;
                } else if (j + 1 < sp->n && sp->t[j] == '/' && sp->t[j + 1] == '*') {
                        const char *e = memmem(sp->t + j + 2, sp->n - j - 2, "*/", 2);
                        j = e ? (size_t)(e - sp->t) + 2 : sp->n;
                } else {
                        return j;
                }
        }
}

/*
 * Is @name (a header name from #include or __has_include) acceptable?
 * With @must_exist, it must be a regular file under one of the include
 * folders, after symlinks.
 */
static int check_header(const CompileScanDirs *c, const Spliced *sp, size_t at, const char *what,
                        const char *name, size_t len, bool must_exist, char *msg, size_t msglen)
{
        char buf[LIMIT_HEADER_NAME_BYTES + 1];

        if (len == 0)
                return reject(msg, msglen, sp, at, "%s with an empty header name", what);
        if (len > LIMIT_HEADER_NAME_BYTES)
                return reject(msg, msglen, sp, at, "%s: header name longer than %d bytes", what,
                              LIMIT_HEADER_NAME_BYTES);
        memcpy(buf, name, len);
        buf[len] = '\0';
        if (buf[0] == '/')
                return reject(msg, msglen, sp, at,
                              "%s \"%s\": absolute paths are not allowed; only CUDA toolkit "
                              "headers can be included", what, buf);
        if (strstr(buf, ".."))
                return reject(msg, msglen, sp, at,
                              "%s \"%s\": '..' is not allowed in header names", what, buf);
        for (size_t i = 0; i < len; i++) {
                char ch = buf[i];
                if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
                      ch == '_' || ch == '.' || ch == '/' || ch == '-' || ch == '+'))
                        return reject(msg, msglen, sp, at,
                                      "%s: header names may contain only letters, digits and "
                                      "_ . / - +", what);
        }
        if (!must_exist || stdshim_find(buf))
                return 0;
        for (size_t i = 0; i < c->n_include_dirs; i++) {
                const char *dir = c->include_dirs[i];
                size_t dlen = strlen(dir);
                char path[PATH_MAX], *real;
                struct stat st;
                bool ok;
                if (snprintf(path, sizeof(path), "%s/%s", dir, buf) >= (int)sizeof(path))
                        continue;
                real = realpath(path, NULL);
                if (!real)
                        continue;
                ok = strncmp(real, dir, dlen) == 0 && real[dlen] == '/' && stat(real, &st) == 0 &&
                     S_ISREG(st.st_mode);
                free(real);
                if (ok)
                        return 0;
        }
        return reject(msg, msglen, sp, at,
                      "%s <%s>: not a CUDA toolkit header or a standard header that device code "
                      "can use (those are <cmath> <math.h> <cstdint> <stdint.h> <cfloat> "
                      "<float.h> <climits> <limits.h> <cstddef> <cstdio> <cstdlib> <cstring> "
                      "<cassert> <algorithm> <type_traits> <utility> <limits> <array> <tuple> "
                      "<functional> and the other <cuda/std/...> headers)", what, buf);
}

/*
 * The condition of the #if-like directive @name whose text follows at @j,
 * as far as it is known without a preprocessor: COND_TRUE or COND_FALSE for
 * `0`, `1` and whether a macro that NVRTC always defines is defined.
 */
static int directive_cond(const Spliced *sp, const char *name, size_t j)
{
        static const char *const nvrtc_macros[] = { "__CUDACC_RTC__", "__CUDACC__", "__CUDA_ARCH__" };
        char t[48];
        size_t n = 0;
        bool neg = false, known = false;
        const char *m;

        for (;;) {
                j = skip_directive_space(sp, j);
                if (j >= sp->n || sp->t[j] == '\n' ||
                    (j + 1 < sp->n && sp->t[j] == '/' && sp->t[j + 1] == '/'))
                        break;
                if (n + 1 >= sizeof(t))
                        return COND_UNKNOWN;
                t[n++] = sp->t[j++];
        }
        t[n] = '\0';
        if (strcmp(name, "if") == 0 || strcmp(name, "elif") == 0) {
                if (strcmp(t, "0") == 0)
                        return COND_FALSE;
                if (strcmp(t, "1") == 0)
                        return COND_TRUE;
                m = t;
                if (*m == '!') {
                        neg = true;
                        m++;
                }
                if (strncmp(m, "defined", 7) != 0)
                        return COND_UNKNOWN;
                m += 7;
                n = strlen(m);
                if (n >= 2 && m[0] == '(' && m[n - 1] == ')') {
                        memmove(t, m + 1, n - 2);
                        t[n - 2] = '\0';
                        m = t;
                }
        } else if (strcmp(name, "ifdef") == 0 || strcmp(name, "ifndef") == 0) {
                neg = strcmp(name, "ifndef") == 0;
                m = t;
        } else {
                return COND_UNKNOWN;
        }
        for (size_t i = 0; i < sizeof(nvrtc_macros) / sizeof(nvrtc_macros[0]); i++)
                known |= strcmp(m, nvrtc_macros[i]) == 0;
        if (!known)
                return COND_UNKNOWN;
        return neg ? COND_FALSE : COND_TRUE;
}

/* Follow #if/#ifdef/#ifndef/#elif/#else/#endif (@name, text at @j) for the host code check. */
static void host_cond(ScanState *hs, const Spliced *sp, const char *name, size_t j)
{
        uint8_t *top = hs->depth > 0 && hs->depth <= COMPILE_COND_DEPTH ? &hs->cond[hs->depth - 1] : NULL;

        if (strcmp(name, "if") == 0 || strcmp(name, "ifdef") == 0 || strcmp(name, "ifndef") == 0) {
                if (hs->depth < COMPILE_COND_DEPTH)
                        hs->cond[hs->depth] = (uint8_t)directive_cond(sp, name, j);
                hs->depth++;
        } else if (strcmp(name, "elif") == 0 || strcmp(name, "elifdef") == 0 ||
                   strcmp(name, "elifndef") == 0) {
                if (top && (*top == COND_TRUE || *top == COND_DONE))
                        *top = COND_DONE;
                else if (top && *top == COND_FALSE)
                        *top = (uint8_t)directive_cond(sp, name, j);
        } else if (strcmp(name, "else") == 0) {
                if (top && *top == COND_TRUE)
                        *top = COND_DONE;
                else if (top && *top == COND_FALSE)
                        *top = COND_TRUE;
        } else if (strcmp(name, "endif") == 0) {
                if (hs->depth > 0)
                        hs->depth--;
        }
}

/* Check the directive whose '#' (or "%:") starts at @i; returns where to go on. */
static int check_directive(const CompileScanDirs *c, const Spliced *sp, ScanState *hs, size_t i,
                           size_t *ret_next, char *msg, size_t msglen)
{
        size_t j = i + (sp->t[i] == '#' ? 1 : 2), k, end;
        char name[16];
        const char *what;

        j = skip_directive_space(sp, j);
        for (k = j; k < sp->n && is_ident(sp->t[k]); k++)
                ;
        merge_scan_directive(&hs->merge, sp->t + j, k - j);
        if (k - j == 0 || k - j >= sizeof(name)) {
                *ret_next = k;
                return 0;
        }
        memcpy(name, sp->t + j, k - j);
        name[k - j] = '\0';
        *ret_next = k;
        host_cond(hs, sp, name, k);
        if (strcmp(name, "define") == 0) {
                size_t m = skip_directive_space(sp, k), e = m;
                while (e < sp->n && is_ident(sp->t[e]))
                        e++;
                if (e > m && stdshim_prelude_macro(sp->t + m, e - m))
                        hs->redefines_prelude = true;
                return 0;
        }
        if (strcmp(name, "pragma") == 0) {
                const char *nl = memchr(sp->t + k, '\n', sp->n - k);
                size_t len = nl ? (size_t)(nl - (sp->t + k)) : sp->n - k, w = skip_directive_space(sp, k), we = w;
                while (we < sp->n && is_ident(sp->t[we]))
                        we++;
                merge_scan_pragma(&hs->merge, sp->t + w, we - w);
                if (memmem(sp->t + k, len, "include", 7) || memmem(sp->t + k, len, "dependency", 10))
                        return reject(msg, msglen, sp, i,
                                      "#pragma directives that name files are not allowed");
                return 0;
        }
        if (strcmp(name, "include") == 0)
                what = "#include";
        else if (strcmp(name, "include_next") == 0)
                what = "#include_next";
        else if (strcmp(name, "import") == 0)
                what = "#import";
        else if (strcmp(name, "embed") == 0)
                what = "#embed";
        else
                return 0;
        if (strcmp(name, "include") != 0)
                return reject(msg, msglen, sp, i, "%s is not allowed; use #include", what);
        j = skip_directive_space(sp, k);
        if (j < sp->n && (sp->t[j] == '<' || sp->t[j] == '"')) {
                char close = sp->t[j] == '<' ? '>' : '"';
                for (end = j + 1; end < sp->n && sp->t[end] != close && sp->t[end] != '\n'; end++)
                        ;
                if (end >= sp->n || sp->t[end] != close)
                        return reject(msg, msglen, sp, i, "%s: unterminated header name", what);
                *ret_next = end + 1;
                if (end - j - 1 <= LIMIT_HEADER_NAME_BYTES) {
                        char h[LIMIT_HEADER_NAME_BYTES + 1];
                        const char *host;
                        memcpy(h, sp->t + j + 1, end - j - 1);
                        h[end - j - 1] = '\0';
                        merge_scan_include(&hs->merge, h, end - j - 1);
                        host = stdshim_host_header(h);
                        if (strncmp(h, "cuda/", 5) == 0 || strncmp(h, "cub/", 4) == 0 ||
                            strncmp(h, "thrust/", 7) == 0 || strcmp(h, "complex") == 0)
                                hs->libcudacxx = true;
                        if (host) {
                                /* Refused below as host code: NVRTC never sees it. */
                                host_site(hs, sp, i, "#include <%s> (%s)", h, host);
                                return 0;
                        }
                }
                return check_header(c, sp, i, what, sp->t + j + 1, end - j - 1, true, msg, msglen);
        }
        return reject(msg, msglen, sp, i,
                      "%s must be followed by <header> or \"header\"; computed includes (macros) "
                      "are not allowed", what);
}

/* The literal that starts at @i (a quote); returns the index after it. */
static int skip_literal(const Spliced *sp, size_t i, bool raw, size_t *ret_next, char *msg,
                        size_t msglen)
{
        char q = sp->t[i];
        size_t j;

        if (raw) {
                char term[20];
                size_t d = 0;
                const char *e;
                for (j = i + 1; j < sp->n && sp->t[j] != '('; j++) {
                        char ch = sp->t[j];
                        if (d >= 16 || ch == ' ' || ch == ')' || ch == '\\' || ch == '\t' ||
                            ch == '\n' || ch == '\v' || ch == '\f' || ch == '\r')
                                return reject(msg, msglen, sp, i, "malformed raw string literal");
                        term[1 + d++] = ch;
                }
                if (j >= sp->n)
                        return reject(msg, msglen, sp, i, "unterminated raw string literal");
                term[0] = ')';
                term[1 + d] = '"';
                e = memmem(sp->t + j + 1, sp->n - j - 1, term, d + 2);
                if (!e)
                        return reject(msg, msglen, sp, i, "unterminated raw string literal");
                *ret_next = (size_t)(e - sp->t) + d + 2;
                /* Splicing is undone inside raw strings: refuse the ambiguity. */
                for (size_t k = i; k + 1 < *ret_next; k++)
                        if (sp->orig[k + 1] != sp->orig[k] + 1)
                                return reject(msg, msglen, sp, i,
                                              "a line continuation (backslash-newline) inside a "
                                              "raw string literal is not allowed");
                return 0;
        }
        for (j = i + 1; j < sp->n && sp->t[j] != '\n'; j++) {
                if (sp->t[j] == '\\' && j + 1 < sp->n && sp->t[j + 1] != '\n') {
                        j++;
                        continue;
                }
                if (sp->t[j] == q) {
                        j++;
                        break;
                }
        }
        *ret_next = j; /* an unterminated literal ends at the end of its line */
        return 0;
}

static bool ident_is(const Spliced *sp, size_t s, size_t e, const char *word)
{
        return e - s == strlen(word) && memcmp(sp->t + s, word, e - s) == 0;
}

/* __has_include(<x>) / __has_include("x"): a plain, relative header name. */
static int check_has_include(const CompileScanDirs *c, const Spliced *sp, size_t i, size_t j,
                             size_t *ret_next, char *msg, size_t msglen)
{
        size_t end;

        while (j < sp->n && (is_hspace(sp->t[j]) || sp->t[j] == '\n'))
                j++;
        if (j >= sp->n || sp->t[j] != '(') {
                *ret_next = j;
                return 0;
        }
        j++;
        while (j < sp->n && is_hspace(sp->t[j]))
                j++;
        if (j >= sp->n || (sp->t[j] != '<' && sp->t[j] != '"'))
                return reject(msg, msglen, sp, i,
                              "__has_include must name <header> or \"header\" directly");
        for (end = j + 1; end < sp->n && sp->t[end] != (sp->t[j] == '<' ? '>' : '"') &&
                          sp->t[end] != '\n'; end++)
                ;
        if (end >= sp->n || sp->t[end] == '\n')
                return reject(msg, msglen, sp, i, "__has_include: unterminated header name");
        *ret_next = end + 1;
        return check_header(c, sp, i, "__has_include", sp->t + j + 1, end - j - 1, false, msg,
                            msglen);
}

/* The next character after @i that is not a blank, or '\0'. */
static char next_char(const Spliced *sp, size_t i)
{
        while (i < sp->n && is_hspace(sp->t[i]))
                i++;
        return i < sp->n ? sp->t[i] : '\0';
}

/* Is the identifier at [@s, @e) a member or a qualified name (after '.', "->" or "::")? */
static bool ident_qualified(const Spliced *sp, size_t s)
{
        while (s > 0 && is_hspace(sp->t[s - 1]))
                s--;
        return s > 0 && (sp->t[s - 1] == '.' || (s > 1 && sp->t[s - 1] == '>' && sp->t[s - 2] == '-') ||
                         (s > 1 && sp->t[s - 1] == ':' && sp->t[s - 2] == ':'));
}

/* Record the identifier at [@s, @e) if only host code uses it. */
static void host_ident(ScanState *hs, const Spliced *sp, size_t s, size_t e)
{
        static const char *const ns[][2] = {
                { "torch", "PyTorch" }, { "at", "PyTorch" }, { "c10", "PyTorch" },
                { "pybind11", "pybind11" }, { "py", "pybind11" },
        };
        size_t n = e - s;
        const char *t = sp->t + s;
        char nx = next_char(sp, e);

        if (host_skipped(hs) || n > 64)
                return;
        if (ident_is(sp, s, e, "main") && nx == '(' && !ident_qualified(sp, s)) {
                host_site(hs, sp, s, "a main() function");
        } else if (n > 4 && memcmp(t, "cuda", 4) == 0 && t[4] >= 'A' && t[4] <= 'Z' && nx == '(' &&
                   !ident_qualified(sp, s) &&
                   /* device-side intrinsics of programmatic dependent launch */
                   !ident_is(sp, s, e, "cudaGridDependencySynchronize") &&
                   !ident_is(sp, s, e, "cudaTriggerProgrammaticLaunchCompletion")) {
                host_site(hs, sp, s, "%.*s() (a CUDA runtime API call)", (int)n, t);
        } else if (ident_is(sp, s, e, "PYBIND11_MODULE") || (n > 13 && memcmp(t, "TORCH_LIBRARY", 13) == 0) ||
                   ident_is(sp, s, e, "TORCH_LIBRARY") || ident_is(sp, s, e, "TORCH_CHECK") ||
                   (n > 12 && memcmp(t, "AT_DISPATCH_", 12) == 0)) {
                host_site(hs, sp, s, "%.*s (%s)", (int)n, t, t[0] == 'P' ? "pybind11" : "PyTorch");
        } else if (nx == ':' && !ident_qualified(sp, s)) {
                size_t k = e;
                while (k < sp->n && is_hspace(sp->t[k]))
                        k++;
                if (k + 1 >= sp->n || sp->t[k + 1] != ':')
                        return;
                for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
                        if (ident_is(sp, s, e, ns[i][0])) {
                                host_site(hs, sp, s, "%s:: (%s)", ns[i][0], ns[i][1]);
                                return;
                        }
        }
}

static int scan(const CompileScanDirs *c, const Spliced *sp, ScanState *hs, char *msg, size_t msglen)
{
        size_t i = 0;
        bool bol = true;
        int r;

        while (i < sp->n) {
                char ch = sp->t[i];
                if (ch == '\n') {
                        bol = true;
                        merge_scan_newline(&hs->merge);
                        i++;
                } else if (is_hspace(ch) || (unsigned char)ch < 0x20 || ch == 0x7f) {
                        /* Other control characters: conservatively blanks too. */
                        i++;
                } else if (ch == '/' && i + 1 < sp->n && sp->t[i + 1] == '/') {
                        const char *nl = memchr(sp->t + i, '\n', sp->n - i);
                        i = nl ? (size_t)(nl - sp->t) : sp->n;
                } else if (ch == '/' && i + 1 < sp->n && sp->t[i + 1] == '*') {
                        const char *e = memmem(sp->t + i + 2, sp->n - i - 2, "*/", 2);
                        size_t end = e ? (size_t)(e - sp->t) + 2 : sp->n;
                        if (!e)
                                merge_scan_refuse(&hs->merge, "an unterminated comment");
                        /* Conservative: a comment with a newline leaves us at a line start. */
                        if (memchr(sp->t + i, '\n', end - i))
                                bol = true;
                        i = end;
                } else if (bol && (ch == '#' || (ch == '%' && i + 1 < sp->n && sp->t[i + 1] == ':'))) {
                        r = check_directive(c, sp, hs, i, &i, msg, msglen);
                        if (r != 0)
                                return r;
                        bol = false;
                } else if (ch == '"' || ch == '\'') {
                        size_t s = i;
                        r = skip_literal(sp, i, false, &i, msg, msglen);
                        if (r != 0)
                                return r;
                        merge_scan_token(&hs->merge, MERGE_TOK_LITERAL, sp->t + s, i - s);
                        bol = false;
                } else if ((ch >= '0' && ch <= '9') ||
                           (ch == '.' && i + 1 < sp->n && sp->t[i + 1] >= '0' && sp->t[i + 1] <= '9')) {
                        /* pp-number, with C++14 digit separators and exponent signs */
                        i++;
                        while (i < sp->n) {
                                char d = sp->t[i];
                                if ((d == '+' || d == '-') && strchr("eEpP", sp->t[i - 1]))
                                        i++;
                                else if (d == '\'' && i + 1 < sp->n && is_ident(sp->t[i + 1]))
                                        i += 2;
                                else if (is_ident(d) || d == '.')
                                        i++;
                                else
                                        break;
                        }
                        merge_scan_token(&hs->merge, MERGE_TOK_OTHER, "", 0);
                        bol = false;
                } else if (is_ident(ch)) {
                        size_t s = i, e;
                        bool ascii = false, lit = false;
                        while (i < sp->n && is_ident(sp->t[i]))
                                ascii |= (unsigned char)sp->t[i++] < 0x80;
                        e = i;
                        /*
                         * Non-ASCII alone (a byte-order mark, a Unicode blank) keeps a
                         * line start: a compiler that skips it must not see a directive
                         * that this check did not.
                         */
                        if (ascii)
                                bol = false;
                        if (i < sp->n && sp->t[i] == '"' &&
                            (ident_is(sp, s, i, "R") || ident_is(sp, s, i, "u8R") ||
                             ident_is(sp, s, i, "uR") || ident_is(sp, s, i, "UR") ||
                             ident_is(sp, s, i, "LR"))) {
                                r = skip_literal(sp, i, true, &i, msg, msglen);
                                if (r != 0)
                                        return r;
                                merge_scan_token(&hs->merge, MERGE_TOK_LITERAL, sp->t + s, i - s);
                                lit = true;
                        } else if (ident_is(sp, s, i, "__has_include") ||
                                   ident_is(sp, s, i, "__has_include_next")) {
                                r = check_has_include(c, sp, s, i, &i, msg, msglen);
                                if (r != 0)
                                        return r;
                        } else if (ident_is(sp, s, i, "_Pragma") || ident_is(sp, s, i, "__pragma")) {
                                const char *nl = memchr(sp->t + i, '\n', sp->n - i);
                                size_t len = nl ? (size_t)(nl - (sp->t + i)) : sp->n - i;
                                if (memmem(sp->t + i, len, "include", 7) ||
                                    memmem(sp->t + i, len, "dependency", 10))
                                        return reject(msg, msglen, sp, s,
                                                      "_Pragma operators that name files are not "
                                                      "allowed");
                        } else if (ascii) {
                                if (ident_is(sp, s, i, "INFINITY") || ident_is(sp, s, i, "NAN"))
                                        hs->inf_nan = true;
                                host_ident(hs, sp, s, i);
                        }
                        if (!lit)
                                merge_scan_token(&hs->merge, MERGE_TOK_IDENT, sp->t + s, e - s);
                } else if (ch == '<' && i + 1 < sp->n && sp->t[i + 1] == '<' && next_char(sp, i + 2) == '<') {
                        /* A launch: <<<, or "<< <" as some code writes it; neither is device C++. */
                        if (!host_skipped(hs))
                                host_site(hs, sp, i, "a kernel launch (<<<...>>>)");
                        bol = false;
                        i += 2;
                        while (sp->t[i] != '<')
                                i++;
                        i++;
                } else {
                        /* punctuation; the digraphs of braces and brackets as what they spell */
                        char p = ch, n1 = i + 1 < sp->n ? sp->t[i + 1] : '\0';
                        size_t adv = 1;
                        if (ch == '<' && n1 == '%')
                                p = '{', adv = 2;
                        else if (ch == '%' && n1 == '>')
                                p = '}', adv = 2;
                        else if (ch == '<' && n1 == ':' &&
                                 !(i + 2 < sp->n && sp->t[i + 2] == ':' &&
                                   !(i + 3 < sp->n && (sp->t[i + 3] == ':' || sp->t[i + 3] == '>'))))
                                p = '[', adv = 2;
                        else if (ch == ':' && n1 == '>')
                                p = ']', adv = 2;
                        merge_scan_token(&hs->merge, MERGE_TOK_PUNCT, &p, 1);
                        bol = false;
                        i += adv;
                }
        }
        merge_scan_finish(&hs->merge);
        return 0;
}

/* The refusal of a source with host code: each place by line, the first with what to do. */
static int host_reject(const Spliced *sp, const ScanState *hs, char *msg, size_t msglen)
{
        size_t shown = hs->n < COMPILE_HOST_SITES_MAX ? hs->n : COMPILE_HOST_SITES_MAX;

        reject(msg, msglen, sp, hs->at[0],
               "host code is not accepted: %s. Submit device code only: the __global__ kernels "
               "(extern \"C\", or named by name_expressions) and the __device__ code they call; "
               "the launches go in the plan, and kevald allocates and fills the buffers",
               hs->what[0]);
        for (size_t i = 1; i < shown; i++) {
                char line[160];
                snprintf(line, sizeof(line), "host code: %s", hs->what[i]);
                diag_append(msg, msglen, sp, hs->at[i], "%s", line);
        }
        if (hs->n > shown && msg && msglen > 0) {
                size_t used = strnlen(msg, msglen - 1);
                snprintf(msg + used, msglen - used, "\n(%zu more lines with host code)", hs->n - shown);
        }
        return COMPILE_E_REJECTED;
}

/**
 * compile_scan_source() - the #include rules and the host code check (see
 * compile.h) for a CUDA C++ source that is already known to be UTF-8
 * without NUL bytes
 * @c:           the folders a toolkit header must resolve under; borrowed
 * @src, @len:   the source; borrowed
 * @ret_flags:   on success, COMPILE_SOURCE_LIBCUDACXX when the source includes
 *               libcu++, CUB or Thrust (<cuda/...>, <cub/...>, <thrust/...>,
 *               <complex>), whose <cuda/std/cmath> defines INFINITY and NAN
 *               its own way, COMPILE_SOURCE_INF_NAN when it names either, and
 *               COMPILE_SOURCE_REDEFINES_PRELUDE when it #defines a macro that
 *               kevald_prelude.h defines (INFINITY, M_PI, INT_MAX, ...); may be
 *               NULL
 * @msg, @msglen: on COMPILE_E_REJECTED, a diagnostic in NVRTC's own form
 *               ("kernel.cu(3): error: #include \"/etc/passwd\": ..."), one
 *               line per place for host code
 *
 * Also refused: trigraphs that spell '#' or '\' (the ?\?= and ?\?/ sequences), a backslash
 * followed by blanks at the end of a line, and a carriage return not
 * followed by a line feed (compilers disagree on all three, and a
 * disagreement could hide a directive from this check).
 *
 * Return: 0, COMPILE_E_REJECTED, or -ENOMEM.
 */
static int scan_source(const CompileScanDirs *c, const char *src, size_t len, unsigned *ret_flags,
                       char *msg, size_t msglen, MergeFacts *facts)
{
        Spliced sp = { .src = src, .src_len = len };
        ScanState *hs = NULL;
        int r;

        sp.t = malloc(len + 1);
        sp.orig = malloc((len + 1) * sizeof(uint32_t));
        if (!sp.t || !sp.orig) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < len; i++) {
                char ch = src[i];
                if (ch == '?' && i + 2 < len && src[i + 1] == '?' && (src[i + 2] == '=' || src[i + 2] == '/')) {
                        sp.n = 0;
                        sp.orig[0] = (uint32_t)i;
                        r = reject(msg, msglen, &sp, 0, "trigraphs (?\?= and ?\?/) are not allowed");
                        goto out;
                }
                if (ch == '\r' && (i + 1 >= len || src[i + 1] != '\n')) {
                        sp.n = 0;
                        sp.orig[0] = (uint32_t)i;
                        r = reject(msg, msglen, &sp, 0,
                                   "a carriage return must be followed by a line feed");
                        goto out;
                }
                if (ch == '\\') {
                        size_t j = i + 1;
                        while (j < len && (src[j] == ' ' || src[j] == '\t' || src[j] == '\f' ||
                                           src[j] == '\v'))
                                j++;
                        if (j < len && src[j] == '\r')
                                j++;
                        if (j < len && src[j] == '\n') {
                                if (j > i + 1 && !(j == i + 2 && src[i + 1] == '\r')) {
                                        sp.n = 0;
                                        sp.orig[0] = (uint32_t)i;
                                        r = reject(msg, msglen, &sp, 0,
                                                   "a backslash followed by blanks at the end of a "
                                                   "line is ambiguous; remove the blanks");
                                        goto out;
                                }
                                i = j; /* a line continuation: drop it */
                                continue;
                        }
                }
                sp.t[sp.n] = ch;
                sp.orig[sp.n++] = (uint32_t)i;
        }
        sp.t[sp.n] = '\0';
        sp.orig[sp.n] = (uint32_t)len;
        hs = calloc(1, sizeof(*hs));
        if (!hs) {
                r = -ENOMEM;
                goto out;
        }
        hs->merge.f = facts;
        r = scan(c, &sp, hs, msg, msglen);
        if (r == 0 && hs->n > 0)
                r = host_reject(&sp, hs, msg, msglen);
        if (r == 0 && ret_flags)
                *ret_flags = (hs->libcudacxx ? COMPILE_SOURCE_LIBCUDACXX : 0u) |
                             (hs->inf_nan ? COMPILE_SOURCE_INF_NAN : 0u) |
                             (hs->redefines_prelude ? COMPILE_SOURCE_REDEFINES_PRELUDE : 0u);
out:
        if (hs)
                merge_scan_release(&hs->merge);
        free(hs);
        free(sp.t);
        free(sp.orig);
        return r;
}

int compile_scan_source(const CompileScanDirs *c, const char *src, size_t len, unsigned *ret_flags,
                        char *msg, size_t msglen)
{
        return scan_source(c, src, len, ret_flags, msg, msglen, NULL);
}

/**
 * compile_scan_merge() - compile_scan_source(), and with @facts the facts a
 * merged compile needs of the source (worker/compile/merge_scan.h), from the
 * same scan
 * @facts: NULL, or filled when 0 is returned (mergeable false with a reason
 *         where the source must be compiled alone); merge_facts_clear() it
 *
 * Return: as compile_scan_source().
 */
int compile_scan_merge(const CompileScanDirs *c, const char *src, size_t len, unsigned *ret_flags,
                       char *msg, size_t msglen, MergeFacts *facts)
{
        if (facts) {
                memset(facts, 0, sizeof(*facts));
                facts->mergeable = true;
        }
        return scan_source(c, src, len, ret_flags, msg, msglen, facts);
}
