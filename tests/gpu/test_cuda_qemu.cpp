/* The Q8_0/Q4_0 kernels of kernels/cuda/qkernels.cuh, compiled as host C++ and run on the CPU
 * (no GPU needed; label cuda): qemu/cuda_runtime.h stands in for the CUDA headers, every
 * thread of a launch runs, and a warp's 32 lanes are 32 threads that meet in each shuffle.
 * This checks the kernels' own code (indexing, the device layout, the nibble order, the
 * quantizer's rounding) wherever a GPU is missing; it says nothing about the real hardware's
 * intrinsics, memory model or launch configuration, which tests/gpu/test_cuda_quant.c checks
 * on a device.
 *   k_quantize_q8: x's blocks byte for byte equal to tl_quantize_row (core/quant.c), the scale
 *     bit for bit, including ties, zero blocks, f16-subnormal and overflowing scales, NaN, inf.
 *   k_matvec_q: against the definition (kernels/cpu/qmm.c: sum over blocks of dw * dx * the
 *     integer dot product) computed in double, for T = 1..11 and shapes whose rows are not a
 *     multiple of 8 (the rows a launch block holds) and widths not a multiple of 256.
 *   k_embed_q: equal to tl_dequantize_row bit for bit, a zero row for an id out of range. */
#include <stdio.h>
#include <stdlib.h>

#include <thread>
#include <vector>

#include "cuda_runtime.h"   /* qemu/: the stand-in */

/* kernels.cuh needs the CUDA toolkit; qkernels.cuh uses three of its helpers, copied here. */
#define TL_KERNELS_CUDA_KERNELS_CUH
struct dptr {
    float *base;
    long long stride;
};
__device__ __forceinline__ float *tl_rs(dptr p, const int *posp)
{
    return p.stride ? p.base + (long long)(*posp) * p.stride : p.base;
}
__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

#include "cuda/qkernels.cuh"

extern "C" {
#include "tokenloop/quant.h"
}
#include "../common/tl_test.h"

thread_local qemu_dim3 threadIdx, blockIdx;
qemu_dim3 blockDim, gridDim;
float qemu_slots[32];
std::barrier<> *qemu_warp;

/* Runs f as a launch of grid blocks of `threads` threads: lane l of every warp, in order, on
 * thread l; all lanes finish a warp before the next starts. */
template <class F>
static void run(unsigned grid, unsigned threads, F f)
{
    blockDim = {threads, 1, 1};
    gridDim = {grid, 1, 1};
    std::barrier<> bar(32);
    qemu_warp = &bar;
    std::vector<std::thread> lanes;
    for (unsigned lane = 0; lane < 32; lane++)
        lanes.emplace_back([&, lane] {
            for (unsigned b = 0; b < grid; b++)
                for (unsigned w = 0; w < threads / 32; w++) {
                    blockIdx = {b, 0, 0};
                    threadIdx = {w * 32 + lane, 0, 0};
                    f();
                    bar.arrive_and_wait();
                }
        });
    for (auto &t : lanes)
        t.join();
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static float frand(void) /* uniform in [-1, 1) */
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}

static uint32_t bits(float f) { return __float_as_uint(f); }

/* x's quantization as the kernel writes it (a launch as backend.cu's launch_matmul_q makes) */
static void quantize(const float *x, int T, int cols, int8_t *xq, float *xd)
{
    long long nblk = (long long)T * (cols / 32);
    run((unsigned)((nblk + 7) / 8), 256, [&] { k_quantize_q8(dptr{(float *)x, 0}, nullptr, xq, xd, T, cols); });
}

/* kind 0: uniform; 1: each block at another magnitude, 2^-40 .. 2^30 (f16-subnormal scales, zero
 * scales, scales that overflow f16); 2: ties, zero blocks, NaN, inf */
