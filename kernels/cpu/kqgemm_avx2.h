/* A prefill's product with K-quant weights (included by kq_tmpl.h): as qgemm_avx2.h does for
 * Q4_0, the weights are repacked per panel so that one vector holds 8 rows. kq_rows keeps one
 * row's super-block per vector, so every row and token pays the unpacking's share, a VPMADDWD
 * and an addition per 32 products, and a reduction at the end. Here:
 *   - a panel is 8 rows x KG_KB super-blocks: each row's quants unpacked to 256 bytes (0..15,
 *     0..31 or 0..63) and transposed to [super-block][group of 4 columns][8 rows][4 bytes]; for
 *     each of the 16 units of 16 columns, the 8 rows' scales (as int16 pairs for VPMADDWD) and
 *     their corrections (Q4_K/Q5_K: the mins; Q6_K: 32 * the scale), and d and dmin (Q6_K: d);
 *   - a micro-tile is 8 rows x NT tokens: per group, one weight load, NT broadcasts of x's 4
 *     bytes, NT VPMADDUBSWs whose int16 pairs add over KG_D groups (Q4_K 8, Q5_K 4, Q6_K 2: at
 *     most 8 * 2 * 15 * 127, 4 * 2 * 31 * 127, 2 * 2 * 63 * 127, all below 32768), then one
 *     VPMADDWD with the unit's scales into int32 (KQ_DOT_ADD); per super-block and token, the
 *     corrections by 8 VPMADDWDs with x's bsums in pairs, two conversions and two FMAs;
 *   - lanes are rows: nothing is reduced at the end.
 * Each super-block's integer sums are exact (the same as kq_rows'); the fp32 terms add in k
 * order per row, panel after panel into the output. */
#define KG_MR 8     /* rows a panel */
#define KG_NR 4     /* tokens a micro-tile */
#define KG_KB 4     /* super-blocks a panel (1024 columns) */
#define KG_NC 240   /* tokens a block of x at most */
#define KG_MIN_T 8  /* fewer: kq_mm_rows (tools/bench/kqgemm_avx2.c: the panels took 0.89-1.04x its time at 6
                     * and 8 tokens, 0.72-0.89x at 12, 0.57-0.66x at 32, 1.06-1.27x at 4) */

typedef struct {
    _Alignas(32) uint8_t q[KG_KB][64][32];   /* [super-block][group][row][4 bytes] */
    _Alignas(32) int32_t s[KG_KB][16][8];    /* unit k's scale of each row, twice as int16 */
    _Alignas(32) int32_t c[KG_KB][8][8];     /* units 2i and 2i + 1's corrections of each row, int16 */
    _Alignas(32) float d[KG_KB][8], dc[KG_KB][8];
} kg_panel;

