/* Timing pane: TTFT, TPOT and decode speed measured as the lesson defines them, the bandwidth
 * floor spelled out, the H100 reference, and a live chart of each decode step against the floor. */
#include <math.h>
#include <string.h>

#include "chart.h"
#include "format.h"
#include "i18n.h"
#include "ui.h"

static void chart(WINDOW *w, tl_rect c, const tl_view *v, const char *lang)
{
    const int axis = 8;
    if (c.h < 3 || c.w < axis + 4)
        return;
    int h = c.h - 1, cw = c.w - axis;   /* bottom row: the axis label */
    int first = Chart_first(v->n_step_ms, cw);
    double ymax = Chart_range(v->step_ms + first, v->n_step_ms - first, v->floor_ms);
    char lab[32];
    Format_msLang(lang, ymax, lab, sizeof lab);
    Draw_text(w, c.y, c.x, axis - 1, lab, Theme_attr(TA_DIM));
    Draw_text(w, c.y + h - 1, c.x, axis - 1, "0 ms", Theme_attr(TA_DIM));
    int frow = v->floor_ms > 0 ? Chart_row(v->floor_ms, ymax, h) : -1;
    for (int y = 0; y < h; y++)
        Draw_text(w, c.y + y, c.x + axis - 1, 1, "\xE2\x94\x82", Theme_attr(TA_DIM));
    int bar_w = v->n_step_ms > 0 && v->n_step_ms * 2 <= cw ? 2 : 1;
    int shown = v->n_step_ms - first;
    if (shown > cw / bar_w)
        first = v->n_step_ms - cw / bar_w, shown = cw / bar_w;
    if (frow >= 0)
        for (int x = 0; x < cw; x++)
            Draw_text(w, c.y + frow, c.x + axis + x, 1, "\xE2\x94\x80", Theme_attr(TA_FLOOR));
    for (int i = 0; i < shown; i++) {
        int e = Chart_eighths(v->step_ms[first + i], ymax, h);
        int x = c.x + axis + i * bar_w;
        for (int row = h - 1, left = e; row >= 0 && left > 0; row--, left -= 8)
            for (int b = 0; b < bar_w; b++)
                Draw_text(w, c.y + row, x + b, 1, Chart_block(left >= 8 ? 8 : left), Theme_attr(TA_BAR));
    }
    char bottom[160];
    if (v->floor_ms > 0)
        snprintf(bottom, sizeof bottom, I18n_tr(lang, "decode steps %d..%d \xE2\x94\x80 floor"), first + 2, first + shown + 1);
    else
        snprintf(bottom, sizeof bottom, I18n_tr(lang, "decode steps %d..%d (floor unknown)"), first + 2, first + shown + 1);
    if (shown == 0)
        snprintf(bottom, sizeof bottom, "%s", I18n_tr(lang, "per-token time appears from the 2nd generated token"));
    Draw_text(w, c.y + h, c.x + axis, cw, bottom, Theme_attr(TA_DIM));
}

/* Draws the first of the texts that fits the width (the last one is clipped). */
static void fit(WINDOW *w, tl_rect in, int *y, int end, attr_t at, const char *wide, const char *narrow)
{
    if (*y >= end)
        return;
    Draw_text(w, (*y)++, in.x, in.w, Format_widthz(wide) <= in.w || !narrow ? wide : narrow, at);
}

/* The pace, and what it includes. One run: the wall-clock TPOT (n-1 gaps over last - first),
 * with the pass beside it and the gap between them named. Stepped by hand: the wall clock holds
 * the teacher's pauses, so the headline is the synchronized pass and the wall clock is shown
 * only as what it is. Then the lesson's own n / (last - first) and why it reads faster. */
