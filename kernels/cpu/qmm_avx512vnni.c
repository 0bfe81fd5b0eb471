/* Q8_0/Q4_0 products with AVX-512 VNNI (VPDPBUSD). A decode step is bound by how fast the
 * weights stream in: at 18 bytes per 32 weights (Q4_0) a core must finish a block in under 2
 * cycles to keep up with memory, so the work per block is cut down.
 * Prefill (T > 1, vn_tile), 256-bit vectors:
 *  - Q4_0: a pair of blocks A, B is 32 bytes of nibbles; its low nibbles are A0-15 B0-15, its
 *    high ones A16-31 B16-31, and x's pair is stored in that order (xq: lo 32 bytes, then hi),
 *    so two VPDPBUSD add both halves into the same 8 int32 lanes (4 for A, 4 for B): one
 *    conversion and one FMA per pair;
 *  - beside x, xd holds x's block scales and xc the lanes' bias correction (weights enter
 *    unsigned: Q8_0 as q ^ 0x80, Q4_0 as 0..15, so x's sum times the bias is taken off by
 *    starting the integer sums at xc);
 *  - the weights' f16 scales of a chunk (8 Q4_0 or 4 Q8_0 blocks: those inside 128 bytes)
 *    come out of one two-register word permute and one conversion.
 * Decode (T = 1, vn_vec), 512-bit vectors over chunks of 8 Q4_0 / 4 Q8_0 blocks whose weight
 * bytes are permuted so that each 32-bit lane holds bytes of one block: all of a chunk's
 * VPDPBUSD add into one vector, and x is packed in that order (vn_pack_chunks). Zen 4 runs a
 * 512-bit operation as two 256-bit halves, so this pays only because it does fewer operations
 * (one conversion and one FMA a chunk instead of one a pair), not because they are wider.
 * Built with -mavx512vnni; only called after __builtin_cpu_supports says so
 * (tl_cpu_isa_avx512bf16). */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "mm.h"
#include "tokenloop/quant.h"

#define QG_VNNI 1
#define QG_XD_STRIDE(a) ((a)->cols / 4)   /* vn_pack_units' room for scales */
/* Fewer tokens: vn_tile. tools/bench/qgemm_avx2.c --vnni: the panels took 0.94-0.99x the tile's
 * time at 2 tokens and 0.66-0.71x at 4 for Q8_0; for Q4_0 1.33-1.36x at 2, 1.02-1.04x at 4,
 * 0.78-0.87x at 8, 0.58-0.62x at 32-128 (Q8_0: 0.35-0.48x). */
#define QG_MIN_T_VNNI(dt) ((dt) == TL_Q4_0 ? 8 : 2)
#include "transpose_avx2.h"
#include "qgemm_avx2.h"

#ifndef VN_RB
#define VN_RB 4
#endif
#define VN_TB 4
#define VN_C4 8   /* Q4_0 blocks in a decode chunk (144 bytes) */
#define VN_C8 4   /* Q8_0 blocks (136 bytes) */
#define VN_INLINE static inline __attribute__((always_inline))
#ifndef VN_PF
#define VN_PF 4096   /* bytes ahead in each row of a prefill's tile */
#endif
#ifndef VN_PFV
/* Bytes ahead in a decode's one stream, into L2: one thread over 4 x 8192x2048 Q4_0 ran at
 * 1.5-1.7x a plain read's time with 4 KiB (into L1 or L2), 1.25-1.29x with 8 KiB, 1.19-1.24x
 * with 16 KiB; 24 and 32 KiB were no better. */
#define VN_PFV 16384
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

/* Blocks 0..nb-1 of x in the prefill's order: Q4_0 pairs (the odd last block in order) or Q8_0
 * blocks; d a scale per block, c 8 lanes per unit. */
