/* Where each pane goes for a terminal of a given size. Large terminals show all six panes in
 * two columns; below TL_LAYOUT_GRID_COLS x TL_LAYOUT_GRID_ROWS they collapse into tabs (one
 * pane at a time, a tab bar and a one-line summary that keeps TTFT and the stop reason in
 * sight). Pure: unit-tested at 80x24, 160x48 and tiny sizes. */
#ifndef TL_TUI_LAYOUT_H
#define TL_TUI_LAYOUT_H

enum {
    PANE_PROMPT,
    PANE_TOKENS,
    PANE_LOGITS,
    PANE_STREAM,
    PANE_STOP,
    PANE_TIMING,
    PANE_COUNT
};

#define TL_LAYOUT_MIN_COLS 40
#define TL_LAYOUT_MIN_ROWS 12
#define TL_LAYOUT_GRID_COLS 120
#define TL_LAYOUT_GRID_ROWS 32

typedef struct tl_rect {
    int y, x, h, w;
} tl_rect;

typedef struct tl_layout {
    int cols, rows;
    int too_small;            /* nothing but a message fits */
    int tabbed;               /* one pane at a time */
    tl_rect title;            /* row 0 */
    tl_rect tabbar;           /* tabbed only */
    tl_rect summary;          /* tabbed only: TTFT / TPOT / stop in one line */
    tl_rect status;           /* "next: ..." */
    tl_rect footer;           /* main keys */
    tl_rect pane[PANE_COUNT]; /* h == 0: not shown */
} tl_layout;

/* logit_rows: rows the logits pane wants (k + its header), so large layouts give it room. */
void Layout_compute(int cols, int rows, int active, int logit_rows, tl_layout *out);
const char *Layout_paneName(int pane);
/* 1 if two rectangles overlap. */
int Layout_overlap(tl_rect a, tl_rect b);

#endif
