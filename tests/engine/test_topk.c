/* tl_topk against a full sort (score descending, then id ascending) on random scores with
 * ties, -inf and NaN; its softmax sum against a direct double sum, within the error of a float
 * exp; each on every vector path this CPU has (AVX-512, AVX2, portable); and the engine's
 * keep_top mode against the scores of the same pass copied in full (argv[1]: a generated
 * checkpoint). */
#include <stdint.h>
#include <stdlib.h>

#include "../common/tl_test.h"
#include "tokenloop/engine.h"
#include "tokenloop/sampler.h"
#include "tokenloop/topk.h"
#include "../../core/vecsel.h"

static uint64_t rng = 12345;

static uint32_t next(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}

static const float *sort_key;

static float key(float x) { return isnan(x) ? -INFINITY : x; }

static int by_rank(const void *a, const void *b)
{
    int i = *(const int *)a, j = *(const int *)b;
    float x = key(sort_key[i]), y = key(sort_key[j]);
    if (x != y)
        return x > y ? -1 : 1;
    return (i > j) - (i < j);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "tokenloop/scores_avx512.h"
#define HAVE_KERNEL_STEP 1
/* The decode kernel's step (tl_cpu_scores_add16, as mv_avx512bf16.c calls it) over a piece,
 * sixteen scores at a time, the last ones masked. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma"))) static void kernel_step(vs_acc *a, const float *v,
                                                                                        int64_t i0, int n)
{
    tl_cpu_scores *s = vs_acc_scores(a);
    int ge = i0 < s->next;
    if (i0 + n > s->next) s->next = i0 + n;
    tl_cpu_lanes l;
    tl_cpu_lanes_load(s, &l);
    for (int i = 0; i < n; i += 16) {
        __mmask16 in = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512 x = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), in, v + i);
        tl_cpu_scores_add16(s, &l, x, v + i, i0 + i, ge, s->want);
    }
    tl_cpu_lanes_store(s, &l);
}

static int have_avx512(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}
#else
#define HAVE_KERNEL_STEP 0
static void kernel_step(vs_acc *a, const float *v, int64_t i0, int n) { vs_acc_add(a, v, i0, n); }
static int have_avx512(void) { return 0; }
#endif

/* The accumulator the engine feeds while the last product writes the scores: pieces of v
 * handed to three threads' accumulators, in ascending order and shuffled, give tl_topk's ids
 * and vals exactly and its sum within the rounding of adding the same float exps in another
 * order; the entropy sum and the tempered sums against double sums, within the float exp's
 * error (1e-6 of the largest term's scale). Fed by vs_acc_add (scores already written) and by
 * the decode kernel's own step (where this CPU has AVX-512). */
static void check_pieces(const float *v, int n, int k, int kind, const int *ids, const float *vals, double z)
{
    static const int piece_sizes[] = {1, 16, 300, 4008};
    static const float scales[] = {1.0f, 1.0f / 0.6f, 1.0f / 1.7f};
    for (size_t sc = 0; sc < sizeof scales / sizeof *scales; sc++) {
        double mx = vals[0], zs = 0, w = 0, ws = 0, big = 0;
        for (int i = 0; i < n && mx > -INFINITY; i++)
            if (!isnan(v[i]) && v[i] > -INFINITY) {
                double d = (double)v[i] - mx, ds = d * scales[sc];
                zs += exp(ds);
                w += exp(d) * d;
                ws += exp(ds) * ds;
                if (fabs(d) > big) big = fabs(d);
            }
        double tol = 1e-6 * (1 + big) * (z + zs) + 1e-300;
        for (int feed = 0; feed < 1 + (HAVE_KERNEL_STEP && have_avx512()); feed++)
        for (int order = 0; order < 2; order++)
            for (size_t ps = 0; ps < sizeof piece_sizes / sizeof *piece_sizes; ps++) {
                if (piece_sizes[ps] == 1 && n > 4096) continue;   /* a call a score: slow, and 17..2049 cover it */
                int len = piece_sizes[ps], np = (n + len - 1) / len;
                int *perm = malloc(sizeof(int) * (size_t)np);
                for (int i = 0; i < np; i++) perm[i] = i;
                for (int i = np - 1; order && i > 0; i--) {   /* shuffled: a slot sees ids go down */
                    int j = (int)(next() % (uint32_t)(i + 1)), t = perm[i];
                    perm[i] = perm[j];
                    perm[j] = t;
                }
                vs_acc acc[3];
                for (int t = 0; t < 3; t++) vs_acc_init(&acc[t], k, TL_STATS_W | TL_STATS_SCALED, scales[sc]);
                for (int i = 0; i < np; i++) {
                    int p0 = perm[i] * len, m = n - p0 < len ? n - p0 : len;
                    vs_acc *a = &acc[(int)(next() % 3)];
                    if (feed) kernel_step(a, v + p0, p0, m);
                    else vs_acc_add(a, v + p0, p0, m);
                }
                tl_logit_stats st;
                vs_acc_finish(acc, 3, v, n, &st);
                int want = k < n ? k : n, same = st.k == want;
                for (int j = 0; j < want && same; j++)
                    same = st.ids[j] == ids[j] && !memcmp(&st.vals[j], &vals[j], sizeof(float));
                TL_CHECK_MSG(same, "n %d k %d kind %d pieces %d order %d feed %d: the accumulator's best k differ from "
                             "tl_topk's", n, k, kind, len, order, feed);
                TL_CHECK_MSG(fabs(st.sumexp - z) <= 1e-6 * z + 1e-300 && fabs(st.sumexp_s - zs) <= tol &&
                                 fabs(st.wsum - w) <= tol && fabs(st.wsum_s - ws) <= tol,
                             "n %d k %d kind %d pieces %d order %d scale %g: sums %.9g %.9g %.9g %.9g vs %.9g %.9g %.9g %.9g",
                             n, k, kind, len, order, scales[sc], st.sumexp, st.sumexp_s, st.wsum, st.wsum_s, z, zs, w, ws);
                free(perm);
            }
    }
}

/* kind 0: distinct-ish values; 1: few distinct values (many ties); 2: with -inf and NaN */
static void check_case(int n, int k, int kind)
{
    float *v = malloc(sizeof(float) * (size_t)n);
    int *order = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) {
        uint32_t r = next();
        v[i] = kind == 1 ? (float)(r % 5) : (float)(r % 2000000) / 100000.0f - 10.0f;
        if (kind == 2 && r % 7 == 0) v[i] = -INFINITY;
        if (kind == 2 && r % 11 == 0) v[i] = NAN;
        order[i] = i;
    }
    sort_key = v;
    qsort(order, (size_t)n, sizeof(int), by_rank);
    int ids[TL_TOPK_MAX];
    float vals[TL_TOPK_MAX];
    double z = -1;
    int got = tl_topk(v, n, k, ids, vals, &z);
    int want = k < n ? k : n;
    TL_CHECK_INT(got, want);
    int same = 1;
    for (int j = 0; j < want && got == want; j++)
        same &= ids[j] == order[j] && (vals[j] == key(v[order[j]]));
    TL_CHECK_MSG(same, "n %d k %d kind %d: the order differs from a full sort", n, k, kind);
    /* The sum is of float exps: a term's relative error is at most 2 ulp (2 * 2^-23) from
     * the polynomial and |d| * 2^-24 from rounding d = v - max to float, and a vector lane
     * adds up to TL_VS_BLOCK / 16 of them in float (one rounding each) before the block goes
     * to double; terms under e^-87.3 count as 0. That bounds the error (vecsel.h). */
    double mx = key(v[order[0]]), s = 0, tol = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(v[i]) && mx > -INFINITY) {
            double d = (double)v[i] - mx, e = exp(d);
            s += e;
            tol += d < TL_VS_EXP_MIN ? e : e * (4 + fabs(d) + TL_VS_BLOCK / 16) * 0x1p-24;
        }
    TL_CHECK_MSG(fabs(z - s) <= tol + 1e-300, "n %d k %d kind %d: sum %.12g vs %.12g (bound %.3g)", n, k, kind, z, s,
                 tol);
    check_pieces(v, n, k, kind, ids, vals, z);
    free(v);
    free(order);
}

