/*
 * fstree - walks over a folder that another user can write, safe to make as
 * root (fstree.h says what holds for all of them).
 *
 * One recursive walk, walk_at(), serves the three: it examines an entry of
 * an open folder without following it (fstatat(AT_SYMLINK_NOFOLLOW)), opens
 * a folder with O_NOFOLLOW | O_DIRECTORY and checks what it opened (fstat:
 * a folder, on the top's device), walks its entries through that
 * descriptor, and acts on the folder after them. A 65534 process that swaps
 * an entry between the examination and the act gets an error (a link where
 * a folder was: ELOOP), or the act on its own swapped-in entry, never one on
 * what a link names: the acts take a descriptor (fchown(), fchownat() with an
 * empty path) or one name relative to the holding folder's descriptor
 * (unlinkat(), which never follows).
 */
#include "server/dispatch/fstree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef enum { WALK_OWN, WALK_REMOVE, WALK_SIZE } WalkKind;

typedef struct Walk {
        WalkKind kind;
        dev_t dev;        /* the top's file system: no other is entered */
        uid_t uid;        /* WALK_OWN: what root's entries are given to */
        gid_t gid;
        unsigned left;    /* WALK_OWN: root's entries that stay root's */
        int err;          /* the first failure beneath the top, a negative errno (what fstree_remove_at() returns) */
        int top;          /* WALK_REMOVE: the top's descriptor, where too deep folders go; -1 before it opens */
        unsigned hoisted; /* WALK_REMOVE: folders moved up to the top in this pass */
        unsigned serial;  /* WALK_REMOVE: the next hoisted folder's name */
        uint64_t bytes;   /* WALK_SIZE */
} Walk;

static void fail(Walk *w, int err)
{
        if (w->err == 0)
                w->err = err;
}

/* WALK_OWN: give root's non-folder @name of @at away; a link itself, never what it names.
 * Return: 0 (given, or not root's), or a negative errno. */
static int own_file(Walk *w, int at, const char *name)
{
        struct stat st;
        int fd = openat(at, name, O_PATH | O_NOFOLLOW | O_CLOEXEC), r = 0;

        /* examined again through the descriptor that the change goes through: what it
         * pins is what changes owner, whatever the name holds by then */
        if (fd < 0 || fstat(fd, &st) < 0) {
                r = -errno;
                w->left++;
                goto out;
        }
        if (st.st_uid != 0)
                goto out;
        /* a second name elsewhere (a hard link a build made to a file of root's) is not
         * the cache's to give; nor is a folder swapped in, nor another file system */
        if (S_ISDIR(st.st_mode) || st.st_nlink > 1 || st.st_dev != w->dev) {
                w->left++;
                goto out;
        }
        if (fchownat(fd, "", w->uid, w->gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
                r = -errno;
                w->left++;
        }
out:
        if (fd >= 0)
                close(fd);
        return r;
}

/* WALK_REMOVE: @name of @at is a folder too deep to walk: move it up to the top, where the
 * next pass takes it (a name of its own there; never one that exists: RENAME_NOREPLACE). */
static void hoist(Walk *w, int at, const char *name)
{
        char to[32];

        for (int tries = 0; tries < 16; tries++) {
                snprintf(to, sizeof(to), ".fstree-deep-%u", w->serial++);
                if (renameat2(at, name, w->top, to, RENAME_NOREPLACE) == 0) {
                        w->hoisted++;
                        return;
                }
                if (errno != EEXIST)
                        break;
        }
        fail(w, -errno);
}

static int walk_at(Walk *w, int at, const char *name, int depth);

/* Walk the entries of open folder @dir (depth @depth), then act on the folder (@st its fstat)
 * when the act takes its descriptor. Return: 0, or the act's negative errno. */
static int walk_dir(Walk *w, DIR *dir, const struct stat *st, int depth)
{
        struct dirent *e;
        int r;

        while ((e = readdir(dir)))
                if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
                        r = walk_at(w, dirfd(dir), e->d_name, depth + 1);
                        if (r < 0)
                                fail(w, r);
                }
        if (w->kind == WALK_OWN && st->st_uid == 0 && fchown(dirfd(dir), w->uid, w->gid) < 0) {
                w->left++;
                return -errno;
        }
        if (w->kind == WALK_SIZE)
                w->bytes += (uint64_t)st->st_size;
        return 0;
}

/*
 * The entry @name of folder @at, @depth folders beneath the top: its entries first, then
 * itself. Return: 0, or the negative errno of what failed on the entry itself (what failed
 * beneath it is in @w).
 */
