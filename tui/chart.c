/* Chart scaling; see chart.h. */
#include "chart.h"

#include <math.h>

double Chart_niceMax(double v)
{
    if (!(v > 0) || isinf(v))
        return 1;
    double e = pow(10, floor(log10(v)));
    static const double steps[] = {1, 2, 2.5, 5, 10};
    for (int i = 0; i < 5; i++)
        if (steps[i] * e >= v * (1 - 1e-12))
            return steps[i] * e;
    return 10 * e;
}

double Chart_range(const double *values, int n, double floor_ms)
{
    double m = 0;
    for (int i = 0; i < n; i++)
        if (values[i] > m && !isinf(values[i]))
            m = values[i];
    if (floor_ms > 0 && floor_ms * 1.15 > m)
        m = floor_ms * 1.15;
    return Chart_niceMax(m);
}

int Chart_eighths(double v, double ymax, int h)
{
    if (!(v > 0) || h <= 0 || !(ymax > 0))
        return 0;
    double e = v / ymax * h * 8;
    int r = (int)lround(e);
    if (r < 1)
        r = 1;
    if (r > h * 8)
        r = h * 8;
    return r;
}

int Chart_row(double y, double ymax, int h)
{
    if (h <= 0 || !(ymax > 0))
        return -1;
    if (y > ymax)
        return -1;
    if (y <= 0)
        return h - 1;
    /* row r (from the top) covers ((h-1-r)/h, (h-r)/h] of ymax */
    int fromBottom = (int)ceil(y / ymax * h) - 1;
    if (fromBottom < 0)
        fromBottom = 0;
    return h - 1 - fromBottom;
}

int Chart_first(int n, int w)
{
    return n > w && w > 0 ? n - w : 0;
}

const char *Chart_block(int e)
{
    static const char *b[9] = {"", "\xE2\x96\x81", "\xE2\x96\x82", "\xE2\x96\x83", "\xE2\x96\x84",
                               "\xE2\x96\x85", "\xE2\x96\x86", "\xE2\x96\x87", "\xE2\x96\x88"};
    return b[e < 0 ? 0 : e > 8 ? 8 : e];
}
