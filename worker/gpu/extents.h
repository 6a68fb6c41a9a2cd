/*
 * extents - first-fit placement of byte ranges in one region [0, size),
 * kept on the host: devmem.c carves the worker's device-memory slab with it.
 * Every range is a multiple of EXTENTS_GRANULE bytes and starts at one, so a
 * range's offset added to a suitably aligned base is aligned the same way.
 * The free space is a sorted array of disjoint, non-adjacent ranges; giving
 * a range back merges it with its neighbours. No CUDA here, so it is
 * unit-tested on the CPU (worker/gpu/test-extents.c).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EXTENTS_GRANULE 512u

typedef struct ExtentRange {
        uint64_t off, len;
} ExtentRange;

typedef struct Extents {
        ExtentRange *free;  /* sorted by offset, disjoint, never adjacent */
        size_t n, cap;
        uint64_t size;      /* the region, rounded down to the granule */
        uint64_t free_bytes;
} Extents;

int extents_init(Extents *e, uint64_t size);
void extents_fini(Extents *e);
uint64_t extents_round(uint64_t bytes);
int extents_take(Extents *e, uint64_t bytes, uint64_t *ret_off);
int extents_give(Extents *e, uint64_t off, uint64_t bytes);
