/* Q8_0/Q4_0 products with AVX-512 VNNI (VPDPBUSD) on 256-bit vectors. A decode step is bound
 * by how fast the weights stream in: at 18 bytes per 32 weights (Q4_0) a core must finish a
 * block in about 3 cycles to keep up with memory, so the work per block is cut down:
 *  - Q4_0: a pair of blocks A, B is 32 bytes of nibbles; its low nibbles are A0-15 B0-15, its
 *    high ones A16-31 B16-31, and x's pair is stored in that order (xq: lo 32 bytes, then hi),
 *    so two VPDPBUSD add both halves into the same 8 int32 lanes (4 for A, 4 for B): one
 *    conversion and one FMA per pair;
 *  - beside x, xd holds x's block scales and xc the lanes' bias correction (weights enter
 *    unsigned: Q8_0 as q ^ 0x80, Q4_0 as 0..15, so x's sum times the bias is taken off by
 *    starting the integer sums at xc); a decode multiplies a chunk's weight and x scales once
 *    and permutes the products to each unit's lanes: one FMA a unit;
 *  - the weights' f16 scales of a chunk (8 Q4_0 or 4 Q8_0 blocks: those inside 128 bytes)
 *    come out of one two-register word permute and one conversion.
 * Zen 4 runs 512-bit operations as two 256-bit halves, so 512-bit vectors would not do fewer
 * operations here, only bigger ones (measured: slower). Built with -mavx512vnni; only called
 * after __builtin_cpu_supports says so (tl_cpu_isa_avx512bf16). */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "mm.h"
#include "tokenloop/quant.h"

#ifndef VN_RB
#define VN_RB 4
#endif
#define VN_TB 4
#define VN_INLINE static inline __attribute__((always_inline))
#ifndef VN_PF
#define VN_PF 4096   /* bytes ahead in each row of a prefill's tile */
#endif
#ifndef VN_PFV
#define VN_PFV 4096  /* bytes ahead in a decode's one stream (1 KiB: 33.6 GB/s, 4 KiB: 35.6, two cores) */
#endif

/* One block of x as tl_quantize_row(TL_Q8_0) makes it, 16 lanes at a time: the same maximum,
 * the same d = amax / 127 and 1 / d, roundf's ties away from zero; returns the scale as the
 * kernels read it (rounded to f16 and back). Scalar, this was 6 ns an element: as long as a
 * 512-row product. */
