/* The AVX2 Q4_0 and Q8_0 prefill products (qgemm_avx2.h's panels) against the tile they
 * replaced (qmm_avx2.c's 4-row x 2-token qm_tile, tl_cpu_mm_q*_tile_avx2). One thread; each figure is
 * the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so other processes on a shared machine take
 * wall time but are not counted. The 1B shape's two widths, weights from tl_quantize_row of
 * uniform noise, x quantized as the backend does (tl_cpu_pack_q8; Q4_0 with qbias 8); each product run in
 * 8 chunks of rows, old and new alternated round by round; medians and ranges of GMAC/s, and the
 * largest difference between the two outputs relative to the largest output.
 *
 * With --vnni first: the avx512bf16 set's products instead (qmm_avx512vnni.c: the same panels
 * with VPDPBUSD against its 4 x 4 vn_tile), x packed by its quantizer for the panels' layout
 * (so the tile's Q4_0 outputs, which expect pairs, are not compared: only its time is).
 *
 *   cmake --build build --target qgemm_avx2     (CMake builds it on x86-64 with everything else)
 *   build/qgemm_avx2 [--vnni] [rounds [T ...]]      (default 7 rounds, T = 4 8 16 32 128 512)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "avx2_bench.h"
#include "mm.h"
#include "tokenloop/quant.h"

void tl_cpu_mm_q4_0_tile_avx2(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_q8_0_tile_avx2(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_q4_0_tile_avx512vnni(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_q8_0_tile_avx512vnni(const tl_cpu_mm *a, int64_t r0, int64_t r1);

static float noise(void) { return (float)rand() / (float)RAND_MAX - 0.5f; }

int main(int argc, char **argv)
{
    static const struct { const char *name; int64_t rows, cols; } shapes[] = {
        {"cols 2048 (q/k/v, o, gate/up)", 2048, 2048}, {"cols 8192 (down)", 512, 8192}};
    int Ts[16] = {4, 8, 16, 32, 128, 512}, nT = 6, vnni, rounds;
    double roof;
    int rc = int8_bench_start(argc, argv, "qgemm_avx2", &vnni, &rounds, &roof, Ts, &nT);
    if (rc)
        return rc;
    const tl_cpu_isa *isa = vnni ? &tl_cpu_isa_avx512bf16 : &tl_cpu_isa_avx2;
    for (int dt = TL_Q8_0; dt <= TL_Q4_0; dt++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int ti = 0; ti < nT; ti++) {
            const int64_t rows = shapes[s].rows, cols = shapes[s].cols;
            const int T = Ts[ti];
            const size_t rb = tl_dtype_row_bytes((tl_dtype)dt, cols);
            char *w = malloc((size_t)rows * rb);
            float *x = malloc((size_t)T * (size_t)cols * 4), *row = malloc((size_t)cols * 4);
            float *o_old = malloc((size_t)T * (size_t)rows * 4), *o_new = malloc((size_t)T * (size_t)rows * 4);
            int8_t *xq = malloc((size_t)T * (size_t)cols);
            float *xd = malloc((size_t)T * (size_t)cols);   /* the avx512bf16 set keeps cols / 4 a token */
            int32_t *xc = malloc((size_t)T * (size_t)cols);
            srand(1);
            for (int64_t r = 0; r < rows; r++) {
                for (int64_t k = 0; k < cols; k++)
                    row[k] = noise();
                tl_quantize_row((tl_dtype)dt, row, w + (size_t)r * rb, cols);
            }
            for (int64_t i = 0; i < T * cols; i++)
                x[i] = noise();
            const int qbias = isa->qbias[dt];
            tl_cpu_mm m_old = {.out = o_old, .x = x, .w = w, .rows = rows, .cols = cols, .T = T, .xq = xq, .xd = xd,
                               .xc = qbias ? xc : NULL};
            if (vnni)
                for (int t = 0; t < T; t++)
                    isa->qpack(&m_old, (tl_dtype)dt, x, t, qbias);
            else
                tl_cpu_pack_q8(xq, xd, qbias ? xc : NULL, x, T, cols, qbias);
            tl_cpu_mm m_new = m_old;
            m_new.out = o_new;
            tl_cpu_mm_fn fn_new = isa->mm[dt];
            tl_cpu_mm_fn fn_old = vnni ? (dt == TL_Q8_0 ? tl_cpu_mm_q8_0_tile_avx512vnni : tl_cpu_mm_q4_0_tile_avx512vnni)
                                       : (dt == TL_Q8_0 ? tl_cpu_mm_q8_0_tile_avx2 : tl_cpu_mm_q4_0_tile_avx2);
            const double mac = (double)rows * (double)cols * T;
            const mm_pair q = mm_pair_run(fn_old, &m_old, fn_new, &m_new, rounds);
            printf("%s %-30s T=%3d  tile %5.1f GMAC/s (%.1f-%.1f)  panels %5.1f (%.1f-%.1f)  time panels/tile %.2f = %2.0f%% of the roof  "
                   "max diff %.1e of max\n",
                   tl_dtype_name((tl_dtype)dt), shapes[s].name, T, mac / q.old_med * 1e-9, mac / q.old_max * 1e-9, mac / q.old_min * 1e-9,
                   mac / q.new_med * 1e-9, mac / q.new_max * 1e-9, mac / q.new_min * 1e-9, q.new_med / q.old_med,
                   100.0 * mac / q.new_med * 1e-9 / roof, q.diff);
            free(w), free(x), free(row), free(o_old), free(o_new), free(xq), free(xd), free(xc);
        }
    return 0;
}
