/* A .safetensors file: the 8-byte header length, the JSON header and the data offsets are
 * checked against the file before anything is read through the mapping. Oracle: every tensor
 * the loader accepts lies inside the file, in order, with the byte size its dtype and shape
 * give; touching its first and last byte must not fault. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "safetensors.h"

static uint64_t dtype_size(const char *name)
{
    static const struct { const char *n; uint64_t s; } t[] = {
        {"BF16", 2}, {"F16", 2}, {"F32", 4}, {"F64", 8}, {"I64", 8}, {"I32", 4}, {"I16", 2},
        {"I8", 1}, {"U8", 1}, {"BOOL", 1}, {"U16", 2}, {"U32", 4}, {"U64", 8},
        {"F8_E4M3", 1}, {"F8_E5M2", 1}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(t[i].n, name)) return t[i].s;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = tlf_write("model.safetensors", data, size);
    tl_st_file f;
    tl_error err = {{0}};
    if (tl_st_open(&f, path, &err)) {
        tlf_check_error(&err);
        return 0;
    }
    volatile unsigned sum = 0;
    for (int i = 0; i < f.n; i++) {
        const tl_st_tensor *t = &f.tensors[i];
        if (t->end < t->begin) tlf_fail("a tensor ends before it begins");
        if ((const char *)t->data < (const char *)f.map ||
            (const char *)t->data + (t->end - t->begin) > (const char *)f.map + f.size)
            tlf_fail("a tensor lies outside the file");
        uint64_t es = dtype_size(t->dtype_name);
        if (t->known) {
            uint64_t n = es;
            for (int d = 0; d < t->ndim; d++) n *= (uint64_t)t->shape[d];
            if (n != t->end - t->begin) tlf_fail("a tensor's byte size does not match its shape");
        }
        if (t->end > t->begin) sum += ((const uint8_t *)t->data)[0] + ((const uint8_t *)t->data)[t->end - t->begin - 1];
        if (tl_st_find(&f, t->name) == NULL) tlf_fail("a listed tensor cannot be found by name");
    }
    (void)sum;
    tl_st_close(&f);
    return 0;
}
