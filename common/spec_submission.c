/*
 * spec_submission - the submission document: strict validation against its
 * task, normalization (defaults, timing presets, the task kept inline for a
 * task_spec), and the check of a plan against the kernels a compile really
 * produced (names, argument count and sizes, block size, shared memory).
 *
 * The normalized submission is self-contained for the dispatcher: it holds
 * "task" (a library name) or "task_spec" (the normalized task, reference
 * source inline), never both.
 */
#include <errno.h>
#include <string.h>

#include "common/jsonutil.h"
#include "common/kbtasks.h"
#include "common/spec_internal.h"

#define TIMING_BUDGET_MS_DEFAULT 2000
#define TIMING_PRECISION_DEFAULT 0.01
#define TIMING_MAX_TRIALS_DEFAULT 1000
#define TIMING_MIN_TRIALS_DEFAULT 6
#define TIMING_WARMUP_DEFAULT 3
#define TIMING_WARMUP_MAX 100

static const char *const languages[] = { "cuda", "ptx", NULL };
static const char *const modes[] = { "full", "compile", NULL };
static const char *const priorities[] = { "bulk", "interactive", NULL };

static int parse_timing(json_t *doc, json_t **ret, SpecError *err)
{
        static const char *const fields[] = { "budget_ms", "target_precision", "max_trials",
                                              "min_trials", "warmup", "shapes", NULL };
        static const char *const presets[] = { "fast", "precise", NULL };
        static const char *const which[] = { "first", "all", NULL };
        json_t *t = json_object_get(doc, "timing");
        int64_t budget = TIMING_BUDGET_MS_DEFAULT, maxt = TIMING_MAX_TRIALS_DEFAULT,
                mint = TIMING_MIN_TRIALS_DEFAULT, warmup = TIMING_WARMUP_DEFAULT;
        double prec = TIMING_PRECISION_DEFAULT;
        int preset = -1, shapes = 0, r;

        if (json_is_string(t)) {
                if ((r = jsonutil_get_enum(doc, "", "timing", true, presets, &preset, err)))
                        return r;
                budget = preset == 0 ? 300 : 10000;
                prec = preset == 0 ? 0.05 : 0.005;
        } else if (t) {
                if (!json_is_object(t))
                        return jsonutil_fail(err, "/timing",
                                             "'timing' must be \"fast\", \"precise\" or an object, not %s",
                                             jsonutil_type_name(t));
                if ((r = jsonutil_check_fields(t, "/timing", fields, err)) ||
                    (r = jsonutil_get_int(t, "/timing", "budget_ms", false, 1,
                                          LIMIT_TIMING_BUDGET_MS_MAX, &budget, err)) ||
                    (r = jsonutil_get_number(t, "/timing", "target_precision", false, &prec,
                                             err)) ||
                    (r = jsonutil_get_int(t, "/timing", "max_trials", false, 1,
                                          LIMIT_TIMING_TRIALS_MAX, &maxt, err)) ||
                    (r = jsonutil_get_int(t, "/timing", "min_trials", false, 1,
                                          LIMIT_TIMING_TRIALS_MAX, &mint, err)) ||
                    (r = jsonutil_get_int(t, "/timing", "warmup", false, 0, TIMING_WARMUP_MAX,
                                          &warmup, err)) ||
                    (r = jsonutil_get_enum(t, "/timing", "shapes", false, which, &shapes, err)))
                        return r;
                if (!(prec > 0 && prec <= 1))
                        return jsonutil_fail(err, "/timing/target_precision",
                                             "'target_precision' must be in (0, 1]");
                if (!json_object_get(t, "min_trials") && mint > maxt)
                        mint = maxt;
                if (mint > maxt)
                        return jsonutil_fail(err, "/timing/min_trials",
                                             "'min_trials' (%lld) exceeds 'max_trials' (%lld)",
                                             (long long)mint, (long long)maxt);
        }
        *ret = json_pack("{s:I, s:f, s:I, s:I, s:I, s:s}", "budget_ms", (json_int_t)budget,
                         "target_precision", prec, "max_trials", (json_int_t)maxt, "min_trials",
                         (json_int_t)mint, "warmup", (json_int_t)warmup, "shapes",
                         shapes < 0 ? "first" : which[shapes]);
        return *ret ? 0 : -ENOMEM;
}

