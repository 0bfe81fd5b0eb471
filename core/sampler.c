/* transformers' sampling pipeline: TemperatureLogitsWarper -> TopKLogitsWarper ->
 * TopPLogitsWarper -> softmax -> multinomial; or argmax when not sampling. Each warper is
 * skipped at its neutral value (temperature 1, top_k 0, top_p 1), as transformers does not add
 * it then. The RNG is our own (xoshiro256**), seeded per sampler.
 *
 * A step costs a few passes over the vocabulary and no sort of it (vecsel.c): the best few
 * scores (the report's rows, and top-k's cut when k <= TL_MAX_TOP), one float exp per token
 * whose sums (in double) give the softmax, its entropy and the draw, and only where the cut
 * needs more than the best few a pass collecting the tokens above a threshold. Nothing is
 * sorted: top-k's k-th score and top-p's boundary come from quickselects on those few, and
 * a nucleus of more than a few thousand candidates is first cut by buckets of scores.
 * On the CPU the pass itself can bring the best 64 and those sums (tl_logit_stats, gathered by
 * the lm_head's kernel as it writes the scores): tl_sampler_choose_with then starts from them,
 * and greedy, top-k <= 64 and a nucleus inside the best 64 read no score beyond them.
 * The float exp is within a few ulp of the true one: against the float64 reference a
 * probability moves by about 1e-7 relative, and a top-p cut or a draw can differ only where a
 * cumulative sum falls within that of its limit (tests/generate/check_sampler.py). */
#define _GNU_SOURCE
#include "tokenloop/sampler.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vecsel.h"

/* The nucleus is looked for among the tokens above a threshold whose leftover mass is under
 * 1 - top_p by this much of the total: float sums are within ~1e-6 of the reference's, so
 * every token left out is one the reference cuts too. */
#define TOP_P_MARGIN 1e-4

/* A nucleus cut over more candidates than this goes through buckets of scores first
 * (nucleus_buckets): a quickselect that sums the mass on each side reads them many times. */
#define NUCLEUS_BUCKET_MIN 2048
#define NUCLEUS_BUCKETS 4096

struct tl_sampler {
    int vocab;
    tl_sampling p;
    uint64_t rng[4];
    float *e;        /* exp((logit - max) / t) this step: every token after a full pass, else the
                        best K and the kept ones */
    double *bsum;    /* e summed per TL_VS_BLOCK tokens (a full pass): the draw's index */
    int *cand;       /* tokens above a threshold, then the kept ones (from c0) */
    float *ec;       /* without a full pass: e of cand[j] (a step's few tokens stay in a few
                        cache lines instead of one line of e[] each) */
    uint64_t *keys;  /* cand as rank keys, for the selections */
    float *ek;       /* e of keys[j], moved with them */
    /* this step */
    int ntop;
    int top_ids[TL_MAX_TOP];
    float top_vals[TL_MAX_TOP];
    float top_e[TL_MAX_TOP];
    float mx, scale;    /* the best score; 1 / temperature, or 1 */
    int full;           /* a full pass: e and bsum hold every token */
    double zr, wr;      /* the model's softmax (T = 1): sum of exp(logit - max), of that * (logit - max) */
    double zt, wt;      /* the same for e (tempered), over all tokens */
    int have_zr, have_zt, have_wt;
    double zk;          /* sum of e over the kept tokens */
    int nlist, c0;      /* kept tokens in cand[c0..c0 + nlist), or nlist -1: the ids from `from` on */
    int from;
    int cut_k, cut_p;   /* the rule that says which are kept */
    float kth, xb;      /* kept: logit >= kth (top-k); after (xb, ib) in top-p order (top-p) */
    int ib;
    double *bmass;   /* a long nucleus cut: e summed per bucket of scores (NUCLEUS_BUCKETS) */
};

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(uint64_t *s)
{
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t; s[3] = rotl(s[3], 45);
    return r;
}

static double rng_uniform(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; }

static void seed_rng(tl_sampler *s)
{
    uint64_t z = s->p.seed;
    for (int i = 0; i < 4; i++)
        s->rng[i] = splitmix(&z);
}

tl_sampling tl_sampling_defaults(const tl_gen_config *gen)
{
    tl_sampling p = {.greedy = 1, .temperature = 1.0f, .top_k = 50, .top_p = 1.0f, .seed = 0};
    if (gen) {
        if (gen->has_do_sample) p.greedy = !gen->do_sample;
        if (gen->has_temperature) p.temperature = gen->temperature;
        if (gen->has_top_k) p.top_k = gen->top_k;
        if (gen->has_top_p) p.top_p = gen->top_p;
    }
    return p;
}

