/*
 * test-bodyscan - the pre-parse scan: batch length counted exactly (and
 * only for the top object's "submissions"), depth refused at LIMIT_JSON_DEPTH
 * + 1 with the pointer of the offending container, the tree estimate
 * bounding jansson's real allocations from above and refusing a body of
 * empty objects, escaped quotes and brackets inside strings ignored, and
 * text that is not JSON passed on to the parser.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/limits.h"
#include "server/http/bodyscan.h"
#include "common/testcheck.h"

static int scan(const char *text, size_t batch, size_t tree, BodyScan *out)
{
        BodyScanLimits lim = { .max_depth = LIMIT_JSON_DEPTH, .batch_limit = batch, .tree_bytes = tree };

        return bodyscan_json(text, strlen(text), &lim, out);
}

/* "{"submissions":[ITEM,ITEM,...]}" with @n items; a new string. */
static char *batch_of(const char *item, size_t n)
{
        size_t il = strlen(item);
        char *b = malloc(32 + n * (il + 1)), *p = b;

        if (!b)
                abort();
        p += sprintf(p, "{\"submissions\":[");
        for (size_t i = 0; i < n; i++) {
                if (i)
                        *p++ = ',';
                memcpy(p, item, il);
                p += il;
        }
        strcpy(p, "]}");
        return b;
}

/* jansson's real allocation for @text, against the estimate. */
static void check_estimate(const char *text)
{
        BodyScan s;
        struct mallinfo2 a, b;
        json_t *j;
        size_t used;

        CHECK(scan(text, 1u << 30, (size_t)-1, &s) == 0);
        a = mallinfo2();
        j = json_loads(text, 0, NULL);
        b = mallinfo2();
        CHECK(j != NULL);
        used = (b.uordblks + b.hblkhd) - (a.uordblks + a.hblkhd);
        json_decref(j);
        if (used == 0)
                return;         /* an allocator that glibc's statistics do not see (ASan's) */
        if (used > s.tree_bytes || s.tree_bytes > 2 * used + 4096)
                fprintf(stderr, "estimate %zu, jansson %zu for %.40s...\n", s.tree_bytes, used, text);
        CHECK(used <= s.tree_bytes);              /* from above */
        CHECK(s.tree_bytes <= 2 * used + 4096);   /* and not wildly */
}

