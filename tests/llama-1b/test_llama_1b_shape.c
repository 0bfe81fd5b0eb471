/* The UI on Llama-3.2-1B-Instruct's shape, without its weights: the published config.json
 * (../shared/reference-configs, read in place) with random bf16 weights in memory, the bundled
 * Llama 3 tokenizer and chat template. The session the TUI drives must take the request through
 * the template, run the prefill and one decode pass, and the TUI's view must show that model:
 * 16 layers as the config says, 128,256 scores per pass whose best is the token greedy chose.
 * What a user who downloads the checkpoint and passes --model DIR gets, minus the knowledge.
 *
 *     test_llama_1b_shape SHARED_DIR TOKENIZER_DIR   (77 when SHARED_DIR lacks the config) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "session_view.h"
#include "tl_test.h"
#include "tokenloop/file.h"
#include "tokenloop/session.h"

/* One integer of config.json read here, not through tl_config_load, so a loader that misread
 * the file would not agree with itself. */
static int json_int(const char *path, const char *key)
{
    char *text = NULL;
    tl_error err;
    tl_file_read(path, 1u << 20, &text, NULL, &err);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    int n = cJSON_IsNumber(v) ? v->valueint : -1;
    cJSON_Delete(j);
    free(text);
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_llama_1b_shape SHARED_DIR TOKENIZER_DIR\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/reference-configs/llama-3.2-1b-instruct/config.json", argv[1]);
    tl_config cfg;
    tl_error err = { { 0 } };
    if (tl_config_load(&cfg, path, &err)) {
        printf("%s: %s: skipped\n", path, err.msg);
        return 77;
    }
    const int layers = json_int(path, "num_hidden_layers"), vocab = json_int(path, "vocab_size");
    TL_CHECK_INT(layers, 16);
    TL_CHECK_INT(vocab, 128256);

    tl_model *m = NULL;
    if (tl_model_synthetic(&m, &cfg, TL_BF16, 1, &err)) {
        fprintf(stderr, "synthetic: %s\n", err.msg);
        return 1;
    }
    TL_CHECK_INT(m->n_params, 1235814400);   /* the published count of Llama 3.2 1B */
    tl_session_opts o;
    memset(&o, 0, sizeof o);
    o.tokenizer_dir = argv[2];
    o.bandwidth_gbs = 10;   /* no probe: this test is about shapes, not speed */
    tl_session *s = NULL;
    if (tl_session_open_model(&s, m, 1, &o, &err)) {
        fprintf(stderr, "session: %s\n", err.msg);
        return 1;
    }
    tl_sampling g = tl_session_sampling(s);
    g.greedy = 1;
    tl_session_set_sampling(s, g);
    tl_session_set_max_new_tokens(s, 2);
    TL_CHECK_INT(tl_session_set_user(s, NULL, "What is the capital of France?", &err), 0);
    int rc = tl_generate(s, NULL, NULL, &err);
    TL_CHECK_MSG(rc == TL_SESSION_DONE, "generate: %d %s", rc, err.msg);

    const tl_model *sm = tl_session_model(s);
    TL_CHECK_INT(sm->cfg.n_layers, layers);
    TL_CHECK_INT(sm->cfg.vocab_size, vocab);
    int n_gen = 0, n_prompt = 0;
    const int *gen = tl_session_generated_ids(s, &n_gen);
    tl_session_prompt_ids(s, &n_prompt);
    TL_CHECK_INT(n_gen, 2);
    TL_CHECK_INT(tl_session_n_steps(s), 2);
    TL_CHECK_INT(tl_session_step_at(s, 0)->kind, TL_STEP_PREFILL);
    TL_CHECK_INT(tl_session_step_at(s, 1)->kind, TL_STEP_DECODE);
    TL_CHECK_STR(tl_stop_reason_name(tl_session_stop(s)->reason), "max_new_tokens");
    TL_CHECK(n_prompt > 20);   /* the chat template's system header and markers were applied */

    /* the newest pass's scores: one per vocabulary entry, finite, not all alike (random
     * weights), and their argmax is the token greedy chose */
    const float *lg = tl_session_logits(s);
    TL_CHECK(lg != NULL);
    if (lg && n_gen == 2) {
        int best = 0, finite = 1;
        float lo = lg[0], hi = lg[0];
        for (int i = 0; i < vocab; i++) {
            finite &= isfinite(lg[i]) != 0;
            if (lg[i] > lg[best]) best = i;
            lo = lg[i] < lo ? lg[i] : lo;
            hi = lg[i] > hi ? lg[i] : hi;
        }
        TL_CHECK(finite);
        TL_CHECK(hi > lo);
        TL_CHECK_INT(best, gen[1]);
    }

    /* the TUI's view of it: the Logits pane's "top 10 of 128,256", its first row the choice */
    static tl_sview sv;
    static tl_ui ui;
    ui.tok_sel = -1;
    sv.v.logit_rows = 10;
    SessionView_fill(&sv, s, &ui);
    TL_CHECK_INT(sv.v.vocab_size, vocab);
    TL_CHECK(sv.v.n_rows >= 10);
    if (sv.v.n_rows > 0 && n_gen == 2)
        TL_CHECK_INT(sv.v.rows[0].id, gen[1]);
    tl_metrics_report r = tl_session_metrics(s);
    printf("llama-3.2-1b shape: %d prompt tokens, TTFT %.0f ms, TPOT %.0f ms, %.2f GB per decode step\n",
           n_prompt, r.ttft_ms, r.tpot_ms, r.step_bytes / 1e9);
    SessionView_free(&sv);
    tl_session_free(s);
    return TL_TEST_END("llama_1b_shape");
}
