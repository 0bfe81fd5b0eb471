/* A GGUF file (core/gguf.c), then the model, tokenizer and chat template read from it
 * (model_gguf.c, tok_gguf.c). Oracle: every tensor the container accepts with a known type lies
 * inside the file, aligned, with the bytes its type and shape give; every value and string the
 * getters return lies inside the mapping; a loaded model's weights can be read end to end; a
 * loaded tokenizer encodes and decodes. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "gguf.h"
#include "tokenloop/template.h"
#include "tokenloop/model.h"
#include "tokenloop/tokenizer.h"

static volatile unsigned sink;

static void touch(const void *p, size_t n)
{
    if (n)
        sink += ((const unsigned char *)p)[0] + ((const unsigned char *)p)[n - 1];
}

static void check_file(const tl_gguf *f)
{
    const unsigned char *lo = f->map, *hi = lo + f->size;
    for (int64_t i = 0; i < f->n_tensors; i++) {
        const tl_gguf_tensor *t = &f->tensors[i];
        if (!t->size_known)
            continue;
        uint32_t be, bb;
        tl_gguf_type_block(t->type, &be, &bb);
        uint64_t elems = 1;
        for (int d = 0; d < t->n_dims; d++) elems *= (uint64_t)t->ne[d];
        if (elems / be * bb != t->bytes) tlf_fail("a tensor's byte size does not match its shape and type");
        if ((const unsigned char *)t->data < lo || t->bytes > (uint64_t)(hi - (const unsigned char *)t->data))
            tlf_fail("a tensor lies outside the file");
        if (((const unsigned char *)t->data - lo - f->data_start) % f->alignment) tlf_fail("a tensor is not aligned");
        touch(t->data, (size_t)t->bytes);
        if (tl_gguf_find_tensor(f, t->name) != t) tlf_fail("a tensor cannot be found by its name");
    }
    for (int64_t i = 0; i < f->n_kv; i++) {
        const tl_gguf_kv *kv = &f->kvs[i];
        if (kv->val < lo || kv->val_bytes > (uint64_t)(hi - kv->val)) tlf_fail("a value lies outside the file");
        if (tl_gguf_find_kv(f, kv->key) != kv) tlf_fail("a key cannot be found");
        if (kv->type == TL_GGUF_ARRAY && kv->arr_type == TL_GGUF_STRING) {
            uint64_t cur = 0;
            for (uint64_t k = 0; k < kv->n; k++) {
                const char *s;
                uint64_t n;
                tl_gguf_arr_next_str(kv, &cur, &s, &n);
                if ((const unsigned char *)s < lo || n > (uint64_t)(hi - (const unsigned char *)s))
                    tlf_fail("an array string lies outside the file");
                touch(s, (size_t)n);
            }
        }
    }
}

static void check_model(const char *path)
{
    tl_model *m = NULL;
    tl_error err = {{0}};
    if (tl_model_load(&m, path, &err)) {
        tlf_check_error(&err);
        return;
    }
    const tl_weight *w[] = {&m->embed, &m->final_norm, &m->lm_head};
    for (int i = 0; i < 3; i++) touch(w[i]->data, (size_t)tl_weight_bytes(w[i]));
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const tl_layer *L = &m->layers[l];
        const tl_weight *lw[] = {&L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo, &L->mlp_norm, &L->w_gate, &L->w_up, &L->w_down};
        for (int i = 0; i < 9; i++) touch(lw[i]->data, (size_t)tl_weight_bytes(lw[i]));
    }
    if (m->rope_freqs) touch(m->rope_freqs, sizeof(float) * (size_t)(m->cfg.head_dim / 2));
    tl_model_free(m);
}

static void check_tokenizer(const char *path)
{
    tl_tokenizer *tok = NULL;
    tl_error err = {{0}};
    if (tl_tokenizer_load(&tok, path, &err)) {
        tlf_check_error(&err);
    } else {
        static const char text[] = "Hello world <|eot_id|> 123";
        int *ids, n;
        if (tl_tokenizer_encode(tok, text, sizeof text - 1, TL_TOK_ADD_BOS, &ids, &n, &err) == 0) {
            char *out;
            size_t len;
            int inc;
            if (tl_tokenizer_decode(tok, ids, n, &out, &len, &inc, &err) == 0) free(out);
            free(ids);
        }
        tl_tokenizer_free(tok);
    }
    tl_chat_config chat;
    memset(&err, 0, sizeof err);
    if (tl_chat_config_load(path, &chat, &err)) tlf_check_error(&err);
    else tl_chat_config_free(&chat);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = tlf_write("model.gguf", data, size);
    tl_gguf f;
    tl_error err = {{0}};
    if (tl_gguf_open(&f, path, &err)) {
        tlf_check_error(&err);
        return 0;
    }
    check_file(&f);
    tl_gguf_close(&f);
    check_model(path);
    check_tokenizer(path);
    return 0;
}
