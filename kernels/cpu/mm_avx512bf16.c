/* AVX-512 BF16: bf16 weights go straight into VDPBF16PS, 32 products per instruction with
 * fp32 accumulation. In the exact mode (the default) x is split into bf16 hi + lo (x ~= hi +
 * lo to about 2^-17 relative) and each weight meets both halves, so the result keeps fp32-level
 * accuracy. With it off, a prefill's x is rounded to bf16 once (as llama.cpp and a bf16
 * transformers run do): one instruction per 32 weights, half the arithmetic (docs/accuracy.md).
 * Three loops: one token (mv_avx512bf16.c, a stream through the weights); up to 31 tokens (bh_rows, 4
 * rows x 6 tokens of accumulators, each a row's dot product along k); 32 or more (bp_rows, x in
 * 16-token panels, each accumulator lane one output, near the VDPBF16PS peak).
 * f32/f16 weights use the AVX-512F kernels. Built with -mavx512bf16; only called after
 * __builtin_cpu_supports says so. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "cpu.h"
#include "mm.h"
#include "sum4_avx512.h"

void tl_cpu_mm_f32_avx512(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_f16_avx512(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_attn_avx512(const tl_cpu_attn *a, int t, int kvh, float *scores);

#define BH_RB 4
#define BH_TB 6
#ifndef BH_KC
#define BH_KC 2048   /* < 32 tokens x 2048 packed activations (8 KiB a token) stay in L2 */
#endif
#define BH_INLINE static inline __attribute__((always_inline))

void tl_cpu_pack_bf16(uint16_t *xpack, const float *x, int T, int64_t cols, int64_t cols_pad, int halves)
{
    for (int t = 0; t < T; t++) {
        uint16_t *hi = xpack + (size_t)t * (size_t)halves * (size_t)cols_pad, *lo = hi + cols_pad;
        const float *xr = x + (size_t)t * (size_t)cols;
        int64_t i = 0;
        for (; i + 16 <= cols; i += 16) {
            __m512 v = _mm512_loadu_ps(xr + i);
            __m256i h = (__m256i)_mm512_cvtneps_pbh(v);
            _mm256_storeu_si256((__m256i *)(hi + i), h);
            if (halves == 2) {
                __m512 hf = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
                _mm256_storeu_si256((__m256i *)(lo + i), (__m256i)_mm512_cvtneps_pbh(_mm512_sub_ps(v, hf)));
            }
        }
        for (; i < cols; i++) {
            hi[i] = tl_cpu_x_to_bf16(xr[i]);
            if (halves == 2)
                lo[i] = tl_cpu_x_to_bf16(xr[i] - tl_cpu_bf16_to_f32(hi[i]));
        }
        for (i = cols; i < cols_pad; i++) {
            hi[i] = 0;
            if (halves == 2)
                lo[i] = 0;
        }
    }
}

/* One k step of a tile: every weight vector meets each token's x (one or two halves). */
BH_INLINE void bh_step(__m512 acc[BH_RB][BH_TB], const __m512bh *wv, const uint16_t *const *xr, int nt, int64_t k,
                       int64_t cols_pad, const int halves)
{
    for (int j = 0; j < nt; j++) {
        __m512bh xh = (__m512bh)_mm512_loadu_si512(xr[j] + k);
        for (int i = 0; i < BH_RB; i++)
            acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv[i], xh);
        if (halves == 2) {
            __m512bh xl = (__m512bh)_mm512_loadu_si512(xr[j] + cols_pad + k);
            for (int i = 0; i < BH_RB; i++)
                acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv[i], xl);
        }
    }
}

/* Rows r..min(r+BH_RB, rend)-1 times tokens t..t+nt-1 over k in [k0, k1); halves is a
 * constant at each call, so the one-half loop carries no second load or product. Each step
 * also prefetches the rows of the next tile: a row of a 2048-wide matrix is one 4 KiB page,
 * and the hardware prefetcher starts over on every page. Into L2, not L1: the lines are a tile
 * (16-64 KiB) ahead, past what L1 holds beside x. Into L1 they were evicted before use, and a
 * batched decode of 2 sequences (tl_engine_decode_batch), bound by memory, took 1.4-1.7x the
 * time of one; into L2, 1.01-1.08x, and 4 sequences 1.16-1.36x (1B shape, `bench --batch
 * 1,2,4`, one and two threads, the builds alternated); a 24-token prefill did not slow down. */
