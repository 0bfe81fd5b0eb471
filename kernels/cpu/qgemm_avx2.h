/* A prefill's product with Q4_0 or Q8_0 weights on AVX2 (included by qmm_avx2.c): weights
 * repacked per panel so that one vector holds 8 rows. qm_tile's layout (one row's block per
 * vector) pays, for every row, token and block, the reduction of VPMADDUBSW's pairs, the
 * conversion and one FMA with a scalar scale: five operations beside the one product. Here:
 *   - a panel is 8 rows x QG_KB blocks, the quants as bytes (Q4_0: nibbles unpacked to 0..15;
 *     Q8_0: as they are) transposed to [block][group of 4 columns][8 rows][4 bytes], so one
 *     32-byte load is 4 columns of 8 rows, and the 8 rows' scales as floats [block][8];
 *   - a micro-tile is 8 rows x NT tokens: per group, one weight load, NT broadcasts of x's 4
 *     bytes and NT VPMADDUBSWs. Q4_0: their int16 pairs add up over the block's 8 groups (at
 *     most 8 * 2 * 15 * 127 = 30480, no saturation), then one VPMADDWD and the -8 * sum(x) of
 *     the block (qbias, from xc). Q8_0: |w| times x with w's signs (a pair at most
 *     2 * 127 * 127), one VPMADDWD a group. Then per block and token one conversion and one FMA
 *     with the 8 rows' scales times x's: lanes are rows, so no reduction is left at the end;
 *   - panels go k-block by k-block with tokens in blocks of at most QG_NC, so a block of x stays
 *     in L2 and the panel (2.3 KiB) in L1 while the tokens pass over it.
 * With QG_VNNI (qmm_avx512vnni.c, the avx512bf16 set) one VPDPBUSD a group and token does the
 * product and the addition in int32 for both types: Q8_0 enters as q ^ 0x80 (qbias 128), Q4_0 as
 * the nibbles (qbias 8), and the block's -qbias * sum(x) comes from xc; that set keeps x's scales
 * cols / 4 floats apart (QG_XD_STRIDE).
 * Integer sums of a block are exact; the blocks' terms add in fp32 in k order within a panel and
 * the panels' sums in k order into the output: the reference's sums, in another order. */
#ifndef QG_XD_STRIDE
#define QG_XD_STRIDE(a) ((a)->cols / TL_QK)   /* floats of xd a token */
#endif
#define QG_MR 8      /* rows a panel: one vector of fp32 lanes */
#define QG_NR 4      /* tokens a micro-tile */
#define QG_KB 16     /* blocks (of 32 columns) a panel */
#define QG_NC 240    /* tokens a block of x at most */
#define QG_MIN_T_Q8 8   /* Q8_0, fewer: qm_tile (the panels: 1.05x its time at 2 tokens, 1.0x at 4,
                        * 0.81-0.85x at 8, 0.69-0.70x at 32) */

static inline float qg_scale(const uint8_t *blk)
{
    uint16_t h;
    memcpy(&h, blk, 2);
    return _cvtsh_ss(h);
}

typedef struct {
    _Alignas(32) uint8_t q[QG_KB][8][32];   /* [block][group][row][4 bytes] */
    _Alignas(32) float d[QG_KB][QG_MR];
} qg_panel;