static float vn_quant_block(const float *x, int8_t *q)
{
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    __m512 a = _mm512_loadu_ps(x), b = _mm512_loadu_ps(x + 16);
    float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(b)));
    const float d = amax / 127, id = d ? 1.0f / d : 0.0f;
    const __m512 vid = _mm512_set1_ps(id), half = _mm512_set1_ps(0.5f);
    __m512 v[2] = {_mm512_mul_ps(a, vid), _mm512_mul_ps(b, vid)};
    for (int h = 0; h < 2; h++) {
        __m512 tr = _mm512_roundscale_ps(v[h], _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        __m512 frac = _mm512_abs_ps(_mm512_sub_ps(v[h], tr));   /* exact */
        __mmask16 up = _mm512_cmp_ps_mask(frac, half, _CMP_GE_OQ);
        __m512 one = _mm512_castsi512_ps(_mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(v[h]), sign),
                                                         _mm512_castps_si512(_mm512_set1_ps(1.0f))));
        tr = _mm512_mask_add_ps(tr, up, tr, one);
        _mm_storeu_si128((__m128i *)(q + 16 * h), _mm512_cvtsepi32_epi8(_mm512_cvttps_epi32(tr)));
    }
    return _cvtsh_ss(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

/* ---- x: per token, xq cols bytes; xd a scale per block; xc 8 lanes per unit, a unit being a
 * Q4_0 pair (or an odd last block) or one Q8_0 block ---- */

void tl_cpu_qpack_avx512vnni(const tl_cpu_mm *m, tl_dtype dt, const float *x, int t, int qbias)
{
    const int64_t nb = m->cols / TL_QK;
    int8_t *q = (int8_t *)m->xq + (size_t)t * (size_t)m->cols;
    float *d = (float *)m->xd + (size_t)t * (size_t)m->cols / 4;
    int32_t *c = (int32_t *)m->xc + (size_t)t * (size_t)m->cols / 4;
    x += (size_t)t * (size_t)m->cols;
    const int step = dt == TL_Q4_0 ? 2 : 1;
    for (int64_t b = 0, unit = 0; b < nb; b += step, unit++) {
        int8_t qs[2][TL_QK];
        const int two = step == 2 && b + 1 < nb;
        int8_t *o = q + b * TL_QK;
        float *od = d + b;
        int32_t *oc = c + unit * 8;
        const float dA = vn_quant_block(x + b * TL_QK, qs[0]);
        od[0] = dA;
        if (!two) {   /* one block in order: lane l holds its bytes 4l..4l+3 */
            memcpy(o, qs[0], TL_QK);
            for (int l = 0; l < 8; l++) {
                oc[l] = -qbias * (o[4 * l] + o[4 * l + 1] + o[4 * l + 2] + o[4 * l + 3]);
            }
            continue;
        }
        const float dB = vn_quant_block(x + (b + 1) * TL_QK, qs[1]);
        memcpy(o, qs[0], 16);           /* low nibbles' partners */
        memcpy(o + 16, qs[1], 16);
        memcpy(o + 32, qs[0] + 16, 16); /* high nibbles' partners */
        memcpy(o + 48, qs[1] + 16, 16);
        od[1] = dB;
        for (int l = 0; l < 8; l++) {   /* lane l sums bytes 4l..4l+3 of both halves */
            int s = 0;
            for (int k = 0; k < 4; k++)
                s += o[4 * l + k] + o[32 + 4 * l + k];
            oc[l] = -qbias * s;
        }
    }
}

/* ---- weights ---- */

/* The f16 scales of one chunk, from its first block, widened to floats 0..7; loads masked at
 * the row's end. (A gather is simpler, and on Zen 4 it alone took most of the time.) */
static const uint16_t vn_word_q4[32] = {0, 9, 18, 27, 36, 45, 54, 63};
static const uint16_t vn_word_q8[32] = {0, 17, 34, 51};

VN_INLINE __m256 vn_scales(const uint8_t *blk, size_t bytes_left, int dt)
{
    size_t nw = bytes_left / 2;
    __mmask32 m0 = nw >= 32 ? (__mmask32)~0u : (__mmask32)((1u << nw) - 1);
    __mmask32 m1 = nw >= 64 ? (__mmask32)~0u : nw > 32 ? (__mmask32)((1u << (nw - 32)) - 1) : 0;
    __m512i lo = _mm512_maskz_loadu_epi16(m0, blk), hi = _mm512_maskz_loadu_epi16(m1, blk + 64);
    __m512i w = _mm512_permutex2var_epi16(lo, _mm512_loadu_si512(dt == TL_Q8_0 ? vn_word_q8 : vn_word_q4), hi);
    return _mm256_cvtph_ps(_mm512_castsi512_si128(w));
}

/* Rows r..r+nr-1 (missing ones repeat the last, not stored) times tokens t..t+NT-1. */
VN_INLINE void vn_tile(const tl_cpu_mm *a, int dt, int NT, int64_t r, int nr, int t)
{
    const int64_t nb = a->cols / TL_QK;
    const int bb = dt == TL_Q8_0 ? (int)sizeof(tl_block_q8_0) : (int)sizeof(tl_block_q4_0);
    const int cb = dt == TL_Q8_0 ? 4 : 8;   /* blocks a chunk */
    const size_t row_bytes = (size_t)nb * (size_t)bb;
    const uint8_t *wr[VN_RB];
    for (int i = 0; i < VN_RB; i++)
        wr[i] = (const uint8_t *)a->w + (size_t)(r + (i < nr ? i : nr - 1)) * row_bytes;
    const int8_t *xq[VN_TB];
    const float *xd[VN_TB];
    const int32_t *xc[VN_TB];
    for (int u = 0; u < NT; u++) {
        xq[u] = a->xq + (size_t)(t + u) * (size_t)a->cols;
        xd[u] = a->xd + (size_t)(t + u) * (size_t)a->cols / 4;
        xc[u] = a->xc + (size_t)(t + u) * (size_t)a->cols / 4;
    }
    __m256 acc[VN_RB][VN_TB];
    for (int i = 0; i < VN_RB; i++)
        for (int u = 0; u < NT; u++)
            acc[i][u] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(15), flip = _mm256_set1_epi8((char)0x80);
    for (int64_t b0 = 0; b0 < nb; b0 += cb) {
        const int n = nb - b0 < cb ? (int)(nb - b0) : cb;
        __m256 dw[VN_RB], dx[VN_TB];
        for (int u = 0; u < NT; u++)   /* x's block scales (xd has room past the last block) */
            dx[u] = _mm256_loadu_ps(xd[u] + b0);
        for (int i = 0; i < VN_RB; i++) {
            /* Ahead of the reads, in every row: four streams at 18 bytes a block are too much
             * for the hardware prefetcher alone (one core streamed 6 GB/s from DRAM without). */
            const char *ahead = (const char *)wr[i] + (size_t)b0 * (size_t)bb + VN_PF;
            for (int l = 0; l < cb * bb; l += 64)
                _mm_prefetch(ahead + l, _MM_HINT_T0);
        }
        for (int i = 0; i < VN_RB; i++)
            dw[i] = vn_scales(wr[i] + (size_t)b0 * (size_t)bb, row_bytes - (size_t)b0 * (size_t)bb, dt);
        if (dt == TL_Q4_0) {
            for (int k = 0; k + 2 <= n; k += 2) {   /* pairs */
                const int64_t b = b0 + k, unit = b / 2;
                const __m256i sel = _mm256_setr_epi32(k, k, k, k, k + 1, k + 1, k + 1, k + 1);
                __m256 xs[VN_TB];
                for (int u = 0; u < NT; u++)
                    xs[u] = _mm256_permutexvar_ps(sel, dx[u]);
                for (int i = 0; i < VN_RB; i++) {
                    const uint8_t *A = wr[i] + (size_t)b * (size_t)bb;
                    const __m256i v = _mm256_loadu2_m128i((const __m128i *)(A + bb + 2), (const __m128i *)(A + 2));
                    const __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                    const __m256 s = _mm256_permutexvar_ps(sel, dw[i]);
                    for (int u = 0; u < NT; u++) {
                        const int8_t *xp = xq[u] + b * TL_QK;
                        __m256i d = _mm256_loadu_si256((const __m256i *)(xc[u] + unit * 8));
                        d = _mm256_dpbusd_epi32(d, lo, _mm256_loadu_si256((const __m256i *)xp));
                        d = _mm256_dpbusd_epi32(d, hi, _mm256_loadu_si256((const __m256i *)(xp + 32)));
                        __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(d), s);
                        acc[i][u] = _mm256_fmadd_ps(f, xs[u], acc[i][u]);
                    }
                }
            }
            if (n % 2) {   /* the odd last block of the row, in order */
                const int k = n - 1;
                const int64_t b = b0 + k, unit = b / 2;
                const __m256i sel = _mm256_set1_epi32(k);
                __m256 xs[VN_TB];
                for (int u = 0; u < NT; u++)
                    xs[u] = _mm256_permutexvar_ps(sel, dx[u]);
                for (int i = 0; i < VN_RB; i++) {
                    const __m128i v = _mm_loadu_si128((const __m128i *)(wr[i] + (size_t)b * (size_t)bb + 2));
                    const __m256i w = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), _mm256_castsi256_si128(m4)),
                                                       _mm_and_si128(v, _mm256_castsi256_si128(m4)));
                    const __m256 s = _mm256_permutexvar_ps(sel, dw[i]);
                    for (int u = 0; u < NT; u++) {
                        __m256i d = _mm256_dpbusd_epi32(_mm256_loadu_si256((const __m256i *)(xc[u] + unit * 8)), w,
                                                        _mm256_loadu_si256((const __m256i *)(xq[u] + b * TL_QK)));
                        __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(d), s);
                        acc[i][u] = _mm256_fmadd_ps(f, xs[u], acc[i][u]);
                    }
                }
            }
        } else {
            for (int k = 0; k < n; k++) {
                const int64_t b = b0 + k;
                const __m256i sel = _mm256_set1_epi32(k);
                __m256 xs[VN_TB];
                for (int u = 0; u < NT; u++)
                    xs[u] = _mm256_permutexvar_ps(sel, dx[u]);
                for (int i = 0; i < VN_RB; i++) {
                    const __m256i w = _mm256_xor_si256(
                        _mm256_loadu_si256((const __m256i *)(wr[i] + (size_t)b * (size_t)bb + 2)), flip);
                    const __m256 s = _mm256_permutexvar_ps(sel, dw[i]);
                    for (int u = 0; u < NT; u++) {
                        __m256i d = _mm256_dpbusd_epi32(_mm256_loadu_si256((const __m256i *)(xc[u] + b * 8)), w,
                                                        _mm256_loadu_si256((const __m256i *)(xq[u] + b * TL_QK)));
                        __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(d), s);
                        acc[i][u] = _mm256_fmadd_ps(f, xs[u], acc[i][u]);
                    }
                }
            }
        }
    }
    for (int i = 0; i < nr; i++)
        for (int u = 0; u < NT; u++) {
            __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc[i][u]), _mm256_extractf128_ps(acc[i][u], 1));
            h = _mm_add_ps(h, _mm_movehl_ps(h, h));
            h = _mm_add_ss(h, _mm_movehdup_ps(h));
            a->out[(size_t)(t + u) * (size_t)a->rows + (size_t)(r + i)] = _mm_cvtss_f32(h);
        }
}

