/* Stream pane: what a streamer would have printed so far, and, in another style, what it is
 * still holding back and why. */
#include <string.h>

#include "format.h"
#include "ui.h"

/* Draws text wrapped from (y, x) within in; returns the next position. Newlines break lines. */
typedef struct { int y, x, lines; } cursor;

static void flow(WINDOW *w, tl_rect in, cursor *c, const char *s, size_t len, attr_t a, int first,
                 int draw)
{
    size_t i = 0;
    while (i < len) {
        if (s[i] == '\n') {
            if (draw && c->lines - first >= 0 && c->lines - first < in.h && (a & A_REVERSE))
                Draw_text(w, in.y + c->lines - first, in.x + c->x, 1, "\xE2\x86\xB5", a);
            c->lines++;
            c->x = 0;
            i++;
            continue;
        }
        size_t j = i;
        while (j < len && s[j] != '\n')
            j++;
        int used;
        size_t n = Format_prefixFitting(s + i, j - i, in.w - c->x, &used);
        if (n == 0 || (used > in.w - c->x && c->x > 0)) {
            c->lines++;
            c->x = 0;
            continue;
        }
        int row = c->lines - first;
        if (draw && row >= 0 && row < in.h)
            Draw_textn(w, in.y + row, in.x + c->x, in.w - c->x, s + i, n, a);
        c->x += used;
        i += n;
        if (i < j) {
            c->lines++;
            c->x = 0;
        }
    }
}

void Pane_stream(WINDOW *w, tl_rect r, const tl_view *v, tl_ui *ui)
{
    char title[128];
    snprintf(title, sizeof title, "4 Stream \xC2\xB7 %s",
             v->stream_server ? "server mode (h: hf)" : "hf TextStreamer (h: server)");
    Draw_box(w, r, title, ui->active == PANE_STREAM);
    tl_rect in = Draw_inner(r);
    if (in.h < 2 || in.w < 10)
        return;
    const char *p = v->printed ? v->printed : "", *h = v->held ? v->held : "";
    /* the status of the hold, always on the last row */
    char line[256];
    if (v->running)
        snprintf(line, sizeof line, "running \xE2\x80\x94 text arrives from the background thread's queue");
    else if (*h) {
        char vis[128];
        Format_visible(h, strlen(h), vis, sizeof vis);
        snprintf(line, sizeof line, "held back \xC2\xAB%s\xC2\xBB: %s", vis,
                 v->held_reason[0] ? v->held_reason : "?");
    } else if (*p)
        snprintf(line, sizeof line, "nothing held back");
    else
        snprintf(line, sizeof line, "nothing printed yet");
    Draw_text(w, in.y + in.h - 1, in.x, in.w, line, *h ? Theme_attr(TA_HEADER) : Theme_attr(TA_DIM));
    tl_rect tx = in;
    tx.h--;
    if (tx.h < 1)
        return;
    cursor c = {0, 0, 0};
    flow(w, tx, &c, p, strlen(p), A_NORMAL, 0, 0);
    flow(w, tx, &c, h, strlen(h), Theme_attr(TA_HELD), 0, 0);
    int total = c.lines + 1;
    int first = total > tx.h ? total - tx.h : 0;   /* follow the end */
    (void)ui;
    cursor d = {0, 0, 0};
    flow(w, tx, &d, p, strlen(p), A_NORMAL, first, 1);
    flow(w, tx, &d, h, strlen(h), Theme_attr(TA_HELD), first, 1);
}
