/* llama.cpp's block formats Q8_0 and Q4_0, as GGUF files hold them, and conversions between
 * every tl_dtype and fp32. A row of n elements (n a multiple of 32) is n/32 blocks:
 *   Q8_0: f16 scale d, 32 x int8 q;   element i = d * q[i]
 *   Q4_0: f16 scale d, 16 bytes;      element i < 16 = d * ((byte[i] & 15) - 8),
 *                                      element i >= 16 = d * ((byte[i-16] >> 4) - 8)
 * The quantizers round as llama.cpp's reference quantizers do (ggml-quants.c), so a row
 * quantized here is the bytes that `gguf`'s quantizer and llama-quantize write. */
#ifndef TOKENLOOP_QUANT_H
#define TOKENLOOP_QUANT_H

#include <stdint.h>
#include "tokenloop/model.h"

#define TL_QK 32

/* Packed: blocks follow each other every 34 or 18 bytes, so half of them start at an odd
 * address; the compiler then reads their scales with unaligned-safe loads. */
typedef struct __attribute__((packed)) tl_block_q8_0 {
    uint16_t d;
    int8_t qs[TL_QK];
} tl_block_q8_0;

typedef struct __attribute__((packed)) tl_block_q4_0 {
    uint16_t d;
    uint8_t qs[TL_QK / 2];
} tl_block_q4_0;

float tl_f16_to_f32(uint16_t h);
uint16_t tl_f32_to_f16(float f);      /* round to nearest even, as numpy's astype(float16) */
float tl_bf16_to_f32(uint16_t h);
uint16_t tl_f32_to_bf16(float f);     /* round to nearest even; NaN stays NaN */

/* dst: tl_dtype_row_bytes(t, n) bytes. For Q8_0/Q4_0, n must be a multiple of TL_QK, for the
 * K-quants of TL_QK_K. The K-quants have no quantizer: tl_quantize_row writes zeros for them
 * (tl_model_convert refuses them before). */
void tl_quantize_row(tl_dtype t, const float *x, void *dst, int64_t n);
void tl_dequantize_row(tl_dtype t, const void *src, float *y, int64_t n);

/* Q4_K/Q5_K/Q6_K (core/quant_k.c has the layouts): a row of n elements decoded to fp32 as
 * ggml does (same bits), and element i of a row alone (the same value). */
#define TL_QK_K 256
void tl_kquant_dequantize_row(tl_dtype t, const void *src, float *y, int64_t n);
float tl_kquant_at(tl_dtype t, const void *row, int64_t i);
static inline int tl_dtype_is_kquant(tl_dtype t) { return t == TL_Q4_K || t == TL_Q5_K || t == TL_Q6_K; }

#endif
