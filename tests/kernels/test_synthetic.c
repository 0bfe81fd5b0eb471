/* Synthetic models: the built-in shapes, the layout and counts of the random weights, the
 * same seed giving the same model, sane magnitudes; and, through the engine, that the threaded
 * kernels give bit-identical logits at 1 and 2 threads (each output row is computed whole by
 * one thread) and the portable kernels agree with the vectorized ones. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tl_test.h"
#include "tokenloop/bandwidth.h"
#include "tokenloop/engine.h"
#include "tokenloop/synthetic.h"

static float weight_at(const tl_weight *w, int64_t i)
{
    uint32_t u;
    float f;
    if (w->dtype == TL_F32)
        return ((const float *)w->data)[i];
    uint16_t h = ((const uint16_t *)w->data)[i];
    if (w->dtype == TL_BF16) {
        u = (uint32_t)h << 16;
        memcpy(&f, &u, 4);
        return f;
    }
    int e = (h >> 10) & 31, m = h & 1023;   /* f16, via ldexp: independent of the kernels */
    f = e ? ldexpf((float)(m | 1024), e - 25) : ldexpf((float)m, -24);
    return (h & 0x8000) ? -f : f;
}

static const tl_weight *all_weights(const tl_model *m, int i)
{
    if (i == 0) return &m->embed;
    if (i == 1) return &m->final_norm;
    if (i == 2) return &m->lm_head;
    const tl_layer *L = &m->layers[(i - 3) / 9];
    const tl_weight *w[9] = {&L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo,
                             &L->mlp_norm, &L->w_gate, &L->w_up, &L->w_down};
    return w[(i - 3) % 9];
}

static void check_model(tl_dtype dt)
{
    tl_config c;
    tl_error err;
    TL_CHECK(tl_synthetic_config(&c, "tiny", &err) == 0);
    tl_model *m = NULL, *m2 = NULL, *m3 = NULL;
    TL_CHECK(tl_model_synthetic(&m, &c, dt, 7, &err) == 0);
    TL_CHECK(tl_model_synthetic(&m2, &c, dt, 7, &err) == 0);
    TL_CHECK(tl_model_synthetic(&m3, &c, dt, 8, &err) == 0);
    if (!m || !m2 || !m3)
        goto out;
    int64_t d = c.hidden_size, ff = c.intermediate_size, q = (int64_t)c.n_heads * c.head_dim;
    int64_t kv = (int64_t)c.n_kv_heads * c.head_dim, V = c.vocab_size;
    int64_t want_rows[9] = {1, q, kv, kv, d, 1, ff, ff, d}, want_cols[9] = {d, d, d, d, q, d, d, d, ff};
    int n_w = 3 + 9 * c.n_layers, shapes_ok = 1, same = 1, differs = 0, sane = 1;
    int64_t params = 0;
    uint64_t bytes = 0;
    for (int i = 0; i < n_w; i++) {
        const tl_weight *w = all_weights(m, i), *w2 = all_weights(m2, i), *w3 = all_weights(m3, i);
        int64_t r = i < 3 ? (i == 1 ? 1 : V) : want_rows[(i - 3) % 9];
        int64_t cl = i < 3 ? d : want_cols[(i - 3) % 9];
        if (w->rows != r || w->cols != cl || w->dtype != dt || !w->data)
            shapes_ok = 0;
        size_t nb = (size_t)(w->rows * w->cols) * tl_dtype_size(dt);
        if (i != 2) {   /* lm_head is counted below as a tensor of its own */
            params += w->rows * w->cols;
            bytes += nb;
        }
        same &= !memcmp(w->data, w2->data, nb);
        differs |= memcmp(w->data, w3->data, nb) != 0;
        int norm = w->rows == 1;
        double lim = norm ? 1.07 : 2.0 / sqrt((double)w->cols) + 1e-9;
        for (int64_t k = 0; k < w->rows * w->cols; k++) {
            float v = weight_at(w, k);
            if (!isfinite(v) || fabsf(v) > lim || (norm && v < 1.0f))
                sane = 0;
        }
    }
    TL_CHECK(shapes_ok);
    TL_CHECK(same);
    TL_CHECK(differs);
    TL_CHECK_MSG(sane, "%s weights out of range", tl_dtype_name(dt));
    /* untied: lm_head counts as parameters; a decode step reads one embedding row */
    TL_CHECK_INT(m->n_params, params + V * d);
    TL_CHECK_INT(m->weight_bytes, bytes - (uint64_t)(V * d) * tl_dtype_size(dt) + (uint64_t)(V * d + d) * tl_dtype_size(dt));
    TL_CHECK_INT(m->cfg.dtype, dt);
    TL_CHECK_STR(m->dir, "");
out:
    tl_model_free(m);
    tl_model_free(m2);
    tl_model_free(m3);
}

