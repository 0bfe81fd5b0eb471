/* Lessons: a lesson file (a JSON file in lessons/, format in lessons/README.md) is a list of steps, each
 * with narration in English and Vietnamese, actions that drive a tl_session, and expectations
 * checked against what the session then shows. The same player serves `tokenloop lesson check`
 * (headless) and the TUI's lesson panel. */
#ifndef TOKENLOOP_LESSON_H
#define TOKENLOOP_LESSON_H

#include <stddef.h>
#include "tokenloop/error.h"
#include "tokenloop/session.h"
#include "tokenloop/metrics.h"

typedef struct tl_lesson tl_lesson;

int tl_lesson_load(tl_lesson **out, const char *path, tl_error *err);
void tl_lesson_free(tl_lesson *l);
const char *tl_lesson_id(const tl_lesson *l);
const char *tl_lesson_title(const tl_lesson *l, const char *lang);
int tl_lesson_n_steps(const tl_lesson *l);

/* The lessons folder: $TOKENLOOP_LESSONS, else lessons/ found upwards from the executable,
 * else the source tree's. Writes it to buf; -1 when none exists. */
int tl_lesson_dir(char *buf, size_t size);
/* The *.json files of dir, sorted by name (malloc'd array of malloc'd paths). */
int tl_lesson_list(const char *dir, char ***paths, int *n, tl_error *err);
void tl_lesson_list_free(char **paths, int n);
/* "en" or "vi": "vi" when $LANG (or $LC_ALL, $LC_MESSAGES) starts with "vi". */
const char *tl_lesson_default_lang(void);

/* What the actions of a step ask the screen to do. */
typedef struct tl_lesson_ui {
    char highlight[32];         /* pane name, "" for none */
    int show_wrong_readings;    /* -1 unchanged, 0/1 */
} tl_lesson_ui;
/* Optional: fn is called before an action that takes seconds (measuring on random weights) with
 * what it does in English and Vietnamese, so a screen can say so before it blocks. */
void tl_lesson_set_busy(tl_lesson *l, void (*fn)(void *ctx, const char *en, const char *vi), void *ctx);

/* What an HTTP client of `tokenloop serve` received for the session's request: the
 * serve_request action. Core has no HTTP server, so a front end built with one lends it here;
 * without one the action fails saying so. The function fills out (chunks malloc'd, each and
 * the array; the player frees them). */
typedef struct tl_lesson_served {
    char **chunks;              /* each streamed delta's content that had any, in arrival order */
    int n_chunks;
    double client_ttft_ms;      /* the client's clock: request sent -> first content received */
    double client_last_ms;      /* ... -> last content received */
    double server_ttft_ms;      /* the server's own, from the final chunk (tokenloop.ttft_ms) */
    char finish_reason[16];
    int prompt_tokens, completion_tokens;   /* usage */
    unsigned port;              /* where the server listened */
} tl_lesson_served;
typedef int (*tl_lesson_server_fn)(void *ctx, tl_session *s, tl_lesson_served *out, tl_error *err);
void tl_lesson_set_server(tl_lesson *l, tl_lesson_server_fn fn, void *ctx);

/* Runs the actions of step i on s (fills ui, may be NULL). */
int tl_lesson_apply(tl_lesson *l, int i, tl_session *s, tl_lesson_ui *ui, tl_error *err);
/* Checks the expectations of step i. 0: all hold; 1: one failed, described in why;
 * 2: all hold but a comparison the step expects decided ({"decided": true}) was not (its runs'
 * spread hid the answer): the narration says so, a front end shows no check mark, why names it;
 * -1: an error. */
int tl_lesson_check(tl_lesson *l, int i, tl_session *s, char *why, size_t why_size);
/* The same, with why in lang ("vi": a Vietnamese sentence, its figures with the panes' marks,
 * "3,35" and "128.256"; anything else the English of tl_lesson_check). Field names, the lesson
 * file's comparison names and quoted values stay as they are. */
int tl_lesson_check_lang(tl_lesson *l, int i, tl_session *s, const char *lang, char *why, size_t why_size);
/* The compare actions run so far (issue 38): their count, and the k-th's name, outcome and
 * tolerance (NULL when k is out of range), so a test can set each narration beside its numbers. */
int tl_lesson_n_compares(const tl_lesson *l);
const char *tl_lesson_compare_at(const tl_lesson *l, int k, tl_cmp *out, double *same_within);
/* The narration of step i in lang with {placeholders} filled from s (malloc'd). */
char *tl_lesson_narrate(const tl_lesson *l, int i, const char *lang, tl_session *s);
/* A stop's detail (tl_stop_result.detail, English) in lang: "vi" gets the Vietnamese of its
 * three forms, anything else the text as it is. Writes out (always terminated). */
void tl_lesson_stop_detail(const char *detail, const char *lang, char *out, size_t size);
/* A field's live value as the narration writes it in lang (numbers with lang's decimal mark and
 * thousands separator, en "3.35" "128,256", vi "3,35" "128.256");
 * malloc'd, NULL when the field is unknown or not measured yet. For front ends that show a
 * figure a step narrates (the TUI's Stream pane: the queue's and the HTTP client's chunks). */
char *tl_lesson_field(const tl_lesson *l, tl_session *s, const char *name, const char *lang);

#endif
