/* The step API on the CUDA backend against the same engine on the CPU backend, on synthetic
 * models (random weights from tl_model_synthetic): logits after prefills of 1 to 512 tokens,
 * greedy continuations token for token, rewind, and the decode graph giving bit-identical
 * logits when a step is replayed at a position it already ran at.
 *   test_cuda_engine          bf16 and f32 weights
 *   test_cuda_engine quant    the bf16 model converted to Q8_0 and Q4_0 (tl_model_convert, as
 *                             `--dtype q8_0|q4_0` does): prefills of 1 to 130 tokens, greedy,
 *                             a replay after rewind, and the bytes a step counts. Both backends
 *                             quantize each product's x the same way and sum the same integer
 *                             block products, so they differ only by fp32 summation order and
 *                             where that moves one of x's values across a rounding boundary
 *                             (docs/accuracy.md): the bf16 bound 2e-2 is kept. The quantized
 *                             path was written without a GPU.
 * Exits 77 (skip) when no CUDA device is present. */
#include <stdlib.h>

#include "../common/tl_test.h"
#include "tokenloop/engine.h"
#include "tokenloop/topk.h"

/* max|a - b| / max|b| */
static double rel_err(const float *a, const float *b, int n)
{
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        num = fmax(num, fabs((double)a[i] - b[i]));
        den = fmax(den, fabs((double)b[i]));
    }
    return den > 0 ? num / den : num;
}

static int argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

static tl_config tiny_config(int llama3)
{
    tl_config c;
    memset(&c, 0, sizeof c);
    c.hidden_size = 256;
    c.intermediate_size = 704;
    c.n_layers = 3;
    c.n_heads = 8;
    c.n_kv_heads = 2;
    c.head_dim = 32;
    c.vocab_size = 3000;
    c.max_position_embeddings = 2048;
    c.rms_norm_eps = 1e-5f;
    c.rope_theta = 500000.0f;
    c.rope_llama3 = llama3;
    c.rope_factor = 8.0f;
    c.rope_low_freq_factor = 1.0f;
    c.rope_high_freq_factor = 4.0f;
    c.rope_original_max_position = 64;
    c.bos_id = 1;
    c.eos_ids[0] = 2;
    c.n_eos = 1;
    c.dtype = TL_BF16;
    return c;
}

static tl_engine *engine(const tl_model *m, const tl_backend_ops *be, int capacity)
{
    tl_engine *e = NULL;
    tl_error err = {{0}};
    if (tl_engine_create(&e, m, be, 0, capacity, &err))
        fprintf(stderr, "engine (%s, %s): %s\n", be->name, tl_dtype_name(m->layers[0].wq.dtype), err.msg);
    return e;
}

/* Two engines over m (backends ba and bb); 0, or -1 (a failed check, neither left open). */
static int engine_pair(const tl_model *m, const tl_backend_ops *ba, const tl_backend_ops *bb, int capacity,
                       tl_engine **a, tl_engine **b)
{
    *a = engine(m, ba, capacity);
    *b = engine(m, bb, capacity);
    if (*a && *b)
        return 0;
    TL_CHECK(*a && *b);
    tl_engine_free(*a);
    tl_engine_free(*b);
    return -1;
}

static int *make_prompt(int n, int vocab, unsigned seed)
{
    int *p = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (int)((seed >> 8) % (unsigned)vocab);
    }
    return p;
}

