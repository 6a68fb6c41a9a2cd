/*
 * spec_task - the task document: strict validation (every field known,
 * every limit enforced, every expression evaluated for every shape set),
 * normalization (reference and example sources inlined, defaults filled),
 * and the accessors the library and the HTTP layer use.
 *
 * A Task owns its normalized document; everything else in it points into
 * that document, so a Task is immutable after spec_task_parse() and may be
 * read from any thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/expr.h"
#include "common/jsonutil.h"
#include "common/spec_internal.h"

#define PROVENANCE_FIELDS_MAX 32
#define TASK_LEVEL_MAX 9

/**
 * spec_task_free() - free a Task; NULL is allowed
 */
void spec_task_free(Task *task)
{
        if (!task)
                return;
        for (size_t i = 0; i < task->nshapes; i++)
                json_decref(task->shape_params[i]);
        json_decref(task->doc);
        free(task);
}

/** spec_task_name() - the task's name; borrowed from @task */
const char *spec_task_name(const Task *task)
{
        return task->name;
}

/** spec_task_json() - the normalized task document (sources inline); borrowed */
json_t *spec_task_json(const Task *task)
{
        return task->doc;
}

/** spec_task_reference_source() - the reference CUDA source; NULL when the
 * reference uses library steps only (nothing to compile); borrowed */
const char *spec_task_reference_source(const Task *task)
{
        return task->ref_source;
}

/** spec_task_reference_options() - the reference's compile options; borrowed array */
json_t *spec_task_reference_options(const Task *task)
{
        return json_object_get(json_object_get(task->doc, "reference"), "options");
}

/**
 * spec_task_summary() - the task as listed by GET /v1/tasks
 * Return: a new object {name, title, level, category, params, shapes,
 * provenance, dtypes}, or NULL on allocation failure.
 */
json_t *spec_task_summary(const Task *task)
{
        json_t *d = task->doc, *dtypes = json_array(), *v;
        json_t *sum;

        for (size_t i = 0; dtypes && i < task->nbuffers; i++) {
                const char *name = task->buffer_dtype[i]->name;
                bool seen = false;
                size_t j;
                json_array_foreach(dtypes, j, v)
                        if (!strcmp(json_string_value(v), name))
                                seen = true;
                if (!seen)
                        json_array_append_new(dtypes, json_string(name));
        }
        sum = json_pack("{s:s, s:O, s:I, s:O, s:O, s:O, s:O, s:o}", "name", task->name, "title",
                        json_object_get(d, "title"), "level",
                        (json_int_t)json_integer_value(json_object_get(d, "level")), "category",
                        json_object_get(d, "category") ? json_object_get(d, "category")
                                                       : json_null(),
                        "params", json_object_get(d, "params"), "shapes",
                        json_object_get(d, "shapes"), "provenance",
                        json_object_get(d, "provenance") ? json_object_get(d, "provenance")
                                                         : json_null(),
                        "dtypes", dtypes);
        return sum;
}

