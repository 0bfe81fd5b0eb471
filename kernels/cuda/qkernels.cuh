/* Kernels for Q8_0 and Q4_0 weights (llama.cpp's blocks, tokenloop/quant.h): the definition of
 * kernels/cpu/qmm.c on the GPU. x is first quantized to Q8_0 per 32 values exactly as
 * tl_quantize_row does (k_quantize_q8), then each weight block contributes its exact integer
 * dot product with x's block times dw * dx, summed in fp32 (k_matvec_q).
 *
 * These kernels are written to be plainly correct, not fast: a warp per weight row, a lane per
 * block, a prefill handled as up to 8 tokens per launch (the weights are read once per 8
 * tokens). They are not a tuned GEMM/GEMV, and the decode step's shared launches (q/k/v,
 * gate/up/SwiGLU) are not used with them (backend.cu's mv_ok). NOTE: written and compiled
 * without a GPU; tests/gpu/test_cuda_quant.c and `test_cuda_engine quant` are what checks them.
 *
 * Device layout of a quantized matrix [rows, cols], nb = cols / 32 blocks a row, repacked on
 * upload so every load is aligned:
 *   quants: rows * nb * QB bytes (QB = 32 for Q8_0: the int8 values; 16 for Q4_0: the nibble
 *           bytes as in the file, byte i holding element i (low) and i + 16 (high)),
 *   scales: rows * nb f16 scales (uint16), right after the quants.
 * QB is a multiple of 16, so the scales start 16-byte aligned; the total is exactly the
 * rows * tl_dtype_row_bytes of the file's blocks, the bytes a decode step counts. */
#ifndef TL_KERNELS_CUDA_QKERNELS_CUH
#define TL_KERNELS_CUDA_QKERNELS_CUH

#include <stdint.h>
#include <cuda_runtime.h>

#include "kernels.cuh"

enum { TL_QCUDA_Q8 = 0, TL_QCUDA_Q4 = 1 };

/* quant bytes per block on the device: 32 int8 (Q8_0) or 16 nibble bytes (Q4_0) */
__host__ __device__ constexpr int q_quant_bytes(int qt) { return qt == TL_QCUDA_Q8 ? 32 : 16; }

/* core/quant.c's tl_f16_to_f32, line for line. */
__device__ __forceinline__ float q_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f)
        return __uint_as_float(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return __uint_as_float(sign | ((exp + 112) << 23) | (man << 13));
}

/* core/quant.c's tl_f32_to_f16, line for line (lrintf in the default round-to-nearest-even
 * mode is __float2int_rn). */
__device__ __forceinline__ uint16_t q_f32_to_f16(float f)
{
    uint32_t u = __float_as_uint(f), sign = (u >> 16) & 0x8000, a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00);
    if (a >= 0x477ff000u)
        return (uint16_t)(sign | 0x7c00);
    if (a < 0x38800000u) {
        float v = __uint_as_float(a) * 0x1p24f;
        return (uint16_t)(sign | (uint32_t)__float2int_rn(v));
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1);
    return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

/* core/quant.c's clampf and round_away (the subtraction as __fsub_rn: never fused with the
 * multiplication before it). */
__device__ __forceinline__ float q_clampf(float v, float lo, float hi)
{
    return v >= lo ? (v <= hi ? v : hi) : lo;
}

__device__ __forceinline__ int q_round_away(float v)
{
    int i = (int)v;
    float frac = __fsub_rn(v, (float)i);
    return i + (frac >= 0.5f) - (frac <= -0.5f);
}

/* x [T, cols] (cols a multiple of 32) quantized to Q8_0 per 32 values, as tl_quantize_row
 * (core/quant.c's quantize_q8_0) does: amax over the block, d = amax / 127 and id = 1 / d in
 * fp32, q = round-half-away-from-zero of clamp(x * id, -127, 127), the scale kept as the f16
 * of d (q is computed with the fp32 id, not the rounded scale, as there). One warp a block,
 * lane j holding element j. Out: xq [T, cols] int8, xd [T, cols / 32] = the f16 scale
 * widened to fp32 (what the CPU's tl_cpu_pack_q8 keeps). */
__global__ void __launch_bounds__(256) k_quantize_q8(dptr xp, const int *posp, int8_t *xq, float *xd, int T,
                                                      int cols)
{
    int lane = threadIdx.x & 31;
    long long blk = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int nb = cols / 32;
    if (blk >= (long long)T * nb)
        return;   /* the whole warp: no shuffle below is left half-full */
    int t = (int)(blk / nb), b = (int)(blk % nb);
    const float v = tl_rs(xp, posp)[(size_t)t * cols + (size_t)b * 32 + lane];
    /* the CPU's running fmaxf from 0: NaN never wins, and max is exact in any order */
    float amax = fmaxf(0.0f, fabsf(v));
    for (int o = 16; o > 0; o >>= 1)
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    /* explicit round-to-nearest operations: the same single roundings as the C code, whatever
     * the compiler's contraction or fast-math settings */
    const float d = __fdiv_rn(amax, 127.0f), id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
    xq[(size_t)t * cols + (size_t)b * 32 + lane] = (int8_t)q_round_away(q_clampf(__fmul_rn(v, id), -127.0f, 127.0f));
    if (lane == 0)
        xd[(size_t)t * nb + b] = q_f16_to_f32(q_f32_to_f16(d));
}

