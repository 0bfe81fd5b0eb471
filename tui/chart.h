/* Scaling for the per-token TPOT chart: a "nice" y range that keeps the bandwidth floor in
 * view, bar heights in eighths of a cell (▁..█), and the row the floor line is drawn on. */
#ifndef TL_TUI_CHART_H
#define TL_TUI_CHART_H

/* Smallest 1, 2, 2.5 or 5 x 10^k >= v (v <= 0 gives 1). */
double Chart_niceMax(double v);
/* y range for values[0..n) and a floor (<= 0: none): nice max of max(values, floor * 1.15). */
double Chart_range(const double *values, int n, double floor_ms);
/* Bar height in eighths of a cell, 0..8*h; a positive value never vanishes (>= 1). */
int Chart_eighths(double v, double ymax, int h);
/* Row (0 = top, h-1 = bottom) on which a horizontal line at value y lies; -1 above the chart. */
int Chart_row(double y, double ymax, int h);
/* When n values do not fit in w columns, the chart shows the newest w: the first index shown. */
int Chart_first(int n, int w);
/* The glyph for the top cell of a bar: eighths 1..8 of that cell ("▁".."█"); "" for 0. */
const char *Chart_block(int eighths);

#endif
