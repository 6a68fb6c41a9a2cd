/*
 * testcheck.h - CHECK() for the C unit tests: a failed condition is printed
 * with its file and line and counted in `failures`; the test's main() exits
 * non-zero when any failed. Include it once, from the test's .c file only.
 */
#ifndef KEVALD_COMMON_TESTCHECK_H
#define KEVALD_COMMON_TESTCHECK_H

#include <stdio.h>
#include <stdlib.h>

static int failures;

#define CHECK(cond)                                                                              \
        do {                                                                                     \
                if (!(cond)) {                                                                   \
                        fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
                        failures++;                                                              \
                }                                                                                \
        } while (0)

/* Write @text to @dir/@name; a test that cannot write its fixture stops (exit 1). */
static inline void test_write_file(const char *dir, const char *name, const char *text)
{
        char path[4096];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "w");
        if (!f) {
                perror(path);
                exit(1);
        }
        fputs(text, f);
        fclose(f);
}

#endif
