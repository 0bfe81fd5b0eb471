/* tl_model_convert: the same model with its matrices in another dtype, for the lesson's
 * "pace follows bytes": the class runs one prompt at bf16, q8_0 and q4_0 and watches the
 * bytes a step reads, the floor and the measured TPOT move together. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model_priv.h"
#include "tokenloop/quant.h"
#include "tokenloop/system.h"

typedef struct convert_priv {
    tl_model_priv head;   /* first: tl_model_free calls head.release */
    void **bufs;
    size_t n_bufs;
} convert_priv;

static void release_converted(tl_model *m)
{
    convert_priv *p = m->priv;
    for (size_t i = 0; i < p->n_bufs; i++)
        free(p->bufs[i]);
    free(p->bufs);
    free(p);
    free(m->layers);
}

typedef struct {
    const tl_weight *src;
    tl_weight *dst;
    int64_t r0, r1;
    int failed;
} convert_job;

static void *convert_rows(void *arg)
{
    convert_job *j = arg;
    const size_t sb = tl_dtype_row_bytes(j->src->dtype, j->src->cols);
    const size_t db = tl_dtype_row_bytes(j->dst->dtype, j->dst->cols);
    float *row = malloc(sizeof(float) * (size_t)j->src->cols);
    if (!row) {
        j->failed = 1;
        return NULL;
    }
    for (int64_t r = j->r0; r < j->r1; r++) {
        tl_dequantize_row(j->src->dtype, (const char *)j->src->data + (size_t)r * sb, row, j->src->cols);
        tl_quantize_row(j->dst->dtype, row, (char *)j->dst->data + (size_t)r * db, j->src->cols);
    }
    free(row);
    return NULL;
}

/* Rows split among the cores: converting an 8B model is ~8e9 elements. */
static int convert_weight(convert_priv *p, const tl_weight *src, tl_weight *dst, tl_dtype dt, const char *what,
                          int threads, tl_error *err)
{
    if (tl_dtype_block(dt) > 1 && src->cols % tl_dtype_block(dt))
        return tl_error_set(err, "--dtype %s: %s [%lld, %lld]: width is not a multiple of %d", tl_dtype_name(dt),
                            what, (long long)src->rows, (long long)src->cols, tl_dtype_block(dt));
    const size_t page = (size_t)2 << 20, bytes = (size_t)src->rows * tl_dtype_row_bytes(dt, src->cols);
    void **v = realloc(p->bufs, (p->n_bufs + 1) * sizeof *v);
    if (!v)
        return tl_error_set(err, "--dtype %s: out of memory", tl_dtype_name(dt));
    p->bufs = v;
    /* 2 MiB pages where they are large enough to matter: fewer TLB misses while a step streams */
    size_t al = bytes >= page ? page : 64;
    void *buf = aligned_alloc(al, (bytes + al - 1) / al * al);
    if (!buf)
        return tl_error_set(err, "--dtype %s: %s: cannot allocate %zu MiB", tl_dtype_name(dt), what, bytes >> 20);
#ifdef MADV_HUGEPAGE   /* Linux only */
    if (al == page)
        madvise(buf, bytes, MADV_HUGEPAGE);
#endif
    p->bufs[p->n_bufs++] = buf;
    *dst = (tl_weight){.data = buf, .dtype = dt, .rows = src->rows, .cols = src->cols, .mapped = 0};

    convert_job jobs[64];
    pthread_t tid[64];
    int n = src->rows < 256 ? 1 : threads, started = 0;
    for (int i = 0; i < n; i++)
        jobs[i] = (convert_job){src, dst, src->rows * i / n, src->rows * (i + 1) / n, 0};
    for (int i = 1; i < n; i++)
        if (pthread_create(&tid[i], NULL, convert_rows, &jobs[i]) == 0)
            started = i;
        else
            break;
    for (int i = started + 1; i < n; i++)   /* threads that did not start: done here */
        convert_rows(&jobs[i]);
    convert_rows(&jobs[0]);
    for (int i = 1; i <= started; i++)
        pthread_join(tid[i], NULL);
    for (int i = 0; i < n; i++)
        if (jobs[i].failed)
            return tl_error_set(err, "--dtype %s: out of memory", tl_dtype_name(dt));
    return 0;
}

