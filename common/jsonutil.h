/*
 * jsonutil - helpers for strict validation of client JSON: JSON pointers
 * (RFC 6901) built while walking a document, a check that an object holds
 * only allowed members, typed getters that fill a SpecError naming the
 * offending field, and the name rule shared by params, buffers and kernels.
 *
 * Every failing helper fills the SpecError and returns SPEC_E_INVALID, so a
 * validator reads `if ((r = jsonutil_get_string(...)) != 0) goto out;`.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/spec.h"

#define JSONUTIL_PTR_BYTES 512

/* Build "@base/@token" into @out (JSONUTIL_PTR_BYTES), escaping ~ and / per RFC 6901. */
void jsonutil_ptr_key(char *out, const char *base, const char *token);
/* Build "@base/@index" into @out. */
void jsonutil_ptr_index(char *out, const char *base, size_t index);

/* Fill @err (may be NULL) and return SPEC_E_INVALID. */
int jsonutil_fail(SpecError *err, const char *ptr, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* Same with a chosen code (SPEC_E_REJECTED). */
int jsonutil_fail_code(int code, SpecError *err, const char *ptr, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* The JSON type's name for messages: "string", "integer", "object", ... */
const char *jsonutil_type_name(const json_t *v);
/* The string member @key of @obj, or @fallback when absent or not a string; borrowed. */
const char *jsonutil_str(const json_t *obj, const char *key, const char *fallback);

/*
 * Check that every member of @obj is listed in @allowed (NULL-terminated).
 * Return: 0 or SPEC_E_INVALID naming the first unknown member.
 */
int jsonutil_check_fields(json_t *obj, const char *ptr, const char *const *allowed, SpecError *err);

/* Does @s match [A-Za-z_][A-Za-z0-9_]* and fit LIMIT_NAME_BYTES? */
bool jsonutil_is_name(const char *s);

/*
 * Typed getters for member @key of @obj; @ptr is the pointer of @obj. With
 * @required false a missing member leaves *ret untouched and returns 0; a
 * member that is present with the wrong type is always an error. Strings
 * are borrowed from @obj, must not hold NUL bytes and fit @max_bytes.
 */
int jsonutil_get_string(json_t *obj, const char *ptr, const char *key, bool required,
                        size_t max_bytes, const char **ret, SpecError *err);
int jsonutil_get_name(json_t *obj, const char *ptr, const char *key, bool required,
                      const char **ret, SpecError *err);
int jsonutil_get_int(json_t *obj, const char *ptr, const char *key, bool required, int64_t min,
                     int64_t max, int64_t *ret, SpecError *err);
int jsonutil_get_number(json_t *obj, const char *ptr, const char *key, bool required,
                        double *ret, SpecError *err);
int jsonutil_get_bool(json_t *obj, const char *ptr, const char *key, bool required, bool *ret,
                      SpecError *err);
/* An array (borrowed) of @min..@max elements. */
int jsonutil_get_array(json_t *obj, const char *ptr, const char *key, bool required, size_t min,
                       size_t max, json_t **ret, SpecError *err);
int jsonutil_get_object(json_t *obj, const char *ptr, const char *key, bool required,
                        json_t **ret, SpecError *err);
/* One of the NULL-terminated @choices; *ret is its index. */
int jsonutil_get_enum(json_t *obj, const char *ptr, const char *key, bool required,
                      const char *const *choices, int *ret, SpecError *err);
