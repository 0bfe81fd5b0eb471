/* The K-quant products (kq.h's definition) for AVX2 and up, included by kq_avx2.c and
 * kq_avx512vnni.c: the weights' unsigned quants times x's Q8_K bytes by VPMADDUBSW (pairs into
 * int16: at most 2 * 63 * 127, no saturation), each sub-block's scale by VPMADDWD into int32
 * (KQ_DOT_ADD: with AVX-512 VNNI one VPDPWSSD does that and the addition), so a super-block's
 * integer sums are exact, then one FMA a token with d * dx (and one with dmin * dx for the
 * mins, from x's bsums; Q6_K's -32 comes back the same way, 32 * sum_k sc_k * bsum_k). The
 * 6-bit scales are unpacked once a super-block, with four word operations (as ggml's kmask
 * trick does). Integer sums are exact in any order, so both sets give the same bits.
 *
 * A decode (T == 1) goes one row at a time, each thread's rows one stream, prefetched into L2
 * KQ_PF bytes ahead; a few tokens (a batched decode) take KQ_NT tokens per pass over a row's
 * blocks, so a block's quants are unpacked once for them, with a token's arithmetic the same as
 * alone (bit for bit); a prefill of KG_MIN_T tokens or more goes over repacked panels of 8 rows
 * (kqgemm_avx2.h): the same integer sums, the fp32 terms added in another order. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kq.h"
#include "tokenloop/quant.h"

#ifdef KQ_VNNI
#define KQ_DOT_ADD(acc, p16, s16) _mm256_dpwssd_epi32(acc, p16, s16)
#else
#define KQ_DOT_ADD(acc, p16, s16) _mm256_add_epi32(acc, _mm256_madd_epi16(p16, s16))
#endif
#define KQ_INLINE static inline __attribute__((always_inline))
#ifndef KQ_NT
#define KQ_NT 4      /* tokens per pass over a row in a prefill */
#endif
#ifndef KQ_PF
#define KQ_PF 1024   /* decode: prefetch lead in bytes */
#endif

KQ_INLINE float kq_hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

KQ_INLINE float kq_f16(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/* The 12 bytes of Q4_K/Q5_K scales as 16 bytes: the 8 scales, then the 8 mins, with scalar
 * word operations (kq_generic.c's kq_scales_mins, four bytes at a time). The same in 9 vector
 * operations measured slower (Q4_K decode in L2 21.1-21.5 GB/s against 22.3-22.9): the integer
 * ports are otherwise idle. */
KQ_INLINE __m128i kq_scales_mins(const uint8_t *s)
{
    uint32_t a, b, c;
    memcpy(&a, s, 4);
    memcpy(&b, s + 4, 4);
    memcpy(&c, s + 8, 4);
    const uint32_t lo6 = 0x3f3f3f3fu, lo4 = 0x0f0f0f0fu, lo2 = 0x03030303u;
    return _mm_set_epi32((int)(((c >> 4) & lo4) | ((b >> 6) & lo2) << 4), (int)(b & lo6),
                         (int)((c & lo4) | ((a >> 6) & lo2) << 4), (int)(a & lo6));
}

/* Group g (0..3) of a Q4_K/Q5_K super-block's quants: 64 values as two vectors of bytes, lo its
 * columns 64g..64g+31 and hi 64g+32..64g+63; Q5_K (q5) adds bit 2g (lo) and 2g + 1 (hi) of the
 * qh bytes hb above each nibble. */
KQ_INLINE void kq45_quants(const uint8_t *qs, __m256i hb, int q5, int g, __m256i *lo, __m256i *hi)
{
    const __m256i m4 = _mm256_set1_epi8(0xF), one = _mm256_set1_epi8(1);
    const __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * g));
    *lo = _mm256_and_si256(q, m4);
    *hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
    if (q5) {
        *lo = _mm256_or_si256(*lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * g), one), 4));
        *hi = _mm256_or_si256(*hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * g + 1), one), 4));
    }
}

/* Columns 128h + 32v .. +31 of a Q6_K super-block (l0, l1: its low bits there, qh its high
 * ones) as bytes 0..63. */
KQ_INLINE __m256i kq6_quants(__m256i l0, __m256i l1, __m256i qh, int v)
{
    const __m256i m4 = _mm256_set1_epi8(0xF), m3 = _mm256_set1_epi8(3);
    const __m256i l = v & 1 ? l1 : l0;
    const __m256i nib = v & 2 ? _mm256_and_si256(_mm256_srli_epi16(l, 4), m4) : _mm256_and_si256(l, m4);
    return _mm256_or_si256(nib, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * v), m3), 4));
}

