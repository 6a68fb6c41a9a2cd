/*
 * test-torchview - a run worker's view of the kernelbench build cache
 * (server/dispatch/torchview.h): the view gets each <ext>/<ext>.so of its
 * job's build and nothing else (not the sources, objects or logs beside
 * them, not another build's folder); what a build planted to be followed (a
 * link where an extension or its folder should be, a link standing for the
 * build folder itself, a FIFO) is skipped or refused, never followed; the
 * views' folder is made empty beside the cache (what an earlier server left
 * is removed); a view goes with its worker; the extension bound holds.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/dispatch/fstree.h"
#include "server/dispatch/torchview.h"
#include "common/testcheck.h"
#include "server/dispatch/testtree.h"

static void make_file(const char *rel, const char *text)
{
        char p[PATH_BYTES];
        FILE *f = fopen(at(p, sizeof(p), rel), "w");

        must(f != NULL, rel);
        fputs(text, f);
        fclose(f);
}

/* The text of @rel (at most 255 bytes), "" when it cannot be read. */
static const char *text_of(const char *rel, char out[256])
{
        char p[PATH_BYTES];
        int fd = open(at(p, sizeof(p), rel), O_RDONLY | O_NOFOLLOW);
        ssize_t n = fd >= 0 ? read(fd, out, 255) : -1;

        out[n > 0 ? n : 0] = '\0';
        if (fd >= 0)
                close(fd);
        return out;
}

/* How many entries folder @rel holds besides . and .. (-1: not a folder that opens). */
static int entries(const char *rel)
{
        char p[PATH_BYTES];
        DIR *d = opendir(at(p, sizeof(p), rel));
        struct dirent *e;
        int n = 0;

        if (!d)
                return -1;
        while ((e = readdir(d)))
                if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, ".."))
                        n++;
        closedir(d);
        return n;
}

static mode_t mode_of(const char *rel)
{
        char p[PATH_BYTES];
        struct stat st;

        return lstat(at(p, sizeof(p), rel), &st) == 0 ? st.st_mode : 0;
}

/*
 * base/ext/k1: foo/{foo.so, main.cpp, build.ninja}, bar/bar.so -> ../../secret (a link),
 * baz (a file, not a folder), .hidden/.hidden.so, qux -> ../k2/qux (a folder link), fifo/fifo.so
 * (a FIFO), twin/twin.so (a second name of k2's qux.so), model_new.py;
 * base/ext/k2/qux/qux.so (another build's); base/secret; base/ext/k1link -> k1 (a link standing for a
 * build folder)
 */
static void make_fixture(void)
{
        char p[PATH_BYTES], q[PATH_BYTES];

        tree_new("test-torchview");
        make_file("secret", "root's secret");
        make_dir("ext");
        make_dir("ext/k1");
        make_dir("ext/k1/foo");
        make_file("ext/k1/foo/foo.so", "\177ELF foo of k1");
        make_file("ext/k1/foo/main.cpp", "the submitter's source");
        make_file("ext/k1/foo/build.ninja", "rule cxx");
        make_dir("ext/k1/bar");
        make_link("../../../secret", "ext/k1/bar/bar.so");
        make_file("ext/k1/baz", "not a folder");
        make_dir("ext/k1/.hidden");
        make_file("ext/k1/.hidden/.hidden.so", "hidden");
        make_dir("ext/k2");
        make_dir("ext/k2/qux");
        make_file("ext/k2/qux/qux.so", "\177ELF another job's");
        make_link("../k2/qux", "ext/k1/qux");
        make_dir("ext/k1/fifo");
        must(mkfifo(at(p, sizeof(p), "ext/k1/fifo/fifo.so"), 0644) == 0, "mkfifo");
        make_file("ext/k1/model_new.py", "class ModelNew: pass");
        make_link("k1", "ext/k1link");
        make_dir("ext/k1/twin"); /* a file with a second name: another build's, say */
        must(link(at(p, sizeof(p), "ext/k2/qux/qux.so"), at(q, sizeof(q), "ext/k1/twin/twin.so")) == 0, "link");
}