/*
 * "tags": what a trainer files a submission under. run_id, step, sample,
 * turn and parent as before; policy_version (a string) and temperature (a
 * number in [0, LIMIT_TAG_TEMPERATURE_MAX]) for the sampling that made it;
 * labels: up to LIMIT_TAGS_MAX names with string or finite number values.
 */
static int parse_tags(json_t *doc, json_t **ret, SpecError *err)
{
        static const char *const fields[] = { "run_id", "step", "sample", "turn", "parent",
                                              "policy_version", "temperature", "labels", NULL };
        static const char *const ints[] = { "step", "sample", "turn", "parent" };
        char p[JSONUTIL_PTR_BYTES];
        json_t *tags = NULL, *labels = NULL, *v;
        const char *s = NULL, *key;
        double temp;
        int64_t x;
        int r;

        if ((r = jsonutil_get_object(doc, "", "tags", false, &tags, err)))
                return r;
        if (!tags) {
                *ret = json_object();
                return *ret ? 0 : -ENOMEM;
        }
        if ((r = jsonutil_check_fields(tags, "/tags", fields, err)) ||
            (r = jsonutil_get_string(tags, "/tags", "run_id", false, LIMIT_TAG_STRING_BYTES, &s,
                                     err)) ||
            (r = jsonutil_get_string(tags, "/tags", "policy_version", false, LIMIT_TAG_STRING_BYTES, &s,
                                     err)) ||
            (r = jsonutil_get_number(tags, "/tags", "temperature", false, &temp, err)))
                return r;
        if (json_object_get(tags, "temperature") && !(temp >= 0 && temp <= LIMIT_TAG_TEMPERATURE_MAX))
                return jsonutil_fail(err, "/tags/temperature", "'temperature' must be a number in [0, %d]",
                                     LIMIT_TAG_TEMPERATURE_MAX);
        for (int i = 0; i < 4; i++)
                if ((r = jsonutil_get_int(tags, "/tags", ints[i], false, i == 3 ? 1 : 0,
                                          INT64_MAX, &x, err)))
                        return r;
        if ((r = jsonutil_get_object(tags, "/tags", "labels", false, &labels, err)))
                return r;
        if (labels && json_object_size(labels) > LIMIT_TAGS_MAX)
                return jsonutil_fail(err, "/tags/labels", "%zu labels; the limit is %d",
                                     json_object_size(labels), LIMIT_TAGS_MAX);
        json_object_foreach(labels, key, v) {
                jsonutil_ptr_key(p, "/tags/labels", key);
                if (strlen(key) == 0 || strlen(key) > LIMIT_TAG_STRING_BYTES)
                        return jsonutil_fail(err, p, "a label name is 1 to %d bytes",
                                             LIMIT_TAG_STRING_BYTES);
                if (json_is_number(v))
                        continue;   /* jansson holds no NaN or infinity */
                if (!json_is_string(v))
                        return jsonutil_fail(err, p, "a label value must be a string or a number, not %s",
                                             jsonutil_type_name(v));
                if (json_string_length(v) > LIMIT_TAG_STRING_BYTES ||
                    strlen(json_string_value(v)) != json_string_length(v))
                        return jsonutil_fail(err, p,
                                             "a label value is at most %d bytes without NUL",
                                             LIMIT_TAG_STRING_BYTES);
        }
        *ret = json_deep_copy(tags);
        return *ret ? 0 : -ENOMEM;
}

/*
 * "shapes": evaluate only these shape sets of the task (by name, each once,
 * at least one), e.g. the small ones for fast RL scoring. Absent: all.
 */
