/* K-quant products for the avx512bf16 set (its CPUs have AVX-512 VNNI): kq_tmpl.h with
 * VPDPWSSD on 256-bit vectors (Zen 4 executes 512-bit ones as two halves) in place of VPMADDWD
 * and VPADDD; the same bits as kq_avx2.c. Built with -mavx512vnni and the AVX-512 flags. */
#define KQ_VNNI 1
#include "kq_tmpl.h"

void tl_cpu_mm_q4_k_avx512vnni(const tl_cpu_mm *a, int64_t r0, int64_t r1) { kq_mm(a, TL_Q4_K, r0, r1); }
void tl_cpu_mm_q5_k_avx512vnni(const tl_cpu_mm *a, int64_t r0, int64_t r1) { kq_mm(a, TL_Q5_K, r0, r1); }
void tl_cpu_mm_q6_k_avx512vnni(const tl_cpu_mm *a, int64_t r0, int64_t r1) { kq_mm(a, TL_Q6_K, r0, r1); }

/* The row-at-a-time prefill (tools/bench/kqgemm_avx2.c --vnni times it against the panels). */
void tl_cpu_mm_kq_rows_avx512vnni(const tl_cpu_mm *a, tl_dtype dt, int64_t r0, int64_t r1);
void tl_cpu_mm_kq_rows_avx512vnni(const tl_cpu_mm *a, tl_dtype dt, int64_t r0, int64_t r1) { kq_mm_rows(a, dt, r0, r1); }
