/*
 * test-extents - the slab's range placement (worker/gpu/extents.h): first fit,
 * rounding to the granule, merging on give-back, rejected bad give-backs,
 * and a random sequence checked against a granule-by-granule model.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/gpu/extents.h"
#include "common/testcheck.h"

#define G EXTENTS_GRANULE

/* The free table is sorted, disjoint, never adjacent, inside the region, and sums to free_bytes. */
static bool well_formed(const Extents *e)
{
        uint64_t sum = 0;

        for (size_t i = 0; i < e->n; i++) {
                const ExtentRange *f = &e->free[i];
                if (f->len == 0 || f->off % G || f->len % G || f->off + f->len > e->size)
                        return false;
                if (i > 0 && e->free[i - 1].off + e->free[i - 1].len >= f->off)
                        return false;
                sum += f->len;
        }
        return sum == e->free_bytes;
}

static void test_basic(void)
{
        Extents e;
        uint64_t a, b, c, d;

        CHECK(extents_init(&e, 10 * G + 100) == 0);
        CHECK(e.size == 10 * G && e.free_bytes == 10 * G && e.n == 1);
        CHECK(extents_round(0) == G && extents_round(1) == G && extents_round(G) == G && extents_round(G + 1) == 2 * G);
        CHECK(extents_round(UINT64_MAX) == 0);
        CHECK(extents_take(&e, 1, &a) == 0 && a == 0);
        CHECK(extents_take(&e, 2 * G, &b) == 0 && b == G);
        CHECK(extents_take(&e, G + 1, &c) == 0 && c == 3 * G);
        CHECK(e.free_bytes == 5 * G && well_formed(&e));
        CHECK(extents_take(&e, 6 * G, &d) == -ENOSPC);
        CHECK(extents_take(&e, UINT64_MAX, &d) == -EOVERFLOW);
        /* a hole at b: first fit puts a small range there, a large one after c */
        CHECK(extents_give(&e, b, 2 * G) == 0 && e.n == 2 && well_formed(&e));
        CHECK(extents_take(&e, 3 * G, &d) == 0 && d == 5 * G);
        CHECK(extents_take(&e, G, &d) == 0 && d == G);
        CHECK(extents_give(&e, d, G) == 0);
        /* bad give-backs change nothing */
        CHECK(extents_give(&e, G, G) == -EINVAL);          /* already free */
        CHECK(extents_give(&e, 0, 2 * G) == -EINVAL);      /* overlaps the free G */
        CHECK(extents_give(&e, 7, G) == -EINVAL);          /* misaligned */
        CHECK(extents_give(&e, 9 * G, 2 * G) == -EINVAL);  /* past the end */
        CHECK(extents_give(&e, UINT64_MAX - G + 1, G) == -EINVAL);
        CHECK(well_formed(&e) && e.free_bytes == 4 * G);
        /* giving everything back merges into one range */
        CHECK(extents_give(&e, a, 1) == 0);
        CHECK(extents_give(&e, 5 * G, 3 * G) == 0);
        CHECK(extents_give(&e, c, G + 1) == 0);
        CHECK(e.n == 1 && e.free[0].off == 0 && e.free[0].len == 10 * G && well_formed(&e));
        extents_fini(&e);
        CHECK(extents_init(&e, G - 1) == 0 && e.size == 0 && extents_take(&e, 1, &a) == -ENOSPC);
        extents_fini(&e);
}

/* Random takes and gives against a model with one flag per granule. */
static void test_random(void)
{
        enum { UNITS = 4096, LIVE = 256 };
        struct { uint64_t off, bytes; } live[LIVE];
        bool used[UNITS] = { 0 };
        size_t n_live = 0;
        unsigned seed = 12345;
        Extents e;
        int bad = 0;

        CHECK(extents_init(&e, (uint64_t)UNITS * G) == 0);
        for (int step = 0; step < 200000 && !bad; step++) {
                seed = seed * 1103515245u + 12345u;
                if (n_live < LIVE && (n_live == 0 || (seed >> 16) % 3 != 0)) {
                        uint64_t bytes = 1 + (seed >> 8) % (64 * G), off = 0, units = extents_round(bytes) / G;
                        int64_t want = -1;
                        for (uint64_t u = 0; u + units <= UNITS && want < 0; u++) {
                                uint64_t k = 0;
                                while (k < units && !used[u + k])
                                        k++;
                                if (k == units)
                                        want = (int64_t)u;
                                else
                                        u += k;
                        }
                        int r = extents_take(&e, bytes, &off);
                        if (want < 0) {
                                bad |= r != -ENOSPC;
                                continue;
                        }
                        bad |= r != 0 || off != (uint64_t)want * G;
                        for (uint64_t k = 0; k < units; k++)
                                used[want + k] = true;
                        live[n_live].off = off;
                        live[n_live++].bytes = bytes;
                } else {
                        size_t i = (seed >> 12) % n_live;
                        uint64_t units = extents_round(live[i].bytes) / G;
                        bad |= extents_give(&e, live[i].off, live[i].bytes) != 0;
                        for (uint64_t k = 0; k < units; k++)
                                used[live[i].off / G + k] = false;
                        live[i] = live[--n_live];
                }
                if (step % 97 == 0)
                        bad |= !well_formed(&e);
        }
        CHECK(!bad);
        while (n_live > 0) {
                n_live--;
                CHECK(extents_give(&e, live[n_live].off, live[n_live].bytes) == 0);
        }
        CHECK(e.n == 1 && e.free_bytes == (uint64_t)UNITS * G && well_formed(&e));
        extents_fini(&e);
}

int main(void)
{
        test_basic();
        test_random();
        if (failures)
                fprintf(stderr, "test-extents: %d failure(s)\n", failures);
        return failures ? 1 : 0;
}
