/* What the one-thread AVX2 kernel benchmarks (gemm_avx2.c, qdecode_avx2.c) share: the thread's
 * CPU clock, a sort of times for medians, and the start of main. */
#ifndef TL_TOOLS_AVX2_BENCH_H
#define TL_TOOLS_AVX2_BENCH_H

#include <stdio.h>
#include <stdlib.h>
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

#endif
