/* llama.cpp's Llama 3 BPE vectors (ids from Hugging Face AutoTokenizer, add_special_tokens=False)
 * against our encoder, and decode(encode(x)) == x on each.
 * usage: test_tokenizer_conformance TOKENIZER_DIR CONFORMANCE_DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tl_test.h"
#include "tokenloop/tokenizer.h"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = 0;
        *len = (size_t)n;
    }
    return buf;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s TOKENIZER_DIR CONFORMANCE_DIR\n", argv[0]);
        return 2;
    }
    char inp_path[4096], out_path[4096];
    snprintf(inp_path, sizeof inp_path, "%s/tokenizer/ggml-vocab-llama-bpe.gguf.inp", argv[2]);
    snprintf(out_path, sizeof out_path, "%s/tokenizer/ggml-vocab-llama-bpe.gguf.out", argv[2]);
    size_t inp_len, out_len;
    char *inp = slurp(inp_path, &inp_len), *out = slurp(out_path, &out_len);
    if (!inp || !out) {
        printf("SKIP: %s not found\n", inp ? out_path : inp_path);
        free(inp);
        free(out);
        return 77;
    }
    tl_error err = {{0}};
    tl_tokenizer *tok;
    if (tl_tokenizer_load(&tok, argv[1], &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    /* .inp: each test is followed by "\n__ggml_vocab_test__\n" */
    static const char sep[] = "\n__ggml_vocab_test__\n";
    char *p = inp, *o = out;
    int tests = 0;
    for (;;) {
        char *end = strstr(p, sep);
        if (!end)
            break;
        size_t len = (size_t)(end - p);
        char *line_end = strchr(o, '\n');
        TL_CHECK_MSG(line_end != NULL, "test %d: no expected line", tests);
        if (!line_end)
            break;
        *line_end = 0;
        int want[4096], nw = 0;
        for (char *q = o; *q && nw < 4096;) {
            char *e;
            long v = strtol(q, &e, 10);
            if (e == q)
                break;
            want[nw++] = (int)v;
            q = e;
        }
        int *ids, n;
        int rc = tl_tokenizer_encode(tok, p, len, 0, &ids, &n, &err);
        TL_CHECK_MSG(rc == 0, "test %d: %s", tests, err.msg);
        if (!rc) {
            int k = 0;
            while (k < n && k < nw && ids[k] == want[k])
                k++;
            TL_CHECK_MSG(k == n && k == nw, "test %d (\"%.*s\"): got %d ids, want %d (first difference at %d)",
                         tests, (int)(len > 60 ? 60 : len), p, n, nw, k);
            char *back;
            size_t blen;
            int tail;
            TL_CHECK(tl_tokenizer_decode(tok, ids, n, &back, &blen, &tail, &err) == 0);
            TL_CHECK_MSG(blen == len && !memcmp(back, p, len) && tail == 0, "test %d: decode differs", tests);
            free(back);
            free(ids);
        }
        tests++;
        p = end + strlen(sep);
        o = line_end + 1;
    }
    TL_CHECK_MSG(tests == 46, "read %d tests, the README says 46", tests);
    tl_tokenizer_free(tok);
    free(inp);
    free(out);
    return TL_TEST_END("tokenizer_conformance");
}
