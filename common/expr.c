/*
 * expr - integer expressions over named parameters (see expr.h).
 *
 * A recursive-descent parser that evaluates as it parses:
 *
 *   expr    := term (('+' | '-') term)*
 *   term    := unary (('*' | '/' | '%') unary)*
 *   unary   := '-' unary | primary
 *   primary := NUMBER | NAME | NAME '(' expr ',' expr ')' | '(' expr ')'
 *
 * Arithmetic is int64 with every overflow checked (__builtin_*_overflow);
 * division truncates toward zero as in C; division or modulo by zero and
 * INT64_MIN / -1 are errors. The nesting depth (unary minus, parentheses and
 * function calls) is bounded by LIMIT_EXPR_DEPTH, the text by
 * LIMIT_EXPR_BYTES, so the recursion is bounded. In check mode names are
 * only looked up, nothing is computed, and arithmetic cannot fail.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/expr.h"
#include "common/limits.h"

typedef struct Parser {
        const char *text;
        const char *p;
        json_t *params;  /* eval: name -> integer; check: names */
        bool check;
        int depth;
        int err;
        char *msg;
        size_t msglen;
} Parser;

static int perr(Parser *ps, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int perr(Parser *ps, int code, const char *fmt, ...)
{
        va_list ap;

        if (ps->err)
                return ps->err;
        ps->err = code;
        if (ps->msg && ps->msglen) {
                va_start(ap, fmt);
                vsnprintf(ps->msg, ps->msglen, fmt, ap);
                va_end(ap);
        }
        return code;
}

static void skip_ws(Parser *ps)
{
        while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
                ps->p++;
}

static bool is_alpha(char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

/* The span [from, to) of the text, for messages. */
static int span_len(const char *from, const char *to)
{
        long n = to - from;

        while (n > 0 && (from[n - 1] == ' ' || from[n - 1] == '\t'))
                n--;
        return n > 100 ? 100 : (int)n;
}

static int syntax(Parser *ps, const char *what)
{
        if (!*ps->p)
                return perr(ps, EXPR_E_SYNTAX, "syntax error in '%.100s': %s at the end", ps->text,
                            what);
        return perr(ps, EXPR_E_SYNTAX, "syntax error in '%.100s' at offset %ld ('%c'): %s",
                    ps->text, (long)(ps->p - ps->text), *ps->p, what);
}

static int parse_expr(Parser *ps, int64_t *ret);

static int binop(Parser *ps, char op, int64_t a, int64_t b, const char *from, int64_t *ret)
{
        int64_t r = 0;

        if (ps->check) {
                *ret = 0;
                return 0;
        }
        switch (op) {
        case '+':
                if (__builtin_add_overflow(a, b, &r))
                        goto overflow;
                break;
        case '-':
                if (__builtin_sub_overflow(a, b, &r))
                        goto overflow;
                break;
        case '*':
                if (__builtin_mul_overflow(a, b, &r))
                        goto overflow;
                break;
        case '/':
        case '%':
        case 'c': /* ceil_div */
                if (b == 0)
                        return perr(ps, EXPR_E_DIVZERO, "%s by zero in '%.*s'",
                                    op == '%' ? "modulo" : "division", span_len(from, ps->p),
                                    from);
                if (a == INT64_MIN && b == -1)
                        goto overflow;
                if (op == '/') {
                        r = a / b;
                } else if (op == '%') {
                        r = a % b;
                } else {
                        r = a / b;
                        if (a % b != 0 && ((a < 0) == (b < 0)))
                                r++;
                }
                break;
        case 'm':
                r = a < b ? a : b;
                break;
        case 'M':
                r = a > b ? a : b;
                break;
        }
        *ret = r;
        return 0;
overflow:
        return perr(ps, EXPR_E_OVERFLOW, "overflow in '%.*s'", span_len(from, ps->p), from);
}

static int parse_number(Parser *ps, int64_t *ret)
{
        const char *from = ps->p;
        int64_t v = 0;

        while (is_digit(*ps->p)) {
                if (__builtin_mul_overflow(v, 10, &v) ||
                    __builtin_add_overflow(v, (int64_t)(*ps->p - '0'), &v)) {
                        while (is_digit(*ps->p))
                                ps->p++;
                        return perr(ps, EXPR_E_OVERFLOW, "overflow in literal '%.*s'",
                                    span_len(from, ps->p), from);
                }
                ps->p++;
        }
        if (is_alpha(*ps->p))
                return syntax(ps, "a number runs into a name");
        *ret = v;
        return 0;
}

static int parse_call(Parser *ps, const char *name, size_t len, const char *from, int64_t *ret)
{
        int64_t a = 0, b = 0;
        char op;
        int r;

        if (len == 8 && memcmp(name, "ceil_div", 8) == 0)
                op = 'c';
        else if (len == 3 && memcmp(name, "min", 3) == 0)
                op = 'm';
        else if (len == 3 && memcmp(name, "max", 3) == 0)
                op = 'M';
        else
                return perr(ps, EXPR_E_UNKNOWN,
                            "unknown function '%.*s' (known: ceil_div, min, max)",
                            (int)(len > 64 ? 64 : len), name);
        ps->p++; /* '(' */
        if ((r = parse_expr(ps, &a)) != 0)
                return r;
        skip_ws(ps);
        if (*ps->p != ',')
                return syntax(ps, "expected ',' between the two arguments");
        ps->p++;
        if ((r = parse_expr(ps, &b)) != 0)
                return r;
        skip_ws(ps);
        if (*ps->p != ')')
                return syntax(ps, "expected ')' after the second argument");
        ps->p++;
        return binop(ps, op, a, b, from, ret);
}

static int parse_primary(Parser *ps, int64_t *ret)
{
        const char *from;
        int r;

        skip_ws(ps);
        from = ps->p;
        if (is_digit(*ps->p))
                return parse_number(ps, ret);
        if (is_alpha(*ps->p)) {
                const char *name = ps->p;
                size_t len;
                char key[LIMIT_EXPR_BYTES + 1];
                json_t *v;

                while (is_alpha(*ps->p) || is_digit(*ps->p))
                        ps->p++;
                len = (size_t)(ps->p - name);
                skip_ws(ps);
                if (*ps->p == '(') {
                        if (++ps->depth > LIMIT_EXPR_DEPTH)
                                return perr(ps, EXPR_E_TOO_LONG,
                                            "expression nested deeper than %d levels",
                                            LIMIT_EXPR_DEPTH);
                        r = parse_call(ps, name, len, from, ret);
                        ps->depth--;
                        return r;
                }
                memcpy(key, name, len);
                key[len] = '\0';
                v = ps->params ? json_object_get(ps->params, key) : NULL;
                if (!v)
                        return perr(ps, EXPR_E_UNKNOWN, "unknown param '%.64s'", key);
                if (ps->check) {
                        *ret = 0;
                        return 0;
                }
                if (!json_is_integer(v))
                        return perr(ps, EXPR_E_UNKNOWN, "param '%.64s' has no integer value",
                                    key);
                *ret = json_integer_value(v);
                return 0;
        }
        if (*ps->p == '(') {
                if (++ps->depth > LIMIT_EXPR_DEPTH)
                        return perr(ps, EXPR_E_TOO_LONG, "expression nested deeper than %d levels",
                                    LIMIT_EXPR_DEPTH);
                ps->p++;
                if ((r = parse_expr(ps, ret)) != 0)
                        return r;
                skip_ws(ps);
                if (*ps->p != ')')
                        return syntax(ps, "expected ')'");
                ps->p++;
                ps->depth--;
                return 0;
        }
        return syntax(ps, "expected a number, a param name or '('");
}

static int parse_unary(Parser *ps, int64_t *ret)
{
        const char *from;
        int64_t v = 0;
        int r;

        skip_ws(ps);
        from = ps->p;
        if (*ps->p != '-')
                return parse_primary(ps, ret);
        if (++ps->depth > LIMIT_EXPR_DEPTH)
                return perr(ps, EXPR_E_TOO_LONG, "expression nested deeper than %d levels",
                            LIMIT_EXPR_DEPTH);
        ps->p++;
        if ((r = parse_unary(ps, &v)) != 0)
                return r;
        ps->depth--;
        return binop(ps, '-', 0, v, from, ret);
}

static int parse_term(Parser *ps, int64_t *ret)
{
        const char *from;
        int64_t a = 0, b = 0;
        int r;

        skip_ws(ps);
        from = ps->p;
        if ((r = parse_unary(ps, &a)) != 0)
                return r;
        for (;;) {
                char op;

                skip_ws(ps);
                op = *ps->p;
                if (op != '*' && op != '/' && op != '%')
                        break;
                ps->p++;
                if ((r = parse_unary(ps, &b)) != 0)
                        return r;
                if ((r = binop(ps, op, a, b, from, &a)) != 0)
                        return r;
        }
        *ret = a;
        return 0;
}

static int parse_expr(Parser *ps, int64_t *ret)
{
        const char *from;
        int64_t a = 0, b = 0;
        int r;

        skip_ws(ps);
        from = ps->p;
        if ((r = parse_term(ps, &a)) != 0)
                return r;
        for (;;) {
                char op;

                skip_ws(ps);
                op = *ps->p;
                if (op != '+' && op != '-')
                        break;
                ps->p++;
                if ((r = parse_term(ps, &b)) != 0)
                        return r;
                if ((r = binop(ps, op, a, b, from, &a)) != 0)
                        return r;
        }
        *ret = a;
        return 0;
}

static int run(const char *text, json_t *params, bool check, int64_t *ret_value, char *msgbuf,
               size_t msglen)
{
        Parser ps = { .text = text, .p = text, .params = params, .check = check,
                      .msg = msgbuf, .msglen = msglen };
        int64_t v = 0;
        size_t len;
        int r;

        if (msgbuf && msglen)
                msgbuf[0] = '\0';
        if (!text)
                return perr(&ps, EXPR_E_SYNTAX, "no expression");
        len = strlen(text);
        if (len > LIMIT_EXPR_BYTES)
                return perr(&ps, EXPR_E_TOO_LONG, "expression is %zu bytes long; the limit is %d",
                            len, LIMIT_EXPR_BYTES);
        skip_ws(&ps);
        if (!*ps.p)
                return perr(&ps, EXPR_E_SYNTAX, "empty expression");
        if ((r = parse_expr(&ps, &v)) != 0)
                return r;
        skip_ws(&ps);
        if (*ps.p)
                return syntax(&ps, *ps.p == ')' ? "unbalanced ')'" : "expected an operator");
        if (ret_value)
                *ret_value = v;
        return 0;
}

/**
 * expr_eval() - evaluate an integer expression
 * @text:      the expression; borrowed
 * @params:    object name -> JSON integer; borrowed; may be NULL (no names)
 * @ret_value: on 0, the value
 * @msgbuf:    on error, receives a message naming the problem; may be NULL
 * Return: 0, EXPR_E_SYNTAX, EXPR_E_UNKNOWN (unknown param or function),
 * EXPR_E_OVERFLOW, EXPR_E_DIVZERO, or EXPR_E_TOO_LONG (length or depth).
 */
int expr_eval(const char *text, json_t *params, int64_t *ret_value, char *msgbuf, size_t msglen)
{
        return run(text, params, false, ret_value, msgbuf, msglen);
}

/**
 * expr_eval_json() - evaluate a JSON integer or an expression string
 * Return: as expr_eval(); EXPR_E_SYNTAX for any other JSON type.
 */
int expr_eval_json(json_t *v, json_t *params, int64_t *ret_value, char *msgbuf, size_t msglen)
{
        if (json_is_integer(v)) {
                if (msgbuf && msglen)
                        msgbuf[0] = '\0';
                *ret_value = json_integer_value(v);
                return 0;
        }
        if (json_is_string(v)) {
                if (strlen(json_string_value(v)) != json_string_length(v)) {
                        if (msgbuf && msglen)
                                snprintf(msgbuf, msglen, "expression contains a NUL character");
                        return EXPR_E_SYNTAX;
                }
                return expr_eval(json_string_value(v), params, ret_value, msgbuf, msglen);
        }
        if (msgbuf && msglen)
                snprintf(msgbuf, msglen, "expected an integer or an expression string");
        return EXPR_E_SYNTAX;
}

/**
 * expr_check() - check syntax and names without evaluating
 * @names: object whose keys are the known names (values ignored); borrowed
 * Return: 0, EXPR_E_SYNTAX, EXPR_E_UNKNOWN, EXPR_E_OVERFLOW (a literal
 * beyond int64) or EXPR_E_TOO_LONG.
 */
int expr_check(const char *text, json_t *names, char *msgbuf, size_t msglen)
{
        return run(text, names, true, NULL, msgbuf, msglen);
}
