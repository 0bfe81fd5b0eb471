/* The AVX-512 BF16 decode row loop against a plain read, on one long stream a thread: no
 * engine, no dispatch, no product boundaries. Every thread takes one contiguous share of a
 * 1 GiB buffer (2 MiB pages) and runs, in each round, these loops over it in turn:
 *   read        tl_bandwidth_read, the floor's own read (core/bandwidth.c): eight 64-bit sums
 *               a line, no prefetch, the same contiguous shares (its threads start anew for
 *               each call)
 *   mv          the decode kernel itself (tl_cpu_mv_bf16_avx512bf16, x rounded to bf16, the
 *               default precision's products): 2048-column rows, x from L1, L2 prefetch 4 KiB
 *               ahead
 *   copy        a copy of its row loop, as it is (to check the copy against the kernel)
 *   copy, no pf the copy without the software prefetch
 *   copy, x regs the copy with x held in four registers (not a product: x repeats every 128
 *               columns): the bound on what loading x less often could buy
 * Each loop's time is divided by the read's in the same round, and the medians are printed
 * for the rounds whose read ran below and above 45 GB/s, since this machine's memory rate
 * switches between about 36 and 65 GB/s within seconds (kernels/cpu/README.md quotes it).
 *
 *   cmake --build build --target stream_vs_read     (CMake builds it on x86-64)
 *   build/stream_vs_read [rounds]                     (default 300; needs AVX-512 BF16)
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "tokenloop/bandwidth.h"
#include "tokenloop/metrics.h"
#include "mm.h"

#define BYTES ((size_t)1 << 30)
#define COLS 2048
#define PF 4096
#define LOOPS 5
#define MAX_THREADS 64
#define MAX_ROUNDS 5000
#define INL static inline __attribute__((always_inline, target("avx512f,avx512bf16")))

static const char *const loop_name[LOOPS] = {"read", "mv", "copy", "copy, no pf", "copy, x regs"};

static uint16_t *g_w;
static size_t g_share;              /* bytes a thread streams: whole rows */
static float *g_out[MAX_THREADS];   /* the kernel's outputs, a share's rows each */
static uint16_t g_x[COLS] __attribute__((aligned(64)));
static int g_threads, g_loop, g_stop;
static pthread_barrier_t g_go, g_done;
static volatile uint64_t g_sink[MAX_THREADS];

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A copy of the kernel's row loop (mv_avx512bf16.c's mv_row, x in one half), so that the
 * prefetch and x's loads can be varied. */
INL float mv_row(const uint16_t *w, int pf, int xregs, const __m512bh *xr)
{
    __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int k = 0; k < COLS; k += 128) {
        if (pf)
            for (int i = 0; i < 4; i++)
                _mm_prefetch((const char *)(w + k) + PF + 64 * i, _MM_HINT_T1);
        for (int i = 0; i < 4; i++) {
            __m512bh x = xregs ? xr[i] : (__m512bh)_mm512_load_si512(g_x + k + 32 * i);
            a[i] = _mm512_dpbf16_ps(a[i], (__m512bh)_mm512_loadu_si512(w + k + 32 * i), x);
        }
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3])));
}

__attribute__((target("avx512f,avx512bf16"))) static uint64_t mv_loop(const uint16_t *w, size_t rows, int pf,
                                                                      int xregs)
{
    __m512bh xr[4];
    for (int i = 0; i < 4; i++)
        xr[i] = (__m512bh)_mm512_load_si512(g_x + 32 * i);
    float s = 0;
    for (size_t r = 0; r < rows; r++)   /* summed, so no row can be left out */
        s += mv_row(w + r * COLS, pf, xregs, xr);
    return (uint64_t)(int64_t)s;
}

