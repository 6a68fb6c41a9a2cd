/*
 * bodyscan - a bounded look at a JSON request body before it is parsed.
 * jansson builds the whole tree before a handler can count anything, and a
 * tree costs up to ~85 times its text (an empty object is 3 bytes of text
 * and ~250 bytes of tree). bodyscan walks the text once, allocating nothing,
 * and says whether the parse would break a limit: nesting deeper than
 * LIMIT_JSON_DEPTH, a batch ("submissions" array of the top object) longer
 * than the batch limit, or a tree estimated larger than the body may cost
 * (LIMIT_JSON_TREE_RATIO bytes per body byte plus LIMIT_JSON_TREE_SLACK_BYTES).
 * Text that is not JSON passes: the parser says what is wrong with it.
 */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "common/jsonutil.h"

/* Outcomes of bodyscan_json(), the first that the text breaks. */
enum {
        BODYSCAN_E_DEPTH = 1,  /* a container nested deeper than max_depth */
        BODYSCAN_E_BATCH,      /* the top object's "submissions" array is longer than batch_limit */
        BODYSCAN_E_TREE,       /* the parsed tree would take more than tree_bytes */
};

typedef struct BodyScanLimits {
        int max_depth;         /* the top-level value is depth 1 */
        size_t batch_limit;
        size_t tree_bytes;
} BodyScanLimits;

typedef struct BodyScan {
        size_t items;          /* elements of the top object's "submissions" array */
        size_t tree_bytes;     /* estimated bytes of jansson's tree, up to where the scan stopped */
        char pointer[JSONUTIL_PTR_BYTES]; /* the offending value (RFC 6901) when not 0 */
} BodyScan;

/**
 * bodyscan_json() - scan @text for what its parse would cost
 * @text:     @len bytes, not necessarily NUL-terminated; borrowed
 * @lim:      the limits; borrowed
 * @ret_scan: filled in whatever the outcome (items counts the whole batch
 *            even past the limit; the other counts stop at the first breach)
 * Return: 0 (within the limits, or not JSON), BODYSCAN_E_DEPTH,
 * BODYSCAN_E_BATCH or BODYSCAN_E_TREE.
 */
int bodyscan_json(const char *text, size_t len, const BodyScanLimits *lim, BodyScan *ret_scan);

/**
 * bodyscan_submissions() - bodyscan_json() with the limits of a POST
 * /v1/submissions body, answered as a problem
 * @batch_limit: the server's batch limit
 * @ret_problem: on a breach, a new problem+json object (422 with a pointer
 *               for depth and batch, 413 for the tree) the caller answers
 * Return: 0, or BODYSCAN_E_* (@ret_problem set; NULL if out of memory).
 */
int bodyscan_submissions(const char *text, size_t len, size_t batch_limit, json_t **ret_problem);
