/*
 * fence - see fence.h for what is checked and what is not, and
 * fence_abi.h for the symbols and the site word.
 *
 * The pass copies the PTX through and inserts text at three kinds of place:
 * after `.address_size` (the table and the record), after the opening
 * brace of each function body (the pass's registers), before each checked
 * statement (the check), and before each body's closing brace (the
 * function's failure path, reached only by branches). A `.extern .func
 * __assertfail` declaration is replaced by a definition that records the
 * assert. Nothing of the candidate's own text is changed or reordered.
 *
 * The scanner works on statements, not lines: inline asm may hold several
 * statements on a line, and a call spans several lines. Directives without
 * a semicolon (.version, .target, .address_size, .file, .loc) end at the
 * end of their line. Braces at the start of a statement open a scope; braces
 * inside one (vector operands, initializers) do not.
 *
 * A check, for an access of SIZE bytes at ADDR (registers %__kvf_*):
 *   the site word to %__kvf_s; ADDR to %__kvf_a;
 *   misaligned (ADDR % SIZE != 0)      -> the function's $__kvf_mis path;
 *   generic and not in the global window -> passes;
 *   ADDR + SIZE wraps past 2^64         -> the function's $__kvf_fail path;
 *   [ADDR, ADDR + SIZE) inside one (begin, end) of the table -> passes;
 *   otherwise                          -> the function's $__kvf_fail path.
 * The failure path claims the record with a compare-and-swap, fills it if
 * it won, and exits the thread.
 */
#include "worker/compile/fence.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/fence_abi.h"

#define FENCE_FILES_MAX 64

typedef struct Out {
        char *p;
        size_t n, cap;
        bool oom;
} Out;

typedef struct Pass {
        const char *s;
        size_t n, copied; /* s[0, copied) is in out */
        Out out, names;
        int main_file;    /* .file index of the source, -1: none */
        bool ptx_lines;   /* lines are the PTX's own */
        unsigned line;    /* the current source line, 0: unknown */
        unsigned func;    /* index of the current function body */
        bool func_sites;  /* the current body has a check */
        unsigned label;   /* the next site's number */
        bool decls;       /* the module declarations are in */
        bool entry;       /* the current body is a kernel's (.entry) */
        Out labels;       /* the labels of the current body so far, NUL after each */
        size_t line_pos;  /* ptx_line_at(): s[0, line_pos) holds */
        unsigned line_no; /*   line_no - 1 newlines */
        FenceReport rep;
} Pass;

static void put(Out *o, const char *s, size_t n)
{
        if (o->oom)
                return;
        if (o->n + n + 1 > o->cap) {
                size_t cap = o->cap ? o->cap : 4096;
                char *p;
                while (cap < o->n + n + 1)
                        cap *= 2;
                p = realloc(o->p, cap);
                if (!p) {
                        o->oom = true;
                        return;
                }
                o->p = p;
                o->cap = cap;
        }
        memcpy(o->p + o->n, s, n);
        o->n += n;
        o->p[o->n] = '\0';
}

