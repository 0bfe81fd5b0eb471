/* The session on tiny random checkpoints with Llama 3's vocabulary and the bundled tokenizer:
 * one pass per step, each stop reason end to end, force, rewind, reset, and the fake clock.
 * argv[1]: the folder make_models.py wrote. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tl_test.h"
#include "tokenloop/engine.h"
#include "tokenloop/session.h"
#include "tokenloop/tokenizer.h"

static const char *root;

static tl_session *open_variant(const char *name, tl_clock_fn clock, void *ctx)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    tl_session_opts o = {.model_dir = dir, .threads = 1, .clock = clock, .clock_ctx = ctx, .bandwidth_gbs = 10};
    tl_session *s = NULL;
    tl_error err = {{0}};
    int rc = tl_session_open(&s, &o, &err);
    TL_CHECK_MSG(rc == 0, "%s: %s", name, err.msg);
    return s;
}

static int run(tl_session *s)
{
    tl_error err = {{0}};
    int rc = tl_generate(s, NULL, NULL, &err);
    TL_CHECK_MSG(rc == TL_SESSION_DONE, "generate: %d %s", rc, err.msg);
    return rc;
}

static tl_sampling greedy(void)
{
    tl_sampling p = {.greedy = 1, .temperature = 1, .top_k = 0, .top_p = 1, .seed = 0};
    return p;
}

static const int prompt[] = {128000, 9906, 11, 1917, 0};   /* <|begin_of_text|>Hello, world! */

static void steps_and_budgets(void)
{
    /* the 20-token default and config.json's EOS */
    tl_session *s = open_variant("no-genconfig", NULL, NULL);
    if (!s) return;
    tl_error err;
    TL_CHECK_INT(tl_session_set_prompt_ids(s, prompt, 5, &err), 0);
    tl_sampling d = tl_session_sampling(s);
    TL_CHECK_INT(d.greedy, 1);        /* no generation_config.json: do_sample false */
    TL_CHECK_INT(d.top_k, 50);
    tl_session_set_sampling(s, greedy());
    const tl_step *st;
    TL_CHECK_INT(tl_session_step(s, &st, &err), TL_SESSION_STEPPED);
    TL_CHECK_INT(st->index, 0);
    TL_CHECK_INT(st->kind, TL_STEP_PREFILL);
    TL_CHECK_INT(st->n_input, 5);
    TL_CHECK_INT(st->pos, 5);
    TL_CHECK_INT(st->sample.n, 10);
    TL_CHECK_INT(st->sample.cand[0].id, st->chosen);    /* greedy: the top logit */
    TL_CHECK(st->sample.cand[0].logit >= st->sample.cand[1].logit);
    TL_CHECK_INT(tl_session_step(s, &st, &err), TL_SESSION_STEPPED);
    TL_CHECK_INT(st->kind, TL_STEP_DECODE);
    TL_CHECK_INT(st->n_input, 1);
    TL_CHECK_INT(st->pos, 6);
    TL_CHECK_INT(run(s), TL_SESSION_DONE);
    const tl_stop_config *sc = tl_session_stop_config(s);
    TL_CHECK_INT(sc->max_new_tokens, 20);
    TL_CHECK_INT(sc->budget_source, TL_BUDGET_DEFAULT);
    TL_CHECK_STR(sc->eos_source, "config.json");
    TL_CHECK_INT(sc->n_eos, 1);
    int n;
    tl_session_generated_ids(s, &n);
    TL_CHECK_INT(n, 20);
    TL_CHECK_INT(tl_session_n_steps(s), 20);
    TL_CHECK_INT(tl_session_stop(s)->reason, TL_STOP_MAX_NEW_TOKENS);
    TL_CHECK_INT(tl_session_step_at(s, 19)->stop.reason, TL_STOP_MAX_NEW_TOKENS);
    TL_CHECK_INT(tl_session_step_at(s, 18)->stop.reason, TL_STOP_NONE);
    TL_CHECK_INT(tl_engine_pos(tl_session_engine(s)), 5 + 19);   /* the last token is never fed */
    TL_CHECK_INT(tl_session_step(s, &st, &err), TL_SESSION_DONE);

    /* the streamed text is the decode of the generated ids (no clean-up pattern can change
     * random text much, so compare with the streamer's own decode) */
    size_t tl_, sl;
    const char *text = tl_session_text(s, &tl_), *streamed = tl_session_streamed(s, &sl);
    TL_CHECK_MSG(sl == tl_ && !memcmp(text, streamed, sl), "streamed \"%s\" vs text \"%s\"", streamed, text);
    /* the concatenation of every step's printed text is what was streamed */
    char *cat = calloc(1, sl + 1);
    for (int i = 0; i < tl_session_n_steps(s); i++) strcat(cat, tl_session_step_at(s, i)->printed);
    TL_CHECK_STR(cat, streamed);
    free(cat);

    /* a budget lowered below what was generated stops at once, keeping the tokens */
    int before = tl_session_n_steps(s);
    tl_session_set_max_new_tokens(s, 5);
    TL_CHECK_INT(tl_session_n_steps(s), before);
    TL_CHECK_INT(tl_session_done(s), 1);
    TL_CHECK_INT(tl_session_stop(s)->reason, TL_STOP_MAX_NEW_TOKENS);
    TL_CHECK(strstr(tl_session_stop(s)->detail, "lowered to 5") != NULL);
    /* a request override, from the start */
    tl_session_reset(s);
    run(s);
    TL_CHECK_INT(tl_session_n_steps(s), 5);
    TL_CHECK_INT(tl_session_stop_config(s)->budget_source, TL_BUDGET_REQUEST);
    TL_CHECK_INT(tl_session_stop(s)->reason, TL_STOP_MAX_NEW_TOKENS);
    tl_session_free(s);

    s = open_variant("gen-max-new", NULL, NULL);
    if (!s) return;
    tl_session_set_prompt_ids(s, prompt, 5, &err);
    tl_session_set_sampling(s, greedy());
    run(s);
    TL_CHECK_INT(tl_session_n_steps(s), 7);
    TL_CHECK_INT(tl_session_stop_config(s)->budget_source, TL_BUDGET_GEN_MAX_NEW_TOKENS);
    TL_CHECK_STR(tl_session_stop_config(s)->eos_source, "generation_config.json");
    TL_CHECK_INT(tl_session_stop_config(s)->n_eos, 3);
    tl_session_free(s);

    s = open_variant("gen-max-length", NULL, NULL);
    if (!s) return;
    tl_session_set_prompt_ids(s, prompt, 5, &err);
    tl_session_set_sampling(s, greedy());
    run(s);
    TL_CHECK_INT(tl_session_n_steps(s), 35);   /* max_length 40 - 5 prompt tokens */
    TL_CHECK_INT(tl_session_stop_config(s)->budget_source, TL_BUDGET_GEN_MAX_LENGTH);
    tl_session_free(s);
}