static void vn_pack_units(const float *x, int8_t *q, float *d, int32_t *c, int64_t nb, int step, int qbias)
{
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

/* A decode's x: whole chunks (VN_C4 Q4_0 or VN_C8 Q8_0 blocks) lane by lane as vn_vec reads
 * them, then the row's last blocks as vn_pack_units lays them out, their xc lanes right after
 * the chunks'. Lane l of a chunk belongs to block k = l % (blocks a chunk), so x's scales are
 * one a block, in order (a broadcast gives every lane its block's); its four bytes in each of
 * the chunk's 64-byte vectors are the partners of the weight bytes vn_vec's word permutes put
 * in that lane. */
static void vn_pack_chunks(const float *x, int8_t *q, float *d, int32_t *c, int64_t nb, tl_dtype dt, int qbias)
{
    const int cb = dt == TL_Q8_0 ? VN_C8 : VN_C4;
    const int64_t nfull = nb / cb;
    for (int64_t ch = 0; ch < nfull; ch++) {
        int8_t qs[VN_C4][TL_QK];
        float ds[VN_C4];
        for (int k = 0; k < cb; k++)
            ds[k] = vn_quant_block(x + (ch * cb + k) * TL_QK, qs[k]);
        int8_t *o = q + ch * cb * TL_QK;
        for (int l = 0; l < 16; l++) {
            const int k = l % cb, j = l / cb;
            /* Q4_0 (j = 0, 1): the four vectors' lane holds the partners of nibble bytes 4j..
             * (low, high) and 8+4j.. (low, high) of block k; Q8_0 (j = 0..3): of bytes 4j.. and
             * 16+4j.. */
            static const int q4_at[4] = {0, 16, 8, 24}, q8_at[2] = {0, 16};
            int s = 0;
            for (int v = 0; v < (dt == TL_Q8_0 ? 2 : 4); v++) {
                const int8_t *src = qs[k] + (dt == TL_Q8_0 ? q8_at[v] : q4_at[v]) + 4 * j;
                memcpy(o + 64 * v + 4 * l, src, 4);
                s += src[0] + src[1] + src[2] + src[3];
            }
            c[ch * 16 + l] = -qbias * s;
        }
        memcpy(d + ch * cb, ds, sizeof(float) * (size_t)cb);
    }
    const int64_t b0 = nfull * cb;
    vn_pack_units(x + b0 * TL_QK, q + b0 * TL_QK, d + b0, c + nfull * 16, nb - b0,
                  dt == TL_Q4_0 ? 2 : 1, qbias);
}

void tl_cpu_qpack_avx512vnni(const tl_cpu_mm *m, tl_dtype dt, const float *x, int t, int qbias)
{
    const int64_t nb = m->cols / TL_QK;
    int8_t *q = (int8_t *)m->xq + (size_t)t * (size_t)m->cols;
    float *d = (float *)m->xd + (size_t)t * (size_t)m->cols / 4;
    int32_t *c = (int32_t *)m->xc + (size_t)t * (size_t)m->cols / 4;
    x += (size_t)t * (size_t)m->cols;
    if (m->T == 1)
        vn_pack_chunks(x, q, d, c, nb, dt, qbias);
    else   /* the panels (QG_MIN_T_VNNI tokens or more) read Q4_0 blocks in order, vn_tile pairs */
        vn_pack_units(x, q, d, c, nb, dt == TL_Q4_0 && m->T < QG_MIN_T_VNNI(dt) ? 2 : 1, qbias);
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

VN_INLINE float vn_hsum(__m256 v)
{
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
}

/* The row's last blocks after the chunks (fewer than a chunk), laid out as vn_pack_units does:
 * w, xq, xd and xc point at the first of them. */
VN_INLINE __m256 vn_vec_tail(int dt, const uint8_t *w, int n, const int8_t *xq, const float *xd, const int32_t *xc)
{
    const int bb = dt == TL_Q8_0 ? (int)sizeof(tl_block_q8_0) : (int)sizeof(tl_block_q4_0);
    const __m256 p = _mm256_mul_ps(vn_scales(w, (size_t)n * (size_t)bb, dt), _mm256_loadu_ps(xd));
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256 acc = _mm256_setzero_ps();
    int k = 0;
    if (dt == TL_Q4_0)
        for (; k + 2 <= n; k += 2) {   /* pairs */
            const uint8_t *A = w + (size_t)k * (size_t)bb;
            const __m256i v = _mm256_loadu2_m128i((const __m128i *)(A + bb + 2), (const __m128i *)(A + 2));
            __m256i d = _mm256_loadu_si256((const __m256i *)(xc + k / 2 * 8));
            d = _mm256_dpbusd_epi32(d, _mm256_and_si256(v, m4), _mm256_loadu_si256((const __m256i *)(xq + k * TL_QK)));
            d = _mm256_dpbusd_epi32(d, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4),
                                    _mm256_loadu_si256((const __m256i *)(xq + k * TL_QK + 32)));
            const __m256 s = _mm256_permutexvar_ps(_mm256_setr_epi32(k, k, k, k, k + 1, k + 1, k + 1, k + 1), p);
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), s, acc);
        }
    for (; k < n; k++) {   /* Q8_0 blocks, Q4_0's odd last one: in order */
        const uint8_t *B = w + (size_t)k * (size_t)bb;
        __m256i q;
        if (dt == TL_Q4_0) {
            const __m128i v = _mm_loadu_si128((const __m128i *)(B + 2));
            q = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), _mm256_castsi256_si128(m4)),
                                 _mm_and_si128(v, _mm256_castsi256_si128(m4)));
        } else {
            q = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(B + 2)), _mm256_set1_epi8((char)0x80));
        }
        const int unit = dt == TL_Q4_0 ? k / 2 : k;
        __m256i d = _mm256_dpbusd_epi32(_mm256_loadu_si256((const __m256i *)(xc + unit * 8)), q,
                                        _mm256_loadu_si256((const __m256i *)(xq + k * TL_QK)));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), _mm256_permutexvar_ps(_mm256_set1_epi32(k), p), acc);
    }
    return acc;
}

