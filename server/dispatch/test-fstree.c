/*
 * test-fstree - the walks over a folder another user can write (server/dispatch/fstree.h):
 * they never follow a link (a link to a folder outside: its target's contents neither given
 * away, counted nor removed; a link itself is given, not what it names), a hard-linked file
 * is not given, another user's entries keep their owner, the depth bound holds (and removal
 * still gets to the bottom of a deeper tree). The giving away needs root (skipped otherwise).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/dispatch/fstree.h"
#include "common/testcheck.h"
#include "server/dispatch/testtree.h"

#define OTHER_UID 1234u /* a user who is neither root nor the new owner */
#define NEW_UID 65534u
#define REL_BYTES 512   /* a path beneath base (PATH_BYTES: base, then one of those) */

static void make_file(const char *rel, off_t size)
{
        char p[PATH_BYTES];
        int fd = open(at(p, sizeof(p), rel), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

        must(fd >= 0 && ftruncate(fd, size) == 0, rel);
        close(fd);
}

/* The owner of @rel (not followed), or -1 when it is not there. */
static long owner(const char *rel)
{
        char p[PATH_BYTES];
        struct stat st;

        return lstat(at(p, sizeof(p), rel), &st) == 0 ? (long)st.st_uid : -1;
}

static bool exists(const char *rel)
{
        return owner(rel) >= 0;
}

/* "tree/" then @n "d/" (a chain of @n nested folders beneath tree/) in @out */
static const char *chain(char *out, size_t len, int n)
{
        size_t k = (size_t)snprintf(out, len, "tree");

        for (int i = 0; i < n && k + 2 < len; i++)
                k += (size_t)snprintf(out + k, len - k, "/d");
        return out;
}

/*
 * base/outside/{keep, big (10 MiB, sparse), hardsrc}: what links point to
 * base/tree/a/b/c/file (100 bytes), tree/a/dirlink -> outside, tree/a/filelink -> outside/keep,
 * tree/hard (a hard link of outside/hardsrc), tree/other/ with other/f (OTHER_UID's when root)
 * and other/rootf (root's), and a chain tree/d/d/... @deep folders long with a file at its end
 * base/toplink -> outside
 */
static void make_fixture(int deep)
{
        char p[PATH_BYTES], q[PATH_BYTES], rel[REL_BYTES], bottom[REL_BYTES];

        tree_new("test-fstree");
        make_dir("outside");
        make_file("outside/keep", 10);
        make_file("outside/big", 10 << 20);
        make_file("outside/hardsrc", 10);
        make_dir("tree");
        make_dir("tree/a");
        make_dir("tree/a/b");
        make_dir("tree/a/b/c");
        make_file("tree/a/b/c/file", 100);
        make_link("../../outside", "tree/a/dirlink");
        make_link("../../outside/keep", "tree/a/filelink");
        must(link(at(p, sizeof(p), "outside/hardsrc"), at(q, sizeof(q), "tree/hard")) == 0, "link");
        make_dir("tree/other");
        make_file("tree/other/f", 1);
        make_file("tree/other/rootf", 1);
        if (geteuid() == 0) {
                must(chown(at(p, sizeof(p), "tree/other"), OTHER_UID, OTHER_UID) == 0, "chown");
                must(chown(at(p, sizeof(p), "tree/other/f"), OTHER_UID, OTHER_UID) == 0, "chown");
        }
        for (int i = 1; i <= deep; i++)
                make_dir(chain(rel, sizeof(rel) / 2, i));
        snprintf(bottom, sizeof(bottom), "%s/bottom", chain(rel, sizeof(rel) / 2, deep));
        make_file(bottom, 1);
        make_link("outside", "toplink");
}

static void remove_fixture(void)
{
        struct stat st;

        CHECK(fstree_remove_at(AT_FDCWD, base) == 0);
        CHECK(lstat(base, &st) < 0 && errno == ENOENT);
}

/* The outside folder is as it was made. */
static void check_outside_intact(void)
{
        char p[PATH_BYTES];
        struct stat st;

        CHECK(owner("outside") == 0 && owner("outside/keep") == 0 && owner("outside/big") == 0);
        CHECK(lstat(at(p, sizeof(p), "outside/hardsrc"), &st) == 0 && st.st_uid == 0);
}

static void test_own(void)
{
        char p[PATH_BYTES], rel[REL_BYTES];
        unsigned left = 99;

        make_fixture(FSTREE_DEPTH_MAX + 2);
        /* a link as the top: the link is given, its target and what it holds are not */
        CHECK(fstree_own_at(AT_FDCWD, at(p, sizeof(p), "toplink"), NEW_UID, NEW_UID, &left) == 0);
        CHECK(left == 0 && owner("toplink") == NEW_UID);
        check_outside_intact();
        CHECK(fstree_own_at(AT_FDCWD, at(p, sizeof(p), "none"), NEW_UID, NEW_UID, &left) == -ENOENT);

        CHECK(fstree_own_at(AT_FDCWD, at(p, sizeof(p), "tree"), NEW_UID, NEW_UID, &left) == 0);
        /* root's entries given, the links themselves among them */
        CHECK(owner("tree") == NEW_UID && owner("tree/a") == NEW_UID && owner("tree/a/b/c") == NEW_UID);
        CHECK(owner("tree/a/b/c/file") == NEW_UID);
        CHECK(owner("tree/a/dirlink") == NEW_UID && owner("tree/a/filelink") == NEW_UID);
        CHECK(owner("tree/other/rootf") == NEW_UID); /* walked into another user's folder */
        /* never what a link names; never a file with a second name; never another user's */
        check_outside_intact();
        CHECK(owner("tree/hard") == 0);
        CHECK(owner("tree/other") == OTHER_UID && owner("tree/other/f") == OTHER_UID);
        /* the depth bound: the chain's folder at FSTREE_DEPTH_MAX (the top is 0) is not walked */
        CHECK(owner(chain(rel, sizeof(rel), FSTREE_DEPTH_MAX - 1)) == NEW_UID);
        CHECK(owner(chain(rel, sizeof(rel), FSTREE_DEPTH_MAX)) == 0);
        CHECK(owner(chain(rel, sizeof(rel), FSTREE_DEPTH_MAX + 1)) == 0);
        CHECK(left == 2); /* the hard link and the folder too deep */
        remove_fixture();
}

static void test_size(void)
{
        char p[PATH_BYTES];
        uint64_t bytes = 0;

        make_fixture(3);
        CHECK(fstree_size_at(AT_FDCWD, at(p, sizeof(p), "tree"), &bytes) == 0);
        /* the 100 + 10 + 1 + 1 + 1 bytes of its files and its folders, not outside/big through the link */
        CHECK(bytes >= 113 && bytes < (1u << 20));
        CHECK(fstree_size_at(AT_FDCWD, at(p, sizeof(p), "toplink"), &bytes) == 0);
        CHECK(bytes == strlen("outside")); /* the link's own size */
        CHECK(fstree_size_at(AT_FDCWD, at(p, sizeof(p), "none"), &bytes) == -ENOENT);
        remove_fixture();
}

static void test_remove(void)
{
        char p[PATH_BYTES];
        struct stat st;

        /* deep enough for three passes of the removal */
        make_fixture(3 * FSTREE_DEPTH_MAX);
        CHECK(fstree_remove_at(AT_FDCWD, at(p, sizeof(p), "toplink")) == 0);
        CHECK(!exists("toplink") && exists("outside/keep")); /* the link went, not its target */
        CHECK(fstree_remove_at(AT_FDCWD, at(p, sizeof(p), "tree")) == 0);
        CHECK(!exists("tree"));
        /* what the links named and the hard link's other name stay */
        CHECK(exists("outside") && exists("outside/keep") && exists("outside/big"));
        CHECK(lstat(at(p, sizeof(p), "outside/hardsrc"), &st) == 0 && st.st_nlink == 1);
        CHECK(fstree_remove_at(AT_FDCWD, at(p, sizeof(p), "tree")) == 0); /* gone already: nothing to do */
        remove_fixture();
}

int main(void)
{
        if (geteuid() == 0)
                test_own();
        else
                fprintf(stderr, "test-fstree: not root: fstree_own_at() not tested\n");
        test_size();
        test_remove();
        if (failures)
                fprintf(stderr, "test-fstree: %d checks failed\n", failures);
        return failures ? 1 : 0;
}
