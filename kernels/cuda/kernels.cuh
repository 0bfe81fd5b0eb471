/* Device kernels of the CUDA backend. Weights are bf16 (raw uint16 bits), activations fp32.
 *
 * Every activation pointer travels as a dptr: a base and a per-position stride. Eagerly run
 * operations pass stride 0. Inside the captured decode graph, a pointer the engine offsets by
 * the position (a KV-cache row) is base + pos * stride, where pos is read from device memory
 * that is set before each replay, so one graph serves every position. */
#ifndef TL_KERNELS_CUDA_KERNELS_CUH
#define TL_KERNELS_CUDA_KERNELS_CUH

#include <stdint.h>
#include <cuda_runtime.h>

struct dptr {
    float *base;
    long long stride;
};

__device__ __forceinline__ float *tl_rs(dptr p, const int *posp)
{
    return p.stride ? p.base + (long long)(*posp) * p.stride : p.base;
}

__device__ __forceinline__ int tl_pos(const int *posp, int pos_host)
{
    return posp ? *posp : pos_host;
}

__device__ __forceinline__ float bf_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }
__device__ __forceinline__ float bf(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
__device__ __forceinline__ float wval(uint16_t h) { return bf(h); }
__device__ __forceinline__ float wval(float f) { return f; }

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Sum over a block of at most 1024 threads; every thread gets the total. */
__device__ __forceinline__ float block_sum(float v)
{
    __shared__ float part[32];
    __shared__ float total;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float s = lane < (int)((blockDim.x + 31) >> 5) ? part[lane] : 0.0f;
        s = warp_sum(s);
        if (lane == 0)
            total = s;
    }
    __syncthreads();
    return total;
}

struct step_ids {
    int v[8];
};

__global__ void k_set_step(int *pos, int p, int *ids, step_ids s, int n)
{
    *pos = p;
    for (int i = 0; i < n; i++)
        ids[i] = s.v[i];
}

/* ids == NULL: one token whose id is id_val. Out-of-range ids give a zero row. */
template <typename WT>
__global__ void k_embed(dptr xp, const int *posp, const WT *table, const int *ids, int id_val,
                        int rows, int cols)
{
    int t = blockIdx.x;
    int id = ids ? ids[t] : id_val;
    float *x = tl_rs(xp, posp) + (size_t)t * cols;
    bool ok = id >= 0 && id < rows;
    const WT *r = table + (size_t)(ok ? id : 0) * cols;
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        x[j] = ok ? wval(r[j]) : 0.0f;
}

__global__ void k_rmsnorm(dptr op, dptr xp, const int *posp, const float *w, int n, float eps)
{
    int t = blockIdx.x;
    const float *x = tl_rs(xp, posp) + (size_t)t * n;
    float *o = tl_rs(op, posp) + (size_t)t * n;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        ss += x[i] * x[i];
    ss = block_sum(ss);
    float scale = 1.0f / sqrtf(ss / (float)n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        o[i] = x[i] * scale * w[i];
}

/* One head at position pos, the block's threads taking the pairs (i, i + half) in turn: each
 * turned by the angle pos * inv[i]. */
__device__ __forceinline__ void rope_head(float *v, int half, int pos, const float *inv)
{
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        float angle = (float)pos * inv[i], s, c;
        sincosf(angle, &s, &c);
        float a = v[i], b = v[i + half];
        v[i] = a * c - b * s;
        v[i + half] = b * c + a * s;
    }
}

/* grid (n_heads, T) */
__global__ void k_rope(dptr xp, const int *posp, int pos_host, int n_heads, int head_dim, const float *inv)
{
    int h = blockIdx.x, t = blockIdx.y, half = head_dim / 2;
    int pos = tl_pos(posp, pos_host) + t;
    float *v = tl_rs(xp, posp) + ((size_t)t * n_heads + h) * head_dim;
    rope_head(v, half, pos, inv);
}

/* Causal GQA attention, grid (n_heads, T), 256 threads. Each warp runs an online softmax over
 * every 8th cache row, then the block merges the eight partial results; no buffer depends on
 * the context length, so the decode graph works at any position. D = ceil(head_dim / 32). */