tl_sampler *tl_sampler_create(int vocab_size, tl_sampling p)
{
    if (vocab_size <= 0) return NULL;
    tl_sampler *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->vocab = vocab_size;
    s->e = malloc(sizeof(float) * (size_t)vocab_size);
    s->bsum = malloc(sizeof(double) * (size_t)(vocab_size / TL_VS_BLOCK + 1));
    s->cand = malloc(sizeof(int) * (size_t)vocab_size);
    s->keys = malloc(sizeof(uint64_t) * (size_t)vocab_size);
    s->ec = malloc(sizeof(float) * (size_t)vocab_size);
    s->ek = malloc(sizeof(float) * (size_t)vocab_size);
    s->bmass = malloc(sizeof(double) * NUCLEUS_BUCKETS);
    if (!s->e || !s->bsum || !s->cand || !s->keys || !s->ec || !s->ek || !s->bmass) {
        tl_sampler_free(s);
        return NULL;
    }
    tl_sampler_set(s, p);
    return s;
}

void tl_sampler_free(tl_sampler *s)
{
    if (!s) return;
    free(s->e);
    free(s->bsum);
    free(s->cand);
    free(s->keys);
    free(s->ec);
    free(s->ek);
    free(s->bmass);
    free(s);
}

void tl_sampler_set(tl_sampler *s, tl_sampling p)
{
    s->p = p;
    seed_rng(s);
}

void tl_sampler_tune(tl_sampler *s, tl_sampling p)
{
    int reseed = p.seed != s->p.seed;
    s->p = p;
    if (reseed) seed_rng(s);
}

tl_sampling tl_sampler_get(const tl_sampler *s) { return s->p; }

static int use_temperature(const tl_sampling *p) { return !p->greedy && p->temperature > 0 && p->temperature != 1.0f; }
static int use_top_k(const tl_sampling *p) { return !p->greedy && p->top_k > 0; }
static int use_top_p(const tl_sampling *p) { return !p->greedy && p->top_p < 1.0f; }

static float key(float x) { return isnan(x) ? -INFINITY : x; }

/* A float's order as an unsigned integer: above it the id, so one comparison ranks by score
 * and then by id. Descending, that is the order the top-p rule reads from its most likely end:
 * transformers sorts ascending with a stable sort, lower id first among equal scores. */
static uint64_t rank_key(float x, int id)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u ^= (0u - (u >> 31)) | 0x80000000u;   /* negative: every bit flips; else the sign's */
    return (uint64_t)u << 32 | (uint32_t)id;
}

static void swap64(uint64_t *a, int i, int j)
{
    uint64_t t = a[i];
    a[i] = a[j];
    a[j] = t;
}

/* The same swap in a[] and, if not NULL, in its companion ev[]. */
static void swap2(uint64_t *a, float *ev, int i, int j)
{
    swap64(a, i, j);
    if (ev) {
        float t = ev[i];
        ev[i] = ev[j];
        ev[j] = t;
    }
}

/* Moves a median of three of a[l..r) to a[r-1], then the larger keys before it: returns the
 * pivot's place p, a[l..p) above it, a[p+1..r) below. Keys are distinct (they hold the id).
 * Inlined into each selection, so that select_top's has no companion to move: left to itself
 * GCC stopped inlining it once process() grew, and top-k 1000 lost ~20 us a step. */
#define SEL_INLINE static inline __attribute__((always_inline))
SEL_INLINE int partition(uint64_t *a, float *ev, int l, int r)
{
    int m = l + (r - l) / 2;
    if (a[m] < a[l]) swap2(a, ev, m, l);
    if (a[r - 1] < a[l]) swap2(a, ev, r - 1, l);
    if (a[m] < a[r - 1]) swap2(a, ev, m, r - 1);   /* now a[l] <= a[r-1] <= a[m] */
    uint64_t piv = a[r - 1];
    int i = l;
    for (int j = l; j < r - 1; j++)
        if (a[j] > piv) swap2(a, ev, i++, j);
    swap2(a, ev, i, r - 1);
    return i;
}

/* Quickselect: afterwards a[0..k) are the k largest of a[0..n), a[k-1] the smallest of them. */
static void select_top(uint64_t *a, int n, int k)
{
    int l = 0, r = n;
    while (r - l > 1) {
        int p = partition(a, NULL, l, r);
        if (p == k - 1) return;
        if (p > k - 1) r = p;
        else l = p + 1;
    }
}

/* The top-p cut without sorting: a token stays when the mass of the tokens ranked at or below
 * it, plus `below` (all ranked under a[]), exceeds lim_z; ea[] holds their e. That mass only
 * grows with the rank, so a quickselect on it finds the boundary; the kept ones end up in
 * a[0..return). */
