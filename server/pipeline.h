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
 * reward_fields is {compiled, correct, speedup, suspicious}: suspicious is
 * true when the timing ran faster than half the roofline bound
 * (timing.suspicious or any timing.shapes[].roofline.suspicious), false
 * without timing; speedup is timing.speedup for a correct verdict, and null
 * otherwise or when suspicious (timing.speedup keeps the measured number).
 *
 * Return: a new result object with reward_fields and feedback filled in.
 */
json_t *pipeline_result(const char *task, const char *verdict, json_t *compile, json_t *gpu,
                        json_t *error, uint64_t seed);

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