static void run_share(int tid)
{
    const uint16_t *w = g_w + (size_t)tid * g_share / 2;
    int64_t rows = (int64_t)(g_share / (COLS * 2));
    uint64_t r;
    if (g_loop == 1) {
        tl_cpu_mm a = {.out = g_out[tid], .w = w, .rows = rows, .cols = COLS, .T = 1, .xpack = g_x,
                       .cols_pad = COLS, .halves = 1};
        tl_cpu_mv_bf16_avx512bf16(&a, 0, rows);
        r = (uint64_t)(int64_t)g_out[tid][rows - 1];
    } else {
        r = mv_loop(w, (size_t)rows, g_loop != 3, g_loop == 4);
    }
    g_sink[tid] = r;
}

static void *worker(void *arg)
{
    int tid = (int)(intptr_t)arg;
    for (;;) {
        pthread_barrier_wait(&g_go);
        if (g_stop)
            return NULL;
        run_share(tid);
        pthread_barrier_wait(&g_done);
    }
}

static double run_loop(int loop)
{
    if (loop == 0) {
        tl_mem_region all = {g_w, g_share * (size_t)g_threads};
        return tl_bandwidth_read(&all, 1, g_threads);
    }
    g_loop = loop;
    double t0 = now_s();
    pthread_barrier_wait(&g_go);
    run_share(0);
    pthread_barrier_wait(&g_done);
    return now_s() - t0;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 300;
    if (rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: stream_vs_read [rounds 1..%d]\n", MAX_ROUNDS);
        return 2;
    }
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512bf16")) {
        fprintf(stderr, "stream_vs_read: this CPU has no AVX-512 BF16\n");
        return 1;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    g_threads = cores < 1 ? 1 : cores > MAX_THREADS ? MAX_THREADS : (int)cores;
    g_w = mmap(NULL, BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g_w == MAP_FAILED) {
        fprintf(stderr, "stream_vs_read: cannot map 1 GiB\n");
        return 1;
    }
    madvise(g_w, BYTES, MADV_HUGEPAGE);
    g_share = BYTES / (size_t)g_threads / (COLS * 2) * (COLS * 2);
    for (int i = 0; i < g_threads; i++)
        if (!(g_out[i] = malloc(g_share / (COLS * 2) * sizeof(float)))) {
            fprintf(stderr, "stream_vs_read: out of memory\n");
            return 1;
        }
    for (size_t i = 0; i < BYTES / 2; i++)   /* bf16 values in [1, 2): no overflow in the sums */
        g_w[i] = (uint16_t)(0x3f80 | (((i * 2654435761u) >> 20) & 0x7f));
    for (int i = 0; i < COLS; i++)
        g_x[i] = 0x3c00 | (uint16_t)(i & 0x7f);
    pthread_barrier_init(&g_go, NULL, (unsigned)g_threads);
    pthread_barrier_init(&g_done, NULL, (unsigned)g_threads);
    pthread_t th[MAX_THREADS];
    for (int i = 1; i < g_threads; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i)) {
            fprintf(stderr, "stream_vs_read: cannot start thread %d\n", i);
            return 1;
        }
    static double ratio[2][LOOPS][MAX_ROUNDS];
    int n[2] = {0, 0};
    for (int r = 0; r < rounds; r++) {
        double t[LOOPS];
        for (int l = 0; l < LOOPS; l++)
            t[l] = run_loop(l);
        int fast = (double)BYTES / t[0] / 1e9 >= 45.0;
        for (int l = 1; l < LOOPS; l++)
            ratio[fast][l][n[fast]] = t[l] / t[0];
        n[fast]++;
    }
    g_stop = 1;
    pthread_barrier_wait(&g_go);
    for (int i = 1; i < g_threads; i++)
        pthread_join(th[i], NULL);
    printf("1 GiB, %d threads, one contiguous share each: median of (loop time / the plain read's in the same "
           "round)\n",
           g_threads);
    for (int f = 0; f < 2; f++) {
        printf("read %s 45 GB/s (%d rounds):", f ? "at or above" : "below", n[f]);
        for (int l = 1; l < LOOPS && n[f]; l++)
            printf("  %s %.3f", loop_name[l], tl_median(ratio[f][l], n[f]));
        printf("\n");
    }
    return 0;
}