template <int D>
__global__ void __launch_bounds__(256) k_attention(dptr op, dptr qp, dptr kp, dptr vp, const int *posp,
                                                   int pos_host, int n_heads, int n_kv, int hd, float scale)
{
    constexpr int NW = 8;
    int h = blockIdx.x, t = blockIdx.y, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int n_ctx = tl_pos(posp, pos_host) + t + 1;
    int kvh = h / (n_heads / n_kv), kv_dim = n_kv * hd;
    const float *q = tl_rs(qp, posp) + ((size_t)t * n_heads + h) * hd;
    const float *kb = tl_rs(kp, posp) + (size_t)kvh * hd;
    const float *vb = tl_rs(vp, posp) + (size_t)kvh * hd;
    float qr[D], acc[D];
#pragma unroll
    for (int j = 0; j < D; j++) {
        int d = lane + 32 * j;
        qr[j] = d < hd ? q[d] : 0.0f;
        acc[j] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    /* Four rows per warp per round: their loads and shuffle reductions are independent, so
     * they overlap; the softmax update then takes them in position order. */
    constexpr int U = 4;
    for (int p0 = warp; p0 < n_ctx; p0 += U * NW) {
        float s[U], vv[U][D];
#pragma unroll
        for (int u = 0; u < U; u++) {
            int p = p0 + u * NW;
            bool ok = p < n_ctx;
            const float *kr = kb + (size_t)(ok ? p : 0) * kv_dim, *vr = vb + (size_t)(ok ? p : 0) * kv_dim;
            float a = 0.0f;
#pragma unroll
            for (int j = 0; j < D; j++) {
                int d = lane + 32 * j;
                if (ok && d < hd) {
                    a += qr[j] * kr[d];
                    vv[u][j] = vr[d];
                } else {
                    vv[u][j] = 0.0f;
                }
            }
            s[u] = a;
        }
#pragma unroll
        for (int u = 0; u < U; u++)
            s[u] = warp_sum(s[u]) * scale;
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (p0 + u * NW >= n_ctx)
                break;
            float mn = fmaxf(m, s[u]);
            float corr = expf(m - mn), e = expf(s[u] - mn);
            l = l * corr + e;
#pragma unroll
            for (int j = 0; j < D; j++)
                acc[j] = acc[j] * corr + e * vv[u][j];
            m = mn;
        }
    }
    __shared__ float sm_m[NW], sm_l[NW], sm_o[NW][D * 32];
    if (lane == 0) {
        sm_m[warp] = m;
        sm_l[warp] = l;
    }
#pragma unroll
    for (int j = 0; j < D; j++)
        sm_o[warp][lane + 32 * j] = acc[j];
    __syncthreads();
    float M = -INFINITY, L = 0.0f, wgt[NW];
#pragma unroll
    for (int w = 0; w < NW; w++)
        M = fmaxf(M, sm_m[w]);
#pragma unroll
    for (int w = 0; w < NW; w++) {
        wgt[w] = sm_m[w] == -INFINITY ? 0.0f : expf(sm_m[w] - M);
        L += sm_l[w] * wgt[w];
    }
    float *o = tl_rs(op, posp) + ((size_t)t * n_heads + h) * hd;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float s = 0.0f;
#pragma unroll
        for (int w = 0; w < NW; w++)
            s += sm_o[w][d] * wgt[w];
        o[d] = s / L;
    }
}

__global__ void k_swiglu(dptr gp, dptr up, const int *posp, int n)
{
    float *g = tl_rs(gp, posp);
    const float *u = tl_rs(up, posp);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float a = g[i];
        g[i] = a / (1.0f + expf(-a)) * u[i];
    }
}

__global__ void k_add(dptr xp, dptr yp, const int *posp, int n)
{
    float *x = tl_rs(xp, posp);
    const float *y = tl_rs(yp, posp);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        x[i] += y[i];
}

template <int TT>
__device__ __forceinline__ void dot8(float (&acc)[TT], uint4 w, const float *x, int v, int cols, int T)
{
#pragma unroll
    for (int t = 0; t < TT; t++) {
        if (t < T) {
            const float4 *xv = reinterpret_cast<const float4 *>(x + (size_t)t * cols) + 2 * v;
            float4 a = xv[0], b = xv[1];
            float s = acc[t];
            s = fmaf(bf_lo(w.x), a.x, s);
            s = fmaf(bf_hi(w.x), a.y, s);
            s = fmaf(bf_lo(w.y), a.z, s);
            s = fmaf(bf_hi(w.y), a.w, s);
            s = fmaf(bf_lo(w.z), b.x, s);
            s = fmaf(bf_hi(w.z), b.y, s);
            s = fmaf(bf_lo(w.w), b.z, s);
            s = fmaf(bf_hi(w.w), b.w, s);
            acc[t] = s;
        }
    }
}

/* out[t, row] = W[row, :] . x[t, :] for T <= TT tokens, rows blk*RPB.. of W. 256 threads =
 * 8 warps; RPB rows per block, 8 / RPB warps per row. Each lane streams 16-byte chunks (8 bf16)
 * of the row with evict-first loads, four in flight, so HBM stays busy; x stays in L1/L2.
 * Needs cols % 8 == 0 and 16-byte aligned x. */
