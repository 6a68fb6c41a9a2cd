/*
 * logtrim - see logtrim.h.
 *
 * A raw log is read as a sequence of blocks. A block starts at a
 * diagnostic header ("FILE(LINE): severity: message"), or at any other
 * line that is not indented, and runs over the indented lines that follow
 * (NVRTC indents the echoed source line, the caret and "detected during"
 * context); a blank line ends it. Blocks are the unit of every decision:
 * a withheld diagnostic takes its echoed line with it, the first error
 * moves with its context, and truncation drops whole blocks.
 *
 * ptxas -v lines look like this (NVRTC and nvJitLink alike):
 *
 *   ptxas info    : Compiling entry function 'k1' for 'sm_90a'
 *   ptxas info    : Function properties for k1
 *   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 *   ptxas info    : Used 12 registers, used 1 barriers, 256 bytes smem
 *
 * "Function properties" may name a non-entry (noinline) function; the
 * "Used ..." line always belongs to the last entry function compiled.
 */
#include "worker/compile/logtrim.h"

#include <errno.h>
#include <stddef.h>
#include <sys/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOGTRIM_NOTE_RESERVE 96
#define WITHHELD_ERROR                                                                   \
        "(withheld): error: a diagnostic located in a file that is neither the submission " \
        "nor a CUDA toolkit header was withheld\n"
#define WITHHELD_OTHER                                                                   \
        "(withheld): a diagnostic located in a file that is neither the submission nor a " \
        "CUDA toolkit header was withheld\n"

typedef struct Line {
        const char *p;
        size_t len;
} Line;

typedef struct Block {
        size_t first, count;   /* lines */
        bool error;
        bool withheld;
        bool blank_after;
} Block;

typedef struct Buf {
        char *p;
        size_t len, cap;
} Buf;

static int buf_add(Buf *b, const char *s, size_t n)
{
        if (b->len + n + 1 > b->cap) {
                size_t cap = b->cap ? b->cap : 256;
                char *p;
                while (cap < b->len + n + 1)
                        cap *= 2;
                p = realloc(b->p, cap);
                if (!p)
                        return -ENOMEM;
                b->p = p;
                b->cap = cap;
        }
        memcpy(b->p + b->len, s, n);
        b->len += n;
        b->p[b->len] = '\0';
        return 0;
}

static bool starts(const char *p, size_t len, const char *prefix)
{
        size_t n = strlen(prefix);
        return len >= n && memcmp(p, prefix, n) == 0;
}

/* Does [@p, @p + @len) hold @needle? (memmem without its nonnull contract: @p may be NULL at 0.) */
bool logtrim_has(const char *p, size_t len, const char *needle)
{
        size_t n = strlen(needle);
        for (size_t i = 0; i + n <= len; i++)
                if (memcmp(p + i, needle, n) == 0)
                        return true;
        return false;
}

static bool is_blank(const Line *l)
{
        for (size_t i = 0; i < l->len; i++)
                if (l->p[i] != ' ' && l->p[i] != '\t' && l->p[i] != '\r')
                        return false;
        return true;
}

/* "ptxas info    : ...", "ptxas         .  ...", nvJitLink's "info    : ..." */
static bool is_ptxas_info(const Line *l)
{
        size_t i;

        if (starts(l->p, l->len, "ptxas info") || starts(l->p, l->len, "info    :"))
                return true;
        if (!starts(l->p, l->len, "ptxas "))
                return false;
        for (i = 5; i < l->len && l->p[i] == ' '; i++)
                ;
        return i < l->len && l->p[i] == '.';
}

/*
 * A diagnostic header "FILE(LINE): ...": returns the length of FILE, or 0.
 * The first "(digits): " decides, so a file name cannot smuggle a trusted
 * name after a parenthesis.
 */
static size_t header_file_len(const Line *l)
{
        for (size_t i = 1; i < l->len; i++) {
                size_t j = i + 1;
                if (l->p[i] != '(')
                        continue;
                while (j < l->len && l->p[j] >= '0' && l->p[j] <= '9')
                        j++;
                if (j > i + 1 && j + 2 < l->len && l->p[j] == ')' && l->p[j + 1] == ':' &&
                    l->p[j + 2] == ' ')
                        return i;
        }
        return 0;
}