/* Read @rel (relative to @base_dir) into a new JSON string. */
static int load_source(const char *base_dir, const char *rel, const char *ptr, json_t **ret,
                       SpecError *err)
{
        char path[4096];
        struct stat st;
        char *buf = NULL;
        ssize_t n;
        size_t got = 0;
        int fd = -1, r;

        if (!base_dir) {
                r = jsonutil_fail(err, ptr,
                                  "'source_file' is only allowed in library tasks; send the text as 'source'");
                goto out;
        }
        if (rel[0] == '\0' || rel[0] == '/' || strstr(rel, "..")) {
                r = jsonutil_fail(err, ptr,
                                  "'source_file' must be a relative path without '..', not '%.200s'",
                                  rel);
                goto out;
        }
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", base_dir, rel) >= sizeof(path)) {
                r = jsonutil_fail(err, ptr, "'source_file' path is too long");
                goto out;
        }
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 || fstat(fd, &st) != 0) {
                r = jsonutil_fail(err, ptr, "cannot read '%.200s': %s", rel, strerror(errno));
                goto out;
        }
        if (!S_ISREG(st.st_mode) || st.st_size > (off_t)LIMIT_SOURCE_BYTES || st.st_size == 0) {
                r = jsonutil_fail(err, ptr,
                                  "'%.200s' must be a non-empty regular file of at most %u bytes",
                                  rel, LIMIT_SOURCE_BYTES);
                goto out;
        }
        buf = malloc((size_t)st.st_size + 1);
        if (!buf) {
                r = -ENOMEM;
                goto out;
        }
        while (got < (size_t)st.st_size) {
                n = read(fd, buf + got, (size_t)st.st_size - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        r = jsonutil_fail(err, ptr, "cannot read '%.200s': %s", rel,
                                          n < 0 ? strerror(errno) : "short read");
                        goto out;
                }
                got += (size_t)n;
        }
        buf[got] = '\0';
        if (strlen(buf) != got) {
                r = jsonutil_fail(err, ptr, "'%.200s' contains a NUL byte", rel);
                goto out;
        }
        *ret = json_stringn(buf, got);
        if (!*ret) {
                r = jsonutil_fail(err, ptr, "'%.200s' is not valid UTF-8", rel);
                goto out;
        }
        r = 0;
out:
        if (fd >= 0)
                close(fd);
        free(buf);
        return r;
}

/*
 * A code section (reference or example): source or source_file, options,
 * name_expressions, scratch, plan. Normalizes @obj in place (it belongs to
 * the Task's document): source inlined, defaults filled, plan normalized.
 */
static int parse_code(Task *t, json_t *obj, const char *ptr, const char *base_dir, bool reference,
                      SpecError *err)
{
        static const char *const fields[] = { "source", "source_file", "options",
                                              "name_expressions", "scratch", "plan", NULL };
        char p[JSONUTIL_PTR_BYTES];
        const char *src = NULL, *file = NULL;
        json_t *source = NULL, *options = NULL, *names = NULL, *scratch = NULL, *plan = NULL, *s;
        bool has_launch = false;
        size_t i;
        int r;

        if ((r = jsonutil_check_fields(obj, ptr, fields, err)) ||
            (r = jsonutil_get_string(obj, ptr, "source", false, LIMIT_SOURCE_BYTES, &src, err)) ||
            (r = jsonutil_get_string(obj, ptr, "source_file", false, 1024, &file, err)))
                goto out;
        if (src && file) {
                jsonutil_ptr_key(p, ptr, "source_file");
                r = jsonutil_fail(err, p, "give 'source' or 'source_file', not both");
                goto out;
        }
        if (file) {
                jsonutil_ptr_key(p, ptr, "source_file");
                if ((r = load_source(base_dir, file, p, &source, err)))
                        goto out;
        } else if (src) {
                if (!src[0]) {
                        jsonutil_ptr_key(p, ptr, "source");
                        r = jsonutil_fail(err, p, "'source' is empty");
                        goto out;
                }
                source = json_incref(json_object_get(obj, "source"));
        }
        jsonutil_ptr_key(p, ptr, "options");
        if ((r = spec_options_validate(json_object_get(obj, "options"), p, &options, err)))
                goto out;
        jsonutil_ptr_key(p, ptr, "name_expressions");
        if ((r = spec_name_exprs_validate(json_object_get(obj, "name_expressions"), p, &names,
                                          err)))
                goto out;
        jsonutil_ptr_key(p, ptr, "scratch");
        if ((r = spec_scratch_validate(t, json_object_get(obj, "scratch"), p, &scratch, err)))
                goto out;
        jsonutil_ptr_key(p, ptr, "plan");
        if (!json_object_get(obj, "plan")) {
                r = jsonutil_fail(err, p, "missing required field 'plan'");
                goto out;
        }
        if ((r = spec_plan_validate(t, json_object_get(obj, "plan"), scratch, reference, names, p,
                                    &plan, err)))
                goto out;
        json_array_foreach(plan, i, s)
                if (json_object_get(s, "kernel"))
                        has_launch = true;
        if (has_launch && !source) {
                jsonutil_ptr_key(p, ptr, "source");
                r = jsonutil_fail(err, ptr, "the plan launches kernels but there is no 'source' or 'source_file'");
                goto out;
        }
        json_object_del(obj, "source_file");
        if (source)
                json_object_set(obj, "source", source);
        json_object_set(obj, "options", options);
        json_object_set(obj, "name_expressions", names);
        json_object_set(obj, "scratch", scratch);
        json_object_set(obj, "plan", plan);
        r = 0;
out:
        json_decref(source);
        json_decref(options);
        json_decref(names);
        json_decref(scratch);
        json_decref(plan);
        return r;
}

