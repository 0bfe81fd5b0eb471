/* tl_topk on the vector passes of vecsel.c: the best k with one compare per block of scores
 * (almost every block fails it) and the softmax sum as a float exp added in double, in one
 * read of the scores where the CPU has AVX-512. */
#include "tokenloop/topk.h"

#include "vecsel.h"

int tl_topk(const float *v, int n, int k, int *ids, float *vals, double *sumexp)
{
    if (n <= 0 || k <= 0 || k > TL_TOPK_MAX)
        return -1;
    if (k > n)
        k = n;
    vs_top_sum(v, n, k, ids, vals, sumexp, NULL);
    return k;
}