static void check_quantize(int T, int cols, int kind)
{
    int nb = cols / 32;
    size_t n = (size_t)T * cols;
    float *x = (float *)malloc(sizeof(float) * n), *xd = (float *)malloc(sizeof(float) * T * nb);
    int8_t *xq = (int8_t *)malloc(n);
    for (size_t i = 0; i < n; i++) {
        size_t blk = i / 32;
        x[i] = frand();
        if (kind == 1)
            x[i] = ldexpf(x[i], (int)(blk % 71) - 40);
        if (kind == 2) {
            int j = (int)(i % 32);
            switch (blk % 6) {
            case 0: x[i] = j == 0 ? 127.0f : (float)(j - 16) + 0.5f; break;   /* d = 1: x * id lands on .5 */
            case 1: x[i] = 0.0f; break;
            case 2: x[i] = j == 5 ? NAN : x[i]; break;
            case 3: x[i] = j == 7 ? -INFINITY : x[i]; break;
            case 4: x[i] = j == 0 ? -254.0f : (float)(j - 16) + 0.5f * (float)(j & 1); break;   /* d = 2 */
            default: break;
            }
        }
    }
    quantize(x, T, cols, xq, xd);
    int bad_q = 0, bad_d = 0;
    for (int t = 0; t < T; t++)
        for (int b = 0; b < nb; b++) {
            tl_block_q8_0 blk;
            tl_quantize_row(TL_Q8_0, x + (size_t)t * cols + (size_t)b * 32, &blk, 32);
            if (memcmp(xq + (size_t)t * cols + (size_t)b * 32, blk.qs, 32) && bad_q++ < 3)
                fprintf(stderr, "quantize T=%d cols=%d kind %d: token %d block %d: bytes differ\n", T, cols, kind, t, b);
            if (bits(xd[(size_t)t * nb + b]) != bits(tl_f16_to_f32(blk.d)) && bad_d++ < 3)
                fprintf(stderr, "quantize T=%d cols=%d kind %d: token %d block %d: scale %a vs %a\n", T, cols, kind, t,
                        b, (double)xd[(size_t)t * nb + b], (double)tl_f16_to_f32(blk.d));
        }
    TL_CHECK_MSG(bad_q == 0 && bad_d == 0, "quantize T=%d cols=%d kind %d: %d blocks' bytes, %d scales differ", T, cols,
                 kind, bad_q, bad_d);
    free(x);
    free(xq);
    free(xd);
}

/* A random [rows, cols] matrix quantized by tl_quantize_row (the file's blocks) and the same in
 * the device layout (upload_quant in backend.cu: all quant bytes, then all scales). */
struct qmat {
    tl_dtype dt;
    int rows, cols, nb;
    uint8_t *blocks;   /* the file's blocks */
    uint8_t *dev;      /* the device layout */
    const uint16_t *scales() const { return (const uint16_t *)(dev + (size_t)rows * nb * qb()); }
    size_t qb() const { return dt == TL_Q8_0 ? 32 : 16; }
};

static qmat make_qmat(tl_dtype dt, int rows, int cols)
{
    qmat m;
    m.dt = dt;
    m.rows = rows;
    m.cols = cols;
    m.nb = cols / 32;
    size_t rb = tl_dtype_row_bytes(dt, cols), bb = tl_dtype_block_bytes(dt), nblk = (size_t)rows * m.nb;
    m.blocks = (uint8_t *)malloc(rb * rows);
    m.dev = (uint8_t *)aligned_alloc(16, (rb * rows + 15) / 16 * 16);
    float *row = (float *)malloc(sizeof(float) * cols);
    float s = 1.0f / sqrtf((float)cols);
    for (int r = 0; r < rows; r++) {
        for (int j = 0; j < cols; j++)
            row[j] = frand() * s * (1.0f + (float)(j / 32 % 5));   /* scales differ between blocks */
        tl_quantize_row(dt, row, m.blocks + (size_t)r * rb, cols);
    }
    for (size_t k = 0; k < nblk; k++) {
        memcpy(m.dev + k * m.qb(), m.blocks + k * bb + 2, m.qb());
        memcpy(m.dev + nblk * m.qb() + 2 * k, m.blocks + k * bb, 2);
    }
    free(row);
    return m;
}

static void free_qmat(qmat &m)
{
    free(m.blocks);
    free(m.dev);
}

/* weight j (0..31) of a block, as quant.h defines it */
static int wq(tl_dtype dt, const uint8_t *blk, int j)
{
    if (dt == TL_Q8_0)
        return (int8_t)blk[2 + j];
    return j < 16 ? (blk[2 + j] & 15) - 8 : (blk[2 + j - 16] >> 4) - 8;
}

