/* One frame: title, tab bar or grid, status line ("next: ..."), footer, overlays. */
#include <string.h>

#include "format.h"
#include "ui.h"

typedef void (*pane_fn)(WINDOW *, tl_rect, const tl_view *, tl_ui *);
static const pane_fn panes[PANE_COUNT] = {Pane_prompt, Pane_tokens, Pane_logits,
                                          Pane_stream, Pane_stop,   Pane_timing};

void Screen_summary(const tl_view *v, char *out, size_t n)
{
    char a[32], b[32];
    Format_ms(v->ttft_ms, a, sizeof a);
    /* stepped by hand, the wall-clock TPOT holds the pauses: the summary shows the pass */
    Format_ms(v->paused_gaps ? v->pace_ms : v->tpot_ms, b, sizeof b);
    size_t o = (size_t)snprintf(out, n, "TTFT %s \xC2\xB7 %s %s \xC2\xB7 prompt %d \xC2\xB7 generated %d/%d \xC2\xB7 ",
                                a, v->paused_gaps ? "pass" : "TPOT", b, v->n_prompt, v->generated, v->budget);
    if (o >= n)
        return;
    if (v->stopped)
        snprintf(out + o, n - o, "stop: %s (%s)", v->stop_reason, v->stop_detail);
    else if (v->running)
        snprintf(out + o, n - o, "running");
    else
        snprintf(out + o, n - o, "not stopped");
}

static void footer(WINDOW *w, tl_rect r)
{
    static const char *keys[][2] = {
        {"Space", "step"}, {"r", "run"}, {"\xE2\x86\x90", "back"}, {"Enter", "force"}, {"g", "greedy"},
        {"t/T", "temp"},   {"k/K", "top-k"}, {"p/P", "top-p"}, {"e", "edit"}, {"Tab", "pane"},
        {"?", "help"},     {"q", "quit"},
    };
    int x = r.x, end = r.x + r.w;
    /* "? help" and "q quit" must always show: reserve room for them */
    for (unsigned i = 0; i < sizeof keys / sizeof keys[0] && x < end; i++) {
        int need = Format_widthz(keys[i][0]) + Format_widthz(keys[i][1]) + 2;
        int tail = i < 10 ? 15 : 0;
        if (x + need + tail > end && i < 10)
            continue;
        x += Draw_text(w, r.y, x, end - x, keys[i][0], Theme_attr(TA_KEY));
        x += Draw_text(w, r.y, x, end - x, " ", A_NORMAL);
        x += Draw_text(w, r.y, x, end - x, keys[i][1], A_NORMAL);
        x += Draw_text(w, r.y, x, end - x, " ", A_NORMAL);
    }
}

static void help(WINDOW *w, int cols, int rows)
{
    static const char *lines[] = {
        "Space / \xE2\x86\x92   one forward pass (the first is the prefill)",
        "r           run to the stop (background thread); any key pauses",
        "\xE2\x86\x90 / Bksp    step back one token (rewinds the KV cache)",
        "Enter       force the selected logits row instead (branch)",
        "\xE2\x86\x91 \xE2\x86\x93         select a logits row / a token / scroll",
        "g           greedy \xE2\x86\x94 sampled",
        "t / T       temperature down / up",
        "k / K       top-k down / up (0 = off)",
        "p / P       top-p down / up (1 = off)",
        "[ / ]       fewer / more logits rows",
        "m           max_new_tokens (0 = the model's budget)",
        "s           add a stop string (an existing one is removed)",
        "a           add_generation_prompt on / off",
        "e / S       edit the user message / the system prompt",
        "h           streamer: hf TextStreamer \xE2\x86\x94 server mode",
        "w           show the two wrong timing readings",
        "n           new conversation (same prompt, from the start)",
        "Tab / 1-6   focus a pane (a tab on small terminals)",
        "l           lessons",
        "q           quit (cancels a run first)",
        "",
        "any key closes this help",
    };
    int n = (int)(sizeof lines / sizeof lines[0]);
    int bw = 70 < cols - 2 ? 70 : cols - 2, bh = n + 2 < rows - 2 ? n + 2 : rows - 2;
    tl_rect r = {(rows - bh) / 2, (cols - bw) / 2, bh, bw};
    for (int y = 0; y < bh; y++)
        Draw_fill(w, r.y + y, r.x, bw, A_NORMAL);
    Draw_box(w, r, "keys", 1);
    for (int i = 0; i < n && i < bh - 2; i++)
        Draw_text(w, r.y + 1 + i, r.x + 2, bw - 4, lines[i], A_NORMAL);
}

