/* Q8_0/Q4_0 products with AVX2: VPMADDUBSW (unsigned x signed bytes -> pairs of int16) and
 * VPMADDWD (-> int32). Q8_0 weights go in as |w| with x's signs flipped where w < 0 (so no
 * pair can saturate: 2 * 128 * 127 < 32768); Q4_0 weights as their unsigned nibbles 0..15,
 * the -8 coming back through xc (qbias 8). Built with -mavx2 -mfma -mf16c. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "mm.h"
#include "tokenloop/quant.h"

static inline __m256i a2q_unpack_q4(const uint8_t *p)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)p), m4 = _mm_set1_epi8(15);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m4), _mm_and_si128(v, m4));
}

static inline __m256i a2q_sum4(__m256i pairs16)
{
    return _mm256_madd_epi16(pairs16, _mm256_set1_epi16(1));
}

/* tl_cpu_pack_q8's layout (blocks in order, one scale each, xc when qbias), quantized 8 lanes at
 * a time exactly as tl_quantize_row does: the same maximum, d = amax / 127 and 1 / d, roundf's
 * ties away from zero, the scale rounded to f16. Scalar, x's quantization took as long as the
 * product of a few hundred rows. */
void tl_cpu_qpack_avx2(const tl_cpu_mm *m, tl_dtype dt, const float *x, int t, int qbias)
{
    (void)dt;
    const int64_t nb = m->cols / TL_QK;
    int8_t *q = (int8_t *)m->xq + (size_t)t * (size_t)m->cols;
    float *d = (float *)m->xd + (size_t)t * (size_t)nb;
    int32_t *c = m->xc ? (int32_t *)m->xc + (size_t)t * (size_t)m->cols / 4 : NULL;
    x += (size_t)t * (size_t)m->cols;
    const __m256 sign = _mm256_set1_ps(-0.0f), half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
    for (int64_t b = 0; b < nb; b++) {
        __m256 v[4], mx = _mm256_setzero_ps();
        for (int k = 0; k < 4; k++) {
            v[k] = _mm256_loadu_ps(x + b * TL_QK + 8 * k);
            mx = _mm256_max_ps(mx, _mm256_andnot_ps(sign, v[k]));
        }
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4), dd = amax / 127, id = dd ? 1.0f / dd : 0.0f;
        const __m256 vid = _mm256_set1_ps(id);
        __m256i qi[4];
        for (int k = 0; k < 4; k++) {
            __m256 s = _mm256_mul_ps(v[k], vid);
            __m256 tr = _mm256_round_ps(s, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
            __m256 up = _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_sub_ps(s, tr)), half, _CMP_GE_OQ);
            tr = _mm256_add_ps(tr, _mm256_and_ps(up, _mm256_or_ps(_mm256_and_ps(s, sign), one)));
            qi[k] = _mm256_cvttps_epi32(tr);
        }
        /* 32 int32 -> 32 int8 in order: the packs interleave 128-bit lanes, the permute undoes it */
        __m256i w16a = _mm256_packs_epi32(qi[0], qi[1]), w16b = _mm256_packs_epi32(qi[2], qi[3]);
        __m256i w8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w16a, w16b), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        d[b] = _cvtsh_ss(_cvtss_sh(dd, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        __m256i s4 = c ? _mm256_mullo_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), w8),
                                                              _mm256_set1_epi16(1)),
                                            _mm256_set1_epi32(-qbias))
                       : _mm256_setzero_si256();   /* lane sums of 4 bytes, times -qbias */
        if (c && m->T == 1 && b < (nb & ~(int64_t)1)) {
            /* qv_pair's layout: blocks A, B as A0-15 B0-15 A16-31 B16-31, and 4 lanes of xc
             * each, lane i the sums of groups i and i + 4 (the two halves add into one lane) */
            const int64_t pr = b / 2, h = b & 1;
            _mm_storeu_si128((__m128i *)(q + pr * 64 + h * 16), _mm256_castsi256_si128(w8));
            _mm_storeu_si128((__m128i *)(q + pr * 64 + 32 + h * 16), _mm256_extracti128_si256(w8, 1));
            _mm_storeu_si128((__m128i *)(c + pr * 8 + h * 4),
                             _mm_add_epi32(_mm256_castsi256_si128(s4), _mm256_extracti128_si256(s4, 1)));
            continue;
        }
        _mm256_storeu_si256((__m256i *)(q + b * TL_QK), w8);
        if (c)
            _mm256_storeu_si256((__m256i *)(c + b * 8), s4);
    }
}

