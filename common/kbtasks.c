/*
 * kbtasks - see kbtasks.h. The index is checked entry by entry: an entry
 * with a fault is reported in the errors and left out, so one bad module
 * does not take the others down; `kevald task check` prints the faults and
 * fails. Rules: a name is [a-z0-9_], is the C task's name where c_task is
 * given, else starts "l<level>_<problem number>_"; no name twice; a module
 * path is relative, without "..", ends ".py" and names a readable file of at
 * most LIMIT_KB_MODULE_BYTES; 1..LIMIT_TASK_SHAPES_MAX shape sets, the
 * first "default", each with 1..LIMIT_KB_CONSTANTS_MAX constants (numbers,
 * booleans, Python expressions as strings, arrays of numbers: constant_ok()).
 */
#include "common/kbtasks.h"

#include <errno.h>
#include <limits.h>
#include <linux/limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonutil.h"
#include "common/limits.h"
#include "common/readfile.h"

struct KbIndex {
        KbTask *tasks;
        size_t n;
};

static void task_clear(KbTask *t)
{
        free(t->name);
        free(t->problem_name);
        free(t->module);
        free(t->source);
        free(t->c_task);
        json_decref(t->shapes);
        memset(t, 0, sizeof(*t));
}

void kbtasks_free(KbIndex *index)
{
        if (!index)
                return;
        for (size_t i = 0; i < index->n; i++)
                task_clear(&index->tasks[i]);
        free(index->tasks);
        free(index);
}

size_t kbtasks_count(const KbIndex *index)
{
        return index ? index->n : 0;
}

const KbTask *kbtasks_at(const KbIndex *index, size_t i)
{
        return index && i < index->n ? &index->tasks[i] : NULL;
}

const KbTask *kbtasks_get(const KbIndex *index, const char *name)
{
        for (size_t i = 0; name && index && i < index->n; i++)
                if (strcmp(index->tasks[i].name, name) == 0)
                        return &index->tasks[i];
        return NULL;
}

const KbTask *kbtasks_find_problem(const KbIndex *index, int level, int problem)
{
        for (size_t i = 0; index && i < index->n; i++)
                if (index->tasks[i].level == level && index->tasks[i].problem == problem)
                        return &index->tasks[i];
        return NULL;
}

static int add_error(json_t *errors, const char *file, const SpecError *err)
{
        if (!errors)
                return 0;
        return json_array_append_new(errors, json_pack("{s:s, s:s, s:s}", "file", file, "pointer", err->pointer,
                                                       "message", err->message))
                       ? -ENOMEM
                       : 0;
}

static bool lower_name(const char *s)
{
        if (!s || !*s || strlen(s) > LIMIT_NAME_BYTES || !(*s >= 'a' && *s <= 'z'))
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
                        return false;
        return true;
}

static bool safe_module_path(const char *p)
{
        size_t n = strlen(p);

        if (n < 4 || p[0] == '/' || strcmp(p + n - 3, ".py") != 0 || strstr(p, "//"))
                return false;
        for (const char *s = p; s; s = strchr(s, '/')) {
                if (*s == '/')
                        s++;
                if (strncmp(s, "..", 2) == 0 && (s[2] == '/' || s[2] == '\0'))
                        return false;
        }
        return true;
}

static bool number_ok(const json_t *v)
{
        return json_is_number(v) && isfinite(json_number_value(v));
}

/*
 * A module-level constant as problems.json gives it: a number, a boolean
 * (bias=False), a Python expression over the others ("2048 * 2",
 * "(out_channels, 1, 1)") or a list of numbers (kernel_size [3, 5, 7]).
 */
static bool constant_ok(const json_t *v)
{
        size_t i;
        json_t *x;

        if (number_ok(v) || json_is_boolean(v))
                return true;
        if (json_is_string(v))
                return json_string_length(v) >= 1 && json_string_length(v) <= LIMIT_KB_CONSTANT_BYTES &&
                       !memchr(json_string_value(v), '\n', json_string_length(v));
        if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > LIMIT_KB_CONSTANT_ITEMS)
                return false;
        json_array_foreach(v, i, x)
                if (!number_ok(x))
                        return false;
        return true;
}

