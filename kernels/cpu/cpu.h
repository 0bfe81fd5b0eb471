/* Internal to the CPU backend: scalar reference kernels and dtype conversion. */
#ifndef TL_KERNELS_CPU_H
#define TL_KERNELS_CPU_H

#include <stdint.h>
#include "tokenloop/model.h"

float tl_cpu_bf16_to_f32(uint16_t h);
float tl_cpu_f16_to_f32(uint16_t h);
float tl_cpu_weight_at(const tl_weight *w, int64_t i);

void tl_cpu_ref_embed(float *x, const tl_weight *table, const int *ids, int T);
void tl_cpu_ref_rmsnorm(float *out, const float *x, const tl_weight *w, int T, int n, float eps);
void tl_cpu_ref_matmul(float *out, const float *x, const tl_weight *W, int T);
void tl_cpu_ref_rope(float *x, int T, int n_heads, int head_dim, int pos0, const float *inv_freq);
void tl_cpu_ref_attention(float *out, const float *q, const float *k, const float *v, int T, int pos0,
                          int n_heads, int n_kv, int head_dim);
void tl_cpu_ref_swiglu(float *gate, const float *up, int n);
void tl_cpu_ref_add(float *x, const float *y, int n);

#endif
