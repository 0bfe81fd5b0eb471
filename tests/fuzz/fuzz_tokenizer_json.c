/* tokenizer.json: the vocabulary, merges, added tokens, normalizer, pre-tokenizer and
 * post-processor. A tokenizer that loads is then used: a fixed text is encoded both ways and
 * decoded, and every id must be inside the vocabulary. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "tokenloop/tokenizer.h"

static const char sample[] = "Hello world, the 2024 café!\n\n  <|eot_id|>x<|begin_of_text|>";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tlf_write("tokenizer.json", data, size);
    tl_tokenizer *tok = NULL;
    tl_error err = {{0}};
    if (tl_tokenizer_load(&tok, tlf_dir(), &err)) {
        tlf_check_error(&err);
        return 0;
    }
    int nv = tl_tokenizer_vocab_size(tok);
    for (int flags = 0; flags < 4; flags++) {
        int *ids = NULL, n = 0;
        if (tl_tokenizer_encode(tok, sample, sizeof sample - 1, flags, &ids, &n, &err)) {
            tlf_check_error(&err);
            continue;
        }
        for (int i = 0; i < n; i++)
            if (ids[i] < 0 || ids[i] >= nv) tlf_fail("encode gave an id outside the vocabulary");
        char *text = NULL;
        size_t len = 0;
        int tail = 0;
        if (tl_tokenizer_decode(tok, ids, n, &text, &len, &tail, &err)) tlf_check_error(&err);
        else if (strlen(text) > len) tlf_fail("decode: length and text disagree");
        free(text);
        free(ids);
    }
    tl_tokenizer_free(tok);
    return 0;
}