static void pace_lines(WINDOW *w, tl_rect in, int *y, int end, const tl_view *v, const char *lang)
{
    char wide[512], narrow[256], a[32], b[32], c[32], t1[32], t2[32];
    attr_t head = Theme_attr(TA_HEADER);
    if (v->n_step_ms < 1 || v->pace_ms < 0) {
        snprintf(wide, sizeof wide, "%s", I18n_tr(lang, "TPOT \xE2\x80\x94 (needs 2 generated tokens: the first comes from the prefill)"));
        snprintf(narrow, sizeof narrow, "%s", I18n_tr(lang, "TPOT \xE2\x80\x94 (needs 2 generated tokens)"));
        fit(w, in, y, end, head, wide, narrow);
        return;
    }
    int gaps = v->n_step_ms;
    Format_msLang(lang, v->pass_mean_ms, b, sizeof b);
    Format_num(lang, v->decode_tps, 1, t1, sizeof t1);
    Format_num(lang, v->lesson_tps, 1, t2, sizeof t2);
    if (!v->paused_gaps) {
        Format_msLang(lang, v->tpot_ms, a, sizeof a);
        if (gaps == 1)   /* "1 gap", not "1 gaps" */
            snprintf(wide, sizeof wide, I18n_tr(lang, "TPOT %s \xC2\xB7 %s tok/s (one run: clock first\xE2\x86\x92last \xC3\xB7 1 gap)"), a, t1);
        else
            snprintf(wide, sizeof wide, I18n_tr(lang, "TPOT %s \xC2\xB7 %s tok/s (one run: clock first\xE2\x86\x92last \xC3\xB7 %d gaps)"), a,
                     t1, gaps);
        snprintf(narrow, sizeof narrow, I18n_tr(lang, "TPOT %s \xC2\xB7 %s tok/s (one run)"), a, t1);
        fit(w, in, y, end, head, wide, narrow);
        Format_msLang(lang, v->tpot_ms - v->pass_mean_ms, c, sizeof c);
        if (v->pass_stats) {   /* the lm_head's kernel ranked the scores and summed the softmax */
            snprintf(wide, sizeof wide,
                     I18n_tr(lang, "decode pass %s (synchronized, with the sampler's top 64 and softmax sums) = the chart; the other %s per token is the choice, streaming, drawing"),
                     b, c);
            snprintf(narrow, sizeof narrow, I18n_tr(lang, "pass %s (+top 64, sums) = the chart; +%s choice, stream, draw"), b, c);
        } else {
            snprintf(wide, sizeof wide, I18n_tr(lang, "decode pass %s (synchronized) = the chart; the other %s per token is sampling, streaming, drawing"),
                     b, c);
            snprintf(narrow, sizeof narrow, I18n_tr(lang, "pass %s = the chart; +%s sampling, streaming, drawing"), b, c);
        }
        fit(w, in, y, end, A_NORMAL, wide, narrow);
    } else {
        snprintf(wide, sizeof wide, I18n_tr(lang, "pace %s per token = the synchronized pass (stepped by hand)"), b);
        snprintf(narrow, sizeof narrow, I18n_tr(lang, "pace %s = the pass (stepped by hand)"), b);
        fit(w, in, y, end, head, wide, narrow);
        Format_msLang(lang, v->tpot_ms, a, sizeof a);
        Format_msLang(lang, v->work_ms, c, sizeof c);
        snprintf(wide, sizeof wide, I18n_tr(lang, "wall clock %s/token includes your pauses; without them %s (pass + sampling)"), a, c);
        snprintf(narrow, sizeof narrow, I18n_tr(lang, "wall clock %s/token includes your pauses; r runs without"), a);
        fit(w, in, y, end, Theme_attr(TA_DIM), wide, narrow);
    }
    if (v->lesson_tps > 0 && v->decode_tps > 0) {
        int n = v->n_step_ms + 1;
        if (n == 2) {   /* one gap */
            snprintf(wide, sizeof wide,
                     I18n_tr(lang, "with the first: %d tokens \xC3\xB7 time since the first = %s tok/s; decode speed: 1 gap = %s tok/s (the first token is the prefill's)%s"),
                     n, t2, t1, v->paused_gaps ? I18n_tr(lang, "; both hold your pauses") : "");
            snprintf(narrow, sizeof narrow, I18n_tr(lang, "with the first: %d tokens %s tok/s; decode: 1 gap %s tok/s"), n, t2, t1);
        } else {
            snprintf(wide, sizeof wide,
                     I18n_tr(lang, "with the first: %d tokens \xC3\xB7 time since the first = %s tok/s; decode speed: %d gaps = %s tok/s (the first token is the prefill's)%s"),
                     n, t2, n - 1, t1, v->paused_gaps ? I18n_tr(lang, "; both hold your pauses") : "");
            snprintf(narrow, sizeof narrow, I18n_tr(lang, "with the first: %d tokens %s tok/s; decode: %d gaps %s tok/s"), n, t2, n - 1, t1);
        }
        fit(w, in, y, end, Theme_attr(TA_DIM), wide, narrow);
    }
}

