/* The forward pass of a Llama model, as transformers computes it, one call per pass.
 * Every operation goes through the backend's table (tokenloop/backend.h), so this file reads
 * top to bottom like the math: embed -> for each layer { RMSNorm, q/k/v, RoPE, attention,
 * o_proj, residual, RMSNorm, SwiGLU MLP, residual } -> final RMSNorm -> lm_head -> logits.
 * The KV cache is [layer][position][n_kv_heads * head_dim]. In fp32 (the default) k_proj and
 * v_proj write straight into the rows of the positions being computed, so there is no copy; in
 * bf16 (tl_engine_set_kv_dtype) they write fp32 rows that are rounded into the cache after
 * RoPE, and a decode step reads half the cache bytes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tokenloop/engine.h"
#include "vecsel.h"
#include "tokenloop/system.h"

#define DEFAULT_CAPACITY 4096
#define MAX_CHUNK 256          /* prefill rows per pass: bounds the activation buffers */

struct tl_engine {
    const tl_model *m;
    const tl_backend_ops *be;
    void *ctx;

    /* the weights as the backend sees them (the CPU: the mapping itself) */
    tl_weight embed, final_norm, lm_head;
    tl_layer *layers;
    int tied;                  /* lm_head is embed: uploaded once */
    float *inv_freq_host;      /* head_dim/2 RoPE frequencies, llama3 scaling applied */
    tl_weight inv_freq;        /* the same, uploaded */

    int capacity, pos, chunk;

    /* activations, chunk rows each (backend memory) */
    float *x;                  /* [chunk, hidden] the residual stream */
    float *xb, *xb2;           /* [chunk, hidden] normed input, projection output */
    float *q, *att;            /* [chunk, n_heads * head_dim] */
    float *hb, *hb2;           /* [chunk, intermediate] gate, up */
    float *logits_dev;         /* [vocab] */
    float *k_cache, *v_cache;  /* [n_layers, capacity, kv_dim] of fp32, or of bf16 (kv_bf16) */
    int kv_bf16;
    float *k_new, *v_new;      /* kv_bf16: [chunk, kv_dim] fp32 rows before they are rounded */
    /* a batched decode led by this engine (tl_engine_decode_batch), allocated on first use */
    float *bk, *bv;            /* [chunk, kv_dim] each sequence's new K and V row */
    float *blogits;            /* [bcap, vocab] */
    int bcap;

    float *logits;             /* [vocab] host copy (stale in keep_top mode) */
    const float *scores;       /* what tl_engine_logits shows: logits, or logits_dev in place */
    int keep_top, n_top;       /* keep_top mode: k asked; the last pass's k best */
    int top_ids[TL_TOPK_MAX];
    float top_vals[TL_TOPK_MAX];
    double top_sumexp;
    /* the scores' statistics, gathered by the threads that write them (matmul_scores) */
    int stats_on, stats_pending, have_stats;
    unsigned stats_want;
    float stats_scale;
    vs_acc *acc;               /* one per backend thread */
    void **slots;              /* their kernels' part, for matmul_scores */
    int n_acc;
    tl_logit_stats stats;
    double last_ms, last_unsynced_ms;
    int async;                 /* the backend's operations return before their work is done */
    tl_precision prec;         /* tl_engine_set_precision */
    int rounds;                /* the backend's products can round x (set_exact's answer) */
};

/* ---- setup ------------------------------------------------------------------------------ */

/* HF's rope_init_fn for rope_type "llama3": long wavelengths are divided by factor, short
 * ones kept, and the band between low_freq_wavelen and high_freq_wavelen interpolated. */
static void compute_inv_freq(float *out, const tl_config *c)
{
    int half = c->head_dim / 2;
    for (int i = 0; i < half; i++) {
        double f = 1.0 / pow(c->rope_theta, (2.0 * i) / c->head_dim);
        if (c->rope_llama3) {
            double old = c->rope_original_max_position, lo = c->rope_low_freq_factor;
            double hi = c->rope_high_freq_factor, factor = c->rope_factor;
            double wavelen = 2.0 * M_PI / f;
            if (wavelen > old / lo) {
                f /= factor;
            } else if (wavelen >= old / hi) {
                double smooth = (old / wavelen - lo) / (hi - lo);
                f = (1.0 - smooth) * f / factor + smooth * f;
            }
        }
        out[i] = (float)f;
    }
}

static void apply_precision(tl_engine *e);

static int upload(tl_engine *e, const tl_weight *host, tl_weight *dev, tl_error *err)
{
    int rc = e->be->upload(e->ctx, host, dev, err);
    dev->keep_x = 0;   /* the engine's precision decides it (apply_precision), not the file */
    return rc;
}

static void unload(tl_engine *e, tl_weight *dev)
{
    if (dev->data)
        e->be->unload(e->ctx, dev);
    dev->data = NULL;
}