/* Rows r..r+nr-1 (missing rows repeat the last: computed, never stored), blocks b0..b0+kb-1. */
static inline void qg_pack(qg_panel *p, const uint8_t *w, int dt, int64_t nb, int64_t r, int nr, int64_t b0, int kb)
{
    const __m256i m4 = _mm256_set1_epi8(15);
    const size_t bb = dt == TL_Q8_0 ? sizeof(tl_block_q8_0) : sizeof(tl_block_q4_0);
    for (int j = 0; j < kb; j++) {
        __m256 v[8];
        for (int i = 0; i < QG_MR; i++) {
            const uint8_t *blk = w + ((size_t)(r + (i < nr ? i : nr - 1)) * (size_t)nb + (size_t)(b0 + j)) * bb;
            if (dt == TL_Q8_0) {
                v[i] = _mm256_loadu_ps((const float *)(const void *)(blk + 2));
#ifdef QG_VNNI
                v[i] = _mm256_xor_ps(v[i], _mm256_castsi256_ps(_mm256_set1_epi8((char)0x80)));   /* unsigned */
#endif
            } else {   /* low nibbles are columns 0..15, high ones 16..31 */
                const __m256i q = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(blk + 2)));
                v[i] = _mm256_castsi256_ps(_mm256_and_si256(_mm256_srlv_epi64(q, _mm256_set_epi64x(4, 4, 0, 0)), m4));
            }
            p->d[j][i] = qg_scale(blk);
        }
        tl_avx2_transpose8(v);   /* v[g] lane i: row i's columns 4g..4g+3 */
        for (int g = 0; g < 8; g++)
            _mm256_store_ps((float *)p->q[j][g], v[g]);
    }
}

/* -8 * sum of each block's 32 quantized x (from xc, which holds -8 * each 4's sum). */
static inline int32_t qg_bias(const int32_t *xc)
{
    __m256i s = _mm256_loadu_si256((const __m256i *)xc);
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xB1));
    return _mm_cvtsi128_si32(h);
}

/* out[t + u][r .. r+nr) (+)= the panel's kb blocks times tokens t..t+NT-1; bias[u][j] from
 * qg_bias, token u of the tile at bias + (u * QG_KB). */
static inline __attribute__((always_inline)) void qg_tile(const qg_panel *p, const tl_cpu_mm *a, int dt, int t,
                                                          int64_t b0, int kb, const int32_t *bias, int64_t r, int nr,
                                                          int NT, int accumulate)
{
#ifdef QG_VNNI
    (void)dt;   /* both types: VPDPBUSD on unsigned bytes */
#else
    const __m256i ones = _mm256_set1_epi16(1);
#endif
    __m256 acc[QG_NR];
    const int8_t *xq[QG_NR];
    const float *xd[QG_NR];
    for (int u = 0; u < NT; u++) {
        acc[u] = _mm256_setzero_ps();
        xq[u] = a->xq + (size_t)(t + u) * (size_t)a->cols + (size_t)b0 * TL_QK;
        xd[u] = a->xd + (size_t)(t + u) * (size_t)QG_XD_STRIDE(a) + b0;
    }
    for (int j = 0; j < kb; j++) {
        __m256i s[QG_NR];
#ifdef QG_VNNI
        __m256i s2[QG_NR];
        for (int u = 0; u < NT; u++)
            s[u] = s2[u] = _mm256_setzero_si256();
#endif
        for (int g = 0; g < 8; g++) {
            const __m256i wv = _mm256_load_si256((const __m256i *)p->q[j][g]);
#ifndef QG_VNNI
            const __m256i aw = dt == TL_Q8_0 ? _mm256_sign_epi8(wv, wv) : wv;
#endif
            for (int u = 0; u < NT; u++) {
                int32_t x4;
                memcpy(&x4, xq[u] + j * TL_QK + 4 * g, 4);
                const __m256i xb = _mm256_set1_epi32(x4);
#ifdef QG_VNNI   /* two chains a token, even and odd groups: VPDPBUSD's latency */
                if (g & 1)
                    s2[u] = _mm256_dpbusd_epi32(s2[u], wv, xb);
                else
                    s[u] = _mm256_dpbusd_epi32(s[u], wv, xb);
#else
                if (dt == TL_Q8_0) {
                    const __m256i pr = _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(xb, wv)), ones);
                    s[u] = g ? _mm256_add_epi32(s[u], pr) : pr;
                } else {
                    const __m256i pr = _mm256_maddubs_epi16(wv, xb);
                    s[u] = g ? _mm256_add_epi16(s[u], pr) : pr;
                }
#endif
                /* one running sum a token: GCC reassociated the adds into a tree of 32
                 * products held on the stack (the tile at 60% of this speed) */
                __asm__("" : "+x"(s[u]));
#ifdef QG_VNNI
                __asm__("" : "+x"(s2[u]));
#endif
            }
        }
        const __m256 dw = _mm256_load_ps(p->d[j]);
        for (int u = 0; u < NT; u++) {
#ifdef QG_VNNI
            const __m256i si = _mm256_add_epi32(_mm256_add_epi32(s[u], s2[u]), _mm256_set1_epi32(bias[u * QG_KB + j]));
#else
            const __m256i si = dt == TL_Q8_0 ? s[u]
                                             : _mm256_add_epi32(_mm256_madd_epi16(s[u], ones),
                                                                _mm256_set1_epi32(bias[u * QG_KB + j]));
#endif
            acc[u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(si), _mm256_mul_ps(dw, _mm256_set1_ps(xd[u][j])), acc[u]);
        }
    }
    for (int u = 0; u < NT; u++) {
        float *o = a->out + (size_t)(t + u) * (size_t)a->rows + (size_t)r;
        if (nr == QG_MR) {
            __m256 v = accumulate ? _mm256_add_ps(acc[u], _mm256_loadu_ps(o)) : acc[u];
            _mm256_storeu_ps(o, v);
        } else {
            _Alignas(32) float tmp[QG_MR];
            _mm256_store_ps(tmp, acc[u]);
            for (int i = 0; i < nr; i++)
                o[i] = accumulate ? o[i] + tmp[i] : tmp[i];
        }
    }
}

