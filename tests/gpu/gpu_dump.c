/* Test driver: a script of step-API calls on the CUDA backend, written in the format of
 * tests/engine/engine_dump so tests/reference/check_engine.py can compare every pass with the
 * float64 NumPy reference.
 *
 *   gpu_dump --probe                 exit 0 if a CUDA device is usable, else 77
 *   gpu_dump --bandwidth [SECONDS]   one JSON line: the device's read bandwidth (the decode
 *                                    floor's denominator) and its copy bandwidth, in GB/s
 *   gpu_dump MODEL_DIR OUT OP...     prefill:1,2,3  decode:5  rewind:2
 *
 * OUT.txt: one line per pass "<op> <position after> <token fed or -1>"; OUT.f32: the logits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda.h"
#include "tokenloop/backend.h"
#include "tokenloop/engine.h"

static int run_op(tl_engine *e, const char *op, FILE *txt, FILE *bin, tl_error *err)
{
    const char *arg = strchr(op, ':');
    if (!arg)
        return tl_error_set(err, "%s: expected OP:ARG", op);
    arg++;
    int fed = -1;
    if (!strncmp(op, "prefill:", 8)) {
        static int ids[4096];
        int n = 0;
        for (char *p = (char *)arg; *p && n < 4096; p += *p == ',')
            ids[n++] = (int)strtol(p, &p, 10);
        if (tl_engine_prefill(e, ids, n, err))
            return -1;
    } else if (!strncmp(op, "decode:", 7)) {
        fed = atoi(arg);
        if (tl_engine_decode(e, fed, err))
            return -1;
    } else if (!strncmp(op, "rewind:", 7)) {
        if (tl_engine_rewind(e, atoi(arg)))
            return tl_error_set(err, "%s: cannot rewind", op);
        fprintf(txt, "rewind %d -1\n", tl_engine_pos(e));
        return 0;
    } else {
        return tl_error_set(err, "%s: unknown op", op);
    }
    fprintf(txt, "%.*s %d %d\n", (int)(arg - op - 1), op, tl_engine_pos(e), fed);
    fwrite(tl_engine_logits(e), sizeof(float), (size_t)tl_engine_model(e)->cfg.vocab_size, bin);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--probe")) {
        int ok = tl_backend_cuda() && tl_backend_cuda_available();
        if (!ok)
            printf("gpu_dump: SKIP: no usable CUDA device\n");
        return ok ? 0 : 77;
    }
    if ((argc == 2 || argc == 3) && !strcmp(argv[1], "--bandwidth")) {
        if (!tl_backend_cuda() || !tl_backend_cuda_available()) {
            printf("gpu_dump: SKIP: no usable CUDA device\n");
            return 77;
        }
        double budget = argc == 3 ? atof(argv[2]) : 0.5;
        tl_error err = {{0}};
        const tl_backend_ops *be = tl_backend_cuda();
        void *ctx = be->create(0, &err);
        if (!ctx) {
            fprintf(stderr, "gpu_dump: %s\n", err.msg);
            return 1;
        }
        double rd = tl_cuda_read_bandwidth(ctx, budget), cp = be->bandwidth(ctx, budget);
        int bad = be->sync(ctx, &err) || rd <= 0;
        printf("{\"read_gbps\": %.1f, \"copy_gbps\": %.1f, \"probe\": \"read: 16-byte evict-first loads of a "
               "buffer far larger than L2; copy: device-to-device, read + write bytes\"}\n", rd / 1e9, cp / 1e9);
        be->destroy(ctx);
        return bad ? 1 : 0;
    }
    if (argc < 4) {
        fprintf(stderr, "usage: gpu_dump MODEL_DIR OUT OP...\n");
        return 2;
    }
    tl_error err = {{0}};
    tl_model *m = NULL;
    tl_engine *e = NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s.txt", argv[2]);
    FILE *txt = fopen(path, "w");
    snprintf(path, sizeof path, "%s.f32", argv[2]);
    FILE *bin = fopen(path, "wb");
    int rc = !txt || !bin || tl_model_load(&m, argv[1], &err) ||
             tl_engine_create(&e, m, tl_backend_cuda(), 0, 0, &err);
    for (int i = 3; !rc && i < argc; i++)
        rc = run_op(e, argv[i], txt, bin, &err);
    if (rc)
        fprintf(stderr, "gpu_dump: %s\n", err.msg[0] ? err.msg : "cannot write output");
    tl_engine_free(e);
    tl_model_free(m);
    if (txt)
        fclose(txt);
    if (bin)
        fclose(bin);
    return rc ? 1 : 0;
}