static int parse_shapes(json_t *doc, const Task *task, json_t **ret, SpecError *err)
{
        json_t *list = json_object_get(doc, "shapes"), *v;
        char p[JSONUTIL_PTR_BYTES];
        size_t i, k;

        if (!list)
                return 0;
        if (!task)
                return jsonutil_fail(err, "/shapes", "'shapes' selects shape sets of a task; there is no task");
        if (!json_is_array(list) || json_array_size(list) == 0 || json_array_size(list) > task->nshapes)
                return jsonutil_fail(err, "/shapes", "'shapes' must be a list of 1 to %zu shape set names",
                                     task->nshapes);
        json_array_foreach(list, i, v) {
                bool known = false;
                snprintf(p, sizeof(p), "/shapes/%zu", i);
                if (!json_is_string(v))
                        return jsonutil_fail(err, p, "a shape set name must be a string, not %s",
                                             jsonutil_type_name(v));
                for (k = 0; k < task->nshapes; k++)
                        known |= strcmp(task->shape_names[k], json_string_value(v)) == 0;
                if (!known)
                        return jsonutil_fail(err, p, "task '%s' has no shape set '%.100s'", task->name,
                                             json_string_value(v));
                for (k = 0; k < i; k++)
                        if (strcmp(json_string_value(json_array_get(list, k)), json_string_value(v)) == 0)
                                return jsonutil_fail(err, p, "shape set '%.100s' is listed twice",
                                                     json_string_value(v));
        }
        *ret = json_incref(list);
        return 0;
}

/*
 * "frontend": the tool that produced a PTX submission and its version, as
 * the client says it ("triton 3.6.0"), kept with the submission so that
 * results and the dashboard can tell Triton kernels from hand-written PTX.
 * 1..LIMIT_FRONTEND_BYTES of letters, digits, space and ". _ + -"; PTX only
 * (CUDA C++ has one front end, NVRTC).
 */
static int parse_frontend(json_t *doc, int lang, const char **ret, SpecError *err)
{
        const char *s = NULL;
        int r;

        if ((r = jsonutil_get_string(doc, "", "frontend", false, LIMIT_FRONTEND_BYTES, &s, err)) || !s)
                return r;
        if (!s[0])
                return jsonutil_fail(err, "/frontend", "'frontend' is empty");
        for (const char *c = s; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                      strchr(" ._+-", *c)))
                        return jsonutil_fail(err, "/frontend",
                                             "'frontend' holds letters, digits, space and . _ + - only (e.g. \"triton 3.6.0\")");
        if (lang != 1)
                return jsonutil_fail(err, "/frontend",
                                     "'frontend' names the tool that produced PTX; it needs \"language\": \"ptx\"");
        *ret = s;
        return 0;
}

/* The candidate's own fields: what a model writes. The rest is the envelope. */
static const char *const candidate_fields[] = { "source", "plan", "scratch", "options", "name_expressions", NULL };

/*
 * The stored form of a rejected candidate: each candidate field as given
 * when it is small enough to keep (LIMIT_SOURCE_BYTES serialized, a source
 * only as a string), otherwise its size in "omitted". Nothing is cut short.
 */
static int keep_candidate(json_t *doc, json_t *norm)
{
        json_t *omitted = NULL;
        int r = 0;

        for (const char *const *f = candidate_fields; *f && r == 0; f++) {
                json_t *v = json_object_get(doc, *f);
                size_t n;

                if (!v)
                        continue;
                n = json_is_string(v) ? json_string_length(v) : json_dumpb(v, NULL, 0, JSON_COMPACT);
                if ((json_is_string(v) || strcmp(*f, "source") != 0) && n <= LIMIT_SOURCE_BYTES) {
                        r = json_object_set(norm, *f, v);
                        continue;
                }
                if (!omitted && !(omitted = json_object()))
                        return -ENOMEM;
                r = json_object_set_new(omitted, *f, json_pack("{s:s, s:I}", "type", jsonutil_type_name(v),
                                                                "bytes", (json_int_t)n));
        }
        if (r == 0 && omitted)
                r = json_object_set(norm, "omitted", omitted);
        json_decref(omitted);
        return r ? -ENOMEM : 0;
}