static int parse_tolerance(json_t *obj, const char *ptr, const char *key, SpecError *err)
{
        static const char *const fields[] = { "atol", "rtol", "note", NULL };
        char p[JSONUTIL_PTR_BYTES];
        const char *note = NULL;
        json_t *tol = NULL;
        double atol = 0, rtol = 0;
        int r;

        if ((r = jsonutil_get_object(obj, ptr, key, false, &tol, err)) || !tol)
                return r;
        jsonutil_ptr_key(p, ptr, key);
        if ((r = jsonutil_check_fields(tol, p, fields, err)) ||
            (r = jsonutil_get_number(tol, p, "atol", false, &atol, err)) ||
            (r = jsonutil_get_number(tol, p, "rtol", false, &rtol, err)) ||
            (r = jsonutil_get_string(tol, p, "note", false, LIMIT_TASK_TEXT_BYTES, &note, err)))
                return r;
        if (atol < 0 || rtol < 0) {
                jsonutil_ptr_key(p, p, atol < 0 ? "atol" : "rtol");
                return jsonutil_fail(err, p, "tolerances must not be negative");
        }
        return 0;
}

static int parse_init(Task *t, json_t *buf, const DType *d, const char *ptr, SpecError *err)
{
        static const char *const f_normal[] = { "dist", "mean", "std", "offset", "fan_in", NULL };
        static const char *const f_uniform[] = { "dist", "low", "high", "offset", "fan_in",
                                                 NULL };
        static const char *const f_int[] = { "dist", "low", "high", NULL };
        static const char *const f_mixed[] = { "dist", "offset", "fan_in", NULL };
        static const char *const *const f_dist[] = { f_normal, f_uniform, f_int, f_mixed };
        char p[JSONUTIL_PTR_BYTES], pp[JSONUTIL_PTR_BYTES];
        json_t *init = json_object_get(buf, "init");
        double x = 0, a = -1, b = 1;
        int dist = 0, r;

        jsonutil_ptr_key(p, ptr, "init");
        if (!json_is_object(init))
                return jsonutil_fail(err, p, "'init' must be an object, not %s",
                                     jsonutil_type_name(init));
        if ((r = jsonutil_get_enum(init, p, "dist", true, spec_dist_names, &dist, err)) ||
            (r = jsonutil_check_fields(init, p, f_dist[dist], err)) ||
            (r = jsonutil_get_number(init, p, "offset", false, &x, err)))
                return r;
        jsonutil_ptr_key(pp, p, "dist");
        if (d->is_int && dist != 2)
                return jsonutil_fail(err, pp, "%s buffers need the 'int' distribution", d->name);
        if (json_object_get(init, "fan_in")) {
                jsonutil_ptr_key(pp, p, "fan_in");
                if ((r = spec_expr_all(t, json_object_get(init, "fan_in"), pp, "fan_in", 1,
                                       INT64_MAX, NULL, err)))
                        return r;
        }
        switch (dist) {
        case 0: /* normal */
                b = 1;
                if ((r = jsonutil_get_number(init, p, "mean", false, &x, err)) ||
                    (r = jsonutil_get_number(init, p, "std", false, &b, err)))
                        return r;
                if (!(b > 0)) {
                        jsonutil_ptr_key(pp, p, "std");
                        return jsonutil_fail(err, pp, "'std' must be greater than 0");
                }
                break;
        case 1: /* uniform */
                if ((r = jsonutil_get_number(init, p, "low", false, &a, err)) ||
                    (r = jsonutil_get_number(init, p, "high", false, &b, err)))
                        return r;
                if (!(a < b)) {
                        jsonutil_ptr_key(pp, p, "high");
                        return jsonutil_fail(err, pp, "'high' must be greater than 'low'");
                }
                break;
        case 2: { /* int */
                int64_t lo[LIMIT_TASK_SHAPES_MAX], hi[LIMIT_TASK_SHAPES_MAX];
                int64_t min = d->is_int ? d->min : -(1LL << 24);
                int64_t max = d->is_int ? d->max : (1LL << 24);
                json_t *low = json_object_get(init, "low");
                json_int_t zero = 0;
                json_t *zlow = low ? NULL : json_integer(zero);

                jsonutil_ptr_key(pp, p, "low");
                r = spec_expr_all(t, low ? low : zlow, pp, "low", min, max, lo, err);
                json_decref(zlow);
                if (r)
                        return r;
                jsonutil_ptr_key(pp, p, "high");
                if (!json_object_get(init, "high"))
                        return jsonutil_fail(err, pp, "missing required field 'high'");
                if ((r = spec_expr_all(t, json_object_get(init, "high"), pp, "high",
                                       min == INT64_MIN ? min : min + 1,
                                       max == INT64_MAX ? max : max + 1, hi, err)))
                        return r;
                for (size_t s = 0; s < t->nshapes; s++) {
                        if (hi[s] <= lo[s])
                                return jsonutil_fail(err, pp,
                                                     "'high' (%lld) must be greater than 'low' (%lld) in shape '%s'",
                                                     (long long)hi[s], (long long)lo[s],
                                                     t->shape_names[s]);
                        if (lo[s] == 0 && hi[s] == 1)
                                return jsonutil_fail(err, pp,
                                                     "[0, 1) draws only zeros in shape '%s'",
                                                     t->shape_names[s]);
                }
                break;
        }
        default:
                break;
        }
        return 0;
}