static int upload_weights(tl_engine *e, tl_error *err)
{
    const tl_model *m = e->m;
    if (upload(e, &m->embed, &e->embed, err) || upload(e, &m->final_norm, &e->final_norm, err))
        return -1;
    e->tied = m->lm_head.data == m->embed.data;
    if (e->tied)
        e->lm_head = e->embed;
    else if (upload(e, &m->lm_head, &e->lm_head, err))
        return -1;
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const tl_layer *h = &m->layers[l];
        tl_layer *d = &e->layers[l];
        if (upload(e, &h->attn_norm, &d->attn_norm, err) || upload(e, &h->wq, &d->wq, err) ||
            upload(e, &h->wk, &d->wk, err) || upload(e, &h->wv, &d->wv, err) || upload(e, &h->wo, &d->wo, err) ||
            upload(e, &h->mlp_norm, &d->mlp_norm, err) || upload(e, &h->w_gate, &d->w_gate, err) ||
            upload(e, &h->w_up, &d->w_up, err) || upload(e, &h->w_down, &d->w_down, err))
            return -1;
    }
    tl_weight f = {.data = e->inv_freq_host, .dtype = TL_F32, .rows = 1, .cols = m->cfg.head_dim / 2};
    return upload(e, &f, &e->inv_freq, err);
}

static float *alloc(tl_engine *e, size_t n, int *failed)
{
    float *p = e->be->alloc(e->ctx, n);
    if (!p)
        *failed = 1;
    return p;
}

/* Elements of one cache (K or V) as the floats the backend allocates. */
static size_t cache_floats(const tl_engine *e, int bf16)
{
    const tl_config *c = &e->m->cfg;
    size_t n = (size_t)c->n_layers * e->capacity * c->n_kv_heads * c->head_dim;
    return bf16 ? (n + 1) / 2 : n;
}

static int alloc_buffers(tl_engine *e, tl_error *err)
{
    const tl_config *c = &e->m->cfg;
    size_t T = (size_t)e->chunk, q_dim = (size_t)c->n_heads * c->head_dim;
    size_t kv = cache_floats(e, 0);
    int failed = 0;
    e->x = alloc(e, T * c->hidden_size, &failed);
    e->xb = alloc(e, T * c->hidden_size, &failed);
    e->xb2 = alloc(e, T * c->hidden_size, &failed);
    e->q = alloc(e, T * q_dim, &failed);
    e->att = alloc(e, T * q_dim, &failed);
    e->hb = alloc(e, T * c->intermediate_size, &failed);
    e->hb2 = alloc(e, T * c->intermediate_size, &failed);
    e->logits_dev = alloc(e, (size_t)c->vocab_size, &failed);
    e->k_cache = alloc(e, kv, &failed);
    e->v_cache = alloc(e, kv, &failed);
    e->logits = calloc((size_t)c->vocab_size, sizeof(float));
    e->scores = e->logits;
    if (failed || !e->logits)
        return tl_error_set(err, "%s: out of memory for a KV cache of %d positions (%.1f MiB)", e->be->name,
                            e->capacity, 2.0 * kv * sizeof(float) / 1048576.0);
    return 0;
}

int tl_engine_create(tl_engine **out, const tl_model *m, const tl_backend_ops *be, int threads, int capacity,
                     tl_error *err)
{
    *out = NULL;
    if (!be)
        return tl_error_set(err, "backend: not compiled in");
    const tl_config *c = &m->cfg;
    tl_engine *e = calloc(1, sizeof *e);
    if (!e)
        return tl_error_set(err, "engine: out of memory");
    e->m = m;
    e->be = be;
    e->capacity = capacity > 0 ? capacity : DEFAULT_CAPACITY;
    if (e->capacity > c->max_position_embeddings)
        e->capacity = c->max_position_embeddings;
    e->chunk = e->capacity < MAX_CHUNK ? e->capacity : MAX_CHUNK;
    e->last_unsynced_ms = -1;
    e->async = be->set_async == NULL;   /* a backend that cannot be switched is a queue (CUDA) */
    e->prec = be->set_exact ? TL_PRECISION_MIXED : TL_PRECISION_DEVICE;
    e->layers = calloc((size_t)c->n_layers, sizeof *e->layers);
    e->inv_freq_host = malloc(sizeof(float) * (size_t)(c->head_dim / 2));
    if (!e->layers || !e->inv_freq_host) {
        tl_engine_free(e);
        return tl_error_set(err, "engine: out of memory");
    }
    compute_inv_freq(e->inv_freq_host, c);
    if (m->rope_freqs)   /* GGUF's llama3 scaling (model_gguf.c): llama.cpp divides each frequency */
        for (int i = 0; i < c->head_dim / 2; i++)
            e->inv_freq_host[i] /= m->rope_freqs[i];
    tl_error why;
    if (be->accepts && be->accepts(c, &why)) {
        tl_engine_free(e);
        if (m->dir[0])
            return tl_error_set(err, "%s/config.json: %s", m->dir, why.msg);
        return tl_error_set(err, "synthetic model: %s", why.msg);
    }
    if (!(e->ctx = be->create(threads, err))) {
        tl_engine_free(e);
        return -1;
    }
    if (upload_weights(e, err) || alloc_buffers(e, err)) {
        tl_engine_free(e);
        return -1;
    }
    if (be->set_exact)
        apply_precision(e);
    if (be->matmul_scores && be->scores_slots && be->host_buffers) {
        e->n_acc = be->scores_slots(e->ctx);
        e->acc = e->n_acc > 0 ? malloc(sizeof(vs_acc) * (size_t)e->n_acc) : NULL;
        e->slots = e->n_acc > 0 ? malloc(sizeof(void *) * (size_t)e->n_acc) : NULL;
        for (int i = 0; e->acc && e->slots && i < e->n_acc; i++)
            e->slots[i] = vs_acc_scores(&e->acc[i]);
        if (!e->acc || !e->slots)
            e->n_acc = 0;   /* no statistics: the sampler reads the scores itself */
    }
    *out = e;
    return 0;
}