/*
 * A candidate field failed its check with @r: on SPEC_E_INVALID the
 * normalized envelope *@norm, with the candidate kept (keep_candidate()),
 * moves to *@ret_norm and the answer is SPEC_E_CANDIDATE (a stored
 * `rejected`); any other @r is returned as it is.
 */
static int candidate_rejected(json_t *doc, json_t **norm, int r, json_t **ret_norm)
{
        if (r != SPEC_E_INVALID)
                return r;
        r = keep_candidate(doc, *norm);
        if (r != 0)
                return r;
        *ret_norm = *norm;
        *norm = NULL;
        return SPEC_E_CANDIDATE;
}

/**
 * spec_submission_validate() - check a submission and normalize it
 * @doc:      the submission object; borrowed
 * @task:     the task it names (library, or parsed by the caller from
 *            task_spec with spec_task_parse(..., NULL, ...)); NULL only for
 *            mode "compile" without a task
 * @ret_norm: on success a new normalized object: language, frontend (when
 *            given), source, mode, priority, options, name_expressions, timing (preset expanded,
 *            defaults filled), tags, and for a task: task or task_spec
 *            (normalized), plan (normalized) and scratch (normalized).
 *            On SPEC_E_CANDIDATE a new object too: the envelope normalized
 *            as above, the candidate fields as given (see keep_candidate())
 * @err:      filled on SPEC_E_INVALID and SPEC_E_CANDIDATE with a pointer
 *            relative to @doc
 *
 * The envelope (task, language, frontend, mode, priority, timing, tags,
 * shapes, the set of fields) is checked first: a fault there is SPEC_E_INVALID, a
 * request the caller must refuse. The candidate (source, options,
 * name_expressions, scratch, plan) is checked next: a fault there is
 * SPEC_E_CANDIDATE, a verdict ("rejected") the caller stores like any other.
 *
 * Return: 0, SPEC_E_INVALID, SPEC_E_CANDIDATE, or a negative errno.
 */
