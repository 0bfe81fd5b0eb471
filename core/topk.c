/* tl_topk on the vector passes of vecsel.c: the best k with one compare per block of scores
 * (almost every block fails it), then the softmax sum as a float exp added in double. */
#include "tokenloop/topk.h"

#include <math.h>

#include "vecsel.h"

int tl_topk(const float *v, int n, int k, int *ids, float *vals, double *sumexp)
{
    if (n <= 0 || k <= 0 || k > TL_TOPK_MAX)
        return -1;
    if (k > n)
        k = n;
    vs_top(v, n, k, ids, vals);
    double s = 0;
    if (vals[0] > -INFINITY)
        vs_exp(v, n, vals[0], 1.0f, NULL, NULL, &s, NULL);
    *sumexp = s;
    return k;
}
