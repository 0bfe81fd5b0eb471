/* Internal to the CUDA backend and its tests: counters that show which path a pass took, so
 * tests can check the decode graph is really captured and replayed rather than assume it. */
#ifndef TL_KERNELS_CUDA_H
#define TL_KERNELS_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest head_dim the attention kernel handles (tl_backend_ops.accepts refuses more). */
#define TL_CUDA_MAX_HEAD_DIM 256

/* Indices of tl_cuda_stats.variants: launches of each matrix-vector kernel variant issued by
 * the host (a replayed graph adds none), by rows per block 1, 2, 4, 8 (gate/up: 1, 2, 4). */
enum { TL_CUDA_V_MATVEC = 0, TL_CUDA_V_MULTI = 4, TL_CUDA_V_GATE_UP = 8, TL_CUDA_V_COUNT = 11 };

typedef struct tl_cuda_stats {
    long passes;        /* begin_pass..end_pass brackets seen */
    long eager_decode;  /* T == 1 passes run op by op (first steps, shape changes) */
    long captures;      /* decode graphs captured */
    long replays;       /* decode passes served by replaying the graph */
    long errors;        /* CUDA errors seen by operations (the first on stderr; sync fails after) */
    long variants[TL_CUDA_V_COUNT];  /* k_matvec<R,1>, k_matvec_multi<R>, k_gate_up_swiglu<R> */
    long long weight_bytes;          /* device memory held by uploaded weights (Q8_0/Q4_0: their blocks' bytes) */
    long quant_launches;             /* k_matvec_q launches issued by the host (Q8_0/Q4_0 weights) */
} tl_cuda_stats;

void tl_cuda_get_stats(void *ctx, tl_cuda_stats *out);
/* Device time between the last begin_pass and end_pass, from CUDA events; < 0 if none. */
double tl_cuda_pass_device_ms(void *ctx);
/* The device memory's read bandwidth in bytes/s: a kernel streaming a buffer far larger than
 * L2 with 16-byte evict-first loads (as the decode GEMVs read weights), timed with events, the
 * best of several runs within about budget_s seconds; <= 0 if it failed. The floor of a
 * decode step is its bytes / this (the backend's `bandwidth` op is a copy: read + write). */
double tl_cuda_read_bandwidth(void *ctx, double budget_s);
/* For tests: x [T, cols] (device memory, cols a multiple of 32) quantized to Q8_0 per 32 values
 * by the kernel products with Q8_0/Q4_0 weights use (k_quantize_q8), copied to the host: q
 * [T, cols] and d [T, cols / 32] (each scale widened from f16). 0, or -1 on a CUDA error. */
int tl_cuda_quantize_x(void *ctx, const float *x, int T, int cols, int8_t *q, float *d);

/* Opens cuBLAS (backend.cu loads it on first use rather than at process start). 0, or -1 with
 * a one-line reason in msg. Needs no device. */
int tl_cuda_load_blas(char *msg, size_t n);

#ifdef __cplusplus
}
#endif

#endif
