/* Private to core: one memory-mapped GGUF file (llama.cpp's container, versions 2 and 3) whose
 * header has been checked against the file it describes (see gguf.c for the list of checks).
 * Strings and arrays are not copied: they point into the mapping, which lives until close. */
#ifndef TL_GGUF_H
#define TL_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "tokenloop/error.h"

#define TL_GGUF_MAX_DIMS 4

/* The metadata value types of the format. */
enum {
    TL_GGUF_U8, TL_GGUF_I8, TL_GGUF_U16, TL_GGUF_I16, TL_GGUF_U32, TL_GGUF_I32, TL_GGUF_F32,
    TL_GGUF_BOOL, TL_GGUF_STRING, TL_GGUF_ARRAY, TL_GGUF_U64, TL_GGUF_I64, TL_GGUF_F64,
    TL_GGUF_TYPE_COUNT
};

/* ggml tensor types tokenloop reads (the container knows the sizes of every type the gguf
 * package 0.19 lists; see gguf.c). */
enum {
    TL_GGML_F32 = 0, TL_GGML_F16 = 1, TL_GGML_Q4_0 = 2, TL_GGML_Q8_0 = 8, TL_GGML_Q4_K = 12,
    TL_GGML_Q5_K = 13, TL_GGML_Q6_K = 14, TL_GGML_BF16 = 30
};

typedef struct tl_gguf_kv {
    char *key;                 /* NUL-terminated copy */
    uint32_t type;             /* TL_GGUF_* */
    uint32_t arr_type;         /* element type when type == TL_GGUF_ARRAY */
    uint64_t n;                /* elements of an array; 1 otherwise */
    const unsigned char *val;  /* the value's bytes in the mapping (after the array header) */
    uint64_t val_bytes;
} tl_gguf_kv;

typedef struct tl_gguf_tensor {
    char *name;                /* NUL-terminated copy */
    int n_dims;
    int64_t ne[TL_GGUF_MAX_DIMS];  /* ne[0]: elements per row (the fastest-moving dimension) */
    uint32_t type;             /* ggml type number */
    int size_known;            /* the type is one whose block size the container knows */
    uint64_t offset;           /* from the start of the data section */
    uint64_t bytes;            /* valid when size_known */
    const void *data;          /* into the mapping; NULL when !size_known */
} tl_gguf_tensor;

typedef struct tl_gguf {
    char path[4096];
    void *map;
    size_t size;
    uint32_t version;
    uint64_t alignment;
    uint64_t data_start;       /* file offset of the data section */
    tl_gguf_kv *kvs;
    int64_t n_kv;
    tl_gguf_tensor *tensors;
    int64_t n_tensors;
    const struct tl_gguf_tensor **by_name;   /* the tensors sorted by name, for the lookup */
} tl_gguf;

/* Does the regular file at path begin with the GGUF magic? */
int tl_gguf_is_file(const char *path);

/* Maps path and validates its header; on failure nothing stays mapped or allocated. */
int tl_gguf_open(tl_gguf *f, const char *path, tl_error *err);
void tl_gguf_close(tl_gguf *f);

const tl_gguf_kv *tl_gguf_find_kv(const tl_gguf *f, const char *key);
const tl_gguf_tensor *tl_gguf_find_tensor(const tl_gguf *f, const char *name);

/* Typed getters. Each returns 0 with the value, 1 when the key is absent (out untouched), -1
 * with an error naming the key when it is present with another type or out of range. The
 * integer getter takes any integer type; the float getter any float or integer type. */
int tl_gguf_get_int(const tl_gguf *f, const char *key, int64_t lo, int64_t hi, int64_t *out, tl_error *err);
int tl_gguf_get_float(const tl_gguf *f, const char *key, double *out, tl_error *err);
int tl_gguf_get_bool(const tl_gguf *f, const char *key, int *out, tl_error *err);
/* A string value: *s points into the mapping (not NUL-terminated), *len bytes. */
int tl_gguf_get_str(const tl_gguf *f, const char *key, const char **s, uint64_t *len, tl_error *err);
/* An array of the given element type (n elements, the bytes as the file holds them). */
int tl_gguf_get_arr(const tl_gguf *f, const char *key, uint32_t arr_type, const tl_gguf_kv **kv, tl_error *err);

/* Walks a string array: *cursor starts at 0; each call gives the next string. */
void tl_gguf_arr_next_str(const tl_gguf_kv *kv, uint64_t *cursor, const char **s, uint64_t *len);
/* Element i of an integer array as int64 (any integer element type). */
int64_t tl_gguf_arr_int(const tl_gguf_kv *kv, uint64_t i);
double tl_gguf_arr_float(const tl_gguf_kv *kv, uint64_t i);

/* "Q4_K" etc. for a ggml type number; "unknown" for numbers the format does not define. */
const char *tl_gguf_type_name(uint32_t type);
/* Elements and bytes per block of a ggml type; 0 when unknown. */
int tl_gguf_type_block(uint32_t type, uint32_t *elems, uint32_t *bytes);

/* Row of n elements of ggml type `type` -> fp32. F32, F16, BF16, Q8_0, Q4_0,
 * Q4_K, Q5_K, Q6_K; returns -1 (nothing written) for any other type or an n that is not whole
 * blocks. */
int tl_gguf_dequantize_row(uint32_t type, const void *src, float *dst, int64_t n);
/* The tl_dtype a ggml type is computed in without conversion; -1 when there is none. */
int tl_gguf_native_dtype(uint32_t type);

/* tok_gguf.c: does the GGUF file at path carry a tokenizer (tokenizer.ggml.model)? */
int tl_gguf_has_tokenizer(const char *path);
/* tokenizer.chat_template and the strings of the BOS and EOS tokens (NULL when the file names
 * none), as tokenizer_config.json's chat_template, bos_token and eos_token. Caller frees. */
int tl_gguf_chat_config(const char *path, char **template_src, char **bos_token, char **eos_token, tl_error *err);

#endif
