/* Where each pane goes for a terminal of a given size. Large terminals show all six panes in
 * two columns; below TL_LAYOUT_GRID_COLS x TL_LAYOUT_GRID_ROWS they collapse into tabs (one
 * pane at a time, a tab bar and a one-line summary that keeps TTFT and the stop reason in
 * sight). An open lesson gets a strip of at most TL_LAYOUT_LESSON_ROWS rows taken from the
 * body, never drawn over a pane: the class must see the pane the narration talks about.
 * Pure: unit-tested at 80x24, 100x30, 160x48 and tiny sizes. */
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
#define TL_LAYOUT_LESSON_ROWS 4   /* the lesson strip: a chrome line and three of narration */

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
    tl_rect lesson;           /* h == 0: no lesson open */
} tl_layout;

/* logit_rows: rows the logits pane wants (k + its header), so large layouts give it room.
 * lesson_open: make room for the lesson strip; highlight (a PANE_* or -1) is the pane the
 * lesson points at: the strip goes on the side of the screen nearer to it (top when it is in
 * the top row of the grid), and like every pane it is never covered. */
void Layout_computeLesson(int cols, int rows, int active, int logit_rows, int lesson_open, int highlight,
                          tl_layout *out);
/* No lesson strip. */
void Layout_compute(int cols, int rows, int active, int logit_rows, tl_layout *out);
const char *Layout_paneName(int pane);
/* 1 if two rectangles overlap. */
int Layout_overlap(tl_rect a, tl_rect b);

#endif