SEL_INLINE int select_nucleus(uint64_t *a, float *ea, int n, double below, double lim_z, int keep_one)
{
    int l = 0, r = n;
    while (l < r) {
        int p = r - l == 1 ? l : partition(a, ea, l, r);
        double lo = 0;
        for (int j = p + 1; j < r; j++) lo += ea[j];
        if (below + lo + ea[p] > lim_z) {
            l = p + 1;   /* the pivot and all above it stay */
        } else {
            below += lo + ea[p];   /* the pivot and all below it go */
            r = p;
        }
    }
    if (l == 0 && n > 0 && keep_one) {   /* the most likely token always stays */
        int best = 0;
        for (int j = 1; j < n; j++)
            if (a[j] > a[best]) best = j;
        swap2(a, ea, 0, best);
        l = 1;
    }
    return l;
}

static double sum_e(const tl_sampler *s, int from, int to);

/* Tokens with logit >= the K-th best - d, until there are at least `need` of them and
 * (top_p_lim >= 0) the rest hold at most top_p_lim of zt. d starts from the spread of the
 * best K's lower half: K/2 more tokens per that much lower, so log2(need / K) spreads for
 * `need`; then it quadruples. A Gaussian-like tail thickens downwards, so the set is a few
 * times what is needed, not the vocabulary. The last try takes every token. Returns how many
 * are in cand[], with their mass in *mass. */
static int collect(tl_sampler *s, const float *logits, int need, double top_p_lim, double *mass)
{
    int V = s->vocab, K = s->ntop;
    float start = s->top_vals[K - 1], step = s->top_vals[K / 2] - start;
    if (!(step > 1e-3f)) step = 1.0f;
    float d = step * (need > K ? 1.5f * log2f((float)need / (float)K) + 1.0f : 1.0f);
    for (;; d *= 4) {
        float thr = d > 1e30f || start - d == -INFINITY ? -INFINITY : start - d;
        int c = vs_ge(logits, V, thr, s->cand);
        double m = 0;
        if (top_p_lim >= 0)   /* top-k's cut looks at counts only */
            m = c == V ? s->zt : sum_e(s, 0, c);
        *mass = m;
        if (thr == -INFINITY) return c;
        if (c >= need && (top_p_lim < 0 || s->zt - m <= (top_p_lim - TOP_P_MARGIN) * s->zt)) return c;
    }
}

static int kept_token(const tl_sampler *s, int id, float x)
{
    if (s->cut_k && !(x >= s->kth)) return 0;
    if (s->cut_p && !(x > s->xb || (x == s->xb && id >= s->ib))) return 0;
    return 1;
}

/* e of one score, as the vector passes compute it. */
static float e_one(const tl_sampler *s, float x) { return vs_exp_one(key(x), s->mx, s->scale); }

/* e of cand[j]. */
static inline float ce(const tl_sampler *s, int j) { return s->full ? s->e[s->cand[j]] : s->ec[j]; }

/* Sum of e over cand[from..to), four sums at a time (a long list: no chain of dependent adds). */
static double sum_e(const tl_sampler *s, int from, int to)
{
    double a[4] = {0, 0, 0, 0};
    int j = from;
    for (; j + 4 <= to; j += 4)
        for (int q = 0; q < 4; q++) a[q] += ce(s, j + q);
    for (; j < to; j++) a[0] += ce(s, j);
    return (a[0] + a[1]) + (a[2] + a[3]);
}

/* The tempered e of every token, with the block sums: a draw or a cut that may reach past the
 * best K needs them. The entropy's sum comes along when the report asks for it. */
static void full_pass(tl_sampler *s, const float *logits, unsigned fields)
{
    vs_exp(logits, s->vocab, s->mx, s->scale, s->e, s->bsum, &s->zt, (fields & TL_REPORT_TEMP) ? &s->wt : NULL);
    s->full = 1;
    s->have_zt = 1;
    s->have_wt = (fields & TL_REPORT_TEMP) != 0;
}

/* A top-p cut through one level of equal scores, the candidates cand[0..n) in ascending id
 * order (transformers' stable ascending sort puts the lower id first among equals, so the cut
 * removes those first): the first position whose mass with all before it, plus `below`,
 * exceeds lim_z. With every token a candidate, the block sums of the full pass stand for the
 * positions' sums. The most likely token (the last) always stays. *removed: the mass before. */
static int level_cut(const tl_sampler *s, int n, double below, double lim_z, double *removed)
{
    double acc = below;
    int j = 0;
    if (s->full && n == s->vocab) {
        for (int b = 0; j + TL_VS_BLOCK <= n && !(acc + s->bsum[b] > lim_z); b++, j += TL_VS_BLOCK)
            acc += s->bsum[b];
    } else {
        for (; j + 256 <= n; j += 256) {
            double c = sum_e(s, j, j + 256);
            if (acc + c > lim_z) break;
            acc += c;
        }
    }
    for (; j < n; j++) {
        double e = ce(s, j);
        if (acc + e > lim_z) break;
        acc += e;
    }
    if (j >= n) {   /* the most likely token: the highest id of the top level */
        j = n - 1;
        acc -= ce(s, j);
    }
    *removed = acc - below;
    return j;
}

