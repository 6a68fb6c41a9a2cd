/*
 * spec - tasks, submissions and launch plans as data: parse, validate,
 * check against compiled kernels, and resolve into the GPU worker's job.
 * docs/internals.md gives the formats; schema/task.schema.json and
 * schema/submission.schema.json are their machine-readable form, and the
 * validators here enforce the same rules (tests keep them in step).
 *
 * Errors carry a JSON pointer to the offending field (RFC 6901) relative to
 * the document validated, so the HTTP layer can answer problem+json.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct SpecError {
        char pointer[512];   /* e.g. "/plan/0/grid/1" */
        char message[512];   /* e.g. "unknown param 'Q' in expression" */
} SpecError;

enum {
        SPEC_E_INVALID = 1,  /* the document breaks the format; see SpecError */
        SPEC_E_REJECTED = 2, /* plan does not match the compiled kernels; see SpecError */
        SPEC_E_CANDIDATE = 3, /* the candidate's own content (source, plan, options, ...) is wrong:
                               * a "rejected" verdict to store, not a refused request; see SpecError */
};

typedef struct Task Task;

/**
 * spec_task_parse() - validate a task document and build a Task
 * @doc:      the task JSON; borrowed
 * @base_dir: folder that source_file paths are relative to, or NULL for
 *            inline tasks (which must carry "source")
 * @ret_task: on success, a new Task (spec_task_free())
 * @err:      filled on SPEC_E_INVALID
 * Return: 0, SPEC_E_INVALID, or a negative errno.
 */
int spec_task_parse(json_t *doc, const char *base_dir, Task **ret_task, SpecError *err);
void spec_task_free(Task *task);
const char *spec_task_name(const Task *task);
/* The task as served: the document with the reference source inlined; borrowed. */
json_t *spec_task_json(const Task *task);
/* Summary for listings: name, title, level, category, params, shapes, provenance, dtypes; new reference. */
json_t *spec_task_summary(const Task *task);
/* The reference source; NULL when the reference plan is library steps only (nothing to compile). */
const char *spec_task_reference_source(const Task *task);
json_t *spec_task_reference_options(const Task *task);  /* borrowed */
/* A prompt a model can act on (GET /v1/tasks/{name}/prompt); new string, free(). */
char *spec_task_prompt(const Task *task, json_t *allowed_options);
/* The Triton variant (?language=triton): how kevald.triton runs a kernel, an example of the
 * task's family; new string, free(). */
char *spec_task_prompt_triton(const Task *task);

/**
 * spec_submission_validate() - check a submission and normalize it
 * @doc:       the submission object; borrowed
 * @task:      the task it names (library or parsed from task_spec); NULL only
 *             for mode "compile"
 * @ret_norm:  on success, a new normalized object: defaults filled in,
 *             timing presets expanded, task_spec kept inline; on
 *             SPEC_E_CANDIDATE, a new object with the envelope normalized and
 *             the candidate's fields as given (or their sizes under "omitted")
 * Return: 0, SPEC_E_INVALID (the envelope: task, language, frontend, mode, priority,
 * timing, tags, shapes, unknown fields), SPEC_E_CANDIDATE (source, options,
 * name_expressions, scratch, plan), or a negative errno.
 */
int spec_submission_validate(json_t *doc, const Task *task, json_t **ret_norm, SpecError *err);

struct KbTask;
/**
 * spec_submission_validate_kernelbench() - check a `language: "kernelbench"` submission
 * @doc: borrowed; @kb: its KernelBench task (common/kbtasks.h), borrowed, NULL when the named
 * task has none; @ret_norm and @err as spec_submission_validate().
 * Return: 0, SPEC_E_INVALID (the envelope, an unknown task, a field of another format),
 * SPEC_E_CANDIDATE (the source: missing, empty, too large, no class ModelNew), or -errno.
 */
int spec_submission_validate_kernelbench(json_t *doc, const struct KbTask *kb, json_t **ret_norm,
                                         SpecError *err);

/**
 * spec_check_plan() - check a plan against the compiled kernels
 * @task:    borrowed
 * @plan:    a normalized plan (candidate's, or the task reference's); borrowed
 * @scratch: the scratch list that goes with it; borrowed
 * @compile: the compile RESULT JSON (kernels, lowered_names); borrowed
 * Every kernel must exist; arg count and sizes must match the parameter list;
 * block dims must not exceed max_threads_per_block; static + dynamic shared
 * memory must fit the device (@max_shared_optin, 0 = skip).
 * Return: 0, SPEC_E_REJECTED (err names the launch and argument).
 */
int spec_check_plan(const Task *task, json_t *plan, json_t *scratch, json_t *compile,
                    long max_shared_optin, SpecError *err);

/**
 * spec_resolve() - build the GPU worker's JOB JSON (docs/internals.md)
 * @task, @submission: borrowed; the submission is the normalized one
 * @cand_compile, @ref_compile: compile RESULTs (for lowered names); borrowed
 * @job_id, @seed: copied into the job
 * @ret_job: on success, a new object
 * Return: 0, SPEC_E_INVALID (an expression failed for some shape set: err
 * says which), or a negative errno.
 */
int spec_resolve(const Task *task, json_t *submission, json_t *cand_compile, json_t *ref_compile,
                 int64_t job_id, uint64_t seed, json_t **ret_job, SpecError *err);
