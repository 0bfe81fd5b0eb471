/* Pane placement; see layout.h. */
#include "layout.h"

#include <string.h>

static const char *names[PANE_COUNT] = {"Prompt", "Tokens", "Logits", "Stream", "Stop", "Timing"};

const char *Layout_paneName(int pane)
{
    return pane >= 0 && pane < PANE_COUNT ? names[pane] : "?";
}

int Layout_overlap(tl_rect a, tl_rect b)
{
    if (a.h <= 0 || a.w <= 0 || b.h <= 0 || b.w <= 0)
        return 0;
    return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

static tl_rect R(int y, int x, int h, int w)
{
    tl_rect r = {y, x, h, w};
    return r;
}

static int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

void Layout_compute(int cols, int rows, int active, int logit_rows, tl_layout *L)
{
    Layout_computeLesson(cols, rows, active, logit_rows, 0, -1, L);
}

void Layout_computeLesson(int cols, int rows, int active, int logit_rows, int lesson_open, int highlight,
                          tl_layout *L)
{
    memset(L, 0, sizeof *L);
    L->cols = cols;
    L->rows = rows;
    if (cols < TL_LAYOUT_MIN_COLS || rows < TL_LAYOUT_MIN_ROWS) {
        L->too_small = 1;
        return;
    }
    L->title = R(0, 0, 1, cols);
    L->status = R(rows - 2, 0, 1, cols);
    L->footer = R(rows - 1, 0, 1, cols);
    int top = 1, bottom = rows - 2;   /* body rows [top, bottom) */
    int tabbed = cols < TL_LAYOUT_GRID_COLS || rows < TL_LAYOUT_GRID_ROWS;
    if (tabbed) {
        L->tabbed = 1;
        L->tabbar = R(top, 0, 1, cols);
        L->summary = R(top + 1, 0, 1, cols);
        top += 2;
    }
    if (lesson_open) {
        /* the strip comes out of the body, so no pane is under it; in the grid it sits next to
         * the row of the highlighted pane, so eyes go from the narration to the pane */
        int sh = clampi(bottom - top - 3, 0, TL_LAYOUT_LESSON_ROWS);
        int at_top = !tabbed && (highlight == PANE_PROMPT || highlight == PANE_LOGITS);
        if (sh >= 2) {
            if (at_top) {
                L->lesson = R(top, 0, sh, cols);
                top += sh;
            } else {
                L->lesson = R(bottom - sh, 0, sh, cols);
                bottom -= sh;
            }
        }
    }

    if (tabbed) {
        active = clampi(active, 0, PANE_COUNT - 1);
        L->pane[active] = R(top, 0, bottom - top, cols);
        return;
    }

    /* Two columns. Left: Prompt, Tokens, Stream. Right: Logits, Stop, Timing. */
    int body = bottom - top;
    int lw = cols / 2;
    int rw = cols - lw;

    int ph = body * 2 / 5;
    int th = (body - ph) / 2;
    int sh = body - ph - th;
    L->pane[PANE_PROMPT] = R(top, 0, ph, lw);
    L->pane[PANE_TOKENS] = R(top + ph, 0, th, lw);
    L->pane[PANE_STREAM] = R(top + ph + th, 0, sh, lw);

    int want = logit_rows + 2;                 /* borders */
    int gh = clampi(want, body * 2 / 5, body - 14);
    int rest = body - gh;
    int oh = clampi(rest * 2 / 5, 6, rest - 8);
    int mh = rest - oh;
    L->pane[PANE_LOGITS] = R(top, lw, gh, rw);
    L->pane[PANE_STOP] = R(top + gh, lw, oh, rw);
    L->pane[PANE_TIMING] = R(top + gh + oh, lw, mh, rw);
}
