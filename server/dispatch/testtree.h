/*
 * testtree.h - a scratch tree for the unit tests of the walks over a folder
 * another user can write (test-fstree, test-torchview): a fresh folder `base`
 * in /tmp, paths beneath it, and folders and links made there; a fixture that
 * cannot be made stops the test (exit 1). Include it once, from the test's
 * .c file only, after common/testcheck.h.
 */
#ifndef KEVALD_SERVER_DISPATCH_TESTTREE_H
#define KEVALD_SERVER_DISPATCH_TESTTREE_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_BYTES 1024 /* base, then a path beneath it */

static char base[64];

/* @base/@rel made a path in @out */
static inline const char *at(char *out, size_t len, const char *rel)
{
        snprintf(out, len, "%s/%s", base, rel);
        return out;
}

static inline void must(int ok, const char *what)
{
        if (!ok) {
                perror(what);
                exit(1);
        }
}

/* A new, empty base: /tmp/@prefix-XXXXXX (mkdtemp's template) */
static inline void tree_new(const char *prefix)
{
        snprintf(base, sizeof(base), "/tmp/%s-XXXXXX", prefix);
        must(mkdtemp(base) != NULL, "mkdtemp");
}

static inline void make_dir(const char *rel)
{
        char p[PATH_BYTES];

        must(mkdir(at(p, sizeof(p), rel), 0755) == 0, rel);
}

static inline void make_link(const char *target, const char *rel)
{
        char p[PATH_BYTES];

        must(symlink(target, at(p, sizeof(p), rel)) == 0, rel);
}

#endif
