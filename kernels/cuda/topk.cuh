/* On-device selection of the k best scores (tokenloop/topk.h semantics) and the softmax sum, so
 * a decode step hands the host k ids instead of 128,256 floats. Two launches: each block sorts a
 * chunk of 2,048 scores in shared memory (bitonic) and keeps its k best, its max and its sum of
 * exp(score - max); one block then sorts the survivors and folds the sums together. */
#ifndef TL_KERNELS_CUDA_TOPK_CUH
#define TL_KERNELS_CUDA_TOPK_CUH

#include <limits.h>
#include <math.h>
#include <cuda_runtime.h>

constexpr int TOPK_CHUNK = 2048;      /* scores per block in the first launch */
constexpr int TOPK_MERGE = 4096;      /* survivors the second launch can sort */
constexpr int TOPK_THREADS = 1024;

/* ranks a before b: larger score, then lower index (NaN was mapped to -inf on load) */
__device__ __forceinline__ bool topk_before(float va, int ia, float vb, int ib)
{
    return va > vb || (va == vb && ia < ib);
}

/* Sorts N (a power of two) pairs in shared memory, best first. */
template <int N>
__device__ void topk_bitonic(float *v, int *id)
{
    for (int size = 2; size <= N; size <<= 1)
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            for (int t = threadIdx.x; t < N / 2; t += blockDim.x) {
                int lo = 2 * t - (t & (stride - 1)), hi = lo + stride;
                bool best_first = (lo & size) == 0;
                bool swap = best_first ? topk_before(v[hi], id[hi], v[lo], id[lo])
                                       : topk_before(v[lo], id[lo], v[hi], id[hi]);
                if (swap) {
                    float tv = v[lo]; v[lo] = v[hi]; v[hi] = tv;
                    int ti = id[lo]; id[lo] = id[hi]; id[hi] = ti;
                }
            }
            __syncthreads();
        }
}

/* Sum over the block of a per-thread double; valid in thread 0. */
__device__ double topk_block_sum(double x, double *scratch)
{
    for (int o = 16; o > 0; o >>= 1)
        x += __shfl_xor_sync(0xffffffffu, x, o);
    int w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    if ((threadIdx.x & 31) == 0)
        scratch[w] = x;
    __syncthreads();
    double s = 0;
    if (threadIdx.x == 0)
        for (int i = 0; i < nw; i++)
            s += scratch[i];
    __syncthreads();
    return s;
}

__global__ void __launch_bounds__(TOPK_THREADS)
topk_chunks(const float *x, int n, int k, float *cv, int *ci, float *bmax, double *bsum)
{
    __shared__ float v[TOPK_CHUNK];
    __shared__ int id[TOPK_CHUNK];
    __shared__ double scratch[32];
    int base = blockIdx.x * TOPK_CHUNK;
    for (int t = threadIdx.x; t < TOPK_CHUNK; t += blockDim.x) {
        int g = base + t;
        float f = g < n ? x[g] : -INFINITY;
        v[t] = isnan(f) ? -INFINITY : f;
        id[t] = g < n ? g : INT_MAX;
    }
    __syncthreads();
    topk_bitonic<TOPK_CHUNK>(v, id);
    float mx = v[0];
    double s = 0;
    if (mx > -INFINITY)
        for (int t = threadIdx.x; t < TOPK_CHUNK; t += blockDim.x)
            if (id[t] != INT_MAX)
                s += exp((double)v[t] - (double)mx);
    s = topk_block_sum(s, scratch);
    for (int t = threadIdx.x; t < k; t += blockDim.x) {
        cv[blockIdx.x * k + t] = v[t];
        ci[blockIdx.x * k + t] = id[t];
    }
    if (threadIdx.x == 0) {
        bmax[blockIdx.x] = mx;
        bsum[blockIdx.x] = s;
    }
}

/* out: k floats (scores), then k ints (ids), then one double (the sum), 8-byte aligned. */
__global__ void __launch_bounds__(TOPK_THREADS)
topk_merge(const float *cv, const int *ci, const float *bmax, const double *bsum, int nb, int k, char *out)
{
    __shared__ float v[TOPK_MERGE];
    __shared__ int id[TOPK_MERGE];
    __shared__ double scratch[32];
    int m = nb * k;
    for (int t = threadIdx.x; t < TOPK_MERGE; t += blockDim.x) {
        v[t] = t < m ? cv[t] : -INFINITY;
        id[t] = t < m ? ci[t] : INT_MAX;
    }
    __syncthreads();
    topk_bitonic<TOPK_MERGE>(v, id);
    float mx = v[0];
    double s = 0;
    if (mx > -INFINITY)
        for (int b = threadIdx.x; b < nb; b += blockDim.x)
            if (bmax[b] > -INFINITY)
                s += bsum[b] * exp((double)bmax[b] - (double)mx);
    s = topk_block_sum(s, scratch);
    float *ov = (float *)out;
    int *oi = (int *)(out + sizeof(float) * k);
    for (int t = threadIdx.x; t < k; t += blockDim.x) {
        ov[t] = v[t];
        oi[t] = id[t];
    }
    if (threadIdx.x == 0)
        *(double *)(out + ((2 * sizeof(float) * k + 7) & ~(size_t)7)) = s;
}

#endif
