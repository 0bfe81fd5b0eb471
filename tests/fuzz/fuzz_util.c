/* Helpers for the harnesses: the scratch directory and the error-line oracle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

static char dir[256];

static void remove_dir(void)
{
    char cmd[300];
    if (!dir[0]) return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) { /* best effort */ }
}

const char *tlf_dir(void)
{
    if (dir[0]) return dir;
    /* /dev/shm when there is one: the harnesses write a file per input, millions of times */
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof dir, "%s/tlfuzz.XXXXXX", base);
    if (!mkdtemp(dir)) { perror("mkdtemp"); abort(); }
    atexit(remove_dir);
    return dir;
}

const char *tlf_write(const char *name, const void *data, size_t size)
{
    static char paths[8][512];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", tlf_dir(), name);
    FILE *f = fopen(p, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f)) { perror(p); abort(); }
    return p;
}

const char *tlf_source_dir(void)
{
    const char *e = getenv("TL_SOURCE_DIR");
    return e && *e ? e : TL_FUZZ_SOURCE_DIR;
}

void tlf_fail(const char *what)
{
    fprintf(stderr, "fuzz oracle: %s\n", what);
    abort();
}

void tlf_check_error(const tl_error *err)
{
    if (!err->msg[0]) tlf_fail("an error without a message");
    for (const unsigned char *s = (const unsigned char *)err->msg; *s; s++)
        if (*s < 0x20 || *s == 0x7f) {
            fprintf(stderr, "fuzz oracle: error message is not one printable line: %s\n", err->msg);
            abort();
        }
}
