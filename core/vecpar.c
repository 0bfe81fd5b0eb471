/* vecsel.c's passes in fixed parts (vecsel.h): each part is the one-part function on its own
 * blocks, so whoever runs a part gets the same bits; the merges below run in the caller's
 * thread, in part order. On the CPU the parts of a step's pass go to the cores that have just
 * written those scores in lm_head. Each part keeps its own best k, so parts cost a little when
 * one thread runs them all (a busy machine, where the pool runs jobs alone). */
#define _GNU_SOURCE
#include "vecsel.h"

#include <math.h>
#include <string.h>

typedef struct part {
    int off, len;
} part;

/* Whole blocks, as even as they come: at most TL_VS_PARTS parts of >= TL_VS_PART_MIN scores,
 * one part for a shorter vector (0 for none). */
static int split(int n, part *p)
{
    if (n <= 0) return 0;
    int np = n / TL_VS_PART_MIN;
    if (np > TL_VS_PARTS) np = TL_VS_PARTS;
    if (np < 1) np = 1;
    long long nb = (n + TL_VS_BLOCK - 1) / TL_VS_BLOCK;
    for (int i = 0; i < np; i++) {
        long long b0 = nb * i / np, b1 = nb * (i + 1) / np;
        long long end = b1 * TL_VS_BLOCK < n ? b1 * TL_VS_BLOCK : n;
        p[i].off = (int)(b0 * TL_VS_BLOCK);
        p[i].len = (int)(end - b0 * TL_VS_BLOCK);
    }
    return np;
}

static void run_parts(const vs_runner *r, int np, void (*fn)(void *, int), void *arg)
{
    if (np > 1 && r && r->run) {
        r->run(r->ctx, np, fn, arg);
        return;
    }
    for (int i = 0; i < np; i++) fn(arg, i);
}

/* ---- the best k, and with them the softmax sums ---- */

typedef struct {
    const float *v;
    part p[TL_VS_PARTS];
    int k, sums, want_w;
    int kk[TL_VS_PARTS];
    int ids[TL_VS_PARTS][TL_VS_MAX_K];
    float vals[TL_VS_PARTS][TL_VS_MAX_K];
    double sum[TL_VS_PARTS], wsum[TL_VS_PARTS];
} top_job;

static void top_part(void *arg, int i)
{
    top_job *j = arg;
    const part p = j->p[i];
    int k = j->k < p.len ? j->k : p.len;
    j->kk[i] = k;
    if (j->sums)
        vs_top_sum(j->v + p.off, p.len, k, j->ids[i], j->vals[i], &j->sum[i], j->want_w ? &j->wsum[i] : NULL);
    else
        vs_top(j->v + p.off, p.len, k, j->ids[i], j->vals[i]);
    for (int q = 0; q < k; q++) j->ids[i][q] += p.off;
}

/* The parts' lists are each in tl_topk's order (score down, then id up) and hold ids in
 * ascending ranges: among equal scores the earlier part's come first, as one pass ranks them.
 * Scores here are never NaN (the one-part functions put -inf in their place). */
static void merge_top(const top_job *j, int np, int k, int *ids, float *vals)
{
    int h[TL_VS_PARTS] = {0};
    for (int o = 0; o < k; o++) {
        int best = -1;
        for (int i = 0; i < np; i++)
            if (h[i] < j->kk[i] && (best < 0 || j->vals[i][h[i]] > j->vals[best][h[best]])) best = i;
        ids[o] = j->ids[best][h[best]];
        vals[o] = j->vals[best][h[best]];
        h[best]++;
    }
}

static void top_run(const vs_runner *r, const float *v, int n, int k, int *ids, float *vals, double *sum,
                    double *wsum)
{
    top_job j;
    j.v = v;
    j.k = k;
    j.sums = sum != NULL;
    j.want_w = wsum != NULL;
    int np = split(n, j.p);
    run_parts(r, np, top_part, &j);
    merge_top(&j, np, k, ids, vals);
    if (!sum) return;
    /* each part's sums are against its own maximum: with g the gap to the overall one, e' = e r
     * and d' = d - g, r = exp(-g), so sum e' = r sum e and sum e'd' = r (sum e d - g sum e) */
    double mx = vals[0], z = 0, w = 0;
    if (mx > -INFINITY && mx < INFINITY)
        for (int i = 0; i < np; i++) {
            double m = j.vals[i][0];
            if (!(m > -INFINITY)) continue;   /* every score of the part -inf or NaN: no mass */
            double g = mx - m, rr = exp(-g);
            z += rr * j.sum[i];
            w += rr * (j.want_w ? j.wsum[i] - g * j.sum[i] : 0);
        }
    *sum = z;
    if (wsum) *wsum = w;
}