static void eos_and_stop_string(void)
{
    tl_error err;
    tl_session *s = open_variant("eos-always", NULL, NULL);
    if (!s) return;
    tl_session_set_prompt_ids(s, prompt, 5, &err);
    tl_session_set_sampling(s, greedy());
    run(s);
    TL_CHECK_INT(tl_session_n_steps(s), 1);
    const tl_stop_result *r = tl_session_stop(s);
    TL_CHECK_INT(r->reason, TL_STOP_EOS);
    TL_CHECK_INT(r->eos_id, 128008);                     /* <|eom_id|>, the second of three */
    int n;
    const int *g = tl_session_generated_ids(s, &n);
    TL_CHECK_INT(n, 1);
    TL_CHECK_INT(g[0], 128008);                          /* the stopping token is in the output */
    TL_CHECK_STR(tl_session_text(s, NULL), "");          /* skip_special_tokens */
    tl_session_set_streamer_opts(s, 1, 0, 0);
    run(s);
    TL_CHECK_STR(tl_session_text(s, NULL), "<|eom_id|>");
    TL_CHECK_STR(tl_session_streamed(s, NULL), "<|eom_id|>");   /* end() flushed it */
    tl_session_free(s);

    /* a stop string spanning tokens, chosen by force: "Hello" "," " world" "!" with stop ", wor" */
    s = open_variant("llama31", NULL, NULL);
    if (!s) return;
    const tl_tokenizer *tok = tl_session_tokenizer(s);
    TL_CHECK(tok != NULL);
    if (!tok) return;
    int *ids, nid;
    TL_CHECK_INT(tl_tokenizer_encode(tok, "Hello, world! more", 18, 0, &ids, &nid, &err), 0);
    TL_CHECK_INT(nid, 5);   /* Hello , world ! more */
    tl_session_set_prompt_ids(s, prompt, 5, &err);
    tl_session_set_sampling(s, greedy());
    const char *stop[] = {"zzz", ", wor"};
    TL_CHECK_INT(tl_session_set_stop_strings(s, stop, 2, &err), 0);
    tl_session_set_max_new_tokens(s, 10);
    const tl_step *st;
    for (int i = 0; i < 3; i++) {
        TL_CHECK_INT(tl_session_step(s, &st, &err), TL_SESSION_STEPPED);
        TL_CHECK_INT(tl_session_force(s, ids[i], &err), 0);
        st = tl_session_step_at(s, i);
        TL_CHECK_INT(st->chosen, ids[i]);
        TL_CHECK_INT(st->forced, 1);
        TL_CHECK_INT(st->sample.chosen, ids[i]);
    }
    TL_CHECK_INT(tl_session_done(s), 1);
    r = tl_session_stop(s);
    TL_CHECK_INT(r->reason, TL_STOP_STRING);
    TL_CHECK_INT(r->stop_index, 1);
    TL_CHECK_INT(r->match_start, 5);
    TL_CHECK_INT(r->match_end, 10);
    TL_CHECK_INT(r->token_index, 2);
    TL_CHECK_STR(tl_session_text(s, NULL), "Hello, world");   /* the stopping token stays */
    TL_CHECK_STR(tl_session_streamed(s, NULL), "Hello, world");
    /* TextStreamer printed "Hello, " at step 1 (the space), and held "world" until end() */
    TL_CHECK_STR(tl_session_step_at(s, 0)->printed, "");
    TL_CHECK_STR(tl_session_step_at(s, 0)->held, "Hello");
    TL_CHECK_INT(tl_session_step_at(s, 0)->hold_reason, TL_HOLD_PARTIAL_WORD);
    TL_CHECK_STR(tl_session_step_at(s, 1)->printed, "");
    TL_CHECK_STR(tl_session_step_at(s, 2)->printed, "Hello, world");

    /* force the last choice back to something else: no longer stopped */
    TL_CHECK_INT(tl_session_force(s, ids[3], &err), 0);
    TL_CHECK_INT(tl_session_done(s), 0);
    TL_CHECK_STR(tl_session_text(s, NULL), "Hello,!");

    /* switching the streamer replays it over the same tokens */
    int nbefore = tl_session_n_steps(s);
    tl_session_set_stream_mode(s, TL_STREAM_SERVER);
    TL_CHECK_INT(tl_session_n_steps(s), nbefore);
    TL_CHECK_STR(tl_session_step_at(s, 0)->printed, "Hello");
    TL_CHECK_STR(tl_session_step_at(s, 1)->printed, "");
    TL_CHECK_STR(tl_session_step_at(s, 2)->printed, ",!");
    TL_CHECK_STR(tl_session_streamed(s, NULL), "Hello,!");
    tl_session_set_stream_mode(s, TL_STREAM_HF);
    TL_CHECK_STR(tl_session_step_at(s, 2)->printed, "");   /* no space yet: all held */
    TL_CHECK_STR(tl_session_step_at(s, 2)->held, "Hello,!");
    tl_session_set_stream_mode(s, TL_STREAM_SERVER);

    /* server mode: nothing held for words; the stop string and what follows are cut */
    tl_session_reset(s);
    for (int i = 0; i < 3; i++) {
        tl_session_step(s, &st, &err);
        tl_session_force(s, ids[i], &err);
    }
    TL_CHECK_STR(tl_session_step_at(s, 0)->printed, "Hello");
    TL_CHECK_STR(tl_session_step_at(s, 1)->printed, "");      /* "," could begin ", wor" */
    TL_CHECK_INT(tl_session_step_at(s, 1)->hold_reason, TL_HOLD_STOP_PREFIX);
    TL_CHECK_STR(tl_session_streamed(s, NULL), "Hello");
    free(ids);
    tl_session_free(s);
}

