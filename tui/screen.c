/* One frame: title, tab bar or grid, status line ("next: ..."), footer, overlays. */
#include <string.h>

#include "format.h"
#include "i18n.h"
#include "keys.h"
#include "ui.h"

#define T(s) I18n_tr(ui->lang, s)

typedef void (*pane_fn)(WINDOW *, tl_rect, const tl_view *, tl_ui *);
static const pane_fn panes[PANE_COUNT] = {Pane_prompt, Pane_tokens, Pane_logits,
                                          Pane_stream, Pane_stop,   Pane_timing};

/* The tab bar's summary; a stop with its detail when that fits cols (the detail has brackets
 * of its own: "eos id 128009 <|eot_id|> (from generation_config.json)"), else without: the Stop
 * pane has it whole. */
static void summary_lang(const char *lang, const tl_view *v, int cols, char *out, size_t n)
{
    char a[32], b[32];
    Format_msLang(lang, v->ttft_ms, a, sizeof a);
    Format_msLang(lang, v->tpot_ms, b, sizeof b);
    size_t o = (size_t)snprintf(out, n, I18n_tr(lang, "TTFT %s \xC2\xB7 TPOT %s \xC2\xB7 prompt %d \xC2\xB7 generated %d/%d \xC2\xB7 "),
                                a, b, v->n_prompt, v->generated, v->budget);
    if (o >= n)
        return;
    if (v->stopped) {
        snprintf(out + o, n - o, I18n_tr(lang, "stop: %s \xE2\x80\x94 %s"), v->stop_reason, v->stop_detail);
        if (Format_widthz(out) > cols)
            snprintf(out + o, n - o, I18n_tr(lang, "stop: %s"), v->stop_reason);
    }
    else if (v->running)
        snprintf(out + o, n - o, "%s", I18n_tr(lang, "running"));
    else
        snprintf(out + o, n - o, "%s", I18n_tr(lang, "not stopped"));
}

void Screen_summary(const tl_view *v, char *out, size_t n)
{
    summary_lang("en", v, 1 << 20, out, n);
}

/* The footer: "key word" for each row of the key table that has one, left to right; a row that
 * does not fit is left out, and the pinned ones ("? help", "q quit") always show. */
static void footer(WINDOW *w, tl_rect r, const tl_ui *ui)
{
    int x = r.x, end = r.x + r.w;
    int tail = 0;   /* the room the pinned ones need */
    for (int i = 0; i < Keys_count; i++)
        if (Keys_rows[i].foot.key && Keys_rows[i].foot.pin)
            tail += Format_widthz(Keys_rows[i].foot.key) + Format_widthz(Keys_footWord(&Keys_rows[i], ui->lang)) + 2;
    for (int i = 0; i < Keys_count && x < end; i++) {
        const tl_key *k = &Keys_rows[i];
        if (!k->foot.key)
            continue;
        const char *what = Keys_footWord(k, ui->lang);
        int need = Format_widthz(k->foot.key) + Format_widthz(what) + 2;
        if (!k->foot.pin && x + need + tail > end)
            continue;
        x += Draw_text(w, r.y, x, end - x, k->foot.key, Theme_attr(TA_KEY));
        x += Draw_text(w, r.y, x, end - x, " ", A_NORMAL);
        x += Draw_text(w, r.y, x, end - x, what, A_NORMAL);
        x += Draw_text(w, r.y, x, end - x, " ", A_NORMAL);
    }
}

/* The key list (?): a line for each row of the key table that has one. */
static void help(WINDOW *w, int cols, int rows, const tl_ui *ui)
{
    char line[256];
    /* every key must show at 80x24: the box may take the whole height, and how to close it
     * goes on its bottom border */
    int n = 0, widest = 0;
    for (int i = 0; i < Keys_count; i++) {   /* as wide as the longest line in this language, if it fits */
        if (!Keys_rows[i].help.keys)
            continue;
        Keys_helpLine(&Keys_rows[i], ui->lang, line, sizeof line);
        if (Format_widthz(line) > widest)
            widest = Format_widthz(line);
        n++;
    }
    int bw = widest + 4 < cols - 2 ? widest + 4 : cols - 2, bh = n + 2 < rows ? n + 2 : rows;
    tl_rect r = {(rows - bh) / 2, (cols - bw) / 2, bh, bw};
    for (int y = 0; y < bh; y++)
        Draw_fill(w, r.y + y, r.x, bw, A_NORMAL);
    Draw_box(w, r, T("keys"), 1);
    char close[128];
    snprintf(close, sizeof close, " %s ", T("any key closes this help"));
    int cw = Format_widthz(close);
    Draw_text(w, r.y + bh - 1, r.x + bw - 2 - cw, cw, close, Theme_attr(TA_BORDER_FOCUS));
    for (int i = 0, y = 0; i < Keys_count && y < bh - 2; i++) {
        if (!Keys_rows[i].help.keys)
            continue;
        Keys_helpLine(&Keys_rows[i], ui->lang, line, sizeof line);
        Draw_text(w, r.y + 1 + y++, r.x + 2, bw - 4, line, A_NORMAL);
    }
}

