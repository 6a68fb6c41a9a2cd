/*
 * group - the merged program's text, the probe program's, and the split of
 * the merged log (see group.h).
 */
#include "worker/compile/group.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GROUP_REMARK "Remark: The warnings can be suppressed with \"-diag-suppress <warning-number>\""

void group_member_ns(GroupMember *m, uint32_t tag, size_t i)
{
        snprintf(m->ns, sizeof(m->ns), "__kvg%08x_%zu", (unsigned)tag, i);
}

static void put_includes(FILE *f, const char *includes, unsigned *line)
{
        for (const char *p = includes; p && *p;) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t)(nl - p) : strlen(p);
                fprintf(f, "#include <%.*s>\n", (int)len, p);
                (*line)++;
                p += len + (nl != NULL);
        }
}

/* The text of a memstream (its buffer is set only when it is closed), or NULL. */
static char *close_text(FILE *f, char **buf)
{
        if (fclose(f) != 0) {
                free(*buf);
                return NULL;
        }
        return *buf;
}

/*
 * group_probe_source() - the program that asks the global scope, after the
 * members' headers and the prelude, about each member's file-scope names
 * and macros: for a name N, `#ifdef N #error` (a macro of that name), then
 * `using ::N;` (an error when nothing is named N) and `namespace x = ::N;`
 * (an error unless N is a namespace); for a macro only the first.
 * @ret_probes: what each question's lines are (malloc)
 *
 * Return: the source (malloc), or NULL when out of memory or when the
 * members ask more than GROUP_PROBE_NAMES_MAX questions.
 */
char *group_probe_source(const char *includes, const GroupMember *m, size_t n, GroupProbe **ret_probes,
                         size_t *ret_n)
{
        size_t total = 0, k = 0, size = 0;
        GroupProbe *p;
        unsigned line = 1;
        char *buf = NULL;
        FILE *f;

        for (size_t i = 0; i < n; i++)
                total += m[i].facts->n_names + m[i].facts->n_macros;
        if (total > GROUP_PROBE_NAMES_MAX)
                return NULL;
        p = calloc(total ? total : 1, sizeof(*p));
        f = p ? open_memstream(&buf, &size) : NULL;
        if (!f) {
                free(p);
                return NULL;
        }
        put_includes(f, includes, &line);
        for (size_t i = 0; i < n; i++) {
                const MergeFacts *mf = m[i].facts;
                for (size_t j = 0; j < mf->n_names + mf->n_macros; j++, k++) {
                        const char *name = j < mf->n_names ? mf->names[j].name : mf->macros[j - mf->n_names];
                        p[k].member = i;
                        fprintf(f, "#ifdef %s\n#error kevald probe\n#endif\n", name);
                        p[k].err_line = line + 1;
                        line += 3;
                        if (j < mf->n_names) {
                                fprintf(f, "namespace __kvgp_%zu { using ::%s; }\nnamespace __kvgq_%zu = ::%s;\n", k,
                                        name, k, name);
                                p[k].using_line = line;
                                p[k].alias_line = line + 1;
                                line += 2;
                        }
                }
        }
        buf = close_text(f, &buf);
        if (!buf) {
                free(p);
                return NULL;
        }
        *ret_probes = p;
        *ret_n = total;
        return buf;
}

/* The line of a "kernel.cu(L): error" diagnostic, or 0. */
static unsigned error_line(const char *ln, size_t len)
{
        static const char pre[] = "kernel.cu(";
        unsigned v = 0;
        size_t i = sizeof(pre) - 1;

        if (len < i || memcmp(ln, pre, i) != 0)
                return 0;
        while (i < len && ln[i] >= '0' && ln[i] <= '9' && v < 100000000)
                v = v * 10 + (unsigned)(ln[i++] - '0');
        if (i + 9 > len || memcmp(ln + i, "): error", 8) != 0)
                return 0;
        return v;
}

static bool has_line(const unsigned *v, size_t n, unsigned line)
{
        for (size_t i = 0; i < n; i++)
                if (v[i] == line)
                        return true;
        return false;
}

/*
 * group_probe_read() - which members declare a name the global scope has
 * (@present[member] set). A name is absent only when both of its `using`
 * lines failed and its #error did not; an error on any other line (the
 * headers, a line no question asked) makes every member present.
 *
 * Return: 0, or -ENOMEM.
 */
