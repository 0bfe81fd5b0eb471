/* Q8_0/Q4_0 products with AVX-512 VNNI on 256-bit vectors: one VPDPBUSD per block and token
 * multiplies 32 unsigned weight bytes by 32 signed x bytes and adds groups of four into int32
 * lanes, starting from xc. Q8_0 weights are flipped to unsigned by x ^ 0x80 (qbias 128),
 * Q4_0 weights are the nibbles 0..15 (qbias 8). Built with -mavx512vnni -mavx512vl; only
 * called after __builtin_cpu_supports("avx512vnni"). */
#include <immintrin.h>
#include <stdint.h>

static inline __m256i a5q_unpack_q4(const uint8_t *p)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)p), m4 = _mm_set1_epi8(15);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m4), _mm_and_si128(v, m4));
}

#define QM_ISA avx512vnni
#define QM_RB 4
#define QM_TB 4
#define QM_UNPACK_Q8(p) _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(p)), _mm256_set1_epi8((char)0x80))
#define QM_UNPACK_Q4(p) a5q_unpack_q4(p)
#define QM_DOT_Q8(w, x, c) _mm256_dpbusd_epi32(c, w, x)
#define QM_DOT_Q4(w, x, c) _mm256_dpbusd_epi32(c, w, x)
#include "qmm_tmpl.h"