/* The model in dir and two CPU engines of `threads` over it; 0, or -1 (checked failed). */
static int open_pair(const char *dir, int threads, tl_model **m, tl_engine **a, tl_engine **b)
{
    tl_error err = {{0}};
    *m = NULL;
    *a = *b = NULL;
    if (tl_model_load(m, dir, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        TL_CHECK(0);
        return -1;
    }
    TL_CHECK(tl_engine_create(a, *m, tl_backend_cpu(), threads, 64, &err) == 0);
    TL_CHECK(tl_engine_create(b, *m, tl_backend_cpu(), threads, 64, &err) == 0);
    return *a && *b ? 0 : -1;
}

static void check_engine(const char *dir)
{
    tl_error err = {{0}};
    tl_model *m;
    tl_engine *a, *b;
    if (open_pair(dir, 1, &m, &a, &b)) goto out;
    TL_CHECK(tl_engine_keep_top(b, 65) == -1);   /* above TL_TOPK_MAX */
    TL_CHECK(tl_engine_keep_top(b, 8) == 0);
    static const int prompt[] = {1, 5, 9, 200, 31};
    int tok = 0;
    for (int step = 0; step < 6; step++) {
        int rc = step == 0 ? tl_engine_prefill(a, prompt, 5, &err) : tl_engine_decode(a, tok, &err);
        rc |= step == 0 ? tl_engine_prefill(b, prompt, 5, &err) : tl_engine_decode(b, tok, &err);
        TL_CHECK(rc == 0);
        TL_CHECK(tl_engine_logits(b) == NULL);   /* keep_top: no full copy to read */
        int ia[TL_TOPK_MAX], ib[TL_TOPK_MAX];
        float va[TL_TOPK_MAX], vb[TL_TOPK_MAX];
        double za = 0, zb = 0;
        int na = tl_engine_top(a, 8, ia, va, &za), nb = tl_engine_top(b, 20, ib, vb, &zb);
        TL_CHECK_INT(na, 8);
        TL_CHECK_INT(nb, 8);   /* no more than were kept */
        TL_CHECK(na == nb && !memcmp(ia, ib, sizeof(int) * 8) && !memcmp(va, vb, sizeof(float) * 8));
        TL_CHECK_NEAR(za, zb, 1e-6 * za);   /* the same float exps, added in another order */
        tok = ia[0];
    }
out:
    tl_engine_free(a);
    tl_engine_free(b);
    tl_model_free(m);
}

/* The sampler with a pass's statistics against the same sampler reading the scores itself:
 * the same token, the same cuts and count, the figures within the float sums' rounding. */
static void check_sampler_with(const float *v, int n, const tl_logit_stats *st, tl_sampling p, const char *what)
{
    tl_sampler *a = tl_sampler_create(n, p), *b = tl_sampler_create(n, p);
    tl_sample_report ra, rb;
    int ia = tl_sampler_choose(a, v, 10, TL_REPORT_ALL, &ra);
    int ib = tl_sampler_choose_with(b, v, st, 10, TL_REPORT_ALL, &rb);
    int same = ia == ib && ra.kept == rb.kept && ra.n == rb.n;
    for (int j = 0; same && j < ra.n; j++) {
        const tl_candidate *x = &ra.cand[j], *y = &rb.cand[j];
        same = x->id == y->id && x->cut_top_k == y->cut_top_k && x->cut_top_p == y->cut_top_p &&
               fabs(x->prob - y->prob) <= 1e-6 * x->prob + 1e-12 && fabs(x->prob_temp - y->prob_temp) <= 1e-6 * x->prob_temp + 1e-12 &&
               fabs(x->prob_final - y->prob_final) <= 1e-6 * x->prob_final + 1e-12;
    }
    same = same && fabs(ra.log_z - rb.log_z) <= 1e-6 && fabs(ra.entropy - rb.entropy) <= 1e-6 * (1 + ra.entropy) &&
           fabs(ra.mass_outside - rb.mass_outside) <= 1e-6;
    TL_CHECK_MSG(same, "%s: with the pass's statistics the sampler chose %d (kept %d, log_z %.9g, H %.9g), without %d "
                 "(kept %d, log_z %.9g, H %.9g)", what, ib, rb.kept, rb.log_z, rb.entropy, ia, ra.kept, ra.log_z, ra.entropy);
    tl_sampler_free(a);
    tl_sampler_free(b);
}

/* The statistics the engine gathers while the last product writes the scores (argv[2]: the
 * bundled model, 128,256 scores; and the small checkpoint): the scores bit for bit those of an
 * engine without them; the best 64 exactly tl_topk's of those scores; the sums against double
 * sums over them; the sampler's choice with them equal to its choice without. Threads 1 and 2,
 * the three precisions (docs/accuracy.md), synchronous and asynchronous. Where this CPU's kernels
 * cannot gather them the engine says so (NULL) and the sampler reads the scores. */
static void check_stats(const char *dir, int threads, tl_precision prec, int async)
{
    tl_error err = {{0}};
    tl_model *m;
    tl_engine *a, *b;
    if (open_pair(dir, threads, &m, &a, &b)) goto out;
    int V = m->cfg.vocab_size;
    TL_CHECK(tl_engine_set_precision(a, prec, &err) == 0 && tl_engine_set_precision(b, prec, &err) == 0);
    TL_CHECK(tl_engine_set_async(b, async, &err) == 0);
    const float scale = 1.0f / 0.6f;
    TL_CHECK(tl_engine_set_stats(b, 1, TL_STATS_W | TL_STATS_SCALED, scale) == 0);
    static const int prompt[] = {1, 5, 9, 200, 31, 77, 3};
    int tok = 0, gathered = 0;
    for (int step = 0; step < 8; step++) {
        int rc = step == 0 ? tl_engine_prefill(a, prompt, 7, &err) : tl_engine_decode(a, tok, &err);
        rc |= step == 0 ? tl_engine_prefill(b, prompt, 7, &err) : tl_engine_decode(b, tok, &err);
        TL_CHECK(rc == 0);
        const float *la = tl_engine_logits(a), *lb = tl_engine_logits(b);
        TL_CHECK_MSG(!memcmp(la, lb, sizeof(float) * (size_t)V), "%s, %d threads, %s, async %d, step %d: the scores "
                     "differ with the statistics on", dir, threads, tl_precision_name(prec), async, step);
        TL_CHECK(tl_engine_stats(a) == NULL);
        const tl_logit_stats *st = tl_engine_stats(b);
        if (!st)
            continue;
        gathered++;
        int ids[TL_TOPK_MAX];
        float vals[TL_TOPK_MAX];
        double z;
        int k = tl_topk(la, V, TL_TOPK_MAX, ids, vals, &z);
        TL_CHECK_MSG(st->k == k && !memcmp(st->ids, ids, sizeof(int) * (size_t)k) &&
                         !memcmp(st->vals, vals, sizeof(float) * (size_t)k),
                     "%s, %d threads, step %d: the best %d differ from tl_topk's", dir, threads, step, k);
        double w = 0, zs = 0, ws = 0;
        for (int i = 0; i < V; i++) {
            double d = (double)la[i] - vals[0], ds = d * scale;
            w += exp(d) * d;
            zs += exp(ds);
            ws += exp(ds) * ds;
        }
        TL_CHECK_NEAR(st->sumexp, z, 1e-6 * z);
        TL_CHECK_NEAR(st->wsum, w, 1e-5 * z);
        TL_CHECK_NEAR(st->sumexp_s, zs, 1e-5 * zs);
        TL_CHECK_NEAR(st->wsum_s, ws, 1e-5 * zs);
        TL_CHECK(st->has == (TL_STATS_W | TL_STATS_SCALED) && st->scale == scale);
        tl_sampling ps[] = {{.greedy = 1, .temperature = 1, .top_p = 1},
                            {.temperature = 0.6f, .top_k = 50, .top_p = 0.9f, .seed = 3},
                            {.temperature = 0.6f, .top_k = 0, .top_p = 0.9f, .seed = 4},
                            {.temperature = 0.6f, .top_k = 0, .top_p = 1, .seed = 5}};
        for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
            char what[160];
            snprintf(what, sizeof what, "%s, %d threads, step %d, setting %zu", dir, threads, step, i);
            check_sampler_with(la, V, st, ps[i], what);
        }
        tok = ids[0];
    }
    /* a rewind makes the scores stale, and the statistics with them */
    TL_CHECK(tl_engine_rewind(b, 1) == 0 && tl_engine_stats(b) == NULL);
    printf("test_topk: %s, %d threads, %s, async %d: statistics on %d of 8 passes (%s)\n", dir, threads,
           tl_precision_name(prec),
           async, gathered, gathered ? "this CPU's decode kernel gathers them" : "no kernel here gathers them");
out:
    tl_engine_free(a);
    tl_engine_free(b);
    tl_model_free(m);
}