void tl_engine_free(tl_engine *e)
{
    if (!e)
        return;
    if (e->ctx) {
        float *bufs[] = {e->x, e->xb, e->xb2, e->q, e->att, e->hb, e->hb2, e->logits_dev, e->k_cache, e->v_cache,
                         e->k_new, e->v_new, e->bk, e->bv, e->blogits};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            if (bufs[i])
                e->be->release(e->ctx, bufs[i]);
        if (!e->tied)
            unload(e, &e->lm_head);
        unload(e, &e->embed);
        unload(e, &e->final_norm);
        unload(e, &e->inv_freq);
        for (int l = 0; e->layers && l < e->m->cfg.n_layers; l++) {
            tl_layer *d = &e->layers[l];
            tl_weight *w[] = {&d->attn_norm, &d->wq, &d->wk, &d->wv, &d->wo, &d->mlp_norm, &d->w_gate, &d->w_up,
                              &d->w_down};
            for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
                unload(e, w[i]);
        }
        e->be->destroy(e->ctx);
    }
    free(e->layers);
    free(e->inv_freq_host);
    free(e->logits);
    free(e->acc);
    free(e->slots);
    free(e);
}

/* ---- the forward pass ------------------------------------------------------------------- */

/* Products of one input: in one operation where the backend has it (the same numbers). */
static void matmul_n(tl_engine *e, int n, float *const *out, const float *x, const tl_weight *const *W, int T)
{
    if (e->be->matmul_n) {
        e->be->matmul_n(e->ctx, n, out, x, W, T);
        return;
    }
    for (int i = 0; i < n; i++)
        e->be->matmul(e->ctx, out[i], x, W[i], T);
}

/* x += o_proj(attention(rope(q), rope(k), v)) over the cache rows 0..pos0+T-1. */
static void attention_block(tl_engine *e, int l, int T, int pos0)
{
    const tl_backend_ops *be = e->be;
    const tl_config *c = &e->m->cfg;
    const tl_layer *L = &e->layers[l];
    size_t kv_dim = (size_t)c->n_kv_heads * c->head_dim, layer = (size_t)l * e->capacity * kv_dim;
    const float *inv_freq = e->inv_freq.data;

    be->rmsnorm(e->ctx, e->xb, e->x, &L->attn_norm, T, c->hidden_size, c->rms_norm_eps);
    const tl_weight *qkv_w[3] = {&L->wq, &L->wk, &L->wv};
    if (e->kv_bf16) {
        uint16_t *k_layer = (uint16_t *)e->k_cache + layer, *v_layer = (uint16_t *)e->v_cache + layer;
        float *qkv_out[3] = {e->q, e->k_new, e->v_new};
        matmul_n(e, 3, qkv_out, e->xb, qkv_w, T);
        be->rope(e->ctx, e->q, T, c->n_heads, c->head_dim, pos0, inv_freq);
        be->rope(e->ctx, e->k_new, T, c->n_kv_heads, c->head_dim, pos0, inv_freq);
        be->store_bf16(e->ctx, k_layer + (size_t)pos0 * kv_dim, e->k_new, T * (int)kv_dim);
        be->store_bf16(e->ctx, v_layer + (size_t)pos0 * kv_dim, e->v_new, T * (int)kv_dim);
        be->attention_bf16(e->ctx, e->att, e->q, k_layer, v_layer, T, pos0, c->n_heads, c->n_kv_heads,
                           c->head_dim);
    } else {
        float *k_layer = e->k_cache + layer, *v_layer = e->v_cache + layer;
        float *k_rows = k_layer + (size_t)pos0 * kv_dim, *v_rows = v_layer + (size_t)pos0 * kv_dim;
        float *qkv_out[3] = {e->q, k_rows, v_rows};   /* k and v straight into the cache */
        matmul_n(e, 3, qkv_out, e->xb, qkv_w, T);
        be->rope(e->ctx, e->q, T, c->n_heads, c->head_dim, pos0, inv_freq);
        be->rope(e->ctx, k_rows, T, c->n_kv_heads, c->head_dim, pos0, inv_freq);
        be->attention(e->ctx, e->att, e->q, k_layer, v_layer, T, pos0, c->n_heads, c->n_kv_heads, c->head_dim);
    }
    be->matmul(e->ctx, e->xb2, e->att, &L->wo, T);
    be->add(e->ctx, e->x, e->xb2, T * c->hidden_size);
}