static bool is_error_line(const Line *l)
{
        return logtrim_has(l->p, l->len, "error") && !logtrim_has(l->p, l->len, "error detected") &&
               !logtrim_has(l->p, l->len, "errors detected");
}

static bool file_trusted(const char *file, size_t len, const LogtrimConfig *cfg)
{
        for (size_t i = 0; i < cfg->n_source_names; i++)
                if (len == strlen(cfg->source_names[i]) && memcmp(file, cfg->source_names[i], len) == 0)
                        return true;
        for (size_t i = 0; i < cfg->n_trusted; i++) {
                size_t n = strlen(cfg->trusted_prefixes[i]);
                if (n > 0 && len > n && memcmp(file, cfg->trusted_prefixes[i], n) == 0 &&
                    !logtrim_has(file, len, ".."))
                        return true;
        }
        return false;
}

/**
 * logtrim_utf8_prefix() - length of the longest prefix of @p[0..len) that is
 * whole, valid UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF)
 */
size_t logtrim_utf8_prefix(const unsigned char *p, size_t len)
{
        size_t i = 0;

        while (i < len) {
                unsigned char c = p[i];
                size_t n;
                if (c < 0x80)
                        n = 1;
                else if (c >= 0xc2 && c <= 0xdf)
                        n = 2;
                else if (c >= 0xe0 && c <= 0xef)
                        n = 3;
                else if (c >= 0xf0 && c <= 0xf4)
                        n = 4;
                else
                        return i;
                if (i + n > len)
                        return i;
                for (size_t k = 1; k < n; k++)
                        if ((p[i + k] & 0xc0) != 0x80)
                                return i;
                if (n == 3 && ((c == 0xe0 && p[i + 1] < 0xa0) || (c == 0xed && p[i + 1] > 0x9f)))
                        return i;
                if (n == 4 && ((c == 0xf0 && p[i + 1] < 0x90) || (c == 0xf4 && p[i + 1] > 0x8f)))
                        return i;
                i += n;
        }
        return i;
}

/* Append @p[0..len) replacing every byte that breaks UTF-8 with '?'. */
static int buf_add_utf8(Buf *b, const char *p, size_t len)
{
        int r;

        while (len > 0) {
                size_t ok = logtrim_utf8_prefix((const unsigned char *)p, len);
                r = buf_add(b, p, ok);
                if (r != 0)
                        return r;
                p += ok;
                len -= ok;
                if (len > 0) {
                        r = buf_add(b, "?", 1);
                        if (r != 0)
                                return r;
                        p++;
                        len--;
                }
        }
        return 0;
}

static int render_block(const Block *bl, const Line *lines, bool last, Buf *out)
{
        int r = 0;

        if (bl->withheld) {
                const char *msg = bl->error ? WITHHELD_ERROR : WITHHELD_OTHER;
                r = buf_add(out, msg, strlen(msg));
        } else {
                for (size_t i = 0; i < bl->count && r == 0; i++) {
                        const Line *l = &lines[bl->first + i];
                        r = buf_add_utf8(out, l->p, l->len);
                        if (r == 0)
                                r = buf_add(out, "\n", 1);
                }
        }
        if (r == 0 && bl->blank_after && !last)
                r = buf_add(out, "\n", 1);
        return r;
}

/* @raw's lines (views into it, without their CR LF), less ptxas's info
 * lines, as a new array in *@ret_lines. Return: 0 or -ENOMEM. */
static int split_lines(const char *raw, Line **ret_lines, size_t *ret_n)
{
        Line *lines = NULL;
        size_t n_lines = 0, cap_lines = 0;

        for (const char *p = raw; *p;) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t)(nl - p) : strlen(p);
                Line l = { p, len };
                p += len + (nl ? 1 : 0);
                if (len > 0 && l.p[len - 1] == '\r')
                        l.len--;
                if (is_ptxas_info(&l))
                        continue;
                if (n_lines == cap_lines) {
                        size_t cap = cap_lines ? cap_lines * 2 : 64;
                        Line *n = realloc(lines, cap * sizeof(Line));
                        if (!n) {
                                free(lines);
                                return -ENOMEM;
                        }
                        lines = n;
                        cap_lines = cap;
                }
                lines[n_lines++] = l;
        }
        *ret_lines = lines;
        *ret_n = n_lines;
        return 0;
}