int spec_submission_validate(json_t *doc, const Task *task, json_t **ret_norm, SpecError *err)
{
        static const char *const fields[] = { "task", "task_spec", "language", "source", "plan",
                                              "scratch", "options", "name_expressions", "mode",
                                              "timing", "priority", "tags", "shapes", "frontend", NULL };
        const char *name = NULL, *source = NULL, *frontend = NULL;
        json_t *norm = NULL, *options = NULL, *names = NULL, *timing = NULL, *tags = NULL,
               *scratch = NULL, *plan = NULL, *shapes = NULL;
        int lang = 0, mode = 0, prio = 0, r;
        bool has_spec;

        if (!json_is_object(doc)) {
                r = jsonutil_fail(err, "", "a submission must be a JSON object");
                goto out;
        }
        /* ---- the envelope ---- */
        if ((r = jsonutil_check_fields(doc, "", fields, err)) ||
            (r = jsonutil_get_string(doc, "", "task", false, LIMIT_NAME_BYTES, &name, err)) ||
            (r = jsonutil_get_enum(doc, "", "language", false, languages, &lang, err)) ||
            (r = jsonutil_get_enum(doc, "", "mode", false, modes, &mode, err)) ||
            (r = jsonutil_get_enum(doc, "", "priority", false, priorities, &prio, err)) ||
            (r = parse_frontend(doc, lang, &frontend, err)))
                goto out;
        has_spec = json_object_get(doc, "task_spec") != NULL;
        if (name && has_spec) {
                r = jsonutil_fail(err, "/task_spec", "give 'task' or 'task_spec', not both");
                goto out;
        }
        if (has_spec && !json_is_object(json_object_get(doc, "task_spec"))) {
                r = jsonutil_fail(err, "/task_spec", "'task_spec' must be an object, not %s",
                                  jsonutil_type_name(json_object_get(doc, "task_spec")));
                goto out;
        }
        if (!name && !has_spec && mode == 0) {
                r = jsonutil_fail(err, "", "missing 'task' or 'task_spec' (only mode \"compile\" "
                                           "may go without a task)");
                goto out;
        }
        if ((name || has_spec) && !task) {
                if (name)
                        r = jsonutil_fail(err, "/task", "unknown task '%.100s'", name);
                else
                        r = jsonutil_fail(err, "/task_spec", "the task_spec was not parsed");
                goto out;
        }
        if (name && !jsonutil_is_name(name)) {
                r = jsonutil_fail(err, "/task", "'%.100s' is not a valid task name", name);
                goto out;
        }
        if (name && strcmp(name, task->name) != 0) {
                r = jsonutil_fail(err, "/task", "task '%.100s' was resolved to '%s'", name,
                                  task->name);
                goto out;
        }
        if (!task && (json_object_get(doc, "plan") || json_object_get(doc, "scratch"))) {
                r = jsonutil_fail(err, json_object_get(doc, "plan") ? "/plan" : "/scratch",
                                  "a plan needs a task ('task' or 'task_spec')");
                goto out;
        }
        if ((r = parse_timing(doc, &timing, err)) || (r = parse_tags(doc, &tags, err)) ||
            (r = parse_shapes(doc, task, &shapes, err)))
                goto out;
        norm = json_pack("{s:s, s:s, s:s, s:O, s:O}", "language", languages[lang], "mode", modes[mode],
                         "priority", priorities[prio], "timing", timing, "tags", tags);
        if (!norm) {
                r = -ENOMEM;
                goto out;
        }
        if (name)
                json_object_set_new(norm, "task", json_string(name));
        else if (task)
                json_object_set(norm, "task_spec", task->doc);
        if (shapes)
                json_object_set(norm, "shapes", shapes);
        if (frontend && json_object_set_new(norm, "frontend", json_string(frontend))) {
                r = -ENOMEM;
                goto out;
        }

        /* ---- the candidate ---- */
        if ((r = jsonutil_get_string(doc, "", "source", true, LIMIT_SOURCE_BYTES, &source, err)))
                goto candidate;
        if (!source[0]) {
                r = jsonutil_fail(err, "/source", "'source' is empty");
                goto candidate;
        }
        if ((r = spec_options_validate(json_object_get(doc, "options"), "/options", &options,
                                       err)) ||
            (r = spec_name_exprs_validate(json_object_get(doc, "name_expressions"),
                                          "/name_expressions", &names, err)))
                goto candidate;
        if (lang == 1 && json_array_size(names)) {
                r = jsonutil_fail(err, "/name_expressions",
                                  "name expressions apply to CUDA C++, not PTX");
                goto candidate;
        }
        if (task) {
                if ((r = spec_scratch_validate(task, json_object_get(doc, "scratch"), "/scratch",
                                               &scratch, err)))
                        goto candidate;
                if (json_object_get(doc, "plan") || mode == 0) {
                        if (!json_object_get(doc, "plan")) {
                                r = jsonutil_fail(err, "/plan", "missing required field 'plan'");
                                goto candidate;
                        }
                        if ((r = spec_plan_validate(task, json_object_get(doc, "plan"), scratch,
                                                    false, names, "/plan", &plan, err)))
                                goto candidate;
                }
        }
        if (json_object_set_new(norm, "source", json_string(source)) ||
            json_object_set(norm, "options", options) || json_object_set(norm, "name_expressions", names) ||
            (scratch && json_object_set(norm, "scratch", scratch)) ||
            (plan && json_object_set(norm, "plan", plan))) {
                r = -ENOMEM;
                goto out;
        }
        *ret_norm = norm;
        norm = NULL;
        r = 0;
        goto out;
candidate:
        r = candidate_rejected(doc, &norm, r, ret_norm);
out:
        json_decref(norm);
        json_decref(options);
        json_decref(names);
        json_decref(timing);
        json_decref(tags);
        json_decref(scratch);
        json_decref(plan);
        json_decref(shapes);
        return r;
}