#define QM_RB 4
#define QM_TB 2
#define QM_UNPACK_Q8(p) _mm256_loadu_si256((const __m256i *)(p))
#define QM_UNPACK_Q4(p) a2q_unpack_q4(p)
#define QM_DOT_Q8(w, x, c) a2q_sum4(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)))
#define QM_DOT_Q4(w, x, c) _mm256_add_epi32(a2q_sum4(_mm256_maddubs_epi16(w, x)), c)

/* The product with Q8_0/Q4_0 weights, 256 bits at a time: for each block, one integer vector
 * per row and token (QM_DOT_*: 8 int32 lanes, each the signed sum of 4 consecutive products),
 * then one fp32 FMA with the two scales, as tl_cpu_mm_q*_generic computes it (only the order
 * of the additions differs); QM_RB x QM_TB is the register tile (weight rows x tokens). */
#define QM_INLINE static inline __attribute__((always_inline))

QM_INLINE float qm_hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

QM_INLINE float qm_scale(const uint8_t *blk)
{
    uint16_t h;
    memcpy(&h, blk, 2);
    return _cvtsh_ss(h);
}

/* Rows r..r+nr-1 (nr <= QM_RB; missing rows repeat the last, computed and not stored) times
 * tokens t..t+NT-1, over every block. */
QM_INLINE void qm_tile(const tl_cpu_mm *a, int dt, int NT, int64_t r, int nr, int t)
{
    const int64_t nb = a->cols / TL_QK;
    const size_t bb = dt == TL_Q8_0 ? sizeof(tl_block_q8_0) : sizeof(tl_block_q4_0);
    const uint8_t *wr[QM_RB];
    for (int i = 0; i < QM_RB; i++)
        wr[i] = (const uint8_t *)a->w + (size_t)(r + (i < nr ? i : nr - 1)) * (size_t)nb * bb;
    const int8_t *xq[QM_TB];
    const float *xd[QM_TB];
    const int32_t *xc[QM_TB];
    for (int u = 0; u < NT; u++) {
        xq[u] = a->xq + (size_t)(t + u) * (size_t)a->cols;
        xd[u] = a->xd + (size_t)(t + u) * (size_t)nb;
        xc[u] = a->xc ? a->xc + (size_t)(t + u) * (size_t)a->cols / 4 : NULL;
    }
    __m256 acc[QM_RB][QM_TB];
    for (int i = 0; i < QM_RB; i++)
        for (int u = 0; u < NT; u++)
            acc[i][u] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m256i xv[QM_TB], cv[QM_TB];
        float dx[QM_TB];
        for (int u = 0; u < NT; u++) {
            xv[u] = _mm256_loadu_si256((const __m256i *)(xq[u] + b * TL_QK));
            cv[u] = xc[u] ? _mm256_loadu_si256((const __m256i *)(xc[u] + b * (TL_QK / 4))) : _mm256_setzero_si256();
            dx[u] = xd[u][b];
        }
        for (int i = 0; i < QM_RB; i++) {
            const uint8_t *blk = wr[i] + (size_t)b * bb;
            const __m256i wv = dt == TL_Q8_0 ? QM_UNPACK_Q8(blk + 2) : QM_UNPACK_Q4(blk + 2);
            const float dw = qm_scale(blk);
            for (int u = 0; u < NT; u++) {
                __m256i s = dt == TL_Q8_0 ? QM_DOT_Q8(wv, xv[u], cv[u]) : QM_DOT_Q4(wv, xv[u], cv[u]);
                acc[i][u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(dw * dx[u]), acc[i][u]);
            }
        }
    }
    for (int i = 0; i < nr; i++)
        for (int u = 0; u < NT; u++)
            a->out[(size_t)(t + u) * (size_t)a->rows + (size_t)(r + i)] = qm_hsum(acc[i][u]);
}