/*
 * Group @lines into @blocks (room for @n_lines): a diagnostic and its
 * indented continuation lines; a block that names an untrusted file is
 * withheld. *@ret_first_error: the first error's block, or (size_t)-1.
 * Return: the number of blocks.
 */
static size_t group_blocks(const Line *lines, size_t n_lines, const LogtrimConfig *cfg, Block *blocks,
                           size_t *ret_first_error)
{
        size_t n_blocks = 0, first_error = (size_t)-1;

        for (size_t i = 0; i < n_lines; i++) {
                const Line *l = &lines[i];
                size_t flen;
                bool indented;
                if (is_blank(l)) {
                        if (n_blocks > 0)
                                blocks[n_blocks - 1].blank_after = true;
                        continue;
                }
                indented = l->p[0] == ' ' || l->p[0] == '\t';
                /*
                 * Indented lines continue the block; after a blank line they still
                 * belong to a withheld diagnostic (whatever NVRTC echoes of a file
                 * goes with it).
                 */
                if (indented && n_blocks > 0 &&
                    (!blocks[n_blocks - 1].blank_after || blocks[n_blocks - 1].withheld)) {
                        blocks[n_blocks - 1].count = i - blocks[n_blocks - 1].first + 1;
                        blocks[n_blocks - 1].blank_after = false;
                        continue;
                }
                Block *b = &blocks[n_blocks++];
                b->first = i;
                b->count = 1;
                b->error = is_error_line(l);
                flen = header_file_len(l);
                if (flen > 0 && !file_trusted(l->p, flen, cfg))
                        b->withheld = true;
                if (b->error && first_error == (size_t)-1)
                        first_error = n_blocks - 1;
        }
        *ret_first_error = first_error;
        return n_blocks;
}

/**
 * logtrim_clean() - the client's view of a raw compiler log
 * @raw:           the log from NVRTC or nvJitLink (may be NULL or empty)
 * @cfg:           source name, trusted header prefixes, byte budget; borrowed
 * @ret_log:       on success, a new NUL-terminated UTF-8 string (free())
 * @ret_truncated: on success, whether blocks were dropped for the budget
 *
 * Return: 0 or -ENOMEM.
 */