/* x of the tokens of one pass: Q8_K bytes, scales and bsums (kq.h). */
typedef struct {
    const int8_t *q[KQ_NT];
    const float *d[KQ_NT];
    const int16_t *bs[KQ_NT];
} kq_x;

KQ_INLINE void kq_x_at(const tl_cpu_mm *a, int t, int NT, kq_x *x)
{
    const int64_t nb = a->cols / TL_QK_K;
    for (int u = 0; u < NT; u++) {
        x->q[u] = a->xq + (size_t)(t + u) * (size_t)a->cols;
        x->d[u] = a->xd + (size_t)(t + u) * (size_t)nb;
        x->bs[u] = (const int16_t *)(const void *)a->xc + (size_t)(t + u) * (size_t)(a->cols / 16);
    }
}

/* Super-block b of a Q4_K (q5 = 0) or Q5_K row times NT tokens into acc (d terms) and accm (the
 * mins, subtracted at the end). */
KQ_INLINE void kq45_block(const uint8_t *blk, int q5, int NT, const kq_x *x, int64_t b, __m256 *acc, __m256 *accm)
{
    /* the 8 scales and 8 mins in both lanes; a byte shuffle makes words of them (zero above) */
    const __m256i sm = _mm256_broadcastsi128_si256(kq_scales_mins(blk + 4));
    /* m_j in words 2j and 2j + 1, so one VPMADDWD with x's 16 bsums gives m_j * (its two sums) */
    const __m256i mins = _mm256_shuffle_epi8(sm, _mm256_setr_epi8(8, -1, 8, -1, 9, -1, 9, -1, 10, -1, 10, -1, 11, -1, 11, -1,
                                                                  12, -1, 12, -1, 13, -1, 13, -1, 14, -1, 14, -1, 15, -1,
                                                                  15, -1));
    const uint8_t *qs = blk + (q5 ? 48 : 16);
    const __m256i hb = q5 ? _mm256_loadu_si256((const __m256i *)(blk + 16)) : _mm256_setzero_si256();
    __m256i sumi[KQ_NT], sumi2[KQ_NT];   /* two chains: VPDPWSSD's latency */
    for (int u = 0; u < NT; u++)
        sumi[u] = sumi2[u] = _mm256_setzero_si256();
    for (int g = 0; g < 4; g++) {
        __m256i lo, hi;
        kq45_quants(qs, hb, q5, g, &lo, &hi);
        const __m256i sc_lo = _mm256_shuffle_epi8(sm, _mm256_set1_epi16((short)(0xFF00 + 2 * g)));
        const __m256i sc_hi = _mm256_shuffle_epi8(sm, _mm256_set1_epi16((short)(0xFF00 + 2 * g + 1)));
        for (int u = 0; u < NT; u++) {
            const int8_t *xq = x->q[u] + b * TL_QK_K + 64 * g;
            sumi[u] = KQ_DOT_ADD(sumi[u], _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)xq)), sc_lo);
            sumi2[u] = KQ_DOT_ADD(sumi2[u], _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(xq + 32))), sc_hi);
        }
    }
    for (int u = 0; u < NT; u++)
        sumi[u] = _mm256_add_epi32(sumi[u], sumi2[u]);
    const float d = kq_f16(blk), dmin = kq_f16(blk + 2);
    for (int u = 0; u < NT; u++) {
        const __m256i bs = _mm256_loadu_si256((const __m256i *)(x->bs[u] + 16 * b));
        const float dx = x->d[u][b];
        acc[u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[u]), _mm256_set1_ps(d * dx), acc[u]);
        accm[u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(bs, mins)), _mm256_set1_ps(dmin * dx), accm[u]);
    }
}