/* x += down(silu(gate(norm(x))) * up(norm(x))) */
static void mlp_block(tl_engine *e, int l, int T)
{
    const tl_backend_ops *be = e->be;
    const tl_config *c = &e->m->cfg;
    const tl_layer *L = &e->layers[l];

    be->rmsnorm(e->ctx, e->xb, e->x, &L->mlp_norm, T, c->hidden_size, c->rms_norm_eps);
    float *gu_out[2] = {e->hb, e->hb2};
    const tl_weight *gu_w[2] = {&L->w_gate, &L->w_up};
    matmul_n(e, 2, gu_out, e->xb, gu_w, T);
    be->swiglu(e->ctx, e->hb, e->hb2, T * c->intermediate_size);
    be->matmul(e->ctx, e->xb2, e->hb, &L->w_down, T);
    be->add(e->ctx, e->x, e->xb2, T * c->hidden_size);
}

/* Logits of the last of the T rows: only that row goes through the final norm and lm_head.
 * With statistics on (or keep_top), the kernel gathers them as it writes the scores, each
 * thread into its own accumulator. */
static void logits_block(tl_engine *e, int T)
{
    const tl_config *c = &e->m->cfg;
    const float *last = e->x + (size_t)(T - 1) * c->hidden_size;
    e->be->rmsnorm(e->ctx, e->xb, last, &e->final_norm, 1, c->hidden_size, c->rms_norm_eps);
    if (e->n_acc && (e->stats_on || e->keep_top)) {
        for (int i = 0; i < e->n_acc; i++)
            vs_acc_init(&e->acc[i], TL_TOPK_MAX, e->stats_on ? e->stats_want : 0, e->stats_scale);
        if (e->be->matmul_scores(e->ctx, e->logits_dev, e->xb, &e->lm_head, e->slots) == 0) {
            e->stats_pending = 1;
            return;
        }
    }
    e->be->matmul(e->ctx, e->logits_dev, e->xb, &e->lm_head, 1);
}

/* One pass over T new tokens at positions pos..pos+T-1; the logits only when asked. */
static void forward(tl_engine *e, const int *ids, int T, int want_logits)
{
    int pos0 = e->pos;
    if (e->be->begin_pass)
        e->be->begin_pass(e->ctx, T, pos0);
    e->be->embed(e->ctx, e->x, &e->embed, ids, T);
    for (int l = 0; l < e->m->cfg.n_layers; l++) {
        attention_block(e, l, T, pos0);
        mlp_block(e, l, T);
    }
    if (want_logits)
        logits_block(e, T);
    if (e->be->end_pass)
        e->be->end_pass(e->ctx);
    e->pos += T;
}

/* ---- the step API ----------------------------------------------------------------------- */

static int check_ids(const tl_engine *e, const int *ids, int n, const char *what, tl_error *err)
{
    int vocab = e->m->cfg.vocab_size;
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= vocab)
            return n == 1 ? tl_error_set(err, "%s: token id %d is out of range (vocabulary of %d)", what, ids[i], vocab)
                          : tl_error_set(err, "%s[%d]: token id %d is out of range (vocabulary of %d)", what, i,
                                         ids[i], vocab);
    return 0;
}

static int check_room(const tl_engine *e, int n, const char *what, tl_error *err)
{
    if (n <= e->capacity - e->pos)
        return 0;
    if (n == 1)
        return tl_error_set(err, "%s: the context is full (%d positions)", what, e->capacity);
    return tl_error_set(err, "%s: %d tokens at position %d do not fit in the context of %d positions", what, n,
                        e->pos, e->capacity);
}

/* Sync, then bring the scores out (all of them, or the best k where the backend can select
 * them); the pass's wall time includes both, as a step of a real loop would. */
