/*
 * jsondump - JSON text with the shortest round-tripping real numbers.
 *
 * jansson prints reals with "%.17g" (JSON_REAL_PRECISION can only lower the
 * digit count for every number at once, losing exactness), so this module
 * dumps at full precision and rewrites each real token afterwards: the
 * shortest precision p whose "%.*g" reads back as the same double. Any
 * decimal of at most DBL_DIG (15) significant digits survives a trip through
 * a double, so when a shorter form exists "%.15g" prints it (trailing zeros
 * dropped); otherwise 16 digits, or 17 (which always do). Only number tokens outside strings that hold '.', 'e'
 * or 'E' are reals; integers and strings pass through untouched, and the
 * result is never longer than jansson's text.
 */
#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsondump.h"

/**
 * jsondump_real() - see jsondump.h ("%g" writes plain digits below an
 * exponent of 15, so 100.0 stays 100.0)
 * Return: the length written (at most 24 bytes plus the NUL), 0 when @size
 * is too small.
 */
size_t jsondump_real(double v, char *out, size_t size)
{
        int n = 0;

        if (!isfinite(v))
                return (size_t)snprintf(out, size, "null");
        /* A decimal of at most DBL_DIG (15) digits that reads back as v is what
         * "%.15g" prints (trailing zeros dropped); else 16 digits, else 17. */
        for (int p = DBL_DIG; p <= 17; p++) {
                n = snprintf(out, size, "%.*g", p, v);
                if (n < 0 || (size_t)n >= size)
                        return 0;
                if (strtod(out, NULL) == v)
                        break;
        }
        if (!strpbrk(out, ".eEn") && (size_t)n + 2 < size) {
                memcpy(out + n, ".0", 3);
                n += 2;
        }
        return (size_t)n;
}

char *jsondump_text(const json_t *json, size_t flags)
{
        char *text = json_dumps(json, flags), *w, *r;
        bool in_string = false;

        if (!text)
                return NULL;
        for (r = w = text; *r;) {
                const char *start = r;
                bool real = false;
                char num[64], out[40];
                size_t len;

                if (in_string) {
                        if (*r == '\\' && r[1])
                                *w++ = *r++;
                        else if (*r == '"')
                                in_string = false;
                        *w++ = *r++;
                        continue;
                }
                if (*r == '"') {
                        in_string = true;
                        *w++ = *r++;
                        continue;
                }
                if (*r != '-' && !isdigit((unsigned char)*r)) {
                        *w++ = *r++;
                        continue;
                }
                while (*r == '-' || *r == '+' || *r == '.' || *r == 'e' || *r == 'E' || isdigit((unsigned char)*r)) {
                        real |= *r == '.' || *r == 'e' || *r == 'E';
                        r++;
                }
                len = (size_t)(r - start);
                if (real && len < sizeof(num)) {
                        memcpy(num, start, len);
                        num[len] = '\0';
                        len = jsondump_real(strtod(num, NULL), out, sizeof(out));
                        if (len > 0 && len <= (size_t)(r - start)) {
                                memcpy(w, out, len);
                                w += len;
                                continue;
                        }
                        len = (size_t)(r - start);
                }
                memmove(w, start, len);
                w += len;
        }
        *w = '\0';
        return text;
}