int logtrim_clean(const char *raw, const LogtrimConfig *cfg, char **ret_log, bool *ret_truncated)
{
        Line *lines = NULL;
        Block *blocks = NULL;
        size_t n_lines = 0, n_blocks = 0, first_error = (size_t)-1;
        size_t *order = NULL, total, budget;
        Buf out = { 0 }, all = { 0 };
        bool truncated = false;
        int r = 0;

        if (!raw)
                raw = "";
        r = split_lines(raw, &lines, &n_lines);
        if (r != 0)
                goto out;

        blocks = calloc(n_lines ? n_lines : 1, sizeof(Block));
        order = calloc(n_lines ? n_lines : 1, sizeof(size_t));
        if (!blocks || !order) {
                r = -ENOMEM;
                goto out;
        }
        n_blocks = group_blocks(lines, n_lines, cfg, blocks, &first_error);
        /* Trailing blank lines say nothing. */
        if (n_blocks > 0)
                blocks[n_blocks - 1].blank_after = false;

        /* Order: the first error's block, then the rest as they came. */
        {
                size_t k = 0;
                if (first_error != (size_t)-1)
                        order[k++] = first_error;
                for (size_t i = 0; i < n_blocks; i++)
                        if (i != first_error)
                                order[k++] = i;
        }
        /* A moved block keeps a blank line after it when others follow. */
        if (first_error != (size_t)-1 && first_error != 0 && n_blocks > 1)
                blocks[first_error].blank_after = true;
        if (first_error == n_blocks - 1 && n_blocks > 1)
                blocks[first_error - 1].blank_after = false;

        for (size_t i = 0; i < n_blocks; i++) {
                r = render_block(&blocks[order[i]], lines, i + 1 == n_blocks, &all);
                if (r != 0)
                        goto out;
        }
        total = all.len;
        if (total <= cfg->cap) {
                out = all;
                all = (Buf){ 0 };
                if (!out.p) {
                        r = buf_add(&out, "", 0);
                        if (r != 0)
                                goto out;
                }
                goto done;
        }

        truncated = true;
        budget = cfg->cap > LOGTRIM_NOTE_RESERVE ? cfg->cap - LOGTRIM_NOTE_RESERVE : 0;
        {
                size_t i, more_errors = 0;
                char note[LOGTRIM_NOTE_RESERVE];
                for (i = 0; i < n_blocks; i++) {
                        Buf one = { 0 };
                        r = render_block(&blocks[order[i]], lines, i + 1 == n_blocks, &one);
                        if (r != 0) {
                                free(one.p);
                                goto out;
                        }
                        if (out.len + one.len <= budget) {
                                r = buf_add(&out, one.p, one.len);
                        } else if (out.len == 0) {
                                /* Even the first block is too long: keep its head. */
                                size_t n = logtrim_utf8_prefix((const unsigned char *)one.p, budget);
                                r = buf_add(&out, one.p, n);
                                if (r == 0)
                                        r = buf_add(&out, "\n", 1);
                                i++;
                                free(one.p);
                                break;
                        } else {
                                free(one.p);
                                break;
                        }
                        free(one.p);
                        if (r != 0)
                                goto out;
                }
                for (; i < n_blocks; i++)
                        if (blocks[order[i]].error)
                                more_errors++;
                snprintf(note, sizeof(note), "... (%zu more bytes, %zu more errors)\n",
                         total > out.len ? total - out.len : 0, more_errors);
                r = buf_add(&out, note, strlen(note));
                if (r != 0)
                        goto out;
        }
done:
        *ret_log = out.p;
        out.p = NULL;
        *ret_truncated = truncated;
out:
        free(out.p);
        free(all.p);
        free(lines);
        free(blocks);
        free(order);
        return r;
}

/* The index of @name's entry in @ks, added when new; -1 on -ENOMEM. */
static ssize_t ptxas_get(PtxasKernel **ks, size_t *n, size_t *cap, const char *name, size_t len)
{
        PtxasKernel *k;

        for (size_t i = 0; i < *n; i++)
                if (strlen((*ks)[i].name) == len && memcmp((*ks)[i].name, name, len) == 0)
                        return (ssize_t)i;
        if (*n == *cap) {
                size_t c = *cap ? *cap * 2 : 8;
                PtxasKernel *p = realloc(*ks, c * sizeof(PtxasKernel));
                if (!p)
                        return -1;
                *ks = p;
                *cap = c;
        }
        k = &(*ks)[*n];
        k->name = strndup(name, len);
        if (!k->name)
                return -1;
        k->registers = k->barriers = k->smem = k->stack_frame = -1;
        k->spill_stores = k->spill_loads = k->stack = -1;
        return (ssize_t)(*n)++;
}

/* Read "N what" items separated by commas into @k. */
static void ptxas_items(PtxasKernel *k, const char *p, size_t len)
{
        static const struct {
                const char *what;
                size_t field;
        } items[] = {
                { "registers", offsetof(PtxasKernel, registers) },
                { "barriers", offsetof(PtxasKernel, barriers) },
                { "bytes smem", offsetof(PtxasKernel, smem) },
                { "bytes stack frame", offsetof(PtxasKernel, stack_frame) },
                { "bytes spill stores", offsetof(PtxasKernel, spill_stores) },
                { "bytes spill loads", offsetof(PtxasKernel, spill_loads) },
                { "bytes cumulative stack size", offsetof(PtxasKernel, stack) },
        };
        const char *end = p + len;

        while (p < end) {
                const char *comma = memchr(p, ',', (size_t)(end - p));
                const char *e = comma ? comma : end;
                int64_t v = 0;
                bool digits = false;
                while (p < e && (*p == ' ' || *p == '.'))
                        p++;
                if (starts(p, (size_t)(e - p), "Used "))
                        p += 5;
                else if (starts(p, (size_t)(e - p), "used "))
                        p += 5;
                while (p < e && *p >= '0' && *p <= '9' && v < INT64_MAX / 10) {
                        v = v * 10 + (*p++ - '0');
                        digits = true;
                }
                while (p < e && *p == ' ')
                        p++;
                if (digits)
                        for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++)
                                if ((size_t)(e - p) == strlen(items[i].what) &&
                                    memcmp(p, items[i].what, (size_t)(e - p)) == 0)
                                        *(int64_t *)((char *)k + items[i].field) = v;
                p = comma ? comma + 1 : end;
        }
}

