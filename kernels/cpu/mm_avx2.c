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
#define MM_ADD(a, b) _mm256_add_ps(a, b)
#define MM_HSUM(v) a2_hsum(v)
#define MM_LOADX(p) _mm256_loadu_ps(p)
#define MM_LOADW_F32(w, k) _mm256_loadu_ps((const float *)(w) + (k))
#define MM_LOADW_F16(w, k) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)(w) + (k))))
#define MM_LOADW_BF16(w, k) a2_load_bf16(w, k)
#define MM_SET1(f) _mm256_set1_ps(f)
#define MM_HSUM4(a, b, c, d, out) _mm_storeu_ps(out, a2_sum4(a, b, c, d))
#define MM_STOREX(p, v) _mm256_storeu_ps(p, v)
#include "mm_tmpl.h"
#include "mv_tmpl.h"
#include "gemm_avx2.h"
#include "attn_tmpl.h"
#define ATT_BF16
#include "attn_tmpl.h"
#undef ATT_BF16

/* A prefill of GA_MIN_T tokens or more: the packed GEMM (gemm_avx2.h); fewer: mm_tmpl.h's tiles,
 * and one token the decode loop (mv_tmpl.h). */
static void mm_f32(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    if (a->T >= GA_MIN_T)
        ga_rows(a, r0, r1, TL_F32);
    else
        tl_cpu_mm_f32_avx2(a, r0, r1);
}

static void mm_f16(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    if (a->T >= GA_MIN_T)
        ga_rows(a, r0, r1, TL_F16);
    else
        tl_cpu_mm_f16_avx2(a, r0, r1);
}

static void mm_bf16(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    if (a->T >= GA_MIN_T)
        ga_rows(a, r0, r1, TL_BF16);
    else
        tl_cpu_mv_bf16_avx2(a, r0, r1);
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
    .mm = {mm_f32, mm_f16, mm_bf16, tl_cpu_mm_q8_0_avx2, tl_cpu_mm_q4_0_avx2},
    .qbias = {[TL_Q4_0] = 8},
    .qpack = tl_cpu_qpack_avx2,
    .attn = tl_cpu_attn_avx2,
    .attn_bf16 = tl_cpu_attn_bf16_avx2,
};