/* Word permutes that build a decode chunk's vectors from four 64-byte loads of it (at 0, 72, 10,
 * 80 for Q4_0's 144 bytes; 0, 64, 16, 72 for Q8_0's 136): A and B hold 4-byte groups of weight
 * bytes, each lane from one block (Q4_0: two lanes a block, Q8_0: four), S the blocks' f16
 * scales repeated over their lanes. */
static const uint16_t vn_chunk_idx[2][3][32] = {
    {/* Q4_0 */
     {1, 2, 10, 11, 19, 20, 28, 29, 33, 34, 42, 43, 51, 52, 60, 61,
      3, 4, 12, 13, 21, 22, 30, 31, 35, 36, 44, 45, 53, 54, 62, 63},
     {0, 1, 9, 10, 18, 19, 27, 28, 33, 34, 42, 43, 51, 52, 60, 61,
      2, 3, 11, 12, 20, 21, 29, 30, 35, 36, 44, 45, 53, 54, 62, 63},
     {0, 9, 18, 27, 32, 41, 50, 59, 0, 9, 18, 27, 32, 41, 50, 59},
    },
    {/* Q8_0 */
     {1, 2, 18, 19, 35, 36, 52, 53, 3, 4, 20, 21, 37, 38, 54, 55,
      5, 6, 22, 23, 39, 40, 56, 57, 7, 8, 24, 25, 41, 42, 58, 59},
     {1, 2, 18, 19, 39, 40, 56, 57, 3, 4, 20, 21, 41, 42, 58, 59,
      5, 6, 22, 23, 43, 44, 60, 61, 7, 8, 24, 25, 45, 46, 62, 63},
     {0, 17, 34, 51, 0, 17, 34, 51, 0, 17, 34, 51, 0, 17, 34, 51},
    },
};

/* A decode's product (T = 1): one row at a time, so each thread reads one sequential stream
 * from memory (four interleaved rows streamed 10 GB/s a core from DRAM, one row 17; two rows
 * sharing x's loads were no faster from DRAM). A chunk's weight bytes are permuted so that every
 * 32-bit lane of a 512-bit vector belongs to one block and x (vn_pack_chunks) is stored in the
 * same order: the chunk's two (Q8_0) or four (Q4_0) VPDPBUSD add into one vector, which needs
 * one conversion and one FMA, against scales that one more permute, one conversion and one
 * multiply bring. The 256-bit pair loop before this did an FMA, a conversion and a scale permute
 * per two blocks and was bound by those, at 1.6-2x a plain read's time. */
