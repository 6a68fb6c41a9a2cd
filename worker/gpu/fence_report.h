/*
 * fence_report - what a fenced build's violation record means, in words a
 * model can act on: which kernel did what to which buffer, at which element,
 * from which thread and source line. Host-only and pure (no CUDA): the GPU
 * worker reads the record (worker/fence_abi.h) and the job's buffer
 * addresses, this module turns them into the error object and message.
 */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "worker/fence_abi.h"

typedef struct FenceRecord {
        uint64_t site;     /* the site word; 0: no violation */
        uint64_t addr;
        uint32_t tid[3], ctaid[3];
} FenceRecord;

/* One range the candidate may touch: a job buffer or (merged) module variables. */
typedef struct FenceBuffer {
        const char *name;  /* borrowed */
        uint64_t ptr;      /* the buffer's first byte */
        uint64_t bytes;    /* its size */
        unsigned elem;     /* element size in bytes (1 for a module variable) */
        int is_global;     /* a __device__ variable of the module, not a job buffer */
} FenceBuffer;

void fence_record_decode(const uint64_t words[FENCE_REC_WORDS], FenceRecord *ret);
const char *fence_error_name(uint64_t site);
json_t *fence_report(const FenceRecord *rec, const FenceBuffer *bufs, int n, const char *kernel,
                     const char *function, const char *source_file, char *msg, size_t msglen);
