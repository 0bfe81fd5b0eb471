/* The lessons' `batch` action (lesson.c's table): B sequences decoding together on a published
 * shape (random weights) or the session's model, measured by tl_batch_measure, and its fields:
 * batch.B.X for each size B, batch.X for the whole. Private to core/lesson*.c. */
#ifndef TOKENLOOP_LESSON_BATCH_H
#define TOKENLOOP_LESSON_BATCH_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "tokenloop/metrics.h"
#include "tokenloop/session.h"

typedef struct lb_state lb_state;

/* The action's value, {"as", "sizes", "steps"?, "shape"?, "same_within"?}: NULL when it is
 * well formed, else what is wrong (a static string). */
const char *lb_check(const cJSON *v);
/* Runs the measurement into *b (replacing what was there). 0, or -1 with err. */
int lb_run(lb_state **b, tl_session *s, const cJSON *v, tl_error *err);
void lb_free(lb_state *b);
/* 0: a number field, 1: a text field, -1: not a batch field. */
int lb_field_kind(const char *name);
/* A batch field's value: NAN / "" before the action ran or for a size it did not measure. */
double lb_num(const lb_state *b, const char *name);
const char *lb_str(const lb_state *b, const char *name);
/* The comparisons it makes, i = 0 .. (sizes - 2): each size after the first against the first
 * (a: the first size's step times, b: this size's), named as + B ("b4"). -1 past the last. */
int lb_compare(const lb_state *b, int i, char name[32], tl_cmp *c, double *same_within);

#endif