int main(void)
{
        BodyScan s;
        json_t *problem = NULL;
        char *b, deep[256];

        /* Batches are counted exactly, past the limit too. */
        b = batch_of("{\"task\":\"vector_add\",\"source\":\"x\"}", 10);
        CHECK(scan(b, 10, 1u << 30, &s) == 0 && s.items == 10);
        CHECK(scan(b, 9, 1u << 30, &s) == BODYSCAN_E_BATCH && s.items == 10);
        CHECK(!strcmp(s.pointer, "/submissions"));
        free(b);
        b = batch_of("{}", 100000);
        CHECK(scan(b, 4096, 1u << 30, &s) == BODYSCAN_E_BATCH && s.items == 100000);
        CHECK(s.tree_bytes < (4096 + 1) * 300);   /* the estimate stopped at the limit */
        CHECK(bodyscan_submissions(b, strlen(b), 4096, &problem) == BODYSCAN_E_BATCH);
        CHECK(json_integer_value(json_object_get(problem, "status")) == 422);
        CHECK(!strcmp(json_string_value(json_object_get(problem, "pointer")), "/submissions"));
        CHECK(strstr(json_string_value(json_object_get(problem, "detail")), "this one has 100000") != NULL);
        json_decref(problem);
        free(b);

        /* Only the top object's "submissions" is a batch. */
        CHECK(scan("{\"x\":{\"submissions\":[1,2,3]}}", 2, 1u << 30, &s) == 0 && s.items == 0);
        CHECK(scan("[{\"submissions\":[1,2,3]}]", 2, 1u << 30, &s) == 0 && s.items == 0);
        CHECK(scan("{\"a\":[1],\"submissions\":[1,2,3]}", 2, 1u << 30, &s) == BODYSCAN_E_BATCH);
        CHECK(scan("{\"submissions\":[[1,2,3],{\"a\":[4,5]}]}", 2, 1u << 30, &s) == 0 && s.items == 2);
        /* Quotes, brackets and commas inside strings and keys are text. */
        CHECK(scan("{\"submissions\":[\"a,\\\"],[\", \"\\\\\", \"{\"]}", 3, 1u << 30, &s) == 0 && s.items == 3);
        CHECK(scan("{\"sub\\\"missions\":[1,2,3]}", 2, 1u << 30, &s) == 0);

        /* Depth: 32 levels pass, 33 are refused, pointing at the 33rd. */
        memset(deep, 0, sizeof(deep));
        for (int i = 0; i < LIMIT_JSON_DEPTH; i++)
                deep[i] = '[';
        for (int i = 0; i < LIMIT_JSON_DEPTH; i++)
                deep[LIMIT_JSON_DEPTH + i] = ']';
        CHECK(scan(deep, 10, 1u << 30, &s) == 0);
        CHECK(scan("{\"a\":[0,{\"b\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}]}", 10, 1u << 30,
                   &s) == BODYSCAN_E_DEPTH);
        CHECK(!strcmp(s.pointer, "/a/1/b/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0"));   /* 3 + 29 levels open */
        CHECK(scan("{\"a/b~\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}", 10, 1u << 30, &s) ==
              BODYSCAN_E_DEPTH);
        CHECK(!strncmp(s.pointer, "/a~1b~0/0/", 10));

        /* The estimate is an upper bound of jansson's allocations, within 2x. */
        b = batch_of("{}", 20000);
        check_estimate(b);
        free(b);
        b = batch_of("[0,1.5,true,null,\"abcdefgh\"]", 20000);
        check_estimate(b);
        free(b);
        b = batch_of("{\"task\":\"vector_add\",\"mode\":\"compile\",\"source\":"
                     "\"__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\",\"tags\":{\"run\":\"r1\"}}", 4096);
        check_estimate(b);
        free(b);

        /* A body of empty objects is refused for its tree, not parsed. */
        b = batch_of("{}", 4000);
        CHECK(scan(b, 4096, 4000 * 200, &s) == BODYSCAN_E_TREE);
        CHECK(!strncmp(s.pointer, "/submissions/", 13));
        free(b);
        b = malloc(4 << 20);
        strcpy(b, "{\"submissions\":[{\"task\":\"t\",\"x\":[");
        for (size_t n = strlen(b); n < (4u << 20) - 16; n += 2)
                strcpy(b + n, "0,");
        strcat(b, "0]}]}");
        CHECK(bodyscan_submissions(b, strlen(b), 4096, &problem) == BODYSCAN_E_TREE);
        CHECK(json_integer_value(json_object_get(problem, "status")) == 413);
        CHECK(!strncmp(json_string_value(json_object_get(problem, "pointer")), "/submissions/0/x/", 17));
        json_decref(problem);
        free(b);

        /* Not JSON: passed on, the parser reports it. */
        CHECK(scan("{\"submissions\":[1,2,3", 2, 1u << 30, &s) == BODYSCAN_E_BATCH);   /* counted as it goes */
        CHECK(scan("{\"a\":\"unterminated", 2, 1u << 30, &s) == 0);
        CHECK(scan("]]]", 2, 1u << 30, &s) == 0);
        CHECK(scan("{\"a\":@}", 2, 1u << 30, &s) == 0);
        CHECK(scan("", 2, 1u << 30, &s) == 0 && s.tree_bytes == 0);

        if (failures)
                fprintf(stderr, "test-bodyscan: %d failure(s)\n", failures);
        return failures ? 1 : 0;
}
