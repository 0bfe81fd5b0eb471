/* transformers' sampling pipeline: TemperatureLogitsWarper -> TopKLogitsWarper ->
 * TopPLogitsWarper -> softmax -> multinomial; or argmax when not sampling. Each warper is
 * skipped at its neutral value (temperature 1, top_k 0, top_p 1), as transformers does not add
 * it then. Arithmetic in double; the RNG is our own (xoshiro256**), seeded per sampler. */
#define _GNU_SOURCE
#include "tokenloop/sampler.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct tl_sampler {
    int vocab;
    tl_sampling p;
    uint64_t rng[4];
    double *x;      /* processed logits (-inf when cut) */
    double *e;      /* exp(logit / t - max), before the cuts */
    double zt, zk;  /* sums of e: all tokens, kept tokens */
    int *idx;       /* scratch: sorted indices */
    unsigned char *cut; /* 1 top-k, 2 top-p */
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
    s->x = malloc(sizeof(double) * (size_t)vocab_size);
    s->e = malloc(sizeof(double) * (size_t)vocab_size);
    s->idx = malloc(sizeof(int) * (size_t)vocab_size);
    s->cut = malloc((size_t)vocab_size);
    if (!s->x || !s->e || !s->idx || !s->cut) {
        tl_sampler_free(s);
        return NULL;
    }
    tl_sampler_set(s, p);
    return s;
}

