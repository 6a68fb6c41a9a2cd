/*
 * test-problem - problem+json objects: every kind has a distinct slug, a
 * title and a 4xx/5xx status; the object carries type, title, status,
 * detail and (only when given) pointer; bad UTF-8 in a detail does not
 * lose the problem.
 */
#include <stdio.h>
#include <string.h>

#include "server/http/problem.h"
#include "common/testcheck.h"

int main(void)
{
        json_t *p;

        for (int k = 0; k < PROBLEM__COUNT; k++) {
                CHECK(problem_status((ProblemKind)k) >= 400 && problem_status((ProblemKind)k) <= 599);
                CHECK(problem_title((ProblemKind)k)[0] != 0);
                for (int j = 0; j < k; j++)
                        CHECK(strcmp(problem_slug((ProblemKind)k), problem_slug((ProblemKind)j)) != 0);
        }
        CHECK(problem_status(PROBLEM_INVALID) == 422);
        CHECK(problem_status(PROBLEM_MALFORMED_JSON) == 400);
        CHECK(problem_status(PROBLEM_BODY_TOO_LARGE) == 413);
        CHECK(problem_status(PROBLEM_RATE_LIMITED) == 429);
        CHECK(problem_status(PROBLEM_QUEUE_FULL) == 503);
        CHECK(problem_status(PROBLEM_IDEMPOTENCY_MISMATCH) == 422);

        p = problem_new(PROBLEM_INVALID, "/submissions/7/plan/0/grid", "unknown param '%s'", "Q");
        CHECK(!strcmp(json_string_value(json_object_get(p, "type")), PROBLEM_TYPE_BASE "invalid-field"));
        CHECK(!strcmp(json_string_value(json_object_get(p, "title")), "Invalid field"));
        CHECK(json_integer_value(json_object_get(p, "status")) == 422);
        CHECK(!strcmp(json_string_value(json_object_get(p, "detail")), "unknown param 'Q'"));
        CHECK(!strcmp(json_string_value(json_object_get(p, "pointer")), "/submissions/7/plan/0/grid"));
        CHECK(json_object_size(p) == 5);
        json_decref(p);

        p = problem_new(PROBLEM_NOT_FOUND, NULL, "no submission %d", 12);
        CHECK(json_object_get(p, "pointer") == NULL);
        CHECK(json_integer_value(json_object_get(p, "status")) == 404);
        CHECK(!strcmp(json_string_value(json_object_get(p, "detail")), "no submission 12"));
        json_decref(p);

        /* A detail quoting invalid UTF-8 falls back to the title; the problem survives. */
        p = problem_new(PROBLEM_INVALID, "/task", "unknown task '%s'", "\xff\xfe");
        CHECK(p != NULL);
        CHECK(json_is_string(json_object_get(p, "detail")));
        CHECK(!strcmp(json_string_value(json_object_get(p, "pointer")), "/task"));
        json_decref(p);

        /* An out-of-range kind is an internal error, not a crash. */
        p = problem_new((ProblemKind)999, NULL, "x");
        CHECK(json_integer_value(json_object_get(p, "status")) == 500);
        json_decref(p);

        if (failures)
                fprintf(stderr, "%d check(s) failed\n", failures);
        else
                printf("problem: all checks passed\n");
        return failures ? 1 : 0;
}