/* The tokens [t0, t1) over one panel, each tile shape compiled on its own. */
static inline __attribute__((always_inline)) void qg_tiles(const qg_panel *p, const tl_cpu_mm *a, int dt, int t0,
                                                           int t1, int64_t b0, int kb, const int32_t *bias, int64_t r,
                                                           int nr)
{
    for (int t = t0; t < t1; t += QG_NR) {
        const int32_t *bs = bias + (t - t0) * QG_KB;
        switch (t1 - t < QG_NR ? t1 - t : QG_NR) {
        case 1: qg_tile(p, a, dt, t, b0, kb, bs, r, nr, 1, b0 > 0); break;
        case 2: qg_tile(p, a, dt, t, b0, kb, bs, r, nr, 2, b0 > 0); break;
        case 3: qg_tile(p, a, dt, t, b0, kb, bs, r, nr, 3, b0 > 0); break;
        default: qg_tile(p, a, dt, t, b0, kb, bs, r, nr, QG_NR, b0 > 0); break;
        }
    }
}

/* Rows [r0, r1), every token: Q4_0 weights (xc present: qbias 8) or Q8_0 (xc with VNNI only). */
static void qg_rows(const tl_cpu_mm *a, int dt, int64_t r0, int64_t r1)
{
    const int64_t nb = a->cols / TL_QK;
    qg_panel panel;
    int32_t bias[QG_NC * QG_KB];
    int nblk = (a->T + QG_NC - 1) / QG_NC;
    int nc = (a->T + nblk - 1) / nblk;
    for (int64_t b0 = 0; b0 < nb; b0 += QG_KB) {
        const int kb = nb - b0 < QG_KB ? (int)(nb - b0) : QG_KB;
        for (int t0 = 0; t0 < a->T; t0 += nc) {
            const int t1 = t0 + nc < a->T ? t0 + nc : a->T;
            if (a->xc)   /* -qbias * sum(x) of each block */
                for (int t = t0; t < t1; t++)
                    for (int j = 0; j < kb; j++)
                        bias[(t - t0) * QG_KB + j] = qg_bias(a->xc + ((size_t)t * (size_t)a->cols + (size_t)(b0 + j) * TL_QK) / 4);
            for (int64_t r = r0; r < r1; r += QG_MR) {
                const int nr = r1 - r < QG_MR ? (int)(r1 - r) : QG_MR;
                qg_pack(&panel, a->w, dt, nb, r, nr, b0, kb);
                if (dt == TL_Q8_0)
                    qg_tiles(&panel, a, TL_Q8_0, t0, t1, b0, kb, bias, r, nr);
                else
                    qg_tiles(&panel, a, TL_Q4_0, t0, t1, b0, kb, bias, r, nr);
            }
        }
    }
}
