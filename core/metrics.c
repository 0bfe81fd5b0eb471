/* TTFT/TPOT as defined in metrics.h, from clock stamps taken when each generated id is on the
 * host. */
#include "tokenloop/metrics.h"
#include "tokenloop/bandwidth.h"
#include "tokenloop/system.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

double tl_clock_monotonic_ms(void *ctx)
{
    (void)ctx;
    return tl_now_ms();
}

struct tl_metrics {
    tl_clock_fn clock;
    void *ctx;
    double t0, t_mark;
    double template_ms, tokenize_ms;
    int prompt_tokens;
    double *t, *pass_ms, *unsynced;  /* per generated token; t relative to t0 */
    double *work;                    /* the host time the step itself took (no pause) */
    unsigned char *joined;           /* 1: made right after the previous token, no pause */
    int n, cap;
    double step_bytes, bw;
    double *rate;                    /* bytes/s of each floor read this request */
    double *pair;                    /* the pass of the decode step right before it (ms; < 0: none) */
    int n_rate, cap_rate;
    double llc, weight_bytes;
};

tl_metrics *tl_metrics_create(tl_clock_fn clock, void *clock_ctx)
{
    tl_metrics *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->clock = clock ? clock : tl_clock_monotonic_ms;
    m->ctx = clock_ctx;
    tl_metrics_start(m);
    return m;
}

void tl_metrics_free(tl_metrics *m)
{
    if (!m) return;
    free(m->t);
    free(m->pass_ms);
    free(m->unsynced);
    free(m->work);
    free(m->joined);
    free(m->rate);
    free(m->pair);
    free(m);
}

double tl_metrics_now(const tl_metrics *m) { return m->clock(m->ctx); }

void tl_metrics_start(tl_metrics *m)
{
    m->t0 = m->t_mark = tl_metrics_now(m);
    m->template_ms = m->tokenize_ms = -1;
    m->prompt_tokens = 0;
    m->n = 0;
    m->n_rate = 0;
}

void tl_metrics_templated(tl_metrics *m)
{
    double now = tl_metrics_now(m);
    m->template_ms = now - m->t_mark;
    m->t_mark = now;
}

void tl_metrics_tokenized(tl_metrics *m, int prompt_tokens)
{
    double now = tl_metrics_now(m);
    if (m->template_ms >= 0) m->tokenize_ms = now - m->t_mark;
    m->t_mark = now;
    m->prompt_tokens = prompt_tokens;
}

void tl_metrics_exclude(tl_metrics *m, double ms)
{
    if (ms > 0) m->t0 += ms;
}

void tl_metrics_resume(tl_metrics *m, double now)
{
    if (m->n > 0) return;
    tl_metrics_exclude(m, now - m->t_mark);
    m->t_mark = now;
}

/* Parallel columns of doubles, each reallocated to cap rows: 1 when all of them grew. One that
 * could not keeps its rows; the others keep their new room, so the call can simply be made again. */
static int grow_columns(double **col[], int n, int cap)
{
    int all = 1;
    for (int i = 0; i < n; i++) {
        double *p = realloc(*col[i], sizeof(double) * (size_t)cap);
        if (p)
            *col[i] = p;
        else
            all = 0;
    }
    return all;
}

double tl_metrics_token_gap(tl_metrics *m, double pass_ms, double unsynced_ms, double t_begin, int joined)
{
    double now = tl_metrics_now(m);
    double work_ms = t_begin >= 0 ? now - t_begin : pass_ms;
    if (m->n == m->cap) {
        int cap = m->cap ? m->cap * 2 : 64;
        unsigned char *e = realloc(m->joined, (size_t)cap);
        if (e) m->joined = e;
        int grew = grow_columns((double **[]){&m->t, &m->pass_ms, &m->unsynced, &m->work}, 4, cap);
        if (!grew || !e) return work_ms;
        m->cap = cap;
    }
    m->t[m->n] = now - m->t0;
    m->pass_ms[m->n] = pass_ms;
    m->unsynced[m->n] = unsynced_ms;
    m->work[m->n] = work_ms;
    m->joined[m->n] = joined != 0;
    m->n++;
    return work_ms;
}

void tl_metrics_token(tl_metrics *m, double pass_ms, double unsynced_ms)
{
    tl_metrics_token_gap(m, pass_ms, unsynced_ms, -1, 1);
}

void tl_metrics_drop(tl_metrics *m, int n)
{
    m->n = n >= m->n ? 0 : m->n - n;
}

void tl_metrics_set_floor(tl_metrics *m, double step_bytes, double bw)
{
    m->step_bytes = step_bytes;
    m->bw = bw;
}

