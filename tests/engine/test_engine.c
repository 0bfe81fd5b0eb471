/* The step API's own promises, on a generated checkpoint (argv[1]):
 * prefill of n tokens == n single decodes; rewind then decode == never having gone forward;
 * positions, capacity, step bytes; token ids out of range and prompts longer than the context
 * are refused with a message and leave the engine as it was. */
#include <stdlib.h>

#include "../common/tl_test.h"
#include "tokenloop/engine.h"

static const int prompt[] = {1, 17, 255, 3, 99, 42, 7, 200, 150, 11, 64, 0};
#define N_PROMPT ((int)(sizeof prompt / sizeof prompt[0]))

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

/* The exact mode (docs/accuracy.md): a prefill's products keep fp32 activations as a decode's
 * do, so "prefill == decodes" holds to fp32 rounding. The modes that round are checked apart. */
static tl_engine *engine_mode(const tl_model *m, int capacity, tl_precision p)
{
    tl_engine *e = NULL;
    tl_error err = {{0}};
    if (tl_engine_create(&e, m, tl_backend_cpu(), 0, capacity, &err) || tl_engine_set_precision(e, p, &err))
        fprintf(stderr, "engine: %s\n", err.msg);
    return e;
}

static tl_engine *engine(const tl_model *m, int capacity) { return engine_mode(m, capacity, TL_PRECISION_EXACT); }

static float *copy_logits(const tl_engine *e)
{
    int v = tl_engine_model(e)->cfg.vocab_size;
    float *c = malloc(sizeof(float) * (size_t)v);
    memcpy(c, tl_engine_logits(e), sizeof(float) * (size_t)v);
    return c;
}

static void test_prefill_equals_decodes(const tl_model *m)
{
    int vocab = m->cfg.vocab_size;
    tl_engine *a = engine(m, 0), *b = engine(m, 0);
    tl_error err;
    TL_CHECK_INT(tl_engine_prefill(a, prompt, N_PROMPT, &err), 0);
    for (int i = 0; i < N_PROMPT; i++)
        TL_CHECK_INT(tl_engine_decode(b, prompt[i], &err), 0);
    TL_CHECK_INT(tl_engine_pos(a), N_PROMPT);
    TL_CHECK_INT(tl_engine_pos(b), N_PROMPT);
    double e1 = rel_err(tl_engine_logits(a), tl_engine_logits(b), vocab);
    TL_CHECK_MSG(e1 <= 1e-5, "prefill vs decodes: %g", e1);
    /* the caches agree too: the next decode matches */
    TL_CHECK_INT(tl_engine_decode(a, 5, &err), 0);
    TL_CHECK_INT(tl_engine_decode(b, 5, &err), 0);
    double e2 = rel_err(tl_engine_logits(a), tl_engine_logits(b), vocab);
    TL_CHECK_MSG(e2 <= 1e-5, "decode after prefill vs after decodes: %g", e2);
    tl_engine_free(a);
    /* the modes that round activations to bf16 (bf16 weights, AVX-512 BF16): the same scores
     * within their bound in docs/accuracy.md */
    for (tl_precision p = TL_PRECISION_MIXED; p <= TL_PRECISION_BF16; p += 2) {
        tl_engine *d = engine_mode(m, 0, p);
        tl_precision got = tl_engine_precision(d);   /* exact where the kernels never round */
        TL_CHECK_MSG(got == p || got == TL_PRECISION_EXACT, "asked %s, runs %s", tl_precision_name(p),
                     tl_precision_name(got));
        TL_CHECK_INT(tl_engine_prefill(d, prompt, N_PROMPT, &err), 0);
        TL_CHECK_INT(tl_engine_decode(d, 5, &err), 0);
        double e3 = rel_err(tl_engine_logits(d), tl_engine_logits(b), vocab);
        TL_CHECK_MSG(e3 <= 2e-2, "%s prefill, then a decode, vs exact decodes: %g", tl_precision_name(p), e3);
        tl_engine_free(d);
    }
    tl_engine_free(b);
}

