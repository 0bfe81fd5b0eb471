/* AVX-512 BF16, one token (a decode step): out[r] = w_r . x for bf16 weights. The product is
 * bound by memory, so the loop's one job is to keep the weights streaming: each thread's rows
 * are contiguous and are read front to back as one sequential stream.
 * What decides the rate is whether x stays in the 32 KiB L1 beside that stream. x is packed as
 * bf16, two halves (hi + lo) in the exact mode: 4 bytes a column. A 2048-wide row's x is 8 KiB
 * and stays; an 8192-wide row's is 32 KiB (down_proj), every x load then misses L1, and the
 * misses crowd out the weights' (measured on this Zen 4, one thread, each shape timed against a
 * plain read of the same bytes in alternation: 2048 wide 1.05x the read's time, 8192 wide 2.5x).
 * So wide rows go eight at a time: each x vector loaded once serves eight rows, an eighth of
 * the x traffic (8192 wide: 1.26-1.31x). Narrow rows go one at a time, since eight streams read
 * slower than one when x fits (2048 wide: 1.33x). Exact mode: x ~= hi + lo and each weight
 * meets both halves; otherwise x rounded to bf16 (docs/accuracy.md). */
#include <immintrin.h>
#include <stdint.h>

#include "mm.h"
#include "tokenloop/scores_avx512.h"

#define MV_INLINE static inline __attribute__((always_inline))
#define MV_TILE 8
#define MV_WIDE_X_BYTES (16 << 10)   /* x at least this big: rows go MV_TILE at a time */
/* Software prefetch into L2 (not L1: x lives there), this far ahead of each stream. The
 * hardware prefetchers alone kept the product 4% behind a plain read of the same bytes when
 * the machine gives about 37 GB/s, and 10-25% behind when it gives 60-67 GB/s; with these
 * distances 0-4% (2 threads, the 1B shape's lm_head and down_proj timed against
 * tl_bandwidth_read in alternation). Into L1, or 8 KiB and more ahead, it was slower. With
 * two halves a row takes longer to consume and the best lead in bytes is shorter: at 60-65
 * GB/s the exact mode's lm_head went from 1.26x to 1.03x the read, gate/up from 1.26x to 1.05x
 * (4 KiB -> 2 KiB; 1 and 1.5 KiB were no better; tools/bench/decode_vs_read.c). */
#define MV_PF_ROW 4096               /* one 2048-wide row ahead */
#define MV_PF_ROW2 2048              /* the same, x in two halves */
#define MV_PF_TILE 1024              /* each of the tile's eight streams (512 and 2048: no better) */

/* One row, four accumulators along k (fewer chains wait on each other's latency); with two
 * halves the lo terms go to four more, so no chain is longer than with one. */
MV_INLINE void mv_row(const tl_cpu_mm *a, int64_t r, const int halves)
{
    const uint16_t *xh = a->xpack, *xl = a->xpack + a->cols_pad;
    const int64_t cols = a->cols;
    const uint16_t *w = (const uint16_t *)a->w + (size_t)r * (size_t)cols;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    __m512 lo0 = acc0, lo1 = acc0, lo2 = acc0, lo3 = acc0;
    int64_t k = 0;
#define MV_STEP(ACC, LO, U)                                                                   \
    do {                                                                                      \
        __m512bh wv = (__m512bh)_mm512_loadu_si512(w + k + 32 * (U));                        \
        ACC = _mm512_dpbf16_ps(ACC, wv, (__m512bh)_mm512_loadu_si512(xh + k + 32 * (U)));     \
        if (halves == 2)                                                                      \
            LO = _mm512_dpbf16_ps(LO, wv, (__m512bh)_mm512_loadu_si512(xl + k + 32 * (U)));   \
    } while (0)
    for (; k + 128 <= cols; k += 128) {
        const char *pf = (const char *)(w + k) + (halves == 2 ? MV_PF_ROW2 : MV_PF_ROW);
        _mm_prefetch(pf, _MM_HINT_T1);
        _mm_prefetch(pf + 64, _MM_HINT_T1);
        _mm_prefetch(pf + 128, _MM_HINT_T1);
        _mm_prefetch(pf + 192, _MM_HINT_T1);
        MV_STEP(acc0, lo0, 0);
        MV_STEP(acc1, lo1, 1);
        MV_STEP(acc2, lo2, 2);
        MV_STEP(acc3, lo3, 3);
    }
#undef MV_STEP
    for (; k < cols; k += 32) {   /* x is zero-padded to cols_pad; the weights are masked */
        __mmask32 m = k + 32 <= cols ? (__mmask32)~0u : (__mmask32)((1ull << (cols - k)) - 1);
        __m512bh wv = (__m512bh)_mm512_maskz_loadu_epi16(m, w + k);
        acc0 = _mm512_dpbf16_ps(acc0, wv, (__m512bh)_mm512_loadu_si512(xh + k));
        if (halves == 2)
            lo0 = _mm512_dpbf16_ps(lo0, wv, (__m512bh)_mm512_loadu_si512(xl + k));
    }
    __m512 sum = _mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3));
    if (halves == 2)
        sum = _mm512_add_ps(sum, _mm512_add_ps(_mm512_add_ps(lo0, lo1), _mm512_add_ps(lo2, lo3)));
    a->out[r] = _mm512_reduce_add_ps(sum);
}

