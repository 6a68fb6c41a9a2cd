/*
 * jsonutil - strict-validation helpers (see jsonutil.h). Pointers are built
 * into fixed JSONUTIL_PTR_BYTES buffers; a pointer that would not fit is
 * truncated with "..." rather than failing, since it only serves messages.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonutil.h"
#include "common/limits.h"

static void ptr_append(char *out, const char *base, const char *token)
{
        size_t n, cap = JSONUTIL_PTR_BYTES;

        if (out != base)
                snprintf(out, cap, "%s", base ? base : "");
        n = strlen(out);
        if (n + 1 < cap)
                out[n++] = '/';
        for (const char *p = token; *p && n + 3 < cap; p++) {
                if (*p == '~') {
                        out[n++] = '~';
                        out[n++] = '0';
                } else if (*p == '/') {
                        out[n++] = '~';
                        out[n++] = '1';
                } else {
                        out[n++] = *p;
                }
        }
        out[n < cap ? n : cap - 1] = '\0';
}

/**
 * jsonutil_ptr_key() - append an escaped member name to a pointer
 * @out:   JSONUTIL_PTR_BYTES buffer; may equal @base
 * @base:  the parent's pointer ("" for the root)
 * @token: the member name, unescaped
 */
void jsonutil_ptr_key(char *out, const char *base, const char *token)
{
        ptr_append(out, base, token);
}

/**
 * jsonutil_ptr_index() - append an array index to a pointer
 * @out:   JSONUTIL_PTR_BYTES buffer; may equal @base
 * @base:  the parent's pointer
 * @index: the element index
 */
void jsonutil_ptr_index(char *out, const char *base, size_t index)
{
        char tok[24];

        snprintf(tok, sizeof(tok), "%zu", index);
        jsonutil_ptr_key(out, base, tok);
}

static int fail_va(int code, SpecError *err, const char *ptr, const char *fmt, va_list ap)
{
        if (err) {
                snprintf(err->pointer, sizeof(err->pointer), "%s", ptr ? ptr : "");
                vsnprintf(err->message, sizeof(err->message), fmt, ap);
        }
        return code;
}

/**
 * jsonutil_fail() - record a validation error
 * @err: filled when not NULL
 * @ptr: JSON pointer of the offending field
 * Return: SPEC_E_INVALID.
 */
int jsonutil_fail(SpecError *err, const char *ptr, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = fail_va(SPEC_E_INVALID, err, ptr, fmt, ap);
        va_end(ap);
        return r;
}

/**
 * jsonutil_fail_code() - record an error with a chosen outcome code
 * Return: @code.
 */
int jsonutil_fail_code(int code, SpecError *err, const char *ptr, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = fail_va(code, err, ptr, fmt, ap);
        va_end(ap);
        return r;
}

/**
 * jsonutil_type_name() - name of a JSON value's type for messages
 * Return: a static string.
 */
const char *jsonutil_str(const json_t *obj, const char *key, const char *fallback)
{
        const char *v = json_string_value(json_object_get(obj, key));

        return v ? v : fallback;
}

const char *jsonutil_type_name(const json_t *v)
{
        switch (json_typeof(v)) {
        case JSON_OBJECT: return "object";
        case JSON_ARRAY: return "array";
        case JSON_STRING: return "string";
        case JSON_INTEGER: return "integer";
        case JSON_REAL: return "number";
        case JSON_TRUE:
        case JSON_FALSE: return "boolean";
        case JSON_NULL: return "null";
        }
        return "value";
}

/**
 * jsonutil_check_fields() - reject members not in @allowed
 * @obj:     the object; borrowed
 * @ptr:     its pointer
 * @allowed: NULL-terminated list of member names
 * Return: 0 or SPEC_E_INVALID pointing at the first unknown member.
 */
int jsonutil_check_fields(json_t *obj, const char *ptr, const char *const *allowed, SpecError *err)
{
        const char *key;
        json_t *v;
        char p[JSONUTIL_PTR_BYTES];

        json_object_foreach(obj, key, v) {
                bool ok = false;
                for (size_t i = 0; allowed[i]; i++) {
                        if (strcmp(allowed[i], key) == 0) {
                                ok = true;
                                break;
                        }
                }
                if (!ok) {
                        char list[320];
                        size_t n = 0;
                        for (size_t i = 0; allowed[i] && n < sizeof(list); i++)
                                n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s",
                                                      i ? ", " : "", allowed[i]);
                        jsonutil_ptr_key(p, ptr, key);
                        return jsonutil_fail(err, p, "unknown field '%.100s' (allowed: %s)", key,
                                             list);
                }
        }
        return 0;
}

