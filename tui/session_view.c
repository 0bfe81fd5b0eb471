/* tl_session -> tl_view. Reads only the session's public accessors. */
#include "session_view.h"
#include "tokenloop/batch.h"
#include "tokenloop/lesson.h"

#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "i18n.h"
#include "tokenloop/engine.h"
#include "tokenloop/tokenizer.h"

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(p, c * elem);
    if (!q)
        return p;
    *cap = c;
    return q;
}

void SessionView_holdReason(const char *lang, int f, char *out, size_t n)
{
    out[0] = 0;
    size_t o = 0;
    if (f & TL_HOLD_PARTIAL_WORD)
        o += (size_t)snprintf(out + o, n - o, "%s", I18n_tr(lang, "partial word (no space after it yet)"));
    if ((f & TL_HOLD_INCOMPLETE_UTF8) && o < n)
        o += (size_t)snprintf(out + o, n - o, "%s%s", o ? ", " : "", I18n_tr(lang, "incomplete UTF-8 character"));
    if ((f & TL_HOLD_STOP_PREFIX) && o < n)
        snprintf(out + o, n - o, "%s%s", o ? ", " : "", I18n_tr(lang, "could become a stop string"));
}

static void put_token(tl_sview *sv, const tl_tokenizer *tok, int i, int id, int generated)
{
    tl_view_token *t = &sv->tokens[i];
    t->id = id;
    t->generated = generated;
    t->special = tok ? tl_tokenizer_is_special(tok, id) : 0;
    if (tok)
        tl_tokenizer_display(tok, id, t->display, sizeof t->display);
    else
        snprintf(t->display, sizeof t->display, "?");
}

static void basename_of(const char *dir, char *out, size_t n)
{
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    size_t b = len;
    while (b > 0 && dir[b - 1] != '/')
        b--;
    snprintf(out, n, "%.*s", (int)(len - b), dir + b);
}

/* The model, the sampling settings and the request as the session holds them, and the
 * transformers code that runs the same request. */
static void fill_request(tl_view *v, tl_session *s, const tl_ui *ui)
{
    const tl_model *m = tl_session_model(s);
    tl_engine *e = tl_session_engine(s);

    basename_of(m->dir[0] ? m->dir : "synthetic", v->model_name, sizeof v->model_name);
    if (tl_session_synthetic(s))   /* random weights: the tokens are noise, the timing is real */
        snprintf(v->model_name, sizeof v->model_name, I18n_tr(ui->lang, "%s (random weights)"), tl_session_synthetic(s));
    v->random_weights = tl_session_synthetic(s) != NULL;
    snprintf(v->device, sizeof v->device, "%s", e ? tl_engine_device(e) : "?");
    snprintf(v->kernels, sizeof v->kernels, "%s", e ? tl_engine_kernels(e) : "");
    snprintf(v->precision, sizeof v->precision, "%s", e ? tl_precision_name(tl_engine_precision(e)) : "");
    v->vocab_size = m->cfg.vocab_size;

    tl_sampling sp = tl_session_sampling(s);
    v->greedy = sp.greedy;
    v->temperature = sp.temperature;
    v->top_k = sp.top_k;
    v->top_p = sp.top_p;

    v->system_msg = tl_session_message(s, "system");
    v->user_msg = tl_session_message(s, "user");
    v->add_generation_prompt = tl_session_add_generation_prompt(s);
    v->parse_special_in_content = tl_session_parse_special_in_content(s);
    v->stream_server = tl_session_stream_mode(s) == TL_STREAM_SERVER;
    tl_session_streamer_flags(s, &v->skip_prompt, &v->skip_special, NULL);
    /* the code as it is; its "# ..." comment lines are for the class, in its language */
    char *call = tl_session_hf_call(s);
    size_t o = 0;
    v->hf_call[0] = 0;
    for (char *line = call, *nl; line && *line && o + 1 < sizeof v->hf_call; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        o += (size_t)snprintf(v->hf_call + o, sizeof v->hf_call - o, "%s\n",
                              line[0] == '#' ? I18n_tr(ui->lang, line) : line);
        if (!nl)
            break;
    }
    if (o >= sizeof v->hf_call)
        o = sizeof v->hf_call - 1;
    free(call);

}

/* The prompt's text and a style per byte: template, content, special-token literal, and the
 * generation prompt. */