/* Super-block b of a Q6_K row times NT tokens into acc. */
KQ_INLINE void kq6_block(const uint8_t *blk, int NT, const kq_x *x, int64_t b, __m256 *acc)
{
    const __m128i sc = _mm_loadu_si128((const __m128i *)(blk + 192));
    __m256i sumi[2][KQ_NT];   /* two chains, by v's parity */
    for (int u = 0; u < NT; u++)
        sumi[0][u] = sumi[1][u] = _mm256_setzero_si256();
    for (int h = 0; h < 2; h++) {
        const __m256i qh = _mm256_loadu_si256((const __m256i *)(blk + 128 + 32 * h));
        const __m256i l0 = _mm256_loadu_si256((const __m256i *)(blk + 64 * h));
        const __m256i l1 = _mm256_loadu_si256((const __m256i *)(blk + 64 * h + 32));
        for (int v = 0; v < 4; v++) {   /* elements 128h + 32v .. +31: sub-blocks k, k + 1 */
            const __m256i q = kq6_quants(l0, l1, qh, v);
            const int k = 8 * h + 2 * v;   /* scale k in the low 8 words, k + 1 in the high 8 */
            const __m256i s = _mm256_cvtepi8_epi16(
                _mm_shuffle_epi8(sc, _mm_set_epi64x(0x0101010101010101ll * (k + 1), 0x0101010101010101ll * k)));
            for (int u = 0; u < NT; u++) {
                const __m256i xv = _mm256_loadu_si256((const __m256i *)(x->q[u] + b * TL_QK_K + 128 * h + 32 * v));
                sumi[v & 1][u] = KQ_DOT_ADD(sumi[v & 1][u], _mm256_maddubs_epi16(q, xv), s);
            }
        }
    }
    const __m256i sc16 = _mm256_cvtepi8_epi16(sc);
    const float d = kq_f16(blk + 208);
    for (int u = 0; u < NT; u++) {
        const __m256i bs = _mm256_loadu_si256((const __m256i *)(x->bs[u] + 16 * b));
        const __m256i corr = _mm256_slli_epi32(_mm256_madd_epi16(sc16, bs), 5);   /* 32 * sc_k * bsum_k */
        const __m256i s = _mm256_add_epi32(sumi[0][u], sumi[1][u]);
        acc[u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(s, corr)), _mm256_set1_ps(d * x->d[u][b]),
                                 acc[u]);
    }
}

/* Rows [r0, r1) times tokens t .. t + NT - 1; pf: prefetch the row's stream ahead (a decode). */
KQ_INLINE void kq_rows(const tl_cpu_mm *a, tl_dtype dt, int NT, int t, int64_t r0, int64_t r1, int pf)
{
    const int64_t nb = a->cols / TL_QK_K;
    const size_t bb = tl_dtype_block_bytes(dt), rb = (size_t)nb * bb;
    kq_x x;
    kq_x_at(a, t, NT, &x);
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *w = (const uint8_t *)a->w + (size_t)r * rb;
        __m256 acc[KQ_NT], accm[KQ_NT];
        for (int u = 0; u < NT; u++)
            acc[u] = accm[u] = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *blk = w + (size_t)b * bb;
            if (pf)
                for (size_t o = 0; o < bb; o += 64)
                    __builtin_prefetch(blk + KQ_PF + o, 0, 2);   /* into L2, as _MM_HINT_T1 */
            if (dt == TL_Q6_K)
                kq6_block(blk, NT, &x, b, acc);
            else
                kq45_block(blk, dt == TL_Q5_K, NT, &x, b, acc, accm);
        }
        for (int u = 0; u < NT; u++)
            a->out[(size_t)(t + u) * (size_t)a->rows + (size_t)r] = kq_hsum(acc[u]) - kq_hsum(accm[u]);
    }
}

#include "transpose_avx2.h"
#include "kqgemm_avx2.h"

/* A product of a few tokens (2 to KG_MIN_T - 1: a batched decode), and the prefill before
 * kqgemm_avx2.h (tools/bench/kqgemm_avx2.c times both): KQ_NT tokens per pass over each row (its
 * blocks stay in L1 for the next pass). */
KQ_INLINE void kq_mm_rows(const tl_cpu_mm *a, tl_dtype dt, int64_t r0, int64_t r1)
{
    for (int64_t r = r0; r < r1; r++) {
        int t = 0;
        for (; t + KQ_NT <= a->T; t += KQ_NT)
            kq_rows(a, dt, KQ_NT, t, r, r + 1, 0);
        while (t < a->T) {   /* the last few tokens, each count compiled on its own */
            const int left = a->T - t, n = left >= 4 && KQ_NT > 4 ? 4 : left >= 3 ? 3 : left;
            if (n == 4)
                kq_rows(a, dt, 4, t, r, r + 1, 0);
            else if (n == 3)
                kq_rows(a, dt, 3, t, r, r + 1, 0);
            else if (n == 2)
                kq_rows(a, dt, 2, t, r, r + 1, 0);
            else
                kq_rows(a, dt, 1, t, r, r + 1, 0);
            t += n;
        }
    }
}

KQ_INLINE void kq_mm(const tl_cpu_mm *a, tl_dtype dt, int64_t r0, int64_t r1)
{
    if (a->T == 1)
        kq_rows(a, dt, 1, 0, r0, r1, 1);
    else if (a->T >= KG_MIN_T)
        kg_rows(a, dt, r0, r1);   /* a prefill: repacked panels (kqgemm_avx2.h) */
    else
        kq_mm_rows(a, dt, r0, r1);
}
