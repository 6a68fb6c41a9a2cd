/*
 * merge_scan - the facts a merged compile needs of one source (see
 * merge_scan.h), gathered from the scanner's tokens.
 *
 * File scope is followed through braces: an `extern "C" {` block and an
 * anonymous namespace keep it (their names are file-scope names), every
 * other brace (a body, a class, a named namespace, an initializer) leaves
 * it until it closes. At file scope a name is recorded where a declaration
 * names something: before `(` (a function), before `;` `,` `=` `[` or a
 * single `:` (a variable, a type, a base list), before `{` (a class, a
 * named namespace). That over-approximates (a template's parameter, a
 * macro's invocation): every recorded name is only probed against the
 * global scope, and a name also found there compiles the source alone.
 */
#include "worker/compile/merge_scan.h"

#include <stdlib.h>
#include <string.h>

static void alone(MergeScan *ms, const char *why)
{
        if (ms->f->mergeable) {
                ms->f->mergeable = false;
                ms->f->why = why;
        }
}

void merge_scan_refuse(MergeScan *ms, const char *why)
{
        if (ms->f)
                alone(ms, why);
}

static bool word_is(const char *t, size_t n, const char *w)
{
        return strlen(w) == n && memcmp(t, w, n) == 0;
}

static bool in_list(const char *t, size_t n, const char *const *list)
{
        for (; *list; list++)
                if (word_is(t, n, *list))
                        return true;
        return false;
}

/* Words that name no declaration of their own: keywords and CUDA's qualifiers. */
static const char *const keywords[] = {
        "void", "bool", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "auto",
        "const", "volatile", "static", "inline", "extern", "struct", "class", "union", "typename", "template",
        "typedef", "constexpr", "namespace", "public", "private", "protected", "virtual", "explicit",
        "friend", "mutable", "register", "thread_local", "final", "override", "__global__", "__device__",
        "__host__", "__constant__", "__shared__", "__managed__", "__forceinline__", "__noinline__",
        "__inline__", "__restrict__", "__restrict", "restrict", "__grid_constant__", "size_t", NULL,
};

/* C++'s keywords: a source that #defines one (static_assert, sizeof, struct...) is alone. */
static const char *const cxx_keywords[] = {
        "alignas", "alignof", "asm", "auto", "bool", "break", "case", "catch", "char", "char8_t", "char16_t",
        "char32_t", "class", "concept", "const", "consteval", "constexpr", "constinit", "const_cast", "continue",
        "co_await", "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
        "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto", "if", "inline",
        "int", "long", "mutable", "namespace", "new", "noexcept", "nullptr", "operator", "private", "protected",
        "public", "register", "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
        "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local", "throw", "true",
        "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
        "wchar_t", "while", "defined", NULL,
};

/* Words followed by a parenthesised argument that is not a declaration's. */
static const char *const attributes[] = {
        "__launch_bounds__", "__attribute__", "__align__", "alignas", "__declspec", "decltype",
        "__maxnreg__", "__cluster_dims__", "noexcept", "sizeof", "alignof", "static_assert",
        "__builtin_align__", "throw", NULL,
};

/* Identifiers that see the file, the function or the program around a source, or reach past
 * it, wherever they stand (in a macro too): a source naming one is compiled alone. */
static const char *const banned[] = {
        "__FILE__", "__FILE_NAME__", "__BASE_FILE__", "__COUNTER__", "__func__", "__FUNCTION__",
        "__PRETTY_FUNCTION__", "_Pragma", "__pragma", "friend", "__builtin_FILE", "__builtin_FUNCTION",
        "__builtin_source_location", NULL,
};

static bool banned_ident(MergeScan *ms, const char *t, size_t n)
{
        if (in_list(t, n, banned) || (n >= 5 && memcmp(t, "__kvg", 5) == 0)) {
                alone(ms, "an identifier that sees past the source (__FILE__, __func__, _Pragma, friend, __kvg...)");
                return true;
        }
        return false;
}

static bool is_macro(const MergeScan *ms, const char *t, size_t n)
{
        for (size_t i = 0; i < ms->f->n_macros; i++)
                if (strlen(ms->f->macros[i]) == n && memcmp(ms->f->macros[i], t, n) == 0)
                        return true;
        return false;
}

