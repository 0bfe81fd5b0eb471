/* Reading a GGUF file (llama.cpp's container; versions 2 and 3, little-endian):
 *   "GGUF", u32 version, u64 tensor_count, u64 kv_count,
 *   kv_count x (string key, u32 value type, value)        strings are u64 length + bytes
 *   tensor_count x (string name, u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset)
 *   padding to general.alignment (default 32), then the data section.
 * Nothing in the header is trusted: every count is checked against the bytes left before
 * anything is allocated for it (so a small file cannot ask for a large allocation), every
 * string and value lies inside the file, and each tensor of a known type lies inside the data
 * section, aligned, overlapping no other. The file is mapped read-only and never copied. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tokenloop/file.h"
#include "tokenloop/quant.h"
#include "gguf.h"
#include "safetensors.h"   /* tl_st_printable */

#define MAX_NAME 256        /* llama.cpp's own limit on tensor names is 64 */
#define MAX_KEY 65536

/* Block sizes of every ggml type the gguf package 0.19 defines (GGML_QUANT_SIZES). */
static const struct { uint32_t type; const char *name; uint32_t elems, bytes; } ggml_types[] = {
    {0, "F32", 1, 4}, {1, "F16", 1, 2}, {2, "Q4_0", 32, 18}, {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22}, {7, "Q5_1", 32, 24}, {8, "Q8_0", 32, 34}, {9, "Q8_1", 32, 40},
    {10, "Q2_K", 256, 84}, {11, "Q3_K", 256, 110}, {12, "Q4_K", 256, 144}, {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210}, {15, "Q8_K", 256, 292}, {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50}, {20, "IQ4_NL", 32, 18}, {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82}, {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1}, {25, "I16", 1, 2},
    {26, "I32", 1, 4}, {27, "I64", 1, 8}, {28, "F64", 1, 8}, {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2}, {34, "TQ1_0", 256, 54}, {35, "TQ2_0", 256, 66}, {39, "MXFP4", 32, 17},
    {40, "NVFP4", 64, 36}, {41, "Q1_0", 128, 18},
};

static const char *const value_type_names[TL_GGUF_TYPE_COUNT] = {
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array",
    "uint64", "int64", "float64"};