static int parse_buffer(Task *t, json_t *buf, size_t index, const char *ptr, SpecError *err)
{
        static const char *const fields[] = { "name", "dtype", "shape", "role", "init",
                                              "tolerance", "description", NULL };
        char p[JSONUTIL_PTR_BYTES], pd[JSONUTIL_PTR_BYTES];
        const char *name = NULL, *desc = NULL;
        json_t *shape = NULL, *dim;
        int dt = 0, role = 0, r;
        size_t i;

        if (!json_is_object(buf))
                return jsonutil_fail(err, ptr, "a buffer must be an object, not %s",
                                     jsonutil_type_name(buf));
        if ((r = jsonutil_check_fields(buf, ptr, fields, err)) ||
            (r = jsonutil_get_name(buf, ptr, "name", true, &name, err)) ||
            (r = jsonutil_get_enum(buf, ptr, "dtype", true, spec_dtype_names, &dt, err)) ||
            (r = jsonutil_get_array(buf, ptr, "shape", true, 0, LIMIT_TASK_DIMS_MAX, &shape,
                                    err)) ||
            (r = jsonutil_get_enum(buf, ptr, "role", true, spec_role_names, &role, err)) ||
            (r = jsonutil_get_string(buf, ptr, "description", false, LIMIT_TASK_TEXT_BYTES, &desc,
                                     err)) ||
            (r = parse_tolerance(buf, ptr, "tolerance", err)))
                return r;
        if (spec_task_buffer_index(t, name) >= 0) {
                jsonutil_ptr_key(p, ptr, "name");
                return jsonutil_fail(err, p, "duplicate buffer name '%s'", name);
        }
        t->buffers[index] = buf;
        t->buffer_dtype[index] = &spec_dtypes[dt];
        t->buffer_role[index] = role;
        for (size_t s = 0; s < t->nshapes; s++)
                t->buffer_count[s][index] = 1;
        jsonutil_ptr_key(p, ptr, "shape");
        json_array_foreach(shape, i, dim) {
                int64_t v[LIMIT_TASK_SHAPES_MAX];
                jsonutil_ptr_index(pd, p, i);
                if ((r = spec_expr_all(t, dim, pd, "dimension", 1, INT64_MAX, v, err)))
                        return r;
                for (size_t s = 0; s < t->nshapes; s++) {
                        if (__builtin_mul_overflow(t->buffer_count[s][index], v[s],
                                                   &t->buffer_count[s][index]) ||
                            t->buffer_count[s][index] >
                                    (int64_t)(LIMIT_TASK_BYTES_MAX / (uint64_t)spec_dtypes[dt].size))
                                return jsonutil_fail(err, p,
                                                     "buffer '%s' is larger than %llu bytes in shape '%s'",
                                                     name, (unsigned long long)LIMIT_TASK_BYTES_MAX,
                                                     t->shape_names[s]);
                }
        }
        jsonutil_ptr_key(p, ptr, "init");
        if (role == ROLE_OUT && json_object_get(buf, "init"))
                return jsonutil_fail(err, p, "an out buffer has no 'init' (it is poisoned before each run)");
        if (role != ROLE_OUT) {
                if (!json_object_get(buf, "init"))
                        return jsonutil_fail(err, p, "an %s buffer needs 'init'",
                                             spec_role_names[role]);
                if ((r = parse_init(t, buf, &spec_dtypes[dt], ptr, err)))
                        return r;
        }
        t->nbuffers = index + 1;
        return 0;
}

