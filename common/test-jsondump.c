/*
 * Unit tests for common/jsondump.c: reals come out in their shortest
 * round-tripping form (and read back as the same double), integers and
 * strings that look like numbers are untouched, and the rest of the text is
 * json_dumps()'s.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsondump.h"
#include "common/testcheck.h"

static void check_text(json_t *v, size_t flags, const char *want)
{
        char *got = jsondump_text(v, flags);

        CHECK(got && !strcmp(got, want));
        if (got && strcmp(got, want))
                fprintf(stderr, "got  %s\nwant %s\n", got, want);
        free(got);
        json_decref(v);
}

static void test_reals(void)
{
        static const double vals[] = { 0.1, 0.2 + 0.1, 1.0 / 3, 2.0 / 3, 1e-300, 5e-324, DBL_MAX, -DBL_MIN,
                                       123456789.0, 0.0480, 1.5, 1e21, 4.35, 100.0, -0.0 };
        char buf[40];

        for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
                size_t n = jsondump_real(vals[i], buf, sizeof(buf));
                json_t *back;

                CHECK(n > 0 && n == strlen(buf));
                CHECK(strtod(buf, NULL) == vals[i]);
                /* still a real for a JSON reader */
                back = json_loads(buf, JSON_DECODE_ANY, NULL);
                CHECK(json_is_real(back) && json_real_value(back) == vals[i]);
                json_decref(back);
        }
        jsondump_real(0.1, buf, sizeof(buf));
        CHECK(!strcmp(buf, "0.1"));
        jsondump_real(0.2 + 0.1, buf, sizeof(buf));
        CHECK(!strcmp(buf, "0.30000000000000004"));
        jsondump_real(100.0, buf, sizeof(buf));
        CHECK(!strcmp(buf, "100.0"));
        jsondump_real(1e21, buf, sizeof(buf));
        CHECK(!strcmp(buf, "1e+21"));
        jsondump_real(NAN, buf, sizeof(buf));
        CHECK(!strcmp(buf, "null"));
}

/* The significant digits of a number's text: no sign, point, exponent, leading or trailing zeros. */
static void sig_digits(const char *text, char *out)
{
        const char *p = text;
        char *w = out;

        for (; *p && *p != 'e' && *p != 'E'; p++)
                if (*p >= '0' && *p <= '9' && (w > out || *p != '0'))
                        *w++ = *p;
        while (w > out && w[-1] == '0')
                w--;
        *w = '\0';
}

/* Against a brute-force search of every precision 1..17: as few significant digits, read back exactly. */
static void test_shortest_random(void)
{
        unsigned long long x = 0x9e3779b97f4a7c15ull;
        int bad = 0;

        for (int i = 0; i < 200000 && bad < 5; i++) {
                char got[40], brute[40], a[40], b[40];
                double v;

                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                if (i % 3 == 0)
                        v = (double)(x % 100000) / 100.0;              /* short decimals: 0.01 steps */
                else if (i % 3 == 1)
                        v = (double)(x >> 11) / 9007199254740992.0 * pow(10, (double)(x % 40) - 20);
                else
                        memcpy(&v, &x, sizeof(v));                     /* any bit pattern */
                if (!isfinite(v))
                        continue;
                jsondump_real(v, got, sizeof(got));
                for (int p = 1; p <= 17; p++) {
                        snprintf(brute, sizeof(brute), "%.*g", p, v);
                        if (strtod(brute, NULL) == v)
                                break;
                }
                sig_digits(got, a);
                sig_digits(brute, b);
                if (strtod(got, NULL) != v || strlen(a) > strlen(b) || strcmp(a, b)) {
                        fprintf(stderr, "%.17g: got %s, brute force %s\n", v, got, brute);
                        bad++;
                }
        }
        CHECK(bad == 0);
}

static void test_text(void)
{
        check_text(json_pack("{s:f, s:I, s:s, s:[f, f, i], s:f}", "a", 0.1, "b", (json_int_t)12345678901234,
                             "c", "0.10000000000000001 \"x\\\" 2.5", "d", 4.35, 1.0, -7, "e", -1e-7),
                   JSON_COMPACT | JSON_SORT_KEYS,
                   "{\"a\":0.1,\"b\":12345678901234,\"c\":\"0.10000000000000001 \\\"x\\\\\\\" 2.5\","
                   "\"d\":[4.35,1.0,-7],\"e\":-1e-07}");
        check_text(json_pack("[f]", 0.0480), JSON_INDENT(2), "[\n  0.048\n]");
        check_text(json_real(1.0 / 3), JSON_ENCODE_ANY, "0.3333333333333333");
        check_text(json_string("1.25"), JSON_ENCODE_ANY, "\"1.25\"");
}

int main(void)
{
        test_reals();
        test_shortest_random();
        test_text();
        if (failures) {
                fprintf(stderr, "%d failure(s)\n", failures);
                return 1;
        }
        printf("jsondump: all tests passed\n");
        return 0;
}
