/* Where the bundled model lives, so `tokenloop` runs without --model on a fresh checkout. */
#ifndef TOKENLOOP_PATHS_H
#define TOKENLOOP_PATHS_H

#include <stddef.h>
#include "tokenloop/error.h"

#define TL_DEFAULT_MODEL_NAME "tl-mini-instruct"

/* The default model directory: $TOKENLOOP_MODEL when set and non-empty; else
 * assets/models/tl-mini-instruct in the first directory above the running binary
 * (/proc/self/exe) that has it, which finds the checkout from build-dir/tui/tokenloop; else the
 * installed data directory (TL_DATA_DIR/models/tl-mini-instruct). Writes the path to out. */
int tl_paths_default_model(char *out, size_t cap, tl_error *err);

/* The default tokenizer directory (tokenizer.json + tokenizer_config.json): the default model's
 * directory when it has tokenizer.json, else assets/tokenizer found the same way. */
int tl_paths_default_tokenizer(char *out, size_t cap, tl_error *err);

#endif
