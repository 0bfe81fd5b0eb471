#include "tokenloop/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tl_file_read(const char *path, size_t max_bytes, char **out, size_t *len, tl_error *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return tl_error_set(err, "%s: cannot open: %s", path, strerror(errno));
    /* Start at the file's size so a regular file is read in one go; pipes grow as they come. */
    size_t cap = 1 << 16, n = 0;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        if (size > 0 && (unsigned long)size <= max_bytes)
            cap = (size_t)size + 1;
        rewind(f);
    }
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (n > max_bytes) {
            free(buf);
            fclose(f);
            return tl_error_set(err, "%s: larger than %zu bytes", path, max_bytes);
        }
        if (!got)
            break;
    }
    int bad = ferror(f), saved = errno;
    fclose(f);
    if (!buf)
        return tl_error_set(err, "%s: out of memory", path);
    if (bad) {
        free(buf);
        return tl_error_set(err, "%s: cannot read: %s", path, strerror(saved ? saved : EIO));
    }
    buf[n] = '\0';
    *out = buf;
    if (len)
        *len = n;
    return 0;
}