/* A text in a box over the panes, wrapped, as tall as it needs up to the screen (then an
 * ellipsis says more is there). */
static void text_box(WINDOW *w, int cols, int rows, const char *title, const char *t)
{
    int bw = cols - 4 > 100 ? 100 : cols - 2, inner = bw - 4;
    if (inner < 10 || rows < 6)
        return;
    /* count the wrapped lines first: the box fits the code, up to the screen */
    int n = 0;
    for (size_t i = 0, len = strlen(t); i < len;) {
        size_t k = Format_wrap(t + i, len - i, inner, NULL);
        i += k + (i + k < len && t[i + k] == '\n');
        n++;
    }
    int bh = n + 4 < rows - 2 ? n + 4 : rows - 2;
    tl_rect r = {(rows - bh) / 2, (cols - bw) / 2, bh, bw};
    for (int y = 0; y < bh; y++)
        Draw_fill(w, r.y + y, r.x, bw, A_NORMAL);
    Draw_box(w, r, title, 1);
    int y = r.y + 1;
    for (size_t i = 0, len = strlen(t); i < len && y < r.y + bh - 2; y++) {
        size_t k = Format_wrap(t + i, len - i, inner, NULL);
        Draw_textn(w, y, r.x + 2, inner, t + i, k, A_NORMAL);
        i += k + (i + k < len && t[i + k] == '\n');
    }
    if (n > bh - 3)
        Draw_text(w, r.y + bh - 2, r.x + 2, inner, "\xE2\x80\xA6", Theme_attr(TA_DIM));
}

/* v->hf_call: the transformers code that would generate with the settings on screen, so the
 * class can take what they tried here to a notebook. */
static void hf_call(WINDOW *w, int cols, int rows, const tl_view *v, const tl_ui *ui)
{
    text_box(w, cols, rows, T("the same in transformers (any key closes)"),
             v->hf_call[0] ? v->hf_call : T("(no transformers call for these settings)"));
}