static int walk_at(Walk *w, int at, const char *name, int depth)
{
        struct stat st;
        DIR *dir = NULL;
        int fd = -1, r = 0;

        if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                r = errno == ENOENT ? 0 : -errno; /* gone meanwhile: nothing to do */
                goto out;
        }
        if (st.st_dev != w->dev) {
                w->left += st.st_uid == 0;
                r = -EXDEV;
                goto out;
        }
        if (!S_ISDIR(st.st_mode)) {
                if (w->kind == WALK_OWN && st.st_uid == 0)
                        r = own_file(w, at, name);
                else if (w->kind == WALK_REMOVE && unlinkat(at, name, 0) < 0 && errno != ENOENT)
                        r = -errno;
                else if (w->kind == WALK_SIZE)
                        w->bytes += (uint64_t)st.st_size;
                goto out;
        }
        if (depth >= FSTREE_DEPTH_MAX) {
                if (w->kind == WALK_REMOVE)
                        hoist(w, at, name);
                else
                        w->left += st.st_uid == 0;
                goto out;
        }
        fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0) {
                r = -errno; /* a link swapped in: ELOOP; a file: ENOTDIR */
                w->left += st.st_uid == 0;
                goto out;
        }
        if (!S_ISDIR(st.st_mode) || st.st_dev != w->dev) {
                w->left += st.st_uid == 0;
                r = S_ISDIR(st.st_mode) ? -EXDEV : -ENOTDIR;
                goto out;
        }
        dir = fdopendir(fd);
        if (!dir) {
                r = -errno;
                w->left += st.st_uid == 0;
                goto out;
        }
        fd = -1; /* the DIR owns it */
        if (depth == 0)
                w->top = dirfd(dir);
        r = walk_dir(w, dir, &st, depth);
        if (depth == 0)
                w->top = -1;
        closedir(dir);
        if (w->kind == WALK_REMOVE && unlinkat(at, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                r = -errno;
out:
        if (fd >= 0)
                close(fd);
        return r;
}

/* Walk @name of @at, on the file system it is on. Return: walk_at()'s for the top. */
static int walk_top(Walk *w, int at, const char *name)
{
        struct stat st;

        if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        w->dev = st.st_dev;
        w->top = -1;
        return walk_at(w, at, name, 0);
}

/**
 * fstree_own_at() - give what root owns in a folder (and the folder) to another user
 * @dirfd:    a folder's descriptor, or AT_FDCWD; borrowed
 * @name:     the top, relative to @dirfd (a path: its last component is not followed); borrowed
 * @uid:      the new owner of root's entries
 * @gid:      their new group
 * @ret_left: on success, how many of root's entries stay root's: a change that failed, a
 *            non-folder with more than one name (a hard link: it may be a file outside the top,
 *            so it is not the top's to give), a folder deeper than FSTREE_DEPTH_MAX (what it holds
 *            is not looked at), anything on another file system
 *
 * Only entries root (uid 0) owns change owner; another user's are left as they are, and
 * walked into. A link is given itself, never what it names. Each folder changes owner after
 * its entries, the top last; a top that is not a folder is given like any entry. The walk
 * goes on past a failure.
 *
 * Return: 0, or the negative errno of the top itself: it could not be examined (nothing was
 * done), opened as a folder without following it (-ELOOP: a link; nothing was done) or given
 * (what beneath it could be given was).
 */
int fstree_own_at(int dirfd, const char *name, uid_t uid, gid_t gid, unsigned *ret_left)
{
        Walk w = { .kind = WALK_OWN, .uid = uid, .gid = gid };
        int r = walk_top(&w, dirfd, name);

        if (r == 0)
                *ret_left = w.left;
        return r;
}

/**
 * fstree_remove_at() - remove a folder and everything in it
 * @dirfd: a folder's descriptor, or AT_FDCWD; borrowed
 * @name:  the top, relative to @dirfd (a path: its last component is not followed); borrowed
 *
 * A link is removed, never what it names; a mount point beneath the top is not entered (and
 * so the top stays). A folder deeper than FSTREE_DEPTH_MAX is moved up into the top (renamed
 * there as ".fstree-deep-<n>") and removed by a further pass, FSTREE_REMOVE_PASSES_MAX passes
 * at most: what is left after them stays for a later call. A top that is not a folder is
 * unlinked. The walk goes on past a failure.
 *
 * Return: 0 when the top is gone (or was not there), or the negative errno of the first thing
 * that could not be removed (-EXDEV: a mount point; -ENOTEMPTY: an entry made meanwhile, or
 * one too deep for the passes).
 */
int fstree_remove_at(int dirfd, const char *name)
{
        Walk w = { .kind = WALK_REMOVE };
        int r = 0;

        for (int pass = 0; pass < FSTREE_REMOVE_PASSES_MAX; pass++) {
                w.err = 0;
                w.hoisted = 0;
                r = walk_top(&w, dirfd, name);
                if (r == -ENOENT)
                        r = 0;
                if (w.hoisted == 0)
                        break;
        }
        return w.err ? w.err : r; /* the cause before the top's ENOTEMPTY */
}

/**
 * fstree_size_at() - the apparent size of a folder and what it holds
 * @dirfd:     a folder's descriptor, or AT_FDCWD; borrowed
 * @name:      the top, relative to @dirfd (a path: its last component is not followed); borrowed
 * @ret_bytes: on success, the sum of st_size over the top and its entries (a link counts its
 *             own size; nothing deeper than FSTREE_DEPTH_MAX nor on another file system counts)
 *
 * Return: 0, or a negative errno when the top could not be examined or opened.
 */
int fstree_size_at(int dirfd, const char *name, uint64_t *ret_bytes)
{
        Walk w = { .kind = WALK_SIZE };
        int r = walk_top(&w, dirfd, name);

        if (r == 0)
                *ret_bytes = w.bytes;
        return r;
}
