/*
 * bodyscan - a bounded look at a JSON body before jansson parses it (see
 * bodyscan.h). One pass over the text with a fixed stack of max_depth
 * levels; nothing is allocated, so a hostile body costs its own bytes and
 * no more until it has passed. The scan is a lexer, not a validator: it
 * follows brackets, strings (with escapes), keys and scalars, and stops
 * quietly at anything that is not JSON, which the parser then reports.
 *
 * The tree estimate models jansson 2.14's allocations on glibc from above
 * (malloc's chunk overhead included): an object with its hashtable, each
 * member's key and pair, an array with its table, each element's slot,
 * a string's struct and copy, a number's struct; true, false and null are
 * shared singletons.
 */
#include "server/http/bodyscan.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/limits.h"
#include "server/http/problem.h"

#define COST_OBJECT 240
#define COST_MEMBER 80           /* plus the key's bytes */
#define COST_ARRAY 140
#define COST_ELEMENT 16
#define COST_STRING 96           /* plus the string's bytes */
#define COST_NUMBER 48
#define STACK_MAX 64

typedef struct Level {
        bool object;
        bool batch;              /* the top object's "submissions" array */
        size_t index;            /* elements begun (array) */
        size_t key_off, key_len; /* the current member's key, raw (object) */
} Level;

typedef struct Scan {
        const char *text;
        const BodyScanLimits *lim;
        Level st[STACK_MAX];
        int depth;               /* open containers; st[] holds the first STACK_MAX */
        int r;                   /* the first breach, or 0 */
        bool expect_key;
        BodyScan *out;
} Scan;

/* The pointer of the value now beginning: one token per open container. */
static void make_pointer(const Scan *sc, char *out)
{
        out[0] = 0;
        for (int d = 0; d < sc->depth && d < STACK_MAX; d++) {
                const Level *l = &sc->st[d];

                if (l->object) {
                        char key[256];
                        size_t n = l->key_len < sizeof(key) - 1 ? l->key_len : sizeof(key) - 1;

                        memcpy(key, sc->text + l->key_off, n);   /* raw: escapes are kept as written */
                        key[n] = 0;
                        jsonutil_ptr_key(out, out, key);
                } else
                        jsonutil_ptr_index(out, out, l->index ? l->index - 1 : 0);
        }
}

static void breach(Scan *sc, int r)
{
        if (sc->r)
                return;
        sc->r = r;
        make_pointer(sc, sc->out->pointer);
}

/* A value begins in the current container; @cost is its own. */
static void value_begin(Scan *sc, size_t cost)
{
        Level *top = sc->depth > 0 && sc->depth <= STACK_MAX ? &sc->st[sc->depth - 1] : NULL;

        if (top && !top->object) {
                top->index++;
                cost += COST_ELEMENT;
                if (top->batch && ++sc->out->items > sc->lim->batch_limit && !sc->r) {
                        sc->r = BODYSCAN_E_BATCH;
                        snprintf(sc->out->pointer, sizeof(sc->out->pointer), "/submissions");
                }
        }
        if (sc->r)
                return;
        sc->out->tree_bytes += cost;
        if (sc->out->tree_bytes > sc->lim->tree_bytes)
                breach(sc, BODYSCAN_E_TREE);
}

/* Past a string that opens at @i; returns the index after its closing quote, or 0 if unterminated. */
static size_t string_end(const char *s, size_t n, size_t i)
{
        for (i++; i < n; i++) {
                const char *q = memchr(s + i, '"', n - i);
                size_t bs = 0;

                if (!q)
                        return 0;
                i = (size_t)(q - s);
                while (bs < i && s[i - 1 - bs] == '\\')
                        bs++;
                if (bs % 2 == 0)
                        return i + 1;
        }
        return 0;
}

static bool is_scalar_char(char c)
{
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' ||
               c == '+' || c == '.';
}

/**
 * bodyscan_json() - see bodyscan.h.
 */
