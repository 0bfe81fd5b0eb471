/* The VDPBF16PS peak of this machine: each thread runs a loop of 12 independent VDPBF16PS
 * (zmm, registers only, so nothing waits on memory or on a previous result) and the rate is
 * counted as 64 flop an instruction (16 lanes x 2 products x multiply + add). The prefill
 * kernels' GFLOP/s are set against this (kernels/cpu/README.md).
 *
 *   cmake --build build --target peak_bf16     (CMake builds it on x86-64 with everything else)
 *   build/peak_bf16 [threads]        (default: 1, then every core)
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define ITERS 100000000L   /* x 12 instructions */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *run(void *arg)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0,
           a9 = a0, a10 = a0, a11 = a0;
    __m512bh w = (__m512bh)_mm512_set1_epi16(0x3f80), x = (__m512bh)_mm512_set1_epi16(0x0001);
    /* in assembly: the compiler would merge twelve identical chains into one */
    for (long i = 0; i < ITERS; i++)
        __asm__ volatile("vdpbf16ps %[w], %[x], %[a0]\n\tvdpbf16ps %[w], %[x], %[a1]\n\t"
                         "vdpbf16ps %[w], %[x], %[a2]\n\tvdpbf16ps %[w], %[x], %[a3]\n\t"
                         "vdpbf16ps %[w], %[x], %[a4]\n\tvdpbf16ps %[w], %[x], %[a5]\n\t"
                         "vdpbf16ps %[w], %[x], %[a6]\n\tvdpbf16ps %[w], %[x], %[a7]\n\t"
                         "vdpbf16ps %[w], %[x], %[a8]\n\tvdpbf16ps %[w], %[x], %[a9]\n\t"
                         "vdpbf16ps %[w], %[x], %[a10]\n\tvdpbf16ps %[w], %[x], %[a11]"
                         : [a0] "+v"(a0), [a1] "+v"(a1), [a2] "+v"(a2), [a3] "+v"(a3), [a4] "+v"(a4),
                           [a5] "+v"(a5), [a6] "+v"(a6), [a7] "+v"(a7), [a8] "+v"(a8), [a9] "+v"(a9),
                           [a10] "+v"(a10), [a11] "+v"(a11)
                         : [w] "v"(w), [x] "v"(x));
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                             _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
    *(float *)arg = _mm512_reduce_add_ps(s);
    return NULL;
}

static void measure(int n)
{
    pthread_t th[256];
    float sink[256];
    double t0 = now();
    for (int i = 0; i < n; i++)
        pthread_create(&th[i], NULL, run, &sink[i]);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    double dt = now() - t0, ins = (double)ITERS * 12.0 * n;
    printf("%d thread%s: %.2f G VDPBF16PS/s, %.1f GFLOP/s (%.1f a thread)\n", n, n == 1 ? "" : "s", ins / dt * 1e-9,
           ins * 64.0 / dt * 1e-9, ins * 64.0 / dt * 1e-9 / n);
}

int main(int argc, char **argv)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int n = argc > 1 ? atoi(argv[1]) : 0;
    if (n < 0 || n > 256 || cores < 1)
        return 2;
    if (n)
        measure(n);
    else {
        measure(1);
        if (cores > 1)
            measure(cores > 256 ? 256 : (int)cores);
    }
    return 0;
}
