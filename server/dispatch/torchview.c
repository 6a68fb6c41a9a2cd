/*
 * torchview - a run worker's view of the kernelbench build cache
 * (torchview.h says what it is and why).
 *
 * The build folder is opened with O_NOFOLLOW and read through its
 * descriptor; each extension folder is opened from it with O_NOFOLLOW, and
 * each extension file too, then checked through its descriptor (fstat: a
 * regular file). The view's name for it is made from that descriptor, never
 * from a path the build could have changed in between: a hard link through
 * /proc/self/fd (linkat(AT_SYMLINK_FOLLOW) follows that magic link to the
 * open file itself), else (another file system) a copy of what the
 * descriptor reads, within a budget per view. A build that
 * swaps an entry for a link after it was examined gets an error or nothing
 * linked, never another file named.
 */
#include "server/dispatch/torchview.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/dispatch/fstree.h"

#define VIEW_MODE 0755
#define COPY_CHUNK (1u << 20)

/* Open folder @name of @at without following a link, and give it mode VIEW_MODE when @chmod. */
static int open_dir_at(int at, const char *name, bool chmod)
{
        int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        if (chmod && fchmod(fd, VIEW_MODE) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

/* Make folder @name in @at (mode VIEW_MODE whatever the umask) and open it. */
static int make_dir_at(int at, const char *name)
{
        if (mkdirat(at, name, VIEW_MODE) < 0)
                return -errno;
        return open_dir_at(at, name, true);
}

/* Make folder @name in @at anew and empty (whatever stood there removed first, never followed). */
static int make_fresh_dir_at(int at, const char *name)
{
        int r = fstree_remove_at(at, name), fd;

        if (r < 0)
                return r;
        fd = make_dir_at(at, name);
        if (fd < 0)
                return fd;
        close(fd);
        return 0;
}

/**
 * torchview_root_make() - the views' folder, made empty, and this server's lock on it
 * @root:     the folder ("<torch_ext_root>.run", beside the cache); borrowed
 * @ret_lock: on success, the descriptor of "<root>.lock", locked (flock) until
 *            torchview_root_remove() closes it
 *
 * What an earlier server left in @root (views of workers it no longer has) is
 * removed first, through fstree's walk: only once the lock is this server's.
 *
 * Return: 0; -EBUSY when another process holds the lock (another server on
 * this cache); or another negative errno.
 */
int torchview_root_make(const char *root, int *ret_lock)
{
        char lockpath[PATH_MAX];
        int lock, r;

        if ((size_t)snprintf(lockpath, sizeof(lockpath), "%s.lock", root) >= sizeof(lockpath))
                return -ENAMETOOLONG;
        lock = open(lockpath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (lock < 0)
                return -errno;
        if (flock(lock, LOCK_EX | LOCK_NB) < 0) {
                r = errno == EWOULDBLOCK ? -EBUSY : -errno;
                goto fail;
        }
        r = make_fresh_dir_at(AT_FDCWD, root);
        if (r < 0)
                goto fail;
        *ret_lock = lock;
        return 0;
fail:
        close(lock);
        return r;
}

/*
 * torchview_root_remove() - remove the views' folder @root and what is in it, and
 * give up the lock @lock (torchview_root_make()'s; -1: none), at the server's stop.
 */
void torchview_root_remove(const char *root, int lock)
{
        char lockpath[PATH_MAX];

        if (root && lock >= 0) {
                (void)fstree_remove_at(AT_FDCWD, root);
                if ((size_t)snprintf(lockpath, sizeof(lockpath), "%s.lock", root) < sizeof(lockpath))
                        (void)unlink(lockpath);
        }
        if (lock >= 0)
                close(lock);
}

/* Remove <name>.tools beside view @name of @rootfd (the worker's helper folder), if it is there. */
static int remove_tools_at(int rootfd, const char *name)
{
        char tools[TORCHVIEW_NAME_BYTES + sizeof(TORCHVIEW_TOOLS_SUFFIX)];
        int r;

        snprintf(tools, sizeof(tools), "%s%s", name, TORCHVIEW_TOOLS_SUFFIX);
        r = fstree_remove_at(rootfd, tools);
        return r == -ENOENT ? 0 : r;
}

/**
 * torchview_make() - an empty view for one run worker process
 * @root:     the views' folder (torchview_root_make()); borrowed
 * @serial:   a number no other view of this server has had
 * @ret_name: on success, the view's name beneath @root ("v<serial>")
 *
 * Return: 0, or a negative errno.
 */
int torchview_make(const char *root, uint64_t serial, char ret_name[TORCHVIEW_NAME_BYTES])
{
        char name[TORCHVIEW_NAME_BYTES];
        int rootfd = open_dir_at(AT_FDCWD, root, false), r;

        if (rootfd < 0)
                return rootfd;
        snprintf(name, sizeof(name), "v%" PRIu64, serial);
        r = remove_tools_at(rootfd, name);
        if (r == 0)
                r = make_fresh_dir_at(rootfd, name); /* what an earlier server left, were the serial to repeat, removed */
        if (r == 0)
                memcpy(ret_name, name, sizeof(name));
        close(rootfd);
        return r;
}

/* Copy what @src reads (a regular file of @bytes) into a new file @name of @at, with mode @mode. */
static int copy_into(int src, off_t bytes, mode_t mode, int at, const char *name)
{
        char *buf = malloc(COPY_CHUNK);
        int dst = openat(at, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600), r = 0;
        off_t done = 0;

        if (!buf || dst < 0) {
                r = buf ? -errno : -ENOMEM;
                goto out;
        }
        while (done < bytes) {
                ssize_t n = pread(src, buf, COPY_CHUNK, done);
                if (n <= 0) {
                        r = n < 0 ? -errno : -EIO; /* shorter than it was: the build still writes it */
                        goto out;
                }
                for (ssize_t w = 0; w < n;) {
                        ssize_t k = write(dst, buf + w, (size_t)(n - w));
                        if (k < 0) {
                                r = -errno;
                                goto out;
                        }
                        w += k;
                }
                done += n;
        }
        if (fchmod(dst, mode) < 0)
                r = -errno;
out:
        if (dst >= 0)
                close(dst);
        if (r < 0 && dst >= 0)
                (void)unlinkat(at, name, 0);
        free(buf);
        return r;
}

/* A name the view takes: not empty, no '/', no leading '.', room for ".so". */
static bool ext_name_ok(const char *name)
{
        size_t n = strlen(name);

        return n > 0 && n + 3 <= NAME_MAX && name[0] != '.' && !strchr(name, '/');
}

/*
 * The extension @ext of build folder @bfd (<ext>/<ext>.so), a file of one name,
 * into view folder @vfd; a copy takes from *@copy_left.
 * Return: 1 linked, 0 not an extension (skipped), or a negative errno (-EFBIG:
 * a copy past the budget).
 */
static int link_ext(int bfd, const char *ext, int vfd, uint64_t *copy_left)
{
        char so[NAME_MAX + 1], proc[64];
        struct stat st;
        int efd = -1, sfd = -1, xfd = -1, r;

        if (!ext_name_ok(ext))
                return 0;
        efd = open_dir_at(bfd, ext, false);
        if (efd < 0)
                return efd == -ENOTDIR || efd == -ELOOP || efd == -ENOENT ? 0 : efd;
        snprintf(so, sizeof(so), "%s.so", ext);
        sfd = openat(efd, so, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (sfd < 0 || fstat(sfd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
                r = sfd < 0 && errno != ELOOP && errno != ENOENT && errno != ENXIO ? -errno : 0;
                goto out;
        }
        xfd = make_dir_at(vfd, ext);
        if (xfd < 0) {
                r = xfd;
                goto out;
        }
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", sfd);
        if (linkat(AT_FDCWD, proc, xfd, so, AT_SYMLINK_FOLLOW) == 0) {
                r = 1;
        } else if ((uint64_t)st.st_size > *copy_left) {
                r = -EFBIG;
        } else {
                *copy_left -= (uint64_t)st.st_size;
                r = copy_into(sfd, st.st_size, st.st_mode & 0755, xfd, so);
                r = r < 0 ? r : 1;
        }
out:
        if (xfd >= 0)
                close(xfd);
        if (sfd >= 0)
                close(sfd);
        close(efd);
        return r;
}

/* Remove what folder @vfd holds (not the folder: the worker's sandbox grant is to its inode). */
static int clear_dir(int vfd)
{
        int fd = dup(vfd), r = 0;
        DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *e;

        if (!dir) {
                r = -errno;
                if (fd >= 0)
                        close(fd);
                return r;
        }
        while ((errno = 0, e = readdir(dir))) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                        continue;
                r = fstree_remove_at(vfd, e->d_name);
                if (r < 0)
                        break;
        }
        if (r == 0 && errno != 0)
                r = -errno;
        closedir(dir);
        return r;
}

/**
 * torchview_fill() - put a build's extensions in a view
 * @root:       the views' folder; borrowed
 * @name:       the view (torchview_make()); borrowed
 * @build_dir:  the job's build folder (absolute; its last component is not followed); borrowed
 * @ret_linked: on success, how many extensions the view got (0: the module built none)
 *
 * What the view held (the job before, for a worker that serves more than one)
 * is removed first. Each <build_dir>/<ext>/<ext>.so that is a regular file
 * becomes <view>/<ext>/<ext>.so; what is not (a link, a folder, a name
 * starting with '.') is skipped. At most TORCHVIEW_EXTS_MAX.
 *
 * Return: 0; -E2BIG for more extensions than TORCHVIEW_EXTS_MAX; -EFBIG for
 * copies past TORCHVIEW_COPY_BYTES_MAX; -ENOENT, -ELOOP or -ENOTDIR: no build
 * folder at @build_dir; or another negative errno.
 */
int torchview_fill(const char *root, const char *name, const char *build_dir, unsigned *ret_linked)
{
        int rootfd = -1, vfd = -1, bfd = -1, r = 0;
        unsigned linked = 0;
        uint64_t copy_left = TORCHVIEW_COPY_BYTES_MAX;
        DIR *dir = NULL;
        struct dirent *e;

        rootfd = open_dir_at(AT_FDCWD, root, false);
        if (rootfd < 0) {
                r = rootfd;
                goto out;
        }
        vfd = open_dir_at(rootfd, name, false);
        bfd = open_dir_at(AT_FDCWD, build_dir, false);
        if (vfd < 0 || bfd < 0) {
                r = vfd < 0 ? vfd : bfd;
                goto out;
        }
        r = clear_dir(vfd);
        if (r < 0)
                goto out;
        dir = fdopendir(bfd);
        if (!dir) {
                r = -errno;
                goto out;
        }
        bfd = -1; /* the stream's now */
        while ((errno = 0, e = readdir(dir))) {
                int k = link_ext(dirfd(dir), e->d_name, vfd, &copy_left);
                if (k < 0) {
                        r = k;
                        goto out;
                }
                if (k > 0 && ++linked > TORCHVIEW_EXTS_MAX) {
                        r = -E2BIG;
                        goto out;
                }
        }
        if (errno != 0)
                r = -errno;
out:
        if (dir)
                closedir(dir);
        if (bfd >= 0)
                close(bfd);
        if (vfd >= 0)
                close(vfd);
        if (rootfd >= 0)
                close(rootfd);
        if (r == 0 && ret_linked)
                *ret_linked = linked;
        return r;
}

/* torchview_drop() - remove the view @name of @root and its <name>.tools (its worker is gone). Return: 0 or a negative errno. */
int torchview_drop(const char *root, const char *name)
{
        int rootfd = open_dir_at(AT_FDCWD, root, false), r, t;

        if (rootfd < 0)
                return rootfd;
        r = fstree_remove_at(rootfd, name);
        t = remove_tools_at(rootfd, name); /* also when the view stays: it can hold far more */
        if (r == 0)
                r = t;
        close(rootfd);
        return r;
}
