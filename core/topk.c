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

int tl_logit_stats_compute(const float *v, int n, unsigned what, float scale, tl_logit_stats *out)
{
    if (n < 1)
        return -1;
    vs_acc a;
    vs_acc_init(&a, TL_TOPK_MAX, what & (TL_STATS_W | TL_STATS_SCALED), scale);
    vs_acc_add(&a, v, 0, n);
    vs_acc_finish(&a, 1, v, n, out);
    return 0;
}