static void test_rewind(const tl_model *m)
{
    int vocab = m->cfg.vocab_size;
    tl_engine *a = engine(m, 0), *b = engine(m, 0);
    tl_error err;
    /* a: prompt, two steps forward, back two, then 123 */
    TL_CHECK_INT(tl_engine_prefill(a, prompt, N_PROMPT, &err), 0);
    float *after_prompt = copy_logits(a);
    TL_CHECK_INT(tl_engine_decode(a, 44, &err), 0);
    TL_CHECK_INT(tl_engine_decode(a, 45, &err), 0);
    TL_CHECK_INT(tl_engine_rewind(a, 2), 0);
    TL_CHECK_INT(tl_engine_pos(a), N_PROMPT);
    TL_CHECK_INT(tl_engine_decode(a, 123, &err), 0);
    /* b: prompt, then 123 */
    TL_CHECK_INT(tl_engine_prefill(b, prompt, N_PROMPT, &err), 0);
    TL_CHECK(rel_err(tl_engine_logits(b), after_prompt, vocab) == 0);
    TL_CHECK_INT(tl_engine_decode(b, 123, &err), 0);
    double e1 = rel_err(tl_engine_logits(a), tl_engine_logits(b), vocab);
    TL_CHECK_MSG(e1 <= 1e-6, "rewind then decode vs never forward: %g", e1);
    /* rewind into the prompt and branch: prompt[:8] + 9 == prefill of the same 9 tokens */
    TL_CHECK_INT(tl_engine_rewind(a, N_PROMPT + 1 - 8), 0);
    TL_CHECK_INT(tl_engine_pos(a), 8);
    TL_CHECK_INT(tl_engine_decode(a, 9, &err), 0);
    tl_engine *c = engine(m, 0);
    int branch[9];
    memcpy(branch, prompt, sizeof(int) * 8);
    branch[8] = 9;
    TL_CHECK_INT(tl_engine_prefill(c, branch, 9, &err), 0);
    double e2 = rel_err(tl_engine_logits(a), tl_engine_logits(c), vocab);
    TL_CHECK_MSG(e2 <= 1e-5, "branch inside the prompt: %g", e2);
    /* impossible rewinds change nothing */
    TL_CHECK_INT(tl_engine_rewind(a, 10), -1);
    TL_CHECK_INT(tl_engine_rewind(a, -1), -1);
    TL_CHECK_INT(tl_engine_pos(a), 9);
    TL_CHECK_INT(tl_engine_rewind(a, 9), 0);
    TL_CHECK_INT(tl_engine_pos(a), 0);
    free(after_prompt);
    tl_engine_free(a);
    tl_engine_free(b);
    tl_engine_free(c);
}

static void test_bad_ids(const tl_model *m)
{
    int vocab = m->cfg.vocab_size;
    tl_engine *e = engine(m, 16);
    tl_error err = {{0}};
    TL_CHECK_INT(tl_engine_capacity(e), 16);
    TL_CHECK_INT(tl_engine_decode(e, vocab, &err), -1);
    TL_CHECK_MSG(strstr(err.msg, "id: token id") && strstr(err.msg, "out of range"), "%s", err.msg);
    TL_CHECK_INT(tl_engine_decode(e, -1, &err), -1);
    int ids[20];
    for (int i = 0; i < 20; i++)
        ids[i] = i;
    ids[2] = vocab + 7;
    TL_CHECK_INT(tl_engine_prefill(e, ids, 3, &err), -1);
    TL_CHECK_MSG(strstr(err.msg, "ids[2]: token id") != NULL, "%s", err.msg);
    TL_CHECK_INT(tl_engine_prefill(e, ids, 0, &err), -1);
    TL_CHECK_INT(tl_engine_pos(e), 0);
    ids[2] = 2;
    /* longer than the context: refused whole, nothing computed */
    TL_CHECK_INT(tl_engine_prefill(e, ids, 17, &err), -1);
    TL_CHECK_MSG(strstr(err.msg, "do not fit in the context of 16") != NULL, "%s", err.msg);
    TL_CHECK_INT(tl_engine_pos(e), 0);
    TL_CHECK_INT(tl_engine_prefill(e, ids, 10, &err), 0);
    TL_CHECK_INT(tl_engine_prefill(e, ids, 7, &err), -1);
    TL_CHECK_INT(tl_engine_prefill(e, ids, 6, &err), 0);
    TL_CHECK_INT(tl_engine_pos(e), 16);
    TL_CHECK_INT(tl_engine_decode(e, 1, &err), -1);
    TL_CHECK_MSG(strstr(err.msg, "id: the context is full (16 positions)") != NULL, "%s", err.msg);
    TL_CHECK_INT(tl_engine_pos(e), 16);
    tl_engine_free(e);
}

