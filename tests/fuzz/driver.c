/* Runs a harness without libFuzzer: each argument is a file or a directory of files, each file
 * is one input. The Release and sanitizer builds use it to replay the seeds and regression
 * inputs (tests/fuzz/CMakeLists.txt). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return 0;
}

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); return 1; }
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    size_t k;
    while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf) return 1;
    /* an exact-size copy, so ASan sees a read past the input's end */
    unsigned char *in = malloc(n ? n : 1);
    memcpy(in, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(in, n);
    free(in);
    return 0;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv)
{
    LLVMFuzzerInitialize(&argc, &argv);
    int inputs = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st)) { perror(argv[i]); return 1; }
        if (!S_ISDIR(st.st_mode)) { bad |= run_file(argv[i]); inputs++; continue; }
        DIR *d = opendir(argv[i]);
        if (!d) { perror(argv[i]); return 1; }
        char **names = NULL;
        int n = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            names = realloc(names, (size_t)(n + 1) * sizeof *names);
            names[n++] = strdup(e->d_name);
        }
        closedir(d);
        qsort(names, (size_t)n, sizeof *names, cmp);
        for (int j = 0; j < n; j++) {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[i], names[j]);
            bad |= run_file(p);
            inputs++;
            free(names[j]);
        }
        free(names);
    }
    printf("%s: %d inputs, no crash\n", argv[0], inputs);
    if (!inputs) { fprintf(stderr, "no inputs\n"); return 1; }
    return bad;
}
