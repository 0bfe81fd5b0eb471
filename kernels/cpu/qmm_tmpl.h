/* The product with Q8_0/Q4_0 weights over 256-bit integer vectors, included by qmm_avx2.c and
 * qmm_avx512vnni.c, which define first:
 *   QM_ISA, QM_RB x QM_TB (register tile: weight rows x tokens),
 *   QM_UNPACK_Q8(p), QM_UNPACK_Q4(p): a block's 32 quants (p: after the scale) as 32 bytes, in
 *     x's order and biased by the ISA's qbias (mm.h),
 *   QM_DOT_Q8(w, x, c), QM_DOT_Q4(w, x, c): 8 int32 lanes, each the signed sum of 4
 *     consecutive products, c the lanes' bias correction (xc).
 * One block is 32 weights: one integer vector per row and token, then one fp32 FMA with the
 * two scales, as tl_cpu_mm_q*_generic computes it (only the order of the additions differs). */
#include <immintrin.h>
#include <string.h>

#include "mm.h"
#include "tokenloop/quant.h"

#define QM_INLINE static inline __attribute__((always_inline))
#define QM_CAT2(a, b) a##_##b
#define QM_CAT(a, b) QM_CAT2(a, b)

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

void QM_CAT(tl_cpu_mm_q8_0, QM_ISA)(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    qm_rows(a, TL_Q8_0, r0, r1);
}

void QM_CAT(tl_cpu_mm_q4_0, QM_ISA)(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    qm_rows(a, TL_Q4_0, r0, r1);
}