static void test_accounting(const tl_model *m)
{
    const tl_config *c = &m->cfg;
    tl_engine *e = engine(m, 0);
    tl_error err;
    TL_CHECK_INT(tl_engine_capacity(e), c->max_position_embeddings < 4096 ? c->max_position_embeddings : 4096);
    TL_CHECK_STR(tl_engine_device(e), "cpu");
    TL_CHECK_INT(tl_engine_prefill(e, prompt, 5, &err), 0);
    TL_CHECK(tl_engine_last_ms(e) >= 0);
    TL_CHECK(tl_engine_last_unsynced_ms(e) < 0);   /* the CPU is synchronous */
    double kv_row = (double)c->n_kv_heads * c->head_dim * 4;
    TL_CHECK_NEAR(tl_engine_step_bytes(e), (double)m->weight_bytes + 2.0 * c->n_layers * 6 * kv_row, 0.5);
    /* what a step reads: every layer, the final norm, lm_head, and one embedding row if untied */
    double want = 0;
    for (int l = 0; l < c->n_layers; l++) {
        const tl_layer *L = &m->layers[l];
        const tl_weight *w[] = {&L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo, &L->mlp_norm, &L->w_gate,
                                &L->w_up, &L->w_down};
        for (int i = 0; i < 9; i++)
            want += (double)w[i]->rows * w[i]->cols * tl_dtype_size(w[i]->dtype);
    }
    want += (double)c->hidden_size * tl_dtype_size(m->final_norm.dtype);
    want += (double)c->vocab_size * c->hidden_size * tl_dtype_size(m->lm_head.dtype);
    if (!c->tie_word_embeddings)
        want += (double)c->hidden_size * tl_dtype_size(m->embed.dtype);
    TL_CHECK_NEAR((double)m->weight_bytes, want, 0.5);
    TL_CHECK_INT(c->tie_word_embeddings, m->lm_head.data == m->embed.data);
    tl_engine_free(e);
}

/* tl_model_copy_to_hugepages: the matrices move out of the file's mapping (all of them with no
 * size floor), tied weights stay one tensor, a second call copies nothing, and the logits are
 * the mapping's bit for bit. */
static void test_hugepage_copy(const char *dir, const tl_model *mapped)
{
    tl_model *m = NULL;
    tl_error err = {{0}};
    TL_CHECK_INT(tl_model_load(&m, dir, &err), 0);
    if (!m)
        return;
    int tied = m->lm_head.data == m->embed.data;
    TL_CHECK(m->layers[0].wq.mapped && m->embed.mapped);
    uint64_t n = tl_model_copy_to_hugepages(m, 0);
    TL_CHECK_MSG(n > 0 && !m->layers[0].wq.mapped && !m->embed.mapped && !m->layers[0].w_down.mapped,
                 "%s: copied %llu bytes", dir, (unsigned long long)n);
    TL_CHECK_MSG(m->layers[0].wq.data != mapped->layers[0].wq.data, "the copy is not the mapping");
    TL_CHECK_INT(m->lm_head.data == m->embed.data, tied);
    TL_CHECK_MSG(tl_model_copy_to_hugepages(m, 0) == 0, "a second call copies nothing");
    tl_engine *a = engine(mapped, 0), *b = engine(m, 0);
    TL_CHECK_INT(tl_engine_prefill(a, prompt, N_PROMPT, &err), 0);
    TL_CHECK_INT(tl_engine_prefill(b, prompt, N_PROMPT, &err), 0);
    TL_CHECK_INT(tl_engine_decode(a, 7, &err), 0);
    TL_CHECK_INT(tl_engine_decode(b, 7, &err), 0);
    TL_CHECK_MSG(rel_err(tl_engine_logits(a), tl_engine_logits(b), m->cfg.vocab_size) == 0,
                 "logits from the copies equal the mapping's");
    tl_engine_free(a);
    tl_engine_free(b);
    tl_model_free(m);   /* frees the copies (ASan's leak check) */
}