static void check_matvec(tl_dtype dt, int rows, int cols, int T, int per_position)
{
    qmat m = make_qmat(dt, rows, cols);
    int nb = m.nb, pos = 3;
    size_t bb = tl_dtype_block_bytes(dt);
    float *x = (float *)malloc(sizeof(float) * T * cols), *xd = (float *)malloc(sizeof(float) * T * nb);
    int8_t *xq = (int8_t *)aligned_alloc(16, (size_t)T * cols);
    for (int i = 0; i < T * cols; i++)
        x[i] = frand();
    size_t out_n = (size_t)T * rows + (per_position ? (size_t)pos * rows : 0);
    float *out = (float *)calloc(out_n, sizeof(float));
    quantize(x, T, cols, xq, xd);
    /* launch_matmul_q's loop: up to 8 tokens a launch, TT = 1 for one token */
    unsigned g = (unsigned)((rows + 7) / 8);
    for (int t0 = 0; t0 < T; t0 += 8) {
        int tn = T - t0 < 8 ? T - t0 : 8;
        const int8_t *xqs = xq + (size_t)t0 * cols;
        const float *xds = xd + (size_t)t0 * nb;
        dptr os = {out + (size_t)t0 * rows, per_position ? (long long)rows : 0};
        const int *posp = per_position ? &pos : nullptr;
        if (dt == TL_Q8_0 && tn == 1)
            run(g, 256, [&] { k_matvec_q<TL_QCUDA_Q8, 1>(m.dev, m.scales(), xqs, xds, os, posp, rows, cols, tn); });
        else if (dt == TL_Q8_0)
            run(g, 256, [&] { k_matvec_q<TL_QCUDA_Q8, 8>(m.dev, m.scales(), xqs, xds, os, posp, rows, cols, tn); });
        else if (tn == 1)
            run(g, 256, [&] { k_matvec_q<TL_QCUDA_Q4, 1>(m.dev, m.scales(), xqs, xds, os, posp, rows, cols, tn); });
        else
            run(g, 256, [&] { k_matvec_q<TL_QCUDA_Q4, 8>(m.dev, m.scales(), xqs, xds, os, posp, rows, cols, tn); });
    }
    const float *got = out + (per_position ? (size_t)pos * rows : 0);
    /* The definition in double from x quantized by tl_quantize_row; and the same through
     * tl_dequantize_row's weights (exact in fp32: an f16 scale times a 4- or 8-bit integer),
     * which ties wq() to the project's reading of the blocks. The kernel sums at most
     * ceil(nb / 32) terms per lane, then 5 shuffle levels, each term two fp32 roundings:
     * |error| <= (ceil(nb / 32) + 7) * 2^-24 * sum |terms|; 2^-23 leaves a factor of 2. */
    double worst = 0, worst_tol = 0;
    int bad = 0;
    float *wrow = (float *)malloc(sizeof(float) * cols);
    for (int t = 0; t < T; t++)
        for (int r = 0; r < rows; r++) {
            const uint8_t *wr = m.blocks + (size_t)r * tl_dtype_row_bytes(dt, cols);
            tl_dequantize_row(dt, wr, wrow, cols);
            double def = 0, def2 = 0, mag = 0;
            for (int b = 0; b < nb; b++) {
                tl_block_q8_0 xb;
                tl_quantize_row(TL_Q8_0, x + (size_t)t * cols + (size_t)b * 32, &xb, 32);
                uint16_t dh;
                memcpy(&dh, wr + b * bb, 2);
                long s = 0;
                double s2 = 0;
                for (int j = 0; j < 32; j++) {
                    s += (long)wq(dt, wr + b * bb, j) * xb.qs[j];
                    s2 += (double)wrow[b * 32 + j] * xb.qs[j];
                }
                double term = (double)tl_f16_to_f32(dh) * tl_f16_to_f32(xb.d) * (double)s;
                def += term;
                def2 += s2 * tl_f16_to_f32(xb.d);
                mag += fabs(term);
            }
            TL_CHECK_MSG(fabs(def - def2) <= 1e-12 * (mag + 1e-30), "definition vs dequantized weights: %g vs %g", def,
                         def2);
            double tol = ((nb + 31) / 32 + 7) * 0x1p-23 * mag + 1e-30, e = fabs((double)got[(size_t)t * rows + r] - def);
            if (e > tol && bad++ < 3)
                fprintf(stderr, "matvec %s [%d, %d] T=%d: token %d row %d: %.9g vs %.9g (tol %g)\n", tl_dtype_name(dt),
                        rows, cols, T, t, r, (double)got[(size_t)t * rows + r], def, tol);
            if (e / tol > worst / (worst_tol > 0 ? worst_tol : 1)) {
                worst = e;
                worst_tol = tol;
            }
        }
    TL_CHECK_MSG(bad == 0, "matvec %s [%d, %d] T=%d%s: %d outputs outside the bound", tl_dtype_name(dt), rows, cols, T,
                 per_position ? " (per-position output)" : "", bad);
    printf("matvec %-4s [%4d, %5d] T=%2d%s: worst error %.3g of a bound %.3g\n", tl_dtype_name(dt), rows, cols, T,
           per_position ? " per-position" : "", worst, worst_tol);
    free(wrow);
    free(x);
    free(xq);
    free(xd);
    free(out);
    free_qmat(m);
}