int tl_model_convert(tl_model **out, const tl_model *src, tl_dtype dtype, tl_error *err)
{
    *out = NULL;
    if ((unsigned)dtype >= TL_DTYPE_CHOOSABLE)   /* the K-quants have no quantizer here */
        return tl_error_set(err, "--dtype: %s: no conversion to this dtype", tl_dtype_name(dtype));
    tl_model *m = malloc(sizeof *m);
    convert_priv *p = calloc(1, sizeof *p);
    tl_layer *layers = calloc((size_t)src->cfg.n_layers, sizeof *layers);
    if (!m || !p || !layers) {
        free(m);
        free(p);
        free(layers);
        return tl_error_set(err, "--dtype %s: out of memory", tl_dtype_name(dtype));
    }
    *m = *src;   /* config, generation defaults, dir, note, EOS source: as loaded; weights below */
    p->head.release = release_converted;
    m->priv = p;
    m->layers = layers;
    m->rope_freqs = NULL;
    if (src->rope_freqs) {   /* a GGUF file's RoPE divisors: the copy must outlive src */
        size_t n = (size_t)src->cfg.head_dim / 2;
        float *f = malloc(sizeof(float) * n);
        void **v = f ? realloc(p->bufs, (p->n_bufs + 1) * sizeof *v) : NULL;
        if (!v) {
            free(f);
            tl_model_free(m);
            return tl_error_set(err, "--dtype %s: out of memory", tl_dtype_name(dtype));
        }
        p->bufs = v;
        p->bufs[p->n_bufs++] = f;
        memcpy(f, src->rope_freqs, sizeof(float) * n);
        m->rope_freqs = f;
    }
    int nproc = tl_cpu_count();   /* the cores this process may use, not the machine's */
    int threads = nproc > 64 ? 64 : nproc;
    int rc = convert_weight(p, &src->embed, &m->embed, dtype, "embedding", threads, err) ||
             convert_weight(p, &src->final_norm, &m->final_norm, TL_F32, "final norm", threads, err);
    if (!rc && src->lm_head.data == src->embed.data)
        m->lm_head = m->embed;   /* tied stays tied: one tensor, read once */
    else if (!rc)
        rc = convert_weight(p, &src->lm_head, &m->lm_head, dtype, "lm_head", threads, err);
    for (int l = 0; l < src->cfg.n_layers && !rc; l++) {
        const tl_layer *S = &src->layers[l];
        tl_layer *L = &m->layers[l];
        char what[64];
#define CONV(S_, D_, dt_, name_) \
    (snprintf(what, sizeof what, "layer %d %s", l, name_), convert_weight(p, S_, D_, dt_, what, threads, err))
        rc = CONV(&S->attn_norm, &L->attn_norm, TL_F32, "input_layernorm") ||
             CONV(&S->mlp_norm, &L->mlp_norm, TL_F32, "post_attention_layernorm") ||
             CONV(&S->wq, &L->wq, dtype, "q_proj") || CONV(&S->wk, &L->wk, dtype, "k_proj") ||
             CONV(&S->wv, &L->wv, dtype, "v_proj") || CONV(&S->wo, &L->wo, dtype, "o_proj") ||
             CONV(&S->w_gate, &L->w_gate, dtype, "gate_proj") || CONV(&S->w_up, &L->w_up, dtype, "up_proj") ||
             CONV(&S->w_down, &L->w_down, dtype, "down_proj");
#undef CONV
    }
    if (rc) {
        tl_model_free(m);
        return -1;
    }
    tl_model_count(m);
    *out = m;
    return 0;
}
