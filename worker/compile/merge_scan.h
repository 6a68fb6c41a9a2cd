/*
 * merge_scan - what the compile worker must know of a CUDA C++ source to
 * compile it in one NVRTC program with others (worker/compile/group.h) and
 * still give it the result it would get alone: the headers it includes
 * (they must all come first), the names it declares at file scope (each
 * probed against the global scope, and those with C linkage renamed), the
 * macros it defines (undefined after it), and whether anything in it could
 * reach past its own part of the program: braces a macro or a conditional
 * could unbalance, #undef, #line, pragmas other than unroll and once,
 * __COUNTER__ and __FILE__, operator declarations, a parenthesis after
 * something that is not a name at file scope. What it cannot follow makes
 * the source "alone" (mergeable false), never merged on a guess.
 *
 * The scanner (compile_scan.c) feeds it the tokens it already separates
 * (identifiers, literals, punctuation, directives); it keeps no state
 * outside the MergeScan it is given.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define MERGE_NAMES_MAX 64   /* file-scope names of one source probed; more: alone */
#define MERGE_MACROS_MAX 64
#define MERGE_NAME_BYTES 96  /* longer identifiers: alone */
#define MERGE_DEPTH_MAX 32   /* nested braces followed at file scope */
#define MERGE_TMPL_USED_MAX 256 /* identifiers in templates followed (more: alone) */

typedef struct MergeName {
        char *name;
        bool c_linkage;      /* declared inside extern "C": renamed in a merged program */
} MergeName;

typedef struct MergeFacts {
        bool mergeable;
        const char *why;     /* static text: why not */
        char *includes;      /* each header name, '\n' after each, in order; "" for none */
        MergeName *names;
        size_t n_names;
        char **macros;
        size_t n_macros;
        char **cond_names;   /* identifiers in #if, #ifdef, #ifndef, #elif lines */
        size_t n_cond_names;
        bool uses_std;       /* `using namespace std;` at file scope: its names are probed in std too */
} MergeFacts;

enum { MERGE_TOK_IDENT, MERGE_TOK_LITERAL, MERGE_TOK_PUNCT, MERGE_TOK_OTHER };

/* The scanner's state for one source; zero it and set .f. */
typedef struct MergeScan {
        MergeFacts *f;
        bool code_seen;            /* a token outside a directive */
        bool directive_seen;       /* a directive other than #include and #pragma once */
        int dir;                   /* the directive of the current line (MERGE_DIR_*) */
        int define_braces;
        size_t define_at;          /* tokens in the current #define (the first is its name) */
        int cond_depth;
        int paren;
        int depth;                 /* braces open at file scope (transparent or not) */
        bool transparent[MERGE_DEPTH_MAX]; /* extern "C" { and namespace { keep file scope */
        bool c_block[MERGE_DEPTH_MAX];
        int opaque;                /* open braces that leave file scope (bodies, named namespaces) */
        int prev;                  /* MERGE_TOK_* of the previous code token */
        char prev_ident[MERGE_NAME_BYTES];
        char prev_punct;
        bool after_extern;         /* the previous token was `extern` */
        bool c_pending;            /* extern "C" seen: the next declaration or block has C linkage */
        bool decl_c;               /* the current file-scope declaration has C linkage */
        bool ns_pending;           /* `namespace` seen, its { not yet */
        bool ns_named;
        bool attr_parens;          /* inside the parentheses of an attribute (__launch_bounds__(...)) */
        int attr_paren_base;
        bool in_init;              /* after a file-scope `=`: names are uses, not declarations */
        bool template_pending;     /* `template` seen: its <...> holds parameters, not names */
        int angle;
        bool colon_pending;        /* a name before `:`, recorded unless a second `:` follows */
        char colon_ident[MERGE_NAME_BYTES];
        int bracket;
        bool in_template;          /* the current file-scope declaration began with `template` */
        char **tmpl_used;          /* identifiers in file-scope templates' bodies so far */
        size_t n_tmpl_used;
        int using_state;           /* after `using namespace` at file scope: 1, then 2 after `std` */
        bool cond_line;            /* the current directive is #if, #ifdef, #ifndef or #elif */
} MergeScan;

enum { MERGE_DIR_NONE, MERGE_DIR_DEFINE, MERGE_DIR_OTHER };

/* Hooks the scanner calls, in source order. */
void merge_scan_directive(MergeScan *ms, const char *name, size_t len);
void merge_scan_include(MergeScan *ms, const char *header, size_t len);
void merge_scan_pragma(MergeScan *ms, const char *word, size_t len);
void merge_scan_token(MergeScan *ms, int kind, const char *text, size_t len);
void merge_scan_newline(MergeScan *ms);
/* The source cannot be followed from here (an unterminated comment). */
void merge_scan_refuse(MergeScan *ms, const char *why);
/* After the last token: the final checks (braces closed, no name also a macro). */
void merge_scan_finish(MergeScan *ms);

/* Free what the scan holds besides the facts (merge_scan_finish() does; a scan cut short calls it). */
void merge_scan_release(MergeScan *ms);
void merge_facts_clear(MergeFacts *f);