BH_INLINE void bh_tile(const tl_cpu_mm *a, int nt, int64_t r, int64_t rend, int t, int64_t k0,
                       int64_t k1, int accumulate, const int halves)
{
    const int nr = rend - r < BH_RB ? (int)(rend - r) : BH_RB;
    const uint16_t *wr[BH_RB], *xr[BH_TB];
    __m512 acc[BH_RB][BH_TB];
    for (int i = 0; i < BH_RB; i++)
        wr[i] = (const uint16_t *)a->w + (size_t)(r + (i < nr ? i : nr - 1)) * (size_t)a->cols;
    for (int j = 0; j < nt; j++)
        xr[j] = a->xpack + (size_t)(t + j) * (size_t)halves * (size_t)a->cols_pad;
    for (int i = 0; i < BH_RB; i++)
        for (int j = 0; j < nt; j++)
            acc[i][j] = _mm512_setzero_ps();
    int64_t k = k0;
    const size_t next_tile = (size_t)BH_RB * (size_t)a->cols;
    for (; k + 32 <= k1; k += 32) {
        __m512bh wv[BH_RB];
        for (int i = 0; i < BH_RB; i++)   /* the same line of the next tile's rows */
            __builtin_prefetch(wr[i] + k + next_tile, 0, 2);
        for (int i = 0; i < BH_RB; i++)
            wv[i] = (__m512bh)_mm512_loadu_si512(wr[i] + k);
        bh_step(acc, wv, xr, nt, k, a->cols_pad, halves);
    }
    if (k < k1) {   /* the last partial vector: masked weights, x is zero-padded */
        __mmask32 m = (__mmask32)((1ull << (k1 - k)) - 1);
        __m512bh wv[BH_RB];
        for (int i = 0; i < BH_RB; i++)
            wv[i] = (__m512bh)_mm512_maskz_loadu_epi16(m, wr[i] + k);
        bh_step(acc, wv, xr, nt, k, a->cols_pad, halves);
    }
    const __mmask8 rows = (__mmask8)((1u << nr) - 1);
    for (int j = 0; j < nt; j++) {   /* a token's 4 sums are 4 neighbouring outputs */
        float *o = a->out + (size_t)(t + j) * (size_t)a->rows + (size_t)r;
        __m128 s = tl_a5_sum4(acc[0][j], acc[1][j], acc[2][j], acc[3][j]);
        if (accumulate)
            s = _mm_add_ps(s, _mm_maskz_loadu_ps(rows, o));
        _mm_mask_storeu_ps(o, rows, s);
    }
}

BH_INLINE void bh_rows(const tl_cpu_mm *a, int64_t r0, int64_t r1, const int halves)
{
    const int64_t kc = a->T >= BH_TB ? BH_KC : a->cols;
    for (int64_t k0 = 0; k0 < a->cols; k0 += kc) {
        int64_t k1 = k0 + kc < a->cols ? k0 + kc : a->cols;
        for (int64_t r = r0; r < r1; r += BH_RB) {
            int t = 0;
            for (; t + BH_TB <= a->T; t += BH_TB)
                bh_tile(a, BH_TB, r, r1, t, k0, k1, k0 > 0, halves);
            switch (a->T - t) {   /* the last 1..5 tokens in one tile (constants: registers) */
            case 5: bh_tile(a, 5, r, r1, t, k0, k1, k0 > 0, halves); break;
            case 4: bh_tile(a, 4, r, r1, t, k0, k1, k0 > 0, halves); break;
            case 3: bh_tile(a, 3, r, r1, t, k0, k1, k0 > 0, halves); break;
            case 2: bh_tile(a, 2, r, r1, t, k0, k1, k0 > 0, halves); break;
            case 1: bh_tile(a, 1, r, r1, t, k0, k1, k0 > 0, halves); break;
            default: break;
            }
        }
    }
}

/* Token panels (T > 1): 16 tokens side by side, one fp32 lane each, so a VDPBF16PS of a panel
 * vector (16 tokens x one pair of k) with one weight pair broadcast gives 16 outputs of one
 * row with no horizontal sums, and the weights are read straight from their row-major matrix
 * (a pair is 4 contiguous bytes). Layout: [panels][halves][cols_pad / 2][16 tokens][2]. */
#define BP_N TL_CPU_PANEL

/* r[0..15] as a 16 x 16 matrix of 32-bit elements, transposed in place (64 shuffles). */
BH_INLINE void tr16(__m512i r[16])
{
    __m512i t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {   /* r[4i + j]: rows 4i..4i+3 at column 4q + j of each 128-bit lane q */
        r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int j = 0; j < 4; j++) {
        __m512i a = _mm512_shuffle_i32x4(r[j], r[4 + j], 0x88), b = _mm512_shuffle_i32x4(r[j], r[4 + j], 0xdd);
        __m512i c = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0x88), d = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0xdd);
        t[j] = _mm512_shuffle_i32x4(a, c, 0x88);
        t[4 + j] = _mm512_shuffle_i32x4(b, d, 0x88);
        t[8 + j] = _mm512_shuffle_i32x4(a, c, 0xdd);
        t[12 + j] = _mm512_shuffle_i32x4(b, d, 0xdd);
    }
    for (int i = 0; i < 16; i++)
        r[i] = t[i];
}

