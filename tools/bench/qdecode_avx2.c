/* The AVX2 Q4_0/Q8_0 decode product (one token) against the tile it replaced and a plain read
 * of the same bytes. One thread; each figure is the thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID), so other processes on a shared machine take wall time but are not
 * counted. Two sizes: 512 x 2048 (the weights in L2: the kernel's own pace) and 65536 x 2048
 * (from memory). The old kernel (qmm_avx2.c's 4-row tile, tl_cpu_mm_q*_tile_avx2), the new one
 * (tl_cpu_isa_avx2.mm[dt]) and the read are alternated round by round, each over the whole
 * matrix in 8 chunks of rows; medians and ranges of GB/s of weights. x is packed for the new
 * kernel (a decode's Q4_0 pair layout), so the old tile's outputs are not meaningful: only its
 * time, over the same bytes, is.
 *
 *   cmake --build build --target qdecode_avx2     (CMake builds it on x86-64 with everything else)
 *   build/qdecode_avx2 [rounds]      (default 7)
 */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "avx2_bench.h"
#include "mm.h"
#include "tokenloop/quant.h"

void tl_cpu_mm_q8_0_tile_avx2(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_q4_0_tile_avx2(const tl_cpu_mm *a, int64_t r0, int64_t r1);

static double run(tl_cpu_mm_fn fn, const tl_cpu_mm *m)
{
    int64_t chunk = (m->rows + 7) / 8;
    double t0 = cpu_now();
    for (int64_t r = 0; r < m->rows; r += chunk)
        fn(m, r, r + chunk < m->rows ? r + chunk : m->rows);
    return cpu_now() - t0;
}

static volatile long long sink;

/* a plain read of n bytes, 256 bits a load, four chains */
static double run_read(const void *p, size_t n)
{
    double t0 = cpu_now();
    const __m256i *v = p;
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    for (size_t i = 0; i + 4 <= n / 32; i += 4) {
        a = _mm256_xor_si256(a, _mm256_load_si256(v + i));
        b = _mm256_xor_si256(b, _mm256_load_si256(v + i + 1));
        c = _mm256_xor_si256(c, _mm256_load_si256(v + i + 2));
        d = _mm256_xor_si256(d, _mm256_load_si256(v + i + 3));
    }
    a = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
    sink = _mm256_extract_epi64(a, 0);
    return cpu_now() - t0;
}

int main(int argc, char **argv)
{
    int rounds, rc = avx2_bench_start(argc, argv, "qdecode_avx2", &rounds);
    if (rc)
        return rc;
    const int64_t cols = 2048, sizes[] = {512, 65536};
    for (int dt = TL_Q8_0; dt <= TL_Q4_0; dt++)
        for (int s = 0; s < 2; s++) {
            int64_t rows = sizes[s];
            size_t rb = tl_dtype_row_bytes((tl_dtype)dt, cols), bytes = (size_t)rows * rb;
            char *w = aligned_alloc(64, (bytes + 63) / 64 * 64);
            float *row = malloc(sizeof(float) * (size_t)cols), *x = malloc(sizeof(float) * (size_t)cols);
            float *out = malloc(sizeof(float) * (size_t)rows);
            int8_t *xq = aligned_alloc(64, (size_t)cols);
            float *xd = aligned_alloc(64, (size_t)cols / 32 * sizeof(float));
            int32_t *xc = aligned_alloc(64, (size_t)cols);
            srand(1);
            for (int64_t r = 0; r < rows; r++) {
                for (int64_t c = 0; c < cols; c++)
                    row[c] = (float)rand() / RAND_MAX - 0.5f;
                tl_quantize_row((tl_dtype)dt, row, w + (size_t)r * rb, cols);
            }
            for (int64_t c = 0; c < cols; c++)
                x[c] = (float)rand() / RAND_MAX - 0.5f;
            tl_cpu_mm m = {.out = out, .x = x, .w = w, .rows = rows, .cols = cols, .T = 1, .xq = xq, .xd = xd,
                           .xc = tl_cpu_isa_avx2.qbias[dt] ? xc : NULL};
            tl_cpu_qpack_avx2(&m, (tl_dtype)dt, x, 0, tl_cpu_isa_avx2.qbias[dt]);
            tl_cpu_mm_fn fn_old = dt == TL_Q8_0 ? tl_cpu_mm_q8_0_tile_avx2 : tl_cpu_mm_q4_0_tile_avx2;
            tl_cpu_mm_fn fn_new = tl_cpu_isa_avx2.mm[dt];
            double to[1000], tn[1000], tr[1000];
            run(fn_old, &m);
            run(fn_new, &m);
            for (int i = 0; i < rounds; i++) {
                tr[i] = run_read(w, bytes);
                to[i] = run(fn_old, &m);
                tn[i] = run(fn_new, &m);
            }
            qsort(to, (size_t)rounds, sizeof(double), cmp_d);
            qsort(tn, (size_t)rounds, sizeof(double), cmp_d);
            qsort(tr, (size_t)rounds, sizeof(double), cmp_d);
            double g = (double)bytes * 1e-9;
            printf("%s %6lld x %lld (%5.1f MB): read %5.1f GB/s (%.1f-%.1f)  tile %5.1f (%.1f-%.1f)  row %5.1f "
                   "(%.1f-%.1f)  time row/tile %.2f\n",
                   tl_dtype_name((tl_dtype)dt), (long long)rows, (long long)cols, g * 1e3, g / tr[rounds / 2],
                   g / tr[rounds - 1], g / tr[0], g / to[rounds / 2], g / to[rounds - 1], g / to[0], g / tn[rounds / 2],
                   g / tn[rounds - 1], g / tn[0], tn[rounds / 2] / to[rounds / 2]);
            free(w);
            free(row);
            free(x);
            free(out);
            free(xq);
            free(xd);
            free(xc);
        }
    return 0;
}