/* MV_TILE rows r.., one accumulator each: every x vector is loaded once for all of them. */
MV_INLINE void mv_tile(const tl_cpu_mm *a, int64_t r, const int halves)
{
    const uint16_t *xh = a->xpack, *xl = a->xpack + a->cols_pad;
    const int64_t cols = a->cols;
    const uint16_t *w[MV_TILE];
    __m512 acc[MV_TILE];
    for (int i = 0; i < MV_TILE; i++) {
        w[i] = (const uint16_t *)a->w + (size_t)(r + i) * (size_t)cols;
        acc[i] = _mm512_setzero_ps();
    }
    for (int64_t k = 0; k < cols; k += 32) {
        __mmask32 m = k + 32 <= cols ? (__mmask32)~0u : (__mmask32)((1ull << (cols - k)) - 1);
        __m512bh h = (__m512bh)_mm512_loadu_si512(xh + k), l = h;
        if (halves == 2)
            l = (__m512bh)_mm512_loadu_si512(xl + k);
        if (!(k & 63))   /* every other step: two lines of each row */
            for (int i = 0; i < MV_TILE; i++) {
                _mm_prefetch((const char *)(w[i] + k) + MV_PF_TILE, _MM_HINT_T1);
                _mm_prefetch((const char *)(w[i] + k) + MV_PF_TILE + 64, _MM_HINT_T1);
            }
        for (int i = 0; i < MV_TILE; i++) {
            __m512bh wv = (__m512bh)_mm512_maskz_loadu_epi16(m, w[i] + k);
            acc[i] = _mm512_dpbf16_ps(acc[i], wv, h);
            if (halves == 2)
                acc[i] = _mm512_dpbf16_ps(acc[i], wv, l);
        }
    }
    for (int i = 0; i < MV_TILE; i++)
        a->out[r + i] = _mm512_reduce_add_ps(acc[i]);
}

MV_INLINE void mv_rows(const tl_cpu_mm *a, int64_t r0, int64_t r1, const int halves)
{
    int64_t r = r0;
    if ((int64_t)halves * 2 * a->cols >= MV_WIDE_X_BYTES)
        for (; r + MV_TILE <= r1; r += MV_TILE)
            mv_tile(a, r, halves);
    for (; r < r1; r++)
        mv_row(a, r, halves);
}

void tl_cpu_mv_bf16_avx512bf16(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    if (a->halves == 2)
        mv_rows(a, r0, r1, 2);
    else
        mv_rows(a, r0, r1, 1);
}

/* mv_rows with the scores' accumulator fed every sixteen rows, from registers and L1, between
 * the rows' loads: the product is bound by memory, so the exp and the compares fill cycles
 * that would wait for weights anyway (the last product of a decode step, the vocabulary's
 * 128,256 rows: tl_backend_ops.matmul_scores). */
/* Outputs r..e-1 (at most 16) into the accumulator. */
MV_INLINE void mv_scores16(const tl_cpu_mm *a, tl_cpu_scores *s, tl_cpu_lanes *l, int64_t r, int64_t e, int ge,
                           const unsigned want)
{
    __mmask16 in = e - r == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (e - r)) - 1);
    __m512 x = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), in, a->out + r);
    tl_cpu_scores_add16(s, l, x, a->out + r, r, ge, want);
}

MV_INLINE void mv_rows_scores(const tl_cpu_mm *a, int64_t r0, int64_t r1, const int halves, tl_cpu_scores *s,
                               const unsigned want)
{
    int ge = r0 < s->next;   /* rows below ones this thread has seen: ties may rank above */
    if (r1 > s->next)
        s->next = r1;
    const int wide = (int64_t)halves * 2 * a->cols >= MV_WIDE_X_BYTES;
    tl_cpu_lanes l;
    tl_cpu_lanes_load(s, &l);
    /* each group's sixteen scores are read one group later: by then the rows' separate stores
     * have left the store buffer, and the vector load does not wait to be forwarded from them */
    int64_t prev = -1, prev_e = -1;
    for (int64_t r = r0; r < r1; r += 16) {
        int64_t e = r + 16 < r1 ? r + 16 : r1, q = r;
        if (wide)
            for (; q + MV_TILE <= e; q += MV_TILE)
                mv_tile(a, q, halves);
        for (; q < e; q++)
            mv_row(a, q, halves);
        if (prev >= 0)
            mv_scores16(a, s, &l, prev, prev_e, ge, want);
        prev = r;
        prev_e = e;
    }
    if (prev >= 0)
        mv_scores16(a, s, &l, prev, prev_e, ge, want);
    tl_cpu_lanes_store(s, &l);
}

/* One copy of the loop per precision and per set of sums, each with its constants folded. */
#define MV_SCORES(H)                                                                          \
    switch (s->want & (TL_STATS_W | TL_STATS_SCALED)) {                                       \
    case 0: mv_rows_scores(a, r0, r1, H, s, 0); break;                                        \
    case TL_STATS_W: mv_rows_scores(a, r0, r1, H, s, TL_STATS_W); break;                      \
    case TL_STATS_SCALED: mv_rows_scores(a, r0, r1, H, s, TL_STATS_SCALED); break;            \
    default: mv_rows_scores(a, r0, r1, H, s, TL_STATS_W | TL_STATS_SCALED); break;            \
    }

void tl_cpu_mv_bf16_scores_avx512bf16(const tl_cpu_mm *a, int64_t r0, int64_t r1, tl_cpu_scores *s)
{
    if (a->halves == 2) {
        MV_SCORES(2)
    } else {
        MV_SCORES(1)
    }
}