static int finish(tl_engine *e, double t0, tl_error *err)
{
    int V = e->m->cfg.vocab_size;
    /* a synchronous backend has done the work by now: there is no wrong number to read */
    e->last_unsynced_ms = e->async ? tl_now_ms() - t0 : -1;
    if (e->be->sync(e->ctx, err)) {   /* a device fault: no logits, no timing to report */
        e->n_top = 0;
        return -1;
    }
    e->n_top = 0;
    if (e->be->host_buffers) {   /* the scores are readable where they are: no copy */
        e->scores = e->logits_dev;
        if (e->stats_pending) {   /* the threads' pieces into one */
            vs_acc_finish(e->acc, e->n_acc, e->scores, V, &e->stats);
            e->have_stats = e->stats_on;
            e->stats_pending = 0;
        }
        if (e->keep_top && e->stats.k >= e->keep_top) {
            e->n_top = e->keep_top;
            memcpy(e->top_ids, e->stats.ids, sizeof(int) * (size_t)e->n_top);
            memcpy(e->top_vals, e->stats.vals, sizeof(float) * (size_t)e->n_top);
            e->top_sumexp = e->stats.sumexp;
        } else if (e->keep_top) {
            e->n_top = tl_topk(e->scores, V, e->keep_top, e->top_ids, e->top_vals, &e->top_sumexp);
        }
        e->last_ms = tl_now_ms() - t0;
        return 0;
    }
    e->scores = e->logits;
    if (e->keep_top && e->be->topk)
        e->n_top = e->be->topk(e->ctx, e->logits_dev, V, e->keep_top, e->top_ids, e->top_vals, &e->top_sumexp);
    if (e->n_top <= 0) {
        e->be->to_host(e->ctx, e->logits, e->logits_dev, (size_t)V);
        if (e->be->sync(e->ctx, err)) {   /* the copy (or a failed device top-k) faulted */
            e->n_top = 0;
            return -1;
        }
        if (e->keep_top)
            e->n_top = tl_topk(e->logits, V, e->keep_top, e->top_ids, e->top_vals, &e->top_sumexp);
    }
    e->last_ms = tl_now_ms() - t0;
    return 0;
}

int tl_engine_set_async(tl_engine *e, int on, tl_error *err)
{
    on = on != 0;
    if (!e->be->set_async)
        return on ? 0 : tl_error_set(err, "%s: this backend is always asynchronous", e->be->name);
    if (e->be->set_async(e->ctx, on, err))
        return -1;
    e->async = on;
    return 0;
}

int tl_engine_async(const tl_engine *e) { return e->async; }

/* The backend's switch says whether products round x; with MIXED it rounds, and q/k/v's
 * weights carry keep_x, which the backend reads per product (a queued operation holds a copy
 * of its weight, so no switch happens in the middle of a pass). */
static void apply_precision(tl_engine *e)
{
    e->rounds = e->be->set_exact(e->ctx, e->prec == TL_PRECISION_EXACT);
    int keep = e->prec == TL_PRECISION_MIXED;
    for (int l = 0; l < e->m->cfg.n_layers; l++) {
        tl_layer *L = &e->layers[l];
        L->wq.keep_x = L->wk.keep_x = L->wv.keep_x = keep;
    }
}

int tl_engine_set_precision(tl_engine *e, tl_precision p, tl_error *err)
{
    if (p != TL_PRECISION_MIXED && p != TL_PRECISION_EXACT && p != TL_PRECISION_BF16)
        return tl_error_set(err, "precision: %d is not one of mixed, exact, bf16", (int)p);
    if (!e->be->set_exact) {
        if (p == TL_PRECISION_EXACT)
            return tl_error_set(err, "%s: this backend has no exact mode (its prefill products round activations "
                                     "to bf16; docs/accuracy.md)", e->be->name);
        return 0;   /* DEVICE stays: the backend has one set of rules */
    }
    e->prec = p;
    apply_precision(e);
    return 0;
}

/* A kernel set that never rounds runs every mode as the exact one, and says so. */
tl_precision tl_engine_precision(const tl_engine *e)
{
    return e->prec != TL_PRECISION_DEVICE && !e->rounds ? TL_PRECISION_EXACT : e->prec;
}

const char *tl_precision_name(tl_precision p)
{
    switch (p) {
    case TL_PRECISION_MIXED: return "mixed";
    case TL_PRECISION_EXACT: return "exact";
    case TL_PRECISION_BF16: return "bf16";
    default: return "device";
    }
}

const char *tl_precision_text(tl_precision p)
{
    switch (p) {
    case TL_PRECISION_MIXED:
        return "mixed: q/k/v keep fp32 activations, other products with bf16 weights round them to bf16";
    case TL_PRECISION_EXACT: return "exact: fp32 activations in every product";
    case TL_PRECISION_BF16: return "bf16: products with bf16 weights round activations to bf16";
    default: return "device: the backend's own (CUDA: fp32 activations, bf16 in prefills over 16 tokens)";
    }
}