static void fill_prompt(tl_sview *sv, tl_session *s)
{
    tl_view *v = &sv->v;
    const tl_tokenizer *tok = tl_session_tokenizer(s);
    v->prompt = tl_session_prompt_text(s, &v->prompt_len);
    if (v->prompt) {
        sv->style = grow(sv->style, &sv->style_cap, v->prompt_len + 1, 1);
        memset(sv->style, VSTYLE_TEMPLATE, v->prompt_len + 1);
        size_t ns = 0;
        const tl_span *sp2 = tl_session_prompt_spans(s, &ns);
        for (size_t i = 0; i < ns; i++)
            for (size_t b = sp2[i].start; b < sp2[i].end && b < v->prompt_len; b++)
                sv->style[b] = VSTYLE_CONTENT;
        /* special-token literals: "<|...|>" that the tokenizer knows as special. Inside message
         * content they are special too unless the session encodes content as plain text: a
         * user's "<|eot_id|>" that ends their turn must look like the marker it became */
        if (tok) {
            const char *p = v->prompt;
            int in_content = tl_session_parse_special_in_content(s);
            for (size_t i = 0; i + 4 <= v->prompt_len; i++) {
                if (p[i] != '<' || p[i + 1] != '|' || (sv->style[i] == VSTYLE_CONTENT && !in_content))
                    continue;
                const char *end = memchr(p + i + 2, '>', v->prompt_len - i - 2);
                if (!end || end[-1] != '|' || end - (p + i) > 62)
                    continue;
                char lit[64];
                size_t n = (size_t)(end - (p + i)) + 1;
                memcpy(lit, p + i, n);
                lit[n] = 0;
                int id = tl_tokenizer_find(tok, lit);
                if (id >= 0 && tl_tokenizer_is_special(tok, id))
                    for (size_t b = i; b < i + n; b++)
                        sv->style[b] = (unsigned char)((sv->style[b] & VSTYLE_CONTENT) | VSTYLE_SPECIAL);
            }
        }
        long gp = tl_session_genprompt_at(s);
        if (gp >= 0 && (size_t)gp < v->prompt_len)
            for (size_t b = (size_t)gp; b < v->prompt_len; b++)
                sv->style[b] |= VSTYLE_GENPROMPT;
        v->prompt_style = sv->style;
        v->genprompt_at = gp >= 0 && (size_t)gp < v->prompt_len ? gp : -1;
    } else
        v->genprompt_at = -1;

}

/* The prompt's and the generated tokens, and the bytes of the one the cursor is on. */
static void fill_tokens(tl_sview *sv, tl_session *s, const tl_ui *ui)
{
    tl_view *v = &sv->v;
    const tl_tokenizer *tok = tl_session_tokenizer(s);
    tl_engine *e = tl_session_engine(s);
    int np = 0, ng = 0;
    const int *pid = tl_session_prompt_ids(s, &np);
    const int *gid = tl_session_generated_ids(s, &ng);
    size_t cap = (size_t)sv->tokens_cap;
    sv->tokens = grow(sv->tokens, &cap, (size_t)(np + ng) + 1, sizeof *sv->tokens);
    sv->tokens_cap = (int)cap;
    for (int i = 0; i < np; i++)
        put_token(sv, tok, i, pid[i], 0);
    for (int i = 0; i < ng; i++)
        put_token(sv, tok, np + i, gid[i], 1);
    v->tokens = sv->tokens;
    v->n_prompt = np;
    v->n_tokens = np + ng;
    v->pos = e ? tl_engine_pos(e) : 0;
    v->sel_bytes[0] = v->sel_text[0] = 0;
    if (ui->tok_sel >= 0 && ui->tok_sel < v->n_tokens && tok) {
        size_t len = 0;
        const char *b = tl_tokenizer_piece(tok, v->tokens[ui->tok_sel].id, &len);
        size_t o = 0;
        for (size_t i = 0; b && i < len && o + 4 < sizeof v->sel_bytes; i++)
            o += (size_t)snprintf(v->sel_bytes + o, sizeof v->sel_bytes - o, "%s%02x", i ? " " : "",
                                  (unsigned char)b[i]);
        if (b)
            Format_visible(b, len, v->sel_text, sizeof v->sel_text);
    }
}