template <int RPB, int TT>
__device__ __forceinline__ void matvec_block(const uint16_t *__restrict__ W, const float *x, dptr op,
                                             const int *posp, int rows, int cols, int T, int blk)
{
    constexpr int WPR = 8 / RPB;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int rloc = warp / WPR, wsub = warp % WPR;
    int row = blk * RPB + rloc;
    float acc[TT];
#pragma unroll
    for (int t = 0; t < TT; t++)
        acc[t] = 0.0f;
    if (row < rows) {
        const uint4 *wr = reinterpret_cast<const uint4 *>(W + (size_t)row * cols);
        int nvec = cols >> 3, stride = WPR * 32, v = wsub * 32 + lane;
        for (; v + 3 * stride < nvec; v += 4 * stride) {
            uint4 w0 = __ldcs(wr + v), w1 = __ldcs(wr + v + stride);
            uint4 w2 = __ldcs(wr + v + 2 * stride), w3 = __ldcs(wr + v + 3 * stride);
            dot8<TT>(acc, w0, x, v, cols, T);
            dot8<TT>(acc, w1, x, v + stride, cols, T);
            dot8<TT>(acc, w2, x, v + 2 * stride, cols, T);
            dot8<TT>(acc, w3, x, v + 3 * stride, cols, T);
        }
        for (; v < nvec; v += stride)
            dot8<TT>(acc, __ldcs(wr + v), x, v, cols, T);
    }
    __shared__ float part[TT][8];
#pragma unroll
    for (int t = 0; t < TT; t++) {
        float s = warp_sum(acc[t]);
        if (lane == 0)
            part[t][warp] = s;
    }
    __syncthreads();
    if (row < rows && wsub == 0 && lane < TT && lane < T) {
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < WPR; i++)
            s += part[lane][rloc * WPR + i];
        tl_rs(op, posp)[(size_t)lane * rows + row] = s;
    }
}

template <int RPB, int TT>
__global__ void __launch_bounds__(256) k_matvec(const uint16_t *__restrict__ W, dptr xp, dptr op,
                                                const int *posp, int rows, int cols, int T)
{
    matvec_block<RPB, TT>(W, tl_rs(xp, posp), op, posp, rows, cols, T, blockIdx.x);
}

/* Up to three matrices that read the same x (q/k/v, gate/up) in one launch: the blocks of
 * segment i start at first[i]. One launch instead of three, and no tail between them. */
struct mv_segs {
    const uint16_t *W[3];
    dptr out[3];
    int rows[3], first[3], n;
};

template <int RPB>
__global__ void __launch_bounds__(256) k_matvec_multi(mv_segs sg, dptr xp, const int *posp, int cols)
{
    int b = blockIdx.x;
    if (sg.n > 2 && b >= sg.first[2])
        matvec_block<RPB, 1>(sg.W[2], tl_rs(xp, posp), sg.out[2], posp, sg.rows[2], cols, 1, b - sg.first[2]);
    else if (sg.n > 1 && b >= sg.first[1])
        matvec_block<RPB, 1>(sg.W[1], tl_rs(xp, posp), sg.out[1], posp, sg.rows[1], cols, 1, b - sg.first[1]);
    else
        matvec_block<RPB, 1>(sg.W[0], tl_rs(xp, posp), sg.out[0], posp, sg.rows[0], cols, 1, b);
}

/* The MLP's gate and up rows r.. of one block, then gate[r] = silu(gate) * up and up[r] = up:
 * matmul, matmul, swiglu in one launch. R rows of each matrix per block, 4 / R warps per row. */