QM_INLINE void qm_rows(const tl_cpu_mm *a, int dt, int64_t r0, int64_t r1)
{
    for (int64_t r = r0; r < r1; r += QM_RB) {
        int nr = r1 - r < QM_RB ? (int)(r1 - r) : QM_RB;
        int t = 0;
        for (; t + QM_TB <= a->T; t += QM_TB)
            qm_tile(a, dt, QM_TB, r, nr, t);
        switch (a->T - t) {   /* the last few tokens, each tile shape compiled on its own */
#if QM_TB > 3
        case 3: qm_tile(a, dt, 3, r, nr, t); break;
#endif
#if QM_TB > 2
        case 2: qm_tile(a, dt, 2, r, nr, t); break;
#endif
        case 1: qm_tile(a, dt, 1, r, nr, t); break;
        default: break;
        }
    }
}

/* One token (a decode step): one row at a time, so a thread's rows are one sequential stream
 * (as mv_tmpl.h does for bf16), with a software prefetch into L2 QV_PF bytes ahead. Per block:
 * a Q4_0 block's 16 bytes are loaded once into both halves of a vector and the upper half
 * shifted by 4 (VPSRLVQ) before the one mask, 3 instructions where qm_tile's unpack takes 5;
 * two accumulators alternate so that consecutive blocks' FMAs do not wait for each other. */
#define QV_PF 1024

QM_INLINE __m256i a2q_unpack_q4_bcast(const uint8_t *p)
{
    const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)p));
    return _mm256_and_si256(_mm256_srlv_epi64(v, _mm256_set_epi64x(4, 4, 0, 0)), _mm256_set1_epi8(15));
}

QM_INLINE __m256 qv_block(const tl_cpu_mm *a, int dt, const uint8_t *blk, int64_t b, __m256 acc)
{
    const __m256i xv = _mm256_loadu_si256((const __m256i *)(a->xq + b * TL_QK));
    __m256i s;
    if (dt == TL_Q8_0) {
        const __m256i wv = _mm256_loadu_si256((const __m256i *)(blk + 2));
        s = QM_DOT_Q8(wv, xv, 0);
    } else {
        const __m256i cv = _mm256_loadu_si256((const __m256i *)(a->xc + b * (TL_QK / 4)));
        s = QM_DOT_Q4(a2q_unpack_q4_bcast(blk + 2), xv, cv);
    }
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(qm_scale(blk) * a->xd[b]), acc);
}

/* Q4_0 blocks 2p and 2p + 1 of a decode (x in the pair layout of tl_cpu_qpack_avx2): both 16-byte
 * quants in one vector, low nibbles A0-15 B0-15 and high ones A16-31 B16-31, so the two products'
 * int16 pairs add before one VPMADDWD (at most 2 * 2 * 15 * 127): lanes 0-3 hold A's integer
 * sums, 4-7 B's, one conversion and one FMA for two blocks. */
QM_INLINE __m256i qv_pair(const tl_cpu_mm *a, const uint8_t *blk, int64_t p)
{
    const __m256i m4 = _mm256_set1_epi8(15);
    const __m256i q = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(blk + 2))),
                                              _mm_loadu_si128((const __m128i *)(blk + 18 + 2)), 1);
    const __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
    const int8_t *xq = a->xq + p * 64;
    const __m256i s16 = _mm256_add_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)xq)),
                                         _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(xq + 32))));
    return _mm256_add_epi32(_mm256_madd_epi16(s16, _mm256_set1_epi16(1)),
                            _mm256_loadu_si256((const __m256i *)(a->xc + p * 8)));
}

/* The scales (the weight's f16 times x's) of n = 2 or 4 consecutive Q4_0 blocks, in lanes 0..n-1:
 * one conversion and one product for all of them. */
QM_INLINE __m128 qv_scales(const uint8_t *blk, const float *xd, int n)
{
    uint64_t h4 = 0;
    for (int i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, blk + 18 * i, 2);
        h4 |= (uint64_t)h << (16 * i);
    }
    const __m128 dx = n == 4 ? _mm_loadu_ps(xd) : _mm_castpd_ps(_mm_load_sd((const double *)(const void *)xd));
    return _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi64_si128((long long)h4)), dx);
}