void vsp_top(const vs_runner *r, const float *v, int n, int k, int *ids, float *vals)
{
    top_run(r, v, n, k, ids, vals, NULL, NULL);
}

void vsp_top_sum(const vs_runner *r, const float *v, int n, int k, int *ids, float *vals, double *sum, double *wsum)
{
    top_run(r, v, n, k, ids, vals, sum, wsum);
}

/* ---- exp sums ---- */

typedef struct {
    const float *v;
    part p[TL_VS_PARTS];
    float mx, scale;
    float *e_out;
    double *bsum;
    int want_w;
    double sum[TL_VS_PARTS], wsum[TL_VS_PARTS];
} exp_job;

static void exp_part(void *arg, int i)
{
    exp_job *j = arg;
    const part p = j->p[i];
    vs_exp(j->v + p.off, p.len, j->mx, j->scale, j->e_out ? j->e_out + p.off : NULL,
           j->bsum ? j->bsum + p.off / TL_VS_BLOCK : NULL, &j->sum[i], j->want_w ? &j->wsum[i] : NULL);
}

void vsp_exp(const vs_runner *r, const float *v, int n, float mx, float scale, float *e_out, double *bsum,
             double *sum, double *wsum)
{
    exp_job j = {.v = v, .mx = mx, .scale = scale, .e_out = e_out, .bsum = bsum, .want_w = wsum != NULL};
    int np = split(n, j.p);
    run_parts(r, np, exp_part, &j);
    double z = 0, w = 0;
    for (int i = 0; i < np; i++) {
        z += j.sum[i];
        w += j.want_w ? j.wsum[i] : 0;
    }
    *sum = z;
    if (wsum) *wsum = w;
}

/* ---- ids above a threshold ---- */

typedef struct {
    const float *v;
    part p[TL_VS_PARTS];
    float thr;
    int *out;   /* NULL: count only */
    int cnt[TL_VS_PARTS];
} ge_job;

/* A part's ids go to out[off..): it has at most len of them, so parts never overlap. */
static void ge_part(void *arg, int i)
{
    ge_job *j = arg;
    const part p = j->p[i];
    if (!j->out) {
        j->cnt[i] = vs_count_ge(j->v + p.off, p.len, j->thr);
        return;
    }
    j->cnt[i] = vs_ge_from(j->v + p.off, p.len, j->thr, j->out + p.off, p.off);
}

int vsp_ge(const vs_runner *r, const float *v, int n, float thr, int *out)
{
    ge_job j = {.v = v, .thr = thr, .out = out};
    int np = split(n, j.p);
    if (np > 1 && !(r && r->run)) {   /* one after another: each part's ids straight after the last's */
        int c = 0;
        for (int i = 0; i < np; i++) c += vs_ge_from(v + j.p[i].off, j.p[i].len, thr, out + c, j.p[i].off);
        return c;
    }
    run_parts(r, np, ge_part, &j);
    int c = 0;
    for (int i = 0; i < np; i++) {   /* close the gaps: c <= the part's offset */
        if (c != j.p[i].off && j.cnt[i]) memmove(out + c, out + j.p[i].off, sizeof(int) * (size_t)j.cnt[i]);
        c += j.cnt[i];
    }
    return c;
}

int vsp_count_ge(const vs_runner *r, const float *v, int n, float thr)
{
    ge_job j = {.v = v, .thr = thr, .out = NULL};
    int np = split(n, j.p);
    run_parts(r, np, ge_part, &j);
    int c = 0;
    for (int i = 0; i < np; i++) c += j.cnt[i];
    return c;
}