/* For a generated token under the cursor: its probability and rank at the step that chose it. */
static void fill_choice(tl_view *v, tl_session *s, const tl_ui *ui)
{
    int np = v->n_prompt;
    v->sel_choice[0] = 0;
    if (ui->tok_sel >= np && ui->tok_sel < v->n_tokens) {
        /* the step that chose this token: its probability and rank then */
        const tl_step *cs = tl_session_step_at(s, ui->tok_sel - np);
        if (cs) {
            int rank = -1;
            for (int i = 0; i < cs->sample.n; i++)
                if (cs->sample.cand[i].id == cs->chosen)
                    rank = i;
            char p[32];
            if (rank >= 0) {
                /* the model's probability first: after greedy the final one is 1 whatever it was */
                char q[32];
                Format_probLang(ui->lang, cs->sample.cand[rank].prob, p, sizeof p);
                Format_probLang(ui->lang, cs->sample.cand[rank].prob_temp, q, sizeof q);
                snprintf(v->sel_choice, sizeof v->sel_choice, I18n_tr(ui->lang, "%s p %s (model, T=1), p(T) %s, rank %d"),
                         I18n_tr(ui->lang, cs->forced ? "forced;" : "chosen:"), p, q, rank + 1);
            } else
                snprintf(v->sel_choice, sizeof v->sel_choice, I18n_tr(ui->lang, "%s below the top %d"),
                         I18n_tr(ui->lang, cs->forced ? "forced;" : "chosen:"),
                         cs->sample.n);
        }
    }

}

/* The logits pane: the newest step's candidates. */
static void fill_logits(tl_view *v, const tl_step *st, const tl_tokenizer *tok)
{
    v->has_logits = st != NULL;
    v->n_rows = 0;
    if (st) {   /* the rows' header names these, not the settings changed since */
        v->rows_greedy = st->sampling.greedy;
        v->rows_top_k = st->sampling.top_k;
        v->rows_temperature = st->sampling.temperature;
        v->rows_top_p = st->sampling.top_p;
    }
    if (st) {
        const tl_sample_report *r = &st->sample;
        v->logits_step = st->index + 1;
        v->entropy = r->entropy;
        v->kept = r->kept;
        int n = r->n < TL_VIEW_MAX_ROWS ? r->n : TL_VIEW_MAX_ROWS;
        double cum = 0, shown = 0;
        for (int i = 0; i < n; i++) {
            tl_view_row *row = &v->rows[i];
            const tl_candidate *c = &r->cand[i];
            row->id = c->id;
            if (tok)
                tl_tokenizer_display(tok, c->id, row->display, sizeof row->display);
            else
                snprintf(row->display, sizeof row->display, "%d", c->id);
            row->logit = c->logit;
            row->prob = c->prob;
            row->prob_temp = c->prob_temp;
            row->prob_final = c->prob_final;
            cum += c->prob_temp;
            row->cum = (float)cum;
            row->cut_k = c->cut_top_k;
            row->cut_p = c->cut_top_p;
            row->chosen = c->id == st->chosen;
            row->forced = row->chosen && st->forced;
            if (i < v->logit_rows)
                shown += c->prob_temp;
        }
        v->n_rows = n;
        v->mass_outside = shown < 1 ? 1 - shown : 0;
    }

}

/* The stream pane: what was printed, what is held back and why. */
static void fill_stream(tl_sview *sv, tl_session *s, const tl_ui *ui, const tl_step *st)
{
    tl_view *v = &sv->v;
    size_t plen = 0;
    const char *printed = tl_session_streamed(s, &plen);
    sv->printed = grow(sv->printed, &sv->printed_cap, plen + 1, 1);
    if (plen && printed)
        memcpy(sv->printed, printed, plen);
    sv->printed[plen] = 0;
    v->printed = sv->printed;
    snprintf(sv->held, sizeof sv->held, "%s", st && st->held ? st->held : "");
    v->held = sv->held;
    SessionView_holdReason(ui->lang, st ? st->hold_reason : 0, v->held_reason, sizeof v->held_reason);

}

/* The stop pane: the end-of-sequence ids, the stop strings, the budget and where it came from,
 * and why generation stopped. */