void tl_sampler_free(tl_sampler *s)
{
    if (!s) return;
    free(s->x);
    free(s->e);
    free(s->idx);
    free(s->cut);
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

/* Sorting by value with ties broken by index keeps every order deterministic. */
static int by_value_desc(const void *a, const void *b, void *ctx)
{
    const double *key = ctx;
    int i = *(const int *)a, j = *(const int *)b;
    if (key[i] > key[j]) return -1;
    if (key[i] < key[j]) return 1;
    return (i > j) - (i < j);
}

/* Top n indices of v by value, descending (partial selection, then a sort of n). */
static int top_indices(const double *v, int len, int n, int *out)
{
    if (n > len) n = len;
    int m = 0;
    for (int i = 0; i < len; i++) {
        if (m < n) {
            int j = m++;
            while (j > 0 && (v[out[j - 1]] < v[i])) { out[j] = out[j - 1]; j--; }
            out[j] = i;
        } else if (v[i] > v[out[n - 1]]) {
            int j = n - 1;
            while (j > 0 && v[out[j - 1]] < v[i]) { out[j] = out[j - 1]; j--; }
            out[j] = i;
        }
    }
    return m;
}

static int top_indices_f(const float *v, int len, int n, int *out)
{
    if (n > len) n = len;
    int m = 0;
    for (int i = 0; i < len; i++) {
        if (m < n || v[i] > v[out[n - 1]]) {
            int j = m < n ? m++ : n - 1;
            while (j > 0 && v[out[j - 1]] < v[i]) { out[j] = out[j - 1]; j--; }
            out[j] = i;
        }
    }
    return m;
}

static int use_temperature(const tl_sampling *p) { return !p->greedy && p->temperature > 0 && p->temperature != 1.0f; }
static int use_top_k(const tl_sampling *p) { return !p->greedy && p->top_k > 0; }
static int use_top_p(const tl_sampling *p) { return !p->greedy && p->top_p < 1.0f; }

/* Runs the pipeline: s->x processed logits (-inf when cut), s->e = exp(logit/t - max) for every
 * token (before any cut), s->zt its sum, s->zk the sum over the kept tokens. Returns the number
 * of tokens kept. */
static int process(tl_sampler *s, const float *logits)
{
    const tl_sampling *p = &s->p;
    int V = s->vocab;
    double t = use_temperature(p) ? p->temperature : 1.0, mx = -INFINITY;
    for (int i = 0; i < V; i++) {
        s->x[i] = (double)logits[i] / t;
        s->cut[i] = 0;
        if (s->x[i] > mx) mx = s->x[i];
    }
    s->zt = 0;
    for (int i = 0; i < V; i++) s->zt += (s->e[i] = exp(s->x[i] - mx));
    s->zk = s->zt;
    if (p->greedy) return 1;
    int kept = V;
    if (use_top_k(p) && p->top_k < V) {
        /* scores < k-th largest are removed: ties with the k-th value stay. */
        int k = p->top_k;
        top_indices(s->x, V, k, s->idx);
        double kth = s->x[s->idx[k - 1]];
        kept = 0;
        for (int i = 0; i < V; i++) {
            if (s->x[i] < kth) { s->cut[i] = 1; s->x[i] = -INFINITY; }
            else kept++;
        }
    }
    if (use_top_p(p)) {
        /* Ascending order; cumulative softmax from the least likely side; remove where
         * cum <= 1 - top_p; the most likely token always stays. */
        int n = 0;
        double z = 0;
        for (int i = 0; i < V; i++)
            if (!s->cut[i]) {
                s->idx[n++] = i;
                z += s->e[i];
            }
        qsort_r(s->idx, (size_t)n, sizeof(int), by_value_desc, s->x);
        double cum = 0, lim = 1.0 - (double)p->top_p;
        for (int j = n - 1; j >= 1; j--) {   /* least likely first; j == 0 is always kept */
            cum += s->e[s->idx[j]] / z;
            if (cum <= lim) {
                s->cut[s->idx[j]] = 2;
                s->x[s->idx[j]] = -INFINITY;
                kept--;
            } else {
                break;   /* cum only grows */
            }
        }
    }
    if (kept < V) {
        s->zk = 0;
        for (int i = 0; i < V; i++)
            if (!s->cut[i]) s->zk += s->e[i];
    }
    return kept;
}

static void fill_report(tl_sampler *s, const float *logits, int top_n, int chosen, int kept,
                        tl_sample_report *rep)
{
    int V = s->vocab;
    if (top_n < 1) top_n = 1;
    if (top_n > TL_MAX_TOP) top_n = TL_MAX_TOP;
    if (top_n > V) top_n = V;
    int t_on = use_temperature(&s->p);
    /* the raw softmax differs from the tempered one only when a temperature applies */
    double mx = -INFINITY, z = 0, ent = 0;
    for (int i = 0; i < V; i++)
        if (logits[i] > mx) mx = logits[i];
    if (t_on)
        for (int i = 0; i < V; i++) z += exp(logits[i] - mx);
    else
        z = s->zt;
    for (int i = 0; i < V; i++) {
        double q = s->e[i] / s->zt;
        if (q > 0) ent -= q * log(q);
    }
    int top[TL_MAX_TOP];
    int n = top_indices_f(logits, V, top_n, top);
    memset(rep, 0, sizeof *rep);
    rep->chosen = chosen;
    rep->n = n;
    rep->entropy = ent;
    rep->kept = kept;
    double in = 0;
    for (int j = 0; j < n; j++) {
        int i = top[j];
        tl_candidate *c = &rep->cand[j];
        c->id = i;
        c->logit = logits[i];
        c->prob = (float)(t_on ? exp(logits[i] - mx) / z : s->e[i] / z);
        double pt = s->e[i] / s->zt;
        c->prob_temp = (float)pt;
        in += pt;
        c->cut_top_k = s->cut[i] == 1;
        c->cut_top_p = s->cut[i] == 2;
        if (s->p.greedy) c->prob_final = i == chosen ? 1.0f : 0.0f;
        else c->prob_final = s->cut[i] ? 0.0f : (float)(s->e[i] / s->zk);
    }
    rep->mass_outside = in >= 1.0 ? 0.0 : 1.0 - in;
}

static int argmax(const float *v, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[b]) b = i;
    return b;
}

int tl_sampler_sample(tl_sampler *s, const float *logits, int top_n, tl_sample_report *rep)
{
    int kept = process(s, logits);
    int chosen;
    if (s->p.greedy) {
        chosen = argmax(logits, s->vocab);
    } else {
        double u = rng_uniform(s->rng) * s->zk, acc = 0;
        chosen = -1;
        int last = -1;
        for (int i = 0; i < s->vocab; i++) {
            if (s->cut[i]) continue;
            last = i;
            acc += s->e[i];
            if (u < acc) { chosen = i; break; }
        }
        if (chosen < 0) chosen = last >= 0 ? last : argmax(logits, s->vocab);
    }
    if (rep) fill_report(s, logits, top_n, chosen, kept, rep);
    return chosen;
}

void tl_sampler_explain(tl_sampler *s, const float *logits, int top_n, int chosen, tl_sample_report *rep)
{
    int kept = process(s, logits);
    if (rep) fill_report(s, logits, top_n, chosen, kept, rep);
}