void tl_metrics_floor_read(tl_metrics *m, double bytes, double seconds)
{
    if (!(bytes > 0) || !(seconds > 0)) return;
    if (m->n_rate == m->cap_rate) {
        int cap = m->cap_rate ? m->cap_rate * 2 : 16;
        if (!grow_columns((double **[]){&m->rate, &m->pair}, 2, cap)) return;
        m->cap_rate = cap;
    }
    /* paired with the decode pass just made (token 1 on), as bench pairs each step with its read */
    m->pair[m->n_rate] = m->n >= 2 ? m->pass_ms[m->n - 1] : -1;
    m->rate[m->n_rate++] = bytes / seconds;
}

int tl_metrics_floor_reads(const tl_metrics *m) { return m->n_rate; }

void tl_metrics_set_cache(tl_metrics *m, double llc_bytes, double weight_bytes)
{
    m->llc = llc_bytes;
    m->weight_bytes = weight_bytes;
}

double tl_metrics_token_time(const tl_metrics *m, int i)
{
    return i >= 0 && i < m->n ? m->t[i] : -1;
}

double tl_metrics_token_pass_ms(const tl_metrics *m, int i)
{
    return i >= 0 && i < m->n ? m->pass_ms[i] : -1;
}

double tl_metrics_token_unsynced_ms(const tl_metrics *m, int i)
{
    return i >= 0 && i < m->n ? m->unsynced[i] : -1;
}

int tl_metrics_count(const tl_metrics *m) { return m->n; }

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tl_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The unsynchronized reading of a typical pass: a launch that another program preempted
 * now and then must not hide what the reading measures (the launch, not the work). */
static double median(const double *v, int n)
{
    double *c = malloc(sizeof(double) * (size_t)n);
    if (!c) return v[n / 2];
    memcpy(c, v, sizeof(double) * (size_t)n);
    double r = tl_median(c, n);
    free(c);
    return r;
}

tl_metrics_report tl_metrics_report_get(const tl_metrics *m)
{
    tl_metrics_report r;
    memset(&r, 0, sizeof r);
    r.prompt_tokens = m->prompt_tokens;
    r.generated = m->n;
    r.template_ms = m->template_ms;
    r.tokenize_ms = m->tokenize_ms;
    r.ttft_ms = r.tpot_ms = r.decode_tokens_per_s = r.total_ms = -1;
    r.prompt_as_output_tokens_per_s = -1;
    r.unsynced_tpot_ms = -1;
    r.bandwidth_gbs = r.floor_ms = r.tpot_over_floor = -1;
    r.pace_ms = r.work_ms = r.pass_mean_ms = r.lesson_tokens_per_s = -1;
    r.ref_floor_ms = TL_REF_FLOOR_BYTES / TL_REF_FLOOR_BW * 1e3;
    if (m->n >= 1) {
        r.ttft_ms = m->t[0];
        r.total_ms = m->t[m->n - 1];
        if (r.total_ms > 0)
            r.prompt_as_output_tokens_per_s = (m->prompt_tokens + m->n) / (r.total_ms / 1e3);
    }
    if (m->n >= 2) {
        double span = m->t[m->n - 1] - m->t[0];
        r.tpot_ms = span / (m->n - 1);
        if (span > 0) r.decode_tokens_per_s = (m->n - 1) / (span / 1e3);
        /* the unsynchronized reading: decode passes only (token 1 on), as the naive code times them */
        int applicable = 1;
        for (int i = 1; i < m->n; i++)
            if (m->unsynced[i] < 0) applicable = 0;
        r.unsynced_applicable = applicable;
        if (applicable) r.unsynced_tpot_ms = median(m->unsynced + 1, m->n - 1);
        /* The pace without pauses: a gap made in one run is the wall clock; a gap that
         * waited for a key press counts only the step's own work. */
        double work = 0, pass = 0;
        for (int i = 1; i < m->n; i++) {
            if (m->joined[i]) work += m->t[i] - m->t[i - 1];
            else {
                work += m->work[i];
                r.paused_gaps++;
            }
            pass += m->pass_ms[i];
        }
        r.work_ms = work / (m->n - 1);
        r.pass_mean_ms = pass / (m->n - 1);
        r.pace_ms = r.paused_gaps ? r.pass_mean_ms : r.tpot_ms;
        if (span > 0) r.lesson_tokens_per_s = m->n / (span / 1e3);
    } else if (m->n == 1) {
        r.unsynced_applicable = m->unsynced[0] >= 0;
    }
    r.step_bytes = m->step_bytes;
    r.floor_lo_ms = r.floor_hi_ms = r.floor_ratio_measured = -1;
    r.floor_reads = m->n_rate;
    double bw = m->bw, fast = m->bw, slow = m->bw;
    if (m->n_rate > 0) {   /* the reads beside the steps: their median, and their range */
        bw = median(m->rate, m->n_rate);
        fast = slow = m->rate[0];
        for (int i = 1; i < m->n_rate; i++) {
            fast = m->rate[i] > fast ? m->rate[i] : fast;
            slow = m->rate[i] < slow ? m->rate[i] : slow;
        }
    }
    if (bw > 0 && m->step_bytes > 0) {
        r.bandwidth_gbs = bw / 1e9;
        r.floor_ms = m->step_bytes / bw * 1e3;
        r.floor_lo_ms = m->step_bytes / fast * 1e3;
        r.floor_hi_ms = m->step_bytes / slow * 1e3;
        /* TPOT / floor as bench gives it: the median over the pairs of a decode pass and the read
         * right after it, so a switch of the memory rate falls on both sides of each ratio;
         * without pairs, the pace over the median floor */
        double ratio = r.pace_ms > 0 ? r.pace_ms / r.floor_ms : -1;
        double *q = m->n_rate > 0 ? malloc(sizeof(double) * (size_t)m->n_rate) : NULL;
        int k = 0;
        for (int i = 0; q && i < m->n_rate; i++)
            if (m->pair[i] > 0) q[k++] = m->pair[i] / (m->step_bytes / m->rate[i] * 1e3);
        if (k > 0 && r.pace_ms > 0) ratio = tl_median(q, k);
        free(q);
        r.floor_pairs = k;
        /* under the floor by more than the reads' spread: a measurement problem, no ratio */
        r.below_floor = ratio > 0 && ratio < r.floor_lo_ms / r.floor_ms;
        r.floor_ratio_measured = ratio;
        if (ratio > 0 && !r.below_floor) r.tpot_over_floor = ratio;
    }
    r.llc_bytes = m->llc;
    r.weight_bytes = m->weight_bytes;
    r.in_cache = tl_bandwidth_cache_fit(m->weight_bytes, m->llc);
    return r;
}

