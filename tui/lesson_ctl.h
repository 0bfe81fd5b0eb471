/* The TUI side of the lessons: `l` lists them, Enter starts one, → / Space advances a step
 * (its actions drive the session visibly, its expectations are checked), ← goes back one, l
 * hides the strip (the lesson keeps its place), Esc leaves the lessons and gives the teacher's
 * session back (prompt, settings, weights) as it was before the first lesson started.
 * Whatever keys were pressed in between, a step starts from the state the lesson's steps before
 * it make: when the session is no longer what the step before left, the steps are played again
 * from the lesson's first. */
#ifndef TL_TUI_LESSON_CTL_H
#define TL_TUI_LESSON_CTL_H

#include <wchar.h>

#include "tokenloop/lesson.h"
#include "tokenloop/session.h"
#include "ui.h"

typedef struct tl_lesson_ctl {
    char lang[8];
    char **paths;
    int n, sel;
    char **titles;
    tl_lesson *cur;
    int step;                  /* the step shown; -1: the list */
    char *text;                /* what the panel shows */
    int applied;               /* a step just drove the session */
    int show_wrong;            /* -1 unchanged */
    int highlight;             /* pane index, -1 none */
    tl_lesson_server_fn server;   /* given to each lesson started, when not NULL */
    /* given to each lesson started (tl_lesson_set_busy): a step that measures for seconds */
    void (*busy)(void *ctx, const char *en, const char *vi);
    void *busy_ctx;
    char *mark;                /* the session as step mark_step left it (lesson_mark) */
    int mark_step;
    struct tl_lesson_saved *saved;   /* the teacher's session before the lessons; NULL: none */
    char note[192];            /* for the status line, once ("" none) */
    int shown_rc, shown_chk;   /* the shown step's outcome, kept to say it again in another language */
    char shown_why[1100];
} tl_lesson_ctl;

void LessonCtl_init(tl_lesson_ctl *c, const char *lang);
void LessonCtl_open(tl_lesson_ctl *c, tl_ui *ui);
/* 1 when the key was the panel's. */
int LessonCtl_key(tl_lesson_ctl *c, tl_session *s, int is_code, wint_t ch, tl_ui *ui);
/* The language changed (the key v): the list, or the shown step's narration and outcome, again in
 * lang, without playing the step again. */
void LessonCtl_setLang(tl_lesson_ctl *c, const char *lang, tl_session *s, tl_ui *ui);
void LessonCtl_free(tl_lesson_ctl *c);

#endif
