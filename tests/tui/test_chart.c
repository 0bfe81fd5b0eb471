/* Chart scaling of tui/chart.c: nice ranges, bar heights in eighths, the floor's row. */
#include "chart.h"
#include "tl_test.h"

int main(void)
{
    TL_CHECK_NEAR(Chart_niceMax(4.8), 5, 0);
    TL_CHECK_NEAR(Chart_niceMax(5.0), 5, 0);
    TL_CHECK_NEAR(Chart_niceMax(5.01), 10, 0);
    TL_CHECK_NEAR(Chart_niceMax(0.3), 0.5, 1e-12);
    TL_CHECK_NEAR(Chart_niceMax(21), 25, 1e-12);
    TL_CHECK_NEAR(Chart_niceMax(1234), 2000, 1e-9);
    TL_CHECK_NEAR(Chart_niceMax(0), 1, 0);
    TL_CHECK_NEAR(Chart_niceMax(-3), 1, 0);

    double v[] = {3.1, 3.4, 2.9, 7.6};
    TL_CHECK_NEAR(Chart_range(v, 4, 2.0), 10, 0);        /* max 7.6 -> 10 */
    TL_CHECK_NEAR(Chart_range(v, 4, 9.0), 20, 0);        /* the floor above every bar stays in view */
    TL_CHECK_NEAR(Chart_range(v, 0, 0), 1, 0);
    TL_CHECK_NEAR(Chart_range(v, 4, 0), 10, 0);

    /* 8 rows, ymax 10: 5 -> half the height = 32 eighths; full -> 64; tiny positive -> 1 */
    TL_CHECK_INT(Chart_eighths(5, 10, 8), 32);
    TL_CHECK_INT(Chart_eighths(10, 10, 8), 64);
    TL_CHECK_INT(Chart_eighths(25, 10, 8), 64);          /* clipped */
    TL_CHECK_INT(Chart_eighths(0.001, 10, 8), 1);
    TL_CHECK_INT(Chart_eighths(0, 10, 8), 0);
    TL_CHECK_INT(Chart_eighths(-1, 10, 8), 0);
    TL_CHECK_INT(Chart_eighths(1.25, 10, 8), 8);         /* exactly one cell */

    /* rows: h = 10, ymax = 10: value 4.8 lies in the 5th row from the bottom (4 < y <= 5) */
    TL_CHECK_INT(Chart_row(4.8, 10, 10), 10 - 5);
    TL_CHECK_INT(Chart_row(10, 10, 10), 0);
    TL_CHECK_INT(Chart_row(0.5, 10, 10), 9);
    TL_CHECK_INT(Chart_row(0, 10, 10), 9);
    TL_CHECK_INT(Chart_row(11, 10, 10), -1);
    /* a bar of value y reaches the row of a line at y: the top cell of the bar is that row */
    int e = Chart_eighths(4.8, 10, 10);
    TL_CHECK_INT(10 - 1 - (e - 1) / 8, Chart_row(4.8, 10, 10));

    TL_CHECK_INT(Chart_first(100, 30), 70);
    TL_CHECK_INT(Chart_first(10, 30), 0);
    TL_CHECK_STR(Chart_block(8), "\xE2\x96\x88");
    TL_CHECK_STR(Chart_block(0), "");
    TL_CHECK_STR(Chart_block(1), "\xE2\x96\x81");
    return TL_TEST_END("tui_chart");
}