int group_probe_read(const char *log, const GroupProbe *p, size_t n_probes, bool *present, size_t n_members)
{
        size_t n = 0, cap = 64;
        unsigned *err = malloc(cap * sizeof(*err));
        bool stray = false;

        if (!err)
                return -ENOMEM;
        for (const char *ln = log ? log : ""; *ln;) {
                const char *nl = strchr(ln, '\n');
                size_t len = nl ? (size_t)(nl - ln) : strlen(ln);
                unsigned l = error_line(ln, len);
                if (l) {
                        bool asked = false;
                        for (size_t k = 0; k < n_probes && !asked; k++)
                                asked = l == p[k].err_line || l == p[k].using_line || l == p[k].alias_line;
                        stray |= !asked;
                        if (n == cap) {
                                unsigned *v = realloc(err, (cap *= 2) * sizeof(*err));
                                if (!v) {
                                        free(err);
                                        return -ENOMEM;
                                }
                                err = v;
                        }
                        err[n++] = l;
                } else if (len > 0 && ln[0] != ' ' && memmem(ln, len, "): error", 8)) {
                        stray = true; /* an error in a header, or of a form not asked for */
                }
                ln += len + (nl != NULL);
        }
        for (size_t k = 0; k < n_probes; k++) {
                bool macro = has_line(err, n, p[k].err_line);
                bool absent = p[k].using_line ? has_line(err, n, p[k].using_line) && has_line(err, n, p[k].alias_line)
                                              : true;
                if (macro || !absent)
                        present[p[k].member] = true;
        }
        if (stray)
                for (size_t i = 0; i < n_members; i++)
                        present[i] = true;
        free(err);
        return 0;
}

/*
 * group_merged_source() - the merged program of @n members (group.h).
 * Return: the source (malloc), or NULL when out of memory.
 */
char *group_merged_source(const char *includes, const GroupMember *m, size_t n, uint32_t tag)
{
        size_t size = 0;
        unsigned line = 1;
        char *buf = NULL;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        put_includes(f, includes, &line);
        for (size_t i = 0; i < n; i++) {
                const MergeFacts *mf = m[i].facts;
                fputs("#pragma nv_diagnostic push\n", f);
                for (size_t j = 0; j < mf->n_names; j++)
                        if (mf->names[j].c_linkage)
                                fprintf(f, "#define %s %s_%s\n", mf->names[j].name, m[i].ns, mf->names[j].name);
                fprintf(f, "namespace %s {\n#line 1 \"%s.cu\"\n", m[i].ns, m[i].ns);
                fwrite(m[i].src, 1, m[i].len, f);
                fprintf(f, "\n\n}\n#line 1 \"__kvg%08x_w.cu\"\n", (unsigned)tag);
                for (size_t j = 0; j < mf->n_names; j++)
                        if (mf->names[j].c_linkage)
                                fprintf(f, "#undef %s\n", mf->names[j].name);
                for (size_t j = 0; j < mf->n_macros; j++)
                        fprintf(f, "#undef %s\n", mf->macros[j]);
                fputs("#pragma nv_diagnostic pop\n", f);
        }
        return close_text(f, &buf);
}

/* Which member's file a diagnostic's first line is in: its index, or -1. */
static long member_of(const char *ln, size_t len, const GroupMember *m, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                size_t k = strlen(m[i].ns);
                if (len > k + 4 && memcmp(ln, m[i].ns, k) == 0 && memcmp(ln + k, ".cu(", 4) == 0)
                        return (long)i;
        }
        return -1;
}

static bool starts(const char *ln, size_t len, const char *w)
{
        size_t k = strlen(w);
        return len >= k && memcmp(ln, w, k) == 0;
}

/*
 * group_split_log() - each member's diagnostics out of the merged
 * program's raw log, as the raw log of its own compile would have them
 * (in their order, a blank line after each, NVRTC's remark about
 * suppressing warnings after its first warning), with the names still
 * merged (group_unname() writes them back). ptxas lines are left out (the
 * caller reads them from the whole log) and so is NVRTC's closing count of
 * errors.
 * @member_raw: n strings (malloc'ed), or untouched when -EAGAIN
 * @has_error:  n flags: the member has an error of its own
 *
 * Return: 0; -EAGAIN when a diagnostic is in no member's file (every member
 * is then compiled alone); -ENOMEM.
 */
