#include <string.h>

#include "tokenloop/backend.h"

#ifndef TL_HAVE_CUDA
const tl_backend_ops *tl_backend_cuda(void) { return NULL; }
int tl_backend_cuda_available(void) { return 0; }
#endif

const tl_backend_ops *tl_backend_find(const char *name)
{
    if (!name || !strcmp(name, "cpu"))
        return tl_backend_cpu();
    if (!strcmp(name, "cuda"))
        return tl_backend_cuda();
    return NULL;
}