/* Add [@t, @t + @len) to the list @v of @n, unless there; past @cap the source is alone. */
static void push_name(MergeScan *ms, char ***v, size_t *n, const char *t, size_t len, size_t cap)
{
        char **nv;

        for (size_t i = 0; i < *n; i++)
                if (strlen((*v)[i]) == len && memcmp((*v)[i], t, len) == 0)
                        return;
        if (*n >= cap) {
                alone(ms, "more names than a merged compile follows");
                return;
        }
        nv = realloc(*v, (*n + 1) * sizeof(*nv));
        if (!nv || !(nv[*n] = strndup(t, len))) {
                if (nv)
                        *v = nv;
                alone(ms, "out of memory");
                return;
        }
        *v = nv;
        (*n)++;
}

static bool in_c_block(const MergeScan *ms)
{
        return ms->depth > 0 && ms->c_block[ms->depth - 1];
}

static bool file_scope(const MergeScan *ms)
{
        return ms->opaque == 0 && ms->paren == 0 && !ms->attr_parens && ms->angle == 0;
}

static void record(MergeScan *ms, const char *t, size_t n, bool c_linkage)
{
        MergeFacts *f = ms->f;
        MergeName *v;

        if (in_list(t, n, keywords))
                return;
        if ((n >= 9 && memcmp(t, "__builtin", 9) == 0) || (n >= 4 && memcmp(t, "__nv", 4) == 0) ||
            (n >= 6 && memcmp(t, "__cuda", 6) == 0)) {
                alone(ms, "a file-scope name the compiler or the toolkit reserves (__builtin*, __nv*, __cuda*)");
                return;
        }
        for (size_t i = 0; i < ms->n_tmpl_used; i++)
                if (strlen(ms->tmpl_used[i]) == n && memcmp(ms->tmpl_used[i], t, n) == 0) {
                        /* alone, a template's unqualified call finds it by ADL (for a global type);
                         * in a namespace it would not */
                        alone(ms, "a name declared after a template that uses it");
                        return;
                }
        for (size_t i = 0; i < f->n_names; i++)
                if (strlen(f->names[i].name) == n && memcmp(f->names[i].name, t, n) == 0) {
                        f->names[i].c_linkage |= c_linkage;
                        return;
                }
        if (f->n_names >= MERGE_NAMES_MAX) {
                alone(ms, "more file-scope names than a merged compile probes");
                return;
        }
        v = realloc(f->names, (f->n_names + 1) * sizeof(*v));
        if (!v) {
                alone(ms, "out of memory");
                return;
        }
        f->names = v;
        v[f->n_names].name = strndup(t, n);
        v[f->n_names].c_linkage = c_linkage;
        if (!v[f->n_names].name) {
                alone(ms, "out of memory");
                return;
        }
        f->n_names++;
}

/* Record @name as declared here (with C linkage inside extern "C"), unless it stands in an initializer. */
static void record_here(MergeScan *ms, const char *name)
{
        if (!ms->in_init)
                record(ms, name, strlen(name), ms->c_pending || in_c_block(ms));
}

static void record_prev(MergeScan *ms)
{
        if (ms->prev == MERGE_TOK_IDENT)
                record_here(ms, ms->prev_ident);
}

/* The name before a `:` is a declaration's unless the next token is a second `:`
 * (a qualified name); @next_colon says which. */
static void flush_colon(MergeScan *ms, bool next_colon)
{
        if (!ms->colon_pending)
                return;
        ms->colon_pending = false;
        if (!next_colon)
                record_here(ms, ms->colon_ident);
}

/* A file-scope declaration ended (`;`, or the `}` of its body). */
static void end_declaration(MergeScan *ms)
{
        ms->in_template = false;
        ms->c_pending = false;
        ms->in_init = false;
        ms->template_pending = false;
}

void merge_scan_directive(MergeScan *ms, const char *name, size_t len)
{
        if (!ms->f)
                return;
        ms->dir = word_is(name, len, "define") ? MERGE_DIR_DEFINE : MERGE_DIR_OTHER;
        ms->define_braces = 0;
        ms->define_at = 0;
        ms->cond_line = word_is(name, len, "if") || word_is(name, len, "ifdef") || word_is(name, len, "ifndef") ||
                        word_is(name, len, "elif") || word_is(name, len, "elifdef") || word_is(name, len, "elifndef");
        if (word_is(name, len, "include")) {
                if (ms->code_seen || ms->directive_seen)
                        alone(ms, "an #include after code or another directive");
                return;
        }
        if (word_is(name, len, "pragma"))
                return; /* merge_scan_pragma() decides */
        ms->directive_seen = true;
        if (word_is(name, len, "if") || word_is(name, len, "ifdef") || word_is(name, len, "ifndef"))
                ms->cond_depth++;
        else if (word_is(name, len, "endif"))
                ms->cond_depth--;
        else if (word_is(name, len, "undef"))
                alone(ms, "#undef");
        else if (word_is(name, len, "line") || len == 0)
                alone(ms, "#line or a line marker");
}