/* The top-k cut: the tokens with a score >= the k-th largest into cand[], their count returned. */
static int cut_top_k(tl_sampler *s, const float *logits, int k)
{
    int V = s->vocab, K = s->ntop;
    if (k < K && !(K < V && s->top_vals[K - 1] == s->top_vals[k - 1])) {
        /* the best K hold the k-th and every tie with it */
        s->kth = s->top_vals[k - 1];
        int n = 0;
        while (n < K && s->top_vals[n] >= s->kth) {
            s->cand[n] = s->top_ids[n];
            n++;
        }
        return n;
    }
    if (k <= K) {   /* a tie with the k-th goes on past the K-th: the k-th is known, the ties not */
        s->kth = s->top_vals[k - 1];
        return vs_ge(logits, V, s->kth, s->cand);
    }
    /* k past the best K: if at least k score >= the K-th, the k-th is the K-th (only the K-1
     * above it can be larger); all equal scores, for one, come here */
    double m;
    float last = s->top_vals[K - 1];
    int c = collect(s, logits, k, -1, &m), ge = 0;
    if (c > 16384) {   /* one more vector pass rather than a long scalar one */
        ge = vs_ge(logits, V, last, s->cand);
        if (ge >= k) {
            s->kth = last;
            return ge;
        }
        c = collect(s, logits, k, -1, &m);
    } else {
        for (int j = 0; j < c; j++) ge += logits[s->cand[j]] >= last;
        if (ge >= k) {
            int n = 0;
            for (int j = 0; j < c; j++)
                if (logits[s->cand[j]] >= last) s->cand[n++] = s->cand[j];
            s->kth = last;
            return n;
        }
    }
    if (k > c) k = c;   /* NaN scores are never kept */
    uint64_t *a = s->keys;
    for (int j = 0; j < c; j++) a[j] = rank_key(logits[s->cand[j]], s->cand[j]);
    select_top(a, c, k);
    s->kth = key(logits[(uint32_t)a[k - 1]]);
    int n = k;
    for (int j = k; j < c; j++)   /* equal to the k-th, a lower id: stays too */
        if (logits[(uint32_t)a[j]] >= s->kth) swap64(a, n++, j);
    for (int j = 0; j < n; j++) s->cand[j] = (int)(uint32_t)a[j];
    return n;
}

/* select_nucleus for many candidates cand[0..n): their rank keys go into NUCLEUS_BUCKETS
 * buckets (the keys' range split evenly), each bucket's mass is summed, and the walk up from
 * the least likely bucket finds the one the cut falls in. The buckets above it stay whole,
 * those below go, and the boundary bucket's tokens are bucketed again, finer, until few are
 * left for select_nucleus. The keys hold the id below the score, so a level of equal scores
 * (an untrained model's unused tokens) is split by id as transformers' stable sort orders it.
 * Leaves the kept tokens in cand[0..return) with their e in ec[], and the lowest kept rank key
 * in *low. */
static int nucleus_buckets(tl_sampler *s, const float *logits, int n, double below, double lim_z, uint64_t *low)
{
    uint64_t *a = s->keys;
    float *ea = s->ek;
    for (int j = 0; j < n; j++) {
        a[j] = rank_key(key(logits[s->cand[j]]), s->cand[j]);
        ea[j] = ce(s, j);
    }
    /* cand[] and ec[] are free from here: the kept tokens go there */
    int kept = 0, m = n;
    uint64_t lo = UINT64_MAX;
    double *mass = s->bmass;
    while (m > NUCLEUS_BUCKET_MIN) {
        uint64_t kmin = UINT64_MAX, kmax = 0;
        for (int j = 0; j < m; j++) {
            kmin = a[j] < kmin ? a[j] : kmin;
            kmax = a[j] > kmax ? a[j] : kmax;
        }
        int shift = 0;
        while (((kmax - kmin) >> shift) >= NUCLEUS_BUCKETS) shift++;
        int top = (int)((kmax - kmin) >> shift), B = 0;
        memset(mass, 0, sizeof(double) * (size_t)(top + 1));
        /* a run of tokens in one bucket (a level of equal scores) adds in a register: through
         * memory each add would wait for the last one's store */
        uint64_t prev = 0;
        double run = 0;
        for (int j = 0; j < m; j++) {
            uint64_t b = (a[j] - kmin) >> shift;
            if (b != prev) {
                mass[prev] += run;
                run = 0;
                prev = b;
            }
            run += ea[j];
        }
        mass[prev] += run;
        /* the boundary: the first bucket, from the bottom, whose mass takes the sum past
         * lim_z; at the top without passing, everything may go (select_nucleus keeps the best) */
        while (B < top && !(below + mass[B] > lim_z)) below += mass[B++];
        int nb = 0;
        for (int j = 0; j < m; j++) {   /* without branches: which way a token goes is a coin toss */
            uint64_t k = a[j];
            int b = (int)((k - kmin) >> shift);
            float e = ea[j];
            s->cand[kept] = (int)(uint32_t)k;
            s->ec[kept] = e;
            kept += b > B;
            lo = b > B && k < lo ? k : lo;
            a[nb] = k;   /* nb <= j: nothing unread is overwritten */
            ea[nb] = e;
            nb += b == B;
        }
        m = nb;
    }
    int kb = select_nucleus(a, ea, m, below, lim_z, kept == 0);
    for (int j = 0; j < kb; j++) {
        s->cand[kept] = (int)(uint32_t)a[j];
        s->ec[kept++] = ea[j];
        lo = a[j] < lo ? a[j] : lo;
    }
    *low = lo;
    return kept;
}