/* x | x << 16 in each 32-bit lane: a 16-bit value twice, a VPMADDWD operand. */
static inline __m256i kg_twice(__m256i x)
{
    return _mm256_or_si256(_mm256_and_si256(x, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(x, 16));
}

/* One row's super-block: its quants as 256 bytes in column order; sc[0], sc[1] the scales of
 * units 0-7 and 8-15, each twice in a lane; cc the corrections of units 2i and 2i + 1 in lane
 * i; d and dc: the super-block's product is
 * d * dx * sum_k s_k (q . x8)_k - dc * dx * sum_k c_k bsum_k. */
static inline void kg_unpack(tl_dtype dt, const uint8_t *blk, uint8_t q[256], __m256i sc[2], __m256i *cc, float *d,
                             float *dc)
{
    if (dt == TL_Q6_K) {
        for (int h = 0; h < 2; h++) {
            const __m256i qh = _mm256_loadu_si256((const __m256i *)(blk + 128 + 32 * h));
            const __m256i l0 = _mm256_loadu_si256((const __m256i *)(blk + 64 * h));
            const __m256i l1 = _mm256_loadu_si256((const __m256i *)(blk + 64 * h + 32));
            for (int v = 0; v < 4; v++)
                _mm256_store_si256((__m256i *)(q + 128 * h + 32 * v), kq6_quants(l0, l1, qh, v));
        }
        const __m128i s8 = _mm_loadu_si128((const __m128i *)(blk + 192));   /* 16 signed scales */
        sc[0] = kg_twice(_mm256_cvtepi8_epi32(s8));
        sc[1] = kg_twice(_mm256_cvtepi8_epi32(_mm_srli_si128(s8, 8)));
        *cc = _mm256_slli_epi16(_mm256_cvtepi8_epi16(s8), 5);   /* 32 * s_k, pairs in lanes */
        *d = *dc = kq_f16(blk + 208);
        return;
    }
    const int q5 = dt == TL_Q5_K;
    const uint8_t *qs = blk + (q5 ? 48 : 16);
    const __m256i hb = q5 ? _mm256_loadu_si256((const __m256i *)(blk + 16)) : _mm256_setzero_si256();
    for (int g = 0; g < 4; g++) {
        __m256i lo, hi;
        kq45_quants(qs, hb, q5, g, &lo, &hi);
        _mm256_store_si256((__m256i *)(q + 64 * g), lo);
        _mm256_store_si256((__m256i *)(q + 64 * g + 32), hi);
    }
    const __m128i sm = kq_scales_mins(blk + 4);   /* 8 scales, 8 mins: unit k has sub-block k/2's */
    const __m256i s32 = kg_twice(_mm256_cvtepu8_epi32(sm));   /* lane j: sub-block j */
    sc[0] = _mm256_permutevar8x32_epi32(s32, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
    sc[1] = _mm256_permutevar8x32_epi32(s32, _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7));
    *cc = kg_twice(_mm256_cvtepu8_epi32(_mm_srli_si128(sm, 8)));   /* units 2i, 2i + 1: m_i twice */
    *d = kq_f16(blk);
    *dc = kq_f16(blk + 2);
}

/* 8 vectors of 8 int32 transposed (tl_avx2_transpose8) and stored to dst[0..7]. */
static inline void kg_transpose_store(__m256i v[8], int32_t (*dst)[8])
{
    __m256 f[8];
    for (int i = 0; i < 8; i++)
        f[i] = _mm256_castsi256_ps(v[i]);
    tl_avx2_transpose8(f);
    for (int i = 0; i < 8; i++)
        _mm256_store_ps((float *)(void *)dst[i], f[i]);
}

/* Rows r..r+nr-1 (missing rows repeat the last: computed, never stored), super-blocks b0.. */
static inline void kg_pack(kg_panel *p, const tl_cpu_mm *a, tl_dtype dt, int64_t r, int nr, int64_t b0, int kb)
{
    const int64_t nb = a->cols / TL_QK_K;
    const size_t bb = tl_dtype_block_bytes(dt);
    _Alignas(32) uint8_t q[KG_MR][256];
    __m256i s0[KG_MR], s1[KG_MR], cc[KG_MR];
    for (int j = 0; j < kb; j++) {
        for (int i = 0; i < KG_MR; i++) {
            const uint8_t *blk = (const uint8_t *)a->w + ((size_t)(r + (i < nr ? i : nr - 1)) * (size_t)nb + (size_t)(b0 + j)) * bb;
            __m256i sc[2];
            kg_unpack(dt, blk, q[i], sc, &cc[i], &p->d[j][i], &p->dc[j][i]);
            s0[i] = sc[0];
            s1[i] = sc[1];
        }
        for (int ch = 0; ch < 8; ch++) {   /* 32 columns of the 8 rows: v[g] lane i, row i's group g */
            __m256 v[8];
            for (int i = 0; i < KG_MR; i++)
                v[i] = _mm256_load_ps((const float *)(const void *)(q[i] + 32 * ch));
            tl_avx2_transpose8(v);
            for (int g = 0; g < 8; g++)
                _mm256_store_ps((float *)(void *)p->q[j][8 * ch + g], v[g]);
        }
        kg_transpose_store(s0, p->s[j]);
        kg_transpose_store(s1, p->s[j] + 8);
        kg_transpose_store(cc, p->c[j]);
    }
}

/* out[t + u][r .. r+nr) (+)= the panel's kb super-blocks times tokens t..t+NT-1. D: groups of 4
 * columns whose int16 pairs add before a VPMADDWD (8, 4 or 2: see the top). */
static inline __attribute__((always_inline)) void kg_tile(const kg_panel *p, const tl_cpu_mm *a, int t, int64_t b0,
                                                          int kb, int64_t r, int nr, int NT, int D, int accumulate)
{
    const int64_t nb = a->cols / TL_QK_K;
    __m256 acc[KG_NR];
    const int8_t *xq[KG_NR];
    const float *xd[KG_NR];
    const int16_t *bs[KG_NR];
    for (int u = 0; u < NT; u++) {
        acc[u] = _mm256_setzero_ps();
        xq[u] = a->xq + (size_t)(t + u) * (size_t)a->cols + (size_t)b0 * TL_QK_K;
        xd[u] = a->xd + (size_t)(t + u) * (size_t)nb + b0;
        bs[u] = (const int16_t *)(const void *)a->xc + (size_t)(t + u) * (size_t)(a->cols / 16) + (size_t)b0 * 16;
    }
    for (int j = 0; j < kb; j++) {
        __m256i si[KG_NR], s16[KG_NR];
        for (int u = 0; u < NT; u++)
            si[u] = _mm256_setzero_si256();
        for (int g0 = 0; g0 < 64; g0 += D) {
            for (int g = g0; g < g0 + D; g++) {
                const __m256i wv = _mm256_load_si256((const __m256i *)p->q[j][g]);
                for (int u = 0; u < NT; u++) {
                    int32_t x4;
                    memcpy(&x4, xq[u] + j * TL_QK_K + 4 * g, 4);
                    const __m256i pr = _mm256_maddubs_epi16(wv, _mm256_set1_epi32(x4));
                    s16[u] = g > g0 ? _mm256_add_epi16(s16[u], pr) : pr;
                    __asm__("" : "+x"(s16[u]));   /* a running sum, not a tree (qgemm_avx2.h) */
                }
            }
            const __m256i sv = _mm256_load_si256((const __m256i *)p->s[j][g0 / 4]);
            for (int u = 0; u < NT; u++)
                si[u] = KQ_DOT_ADD(si[u], s16[u], sv);
        }
        const __m256 dv = _mm256_load_ps(p->d[j]), dcv = _mm256_load_ps(p->dc[j]);
        for (int u = 0; u < NT; u++) {
            __m256i ci = _mm256_setzero_si256();
            for (int k = 0; k < 8; k++) {
                int32_t b2;
                memcpy(&b2, bs[u] + j * 16 + 2 * k, 4);
                ci = KQ_DOT_ADD(ci, _mm256_load_si256((const __m256i *)p->c[j][k]), _mm256_set1_epi32(b2));
            }
            const __m256 dx = _mm256_set1_ps(xd[u][j]);
            acc[u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(si[u]), _mm256_mul_ps(dv, dx), acc[u]);
            acc[u] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(ci), _mm256_mul_ps(dcv, dx), acc[u]);
        }
    }
    for (int u = 0; u < NT; u++) {
        float *o = a->out + (size_t)(t + u) * (size_t)a->rows + (size_t)r;
        if (nr == KG_MR) {
            _mm256_storeu_ps(o, accumulate ? _mm256_add_ps(acc[u], _mm256_loadu_ps(o)) : acc[u]);
        } else {
            _Alignas(32) float tmp[KG_MR];
            _mm256_store_ps(tmp, acc[u]);
            for (int i = 0; i < nr; i++)
                o[i] = accumulate ? o[i] + tmp[i] : tmp[i];
        }
    }
}

