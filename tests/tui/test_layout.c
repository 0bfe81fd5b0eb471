/* Pane placement of tui/layout.c at 80x24, 160x48, 120x32 and tiny sizes: every shown pane
 * inside the screen, none overlapping another or the bars, the body fully used. With a lesson
 * open (every pane highlighted in turn, at 80x24, 100x30, 160x48): the strip is at most
 * TL_LAYOUT_LESSON_ROWS rows, across the screen, and covers no pane, above all not the one
 * the lesson points at. */
#include "layout.h"
#include "tl_test.h"

static int inside(tl_rect r, int cols, int rows)
{
    return r.x >= 0 && r.y >= 0 && r.x + r.w <= cols && r.y + r.h <= rows;
}

static void check_common(const tl_layout *L, int cols, int rows)
{
    TL_CHECK(!L->too_small);
    TL_CHECK_INT(L->title.y, 0);
    TL_CHECK_INT(L->status.y, rows - 2);
    TL_CHECK_INT(L->footer.y, rows - 1);
    tl_rect bars[4] = {L->title, L->tabbar, L->summary, L->status};
    int area = 0;
    for (int i = 0; i < PANE_COUNT; i++) {
        tl_rect a = L->pane[i];
        if (a.h == 0)
            continue;
        TL_CHECK_MSG(inside(a, cols, rows), "%s outside at %dx%d", Layout_paneName(i), cols, rows);
        TL_CHECK_MSG(a.h >= 3 && a.w >= 20, "%s too small: %dx%d", Layout_paneName(i), a.w, a.h);
        area += a.w * a.h;
        for (int b = 0; b < 4; b++)
            TL_CHECK(!Layout_overlap(a, bars[b]));
        TL_CHECK(!Layout_overlap(a, L->footer));
        for (int j = i + 1; j < PANE_COUNT; j++)
            TL_CHECK_MSG(!Layout_overlap(a, L->pane[j]), "%s overlaps %s", Layout_paneName(i),
                         Layout_paneName(j));
    }
    tl_rect s = L->lesson;
    if (s.h > 0) {
        TL_CHECK_MSG(inside(s, cols, rows) && s.w == cols && s.h <= TL_LAYOUT_LESSON_ROWS && s.h >= 2,
                     "lesson strip %d,%d %dx%d at %dx%d", s.y, s.x, s.w, s.h, cols, rows);
        for (int b = 0; b < 4; b++)
            TL_CHECK(!Layout_overlap(s, bars[b]));
        TL_CHECK(!Layout_overlap(s, L->footer));
        for (int i = 0; i < PANE_COUNT; i++)
            TL_CHECK_MSG(!Layout_overlap(s, L->pane[i]), "lesson strip over %s at %dx%d", Layout_paneName(i), cols, rows);
        area += s.w * s.h;
    }
    int bar_rows = 3 + (L->tabbed ? 2 : 0);
    TL_CHECK_INT(area, cols * (rows - bar_rows));   /* the whole body is used */
}

/* The lesson strip for every highlighted pane (and none) at the sizes a class uses. */
static void test_lesson_strip(void)
{
    static const int sizes[][2] = {{80, 24}, {100, 30}, {160, 48}, {120, 32}, {TL_LAYOUT_MIN_COLS, TL_LAYOUT_MIN_ROWS}};
    tl_layout L, closed;
    for (unsigned z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        int cols = sizes[z][0], rows = sizes[z][1];
        for (int hl = -1; hl < PANE_COUNT; hl++) {
            /* the lead's app shows the highlighted pane's tab; any other tab must work too */
            for (int active = 0; active < PANE_COUNT; active++) {
                Layout_computeLesson(cols, rows, active, 13, 1, hl, &L);
                check_common(&L, cols, rows);
                TL_CHECK_MSG(L.lesson.h > 0, "no lesson strip at %dx%d", cols, rows);
                if (hl >= 0)
                    TL_CHECK_MSG(!Layout_overlap(L.lesson, L.pane[hl]), "strip over the highlighted %s at %dx%d",
                                 Layout_paneName(hl), cols, rows);
                /* every pane that shows without the lesson still shows, with its columns */
                Layout_compute(cols, rows, active, 13, &closed);
                for (int i = 0; i < PANE_COUNT; i++) {
                    TL_CHECK_INT(L.pane[i].h > 0, closed.pane[i].h > 0);
                    TL_CHECK_INT(L.pane[i].w, closed.pane[i].w);
                }
            }
        }
        /* the strip at 80x24 leaves the tab its rows minus the strip's four */
        if (cols == 80 && rows == 24) {
            Layout_computeLesson(80, 24, PANE_STREAM, 13, 1, PANE_STREAM, &L);
            TL_CHECK_INT(L.lesson.h, TL_LAYOUT_LESSON_ROWS);
            TL_CHECK_INT(L.pane[PANE_STREAM].h, 24 - 5 - TL_LAYOUT_LESSON_ROWS);
        }
    }
    /* 160x48: lessons 3-6 point at Stream and Timing, the panes the old panel covered; the
     * strip now sits below them, and on top when the lesson points at the top row */
    Layout_computeLesson(160, 48, 0, 13, 1, PANE_TIMING, &L);
    TL_CHECK_INT(L.lesson.y + L.lesson.h, 46);
    TL_CHECK_INT(L.pane[PANE_TIMING].y + L.pane[PANE_TIMING].h, L.lesson.y);
    TL_CHECK(L.pane[PANE_TIMING].h >= 8 && L.pane[PANE_STREAM].h >= 6);
    Layout_computeLesson(160, 48, 0, 13, 1, PANE_PROMPT, &L);
    TL_CHECK_INT(L.lesson.y, 1);
    TL_CHECK_INT(L.pane[PANE_PROMPT].y, 1 + L.lesson.h);
    TL_CHECK(L.pane[PANE_LOGITS].h >= 13 + 2);   /* still all k rows */
    /* closed: no strip */
    Layout_computeLesson(160, 48, 0, 13, 0, PANE_TIMING, &L);
    TL_CHECK_INT(L.lesson.h, 0);
}

