#include "tokenloop/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int tl_file_read(const char *path, size_t max_bytes, char **out, size_t *len, tl_error *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return tl_error_set(err, "%s: cannot open: %s", path, strerror(errno));
    /* A regular file's size is known before reading: refuse one over the limit without
     * touching its bytes, and read one under it in one go. Pipes grow as they come and are
     * cut at the limit. */
    size_t cap = 1 << 16, n = 0;
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode)) {
        if ((unsigned long long)st.st_size > max_bytes) {
            fclose(f);
            return tl_error_set(err, "%s: %lld bytes, more than the limit of %zu", path, (long long)st.st_size, max_bytes);
        }
        cap = (size_t)st.st_size + 1;
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
            return tl_error_set(err, "%s: more than the limit of %zu bytes", path, max_bytes);
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

int tl_file_read_text(const char *path, size_t max_bytes, char **out, size_t *len, tl_error *err)
{
    size_t n = 0;
    if (tl_file_read(path, max_bytes, out, &n, err))
        return -1;
    /* Parsers that take a C string would stop at the first NUL and never see the rest. */
    const char *nul = memchr(*out, '\0', n);
    if (nul) {
        size_t at = (size_t)(nul - *out);
        free(*out);
        *out = NULL;
        return tl_error_set(err, "%s: a NUL byte at offset %zu", path, at);
    }
    if (len)
        *len = n;
    return 0;
}

int tl_file_map(const char *path, const void **map, size_t *size, tl_error *err)
{
    *map = NULL;
    *size = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return tl_error_set(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return tl_error_set(err, "%s: not a regular file", path);
    }
    if (st.st_size == 0) {
        close(fd);
        return tl_error_set(err, "%s: file is empty", path);
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return tl_error_set(err, "%s: cannot map: %s", path, strerror(errno));
    *map = m;
    *size = (size_t)st.st_size;
    return 0;
}