/* Find the kernel a plan names: an extern "C" name, or a name expression's lowered name. */
static json_t *find_kernel(json_t *compile, const char *name, const char **ret_lowered)
{
        json_t *kernels = json_object_get(compile, "kernels"), *k;
        const char *lowered;
        size_t i;

        json_array_foreach(kernels, i, k) {
                if (json_is_string(json_object_get(k, "name")) &&
                    !strcmp(json_string_value(json_object_get(k, "name")), name)) {
                        *ret_lowered = json_string_value(json_object_get(k, "name"));
                        return k;
                }
        }
        lowered = json_string_value(json_object_get(json_object_get(compile, "lowered_names"),
                                                    name));
        if (!lowered)
                return NULL;
        json_array_foreach(kernels, i, k) {
                if (json_is_string(json_object_get(k, "name")) &&
                    !strcmp(json_string_value(json_object_get(k, "name")), lowered)) {
                        *ret_lowered = lowered;
                        return k;
                }
        }
        return NULL;
}

/* Bytes an argument occupies in the kernel's parameter buffer. */
static int arg_size(json_t *arg, const char **ret_what)
{
        if (json_is_null(arg)) {
                *ret_what = "a null pointer";
                return 8;
        }
        if (json_is_string(arg)) {
                *ret_what = "a pointer";
                return 8;
        }
        *ret_what = json_string_value(json_object_get(arg, "type"));
        return spec_scalar_size(*ret_what ? *ret_what : "");
}

/**
 * spec_check_plan() - check a plan against the compiled kernels
 * @task:             borrowed (its shape sets bound block and shared sizes)
 * @plan:             a normalized plan (the candidate's, or the task
 *                    reference's); borrowed
 * @scratch:          the scratch list that goes with it; borrowed (unused:
 *                    names were checked at validation)
 * @compile:          the compile RESULT (kernels[], lowered_names); borrowed
 * @max_shared_optin: the device's opt-in shared memory per block; 0 = skip
 * Return: 0, or SPEC_E_REJECTED with @err naming the launch and argument
 * (pointer "/plan/N/..." or "/reference/plan/N/..." for the task's plan).
 */
