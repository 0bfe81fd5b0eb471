/* What a lesson writes in the class's language (core/lesson_text.c): its numbers (one decimal
 * mark and one thousands separator, as the panes print them: en "3.35" and "128,256", vi "3,35"
 * and "128.256"), the Vietnamese of the few text values core puts into narration, and the
 * sentence that says why an expectation failed. lang: "vi..." is Vietnamese, anything else
 * (NULL included) English. Internal to the lesson player. */
#ifndef TL_LESSON_TEXT_H
#define TL_LESSON_TEXT_H

#include <stddef.h>

int lt_is_vi(const char *lang);
/* A figure as narration writes it: integers whole, other values with 2-3 significant digits,
 * thousands grouped from 1,000 up; "n/a" for NAN. */
void lt_num(char *out, size_t n, double v, const char *lang);
/* A probability as the Logits pane prints it ("59.1%", "<0.01%", ">99.9%"), in lang's marks. */
void lt_prob(char *out, size_t n, double p, const char *lang);
/* An integer as an identifier (a port): no grouping, "n/a" for NAN. */
void lt_plain(char *out, size_t n, double v);
/* A value in an expectation's failure: en exactly as printf's %g (the form tests and the TUI
 * read); vi the same digits, grouped, in vi's marks, and "n/a" for NAN. */
void lt_exact(char *out, size_t n, double v, const char *lang);
/* A text field's value as the narration words it in lang: in Vietnamese, budget_source and
 * hold_reason say what the panes say instead of their English identifiers, and cmp.NAME.outcome
 * is a Vietnamese word; anything else (and every value in English) is the value itself. */
const char *lt_field_words(const char *field, const char *value, const char *lang);

/* Why an expectation failed, in lang. field: the field checked; have, want: the values already
 * written (quoted when text); op: the comparison (NULL for plain equality); from: the remembered
 * name or the field compared with, or NULL. */
void lt_why_value(char *why, size_t n, const char *lang, const char *field, const char *have, const char *op,
                  const char *want, const char *from);
/* "FIELD: nothing numeric remembered as NAME" (text: "no text remembered as"). */
void lt_why_unsaved(char *why, size_t n, const char *lang, const char *field, const char *name, int text);
/* "FIELD: cannot read OTHER" (field NULL: "cannot read OTHER"). */
void lt_why_unread(char *why, size_t n, const char *lang, const char *field, const char *other);
/* "no step N" */
void lt_why_no_step(char *why, size_t n, const char *lang, int step);

#endif