static void fill_stop(tl_view *v, tl_session *s, const tl_ui *ui)
{
    const tl_tokenizer *tok = tl_session_tokenizer(s);
    const tl_stop_config *sc = tl_session_stop_config(s);
    v->n_eos = 0;
    v->n_stops = 0;
    if (sc) {
        for (int i = 0; i < sc->n_eos && i < TL_VIEW_MAX_EOS; i++) {
            v->eos_ids[i] = sc->eos_ids[i];
            const char *name = tok ? tl_tokenizer_token(tok, sc->eos_ids[i]) : NULL;
            snprintf(v->eos_names[i], sizeof v->eos_names[i], "%s", name ? name : "?");
            v->n_eos++;
        }
        for (int i = 0; i < sc->n_stop && i < TL_VIEW_MAX_STOPS; i++)
            v->stops[v->n_stops++] = sc->stop[i];
        v->budget = sc->max_new_tokens;
        const char *src;
        switch (sc->budget_source) {
        case TL_BUDGET_REQUEST: src = "your request (m)"; break;
        case TL_BUDGET_GEN_MAX_NEW_TOKENS: src = "generation_config.json max_new_tokens"; break;
        case TL_BUDGET_GEN_MAX_LENGTH: src = "generation_config.json max_length minus the prompt"; break;
        case TL_BUDGET_DEFAULT: src = "transformers' default of 20 (nothing set it)"; break;
        case TL_BUDGET_CONTEXT: src = "cut to the positions left in the context"; break;
        default: src = tl_budget_source_name(sc->budget_source); break;
        }
        snprintf(v->budget_source, sizeof v->budget_source, "%s", I18n_tr(ui->lang, src));
        snprintf(v->eos_source, sizeof v->eos_source, "%s", sc->eos_source ? sc->eos_source : "");
    }
    v->generated = v->n_tokens - v->n_prompt;
    const tl_stop_result *sr = tl_session_stop(s);
    v->stopped = sr && sr->reason != TL_STOP_NONE;
    snprintf(v->stop_reason, sizeof v->stop_reason, "%s", v->stopped ? tl_stop_reason_name(sr->reason) : "");
    tl_lesson_stop_detail(v->stopped ? sr->detail : "", ui->lang, v->stop_detail, sizeof v->stop_detail);

}

/* The timing pane's figures, from the session's metrics. */
static void fill_timing(tl_view *v, tl_session *s, tl_metrics_report mr)
{
    tl_engine *e = tl_session_engine(s);
    v->ttft_ms = mr.ttft_ms;
    v->template_ms = mr.template_ms;
    v->tokenize_ms = mr.tokenize_ms;
    const tl_step *s0 = tl_session_n_steps(s) > 0 ? tl_session_step_at(s, 0) : NULL;
    v->prefill_ms = s0 ? s0->ms : -1;
    v->tpot_ms = mr.tpot_ms;
    v->decode_tps = mr.decode_tokens_per_s;
    v->pace_ms = mr.pace_ms;
    v->paused_gaps = mr.paused_gaps;
    v->work_ms = mr.work_ms;
    v->lesson_tps = mr.lesson_tokens_per_s;
    v->floor_ms = mr.floor_ms;
    v->step_bytes = mr.step_bytes;
    v->bandwidth_gbs = mr.bandwidth_gbs;
    snprintf(v->bandwidth_source, sizeof v->bandwidth_source, "%s",
             strcmp(v->device, "cpu") ? "device figure" : "probed");
    v->floor_lo_ms = mr.floor_lo_ms;
    v->floor_hi_ms = mr.floor_hi_ms;
    v->floor_reads = mr.floor_reads;
    v->below_floor = mr.below_floor;
    v->in_cache = mr.in_cache;
    v->llc_bytes = mr.llc_bytes;
    v->weight_bytes = mr.weight_bytes;
    v->wrong_prompt_tps = mr.prompt_as_output_tokens_per_s;
    v->wrong_unsynced_ms = mr.unsynced_applicable ? mr.unsynced_tpot_ms : -1;
    v->async = e ? tl_engine_async(e) : 0;
}

/* The weights: a row per dtype this session ran, as the session keeps them; and the last batch
 * measurement (lesson 8), a row per batch size. */