static void rewind_and_branch(void)
{
    tl_error err;
    tl_session *s = open_variant("llama31", NULL, NULL);
    if (!s) return;
    tl_session_set_prompt_ids(s, prompt, 5, &err);
    tl_sampling p = tl_session_sampling(s);
    TL_CHECK_INT(p.greedy, 0);                    /* Llama 3.1's generation_config: sampling */
    TL_CHECK_NEAR(p.temperature, 0.6, 1e-6);
    TL_CHECK_NEAR(p.top_p, 0.9, 1e-6);
    TL_CHECK_INT(p.top_k, 50);
    tl_session_set_sampling(s, greedy());
    tl_session_set_max_new_tokens(s, 12);
    run(s);
    int n;
    const int *g = tl_session_generated_ids(s, &n);
    int full[12];
    memcpy(full, g, sizeof full);
    char text[512], printed8[256];
    snprintf(text, sizeof text, "%s", tl_session_streamed(s, NULL));
    snprintf(printed8, sizeof printed8, "%s|%s", tl_session_step_at(s, 8)->printed, tl_session_step_at(s, 8)->held);
    float top8 = tl_session_step_at(s, 8)->sample.cand[0].logit;

    TL_CHECK_INT(tl_session_rewind(s, 5, &err), 0);
    TL_CHECK_INT(tl_session_n_steps(s), 7);
    TL_CHECK_INT(tl_engine_pos(tl_session_engine(s)), 5 + 6);
    TL_CHECK_INT(tl_session_done(s), 0);
    TL_CHECK(tl_session_logits(s) == NULL);       /* stale until recomputed */
    g = tl_session_generated_ids(s, &n);
    TL_CHECK_INT(n, 7);
    run(s);
    g = tl_session_generated_ids(s, &n);
    TL_CHECK_INT(n, 12);
    TL_CHECK(!memcmp(g, full, sizeof full));      /* the same continuation */
    TL_CHECK_STR(tl_session_streamed(s, NULL), text);
    char again[256];
    snprintf(again, sizeof again, "%s|%s", tl_session_step_at(s, 8)->printed, tl_session_step_at(s, 8)->held);
    TL_CHECK_STR(again, printed8);
    TL_CHECK_NEAR(tl_session_step_at(s, 8)->sample.cand[0].logit, top8, 1e-5);

    /* branch after a rewind: the logits are recomputed for the forced choice */
    tl_session_rewind(s, 4, &err);
    TL_CHECK_INT(tl_session_force(s, 791, &err), 0);
    TL_CHECK(tl_session_logits(s) != NULL);
    const tl_step *st = tl_session_step_at(s, 7);
    TL_CHECK_INT(st->chosen, 791);
    TL_CHECK_INT(st->sample.cand[0].id, full[7]);  /* the same logits, explained */
    run(s);
    g = tl_session_generated_ids(s, &n);
    TL_CHECK_INT(n, 12);
    TL_CHECK_INT(g[7], 791);
    TL_CHECK(!memcmp(g, full, 7 * sizeof(int)));

    /* all the way back, then reset */
    TL_CHECK_INT(tl_session_rewind(s, 12, &err), 0);
    TL_CHECK_INT(tl_engine_pos(tl_session_engine(s)), 0);
    TL_CHECK(tl_session_rewind(s, 1, &err) != 0);
    run(s);
    g = tl_session_generated_ids(s, &n);
    TL_CHECK(!memcmp(g, full, sizeof full));
    tl_session_reset(s);
    TL_CHECK_INT(tl_session_n_steps(s), 0);
    TL_CHECK_STR(tl_session_streamed(s, NULL), "");
    run(s);
    TL_CHECK(!memcmp(tl_session_generated_ids(s, &n), full, sizeof full));

    /* sampling: same seed, same tokens; another seed, (almost surely) others */
    tl_sampling sp = {.greedy = 0, .temperature = 1.5f, .top_k = 0, .top_p = 1.0f, .seed = 42};
    tl_session_set_sampling(s, sp);
    tl_session_reset(s);
    run(s);
    int a[12];
    memcpy(a, tl_session_generated_ids(s, &n), sizeof a);
    tl_session_reset(s);
    run(s);
    TL_CHECK(!memcmp(tl_session_generated_ids(s, &n), a, sizeof a));
    sp.seed = 43;
    tl_session_set_sampling(s, sp);
    tl_session_reset(s);
    run(s);
    TL_CHECK(memcmp(tl_session_generated_ids(s, &n), a, sizeof a) != 0);

    /* a report with fewer figures: the same tokens, the figures asked for equal, the others NaN */
    tl_sampling cuts[] = {sp, {.temperature = 0.6f, .top_k = 50, .top_p = 0.9f, .seed = 5},
                          {.temperature = 0.8f, .top_k = 0, .top_p = 0.7f, .seed = 5}, greedy()};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        tl_session_set_sampling(s, cuts[c]);
        tl_session_set_report(s, TL_REPORT_ALL);
        tl_session_reset(s);
        run(s);
        int m, ids[12];
        memcpy(ids, tl_session_generated_ids(s, &m), sizeof ids);
        tl_sample_report all[12];
        for (int i = 0; i < m && i < 12; i++) all[i] = tl_session_step_at(s, i)->sample;
        for (unsigned f = 0; f <= TL_REPORT_MODEL; f++) {
            tl_session_set_report(s, f);
            tl_session_reset(s);
            run(s);
            TL_CHECK(!memcmp(tl_session_generated_ids(s, &n), ids, sizeof ids));
            for (int i = 0; i < m && i < 12; i++) {
                const tl_sample_report *r = &tl_session_step_at(s, i)->sample;
                TL_CHECK(r->fields == f && r->kept == all[i].kept && r->n == all[i].n);
                TL_CHECK(isnan(r->entropy) && isnan(r->mass_outside) && isnan(r->cand[0].prob_temp));
                TL_CHECK(f ? r->log_z == all[i].log_z : isnan(r->log_z));
                for (int j = 0; j < r->n; j++) {
                    TL_CHECK(r->cand[j].id == all[i].cand[j].id && r->cand[j].prob_final == all[i].cand[j].prob_final);
                    TL_CHECK(f ? r->cand[j].prob == all[i].cand[j].prob : isnan(r->cand[j].prob));
                }
            }
        }
    }
    tl_session_set_report(s, TL_REPORT_ALL);
    tl_session_free(s);
}

