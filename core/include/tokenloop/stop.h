/* The three reasons generation stops, checked after each appended token; exactly one is
 * reported. When several hold on the same token: eos, then stop_string, then max_new_tokens.
 * The token that stops generation is part of the output, as in transformers. */
#ifndef TOKENLOOP_STOP_H
#define TOKENLOOP_STOP_H

#include <stddef.h>
#include "tokenloop/model.h"

#define TL_MAX_STOP 16

typedef enum {
    TL_STOP_NONE = 0,
    TL_STOP_EOS,
    TL_STOP_STRING,
    TL_STOP_MAX_NEW_TOKENS,
} tl_stop_reason;

/* Where the max_new_tokens budget came from. */
typedef enum {
    TL_BUDGET_REQUEST = 0,         /* the request's max_new_tokens */
    TL_BUDGET_GEN_MAX_NEW_TOKENS,  /* generation_config.json max_new_tokens */
    TL_BUDGET_GEN_MAX_LENGTH,      /* generation_config.json max_length - prompt length */
    TL_BUDGET_DEFAULT,             /* transformers' default: 20 new tokens */
    TL_BUDGET_CONTEXT,             /* any of these, cut to what the context still holds */
} tl_budget_source;

const char *tl_stop_reason_name(tl_stop_reason r);   /* "eos", "stop_string", "max_new_tokens", "none" */
const char *tl_budget_source_name(tl_budget_source s);

typedef struct tl_stop_config {
    int eos_ids[TL_MAX_EOS], n_eos;
    const char *eos_source;         /* "generation_config.json" or "config.json" */
    int max_new_tokens;
    tl_budget_source budget_source;
    const char *stop[TL_MAX_STOP];  /* borrowed */
    int n_stop;
} tl_stop_config;

typedef struct tl_stop_result {
    tl_stop_reason reason;
    int eos_id;                 /* TL_STOP_EOS: the id */
    int stop_index;             /* TL_STOP_STRING: which string */
    size_t match_start, match_end;  /* TL_STOP_STRING: byte range in the generated text */
    int token_index;            /* the generated token (0-based) that stopped it */
    char detail[256];           /* one line for people: "eos id 128009", "stop string \"\\n\\n\" at bytes 12-14" */
} tl_stop_result;

/* The EOS set: generation_config.json's when it has one, else config.json's. */
void tl_stop_eos_from_model(tl_stop_config *c, const tl_model *m);
/* The budget: request (> 0), else gen->max_new_tokens, else gen->max_length - prompt_len,
 * else 20; then cut to capacity - prompt_len when capacity > 0. At least 1. */
int tl_stop_budget(const tl_gen_config *gen, int request, int prompt_len, int capacity,
                   tl_budget_source *src);

/* After token number n_generated-1 (id) was appended. text/len: the generated text so far
 * (all generated tokens' bytes, special tokens as their text); last_start: where the newest
 * token's bytes begin in it. A stop string matches as in transformers' StopStringCriteria: an
 * occurrence that ends inside the newest token. */
tl_stop_result tl_stop_check(const tl_stop_config *c, int id, int n_generated,
                             const char *text, size_t len, size_t last_start);

#endif