int bodyscan_json(const char *text, size_t len, const BodyScanLimits *lim, BodyScan *ret_scan)
{
        Scan sc = { .text = text, .lim = lim, .out = ret_scan };
        size_t i = 0;

        memset(ret_scan, 0, sizeof(*ret_scan));
        while (i < len) {
                char c = text[i];

                /* After a breach only the batch is still counted (an exact count in the answer). */
                if (sc.r && sc.r != BODYSCAN_E_BATCH)
                        break;
                switch (c) {
                case ' ':
                case '\t':
                case '\n':
                case '\r':
                        i++;
                        break;
                case ',':
                        sc.expect_key = sc.depth > 0 && sc.depth <= STACK_MAX && sc.st[sc.depth - 1].object;
                        i++;
                        break;
                case ':':
                        sc.expect_key = false;
                        i++;
                        break;
                case '{':
                case '[':
                        value_begin(&sc, c == '{' ? COST_OBJECT : COST_ARRAY);
                        if (sc.depth >= lim->max_depth && !sc.r)
                                breach(&sc, BODYSCAN_E_DEPTH);
                        if (sc.depth < STACK_MAX) {
                                Level *l = &sc.st[sc.depth];

                                memset(l, 0, sizeof(*l));
                                l->object = c == '{';
                                /* "submissions" of the top object, and only there. */
                                l->batch = c == '[' && sc.depth == 1 && sc.st[0].object &&
                                           sc.st[0].key_len == 11 && !memcmp(text + sc.st[0].key_off, "submissions", 11);
                        }
                        sc.depth++;
                        sc.expect_key = c == '{';
                        i++;
                        break;
                case '}':
                case ']':
                        if (sc.depth == 0)
                                goto out;       /* not JSON */
                        sc.depth--;
                        sc.expect_key = false;
                        i++;
                        break;
                case '"': {
                        size_t end = string_end(text, len, i);

                        if (!end)
                                goto out;       /* unterminated: not JSON */
                        if (sc.expect_key && sc.depth > 0 && sc.depth <= STACK_MAX) {
                                Level *l = &sc.st[sc.depth - 1];

                                l->key_off = i + 1;
                                l->key_len = end - i - 2;
                                sc.expect_key = false;
                                if (!sc.r) {
                                        sc.out->tree_bytes += COST_MEMBER + l->key_len;
                                        if (sc.out->tree_bytes > lim->tree_bytes)
                                                breach(&sc, BODYSCAN_E_TREE);
                                }
                        } else
                                value_begin(&sc, COST_STRING + (end - i - 2));
                        i = end;
                        break;
                }
                default: {
                        size_t j = i;

                        while (j < len && is_scalar_char(text[j]))
                                j++;
                        if (j == i)
                                goto out;       /* not JSON */
                        value_begin(&sc, (c == 't' || c == 'f' || c == 'n') ? 0 : COST_NUMBER);
                        i = j;
                        break;
                }
                }
        }
out:
        return sc.r;
}

/**
 * bodyscan_submissions() - see bodyscan.h.
 */
int bodyscan_submissions(const char *text, size_t len, size_t batch_limit, json_t **ret_problem)
{
        BodyScanLimits lim = {
                .max_depth = LIMIT_JSON_DEPTH,
                .batch_limit = batch_limit,
                .tree_bytes = LIMIT_JSON_TREE_RATIO * len + LIMIT_JSON_TREE_SLACK_BYTES,
        };
        BodyScan scan;
        int r;

        r = bodyscan_json(text, len, &lim, &scan);
        switch (r) {
        case 0:
                return 0;
        case BODYSCAN_E_DEPTH:
                *ret_problem = problem_new(PROBLEM_INVALID, scan.pointer, "JSON nested deeper than %d levels",
                                           LIMIT_JSON_DEPTH);
                break;
        case BODYSCAN_E_BATCH:
                *ret_problem = problem_new(PROBLEM_INVALID, scan.pointer,
                                           "a batch holds at most %zu submissions; this one has %zu", batch_limit,
                                           scan.items);
                break;
        default:
                *ret_problem = problem_new(PROBLEM_BODY_TOO_LARGE, scan.pointer,
                                           "the body holds too many JSON values: parsed, it would take more than "
                                           "%zu bytes (%d per body byte plus %d MiB); send fewer, larger values "
                                           "or split the batch",
                                           lim.tree_bytes, (int)LIMIT_JSON_TREE_RATIO, (int)(LIMIT_JSON_TREE_SLACK_BYTES >> 20));
                break;
        }
        return r;
}