/* The shape sets of entry @ptr: 1..LIMIT_TASK_SHAPES_MAX, distinct names, "default" first. */
static int check_shapes(json_t *shapes, const char *ptr, SpecError *err)
{
        static const char *const fields[] = { "name", "constants", NULL };
        char p[JSONUTIL_PTR_BYTES], pc[JSONUTIL_PTR_BYTES], pk[JSONUTIL_PTR_BYTES];
        json_t *s, *constants, *v;
        const char *name, *k;
        size_t i;
        int r;

        json_array_foreach(shapes, i, s) {
                jsonutil_ptr_index(p, ptr, i);
                if (!json_is_object(s))
                        return jsonutil_fail(err, p, "a shape set must be an object, not %s", jsonutil_type_name(s));
                if ((r = jsonutil_check_fields(s, p, fields, err)) ||
                    (r = jsonutil_get_name(s, p, "name", true, &name, err)) ||
                    (r = jsonutil_get_object(s, p, "constants", true, &constants, err)))
                        return r;
                if (i == 0 && strcmp(name, "default") != 0)
                        return jsonutil_fail(err, p, "the first shape set is \"default\" (KernelBench's constants), "
                                             "not '%.100s'", name);
                for (size_t j = 0; j < i; j++)
                        if (strcmp(json_string_value(json_object_get(json_array_get(shapes, j), "name")), name) == 0)
                                return jsonutil_fail(err, p, "shape set '%.100s' is named twice", name);
                jsonutil_ptr_key(pc, p, "constants");
                if (json_object_size(constants) == 0 || json_object_size(constants) > LIMIT_KB_CONSTANTS_MAX)
                        return jsonutil_fail(err, pc, "a shape set has 1 to %d constants, not %zu",
                                             LIMIT_KB_CONSTANTS_MAX, json_object_size(constants));
                json_object_foreach(constants, k, v) {
                        jsonutil_ptr_key(pk, pc, k);
                        if (!jsonutil_is_name(k))
                                return jsonutil_fail(err, pk, "'%.100s' is not a Python identifier", k);
                        if (!constant_ok(v))
                                return jsonutil_fail(err, pk, "constant '%.100s' must be a finite number, a boolean, "
                                                     "a Python expression (a string of 1 to %d bytes) or an array "
                                                     "of 1 to %d numbers, not this %s", k, LIMIT_KB_CONSTANT_BYTES,
                                                     LIMIT_KB_CONSTANT_ITEMS, jsonutil_type_name(v));
                }
        }
        return 0;
}

/*
 * Check entry @e (pointer @ptr) and fill @t; @base is the index's folder
 * (modules are read from it). Return: 0, SPEC_E_INVALID (@err), or -ENOMEM.
 */
