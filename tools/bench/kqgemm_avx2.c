/* The AVX2 K-quant prefill product (kqgemm_avx2.h's panels) against the row-at-a-time one it
 * replaced (kq_tmpl.h's kq_mm_rows, 4 tokens a pass over a row). One thread; each figure is the
 * thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so other processes on a shared machine take wall
 * time but are not counted. Q4_K and Q6_K (a Q4_K_M file's two types) at the 1B shape's two
 * widths, weights random bytes with small f16 scales, x quantized to Q8_K as the backend does
 * (tl_cpu_qpack_q8k_avx2); each product run in 8 chunks of rows, old and new alternated round by
 * round; medians and ranges of GMAC/s, and the largest difference between the two outputs
 * relative to the largest output.
 *
 * With --vnni first: the avx512bf16 set's kernels (kq_avx512vnni.c: the same code with
 * VPDPWSSD), against the integer roof of VPDPBUSD.
 *
 *   cmake --build build --target kqgemm_avx2     (CMake builds it on x86-64 with everything else)
 *   build/kqgemm_avx2 [--vnni] [rounds [T ...]]      (default 7 rounds, T = 4 32 128 512)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "avx2_bench.h"
#include "kq.h"
#include "tokenloop/quant.h"

void tl_cpu_mm_kq_rows_avx2(const tl_cpu_mm *a, tl_dtype dt, int64_t r0, int64_t r1);
void tl_cpu_mm_kq_rows_avx512vnni(const tl_cpu_mm *a, tl_dtype dt, int64_t r0, int64_t r1);

static tl_dtype g_dt;
static int g_vnni;
static void old_fn(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    (g_vnni ? tl_cpu_mm_kq_rows_avx512vnni : tl_cpu_mm_kq_rows_avx2)(a, g_dt, r0, r1);
}

/* random quants and scales; f16 scales of a small magnitude (bits 0x1000-0x13ff) */
static void fill(tl_dtype dt, uint8_t *w, size_t nblocks)
{
    const size_t bb = tl_dtype_block_bytes(dt);
    for (size_t i = 0; i < nblocks * bb; i++)
        w[i] = (uint8_t)rand();
    for (size_t b = 0; b < nblocks; b++) {
        uint8_t *blk = w + b * bb;
        const size_t at[2] = {dt == TL_Q6_K ? 208 : 0, dt == TL_Q6_K ? 208 : 2};
        for (int k = 0; k < 2; k++) {
            uint16_t h = (uint16_t)(0x1000 + (rand() & 0x3ff));
            memcpy(blk + at[k], &h, 2);
        }
    }
}

int main(int argc, char **argv)
{
    static const struct { const char *name; int64_t rows, cols; } shapes[] = {
        {"cols 2048", 2048, 2048}, {"cols 8192", 512, 8192}};
    int Ts[16] = {4, 32, 128, 512}, nT = 4, rounds;
    double roof;
    int rc = int8_bench_start(argc, argv, "kqgemm_avx2", &g_vnni, &rounds, &roof, Ts, &nT);
    if (rc)
        return rc;
    static const tl_dtype dts[] = {TL_Q4_K, TL_Q6_K};
    for (size_t di = 0; di < 2; di++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int ti = 0; ti < nT; ti++) {
                const tl_dtype dt = dts[di];
                const int64_t rows = shapes[s].rows, cols = shapes[s].cols, nb = cols / TL_QK_K;
                const int T = Ts[ti];
                uint8_t *w = malloc((size_t)(rows * nb) * tl_dtype_block_bytes(dt));
                float *x = malloc((size_t)T * (size_t)cols * 4);
                float *o_old = malloc((size_t)T * (size_t)rows * 4), *o_new = malloc((size_t)T * (size_t)rows * 4);
                int8_t *xq = malloc((size_t)T * (size_t)cols);
                float *xd = malloc((size_t)T * (size_t)nb * 4);
                int16_t *bs = malloc((size_t)T * (size_t)(cols / 16) * 2);
                srand(1);
                fill(dt, w, (size_t)(rows * nb));
                for (int64_t i = 0; i < T * cols; i++)
                    x[i] = (float)rand() / (float)RAND_MAX - 0.5f;
                tl_cpu_mm m_old = {.out = o_old, .x = x, .w = w, .rows = rows, .cols = cols, .T = T, .xq = xq, .xd = xd,
                                   .xc = (const int32_t *)(const void *)bs};
                for (int t = 0; t < T; t++)
                    tl_cpu_qpack_q8k_avx2(&m_old, dt, x, t, 0);
                tl_cpu_mm m_new = m_old;
                m_new.out = o_new;
                g_dt = dt;
                tl_cpu_mm_fn fn_new = tl_cpu_kq_kernel(g_vnni ? "avx512bf16" : "avx2", dt);
                const double mac = (double)rows * (double)cols * T;
                const mm_pair q = mm_pair_run(old_fn, &m_old, fn_new, &m_new, rounds);
                printf("%s %-9s T=%3d  rows %5.1f GMAC/s (%.1f-%.1f)  panels %5.1f (%.1f-%.1f)  time panels/rows %.2f = %2.0f%% of the roof  "
                       "max diff %.1e of max\n",
                       tl_dtype_name(dt), shapes[s].name, T, mac / q.old_med * 1e-9, mac / q.old_max * 1e-9, mac / q.old_min * 1e-9,
                       mac / q.new_med * 1e-9, mac / q.new_max * 1e-9, mac / q.new_min * 1e-9, q.new_med / q.old_med,
                       100.0 * mac / q.new_med * 1e-9 / roof, q.diff);
                free(w), free(x), free(o_old), free(o_new), free(xq), free(xd), free(bs);
            }
    return 0;
}