int tl_engine_set_kv_dtype(tl_engine *e, tl_dtype dt, tl_error *err)
{
    if (dt != TL_F32 && dt != TL_BF16)
        return tl_error_set(err, "KV cache: %s: only fp32 and bf16", tl_dtype_name(dt));
    int bf16 = dt == TL_BF16;
    if (bf16 == e->kv_bf16)
        return 0;
    if (bf16 && (!e->be->store_bf16 || !e->be->attention_bf16))
        return tl_error_set(err, "%s: this backend has no bf16 KV cache (use fp32)", e->be->name);
    const tl_config *c = &e->m->cfg;
    size_t rows = (size_t)e->chunk * c->n_kv_heads * c->head_dim;
    int failed = 0;
    float *k = alloc(e, cache_floats(e, bf16), &failed), *v = alloc(e, cache_floats(e, bf16), &failed);
    float *k_new = bf16 ? alloc(e, rows, &failed) : NULL, *v_new = bf16 ? alloc(e, rows, &failed) : NULL;
    float *old[] = {failed ? k : e->k_cache, failed ? v : e->v_cache, failed ? k_new : e->k_new,
                    failed ? v_new : e->v_new};
    for (size_t i = 0; i < sizeof old / sizeof old[0]; i++)
        if (old[i])
            e->be->release(e->ctx, old[i]);
    if (failed)
        return tl_error_set(err, "%s: out of memory for a %s KV cache of %d positions", e->be->name,
                            tl_dtype_name(dt), e->capacity);
    e->k_cache = k;
    e->v_cache = v;
    e->k_new = k_new;
    e->v_new = v_new;
    e->kv_bf16 = bf16;
    e->pos = 0;   /* a new cache holds no positions */
    return 0;
}

tl_dtype tl_engine_kv_dtype(const tl_engine *e) { return e->kv_bf16 ? TL_BF16 : TL_F32; }

int tl_engine_keep_top(tl_engine *e, int k)
{
    if (k < 0 || k > TL_TOPK_MAX)
        return -1;
    e->keep_top = k;
    e->n_top = 0;
    return 0;
}

int tl_engine_top(const tl_engine *e, int k, int *ids, float *vals, double *sumexp)
{
    if (!e->keep_top)
        return tl_topk(e->scores, e->m->cfg.vocab_size, k, ids, vals, sumexp);
    if (k <= 0 || e->n_top <= 0)
        return -1;
    if (k > e->n_top)
        k = e->n_top;
    memcpy(ids, e->top_ids, sizeof(int) * (size_t)k);
    memcpy(vals, e->top_vals, sizeof(float) * (size_t)k);
    *sumexp = e->top_sumexp;
    return k;
}

int tl_engine_argmax(const tl_engine *e)
{
    int id = 0;
    float v;
    double z;
    return tl_engine_top(e, 1, &id, &v, &z) == 1 ? id : 0;
}

double tl_engine_device_bandwidth(tl_engine *e, double budget_s)
{
    return e->be->bandwidth ? e->be->bandwidth(e->ctx, budget_s) : 0;
}

/* The last pass's statistics go stale with its scores. */
static void pass_begins(tl_engine *e)
{
    e->have_stats = e->stats_pending = 0;
    e->stats.k = 0;
}

int tl_engine_set_stats(tl_engine *e, int on, unsigned what, float scale)
{
    if (on && !e->n_acc)
        return -1;
    e->stats_on = on != 0;
    e->stats_want = what & (TL_STATS_W | TL_STATS_SCALED);
    e->stats_scale = (what & TL_STATS_SCALED) && scale > 0 && isfinite(scale) ? scale : 1.0f;
    return 0;
}

const tl_logit_stats *tl_engine_stats(const tl_engine *e) { return e->have_stats ? &e->stats : NULL; }

int tl_engine_prefill(tl_engine *e, const int *ids, int n, tl_error *err)
{
    if (n <= 0)
        return tl_error_set(err, "ids: the prompt is empty");
    if (check_ids(e, ids, n, "ids", err) || check_room(e, n, "ids", err))
        return -1;
    double t0 = tl_now_ms();
    pass_begins(e);
    for (int done = 0; done < n;) {
        int T = n - done < e->chunk ? n - done : e->chunk;
        forward(e, ids + done, T, done + T == n);
        done += T;
    }
    return finish(e, t0, err);
}

int tl_engine_decode(tl_engine *e, int id, tl_error *err)
{
    if (check_ids(e, &id, 1, "id", err) || check_room(e, 1, "id", err))
        return -1;
    double t0 = tl_now_ms();
    pass_begins(e);
    forward(e, &id, 1, 1);
    return finish(e, t0, err);
}

/* ---- a batched step: one read of the weights for several sequences ------------------------
 * Sequence b brings n[b] tokens (1: a decode; more: a chunk of its prefill), at its own
 * position; their rows sit one after another, T = the sum, in the first engine's buffers. */

typedef struct batch_rows {
    int B, T;
    int first[TL_ENGINE_BATCH_MAX + 1];   /* sequence b's rows: first[b] .. first[b+1]-1 */
} batch_rows;

/* Like attention_block, for rows of several sequences: the products take every row at once;
 * each sequence's RoPE, new K/V rows and attention are its own, at its positions. */
