/* A Llama model as read from a Hugging Face directory (config.json, generation_config.json,
 * model.safetensors or the shards of model.safetensors.index.json). Weights stay memory-mapped
 * in their file dtype; nothing here does arithmetic. */
#ifndef TOKENLOOP_MODEL_H
#define TOKENLOOP_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include "tokenloop/error.h"

#define TL_MAX_EOS 8

/* Q8_0 and Q4_0 are llama.cpp's block formats (tokenloop/quant.h): rows of 32-element blocks,
 * each block one f16 scale and 32 8-bit or 4-bit integers. Q4_K, Q5_K and Q6_K are its
 * K-quant super-blocks of 256 (core/quant_k.c): they come only from GGUF files (there is no
 * quantizer to them here, so no --dtype names them). */
typedef enum { TL_F32 = 0, TL_F16 = 1, TL_BF16 = 2, TL_Q8_0 = 3, TL_Q4_0 = 4, TL_Q4_K = 5, TL_Q5_K = 6,
               TL_Q6_K = 7 } tl_dtype;
#define TL_DTYPE_COUNT 8
#define TL_DTYPE_CHOOSABLE 5   /* f32 .. q4_0: the dtypes a model can be converted to */

/* Bytes per element of an unblocked dtype (f32, f16, bf16); 0 for the block formats. */
size_t tl_dtype_size(tl_dtype t);
const char *tl_dtype_name(tl_dtype t);
/* Elements per block (1, 32 or 256) and bytes per block (4, 2, 2, 34, 18, 144, 176, 210). */
int tl_dtype_block(tl_dtype t);
size_t tl_dtype_block_bytes(tl_dtype t);
/* Bytes of a row of n elements (n a multiple of the block). */
size_t tl_dtype_row_bytes(tl_dtype t, int64_t n);
/* "f32", "f16", "bf16", "q8_0", "q4_0" -> 0; -1 for anything else (the K-quants too). */
int tl_dtype_parse(const char *s, tl_dtype *t);

typedef struct tl_config {
    int hidden_size, intermediate_size, n_layers, n_heads, n_kv_heads, head_dim;
    int vocab_size, max_position_embeddings;
    float rms_norm_eps, rope_theta;
    int rope_llama3;               /* rope_scaling.rope_type == "llama3" */
    float rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int rope_original_max_position;
    int tie_word_embeddings;
    int bos_id;                    /* -1 when absent */
    int eos_ids[TL_MAX_EOS], n_eos;
    tl_dtype dtype;                /* torch_dtype */
} tl_config;

/* generation_config.json; has_* says whether the file set the field. */
typedef struct tl_gen_config {
    int has_do_sample, do_sample;
    int has_temperature; float temperature;
    int has_top_k; int top_k;
    int has_top_p; float top_p;
    int has_max_new_tokens; int max_new_tokens;
    int has_max_length; int max_length;
    int eos_ids[TL_MAX_EOS], n_eos;  /* n_eos == 0: fall back to config.json */
} tl_gen_config;

/* A 2-D weight [rows, cols] (1-D tensors have rows == 1). */
typedef struct tl_weight {
    const void *data;
    tl_dtype dtype;
    int64_t rows, cols;
    int mapped;                 /* data points into a file's mapping (page cache, 4 KiB pages) */
    int keep_x;                 /* products keep fp32-level x where others round it (engine.h) */
} tl_weight;

/* Bytes of w's data: rows * tl_dtype_row_bytes(dtype, cols). */
uint64_t tl_weight_bytes(const tl_weight *w);

typedef struct tl_layer {
    tl_weight attn_norm, wq, wk, wv, wo;
    tl_weight mlp_norm, w_gate, w_up, w_down;
} tl_layer;

typedef struct tl_model {
    tl_config cfg;
    tl_gen_config gen;
    tl_weight embed, final_norm, lm_head;  /* lm_head aliases embed when tied */
    tl_layer *layers;
    int64_t n_params;
    uint64_t weight_bytes;          /* bytes of all weights a decode step reads */
    char dir[4096];                 /* "" for synthetic models */
    void *priv;                     /* mappings, owned buffers */
    /* GGUF files (core/model_gguf.c) only: */
    const float *rope_freqs;        /* head_dim/2 divisors of the RoPE frequencies (rope_freqs.weight,
                                     * how GGUF carries llama3 scaling); NULL: none */
    char note[160];                 /* the loader's note on the weights ("Q4_K, Q6_K run natively ..."); "" if none */
    const char *eos_source;         /* where cfg.eos_ids came from, when not config.json; NULL */
} tl_model;

int tl_model_load(tl_model **out, const char *dir, tl_error *err);
/* Random weights of the given shape, in memory (benchmarks of real shapes). */
int tl_model_synthetic(tl_model **out, const tl_config *cfg, tl_dtype dtype, uint64_t seed, tl_error *err);
void tl_model_free(tl_model *m);
/* For a run on the CPU: copies the matrices of at least min_bytes that sit in a file's mapping
 * (4 KiB pages of the page cache) into memory of the model's own in 2 MiB pages, which a
 * decode step streams faster (fewer TLB misses), while the copies stay under half of the
 * memory available. Every engine made on the model afterwards reads the copies. Only the first
 * call copies; call it before the first engine. Returns the bytes copied (0 on any failure:
 * the mapping serves, with the same numbers). */
uint64_t tl_model_copy_to_hugepages(tl_model *m, size_t min_bytes);
#define TL_HUGEPAGE_MIN ((size_t)2 << 20)

/* A model of the same shape whose matrices (embedding, every layer's seven, lm_head) are
 * converted to `dtype` as llama.cpp's quantizers would (tokenloop/quant.h), so a decode step
 * reads tl_weight_bytes of those; norm weights stay fp32. Self-contained: src may be freed
 * afterwards. Q8_0/Q4_0 need every matrix's width to be a multiple of 32 (else -1, naming it). */
int tl_model_convert(tl_model **out, const tl_model *src, tl_dtype dtype, tl_error *err);

/* Parse config.json / generation_config.json alone (also used by tests and `info`). */
int tl_config_load(tl_config *cfg, const char *path, tl_error *err);
int tl_gen_config_load(tl_gen_config *gen, const char *path, tl_error *err);

#endif