/* Relative to the mass of the best few, what the rest of the vocabulary may hold and still be
 * left out of the top-p sum: ten times below the float sums' own error (~1e-7). */
#define REST_NEGLIGIBLE 1e-8

/* The best K scores (K: what the report shows and the cuts need) and the sums the choice and the
 * report ask for, read from the pass's statistics st when they hold them, else by one vector pass;
 * the step's fields start from there. *no_cut: every token may be drawn. Returns K. */
static int read_top(tl_sampler *s, const float *logits, const tl_logit_stats *st, int top_n, unsigned fields,
                    int *no_cut)
{
    const tl_sampling *p = &s->p;
    int V = s->vocab;
    int K = top_n < 1 ? 1 : top_n;
    /* one past top-k's k, to see whether a tie with the k-th goes on past it (top-p then cuts
     * within those); all the room there is when a cut may need more than that, for collect()'s
     * first guess */
    int small_k = use_top_k(p) && p->top_k < TL_MAX_TOP;
    if (small_k && p->top_k + 1 > K) K = p->top_k + 1;
    if ((use_top_k(p) && !small_k) || (use_top_p(p) && !small_k)) K = TL_MAX_TOP;
    if (K > TL_MAX_TOP) K = TL_MAX_TOP;
    if (K > V) K = V;
    s->ntop = K;
    s->scale = use_temperature(p) ? 1.0f / p->temperature : 1.0f;
    /* the model's own softmax comes with the best K in one read; at T = 1 it is the tempered one */
    int t1 = s->scale == 1.0f;
    int raw = (fields & TL_REPORT_MODEL) || (t1 && (fields & TL_REPORT_TEMP));
    int raw_w = t1 && (fields & TL_REPORT_TEMP);
    /* a top-k of the whole vocabulary or more cuts nothing (transformers: min(top_k, V)) */
    *no_cut = !p->greedy && !(use_top_k(p) && p->top_k < V) && !use_top_p(p);
    if (*no_cut && t1) raw = raw_w = 0;   /* the full pass below is the model's softmax */
    s->zr = s->wr = 0;
    /* the pass's statistics stand for the passes below when they hold what they would give */
    int pre = st && st->k >= K && (!raw_w || (st->has & TL_STATS_W));
    if (pre) {
        memcpy(s->top_ids, st->ids, sizeof(int) * (size_t)K);
        memcpy(s->top_vals, st->vals, sizeof(float) * (size_t)K);
        s->zr = st->sumexp;
        s->wr = st->wsum;
        raw = 1;
        raw_w = (st->has & TL_STATS_W) != 0;
    } else if (raw) {
        vs_top_sum(logits, V, K, s->top_ids, s->top_vals, &s->zr, raw_w ? &s->wr : NULL);
    } else {
        vs_top(logits, V, K, s->top_ids, s->top_vals);
    }
    s->have_zr = raw;
    s->mx = s->top_vals[0];
    s->nlist = -1;
    s->c0 = s->from = 0;
    s->cut_k = s->cut_p = 0;
    s->full = 0;
    s->zt = s->wt = 0;
    s->have_zt = t1 && raw;
    s->have_wt = raw_w;
    if (s->have_zt) {
        s->zt = s->zr;
        s->wt = s->wr;
    } else if (pre && (st->has & TL_STATS_SCALED) && st->scale == s->scale) {
        s->zt = st->sumexp_s;
        s->wt = st->wsum_s;
        s->have_zt = 1;
        s->have_wt = (st->has & TL_STATS_W) != 0;
    }
    s->zk = 0;
    return K;
}

