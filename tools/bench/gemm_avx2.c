/* The AVX2 prefill product against the two cores' FMA peak and against the tile it replaced.
 * One thread; each figure is the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so the other
 * processes of a shared machine take its wall time but not its count. The peak is a loop of 12
 * independent VFMADD231PS on ymm registers (16 flop each); a product is run the way the backend
 * runs it, in chunks of an eighth of its rows (two threads, four chunks each), the old kernel
 * (mm_tmpl.h's 4 x 2 tile, tl_cpu_mm_bf16_avx2) and the new one (tl_cpu_isa_avx2.mm[TL_BF16],
 * gemm_avx2.h) alternated round by round; medians and ranges over the rounds.
 *
 *   cmake --build build --target gemm_avx2     (CMake builds it on x86-64 with everything else)
 *   build/gemm_avx2 [rounds [T ...]]      (default 7 rounds, T = 32 128 512)
 */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "avx2_bench.h"
#include "mm.h"

void tl_cpu_mm_bf16_avx2(const tl_cpu_mm *a, int64_t r0, int64_t r1);

#define PEAK_ITERS 200000000L   /* x 12 instructions */

/* GFLOP/s of independent ymm FMAs on one thread (CPU time) */
static double peak(void)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0,
           a9 = a0, a10 = a0, a11 = a0, w = _mm256_set1_ps(1.0f), x = _mm256_set1_ps(1e-9f);
    double t0 = cpu_now();
    /* in assembly: the compiler would merge twelve identical chains into one */
    for (long i = 0; i < PEAK_ITERS; i++)
        __asm__ volatile("vfmadd231ps %[w], %[x], %[a0]\n\tvfmadd231ps %[w], %[x], %[a1]\n\t"
                         "vfmadd231ps %[w], %[x], %[a2]\n\tvfmadd231ps %[w], %[x], %[a3]\n\t"
                         "vfmadd231ps %[w], %[x], %[a4]\n\tvfmadd231ps %[w], %[x], %[a5]\n\t"
                         "vfmadd231ps %[w], %[x], %[a6]\n\tvfmadd231ps %[w], %[x], %[a7]\n\t"
                         "vfmadd231ps %[w], %[x], %[a8]\n\tvfmadd231ps %[w], %[x], %[a9]\n\t"
                         "vfmadd231ps %[w], %[x], %[a10]\n\tvfmadd231ps %[w], %[x], %[a11]"
                         : [a0] "+x"(a0), [a1] "+x"(a1), [a2] "+x"(a2), [a3] "+x"(a3), [a4] "+x"(a4),
                           [a5] "+x"(a5), [a6] "+x"(a6), [a7] "+x"(a7), [a8] "+x"(a8), [a9] "+x"(a9),
                           [a10] "+x"(a10), [a11] "+x"(a11)
                         : [w] "x"(w), [x] "x"(x));
    double dt = cpu_now() - t0;
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
    volatile float sink = _mm256_cvtss_f32(s);
    (void)sink;
    return (double)PEAK_ITERS * 12.0 * 16.0 / dt * 1e-9;
}

/* the product in the backend's chunks, CPU seconds */
static double run(tl_cpu_mm_fn fn, const tl_cpu_mm *m)
{
    int64_t chunk = (m->rows / 8 + 3) / 4 * 4;
    double t0 = cpu_now();
    for (int64_t r = 0; r < m->rows; r += chunk)
        fn(m, r, r + chunk < m->rows ? r + chunk : m->rows);
    return cpu_now() - t0;
}

int main(int argc, char **argv)
{
    int rounds, rc = avx2_bench_start(argc, argv, "gemm_avx2", &rounds);
    if (rc)
        return rc;
    double pk = peak();
    printf("peak: %.1f GFLOP/s a thread (12 independent ymm FMAs, CPU time)\n", pk);
    /* the 1B shape's widths: q/k/v, o, gate/up read 2048 columns, down 8192 */
    static const struct { const char *name; int64_t rows, cols; } shapes[] = {
        {"cols 2048 (q/k/v, o, gate/up)", 2048, 2048}, {"cols 8192 (down)", 512, 8192}};
    int Ts[16] = {32, 128, 512}, nT = 3;
    if (argc > 2)
        for (nT = 0; nT < argc - 2 && nT < 16; nT++)
            if ((Ts[nT] = atoi(argv[nT + 2])) < 1 || Ts[nT] > 4096) {
                fprintf(stderr, "gemm_avx2: T must be 1..4096\n");
                return 2;
            }
    tl_cpu_mm_fn fn_new = tl_cpu_isa_avx2.mm[TL_BF16];
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int ti = 0; ti < nT; ti++) {
            int64_t rows = shapes[s].rows, cols = shapes[s].cols;
            int T = Ts[ti];
            uint16_t *w = aligned_alloc(64, (size_t)(rows * cols) * 2);
            float *x = aligned_alloc(64, (size_t)T * (size_t)cols * 4), *out = aligned_alloc(64, (size_t)T * (size_t)rows * 4);
            srand(1);
            for (int64_t i = 0; i < rows * cols; i++) {
                float f = (float)rand() / RAND_MAX - 0.5f;
                uint32_t u;
                memcpy(&u, &f, 4);
                w[i] = (uint16_t)(u >> 16);
            }
            for (int64_t i = 0; i < T * cols; i++)
                x[i] = (float)rand() / RAND_MAX - 0.5f;
            tl_cpu_mm m = {.out = out, .x = x, .w = w, .rows = rows, .cols = cols, .T = T};
            double t_old[1000], t_new[1000], flop = 2.0 * (double)rows * (double)cols * T;
            run(tl_cpu_mm_bf16_avx2, &m);   /* warm */
            run(fn_new, &m);
            for (int r = 0; r < rounds; r++) {
                t_old[r] = run(tl_cpu_mm_bf16_avx2, &m);
                t_new[r] = run(fn_new, &m);
            }
            qsort(t_old, (size_t)rounds, sizeof(double), cmp_d);
            qsort(t_new, (size_t)rounds, sizeof(double), cmp_d);
            double mo = t_old[rounds / 2], mn = t_new[rounds / 2];
            printf("%-30s T=%3d  tile %5.1f GFLOP/s (%.1f-%.1f)  gemm %5.1f (%.1f-%.1f) = %2.0f%% of peak  "
                   "time gemm/tile %.2f\n",
                   shapes[s].name, T, flop / mo * 1e-9, flop / t_old[rounds - 1] * 1e-9, flop / t_old[0] * 1e-9,
                   flop / mn * 1e-9, flop / t_new[rounds - 1] * 1e-9, flop / t_new[0] * 1e-9, 100.0 * flop / mn * 1e-9 / pk,
                   mn / mo);
            free(w);
            free(x);
            free(out);
        }
    return 0;
}
