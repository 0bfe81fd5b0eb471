/* Private to core: one memory-mapped safetensors file whose header has been checked against
 * the file it describes (see safetensors.c for the list of checks). */
#ifndef TL_SAFETENSORS_H
#define TL_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "tokenloop/model.h"

#define TL_ST_MAX_DIMS 8

typedef struct tl_st_tensor {
    char *name;
    char dtype_name[16];   /* as written in the header: "BF16", "F32", "I64", ... */
    int known;             /* dtype is one we compute with (BF16, F16, F32) */
    tl_dtype dtype;        /* valid when known */
    int ndim;
    int64_t shape[TL_ST_MAX_DIMS];
    uint64_t begin, end;   /* byte range inside the data section */
    const void *data;      /* into the mapping */
} tl_st_tensor;

typedef struct tl_st_file {
    char path[4096];
    void *map;
    size_t size;
    tl_st_tensor *tensors;
    int n;
} tl_st_file;

/* Maps path and validates its header; on failure nothing stays mapped or allocated. */
int tl_st_open(tl_st_file *f, const char *path, tl_error *err);
void tl_st_close(tl_st_file *f);
const tl_st_tensor *tl_st_find(const tl_st_file *f, const char *name);
/* s with control and non-ASCII bytes written as \xNN, cut to fit buf. */
const char *tl_st_printable(const char *s, char *buf, size_t cap);

#endif
