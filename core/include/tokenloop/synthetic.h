/* Built-in shapes of published Llama 3.x models, so `bench --synthetic NAME` measures a real
 * model's shape without its checkpoint (tl_model_synthetic fills random weights). */
#ifndef TOKENLOOP_SYNTHETIC_H
#define TOKENLOOP_SYNTHETIC_H

#include "tokenloop/model.h"

/* The config.json values of NAME ("llama-3.2-1b", "llama-3.1-8b", or "tiny", a few-MB shape
 * for tests); -1 for an unknown name. */
int tl_synthetic_config(tl_config *cfg, const char *name, tl_error *err);
/* The known names, comma-separated, for usage and error messages. */
const char *tl_synthetic_names(void);

#endif
