/* The CUDA backend refuses a model its kernels cannot run before touching any device, so
 * this runs on every machine (no GPU needed, label cuda, not gpu): head_dim above 256 (the
 * attention kernel's limit) is one line naming config.json and the field, from
 * tl_backend_ops.accepts and from tl_engine_create, ahead of cudaGetDeviceCount. */
#include <stdlib.h>

#include "../common/tl_test.h"
#include "cuda/cuda.h"
#include "tokenloop/backend.h"
#include "tokenloop/engine.h"

static tl_config shape(int head_dim)
{
    tl_config c;
    memset(&c, 0, sizeof c);
    c.hidden_size = 64;
    c.intermediate_size = 128;
    c.n_layers = 1;
    c.n_heads = 2;
    c.n_kv_heads = 1;
    c.head_dim = head_dim;
    c.vocab_size = 100;
    c.max_position_embeddings = 64;
    c.rms_norm_eps = 1e-5f;
    c.rope_theta = 10000.0f;
    c.bos_id = 1;
    c.n_eos = 1;
    c.eos_ids[0] = 2;
    c.dtype = TL_BF16;
    return c;
}

int main(void)
{
    const tl_backend_ops *be = tl_backend_cuda();
    TL_CHECK(be != NULL && be->accepts != NULL);
    if (!be || !be->accepts)
        return TL_TEST_END("test_cuda_accepts");
    tl_error err = {{0}};
    tl_config c = shape(TL_CUDA_MAX_HEAD_DIM);
    TL_CHECK_INT(be->accepts(&c, &err), 0);
    c = shape(128);
    TL_CHECK_INT(be->accepts(&c, &err), 0);
    c = shape(TL_CUDA_MAX_HEAD_DIM + 2);
    TL_CHECK_INT(be->accepts(&c, &err), -1);
    TL_CHECK_MSG(!strncmp(err.msg, "head_dim: 258 ", 14) && !strchr(err.msg, '\n'), "%s", err.msg);

    /* through the engine: a model read from a directory names its config.json */
    c = shape(512);
    tl_model *m = NULL;
    TL_CHECK_INT(tl_model_synthetic(&m, &c, TL_BF16, 1, &err), 0);
    if (m) {
        snprintf(m->dir, sizeof m->dir, "/models/wide-heads");
        tl_engine *e = (tl_engine *)1;
        memset(&err, 0, sizeof err);
        TL_CHECK_INT(tl_engine_create(&e, m, be, 0, 16, &err), -1);
        TL_CHECK(e == NULL);
        TL_CHECK_STR(err.msg, "/models/wide-heads/config.json: head_dim: 512 is more than the 256 the cuda "
                              "backend's attention handles");
        m->dir[0] = 0;
        TL_CHECK_INT(tl_engine_create(&e, m, be, 0, 16, &err), -1);
        TL_CHECK_MSG(!strncmp(err.msg, "synthetic model: head_dim: 512", 30), "%s", err.msg);
        /* the CPU backend runs any head_dim */
        TL_CHECK_INT(tl_engine_create(&e, m, tl_backend_cpu(), 1, 16, &err), 0);
        tl_error e2;
        TL_CHECK_INT(tl_engine_decode(e, 3, &e2), 0);
        tl_engine_free(e);
        tl_model_free(m);
    }
    return TL_TEST_END("test_cuda_accepts");
}