/* tl_model_convert: a width that is not whole blocks is refused naming the tensor; a
 * conversion to the model's own dtype is a copy (logits bit for bit); every conversion is
 * self-contained (the source freed first: ASan), tied weights stay one tensor, and the bytes a
 * step reads are the blocks' (34 and 18 bytes per 32 weights). */
static void test_convert(const tl_model *m)
{
    tl_error err = {{0}};
    tl_model *c = NULL;
    int whole = m->cfg.intermediate_size % 32 == 0 && m->cfg.hidden_size % 32 == 0 &&
                m->cfg.n_heads * m->cfg.head_dim % 32 == 0;
    if (!whole) {
        TL_CHECK_INT(tl_model_convert(&c, m, TL_Q4_0, &err), -1);
        TL_CHECK_MSG(c == NULL && strstr(err.msg, "--dtype q4_0") && strstr(err.msg, "multiple of 32"),
                     "refused: %s", err.msg);
    }
    const tl_dtype own = m->layers[0].wq.dtype;
    TL_CHECK_INT(tl_model_convert(&c, m, own, &err), 0);
    if (c) {
        tl_engine *a = engine(m, 0), *b = engine(c, 0);
        TL_CHECK_INT(tl_engine_prefill(a, prompt, N_PROMPT, &err), 0);
        TL_CHECK_INT(tl_engine_prefill(b, prompt, N_PROMPT, &err), 0);
        TL_CHECK_MSG(rel_err(tl_engine_logits(a), tl_engine_logits(b), m->cfg.vocab_size) == 0,
                     "a conversion to %s (its own dtype) keeps the logits", tl_dtype_name(own));
        /* the same bytes, but for the norms, which a conversion keeps in fp32 */
        uint64_t norms = (uint64_t)(2 * m->cfg.n_layers + 1) * (uint64_t)m->cfg.hidden_size;
        TL_CHECK(c->n_params == m->n_params &&
                 c->weight_bytes == m->weight_bytes + norms * (4 - tl_dtype_size(m->final_norm.dtype)));
        TL_CHECK_INT(c->lm_head.data == c->embed.data, m->lm_head.data == m->embed.data);
        tl_engine_free(a);
        tl_engine_free(b);
        tl_model_free(c);
    }
    /* a synthetic model of whole blocks, converted to every dtype after its source is gone */
    tl_config cfg = m->cfg;
    cfg.hidden_size = 64;
    cfg.intermediate_size = 128;
    cfg.n_heads = 4;
    cfg.n_kv_heads = 2;
    cfg.head_dim = 16;
    tl_model *s = NULL;
    TL_CHECK_INT(tl_model_synthetic(&s, &cfg, TL_BF16, 3, &err), 0);
    for (int dt = 0; s && dt < TL_DTYPE_CHOOSABLE; dt++) {
        tl_model *src = NULL;
        TL_CHECK_INT(tl_model_synthetic(&src, &cfg, TL_BF16, 3, &err), 0);
        if (!src || tl_model_convert(&c, src, (tl_dtype)dt, &err)) {
            TL_CHECK_MSG(0, "convert to %s: %s", tl_dtype_name((tl_dtype)dt), err.msg);
            tl_model_free(src);
            continue;
        }
        tl_model_free(src);
        uint64_t want = 0;
        const int64_t d = 64, ff = 128, q = 64, kv = 32, V = cfg.vocab_size;
        const size_t b = tl_dtype_block_bytes((tl_dtype)dt), k = (size_t)tl_dtype_block((tl_dtype)dt);
        want += (uint64_t)(V * d / (int64_t)k) * b + 4 * (uint64_t)d;   /* lm_head (+ the final norm, fp32) */
        const int tied = s->lm_head.data == s->embed.data;   /* (a synthetic model decides itself) */
        if (!tied)
            want += (uint64_t)(d / (int64_t)k) * b;                  /* one embedding row */
        want += (uint64_t)cfg.n_layers * ((uint64_t)((q * d + 2 * kv * d + d * q + 3 * ff * d) / (int64_t)k) * b +
                                          2 * 4 * (uint64_t)d);
        TL_CHECK_MSG(c->weight_bytes == want, "%s: weight_bytes %llu, want %llu", tl_dtype_name((tl_dtype)dt),
                     (unsigned long long)c->weight_bytes, (unsigned long long)want);
        TL_CHECK_INT(c->lm_head.data == c->embed.data, tied);
        TL_CHECK_INT((int)c->layers[0].w_down.dtype, dt);
        TL_CHECK_INT((int)c->layers[0].attn_norm.dtype, TL_F32);
        tl_engine *e = engine(c, 0);
        int ok = e && tl_engine_prefill(e, prompt, N_PROMPT, &err) == 0 && tl_engine_decode(e, 7, &err) == 0;
        TL_CHECK_MSG(ok, "%s runs: %s", tl_dtype_name((tl_dtype)dt), err.msg);
        if (ok) {   /* against the bf16 source's logits: the quantization's size, not garbage */
            tl_engine *r = engine(s, 0);
            TL_CHECK_INT(tl_engine_prefill(r, prompt, N_PROMPT, &err), 0);
            TL_CHECK_INT(tl_engine_decode(r, 7, &err), 0);
            double e_rel = rel_err(tl_engine_logits(e), tl_engine_logits(r), cfg.vocab_size);
            TL_CHECK_MSG(e_rel < (dt == TL_Q4_0 ? 0.5 : dt == TL_Q8_0 ? 0.1 : 1e-2), "%s: logits %.3g from bf16's",
                         tl_dtype_name((tl_dtype)dt), e_rel);
            tl_engine_free(r);
        }
        tl_engine_free(e);
        tl_model_free(c);
    }
    tl_model_free(s);
}

