/* The K-quant decode products (one token; kernels/cpu/kq_avx2.c, kq_avx512vnni.c where the CPU
 * has VNNI, and the portable kq_generic.c) against a plain read of the same bytes; a prefill of
 * 32 tokens (GMAC/s, against the Q4_0 product); x's Q8_K quantizers. One thread; each figure is the
 * thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so other processes on a shared machine take wall
 * time but are not counted. Two sizes of 2048-wide rows: 512 rows (the weights in L2: the
 * kernel's own pace) and 65536 (from memory). The kernels and the read alternate round by round,
 * each over the whole matrix in 8 chunks of rows; medians and ranges. Random blocks with finite
 * scales (the speed does not depend on the values).
 *
 *   cc -O2 -mavx2 -mfma -mf16c -Ikernels/cpu -Icore/include -Itools/bench tools/bench/kq_decode.c \
 *      build/libtokenloop_core.a -lm -lpthread -o /tmp/kq_decode
 *   /tmp/kq_decode [rounds]      (default 7)
 */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "avx2_bench.h"
#include "kq.h"
#include "mm.h"
#include "tokenloop/quant.h"

static double run(tl_cpu_mm_fn fn, const tl_cpu_mm *m)
{
    int64_t chunk = (m->rows + 7) / 8;
    double t0 = cpu_now();
    for (int64_t r = 0; r < m->rows; r += chunk)
        fn(m, r, r + chunk < m->rows ? r + chunk : m->rows);
    return cpu_now() - t0;
}

static volatile long long sink;

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

static void report(const char *what, double *t, int n, double bytes)
{
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    printf("  %-10s %6.1f GB/s (%.1f-%.1f)\n", what, bytes / t[n / 2] / 1e9, bytes / t[n - 1] / 1e9, bytes / t[0] / 1e9);
}