/* acc + the pair from blk (pair p of x) times its two scales, lanes l and l + 1 of sc. */
QM_INLINE __m256 qv_pair_fma(const tl_cpu_mm *a, const uint8_t *blk, int64_t p, __m128 sc, int l, __m256 acc)
{
    const __m256 s = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(sc),
                                              _mm256_setr_epi32(l, l, l, l, l + 1, l + 1, l + 1, l + 1));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(qv_pair(a, blk, p)), s, acc);
}

/* A Q4_0 decode: four blocks a step (two pairs, their four scales made in one vector: 13 vector
 * operations a pair, where one block alone, qv_block, takes 11), then a last pair, then an odd
 * last block (stored in order). */
QM_INLINE void qv_rows_q4(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    const int64_t nb = a->cols / TL_QK, bb = sizeof(tl_block_q4_0);
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *w = (const uint8_t *)a->w + (size_t)r * (size_t)(nb * bb);
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        int64_t b = 0;
        for (; b + 4 <= nb; b += 4) {
            __builtin_prefetch(w + b * bb + QV_PF, 0, 2);   /* into L2: 72 bytes a step, a line per 64 */
            __builtin_prefetch(w + b * bb + QV_PF + 64, 0, 2);
            const __m128 sc = qv_scales(w + b * bb, a->xd + b, 4);
            acc0 = qv_pair_fma(a, w + b * bb, b / 2, sc, 0, acc0);
            acc1 = qv_pair_fma(a, w + (b + 2) * bb, b / 2 + 1, sc, 2, acc1);
        }
        if (b + 2 <= nb) {
            acc0 = qv_pair_fma(a, w + b * bb, b / 2, qv_scales(w + b * bb, a->xd + b, 2), 0, acc0);
            b += 2;
        }
        if (b < nb)
            acc1 = qv_block(a, TL_Q4_0, w + b * bb, b, acc1);
        a->out[r] = qm_hsum(_mm256_add_ps(acc0, acc1));
    }
}

QM_INLINE void qv_rows(const tl_cpu_mm *a, int dt, int64_t r0, int64_t r1)
{
    const int64_t nb = a->cols / TL_QK;
    const size_t bb = dt == TL_Q8_0 ? sizeof(tl_block_q8_0) : sizeof(tl_block_q4_0);
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *w = (const uint8_t *)a->w + (size_t)r * (size_t)nb * bb;
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        int64_t b = 0;
        for (; b + 2 <= nb; b += 2) {
            __builtin_prefetch(w + (size_t)b * bb + QV_PF, 0, 2);   /* into L2, as _MM_HINT_T1 */
            acc0 = qv_block(a, dt, w + (size_t)b * bb, b, acc0);
            acc1 = qv_block(a, dt, w + (size_t)(b + 1) * bb, b + 1, acc1);
        }
        if (b < nb)
            acc0 = qv_block(a, dt, w + (size_t)b * bb, b, acc0);
        a->out[r] = qm_hsum(_mm256_add_ps(acc0, acc1));
    }
}

#include "transpose_avx2.h"
#include "qgemm_avx2.h"

/* The tiles above: any T (tools/bench/gemm_avx2.c times them against the decode loop). */
void tl_cpu_mm_q8_0_tile_avx2(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_q8_0_tile_avx2(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    qm_rows(a, TL_Q8_0, r0, r1);
}

void tl_cpu_mm_q4_0_tile_avx2(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_q4_0_tile_avx2(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    qm_rows(a, TL_Q4_0, r0, r1);
}

void tl_cpu_mm_q8_0_avx2(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    if (a->T == 1)
        qv_rows(a, TL_Q8_0, r0, r1);
    else if (a->T >= QG_MIN_T_Q8)
        qg_rows(a, TL_Q8_0, r0, r1);
    else
        qm_rows(a, TL_Q8_0, r0, r1);
}

void tl_cpu_mm_q4_0_avx2(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    /* x always has xc here (qbias 8). From 2 tokens the panels: tools/bench/qgemm_avx2.c timed
     * them at 0.85x qm_tile's time at 2 tokens, 0.54x at 4, 0.37x at 32 (qm_tile stays as the
     * bench's baseline, tl_cpu_mm_q4_0_tile_avx2) */
    if (a->T == 1)
        qv_rows_q4(a, r0, r1);
    else
        qg_rows(a, TL_Q4_0, r0, r1);
}