void Screen_draw(WINDOW *w, int cols, int rows, const tl_view *v, tl_ui *ui)
{
    werase(w);
    tl_layout L;
    Layout_compute(cols, rows, ui->active, v->logit_rows + 3, &L);
    if (L.too_small) {
        Draw_text(w, 0, 0, cols, "terminal too small", A_BOLD);
        char m[64];
        snprintf(m, sizeof m, "need %dx%d", TL_LAYOUT_MIN_COLS, TL_LAYOUT_MIN_ROWS);
        if (rows > 1)
            Draw_text(w, 1, 0, cols, m, A_NORMAL);
        if (rows > 2)
            Draw_text(w, 2, 0, cols, "q quits", A_NORMAL);
        return;
    }
    /* title */
    char t[400], s[64];
    if (v->greedy)
        snprintf(s, sizeof s, "greedy");
    else
        snprintf(s, sizeof s, "T %.2f \xC2\xB7 top-k %d \xC2\xB7 top-p %.2f", v->temperature, v->top_k, v->top_p);
    snprintf(t, sizeof t, " tokenloop \xC2\xB7 %s \xC2\xB7 %s \xC2\xB7 %s \xC2\xB7 %s%s", v->model_name, v->device, s,
             v->stream_server ? "server stream" : "hf stream", ui->mono ? " \xC2\xB7 mono" : "");
    Draw_fill(w, 0, 0, cols, Theme_attr(TA_TITLE));
    Draw_text(w, 0, 0, cols, t, Theme_attr(TA_TITLE));
    if (L.tabbed) {
        int x = 0;
        for (int i = 0; i < PANE_COUNT && x < cols; i++) {
            char tab[32];
            snprintf(tab, sizeof tab, " %d %s ", i + 1, Layout_paneName(i));
            x += Draw_text(w, L.tabbar.y, x, cols - x, tab, i == ui->active ? Theme_attr(TA_SELECTED) : Theme_attr(TA_DIM));
        }
        char sum[400];
        Screen_summary(v, sum, sizeof sum);
        Draw_text(w, L.summary.y, 0, cols, sum, v->stopped ? Theme_attr(TA_CHOSEN) : A_NORMAL);
    }
    for (int i = 0; i < PANE_COUNT; i++)
        if (L.pane[i].h > 0 && i != PANE_PROMPT)
            panes[i](w, L.pane[i], v, ui);
    /* status line: what the next key press does */
    int sx = 0;
    if (ui->edit == EDIT_MAXNEW || ui->edit == EDIT_STOP) {
        const char *label = ui->edit == EDIT_MAXNEW ? "max_new_tokens (0: the model's budget): "
                                                    : "stop string to add or remove (\\n for newline): ";
        sx += Draw_text(w, L.status.y, 0, cols, label, Theme_attr(TA_KEY));
        size_t from, to;
        int col;
        LineEdit_view(&ui->le, cols - sx, &from, &to, &col);
        Draw_textn(w, L.status.y, sx, cols - sx, ui->le.buf + from, to - from, A_NORMAL);
        wmove(w, L.status.y, sx + col);
    } else {
        sx += Draw_text(w, L.status.y, 0, cols, v->next, Theme_attr(TA_STATUS));
        if (v->message[0] && sx + 3 < cols)
            Draw_text(w, L.status.y, sx + 3, cols - sx - 3, v->message, Theme_attr(TA_WARN));
    }
    footer(w, L.footer);
    /* the prompt pane last: it may leave the cursor in its editor */
    if (L.pane[PANE_PROMPT].h > 0)
        Pane_prompt(w, L.pane[PANE_PROMPT], v, ui);
    if (ui->lesson_open) {
        int ph = rows * 2 / 5 < 8 ? 8 : rows * 2 / 5;
        if (ph > rows - 3)
            ph = rows - 3;
        tl_rect r = {rows - 2 - ph, 0, ph, cols};
        LessonPanel_draw(w, r, ui);
    }
    if (ui->help)
        help(w, cols, rows);
}
