/* tui/session_view.c against the session it reads: every number and id the panes show must be
 * the session's own (prompt ids and pieces, the newest step's candidates, running totals, per-pass
 * times, stop state), and the prompt's byte classes must match the template's content spans and
 * the tokenizer's special tokens.
 *
 *     test_tui_session_view MODEL_DIR   (a Llama-3-vocabulary checkpoint; 77 when absent) */
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format.h"
#include "session_view.h"
#include "tl_test.h"
#include "tokenloop/tokenizer.h"

/* The Timing pane's dtype table from a session that ran the same request on three dtypes (the
 * bundled model: its widths are multiples of 32): a row each, in the order first used, every
 * figure the session's own, the current one marked; then drawn, as the pane shows it. */
static void dtype_table(const char *model)
{
    char cfg[4200];
    snprintf(cfg, sizeof cfg, "%s/config.json", model);
    if (access(cfg, R_OK)) {
        fprintf(stderr, "%s: absent: the dtype table is not checked\n", model);
        return;
    }
    tl_session_opts o;
    memset(&o, 0, sizeof o);
    o.model_dir = model;
    o.threads = 1;
    o.bandwidth_gbs = 10;
    tl_session *s;
    tl_error err;
    if (tl_session_open(&s, &o, &err)) {
        TL_CHECK_MSG(0, "%s", err.msg);
        return;
    }
    tl_sampling sp = tl_session_sampling(s);
    sp.greedy = 1;
    tl_session_set_sampling(s, sp);
    tl_session_set_max_new_tokens(s, 4);
    TL_CHECK_INT(tl_session_set_user(s, NULL, "What is the capital of France?", &err), 0);
    const tl_dtype order[3] = {tl_session_file_dtype(s), TL_Q8_0, TL_Q4_0};
    TL_CHECK_INT(order[0], TL_BF16);
    for (int i = 0; i < 3; i++) {
        TL_CHECK_INT(tl_session_set_dtype(s, order[i], &err), 0);
        TL_CHECK_INT(tl_session_n_steps(s), 0);   /* a new dtype starts over: the prefill again */
        TL_CHECK_INT(tl_generate(s, NULL, NULL, &err), TL_SESSION_DONE);
    }
    /* back to q8_0 without running: its row keeps what it measured */
    TL_CHECK_INT(tl_session_set_dtype(s, TL_Q8_0, &err), 0);
    static tl_sview sv;
    static tl_ui ui;
    ui.tok_sel = -1;
    sv.v.logit_rows = 10;
    SessionView_fill(&sv, s, &ui);
    tl_view *v = &sv.v;
    tl_dtype_row rows[TL_DTYPE_COUNT];
    int n = tl_session_dtype_rows(s, rows, TL_DTYPE_COUNT);
    TL_CHECK_INT(n, 3);
    TL_CHECK_INT(v->n_dtypes, n);
    TL_CHECK_STR(v->dtype, "q8_0");
    TL_CHECK_STR(v->file_dtype, "bf16");
    for (int i = 0; i < n && i < v->n_dtypes; i++) {
        const tl_view_dtype *d = &v->dtypes[i];
        TL_CHECK_INT(rows[i].dtype, order[i]);
        TL_CHECK_STR(d->name, tl_dtype_name(order[i]));
        TL_CHECK_NEAR(d->weight_bytes, rows[i].weight_bytes, 0);
        TL_CHECK_NEAR(d->step_bytes, rows[i].step_bytes, 0);
        TL_CHECK_NEAR(d->floor_ms, rows[i].floor_ms, 0);
        TL_CHECK_NEAR(d->pace_ms, rows[i].pace_ms, 0);
        TL_CHECK_INT(d->generated, rows[i].generated);
        TL_CHECK_INT(d->current, order[i] == TL_Q8_0);
        TL_CHECK(d->step_bytes > d->weight_bytes && d->pace_ms > 0);
        TL_CHECK_NEAR(d->floor_ms, d->step_bytes / 10e9 * 1e3, 1e-9);   /* the fixed 10 GB/s */
    }
    /* llama.cpp's blocks: 34 and 18 bytes per 32 weights against bf16's 64 (norms stay fp32) */
    TL_CHECK(v->dtypes[1].weight_bytes / v->dtypes[0].weight_bytes > 0.52 &&
             v->dtypes[1].weight_bytes / v->dtypes[0].weight_bytes < 0.55);
    TL_CHECK(v->dtypes[2].weight_bytes / v->dtypes[0].weight_bytes > 0.27 &&
             v->dtypes[2].weight_bytes / v->dtypes[0].weight_bytes < 0.30);

    /* drawn: the Timing pane at 80 columns, a row per dtype, q8_0 marked */
    FILE *out = fopen("/dev/null", "w"), *in = fopen("/dev/null", "r");
    SCREEN *scr = out && in ? newterm("xterm-256color", out, in) : NULL;
    if (!scr)
        scr = out && in ? newterm("vt100", out, in) : NULL;
    if (scr) {
        set_term(scr);
        resizeterm(24, 80);
        ui.active = PANE_TIMING;
        snprintf(ui.lang, sizeof ui.lang, "en");
        Screen_draw(stdscr, 80, 24, v, &ui);
        char line[24][256];
        int head = -1;
        for (int y = 0; y < 24; y++) {
            mvwinnstr(stdscr, y, 0, line[y], 255);
            if (strstr(line[y], "dtype  weights"))
                head = y;
        }
        TL_CHECK(head > 0);
        for (int i = 0; head > 0 && i < 3; i++) {
            char want[64];
            snprintf(want, sizeof want, "%s   %.1f MB", tl_dtype_name(order[i]), v->dtypes[i].weight_bytes / 1e6);
            TL_CHECK_MSG(strstr(line[head + 1 + i], want) != NULL, "row %d: want \"%s\" in %s", i, want, line[head + 1 + i]);
        }
        TL_CHECK(head > 0 && strstr(line[0], "q8_0 weights") != NULL);
        endwin();
        delscreen(scr);
    } else
        fprintf(stderr, "no terminal description: the table is not drawn\n");
    if (out)
        fclose(out);
    if (in)
        fclose(in);
    SessionView_free(&sv);
    tl_session_free(s);
}

