/* A decode step (one token) with bf16 weights for the sets that widen weights to fp32 in
 * registers (mm_avx2.c, mm_avx512.c), included after mm_tmpl.h and using its vector vocabulary.
 * Bound by memory, so the loop's one job is to keep the weights streaming, as in
 * mv_avx512bf16.c: each thread's rows are one sequential stream, one row at a time, with a
 * software prefetch into L2 a fixed lead ahead. x stays fp32: 4 bytes a column, so a row of 4096
 * or more (down_proj's 8192: 32 KiB of x) would push x out of L1 beside the stream, and goes in
 * tiles of four rows instead, each x vector loaded once for the four.
 * mm_tmpl.h's tiles of four rows for every width (four streams a thread, prefetching a tile
 * ahead into L1) ran a 1B-shape decode step at 1.25-1.29x a plain read of its weights at 34-35
 * GB/s and 1.97-2.00x at 59-65 GB/s with the avx2 set; this, 1.06-1.08x and 1.43-1.47x (57-60 ms
 * a step, from 77-81; `TL_CPU_ISA=avx2 tokenloop bench --synthetic llama-3.2-1b`, the two builds
 * alternated). The avx512 set (AVX-512F without BF16): 1.23-1.29x -> 1.09-1.13x at 32-36 GB/s,
 * 1.89x at 58 GB/s -> 1.40x at 54. On this Zen 4 both are then bound by their own pace (the avx2
 * set makes eight loads a line of weights) when memory is fast. Leads at 36 GB/s (tools/bench/decode_vs_read.c, alternated in
 * one process, avx2): a row 4 KiB and 1 KiB 1.00-1.04x the read, 2 KiB 1.12-1.15x, 3 KiB
 * 1.04-1.08x; a tile's streams 2 KiB 1.11x, 1 KiB 1.12x, 512 B 1.18x. One 256-bit load widened in
 * registers (vpermq + unpack) instead of two 128-bit ones was slower (1.21x against 1.15x), and
 * so were two rows at a time (1.28x). On an AVX2-only EPYC (no AVX-512, about 25 GB/s with 2
 * threads) a 4 KiB lead left the 2048-wide products at 1.14-1.25x the read and 1 KiB at 0.98-1.05x
 * (`build/decode_vs_read 15` with the lead from the environment, 4096/1024/512/1536/2048 bytes
 * alternated twice: 512 B 1.04-1.09x, 1.5 KiB 1.05-1.13x, 2 KiB 1.14-1.25x); a whole step's TPOT
 * over its floor went from 1.14-1.22x to 1.01-1.03x (`TL_CPU_ISA` unset, `tokenloop bench
 * --synthetic llama-3.2-1b --prompt-tokens 16`, the two builds alternated 3 times: 98.6-127 ms ->
 * 92.5-98.9 ms). 1 KiB was as good as 4 on the Zen 4 above, so it is the lead for both. */
#define MV_PF_ROW 1024            /* lead of a one-row stream */
#define MV_PF_TILE 2048           /* lead of each of a tile's streams */
#define MV_TILE 4
#define MV_WIDE_X_BYTES (16 << 10)
#define MV_ROW_V (64 / MM_VL)     /* vectors in the 64 columns (two lines) a row step reads */
#define MV_TILE_V (32 / MM_VL)    /* vectors in the 32 columns (one line) a tile step reads */

MM_INLINE void mv_row(const tl_cpu_mm *a, int64_t r)
{
    const int64_t cols = a->cols;
    const uint16_t *w = (const uint16_t *)a->w + (size_t)r * (size_t)cols;
    const float *x = a->x;
    MM_VF acc[MV_ROW_V];
    for (int i = 0; i < MV_ROW_V; i++)
        acc[i] = MM_ZERO();
    int64_t k = 0;
    for (; k + 64 <= cols; k += 64) {
        const char *pf = (const char *)(w + k) + MV_PF_ROW;
        __builtin_prefetch(pf, 0, 2);   /* locality 2: into L2, as _MM_HINT_T1 */
        __builtin_prefetch(pf + 64, 0, 2);
        for (int i = 0; i < MV_ROW_V; i++)
            acc[i] = MM_FMA(MM_LOADW_BF16(w, k + MM_VL * i), MM_LOADX(x + k + MM_VL * i), acc[i]);
    }
    for (; k + MM_VL <= cols; k += MM_VL)
        acc[0] = MM_FMA(MM_LOADW_BF16(w, k), MM_LOADX(x + k), acc[0]);
    for (int i = 1; i < MV_ROW_V; i++)
        acc[0] = MM_ADD(acc[0], acc[i]);
    float s = MM_HSUM(acc[0]);
    for (; k < cols; k++)
        s += tl_cpu_bf16_to_f32(w[k]) * x[k];
    a->out[r] = s;
}

MM_INLINE void mv_tile(const tl_cpu_mm *a, int64_t r)
{
    const int64_t cols = a->cols;
    const float *x = a->x;
    const uint16_t *w[MV_TILE];
    MM_VF acc[MV_TILE][2];
    for (int i = 0; i < MV_TILE; i++) {
        w[i] = (const uint16_t *)a->w + (size_t)(r + i) * (size_t)cols;
        acc[i][0] = acc[i][1] = MM_ZERO();
    }
    int64_t k = 0;
    for (; k + 32 <= cols; k += 32) {
        for (int i = 0; i < MV_TILE; i++)
            __builtin_prefetch((const char *)(w[i] + k) + MV_PF_TILE, 0, 2);
        for (int h = 0; h < MV_TILE_V; h++) {
            MM_VF xv = MM_LOADX(x + k + MM_VL * h);
            for (int i = 0; i < MV_TILE; i++)
                acc[i][h & 1] = MM_FMA(MM_LOADW_BF16(w[i], k + MM_VL * h), xv, acc[i][h & 1]);
        }
    }
    for (int i = 0; i < MV_TILE; i++) {
        float s = MM_HSUM(MM_ADD(acc[i][0], acc[i][1]));
        for (int64_t kk = k; kk < cols; kk++)
            s += tl_cpu_bf16_to_f32(w[i][kk]) * x[kk];
        a->out[r + i] = s;
    }
}

/* bf16 weights: the loops above for one token, mm_tmpl.h's tiles otherwise. */
static void MM_CAT(tl_cpu_mv_bf16_, MM_ISA)(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    if (a->T != 1) {
        mm_rows(a, r0, r1, TL_BF16);
        return;
    }
    int64_t r = r0;
    if (a->cols * 4 >= MV_WIDE_X_BYTES)
        for (; r + MV_TILE <= r1; r += MV_TILE)
            mv_tile(a, r);
    for (; r < r1; r++)
        mv_row(a, r);
}