int group_split_log(const char *raw, const GroupMember *m, size_t n, char **member_raw, bool *has_error)
{
        FILE *f[GROUP_MAX] = { 0 };
        char *buf[GROUP_MAX] = { 0 };
        size_t size[GROUP_MAX] = { 0 };
        bool warned[GROUP_MAX] = { false };
        long cur = -2; /* -2: between blocks; -1: a block that belongs to nobody (skipped) */
        bool cur_warning = false;
        int r = 0;

        if (n > GROUP_MAX)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                has_error[i] = false;
                if (!(f[i] = open_memstream(&buf[i], &size[i]))) {
                        r = -ENOMEM;
                        goto out;
                }
        }
        for (const char *ln = raw ? raw : ""; *ln;) {
                const char *nl = strchr(ln, '\n');
                size_t len = nl ? (size_t)(nl - ln) : strlen(ln);
                if (len == 0) {
                        if (cur >= 0) {
                                fputc('\n', f[cur]);
                                if (cur_warning && !warned[cur]) {
                                        fputs(GROUP_REMARK "\n\n", f[cur]);
                                        warned[cur] = true;
                                }
                        }
                        cur = -2;
                } else if (cur >= 0) {
                        fwrite(ln, 1, len, f[cur]);
                        fputc('\n', f[cur]);
                } else if (cur == -2) {
                        long i = member_of(ln, len, m, n);
                        if (i >= 0) {
                                const char *colon = memchr(ln, ':', len);
                                cur = i;
                                cur_warning = colon && starts(colon, len - (size_t)(colon - ln), ": warning");
                                has_error[i] |= colon && starts(colon, len - (size_t)(colon - ln), ": error");
                                fwrite(ln, 1, len, f[cur]);
                                fputc('\n', f[cur]);
                        } else if (starts(ln, len, "ptxas info") || starts(ln, len, "ptxas         .") ||
                                   starts(ln, len, GROUP_REMARK) || strstr(ln, " detected in the compilation of ")) {
                                ; /* a line of its own */
                        } else {
                                r = -EAGAIN;
                                goto out;
                        }
                }
                ln += len + (nl != NULL);
        }
        if (cur >= 0 && cur_warning && !warned[cur])
                fputs("\n" GROUP_REMARK "\n\n", f[cur]);
out:
        for (size_t i = 0; i < n; i++) {
                if (f[i] && fclose(f[i]) != 0 && r == 0)
                        r = -ENOMEM;
                if (r == 0)
                        member_raw[i] = buf[i];
                else
                        free(buf[i]);
        }
        return r;
}

static char *replace_all(const char *text, const char *from, const char *to)
{
        size_t fl = strlen(from), tl = strlen(to), size = 0;
        char *buf = NULL;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        for (const char *p = text;;) {
                const char *q = strstr(p, from);
                if (!q) {
                        fputs(p, f);
                        break;
                }
                fwrite(p, 1, (size_t)(q - p), f);
                fwrite(to, 1, tl, f);
                p = q + fl;
        }
        return close_text(f, &buf);
}

/*
 * group_unname() - @text (a member's log) as its own compile would read:
 * "<ns>.cu" is "kernel.cu", "<ns>::" and the "<ns>_" of renamed names gone.
 * Return: the text (malloc), or NULL when out of memory.
 */
char *group_unname(const char *text, const GroupMember *m)
{
        char file[GROUP_NS_BYTES + 4], qual[GROUP_NS_BYTES + 3], pre[GROUP_NS_BYTES + 2];
        char *a, *b, *c;

        snprintf(file, sizeof(file), "%s.cu", m->ns);
        snprintf(qual, sizeof(qual), "%s::", m->ns);
        snprintf(pre, sizeof(pre), "%s_", m->ns);
        a = replace_all(text, file, "kernel.cu");
        b = a ? replace_all(a, qual, "") : NULL;
        c = b ? replace_all(b, pre, "") : NULL;
        free(a);
        free(b);
        return c;
}
