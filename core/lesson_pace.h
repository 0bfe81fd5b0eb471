/* The lessons' `pace` action (lesson.c's table): a decode step's time against a plain read of
 * the weights it reads, on random weights of a published shape in one or more dtypes, measured
 * by tl_pace_measure, and its fields: pace.D.X for each dtype D, pace.X for the whole.
 * Private to core/lesson*.c. */
#ifndef TOKENLOOP_LESSON_PACE_H
#define TOKENLOOP_LESSON_PACE_H

#include <cjson/cJSON.h>

#include "tokenloop/metrics.h"
#include "tokenloop/session.h"

typedef struct lp_state lp_state;

/* The action's value, {"as", "shape"?, "dtypes"?, "prompt_tokens"?, "steps"?, "runs"?,
 * "same_within"?, "warm_within"?}: NULL when it is well formed, else what is wrong. */
const char *lp_check(const cJSON *v);
/* Runs the measurement into *p (replacing what was there). 0, or -1 with err. */
int lp_run(lp_state **p, tl_session *s, const cJSON *v, tl_error *err);
void lp_free(lp_state *p);
/* 0: a number field, 1: a text field, -1: not a pace field. */
int lp_field_kind(const char *name);
/* A pace field's value: NAN / "" before the action ran or for a dtype it did not measure. */
double lp_num(const lp_state *p, const char *name);
const char *lp_str(const lp_state *p, const char *name);
/* The comparisons it makes, i = 0, 1, ...: AS_cache (the session's weights, a, against the
 * last-level cache, b), AS_pre (the first dtype's prefill against its later decodes), AS_warm
 * (its first decode against the later ones), then AS_q8, AS_q4, ... (each dtype's decode
 * against the dtype before it in the list). -1 past the last. */
int lp_compare(const lp_state *p, int i, char name[32], tl_cmp *c, double *same_within);

#endif