VN_INLINE void vn_vec(const tl_cpu_mm *a, int dt, int64_t r0, int64_t r1)
{
    const int64_t nb = a->cols / TL_QK;
    const int q8 = dt == TL_Q8_0;
    const int bb = q8 ? (int)sizeof(tl_block_q8_0) : (int)sizeof(tl_block_q4_0);
    const int cb = q8 ? VN_C8 : VN_C4, cbytes = cb * bb;
    const int o1 = q8 ? 64 : 72, o2 = q8 ? 16 : 10, o3 = q8 ? 72 : 80;
    const int64_t nfull = nb / cb;
    const size_t row_bytes = (size_t)nb * (size_t)bb;
    const __m512i ia = _mm512_loadu_si512(vn_chunk_idx[q8][0]), ib = _mm512_loadu_si512(vn_chunk_idx[q8][1]),
                  is = _mm512_loadu_si512(vn_chunk_idx[q8][2]);
    const __m512i m4 = _mm512_set1_epi8(15), flip = _mm512_set1_epi8((char)0x80);
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *w = (const uint8_t *)a->w + (size_t)r * row_bytes;
        const int8_t *xq = a->xq;
        const float *xd = a->xd;
        const int32_t *xc = a->xc;
        __m512 acc = _mm512_setzero_ps();
        for (int64_t ch = 0; ch < nfull; ch++) {
            for (int l = 0; l < cbytes; l += 64)
                _mm_prefetch((const char *)w + VN_PFV + l, _MM_HINT_T1);
            __m512i w0 = _mm512_loadu_si512(w), w1 = _mm512_loadu_si512(w + o1);
            __asm__("" : "+v"(w0), "+v"(w1));   /* kept for the scales' permute, not loaded twice */
            const __m512i w2 = _mm512_loadu_si512(w + o2), w3 = _mm512_loadu_si512(w + o3);
            const __m512i A = _mm512_permutex2var_epi16(w0, ia, w1), B = _mm512_permutex2var_epi16(w2, ib, w3);
            __m512i d = _mm512_loadu_si512(xc);
            if (q8) {
                d = _mm512_dpbusd_epi32(d, _mm512_xor_si512(A, flip), _mm512_loadu_si512(xq));
                d = _mm512_dpbusd_epi32(d, _mm512_xor_si512(B, flip), _mm512_loadu_si512(xq + 64));
            } else {
                d = _mm512_dpbusd_epi32(d, _mm512_and_si512(A, m4), _mm512_loadu_si512(xq));
                d = _mm512_dpbusd_epi32(d, _mm512_and_si512(_mm512_srli_epi16(A, 4), m4), _mm512_loadu_si512(xq + 64));
                d = _mm512_dpbusd_epi32(d, _mm512_and_si512(B, m4), _mm512_loadu_si512(xq + 128));
                d = _mm512_dpbusd_epi32(d, _mm512_and_si512(_mm512_srli_epi16(B, 4), m4), _mm512_loadu_si512(xq + 192));
            }
            /* x's scales, a block's in every lane of it (block = lane % blocks a chunk) */
            const __m512 xs = q8 ? _mm512_broadcast_f32x4(_mm_loadu_ps(xd))
                                 : _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_loadu_pd((const double *)xd)));
            const __m512 s =
                _mm512_mul_ps(_mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutex2var_epi16(w0, is, w1))), xs);
            acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), s, acc);
            w += cbytes;
            xq += cb * TL_QK;
            xd += cb;
            xc += 16;
        }
        float out = _mm512_reduce_add_ps(acc);
        if (nfull * cb < nb)
            out += vn_hsum(vn_vec_tail(dt, w, (int)(nb - nfull * cb), xq, xd, xc));
        a->out[r] = out;
    }
}

/* Rows [r0, r1) in VN_RB x VN_TB tiles: a few tokens (below QG_MIN_T_VNNI). Any T >= 2, x in
 * vn_pack_units' layout for it. */
VN_INLINE void vn_tiles(const tl_cpu_mm *a, int dt, int64_t r0, int64_t r1)
{
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

VN_INLINE void vn_rows(const tl_cpu_mm *a, int dt, int64_t r0, int64_t r1)
{
    if (a->T == 1)
        vn_vec(a, dt, r0, r1);
    else if (a->T >= QG_MIN_T_VNNI(dt))
        qg_rows(a, dt, r0, r1);   /* repacked panels (qgemm_avx2.h with QG_VNNI) */
    else
        vn_tiles(a, dt, r0, r1);
}

void tl_cpu_mm_q8_0_avx512vnni(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    vn_rows(a, TL_Q8_0, r0, r1);
}

void tl_cpu_mm_q4_0_avx512vnni(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    vn_rows(a, TL_Q4_0, r0, r1);
}

/* The tiles alone, any T >= 2 (tools/bench/qgemm_avx2.c times them against the panels). */
void tl_cpu_mm_q8_0_tile_avx512vnni(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_q8_0_tile_avx512vnni(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    vn_tiles(a, TL_Q8_0, r0, r1);
}

void tl_cpu_mm_q4_0_tile_avx512vnni(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_q4_0_tile_avx512vnni(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    vn_tiles(a, TL_Q4_0, r0, r1);
}