static void fill_weights_and_batch(tl_view *v, tl_session *s)
{
    snprintf(v->dtype, sizeof v->dtype, "%s", tl_dtype_name(tl_session_dtype(s)));
    snprintf(v->file_dtype, sizeof v->file_dtype, "%s", tl_dtype_name(tl_session_file_dtype(s)));
    tl_dtype_row dr[TL_DTYPE_COUNT];
    int nd = tl_session_dtype_rows(s, dr, TL_DTYPE_COUNT);
    v->n_dtypes = 0;
    for (int i = 0; i < nd && i < TL_VIEW_MAX_DTYPES; i++) {
        tl_view_dtype *d = &v->dtypes[v->n_dtypes++];
        snprintf(d->name, sizeof d->name, "%s", tl_dtype_name(dr[i].dtype));
        d->weight_bytes = dr[i].weight_bytes;
        d->step_bytes = dr[i].step_bytes;
        d->floor_ms = dr[i].floor_ms;
        d->floor_lo_ms = dr[i].floor_lo_ms;
        d->pace_ms = dr[i].pace_ms;
        d->generated = dr[i].generated;
        d->current = dr[i].dtype == tl_session_dtype(s);
    }
    const char *shape = NULL;
    const tl_batch_report *br = tl_session_batch(s, &shape);
    v->n_batches = 0;
    for (int i = 0; br && i < br->n && i < TL_VIEW_MAX_BATCH; i++) {
        const tl_batch_row *x = &br->rows[i];
        v->batches[v->n_batches++] = (tl_view_batch){x->B, x->tpot_ms, x->B / x->tpot_ms * 1e3, x->bytes_per_token,
                                                     x->over_floor, (double)x->B / br->rows[0].B / x->vs_first};
    }
    v->batch_roof_gflops = br ? br->peak_flops / 1e9 : 0;
    v->batch_crossover = br ? br->crossover : 0;
    snprintf(v->batch_shape, sizeof v->batch_shape, "%s", shape ? shape : "");
}

/* The chart: each decode pass's own (synchronized) time, so pauses between key presses do not
 * show as slow tokens. */
static void fill_chart(tl_sview *sv, tl_session *s, const tl_metrics_report *mr)
{
    tl_view *v = &sv->v;
    int nsteps = tl_session_n_steps(s);
    size_t scap = (size_t)sv->step_cap;
    sv->step_ms = grow(sv->step_ms, &scap, (size_t)nsteps + 1, sizeof(double));
    sv->step_cap = (int)scap;
    int k = 0;
    for (int i = 1; i < nsteps; i++)
        sv->step_ms[k++] = tl_session_step_at(s, i)->ms;
    v->pass_stats = tl_session_pass_stats(s);
    v->step_ms = sv->step_ms;
    v->n_step_ms = k;
    v->pass_mean_ms = mr->pass_mean_ms;   /* the chart's mean, from the same passes */

}

/* What the next key press does. */
static void fill_next(tl_view *v, tl_session *s, const tl_ui *ui)
{
    int nsteps = tl_session_n_steps(s), np = v->n_prompt, ng = v->n_tokens - v->n_prompt;
    if (tl_session_done(s))
        snprintf(v->next, sizeof v->next, I18n_tr(ui->lang, "stopped (%s) \xE2\x80\x94 \xE2\x86\x90 steps back, n starts over"),
                 v->stop_reason[0] ? v->stop_reason : "done");
    else if (nsteps == 0)
        snprintf(v->next, sizeof v->next, I18n_tr(ui->lang, "next: prefill %d tokens"), np);
    else
        snprintf(v->next, sizeof v->next, I18n_tr(ui->lang, "next: decode token %d"), ng + 1);
}

void SessionView_fill(tl_sview *sv, tl_session *s, const tl_ui *ui)
{
    tl_view *v = &sv->v;
    int nsteps = tl_session_n_steps(s);
    const tl_step *st = nsteps > 0 ? tl_session_step_at(s, nsteps - 1) : NULL;
    tl_metrics_report mr = tl_session_metrics(s);
    fill_request(v, s, ui);
    fill_prompt(sv, s);
    fill_tokens(sv, s, ui);
    fill_choice(v, s, ui);
    fill_logits(v, st, tl_session_tokenizer(s));
    fill_stream(sv, s, ui, st);
    fill_stop(v, s, ui);
    fill_timing(v, s, mr);
    fill_weights_and_batch(v, s);
    fill_chart(sv, s, &mr);
    fill_next(v, s, ui);
}

void SessionView_appendPrinted(tl_sview *sv, const char *chunk, size_t len)
{
    size_t cur = sv->printed ? strlen(sv->printed) : 0;
    sv->printed = grow(sv->printed, &sv->printed_cap, cur + len + 1, 1);
    memcpy(sv->printed + cur, chunk, len);
    sv->printed[cur + len] = 0;
    sv->v.printed = sv->printed;
}

void SessionView_free(tl_sview *sv)
{
    free(sv->tokens);
    free(sv->style);
    free(sv->step_ms);
    free(sv->printed);
    memset(sv, 0, sizeof *sv);
}
