/* Private to core: how tl_model_free releases a model without knowing where it came from.
 * Whatever m->priv points to begins with this header; a loaded model (model.c) and a
 * synthetic one (synthetic.c) each put their own release there. */
#ifndef TL_MODEL_PRIV_H
#define TL_MODEL_PRIV_H

#include "tokenloop/model.h"

typedef struct tl_model_priv {
    void (*release)(tl_model *m);   /* frees m->layers, m->priv and what they own; not m */
    int copied;                     /* tl_model_copy_to_hugepages ran */
    void **copies;                  /* its buffers, freed by tl_model_free */
    size_t n_copies;
} tl_model_priv;

/* Fills m->n_params and m->weight_bytes from the bound weights (model.c says what counts). */
void tl_model_count(tl_model *m);

/* tl_config_load, also saying whether config.json named a dtype (torch_dtype or dtype). */
int tl_config_load_ex(tl_config *cfg, const char *path, int *has_dtype, tl_error *err);

/* model.c: tl_model_load for a Hugging Face model directory (safetensors, config.json). */
int tl_model_load_dir(tl_model **out, const char *dir, tl_error *err);

/* model_gguf.c: is path a regular file that is a GGUF file (the magic, or a .gguf name)? */
int tl_model_is_gguf(const char *path);
/* tl_model_load for a GGUF file of a Llama model. */
int tl_model_load_gguf(tl_model **out, const char *path, tl_error *err);

#endif