static int run_logits(const tl_model *m, int threads, const char *isa, tl_precision prec, float *out, int n_out)
{
    if (isa)
        setenv("TL_CPU_ISA", isa, 1);
    else
        unsetenv("TL_CPU_ISA");
    tl_engine *e = NULL;
    tl_error err;
    int ids[9] = {1, 17, 400, 999, 3, 3, 250, 8, 600};
    int rc = tl_engine_create(&e, m, tl_backend_cpu(), threads, 16, &err);
    if (!rc)
        rc = tl_engine_set_precision(e, prec, &err);
    if (!rc)
        rc = tl_engine_prefill(e, ids, 8, &err);
    if (!rc) {
        memcpy(out, tl_engine_logits(e), sizeof(float) * (size_t)(n_out / 2));
        rc = tl_engine_decode(e, ids[8], &err);
    }
    if (!rc)
        memcpy(out + n_out / 2, tl_engine_logits(e), sizeof(float) * (size_t)(n_out / 2));
    if (rc)
        fprintf(stderr, "engine: %s\n", err.msg);
    tl_engine_free(e);
    unsetenv("TL_CPU_ISA");
    return rc;
}

static void check_engine(void)
{
    tl_config c;
    tl_error err;
    tl_model *m = NULL;
    tl_synthetic_config(&c, "tiny", &err);
    if (tl_model_synthetic(&m, &c, TL_BF16, 3, &err)) {
        TL_CHECK_MSG(0, "%s", err.msg);
        return;
    }
    int n = 2 * c.vocab_size;
    float *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
    float *g = malloc(sizeof(float) * (size_t)n);
    /* the portable set never rounds activations: it is the exact mode whatever the setting */
    TL_CHECK(run_logits(m, 2, "generic", TL_PRECISION_BF16, g, n) == 0);
    for (tl_precision p = TL_PRECISION_MIXED; p <= TL_PRECISION_BF16; p++) {
        int exact = p == TL_PRECISION_EXACT;
        TL_CHECK(run_logits(m, 1, NULL, p, a, n) == 0);
        TL_CHECK(run_logits(m, 2, NULL, p, b, n) == 0);
        TL_CHECK_MSG(!memcmp(a, b, sizeof(float) * (size_t)n), "logits differ between 1 and 2 threads");
        double worst = 0, scale = 0;
        for (int i = 0; i < n; i++) {
            worst = fmax(worst, fabs((double)a[i] - g[i]));
            scale = fmax(scale, fabs((double)g[i]));
        }
        /* docs/accuracy.md: exact within 2e-3 of float64, the modes that round within 1e-2 */
        double tol = exact ? 1e-4 : 1e-2;
        TL_CHECK_MSG(scale > 0 && worst <= tol * scale, "portable vs vectorized logits (%s): %g of %g",
                     tl_precision_name(p), worst, scale);
        printf("synthetic tiny: default kernels vs portable, %s: %.3g relative\n", tl_precision_name(p),
               worst / scale);
    }
    free(a);
    free(b);
    free(g);
    tl_model_free(m);
}

int main(void)
{
    tl_config c;
    tl_error err;
    TL_CHECK(tl_synthetic_config(&c, "llama-3.2-1b", &err) == 0);
    TL_CHECK_INT(c.hidden_size, 2048);
    TL_CHECK_INT(c.tie_word_embeddings, 1);
    TL_CHECK(tl_synthetic_config(&c, "llama-3.1-8b", &err) == 0);
    TL_CHECK_INT(c.n_layers, 32);
    TL_CHECK_INT(c.head_dim, 128);
    TL_CHECK(tl_synthetic_config(&c, "llama-7", &err) != 0);
    TL_CHECK(strstr(err.msg, "llama-7") && strstr(err.msg, "llama-3.1-8b"));

    TL_CHECK(tl_synthetic_config(&c, "tiny", &err) == 0);
    tl_config bad = c;
    tl_model *m = NULL;
    bad.n_kv_heads = 3;
    TL_CHECK(tl_model_synthetic(&m, &bad, TL_BF16, 1, &err) != 0 && m == NULL);
    bad = c;
    bad.hidden_size = 0;
    TL_CHECK(tl_model_synthetic(&m, &bad, TL_BF16, 1, &err) != 0 && m == NULL);

    check_model(TL_BF16);
    check_model(TL_F16);
    check_model(TL_F32);
    check_engine();

    tl_bandwidth bw;
    TL_CHECK(tl_bandwidth_probe(&bw, 1, 0.05, &err) == 0);
    TL_CHECK(bw.threads == 1 && bw.passes >= 3 && bw.bytes_per_s > 0 && isfinite(bw.bytes_per_s));
    TL_CHECK(bw.median_bytes_per_s <= bw.bytes_per_s);
    TL_CHECK(bw.buffer_bytes >= ((size_t)128 << 20));
    return TL_TEST_END("synthetic");
}
