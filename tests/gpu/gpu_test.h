/* What the op-level CUDA tests share: the backend under test, a seeded random stream, and
 * moving floats to and from its buffers. Each test file includes it once (file-scope state);
 * one that wants its own random values sets rng first. */
#ifndef TL_TESTS_GPU_TEST_H
#define TL_TESTS_GPU_TEST_H

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>

#include "../common/tl_test.h"
#include "tokenloop/backend.h"

static const tl_backend_ops *be;   /* the CUDA backend and its context */
static void *ctx;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static inline float frand(void) /* uniform in [-1, 1) */
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}

static inline float *host_rand(size_t n)
{
    float *p = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++)
        p[i] = frand();
    return p;
}

static inline float *dev_from(const float *h, size_t n)
{
    float *d = be->alloc(ctx, n);
    TL_CHECK_INT(be->sync(ctx, NULL), 0); /* alloc zeroes on the backend's stream */
    cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaDeviceSynchronize();
    return d;
}

static inline float *host_of(const float *d, size_t n)
{
    float *h = malloc(sizeof(float) * n);
    be->to_host(ctx, h, d, n);
    return h;
}

/* max|a - b| / max|b| */
static inline double rel_err(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num = fmax(num, fabs((double)a[i] - b[i]));
        den = fmax(den, fabs((double)b[i]));
    }
    return den > 0 ? num / den : num;
}

#endif
