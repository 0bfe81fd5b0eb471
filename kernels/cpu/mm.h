/* Matrix products inside the CPU backend: out[T, rows] = x[T, cols] . W^T, one function per
 * instruction set and weight dtype, each computing the rows [r0, r1) for every token. The
 * backend splits rows among its threads; each kernel blocks over k and tokens itself. */
#ifndef TL_KERNELS_CPU_MM_H
#define TL_KERNELS_CPU_MM_H

#include <stdint.h>
#include <string.h>
#include "tokenloop/model.h"
#include "tokenloop/scores.h"

/* x to bf16 for the packed products (tl_cpu_pack_bf16, x86 and NEON alike): round to nearest
 * even, NaN stays NaN, a subnormal input counts as zero (as VCVTNEPS2BF16 does), so every set
 * rounds x the same way. */
static inline uint16_t tl_cpu_x_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    if (!(u & 0x7f800000u))
        return (uint16_t)((u >> 16) & 0x8000);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

typedef struct tl_cpu_mm {
    float *out;
    const float *x;
    const void *w;
    int64_t rows, cols;
    int T;
    /* For kernels with want_pack: x as bf16, [T][halves][cols_pad], zero beyond cols. Two
     * halves are x split into high and low, x ~= hi + lo to about 2^-17 (the exact mode, the
     * default: fp32-level products); one is x rounded to bf16 (--bf16-activations). With
     * panels set (T >= the ISA's panel_T), 16 tokens side by side instead:
     * [ceil(T/16)][halves][cols_pad/2][16][2] (tl_cpu_pack_bf16_panel), tokens past T zero. */
    const uint16_t *xpack;
    int64_t cols_pad;
    int halves;
    int panels;
    /* For Q8_0/Q4_0 weights: x quantized to int8 per block of 32 as llama.cpp's Q8_0 (a scale
     * rounded to f16, q = round(x / d)), split into xq [T][cols] int8, xd [T][cols/32] the
     * scales, and xc [T][cols/4] = -qbias * (sum of each 4 consecutive q): a kernel that adds
     * qbias to every weight byte (to feed an unsigned x signed instruction) starts its integer
     * sums from xc and so gets the signed product exactly. */
    const int8_t *xq;
    const float *xd;
    const int32_t *xc;
} tl_cpu_mm;

typedef void (*tl_cpu_mm_fn)(const tl_cpu_mm *a, int64_t r0, int64_t r1);
/* One token's product (T == 1) that also feeds its outputs to the scores' accumulator s, the
 * calling thread's (scores.h), as it writes them. */
typedef void (*tl_cpu_mv_scores_fn)(const tl_cpu_mm *a, int64_t r0, int64_t r1, tl_cpu_scores *s);
/* Quantizes token t of x into m's xq/xd/xc (room: cols bytes, cols/4 floats, cols/4 int32 a
 * token) in the order an ISA's Q8_0/Q4_0 kernels read them. */
typedef void (*tl_cpu_qpack_fn)(const tl_cpu_mm *m, tl_dtype dt, const float *x, int t, int qbias);

/* Causal GQA attention of T queries at pos0.. over cache rows 0..pos0+T-1 (backend.h); k and
 * v are fp32 rows, or bf16 ones for the attn_bf16 kernels. */
typedef struct tl_cpu_attn {
    float *out;
    const float *q;
    const void *k, *v;
    int T, pos0, n_heads, n_kv, head_dim;
} tl_cpu_attn;

/* One item: position t, kv head kvh, its group of query heads; scores holds
 * (n_heads / n_kv) * (pos0 + t + 1) floats. */
typedef void (*tl_cpu_attn_fn)(const tl_cpu_attn *a, int t, int kvh, float *scores);

typedef struct tl_cpu_isa {
    const char *name;
    int (*supported)(void);
    tl_cpu_mm_fn mm[TL_DTYPE_COUNT];   /* indexed by tl_dtype; NULL: not this ISA (the generic one serves) */
    tl_cpu_attn_fn attn;
    tl_cpu_attn_fn attn_bf16;          /* the same over a bf16 KV cache */
    tl_cpu_mv_scores_fn mv_scores[TL_DTYPE_COUNT];   /* NULL: no such kernel (no statistics) */
    int want_pack[TL_DTYPE_COUNT];
    int qbias[TL_DTYPE_COUNT];   /* for Q8_0/Q4_0: the bias its kernels add to weights (xc) */
    tl_cpu_qpack_fn qpack;       /* NULL: tl_cpu_pack_q8's layout (blocks in order, a scale each) */
    int64_t pack_align;          /* cols_pad is a multiple of this */
    int panel_T;                 /* products of at least this many tokens want x in panels (0: never) */
} tl_cpu_isa;

extern const tl_cpu_isa tl_cpu_isa_generic, tl_cpu_isa_avx2, tl_cpu_isa_avx512,
    tl_cpu_isa_avx512bf16, tl_cpu_isa_neon, tl_cpu_isa_neon_dotprod, tl_cpu_isa_neon_bf16;
void tl_cpu_attn_bf16_avx512(const tl_cpu_attn *a, int t, int kvh, float *scores);

/* Quantizes T rows of x (cols a multiple of 32) into xq/xd/xc for kernels with bias qbias. */
void tl_cpu_pack_q8(int8_t *xq, float *xd, int32_t *xc, const float *x, int T, int64_t cols, int qbias);
void tl_cpu_mm_q8_0_generic(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_q4_0_generic(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_q8_0_avx2(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_q4_0_avx2(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_qpack_avx2(const tl_cpu_mm *m, tl_dtype dt, const float *x, int t, int qbias);
void tl_cpu_qpack_avx512vnni(const tl_cpu_mm *m, tl_dtype dt, const float *x, int t, int qbias);
void tl_cpu_mm_q8_0_avx512vnni(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_q4_0_avx512vnni(const tl_cpu_mm *a, int64_t r0, int64_t r1);
/* AArch64 SDOT (qmm_dotprod_neon.c), x in tl_cpu_pack_q8's layout without xc */
void tl_cpu_mm_q8_0_neon_dotprod(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_q4_0_neon_dotprod(const tl_cpu_mm *a, int64_t r0, int64_t r1);
/* AArch64 BFDOT (mv_bfdot_neon.c): bf16 weights against xpack, any T */
void tl_cpu_mm_bf16_neon_bf16(const tl_cpu_mm *a, int64_t r0, int64_t r1);
/* One token's product with bf16 weights (T == 1), AVX-512 BF16: the decode step's loop. */
void tl_cpu_mv_bf16_avx512bf16(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mv_bf16_scores_avx512bf16(const tl_cpu_mm *a, int64_t r0, int64_t r1, tl_cpu_scores *s);

/* Fills xpack for T rows of x (cols_pad >= cols, a multiple of 32), 1 or 2 halves. Rounds to
 * nearest even; subnormal inputs count as zero, as VCVTNEPS2BF16 has them. */
void tl_cpu_pack_bf16(uint16_t *xpack, const float *x, int T, int64_t cols, int64_t cols_pad, int halves);
#define TL_CPU_PANEL 16   /* tokens in a panel */
/* Fills one panel of 16 tokens from nt <= 16 rows of x (the rest zero), the same roundings. */
void tl_cpu_pack_bf16_panel(uint16_t *panel, const float *x, int nt, int64_t cols, int64_t cols_pad, int halves);

#endif
