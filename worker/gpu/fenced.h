/*
 * fenced - the GPU worker's side of a candidate's fenced build
 * (worker/compile/fence.h): load it, tell it which ranges the job's launches may
 * touch (the table), and read back its first violation (the record).
 * Built on gpu.h; no CUDA header.
 *
 * The ranges of a launch are the job's buffers of the set it runs on
 * (exactly: the guard bands around them are not the candidate's), and the
 * module's own __device__ variables, at the addresses and sizes the driver
 * gives for their names (neighbours merged across alignment padding).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "worker/gpu/fence_report.h"
#include "worker/gpu/gpu.h"
#include "worker/gpu/gpu_elf.h"

#define FENCE_GLOBALS_MAX 64

enum {
        FENCED_E_UNUSABLE = 1, /* no usable fenced build: run the plain one */
};

typedef struct FenceRun {
        GpuModule *mod;
        GpuPtr tab, rec, names;
        size_t names_bytes;
        FenceBuffer globals_ranges[FENCE_GLOBALS_MAX]; /* the module's __device__ variables */
        int n_globals_ranges;
        GpuElfGlobals globals; /* the module's variables, zeroed before unloading */
} FenceRun;

int fenced_init(void);
int fenced_open(FenceRun *f, const uint8_t *image, size_t size);
int fenced_arm(FenceRun *f, const FenceBuffer *bufs, int n, uint64_t loop_budget_ns);
int fenced_fetch(FenceRun *f);
bool fenced_tripped(const FenceRun *f, FenceRecord *ret);
int fenced_function(FenceRun *f, unsigned index, char *buf, size_t len);
int fenced_handoff(FenceRun *f, GpuModule *plain, const GpuElfGlobals *g, bool to_plain);
void fenced_close(FenceRun *f);