static const unsigned value_type_size[TL_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

const char *tl_gguf_type_name(uint32_t type)
{
    for (size_t i = 0; i < sizeof ggml_types / sizeof ggml_types[0]; i++)
        if (ggml_types[i].type == type)
            return ggml_types[i].name;
    return "unknown";
}

int tl_gguf_type_block(uint32_t type, uint32_t *elems, uint32_t *bytes)
{
    for (size_t i = 0; i < sizeof ggml_types / sizeof ggml_types[0]; i++)
        if (ggml_types[i].type == type) {
            *elems = ggml_types[i].elems;
            *bytes = ggml_types[i].bytes;
            return 1;
        }
    *elems = *bytes = 0;
    return 0;
}

/* A read position that refuses to pass the end of the file. */
typedef struct cursor {
    const unsigned char *base;
    uint64_t at, size;
} cursor;

static uint64_t left(const cursor *c) { return c->size - c->at; }

static int take(cursor *c, uint64_t n, const unsigned char **p)
{
    if (n > left(c))
        return -1;
    *p = c->base + c->at;
    c->at += n;
    return 0;
}

static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static int read_u32(cursor *c, uint32_t *v)
{
    const unsigned char *p;
    if (take(c, 4, &p))
        return -1;
    *v = (uint32_t)le(p, 4);
    return 0;
}

static int read_u64(cursor *c, uint64_t *v)
{
    const unsigned char *p;
    if (take(c, 8, &p))
        return -1;
    *v = le(p, 8);
    return 0;
}

/* A string: u64 length, then that many bytes (no terminator in the file). */
static int read_str(cursor *c, const char **s, uint64_t *len)
{
    const unsigned char *p;
    if (read_u64(c, len) || take(c, *len, &p))
        return -1;
    *s = (const char *)p;
    return 0;
}

/* A copy of a string that names something (a key, a tensor): no NUL inside, bounded length. */
static char *name_copy(const char *s, uint64_t len, uint64_t max)
{
    if (len == 0 || len > max || memchr(s, 0, (size_t)len))
        return NULL;
    char *out = malloc((size_t)len + 1);
    if (out) {
        memcpy(out, s, (size_t)len);
        out[len] = 0;
    }
    return out;
}

/* Steps over one value of type t (not an array); the bytes it spans stay inside the file. */
static int skip_scalar(cursor *c, uint32_t t)
{
    const unsigned char *p;
    if (t == TL_GGUF_STRING) {
        const char *s;
        uint64_t n;
        return read_str(c, &s, &n);
    }
    return take(c, value_type_size[t], &p);
}

static int read_value(tl_gguf *f, cursor *c, tl_gguf_kv *kv, tl_error *err)
{
    char pk[160];
    const char *key = tl_st_printable(kv->key, pk, sizeof pk);
    if (kv->type >= TL_GGUF_TYPE_COUNT)
        return tl_error_set(err, "%s: key '%s': unknown value type %u", f->path, key, kv->type);
    kv->n = 1;
    if (kv->type == TL_GGUF_ARRAY) {
        if (read_u32(c, &kv->arr_type) || read_u64(c, &kv->n))
            return tl_error_set(err, "%s: key '%s': array header runs past the end of the file", f->path, key);
        if (kv->arr_type == TL_GGUF_ARRAY)
            return tl_error_set(err, "%s: key '%s': nested arrays are not supported", f->path, key);
        if (kv->arr_type >= TL_GGUF_TYPE_COUNT)
            return tl_error_set(err, "%s: key '%s': unknown array element type %u", f->path, key, kv->arr_type);
        /* every element takes at least its size (a string its 8-byte length) */
        uint64_t min = kv->arr_type == TL_GGUF_STRING ? 8 : value_type_size[kv->arr_type];
        if (kv->n > left(c) / min)
            return tl_error_set(err, "%s: key '%s': array of %llu %s elements cannot fit in the %llu bytes left",
                                f->path, key, (unsigned long long)kv->n, value_type_names[kv->arr_type],
                                (unsigned long long)left(c));
    }
    uint64_t start = c->at;
    uint32_t t = kv->type == TL_GGUF_ARRAY ? kv->arr_type : kv->type;
    for (uint64_t i = 0; i < kv->n; i++)
        if (skip_scalar(c, t))
            return tl_error_set(err, "%s: key '%s': value runs past the end of the file", f->path, key);
    if (kv->type == TL_GGUF_BOOL && c->base[start] > 1)
        return tl_error_set(err, "%s: key '%s': bool value %u is neither 0 nor 1", f->path, key, c->base[start]);
    kv->val = c->base + start;
    kv->val_bytes = c->at - start;
    return 0;
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const tl_gguf_kv *)a)->key, ((const tl_gguf_kv *)b)->key);
}

static int read_kvs(tl_gguf *f, cursor *c, uint64_t n_kv, tl_error *err)
{
    /* a key-value takes at least 8 (key length) + 1 (key) + 4 (type) + 1 bytes */
    if (n_kv > left(c) / 14)
        return tl_error_set(err, "%s: header: kv_count %llu cannot fit in the %llu bytes left", f->path,
                            (unsigned long long)n_kv, (unsigned long long)left(c));
    if (!(f->kvs = calloc((size_t)n_kv + 1, sizeof *f->kvs)))
        return tl_error_set(err, "%s: out of memory", f->path);
    for (uint64_t i = 0; i < n_kv; i++) {
        tl_gguf_kv *kv = &f->kvs[i];
        const char *s;
        uint64_t len;
        if (read_str(c, &s, &len))
            return tl_error_set(err, "%s: key-value %llu: key runs past the end of the file", f->path,
                                (unsigned long long)i);
        if (!(kv->key = name_copy(s, len, MAX_KEY)))
            return tl_error_set(err, "%s: key-value %llu: key is empty, longer than %d bytes or holds a NUL",
                                f->path, (unsigned long long)i, MAX_KEY);
        f->n_kv++;
        if (read_u32(c, &kv->type))
            return tl_error_set(err, "%s: key '%s': value type runs past the end of the file", f->path,
                                tl_st_printable(kv->key, (char[160]){0}, 160));
        if (read_value(f, c, kv, err))
            return -1;
    }
    /* sorted by key: the lookup is a binary search, and a key written twice sits beside itself */
    qsort(f->kvs, (size_t)f->n_kv, sizeof *f->kvs, by_key);
    for (int64_t i = 1; i < f->n_kv; i++)
        if (!strcmp(f->kvs[i - 1].key, f->kvs[i].key))
            return tl_error_set(err, "%s: key '%s' appears twice", f->path,
                                tl_st_printable(f->kvs[i].key, (char[160]){0}, 160));
    return 0;
}