int spec_check_plan(const Task *task, json_t *plan, json_t *scratch, json_t *compile,
                    long max_shared_optin, SpecError *err)
{
        const char *base = plan == json_object_get(json_object_get(task->doc, "reference"), "plan")
                                   ? "/reference/plan"
                                   : "/plan";
        char p[JSONUTIL_PTR_BYTES], pa[JSONUTIL_PTR_BYTES];
        json_t *step;
        size_t i;

        (void)scratch;
        json_array_foreach(plan, i, step) {
                const char *kname = json_string_value(json_object_get(step, "kernel"));
                const char *lowered = NULL;
                json_t *k, *params, *args, *arg, *block;
                size_t j, nparams, nargs;
                int64_t maxt, sstatic, threads[LIMIT_TASK_SHAPES_MAX], shared[LIMIT_TASK_SHAPES_MAX];

                jsonutil_ptr_index(p, base, i);
                if (!kname)
                        continue; /* library step */
                jsonutil_ptr_key(pa, p, "kernel");
                k = find_kernel(compile, kname, &lowered);
                if (!k)
                        return jsonutil_fail_code(
                                SPEC_E_REJECTED, err, pa,
                                "launch %zu: kernel '%.100s' is not in the compiled module (a kernel the plan names must be extern \"C\" __global__, or a name expression)",
                                i, kname);
                params = json_object_get(k, "params");
                args = json_object_get(step, "args");
                nparams = json_array_size(params);
                nargs = json_array_size(args);
                jsonutil_ptr_key(pa, p, "args");
                if (nargs != nparams)
                        return jsonutil_fail_code(SPEC_E_REJECTED, err, pa,
                                                  "launch %zu ('%.100s'): %zu argument%s given, but the kernel has %zu parameter%s",
                                                  i, kname, nargs, nargs == 1 ? "" : "s", nparams,
                                                  nparams == 1 ? "" : "s");
                json_array_foreach(args, j, arg) {
                        const char *what = NULL;
                        int size = arg_size(arg, &what);
                        int64_t want = json_integer_value(
                                json_object_get(json_array_get(params, j), "size"));
                        if (size != want) {
                                jsonutil_ptr_index(pa, pa, j);
                                return jsonutil_fail_code(SPEC_E_REJECTED, err, pa,
                                                          "launch %zu ('%.100s'): argument %zu is %s (%d bytes) but the kernel's parameter %zu is %lld bytes",
                                                          i, kname, j, what, size, j,
                                                          (long long)want);
                        }
                }
                maxt = json_integer_value(json_object_get(k, "max_threads_per_block"));
                sstatic = json_integer_value(json_object_get(k, "shared_static"));
                block = json_object_get(step, "block");
                for (size_t s = 0; s < task->nshapes; s++) {
                        threads[s] = 1;
                        shared[s] = 0;
                }
                for (j = 0; j < json_array_size(block); j++) {
                        int64_t v[LIMIT_TASK_SHAPES_MAX];
                        if (spec_expr_all(task, json_array_get(block, j), "", "block", 1,
                                          INT64_MAX, v, NULL))
                                return jsonutil_fail_code(SPEC_E_REJECTED, err, p,
                                                          "launch %zu: the block does not evaluate",
                                                          i);
                        for (size_t s = 0; s < task->nshapes; s++)
                                threads[s] *= v[s];
                }
                if (json_object_get(step, "shared") &&
                    spec_expr_all(task, json_object_get(step, "shared"), "", "shared", 0,
                                  INT64_MAX, shared, NULL))
                        return jsonutil_fail_code(SPEC_E_REJECTED, err, p,
                                                  "launch %zu: shared does not evaluate", i);
                for (size_t s = 0; s < task->nshapes; s++) {
                        if (maxt > 0 && threads[s] > maxt) {
                                jsonutil_ptr_key(pa, p, "block");
                                return jsonutil_fail_code(SPEC_E_REJECTED, err, pa,
                                                          "launch %zu ('%.100s'): the block has %lld threads in shape '%s', but the kernel allows at most %lld (registers or __launch_bounds__)",
                                                          i, kname, (long long)threads[s],
                                                          task->shape_names[s], (long long)maxt);
                        }
                        if (max_shared_optin > 0 && sstatic + shared[s] > max_shared_optin) {
                                jsonutil_ptr_key(pa, p, "shared");
                                return jsonutil_fail_code(SPEC_E_REJECTED, err, pa,
                                                          "launch %zu ('%.100s'): %lld bytes of static plus %lld of dynamic shared memory in shape '%s' exceed the device's %ld",
                                                          i, kname, (long long)sstatic,
                                                          (long long)shared[s],
                                                          task->shape_names[s], max_shared_optin);
                        }
                }
        }
        return 0;
}

/*
 * Does @src define `class ModelNew` on a line of its own: indentation,
 * "class", blanks, "ModelNew", blanks, then "(" or ":"? (A comment or a
 * string that only mentions it does not count; one in a string that begins
 * a line would: the worker's import is the real check.)
 */
static bool has_model_new(const char *src)
{
        for (const char *line = src; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                const char *p = line;
                while (*p == ' ' || *p == '\t')
                        p++;
                if (strncmp(p, "class", 5) != 0 || (p[5] != ' ' && p[5] != '\t'))
                        continue;
                p += 5;
                while (*p == ' ' || *p == '\t')
                        p++;
                if (strncmp(p, "ModelNew", 8) != 0)
                        continue;
                p += 8;
                while (*p == ' ' || *p == '\t')
                        p++;
                if (*p == '(' || *p == ':')
                        return true;
        }
        return false;
}

/**
 * spec_submission_validate_kernelbench() - check a `language: "kernelbench"` submission
 * @doc:      the submission object; borrowed
 * @kb:       the KernelBench task it names (common/kbtasks.h); borrowed; NULL
 *            when the task has no KernelBench entry (a fault at /task)
 * @ret_norm: as spec_submission_validate(): on 0 a new normalized object
 *            {task, language, mode, priority, timing, tags, source}; on
 *            SPEC_E_CANDIDATE a new object with the envelope normalized and
 *            the source as given (or its size under "omitted")
 * @err:      filled on SPEC_E_INVALID and SPEC_E_CANDIDATE
 *
 * The envelope: task (required: an inline task_spec cannot carry a Python
 * module), language, mode, priority, timing, tags; plan, scratch, options,
 * name_expressions, frontend and shapes belong to the CUDA and PTX formats
 * and are a fault of the request here (SPEC_E_INVALID). The candidate: the
 * source, a non-empty string of at most LIMIT_SOURCE_BYTES that defines
 * `class ModelNew` (SPEC_E_CANDIDATE otherwise).
 *
 * Return: 0, SPEC_E_INVALID, SPEC_E_CANDIDATE, or a negative errno.
 */