/* The precision an engine reports: mixed by default on the CPU; a kernel set that never rounds
 * (avx2, forced) runs and reports every mode as exact; an unknown value is refused. */
static void test_precision(const tl_model *m)
{
    tl_error err = {{0}};
    tl_engine *e = NULL;
    setenv("TL_CPU_ISA", "avx2", 1);
    int made = tl_engine_create(&e, m, tl_backend_cpu(), 1, 0, &err) == 0;
    unsetenv("TL_CPU_ISA");
    if (!made) {   /* no AVX2 here: nothing to force */
        printf("test_engine: avx2 not available (%s)\n", err.msg);
    } else {
        TL_CHECK_INT(tl_engine_set_precision(e, TL_PRECISION_BF16, &err), 0);
        TL_CHECK_STR(tl_precision_name(tl_engine_precision(e)), "exact");
        tl_engine_free(e);
    }
    TL_CHECK_INT(tl_engine_create(&e, m, tl_backend_cpu(), 0, 0, &err), 0);
    if (!e)
        return;
    tl_precision p0 = tl_engine_precision(e);
    TL_CHECK_MSG(p0 == TL_PRECISION_MIXED || p0 == TL_PRECISION_EXACT, "default: %s", tl_precision_name(p0));
    TL_CHECK_INT(tl_engine_set_precision(e, (tl_precision)7, &err), -1);
    TL_CHECK(strstr(err.msg, "precision") != NULL);
    TL_CHECK_INT(tl_engine_precision(e), p0);
    tl_engine_free(e);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_engine MODEL_DIR...\n");
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        tl_model *m = NULL;
        tl_error err = {{0}};
        if (tl_model_load(&m, argv[i], &err)) {
            fprintf(stderr, "%s\n", err.msg);
            TL_CHECK(0);
            continue;
        }
        test_prefill_equals_decodes(m);
        test_precision(m);
        test_rewind(m);
        test_bad_ids(m);
        test_accounting(m);
        test_hugepage_copy(argv[i], m);
        test_convert(m);
        tl_model_free(m);
    }
    return TL_TEST_END("test_engine");
}
