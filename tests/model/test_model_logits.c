/* tokenloop's forward pass on the bundled model against the trainer's PyTorch forward
 * (tests/model/reference, written by tools/train/export.py: float32 arithmetic on the
 * bf16-rounded weights, as tokenloop computes).
 *
 * Metric (bf16 tolerance, as tests/engine uses for bf16 checkpoints): at every compared position,
 * max |logit_tl - logit_ref| <= 1e-3 * max(1, max |logit_ref|); the argmax agrees unless the
 * reference's top two are closer than that tolerance; tokens the corpus never contained have a
 * zero embedding row, so their logit is exactly 0 in both.
 *   - last position after one prefill of the whole prompt: all 128,256 logits;
 *   - every position, stepping one decode at a time: the reference's top 20 at that position;
 *   - greedy continuations equal PyTorch's, token for token;
 *   - without the generation prompt (the prompt ends with the user's <|eot_id|>) the model opens
 *     another user turn (<|start_header_id|>user) rather than answering, on most prompts.
 * usage: test_model_logits MODEL_DIR REFERENCE_DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cjson/cJSON.h>

#include "tokenloop/engine.h"
#include "tl_test.h"

#define START_HEADER 128006
#define ROLE_USER 882
#define ROLE_ASSISTANT 78191

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
    fclose(f);
    if (buf) buf[n] = 0;
    if (len) *len = (size_t)n;
    return buf;
}

static int read_ids(const cJSON *arr, int **out)
{
    int n = cJSON_GetArraySize(arr);
    *out = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) (*out)[i] = cJSON_GetArrayItem(arr, i)->valueint;
    return n;
}

static int argmax(const float *x, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++) if (x[i] > x[b]) b = i;
    return b;
}

/* The exact precision: the goldens are transformers' float32 logits (docs/accuracy.md). */
static int exact_engine(tl_engine **e, const tl_model *m, tl_error *err)
{
    if (tl_engine_create(e, m, tl_backend_cpu(), 0, 0, err))
        return -1;
    if (tl_engine_set_precision(*e, TL_PRECISION_EXACT, err)) {
        tl_engine_free(*e);
        *e = NULL;
        return -1;
    }
    return 0;
}

static int is_eos(int id) { return id == 128001 || id == 128008 || id == 128009; }

/* Greedy continuation of up to max tokens (stops after an end-of-turn id); returns its length. */
static int run_greedy(const tl_model *m, const int *ids, int n, int *out, int max)
{
    tl_error err;
    tl_engine *e = NULL;
    if (exact_engine(&e, m, &err)) { fprintf(stderr, "%s\n", err.msg); return -1; }
    int k = 0;
    if (tl_engine_prefill(e, ids, n, &err) == 0) {
        while (k < max) {
            int t = argmax(tl_engine_logits(e), m->cfg.vocab_size);
            out[k++] = t;
            if (is_eos(t) || tl_engine_decode(e, t, &err)) break;
        }
    }
    tl_engine_free(e);
    return k;
}