void merge_scan_include(MergeScan *ms, const char *header, size_t len)
{
        MergeFacts *f = ms->f;
        size_t have;
        char *v;

        if (!f)
                return;
        have = f->includes ? strlen(f->includes) : 0;
        v = realloc(f->includes, have + len + 2);
        if (!v) {
                alone(ms, "out of memory");
                return;
        }
        memcpy(v + have, header, len);
        v[have + len] = '\n';
        v[have + len + 1] = '\0';
        f->includes = v;
}

void merge_scan_pragma(MergeScan *ms, const char *word, size_t len)
{
        if (!ms->f)
                return;
        if (word_is(word, len, "once"))
                return;
        ms->directive_seen = true;
        if (!word_is(word, len, "unroll") && !word_is(word, len, "nounroll"))
                alone(ms, "a #pragma other than unroll and once");
}

void merge_scan_newline(MergeScan *ms)
{
        if (!ms->f)
                return;
        if (ms->dir == MERGE_DIR_DEFINE && ms->define_braces != 0)
                alone(ms, "a macro whose braces do not balance");
        ms->dir = MERGE_DIR_NONE;
}

static void define_token(MergeScan *ms, int kind, const char *t, size_t n)
{
        MergeFacts *f = ms->f;

        if (ms->define_at++ == 0 && kind == MERGE_TOK_IDENT) {
                if (in_list(t, n, cxx_keywords))
                        alone(ms, "a macro named like a keyword");
                push_name(ms, &f->macros, &f->n_macros, t, n, MERGE_MACROS_MAX);
                return;
        }
        if (kind == MERGE_TOK_PUNCT && t[0] == '#')
                alone(ms, "# or ## in a macro (a stringified or pasted name)");
        if (kind == MERGE_TOK_IDENT && (word_is(t, n, "extern") || word_is(t, n, "using") || word_is(t, n, "namespace")))
                alone(ms, "extern, using or namespace in a macro");
        if (kind == MERGE_TOK_IDENT)
                (void)banned_ident(ms, t, n);
        if (kind == MERGE_TOK_PUNCT && t[0] == '{')
                ms->define_braces++;
        if (kind == MERGE_TOK_PUNCT && t[0] == '}' && --ms->define_braces < 0)
                ms->define_braces = -1000; /* never balances again */
}

static void open_brace(MergeScan *ms)
{
        bool fs = file_scope(ms), transparent = false, c = in_c_block(ms);

        if (ms->cond_depth > 0)
                alone(ms, "a brace inside #if");
        if (ms->paren > 0 && ms->opaque == 0)
                alone(ms, "a brace inside parentheses at file scope");
        if (fs) {
                if (ms->prev == MERGE_TOK_IDENT && !ms->in_init)
                        record_prev(ms);
                if (ms->c_pending && ms->prev == MERGE_TOK_LITERAL) {
                        transparent = c = true; /* extern "C" { */
                        ms->c_pending = false;
                } else if (ms->ns_pending && !ms->ns_named) {
                        transparent = true;     /* namespace { */
                        alone(ms, "an anonymous namespace (an unused entity is warned of alone, not in a namespace)");
                }
                ms->ns_pending = false;
        }
        if (ms->depth >= MERGE_DEPTH_MAX) {
                alone(ms, "braces nested too deeply to follow");
                return;
        }
        ms->transparent[ms->depth] = transparent;
        ms->c_block[ms->depth] = c;
        ms->depth++;
        if (!transparent)
                ms->opaque++;
}

static void close_brace(MergeScan *ms)
{
        if (ms->cond_depth > 0)
                alone(ms, "a brace inside #if");
        if (ms->depth == 0) {
                alone(ms, "a } without its {");
                return;
        }
        ms->depth--;
        if (!ms->transparent[ms->depth] && --ms->opaque == 0 && ms->paren == 0 && !ms->in_init)
                end_declaration(ms); /* a function's body, or a class before its `;` */
        else if (ms->transparent[ms->depth])
                end_declaration(ms);
}

