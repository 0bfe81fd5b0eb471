/* A good model.safetensors (argv[1]/model.safetensors), damaged in many seeded ways and loaded
 * from a scratch directory (argv[2]): the loader either refuses with one line naming a file in
 * that directory, or accepts a file whose every tensor is in bounds (a decode then runs; under
 * AddressSanitizer any stray read would abort). */
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "../common/tl_test.h"
#include "tokenloop/engine.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n);
    if (b && fread(b, 1, *n, f) != *n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    return b;
}

static void spit(const char *path, const unsigned char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(b, 1, n, f);
        fclose(f);
    }
}

/* One damage of the kinds a lying or broken file shows. Returns the length to write. */
static size_t damage(unsigned char *b, size_t n, size_t hlen)
{
    size_t hend = 8 + hlen;
    switch (next() % 4) {
    case 0: /* random bytes in the header */
        for (int i = 0, k = 1 + (int)(next() % 4); i < k; i++)
            b[next() % hend] = (unsigned char)next();
        return n;
    case 1: /* truncated anywhere */
        return next() % n;
    case 2: { /* one digit of the header changed: offsets and shapes that almost fit */
        for (int tries = 0; tries < 100; tries++) {
            size_t at = 8 + next() % hlen;
            if (b[at] >= '0' && b[at] <= '9') {
                b[at] = (unsigned char)('0' + next() % 10);
                break;
            }
        }
        return n;
    }
    default: { /* a header length near the true one, or anything */
        uint64_t v = next() % 3 ? hlen + (next() % 64) - 32 : next();
        for (int i = 0; i < 8; i++)
            b[i] = (unsigned char)(v >> (8 * i));
        return n;
    }
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_loader_fuzz GOOD_MODEL_DIR SCRATCH_DIR\n");
        return 2;
    }
    char path[4200];
    size_t n, cn;
    snprintf(path, sizeof path, "%s/model.safetensors", argv[1]);
    unsigned char *good = slurp(path, &n);
    snprintf(path, sizeof path, "%s/config.json", argv[1]);
    unsigned char *cfg = slurp(path, &cn);
    TL_CHECK(good && cfg && n > 8);
    if (!good || !cfg || n <= 8)
        return TL_TEST_END("test_loader_fuzz");
    mkdir(argv[2], 0755);
    snprintf(path, sizeof path, "%s/config.json", argv[2]);
    spit(path, cfg, cn);
    size_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = (hlen << 8) | good[i];

    unsigned char *b = malloc(n);
    int refused = 0, accepted = 0;
    size_t dirlen = strlen(argv[2]);
    for (int iter = 0; iter < 400; iter++) {
        memcpy(b, good, n);
        size_t len = damage(b, n, hlen);
        snprintf(path, sizeof path, "%s/model.safetensors", argv[2]);
        spit(path, b, len);
        tl_model *m = NULL;
        tl_error err = {{0}};
        if (tl_model_load(&m, argv[2], &err)) {
            refused++;
            int one_line = err.msg[0] && !strchr(err.msg, '\n');
            int names_file = !strncmp(err.msg, argv[2], dirlen) && err.msg[dirlen] == '/';
            TL_CHECK_MSG(one_line && names_file, "iteration %d: \"%s\"", iter, err.msg);
        } else {
            accepted++;
            tl_engine *e = NULL;
            TL_CHECK(tl_engine_create(&e, m, tl_backend_cpu(), 1, 8, &err) == 0);
            TL_CHECK(e && tl_engine_decode(e, 1, &err) == 0);
            tl_engine_free(e);
            tl_model_free(m);
        }
    }
    printf("test_loader_fuzz: %d damaged files refused, %d accepted and run\n", refused, accepted);
    TL_CHECK(refused > 200);
    free(b);
    free(good);
    free(cfg);
    return TL_TEST_END("test_loader_fuzz");
}
