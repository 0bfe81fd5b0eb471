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

/* Bytes the weights of cfg take in dtype (the lm_head shares the embedding's values, as
 * tl_model_synthetic makes them). */
double tl_synthetic_bytes(const tl_config *cfg, tl_dtype dtype);
/* MemAvailable from /proc/meminfo in bytes (macOS: free, inactive and purgeable pages); 0 when unknown. */
double tl_synthetic_mem_available(void);
/* The dtype to run NAME's random weights in for a front end (tui, generate): want when its
 * weights fit in avail bytes beside the bf16 ones they are converted from, else the first
 * smaller of q8_0, q4_0 that does (note says so, one line); -1 when none fits or NAME is
 * unknown (err says which). avail <= 0: unknown, want is taken. */
int tl_synthetic_pick_dtype(const char *name, tl_dtype want, double avail, tl_dtype *got, char *note,
                            size_t note_size, tl_error *err);

#endif