static void punct(MergeScan *ms, char ch)
{
        bool fs = file_scope(ms);

        if (ms->colon_pending) {
                flush_colon(ms, ch == ':');
                if (ch == ':') { /* `::`: a qualified name, not a declaration's */
                        ms->prev = MERGE_TOK_PUNCT;
                        ms->prev_punct = ':';
                        return;
                }
        }
        switch (ch) {
        case '(':
                if (fs && !ms->in_init) {
                        if (ms->prev == MERGE_TOK_IDENT && in_list(ms->prev_ident, strlen(ms->prev_ident), attributes)) {
                                ms->attr_parens = true;
                                ms->attr_paren_base = ms->paren;
                        } else if (ms->prev == MERGE_TOK_IDENT &&
                                   in_list(ms->prev_ident, strlen(ms->prev_ident), keywords)) {
                                alone(ms, "a parenthesised declarator at file scope");
                        } else if (ms->prev == MERGE_TOK_IDENT) {
                                record_prev(ms);
                        } else {
                                alone(ms, "a parenthesis after something other than a name at file scope");
                        }
                }
                ms->paren++;
                break;
        case ')':
                if (--ms->paren < 0) {
                        alone(ms, "a ) without its (");
                        ms->paren = 0;
                }
                if (ms->attr_parens && ms->paren == ms->attr_paren_base)
                        ms->attr_parens = false;
                break;
        case '{':
                open_brace(ms);
                break;
        case '}':
                close_brace(ms);
                break;
        case '<':
                if (ms->opaque == 0 && ms->paren == 0 && ms->template_pending)
                        ms->angle++;
                break;
        case '>':
                if (ms->opaque == 0 && ms->paren == 0 && ms->angle > 0 && --ms->angle == 0)
                        ms->template_pending = false;
                break;
        case ';':
                if (fs) {
                        record_prev(ms); /* after `using namespace std`, the keyword `namespace`: nothing */
                        end_declaration(ms);
                }
                break;
        case ',':
                if (fs) {
                        record_prev(ms);
                        ms->in_init = false;
                }
                break;
        case '=':
                if (fs) {
                        record_prev(ms);
                        ms->in_init = true;
                }
                break;
        case '[':
                if (fs)
                        record_prev(ms);
                ms->bracket++;
                break;
        case ']':
                if (ms->bracket > 0)
                        ms->bracket--;
                break;
        case ':':
                if (fs && ms->prev == MERGE_TOK_IDENT && !ms->in_init) {
                        memcpy(ms->colon_ident, ms->prev_ident, sizeof(ms->colon_ident));
                        ms->colon_pending = true;
                }
                break;
        default:
                break;
        }
        ms->prev = MERGE_TOK_PUNCT;
        ms->prev_punct = ch;
}

/* `using namespace std;` ends well; anything else after `using namespace` is refused. */
static void using_punct(MergeScan *ms, char ch)
{
        if (ms->using_state == 2 && ch == ';')
                ms->f->uses_std = true;
        else
                alone(ms, "a using-directive of a namespace other than std");
        ms->using_state = 0;
}

