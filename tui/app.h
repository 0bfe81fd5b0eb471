/* The TUI program: one event loop over a tl_session. */
#ifndef TL_TUI_APP_H
#define TL_TUI_APP_H

#include "tokenloop/lesson.h"
#include "tokenloop/session.h"

typedef struct tl_app_opts {
    const char *system, *user;   /* the conversation to start with */
    const char *lang;            /* lessons: "en" / "vi" */
    int colour;                  /* 0: NO_COLOR or --mono */
    /* the chat server lesson 4 borrows (serve/lesson_serve.h), or NULL where none is built */
    tl_lesson_server_fn lesson_server;
} tl_app_opts;

/* Runs until q (returns 0) or a signal (128 + signal). Owns the terminal while it runs and
 * restores it on every exit path. */
int tl_tui_run(tl_session *s, const tl_app_opts *o);

/* Draws `frames` full frames at cols x rows into a virtual terminal and prints ms per frame. */
int tl_tui_bench_frame(tl_session *s, const tl_app_opts *o, int frames, int cols, int rows);

#endif