/* Top-p without a top-k list: the candidates into cand[0..nlist) (their e in ec[] or, after a full
 * pass, e[]), *z the total mass and *tail what lies below the candidates, all of it cut.
 * The tokens above the K-th best, if what lies below is sure to be cut; ties with the K-th stay
 * out so that the set is closed under equal scores. Unless a full pass says how much lies below,
 * it is at most V - n times the K-th's e: when that is negligible, the best K's mass stands for
 * the total. */
static void top_p_candidates(tl_sampler *s, const float *logits, int K, double lim, unsigned fields, double *z,
                             double *tail)
{
    int V = s->vocab;
    int n = 0;
    double m = 0;
    float last = s->top_vals[K - 1];
    for (int j = 0; j < K; j++)
        if (K == V || s->top_vals[j] > last) {
            s->ec[n] = s->top_e[j];
            s->cand[n++] = s->top_ids[j];
            m += s->top_e[j];
        }
    double rest = K == V ? 0 : (double)(V - n) * e_one(s, last);
    int within = n > 0 && rest <= REST_NEGLIGIBLE * m && rest <= (lim - TOP_P_MARGIN) * m;
    /* the pass's tempered sum: the rest of the vocabulary is cut, as a full pass finds */
    int summed = !within && s->have_zt && n > 0 && s->zt - m <= (lim - TOP_P_MARGIN) * s->zt;
    if (!within && !summed && n > 0 && s->scale > 0) {
        /* below the score whose e, V times over, is negligible against the best K's mass
         * nothing counts: the tokens above it, if few, are the candidates (one compare
         * pass and their e instead of an exp pass over the vocabulary) */
        float tau = s->mx + (float)(log(0.5 * REST_NEGLIGIBLE * m / V) / s->scale);
        int c = tau < last ? vs_ge(logits, V, tau, s->cand) : 0;
        if (c > 0 && c <= 2048) {   /* more: one vector pass is cheaper */
            for (int j = 0; j < c; j++) s->ec[j] = e_one(s, logits[s->cand[j]]);
            double m2 = sum_e(s, 0, c);
            rest = (double)(V - c) * e_one(s, tau);
            within = rest <= REST_NEGLIGIBLE * m2 && rest <= (lim - TOP_P_MARGIN) * m2;
            if (within) {
                n = c;
                m = m2;
            }
        }
        if (!within) {   /* cand[] again: the best K above the K-th */
            n = 0;
            for (int j = 0; j < K; j++)
                if (s->top_vals[j] > last) {
                    s->ec[n] = s->top_e[j];
                    s->cand[n++] = s->top_ids[j];
                }
        }
    }
    if (within) {
        *z = m;
    } else if (summed) {   /* what the full pass below gives, without its e[] */
        *z = s->zt;
        *tail = s->zt - m;
        if (*tail < 0) *tail = 0;
    } else {
        full_pass(s, logits, fields);
        *z = s->zt;
        if (K < V && !(n > 0 && s->zt - m <= (lim - TOP_P_MARGIN) * s->zt))
            n = collect(s, logits, 1, lim, &m);
        *tail = s->zt - m;
        if (*tail < 0 || n == V) *tail = 0;
    }
    s->nlist = n;
}

/* The top-p cut of the candidates cand[0..nlist) (their e in ec[] or e[]): z is the total mass,
 * tail the part of it below the candidates. Returns the number of tokens kept, with zk their mass.
 */
static int cut_top_p(tl_sampler *s, const float *logits, double z, double tail, double lim)
{
    int V = s->vocab;
    /* transformers: ascending cumulative softmax from the least likely side (the tail
     * first, all of it cut), remove where cum <= 1 - top_p, the most likely token stays */
    int n = s->nlist;
    int one_level = n > 4096 && (s->cut_k ? s->kth == s->mx : vs_count_ge(logits, V, s->mx) == n);
    if (one_level) {
        /* every candidate scores the maximum (cand[] from vs_ge: ascending ids) */
        double removed;
        int j = level_cut(s, n, tail, lim * z, &removed);
        s->ib = s->cand[j];
        s->xb = s->mx;
        s->zk = z - removed;
        s->cut_p = 1;
        if (n == V && s->full) {   /* the kept ids are ib..V-1: the draw walks the block sums */
            s->from = s->ib;
            s->nlist = -1;
            return V - s->ib;
        }
        s->c0 = j;
        s->nlist = n - j;
        return s->nlist;
    }
    int kept;
    uint64_t low;
    if (n > NUCLEUS_BUCKET_MIN) {
        kept = nucleus_buckets(s, logits, n, tail, lim * z, &low);
    } else {
        uint64_t *a = s->keys;
        for (int j = 0; j < n; j++) {
            a[j] = rank_key(key(logits[s->cand[j]]), s->cand[j]);
            s->ek[j] = ce(s, j);
        }
        kept = select_nucleus(a, s->ek, n, tail, lim * z, 1);
        low = a[0];
        for (int j = 0; j < kept; j++) {
            s->cand[j] = (int)(uint32_t)a[j];
            s->ec[j] = s->ek[j];   /* a full pass's e[] holds them too */
            if (a[j] < low) low = a[j];
        }
    }
    s->nlist = kept;
    s->cut_p = 1;
    s->ib = (int)(uint32_t)low;
    s->xb = key(logits[s->ib]);
    z = sum_e(s, 0, kept);
    if (s->nlist == V) {   /* every token kept: the draw walks the block sums */
        s->zk = s->zt;
        s->nlist = -1;
        return V;
    }
    s->zk = z;
    return s->nlist;
}