static void check_embed(tl_dtype dt, int rows, int cols)
{
    qmat m = make_qmat(dt, rows, cols);
    int ids[] = {0, rows - 1, -1, rows, rows / 2}, T = 5;
    float *x = (float *)malloc(sizeof(float) * T * cols), *ref = (float *)malloc(sizeof(float) * cols);
    run((unsigned)T, 256, [&] {
        if (dt == TL_Q8_0)
            k_embed_q<TL_QCUDA_Q8>(dptr{x, 0}, nullptr, m.dev, m.scales(), ids, 0, rows, cols);
        else
            k_embed_q<TL_QCUDA_Q4>(dptr{x, 0}, nullptr, m.dev, m.scales(), ids, 0, rows, cols);
    });
    for (int t = 0; t < T; t++) {
        bool ok = ids[t] >= 0 && ids[t] < rows;
        if (ok)
            tl_dequantize_row(dt, m.blocks + (size_t)ids[t] * tl_dtype_row_bytes(dt, cols), ref, cols);
        else
            memset(ref, 0, sizeof(float) * cols);
        TL_CHECK_MSG(!memcmp(ref, x + (size_t)t * cols, sizeof(float) * cols), "embed %s [%d, %d] id %d",
                     tl_dtype_name(dt), rows, cols, ids[t]);
    }
    /* one token, id from the argument (the decode step's eager launch) */
    run(1, 256, [&] {
        if (dt == TL_Q8_0)
            k_embed_q<TL_QCUDA_Q8>(dptr{x, 0}, nullptr, m.dev, m.scales(), nullptr, 2, rows, cols);
        else
            k_embed_q<TL_QCUDA_Q4>(dptr{x, 0}, nullptr, m.dev, m.scales(), nullptr, 2, rows, cols);
    });
    tl_dequantize_row(dt, m.blocks + 2 * tl_dtype_row_bytes(dt, cols), ref, cols);
    TL_CHECK_MSG(!memcmp(ref, x, sizeof(float) * cols), "embed %s one id", tl_dtype_name(dt));
    free(x);
    free(ref);
    free_qmat(m);
}

int main(void)
{
    check_quantize(1, 32, 0);
    check_quantize(3, 288, 0);
    check_quantize(2, 4096, 1);
    check_quantize(5, 192, 2);
    tl_dtype dts[] = {TL_Q8_0, TL_Q4_0};
    for (tl_dtype dt : dts) {
        check_matvec(dt, 5, 32, 1, 0);
        check_matvec(dt, 37, 288, 1, 0);     /* rows not a multiple of 8, width not of 256 */
        check_matvec(dt, 64, 1056, 1, 1);    /* 33 blocks: lane 0 takes two; output at base + pos * rows */
        check_matvec(dt, 13, 4128, 1, 0);
        check_matvec(dt, 37, 288, 3, 0);
        check_matvec(dt, 9, 96, 8, 0);
        check_matvec(dt, 21, 544, 11, 0);    /* 8 + 3 tokens: two launches */
        check_embed(dt, 7, 288);
    }
    return TL_TEST_END("test_cuda_qemu");
}