/* A figure of the dtype table: "—" when that dtype has not measured it. */
static void cell_bytes(const char *lang, double b, char *out, size_t n)
{
    if (b < 0)
        snprintf(out, n, "\xE2\x80\x94");
    else
        Format_bytesLang(lang, b, out, n);
}

/* One row per dtype this session ran (key d): the bytes a decode step reads, the floor they
 * set and the pace measured on them, side by side, so the class sees how far pace follows
 * bytes on this machine. Shown once a second dtype has run: with one row it would only repeat
 * the floor line above. */
static void dtype_table(WINDOW *w, tl_rect in, int *y, int end, const tl_view *v, const char *lang)
{
    if (v->n_dtypes < 2 || *y >= end)
        return;
    /* columns: marker, dtype, weights, per step, floor, pace, pace / floor */
    static const int col[] = {0, 2, 9, 20, 31, 41, 51};
    static const char *const head[] = {"dtype", "weights", "per step", "floor", "pace", "\xC3\xB7 floor"};
    attr_t hd = Theme_attr(TA_HEADER);
    for (int c = 0; c < 6 && col[c + 1] < in.w; c++) {
        int x = col[c + 1], wd = (c + 2 < 7 ? col[c + 2] : in.w) - x - 1;
        Draw_text(w, *y, in.x + x, wd < in.w - x ? wd : in.w - x, I18n_tr(lang, head[c]), hd);
    }
    (*y)++;
    for (int i = 0; i < v->n_dtypes && *y < end; i++, (*y)++) {
        const tl_view_dtype *d = &v->dtypes[i];
        char cell[6][32];
        snprintf(cell[0], sizeof cell[0], "%s", d->name);
        cell_bytes(lang, d->weight_bytes, cell[1], sizeof cell[1]);
        cell_bytes(lang, d->step_bytes, cell[2], sizeof cell[2]);
        Format_msLang(lang, d->floor_ms, cell[3], sizeof cell[3]);
        Format_msLang(lang, d->pace_ms, cell[4], sizeof cell[4]);
        int below = d->floor_lo_ms > 0 && d->pace_ms > 0 && d->pace_ms < d->floor_lo_ms;   /* no ratio */
        if (d->pace_ms > 0 && d->floor_ms > 0 && !below) {
            Format_num(lang, d->pace_ms / d->floor_ms, 1, cell[5], sizeof cell[5]);
            strncat(cell[5], "\xC3\x97", sizeof cell[5] - strlen(cell[5]) - 1);
        } else
            snprintf(cell[5], sizeof cell[5], "\xE2\x80\x94");
        attr_t at = d->current ? Theme_attr(TA_CHOSEN) : A_NORMAL;
        if (d->current)
            Draw_text(w, *y, in.x, 2, "\xE2\x96\xB6", at);
        for (int c = 0; c < 6 && col[c + 1] < in.w; c++)
            Draw_text(w, *y, in.x + col[c + 1], in.w - col[c + 1], cell[c], at);
    }
    fit(w, in, y, end, Theme_attr(TA_DIM),
        I18n_tr(lang, "per step: weights + the KV cache one decode step reads; floor: \xC3\xB7 the bandwidth; pace: without your pauses; d: next dtype"),
        I18n_tr(lang, "per step: weights + KV cache \xC2\xB7 pace: no pauses \xC2\xB7 d: next dtype"));
}

/* The last batch measurement (lesson 8): one row per batch size, B sequences decoding together
 * with each weight read once a step: each stream's pace, the tokens/s of all of them, the bytes
 * read per token and the pace over the floor read beside the steps. */
