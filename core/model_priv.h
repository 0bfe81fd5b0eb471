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

/* tl_config_load, also saying whether config.json named a dtype (torch_dtype or dtype). */
int tl_config_load_ex(tl_config *cfg, const char *path, int *has_dtype, tl_error *err);

#endif