/* The 32 signed weights of block blk as 8 words of 4 bytes each, in element order. */
template <int QT>
__device__ __forceinline__ void q_load_block(const uint8_t *__restrict__ Wq, size_t blk, int (&w)[8])
{
    if (QT == TL_QCUDA_Q8) {
        const uint4 *p = reinterpret_cast<const uint4 *>(Wq + blk * 32);
        uint4 a = __ldcs(p), c = __ldcs(p + 1);
        w[0] = (int)a.x; w[1] = (int)a.y; w[2] = (int)a.z; w[3] = (int)a.w;
        w[4] = (int)c.x; w[5] = (int)c.y; w[6] = (int)c.z; w[7] = (int)c.w;
    } else {
        /* byte i: element i in the low nibble, element i + 16 in the high one; each nibble
         * n in 0..15 becomes the signed byte n - 8 (__vsub4: per-byte, wrapping) */
        uint4 a = __ldcs(reinterpret_cast<const uint4 *>(Wq + blk * 16));
        unsigned v[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
        for (int k = 0; k < 4; k++) {
            w[k] = (int)__vsub4(v[k] & 0x0f0f0f0fu, 0x08080808u);
            w[4 + k] = (int)__vsub4((v[k] >> 4) & 0x0f0f0f0fu, 0x08080808u);
        }
    }
}

/* out[t, row] = sum over blocks b of (dw_b * dx_tb) * (integer dot product of the block's
 * weights with x's quantized block), for T <= TT tokens. A warp per row (8 rows per block of
 * 256 threads), lane l taking blocks l, l + 32, ...; fp32 accumulation, then a warp sum.
 * xq/xd: k_quantize_q8's output for these T tokens. Not tuned: see the top of this file. */
template <int QT, int TT>
__global__ void __launch_bounds__(256) k_matvec_q(const uint8_t *__restrict__ Wq, const uint16_t *__restrict__ Wd,
                                                  const int8_t *__restrict__ xq, const float *__restrict__ xd,
                                                  dptr op, const int *posp, int rows, int cols, int T)
{
    int lane = threadIdx.x & 31;
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows)
        return;   /* whole warps only */
    int nb = cols / 32;
    float acc[TT];
#pragma unroll
    for (int t = 0; t < TT; t++)
        acc[t] = 0.0f;
    for (int b = lane; b < nb; b += 32) {
        size_t blk = (size_t)row * nb + b;
        float dw = q_f16_to_f32(Wd[blk]);
        int w[8];
        q_load_block<QT>(Wq, blk, w);
#pragma unroll
        for (int t = 0; t < TT; t++) {
            if (t < T) {
                const int4 *xv = reinterpret_cast<const int4 *>(xq + (size_t)t * cols + (size_t)b * 32);
                int4 x0 = xv[0], x1 = xv[1];
                int s = 0;
                s = __dp4a(w[0], x0.x, s);
                s = __dp4a(w[1], x0.y, s);
                s = __dp4a(w[2], x0.z, s);
                s = __dp4a(w[3], x0.w, s);
                s = __dp4a(w[4], x1.x, s);
                s = __dp4a(w[5], x1.y, s);
                s = __dp4a(w[6], x1.z, s);
                s = __dp4a(w[7], x1.w, s);
                acc[t] += dw * xd[(size_t)t * nb + b] * (float)s;
            }
        }
    }
#pragma unroll
    for (int t = 0; t < TT; t++) {
        float s = warp_sum(acc[t]);
        if (lane == 0 && t < T)
            tl_rs(op, posp)[(size_t)t * rows + row] = s;
    }
}

/* Embedding rows of a quantized table, dequantized as tl_cpu_weight_at does (d * q in fp32:
 * the same single rounding, so the same bits). ids == NULL: one token, id_val. */
template <int QT>
__global__ void k_embed_q(dptr xp, const int *posp, const uint8_t *__restrict__ Wq, const uint16_t *__restrict__ Wd,
                          const int *ids, int id_val, int rows, int cols)
{
    int t = blockIdx.x;
    int id = ids ? ids[t] : id_val;
    float *x = tl_rs(xp, posp) + (size_t)t * cols;
    bool ok = id >= 0 && id < rows;
    int nb = cols / 32;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        if (!ok) {
            x[j] = 0.0f;
            continue;
        }
        size_t blk = (size_t)id * nb + j / 32;
        int i = j % 32, q;
        if (QT == TL_QCUDA_Q8)
            q = (int)(int8_t)Wq[blk * 32 + i];
        else
            q = (i < 16 ? Wq[blk * 16 + i] & 15 : Wq[blk * 16 + i - 16] >> 4) - 8;
        x[j] = q_f16_to_f32(Wd[blk]) * (float)q;
    }
}

#endif