static void batch_table(WINDOW *w, tl_rect in, int *y, int end, const tl_view *v, const char *lang)
{
    if (v->n_batches < 1 || *y >= end)
        return;
    static const int col[] = {0, 2, 9, 20, 32, 44};
    static const char *const head[] = {"B", "TPOT", "tokens/s", "per token", "\xC3\xB7 floor"};   /* B, TPOT: as the lesson says */
    attr_t hd = Theme_attr(TA_HEADER);
    for (int c = 0; c < 5 && col[c + 1] < in.w; c++) {
        int x = col[c + 1], wd = (c + 2 < 6 ? col[c + 2] : in.w) - x - 1;
        Draw_text(w, *y, in.x + x, wd < in.w - x ? wd : in.w - x, c < 2 ? head[c] : I18n_tr(lang, head[c]), hd);
    }
    (*y)++;
    for (int i = 0; i < v->n_batches && *y < end; i++, (*y)++) {
        const tl_view_batch *b = &v->batches[i];
        char cell[5][32];
        snprintf(cell[0], sizeof cell[0], "%d", b->B);
        Format_msLang(lang, b->tpot_ms, cell[1], sizeof cell[1]);
        Format_num(lang, b->tokens_per_s, 1, cell[2], sizeof cell[2]);
        Format_bytesLang(lang, b->bytes_per_token, cell[3], sizeof cell[3]);
        Format_num(lang, b->over_floor, 2, cell[4], sizeof cell[4]);
        strncat(cell[4], "\xC3\x97", sizeof cell[4] - strlen(cell[4]) - 1);
        for (int c = 0; c < 5 && col[c + 1] < in.w; c++)
            Draw_text(w, *y, in.x + col[c + 1], in.w - col[c + 1], cell[c], A_NORMAL);
    }
    char wide[256], narrow[160], roof[32], cross[32];
    Format_num(lang, v->batch_roof_gflops, 0, roof, sizeof roof);
    Format_num(lang, v->batch_crossover, 1, cross, sizeof cross);
    snprintf(wide, sizeof wide, I18n_tr(lang, "%s: each weight read once a step for B tokens; arithmetic %s GFLOP/s, the crossover near B = %s"),
             v->batch_shape, roof, cross);
    snprintf(narrow, sizeof narrow, I18n_tr(lang, "%s: weights read once a step for B tokens; crossover B = %s"),
             v->batch_shape, cross);
    fit(w, in, y, end, Theme_attr(TA_DIM), wide, narrow);
}