int main(void)
{
    tl_layout L;
    /* 80x24: tabs, one pane at a time, the chosen one */
    for (int active = 0; active < PANE_COUNT; active++) {
        Layout_compute(80, 24, active, 13, &L);
        TL_CHECK(L.tabbed);
        check_common(&L, 80, 24);
        for (int i = 0; i < PANE_COUNT; i++)
            TL_CHECK_INT(L.pane[i].h > 0, i == active);
        TL_CHECK_INT(L.pane[active].h, 24 - 5);
        TL_CHECK_INT(L.pane[active].w, 80);
        TL_CHECK_INT(L.tabbar.y, 1);
        TL_CHECK_INT(L.summary.y, 2);
    }
    /* an out-of-range tab is clamped, not an overflow */
    Layout_compute(80, 24, 99, 13, &L);
    TL_CHECK(L.pane[PANE_TIMING].h > 0);

    /* 160x48: all six panes; the logits pane fits its k rows */
    Layout_compute(160, 48, 0, 13, &L);
    TL_CHECK(!L.tabbed);
    check_common(&L, 160, 48);
    for (int i = 0; i < PANE_COUNT; i++)
        TL_CHECK(L.pane[i].h > 0);
    TL_CHECK(L.pane[PANE_LOGITS].h >= 13 + 2);
    TL_CHECK(L.pane[PANE_TIMING].h >= 8);     /* room for a chart */
    TL_CHECK_INT(L.pane[PANE_PROMPT].w + L.pane[PANE_LOGITS].w, 160);

    /* 120x32: the smallest grid */
    Layout_compute(120, 32, 0, 13, &L);
    TL_CHECK(!L.tabbed);
    check_common(&L, 120, 32);
    /* k = 40 rows wanted: the logits pane grows but leaves room for Stop and Timing */
    Layout_compute(160, 48, 0, 43, &L);
    check_common(&L, 160, 48);
    TL_CHECK(L.pane[PANE_STOP].h >= 6 && L.pane[PANE_TIMING].h >= 8);
    /* one row short of the grid: tabs */
    Layout_compute(200, 31, 0, 13, &L);
    TL_CHECK(L.tabbed);
    Layout_compute(119, 60, 0, 13, &L);
    TL_CHECK(L.tabbed);

    /* tiny: nothing but "too small" */
    int tiny[][2] = {{0, 0}, {1, 1}, {39, 24}, {80, 11}, {10, 5}};
    for (unsigned i = 0; i < sizeof tiny / sizeof tiny[0]; i++) {
        Layout_compute(tiny[i][0], tiny[i][1], 0, 13, &L);
        TL_CHECK(L.too_small);
        for (int p = 0; p < PANE_COUNT; p++)
            TL_CHECK_INT(L.pane[p].h, 0);
    }
    /* the smallest accepted size works */
    Layout_compute(TL_LAYOUT_MIN_COLS, TL_LAYOUT_MIN_ROWS, 2, 13, &L);
    TL_CHECK(!L.too_small && L.tabbed);
    TL_CHECK_INT(L.pane[2].h, TL_LAYOUT_MIN_ROWS - 5);
    TL_CHECK_STR(Layout_paneName(PANE_LOGITS), "Logits");
    test_lesson_strip();
    return TL_TEST_END("tui_layout");
}