/* The tokens [t0, t1) of one panel, each tile shape and D compiled on its own. */
#define KG_TILES(D)                                                                                   \
    for (int t = t0; t < t1; t += KG_NR)                                                              \
        switch (t1 - t < KG_NR ? t1 - t : KG_NR) {                                                    \
        case 1: kg_tile(p, a, t, b0, kb, r, nr, 1, D, b0 > 0); break;                                 \
        case 2: kg_tile(p, a, t, b0, kb, r, nr, 2, D, b0 > 0); break;                                 \
        case 3: kg_tile(p, a, t, b0, kb, r, nr, 3, D, b0 > 0); break;                                 \
        default: kg_tile(p, a, t, b0, kb, r, nr, KG_NR, D, b0 > 0); break;                            \
        }

static void kg_tiles_q4(const kg_panel *p, const tl_cpu_mm *a, int t0, int t1, int64_t b0, int kb, int64_t r, int nr)
{
    KG_TILES(8)
}

static void kg_tiles_q5(const kg_panel *p, const tl_cpu_mm *a, int t0, int t1, int64_t b0, int kb, int64_t r, int nr)
{
    KG_TILES(4)
}

static void kg_tiles_q6(const kg_panel *p, const tl_cpu_mm *a, int t0, int t1, int64_t b0, int kb, int64_t r, int nr)
{
    KG_TILES(2)
}

/* Rows [r0, r1), every token (T >= 2). */
static void kg_rows(const tl_cpu_mm *a, tl_dtype dt, int64_t r0, int64_t r1)
{
    const int64_t nb = a->cols / TL_QK_K;
    kg_panel panel;
    const int nblk = (a->T + KG_NC - 1) / KG_NC, nc = (a->T + nblk - 1) / nblk;
    for (int64_t b0 = 0; b0 < nb; b0 += KG_KB) {
        const int kb = nb - b0 < KG_KB ? (int)(nb - b0) : KG_KB;
        for (int t0 = 0; t0 < a->T; t0 += nc) {
            const int t1 = t0 + nc < a->T ? t0 + nc : a->T;
            for (int64_t r = r0; r < r1; r += KG_MR) {
                const int nr = r1 - r < KG_MR ? (int)(r1 - r) : KG_MR;
                kg_pack(&panel, a, dt, r, nr, b0, kb);
                if (dt == TL_Q4_K)
                    kg_tiles_q4(&panel, a, t0, t1, b0, kb, r, nr);
                else if (dt == TL_Q5_K)
                    kg_tiles_q5(&panel, a, t0, t1, b0, kb, r, nr);
                else
                    kg_tiles_q6(&panel, a, t0, t1, b0, kb, r, nr);
            }
        }
    }
}