/**
 * jsonutil_is_name() - the identifier rule for params, buffers and kernels
 * Return: true when @s matches [A-Za-z_][A-Za-z0-9_]* and is at most
 * LIMIT_NAME_BYTES bytes long.
 */
bool jsonutil_is_name(const char *s)
{
        size_t n = 0;

        if (!s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
                return false;
        for (; s[n]; n++) {
                char c = s[n];
                if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '_'))
                        return false;
        }
        return n <= LIMIT_NAME_BYTES;
}

/* Look up @key; 1 when present, 0 when absent (error if required). */
static int member(json_t *obj, const char *ptr, const char *key, bool required, json_t **ret_v,
                  char *p, SpecError *err)
{
        jsonutil_ptr_key(p, ptr, key);
        *ret_v = obj ? json_object_get(obj, key) : NULL;
        if (*ret_v)
                return 1;
        if (required)
                return -jsonutil_fail(err, p, "missing required field '%s'", key);
        return 0;
}

/**
 * jsonutil_get_string() - a string member
 * @max_bytes: longest allowed length (bytes, excluding the terminator)
 * @ret:       on success (and presence) the borrowed string
 * Return: 0 or SPEC_E_INVALID.
 */
int jsonutil_get_string(json_t *obj, const char *ptr, const char *key, bool required,
                        size_t max_bytes, const char **ret, SpecError *err)
{
        char p[JSONUTIL_PTR_BYTES];
        json_t *v;
        int r = member(obj, ptr, key, required, &v, p, err);
        size_t len;

        if (r <= 0)
                return -r;
        if (!json_is_string(v))
                return jsonutil_fail(err, p, "'%s' must be a string, not %s", key,
                                     jsonutil_type_name(v));
        len = json_string_length(v);
        if (strlen(json_string_value(v)) != len)
                return jsonutil_fail(err, p, "'%s' must not contain NUL characters", key);
        if (len > max_bytes)
                return jsonutil_fail(err, p, "'%s' is %zu bytes long; the limit is %zu", key, len,
                                     max_bytes);
        *ret = json_string_value(v);
        return 0;
}

/**
 * jsonutil_get_name() - a string member following the name rule
 * Return: 0 or SPEC_E_INVALID.
 */
int jsonutil_get_name(json_t *obj, const char *ptr, const char *key, bool required,
                      const char **ret, SpecError *err)
{
        const char *s = NULL;
        char p[JSONUTIL_PTR_BYTES];
        int r = jsonutil_get_string(obj, ptr, key, required, LIMIT_NAME_BYTES, &s, err);

        if (r || !s)
                return r;
        if (!jsonutil_is_name(s)) {
                jsonutil_ptr_key(p, ptr, key);
                return jsonutil_fail(err, p,
                                     "'%.100s' is not a valid name ([A-Za-z_][A-Za-z0-9_]*)", s);
        }
        *ret = s;
        return 0;
}

/**
 * jsonutil_get_int() - an integer member within [@min, @max]
 * Return: 0 or SPEC_E_INVALID.
 */
int jsonutil_get_int(json_t *obj, const char *ptr, const char *key, bool required, int64_t min,
                     int64_t max, int64_t *ret, SpecError *err)
{
        char p[JSONUTIL_PTR_BYTES];
        json_t *v;
        int r = member(obj, ptr, key, required, &v, p, err);
        int64_t x;

        if (r <= 0)
                return -r;
        if (!json_is_integer(v))
                return jsonutil_fail(err, p, "'%s' must be an integer, not %s", key,
                                     jsonutil_type_name(v));
        x = json_integer_value(v);
        if (x < min || x > max)
                return jsonutil_fail(err, p, "'%s' is %lld; it must be in [%lld, %lld]", key,
                                     (long long)x, (long long)min, (long long)max);
        *ret = x;
        return 0;
}

/**
 * jsonutil_get_number() - a finite number member (integer or real)
 * Return: 0 or SPEC_E_INVALID.
 */