/* One Q4_0 pair (blocks k, k+1 of a chunk) or Q8_0 block k of a decode's row into *acc; p holds
 * the chunk's products dw * dx, one per block. */
VN_INLINE void vn_vec_unit(const tl_cpu_mm *a, int dt, const uint8_t *blk0, int64_t b0, int k, __m256 p, __m256 *acc)
{
    const __m256i m4 = _mm256_set1_epi8(15);
    const int64_t b = b0 + k;
    if (dt == TL_Q4_0) {
        const int bb = (int)sizeof(tl_block_q4_0);
        const int64_t unit = b / 2;
        const uint8_t *A = blk0 + (size_t)k * (size_t)bb;
        const __m256i v = _mm256_loadu2_m128i((const __m128i *)(A + bb + 2), (const __m128i *)(A + 2));
        __m256i d = _mm256_loadu_si256((const __m256i *)(a->xc + unit * 8));
        d = _mm256_dpbusd_epi32(d, _mm256_and_si256(v, m4), _mm256_loadu_si256((const __m256i *)(a->xq + b * TL_QK)));
        d = _mm256_dpbusd_epi32(d, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4),
                                _mm256_loadu_si256((const __m256i *)(a->xq + b * TL_QK + 32)));
        const __m256 s = _mm256_permutexvar_ps(_mm256_setr_epi32(k, k, k, k, k + 1, k + 1, k + 1, k + 1), p);
        *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), s, *acc);
    } else {
        const int bb = (int)sizeof(tl_block_q8_0);
        const __m256i q = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(blk0 + (size_t)k * (size_t)bb + 2)),
                                           _mm256_set1_epi8((char)0x80));
        __m256i d = _mm256_dpbusd_epi32(_mm256_loadu_si256((const __m256i *)(a->xc + b * 8)), q,
                                        _mm256_loadu_si256((const __m256i *)(a->xq + b * TL_QK)));
        const __m256 s = _mm256_permutexvar_ps(_mm256_set1_epi32(k), p);
        *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), s, *acc);
    }
}

