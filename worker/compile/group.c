/*
 * group - the merged program's text, the probe program's, and the split of
 * the merged log (see group.h).
 */
#include "worker/compile/group.h"
#include "worker/compile/logtrim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GROUP_REMARK "Remark: The warnings can be suppressed with \"-diag-suppress <warning-number>\""

void group_member_ns(GroupMember *m, uint64_t tag, size_t i)
{
        snprintf(m->ns, sizeof(m->ns), "__kvg%016llx_%zu", (unsigned long long)tag, i);
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
 * and macros: for a name N, `#ifdef N #warning` (a macro of that name), then
 * `using ::N;` (an error when nothing is named N) and `namespace x = ::N;`
 * (an error unless N is a namespace), and for a member with `using
 * namespace std;` `using ::std::N;` too; for a macro only the first.
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
                        fprintf(f, "#ifdef %s\n#warning kevald probe\n#endif\n", name);
                        p[k].macro_line = line + 1;
                        line += 3;
                        if (j < mf->n_names) {
                                fprintf(f, "namespace __kvgp_%zu { using ::%s; }\nnamespace __kvgq_%zu = ::%s;\n", k,
                                        name, k, name);
                                p[k].using_line = line;
                                p[k].alias_line = line + 1;
                                line += 2;
                                if (mf->uses_std) {
                                        fprintf(f, "namespace __kvgs_%zu { using ::std::%s; }\n", k, name);
                                        p[k].std_line = line++;
                                }
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

/* The line of a "kernel.cu(L): <kind>" diagnostic (kind "error" or "warning"), or 0. */
static unsigned diag_line(const char *ln, size_t len, const char *kind)
{
        static const char pre[] = "kernel.cu(";
        size_t i = sizeof(pre) - 1, k = strlen(kind);
        unsigned v = 0;

        if (len < i || memcmp(ln, pre, i) != 0)
                return 0;
        while (i < len && ln[i] >= '0' && ln[i] <= '9' && v < 100000000)
                v = v * 10 + (unsigned)(ln[i++] - '0');
        if (i + 3 + k > len || memcmp(ln + i, "): ", 3) != 0 || memcmp(ln + i + 3, kind, k) != 0)
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

static int push_line(unsigned **v, size_t *n, size_t *cap, unsigned line)
{
        if (*n == *cap) {
                unsigned *nv = realloc(*v, (*cap = *cap ? *cap * 2 : 64) * sizeof(**v));
                if (!nv)
                        return -ENOMEM;
                *v = nv;
        }
        (*v)[(*n)++] = line;
        return 0;
}

/*
 * group_probe_read() - which members declare a name the global scope (or std,
 * for a member using it) has (@present[member] set). A name is absent only
 * when both of its `using` lines failed, its std line (if any) failed too,
 * and its #warning did not fire; an error on any other line (the headers, a
 * line no question asked) makes every member present, and so does an error
 * that ended the compile early (the questions after it were not answered).
 *
 * Return: 0, or -ENOMEM.
 */
int group_probe_read(const char *log, const GroupProbe *p, size_t n_probes, bool *present, size_t n_members)
{
        unsigned *err = NULL, *warn = NULL;
        size_t n_err = 0, cap_err = 0, n_warn = 0, cap_warn = 0;
        bool stray = false;
        int r = 0;

        for (const char *ln = log ? log : ""; *ln && r == 0;) {
                const char *nl = strchr(ln, '\n');
                size_t len = nl ? (size_t)(nl - ln) : strlen(ln);
                unsigned l = diag_line(ln, len, "error"), w = diag_line(ln, len, "warning");
                if (l) {
                        bool asked = false;
                        for (size_t k = 0; k < n_probes && !asked; k++)
                                asked = l == p[k].using_line || l == p[k].alias_line || l == p[k].std_line;
                        stray |= !asked;
                        r = push_line(&err, &n_err, &cap_err, l);
                } else if (w) {
                        r = push_line(&warn, &n_warn, &cap_warn, w);
                } else if (len > 0 && ln[0] != ' ' &&
                           (logtrim_has(ln, len, "): error") || logtrim_has(ln, len, "catastrophic") ||
                            logtrim_has(ln, len, "Compilation terminated"))) {
                        stray = true; /* an error in a header, or one that ended the compile */
                }
                ln += len + (nl != NULL);
        }
        for (size_t k = 0; k < n_probes && r == 0; k++) {
                bool macro = has_line(warn, n_warn, p[k].macro_line);
                bool absent = !p[k].using_line ||
                              (has_line(err, n_err, p[k].using_line) && has_line(err, n_err, p[k].alias_line) &&
                               (!p[k].std_line || has_line(err, n_err, p[k].std_line)));
                if (macro || !absent)
                        present[p[k].member] = true;
        }
        if (stray)
                for (size_t i = 0; i < n_members; i++)
                        present[i] = true;
        free(err);
        free(warn);
        return r;
}

/*
 * group_merged_source() - the merged program of @n members (group.h).
 * Return: the source (malloc), or NULL when out of memory.
 */
char *group_merged_source(const char *includes, const GroupMember *m, size_t n, uint64_t tag)
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
                /* its macros and renames gone before the check, which none of them may touch */
                fputs("\n\n", f);
                for (size_t j = 0; j < mf->n_names; j++)
                        if (mf->names[j].c_linkage)
                                fprintf(f, "#undef %s\n", mf->names[j].name);
                for (size_t j = 0; j < mf->n_macros; j++)
                        fprintf(f, "#undef %s\n", mf->macros[j]);
                fprintf(f, "struct %s_end {};\n}\n#line 1 \"__kvg%016llx_w.cu\"\n", m[i].ns, (unsigned long long)tag);
                fprintf(f, "static_assert(sizeof(::%s::%s_end) == 1, \"\");\n", m[i].ns, m[i].ns);
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