int main(int argc, char **argv)
{
    setlocale(LC_ALL, "C.UTF-8");
    char cfg[4200];
    snprintf(cfg, sizeof cfg, "%s/config.json", argc > 1 ? argv[1] : "");
    if (argc < 2 || access(cfg, R_OK)) {
        fprintf(stderr, "no model: skipped\n");
        return 77;
    }
    tl_session_opts o;
    memset(&o, 0, sizeof o);
    o.model_dir = argv[1];
    o.threads = 1;
    o.bandwidth_gbs = 10;   /* no probe: a fixed floor */
    tl_session *s;
    tl_error err;
    if (tl_session_open(&s, &o, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const tl_tokenizer *tok = tl_session_tokenizer(s);
    TL_CHECK(tok != NULL);
    tl_session_set_top_n(s, TL_MAX_TOP);
    TL_CHECK_INT(tl_session_set_user(s, NULL, "Xin ch\xC3\xA0o \xE4\xB8\xAD\xE6\x96\x87", &err), 0);
    TL_CHECK_INT(tl_session_prepare(s, &err), 0);

    static tl_sview sv;
    static tl_ui ui;
    ui.tok_sel = -1;
    sv.v.logit_rows = 10;
    SessionView_fill(&sv, s, &ui);
    tl_view *v = &sv.v;

    /* prompt: the session's render, classes from its spans and the tokenizer */
    size_t plen;
    const char *ptext = tl_session_prompt_text(s, &plen);
    TL_CHECK(v->prompt == ptext && v->prompt_len == plen);
    size_t nsp;
    const tl_span *sp = tl_session_prompt_spans(s, &nsp);
    TL_CHECK(nsp >= 1);
    for (size_t i = 0; i < nsp; i++)
        for (size_t b = sp[i].start; b < sp[i].end; b++)
            TL_CHECK_MSG(v->prompt_style[b] == VSTYLE_CONTENT, "byte %zu", b);
    int specials = 0;
    for (const char *p = strstr(ptext, "<|"); p; p = strstr(p + 1, "<|")) {
        const char *e = strstr(p, "|>");
        char lit[64];
        if (!e || e - p > 60)
            continue;
        snprintf(lit, sizeof lit, "%.*s", (int)(e - p + 2), p);
        int id = tl_tokenizer_find(tok, lit);
        if (id >= 0 && tl_tokenizer_is_special(tok, id)) {
            specials++;
            for (size_t b = (size_t)(p - ptext); b < (size_t)(e + 2 - ptext); b++)
                TL_CHECK((v->prompt_style[b] & ~VSTYLE_GENPROMPT) == VSTYLE_SPECIAL);
        }
    }
    TL_CHECK(specials >= 4);   /* begin_of_text, start/end header, eot */
    /* the generation prompt, as the session found it: the bytes after the render without it */
    TL_CHECK(v->genprompt_at > 0 && v->genprompt_at == tl_session_genprompt_at(s));
    if (v->genprompt_at > 0) {
        TL_CHECK(!strncmp(ptext + v->genprompt_at, "<|start_header_id|>assistant", 28));
        for (size_t b = (size_t)v->genprompt_at; b < v->prompt_len; b++)
            TL_CHECK(v->prompt_style[b] & VSTYLE_GENPROMPT);
        TL_CHECK(!(v->prompt_style[v->genprompt_at - 1] & VSTYLE_GENPROMPT));
    }
    int np;
    const int *ids = tl_session_prompt_ids(s, &np);
    TL_CHECK_INT(v->n_prompt, np);
    TL_CHECK_INT(v->n_tokens, np);
    for (int i = 0; i < np; i++) {
        char d[64];
        tl_tokenizer_display(tok, ids[i], d, sizeof d);
        TL_CHECK_INT(v->tokens[i].id, ids[i]);
        TL_CHECK_STR(v->tokens[i].display, d);
        TL_CHECK_INT(v->tokens[i].special, tl_tokenizer_is_special(tok, ids[i]));
        TL_CHECK_INT(v->tokens[i].generated, 0);
    }
    char want[96];
    snprintf(want, sizeof want, "next: prefill %d tokens", np);
    TL_CHECK_STR(v->next, want);
    TL_CHECK(!v->has_logits);

    /* three passes */
    for (int i = 0; i < 3; i++)
        TL_CHECK_INT(tl_session_step(s, NULL, &err), TL_SESSION_STEPPED);
    ui.tok_sel = np + 1;
    SessionView_fill(&sv, s, &ui);
    TL_CHECK_INT(v->n_tokens, np + 3);
    TL_CHECK_INT(v->generated, 3);
    int ng;
    const int *gen = tl_session_generated_ids(s, &ng);
    for (int i = 0; i < ng; i++) {
        TL_CHECK_INT(v->tokens[np + i].id, gen[i]);
        TL_CHECK_INT(v->tokens[np + i].generated, 1);
    }
    /* the selected token's bytes, as hex, from the tokenizer */
    size_t blen;
    const char *bytes = tl_tokenizer_piece(tok, gen[1], &blen);
    char hex[96] = "";
    for (size_t i = 0, o2 = 0; i < blen && o2 + 4 < sizeof hex; i++)
        o2 += (size_t)snprintf(hex + o2, sizeof hex - o2, "%s%02x", i ? " " : "", (unsigned char)bytes[i]);
    TL_CHECK_STR(v->sel_bytes, hex);
    /* and how likely it was when step 1 chose it */
    {
        const tl_step *s1 = tl_session_step_at(s, 1);
        int rank = -1;
        for (int i = 0; i < s1->sample.n; i++)
            if (s1->sample.cand[i].id == gen[1])
                rank = i;
        char p[32], q[32], w2[128];
        if (rank >= 0) {
            Format_prob(s1->sample.cand[rank].prob, p, sizeof p);
            Format_prob(s1->sample.cand[rank].prob_temp, q, sizeof q);
            snprintf(w2, sizeof w2, "chosen: p %s (model, T=1), p(T) %s, rank %d", p, q, rank + 1);
            TL_CHECK_STR(v->sel_choice, w2);
        }
    }
    const tl_step *st = tl_session_step_at(s, 2);
    TL_CHECK(v->has_logits);
    TL_CHECK_INT(v->logits_step, 3);
    TL_CHECK_INT(v->n_rows, st->sample.n);
    double cum = 0, shown = 0;
    int chosen_rows = 0;
    for (int i = 0; i < v->n_rows; i++) {
        const tl_candidate *c = &st->sample.cand[i];
        cum += c->prob_temp;
        if (i < 10)
            shown += c->prob_temp;
        TL_CHECK_INT(v->rows[i].id, c->id);
        TL_CHECK_NEAR(v->rows[i].logit, c->logit, 0);
        TL_CHECK_NEAR(v->rows[i].prob_temp, c->prob_temp, 0);
        TL_CHECK_NEAR(v->rows[i].cum, cum, 1e-6);
        TL_CHECK_INT(v->rows[i].cut_k, c->cut_top_k);
        TL_CHECK_INT(v->rows[i].cut_p, c->cut_top_p);
        TL_CHECK_INT(v->rows[i].chosen, c->id == st->chosen);
        chosen_rows += v->rows[i].chosen;
        if (i > 0)
            TL_CHECK(v->rows[i].logit <= v->rows[i - 1].logit);
    }
    TL_CHECK(chosen_rows <= 1);
    TL_CHECK_NEAR(v->mass_outside, 1 - shown, 1e-6);
    TL_CHECK_NEAR(v->entropy, st->sample.entropy, 0);
    TL_CHECK_STR(v->next, "next: decode token 4");
    /* the chart: one bar per decode pass, each the pass's own time */
    TL_CHECK_INT(v->n_step_ms, 2);
    TL_CHECK_NEAR(v->step_ms[0], tl_session_step_at(s, 1)->ms, 0);
    TL_CHECK_NEAR(v->step_ms[1], tl_session_step_at(s, 2)->ms, 0);
    TL_CHECK_NEAR(v->pass_mean_ms, (v->step_ms[0] + v->step_ms[1]) / 2, 1e-9);
    /* the timing pane names what those passes include: the sampler's statistics or not */
    TL_CHECK_INT(v->pass_stats, tl_session_step_at(s, 1)->stats_in_pass && tl_session_step_at(s, 2)->stats_in_pass);
    /* the title names the precision the engine runs at (the session's default: mixed, or exact
     * where the kernels never round) */
    TL_CHECK_STR(v->precision, tl_precision_name(tl_engine_precision(tl_session_engine(s))));
    TL_CHECK(!strcmp(v->precision, "mixed") || !strcmp(v->precision, "exact"));
    tl_metrics_report mr = tl_session_metrics(s);
    TL_CHECK_NEAR(v->ttft_ms, mr.ttft_ms, 0);
    TL_CHECK_NEAR(v->floor_ms, mr.floor_ms, 0);
    TL_CHECK_NEAR(v->bandwidth_gbs, 10, 1e-9);
    TL_CHECK_NEAR(v->prefill_ms, tl_session_step_at(s, 0)->ms, 0);
    size_t slen;
    const char *streamed = tl_session_streamed(s, &slen);
    TL_CHECK(strlen(v->printed) == slen && !memcmp(v->printed, streamed, slen));
    TL_CHECK_STR(v->held, st->held);
    const tl_stop_config *sc = tl_session_stop_config(s);
    TL_CHECK_INT(v->budget, sc->max_new_tokens);
    TL_CHECK_INT(v->n_eos, sc->n_eos);
    for (int i = 0; i < v->n_eos; i++) {
        TL_CHECK_INT(v->eos_ids[i], sc->eos_ids[i]);
        TL_CHECK_STR(v->eos_names[i], tl_tokenizer_token(tok, sc->eos_ids[i]));
    }
    TL_CHECK(!v->stopped);

    /* step back: one token fewer, and the KV position follows */
    TL_CHECK_INT(tl_session_rewind(s, 1, &err), 0);
    ui.tok_sel = -1;
    SessionView_fill(&sv, s, &ui);
    TL_CHECK_INT(v->n_tokens, np + 2);
    TL_CHECK_STR(v->next, "next: decode token 3");

    /* a budget of 4: the stop pane's reason and the status line */
    tl_session_set_max_new_tokens(s, 4);
    int rc;
    while ((rc = tl_session_step(s, NULL, &err)) == TL_SESSION_STEPPED)
        ;
    SessionView_fill(&sv, s, &ui);
    TL_CHECK(v->stopped);
    TL_CHECK_STR(v->stop_reason, "max_new_tokens");
    TL_CHECK_STR(v->stop_detail, tl_session_stop(s)->detail);
    TL_CHECK_INT(v->generated, 4);
    TL_CHECK(strstr(v->budget_source, "your request") != NULL);
    TL_CHECK(strncmp(v->next, "stopped (max_new_tokens)", 24) == 0);

    /* "<|eot_id|>" typed in the message: by default the tokenizer makes it the special token,
     * so the pane must colour it special (it used to show as plain content); as plain text it
     * is content, and the ids agree */
    const char *inj = "Hi<|eot_id|>there";
    TL_CHECK_INT(tl_session_set_user(s, NULL, inj, &err), 0);
    for (int plain = 0; plain < 2; plain++) {
        tl_session_set_parse_special_in_content(s, !plain);
        TL_CHECK_INT(tl_session_prepare(s, &err), 0);
        SessionView_fill(&sv, s, &ui);
        TL_CHECK_INT(v->parse_special_in_content, !plain);
        const char *at = strstr(v->prompt, inj);
        TL_CHECK(at != NULL);
        size_t b0 = at ? (size_t)(at - v->prompt) + 2 : 0;
        for (size_t b = b0; at && b < b0 + 10; b++)
            TL_CHECK_MSG(v->prompt_style[b] == (plain ? VSTYLE_CONTENT : (VSTYLE_CONTENT | VSTYLE_SPECIAL)),
                         "plain %d byte %zu style %d", plain, b, v->prompt_style[b]);
        int n_eot = 0;
        for (int i = 0; i < v->n_prompt; i++) n_eot += v->tokens[i].id == 128009;
        TL_CHECK_INT(n_eot, plain ? 2 : 3);   /* the system turn's, the user turn's (+ the typed one) */
    }
    tl_session_set_parse_special_in_content(s, 1);

    /* the hold reasons in words */
    char r[96];
    SessionView_holdReason("en", TL_HOLD_PARTIAL_WORD | TL_HOLD_INCOMPLETE_UTF8, r, sizeof r);
    TL_CHECK_STR(r, "partial word (no space after it yet), incomplete UTF-8 character");
    SessionView_holdReason("en", TL_HOLD_STOP_PREFIX, r, sizeof r);
    TL_CHECK_STR(r, "could become a stop string");
    SessionView_holdReason("en", 0, r, sizeof r);
    TL_CHECK_STR(r, "");

    /* d on weights whose widths are no multiple of 32 (this checkpoint's 176): one error line
     * naming the matrix, and the session keeps its weights and its answer */
    int before = tl_session_n_steps(s);
    TL_CHECK(tl_session_set_dtype(s, TL_Q8_0, &err) == -1);
    TL_CHECK(strstr(err.msg, "not a multiple of 32") != NULL && !strchr(err.msg, '\n'));
    TL_CHECK_INT(tl_session_dtype(s), tl_session_file_dtype(s));
    TL_CHECK_INT(tl_session_n_steps(s), before);
    SessionView_fill(&sv, s, &ui);
    TL_CHECK_INT(v->n_dtypes, 1);

    SessionView_free(&sv);
    tl_session_free(s);
    if (argc > 2)
        dtype_table(argv[2]);
    return TL_TEST_END("tui_session_view");
}
