/* Unit tests for common/expr.c: precedence, functions, every error class. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/expr.h"
#include "common/limits.h"
#include "common/testcheck.h"

static json_t *params;

static void ok(const char *text, int64_t want)
{
        int64_t v = -12345;
        char msg[256];
        int r = expr_eval(text, params, &v, msg, sizeof(msg));

        if (r != 0 || v != want) {
                fprintf(stderr, "expr '%s': r=%d v=%" PRId64 " want %" PRId64 " (%s)\n", text, r,
                        v, want, msg);
                failures++;
        }
}

static void bad(const char *text, int want_code, const char *want_msg)
{
        int64_t v = 777;
        char msg[256];
        int r = expr_eval(text, params, &v, msg, sizeof(msg));

        if (r != want_code || v != 777 || (want_msg && strcmp(msg, want_msg) != 0)) {
                fprintf(stderr, "expr '%.60s': r=%d (want %d) msg '%s' (want '%s')\n", text, r,
                        want_code, msg, want_msg ? want_msg : "*");
                failures++;
        }
}

int main(void)
{
        char msg[256], *big;
        int64_t v;

        params = json_pack("{s:I, s:I, s:I, s:I, s:I}", "N", (json_int_t)1000, "B", (json_int_t)7,
                           "D", (json_int_t)33, "Big", (json_int_t)INT64_MAX,
                           "Min", (json_int_t)INT64_MIN);

        /* literals, names, precedence, associativity */
        ok("0", 0);
        ok(" 42 ", 42);
        ok("9223372036854775807", INT64_MAX);
        ok("N", 1000);
        ok("1 + 2 * 3", 7);
        ok("(1 + 2) * 3", 9);
        ok("10 - 4 - 3", 3);
        ok("100 / 10 / 5", 2);
        ok("2 * 3 % 4", 2);
        ok("B * D", 231);
        ok("N*N*N", 1000000000);
        /* unary minus */
        ok("-5", -5);
        ok("--5", 5);
        ok("-B * 2", -14);
        ok("3 - -2", 5);
        ok("-(B + 1)", -8);
        /* division truncates, modulo follows C */
        ok("7 / 2", 3);
        ok("-7 / 2", -3);
        ok("7 % 3", 1);
        ok("-7 % 3", -1);
        /* functions */
        ok("ceil_div(N, 256)", 4);
        ok("ceil_div(1024, 256)", 4);
        ok("ceil_div(1025, 256)", 5);
        ok("ceil_div(-7, 2)", -3);
        ok("ceil_div(7, -2)", -3);
        ok("ceil_div(-7, -2)", 4);
        ok("min(B, D)", 7);
        ok("max(B, D) * 2", 66);
        ok("max(min(B, D), ceil_div(D, B))", 7);
        ok("ceil_div( B * D , 256 )", 1);
        ok("Min", INT64_MIN);
        ok("-9223372036854775807 - 1", INT64_MIN);

        /* errors: names */
        bad("Q", EXPR_E_UNKNOWN, "unknown param 'Q'");
        bad("N + Q * 2", EXPR_E_UNKNOWN, "unknown param 'Q'");
        bad("pow(N, 2)", EXPR_E_UNKNOWN, "unknown function 'pow' (known: ceil_div, min, max)");
        /* errors: overflow */
        bad("N*N*N*N*N*N*N", EXPR_E_OVERFLOW, "overflow in 'N*N*N*N*N*N*N'");
        bad("Big + 1", EXPR_E_OVERFLOW, "overflow in 'Big + 1'");
        bad("2 + Big * 2", EXPR_E_OVERFLOW, "overflow in 'Big * 2'");
        bad("-Min", EXPR_E_OVERFLOW, "overflow in '-Min'");
        bad("Min - 1", EXPR_E_OVERFLOW, "overflow in 'Min - 1'");
        bad("Min / -1", EXPR_E_OVERFLOW, "overflow in 'Min / -1'");
        bad("Min % -1", EXPR_E_OVERFLOW, "overflow in 'Min % -1'");
        bad("ceil_div(Min, -1)", EXPR_E_OVERFLOW, "overflow in 'ceil_div(Min, -1)'");
        bad("9223372036854775808", EXPR_E_OVERFLOW, "overflow in literal '9223372036854775808'");
        /* errors: division by zero */
        bad("N / 0", EXPR_E_DIVZERO, "division by zero in 'N / 0'");
        bad("N % (B - 7)", EXPR_E_DIVZERO, "modulo by zero in 'N % (B - 7)'");
        bad("ceil_div(N, 0)", EXPR_E_DIVZERO, "division by zero in 'ceil_div(N, 0)'");
        /* errors: syntax */
        bad("", EXPR_E_SYNTAX, "empty expression");
        bad("   ", EXPR_E_SYNTAX, "empty expression");
        bad("1 +", EXPR_E_SYNTAX,
            "syntax error in '1 +': expected a number, a param name or '(' at the end");
        bad("(1 + 2", EXPR_E_SYNTAX, "syntax error in '(1 + 2': expected ')' at the end");
        bad("1 + 2)", EXPR_E_SYNTAX,
            "syntax error in '1 + 2)' at offset 5 (')'): unbalanced ')'");
        bad("N N", EXPR_E_SYNTAX, "syntax error in 'N N' at offset 2 ('N'): expected an operator");
        bad("2N", EXPR_E_SYNTAX,
            "syntax error in '2N' at offset 1 ('N'): a number runs into a name");
        bad("+3", EXPR_E_SYNTAX, NULL);
        bad("1.5", EXPR_E_SYNTAX, NULL);
        bad("min(1)", EXPR_E_SYNTAX, NULL);
        bad("min(1, 2, 3)", EXPR_E_SYNTAX, NULL);
        bad("N ** 2", EXPR_E_SYNTAX, NULL);
        /* errors: limits */
        bad("(((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))))))", EXPR_E_TOO_LONG,
            "expression nested deeper than 32 levels");
        ok("((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))", 1); /* 32 deep */
        bad("---------------------------------1", EXPR_E_TOO_LONG, NULL);
        bad("min(1,min(1,min(1,min(1,min(1,min(1,min(1,min(1,min(1,min(1,min(1,min(1,min(1,min(1,"
            "min(1,min(1,min(1,min(1,min(1,min(1,min(1,min(1,min(1,min(1,min(1,min(1,min(1,min(1,"
            "min(1,min(1,min(1,min(1,min(1,1)))))))))))))))))))))))))))))))))",
            EXPR_E_TOO_LONG, NULL);
        big = malloc(LIMIT_EXPR_BYTES + 2);
        memset(big, '1', LIMIT_EXPR_BYTES + 1);
        big[LIMIT_EXPR_BYTES + 1] = '\0';
        bad(big, EXPR_E_TOO_LONG, "expression is 1025 bytes long; the limit is 1024");
        /* exactly at the limit: 1+1+...+1 */
        for (int i = 0; i < LIMIT_EXPR_BYTES; i++)
                big[i] = i % 2 ? '+' : '1';
        big[LIMIT_EXPR_BYTES - 1] = '1';
        big[LIMIT_EXPR_BYTES] = '\0';
        ok(big, LIMIT_EXPR_BYTES / 2 - 1 + 11); /* ...+1+11 */
        free(big);

        /* expr_eval_json */
        {
                json_t *s = json_string("ceil_div(N, 3)"), *r = json_real(1.5), *i = json_integer(5);
                CHECK(expr_eval_json(i, params, &v, msg, sizeof(msg)) == 0 && v == 5);
                json_decref(i);
                CHECK(expr_eval_json(s, params, &v, msg, sizeof(msg)) == 0 && v == 334);
                CHECK(expr_eval_json(r, params, &v, msg, sizeof(msg)) == EXPR_E_SYNTAX);
                CHECK(strcmp(msg, "expected an integer or an expression string") == 0);
                json_decref(s);
                json_decref(r);
        }
        /* expr_check: names only, no arithmetic */
        CHECK(expr_check("N / 0 + Big * Big", params, msg, sizeof(msg)) == 0);
        CHECK(expr_check("N + X", params, msg, sizeof(msg)) == EXPR_E_UNKNOWN);
        CHECK(strcmp(msg, "unknown param 'X'") == 0);
        CHECK(expr_check("N +", params, msg, sizeof(msg)) == EXPR_E_SYNTAX);
        CHECK(expr_check("1", NULL, msg, sizeof(msg)) == 0);
        CHECK(expr_eval("N", NULL, &v, NULL, 0) == EXPR_E_UNKNOWN);

        json_decref(params);
        if (failures) {
                fprintf(stderr, "%d failure(s)\n", failures);
                return 1;
        }
        printf("expr: all tests passed\n");
        return 0;
}
