/* model.safetensors.index.json: the weight map that spreads a model over shard files. The
 * scratch directory holds a toy Llama's config.json and its two shards
 * (tests/fuzz/data/model_dir, made by tools/fuzz-seeds/make_seeds.py); the input is the index. */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "tokenloop/model.h"

static void copy_in(const char *name)
{
    char src[4096];
    snprintf(src, sizeof src, "%s/tests/fuzz/data/model_dir/%s", tlf_source_dir(), name);
    FILE *f = fopen(src, "rb");
    if (!f) { perror(src); abort(); }
    static unsigned char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    tlf_write(name, buf, n);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    copy_in("config.json");
    copy_in("model-00001-of-00002.safetensors");
    copy_in("model-00002-of-00002.safetensors");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tlf_write("model.safetensors.index.json", data, size);
    tl_model *m = NULL;
    tl_error err = {{0}};
    if (tl_model_load(&m, tlf_dir(), &err)) {
        tlf_check_error(&err);
        return 0;
    }
    if (m->cfg.n_layers != 2 || !m->layers) tlf_fail("the toy model loaded with the wrong shape");
    tl_model_free(m);
    return 0;
}