/* 32 columns at a time: each token's 32 values become 16 pairs (one vector of 32-bit
 * elements), and a transpose turns 16 tokens' vectors into 16 panel rows, 1 KiB in a row. */
void tl_cpu_pack_bf16_panel(uint16_t *panel, const float *x, int nt, int64_t cols, int64_t cols_pad, int halves)
{
    uint16_t *lo = panel + (size_t)BP_N * (size_t)cols_pad;
    for (int64_t k = 0; k < cols_pad; k += 32) {
        int64_t n = cols - k;   /* past cols (and past the last token): zeros, which round to zeros */
        __mmask16 m0 = n >= 16 ? (__mmask16)0xffff : n > 0 ? (__mmask16)((1u << n) - 1) : 0;
        __mmask16 m1 = n >= 32 ? (__mmask16)0xffff : n > 16 ? (__mmask16)((1u << (n - 16)) - 1) : 0;
        __m512i h[BP_N], l[BP_N];
        for (int t = 0; t < BP_N; t++) {
            const float *xr = x + (size_t)t * (size_t)cols + k;
            __m512 v0 = t < nt ? _mm512_maskz_loadu_ps(m0, xr) : _mm512_setzero_ps();
            __m512 v1 = t < nt ? _mm512_maskz_loadu_ps(m1, xr + 16) : _mm512_setzero_ps();
            __m256i h0 = (__m256i)_mm512_cvtneps_pbh(v0), h1 = (__m256i)_mm512_cvtneps_pbh(v1);
            h[t] = _mm512_inserti64x4(_mm512_castsi256_si512(h0), h1, 1);
            if (halves == 2) {
                __m512 f0 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h0), 16));
                __m512 f1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h1), 16));
                __m256i l0 = (__m256i)_mm512_cvtneps_pbh(_mm512_sub_ps(v0, f0));
                __m256i l1 = (__m256i)_mm512_cvtneps_pbh(_mm512_sub_ps(v1, f1));
                l[t] = _mm512_inserti64x4(_mm512_castsi256_si512(l0), l1, 1);
            }
        }
        tr16(h);
        for (int p = 0; p < BP_N; p++)
            _mm512_store_si512(panel + (size_t)(k / 2 + p) * 2 * BP_N, h[p]);
        if (halves == 2) {
            tr16(l);
            for (int p = 0; p < BP_N; p++)
                _mm512_store_si512(lo + (size_t)(k / 2 + p) * 2 * BP_N, l[p]);
        }
    }
}

#ifndef BP_KC
#define BP_KC 4096
#endif
#define BP_TBMAX 3
#define BP_R 8   /* rows a tile: with 3 panels 24 accumulators, 3 loads and 8 broadcasts a k pair */

BH_INLINE __m512bh bp_pair(const uint16_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);   /* rows of an odd width start at odd 2-byte addresses */
    return (__m512bh)_mm512_set1_epi32((int)v);
}

/* Rows r..min(r+8, rend)-1 times panels g..g+TB-1 over k in [k0, k1) (k0 even): TB x 8
 * accumulators, one VDPBF16PS per panel vector and broadcast weight pair (two in the exact
 * mode). Rows past rend repeat the last one (computed, not stored). */
