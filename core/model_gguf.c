/* tl_model_load for a GGUF file (llama.cpp's format) of a Llama model: the configuration from
 * the llama.* metadata, the weights from the tensors llama.cpp's converter writes.
 *
 * What differs from a Hugging Face directory, and what is done about it:
 *  - shapes are written fastest dimension first (ne[0] = columns), so [cols, rows];
 *  - the converter reorders the rows of Q and K inside each head (rotary pairs interleaved,
 *    llama.cpp's rope) where the engine rotates halves (transformers' rotate_half): those two
 *    matrices are copied with the rows put back;
 *  - llama3 RoPE scaling comes as a tensor, rope_freqs.weight, one divisor per frequency;
 *  - K-quant tensors (Q4_K, Q5_K, Q6_K) run on their own kernels (kernels/cpu/kq*.c) from
 *    the file's bytes, and the model's note says so.
 * F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K and Q6_K tensors otherwise stay in the mapping. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gguf.h"
#include "model_priv.h"
#include "safetensors.h"
#include "tokenloop/quant.h"

typedef struct gguf_model {
    tl_model_priv head;   /* first: tl_model_free calls head.release */
    tl_gguf file;
    void **owned;         /* converted and reordered copies */
    size_t n_owned;
    int native_k[TL_DTYPE_COUNT];   /* per tl_dtype: K-quant matrices bound, that run natively */
} gguf_model;

static void release_gguf(tl_model *m)
{
    gguf_model *g = m->priv;
    for (size_t i = 0; i < g->n_owned; i++)
        free(g->owned[i]);
    free(g->owned);
    tl_gguf_close(&g->file);
    free(g);
    free(m->layers);
}

int tl_model_is_gguf(const char *path)
{
    struct stat st;
    if (stat(path, &st) || !S_ISREG(st.st_mode))
        return 0;
    size_t n = strlen(path);
    return tl_gguf_is_file(path) || (n > 5 && !strcmp(path + n - 5, ".gguf"));
}

