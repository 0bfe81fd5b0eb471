/* AVX2 + FMA + F16C: weights widened to fp32 in registers, fp32 FMA. Built with
 * -mavx2 -mfma -mf16c; only called after __builtin_cpu_supports says so. */
#include <cpuid.h>
#include <immintrin.h>
#include <stdint.h>

static inline float a2_hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* [sum a, sum b, sum c, sum d]: the four reductions share their shuffles */
static inline __m128 a2_sum4(__m256 a, __m256 b, __m256 c, __m256 d)
{
    __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

static inline __m256 a2_load_bf16(const void *w, int64_t k)
{
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + k));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

#define MM_ISA avx2
#define MM_VF __m256
#define MM_VL 8
#define MM_RB 4
#define MM_TB 2
#define MM_ZERO() _mm256_setzero_ps()
#define MM_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define MM_HSUM(v) a2_hsum(v)
#define MM_LOADX(p) _mm256_loadu_ps(p)
#define MM_LOADW_F32(w, k) _mm256_loadu_ps((const float *)(w) + (k))
#define MM_LOADW_F16(w, k) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)(w) + (k))))
#define MM_LOADW_BF16(w, k) a2_load_bf16(w, k)
#define MM_SET1(f) _mm256_set1_ps(f)
#define MM_HSUM4(a, b, c, d, out) _mm_storeu_ps(out, a2_sum4(a, b, c, d))
#define MM_STOREX(p, v) _mm256_storeu_ps(p, v)
#include "mm_tmpl.h"
#include "attn_tmpl.h"
#define ATT_BF16
#include "attn_tmpl.h"
#undef ATT_BF16

/* One token (a decode step) with bf16 weights: bound by memory, so the loop's job is to keep
 * the weights streaming, as in mv_avx512bf16.c: each thread's rows are one sequential stream,
 * one row at a time, with a software prefetch into L2 a fixed lead ahead. x stays fp32 (this
 * set multiplies in fp32): 4 bytes a column, so a row of 4096 or more (down_proj's 8192: 32 KiB
 * of x) would push x out of L1 beside the stream, and goes in tiles of four rows instead, each
 * x vector loaded once for the four. The template's tiles of four rows for every width (four
 * streams a thread, prefetching a tile ahead into L1) ran a 1B-shape decode step at 1.25-1.29x
 * a plain read of its weights at 34-35 GB/s and 1.97-2.00x at 59-65 GB/s; this, 1.06-1.08x and
 * 1.43-1.47x (57-60 ms a step, from 77-81; `TL_CPU_ISA=avx2 tokenloop bench --synthetic
 * llama-3.2-1b`, the two builds alternated). On this Zen 4 the set is then bound by its own
 * pace (eight loads a line of weights) when memory is fast. Leads, at 36 GB/s (tools/bench/decode_vs_read.c, alternated in
 * one process): a row 4 KiB and 1 KiB 1.00-1.04x the read, 2 KiB 1.12-1.15x, 3 KiB 1.04-1.08x;
 * a tile's streams 2 KiB 1.11x, 1 KiB 1.12x, 512 B 1.18x. One 256-bit load widened in
 * registers (vpermq + unpack) instead of two 128-bit ones was slower (1.21x against 1.15x), and
 * so were two rows at a time (1.28x). */
#define MV2_PF_ROW 4096          /* lead of a one-row stream */
#define MV2_PF_TILE 2048         /* lead of each of a tile's four streams */
#define MV2_TILE 4
#define MV2_WIDE_X_BYTES (16 << 10)

static void mv2_row(const tl_cpu_mm *a, int64_t r)
{
    const int64_t cols = a->cols;
    const uint16_t *w = (const uint16_t *)a->w + (size_t)r * (size_t)cols;
    const float *x = a->x;
    __m256 acc[8];
    for (int i = 0; i < 8; i++)
        acc[i] = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 64 <= cols; k += 64) {   /* 128 bytes of weights: two lines */
        const char *pf = (const char *)(w + k) + MV2_PF_ROW;
        _mm_prefetch(pf, _MM_HINT_T1);
        _mm_prefetch(pf + 64, _MM_HINT_T1);
        for (int i = 0; i < 8; i++)
            acc[i] = _mm256_fmadd_ps(a2_load_bf16(w, k + 8 * i), _mm256_loadu_ps(x + k + 8 * i), acc[i]);
    }
    for (; k + 8 <= cols; k += 8)
        acc[0] = _mm256_fmadd_ps(a2_load_bf16(w, k), _mm256_loadu_ps(x + k), acc[0]);
    __m256 s4 = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    __m256 s8 = _mm256_add_ps(_mm256_add_ps(acc[4], acc[5]), _mm256_add_ps(acc[6], acc[7]));
    float s = a2_hsum(_mm256_add_ps(s4, s8));
    for (; k < cols; k++)
        s += tl_cpu_bf16_to_f32(w[k]) * x[k];
    a->out[r] = s;
}

static void mv2_tile(const tl_cpu_mm *a, int64_t r)
{
    const int64_t cols = a->cols;
    const float *x = a->x;
    const uint16_t *w[MV2_TILE];
    __m256 acc[MV2_TILE][2];
    for (int i = 0; i < MV2_TILE; i++) {
        w[i] = (const uint16_t *)a->w + (size_t)(r + i) * (size_t)cols;
        acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    }
    int64_t k = 0;
    for (; k + 32 <= cols; k += 32) {   /* one line of each row */
        for (int i = 0; i < MV2_TILE; i++)
            _mm_prefetch((const char *)(w[i] + k) + MV2_PF_TILE, _MM_HINT_T1);
        for (int h = 0; h < 4; h++) {
            __m256 xv = _mm256_loadu_ps(x + k + 8 * h);
            for (int i = 0; i < MV2_TILE; i++)
                acc[i][h & 1] = _mm256_fmadd_ps(a2_load_bf16(w[i], k + 8 * h), xv, acc[i][h & 1]);
        }
    }
    for (int i = 0; i < MV2_TILE; i++) {
        float s = a2_hsum(_mm256_add_ps(acc[i][0], acc[i][1]));
        for (int64_t kk = k; kk < cols; kk++)
            s += tl_cpu_bf16_to_f32(w[i][kk]) * x[kk];
        a->out[r + i] = s;
    }
}

/* bf16 weights: the decode kernels above for one token, the template's tiles otherwise. */
static void mm_bf16_avx2(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    if (a->T != 1) {
        tl_cpu_mm_bf16_avx2(a, r0, r1);
        return;
    }
    int64_t r = r0;
    if (a->cols * 4 >= MV2_WIDE_X_BYTES)
        for (; r + MV2_TILE <= r1; r += MV2_TILE)
            mv2_tile(a, r);
    for (; r < r1; r++)
        mv2_row(a, r);
}

/* F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does not know "f16c" */
static int has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}

static int supported(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
}

const tl_cpu_isa tl_cpu_isa_avx2 = {
    .name = "avx2",
    .supported = supported,
    .mm = {tl_cpu_mm_f32_avx2, tl_cpu_mm_f16_avx2, mm_bf16_avx2, tl_cpu_mm_q8_0_avx2, tl_cpu_mm_q4_0_avx2},
    .qbias = {[TL_Q4_0] = 8},
    .qpack = tl_cpu_qpack_avx2,
    .attn = tl_cpu_attn_avx2,
    .attn_bf16 = tl_cpu_attn_bf16_avx2,
};
