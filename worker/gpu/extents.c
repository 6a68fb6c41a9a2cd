/*
 * extents - see extents.h. Invariant: free[0..n) is sorted by offset, every
 * range is non-empty, granule-aligned and inside [0, size), and no two
 * ranges overlap or touch (touching ones are merged); free_bytes is the sum
 * of their lengths.
 */
#include "worker/gpu/extents.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/** extents_round() - @bytes rounded up to the granule (at least one granule); 0 on overflow. */
uint64_t extents_round(uint64_t bytes)
{
        if (bytes == 0)
                return EXTENTS_GRANULE;
        if (bytes > UINT64_MAX - (EXTENTS_GRANULE - 1))
                return 0;
        return (bytes + EXTENTS_GRANULE - 1) / EXTENTS_GRANULE * EXTENTS_GRANULE;
}

/**
 * extents_init() - one free range [0, @size rounded down to the granule).
 * Return: 0, -ENOMEM.
 */
int extents_init(Extents *e, uint64_t size)
{
        uint64_t len = size / EXTENTS_GRANULE * EXTENTS_GRANULE;

        memset(e, 0, sizeof(*e));
        if (len == 0)
                return 0;
        if (!(e->free = malloc(16 * sizeof(*e->free))))
                return -ENOMEM; /* an empty region, as for size 0 */
        e->size = len;
        e->cap = 16;
        e->free[0] = (ExtentRange){ 0, e->size };
        e->n = 1;
        e->free_bytes = e->size;
        return 0;
}

void extents_fini(Extents *e)
{
        free(e->free);
        memset(e, 0, sizeof(*e));
}

/**
 * extents_take() - place @bytes (rounded up to the granule) at the lowest
 * offset with room.
 * @ret_off: the range's offset, on success
 * Return: 0, -ENOSPC (no free range is large enough), -EOVERFLOW.
 */
int extents_take(Extents *e, uint64_t bytes, uint64_t *ret_off)
{
        uint64_t len = extents_round(bytes);

        if (len == 0)
                return -EOVERFLOW;
        for (size_t i = 0; i < e->n; i++) {
                ExtentRange *f = &e->free[i];
                if (f->len < len)
                        continue;
                *ret_off = f->off;
                f->off += len;
                f->len -= len;
                if (f->len == 0) {
                        memmove(f, f + 1, (e->n - i - 1) * sizeof(*f));
                        e->n--;
                }
                e->free_bytes -= len;
                return 0;
        }
        return -ENOSPC;
}

/**
 * extents_give() - give back the range extents_take() placed at @off for
 * @bytes (the same @bytes: it is rounded the same way), merged with free
 * neighbours.
 * Return: 0, -EINVAL (outside the region, misaligned, or overlapping free
 * space: nothing changes), -ENOMEM (the table could not grow: nothing
 * changes; the range stays taken).
 */
int extents_give(Extents *e, uint64_t off, uint64_t bytes)
{
        uint64_t len = extents_round(bytes), end;
        size_t lo = 0, hi = e->n;
        bool join_prev, join_next;

        if (len == 0 || off % EXTENTS_GRANULE || off > e->size || len > e->size - off)
                return -EINVAL;
        end = off + len;
        while (lo < hi) { /* lo: the first free range at or after off */
                size_t mid = lo + (hi - lo) / 2;
                if (e->free[mid].off < off)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if ((lo > 0 && e->free[lo - 1].off + e->free[lo - 1].len > off) || (lo < e->n && e->free[lo].off < end))
                return -EINVAL;
        join_prev = lo > 0 && e->free[lo - 1].off + e->free[lo - 1].len == off;
        join_next = lo < e->n && e->free[lo].off == end;
        if (join_prev && join_next) {
                e->free[lo - 1].len += len + e->free[lo].len;
                memmove(&e->free[lo], &e->free[lo + 1], (e->n - lo - 1) * sizeof(*e->free));
                e->n--;
        } else if (join_prev) {
                e->free[lo - 1].len += len;
        } else if (join_next) {
                e->free[lo].off = off;
                e->free[lo].len += len;
        } else {
                if (e->n == e->cap) {
                        size_t c = e->cap ? 2 * e->cap : 16;
                        ExtentRange *g = realloc(e->free, c * sizeof(*g));
                        if (!g)
                                return -ENOMEM;
                        e->free = g;
                        e->cap = c;
                }
                memmove(&e->free[lo + 1], &e->free[lo], (e->n - lo) * sizeof(*e->free));
                e->free[lo] = (ExtentRange){ off, len };
                e->n++;
        }
        e->free_bytes += len;
        return 0;
}