static int parse_shapes(Task *t, json_t *doc, SpecError *err)
{
        char p[JSONUTIL_PTR_BYTES], pk[JSONUTIL_PTR_BYTES];
        json_t *shapes = NULL, *shape, *v;
        const char *key;
        size_t i;
        int r;

        if ((r = jsonutil_get_array(doc, "", "shapes", true, 1, LIMIT_TASK_SHAPES_MAX, &shapes,
                                    err)))
                return r;
        json_array_foreach(shapes, i, shape) {
                const char *name = NULL;
                jsonutil_ptr_index(p, "/shapes", i);
                if (!json_is_object(shape))
                        return jsonutil_fail(err, p, "a shape set must be an object, not %s",
                                             jsonutil_type_name(shape));
                if ((r = jsonutil_get_name(shape, p, "name", true, &name, err)))
                        return r;
                for (size_t j = 0; j < i; j++) {
                        if (!strcmp(t->shape_names[j], name)) {
                                jsonutil_ptr_key(pk, p, "name");
                                return jsonutil_fail(err, pk, "duplicate shape name '%s'", name);
                        }
                }
                t->shape_names[i] = name;
                t->shape_params[i] = json_object();
                t->nshapes = i + 1;
                if (!t->shape_params[i])
                        return -ENOMEM;
                json_object_foreach(shape, key, v) {
                        if (!strcmp(key, "name"))
                                continue;
                        jsonutil_ptr_key(pk, p, key);
                        if (!json_object_get(t->params, key))
                                return jsonutil_fail(err, pk,
                                                     "unknown param '%.100s' (declare it in 'params')",
                                                     key);
                        if (!json_is_integer(v) || json_integer_value(v) < 0)
                                return jsonutil_fail(err, pk,
                                                     "param '%s' must be a non-negative integer",
                                                     key);
                        json_object_set(t->shape_params[i], key, v);
                }
                json_object_foreach(t->params, key, v) {
                        if (!json_object_get(shape, key))
                                return jsonutil_fail(err, p, "shape '%s' gives no value for param '%s'",
                                                     name, key);
                }
        }
        return 0;
}