static void *own(gguf_model *g, size_t bytes)
{
    void **grown = realloc(g->owned, (g->n_owned + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    g->owned = grown;
    void *p = malloc(bytes ? bytes : 1);
    if (p)
        g->owned[g->n_owned++] = p;
    return p;
}

/* ---- configuration ----------------------------------------------------------------------- */

static int need_int(const tl_gguf *f, const char *key, int64_t lo, int64_t hi, int *out, tl_error *err)
{
    int64_t v;
    int rc = tl_gguf_get_int(f, key, lo, hi, &v, err);
    if (rc > 0)
        return tl_error_set(err, "%s: metadata key '%s' is missing", f->path, key);
    if (rc == 0)
        *out = (int)v;
    return rc;
}

static int opt_int(const tl_gguf *f, const char *key, int64_t lo, int64_t hi, int *out, tl_error *err)
{
    int64_t v;
    int rc = tl_gguf_get_int(f, key, lo, hi, &v, err);
    if (rc == 0)
        *out = (int)v;
    return rc < 0 ? -1 : 0;
}

/* A float key within [lo, hi]; absent leaves *out (required: an error). */
static int get_real(const tl_gguf *f, const char *key, double lo, double hi, int required, float *out, tl_error *err)
{
    double v;
    int rc = tl_gguf_get_float(f, key, &v, err);
    if (rc < 0)
        return -1;
    if (rc > 0)
        return required ? tl_error_set(err, "%s: metadata key '%s' is missing", f->path, key) : 0;
    if (!(v >= lo && v <= hi))
        return tl_error_set(err, "%s: metadata key '%s': %g is outside [%g, %g]", f->path, key, v, lo, hi);
    *out = (float)v;
    return 0;
}

static int check_architecture(const tl_gguf *f, tl_error *err)
{
    const char *s;
    uint64_t n;
    int rc = tl_gguf_get_str(f, "general.architecture", &s, &n, err);
    if (rc < 0)
        return -1;
    if (rc > 0)
        return tl_error_set(err, "%s: metadata key 'general.architecture' is missing", f->path);
    if (n != 5 || memcmp(s, "llama", 5)) {
        char buf[64], shown[200];
        snprintf(buf, sizeof buf, "%.*s", (int)(n < 60 ? n : 60), s);
        return tl_error_set(err, "%s: general.architecture is '%s'; only 'llama' is supported", f->path,
                            tl_st_printable(buf, shown, sizeof shown));
    }
    return 0;
}

/* Adds id to the EOS set unless it is there already. */
static void add_eos(tl_config *c, int id)
{
    for (int i = 0; i < c->n_eos; i++)
        if (c->eos_ids[i] == id)
            return;
    if (c->n_eos < TL_MAX_EOS)
        c->eos_ids[c->n_eos++] = id;
}

static int read_token_ids(const tl_gguf *f, tl_config *c, tl_error *err)
{
    static const char *const eos_keys[] = {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                                           "tokenizer.ggml.eom_token_id"};
    if (opt_int(f, "tokenizer.ggml.bos_token_id", 0, c->vocab_size - 1, &c->bos_id, err))
        return -1;
    for (size_t i = 0; i < sizeof eos_keys / sizeof eos_keys[0]; i++) {
        int id = -1;
        if (opt_int(f, eos_keys[i], 0, c->vocab_size - 1, &id, err))
            return -1;
        if (id >= 0)
            add_eos(c, id);
    }
    return 0;
}

/* llama.cpp's own sampling defaults, when the file carries them (general.sampling.*). */
static int read_sampling(const tl_gguf *f, tl_gen_config *g, tl_error *err)
{
    int64_t k;
    int rc = tl_gguf_get_int(f, "general.sampling.top_k", 0, 1 << 30, &k, err);
    if (rc < 0)
        return -1;
    if (rc == 0) {
        g->has_top_k = 1;
        g->top_k = (int)k;
    }
    g->top_p = g->temperature = -1;
    if (get_real(f, "general.sampling.top_p", 0, 1, 0, &g->top_p, err) ||
        get_real(f, "general.sampling.temp", 0, 1e6, 0, &g->temperature, err))
        return -1;
    g->has_top_p = g->top_p >= 0;
    g->has_temperature = g->temperature >= 0;
    if (g->has_temperature) {   /* llama.cpp samples unless the temperature is 0 */
        g->has_do_sample = 1;
        g->do_sample = g->temperature > 0;
    }
    return 0;
}

static int read_config(const tl_gguf *f, tl_config *c, tl_gen_config *g, tl_error *err)
{
    memset(c, 0, sizeof *c);
    memset(g, 0, sizeof *g);
    c->rope_theta = 10000.0f;
    c->bos_id = -1;
    c->n_kv_heads = -1;
    c->head_dim = -1;
    const int big = 1 << 20;
    if (check_architecture(f, err) ||
        need_int(f, "llama.embedding_length", 1, big, &c->hidden_size, err) ||
        need_int(f, "llama.feed_forward_length", 1, 4 * big, &c->intermediate_size, err) ||
        need_int(f, "llama.block_count", 1, 4096, &c->n_layers, err) ||
        need_int(f, "llama.attention.head_count", 1, 4096, &c->n_heads, err) ||
        opt_int(f, "llama.attention.head_count_kv", 1, 4096, &c->n_kv_heads, err) ||
        opt_int(f, "llama.attention.key_length", 2, 4096, &c->head_dim, err) ||
        need_int(f, "llama.context_length", 1, 1 << 30, &c->max_position_embeddings, err) ||
        get_real(f, "llama.attention.layer_norm_rms_epsilon", 0, 1, 1, &c->rms_norm_eps, err) ||
        get_real(f, "llama.rope.freq_base", 1, 1e12, 0, &c->rope_theta, err))
        return -1;
    if (c->n_kv_heads < 0)
        c->n_kv_heads = c->n_heads;
    if (c->n_heads % c->n_kv_heads)
        return tl_error_set(err, "%s: llama.attention.head_count (%d) is not a multiple of head_count_kv (%d)",
                            f->path, c->n_heads, c->n_kv_heads);
    if (c->head_dim < 0) {
        if (c->hidden_size % c->n_heads)
            return tl_error_set(err, "%s: llama.embedding_length (%d) is not a multiple of attention.head_count (%d)",
                                f->path, c->hidden_size, c->n_heads);
        c->head_dim = c->hidden_size / c->n_heads;
    }
    int value_length = c->head_dim, rope_dims = c->head_dim;
    if (opt_int(f, "llama.attention.value_length", 1, 4096, &value_length, err) ||
        opt_int(f, "llama.rope.dimension_count", 1, 4096, &rope_dims, err))
        return -1;
    if (value_length != c->head_dim)
        return tl_error_set(err, "%s: llama.attention.value_length (%d) differs from key_length (%d)", f->path,
                            value_length, c->head_dim);
    if (rope_dims != c->head_dim)   /* the engine rotates whole heads */
        return tl_error_set(err, "%s: llama.rope.dimension_count (%d) is not the head size (%d)", f->path,
                            rope_dims, c->head_dim);
    if (c->head_dim % 2)
        return tl_error_set(err, "%s: head size %d must be even for rotary embeddings", f->path, c->head_dim);
    if ((long long)c->n_heads * c->head_dim > big)
        return tl_error_set(err, "%s: llama.attention.head_count x head size is too large", f->path);

    /* the vocabulary: vocab_size, else the token list, else the embedding's rows */
    const tl_gguf_kv *tokens = tl_gguf_find_kv(f, "tokenizer.ggml.tokens");
    const tl_gguf_tensor *embd = tl_gguf_find_tensor(f, "token_embd.weight");
    if (tokens && tokens->type == TL_GGUF_ARRAY && tokens->n <= (uint64_t)16 * big)
        c->vocab_size = (int)tokens->n;
    else if (embd && embd->n_dims == 2 && embd->ne[1] <= 16 * big)
        c->vocab_size = (int)embd->ne[1];
    if (opt_int(f, "llama.vocab_size", 1, 16 * big, &c->vocab_size, err))
        return -1;
    if (c->vocab_size < 1)
        return tl_error_set(err, "%s: no llama.vocab_size, tokenizer.ggml.tokens or token_embd.weight to size "
                            "the vocabulary", f->path);
    return read_token_ids(f, c, err) || read_sampling(f, g, err) ? -1 : 0;
}

/* ---- tensors ----------------------------------------------------------------------------- */

/* The tensor `name` of shape [rows, cols] (1-D [cols] when rows == 0), in the file's order. */
static int find_shaped(const tl_gguf *f, const char *name, int64_t rows, int64_t cols, const tl_gguf_tensor **out,
                       tl_error *err)
{
    const tl_gguf_tensor *t = tl_gguf_find_tensor(f, name);
    if (!t)
        return tl_error_set(err, "%s: tensor '%s' is missing", f->path, name);
    int want_dims = rows ? 2 : 1;
    if (t->n_dims != want_dims || t->ne[0] != cols || (rows && t->ne[1] != rows)) {
        char got[160] = "";
        size_t o = 0;
        for (int d = t->n_dims - 1; d >= 0 && o < sizeof got - 24; d--)
            o += (size_t)snprintf(got + o, sizeof got - o, "%lld%s", (long long)t->ne[d], d ? ", " : "");
        if (rows)
            return tl_error_set(err, "%s: tensor '%s' has shape [%s] (rows, columns), the llama.* metadata implies "
                                "[%lld, %lld]", f->path, name, got, (long long)rows, (long long)cols);
        return tl_error_set(err, "%s: tensor '%s' has shape [%s], the llama.* metadata implies [%lld]", f->path,
                            name, got, (long long)cols);
    }
    if (!t->size_known || tl_gguf_native_dtype(t->type) < 0)
        return tl_error_set(err, "%s: tensor '%s': ggml type %u (%s) is not supported (F32, F16, BF16, Q8_0, Q4_0, "
                            "Q4_K, Q5_K, Q6_K are)", f->path, name, t->type, tl_gguf_type_name(t->type));
    *out = t;
    return 0;
}

/* Row r of the result is row src_row(r) of the file: the converter's order of Q and K undone.
 * Within a head of hd rows the file holds (pair i, half j) at 2i + j, transformers at j*hd/2 + i. */
static int64_t src_row(int64_t r, int64_t head_rows)
{
    if (!head_rows)
        return r;
    int64_t h = r / head_rows, k = r % head_rows, half = head_rows / 2;
    return h * head_rows + (k % half) * 2 + k / half;
}

/* Copies t into a buffer of the model's own: rows reordered when head_rows is set (whole rows,
 * in the file's dtype), anything as F32 when as_f32 is set. */
static int convert(gguf_model *g, const tl_gguf_tensor *t, int64_t rows, int64_t head_rows, int as_f32,
                   tl_weight *w, tl_error *err)
{
    int64_t cols = t->ne[0];
    int native = tl_gguf_native_dtype(t->type);
    tl_dtype out = as_f32 ? TL_F32 : (tl_dtype)native;
    size_t in_row = (size_t)(t->bytes / (uint64_t)rows), out_row = tl_dtype_row_bytes(out, cols);
    unsigned char *dst = own(g, out_row * (size_t)rows);
    float *tmp = (out != (tl_dtype)native) ? malloc(sizeof(float) * (size_t)cols) : NULL;
    if (!dst || (out != (tl_dtype)native && !tmp)) {
        free(tmp);
        return tl_error_set(err, "%s: out of memory converting tensor '%s'", g->file.path, t->name);
    }
    const unsigned char *src = t->data;
    for (int64_t r = 0; r < rows; r++) {
        const unsigned char *s = src + (size_t)src_row(r, head_rows) * in_row;
        if (!tmp)
            memcpy(dst + (size_t)r * out_row, s, out_row);
        else {
            tl_gguf_dequantize_row(t->type, s, tmp, cols);
            tl_quantize_row(out, tmp, dst + (size_t)r * out_row, cols);
        }
    }
    free(tmp);
    w->data = dst;
    w->dtype = out;
    w->mapped = 0;
    return 0;
}

/* Binds w to tensor `name` of shape [rows, cols] ([cols] when rows == 0). head_rows: Q or K,
 * whose rows come back to transformers' order; norm: kept as F32. */
static int bind(gguf_model *g, const char *name, int64_t rows, int64_t cols, int64_t head_rows, int norm, tl_weight *w,
                tl_error *err)
{
    const tl_gguf_tensor *t = NULL;
    if (find_shaped(&g->file, name, rows, cols, &t, err))
        return -1;
    w->rows = rows ? rows : 1;
    w->cols = cols;
    int native = tl_gguf_native_dtype(t->type);
    if (!norm && tl_dtype_is_kquant((tl_dtype)native))
        g->native_k[native]++;
    if (!head_rows && (!norm || native == TL_F32)) {
        w->data = t->data;
        w->dtype = (tl_dtype)native;
        w->mapped = 1;
        return 0;
    }
    return convert(g, t, w->rows, head_rows, norm, w, err);
}

static int bind_layer(gguf_model *g, const tl_config *c, int l, tl_layer *L, tl_error *err)
{
    int64_t d = c->hidden_size, q = (int64_t)c->n_heads * c->head_dim, kv = (int64_t)c->n_kv_heads * c->head_dim;
    int64_t ff = c->intermediate_size, hd = c->head_dim;
    char name[96];
#define BIND(suffix, r, cl, heads, norm, w) \
    (snprintf(name, sizeof name, "blk.%d.%s.weight", l, suffix), bind(g, name, r, cl, heads, norm, w, err))
    return BIND("attn_norm", 0, d, 0, 1, &L->attn_norm) ||
           BIND("attn_q", q, d, hd, 0, &L->wq) ||
           BIND("attn_k", kv, d, hd, 0, &L->wk) ||
           BIND("attn_v", kv, d, 0, 0, &L->wv) ||
           BIND("attn_output", d, q, 0, 0, &L->wo) ||
           BIND("ffn_norm", 0, d, 0, 1, &L->mlp_norm) ||
           BIND("ffn_gate", ff, d, 0, 0, &L->w_gate) ||
           BIND("ffn_up", ff, d, 0, 0, &L->w_up) ||
           BIND("ffn_down", d, ff, 0, 0, &L->w_down) ? -1 : 0;
#undef BIND
}

/* rope_freqs.weight (llama3 scaling): head_dim/2 positive factors, kept as F32. */
static int bind_rope_freqs(gguf_model *g, tl_model *m, tl_error *err)
{
    const char *name = "rope_freqs.weight";
    if (!tl_gguf_find_tensor(&g->file, name))
        return 0;
    tl_weight w;
    if (bind(g, name, 0, m->cfg.head_dim / 2, 0, 1, &w, err))
        return -1;
    const float *fr = w.data;
    for (int i = 0; i < m->cfg.head_dim / 2; i++)
        if (!(fr[i] > 0 && fr[i] < 1e9f))
            return tl_error_set(err, "%s: tensor '%s': factor %d is %g, not a positive number", g->file.path, name, i,
                                fr[i]);
    m->rope_freqs = fr;
    return 0;
}

/* "Q4_K, Q6_K run natively (...)": which K-quant matrices keep their own bytes and kernels. */
static void write_note(tl_model *m, const gguf_model *g)
{
    static const char *const names[TL_DTYPE_COUNT] = {[TL_Q4_K] = "Q4_K", [TL_Q5_K] = "Q5_K", [TL_Q6_K] = "Q6_K"};
    size_t o = 0;
    int n = 0;
    for (int t = 0; t < TL_DTYPE_COUNT; t++)
        if (g->native_k[t] && names[t]) {
            o += (size_t)snprintf(m->note + o, sizeof m->note - o, "%s%s", o ? ", " : "", names[t]);
            n++;
        }
    if (o)
        snprintf(m->note + o, sizeof m->note - o, " run%s natively (K-quant kernels on the file's bytes)",
                 n > 1 ? "" : "s");
}

static int bind_all(tl_model *m, gguf_model *g, tl_error *err)
{
    const tl_config *c = &m->cfg;
    if (bind(g, "token_embd.weight", c->vocab_size, c->hidden_size, 0, 0, &m->embed, err) ||
        bind(g, "output_norm.weight", 0, c->hidden_size, 0, 1, &m->final_norm, err))
        return -1;
    m->cfg.tie_word_embeddings = !tl_gguf_find_tensor(&g->file, "output.weight");
    if (c->tie_word_embeddings)
        m->lm_head = m->embed;
    else if (bind(g, "output.weight", c->vocab_size, c->hidden_size, 0, 0, &m->lm_head, err))
        return -1;
    if (!(m->layers = calloc((size_t)c->n_layers, sizeof *m->layers)))
        return tl_error_set(err, "%s: out of memory", m->dir);
    for (int l = 0; l < c->n_layers; l++)
        if (bind_layer(g, c, l, &m->layers[l], err))
            return -1;
    if (bind_rope_freqs(g, m, err))
        return -1;
    m->cfg.dtype = m->embed.dtype;
    m->eos_source = "the GGUF file's tokenizer.ggml.eos/eot/eom_token_id";
    tl_model_count(m);
    write_note(m, g);
    return 0;
}

int tl_model_load_gguf(tl_model **out, const char *path, tl_error *err)
{
    *out = NULL;
    tl_model *m = calloc(1, sizeof *m);
    gguf_model *g = calloc(1, sizeof *g);
    if (!m || !g) {
        free(m);
        free(g);
        return tl_error_set(err, "%s: out of memory", path);
    }
    g->head.release = release_gguf;
    m->priv = g;
    snprintf(m->dir, sizeof m->dir, "%s", path);
    if (tl_gguf_open(&g->file, path, err) || read_config(&g->file, &m->cfg, &m->gen, err) || bind_all(m, g, err)) {
        tl_model_free(m);
        return -1;
    }
    *out = m;
    return 0;
}
