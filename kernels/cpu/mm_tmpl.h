/* The blocked matrix product, written once over a small vector vocabulary and included by
 * each instruction-set file (mm_generic.c, mm_avx2.c, mm_avx512.c), which defines first:
 *   MM_VF (vector of floats), MM_VL (lanes), MM_RB x MM_TB (register tile: weight rows x
 *   tokens), MM_ZERO(), MM_FMA(a, b, c) = a*b + c, MM_HSUM(v), MM_LOADX(const float *),
 *   MM_LOADW_F32/F16/BF16(const void *, index).
 * A tile keeps MM_RB x MM_TB accumulators in registers; x is walked in k-blocks of MM_KC so
 * a block of every token stays in L2 while the weight rows stream through once. The rows of
 * the next tile are prefetched a line at a time (the hardware prefetcher stops at pages). */
#include <stddef.h>
#include "cpu.h"
#include "mm.h"

#define MM_KC 512
#define MM_INLINE static inline __attribute__((always_inline))

MM_INLINE MM_VF mm_loadw(const void *w, int dt, int64_t k)
{
    if (dt == TL_F32) return MM_LOADW_F32(w, k);
    if (dt == TL_F16) return MM_LOADW_F16(w, k);
    return MM_LOADW_BF16(w, k);
}

MM_INLINE float mm_scalarw(const void *w, int dt, int64_t k)
{
    if (dt == TL_F32) return ((const float *)w)[k];
    if (dt == TL_F16) return tl_cpu_f16_to_f32(((const uint16_t *)w)[k]);
    return tl_cpu_bf16_to_f32(((const uint16_t *)w)[k]);
}

/* Rows r..min(r+MM_RB, rend)-1 times tokens t..t+nt-1 over k in [k0, k1). Rows past rend
 * repeat the last valid one (computed, not stored) so the tile shape stays fixed. */
MM_INLINE void mm_tile(const tl_cpu_mm *a, int dt, int nt, int64_t r, int64_t rend, int t,
                       int64_t k0, int64_t k1, int accumulate)
{
    const size_t es = dt == TL_F32 ? 4 : 2;
    const int nr = rend - r < MM_RB ? (int)(rend - r) : MM_RB;
    const void *wr[MM_RB];
    const float *xr[MM_TB];
    MM_VF acc[MM_RB][MM_TB];
    for (int i = 0; i < MM_RB; i++)
        wr[i] = (const char *)a->w + (size_t)(r + (i < nr ? i : nr - 1)) * (size_t)a->cols * es;
    for (int j = 0; j < nt; j++)
        xr[j] = a->x + (size_t)(t + j) * (size_t)a->cols;
    for (int i = 0; i < MM_RB; i++)
        for (int j = 0; j < nt; j++)
            acc[i][j] = MM_ZERO();
    int64_t k = k0;
    const size_t next_tile = (size_t)MM_RB * (size_t)a->cols * es;
    for (; k + MM_VL <= k1; k += MM_VL) {
        MM_VF wv[MM_RB];
        /* once per line: the same line of the next tile, into L2 (a tile ahead is past L1; into
         * L1 a batched decode of 2 took 1.64-1.79x one token's time with the avx2 set, 1.54-1.55x
         * into L2: `TL_CPU_ISA=avx2 tokenloop bench --batch 1,2,4,8`, the builds alternated) */
        if (((size_t)k * es & 63) == 0)
            for (int i = 0; i < MM_RB; i++)
                __builtin_prefetch((const char *)wr[i] + (size_t)k * es + next_tile, 0, 2);
        for (int i = 0; i < MM_RB; i++)
            wv[i] = mm_loadw(wr[i], dt, k);
        for (int j = 0; j < nt; j++) {
            MM_VF xv = MM_LOADX(xr[j] + k);
            for (int i = 0; i < MM_RB; i++)
                acc[i][j] = MM_FMA(wv[i], xv, acc[i][j]);
        }
    }
    for (int j = 0; j < nt; j++)
        for (int i = 0; i < nr; i++) {
            float s = MM_HSUM(acc[i][j]);
            for (int64_t kk = k; kk < k1; kk++)
                s += mm_scalarw(wr[i], dt, kk) * xr[j][kk];
            float *o = a->out + (size_t)(t + j) * (size_t)a->rows + (size_t)(r + i);
            *o = accumulate ? *o + s : s;
        }
}

MM_INLINE void mm_rows(const tl_cpu_mm *a, int64_t r0, int64_t r1, int dt)
{
    /* Decode (and tiny T) reads each weight once anyway: no k-blocking, one pass. */
    const int64_t kc = a->T >= MM_TB ? MM_KC : a->cols;
    for (int64_t k0 = 0; k0 < a->cols; k0 += kc) {
        int64_t k1 = k0 + kc < a->cols ? k0 + kc : a->cols;
        for (int64_t r = r0; r < r1; r += MM_RB) {
            int t = 0;
            for (; t + MM_TB <= a->T; t += MM_TB)
                mm_tile(a, dt, MM_TB, r, r1, t, k0, k1, k0 > 0);
            for (; t < a->T; t++)
                mm_tile(a, dt, 1, r, r1, t, k0, k1, k0 > 0);
        }
    }
}

#define MM_CAT2(a, b) a##b
#define MM_CAT(a, b) MM_CAT2(a, b)
#define MM_ENTRY(dt, DT) \
    void MM_CAT(tl_cpu_mm_##dt##_, MM_ISA)(const tl_cpu_mm *a, int64_t r0, int64_t r1); \
    void MM_CAT(tl_cpu_mm_##dt##_, MM_ISA)(const tl_cpu_mm *a, int64_t r0, int64_t r1) \
    { mm_rows(a, r0, r1, DT); }
MM_ENTRY(f32, TL_F32)
MM_ENTRY(f16, TL_F16)
MM_ENTRY(bf16, TL_BF16)