/* A decode's product (T = 1): one row at a time, so each thread reads one sequential stream
 * from memory (four interleaved rows streamed 10 GB/s a core from DRAM, one row 17: in L2 the
 * two are alike). A whole chunk is unrolled with four accumulators, so consecutive pairs' FMAs
 * do not wait on each other (indexed at run time, the accumulators went through memory). */
VN_INLINE void vn_vec(const tl_cpu_mm *a, int dt, int64_t r0, int64_t r1)
{
    const int64_t nb = a->cols / TL_QK;
    const int bb = dt == TL_Q8_0 ? (int)sizeof(tl_block_q8_0) : (int)sizeof(tl_block_q4_0);
    const int cb = dt == TL_Q8_0 ? 4 : 8, step = dt == TL_Q8_0 ? 1 : 2;
    const size_t row_bytes = (size_t)nb * (size_t)bb;
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *w = (const uint8_t *)a->w + (size_t)r * row_bytes;
        __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
        int64_t b0 = 0;
        for (; b0 + cb <= nb; b0 += cb) {
            const uint8_t *blk0 = w + (size_t)b0 * (size_t)bb;
            for (int l = 0; l < cb * bb; l += 64)
                _mm_prefetch((const char *)blk0 + VN_PFV + l, _MM_HINT_T0);
            const __m256 p = _mm256_mul_ps(vn_scales(blk0, row_bytes - (size_t)b0 * (size_t)bb, dt),
                                           _mm256_loadu_ps(a->xd + b0));
            vn_vec_unit(a, dt, blk0, b0, 0, p, &acc0);
            vn_vec_unit(a, dt, blk0, b0, step, p, &acc1);
            vn_vec_unit(a, dt, blk0, b0, 2 * step, p, &acc2);
            vn_vec_unit(a, dt, blk0, b0, 3 * step, p, &acc3);
        }
        if (b0 < nb) {   /* the row's last, partial chunk */
            const uint8_t *blk0 = w + (size_t)b0 * (size_t)bb;
            const int n = (int)(nb - b0);
            const __m256 p = _mm256_mul_ps(vn_scales(blk0, row_bytes - (size_t)b0 * (size_t)bb, dt),
                                           _mm256_loadu_ps(a->xd + b0));
            int k = 0;
            for (; k + step <= n; k += step)
                vn_vec_unit(a, dt, blk0, b0, k, p, &acc0);
            if (k < n) {   /* Q4_0's odd last block, in order */
                const int64_t b = b0 + k, unit = b / 2;
                const __m128i v = _mm_loadu_si128((const __m128i *)(blk0 + (size_t)k * (size_t)bb + 2)),
                              m4 = _mm_set1_epi8(15);
                const __m256i q = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m4), _mm_and_si128(v, m4));
                __m256i d = _mm256_dpbusd_epi32(_mm256_loadu_si256((const __m256i *)(a->xc + unit * 8)), q,
                                                _mm256_loadu_si256((const __m256i *)(a->xq + b * TL_QK)));
                const __m256 s = _mm256_permutexvar_ps(_mm256_set1_epi32(k), p);
                acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), s, acc1);
            }
        }
        __m256 t = _mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3));
        __m128 h = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
        h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        h = _mm_add_ss(h, _mm_movehdup_ps(h));
        a->out[r] = _mm_cvtss_f32(h);
    }
}

VN_INLINE void vn_rows(const tl_cpu_mm *a, int dt, int64_t r0, int64_t r1)
{
    if (a->T == 1) {
        vn_vec(a, dt, r0, r1);
        return;
    }
    for (int64_t r = r0; r < r1; r += VN_RB) {
        int nr = r1 - r < VN_RB ? (int)(r1 - r) : VN_RB;
        int t = 0;
        for (; t + VN_TB <= a->T; t += VN_TB)
            vn_tile(a, dt, VN_TB, r, nr, t);
        switch (a->T - t) {
        case 3: vn_tile(a, dt, 3, r, nr, t); break;
        case 2: vn_tile(a, dt, 2, r, nr, t); break;
        case 1: vn_tile(a, dt, 1, r, nr, t); break;
        default: break;
        }
    }
}

void tl_cpu_mm_q8_0_avx512vnni(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    vn_rows(a, TL_Q8_0, r0, r1);
}

void tl_cpu_mm_q4_0_avx512vnni(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    vn_rows(a, TL_Q4_0, r0, r1);
}