/* Prefill of n tokens on both backends, then 3 decodes; the logits agree within tol. */
static void test_prefill(const tl_model *m, int n, double tol)
{
    int vocab = m->cfg.vocab_size;
    const char *dt = tl_dtype_name(m->layers[0].wq.dtype);
    tl_engine *c, *g;
    if (engine_pair(m, tl_backend_cpu(), tl_backend_cuda(), 600, &c, &g))
        return;
    int *p = make_prompt(n, vocab, (unsigned)n * 7919u);
    tl_error err;
    TL_CHECK_INT(tl_engine_prefill(c, p, n, &err), 0);
    TL_CHECK_INT(tl_engine_prefill(g, p, n, &err), 0);
    double e = rel_err(tl_engine_logits(g), tl_engine_logits(c), vocab), worst = e;
    TL_CHECK_MSG(e <= tol, "%s: prefill of %d tokens: gpu vs cpu logits %g (tol %g)", dt, n, e, tol);
    for (int i = 0; i < 3; i++) {
        int id = argmax(tl_engine_logits(c), vocab);
        TL_CHECK_INT(tl_engine_decode(c, id, &err), 0);
        TL_CHECK_INT(tl_engine_decode(g, id, &err), 0);
        e = rel_err(tl_engine_logits(g), tl_engine_logits(c), vocab);
        worst = fmax(worst, e);
        TL_CHECK_MSG(e <= tol, "%s: decode %d after a prefill of %d: %g (tol %g)", dt, i, n, e, tol);
    }
    TL_CHECK_INT(tl_engine_pos(g), n + 3);
    /* the floor's bytes: the model's, whichever backend runs it */
    TL_CHECK(tl_engine_step_bytes(g) == tl_engine_step_bytes(c));
    printf("%s: prefill %3d + 3 decodes: worst gpu vs cpu %.3g\n", dt, n, worst);
    free(p);
    tl_engine_free(c);
    tl_engine_free(g);
}

/* Greedy on each backend on its own: the same tokens. Where they part, the CPU's top two
 * logits must have been within the bf16 tolerance of each other (a genuine near tie). */
static void test_greedy(const tl_model *m, int n_prompt, int n_new, double tol)
{
    int vocab = m->cfg.vocab_size;
    const char *dt = tl_dtype_name(m->layers[0].wq.dtype);
    tl_engine *c, *g;
    if (engine_pair(m, tl_backend_cpu(), tl_backend_cuda(), 0, &c, &g))
        return;
    int *p = make_prompt(n_prompt, vocab, 4242u);
    tl_error err;
    TL_CHECK_INT(tl_engine_prefill(c, p, n_prompt, &err), 0);
    TL_CHECK_INT(tl_engine_prefill(g, p, n_prompt, &err), 0);
    int same = 0;
    for (int i = 0; i < n_new; i++) {
        const float *lc = tl_engine_logits(c), *lg = tl_engine_logits(g);
        int tc = argmax(lc, vocab), tg = argmax(lg, vocab);
        if (tc != tg) {
            double scale = fabs((double)lc[tc]) > 1 ? fabs((double)lc[tc]) : 1.0;
            double gap = ((double)lc[tc] - lc[tg]) / scale;
            TL_CHECK_MSG(gap <= tol, "%s greedy step %d: cpu chose %d, gpu %d, cpu margin %g", dt, i, tc, tg, gap);
            printf("%s greedy: near tie at step %d (cpu %d, gpu %d, margin %g); compared %d tokens\n", dt, i, tc,
                   tg, gap, same);
            break;
        }
        same++;
        TL_CHECK_INT(tl_engine_decode(c, tc, &err), 0);
        TL_CHECK_INT(tl_engine_decode(g, tg, &err), 0);
    }
    TL_CHECK_MSG(same >= n_new / 2, "%s: only %d of %d greedy tokens compared", dt, same, n_new);
    printf("%s greedy: %d of %d tokens identical after a prompt of %d\n", dt, same, n_new, n_prompt);
    free(p);
    tl_engine_free(c);
    tl_engine_free(g);
}

static const int next_ids[6] = {5, 17, 2999, 0, 1234, 77};

/* GPU engine g: prefill p (20 ids), 6 decodes, rewind 6, the same decodes again, bit-identical
 * to the first time (the graph replays the same kernels on the same rows). */
static void check_replay(tl_engine *g, const int *p, int vocab, const char *what)
{
    float *first = malloc(sizeof(float) * (size_t)vocab * 6);
    tl_error err;
    TL_CHECK_INT(tl_engine_prefill(g, p, 20, &err), 0);
    for (int i = 0; i < 6; i++) {
        TL_CHECK_INT(tl_engine_decode(g, next_ids[i], &err), 0);
        memcpy(first + (size_t)i * vocab, tl_engine_logits(g), sizeof(float) * (size_t)vocab);
    }
    TL_CHECK_INT(tl_engine_rewind(g, 6), 0);
    TL_CHECK_INT(tl_engine_pos(g), 20);
    for (int i = 0; i < 6; i++) {
        TL_CHECK_INT(tl_engine_decode(g, next_ids[i], &err), 0);
        double e = rel_err(tl_engine_logits(g), first + (size_t)i * vocab, vocab);
        TL_CHECK_MSG(e == 0.0, "%s: decode %d after rewind differs from the first time: %g", what, i, e);
    }
    free(first);
}