static void test_fill(void)
{
        char p[PATH_BYTES], q[PATH_BYTES], t[256], name[TORCHVIEW_NAME_BYTES];
        unsigned linked = 99;
        int lock = -1, lock2 = -1, r;

        make_fixture();
        CHECK(torchview_root_make(at(p, sizeof(p), "ext.run"), &lock) == 0 && lock >= 0);
        CHECK(S_ISDIR(mode_of("ext.run")) && (mode_of("ext.run") & 07777) == 0755 && entries("ext.run") == 0);
        /* one server per cache: a second one is refused, and the first one's views stay */
        CHECK(torchview_make(at(p, sizeof(p), "ext.run"), 7, name) == 0 && strcmp(name, "v7") == 0);
        CHECK(torchview_root_make(at(p, sizeof(p), "ext.run"), &lock2) == -EBUSY && lock2 == -1);
        CHECK((mode_of("ext.run/v7") & 07777) == 0755 && entries("ext.run/v7") == 0);

        CHECK(torchview_fill(at(q, sizeof(q), "ext.run"), name, at(p, sizeof(p), "ext/k1"), &linked) == 0);
        CHECK(linked == 1);
        CHECK(entries("ext.run/v7") == 1 && entries("ext.run/v7/foo") == 1); /* foo/foo.so alone */
        CHECK(strcmp(text_of("ext.run/v7/foo/foo.so", t), "\177ELF foo of k1") == 0);
        CHECK(S_ISREG(mode_of("ext.run/v7/foo/foo.so")));
        CHECK((mode_of("ext.run/v7/foo") & 07777) == 0755);
        CHECK(!mode_of("ext.run/v7/bar") && !mode_of("ext.run/v7/qux") && !mode_of("ext.run/v7/fifo"));
        CHECK(!mode_of("ext.run/v7/twin"));
        CHECK(strcmp(text_of("secret", t), "root's secret") == 0);

        /* a link standing for the build folder is not followed; a missing one is ENOENT */
        CHECK(torchview_make(at(q, sizeof(q), "ext.run"), 8, name) == 0);
        r = torchview_fill(at(q, sizeof(q), "ext.run"), name, at(p, sizeof(p), "ext/k1link"), &linked);
        CHECK(r == -ELOOP || r == -ENOTDIR);
        CHECK(torchview_fill(at(q, sizeof(q), "ext.run"), name, at(p, sizeof(p), "ext/gone"), &linked) == -ENOENT);
        CHECK(entries("ext.run/v8") == 0);
        /* a build with no extension (plain PyTorch): an empty view */
        make_dir("ext/plain");
        make_file("ext/plain/model_new.py", "import torch");
        CHECK(torchview_fill(at(q, sizeof(q), "ext.run"), name, at(p, sizeof(p), "ext/plain"), &linked) == 0 && linked == 0);
        CHECK(entries("ext.run/v8") == 0);

        /* the view filled again (a worker that serves a second job): the first job's extension gone */
        make_dir("ext/k3");
        make_dir("ext/k3/zed");
        make_file("ext/k3/zed/zed.so", "\177ELF zed of k3");
        CHECK(torchview_fill(at(q, sizeof(q), "ext.run"), "v7", at(p, sizeof(p), "ext/k3"), &linked) == 0 && linked == 1);
        CHECK(entries("ext.run/v7") == 1 && !mode_of("ext.run/v7/foo"));
        CHECK(strcmp(text_of("ext.run/v7/zed/zed.so", t), "\177ELF zed of k3") == 0);

        /* the worker's own v7.tools (its compiler helper's folder) is not the fill's to clear */
        make_dir("ext.run/v7.tools");
        make_dir("ext.run/v7.tools/cache");
        make_file("ext.run/v7.tools/cache/launcher.so", "\177ELF launcher");
        CHECK(torchview_fill(at(q, sizeof(q), "ext.run"), "v7", at(p, sizeof(p), "ext/k3"), &linked) == 0);
        CHECK(S_ISREG(mode_of("ext.run/v7.tools/cache/launcher.so")));
        /* the worker is gone: its view and its .tools too, the build untouched */
        CHECK(torchview_drop(at(q, sizeof(q), "ext.run"), "v7") == 0);
        CHECK(!mode_of("ext.run/v7") && !mode_of("ext.run/v7.tools") && entries("ext.run") == 1);
        /* a .tools left by an earlier server under the serial a new view takes goes first */
        make_dir("ext.run/v11.tools");
        make_file("ext.run/v11.tools/stale", "x");
        CHECK(torchview_make(at(q, sizeof(q), "ext.run"), 11, name) == 0 && !mode_of("ext.run/v11.tools"));
        CHECK(torchview_drop(at(q, sizeof(q), "ext.run"), "v11") == 0 && entries("ext.run") == 1);
        CHECK(strcmp(text_of("ext/k1/foo/foo.so", t), "\177ELF foo of k1") == 0);

        /* the server stops (its lock goes); a new server: the views' folder made empty again */
        torchview_root_remove(at(q, sizeof(q), "ext.run"), lock);
        CHECK(!mode_of("ext.run") && !mode_of("ext.run.lock") && S_ISDIR(mode_of("ext/k1")));
        CHECK(torchview_make(at(q, sizeof(q), "ext.run"), 9, name) < 0);
        CHECK(mkdir(at(p, sizeof(p), "ext.run"), 0755) == 0 && torchview_make(at(q, sizeof(q), "ext.run"), 9, name) == 0);
        CHECK(torchview_root_make(at(p, sizeof(p), "ext.run"), &lock) == 0 && entries("ext.run") == 0);
        torchview_root_remove(at(q, sizeof(q), "ext.run"), lock);
        CHECK(fstree_remove_at(AT_FDCWD, base) == 0);
}

