/* Where the bundled data lives (the model, the tokenizer, the lessons), so `tokenloop` runs
 * without --model from a checkout, from a build directory anywhere, and after `cmake --install`.
 *
 * Lookup order, the first that holds the item wins:
 *   1. $TOKENLOOP_MODEL / $TOKENLOOP_LESSONS when set and non-empty, taken as given (a wrong
 *      path then fails where it is opened, naming the file);
 *   2. next to the binary (/proc/self/exe; macOS: _NSGetExecutablePath): the install layout, BINDIR/../share/tokenloop/
 *      {models/tl-mini-instruct, tokenizer, lessons}; else a checkout in a directory above it,
 *      {assets/models/tl-mini-instruct, assets/tokenizer, lessons} (build-dir/cli/tokenloop);
 *   3. the source tree recorded at configure time (TL_SOURCE_DIR), for a build directory
 *      outside the checkout;
 *   4. the data directory of the prefix configured at build time (TL_DATA_DIR), for a copy
 *      installed there and then moved away from its data.
 * An item is there when its marker file is: config.json, tokenizer.json, lessons/README.md.
 * When none holds it: a one-line error naming the item and each place looked in. */
#ifndef TOKENLOOP_PATHS_H
#define TOKENLOOP_PATHS_H

#include <stddef.h>
#include "tokenloop/error.h"

#define TL_DEFAULT_MODEL_NAME "tl-mini-instruct"

/* The default model directory. Writes the path to out. */
int tl_paths_default_model(char *out, size_t cap, tl_error *err);

/* The default tokenizer directory (tokenizer.json + tokenizer_config.json): the default model's
 * directory when it has tokenizer.json, else the bundled assets/tokenizer. */
int tl_paths_default_tokenizer(char *out, size_t cap, tl_error *err);

/* The lessons folder; $TOKENLOOP_LESSONS must be a folder. */
int tl_paths_default_lessons(char *out, size_t cap, tl_error *err);

#endif