/* Rewind then decode again: bit-identical to the first time, and still the CPU's logits after
 * a different continuation. */
static void test_rewind(const tl_model *m, double tol)
{
    int vocab = m->cfg.vocab_size;
    tl_engine *c, *g;
    if (engine_pair(m, tl_backend_cpu(), tl_backend_cuda(), 0, &c, &g))
        return;
    int *p = make_prompt(20, vocab, 99u);
    const int *next = next_ids;
    tl_error err;
    check_replay(g, p, vocab, tl_dtype_name(m->layers[0].wq.dtype));
    /* rewind 4 and take another way; the CPU goes the same way without ever rewinding */
    TL_CHECK_INT(tl_engine_rewind(g, 4), 0);
    TL_CHECK_INT(tl_engine_prefill(c, p, 20, &err), 0);
    TL_CHECK_INT(tl_engine_decode(c, next[0], &err), 0);
    TL_CHECK_INT(tl_engine_decode(c, next[1], &err), 0);
    int other[] = {8, 9, 10};
    for (int i = 0; i < 3; i++) {
        TL_CHECK_INT(tl_engine_decode(c, other[i], &err), 0);
        TL_CHECK_INT(tl_engine_decode(g, other[i], &err), 0);
        double e = rel_err(tl_engine_logits(g), tl_engine_logits(c), vocab);
        TL_CHECK_MSG(e <= tol, "after rewind, another continuation, step %d: %g", i, e);
    }
    /* rewind across the prompt and prefill again */
    TL_CHECK_INT(tl_engine_rewind(g, tl_engine_pos(g) - 5), 0);
    TL_CHECK_INT(tl_engine_rewind(c, tl_engine_pos(c) - 5), 0);
    TL_CHECK_INT(tl_engine_prefill(g, p + 5, 10, &err), 0);
    TL_CHECK_INT(tl_engine_prefill(c, p + 5, 10, &err), 0);
    double e = rel_err(tl_engine_logits(g), tl_engine_logits(c), vocab);
    TL_CHECK_MSG(e <= tol, "prefill after rewinding into the prompt: %g", e);
    TL_CHECK(tl_engine_last_ms(g) > 0);
    TL_CHECK(tl_engine_last_unsynced_ms(g) >= 0);
    free(p);
    tl_engine_free(c);
    tl_engine_free(g);
}

/* keep_top on the GPU (only the best 64 cross to the host) against a twin GPU engine that copies
 * every score: the same pass gives the same scores, so the kept list must be tl_topk of the copy. */
static void test_keep_top(const tl_model *m, int n_prompt, int n_new)
{
    int vocab = m->cfg.vocab_size;
    tl_engine *full, *top;
    if (engine_pair(m, tl_backend_cuda(), tl_backend_cuda(), 0, &full, &top))
        return;
    TL_CHECK_INT(tl_engine_keep_top(top, TL_TOPK_MAX), 0);
    int *p = make_prompt(n_prompt, vocab, 99u);
    tl_error err;
    TL_CHECK_INT(tl_engine_prefill(full, p, n_prompt, &err), 0);
    TL_CHECK_INT(tl_engine_prefill(top, p, n_prompt, &err), 0);
    for (int i = 0; i <= n_new; i++) {
        int fi[TL_TOPK_MAX], ti[TL_TOPK_MAX];
        float fv[TL_TOPK_MAX], tv[TL_TOPK_MAX];
        double fz = 0, tz = 0;
        int fn = tl_topk(tl_engine_logits(full), vocab, TL_TOPK_MAX, fi, fv, &fz);
        int tn = tl_engine_top(top, TL_TOPK_MAX, ti, tv, &tz);
        TL_CHECK_INT(tn, fn);
        TL_CHECK_MSG(tn == fn && !memcmp(fi, ti, sizeof(int) * (size_t)fn) && !memcmp(fv, tv, sizeof(float) * (size_t)fn),
                     "keep_top step %d: the kept candidates differ from the full copy's", i);
        /* the CPU side's tl_topk sums float exps (core/topk.h's bound) */
        TL_CHECK_MSG(fabs(fz - tz) <= 1e-5 * fz, "keep_top step %d: sum %.12g vs %.12g", i, tz, fz);
        if (i == n_new)
            break;
        TL_CHECK_INT(tl_engine_decode(full, fi[0], &err), 0);
        TL_CHECK_INT(tl_engine_decode(top, fi[0], &err), 0);
    }
    free(p);
    tl_engine_free(full);
    tl_engine_free(top);
}