/**
 * logtrim_parse_ptxas() - the per-function ptxas -v report in a raw log
 * @raw:         the raw log; borrowed
 * @ret_kernels: on success, a new array (logtrim_ptxas_free()); NULL when empty
 * @ret_n:       on success, its length
 *
 * Return: 0 or -ENOMEM.
 */
int logtrim_parse_ptxas(const char *raw, PtxasKernel **ret_kernels, size_t *ret_n)
{
        PtxasKernel *ks = NULL;
        ssize_t entry = -1, props = -1;
        size_t n = 0, cap = 0;
        int r = 0;

        for (const char *p = raw ? raw : ""; *p;) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t)(nl - p) : strlen(p);
                Line l = { p, len };
                const char *body, *colon, *end = l.p + l.len;
                size_t blen;
                p += len + (nl ? 1 : 0);
                if (!starts(l.p, l.len, "ptxas") || !is_ptxas_info(&l))
                        continue;
                colon = memchr(l.p, ':', l.len);
                if (!starts(l.p, l.len, "ptxas info") || !colon) {
                        /* "ptxas         .     0 bytes stack frame, ..." */
                        body = memchr(l.p, '.', l.len);
                        if (props >= 0 && body)
                                ptxas_items(&ks[props], body + 1, (size_t)(end - body - 1));
                        continue;
                }
                body = colon + 1;
                while (body < end && *body == ' ')
                        body++;
                blen = (size_t)(end - body);
                if (starts(body, blen, "Compiling entry function '")) {
                        const char *name = body + strlen("Compiling entry function '");
                        const char *q = memchr(name, '\'', (size_t)(end - name));
                        if (!q || q == name)
                                continue;
                        entry = ptxas_get(&ks, &n, &cap, name, (size_t)(q - name));
                        props = -1;
                        if (entry < 0) {
                                r = -ENOMEM;
                                goto out;
                        }
                } else if (starts(body, blen, "Function properties for ")) {
                        const char *name = body + strlen("Function properties for ");
                        size_t nlen = (size_t)(end - name);
                        if (nlen > 0 && name[0] == '\'') {
                                name++;
                                nlen--;
                        }
                        while (nlen > 0 && (name[nlen - 1] == ':' || name[nlen - 1] == '\'' ||
                                            name[nlen - 1] == ' '))
                                nlen--;
                        if (nlen == 0)
                                continue;
                        props = ptxas_get(&ks, &n, &cap, name, nlen);
                        if (props < 0) {
                                r = -ENOMEM;
                                goto out;
                        }
                } else if (starts(body, blen, "Used ")) {
                        ssize_t k = entry >= 0 ? entry : props;
                        if (k >= 0)
                                ptxas_items(&ks[k], body, blen);
                }
        }
        *ret_kernels = ks;
        *ret_n = n;
        ks = NULL;
        n = 0;
out:
        logtrim_ptxas_free(ks, n);
        return r;
}

/** logtrim_find_ptxas() - the entry for @name, or NULL; borrowed. */
const PtxasKernel *logtrim_find_ptxas(const PtxasKernel *kernels, size_t n, const char *name)
{
        for (size_t i = 0; i < n && name; i++)
                if (strcmp(kernels[i].name, name) == 0)
                        return &kernels[i];
        return NULL;
}

/** logtrim_ptxas_free() - free an array from logtrim_parse_ptxas(); accepts NULL. */
void logtrim_ptxas_free(PtxasKernel *kernels, size_t n)
{
        if (!kernels)
                return;
        for (size_t i = 0; i < n; i++)
                free(kernels[i].name);
        free(kernels);
}