/* The step's numbers (see the struct). Returns the number of tokens kept. What is computed for
 * the choice never depends on `fields`: the report's figures are extra passes. */
static int process(tl_sampler *s, const float *logits, const tl_logit_stats *st, int top_n, unsigned fields)
{
    const tl_sampling *p = &s->p;
    int V = s->vocab, no_cut;
    int K = read_top(s, logits, st, top_n, fields, &no_cut);
    int t1 = s->scale == 1.0f;
    if (s->mx == -INFINITY) {   /* nothing to exponentiate: every score -inf or NaN */
        s->zt = s->zr = 0;
        s->have_zt = s->have_wt = 1;
        return p->greedy ? 1 : V;
    }
    if (p->greedy) {
        s->zk = s->zt;
        return 1;
    }
    int list = 0;
    double z = 0, tail = 0;
    if (no_cut) {
        full_pass(s, logits, fields);   /* every token may be drawn */
        if (t1) {
            s->zr = s->zt;
            s->have_zr = 1;
        }
    } else if (use_top_k(p) && p->top_k < V) {
        int n = cut_top_k(s, logits, p->top_k);
        s->cut_k = 1;
        list = 1;
        if (n == V || n > V / 16) {
            full_pass(s, logits, fields);
            z = n == V ? s->zt : sum_e(s, 0, n);
        } else {
            for (int j = 0; j < n; j++) s->ec[j] = e_one(s, logits[s->cand[j]]);
            z = sum_e(s, 0, n);
        }
        s->nlist = n;
    }
    for (int j = 0; j < K; j++)   /* the best K's e, for the report and for top-p's first look */
        s->top_e[j] = e_one(s, s->top_vals[j]);
    if (use_top_p(p)) {
        double lim = 1.0 - (double)p->top_p;
        if (!list) top_p_candidates(s, logits, K, lim, fields, &z, &tail);
        return cut_top_p(s, logits, z, tail, lim);
    }
    if (!list || s->nlist == V) {   /* every token kept: the draw walks the block sums */
        s->zk = s->zt;
        s->nlist = -1;
        return V;
    }
    s->zk = z;
    return s->nlist;
}

/* u in [0, zk): the token where the running sum of e passes u. Kept tokens in cand[] order
 * (a long list by sums of 256 first), or (the ids from `from` on) by id through the block sums. */
static int draw(tl_sampler *s)
{
    double u = rng_uniform(s->rng) * s->zk, acc = 0;
    if (s->nlist >= 0) {
        const int *c = s->cand + s->c0;
        int n = s->nlist, j = 0, last = c[0];
        for (; j + 256 <= n; j += 256) {
            double b = sum_e(s, s->c0 + j, s->c0 + j + 256);
            if (u < acc + b) break;
            acc += b;
        }
        for (; j < n; j++) {
            int i = c[j];
            float e = ce(s, s->c0 + j);
            if (e > 0) last = i;
            acc += e;
            if (u < acc) return i;
        }
        return last;   /* rounding left u at the very end */
    }
    int V = s->vocab, nb = (V + TL_VS_BLOCK - 1) / TL_VS_BLOCK, b = s->from / TL_VS_BLOCK;
    int i = s->from, last = -1;
    if (i % TL_VS_BLOCK) {   /* a range starting inside a block: that block's part first */
        for (int i1 = (b + 1) * TL_VS_BLOCK < V ? (b + 1) * TL_VS_BLOCK : V; i < i1; i++) {
            if (s->e[i] > 0) last = i;
            acc += s->e[i];
            if (u < acc) return i;
        }
        b++;
    }
    for (; b < nb; b++) {
        if (!(u < acc + s->bsum[b]) && b < nb - 1) {
            acc += s->bsum[b];
            continue;
        }
        int i0 = b * TL_VS_BLOCK, i1 = i0 + TL_VS_BLOCK < V ? i0 + TL_VS_BLOCK : V;
        for (i = i0; i < i1; i++) {
            if (s->e[i] > 0) last = i;
            acc += s->e[i];
            if (u < acc) return i;
        }
        /* the block's vector sum and this running one differ in the last bits */
        if (last >= 0) return last;
    }
    return last >= 0 ? last : s->top_ids[0];
}