/* Where no link can be made (the views on another file system: /dev/shm against /tmp), a copy: the
 * same bytes, the source's mode bits (at most 0755), a budget per view. */
static void test_copy(void)
{
        char p[PATH_BYTES], views[64], vpath[128], t[256], name[TORCHVIEW_NAME_BYTES];
        struct stat a, b;
        unsigned linked = 0;
        int lock = -1, fd;

        snprintf(views, sizeof(views), "/dev/shm/test-torchview-XXXXXX");
        if (stat("/dev/shm", &a) < 0 || stat("/tmp", &b) < 0 || a.st_dev == b.st_dev || !mkdtemp(views)) {
                fprintf(stderr, "test-torchview: no second file system at /dev/shm: the copy is not tested\n");
                return;
        }
        tree_new("test-torchview");
        make_dir("ext");
        make_dir("ext/k");
        make_dir("ext/k/small");
        make_file("ext/k/small/small.so", "\177ELF small");
        must(chmod(at(p, sizeof(p), "ext/k/small/small.so"), 0700) == 0, "chmod");
        snprintf(vpath, sizeof(vpath), "%s/run", views);
        CHECK(torchview_root_make(vpath, &lock) == 0);
        CHECK(torchview_make(vpath, 1, name) == 0);
        CHECK(torchview_fill(vpath, name, at(p, sizeof(p), "ext/k"), &linked) == 0 && linked == 1);
        snprintf(p, sizeof(p), "%s/v1/small/small.so", vpath);
        fd = open(p, O_RDONLY);
        t[fd >= 0 ? read(fd, t, 255) : 0] = '\0';
        if (fd >= 0)
                close(fd);
        CHECK(strcmp(t, "\177ELF small") == 0);
        CHECK(stat(p, &a) == 0 && (a.st_mode & 07777) == 0700 && a.st_nlink == 1);
        /* past the budget (a sparse file: nothing is copied before the check) */
        make_dir("ext/k/big");
        fd = open(at(p, sizeof(p), "ext/k/big/big.so"), O_WRONLY | O_CREAT | O_EXCL, 0644);
        must(fd >= 0 && ftruncate(fd, (off_t)TORCHVIEW_COPY_BYTES_MAX + 1) == 0, "big");
        close(fd);
        CHECK(torchview_fill(vpath, name, at(p, sizeof(p), "ext/k"), &linked) == -EFBIG);
        torchview_root_remove(vpath, lock);
        CHECK(fstree_remove_at(AT_FDCWD, views) == 0);
        CHECK(fstree_remove_at(AT_FDCWD, base) == 0);
}

static void test_bound(void)
{
        char p[PATH_BYTES], q[PATH_BYTES], rel[128], name[TORCHVIEW_NAME_BYTES];
        unsigned linked = 0;
        int lock = -1;

        tree_new("test-torchview");
        make_dir("ext");
        make_dir("ext/many");
        for (int i = 0; i <= TORCHVIEW_EXTS_MAX; i++) {
                snprintf(rel, sizeof(rel), "ext/many/e%d", i);
                make_dir(rel);
                snprintf(rel, sizeof(rel), "ext/many/e%d/e%d.so", i, i);
                make_file(rel, "x");
        }
        CHECK(torchview_root_make(at(q, sizeof(q), "ext.run"), &lock) == 0);
        CHECK(torchview_make(q, 1, name) == 0);
        CHECK(torchview_fill(q, name, at(p, sizeof(p), "ext/many"), &linked) == -E2BIG);
        snprintf(rel, sizeof(rel), "ext/many/e%d", TORCHVIEW_EXTS_MAX);
        CHECK(fstree_remove_at(AT_FDCWD, at(p, sizeof(p), rel)) == 0);
        CHECK(torchview_fill(q, name, at(p, sizeof(p), "ext/many"), &linked) == 0 && linked == TORCHVIEW_EXTS_MAX);
        torchview_root_remove(q, lock);
        CHECK(fstree_remove_at(AT_FDCWD, base) == 0);
}

int main(void)
{
        test_fill();
        test_copy();
        test_bound();
        if (failures)
                fprintf(stderr, "test-torchview: %d checks failed\n", failures);
        return failures ? 1 : 0;
}