static int read_tensor_info(tl_gguf *f, cursor *c, int64_t i, tl_error *err)
{
    tl_gguf_tensor *t = &f->tensors[i];
    const char *s;
    uint64_t len;
    if (read_str(c, &s, &len))
        return tl_error_set(err, "%s: tensor info %lld: name runs past the end of the file", f->path, (long long)i);
    if (!(t->name = name_copy(s, len, MAX_NAME)))
        return tl_error_set(err, "%s: tensor info %lld: name is empty, longer than %d bytes or holds a NUL",
                            f->path, (long long)i, MAX_NAME);
    f->n_tensors++;
    char pn[300];
    const char *name = tl_st_printable(t->name, pn, sizeof pn);
    uint32_t nd;
    if (read_u32(c, &nd))
        return tl_error_set(err, "%s: tensor '%s': n_dims runs past the end of the file", f->path, name);
    if (nd < 1 || nd > TL_GGUF_MAX_DIMS)
        return tl_error_set(err, "%s: tensor '%s': n_dims %u is not 1..%d", f->path, name, nd, TL_GGUF_MAX_DIMS);
    t->n_dims = (int)nd;
    uint64_t elems = 1;
    for (uint32_t d = 0; d < nd; d++) {
        uint64_t v;
        if (read_u64(c, &v))
            return tl_error_set(err, "%s: tensor '%s': dims run past the end of the file", f->path, name);
        if (v > INT64_MAX || __builtin_mul_overflow(elems, v, &elems) || elems > INT64_MAX)
            return tl_error_set(err, "%s: tensor '%s': shape is too large", f->path, name);
        t->ne[d] = (int64_t)v;
    }
    for (int d = t->n_dims; d < TL_GGUF_MAX_DIMS; d++)
        t->ne[d] = 1;
    if (read_u32(c, &t->type) || read_u64(c, &t->offset))
        return tl_error_set(err, "%s: tensor '%s': type and offset run past the end of the file", f->path, name);
    uint32_t be, bb;
    if (!(t->size_known = tl_gguf_type_block(t->type, &be, &bb)))
        return 0;   /* judged by whoever uses the tensor: a model may not need it */
    if (t->ne[0] % be)
        return tl_error_set(err, "%s: tensor '%s': row of %lld elements is not whole %s blocks of %u", f->path,
                            name, (long long)t->ne[0], tl_gguf_type_name(t->type), be);
    if (__builtin_mul_overflow(elems / be, (uint64_t)bb, &t->bytes))
        return tl_error_set(err, "%s: tensor '%s': shape is too large", f->path, name);
    return 0;
}

static int by_offset(const void *a, const void *b)
{
    const tl_gguf_tensor *x = *(tl_gguf_tensor *const *)a, *y = *(tl_gguf_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset ? 1 : (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const tl_gguf_tensor *const *)a)->name, (*(const tl_gguf_tensor *const *)b)->name);
}

/* Each tensor of a known size inside the data section and aligned, no two sharing a byte, no
 * name twice; fills data pointers and the name index. */