static int parse_entry(json_t *e, const char *ptr, const char *base, KbTask *t, SpecError *err)
{
        const char *name = NULL, *problem = NULL, *module = NULL, *c_task = NULL;
        json_t *shapes = NULL, *tol = NULL, *ct;
        int64_t level = 0;
        double atol = 0, rtol = 0, eager = 0, comp = 0;
        char p[JSONUTIL_PTR_BYTES], path[PATH_MAX], prefix[48], *end;
        long num;
        int r;

        if (!json_is_object(e))
                return jsonutil_fail(err, ptr, "an index entry must be an object, not %s", jsonutil_type_name(e));
        if ((r = jsonutil_get_string(e, ptr, "name", true, LIMIT_NAME_BYTES, &name, err)) ||
            (r = jsonutil_get_int(e, ptr, "level", true, 1, 4, &level, err)) ||
            (r = jsonutil_get_string(e, ptr, "problem", true, LIMIT_NAME_BYTES, &problem, err)) ||
            (r = jsonutil_get_string(e, ptr, "module", true, 1024, &module, err)) ||
            (r = jsonutil_get_array(e, ptr, "shapes", true, 1, LIMIT_TASK_SHAPES_MAX, &shapes, err)) ||
            (r = jsonutil_get_object(e, ptr, "tolerance", true, &tol, err)))
                return r;
        jsonutil_ptr_key(p, ptr, "tolerance");
        if ((r = jsonutil_get_number(tol, p, "atol", true, &atol, err)) ||
            (r = jsonutil_get_number(tol, p, "rtol", true, &rtol, err)))
                return r;
        if (!(atol >= 0 && rtol >= 0 && isfinite(atol) && isfinite(rtol)))
                return jsonutil_fail(err, p, "atol and rtol are finite and not negative");
        ct = json_object_get(e, "c_task");
        if (ct && !json_is_null(ct) && (r = jsonutil_get_string(e, ptr, "c_task", false, LIMIT_NAME_BYTES, &c_task,
                                                               err)))
                return r;
        for (int k = 0; k < 2; k++) {
                const char *key = k ? "h100_torch_compile_ms" : "h100_torch_eager_ms";
                json_t *v = json_object_get(e, key);
                double *out = k ? &comp : &eager;
                jsonutil_ptr_key(p, ptr, key);
                if (!v || json_is_null(v))
                        continue;
                if (!json_is_number(v) || !(json_number_value(v) > 0) || !isfinite(json_number_value(v)))
                        return jsonutil_fail(err, p, "'%s' is a positive number or null", key);
                *out = json_number_value(v);
        }
        jsonutil_ptr_key(p, ptr, "problem");
        errno = 0;
        num = strtol(problem, &end, 10);
        if (end == problem || *end != '_' || num <= 0 || num > 100000 || errno)
                return jsonutil_fail(err, p, "'%.100s' is not KernelBench's \"<number>_<Name>\"", problem);
        jsonutil_ptr_key(p, ptr, "name");
        if (!lower_name(name))
                return jsonutil_fail(err, p, "'%.100s' is not a task name ([a-z][a-z0-9_]*)", name);
        if (c_task && strcmp(c_task, name) != 0)
                return jsonutil_fail(err, p, "an entry with a C task is named as it ('%.100s'), not '%.100s'", c_task,
                                     name);
        snprintf(prefix, sizeof(prefix), "l%d_%ld_", (int)level, num);
        if (!c_task && (strncmp(name, prefix, strlen(prefix)) != 0 || !name[strlen(prefix)]))
                return jsonutil_fail(err, p, "'%.100s' does not follow the rule l<level>_<number>_<snake name> "
                                     "(expected '%s...')", name, prefix);
        jsonutil_ptr_key(p, ptr, "shapes");
        if ((r = check_shapes(shapes, p, err)))
                return r;
        jsonutil_ptr_key(p, ptr, "module");
        if (!safe_module_path(module))
                return jsonutil_fail(err, p, "'%.200s' is not a relative path to a .py file inside the index's folder",
                                     module);
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", base, module) >= sizeof(path))
                return jsonutil_fail(err, p, "the module's path is too long");
        r = readfile_all(path, LIMIT_KB_MODULE_BYTES, &t->source, NULL);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return jsonutil_fail(err, p, "module '%.200s': %s", module,
                                     r == -EFBIG ? "larger than LIMIT_KB_MODULE_BYTES" : strerror(-r));
        t->name = strdup(name);
        t->problem_name = strdup(problem);
        t->module = strdup(module);
        t->c_task = c_task ? strdup(c_task) : NULL;
        t->shapes = json_deep_copy(shapes);
        t->level = (int)level;
        t->problem = (int)num;
        t->atol = atol;
        t->rtol = rtol;
        t->eager_ms = eager;
        t->compile_ms = comp;
        if (!t->name || !t->problem_name || !t->module || (c_task && !t->c_task) || !t->shapes)
                return -ENOMEM;
        return 0;
}

/**
 * kbtasks_load() - read @dir/kernelbench/index.json and every module it names
 * @dir:       the task library's folder; borrowed
 * @ret_index: on success, a new index (kbtasks_free()); empty when the
 *             library has no index file
 * @errors:    when not NULL, a new array of {"file", "pointer", "message"}
 *             (an entry with a fault is left out of the index)
 * Return: 0, or -ENOMEM.
 */