static int parse_params(Task *t, json_t *doc, SpecError *err)
{
        char p[JSONUTIL_PTR_BYTES];
        const char *key;
        json_t *v;
        int r;

        if ((r = jsonutil_get_object(doc, "", "params", true, &t->params, err)))
                return r;
        if (json_object_size(t->params) > LIMIT_TASK_PARAMS_MAX)
                return jsonutil_fail(err, "/params", "%zu params; the limit is %d",
                                     json_object_size(t->params), LIMIT_TASK_PARAMS_MAX);
        json_object_foreach(t->params, key, v) {
                jsonutil_ptr_key(p, "/params", key);
                if (!jsonutil_is_name(key) || !strcmp(key, "name"))
                        return jsonutil_fail(err, p, "'%.100s' is not a valid param name", key);
                if (!json_is_string(v) || json_string_length(v) > LIMIT_TASK_TEXT_BYTES)
                        return jsonutil_fail(err, p,
                                             "a param maps to its description (a string)");
        }
        return 0;
}

static int parse_provenance(json_t *doc, SpecError *err)
{
        char p[JSONUTIL_PTR_BYTES];
        json_t *prov = NULL, *v;
        const char *key;
        int r;

        if ((r = jsonutil_get_object(doc, "", "provenance", false, &prov, err)) || !prov)
                return r;
        if (json_object_size(prov) > PROVENANCE_FIELDS_MAX)
                return jsonutil_fail(err, "/provenance", "more than %d fields",
                                     PROVENANCE_FIELDS_MAX);
        json_object_foreach(prov, key, v) {
                jsonutil_ptr_key(p, "/provenance", key);
                if (strlen(key) > LIMIT_NAME_BYTES)
                        return jsonutil_fail(err, p, "field name too long");
                if (json_is_object(v) || json_is_array(v))
                        return jsonutil_fail(err, p,
                                             "provenance values are strings, numbers, booleans or null");
                if (json_is_string(v) && json_string_length(v) > LIMIT_TASK_TEXT_BYTES)
                        return jsonutil_fail(err, p, "longer than %u bytes",
                                             LIMIT_TASK_TEXT_BYTES);
        }
        return 0;
}

/**
 * spec_task_parse() - validate a task document and build a Task
 * @doc:      the task JSON; borrowed (copied; the Task keeps a normalized copy)
 * @base_dir: folder that source_file paths are relative to, or NULL for
 *            inline tasks (which must carry "source")
 * @ret_task: on success, a new Task (spec_task_free())
 * @err:      filled on SPEC_E_INVALID with a pointer relative to @doc
 * Return: 0, SPEC_E_INVALID, or a negative errno.
 */
