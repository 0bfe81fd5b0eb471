/* Test driver for tests/gguf (check_gguf.py runs it):
 *   gguf_tool dequant TYPE IN OUT       TYPE a ggml type number; IN raw blocks, OUT the fp32 values
 *   gguf_tool tokcmp GGUF DIR TEXTS     TEXTS: NUL-separated texts; each encoded by the GGUF file's
 *                                       tokenizer and DIR's tokenizer.json, three ways (plain,
 *                                       with BOS, special tokens as text), and decoded back
 *   gguf_tool open FILE                 tl_gguf_open, then tl_model_load: 0, or 1 with the error */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "tokenloop/model.h"
#include "tokenloop/tokenizer.h"

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) {
        b[n] = 0;
        *len = (size_t)n;
    }
    return b;
}

static int dequant(const char *type_s, const char *in, const char *out)
{
    uint32_t type = (uint32_t)atoi(type_s), be, bb;
    size_t len;
    unsigned char *src = slurp(in, &len);
    if (!src || !tl_gguf_type_block(type, &be, &bb) || len % bb) {
        fprintf(stderr, "dequant: cannot read %s as whole blocks of type %s\n", in, type_s);
        return 1;
    }
    int64_t n = (int64_t)(len / bb) * be;
    float *y = malloc(sizeof(float) * (size_t)n + 1);
    if (!y || tl_gguf_dequantize_row(type, src, y, n)) {
        fprintf(stderr, "dequant: type %s (%s) is not decoded\n", type_s, tl_gguf_type_name(type));
        return 1;
    }
    FILE *f = fopen(out, "wb");
    int ok = f && fwrite(y, sizeof(float), (size_t)n, f) == (size_t)n;
    if (f)
        fclose(f);
    free(src);
    free(y);
    return ok ? 0 : 1;
}

static int tokcmp(const char *gguf, const char *dir, const char *texts)
{
    tl_error err = {{0}};
    tl_tokenizer *a, *b;
    if (tl_tokenizer_load(&a, gguf, &err) || tl_tokenizer_load(&b, dir, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    size_t len;
    char *all = (char *)slurp(texts, &len);
    if (!all)
        return 1;
    int checked = 0, bad = 0;
    for (char *p = all; p < all + len; p += strlen(p) + 1) {
        for (int flags = 0; flags <= TL_TOK_NO_PARSE_SPECIAL; flags++) {
            int *ia, *ib, na, nb;
            int ra = tl_tokenizer_encode(a, p, strlen(p), flags, &ia, &na, &err);
            int rb = tl_tokenizer_encode(b, p, strlen(p), flags, &ib, &nb, &err);
            if (ra || rb || na != nb || memcmp(ia, ib, sizeof(int) * (size_t)na)) {
                if (bad++ < 5)
                    fprintf(stderr, "tokcmp: text %d (\"%.40s\"), flags %d: %d ids vs %d\n", checked, p, flags, na, nb);
            } else {
                char *ta, *tb;
                size_t la, lb;
                int inc;
                if (tl_tokenizer_decode(a, ia, na, &ta, &la, &inc, &err) ||
                    tl_tokenizer_decode(b, ib, nb, &tb, &lb, &inc, &err) || la != lb || memcmp(ta, tb, la))
                    bad++;
                else {
                    free(ta);
                    free(tb);
                }
            }
            if (!ra) free(ia);
            if (!rb) free(ib);
        }
        checked++;
    }
    int same_special = tl_tokenizer_bos(a) == tl_tokenizer_bos(b) && tl_tokenizer_vocab_size(a) == tl_tokenizer_vocab_size(b);
    printf("tokcmp: %d texts x 3 ways, %d differ; bos %d/%d, eos %d/%d, vocab %d/%d\n", checked, bad,
           tl_tokenizer_bos(a), tl_tokenizer_bos(b), tl_tokenizer_eos(a), tl_tokenizer_eos(b),
           tl_tokenizer_vocab_size(a), tl_tokenizer_vocab_size(b));
    free(all);
    tl_tokenizer_free(a);
    tl_tokenizer_free(b);
    return bad || !same_special;
}

static int open_file(const char *path)
{
    tl_error err = {{0}};
    tl_gguf f;
    if (tl_gguf_open(&f, path, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    tl_gguf_close(&f);
    tl_model *m;
    if (tl_model_load(&m, path, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    printf("%s: %lld parameters, note '%s'\n", path, (long long)m->n_params, m->note);
    tl_model_free(m);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "dequant"))
        return dequant(argv[2], argv[3], argv[4]);
    if (argc == 5 && !strcmp(argv[1], "tokcmp"))
        return tokcmp(argv[2], argv[3], argv[4]);
    if (argc == 3 && !strcmp(argv[1], "open"))
        return open_file(argv[2]);
    fprintf(stderr, "usage: gguf_tool dequant TYPE IN OUT | tokcmp GGUF DIR TEXTS | open FILE\n");
    return 2;
}