static int check_tensors(tl_gguf *f, tl_error *err)
{
    char pa[300], pb[300];
    uint64_t data_size = f->size - f->data_start;
    tl_gguf_tensor **order = malloc(((size_t)f->n_tensors + 1) * sizeof *order);
    f->by_name = malloc(((size_t)f->n_tensors + 1) * sizeof *f->by_name);
    if (!order || !f->by_name) {
        free(order);
        return tl_error_set(err, "%s: out of memory", f->path);
    }
    int64_t n_sized = 0;
    for (int64_t i = 0; i < f->n_tensors; i++) {
        tl_gguf_tensor *t = &f->tensors[i];
        f->by_name[i] = t;
        const char *name = tl_st_printable(t->name, pa, sizeof pa);
        if (t->offset % f->alignment) {
            free(order);
            return tl_error_set(err, "%s: tensor '%s': offset %llu is not a multiple of the alignment %llu",
                                f->path, name, (unsigned long long)t->offset, (unsigned long long)f->alignment);
        }
        if (!t->size_known)
            continue;
        if (t->offset > data_size || t->bytes > data_size - t->offset) {
            free(order);
            return tl_error_set(err, "%s: tensor '%s': %llu bytes at offset %llu run past the end of the file "
                                "(data section is %llu bytes)", f->path, name, (unsigned long long)t->bytes,
                                (unsigned long long)t->offset, (unsigned long long)data_size);
        }
        t->data = (const unsigned char *)f->map + f->data_start + t->offset;
        order[n_sized++] = t;
    }
    qsort(order, (size_t)n_sized, sizeof *order, by_offset);
    const tl_gguf_tensor *prev = NULL;
    for (int64_t i = 0; i < n_sized; i++) {
        const tl_gguf_tensor *t = order[i];
        if (!t->bytes)
            continue;
        if (prev && t->offset < prev->offset + prev->bytes) {
            tl_error_set(err, "%s: tensors '%s' and '%s' overlap (bytes %llu+%llu and %llu+%llu of the data section)",
                         f->path, tl_st_printable(prev->name, pa, sizeof pa), tl_st_printable(t->name, pb, sizeof pb),
                         (unsigned long long)prev->offset, (unsigned long long)prev->bytes,
                         (unsigned long long)t->offset, (unsigned long long)t->bytes);
            free(order);
            return -1;
        }
        prev = t;
    }
    free(order);
    qsort(f->by_name, (size_t)f->n_tensors, sizeof *f->by_name, by_name);
    for (int64_t i = 1; i < f->n_tensors; i++)
        if (!strcmp(f->by_name[i - 1]->name, f->by_name[i]->name))
            return tl_error_set(err, "%s: tensor '%s' appears twice", f->path,
                                tl_st_printable(f->by_name[i]->name, pa, sizeof pa));
    return 0;
}

static int read_alignment(tl_gguf *f, tl_error *err)
{
    int64_t a = 32;
    int rc = tl_gguf_get_int(f, "general.alignment", 1, 1 << 30, &a, err);
    if (rc < 0)
        return -1;
    if (a & (a - 1))
        return tl_error_set(err, "%s: general.alignment %lld is not a power of two", f->path, (long long)a);
    f->alignment = (uint64_t)a;
    return 0;
}

static int parse(tl_gguf *f, tl_error *err)
{
    cursor c = {f->map, 0, f->size};
    const unsigned char *magic;
    uint64_t n_tensors, n_kv;
    if (take(&c, 4, &magic) || memcmp(magic, "GGUF", 4))
        return tl_error_set(err, "%s: no GGUF magic at the start of the file", f->path);
    if (read_u32(&c, &f->version) || read_u64(&c, &n_tensors) || read_u64(&c, &n_kv))
        return tl_error_set(err, "%s: file is %zu bytes, too short for a GGUF header", f->path, f->size);
    if (f->version != 2 && f->version != 3)
        return tl_error_set(err, "%s: header: version %u is not supported (2 and 3 are)", f->path, f->version);
    if (read_kvs(f, &c, n_kv, err) || read_alignment(f, err))
        return -1;
    /* a tensor info takes at least 8 + 1 (name) + 4 + 8 (one dim) + 4 + 8 bytes */
    if (n_tensors > left(&c) / 33)
        return tl_error_set(err, "%s: header: tensor_count %llu cannot fit in the %llu bytes left", f->path,
                            (unsigned long long)n_tensors, (unsigned long long)left(&c));
    if (!(f->tensors = calloc((size_t)n_tensors + 1, sizeof *f->tensors)))
        return tl_error_set(err, "%s: out of memory", f->path);
    for (uint64_t i = 0; i < n_tensors; i++)
        if (read_tensor_info(f, &c, (int64_t)i, err))
            return -1;
    uint64_t start = (c.at + f->alignment - 1) / f->alignment * f->alignment;
    if (n_tensors && start > f->size)
        return tl_error_set(err, "%s: header: the data section would start at byte %llu, past the end of the file",
                            f->path, (unsigned long long)start);
    f->data_start = start < f->size ? start : f->size;
    return check_tensors(f, err);
}