static void fill_report(tl_sampler *s, const float *logits, int top_n, int chosen, int kept, unsigned fields,
                        tl_sample_report *rep)
{
    int V = s->vocab;
    if (top_n < 1) top_n = 1;
    if (top_n > TL_MAX_TOP) top_n = TL_MAX_TOP;
    if (top_n > V) top_n = V;
    double mx = s->mx, t = s->scale == 1.0f ? 1.0 : s->p.temperature;
    /* the tempered figures: from the pass the choice made, or one more */
    if ((fields & TL_REPORT_TEMP) && !(s->have_zt && s->have_wt) && mx > -INFINITY) {
        vs_exp(logits, V, s->mx, s->scale, NULL, NULL, &s->zt, &s->wt);
        s->have_zt = s->have_wt = 1;
    }
    memset(rep, 0, sizeof *rep);
    rep->fields = fields & TL_REPORT_ALL;
    int model = (fields & TL_REPORT_MODEL) != 0, temp = (fields & TL_REPORT_TEMP) != 0;
    rep->chosen = chosen;
    rep->n = top_n;
    /* H = -sum q log q with q = e / zt and log q = d - log zt, d = (logit - max) / t */
    rep->entropy = !temp ? NAN : s->zt > 0 ? log(s->zt) - s->wt / s->zt : 0;
    rep->kept = kept;
    rep->log_z = !model ? NAN : s->zr > 0 ? mx + log(s->zr) : INFINITY;
    rep->chosen_logit = chosen >= 0 && chosen < V ? logits[chosen] : -INFINITY;
    double in = 0;
    for (int j = 0; j < top_n; j++) {
        int i = s->top_ids[j];
        float x = key(logits[i]);
        tl_candidate *c = &rep->cand[j];
        c->id = i;
        c->logit = logits[i];
        c->prob = model ? 0.0f : NAN;
        c->prob_temp = temp ? 0.0f : NAN;
        if (mx == -INFINITY) continue;
        if (model && s->zr > 0) c->prob = (float)(exp((double)x - mx) / s->zr);
        if (temp && s->zt > 0) {
            double pt = exp(((double)x - mx) / t) / s->zt;
            c->prob_temp = (float)pt;
            in += pt;
        }
        int k = kept_token(s, i, x);
        c->cut_top_k = s->cut_k && !(x >= s->kth);
        c->cut_top_p = !k && !c->cut_top_k;
        if (s->p.greedy) c->prob_final = i == chosen ? 1.0f : 0.0f;
        else c->prob_final = k && s->zk > 0 ? (float)((s->full ? s->e[i] : s->top_e[j]) / s->zk) : 0.0f;
    }
    rep->mass_outside = !temp ? NAN : in >= 1.0 ? 0.0 : 1.0 - in;
}

void tl_sampler_stats_want(const tl_sampler *s, unsigned fields, unsigned *what, float *scale)
{
    const tl_sampling *p = &s->p;
    *scale = use_temperature(p) ? 1.0f / p->temperature : 1.0f;
    *what = (fields & TL_REPORT_TEMP) ? TL_STATS_W : 0;
    if (*scale != 1.0f && (use_top_p(p) || (fields & TL_REPORT_TEMP))) *what |= TL_STATS_SCALED;
}

int tl_sampler_choose_with(tl_sampler *s, const float *logits, const tl_logit_stats *st, int top_n, unsigned fields,
                           tl_sample_report *rep)
{
    int kept = process(s, logits, st, rep ? top_n : 1, rep ? fields : 0);
    int chosen = s->p.greedy || !(s->zk > 0) ? s->top_ids[0] : draw(s);
    if (rep) fill_report(s, logits, top_n, chosen, kept, fields, rep);
    return chosen;
}

int tl_sampler_choose(tl_sampler *s, const float *logits, int top_n, unsigned fields, tl_sample_report *rep)
{
    return tl_sampler_choose_with(s, logits, NULL, top_n, fields, rep);
}

int tl_sampler_sample(tl_sampler *s, const float *logits, int top_n, tl_sample_report *rep)
{
    return tl_sampler_choose(s, logits, top_n, TL_REPORT_ALL, rep);
}

void tl_sampler_explain(tl_sampler *s, const float *logits, int top_n, int chosen, unsigned fields,
                        tl_sample_report *rep)
{
    int kept = process(s, logits, NULL, top_n, rep ? fields : 0);
    if (rep) fill_report(s, logits, top_n, chosen, kept, fields, rep);
}
