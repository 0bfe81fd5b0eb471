/* Stream pane: what a streamer would have printed so far, and, in another style, what it is
 * still holding back and why. The title names the streamer and its options as the session runs
 * it, the way they would be written in transformers. */
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "i18n.h"
#include "ui.h"

#define T(s) I18n_tr(ui->lang, s)

/* The printed text and the held tail as one run, wrapped at word boundaries (the pane that
 * teaches word-boundary hold-back must not cut words itself); split: where the held part starts. */
typedef struct {
    WINDOW *w;
    tl_rect in;
    const char *s;
    size_t len, split;
    int first;
} flow_ctx;

static int flow(flow_ctx *c, int draw)
{
    int line = 0;
    size_t i = 0;
    while (i < c->len) {
        size_t n = Format_wrap(c->s + i, c->len - i, c->in.w - 1, NULL);
        size_t end = i + n;
        int nl = end < c->len && c->s[end] == '\n';
        int row = line - c->first;
        if (draw && row >= 0 && row < c->in.h) {
            int y = c->in.y + row, x = c->in.x, right = c->in.x + c->in.w;
            size_t mid = end < c->split ? end : i > c->split ? i : c->split;
            if (mid > i)
                x += Draw_textn(c->w, y, x, right - x, c->s + i, mid - i, A_NORMAL);
            if (end > mid)
                x += Draw_textn(c->w, y, x, right - x, c->s + mid, end - mid, Theme_attr(TA_HELD));
            if (nl && end >= c->split)   /* a held newline is shown, or nothing would be */
                Draw_text(c->w, y, x, right - x, "\xE2\x86\xB5", Theme_attr(TA_HELD));
        }
        line++;
        i = end + (size_t)nl;
        if (nl && i == c->len)
            line++;   /* the cursor is on the line after a trailing newline */
    }
    return line ? line : 1;
}

void Pane_stream(WINDOW *w, tl_rect r, const tl_view *v, tl_ui *ui)
{
    char title[256];
    if (v->stream_server)
        snprintf(title, sizeof title, "%s \xC2\xB7 %s \xC2\xB7 h: hf TextStreamer", T("4 Stream"), T("server mode"));
    else {
        char opts[64] = "";
        snprintf(opts, sizeof opts, "%s%s%s", v->skip_prompt ? "skip_prompt" : "",
                 v->skip_prompt && v->skip_special ? ", " : "", v->skip_special ? "skip_special_tokens" : "");
        snprintf(title, sizeof title, "%s \xC2\xB7 hf TextStreamer(%s) \xC2\xB7 h: server", T("4 Stream"), opts);
        /* the streamer's settings are what the title is for: the key's hint goes first (the
         * footer and ? list h) */
        if (Format_widthz(title) > r.w - 6)
            snprintf(title, sizeof title, "%s \xC2\xB7 hf TextStreamer(%s)", T("4 Stream"), opts);
    }
    Draw_box(w, r, title, ui->active == PANE_STREAM);
    tl_rect in = Draw_inner(r);
    if (in.h < 2 || in.w < 10)
        return;
    const char *p = v->printed ? v->printed : "", *h = v->held ? v->held : "";
    /* the status of the hold, always on the last row */
    char line[256];
    if (v->running)
        snprintf(line, sizeof line, T("running \xE2\x80\x94 queue: %d put, %d taken, %d waiting"),
                 v->queue_put, v->queue_got, v->queue_put - v->queue_got);
    else if (*h) {
        char vis[128];
        Format_visible(h, strlen(h), vis, sizeof vis);
        snprintf(line, sizeof line, T("held back \xC2\xAB%s\xC2\xBB: %s"), vis,
                 v->held_reason[0] ? v->held_reason : "?");
    } else if (*p)
        snprintf(line, sizeof line, "%s", T("nothing held back"));
    else
        snprintf(line, sizeof line, "%s", T("nothing printed yet"));
    Draw_text(w, in.y + in.h - 1, in.x, in.w, line, *h ? Theme_attr(TA_HEADER) : Theme_attr(TA_DIM));
    tl_rect tx = in;
    tx.h--;
    if (ui->stream_note[0] && tx.h > 2) {   /* what a lesson's run through the queue delivered */
        Draw_text(w, in.y + in.h - 2, in.x, in.w, ui->stream_note, Theme_attr(TA_HEADER));
        tx.h--;
    }
    if (tx.h < 1)
        return;
    size_t pl = strlen(p), hl = strlen(h);
    char *all = malloc(pl + hl + 1);
    if (!all)
        return;
    memcpy(all, p, pl);
    memcpy(all + pl, h, hl + 1);
    flow_ctx c = {w, tx, all, pl + hl, pl, 0};
    int total = flow(&c, 0);
    c.first = total > tx.h ? total - tx.h : 0;   /* follow the end */
    flow(&c, 1);
    free(all);
}