template <int R>
__global__ void __launch_bounds__(256) k_gate_up_swiglu(const uint16_t *__restrict__ Wg,
                                                        const uint16_t *__restrict__ Wu, dptr xp, dptr gp,
                                                        dptr up, const int *posp, int rows, int cols)
{
    constexpr int WPR = 8 / (2 * R);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int vrow = warp / WPR, wsub = warp % WPR;   /* vrow < R: gate rows, else up rows */
    int row = blockIdx.x * R + vrow % R;
    const float *x = tl_rs(xp, posp);
    float acc[1] = {0.0f};
    if (row < rows) {
        const uint4 *wr = reinterpret_cast<const uint4 *>((vrow < R ? Wg : Wu) + (size_t)row * cols);
        int nvec = cols >> 3, stride = WPR * 32, v = wsub * 32 + lane;
        for (; v + 3 * stride < nvec; v += 4 * stride) {
            uint4 w0 = __ldcs(wr + v), w1 = __ldcs(wr + v + stride);
            uint4 w2 = __ldcs(wr + v + 2 * stride), w3 = __ldcs(wr + v + 3 * stride);
            dot8<1>(acc, w0, x, v, cols, 1);
            dot8<1>(acc, w1, x, v + stride, cols, 1);
            dot8<1>(acc, w2, x, v + 2 * stride, cols, 1);
            dot8<1>(acc, w3, x, v + 3 * stride, cols, 1);
        }
        for (; v < nvec; v += stride)
            dot8<1>(acc, __ldcs(wr + v), x, v, cols, 1);
    }
    __shared__ float part[8];
    float s = warp_sum(acc[0]);
    if (lane == 0)
        part[warp] = s;
    __syncthreads();
    int r = blockIdx.x * R + threadIdx.x;
    if (threadIdx.x < R && r < rows) {
        float g = 0.0f, u = 0.0f;
#pragma unroll
        for (int i = 0; i < WPR; i++) {
            g += part[threadIdx.x * WPR + i];
            u += part[(R + threadIdx.x) * WPR + i];
        }
        tl_rs(up, posp)[r] = u;
        tl_rs(gp, posp)[r] = g / (1.0f + expf(-g)) * u;
    }
}

/* x += y, then out = rmsnorm(x) * w: one row, one block, the same arithmetic as k_add followed
 * by k_rmsnorm with this block size. */
__global__ void k_add_rmsnorm(dptr xp, dptr yp, dptr op, const int *posp, const float *w, int n, float eps)
{
    float *x = tl_rs(xp, posp), *o = tl_rs(op, posp);
    const float *y = tl_rs(yp, posp);
    float ss = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = x[i] + y[i];
        x[i] = v;
        ss += v * v;
    }
    ss = block_sum(ss);
    float scale = 1.0f / sqrtf(ss / (float)n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        o[i] = x[i] * scale * w[i];
}

/* Two RoPEs of one position (q and k) in one launch: blocks below n1 rotate a, the rest b. */
__global__ void k_rope2(dptr ap, int n1, dptr bp, const int *posp, int pos_host, int head_dim, const float *inv)
{
    int h = blockIdx.x, half = head_dim / 2;
    int pos = tl_pos(posp, pos_host);
    float *v = h < n1 ? tl_rs(ap, posp) + (size_t)h * head_dim : tl_rs(bp, posp) + (size_t)(h - n1) * head_dim;
    rope_head(v, half, pos, inv);
}

/* Any shape: a warp per row, scalar loads. T <= 16. */
template <typename WT>
__global__ void k_matvec_any(const WT *__restrict__ W, dptr xp, dptr op, const int *posp, int rows,
                             int cols, int T)
{
    int lane = threadIdx.x & 31;
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows)
        return;
    const float *x = tl_rs(xp, posp);
    float *out = tl_rs(op, posp);
    const WT *wr = W + (size_t)row * cols;
    for (int t = 0; t < T; t++) {
        float s = 0.0f;
        for (int c = lane; c < cols; c += 32)
            s = fmaf(wval(wr[c]), x[(size_t)t * cols + c], s);
        s = warp_sum(s);
        if (lane == 0)
            out[(size_t)t * rows + row] = s;
    }
}

/* TL_CUDA_FAULT_AT_PASS: a store through p (nullptr): an illegal-address fault, as a bug would. */
__global__ void k_fault(int *p)
{
    p[threadIdx.x] = 1;
}

/* Streams n 16-byte words with evict-first loads, four in flight per thread; the XOR keeps the
 * loads (the store is practically never taken). The read-bandwidth probe. */
__global__ void __launch_bounds__(256) k_read(const uint4 *__restrict__ p, size_t n, unsigned *sink)
{
    size_t stride = (size_t)gridDim.x * blockDim.x, i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    unsigned acc = 0;
    for (; i + 3 * stride < n; i += 4 * stride) {
        uint4 a = __ldcs(p + i), b = __ldcs(p + i + stride), c = __ldcs(p + i + 2 * stride),
              d = __ldcs(p + i + 3 * stride);
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
    }
    for (; i < n; i += stride) {
        uint4 a = __ldcs(p + i);
        acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (acc == 0x9e3779b9u)
        sink[0] = acc;
}

__global__ void k_f32_to_bf16(uint16_t *out, const float *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t u = __float_as_uint(x[i]);
        if ((u & 0x7fffffffu) > 0x7f800000u)
            out[i] = (uint16_t)((u >> 16) | 0x40);
        else
            out[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
}

#endif
