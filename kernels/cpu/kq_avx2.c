/* K-quant products with AVX2 (kq_tmpl.h), and x's Q8_K quantization with AVX2 for every x86
 * set. Built with -mavx2 -mfma -mf16c; the avx512 set uses these kernels too. */
#include "kq_tmpl.h"

void tl_cpu_mm_q4_k_avx2(const tl_cpu_mm *a, int64_t r0, int64_t r1) { kq_mm(a, TL_Q4_K, r0, r1); }
void tl_cpu_mm_q5_k_avx2(const tl_cpu_mm *a, int64_t r0, int64_t r1) { kq_mm(a, TL_Q5_K, r0, r1); }
void tl_cpu_mm_q6_k_avx2(const tl_cpu_mm *a, int64_t r0, int64_t r1) { kq_mm(a, TL_Q6_K, r0, r1); }

/* The row-at-a-time prefill kqgemm_avx2.h replaced (tools/bench/kqgemm_avx2.c times both). */
void tl_cpu_mm_kq_rows_avx2(const tl_cpu_mm *a, tl_dtype dt, int64_t r0, int64_t r1);
void tl_cpu_mm_kq_rows_avx2(const tl_cpu_mm *a, tl_dtype dt, int64_t r0, int64_t r1) { kq_mm_rows(a, dt, r0, r1); }

KQ_INLINE float kq_hmax(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

/* tl_cpu_qpack_q8k's bytes, 8 lanes at a time: the same largest magnitude (the first of a tie,
 * found by a scan only then), the same iscale * x rounded to nearest even, the same scale. The
 * portable one took 6.4 us per 2048 values, about 0.7 ms of a 1B-shape decode step. */
void tl_cpu_qpack_q8k_avx2(const tl_cpu_mm *m, tl_dtype dt, const float *x, int t, int qbias)
{
    (void)dt;
    (void)qbias;
    const int64_t cols = m->cols, nb = cols / TL_QK_K;
    int8_t *q = (int8_t *)m->xq + (size_t)t * (size_t)cols;
    float *d = (float *)m->xd + (size_t)t * (size_t)nb;
    int16_t *bs = (int16_t *)(void *)m->xc + (size_t)t * (size_t)(cols / 16);
    x += (size_t)t * (size_t)cols;
    const __m256 neg = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < nb; b++, x += TL_QK_K, q += TL_QK_K, bs += 16) {
        __m256 hi = _mm256_setzero_ps(), lo = _mm256_setzero_ps();
        for (int k = 0; k < TL_QK_K / 8; k++) {   /* NaN lanes keep the old value (second operand) */
            const __m256 v = _mm256_loadu_ps(x + 8 * k);
            hi = _mm256_max_ps(v, hi);
            lo = _mm256_max_ps(_mm256_xor_ps(v, neg), lo);   /* -min */
        }
        const float top = kq_hmax(hi), bottom = kq_hmax(lo), amax = top > bottom ? top : bottom;
        if (amax == 0) {
            memset(q, 0, TL_QK_K);
            memset(bs, 0, 16 * sizeof *bs);
            d[b] = 0;
            continue;
        }
        float max = top > bottom ? top : -bottom;
        if (top == bottom)   /* +a and -a: the first one, as the scalar scan has it */
            for (int j = 0; j < TL_QK_K; j++)
                if (x[j] == top || x[j] == -top) {
                    max = x[j];
                    break;
                }
        const float iscale = -127.0f / max;
        const __m256 vs = _mm256_set1_ps(iscale);
        const __m256i cap = _mm256_set1_epi32(127), perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        int32_t quads[64];
        for (int k = 0; k < TL_QK_K / 32; k++) {
            __m256i qi[4];
            for (int i = 0; i < 4; i++)
                qi[i] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * k + 8 * i), vs)), cap);
            const __m256i w8 = _mm256_permutevar8x32_epi32(
                _mm256_packs_epi16(_mm256_packs_epi32(qi[0], qi[1]), _mm256_packs_epi32(qi[2], qi[3])), perm);
            _mm256_storeu_si256((__m256i *)(q + 32 * k), w8);
            _mm256_storeu_si256((__m256i *)(quads + 8 * k),
                                _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), w8), _mm256_set1_epi16(1)));
        }
        for (int k = 0; k < 16; k++)
            bs[k] = (int16_t)(quads[4 * k] + quads[4 * k + 1] + quads[4 * k + 2] + quads[4 * k + 3]);
        d[b] = 1 / iscale;
    }
}