int jsonutil_get_number(json_t *obj, const char *ptr, const char *key, bool required,
                        double *ret, SpecError *err)
{
        char p[JSONUTIL_PTR_BYTES];
        json_t *v;
        int r = member(obj, ptr, key, required, &v, p, err);

        if (r <= 0)
                return -r;
        if (!json_is_number(v))
                return jsonutil_fail(err, p, "'%s' must be a number, not %s", key,
                                     jsonutil_type_name(v));
        if (!isfinite(json_number_value(v)))
                return jsonutil_fail(err, p, "'%s' must be finite", key);
        *ret = json_number_value(v);
        return 0;
}

/**
 * jsonutil_get_bool() - a boolean member
 * Return: 0 or SPEC_E_INVALID.
 */
int jsonutil_get_bool(json_t *obj, const char *ptr, const char *key, bool required, bool *ret,
                      SpecError *err)
{
        char p[JSONUTIL_PTR_BYTES];
        json_t *v;
        int r = member(obj, ptr, key, required, &v, p, err);

        if (r <= 0)
                return -r;
        if (!json_is_boolean(v))
                return jsonutil_fail(err, p, "'%s' must be a boolean, not %s", key,
                                     jsonutil_type_name(v));
        *ret = json_is_true(v);
        return 0;
}

/**
 * jsonutil_get_array() - an array member with @min..@max elements
 * @ret: on success (and presence) the borrowed array
 * Return: 0 or SPEC_E_INVALID.
 */
int jsonutil_get_array(json_t *obj, const char *ptr, const char *key, bool required, size_t min,
                       size_t max, json_t **ret, SpecError *err)
{
        char p[JSONUTIL_PTR_BYTES];
        json_t *v;
        int r = member(obj, ptr, key, required, &v, p, err);
        size_t n;

        if (r <= 0)
                return -r;
        if (!json_is_array(v))
                return jsonutil_fail(err, p, "'%s' must be an array, not %s", key,
                                     jsonutil_type_name(v));
        n = json_array_size(v);
        if (n < min)
                return jsonutil_fail(err, p, "'%s' needs at least %zu element%s", key, min,
                                     min == 1 ? "" : "s");
        if (n > max)
                return jsonutil_fail(err, p, "'%s' has %zu elements; the limit is %zu", key, n,
                                     max);
        *ret = v;
        return 0;
}

/**
 * jsonutil_get_object() - an object member
 * @ret: on success (and presence) the borrowed object
 * Return: 0 or SPEC_E_INVALID.
 */
int jsonutil_get_object(json_t *obj, const char *ptr, const char *key, bool required,
                        json_t **ret, SpecError *err)
{
        char p[JSONUTIL_PTR_BYTES];
        json_t *v;
        int r = member(obj, ptr, key, required, &v, p, err);

        if (r <= 0)
                return -r;
        if (!json_is_object(v))
                return jsonutil_fail(err, p, "'%s' must be an object, not %s", key,
                                     jsonutil_type_name(v));
        *ret = v;
        return 0;
}

/**
 * jsonutil_get_enum() - a string member that is one of @choices
 * @ret: on success (and presence) the index of the choice
 * Return: 0 or SPEC_E_INVALID listing the choices.
 */
int jsonutil_get_enum(json_t *obj, const char *ptr, const char *key, bool required,
                      const char *const *choices, int *ret, SpecError *err)
{
        const char *s = NULL;
        char p[JSONUTIL_PTR_BYTES], list[256] = "";
        size_t n = 0;
        int r = jsonutil_get_string(obj, ptr, key, required, SIZE_MAX, &s, err);

        if (r || !s)
                return r;
        for (int i = 0; choices[i]; i++) {
                if (strcmp(choices[i], s) == 0) {
                        *ret = i;
                        return 0;
                }
                n += (size_t)snprintf(list + n, n < sizeof(list) ? sizeof(list) - n : 0, "%s%s",
                                      i ? ", " : "", choices[i]);
                if (n >= sizeof(list))
                        n = sizeof(list) - 1;
        }
        jsonutil_ptr_key(p, ptr, key);
        return jsonutil_fail(err, p, "'%s' is '%.64s'; it must be one of: %s", key, s, list);
}
