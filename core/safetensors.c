/* Reading a safetensors file: an 8-byte little-endian header length, a JSON header
 * {"name": {"dtype": "BF16", "shape": [r, c], "data_offsets": [begin, end]}, "__metadata__": {...}},
 * then the data section. The file is mapped read-only and never copied. The header is not
 * trusted: every length, offset, shape and name is checked against the file before use. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tokenloop/file.h"
#include "safetensors.h"

#define MAX_HEADER (100u << 20)   /* the format's own limit: 100 MB of JSON */

/* Element sizes of every dtype the format defines; only three are computed with. */
static const struct { const char *name; unsigned size; int known; tl_dtype dtype; } dtypes[] = {
    {"F32", 4, 1, TL_F32}, {"F16", 2, 1, TL_F16}, {"BF16", 2, 1, TL_BF16},
    {"F64", 8, 0, TL_F32}, {"I64", 8, 0, TL_F32}, {"U64", 8, 0, TL_F32},
    {"I32", 4, 0, TL_F32}, {"U32", 4, 0, TL_F32}, {"I16", 2, 0, TL_F32},
    {"U16", 2, 0, TL_F32}, {"I8", 1, 0, TL_F32}, {"U8", 1, 0, TL_F32},
    {"BOOL", 1, 0, TL_F32}, {"F8_E4M3", 1, 0, TL_F32}, {"F8_E5M2", 1, 0, TL_F32},
};

static int utf8_valid(const unsigned char *s)
{
    while (*s) {
        unsigned c = *s, n, min;
        if (c < 0x80) { s++; continue; }
        if ((c & 0xe0) == 0xc0) { n = 1; min = 0x80; c &= 0x1f; }
        else if ((c & 0xf0) == 0xe0) { n = 2; min = 0x800; c &= 0x0f; }
        else if ((c & 0xf8) == 0xf0) { n = 3; min = 0x10000; c &= 0x07; }
        else return 0;
        for (unsigned i = 1; i <= n; i++) {
            if ((s[i] & 0xc0) != 0x80) return 0;
            c = (c << 6) | (s[i] & 0x3f);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
        s += n + 1;
    }
    return 1;
}

/* A printable version of a string that may hold any bytes (error messages stay one line). */
const char *tl_st_printable(const char *s, char *buf, size_t cap)
{
    size_t o = 0;
    for (; *s && o + 5 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c < 0x7f) buf[o++] = (char)c;
        else o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
    }
    buf[o] = 0;
    return buf;
}

/* A JSON number that is a non-negative integer the format can hold exactly. */
static int json_u64(const cJSON *j, uint64_t *out)
{
    if (!cJSON_IsNumber(j)) return -1;
    double d = j->valuedouble;
    if (!(d >= 0 && d <= 9007199254740992.0) || d != (double)(uint64_t)d) return -1;
    *out = (uint64_t)d;
    return 0;
}

static int parse_tensor(tl_st_file *f, const cJSON *j, tl_st_tensor *t, uint64_t data_size,
                        uint64_t data_start, tl_error *err)
{
    char pn[256];
    const char *name = tl_st_printable(j->string, pn, sizeof pn);
    if (!cJSON_IsObject(j))
        return tl_error_set(err, "%s: tensor '%s': header entry is not an object", f->path, name);

    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(j, "dtype");
    if (!cJSON_IsString(dt))
        return tl_error_set(err, "%s: tensor '%s': dtype is missing or not a string", f->path, name);
    unsigned esize = 0;
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (!strcmp(dt->valuestring, dtypes[i].name)) {
            esize = dtypes[i].size;
            t->known = dtypes[i].known;
            t->dtype = dtypes[i].dtype;
        }
    if (!esize) {
        char pd[48];
        return tl_error_set(err, "%s: tensor '%s': unknown dtype '%s'", f->path, name,
                            tl_st_printable(dt->valuestring, pd, sizeof pd));
    }
    snprintf(t->dtype_name, sizeof t->dtype_name, "%s", dt->valuestring);

    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(j, "shape");
    if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) > TL_ST_MAX_DIMS)
        return tl_error_set(err, "%s: tensor '%s': shape is missing or not an array of at most %d dims",
                            f->path, name, TL_ST_MAX_DIMS);
    uint64_t elems = 1;
    const cJSON *d;
    t->ndim = 0;
    cJSON_ArrayForEach(d, shape) {
        uint64_t v;
        if (json_u64(d, &v) || v > INT64_MAX)
            return tl_error_set(err, "%s: tensor '%s': shape holds something other than a size", f->path, name);
        if (__builtin_mul_overflow(elems, v, &elems))
            return tl_error_set(err, "%s: tensor '%s': shape is too large", f->path, name);
        t->shape[t->ndim++] = (int64_t)v;
    }
    uint64_t bytes;
    if (__builtin_mul_overflow(elems, (uint64_t)esize, &bytes))
        return tl_error_set(err, "%s: tensor '%s': shape is too large", f->path, name);

    const cJSON *off = cJSON_GetObjectItemCaseSensitive(j, "data_offsets");
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 ||
        json_u64(cJSON_GetArrayItem(off, 0), &t->begin) || json_u64(cJSON_GetArrayItem(off, 1), &t->end))
        return tl_error_set(err, "%s: tensor '%s': data_offsets is not a pair of byte offsets", f->path, name);
    if (t->begin > t->end)
        return tl_error_set(err, "%s: tensor '%s': data_offsets [%llu, %llu] end before they begin", f->path,
                            name, (unsigned long long)t->begin, (unsigned long long)t->end);
    if (t->end > data_size)
        return tl_error_set(err, "%s: tensor '%s': data_offsets [%llu, %llu] run past the end of the file "
                            "(data section is %llu bytes)", f->path, name, (unsigned long long)t->begin,
                            (unsigned long long)t->end, (unsigned long long)data_size);
    if (t->end - t->begin != bytes)
        return tl_error_set(err, "%s: tensor '%s': shape x %s is %llu bytes but data_offsets cover %llu",
                            f->path, name, t->dtype_name, (unsigned long long)bytes,
                            (unsigned long long)(t->end - t->begin));
    if ((data_start + t->begin) % esize)
        return tl_error_set(err, "%s: tensor '%s': data is not aligned to its %u-byte elements", f->path,
                            name, esize);
    t->data = (const unsigned char *)f->map + data_start + t->begin;
    return 0;
}

