/*
 * pipeline - the pure parts of a job's way through kevald, shared by the
 * dispatcher and `kevald eval`: compile cache keys, seed derivation, and
 * the assembly of the result JSON (docs/internals.md) with its `feedback`
 * text for a model to read. No I/O here.
 */
#pragma once

#include <stdbool.h>

#include <jansson.h>
#include <stdint.h>

#include "common/baselines.h"

/* sha256 over everything that determines a CUBIN. */
void pipeline_cache_key(const char *language, const char *arch, const char *nvrtc, bool fence, json_t *options,
                        json_t *name_expressions, const char *source, size_t source_len,
                        uint8_t ret_key[32]);

/* Seed of attempt @attempt of job @id: the first 8 bytes of HMAC(secret, "seed:<id>:<attempt>"). */
uint64_t pipeline_seed(const uint8_t secret[32], int64_t id, int attempt);

/* The client-facing compile section from a compile RESULT; new reference. */
json_t *pipeline_compile_section(json_t *compile_result, int cache_hit);

/**
 * pipeline_result() - assemble a result
 * @task:    task name or NULL
 * @verdict: the verdict
 * @compile: compile section or NULL; borrowed
 * @gpu:     the GPU worker's RESULT or NULL; borrowed (its correctness,
 *           timing, resources, error and gpu parts are copied)
 * @error:   an error object for verdicts decided by the supervisor, or NULL; borrowed
 * @seed:    the job's seed (reported so any result can be reproduced)
 *
 * reward_fields is {compiled, correct, speedup, speedup_vs,
 * roofline_fraction, suspicious}: suspicious is true when the timing ran
 * faster than half the roofline bound (timing.suspicious or any
 * timing.shapes[].roofline.suspicious), false without timing; speedup is
 * timing.speedup for a correct verdict, and null otherwise or when
 * suspicious (timing.speedup keeps the measured number); speedup_vs and
 * roofline_fraction are timing's, null under the same rule.
 *
 * A timing section gets its yardsticks, per shape set and overall
 * (pipeline_result_measured()); with no baselines, speedup_vs has only the
 * reference.
 *
 * Return: a new result object with reward_fields and feedback filled in,
 * or NULL when out of memory.
 */
json_t *pipeline_result(const char *task, const char *verdict, json_t *compile, json_t *gpu,
                        json_t *error, uint64_t seed);

/**
 * pipeline_result_measured() - pipeline_result() with PyTorch baselines
 * @baselines: the measured baselines (common/baselines.h), or NULL for
 *             none; borrowed. Pass NULL for a task sent inline (task_spec):
 *             its name is no proof it is the library's task.
 *
 * Every timed shape set, timing.shapes[i], gets speedup_vs {reference,
 * torch_eager, torch_compile} (the reference's: that shape set's speedup;
 * the others: the baseline median of @task's shape set on the GPU model of
 * gpu.name over the candidate's median; null where there is none) and
 * roofline_fraction (roofline.min_ms over the candidate's median, at most
 * 1; null without a roofline). timing.speedup_vs and
 * timing.roofline_fraction are their geometric means over the timed shape
 * sets, null where any is null, like timing.speedup (which is
 * timing.speedup_vs.reference). The feedback of a
 * correct result names each yardstick and the strongest (the smallest
 * speedup) when there is a PyTorch baseline, and the roofline fraction.
 * The result's timing is a copy; @gpu is not changed.
 */
json_t *pipeline_result_measured(const char *task, const char *verdict, json_t *compile, json_t *gpu,
                                 json_t *error, uint64_t seed, const Baselines *baselines);

/**
 * pipeline_rejected() - the result of a candidate rejected at acceptance
 * @task:    task name or NULL
 * @message: what is wrong (SpecError.message)
 * @pointer: the offending field of the submission (SpecError.pointer)
 *
 * Verdict "rejected", error {kind "submission", message, pointer}, the
 * usual reward_fields and feedback, and no seed: nothing ran.
 * Return: a new result object, or NULL when out of memory.
 */
json_t *pipeline_rejected(const char *task, const char *message, const char *pointer);

/* An error object {"kind": kind, "message": message}; new reference. */
json_t *pipeline_error(const char *kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