void Pane_timing(WINDOW *w, tl_rect r, const tl_view *v, tl_ui *ui)
{
    const char *lang = ui->lang;
    Draw_box(w, r, I18n_tr(lang, "6 Timing"), ui->active == PANE_TIMING);
    tl_rect in = Draw_inner(r);
    if (in.h < 1 || in.w < 10)
        return;
    int y = in.y, end = in.y + in.h;
    char line[512], a[32], b[32], c[32], d[32];
    Format_msLang(lang, v->ttft_ms, a, sizeof a);
    Format_msLang(lang, v->prefill_ms, b, sizeof b);
    Format_msLang(lang, v->template_ms, c, sizeof c);
    Format_msLang(lang, v->tokenize_ms, d, sizeof d);
    /* TTFT and what it is made of: template + tokenize + the prefill pass (+ choosing) */
    snprintf(line, sizeof line, I18n_tr(lang, "TTFT %s: template %s, tokenize %s, prefill of %d tokens %s"), a, c, d,
             v->n_prompt, b);
    if (Format_widthz(line) > in.w) {
        snprintf(line, sizeof line, I18n_tr(lang, "TTFT %s  (request start \xE2\x86\x92 first token id)"), a);
        Draw_text(w, y++, in.x, in.w, line, Theme_attr(TA_HEADER));
        if (y >= end)
            return;
        snprintf(line, sizeof line, I18n_tr(lang, "  of which template %s, tokenize %s, prefill (%d tokens) %s"), c, d, v->n_prompt, b);
        Draw_text(w, y++, in.x, in.w, line, A_NORMAL);
    } else
        Draw_text(w, y++, in.x, in.w, line, Theme_attr(TA_HEADER));
    if (y >= end)
        return;
    pace_lines(w, in, &y, end, v, ui->lang);
    if (y >= end)
        return;
    if (v->floor_ms > 0 && v->floor_reads > 0) {   /* reads of these weights beside the steps */
        char e[32];
        Format_bytesLang(lang, v->step_bytes, a, sizeof a);
        Format_bytesLang(lang, v->bandwidth_gbs * 1e9, b, sizeof b);
        Format_msLang(lang, v->floor_ms, c, sizeof c);
        Format_msLang(lang, v->floor_lo_ms, d, sizeof d);
        Format_msLang(lang, v->floor_hi_ms, e, sizeof e);
        if (v->floor_reads == 1)
            snprintf(line, sizeof line, I18n_tr(lang, "floor %s \xC3\xB7 %s/s = %s per token (1 read of the weights beside the steps)"),
                     a, b, c);
        else
            snprintf(line, sizeof line, I18n_tr(lang, "floor %s \xC3\xB7 %s/s = %s per token (%s\xE2\x80\x93%s, %d reads of the weights beside the steps)"),
                     a, b, c, d, e, v->floor_reads);
    } else if (v->floor_ms > 0) {
        Format_bytesLang(lang, v->step_bytes, a, sizeof a);
        Format_bytesLang(lang, v->bandwidth_gbs * 1e9, b, sizeof b);
        Format_msLang(lang, v->floor_ms, c, sizeof c);
        char dev[64];
        Format_device(v->device, v->kernels, 1, dev, sizeof dev);
        snprintf(line, sizeof line, I18n_tr(lang, "floor %s \xC3\xB7 %s/s = %s per token (%s, %s)"), a, b, c, dev,
                 I18n_tr(lang, v->bandwidth_source));
    } else
        snprintf(line, sizeof line, I18n_tr(lang, "floor: bandwidth unknown on %s"), v->device);
    Draw_wrapped(w, in, &y, end, Theme_attr(TA_FLOOR), line);
    if (y >= end)
        return;
    if (v->below_floor) {   /* a step cannot beat a plain read of its own bytes: say so, no ratio */
        Format_msLang(lang, v->pace_ms, a, sizeof a);
        Format_msLang(lang, v->floor_lo_ms, b, sizeof b);
        snprintf(line, sizeof line, I18n_tr(lang, "pace %s under the fastest read %s: a measurement problem, not a pace"), a, b);
        Draw_wrapped(w, in, &y, end, Theme_attr(TA_WARN), line);
        if (y >= end)
            return;
    }
    if (v->random_weights) {   /* a published shape with random weights (--synthetic) */
        Draw_wrapped(w, in, &y, end, Theme_attr(TA_WARN),
                I18n_tr(lang, "random weights of a published shape: the tokens are noise, the timing is real"));
        if (y >= end)
            return;
    }
    if (v->in_cache) {   /* the weights stay in the last-level cache: no DRAM floor binds them */
        Format_bytesLang(lang, v->weight_bytes, a, sizeof a);
        Format_bytesLang(lang, v->llc_bytes, b, sizeof b);
        snprintf(line, sizeof line,
                 I18n_tr(lang, v->in_cache == 2 ? "weights %s fit the %s last-level cache: the DRAM floor does not bind them; the floor is a read from cache"
                                                : "weights %s \xE2\x89\x88 the %s last-level cache: steps read part of them from cache, so the DRAM floor does not bind them"),
                 a, b);
        Draw_wrapped(w, in, &y, end, Theme_attr(TA_WARN), line);
        if (y >= end)
            return;
    }
    Draw_wrapped(w, in, &y, end, Theme_attr(TA_DIM),
            I18n_tr(lang, "ref   16 GB \xC3\xB7 3.35 TB/s \xE2\x89\x88 4.8 ms: Llama 3.1 8B bf16, H100 (class material)"));
    if (v->show_wrong && y < end) {
        char t[32], right[48];
        Format_num(lang, v->decode_tps, 1, t, sizeof t);
        snprintf(right, sizeof right, "%s tok/s", t);
        Format_num(lang, v->wrong_prompt_tps, 1, t, sizeof t);
        if (v->wrong_prompt_tps > 0)
            snprintf(line, sizeof line, I18n_tr(lang, "WRONG 1: prompt counted as output: %s tok/s (right: %s)"),
                     t, v->decode_tps > 0 ? right : I18n_tr(lang, "needs 2 tokens"));
        else
            snprintf(line, sizeof line, "%s", I18n_tr(lang, "WRONG 1: prompt counted as output: (no tokens yet)"));
        Draw_wrapped(w, in, &y, end, Theme_attr(TA_WARN), line);
        if (y < end) {
            if (v->wrong_unsynced_ms >= 0) {
                Format_msLang(lang, v->wrong_unsynced_ms, a, sizeof a);
                snprintf(line, sizeof line, I18n_tr(lang, "WRONG 2: unsynchronized clock: TPOT %s (median pass)"), a);
            } else
                snprintf(line, sizeof line,
                         v->async ? I18n_tr(ui->lang, "WRONG 2: unsynchronized clock: once every pass of an answer was queued (n starts over)")
                                  : I18n_tr(ui->lang, "WRONG 2: unsynchronized clock: none on %s (synchronous; u queues the passes like a GPU)"),
                         v->device);
            Draw_wrapped(w, in, &y, end, Theme_attr(TA_WARN), line);
        }
    }
    dtype_table(w, in, &y, end, v, lang);
    batch_table(w, in, &y, end, v, lang);
    tl_rect ch = {y, in.x, end - y, in.w};
    chart(w, ch, v, ui->lang);
}