static void attention_block_batch(tl_engine *const *es, const batch_rows *br, int l)
{
    tl_engine *e = es[0];
    const tl_backend_ops *be = e->be;
    const tl_config *c = &e->m->cfg;
    const tl_layer *L = &e->layers[l];
    size_t kv_dim = (size_t)c->n_kv_heads * c->head_dim, q_dim = (size_t)c->n_heads * c->head_dim;
    size_t layer = (size_t)l * e->capacity * kv_dim;
    const float *inv_freq = e->inv_freq.data;

    be->rmsnorm(e->ctx, e->xb, e->x, &L->attn_norm, br->T, c->hidden_size, c->rms_norm_eps);
    const tl_weight *qkv_w[3] = {&L->wq, &L->wk, &L->wv};
    float *qkv_out[3] = {e->q, e->bk, e->bv};
    matmul_n(e, 3, qkv_out, e->xb, qkv_w, br->T);
    for (int b = 0; b < br->B; b++) {
        const tl_engine *s = es[b];
        int pos = s->pos, r = br->first[b], n = br->first[b + 1] - r;
        float *q = e->q + r * q_dim, *k = e->bk + r * kv_dim, *v = e->bv + r * kv_dim, *att = e->att + r * q_dim;
        be->rope(e->ctx, q, n, c->n_heads, c->head_dim, pos, inv_freq);
        be->rope(e->ctx, k, n, c->n_kv_heads, c->head_dim, pos, inv_freq);
        if (e->kv_bf16) {
            uint16_t *k_layer = (uint16_t *)s->k_cache + layer, *v_layer = (uint16_t *)s->v_cache + layer;
            be->store_bf16(e->ctx, k_layer + (size_t)pos * kv_dim, k, n * (int)kv_dim);
            be->store_bf16(e->ctx, v_layer + (size_t)pos * kv_dim, v, n * (int)kv_dim);
            be->attention_bf16(e->ctx, att, q, k_layer, v_layer, n, pos, c->n_heads, c->n_kv_heads, c->head_dim);
        } else {
            float *k_layer = s->k_cache + layer, *v_layer = s->v_cache + layer;
            be->copy(e->ctx, k_layer + (size_t)pos * kv_dim, k, n * kv_dim);
            be->copy(e->ctx, v_layer + (size_t)pos * kv_dim, v, n * kv_dim);
            be->attention(e->ctx, att, q, k_layer, v_layer, n, pos, c->n_heads, c->n_kv_heads, c->head_dim);
        }
    }
    be->matmul(e->ctx, e->xb2, e->att, &L->wo, br->T);
    be->add(e->ctx, e->x, e->xb2, br->T * c->hidden_size);
}

/* Each sequence's last row (the lm_head reads its weights once for all), each into its
 * engine's logits. */
static void logits_block_batch(tl_engine *const *es, const batch_rows *br)
{
    tl_engine *e = es[0];
    const tl_config *c = &e->m->cfg;
    size_t V = (size_t)c->vocab_size, H = (size_t)c->hidden_size;
    for (int b = 0; b < br->B; b++)   /* the last rows side by side (xb2 is free by now) */
        e->be->copy(e->ctx, e->xb2 + b * H, e->x + (size_t)(br->first[b + 1] - 1) * H, H);
    e->be->rmsnorm(e->ctx, e->xb, e->xb2, &e->final_norm, br->B, c->hidden_size, c->rms_norm_eps);
    e->be->matmul(e->ctx, e->blogits, e->xb, &e->lm_head, br->B);
    for (int b = 0; b < br->B; b++)
        e->be->copy(e->ctx, es[b]->logits_dev, e->blogits + b * V, V);
}

static void forward_batch(tl_engine *const *es, const int *ids, const batch_rows *br)
{
    tl_engine *e = es[0];
    if (e->be->begin_pass)
        e->be->begin_pass(e->ctx, br->T, -1);   /* positions differ: nothing to capture as one pass */
    e->be->embed(e->ctx, e->x, &e->embed, ids, br->T);
    for (int l = 0; l < e->m->cfg.n_layers; l++) {
        attention_block_batch(es, br, l);
        mlp_block(e, l, br->T);
    }
    logits_block_batch(es, br);
    if (e->be->end_pass)
        e->be->end_pass(e->ctx);
    for (int b = 0; b < br->B; b++)
        es[b]->pos += br->first[b + 1] - br->first[b];
}

int tl_engine_batch_max(const tl_engine *e) { return e->be->copy ? e->chunk : 0; }

/* The batch's scratch on its first engine: the new K/V rows and B rows of scores. */
static int batch_buffers(tl_engine *e, int B, tl_error *err)
{
    const tl_config *c = &e->m->cfg;
    int failed = 0;
    if (!e->bk) {
        size_t rows = (size_t)e->chunk * c->n_kv_heads * c->head_dim;
        e->bk = alloc(e, rows, &failed);
        e->bv = alloc(e, rows, &failed);
    }
    if (!failed && B > e->bcap) {
        float *p = alloc(e, (size_t)B * c->vocab_size, &failed);
        if (p) {
            if (e->blogits)
                e->be->release(e->ctx, e->blogits);
            e->blogits = p;
            e->bcap = B;
        }
    }
    if (failed)
        return tl_error_set(err, "%s: out of memory for a batch of %d sequences", e->be->name, B);
    return 0;
}

