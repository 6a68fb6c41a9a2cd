/*
 * expr - integer expressions over named parameters: + - * / %, unary -,
 * parentheses, ceil_div(a,b), min(a,b), max(a,b), decimal literals. int64,
 * every overflow and division by zero is an error, never UB.
 */
#pragma once

#include <jansson.h>
#include <stdint.h>

enum {
        EXPR_E_SYNTAX = 1,
        EXPR_E_UNKNOWN = 2,   /* unknown identifier or function */
        EXPR_E_OVERFLOW = 3,
        EXPR_E_DIVZERO = 4,
        EXPR_E_TOO_LONG = 5,  /* LIMIT_EXPR_BYTES or LIMIT_EXPR_DEPTH */
};

/**
 * expr_eval() - evaluate @text with @params (object name -> integer)
 * @ret_value: on 0, the value
 * @ret_msg:   on error, a static or @msgbuf message; may be NULL
 * Return: 0 or an EXPR_E_* code.
 */
int expr_eval(const char *text, json_t *params, int64_t *ret_value, char *msgbuf, size_t msglen);
/* A JSON integer or an expression string. Same returns; EXPR_E_SYNTAX for other types. */
int expr_eval_json(json_t *v, json_t *params, int64_t *ret_value, char *msgbuf, size_t msglen);
/* Check syntax and that every identifier is in @names (object); no evaluation. */
int expr_check(const char *text, json_t *names, char *msgbuf, size_t msglen);