static void putf(Out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void putf(Out *o, const char *fmt, ...)
{
        char buf[2048];
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        if (k < 0 || (size_t)k >= sizeof(buf)) {
                o->oom = true; /* never: every format here is short */
                return;
        }
        put(o, buf, (size_t)k);
}

/* Copy the input up to @at, so that what is emitted next goes before it. */
static void copy_to(Pass *P, size_t at)
{
        if (at > P->copied) {
                put(&P->out, P->s + P->copied, at - P->copied);
                P->copied = at;
        }
}

static bool is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static bool is_ident(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
               c == '$' || c == '%';
}

/* Past white space and comments from @i. */
static size_t skip_blank(const Pass *P, size_t i)
{
        while (i < P->n) {
                if (is_space(P->s[i])) {
                        i++;
                } else if (P->s[i] == '/' && i + 1 < P->n && P->s[i + 1] == '/') {
                        while (i < P->n && P->s[i] != '\n')
                                i++;
                } else if (P->s[i] == '/' && i + 1 < P->n && P->s[i + 1] == '*') {
                        const char *e = i + 2 < P->n ? strstr(P->s + i + 2, "*/") : NULL;
                        i = e && (size_t)(e - P->s) < P->n ? (size_t)(e - P->s) + 2 : P->n;
                } else {
                        break;
                }
        }
        return i;
}

static size_t end_of_line(const Pass *P, size_t i)
{
        while (i < P->n && P->s[i] != '\n')
                i++;
        return i;
}

/* Whether s[i..] starts with the word @w (followed by a non-identifier). */
static bool word_at(const Pass *P, size_t i, const char *w)
{
        size_t k = strlen(w);

        return i + k <= P->n && memcmp(P->s + i, w, k) == 0 && (i + k == P->n || !is_ident(P->s[i + k]));
}

/*
 * The end of the statement from @i: the index of its ';', or of a '{' that
 * opens a body (*@brace true), skipping comments, strings and initializer
 * braces (a '{' after '=' or ',' or '{'). P->n when there is neither.
 */
static size_t statement_end(const Pass *P, size_t i, bool top, bool *brace)
{
        char last = 0;
        int init = 0;

        *brace = false;
        while (i < P->n) {
                char c = P->s[i];
                if (c == '/' && i + 1 < P->n && (P->s[i + 1] == '/' || P->s[i + 1] == '*')) {
                        i = skip_blank(P, i);
                        continue;
                }
                if (c == '"') {
                        for (i++; i < P->n && P->s[i] != '"' && P->s[i] != '\n'; i++)
                                ;
                        i++;
                        last = '"';
                        continue;
                }
                if (c == ';' && init == 0)
                        return i;
                if (c == '{') {
                        if (top && init == 0 && last != '=' && last != ',' && last != '{') {
                                *brace = true;
                                return i;
                        }
                        init++;
                } else if (c == '}' && init > 0) {
                        init--;
                }
                if (!is_space(c))
                        last = c;
                i++;
        }
        return P->n;
}

/* The matching '}' of the '{' at @i (comments skipped), or P->n. */
static size_t match_brace(const Pass *P, size_t i)
{
        int depth = 0;

        while (i < P->n) {
                size_t j = skip_blank(P, i);
                if (j != i) {
                        i = j;
                        continue;
                }
                if (P->s[i] == '{')
                        depth++;
                else if (P->s[i] == '}' && --depth == 0)
                        return i;
                i++;
        }
        return P->n;
}

/* ---- .file and .loc ------------------------------------------------------ */

static unsigned long parse_uint(const Pass *P, size_t *i)
{
        unsigned long v = 0;

        while (*i < P->n && (P->s[*i] == ' ' || P->s[*i] == '\t'))
                (*i)++;
        while (*i < P->n && P->s[*i] >= '0' && P->s[*i] <= '9') {
                if (v < 100000000ul)
                        v = v * 10 + (unsigned long)(P->s[*i] - '0');
                (*i)++;
        }
        return v;
}

/* Find the .file index whose path ends in "/@name" or is @name. */
static void find_main_file(Pass *P, const char *name)
{
        size_t nl = strlen(name);

        P->main_file = -1;
        for (size_t i = 0; i < P->n; i = end_of_line(P, i) + 1) {
                size_t j = i, q;
                unsigned long idx;
                while (j < P->n && (P->s[j] == ' ' || P->s[j] == '\t'))
                        j++;
                if (!word_at(P, j, ".file"))
                        continue;
                j += 5;
                idx = parse_uint(P, &j);
                while (j < P->n && (P->s[j] == ' ' || P->s[j] == '\t'))
                        j++;
                if (j >= P->n || P->s[j] != '"')
                        continue;
                q = ++j;
                while (q < P->n && P->s[q] != '"' && P->s[q] != '\n')
                        q++;
                if (q - j >= nl && memcmp(P->s + q - nl, name, nl) == 0 &&
                    (q - j == nl || P->s[q - nl - 1] == '/') && idx < 100000) {
                        P->main_file = (int)idx;
                        return;
                }
        }
}

static void take_loc(Pass *P, size_t i)
{
        unsigned long file, line;

        i += 4; /* ".loc" */
        file = parse_uint(P, &i);
        line = parse_uint(P, &i);
        if (P->main_file >= 0)
                P->line = (long)file == P->main_file && line <= FENCE_LINE_MAX ? (unsigned)line : 0;
}

/* The PTX line of @at; positions asked for only grow, so counting goes on from the last. */
static unsigned ptx_line_at(Pass *P, size_t at)
{
        for (; P->line_pos < at && P->line_pos < P->n; P->line_pos++)
                P->line_no += P->s[P->line_pos] == '\n';
        return P->line_no;
}

/* ---- module and function text --------------------------------------------- */

static void emit_module_decls(Pass *P)
{
        putf(&P->out,
             "\n// kevald fence: the allocation table and the first violation\n"
             ".visible .const .align 16 .u64 " FENCE_SYM_TABLE "[%d];\n"
             ".visible .global .align 8 .u64 " FENCE_SYM_RECORD "[%d];\n",
             FENCE_TAB_WORDS, FENCE_REC_WORDS);
        P->decls = true;
}

static const char REGS[] = "\n\t.reg .b64 %__kvf_a, %__kvf_e, %__kvf_b, %__kvf_lo, %__kvf_hi, %__kvf_s, %__kvf_t;"
                           "\n\t.reg .b32 %__kvf_n;\n\t.reg .pred %__kvf_p;\n";
/*
 * A kernel's own: when its threads started, and their backward branches
 * since the last look at the clock. A thread that starts after another one
 * of its launch has recorded a violation (a later wave of blocks) exits at
 * once: a hung kernel of many waves ends after one budget, not one a wave.
 */
static const char ENTRY_REGS[] = "\t.reg .b64 %__kvf_t0;\n\t.reg .b32 %__kvf_c;\n"
                                 "\tld.volatile.global.u64 %__kvf_t, [" FENCE_SYM_RECORD "];\n"
                                 "\tsetp.ne.s64 %__kvf_p, %__kvf_t, 0;\n"
                                 "\t@%__kvf_p exit;\n"
                                 "\tmov.u64 %__kvf_t0, %globaltimer;\n\tmov.u32 %__kvf_c, 0;\n";

/* Claim the record, fill it, exit. */
static void emit_record(Out *o)
{
        static const char *const who[6] = { "%tid.x", "%tid.y", "%tid.z", "%ctaid.x", "%ctaid.y", "%ctaid.z" };

        put(o, "\tatom.global.cas.b64 %__kvf_t, [" FENCE_SYM_RECORD "], 0, %__kvf_s;\n"
               "\tsetp.ne.s64 %__kvf_p, %__kvf_t, 0;\n"
               "\t@%__kvf_p exit;\n"
               "\tst.global.u64 [" FENCE_SYM_RECORD "+8], %__kvf_a;\n",
            strlen("\tatom.global.cas.b64 %__kvf_t, [" FENCE_SYM_RECORD "], 0, %__kvf_s;\n"
                   "\tsetp.ne.s64 %__kvf_p, %__kvf_t, 0;\n"
                   "\t@%__kvf_p exit;\n"
                   "\tst.global.u64 [" FENCE_SYM_RECORD "+8], %__kvf_a;\n"));
        for (int k = 0; k < 6; k++)
                putf(o, "\tmov.u32 %%__kvf_n, %s;\n\tst.global.u32 [" FENCE_SYM_RECORD "+%d], %%__kvf_n;\n", who[k],
                     16 + 4 * k);
        putf(o, "\tmembar.gl;\n\texit;\n");
}

static void emit_func_tail(Pass *P)
{
        putf(&P->out, "\n\tret;\n$__kvf_mis%u:\n\tor.b64 %%__kvf_s, %%__kvf_s, 0x%llx;\n$__kvf_fail%u:\n", P->func,
             (unsigned long long)FENCE_SITE_MISALIGNED, P->func);
        emit_record(&P->out);
}

/* The definition that replaces `.extern .func __assertfail(...)`. */
static void emit_assertfail(Pass *P)
{
        uint64_t site = fence_site_word(0, FENCE_KIND_ASSERT, 0, 0, FENCE_FUNC_UNKNOWN);

        putf(&P->out,
             "// kevald fence: a failing assert records itself and exits its thread\n"
             ".func __assertfail(.param .b64 __kvf_p0, .param .b64 __kvf_p1, .param .b32 __kvf_p2, "
             ".param .b64 __kvf_p3, .param .b64 __kvf_p4)\n{"
             "\n\t.reg .b64 %%__kvf_a, %%__kvf_s, %%__kvf_t;\n\t.reg .b32 %%__kvf_n;\n\t.reg .pred %%__kvf_p;\n"
             "\tld.param.b64 %%__kvf_a, [__kvf_p0];\n"
             "\tld.param.b32 %%__kvf_n, [__kvf_p2];\n"
             "\tcvt.u64.u32 %%__kvf_s, %%__kvf_n;\n"
             "\tand.b64 %%__kvf_s, %%__kvf_s, 0x%x;\n"
             "\tor.b64 %%__kvf_s, %%__kvf_s, 0x%llx;\n",
             FENCE_LINE_MAX, (unsigned long long)site);
        emit_record(&P->out);
        put(&P->out, "}\n", 2);
        P->rep.sites++;
}

static void emit_names(Pass *P)
{
        size_t n = P->names.n ? P->names.n : 1;

        putf(&P->out, "\n// kevald fence: function names by index\n.visible .global .align 1 .b8 " FENCE_SYM_NAMES
                      "[%zu] = {", n);
        for (size_t i = 0; i < n; i++)
                putf(&P->out, "%s%u", i ? ", " : "", P->names.n ? (unsigned char)P->names.p[i] : 0u);
        put(&P->out, "};\n", 3);
}

/* ---- statements ------------------------------------------------------------ */

typedef struct Access {
        unsigned kind;       /* FENCE_KIND_*; 0: not an access we check */
        bool generic;        /* no state space: generic addressing */
        unsigned size;       /* bytes; 0 with a size register */
        char size_reg[64];   /* cp.async's src-size register, or "" */
        char base[128];      /* the address's register, or "" for a symbol */
        long long offset;
} Access;

static unsigned type_size(const char *t, size_t n)
{
        static const struct { const char *name; unsigned size; } types[] = {
                { "b8", 1 },     { "u8", 1 },      { "s8", 1 },     { "b16", 2 },   { "u16", 2 },   { "s16", 2 },
                { "f16", 2 },    { "bf16", 2 },    { "b32", 4 },    { "u32", 4 },   { "s32", 4 },   { "f32", 4 },
                { "f16x2", 4 },  { "bf16x2", 4 },  { "tf32", 4 },   { "b64", 8 },   { "u64", 8 },   { "s64", 8 },
                { "f64", 8 },    { "b128", 16 },   { "e4m3x2", 2 }, { "e5m2x2", 2 }, { "e4m3", 1 }, { "e5m2", 1 },
        };

        for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
                if (strlen(types[i].name) == n && memcmp(types[i].name, t, n) == 0)
                        return types[i].size;
        return 0;
}

static bool part_is(const char *p, size_t n, const char *w)
{
        return strlen(w) == n && memcmp(p, w, n) == 0;
}

/* s[@a, @b) without its outer white space into @buf; false if it does not fit. */
static bool copy_trimmed(const Pass *P, size_t a, size_t b, char *buf, size_t len)
{
        while (a < b && is_space(P->s[a]))
                a++;
        while (b > a && is_space(P->s[b - 1]))
                b--;
        if (b - a + 1 > len)
                return false;
        memcpy(buf, P->s + a, b - a);
        buf[b - a] = '\0';
        return true;
}

/* The @k-th bracketed operand of [@i, @e), trimmed, into @buf; false if none. */
static bool bracket(const Pass *P, size_t i, size_t e, int k, char *buf, size_t len)
{
        for (; i < e; i++) {
                if (P->s[i] != '[')
                        continue;
                size_t j = i + 1;
                while (j < e && P->s[j] != ']')
                        j++;
                if (j >= e)
                        return false;
                if (k-- > 0) {
                        i = j;
                        continue;
                }
                return copy_trimmed(P, i + 1, j, buf, len);
        }
        return false;
}

/* Bounds every number in an address, so that their sum cannot overflow. */
#define ADDRESS_MAX (1ll << 48)

/* "%rd1", "%rd1+8", "%rd1+-8", "%rd1-8", "sym", "sym+8", "0x100": base and offset. */
static bool parse_address(const char *t, Access *a)
{
        const char *p = t;
        char *end;
        size_t n;

        while (*p && (is_ident(*p) || *p == '.'))
                p++;
        n = (size_t)(p - t);
        if (n == 0 || n >= sizeof(a->base))
                return false;
        while (*p == ' ' || *p == '\t')
                p++;
        a->offset = 0;
        if (*p == '+' || *p == '-') {
                bool neg = *p == '-';
                p++;
                while (*p == ' ' || *p == '\t')
                        p++;
                if (*p == '-') {
                        neg = !neg;
                        p++;
                }
                a->offset = strtoll(p, &end, 0);
                if (end == p || a->offset < -ADDRESS_MAX || a->offset > ADDRESS_MAX)
                        return false;
                if (neg)
                        a->offset = -a->offset;
                p = end;
                while (*p == ' ' || *p == '\t')
                        p++;
        }
        if (*p)
                return false;
        if (t[0] == '%') {
                memcpy(a->base, t, n);
                a->base[n] = '\0';
        } else if (t[0] >= '0' && t[0] <= '9') { /* an absolute address */
                long long at = strtoll(t, NULL, 0);
                if (at < 0 || at > ADDRESS_MAX)
                        return false;
                a->offset += at;
                a->base[0] = '#';
                a->base[1] = '\0';
        } else {
                a->base[0] = '\0'; /* a symbol: not checked */
        }
        return true;
}

/* The operands after the opcode, split at top-level commas: the @k-th, trimmed. */
static bool operand(const Pass *P, size_t i, size_t e, int k, char *buf, size_t len)
{
        int depth = 0;
        size_t a = i;

        for (size_t j = i; j <= e; j++) {
                char c = j < e ? P->s[j] : ',';
                if (c == '[' || c == '{')
                        depth++;
                else if (c == ']' || c == '}')
                        depth--;
                else if (c == ',' && depth == 0) {
                        if (k-- == 0)
                                return copy_trimmed(P, a, j, buf, len);
                        a = j + 1;
                }
        }
        return false;
}

static void unchecked(Pass *P, const char *what)
{
        if (P->rep.unchecked++ == 0)
                snprintf(P->rep.note, sizeof(P->rep.note), "not checked: %s", what);
}

/*
 * Classify the statement whose opcode spans [@o, @oe) and whose operands
 * span [@oe, @e).
 */
static void classify(Pass *P, size_t o, size_t oe, size_t e, Access *a)
{
        const char *parts[16];
        size_t lens[16], np = 0, k = o;
        bool global = false, other_space = false, async = false, hint = false;
        unsigned vec = 1, tsize = 0, nops = 0;
        char buf[160];

        memset(a, 0, sizeof(*a));
        while (k < oe && np < 16) {
                size_t s = k;
                while (k < oe && P->s[k] != '.')
                        k++;
                parts[np] = P->s + s;
                lens[np++] = k - s;
                k++;
        }
        if (np == 0)
                return;
        if (part_is(parts[0], lens[0], "trap") || part_is(parts[0], lens[0], "brkpt")) {
                a->kind = FENCE_KIND_TRAP;
                return;
        }
        for (size_t i = 1; i < np; i++) {
                const char *p = parts[i];
                size_t n = lens[i];
                if (part_is(p, n, "global"))
                        global = true;
                else if (part_is(p, n, "shared") || (n > 8 && memcmp(p, "shared::", 8) == 0) ||
                         part_is(p, n, "local") || part_is(p, n, "const") || part_is(p, n, "param") ||
                         (n > 7 && memcmp(p, "param::", 7) == 0))
                        other_space = true;
                else if (part_is(p, n, "async") || part_is(p, n, "bulk") || part_is(p, n, "tensor"))
                        async = true;
                else if (part_is(p, n, "v2"))
                        vec = 2;
                else if (part_is(p, n, "v4"))
                        vec = 4;
                else if (part_is(p, n, "v8"))
                        vec = 8;
                else if (!tsize)
                        tsize = type_size(p, n);
        }
        if (part_is(parts[0], lens[0], "cp") && np > 1 && part_is(parts[1], lens[1], "async")) {
                if (np > 2 && (part_is(parts[2], lens[2], "bulk") || part_is(parts[2], lens[2], "mbarrier") ||
                               part_is(parts[2], lens[2], "commit_group") || part_is(parts[2], lens[2], "wait_group") ||
                               part_is(parts[2], lens[2], "wait_all"))) {
                        if (part_is(parts[2], lens[2], "bulk"))
                                unchecked(P, "cp.async.bulk");
                        return;
                }
                if (!global)
                        return;
                /*
                 * [dst], [src], cp-size, then src-size (u32) or ignore-src (a
                 * predicate), then with .L2::cache_hint a cache policy. The two
                 * are told apart by the register names NVVM gives (%r, %p).
                 */
                for (size_t i = 2; i < np; i++)
                        if (part_is(parts[i], lens[i], "L2::cache_hint"))
                                hint = true;
                while (nops < 6 && operand(P, oe, e, nops, buf, sizeof(buf)))
                        nops++;
                if (hint)
                        nops--;
                if (nops < 3)
                        return;
                if (nops > 4) {
                        unchecked(P, "cp.async with unusual operands");
                        return;
                }
                (void)operand(P, oe, e, 2, buf, sizeof(buf));
                a->size = (unsigned)strtoul(buf, NULL, 0);
                if (nops == 4 && operand(P, oe, e, 3, buf, sizeof(buf))) {
                        if (strncmp(buf, "%p", 2) == 0 || buf[0] == '!') {
                                unchecked(P, "cp.async with ignore-src");
                                return;
                        } else if (strncmp(buf, "%r", 2) == 0 && strncmp(buf, "%rd", 3) != 0 &&
                                   strlen(buf) < sizeof(a->size_reg)) {
                                strcpy(a->size_reg, buf);
                        } else if (buf[0] >= '0' && buf[0] <= '9') {
                                a->size = (unsigned)strtoul(buf, NULL, 0);
                        } else {
                                unchecked(P, "cp.async with an unusual src-size");
                                return;
                        }
                }
                if (!bracket(P, oe, e, 1, buf, sizeof(buf)) || !parse_address(buf, a) || a->size > 16) {
                        unchecked(P, "cp.async with an unusual address");
                        return;
                }
                a->kind = FENCE_KIND_COPY;
                if (a->size_reg[0])
                        a->size = 0;
                return;
        }
        if (part_is(parts[0], lens[0], "wmma") || part_is(parts[0], lens[0], "cp") ||
            (part_is(parts[0], lens[0], "multimem"))) {
                if (!other_space && (part_is(parts[0], lens[0], "cp") || (np > 1 && (part_is(parts[1], lens[1], "load") ||
                                                                                    part_is(parts[1], lens[1], "store")))))
                        unchecked(P, part_is(parts[0], lens[0], "wmma") ? "wmma.load/wmma.store" : "bulk copies");
                return;
        }
        if (part_is(parts[0], lens[0], "ld") || part_is(parts[0], lens[0], "ldu"))
                a->kind = FENCE_KIND_LOAD;
        else if (part_is(parts[0], lens[0], "st"))
                a->kind = FENCE_KIND_STORE;
        else if (part_is(parts[0], lens[0], "atom") || part_is(parts[0], lens[0], "red"))
                a->kind = FENCE_KIND_ATOMIC;
        else
                return;
        if (other_space || async) {
                a->kind = 0;
                return;
        }
        a->generic = !global;
        a->size = vec * (tsize ? tsize : 1);
        if (!bracket(P, oe, e, 0, buf, sizeof(buf)) || !parse_address(buf, a)) {
                unchecked(P, "an access with an unusual address");
                a->kind = 0;
                return;
        }
        if (!tsize)
                unchecked(P, "an access of unknown size (checked as 1 byte)");
}

/* The check for the access @a of the statement at @at (guard: @neg, @greg). */
static void emit_check(Pass *P, size_t at, const Access *a, bool guarded, bool neg, const char *greg)
{
        unsigned id = P->label++;
        unsigned line = P->ptx_lines ? ptx_line_at(P, at) : P->line;
        uint64_t site = fence_site_word(line, a->kind, P->ptx_lines, a->size, P->func);
        Out *o = &P->out;

        copy_to(P, at);
        putf(o, "\n\t// kevald fence: site %u\n", id);
        if (guarded)
                putf(o, "\t@%s%s bra $__kvf_s%u;\n", neg ? "" : "!", greg, id);
        putf(o, "\tmov.b64 %%__kvf_s, 0x%llxU;\n", (unsigned long long)site);
        if (a->kind == FENCE_KIND_TRAP) {
                putf(o, "\tmov.b64 %%__kvf_a, 0;\n\tbra $__kvf_fail%u;\n$__kvf_s%u:\n", P->func, id);
                goto done;
        }
        if (a->base[0] == '#')
                putf(o, "\tmov.b64 %%__kvf_a, %lld;\n", a->offset);
        else if (a->offset)
                putf(o, "\tadd.s64 %%__kvf_a, %s, %lld;\n", a->base, a->offset);
        else
                putf(o, "\tmov.b64 %%__kvf_a, %s;\n", a->base);
        if (a->size > 1 && (a->size & (a->size - 1)) == 0)
                putf(o, "\tand.b64 %%__kvf_t, %%__kvf_a, %u;\n\tsetp.ne.s64 %%__kvf_p, %%__kvf_t, 0;\n"
                        "\t@%%__kvf_p bra $__kvf_mis%u;\n",
                     a->size - 1, P->func);
        if (a->generic)
                putf(o, "\tisspacep.global %%__kvf_p, %%__kvf_a;\n\t@!%%__kvf_p bra $__kvf_s%u;\n", id);
        if (a->size_reg[0])
                putf(o, "\tcvt.u64.u32 %%__kvf_t, %s;\n\tsetp.eq.s64 %%__kvf_p, %%__kvf_t, 0;\n"
                        "\t@%%__kvf_p bra $__kvf_s%u;\n\tadd.s64 %%__kvf_e, %%__kvf_a, %%__kvf_t;\n",
                     a->size_reg, id);
        else
                putf(o, "\tadd.s64 %%__kvf_e, %%__kvf_a, %u;\n", a->size ? a->size : 1);
        /* An end that wraps past 2^64 would pass every range's test below. */
        putf(o, "\tsetp.lt.u64 %%__kvf_p, %%__kvf_e, %%__kvf_a;\n\t@%%__kvf_p bra $__kvf_fail%u;\n", P->func);
        putf(o, "\tmov.u64 %%__kvf_b, " FENCE_SYM_TABLE ";\n"
                "\tld.const.u32 %%__kvf_n, [" FENCE_SYM_TABLE "];\n"
                "$__kvf_l%u:\n"
                "\tsetp.eq.u32 %%__kvf_p, %%__kvf_n, 0;\n"
                "\t@%%__kvf_p bra $__kvf_fail%u;\n"
                "\tld.const.v2.u64 {%%__kvf_lo, %%__kvf_hi}, [%%__kvf_b+%d];\n"
                "\tadd.s64 %%__kvf_b, %%__kvf_b, 16;\n"
                "\tadd.s32 %%__kvf_n, %%__kvf_n, -1;\n"
                "\tsetp.lt.u64 %%__kvf_p, %%__kvf_a, %%__kvf_lo;\n"
                "\tsetp.gt.or.u64 %%__kvf_p, %%__kvf_e, %%__kvf_hi, %%__kvf_p;\n"
                "\t@%%__kvf_p bra $__kvf_l%u;\n"
                "$__kvf_s%u:\n",
             id, P->func, FENCE_TAB_FIRST * 8, id, id);
done:
        P->func_sites = true;
        P->rep.sites++;
}

/* Whether the bra whose operand spans [@i, @e) targets a label already seen in this body. */
static bool backward(const Pass *P, size_t i, size_t e)
{
        size_t a = skip_blank(P, i), b = a;

        while (b < e && is_ident(P->s[b]))
                b++;
        for (size_t k = 0; b > a && k < P->labels.n; k += strlen(P->labels.p + k) + 1)
                if (strlen(P->labels.p + k) == b - a && memcmp(P->labels.p + k, P->s + a, b - a) == 0)
                        return true;
        return false;
}

/* Before a backward branch of a kernel: every FENCE_LOOP_EVERY times, the loop budget. */
static void emit_loop_check(Pass *P, size_t at)
{
        unsigned id = P->rep.loops;
        unsigned line = P->ptx_lines ? ptx_line_at(P, at) : P->line;
        uint64_t site = fence_site_word(line, FENCE_KIND_HANG, P->ptx_lines, 0, P->func);

        copy_to(P, at);
        putf(&P->out,
             "\n\t// kevald fence: loop %u\n"
             "\tadd.u32 %%__kvf_c, %%__kvf_c, 1;\n"
             "\tand.b32 %%__kvf_n, %%__kvf_c, %d;\n"
             "\tsetp.ne.u32 %%__kvf_p, %%__kvf_n, 0;\n"
             "\t@%%__kvf_p bra $__kvf_h%u;\n"
             "\tld.volatile.global.u64 %%__kvf_t, [" FENCE_SYM_RECORD "];\n"
             "\tsetp.ne.s64 %%__kvf_p, %%__kvf_t, 0;\n"
             "\t@%%__kvf_p exit;\n"
             "\tld.const.u64 %%__kvf_e, [" FENCE_SYM_TABLE "+8];\n"
             "\tmov.u64 %%__kvf_a, %%globaltimer;\n"
             "\tsub.u64 %%__kvf_a, %%__kvf_a, %%__kvf_t0;\n"
             "\tsetp.le.u64 %%__kvf_p, %%__kvf_a, %%__kvf_e;\n"
             "\tsetp.eq.or.u64 %%__kvf_p, %%__kvf_e, 0, %%__kvf_p;\n"
             "\t@%%__kvf_p bra $__kvf_h%u;\n"
             "\tmov.b64 %%__kvf_s, 0x%llxU;\n"
             "\tbra $__kvf_fail%u;\n"
             "$__kvf_h%u:\n",
             id, FENCE_LOOP_EVERY - 1, id, id, (unsigned long long)site, P->func, id);
        P->func_sites = true;
        P->rep.loops++;
}

/* One statement of a function body, [@i, @e) with @e at its ';'. */
static void body_statement(Pass *P, size_t i, size_t e)
{
        bool guarded = false, neg = false;
        char greg[64] = "";
        size_t start = i, o, oe;
        Access a;

        if (P->s[i] == '@') {
                size_t g = i + 1, ge;
                guarded = true;
                if (g < e && P->s[g] == '!') {
                        neg = true;
                        g++;
                }
                for (ge = g; ge < e && is_ident(P->s[ge]); ge++)
                        ;
                if (ge == g || ge - g >= sizeof(greg))
                        return;
                memcpy(greg, P->s + g, ge - g);
                greg[ge - g] = '\0';
                i = skip_blank(P, ge);
        }
        o = i;
        for (oe = o; oe < e && (is_ident(P->s[oe]) || P->s[oe] == '.' || P->s[oe] == ':'); oe++)
                ;
        if (oe == o)
                return;
        if (P->entry && oe - o >= 3 && memcmp(P->s + o, "bra", 3) == 0 && (oe - o == 3 || P->s[o + 3] == '.')) {
                if (backward(P, oe, e))
                        emit_loop_check(P, start);
                return;
        }
        classify(P, o, oe, e, &a);
        if (a.kind == 0)
                return;
        if (a.kind != FENCE_KIND_TRAP && a.base[0] == '\0')
                return; /* a symbol: statically inside the module's data */
        emit_check(P, start, &a, guarded, neg, greg);
}

/* A function body from its '{' at @i; returns the index past its '}'. */
static size_t body(Pass *P, size_t i)
{
        int depth = 0;

        P->func_sites = false;
        P->labels.n = 0;
        while (i < P->n) {
                i = skip_blank(P, i);
                if (i >= P->n)
                        break;
                char c = P->s[i];
                if (c == '{') {
                        if (depth++ == 0) {
                                copy_to(P, i + 1);
                                put(&P->out, REGS, sizeof(REGS) - 1);
                                if (P->entry)
                                        put(&P->out, ENTRY_REGS, sizeof(ENTRY_REGS) - 1);
                        }
                        i++;
                        continue;
                }
                if (c == '}') {
                        if (--depth == 0) {
                                if (P->func_sites) {
                                        copy_to(P, i);
                                        emit_func_tail(P);
                                }
                                return i + 1;
                        }
                        i++;
                        continue;
                }
                if (word_at(P, i, ".loc")) {
                        take_loc(P, i);
                        i = end_of_line(P, i);
                        continue;
                }
                if (c == '$' || (is_ident(c) && c != '%')) { /* a label? */
                        size_t j = i;
                        while (j < P->n && is_ident(P->s[j]))
                                j++;
                        size_t k = j;
                        while (k < P->n && (P->s[k] == ' ' || P->s[k] == '\t'))
                                k++;
                        if (k < P->n && P->s[k] == ':' && (k + 1 >= P->n || P->s[k + 1] != ':')) {
                                put(&P->labels, P->s + i, j - i);
                                put(&P->labels, "", 1);
                                i = k + 1;
                                continue;
                        }
                }
                {
                        bool brace;
                        size_t e = statement_end(P, i, false, &brace);
                        body_statement(P, i, e);
                        i = e + 1;
                }
        }
        return P->n;
}

/* The name in a function header [@i, @e): after .entry, or after .func and its return list. */
static void header_name(const Pass *P, size_t i, size_t e, char *buf, size_t len)
{
        buf[0] = '\0';
        for (; i < e; i++) {
                size_t k;
                if (word_at(P, i, ".entry"))
                        k = i + 6;
                else if (word_at(P, i, ".func"))
                        k = i + 5;
                else
                        continue;
                k = skip_blank(P, k);
                if (k < e && P->s[k] == '(') {
                        while (k < e && P->s[k] != ')')
                                k++;
                        k = skip_blank(P, k + 1);
                }
                size_t j = k;
                while (j < e && is_ident(P->s[j]))
                        j++;
                if (j > k && j - k < len) {
                        memcpy(buf, P->s + k, j - k);
                        buf[j - k] = '\0';
                }
                return;
        }
}

static bool header_is_entry(const Pass *P, size_t i, size_t e)
{
        for (; i < e; i++)
                if (word_at(P, i, ".entry") && (i == 0 || !is_ident(P->s[i - 1])))
                        return true;
        return false;
}

static bool is_assertfail_decl(const Pass *P, size_t i, size_t e)
{
        bool ext = false, func = false, name = false;
        int params = 0;

        for (size_t k = i; k < e; k++) {
                if (word_at(P, k, ".extern") && (k == i || !is_ident(P->s[k - 1])))
                        ext = true;
                else if (word_at(P, k, ".func"))
                        func = true;
                else if (word_at(P, k, "__assertfail") && (k == 0 || !is_ident(P->s[k - 1])))
                        name = true;
                else if (word_at(P, k, ".param"))
                        params++;
        }
        return ext && func && name && params == 5;
}

static int module(Pass *P)
{
        size_t i = 0;
        bool addr64 = false;

        while (i < P->n) {
                i = skip_blank(P, i);
                if (i >= P->n)
                        break;
                if (word_at(P, i, ".version") || word_at(P, i, ".target") || word_at(P, i, ".file") ||
                    word_at(P, i, ".address_size")) {
                        size_t e = end_of_line(P, i);
                        if (word_at(P, i, ".address_size")) {
                                size_t k = i + 13;
                                if (parse_uint(P, &k) != 64) {
                                        snprintf(P->rep.note, sizeof(P->rep.note), "32-bit addressing");
                                        return FENCE_E_UNSUPPORTED;
                                }
                                addr64 = true;
                                copy_to(P, e);
                                emit_module_decls(P);
                        }
                        i = e;
                        continue;
                }
                bool brace;
                size_t e = statement_end(P, i, true, &brace);
                if (!brace) {
                        if (e < P->n && is_assertfail_decl(P, i, e)) {
                                if (!P->decls) {
                                        snprintf(P->rep.note, sizeof(P->rep.note),
                                                 "a declaration before .address_size");
                                        return FENCE_E_UNSUPPORTED;
                                }
                                copy_to(P, i);
                                emit_assertfail(P);
                                P->copied = e + 1;
                        }
                        i = e + 1;
                        continue;
                }
                if (word_at(P, i, ".section")) {
                        i = match_brace(P, e) + 1;
                        continue;
                }
                if (!P->decls) {
                        snprintf(P->rep.note, sizeof(P->rep.note), "a function before .address_size");
                        return FENCE_E_UNSUPPORTED;
                }
                {
                        char name[256];
                        header_name(P, i, e, name, sizeof(name));
                        if (!name[0]) {
                                snprintf(P->rep.note, sizeof(P->rep.note), "a body without a function name");
                                return FENCE_E_UNSUPPORTED;
                        }
                        if (P->func >= FENCE_FUNC_UNKNOWN) {
                                snprintf(P->rep.note, sizeof(P->rep.note), "too many functions");
                                return FENCE_E_UNSUPPORTED;
                        }
                        put(&P->names, name, strlen(name) + 1);
                        P->line = 0;
                        P->entry = header_is_entry(P, i, e);
                        i = body(P, e);
                        P->func++;
                        P->rep.functions++;
                }
        }
        if (!addr64) {
                snprintf(P->rep.note, sizeof(P->rep.note), "no .address_size 64");
                return FENCE_E_UNSUPPORTED;
        }
        copy_to(P, P->n);
        emit_names(P);
        return 0;
}

/**
 * fence_ptx() - add bounds checks to a PTX module
 * @ptx:         the module's text (not necessarily NUL-terminated); borrowed
 * @len:         its length
 * @source_name: the CUDA source's file name as NVRTC's .file directives name
 *               it ("kernel.cu"), whose .loc lines the sites carry; NULL for
 *               a PTX submission, whose sites carry the PTX's own lines
 * @ret_ptx:     on success, a new NUL-terminated module; free()
 * @ret_len:     on success, its length
 * @ret_report:  always filled: counts, and the note of FENCE_E_UNSUPPORTED
 *
 * Return: 0, FENCE_E_UNSUPPORTED (the module cannot be fenced: the plain
 * build stands alone), or -ENOMEM.
 */
int fence_ptx(const char *ptx, size_t len, const char *source_name, char **ret_ptx, size_t *ret_len,
              FenceReport *ret_report)
{
        Pass P = { 0 };
        char *copy;
        int r;

        copy = malloc(len + 1); /* strstr() in skip_blank() needs the NUL */
        if (!copy)
                return -ENOMEM;
        memcpy(copy, ptx, len);
        copy[len] = '\0';
        P.s = copy;
        P.n = strlen(copy) < len ? strlen(copy) : len;
        P.ptx_lines = source_name == NULL;
        P.line_no = 1;
        P.main_file = -1;
        if (source_name)
                find_main_file(&P, source_name);
        r = module(&P);
        if (r == 0 && (P.out.oom || P.names.oom || P.labels.oom))
                r = -ENOMEM;
        *ret_report = P.rep;
        free(copy);
        free(P.names.p);
        free(P.labels.p);
        if (r != 0) {
                free(P.out.p);
                return r;
        }
        *ret_ptx = P.out.p;
        *ret_len = P.out.n;
        return 0;
}
