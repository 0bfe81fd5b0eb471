/* A device fault must fail the run, not print plausible numbers after it. Two modes, each its
 * own process (a fault poisons the process's CUDA context):
 *   test_cuda_fault direct   a matrix-vector launch stores through a bad pointer: sync
 *                            returns -1 with the CUDA error, and so does every later sync
 *   test_cuda_fault engine   TL_CUDA_FAULT_AT_PASS=3 makes the third pass launch a faulting
 *                            kernel: tl_engine_decode returns -1, and so does the next one
 * (the bench's exit status is checked by the test gpu_bench_fault). Exits 77 without a device. */
#include <stdint.h>
#include <stdlib.h>

#include "../common/tl_test.h"
#include "cuda/cuda.h"
#include "tokenloop/backend.h"
#include "tokenloop/engine.h"
#include "tokenloop/synthetic.h"

static void direct(void)
{
    const tl_backend_ops *be = tl_backend_cuda();
    tl_error err = {{0}};
    void *ctx = be->create(0, &err);
    TL_CHECK_MSG(ctx != NULL, "create: %s", err.msg);
    if (!ctx)
        return;
    uint16_t *w = calloc(256 * 256, sizeof(uint16_t));
    tl_weight h = {.data = w, .dtype = TL_BF16, .rows = 256, .cols = 256}, d;
    TL_CHECK_INT(be->upload(ctx, &h, &d, &err), 0);
    float *x = be->alloc(ctx, 256);
    TL_CHECK_INT(be->sync(ctx, &err), 0);
    be->matmul(ctx, (float *)(uintptr_t)0x1000, x, &d, 1);   /* out: no allocation of ours */
    memset(&err, 0, sizeof err);
    TL_CHECK_INT(be->sync(ctx, &err), -1);
    printf("sync after the fault: %s\n", err.msg);
    TL_CHECK_MSG(!strncmp(err.msg, "cuda: ", 6) && !strchr(err.msg, '\n'), "%s", err.msg);
    TL_CHECK_INT(be->sync(ctx, NULL), -1);   /* sticky */
    tl_cuda_stats st;
    tl_cuda_get_stats(ctx, &st);
    TL_CHECK(st.errors > 0);
    be->destroy(ctx);   /* must return, not hang, on a faulted context */
    free(w);
}

static void engine(void)
{
    setenv("TL_CUDA_FAULT_AT_PASS", "3", 1);
    tl_config c;
    tl_error err = {{0}};
    TL_CHECK_INT(tl_synthetic_config(&c, "tiny", &err), 0);
    tl_model *m = NULL;
    TL_CHECK_INT(tl_model_synthetic(&m, &c, TL_BF16, 7, &err), 0);
    tl_engine *e = NULL;
    TL_CHECK_MSG(tl_engine_create(&e, m, tl_backend_cuda(), 0, 64, &err) == 0, "%s", err.msg);
    if (e) {
        int ids[4] = {1, 5, 9, 13};
        TL_CHECK_INT(tl_engine_prefill(e, ids, 4, &err), 0);  /* pass 1 */
        TL_CHECK_INT(tl_engine_decode(e, 7, &err), 0);        /* pass 2 */
        memset(&err, 0, sizeof err);
        TL_CHECK_INT(tl_engine_decode(e, 8, &err), -1);       /* pass 3: the fault */
        printf("decode after the fault: %s\n", err.msg);
        TL_CHECK_MSG(!strncmp(err.msg, "cuda: ", 6), "%s", err.msg);
        TL_CHECK_INT(tl_engine_decode(e, 9, &err), -1);
        tl_engine_free(e);
    }
    tl_model_free(m);
}

int main(int argc, char **argv)
{
    if (!tl_backend_cuda() || !tl_backend_cuda_available()) {
        printf("test_cuda_fault: SKIP: no usable CUDA device\n");
        return 77;
    }
    if (argc == 2 && !strcmp(argv[1], "direct"))
        direct();
    else if (argc == 2 && !strcmp(argv[1], "engine"))
        engine();
    else {
        fprintf(stderr, "usage: test_cuda_fault direct|engine\n");
        return 2;
    }
    return TL_TEST_END("test_cuda_fault");
}