int kbtasks_load(const char *dir, KbIndex **ret_index, json_t **errors)
{
        KbIndex *idx = calloc(1, sizeof(*idx));
        json_t *errs = errors ? json_array() : NULL, *doc = NULL, *tasks, *e;
        char path[PATH_MAX], base[PATH_MAX], p[JSONUTIL_PTR_BYTES], *text = NULL;
        SpecError err = { "", "" };
        json_error_t jerr;
        size_t i, len = 0;
        int r;

        if (!idx || (errors && !errs)) {
                r = -ENOMEM;
                goto out;
        }
        snprintf(base, sizeof(base), "%s/%s", dir, KBTASKS_DIR);
        snprintf(path, sizeof(path), "%s/%s", dir, KBTASKS_INDEX_PATH);
        r = readfile_all(path, LIMIT_KB_INDEX_BYTES, &text, &len);
        if (r == -ENOENT) {
                r = 0; /* a library without KernelBench tasks */
                goto done;
        }
        if (r == -ENOMEM)
                goto out;
        if (r < 0) {
                snprintf(err.message, sizeof(err.message), "cannot read the index: %s",
                         r == -EFBIG ? "larger than LIMIT_KB_INDEX_BYTES" : strerror(-r));
                r = add_error(errs, path, &err);
                goto done;
        }
        doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!doc) {
                snprintf(err.message, sizeof(err.message), "line %d, column %d: %s", jerr.line, jerr.column,
                         jerr.text);
                r = add_error(errs, path, &err);
                goto done;
        }
        tasks = json_object_get(doc, "tasks");
        if (json_integer_value(json_object_get(doc, "version")) != 1 || !json_is_array(tasks) ||
            json_array_size(tasks) > LIMIT_KB_TASKS_MAX) {
                jsonutil_fail(&err, "", "the index is {\"version\": 1, \"tasks\": [at most %d entries]}",
                              LIMIT_KB_TASKS_MAX);
                r = add_error(errs, path, &err);
                goto done;
        }
        idx->tasks = calloc(json_array_size(tasks) + 1, sizeof(*idx->tasks));
        if (!idx->tasks) {
                r = -ENOMEM;
                goto out;
        }
        json_array_foreach(tasks, i, e) {
                KbTask *t = &idx->tasks[idx->n];
                jsonutil_ptr_index(p, "/tasks", i);
                memset(&err, 0, sizeof(err));
                r = parse_entry(e, p, base, t, &err);
                if (r == 0 && kbtasks_get(idx, t->name)) {
                        jsonutil_ptr_key(p, p, "name");
                        r = jsonutil_fail(&err, p, "task '%.100s' is in the index twice", t->name);
                }
                if (r < 0) {
                        task_clear(t);
                        goto out;
                }
                if (r > 0) {
                        task_clear(t);
                        if ((r = add_error(errs, path, &err)) < 0)
                                goto out;
                        continue;
                }
                idx->n++;
        }
        r = 0;
done:
        if (r < 0)
                goto out;
        *ret_index = idx;
        idx = NULL;
        if (errors) {
                *errors = errs;
                errs = NULL;
        }
out:
        kbtasks_free(idx);
        json_decref(errs);
        json_decref(doc);
        free(text);
        return r;
}

json_t *kbtasks_json(const KbTask *t)
{
        json_t *o = json_pack("{s:i, s:s, s:s, s:s?, s:O, s:{s:f, s:f}, s:s}", "level", t->level, "problem",
                              t->problem_name, "module", t->module, "c_task", t->c_task, "shapes", t->shapes,
                              "tolerance", "atol", t->atol, "rtol", t->rtol, "source", t->source);

        if (!o)
                return NULL;
        json_object_set_new(o, "h100_torch_eager_ms", t->eager_ms > 0 ? json_real(t->eager_ms) : json_null());
        json_object_set_new(o, "h100_torch_compile_ms", t->compile_ms > 0 ? json_real(t->compile_ms) : json_null());
        return o;
}
