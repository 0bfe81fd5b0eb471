/* One pass of insertion into a k-long sorted list: k is at most 64, the list stays in L1,
 * and almost every score fails the first comparison. */
#include "tokenloop/topk.h"

#include <math.h>

static float key(float x) { return isnan(x) ? -INFINITY : x; }

int tl_topk(const float *v, int n, int k, int *ids, float *vals, double *sumexp)
{
    if (n <= 0 || k <= 0 || k > TL_TOPK_MAX)
        return -1;
    if (k > n)
        k = n;
    int m = 0;
    for (int i = 0; i < n; i++) {
        float x = key(v[i]);
        /* an equal score with a higher index ranks after, so it enters only if strictly larger
         * than the last kept one (or was NaN-ranked: -inf ties go by index too) */
        if (m == k && !(x > vals[k - 1]))
            continue;
        int j = m < k ? m++ : k - 1;
        while (j > 0 && vals[j - 1] < x) {
            vals[j] = vals[j - 1];
            ids[j] = ids[j - 1];
            j--;
        }
        vals[j] = x;
        ids[j] = i;
    }
    double s = 0, mx = vals[0];
    if (mx > -INFINITY)
        for (int i = 0; i < n; i++)
            if (!isnan(v[i]))
                s += exp((double)v[i] - mx);
    *sumexp = s;
    return k;
}
