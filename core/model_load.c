/* tl_model_load: a Hugging Face model directory (model.c) or a GGUF file (model_gguf.c), told
 * apart by the path, so that the two loaders stay side by side and neither calls the other. */
#include "model_priv.h"

int tl_model_load(tl_model **out, const char *path, tl_error *err)
{
    if (tl_model_is_gguf(path))
        return tl_model_load_gguf(out, path, err);
    return tl_model_load_dir(out, path, err);
}