int main(int argc, char **argv)
{
    int rounds, rc = avx2_bench_start(argc, argv, "kq_decode", &rounds);
    if (rc)
        return rc;
    const int64_t cols = 2048, sizes[] = {512, 65536};
    const tl_dtype dts[] = {TL_Q4_K, TL_Q5_K, TL_Q6_K};
    tl_cpu_mm_fn avx2[] = {tl_cpu_mm_q4_k_avx2, tl_cpu_mm_q5_k_avx2, tl_cpu_mm_q6_k_avx2};
    tl_cpu_mm_fn generic[] = {tl_cpu_mm_q4_k_generic, tl_cpu_mm_q5_k_generic, tl_cpu_mm_q6_k_generic};
    tl_cpu_mm_fn vnni[] = {tl_cpu_mm_q4_k_avx512vnni, tl_cpu_mm_q5_k_avx512vnni, tl_cpu_mm_q6_k_avx512vnni};
    const int has_vnni = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl");
    float *x = malloc(sizeof(float) * (size_t)cols), *out = malloc(sizeof(float) * 65536);
    int8_t *xq = aligned_alloc(64, (size_t)cols);
    float *xd = aligned_alloc(64, (size_t)cols);
    int32_t *xc = aligned_alloc(64, (size_t)cols);
    srand(1);
    for (int64_t i = 0; i < cols; i++)
        x[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int k = 0; k < 3; k++)
        for (int s = 0; s < 2; s++) {
            const int64_t rows = sizes[s];
            const size_t bytes = (size_t)rows * tl_dtype_row_bytes(dts[k], cols);
            uint8_t *w = aligned_alloc(64, (bytes + 63) / 64 * 64);
            for (size_t i = 0; i < bytes; i++)
                w[i] = (uint8_t)rand();
            for (size_t b = 0; b < bytes / tl_dtype_block_bytes(dts[k]); b++) {   /* finite f16 scales */
                uint8_t *blk = w + b * tl_dtype_block_bytes(dts[k]);
                uint16_t h = (uint16_t)(0x2000 | (rand() & 0x3ff));
                memcpy(blk + (dts[k] == TL_Q6_K ? 208 : 0), &h, 2);
                if (dts[k] != TL_Q6_K)
                    memcpy(blk + 2, &h, 2);
            }
            tl_cpu_mm m = {.out = out, .x = x, .w = w, .rows = rows, .cols = cols, .T = 1, .xq = xq, .xd = xd, .xc = xc};
            tl_cpu_qpack_q8k(&m, dts[k], x, 0, 1);
            double ta[1000], tg[1000], tr[1000], tv[1000];
            int ng = s == 0 ? rounds : 1;   /* the portable kernel: once from memory (slow) */
            for (int r = 0; r < rounds; r++) {
                ta[r] = run(avx2[k], &m);
                if (has_vnni)
                    tv[r] = run(vnni[k], &m);
                if (r < ng)
                    tg[r] = run(generic[k], &m);
                tr[r] = run_read(w, bytes);
            }
            printf("%s, %lld x %lld (%.1f MB, %s):\n", tl_dtype_name(dts[k]), (long long)rows, (long long)cols,
                   bytes / 1e6, s == 0 ? "in L2" : "from memory");
            report("avx2", ta, rounds, (double)bytes);
            if (has_vnni)
                report("vnni", tv, rounds, (double)bytes);
            report("generic", tg, ng, (double)bytes);
            report("read", tr, rounds, (double)bytes);
            free(w);
        }
    /* prefill: T = 32 tokens of 2048 x 2048, GMAC/s, against the Q4_0 product (qmm_avx2.c) */
    {
        const int T = 32;
        const int64_t rows = 2048;
        float *xs = malloc(sizeof(float) * (size_t)(T * cols)), *o = malloc(sizeof(float) * (size_t)(T * rows));
        int8_t *q = aligned_alloc(64, (size_t)(T * cols));
        float *qd = aligned_alloc(64, (size_t)(T * cols));
        int32_t *qc = aligned_alloc(64, (size_t)(T * cols));
        for (int64_t i = 0; i < T * cols; i++)
            xs[i] = (float)rand() / RAND_MAX - 0.5f;
        const tl_dtype pd[] = {TL_Q4_K, TL_Q6_K, TL_Q4_0, TL_Q4_K, TL_Q6_K};
        tl_cpu_mm_fn pf[] = {tl_cpu_mm_q4_k_avx2, tl_cpu_mm_q6_k_avx2, tl_cpu_mm_q4_0_avx2, tl_cpu_mm_q4_k_avx512vnni,
                             tl_cpu_mm_q6_k_avx512vnni};
        const char *pn[] = {"avx2", "avx2", "avx2", "vnni", "vnni"};
        const int np = has_vnni ? 5 : 3;
        double tp[5][1000];
        uint8_t *ws[5];
        tl_cpu_mm ms[5];
        for (int k = 0; k < np; k++) {
            const size_t bytes = (size_t)rows * tl_dtype_row_bytes(pd[k], cols);
            ws[k] = aligned_alloc(64, (bytes + 63) / 64 * 64);
            for (size_t i = 0; i < bytes; i++)
                ws[k][i] = (uint8_t)(rand() & 0x3b);   /* (keeps every f16 scale finite) */
            ms[k] = (tl_cpu_mm){.out = o, .x = xs, .w = ws[k], .rows = rows, .cols = cols, .T = T, .xq = q, .xd = qd,
                                .xc = qc};
        }
        for (int r = 0; r < rounds; r++)
            for (int k = 0; k < np; k++) {
                for (int t = 0; t < T; t++)
                    (k != 2 ? tl_cpu_qpack_q8k_avx2 : tl_cpu_qpack_avx2)(&ms[k], pd[k], xs, t, k != 2 ? 1 : 8);
                tp[k][r] = run(pf[k], &ms[k]);
            }
        for (int k = 0; k < np; k++) {
            qsort(tp[k], (size_t)rounds, sizeof(double), cmp_d);
            printf("prefill T=%d, %s %s %lld x %lld: %.1f GMAC/s (median; %.1f-%.1f)\n", T, pn[k], tl_dtype_name(pd[k]),
                   (long long)rows, (long long)cols, (double)T * rows * cols / tp[k][rounds / 2] / 1e9,
                   (double)T * rows * cols / tp[k][rounds - 1] / 1e9, (double)T * rows * cols / tp[k][0] / 1e9);
            free(ws[k]);
        }
        free(xs);
        free(o);
        free(q);
        free(qd);
        free(qc);
    }
    tl_cpu_qpack_fn packs[2] = {tl_cpu_qpack_q8k, tl_cpu_qpack_q8k_avx2};
    for (int p = 0; p < 2; p++) {
        double t[1000];
        tl_cpu_mm m = {.x = x, .cols = cols, .T = 1, .xq = xq, .xd = xd, .xc = xc};
        for (int r = 0; r < rounds; r++) {
            double t0 = cpu_now();
            for (int i = 0; i < 1000; i++)
                packs[p](&m, TL_Q4_K, x, 0, 1);
            t[r] = (cpu_now() - t0) / 1000;
        }
        qsort(t, (size_t)rounds, sizeof *t, cmp_d);
        printf("x to Q8_K (%s), 2048 values: %.2f us (median)\n", p ? "avx2" : "portable", t[rounds / 2] * 1e6);
    }
    return 0;
}