int spec_submission_validate_kernelbench(json_t *doc, const struct KbTask *kb, json_t **ret_norm, SpecError *err)
{
        static const char *const fields[] = { "task", "language", "source", "mode", "timing", "priority", "tags",
                                              "plan", "scratch", "options", "name_expressions", "frontend",
                                              "shapes", "task_spec", NULL };
        static const char *const other_format[] = { "task_spec", "plan", "scratch", "options", "name_expressions",
                                                    "frontend", "shapes", NULL };
        static const char *const kb_language[] = { "kernelbench", NULL };
        const char *name = NULL, *source = NULL;
        json_t *norm = NULL, *timing = NULL, *tags = NULL, *src;
        int lang = 0, mode = 0, prio = 0, r;

        if (!json_is_object(doc)) {
                r = jsonutil_fail(err, "", "a submission must be a JSON object");
                goto out;
        }
        if ((r = jsonutil_check_fields(doc, "", fields, err)))
                goto out;
        for (const char *const *f = other_format; *f; f++)
                if (json_object_get(doc, *f)) {
                        char p[JSONUTIL_PTR_BYTES];
                        jsonutil_ptr_key(p, "", *f);
                        r = jsonutil_fail(err, p, "'%s' is not part of a kernelbench submission (the source is a "
                                          "whole ModelNew module; the task's shapes are all judged)", *f);
                        goto out;
                }
        if ((r = jsonutil_get_string(doc, "", "task", true, LIMIT_NAME_BYTES, &name, err)) ||
            (r = jsonutil_get_enum(doc, "", "language", true, kb_language, &lang, err)) ||
            (r = jsonutil_get_enum(doc, "", "mode", false, modes, &mode, err)) ||
            (r = jsonutil_get_enum(doc, "", "priority", false, priorities, &prio, err)))
                goto out;
        if (!kb || strcmp(name, kb->name) != 0) {
                r = jsonutil_fail(err, "/task", "task '%.100s' takes no kernelbench submissions; GET /v1/tasks "
                                  "lists those that do (\"kernelbench\": true)", name);
                goto out;
        }
        if ((r = parse_timing(doc, &timing, err)) || (r = parse_tags(doc, &tags, err)))
                goto out;
        norm = json_pack("{s:s, s:s, s:s, s:s, s:O, s:O}", "task", kb->name, "language", "kernelbench", "mode",
                         modes[mode], "priority", priorities[prio], "timing", timing, "tags", tags);
        if (!norm) {
                r = -ENOMEM;
                goto out;
        }
        /* ---- the candidate ---- */
        src = json_object_get(doc, "source");
        if ((r = jsonutil_get_string(doc, "", "source", true, LIMIT_SOURCE_BYTES, &source, err)))
                goto candidate;
        if (!source[0]) {
                r = jsonutil_fail(err, "/source", "'source' is empty");
                goto candidate;
        }
        if (!has_model_new(source)) {
                r = jsonutil_fail(err, "/source", "the source defines no 'class ModelNew' on a line of its own: "
                                  "a kernelbench submission is a module with class ModelNew(nn.Module), whose "
                                  "__init__ takes the task's get_init_inputs() and forward its get_inputs()");
                goto candidate;
        }
        if (json_object_set(norm, "source", src)) {
                r = -ENOMEM;
                goto out;
        }
        *ret_norm = norm;
        norm = NULL;
        r = 0;
        goto out;
candidate:
        r = candidate_rejected(doc, &norm, r, ret_norm);
out:
        json_decref(norm);
        json_decref(timing);
        json_decref(tags);
        return r;
}
