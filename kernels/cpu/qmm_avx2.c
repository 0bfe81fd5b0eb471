/* Q8_0/Q4_0 products with AVX2: VPMADDUBSW (unsigned x signed bytes -> pairs of int16) and
 * VPMADDWD (-> int32). Q8_0 weights go in as |w| with x's signs flipped where w < 0 (so no
 * pair can saturate: 2 * 128 * 127 < 32768); Q4_0 weights as their unsigned nibbles 0..15,
 * the -8 coming back through xc (qbias 8). Built with -mavx2 -mfma -mf16c. */
#include <immintrin.h>
#include <stdint.h>

static inline __m256i a2q_unpack_q4(const uint8_t *p)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)p), m4 = _mm_set1_epi8(15);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m4), _mm_and_si128(v, m4));
}

static inline __m256i a2q_sum4(__m256i pairs16)
{
    return _mm256_madd_epi16(pairs16, _mm256_set1_epi16(1));
}

#define QM_ISA avx2
#define QM_RB 4
#define QM_TB 2
#define QM_UNPACK_Q8(p) _mm256_loadu_si256((const __m256i *)(p))
#define QM_UNPACK_Q4(p) a2q_unpack_q4(p)
#define QM_DOT_Q8(w, x, c) a2q_sum4(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)))
#define QM_DOT_Q4(w, x, c) _mm256_add_epi32(a2q_sum4(_mm256_maddubs_epi16(w, x)), c)
#include "qmm_tmpl.h"
