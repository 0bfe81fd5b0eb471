/* Internal to the CPU backend: scalar reference kernels, dtype conversion, and the hooks the
 * kernel tests use to pick a kernel set. */
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
/* The same over bf16 K and V rows (a bf16 KV cache). */
void tl_cpu_ref_attention_bf16(float *out, const float *q, const uint16_t *k, const uint16_t *v, int T, int pos0,
                               int n_heads, int n_kv, int head_dim);
void tl_cpu_ref_swiglu(float *gate, const float *up, int n);
void tl_cpu_ref_add(float *x, const float *y, int n);

/* A backend context with a chosen kernel set ("generic", "avx2", "avx512", "avx512bf16", "neon",
 * "neon-dotprod", "neon-bf16"; NULL: the best this CPU supports), for tests that check every
 * variant. */
void *tl_cpu_create_isa(int threads, const char *isa, tl_error *err);
const char *tl_cpu_ctx_isa(void *ctx);
int tl_cpu_ctx_threads(void *ctx);

#endif
