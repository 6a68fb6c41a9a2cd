/*
 * enospc_preload - an LD_PRELOAD'd full disk for test_durability.py (never
 * linked into kevald). While the file named by KEVALD_TEST_ENOSPC_FLAG
 * exists, every write to a file whose path contains KEVALD_TEST_ENOSPC_MATCH
 * (the SQLite database, its WAL and journal) fails with ENOSPC, as on a full
 * disk; reads and every other file are untouched. The test creates and
 * removes the flag file to fill and free the "disk".
 *
 * Built by the test with the system C compiler (cc -shared -fPIC).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static int disk_full(int fd)
{
        const char *flag = getenv("KEVALD_TEST_ENOSPC_FLAG"), *match = getenv("KEVALD_TEST_ENOSPC_MATCH");
        char link[64], path[4096];
        ssize_t n;

        if (!flag || !match || !*match || access(flag, F_OK) != 0)
                return 0;
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        n = readlink(link, path, sizeof(path) - 1);
        if (n < 0)
                return 0;
        path[n] = '\0';
        if (!strstr(path, match))
                return 0;
        errno = ENOSPC;
        return 1;
}

typedef ssize_t (*WriteFn)(int, const void *, size_t);
typedef ssize_t (*PwriteFn)(int, const void *, size_t, off_t);
typedef ssize_t (*WritevFn)(int, const struct iovec *, int);
typedef int (*FallocateFn)(int, int, off_t, off_t);
typedef int (*PosixFallocateFn)(int, off_t, off_t);

/* The next definition of @name (libc's), looked up once. */
#define REAL(name, type) static type real_##name; if (!real_##name) real_##name = (type)dlsym(RTLD_NEXT, #name)

ssize_t write(int fd, const void *buf, size_t n)
{
        REAL(write, WriteFn);
        return disk_full(fd) ? -1 : real_write(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
        REAL(pwrite, PwriteFn);
        return disk_full(fd) ? -1 : real_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
        REAL(pwrite64, PwriteFn);
        return disk_full(fd) ? -1 : real_pwrite64(fd, buf, n, off);
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
        REAL(writev, WritevFn);
        return disk_full(fd) ? -1 : real_writev(fd, iov, n);
}

int fallocate(int fd, int mode, off_t off, off_t len)
{
        REAL(fallocate, FallocateFn);
        return disk_full(fd) ? -1 : real_fallocate(fd, mode, off, len);
}

int posix_fallocate(int fd, off_t off, off_t len)
{
        REAL(posix_fallocate, PosixFallocateFn);
        return disk_full(fd) ? ENOSPC : real_posix_fallocate(fd, off, len);
}
