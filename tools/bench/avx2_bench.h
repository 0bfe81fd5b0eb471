/* What the one-thread AVX2 kernel benchmarks (gemm_avx2.c, qdecode_avx2.c) share: the thread's
 * CPU clock, a sort of times for medians, and the start of main. */
#ifndef TL_TOOLS_AVX2_BENCH_H
#define TL_TOOLS_AVX2_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <immintrin.h>
#include <time.h>

/* CPU seconds of this thread (CLOCK_THREAD_CPUTIME_ID): other processes on a shared machine
 * take wall time but are not counted. */
static inline double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* argv[1], the rounds (default 7, 1..1000), on a CPU with AVX2 and FMA: 0 with *rounds, or the
 * exit status after saying why not (2: bad rounds, 1: no AVX2 + FMA). */
static inline int avx2_bench_start(int argc, char **argv, const char *name, int *rounds)
{
    *rounds = argc > 1 ? atoi(argv[1]) : 7;
    if (*rounds < 1 || *rounds > 1000) {
        fprintf(stderr, "%s: rounds must be 1..1000\n", name);
        return 2;
    }
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        fprintf(stderr, "%s: this CPU has no AVX2 + FMA\n", name);
        return 1;
    }
    return 0;
}

/* The integer roof of one thread: GMAC/s (CPU time) of 12 independent 256-bit VPMADDUBSW (32
 * byte products each, as the Q4_0 and K-quant kernels count a MAC), or with vnni VPDPBUSD (32,
 * EVEX-encoded: Zen 4 has AVX-512 VNNI, not the VEX AVX-VNNI). In assembly: the compiler
 * would merge identical chains. */
static inline double peak_int8(int vnni)
{
    const long iters = 100000000L;
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0,
            a9 = a0, a10 = a0, a11 = a0, w = _mm256_set1_epi8(3), x = _mm256_set1_epi8(-2);
    double t0 = cpu_now();
    if (vnni)
        for (long i = 0; i < iters; i++)
            __asm__ volatile("%{evex%} vpdpbusd %[w], %[x], %[a0]\n\t%{evex%} vpdpbusd %[w], %[x], %[a1]\n\t"
                             "%{evex%} vpdpbusd %[w], %[x], %[a2]\n\t%{evex%} vpdpbusd %[w], %[x], %[a3]\n\t"
                             "%{evex%} vpdpbusd %[w], %[x], %[a4]\n\t%{evex%} vpdpbusd %[w], %[x], %[a5]\n\t"
                             "%{evex%} vpdpbusd %[w], %[x], %[a6]\n\t%{evex%} vpdpbusd %[w], %[x], %[a7]\n\t"
                             "%{evex%} vpdpbusd %[w], %[x], %[a8]\n\t%{evex%} vpdpbusd %[w], %[x], %[a9]\n\t"
                             "%{evex%} vpdpbusd %[w], %[x], %[a10]\n\t%{evex%} vpdpbusd %[w], %[x], %[a11]"
                             : [a0] "+x"(a0), [a1] "+x"(a1), [a2] "+x"(a2), [a3] "+x"(a3), [a4] "+x"(a4),
                               [a5] "+x"(a5), [a6] "+x"(a6), [a7] "+x"(a7), [a8] "+x"(a8), [a9] "+x"(a9),
                               [a10] "+x"(a10), [a11] "+x"(a11)
                             : [w] "x"(w), [x] "x"(x));
    else
        for (long i = 0; i < iters; i++)
            __asm__ volatile("vpmaddubsw %[w], %[x], %[a0]\n\tvpmaddubsw %[w], %[x], %[a1]\n\t"
                             "vpmaddubsw %[w], %[x], %[a2]\n\tvpmaddubsw %[w], %[x], %[a3]\n\t"
                             "vpmaddubsw %[w], %[x], %[a4]\n\tvpmaddubsw %[w], %[x], %[a5]\n\t"
                             "vpmaddubsw %[w], %[x], %[a6]\n\tvpmaddubsw %[w], %[x], %[a7]\n\t"
                             "vpmaddubsw %[w], %[x], %[a8]\n\tvpmaddubsw %[w], %[x], %[a9]\n\t"
                             "vpmaddubsw %[w], %[x], %[a10]\n\tvpmaddubsw %[w], %[x], %[a11]"
                             : [a0] "+x"(a0), [a1] "+x"(a1), [a2] "+x"(a2), [a3] "+x"(a3), [a4] "+x"(a4),
                               [a5] "+x"(a5), [a6] "+x"(a6), [a7] "+x"(a7), [a8] "+x"(a8), [a9] "+x"(a9),
                               [a10] "+x"(a10), [a11] "+x"(a11)
                             : [w] "x"(w), [x] "x"(x));
    const double dt = cpu_now() - t0;
    volatile int sink = _mm256_extract_epi32(_mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a10, a11)), 0) +
                        _mm256_extract_epi32(_mm256_add_epi32(_mm256_add_epi32(a2, a3), _mm256_add_epi32(a4, a5)), 0) +
                        _mm256_extract_epi32(_mm256_add_epi32(_mm256_add_epi32(a6, a7), _mm256_add_epi32(a8, a9)), 0);
    (void)sink;
    return (double)iters * 12.0 * 32.0 / dt * 1e-9;
}

