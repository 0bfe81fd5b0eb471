/* cuBLAS is opened when the CUDA backend first makes a context, not linked into every process
 * (kernels/cuda/backend.cu). No GPU needed (label cuda): the library this build was configured
 * with opens and has the four entry points the backend calls; a path that does not exist
 * (TL_CUDA_CUBLAS, as a broken install would be) gives one line naming the cause.
 *   test_cuda_blas            expects it to load
 *   test_cuda_blas missing    run with TL_CUDA_CUBLAS=/nonexistent/...: expects the error */
#include <stdio.h>
#include <string.h>

#include "../common/tl_test.h"
#include "cuda/cuda.h"

int main(int argc, char **argv)
{
    char msg[512] = "";
    int want_fail = argc > 1 && !strcmp(argv[1], "missing");
    int rc = tl_cuda_load_blas(msg, sizeof msg);
    if (!want_fail) {
        TL_CHECK_MSG(rc == 0, "cuBLAS did not load: %s", msg);
        TL_CHECK_INT(tl_cuda_load_blas(NULL, 0), 0);   /* once: the second call reuses it */
        return TL_TEST_END("cuda_blas");
    }
    TL_CHECK_INT(rc, -1);
    printf("message: %s\n", msg);
    TL_CHECK(!strncmp(msg, "cannot load cuBLAS: ", 20));
    TL_CHECK(strstr(msg, "/nonexistent/libcublas.so.13") != NULL);
    TL_CHECK(strchr(msg, '\n') == NULL);
    TL_CHECK_INT(tl_cuda_load_blas(msg, sizeof msg), -1);
    return TL_TEST_END("cuda_blas_missing");
}
