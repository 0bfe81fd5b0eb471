/* The scalar side of the scores' accumulator (scores.h): moving its sums to a new maximum,
 * emptying its lanes, and merging the threads' sums. */
#include "tokenloop/scores.h"

#include <math.h>
#include <string.h>

#define LN2 0.693147180559945309

void tl_cpu_scores_init(tl_cpu_scores *s, unsigned want, float scale,
                        void (*offer)(tl_cpu_scores *, float, int64_t, int))
{
    memset(s, 0, sizeof *s);
    s->thr = -INFINITY;
    s->mx = -INFINITY;
    s->want = want;
    s->scale = scale;
    s->offer = offer;
}

void tl_cpu_scores_flush(tl_cpu_scores *s)
{
    if (!s->nlane) return;
    double z = 0, w = 0, zs = 0, ws = 0;
    for (int l = 0; l < 16; l++) {
        z += s->lz[l];
        w += s->lw[l];
        zs += s->lzs[l];
        ws += s->lws[l];
    }
    s->z += z;
    s->w += w * LN2;   /* the lanes add e t, t = d log2(e) */
    s->zs += zs;
    s->ws += ws * LN2;
    memset(s->lz, 0, sizeof s->lz);
    memset(s->lw, 0, sizeof s->lw);
    memset(s->lzs, 0, sizeof s->lzs);
    memset(s->lws, 0, sizeof s->lws);
    s->nlane = 0;
}

void tl_cpu_scores_raise(tl_cpu_scores *s, float bm)
{
    if (!(bm > s->mx)) return;
    tl_cpu_scores_flush(s);
    if (bm == INFINITY) {
        s->z = s->w = s->zs = s->ws = 0;
    } else if (s->mx > -INFINITY) {
        double g = (double)bm - s->mx, r = exp(-g);
        s->w = r * (s->w - g * s->z);
        s->z *= r;
        double gs = g * s->scale, rs = exp(-gs);
        s->ws = rs * (s->ws - gs * s->zs);
        s->zs *= rs;
    }
    s->mx = bm;
}

#define PART(p) ((const tl_cpu_scores *)((const char *)first + (size_t)(p) * stride))

void tl_cpu_scores_merge(const tl_cpu_scores *first, size_t stride, int np, tl_logit_stats *out)
{
    float mx = -INFINITY;
    for (int p = 0; p < np; p++)
        if (PART(p)->mx > mx) mx = PART(p)->mx;
    out->sumexp = out->wsum = out->sumexp_s = out->wsum_s = 0;
    if (mx == -INFINITY || mx == INFINITY) return;
    for (int p = 0; p < np; p++) {
        tl_cpu_scores s = *PART(p);
        if (s.mx == -INFINITY) continue;
        tl_cpu_scores_flush(&s);
        double g = (double)mx - s.mx, r = exp(-g), gs = g * s.scale, rs = exp(-gs);
        out->sumexp += r * s.z;
        out->wsum += r * (s.w - g * s.z);
        out->sumexp_s += rs * s.zs;
        out->wsum_s += rs * (s.ws - gs * s.zs);
    }
}

void tl_cpu_scores_add(tl_cpu_scores *s, const float *v, int64_t id0, int n)
{
    int ge = id0 < s->next;
    if (id0 + n > s->next) s->next = id0 + n;
    for (int i = 0; i < n; i++) {
        float x = v[i];
        if (x > s->thr || (ge && x == s->thr)) s->offer(s, x, id0 + i, ge);
        if (x > s->mx) tl_cpu_scores_raise(s, x);
        if (!(s->mx > -INFINITY && s->mx < INFINITY) || !(x > -INFINITY)) continue;   /* NaN, -inf: 0 */
        float d = x - s->mx, t = d * TL_LOG2E;
        if (!(t >= TL_SCORES_EXP_MIN * TL_LOG2E)) continue;
        float e = exp2f(t);
        s->z += e;
        s->w += (double)e * d;
        float ts = d * (s->scale * TL_LOG2E), es = ts >= TL_SCORES_EXP_MIN * TL_LOG2E ? exp2f(ts) : 0.0f;
        s->zs += es;
        s->ws += (double)es * ts * LN2;
    }
}
