/*
 * jsondump - JSON text as the API answers it: json_dumps() with every real
 * number written in the shortest form that reads back as the same double
 * (0.1, not jansson's 17-digit 0.10000000000000001).
 */
#pragma once

#include <jansson.h>
#include <stddef.h>

/*
 * jsondump_text() - @json as text, as json_dumps(@json, @flags) but with the
 * shortest round-tripping real numbers; @json borrowed
 * Return: a new string the caller frees with free(), or NULL on ENOMEM.
 */
char *jsondump_text(const json_t *json, size_t flags);

/*
 * jsondump_real() - @v in the shortest "%.*g" form that strtod() reads back
 * as @v, with ".0" added where that form looks like an integer (so it stays
 * a real); @out has room for at least 32 bytes. Non-finite values (which
 * jansson never writes) give "null".
 * Return: the length written, 0 when @size is too small.
 */
size_t jsondump_real(double v, char *out, size_t size);