int tl_gguf_is_file(const char *path)
{
    struct stat st;
    if (stat(path, &st) || !S_ISREG(st.st_mode))
        return 0;
    FILE *fp = fopen(path, "rb");
    char magic[4];
    int yes = fp && fread(magic, 1, 4, fp) == 4 && !memcmp(magic, "GGUF", 4);
    if (fp)
        fclose(fp);
    return yes;
}

int tl_gguf_open(tl_gguf *f, const char *path, tl_error *err)
{
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    const void *map;
    if (tl_file_map(path, &map, &f->size, err))
        return -1;
    f->map = (void *)map;
    if (parse(f, err)) {
        tl_gguf_close(f);
        return -1;
    }
    return 0;
}

void tl_gguf_close(tl_gguf *f)
{
    for (int64_t i = 0; i < f->n_kv; i++)
        free(f->kvs[i].key);
    for (int64_t i = 0; i < f->n_tensors; i++)
        free(f->tensors[i].name);
    free(f->kvs);
    free(f->tensors);
    free(f->by_name);
    if (f->map)
        munmap(f->map, f->size);
    f->kvs = NULL;
    f->tensors = NULL;
    f->by_name = NULL;
    f->map = NULL;
    f->n_kv = f->n_tensors = 0;
}

const tl_gguf_kv *tl_gguf_find_kv(const tl_gguf *f, const char *key)
{
    int64_t lo = 0, hi = f->n_kv;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(f->kvs[mid].key, key);
        if (!c)
            return &f->kvs[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const tl_gguf_tensor *tl_gguf_find_tensor(const tl_gguf *f, const char *name)
{
    int64_t lo = 0, hi = f->by_name ? f->n_tensors : 0;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        const tl_gguf_tensor *t = f->by_name[mid];
        int c = strcmp(t->name, name);
        if (!c)
            return t;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int is_int_type(uint32_t t)
{
    return t <= TL_GGUF_I32 || t == TL_GGUF_U64 || t == TL_GGUF_I64;
}

static int is_signed(uint32_t t) { return t == TL_GGUF_I8 || t == TL_GGUF_I16 || t == TL_GGUF_I32 || t == TL_GGUF_I64; }

/* One integer element at p; values of u64 over INT64_MAX come back as -1 with *big set. */
static int64_t int_at(uint32_t t, const unsigned char *p, int *big)
{
    unsigned n = value_type_size[t];
    uint64_t v = le(p, (int)n);
    *big = 0;
    if (is_signed(t)) {
        if (n < 8 && (v >> (n * 8 - 1)) & 1)
            v |= ~(uint64_t)0 << (n * 8);
        return (int64_t)v;
    }
    if (v > INT64_MAX) {
        *big = 1;
        return -1;
    }
    return (int64_t)v;
}

static double float_at(uint32_t t, const unsigned char *p)
{
    if (t == TL_GGUF_F32) {
        uint32_t u = (uint32_t)le(p, 4);
        float x;
        memcpy(&x, &u, 4);
        return x;
    }
    if (t == TL_GGUF_F64) {
        uint64_t u = le(p, 8);
        double x;
        memcpy(&x, &u, 8);
        return x;
    }
    int big;
    return (double)int_at(t, p, &big);
}

static int wrong_type(const tl_gguf *f, const tl_gguf_kv *kv, const char *want, tl_error *err)
{
    char pk[160];
    return tl_error_set(err, "%s: key '%s' is %s%s, expected %s", f->path, tl_st_printable(kv->key, pk, sizeof pk),
                        kv->type == TL_GGUF_ARRAY ? "an array of " : "",
                        value_type_names[kv->type == TL_GGUF_ARRAY ? kv->arr_type : kv->type], want);
}

int tl_gguf_get_int(const tl_gguf *f, const char *key, int64_t lo, int64_t hi, int64_t *out, tl_error *err)
{
    const tl_gguf_kv *kv = tl_gguf_find_kv(f, key);
    if (!kv)
        return 1;
    if (!is_int_type(kv->type))
        return wrong_type(f, kv, "an integer", err);
    int big;
    int64_t v = int_at(kv->type, kv->val, &big);
    if (big || v < lo || v > hi)
        return tl_error_set(err, "%s: key '%s': %s%lld is outside %lld..%lld", f->path, key, big ? "over " : "",
                            big ? (long long)INT64_MAX : (long long)v, (long long)lo, (long long)hi);
    *out = v;
    return 0;
}

int tl_gguf_get_float(const tl_gguf *f, const char *key, double *out, tl_error *err)
{
    const tl_gguf_kv *kv = tl_gguf_find_kv(f, key);
    if (!kv)
        return 1;
    if (kv->type != TL_GGUF_F32 && kv->type != TL_GGUF_F64 && !is_int_type(kv->type))
        return wrong_type(f, kv, "a number", err);
    *out = float_at(kv->type, kv->val);
    return 0;
}

/* The key's value when it has type `type`: 0 and *kv, 1 when the key is absent, or the error
 * naming what was wanted. */
static int find_typed(const tl_gguf *f, const char *key, uint32_t type, const char *want, const tl_gguf_kv **kv,
                      tl_error *err)
{
    *kv = tl_gguf_find_kv(f, key);
    if (!*kv)
        return 1;
    return (*kv)->type == type ? 0 : wrong_type(f, *kv, want, err);
}

int tl_gguf_get_bool(const tl_gguf *f, const char *key, int *out, tl_error *err)
{
    const tl_gguf_kv *kv;
    int rc = find_typed(f, key, TL_GGUF_BOOL, "a bool", &kv, err);
    if (!rc)
        *out = kv->val[0];
    return rc;
}

int tl_gguf_get_str(const tl_gguf *f, const char *key, const char **s, uint64_t *len, tl_error *err)
{
    const tl_gguf_kv *kv;
    int rc = find_typed(f, key, TL_GGUF_STRING, "a string", &kv, err);
    if (!rc) {
        *len = le(kv->val, 8);
        *s = (const char *)kv->val + 8;
    }
    return rc;
}

int tl_gguf_get_arr(const tl_gguf *f, const char *key, uint32_t arr_type, const tl_gguf_kv **out, tl_error *err)
{
    const tl_gguf_kv *kv = tl_gguf_find_kv(f, key);
    if (!kv)
        return 1;
    int ok = kv->type == TL_GGUF_ARRAY &&
             (kv->arr_type == arr_type || (arr_type == TL_GGUF_I64 && is_int_type(kv->arr_type)) ||
              (arr_type == TL_GGUF_F64 && (kv->arr_type == TL_GGUF_F32 || kv->arr_type == TL_GGUF_F64)));
    if (!ok) {
        char want[64];
        snprintf(want, sizeof want, "an array of %s",
                 arr_type == TL_GGUF_I64 ? "integers" : arr_type == TL_GGUF_F64 ? "floats" : value_type_names[arr_type]);
        return wrong_type(f, kv, want, err);
    }
    *out = kv;
    return 0;
}

void tl_gguf_arr_next_str(const tl_gguf_kv *kv, uint64_t *cursor, const char **s, uint64_t *len)
{
    *len = le(kv->val + *cursor, 8);
    *s = (const char *)kv->val + *cursor + 8;
    *cursor += 8 + *len;
}

int64_t tl_gguf_arr_int(const tl_gguf_kv *kv, uint64_t i)
{
    int big;
    return int_at(kv->arr_type, kv->val + i * value_type_size[kv->arr_type], &big);
}

double tl_gguf_arr_float(const tl_gguf_kv *kv, uint64_t i)
{
    return float_at(kv->arr_type, kv->val + i * value_type_size[kv->arr_type]);
}

/* The ggml types the engine computes in as they are (the K-quants through quant_k.c's
 * block math, which quant.c calls). */
int tl_gguf_native_dtype(uint32_t type)
{
    switch (type) {
    case TL_GGML_F32: return TL_F32;
    case TL_GGML_F16: return TL_F16;
    case TL_GGML_BF16: return TL_BF16;
    case TL_GGML_Q8_0: return TL_Q8_0;
    case TL_GGML_Q4_0: return TL_Q4_0;
    case TL_GGML_Q4_K: return TL_Q4_K;
    case TL_GGML_Q5_K: return TL_Q5_K;
    case TL_GGML_Q6_K: return TL_Q6_K;
    default: return -1;
    }
}

int tl_gguf_dequantize_row(uint32_t type, const void *src, float *dst, int64_t n)
{
    int native = tl_gguf_native_dtype(type);
    if (native < 0 || n % tl_dtype_block((tl_dtype)native))
        return -1;
    tl_dequantize_row((tl_dtype)native, src, dst, n);
    return 0;
}