int main(int argc, char **argv)
{
    if (argc != 3) { fprintf(stderr, "usage: %s MODEL_DIR REFERENCE_DIR\n", argv[0]); return 2; }
    char path[4096];
    snprintf(path, sizeof path, "%s/reference.json", argv[2]);
    char *text = slurp(path, NULL);
    TL_CHECK_MSG(text != NULL, "%s: cannot read", path);
    if (!text) return TL_TEST_END("model_logits");
    cJSON *ref = cJSON_Parse(text);
    free(text);
    TL_CHECK(ref != NULL);

    tl_error err;
    tl_model *m = NULL;
    int rc = tl_model_load(&m, argv[1], &err);
    TL_CHECK_MSG(rc == 0, "%s", err.msg);
    if (rc || !ref) { cJSON_Delete(ref); return TL_TEST_END("model_logits"); }
    const int V = m->cfg.vocab_size;
    TL_CHECK_INT(V, 128256);
    TL_CHECK(m->cfg.tie_word_embeddings);
    TL_CHECK_INT(m->cfg.n_heads, 4 * m->cfg.n_kv_heads);
    TL_CHECK(m->cfg.rope_llama3);
    /* generation_config.json sets no length: the 20-token default applies */
    TL_CHECK(!m->gen.has_max_new_tokens && !m->gen.has_max_length);

    const cJSON *prompts = cJSON_GetObjectItem(ref, "prompts");
    double worst_last = 0, worst_pos = 0;
    int n_positions = 0;
    for (int p = 0; p < cJSON_GetArraySize(prompts); p++) {
        const cJSON *pr = cJSON_GetArrayItem(prompts, p);
        int *ids;
        int n = read_ids(cJSON_GetObjectItem(pr, "ids"), &ids);

        /* 1. one prefill, all logits of the last position */
        snprintf(path, sizeof path, "%s/%s", argv[2], cJSON_GetObjectItem(pr, "last_logits")->valuestring);
        size_t len = 0;
        float *want = (float *)slurp(path, &len);
        TL_CHECK_MSG(want && len == (size_t)V * sizeof(float), "%s: expected %d floats", path, V);
        tl_engine *e = NULL;
        rc = exact_engine(&e, m, &err);
        TL_CHECK_MSG(rc == 0, "%s", err.msg);
        if (want && len == (size_t)V * sizeof(float) && rc == 0) {
            rc = tl_engine_prefill(e, ids, n, &err);
            TL_CHECK_MSG(rc == 0, "%s", err.msg);
            const float *got = tl_engine_logits(e);
            double amax = 1, dmax = 0;
            int zeros_ref = 0, zeros_both = 0;
            for (int i = 0; i < V; i++) {
                if (fabs(want[i]) > amax) amax = fabs(want[i]);
                double d = fabs((double)got[i] - want[i]);
                if (d > dmax) dmax = d;
                if (want[i] == 0.0f) { zeros_ref++; zeros_both += got[i] == 0.0f; }
            }
            double tol = 1e-3 * amax;
            TL_CHECK_MSG(dmax <= tol, "prompt %d last position: max |diff| %g > %g", p, dmax, tol);
            if (dmax / amax > worst_last) worst_last = dmax / amax;
            int ga = argmax(got, V), wa = argmax(want, V);
            TL_CHECK_MSG(ga == wa, "prompt %d: argmax %d, reference %d", p, ga, wa);
            TL_CHECK_MSG(zeros_ref > V / 2 && zeros_both == zeros_ref,
                         "prompt %d: %d never-seen tokens with logit 0, tokenloop agrees on %d", p, zeros_ref, zeros_both);
        }
        free(want);
        tl_engine_free(e);

        /* 2. one position at a time: the reference's top 20 at every position */
        const cJSON *top = cJSON_GetObjectItem(pr, "top20");
        e = NULL;
        rc = exact_engine(&e, m, &err);
        TL_CHECK_MSG(rc == 0, "%s", err.msg);
        for (int t = 0; rc == 0 && t < n; t++) {
            rc = t == 0 ? tl_engine_prefill(e, ids, 1, &err) : tl_engine_decode(e, ids[t], &err);
            TL_CHECK_MSG(rc == 0, "%s", err.msg);
            if (rc) break;
            const float *got = tl_engine_logits(e);
            const cJSON *row = cJSON_GetArrayItem(top, t);
            double amax = 1, dmax = 0, top1 = 0, top2 = 0;
            int top_id = -1;
            for (int k = 0; k < cJSON_GetArraySize(row); k++) {
                const cJSON *pair = cJSON_GetArrayItem(row, k);
                int id = cJSON_GetArrayItem(pair, 0)->valueint;
                double w = cJSON_GetArrayItem(pair, 1)->valuedouble;
                if (k == 0) { top1 = w; top_id = id; }
                if (k == 1) top2 = w;
                if (fabs(w) > amax) amax = fabs(w);
                double d = fabs(got[id] - w);
                if (d > dmax) dmax = d;
            }
            double tol = 1e-3 * amax + 1e-4;   /* + the reference's 5 printed decimals */
            TL_CHECK_MSG(dmax <= tol, "prompt %d position %d: max |diff| over the top 20 %g > %g", p, t, dmax, tol);
            if (dmax / amax > worst_pos) worst_pos = dmax / amax;
            if (top1 - top2 > tol) TL_CHECK_INT(argmax(got, V), top_id);
            n_positions++;
        }
        tl_engine_free(e);

        /* 3. greedy continuation as PyTorch's */
        int *wg, out[32];
        int nw = read_ids(cJSON_GetObjectItem(pr, "greedy"), &wg);
        int ng = run_greedy(m, ids, n, out, nw);
        TL_CHECK_INT(ng, nw);
        for (int k = 0; k < ng && k < nw; k++) TL_CHECK_INT(out[k], wg[k]);
        /* with the generation prompt the model answers: no new header among its first tokens */
        for (int k = 0; k < ng; k++) TL_CHECK(out[k] != START_HEADER);
        free(wg);
        free(ids);
    }

    /* 4. without the generation prompt: another user turn, not an answer */
    const cJSON *nogen = cJSON_GetObjectItem(ref, "nogen");
    int n_nogen = cJSON_GetArraySize(nogen), n_user = 0;
    for (int p = 0; p < n_nogen; p++) {
        const cJSON *pr = cJSON_GetArrayItem(nogen, p);
        int *ids, *wg, out[32];
        int n = read_ids(cJSON_GetObjectItem(pr, "ids"), &ids);
        int nw = read_ids(cJSON_GetObjectItem(pr, "greedy"), &wg);
        int ng = run_greedy(m, ids, n, out, nw);
        TL_CHECK_INT(ng, nw);
        for (int k = 0; k < ng && k < nw; k++) TL_CHECK_INT(out[k], wg[k]);
        if (ng >= 2 && out[0] == START_HEADER && out[1] == ROLE_USER) n_user++;
        free(ids);
        free(wg);
    }
    TL_CHECK_MSG(n_nogen > 0 && 2 * n_user > n_nogen, "%d of %d no-generation-prompt continuations open a user turn",
                 n_user, n_nogen);
    printf("last position: max |diff| / max |logit| = %.3g; per position (%d positions, top 20): %.3g; "
           "no generation prompt -> user turn: %d/%d\n", worst_last, n_positions, worst_pos, n_user, n_nogen);
    cJSON_Delete(ref);
    tl_model_free(m);
    return TL_TEST_END("model_logits");
}
