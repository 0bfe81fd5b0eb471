/* Test driver: runs a script of step-API calls on a model directory and writes what each
 * forward pass produced, for tests/reference/check_engine.py to compare with NumPy.
 *
 *   engine_dump MODEL_DIR OUT [--capacity N] [--mixed | --bf16-activations] [--dtype D] OP...
 *     prefill:1,2,3   decode:5   rewind:2   greedy:N (N decodes, each feeding the argmax)
 *
 * OUT.txt gets one line per pass "<op> <position after> <token fed or -1>", OUT.f32 the
 * pass's logits (vocab_size little-endian floats). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenloop/engine.h"

static int argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

static void record(tl_engine *e, FILE *txt, FILE *bin, const char *op, int fed)
{
    int vocab = tl_engine_model(e)->cfg.vocab_size;
    fprintf(txt, "%s %d %d\n", op, tl_engine_pos(e), fed);
    fwrite(tl_engine_logits(e), sizeof(float), (size_t)vocab, bin);
}

static int run_op(tl_engine *e, const char *op, FILE *txt, FILE *bin, tl_error *err)
{
    const char *arg = strchr(op, ':');
    if (!arg)
        return tl_error_set(err, "%s: expected OP:ARG", op);
    arg++;
    if (!strncmp(op, "prefill:", 8)) {
        int ids[4096], n = 0;
        for (char *p = (char *)arg; *p && n < 4096; p += *p == ',')
            ids[n++] = (int)strtol(p, &p, 10);
        if (tl_engine_prefill(e, ids, n, err))
            return -1;
        record(e, txt, bin, "prefill", -1);
    } else if (!strncmp(op, "decode:", 7)) {
        int id = atoi(arg);
        if (tl_engine_decode(e, id, err))
            return -1;
        record(e, txt, bin, "decode", id);
    } else if (!strncmp(op, "rewind:", 7)) {
        if (tl_engine_rewind(e, atoi(arg)))
            return tl_error_set(err, "%s: cannot rewind", op);
        fprintf(txt, "rewind %d -1\n", tl_engine_pos(e));
    } else if (!strncmp(op, "greedy:", 7)) {
        for (int i = 0, n = atoi(arg); i < n; i++) {
            int id = argmax(tl_engine_logits(e), tl_engine_model(e)->cfg.vocab_size);
            if (tl_engine_decode(e, id, err))
                return -1;
            record(e, txt, bin, "greedy", id);
        }
    } else {
        return tl_error_set(err, "%s: unknown op", op);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: engine_dump MODEL_DIR OUT [--capacity N] [--mixed | --bf16-activations] [--dtype D] "
                        "[--kv-cache bf16] OP...\n");
        return 2;
    }
    int first = 3, capacity = 0;
    tl_precision prec = TL_PRECISION_EXACT;   /* the reference's terms; the modes that round by flag */
    const char *dtype = NULL, *kv = NULL;
    for (;;) {
        if (first + 1 < argc && !strcmp(argv[first], "--capacity")) {
            capacity = atoi(argv[first + 1]);
            first += 2;
        } else if (first + 1 < argc && !strcmp(argv[first], "--dtype")) {
            dtype = argv[first + 1];
            first += 2;
        } else if (first + 1 < argc && !strcmp(argv[first], "--kv-cache")) {
            kv = argv[first + 1];
            first += 2;
        } else if (first < argc && !strcmp(argv[first], "--bf16-activations")) {
            prec = TL_PRECISION_BF16;
            first++;
        } else if (first < argc && !strcmp(argv[first], "--mixed")) {
            prec = TL_PRECISION_MIXED;
            first++;
        } else {
            break;
        }
    }
    tl_error err = {{0}};
    tl_model *m = NULL;
    tl_engine *e = NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s.txt", argv[2]);
    FILE *txt = fopen(path, "w");
    snprintf(path, sizeof path, "%s.f32", argv[2]);
    FILE *bin = fopen(path, "wb");
    tl_dtype dt;
    int rc = !txt || !bin || tl_model_load(&m, argv[1], &err);
    if (!rc && dtype) {   /* the weights converted on load, as generate --dtype does */
        tl_model *conv = NULL;
        rc = tl_dtype_parse(dtype, &dt) ? tl_error_set(&err, "--dtype: %s: unknown", dtype)
                                        : tl_model_convert(&conv, m, dt, &err);
        tl_model_free(m);
        m = conv;
    }
    rc = rc || tl_engine_create(&e, m, tl_backend_cpu(), 0, capacity, &err) || tl_engine_set_precision(e, prec, &err);
    if (!rc && kv)
        rc = strcmp(kv, "bf16") ? tl_error_set(&err, "--kv-cache: %s: only bf16", kv)
                                : tl_engine_set_kv_dtype(e, TL_BF16, &err);
    for (int i = first; !rc && i < argc; i++)
        rc = run_op(e, argv[i], txt, bin, &err);
    if (rc)
        fprintf(stderr, "engine_dump: %s\n", err.msg[0] ? err.msg : "cannot write output");
    tl_engine_free(e);
    tl_model_free(m);
    if (txt) fclose(txt);
    if (bin) fclose(bin);
    return rc ? 1 : 0;
}