int main(int argc, char **argv)
{
    int ids[1];
    float vals[1];
    double z;
    float one = 1.0f;
    TL_CHECK(tl_topk(&one, 1, 0, ids, vals, &z) == -1);
    TL_CHECK(tl_topk(&one, 1, TL_TOPK_MAX + 1, ids, vals, &z) == -1);
    TL_CHECK(tl_topk(&one, 0, 1, ids, vals, &z) == -1);
    int sizes[] = {1, 3, 17, 33, 64, 65, 2047, 2049, 128256};
    int ks[] = {1, 2, 50, 64};
    static const char *isas[] = {"avx512", "avx2", "generic"};
    for (size_t a = 0; a < sizeof isas / sizeof *isas; a++) {
        if (vs_set_isa(isas[a])) {
            printf("test_topk: no %s on this CPU\n", isas[a]);
            continue;
        }
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
            for (size_t j = 0; j < sizeof ks / sizeof *ks; j++)
                for (int kind = 0; kind < 3; kind++)
                    check_case(sizes[i], ks[j], kind);
    }
    if (vs_set_isa("avx512") && vs_set_isa("avx2"))   /* the best again, for check_engine */
        vs_set_isa("generic");
    /* every score -inf: ids in order, sum 0 */
    float ninf[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int id4[4];
    float v4[4];
    TL_CHECK(tl_topk(ninf, 4, 3, id4, v4, &z) == 3 && id4[0] == 0 && id4[2] == 2 && z == 0);
    if (argc > 1)
        check_engine(argv[1]);
    for (int i = 1; i < argc; i++)
        for (int threads = 1; threads <= 2; threads++)
            for (int mode = 0; mode < 4; mode++)   /* exact; mixed; bf16; exact, asynchronous */
                check_stats(argv[i], threads, mode == 1 ? TL_PRECISION_MIXED : mode == 2 ? TL_PRECISION_BF16
                                                                                          : TL_PRECISION_EXACT,
                            mode == 3);
    return TL_TEST_END("test_topk");
}