#include <math.h>
#include <string.h>

#include "mm.h"

/* A product the way the backend runs it on two threads: in 8 chunks of rows (multiples of 8,
 * the panels' height); CPU seconds. */
static inline double mm_run_chunks(tl_cpu_mm_fn fn, const tl_cpu_mm *m)
{
    int64_t chunk = (m->rows / 8 + 7) / 8 * 8;
    double t0 = cpu_now();
    for (int64_t r = 0; r < m->rows; r += chunk)
        fn(m, r, r + chunk < m->rows ? r + chunk : m->rows);
    return cpu_now() - t0;
}

/* An old and a new kernel over the same operands (outputs apart), one warm run each, then
 * alternated round by round: their times' medians and ranges, and the largest difference of
 * the T x rows outputs relative to the largest old one. */
typedef struct {
    double old_med, old_min, old_max, new_med, new_min, new_max, diff;
} mm_pair;

static inline mm_pair mm_pair_run(tl_cpu_mm_fn fn_old, const tl_cpu_mm *m_old, tl_cpu_mm_fn fn_new,
                                  const tl_cpu_mm *m_new, int rounds)
{
    double t_old[1000], t_new[1000], big = 0, diff = 0;
    mm_run_chunks(fn_old, m_old);
    mm_run_chunks(fn_new, m_new);
    for (int64_t i = 0; i < (int64_t)m_old->T * m_old->rows; i++) {
        big = fmax(big, fabs(m_old->out[i]));
        diff = fmax(diff, fabs(m_old->out[i] - m_new->out[i]));
    }
    for (int r = 0; r < rounds; r++) {
        t_old[r] = mm_run_chunks(fn_old, m_old);
        t_new[r] = mm_run_chunks(fn_new, m_new);
    }
    qsort(t_old, (size_t)rounds, sizeof(double), cmp_d);
    qsort(t_new, (size_t)rounds, sizeof(double), cmp_d);
    return (mm_pair){t_old[rounds / 2], t_old[0], t_old[rounds - 1], t_new[rounds / 2], t_new[0],
                     t_new[rounds - 1], big > 0 ? diff / big : diff};
}

/* The start of main for the integer products' benchmarks (qgemm_avx2.c, kqgemm_avx2.c):
 * [--vnni] [rounds [T ...]]. Sets *vnni (the avx512bf16 set's kernels), *rounds, the token
 * counts Ts[0 .. *nT) (default: as given, at most 16) and *roof (peak_int8, printed); 0, or
 * the exit status after saying why not. */
static inline int int8_bench_start(int argc, char **argv, const char *name, int *vnni, int *rounds, double *roof,
                                   int Ts[16], int *nT)
{
    *vnni = argc > 1 && !strcmp(argv[1], "--vnni");
    if (*vnni) {
        argv++;
        argc--;
        if (!tl_cpu_isa_avx512bf16.supported()) {
            fprintf(stderr, "%s: this CPU has no AVX-512 VNNI/BF16 (the avx512bf16 set)\n", name);
            return 1;
        }
    }
    int rc = avx2_bench_start(argc, argv, name, rounds);
    if (rc)
        return rc;
    if (argc > 2)
        for (*nT = 0; *nT < argc - 2 && *nT < 16; (*nT)++)
            if ((Ts[*nT] = atoi(argv[*nT + 2])) < 1 || Ts[*nT] > 4096) {
                fprintf(stderr, "%s: T must be 1..4096\n", name);
                return 2;
            }
    *roof = peak_int8(*vnni);
    printf("integer roof: %.1f GMAC/s a thread (12 independent %s, CPU time)\n", *roof,
           *vnni ? "VPDPBUSD" : "VPMADDUBSW");
    return 0;
}

#endif