/* ---- deciding a comparison from repeated runs ---- */

/* The q-quantile of sorted v (linear between neighbours, as NumPy's default). */
static double quantile(const double *v, int n, double q)
{
    double at = q * (n - 1);
    int i = (int)at;
    return i + 1 < n ? v[i] + (at - i) * (v[i + 1] - v[i]) : v[n - 1];
}

/* Sorted copy's quartiles, median and extremes of one side. */
static int side(const double *v, int n, double *med, double *lo, double *hi, double *q1, double *q3)
{
    double *c = malloc(sizeof(double) * (size_t)n);
    if (!c) return -1;
    memcpy(c, v, sizeof(double) * (size_t)n);
    tl_median(c, n);   /* sorts */
    *med = quantile(c, n, 0.5);
    *lo = c[0];
    *hi = c[n - 1];
    *q1 = quantile(c, n, 0.25);
    *q3 = quantile(c, n, 0.75);
    free(c);
    return 0;
}

tl_cmp tl_compare(const double *a, int n_a, const double *b, int n_b, double same_within)
{
    tl_cmp r;
    memset(&r, 0, sizeof r);
    r.n_a = n_a;
    r.n_b = n_b;
    r.outcome = TL_CMP_UNDECIDED;
    if (n_a < 3 || n_b < 3 || side(a, n_a, &r.med_a, &r.lo_a, &r.hi_a, &r.q1_a, &r.q3_a)
        || side(b, n_b, &r.med_b, &r.lo_b, &r.hi_b, &r.q1_b, &r.q3_b))
        return r;
    double small = r.med_a < r.med_b ? r.med_a : r.med_b;
    double diff = r.med_a > r.med_b ? r.med_a - r.med_b : r.med_b - r.med_a;
    int apart = small > 0 ? diff > same_within * small : diff > 0;
    if (!apart) r.outcome = TL_CMP_SAME;
    else if (r.q3_a < r.q1_b) r.outcome = TL_CMP_LOWER;
    else if (r.q3_b < r.q1_a) r.outcome = TL_CMP_HIGHER;
    return r;
}

const char *tl_cmp_outcome_name(tl_cmp_outcome o)
{
    return o == TL_CMP_LOWER ? "lower" : o == TL_CMP_SAME ? "same" : o == TL_CMP_HIGHER ? "higher" : "undecided";
}
