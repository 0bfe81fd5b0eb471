/* [sum of a's lanes, b's, c's, d's] as one vector, for files built with AVX-512F: halves added
 * first, then two rounds of horizontal adds, so the four reductions share their shuffles (13
 * operations where four separate reductions take about 32). */
#ifndef TL_SUM4_AVX512_H
#define TL_SUM4_AVX512_H
#include <immintrin.h>

static inline __m256 tl_a5_hi256(__m512 v)   /* AVX-512F alone: no DQ's extractf32x8 */
{
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

static inline __m128 tl_a5_sum4(__m512 a, __m512 b, __m512 c, __m512 d)
{
    __m256 a8 = _mm256_add_ps(_mm512_castps512_ps256(a), tl_a5_hi256(a));
    __m256 b8 = _mm256_add_ps(_mm512_castps512_ps256(b), tl_a5_hi256(b));
    __m256 c8 = _mm256_add_ps(_mm512_castps512_ps256(c), tl_a5_hi256(c));
    __m256 d8 = _mm256_add_ps(_mm512_castps512_ps256(d), tl_a5_hi256(d));
    __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a8, b8), _mm256_hadd_ps(c8, d8));
    return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

#endif