/* Decode, rewind, decode the same ids again: bit-identical (the graph replays the same
 * deterministic kernels on the same rows; the quantized products have no atomics). */
static void test_replay(const tl_model *m)
{
    tl_engine *g = engine(m, tl_backend_cuda(), 0);
    if (!g) {
        TL_CHECK(g != NULL);
        return;
    }
    int *p = make_prompt(20, m->cfg.vocab_size, 99u);
    check_replay(g, p, m->cfg.vocab_size, tl_dtype_name(m->layers[0].wq.dtype));
    free(p);
    tl_engine_free(g);
}

/* The bf16 model converted to Q8_0 and Q4_0: the embedding and lm_head too. */
static void test_quant(const tl_model *bf)
{
    tl_error err;
    tl_dtype dts[] = {TL_Q8_0, TL_Q4_0};
    for (int i = 0; i < 2; i++) {
        tl_model *q = NULL;
        if (tl_model_convert(&q, bf, dts[i], &err)) {
            fprintf(stderr, "convert to %s: %s\n", tl_dtype_name(dts[i]), err.msg);
            TL_CHECK(0);
            continue;
        }
        TL_CHECK_INT(q->layers[0].wq.dtype, dts[i]);
        TL_CHECK_INT(q->embed.dtype, dts[i]);   /* the embedding and lm_head too */
        TL_CHECK_INT(q->lm_head.dtype, dts[i]);
        int lens[] = {1, 2, 8, 9, 16, 17, 64, 130};
        for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++)
            test_prefill(q, lens[k], 2e-2);
        test_greedy(q, 12, 32, 2e-2);
        test_greedy(q, 1, 32, 2e-2);
        test_replay(q);
        tl_model_free(q);
    }
}

int main(int argc, char **argv)
{
    if (!tl_backend_cuda() || !tl_backend_cuda_available()) {
        printf("test_cuda_engine: SKIP: no usable CUDA device\n");
        return 77;
    }
    tl_error err;
    tl_config cfg = tiny_config(1);
    if (argc > 1 && !strcmp(argv[1], "quant")) {
        tl_model *bf = NULL;
        if (tl_model_synthetic(&bf, &cfg, TL_BF16, 7, &err)) {
            fprintf(stderr, "synthetic: %s\n", err.msg);
            return 1;
        }
        test_quant(bf);
        tl_model_free(bf);
        return TL_TEST_END("test_cuda_engine quant");
    }
    tl_model *bf = NULL, *f32 = NULL;
    if (tl_model_synthetic(&bf, &cfg, TL_BF16, 7, &err) || tl_model_synthetic(&f32, &cfg, TL_F32, 8, &err)) {
        fprintf(stderr, "synthetic: %s\n", err.msg);
        return 1;
    }
    /* bf16 weights: both backends read the same values; the GPU's prefill GEMM (T > 16)
     * rounds activations to bf16. f32 weights: the GPU also rounds the weights. */
    int lens[] = {1, 2, 3, 8, 16, 17, 31, 64, 100, 255, 256, 257, 300, 511, 512};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
        test_prefill(bf, lens[i], 2e-2);
    test_prefill(f32, 7, 3e-2);
    test_prefill(f32, 130, 3e-2);
    test_greedy(bf, 12, 32, 2e-2);
    test_greedy(bf, 1, 32, 2e-2);
    test_rewind(bf, 2e-2);
    test_keep_top(bf, 20, 24);
    tl_model_free(bf);
    tl_model_free(f32);
    return TL_TEST_END("test_cuda_engine");
}
