/* Products with K-quant weights (Q4_K, Q5_K, Q6_K: ggml's super-blocks of 256, read in place
 * from the file's bytes; core/quant_k.c has the layouts). As in llama.cpp, x is quantized per
 * 256 values to Q8_K first, so each super-block's product is exact integer sums times scales:
 *   Q4_K/Q5_K: d * dx * sum_j sc_j * (q_j . x8) - dmin * dx * sum_j m_j * (sums of x8 in j)
 *   Q6_K:      d * dx * sum_k sc_k * (q_k . x8 - 32 * (sum of x8 in k))
 * with j the 8 sub-blocks of 32 and k the 16 of 16. Q8_K of token t, in tl_cpu_mm's buffers:
 *   xq [T][cols] int8; xd [T][cols/256] float, the scale (x ~= xd * q);
 *   xc read as int16 [T][cols/16]: the sum of each 16 consecutive q (ggml's bsums). */
#ifndef TL_KERNELS_CPU_KQ_H
#define TL_KERNELS_CPU_KQ_H

#include "mm.h"

/* Quantizes token t of x (cols a multiple of 256) to Q8_K as ggml's quantize_row_q8_K_ref does
 * (the value of largest magnitude becomes -127, round to nearest even). A tl_cpu_qpack_fn:
 * dt and qbias are not read. */
void tl_cpu_qpack_q8k(const tl_cpu_mm *m, tl_dtype dt, const float *x, int t, int qbias);
void tl_cpu_qpack_q8k_avx2(const tl_cpu_mm *m, tl_dtype dt, const float *x, int t, int qbias);   /* the same bytes */
/* The quantizer of x for the kernel set named isa. */
tl_cpu_qpack_fn tl_cpu_kq_qpack(const char *isa);

/* The kernel of a K-quant dtype for the kernel set named isa ("generic", "avx2", ...): the
 * set's own where it has one, else the portable one. */
tl_cpu_mm_fn tl_cpu_kq_kernel(const char *isa, tl_dtype dt);

/* The portable kernels: the definition the others are checked against. Any T. */
void tl_cpu_mm_q4_k_generic(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_q5_k_generic(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_q6_k_generic(const tl_cpu_mm *a, int64_t r0, int64_t r1);

/* AVX2 (kq_avx2.c, kq_tmpl.h): VPMADDUBSW + VPMADDWD; also serves the avx512 set. */
void tl_cpu_mm_q4_k_avx2(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_q5_k_avx2(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_q6_k_avx2(const tl_cpu_mm *a, int64_t r0, int64_t r1);
/* The same with VPDPWSSD (kq_avx512vnni.c): the avx512bf16 set. */
void tl_cpu_mm_q4_k_avx512vnni(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_q5_k_avx512vnni(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_q6_k_avx512vnni(const tl_cpu_mm *a, int64_t r0, int64_t r1);

/* AArch64 SDOT (kq_dotprod_neon.c): the neon-dotprod and neon-bf16 sets. */
void tl_cpu_mm_q4_k_neon_dotprod(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_q5_k_neon_dotprod(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_q6_k_neon_dotprod(const tl_cpu_mm *a, int64_t r0, int64_t r1);

#endif
