/* The step API: one call is one forward pass. A class steps through these one at a time;
 * tl_generate and the TUI are built on them. */
#ifndef TOKENLOOP_ENGINE_H
#define TOKENLOOP_ENGINE_H

#include "tokenloop/model.h"
#include "tokenloop/backend.h"

typedef struct tl_engine tl_engine;

/* capacity <= 0: min(max_position_embeddings, 4096). */
int tl_engine_create(tl_engine **out, const tl_model *m, const tl_backend_ops *be,
                     int threads, int capacity, tl_error *err);
void tl_engine_free(tl_engine *e);

/* Appends n positions (the first call is the prefill); logits of the last position. */
int tl_engine_prefill(tl_engine *e, const int *ids, int n, tl_error *err);
int tl_engine_decode(tl_engine *e, int id, tl_error *err);
/* Drops the last n positions from the KV cache; the logits become stale (returns -1 if n > pos). */
int tl_engine_rewind(tl_engine *e, int n);

int tl_engine_pos(const tl_engine *e);
int tl_engine_capacity(const tl_engine *e);
const float *tl_engine_logits(const tl_engine *e);     /* host, vocab_size floats */
const tl_model *tl_engine_model(const tl_engine *e);
const char *tl_engine_device(const tl_engine *e);

/* Wall time of the last pass, measured after the backend synchronized. */
double tl_engine_last_ms(const tl_engine *e);
/* Host clock read when the last pass's launches returned, before synchronizing:
 * the "unsynchronized timing" trap. Negative on backends that are synchronous (CPU). */
double tl_engine_last_unsynced_ms(const tl_engine *e);
/* Bytes a decode step at the current position reads: weights + the KV cache so far. */
double tl_engine_step_bytes(const tl_engine *e);

#endif
