/* Test driver for tokenloop/quant.h: converts a file of little-endian floats to a dtype's bytes
 * or back, for check_quant.py to compare with the `gguf` package and NumPy.
 *
 *   quant_dump quantize DTYPE IN.f32 OUT.bin N     (N floats a row; the file holds whole rows)
 *   quant_dump dequantize DTYPE IN.bin OUT.f32 N */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenloop/quant.h"

static void *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc(len > 0 ? (size_t)len : 1);
    *n = buf && len >= 0 && fread(buf, 1, (size_t)len, f) == (size_t)len ? (size_t)len : 0;
    fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    tl_dtype dt;
    long n = argc == 6 ? atol(argv[5]) : 0;
    int quantize = argc == 6 && !strcmp(argv[1], "quantize");
    if (argc != 6 || (!quantize && strcmp(argv[1], "dequantize")) || tl_dtype_parse(argv[2], &dt) || n <= 0 ||
        n % tl_dtype_block(dt)) {
        fprintf(stderr, "usage: quant_dump quantize|dequantize DTYPE IN OUT N (N a multiple of the block)\n");
        return 2;
    }
    size_t len, in_row = quantize ? (size_t)n * 4 : tl_dtype_row_bytes(dt, n);
    size_t out_row = quantize ? tl_dtype_row_bytes(dt, n) : (size_t)n * 4;
    char *in = slurp(argv[3], &len);
    if (!in || len % in_row) {
        fprintf(stderr, "quant_dump: %s: not whole rows of %zu bytes\n", argv[3], in_row);
        return 1;
    }
    size_t rows = len / in_row;
    char *out = malloc(rows * out_row + 1);
    for (size_t r = 0; r < rows; r++) {
        if (quantize)
            tl_quantize_row(dt, (const float *)(in + r * in_row), out + r * out_row, n);
        else
            tl_dequantize_row(dt, in + r * in_row, (float *)(out + r * out_row), n);
    }
    FILE *f = fopen(argv[4], "wb");
    int ok = f && fwrite(out, 1, rows * out_row, f) == rows * out_row;
    if (f)
        fclose(f);
    free(in);
    free(out);
    return ok ? 0 : 1;
}