static int by_begin(const void *a, const void *b)
{
    const tl_st_tensor *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}

/* No two tensors share a byte, and no name appears twice. Sorts f->tensors by offset. */
static int check_layout(tl_st_file *f, tl_error *err)
{
    char pa[256], pb[256];
    /* names first: a name written twice with the same offsets would otherwise be reported as
     * a tensor overlapping itself */
    for (int i = 0; i < f->n; i++)
        for (int k = i + 1; k < f->n; k++)
            if (!strcmp(f->tensors[i].name, f->tensors[k].name))
                return tl_error_set(err, "%s: tensor '%s' appears twice in the header", f->path,
                                    tl_st_printable(f->tensors[i].name, pa, sizeof pa));
    qsort(f->tensors, (size_t)f->n, sizeof *f->tensors, by_begin);
    const tl_st_tensor *prev = NULL;
    for (int i = 0; i < f->n; i++) {
        const tl_st_tensor *t = &f->tensors[i];
        if (t->begin == t->end) continue;
        if (prev && t->begin < prev->end)
            return tl_error_set(err, "%s: tensors '%s' and '%s' overlap (bytes %llu-%llu and %llu-%llu)",
                                f->path, tl_st_printable(prev->name, pa, sizeof pa),
                                tl_st_printable(t->name, pb, sizeof pb),
                                (unsigned long long)prev->begin, (unsigned long long)prev->end,
                                (unsigned long long)t->begin, (unsigned long long)t->end);
        prev = t;
    }
    return 0;
}

static int parse_header(tl_st_file *f, tl_error *err)
{
    const unsigned char *p = f->map;
    if (f->size < 8)
        return tl_error_set(err, "%s: file is %zu bytes, too short for a safetensors header", f->path, f->size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = (hlen << 8) | p[i];
    if (hlen > f->size - 8)
        return tl_error_set(err, "%s: header length %llu is larger than the file (%zu bytes)", f->path,
                            (unsigned long long)hlen, f->size);
    if (hlen > MAX_HEADER)
        return tl_error_set(err, "%s: header length %llu is over the format's 100 MB limit", f->path,
                            (unsigned long long)hlen);

    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts((const char *)p + 8, (size_t)hlen, &end, 0);
    if (!root) {
        long at = end ? (long)(end - (const char *)p - 8) : -1;
        return tl_error_set(err, "%s: header is not valid JSON (near byte %ld of the header)", f->path, at);
    }
    int rc = 0;
    if (!cJSON_IsObject(root)) {
        rc = tl_error_set(err, "%s: header is not a JSON object", f->path);
        goto out;
    }
    int n = 0;
    const cJSON *j;
    cJSON_ArrayForEach(j, root) n++;
    f->tensors = calloc((size_t)(n ? n : 1), sizeof *f->tensors);
    if (!f->tensors) {
        rc = tl_error_set(err, "%s: out of memory reading the header", f->path);
        goto out;
    }
    cJSON_ArrayForEach(j, root) {
        char pn[256];
        if (!strcmp(j->string, "__metadata__"))
            continue;
        if (!utf8_valid((const unsigned char *)j->string)) {
            rc = tl_error_set(err, "%s: tensor name '%s' is not valid UTF-8", f->path,
                              tl_st_printable(j->string, pn, sizeof pn));
            goto out;
        }
        tl_st_tensor *t = &f->tensors[f->n];
        if (!(t->name = strdup(j->string))) {
            rc = tl_error_set(err, "%s: out of memory reading the header", f->path);
            goto out;
        }
        f->n++;
        if ((rc = parse_tensor(f, j, t, f->size - 8 - hlen, 8 + hlen, err)))
            goto out;
    }
    rc = check_layout(f, err);
out:
    cJSON_Delete(root);
    return rc;
}

int tl_st_open(tl_st_file *f, const char *path, tl_error *err)
{
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    const void *map;
    if (tl_file_map(path, &map, &f->size, err))
        return -1;
    f->map = (void *)map;
    if (parse_header(f, err)) {
        tl_st_close(f);
        return -1;
    }
    return 0;
}

void tl_st_close(tl_st_file *f)
{
    for (int i = 0; i < f->n; i++)
        free(f->tensors[i].name);
    free(f->tensors);
    if (f->map)
        munmap(f->map, f->size);
    f->tensors = NULL;
    f->map = NULL;
    f->n = 0;
}

const tl_st_tensor *tl_st_find(const tl_st_file *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->tensors[i].name, name))
            return &f->tensors[i];
    return NULL;
}
