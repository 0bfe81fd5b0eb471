/* Decoding ids with the bundled Llama 3 tokenizer: the input is read as little-endian int32 ids,
 * in range or not. Oracle: out-of-range ids are an error, in-range ids always decode, and an
 * unfinished UTF-8 tail is 1 to 3 bytes. Pieces and display strings for every id are also read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "tokenloop/tokenizer.h"

static tl_tokenizer *tok;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/assets/tokenizer", tlf_source_dir());
    tl_error err;
    if (tl_tokenizer_load(&tok, dir, &err)) { fprintf(stderr, "%s\n", err.msg); abort(); }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int n = (int)(size / 4);
    int *ids = malloc((size_t)(n ? n : 1) * sizeof *ids);
    memcpy(ids, data, (size_t)n * 4);
    int nv = tl_tokenizer_vocab_size(tok), in_range = 1;
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= nv) { in_range = 0; continue; }
        char buf[64];
        size_t plen;
        if (!tl_tokenizer_piece(tok, ids[i], &plen)) tlf_fail("no piece for an id in range");
        tl_tokenizer_display(tok, ids[i], buf, sizeof buf);
    }
    char *text = NULL;
    size_t len = 0;
    int tail = -1;
    tl_error err = {{0}};
    int rc = tl_tokenizer_decode(tok, ids, n, &text, &len, &tail, &err);
    if (rc && in_range) tlf_fail("decode refused ids that are all in range");
    if (!rc && !in_range) tlf_fail("decode accepted an id out of range");
    if (rc) tlf_check_error(&err);
    else if (tail < 0 || tail > 3) tlf_fail("unfinished tail outside 0..3");
    free(text);
    free(ids);
    return 0;
}