int spec_task_parse(json_t *doc, const char *base_dir, Task **ret_task, SpecError *err)
{
        static const char *const fields[] = {
                "$schema", "name", "title", "description", "notes", "level", "category",
                "provenance", "params", "shapes", "buffers", "reference", "tolerance", "flops",
                "bytes", "correctness_trials", "example", "tolerance_note", NULL
        };
        char p[JSONUTIL_PTR_BYTES];
        const char *s = NULL;
        Task *t = NULL;
        json_t *d, *buffers = NULL, *b, *ref = NULL, *ex = NULL;
        int64_t level = 0, trials = SPEC_CORRECTNESS_TRIALS_DEFAULT;
        uint64_t total[LIMIT_TASK_SHAPES_MAX] = { 0 };
        bool writes = false;
        size_t i;
        int r;

        if (!json_is_object(doc)) {
                r = jsonutil_fail(err, "", "a task must be a JSON object");
                goto out;
        }
        t = calloc(1, sizeof(*t));
        if (!t || !(t->doc = json_deep_copy(doc))) {
                r = -ENOMEM;
                goto out;
        }
        d = t->doc;
        if ((r = jsonutil_check_fields(d, "", fields, err)) ||
            (r = jsonutil_get_string(d, "", "$schema", false, 1024, &s, err)) ||
            (r = jsonutil_get_name(d, "", "name", true, &t->name, err)) ||
            (r = jsonutil_get_string(d, "", "title", false, LIMIT_NAME_BYTES, &s, err)) ||
            (r = jsonutil_get_string(d, "", "description", true, LIMIT_TASK_TEXT_BYTES, &s, err)) ||
            (r = jsonutil_get_string(d, "", "notes", false, LIMIT_TASK_TEXT_BYTES, &s, err)) ||
            (r = jsonutil_get_string(d, "", "tolerance_note", false, LIMIT_TASK_TEXT_BYTES, &s,
                                     err)) ||
            (r = jsonutil_get_int(d, "", "level", false, 0, TASK_LEVEL_MAX, &level, err)) ||
            (r = jsonutil_get_name(d, "", "category", false, &s, err)) ||
            (r = parse_provenance(d, err)) || (r = parse_params(t, d, err)) ||
            (r = parse_shapes(t, d, err)) ||
            (r = jsonutil_get_array(d, "", "buffers", true, 1, LIMIT_TASK_BUFFERS_MAX, &buffers,
                                    err)))
                goto out;
        json_array_foreach(buffers, i, b) {
                jsonutil_ptr_index(p, "/buffers", i);
                if ((r = parse_buffer(t, b, i, p, err)))
                        goto out;
                if (t->buffer_role[i] != ROLE_IN)
                        writes = true;
                for (size_t k = 0; k < t->nshapes; k++) {
                        total[k] += (uint64_t)t->buffer_count[k][i] *
                                    (uint64_t)t->buffer_dtype[i]->size;
                        if (total[k] > LIMIT_TASK_BYTES_MAX) {
                                r = jsonutil_fail(err, p,
                                                  "the task's buffers total %llu bytes in shape '%s'; the limit is %llu",
                                                  (unsigned long long)total[k],
                                                  t->shape_names[k],
                                                  (unsigned long long)LIMIT_TASK_BYTES_MAX);
                                goto out;
                        }
                }
        }
        if (!writes) {
                r = jsonutil_fail(err, "/buffers", "no buffer has role 'out' or 'inout'");
                goto out;
        }
        if ((r = parse_tolerance(d, "", "tolerance", err)))
                goto out;
        if (json_object_get(d, "flops") &&
            (r = spec_expr_all(t, json_object_get(d, "flops"), "/flops", "flops", 0, INT64_MAX,
                               NULL, err)))
                goto out;
        if (json_object_get(d, "bytes") &&
            (r = spec_expr_all(t, json_object_get(d, "bytes"), "/bytes", "bytes", 0, INT64_MAX,
                               NULL, err)))
                goto out;
        if ((r = jsonutil_get_int(d, "", "correctness_trials", false, 1,
                                  LIMIT_CORRECTNESS_TRIALS_MAX, &trials, err)) ||
            (r = jsonutil_get_object(d, "", "reference", true, &ref, err)) ||
            (r = parse_code(t, ref, "/reference", base_dir, true, err)) ||
            (r = jsonutil_get_object(d, "", "example", false, &ex, err)) ||
            (ex && (r = parse_code(t, ex, "/example", base_dir, false, err))))
                goto out;
        t->ref_source = json_string_value(json_object_get(ref, "source"));
        if (!json_object_get(d, "title"))
                json_object_set_new(d, "title", json_string(t->name));
        json_object_set_new(d, "level", json_integer(level));
        json_object_set_new(d, "correctness_trials", json_integer(trials));
        *ret_task = t;
        t = NULL;
        r = 0;
out:
        spec_task_free(t);
        return r;
}
