/* tl_session_use_synthetic: random weights of a published shape stand in for the model opened
 * (the TUI's W, issue 38: "a teacher can open it without restarting") and the model comes back.
 * A session opened on the small shape (seed 1) switches to the small shape's own random weights
 * (seed 0): its logits then equal a separate engine's on tl_model_synthetic(small, seed 0), the
 * view says random weights, the conversation stays; back, the logits are the first model's again,
 * bit for bit. A shape with another vocabulary and a switch mid-run are refused, the session as it was. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tl_test.h"
#include "tokenloop/engine.h"
#include "tokenloop/session.h"
#include "tokenloop/synthetic.h"

static const int ids[] = {1, 17, 300, 45, 999, 2};

/* The first pass over ids: its logits into out (vocab floats). */
static void first_pass(tl_session *s, float *out, int vocab)
{
    tl_error err = {{0}};
    const tl_step *st;
    tl_session_reset(s);
    TL_CHECK_MSG(tl_session_step(s, &st, &err) == 0, "%s", err.msg);
    const float *l = tl_session_logits(s);
    TL_CHECK(l != NULL);
    if (l) memcpy(out, l, sizeof(float) * (size_t)vocab);
}

int main(void)
{
    tl_error err = {{0}};
    tl_config cfg;
    tl_model *home = NULL, *ref = NULL;
    TL_CHECK(tl_synthetic_config(&cfg, "small", &err) == 0);
    TL_CHECK_MSG(tl_model_synthetic(&home, &cfg, TL_BF16, 1, &err) == 0, "%s", err.msg);
    tl_session_opts o = {.threads = 2, .bandwidth_gbs = 10, .no_floor_reads = 1, .precision = TL_PRECISION_EXACT};
    tl_session *s = NULL;
    TL_CHECK_MSG(tl_session_open_model(&s, home, 1, &o, &err) == 0, "%s", err.msg);
    if (!s) return 1;
    TL_CHECK(tl_session_set_prompt_ids(s, ids, 6, &err) == 0);
    tl_sampling p = tl_session_sampling(s);
    p.greedy = 1;
    tl_session_set_sampling(s, p);
    const int V = cfg.vocab_size;
    float *a = malloc(sizeof(float) * V), *b = malloc(sizeof(float) * V), *c = malloc(sizeof(float) * V);
    first_pass(s, a, V);
    TL_CHECK(tl_session_synthetic(s) == NULL);

    /* another vocabulary: refused, nothing changed */
    char note[256];
    TL_CHECK(tl_session_use_synthetic(s, "tiny", note, sizeof note, &err) == -1 && strstr(err.msg, "token ids"));
    TL_CHECK(tl_session_model(s) == home && tl_session_synthetic(s) == NULL);
    TL_CHECK(tl_session_use_synthetic(s, "no-such-shape", note, sizeof note, &err) == -1);

    /* random weights in: the reference is a separate engine on the same seed-0 weights */
    TL_CHECK_MSG(tl_session_use_synthetic(s, "small", note, sizeof note, &err) == 0, "%s", err.msg);
    TL_CHECK(tl_session_model(s) != home);
    TL_CHECK(tl_session_synthetic(s) && !strcmp(tl_session_synthetic(s), "small"));
    TL_CHECK(tl_session_n_steps(s) == 0);
    int n;
    TL_CHECK(tl_session_prompt_ids(s, &n) && n == 6);   /* the request stays */
    first_pass(s, b, V);
    TL_CHECK_MSG(tl_model_synthetic(&ref, &cfg, TL_BF16, 0, &err) == 0, "%s", err.msg);
    tl_engine *e = NULL;
    TL_CHECK_MSG(tl_engine_create(&e, ref, tl_backend_cpu(), 2, 64, &err) == 0, "%s", err.msg);
    TL_CHECK(tl_engine_set_precision(e, TL_PRECISION_EXACT, &err) == 0);
    TL_CHECK(tl_engine_prefill(e, ids, 6, &err) == 0);
    int diff = 0, moved = 0;
    for (int i = 0; i < V; i++) {
        diff += b[i] != tl_engine_logits(e)[i];
        moved += b[i] != a[i];
    }
    TL_CHECK_MSG(diff == 0, "%d of %d logits differ from a separate engine on the same weights", diff, V);
    TL_CHECK_MSG(moved > V / 2, "only %d of %d logits changed with the weights", moved, V);
    TL_CHECK(tl_session_dtype(s) == TL_BF16);
    tl_dtype_row rows[8];
    TL_CHECK(tl_session_dtype_rows(s, rows, 8) == 1);   /* the table starts again */

    /* a second shape in a row replaces the first random weights, then the model opened comes back */
    TL_CHECK(tl_session_use_synthetic(s, "small", note, sizeof note, &err) == 0);
    TL_CHECK_MSG(tl_session_use_synthetic(s, NULL, note, sizeof note, &err) == 0, "%s", err.msg);
    TL_CHECK(tl_session_model(s) == home && tl_session_synthetic(s) == NULL);
    first_pass(s, c, V);
    TL_CHECK_MSG(!memcmp(a, c, sizeof(float) * V), "the model opened gives other logits after coming back");
    TL_CHECK(tl_session_use_synthetic(s, NULL, note, sizeof note, &err) == 0);   /* already home: nothing */
    TL_CHECK(tl_session_model(s) == home);

    tl_engine_free(e);
    tl_model_free(ref);
    tl_session_free(s);
    free(a);
    free(b);
    free(c);
    return TL_TEST_END("test_use_synthetic");
}