void merge_scan_token(MergeScan *ms, int kind, const char *t, size_t n)
{
        if (!ms->f)
                return;
        if (ms->dir == MERGE_DIR_DEFINE) {
                define_token(ms, kind, t, n);
                return;
        }
        if (ms->dir != MERGE_DIR_NONE) {
                /* the rest of #if, #error, #include, #pragma lines */
                if (kind == MERGE_TOK_IDENT && !banned_ident(ms, t, n) && ms->cond_line)
                        push_name(ms, &ms->f->cond_names, &ms->f->n_cond_names, t, n, MERGE_MACROS_MAX);
                return;
        }
        ms->code_seen = true;
        if (kind == MERGE_TOK_PUNCT) {
                ms->after_extern = false;
                if (ms->using_state)
                        using_punct(ms, t[0]);
                punct(ms, t[0]);
                return;
        }
        flush_colon(ms, false);
        if (kind == MERGE_TOK_LITERAL) {
                if (ms->using_state)
                        alone(ms, "a using-directive of a namespace other than std");
                if (ms->after_extern && !word_is(t, n, "\"C\""))
                        alone(ms, "extern \"C++\" or another linkage");
                if (ms->after_extern && word_is(t, n, "\"C\"")) {
                        if (file_scope(ms))
                                ms->c_pending = true;
                        else
                                alone(ms, "extern \"C\" inside a body or a class");
                }
                ms->after_extern = false;
                ms->prev = MERGE_TOK_LITERAL;
                return;
        }
        ms->after_extern = false;
        if (kind != MERGE_TOK_IDENT) {
                ms->prev = MERGE_TOK_OTHER;
                return;
        }
        if (n >= MERGE_NAME_BYTES) {
                alone(ms, "an identifier too long to follow");
                return;
        }
        if (banned_ident(ms, t, n))
                return;
        if (ms->using_state == 1 && word_is(t, n, "std")) {
                ms->using_state = 2;
                return;
        } else if (ms->using_state) {
                alone(ms, "a using-directive of a namespace other than std");
        }
        if (file_scope(ms) && ms->bracket == 0 && !ms->in_init && is_macro(ms, t, n))
                alone(ms, "a macro of its own where a declaration stands at file scope");
        if (file_scope(ms)) {
                if (word_is(t, n, "operator"))
                        alone(ms, "an operator declared at file scope");
                else if (word_is(t, n, "enum"))
                        alone(ms, "an enum at file scope");
                else if (word_is(t, n, "extern"))
                        ms->after_extern = true;
                else if (word_is(t, n, "template"))
                        ms->template_pending = ms->in_template = true;
                else if (word_is(t, n, "static"))
                        alone(ms, "static at file scope (an unused one is warned of alone, not in a namespace)");
                else if (word_is(t, n, "namespace") && ms->prev == MERGE_TOK_IDENT &&
                         word_is(ms->prev_ident, strlen(ms->prev_ident), "using")) {
                        ms->using_state = 1;
                } else if (word_is(t, n, "namespace") && ms->prev == MERGE_TOK_IDENT &&
                           word_is(ms->prev_ident, strlen(ms->prev_ident), "inline")) {
                        alone(ms, "an inline namespace");
                } else if (word_is(t, n, "namespace")) {
                        ms->ns_pending = true;
                        ms->ns_named = false;
                } else if (ms->ns_pending)
                        ms->ns_named = true;
        }
        if (ms->in_template && ms->opaque > 0)
                push_name(ms, &ms->tmpl_used, &ms->n_tmpl_used, t, n, MERGE_TMPL_USED_MAX);
        memcpy(ms->prev_ident, t, n);
        ms->prev_ident[n] = '\0';
        ms->prev = MERGE_TOK_IDENT;
}

void merge_scan_finish(MergeScan *ms)
{
        MergeFacts *f = ms->f;

        if (!f)
                return;
        merge_scan_newline(ms);
        if (ms->code_seen && !(ms->prev == MERGE_TOK_PUNCT && (ms->prev_punct == ';' || ms->prev_punct == '}')))
                alone(ms, "a last declaration that does not end");
        if (ms->c_pending || ms->in_init || ms->template_pending || ms->colon_pending)
                alone(ms, "a last declaration that does not end");
        merge_scan_release(ms);
        if (ms->depth != 0 || ms->paren != 0)
                alone(ms, "braces or parentheses left open");
        if (ms->cond_depth != 0)
                alone(ms, "an #if left open");
        for (size_t i = 0; i < f->n_names; i++) {
                for (size_t m = 0; m < f->n_macros; m++)
                        if (strcmp(f->names[i].name, f->macros[m]) == 0)
                                alone(ms, "a file-scope name that is also its own macro");
                for (size_t m = 0; m < f->n_cond_names && f->names[i].c_linkage; m++)
                        if (strcmp(f->names[i].name, f->cond_names[m]) == 0)
                                alone(ms, "an #if on one of its extern \"C\" names (renamed when merged)");
        }
        if (ms->using_state)
                alone(ms, "a using-directive left open");
        if (!f->includes && !(f->includes = strdup("")))
                alone(ms, "out of memory");
}

void merge_scan_release(MergeScan *ms)
{
        for (size_t i = 0; i < ms->n_tmpl_used; i++)
                free(ms->tmpl_used[i]);
        free(ms->tmpl_used);
        ms->tmpl_used = NULL;
        ms->n_tmpl_used = 0;
}

void merge_facts_clear(MergeFacts *f)
{
        if (!f)
                return;
        free(f->includes);
        for (size_t i = 0; i < f->n_names; i++)
                free(f->names[i].name);
        free(f->names);
        for (size_t i = 0; i < f->n_macros; i++)
                free(f->macros[i]);
        free(f->macros);
        for (size_t i = 0; i < f->n_cond_names; i++)
                free(f->cond_names[i]);
        free(f->cond_names);
        memset(f, 0, sizeof(*f));
}
