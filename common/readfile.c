/* readfile - see readfile.h. One read of up to max + 1 bytes tells "too large" apart. */
#include "common/readfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int readfile_all(const char *path, size_t max, char **ret_buf, size_t *ret_len)
{
        FILE *f = fopen(path, "rb");
        char *buf = NULL;
        size_t len;
        int r = 0;

        if (!f)
                return -errno;
        buf = malloc(max + 2);
        if (!buf) {
                r = -ENOMEM;
                goto out;
        }
        len = fread(buf, 1, max + 1, f);
        if (ferror(f)) {
                r = -EIO;
                goto out;
        }
        if (len > max) {
                r = -EFBIG;
                goto out;
        }
        buf[len] = '\0';
        *ret_buf = buf;
        buf = NULL;
        if (ret_len)
                *ret_len = len;
out:
        free(buf);
        fclose(f);
        return r;
}
