/* Encoding text with the bundled Llama 3 tokenizer. The first byte picks the flags, the rest is
 * the text. Oracle: byte-level BPE loses nothing, so for valid UTF-8 decode(encode(text)) is
 * the text itself, and the offsets rise from 0 inside the text. Then tl_tokenizer_encode_plain
 * with a range from the second byte: it round-trips too, and a whole-text range gives the ids
 * of TL_TOK_NO_PARSE_SPECIAL, an empty one those of the plain encode. */
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
    if (!size) return 0;
    int flags = data[0] & (TL_TOK_ADD_BOS | TL_TOK_NO_PARSE_SPECIAL);
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    int *ids = NULL, n = 0;
    size_t *starts = NULL;
    tl_error err = {{0}};
    if (tl_tokenizer_encode_offsets(tok, text, len, flags, &ids, &starts, &n, &err)) {
        tlf_check_error(&err);
        return 0;
    }
    int nv = tl_tokenizer_vocab_size(tok);
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= nv) tlf_fail("encode gave an id outside the vocabulary");
        if (starts[i] > len || (i && starts[i] < starts[i - 1])) tlf_fail("offsets out of order");
    }
    char *out = NULL;
    size_t olen = 0;
    int tail = 0;
    int skip = (flags & TL_TOK_ADD_BOS) && n && ids[0] == tl_tokenizer_bos(tok);
    if (tl_tokenizer_decode(tok, ids + skip, n - skip, &out, &olen, &tail, &err)) tlf_fail(err.msg);
    if (tail || olen != len || memcmp(out, text, len)) tlf_fail("decode(encode(text)) is not the text");
    free(out);

    /* plain ranges: [a, b) from data[1]; [0, len) must equal NO_PARSE_SPECIAL, [x, x) the default */
    size_t a = len ? (data[1] * len) / 256 : 0, b = len ? a + (data[1] % 7) * len / 6 : 0;
    if (b > len) b = len;
    tl_span r[3] = {{a, b}, {0, len}, {a, a}};
    for (int k = 0; k < 3; k++) {
        int *p = NULL, np = 0;
        if (tl_tokenizer_encode_plain(tok, text, len, flags, &r[k], 1, &p, &np, &err))
            tlf_fail(err.msg);
        if (k == 0) {
            int sk = (flags & TL_TOK_ADD_BOS) && np && p[0] == tl_tokenizer_bos(tok);
            if (tl_tokenizer_decode(tok, p + sk, np - sk, &out, &olen, &tail, &err)) tlf_fail(err.msg);
            if (tail || olen != len || memcmp(out, text, len)) tlf_fail("decode(encode_plain(text)) is not the text");
            free(out);
        } else {
            int *q = NULL, nq = 0;
            int f = k == 1 ? flags | TL_TOK_NO_PARSE_SPECIAL : flags;
            if (tl_tokenizer_encode(tok, text, len, f, &q, &nq, &err)) tlf_fail(err.msg);
            if (nq != np || memcmp(p, q, sizeof *p * (size_t)np))
                tlf_fail(k == 1 ? "a whole-text plain range differs from TL_TOK_NO_PARSE_SPECIAL"
                                : "an empty plain range changed the ids");
            free(q);
        }
        free(p);
    }
    free(ids);
    free(starts);
    return 0;
}