static double fake_now;
static double fake_clock(void *ctx)
{
    (void)ctx;
    fake_now += 1;   /* every reading advances 1 ms */
    return fake_now;
}

static void messages_and_clock(void)
{
    tl_error err;
    tl_session *s = open_variant("llama31", fake_clock, NULL);
    if (!s) return;
    TL_CHECK_INT(tl_session_set_user(s, "Be brief.", "Hi <|eot_id|>", &err), 0);
    tl_session_set_sampling(s, greedy());
    tl_session_set_max_new_tokens(s, 4);
    TL_CHECK_INT(tl_session_prepare(s, &err), 0);
    size_t len, nsp;
    const char *pt = tl_session_prompt_text(s, &len);
    TL_CHECK(pt && !strncmp(pt, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>", 59));
    TL_CHECK(pt && len > 25 && !strcmp(pt + len - 25, "assistant<|end_header_id|>\n\n" + 3) );
    const tl_span *sp = tl_session_prompt_spans(s, &nsp);
    TL_CHECK(nsp >= 2);
    if (nsp >= 2) TL_CHECK(!strncmp(pt + sp[nsp - 1].start, "Hi <|eot_id|>", 13));
    int n;
    const int *ids = tl_session_prompt_ids(s, &n);
    TL_CHECK_INT(ids[0], 128000);
    int eot = 0;
    for (int i = 0; i < n; i++) eot += ids[i] == 128009;
    TL_CHECK_INT(eot, 3);   /* system, the user's literal (parsed as the control token), user end */
    run(s);
    tl_metrics_report r = tl_session_metrics(s);
    /* each clock reading is +1 ms: start, templated, tokenized, then two per token (the step
     * begins, the id is on the host); the 1 ms between the prompt's tokenizing and the first
     * step is a wait, not the request's work (issue 38: the prompt may sit on screen) */
    TL_CHECK_NEAR(r.template_ms, 1, 1e-9);
    TL_CHECK_NEAR(r.tokenize_ms, 1, 1e-9);
    TL_CHECK_NEAR(r.ttft_ms, 3, 1e-9);
    TL_CHECK_NEAR(r.tpot_ms, 2, 1e-9);
    TL_CHECK_NEAR(r.pace_ms, 2, 1e-9);   /* one run: no pause, the pace is the wall clock */
    TL_CHECK_INT(r.paused_gaps, 0);
    TL_CHECK_INT(r.generated, 4);
    TL_CHECK_INT(r.unsynced_applicable, 0);
    TL_CHECK_NEAR(r.bandwidth_gbs, 10, 1e-9);
    TL_CHECK_NEAR(r.floor_ms, r.step_bytes / 10e9 * 1e3, 1e-12);
    TL_CHECK(r.step_bytes > 128256.0 * 32 * 2);
    tl_session_free(s);
}

/* A clock that runs with the real one plus the pauses a test injects between key presses. */
static double pause_offset;
static double paused_clock(void *ctx)
{
    (void)ctx;
    return tl_clock_monotonic_ms(NULL) + pause_offset;
}

static void settings_mid_answer(void)
{
    tl_error err = {{0}};
    tl_session *s = open_variant("llama31", NULL, NULL);
    if (!s) return;
    TL_CHECK_INT(tl_session_set_prompt_ids(s, prompt, 5, &err), 0);
    tl_session_set_sampling(s, greedy());
    tl_session_set_max_new_tokens(s, 12);
    for (int i = 0; i < 4; i++) TL_CHECK_INT(tl_session_step(s, NULL, &err), TL_SESSION_STEPPED);
    int n, kept[4];
    memcpy(kept, tl_session_generated_ids(s, &n), sizeof kept);

    /* "from here on, sample hotter": the four tokens stay, the next ones are sampled */
    tl_sampling hot = {.greedy = 0, .temperature = 1.7f, .top_k = 0, .top_p = 1.0f, .seed = 7};
    tl_session_set_sampling(s, hot);
    TL_CHECK_INT(tl_session_n_steps(s), 4);
    TL_CHECK(!memcmp(tl_session_generated_ids(s, &n), kept, sizeof kept));
    TL_CHECK_INT(tl_session_step(s, NULL, &err), TL_SESSION_STEPPED);
    TL_CHECK_INT(tl_session_n_steps(s), 5);
    TL_CHECK(!memcmp(tl_session_generated_ids(s, &n), kept, sizeof kept));
    /* the step record says which settings chose each token */
    TL_CHECK_INT(tl_session_step_at(s, 3)->sampling.greedy, 1);
    TL_CHECK_INT(tl_session_step_at(s, 4)->sampling.greedy, 0);
    TL_CHECK_NEAR(tl_session_step_at(s, 4)->sampling.temperature, 1.7, 1e-6);

    /* the budget: lowered to what is there, the answer stops now; raised again, it goes on */
    tl_session_set_max_new_tokens(s, 5);
    TL_CHECK_INT(tl_session_done(s), 1);
    TL_CHECK_INT(tl_session_stop(s)->reason, TL_STOP_MAX_NEW_TOKENS);
    TL_CHECK_INT(tl_session_step_at(s, 4)->stop.reason, TL_STOP_MAX_NEW_TOKENS);
    size_t l1;
    tl_session_streamed(s, &l1);
    TL_CHECK(l1 > 0);   /* the end flushed what was held */
    tl_session_set_max_new_tokens(s, 8);
    TL_CHECK_INT(tl_session_done(s), 0);
    TL_CHECK_INT(tl_session_step_at(s, 4)->stop.reason, TL_STOP_NONE);
    TL_CHECK_INT(tl_session_n_steps(s), 5);
    TL_CHECK_INT(run(s), TL_SESSION_DONE);
    TL_CHECK_INT(tl_session_n_steps(s), 8);
    TL_CHECK(!memcmp(tl_session_generated_ids(s, &n), kept, sizeof kept));

    /* a stop string that the newest token completes fires at once; removing it undoes it */
    const int *g = tl_session_generated_ids(s, &n);
    size_t len;
    const char *piece = tl_tokenizer_piece(tl_session_tokenizer(s), g[n - 1], &len);
    tl_session_set_max_new_tokens(s, 12);
    TL_CHECK_INT(tl_session_done(s), 0);
    if (piece && len > 0 && len < 32) {
        char stop[33];
        memcpy(stop, piece, len);
        stop[len] = 0;
        const char *list[] = {stop};
        if (strlen(stop) == len) {
            TL_CHECK_INT(tl_session_set_stop_strings(s, list, 1, &err), 0);
            TL_CHECK_INT(tl_session_done(s), 1);
            TL_CHECK_INT(tl_session_stop(s)->reason, TL_STOP_STRING);
            TL_CHECK_INT(tl_session_set_stop_strings(s, NULL, 0, &err), 0);
            TL_CHECK_INT(tl_session_done(s), 0);
        }
    }
    TL_CHECK_INT(tl_session_n_steps(s), 8);

    /* changing the prompt starts over */
    tl_session_set_add_generation_prompt(s, 0);
    TL_CHECK_INT(tl_session_n_steps(s), 0);
    tl_session_free(s);
}

static void hand_stepping_clock(void)
{
    tl_error err = {{0}};
    tl_session *s = open_variant("llama31", paused_clock, NULL);
    if (!s) return;
    TL_CHECK_INT(tl_session_set_prompt_ids(s, prompt, 5, &err), 0);
    tl_session_set_sampling(s, greedy());
    tl_session_set_max_new_tokens(s, 12);
    /* a teacher presses Space every 2 s */
    for (int i = 0; i < 6; i++) {
        TL_CHECK_INT(tl_session_step(s, NULL, &err), TL_SESSION_STEPPED);
        pause_offset += 2000;
    }
    tl_metrics_report r = tl_session_metrics(s);
    TL_CHECK_INT(r.paused_gaps, 5);
    TL_CHECK(r.tpot_ms >= 2000);                      /* the wall clock holds the pauses */
    TL_CHECK_NEAR(r.pace_ms, r.pass_mean_ms, 1e-9);   /* the headline does not */
    TL_CHECK(r.pace_ms > 0 && r.pace_ms < 2 * r.pass_mean_ms);
    TL_CHECK(r.work_ms >= r.pass_mean_ms && r.work_ms < 1000);
    for (int i = 1; i < 6; i++) TL_CHECK_INT(tl_session_step_at(s, i)->joined, 0);

    /* one more step after a pause, then back: the figures are the ones from before */
    TL_CHECK_INT(tl_session_step(s, NULL, &err), TL_SESSION_STEPPED);
    pause_offset += 5000;
    TL_CHECK_INT(tl_session_rewind(s, 1, &err), 0);
    tl_metrics_report b = tl_session_metrics(s);
    TL_CHECK_NEAR(b.tpot_ms, r.tpot_ms, 1e-9);
    TL_CHECK_NEAR(b.pace_ms, r.pace_ms, 1e-9);
    TL_CHECK_INT(b.generated, r.generated);

    /* the same request in one run: no pauses, the pace is the wall clock */
    tl_session_reset(s);
    run(s);
    tl_metrics_report u = tl_session_metrics(s);
    TL_CHECK_INT(u.paused_gaps, 0);
    TL_CHECK_NEAR(u.pace_ms, u.tpot_ms, 1e-9);
    TL_CHECK(u.tpot_ms < 1000);
    TL_CHECK(u.tpot_ms >= u.pass_mean_ms);
    /* the lesson's n / (last - first) reads n/(n-1) faster than tokenloop's (n-1) gaps */
    TL_CHECK_NEAR(u.lesson_tokens_per_s / u.decode_tokens_per_s, 12.0 / 11.0, 1e-9);
    for (int i = 1; i < 12; i++) TL_CHECK_INT(tl_session_step_at(s, i)->joined, 1);
    tl_session_free(s);
}

static void bad_input(void)
{
    tl_error err = {{0}};
    tl_session *s = open_variant("llama31", NULL, NULL);
    if (!s) return;
    int bad[] = {1, 128256};
    TL_CHECK(tl_session_set_prompt_ids(s, bad, 2, &err) != 0);
    TL_CHECK(strstr(err.msg, "128256") != NULL);
    TL_CHECK(tl_session_set_messages(s, "{\"role\":\"user\"}", &err) != 0);
    const char *empty[] = {""};
    TL_CHECK(tl_session_set_stop_strings(s, empty, 1, &err) != 0);
    TL_CHECK(tl_session_force(s, 5, &err) != 0);   /* nothing to change yet */
    int *longp = malloc(sizeof(int) * 300);
    for (int i = 0; i < 300; i++) longp[i] = 100 + i;
    TL_CHECK_INT(tl_session_set_prompt_ids(s, longp, 300, &err), 0);
    const tl_step *st;
    TL_CHECK(tl_session_step(s, &st, &err) < 0);   /* 300 > the 256-position context */
    TL_CHECK(strstr(err.msg, "context") != NULL);
    free(longp);
    tl_session_free(s);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/missing", root);
    tl_session_opts o = {.model_dir = dir};
    TL_CHECK(tl_session_open(&s, &o, &err) != 0 && s == NULL);
}

/* The weights' dtype changed mid-lesson: the request stays, the generation is cleared (its
 * cache came from the other weights), each dtype keeps its row, and going back to the file's
 * dtype runs the loaded weights again, not a conversion of a conversion. */
static void dtype_switch(void)
{
    tl_error err = {{0}};
    tl_session *s = open_variant("llama31", NULL, NULL);
    if (!s) return;
    const tl_model *loaded = tl_session_model(s);
    const tl_dtype file = tl_session_file_dtype(s);
    tl_session_set_sampling(s, greedy());
    tl_session_set_max_new_tokens(s, 5);
    TL_CHECK_INT(tl_session_set_user(s, NULL, "Hello there", &err), 0);
    run(s);
    int n_prompt, n0;
    tl_session_prompt_ids(s, &n_prompt);
    tl_session_generated_ids(s, &n0);
    const tl_dtype seq[] = {TL_Q8_0, TL_Q4_0, file};
    for (int k = 0; k < 3; k++) {
        TL_CHECK_INT(tl_session_set_dtype(s, seq[k], &err), 0);
        TL_CHECK_INT((int)tl_session_dtype(s), (int)seq[k]);
        TL_CHECK_INT(tl_session_n_steps(s), 0);   /* the answer on the other weights is gone ... */
        int n;
        tl_session_prompt_ids(s, &n);
        TL_CHECK_INT(n, n_prompt);                /* ... the request is not */
        TL_CHECK_MSG(tl_session_message(s, "user") && !strcmp(tl_session_message(s, "user"), "Hello there"),
                     "the user message stays");
        run(s);
    }
    TL_CHECK_MSG(tl_session_model(s) == loaded, "back to %s: the loaded weights run again", tl_dtype_name(file));
    tl_dtype_row rows[TL_DTYPE_COUNT];
    int nr = tl_session_dtype_rows(s, rows, TL_DTYPE_COUNT);
    TL_CHECK_INT(nr, 3);
    if (nr == 3) {
        TL_CHECK_INT((int)rows[0].dtype, (int)file);
        TL_CHECK_INT((int)rows[1].dtype, TL_Q8_0);
        TL_CHECK_INT((int)rows[2].dtype, TL_Q4_0);
        for (int i = 0; i < 3; i++)
            TL_CHECK_MSG(rows[i].generated > 0 && rows[i].n_first > 0 && rows[i].step_bytes > rows[i].weight_bytes &&
                             rows[i].floor_ms > 0,
                         "row %d: %d generated, step %.0f bytes", i, rows[i].generated, rows[i].step_bytes);
        TL_CHECK_MSG(rows[2].weight_bytes < rows[1].weight_bytes && rows[1].weight_bytes < rows[0].weight_bytes,
                     "bytes a step reads: %.0f (q4_0) < %.0f (q8_0) < %.0f", rows[2].weight_bytes,
                     rows[1].weight_bytes, rows[0].weight_bytes);
    }
    TL_CHECK_INT(tl_session_set_dtype(s, (tl_dtype)99, &err), -1);
    TL_CHECK(strstr(err.msg, "unknown") != NULL);
    tl_session_free(s);

    char dir[4096];
    snprintf(dir, sizeof dir, "%s/llama31", root);
    tl_session_opts o = {.model_dir = dir, .threads = 1, .dtype = "q5_k"};
    s = NULL;
    TL_CHECK(tl_session_open(&s, &o, &err) != 0 && s == NULL);
    TL_CHECK_MSG(strstr(err.msg, "--dtype") && strstr(err.msg, "q5_k"), "%s", err.msg);
    o.dtype = "q4_0";
    TL_CHECK_INT(tl_session_open(&s, &o, &err), 0);
    if (s) TL_CHECK_INT((int)tl_session_dtype(s), TL_Q4_0);
    tl_session_free(s);
}

int main(int argc, char **argv)
{
    root = argc > 1 ? argv[1] : "models";
    dtype_switch();
    steps_and_budgets();
    eos_and_stop_string();
    rewind_and_branch();
    messages_and_clock();
    settings_mid_answer();
    hand_stepping_clock();
    bad_input();
    return TL_TEST_END("generate_session");
}