void Screen_draw(WINDOW *w, int cols, int rows, const tl_view *v, tl_ui *ui)
{
    werase(w);
    tl_layout L;
    Layout_computeLesson(cols, rows, ui->active, v->logit_rows + 3, ui->lesson_open, ui->lesson_highlight, &L);
    if (L.too_small) {
        Draw_text(w, 0, 0, cols, T("terminal too small"), A_BOLD);
        char m[64];
        snprintf(m, sizeof m, T("need %dx%d"), TL_LAYOUT_MIN_COLS, TL_LAYOUT_MIN_ROWS);
        if (rows > 1)
            Draw_text(w, 1, 0, cols, m, A_NORMAL);
        if (rows > 2)
            Draw_text(w, 2, 0, cols, T("q quits"), A_NORMAL);
        return;
    }
    /* title */
    char t[400], s[96], tv[16], pv[16];
    if (v->greedy)
        snprintf(s, sizeof s, "%s", T("greedy"));
    else {
        Format_num(ui->lang, v->temperature, 2, tv, sizeof tv);
        Format_num(ui->lang, v->top_p, 2, pv, sizeof pv);
        snprintf(s, sizeof s, "T %s \xC2\xB7 top-k %d \xC2\xB7 top-p %s", tv, v->top_k, pv);
    }
    /* converted weights are named: every figure on screen is about them, not the file's */
    char dt[64] = "", pr[64] = "";
    if (v->dtype[0] && strcmp(v->dtype, v->file_dtype))
        snprintf(dt, sizeof dt, T(" \xC2\xB7 %s weights"), v->dtype);
    /* the CPU's precision too, last (the lessons' settings come first on a narrow terminal):
     * the scores depend on it; a device keeps its own */
    if (v->precision[0] && strcmp(v->precision, "device"))
        snprintf(pr, sizeof pr, T(" \xC2\xB7 precision %s"), v->precision);
    /* on a narrow terminal the precision goes first, then the kernel set, then the streamer and
     * mono (the Stream pane's title names the streamer), then the program's name, so the settings
     * stay whole; what still does not fit ends with an ellipsis */
    const char *stream = v->stream_server ? T("server stream") : T("hf stream"), *mono = ui->mono ? T(" \xC2\xB7 mono") : "";
    for (int drop = 0; drop < 5; drop++) {
        char dev[64];
        Format_device(v->device, v->kernels, drop < 2, dev, sizeof dev);
        snprintf(t, sizeof t, "%s %s \xC2\xB7 %s%s \xC2\xB7 %s%s%s%s%s", drop < 4 ? " tokenloop \xC2\xB7" : "", v->model_name,
                 dev, dt, s, drop < 3 ? " \xC2\xB7 " : "", drop < 3 ? stream : "", drop < 3 ? mono : "", drop < 1 ? pr : "");
        if (Format_widthz(t) <= cols)
            break;
    }
    Draw_fill(w, 0, 0, cols, Theme_attr(TA_TITLE));
    char fit[sizeof t];
    Format_fit(t, strlen(t), cols, 1, fit, sizeof fit);
    Draw_text(w, 0, 0, cols, fit, Theme_attr(TA_TITLE));
    if (L.tabbed) {
        int x = 0;
        for (int i = 0; i < PANE_COUNT && x < cols; i++) {
            char tab[64];
            snprintf(tab, sizeof tab, " %d %s ", i + 1, T(Layout_paneName(i)));
            attr_t a = i == ui->active ? Theme_attr(TA_SELECTED) : Theme_attr(TA_DIM);
            if (ui->lesson_open && i == ui->lesson_highlight && i != ui->active)
                a = Theme_attr(TA_KEY);   /* the tab the lesson talks about */
            x += Draw_text(w, L.tabbar.y, x, cols - x, tab, a);
        }
        char sum[400];
        summary_lang(ui->lang, v, cols, sum, sizeof sum);
        Draw_text(w, L.summary.y, 0, cols, sum, v->stopped ? Theme_attr(TA_CHOSEN) : A_NORMAL);
    }
    for (int i = 0; i < PANE_COUNT; i++)
        if (L.pane[i].h > 0 && i != PANE_PROMPT)
            panes[i](w, L.pane[i], v, ui);
    /* status line: what the next key press does */
    int sx = 0;
    if (ui->edit == EDIT_MAXNEW || ui->edit == EDIT_STOP) {
        const char *label = ui->edit_label[0] ? ui->edit_label
                            : ui->edit == EDIT_MAXNEW ? T("max_new_tokens (0: the model's budget): ")
                                                      : T("stop string to add or remove (\\n for newline): ");
        sx += Draw_text(w, L.status.y, 0, cols, label, Theme_attr(TA_KEY));
        size_t from, to;
        int col;
        LineEdit_view(&ui->le, cols - sx, &from, &to, &col);
        Draw_textn(w, L.status.y, sx, cols - sx, ui->le.buf + from, to - from, A_NORMAL);
        wmove(w, L.status.y, sx + col);
    } else {
        sx += Draw_text(w, L.status.y, 0, cols, v->next, Theme_attr(TA_STATUS));
        if (v->message[0] && sx + 4 < cols) {
            int room = cols - sx - 3, used = 0;
            size_t len = strlen(v->message);
            if (Format_widthz(v->message) <= room) {
                Draw_text(w, L.status.y, sx + 3, room, v->message, Theme_attr(TA_WARN));
            } else {   /* cut: an ellipsis says so */
                size_t k = Format_prefixFitting(v->message, len, room - 1, &used);
                Draw_textn(w, L.status.y, sx + 3, room - 1, v->message, k, Theme_attr(TA_WARN));
                Draw_text(w, L.status.y, sx + 3 + used, 1, "\xE2\x80\xA6", Theme_attr(TA_WARN));
            }
        }
    }
    footer(w, L.footer, ui);
    if (L.lesson.h > 0)
        LessonPanel_draw(w, L.lesson, ui);
    /* the prompt pane after the rest: it may leave the cursor in its editor (no overlay is up
     * while editing, so those may come after it) */
    if (L.pane[PANE_PROMPT].h > 0)
        Pane_prompt(w, L.pane[PANE_PROMPT], v, ui);
    if (ui->hf_call)
        hf_call(w, cols, rows, v, ui);
    if (ui->lesson_full && ui->lesson_open && ui->lesson_text)   /* z: the whole step at once */
        text_box(w, cols, rows, T("the lesson (any key closes)"), ui->lesson_text);
    if (ui->help)
        help(w, cols, rows, ui);
}