BH_INLINE void bp_tile(const tl_cpu_mm *a, const int TB, const int H, int64_t r, int64_t rend, int g, int64_t k0,
                       int64_t k1, int accumulate)
{
    const int R = BP_R, nr = rend - r < R ? (int)(rend - r) : R;
    const size_t half = (size_t)BP_N * (size_t)a->cols_pad;
    const uint16_t *wr[BP_R];
    __m512 acc[BP_TBMAX][BP_R];
    for (int i = 0; i < R; i++)
        wr[i] = (const uint16_t *)a->w + (size_t)(r + (i < nr ? i : nr - 1)) * (size_t)a->cols;
    for (int v = 0; v < TB; v++)
        for (int i = 0; i < R; i++)
            acc[v][i] = _mm512_setzero_ps();
    const uint16_t *xp = a->xpack + (size_t)g * (size_t)H * half + (size_t)k0 * BP_N;
    int64_t k = k0;
    for (; k + 2 <= k1; k += 2, xp += 2 * BP_N) {
        __m512bh xv[BP_TBMAX][2];
        for (int v = 0; v < TB; v++)
            for (int h = 0; h < H; h++)
                xv[v][h] = (__m512bh)_mm512_load_si512(xp + (size_t)(v * H + h) * half);
        for (int i = 0; i < R; i++) {
            __m512bh wv = bp_pair(wr[i] + k);
            for (int h = 0; h < H; h++)
                for (int v = 0; v < TB; v++)
                    acc[v][i] = _mm512_dpbf16_ps(acc[v][i], xv[v][h], wv);
        }
    }
    if (k < k1) {   /* an odd width's last weight, alone in its pair (x's other half is zero) */
        for (int i = 0; i < R; i++) {
            __m512bh wv = (__m512bh)_mm512_set1_epi32(wr[i][k]);
            for (int h = 0; h < H; h++)
                for (int v = 0; v < TB; v++)
                    acc[v][i] = _mm512_dpbf16_ps(acc[v][i], (__m512bh)_mm512_load_si512(xp + (size_t)(v * H + h) * half), wv);
        }
    }
    const __mmask16 rows = (__mmask16)((1u << nr) - 1);
    for (int v = 0; v < TB; v++) {   /* lanes are tokens: a transpose makes each token's R outputs one vector */
        __m512i c[BP_N];
        for (int i = 0; i < BP_N; i++)
            c[i] = i < R ? _mm512_castps_si512(acc[v][i]) : _mm512_setzero_si512();
        tr16(c);
        int t0 = (g + v) * BP_N, nt = a->T - t0 < BP_N ? a->T - t0 : BP_N;
        for (int l = 0; l < nt; l++) {
            float *o = a->out + (size_t)(t0 + l) * (size_t)a->rows + (size_t)r;
            __m512 s = _mm512_castsi512_ps(c[l]);
            if (accumulate)
                s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(rows, o));
            _mm512_mask_storeu_ps(o, rows, s);
        }
    }
}

/* k in blocks of BP_KC, so a tile's panels (3 x 16 tokens x BP_KC x 2 bytes, 384 KiB, twice
 * that in the exact mode) stay in the 1 MiB L2 while the weight rows stream past. Tiles of 3
 * panels, or 2 where 3s would leave one panel over (T = 32, 64, ...: 2 x 12 rows measured
 * 5-10% slower than 2 x 8, its 12 row pointers do not fit the general registers); a single
 * panel only where T <= 16 came here. */
BH_INLINE void bp_rows(const tl_cpu_mm *a, int64_t r0, int64_t r1, const int H)
{
    const int np = (a->T + BP_N - 1) / BP_N;
    for (int64_t k0 = 0; k0 < a->cols; k0 += BP_KC) {
        int64_t k1 = k0 + BP_KC < a->cols ? k0 + BP_KC : a->cols;
        for (int g = 0; g < np;) {
            int left = np - g, tb = left == 2 || left == 4 ? 2 : left == 1 ? 1 : 3;
            for (int64_t r = r0; r < r1; r += BP_R) {
                if (tb == 3)
                    bp_tile(a, 3, H, r, r1, g, k0, k1, k0 > 0);
                else if (tb == 2)
                    bp_tile(a, 2, H, r, r1, g, k0, k1, k0 > 0);
                else
                    bp_tile(a, 1, H, r, r1, g, k0, k1, k0 > 0);
            }
            g += tb;
        }
    }
}

static void mm_bf16_avx512bf16(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    if (a->T == 1)   /* a decode step: its own loop, mv_avx512bf16.c */
        tl_cpu_mv_bf16_avx512bf16(a, r0, r1);
    else if (a->panels)
        a->halves == 2 ? bp_rows(a, r0, r1, 2) : bp_rows(a, r0, r1, 1);
    else
        a->halves == 2 ? bh_rows(a, r0, r1, 2) : bh_rows(a, r0, r1, 1);
}

static int supported(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16") &&
           __builtin_cpu_supports("avx512vnni");   /* every AVX512_BF16 CPU so far has VNNI */
}

const tl_cpu_isa tl_cpu_isa_avx512bf16 = {
    .name = "avx512bf16",
    .supported = supported,
    .mm = {tl_cpu_mm_f32_avx512, tl_cpu_mm_f16_avx512, mm_bf16_avx512bf16, tl_cpu_mm_q8_0_avx512vnni,
           tl_cpu_mm_q4_0_avx512vnni},
    .qbias = {[TL_Q8_0] = 128, [TL_Q4_0] = 8},
    .qpack = tl_cpu_qpack_avx512vnni,
    .attn = tl_cpu_attn_avx512,
    .attn_bf16 = tl_cpu_attn_bf16_avx512,
    .mv_scores = {[TL_BF16] = tl_cpu_mv_bf16_scores_avx512bf16},
    .want_pack = {0, 0, 1},
    .pack_align = 32,
    .panel_T = 32,   /* below, panels are too empty: bh_rows is faster up to ~30 tokens */
};
