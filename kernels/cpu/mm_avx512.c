/* AVX-512F: 16 fp32 lanes, 32 registers (a 4 x 6 tile). Built with -mavx512f -mavx512bw
 * -mavx512vl; only called after __builtin_cpu_supports says so. */
#include <immintrin.h>
#include <stdint.h>

#include "sum4_avx512.h"

static inline __m512 a5_load_bf16(const void *w, int64_t k)
{
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)w + k));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

#define MM_ISA avx512
#define MM_VF __m512
#define MM_VL 16
#define MM_RB 4
#define MM_TB 6
#define MM_ZERO() _mm512_setzero_ps()
#define MM_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define MM_ADD(a, b) _mm512_add_ps(a, b)
#define MM_HSUM(v) _mm512_reduce_add_ps(v)
#define MM_LOADX(p) _mm512_loadu_ps(p)
#define MM_LOADW_F32(w, k) _mm512_loadu_ps((const float *)(w) + (k))
#define MM_LOADW_F16(w, k) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)(w) + (k))))
#define MM_LOADW_BF16(w, k) a5_load_bf16(w, k)
#define MM_SET1(f) _mm512_set1_ps(f)
#define MM_HSUM4(a, b, c, d, out) _mm_storeu_ps(out, tl_a5_sum4(a, b, c, d))
#define MM_STOREX(p, v) _mm512_storeu_ps(p, v)
#include "mm_tmpl.h"
#include "mv_tmpl.h"
#include "attn_tmpl.h"
#define ATT_BF16
#include "attn_tmpl.h"
#undef ATT_BF16

static int supported(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
}

const tl_cpu_isa tl_cpu_isa_avx512 = {
    .name = "avx512",
    .supported = supported,
    .mm = {tl_cpu_mm_f32_avx512, tl_cpu_mm_f16_avx512, tl_cpu_mv_bf16_avx512, tl_cpu_mm_q8_0_avx2,
           tl_cpu_mm_q4_0_avx2},   /* AVX-512F without VNNI: the AVX2 integer products */
    .qbias = {[TL_Q4_0] = 8},
    .qpack = tl_cpu_qpack_avx2,
    .attn = tl_cpu_attn_avx512,
    .attn_bf16 = tl_cpu_attn_bf16_avx512,
};
