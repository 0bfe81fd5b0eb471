/* Choosing the next token with transformers' semantics and order:
 * temperature -> top-k -> top-p, or greedy. The report says what each stage did. */
#ifndef TOKENLOOP_SAMPLER_H
#define TOKENLOOP_SAMPLER_H

#include <stdint.h>
#include "tokenloop/model.h"
#include "tokenloop/topk.h"

#define TL_MAX_TOP 64

typedef struct tl_sampling {
    int greedy;
    float temperature;   /* 1.0 = off */
    int top_k;           /* 0 = off */
    float top_p;         /* 1.0 = off */
    uint64_t seed;
} tl_sampling;

typedef struct tl_candidate {
    int id;
    float logit;
    float prob;          /* softmax of the raw logits */
    float prob_final;    /* after temperature, top-k, top-p and renormalisation (0 if cut) */
    float prob_temp;     /* softmax(logit / temperature), before any cut */
    int cut_top_k, cut_top_p;
} tl_candidate;

/* The figures of a report that cost a pass over the vocabulary each, so a caller asks only for
 * those it shows. Those not asked for are NaN; ids, logits, prob_final, the cuts, kept, chosen
 * and chosen_logit are always there, and the choice is the same whatever is asked. */
#define TL_REPORT_MODEL 1u   /* prob, log_z: the model's own softmax (T = 1) */
#define TL_REPORT_TEMP 2u    /* prob_temp, entropy, mass_outside: the softmax after temperature */
#define TL_REPORT_ALL (TL_REPORT_MODEL | TL_REPORT_TEMP)

typedef struct tl_sample_report {
    unsigned fields;            /* TL_REPORT_* computed */
    int chosen;
    int n;                      /* candidates, sorted by logit, descending */
    tl_candidate cand[TL_MAX_TOP];
    double entropy;             /* nats, of softmax(logit / temperature) */
    double mass_outside;        /* prob_temp mass not in cand[] */
    int kept;                   /* tokens left after top-k and top-p */
    /* log of the raw softmax's normaliser (log sum exp logit): a token's log probability under
     * the model itself is logit - log_z, for the chosen one too when it is not in cand[] */
    double log_z;
    float chosen_logit;
} tl_sample_report;

typedef struct tl_sampler tl_sampler;

/* Defaults from generation_config.json, as transformers fills them (top_k 50 when unset). */
tl_sampling tl_sampling_defaults(const tl_gen_config *gen);
tl_sampler *tl_sampler_create(int vocab_size, tl_sampling s);
void tl_sampler_free(tl_sampler *s);
void tl_sampler_set(tl_sampler *s, tl_sampling p);
tl_sampling tl_sampler_get(const tl_sampler *s);
/* New settings for the next token: the random stream goes on unless the seed changed. */
void tl_sampler_tune(tl_sampler *s, tl_sampling p);
/* Chooses a token; fills rep (if not NULL) with the top n candidates and every figure. */
int tl_sampler_sample(tl_sampler *s, const float *logits, int top_n, tl_sample_report *rep);
/* The same with only the TL_REPORT_* figures asked for (the same token as tl_sampler_sample). */
int tl_sampler_choose(tl_sampler *s, const float *logits, int top_n, unsigned fields, tl_sample_report *rep);
/* What a pass's statistics (tokenloop/topk.h) should hold for the next choice with these
 * settings and fields: TL_STATS_* and the tempered sums' scale (tl_engine_set_stats). */
void tl_sampler_stats_want(const tl_sampler *s, unsigned fields, unsigned *what, float *scale);
/* tl_sampler_choose with the pass's statistics of these logits (NULL: none): the best scores
 * and the sums they hold replace the sampler's own passes over the vocabulary. The token and
 * the report are the same, its sums within a float exp's rounding. */
int tl_sampler_choose_with(tl_sampler *s, const float *logits, const tl_logit_stats *st, int top_n, unsigned fields,
                           tl_sample_report *rep);
/* The report for a token chosen by someone else (the TUI's "force this token"). */
void tl_sampler_explain(tl_sampler *s, const float *logits, int top_n, int chosen, unsigned fields,
                        tl_sample_report *rep);

#endif