static int check_batch(tl_engine *const *es, const int *const *ids, const int *n, int B, batch_rows *br,
                       tl_error *err)
{
    const tl_engine *e = es[0];
    br->B = B;
    br->T = 0;
    if (!e->be->copy)
        return tl_error_set(err, "%s: this backend has no batched decode (no copy operation)", e->be->name);
    if (B > TL_ENGINE_BATCH_MAX)
        return tl_error_set(err, "batch: %d sequences, at most %d", B, TL_ENGINE_BATCH_MAX);
    for (int b = 0; b < B; b++) {
        const tl_engine *s = es[b];
        char what[32];
        snprintf(what, sizeof what, "batch[%d]", b);
        if (s->m != e->m || s->be != e->be)
            return tl_error_set(err, "%s: another model or backend than batch[0]'s", what);
        if (s->kv_bf16 != e->kv_bf16)
            return tl_error_set(err, "%s: a %s KV cache beside batch[0]'s %s", what, s->kv_bf16 ? "bf16" : "fp32",
                                e->kv_bf16 ? "bf16" : "fp32");
        if (n[b] < 1)
            return tl_error_set(err, "%s: %d tokens (at least 1)", what, n[b]);
        if (n[b] == 1 && s->pos == 0)
            return tl_error_set(err, "%s: no prefill yet (a decode continues a sequence)", what);
        for (int o = 0; o < b; o++)
            if (es[o] == s)
                return tl_error_set(err, "%s: the same engine as batch[%d]", what, o);
        if (check_ids(e, ids[b], n[b], what, err) || check_room(s, n[b], what, err))
            return -1;
        br->first[b] = br->T;
        br->T += n[b];
        if (br->T > e->chunk)
            return tl_error_set(err, "batch: %d rows, at most %d in one pass on batch[0]", br->T, e->chunk);
    }
    br->first[B] = br->T;
    return 0;
}

int tl_engine_step_batch(tl_engine *const *es, const int *const *ids, const int *n, int B, tl_error *err)
{
    if (B < 1 || !es || !ids || !n)
        return tl_error_set(err, "batch: %d sequences (at least 1)", B);
    tl_engine *e = es[0];
    batch_rows br;
    if (check_batch(es, ids, n, B, &br, err) || batch_buffers(e, B, err))
        return -1;
    int rows[TL_ENGINE_BATCH_MAX];   /* the sequences' ids one after another */
    for (int b = 0; b < B; b++)
        memcpy(rows + br.first[b], ids[b], sizeof(int) * (size_t)n[b]);
    double t0 = tl_now_ms();
    for (int b = 0; b < B; b++)
        pass_begins(es[b]);
    forward_batch(es, rows, &br);
    if (e->be->sync(e->ctx, err))
        return -1;
    for (int b = 0; b < B; b++)
        if (finish(es[b], t0, err))
            return -1;
    return 0;
}

int tl_engine_decode_batch(tl_engine *const *es, const int *ids, int B, tl_error *err)
{
    if (B < 1 || B > TL_ENGINE_BATCH_MAX || !es || !ids)
        return tl_error_set(err, "batch: %d sequences (1..%d)", B, TL_ENGINE_BATCH_MAX);
    const int *each[TL_ENGINE_BATCH_MAX];
    int ones[TL_ENGINE_BATCH_MAX];
    for (int b = 0; b < B; b++) {
        each[b] = &ids[b];
        ones[b] = 1;
    }
    return tl_engine_step_batch(es, each, ones, B, err);
}

int tl_engine_rewind(tl_engine *e, int n)
{
    if (n < 0 || n > e->pos)
        return -1;
    e->pos -= n;   /* the rows past pos are overwritten by the next pass */
    e->have_stats = 0;
    return 0;
}

int tl_engine_pos(const tl_engine *e) { return e->pos; }
int tl_engine_capacity(const tl_engine *e) { return e->capacity; }
const float *tl_engine_logits(const tl_engine *e) { return e->keep_top ? NULL : e->scores; }
const tl_model *tl_engine_model(const tl_engine *e) { return e->m; }
const char *tl_engine_device(const tl_engine *e) { return e->be->name; }
const char *tl_engine_kernels(const tl_engine *e) { return e->be->kernels ? e->be->kernels(e->ctx) : e->be->name; }
double tl_engine_last_ms(const tl_engine *e) { return e->last_ms; }
double tl_engine_last_unsynced_ms(const tl_engine *e) { return e->last_unsynced_ms; }

/* A decode at position pos reads every weight once and the K and V rows 0..pos of each layer. */
double tl_engine_step_bytes(const tl_engine *e)
{
    const tl_config *c = &e->m->cfg;
    double kv_row = (double)c->n_kv_heads * c->head_dim * (e->kv_bf16 ? 2 : sizeof(float));
    return (double)e->m->weight_bytes + 2.0 * c->n_layers * (e->pos + 1) * kv_row;
}
