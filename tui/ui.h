/* The TUI's own state (what is selected, scrolled, being edited) and the drawing entry points.
 * Everything here draws from a tl_view onto one ncurses WINDOW; nothing calls core. */
#ifndef TL_TUI_UI_H
#define TL_TUI_UI_H

#include <curses.h>

#include "layout.h"
#include "lineedit.h"
#include "view.h"

enum { EDIT_NONE, EDIT_USER, EDIT_SYSTEM, EDIT_MAXNEW, EDIT_STOP };

typedef struct tl_ui {
    int active;               /* focused pane (the shown tab when tabbed) */
    int follow;               /* tabbed: the tab follows what just happened */
    int tok_sel;              /* selected token, -1: follow the newest */
    int tok_scroll;
    int logit_sel;            /* the logits row Enter would force */
    int prompt_scroll, stream_scroll;
    int help;                 /* the full key list is shown */
    int edit;                 /* EDIT_* */
    tl_lineedit le;
    char edit_label[160];     /* the status-line editor's prompt when the app sets one */
    int lesson_open;
    const char *lesson_text;  /* the lesson panel's text (NULL: "no lessons") */
    int mono;                 /* no colours */
    int lesson_highlight;     /* pane the lesson points at (-1 none): never covered by the panel */
    int lesson_scroll;        /* first line of the lesson text shown in the strip */
    int hf_call;              /* overlay: the equivalent transformers call (v->hf_call) */
    int lesson_full;          /* overlay: the lesson strip's whole text (z) */
    char stream_note[240];    /* the Stream pane's line on a lesson's queue / HTTP run ("" none) */
    char lang[8];             /* "en" or "vi": every string a student reads */
} tl_ui;

/* Attributes of the theme; colours when available and wanted, else bold/reverse/underline. */
enum {
    TA_TITLE, TA_BORDER, TA_BORDER_FOCUS, TA_HEADER, TA_DIM, TA_SPECIAL, TA_CONTENT, TA_GENPROMPT,
    TA_PROMPT_TOK, TA_GEN_TOK, TA_SELECTED, TA_CHOSEN, TA_CUT, TA_BAR, TA_HELD, TA_STOP, TA_FLOOR,
    TA_STATUS, TA_KEY, TA_WARN, TA_COUNT
};
void Theme_init(int want_colour);
attr_t Theme_attr(int which);
int Theme_mono(void);

/* Drawing helpers: clip to the rectangle's columns, wcwidth-correct. */
int Draw_text(WINDOW *w, int y, int x, int maxw, const char *s, attr_t a);
int Draw_textn(WINDOW *w, int y, int x, int maxw, const char *s, size_t n, attr_t a);
void Draw_fill(WINDOW *w, int y, int x, int n, attr_t a);
/* text wrapped at words from row *y of in over as many rows as it needs, up to end; *y moves
 * past the rows drawn */
void Draw_wrapped(WINDOW *w, tl_rect in, int *y, int end, attr_t a, const char *text);
void Draw_box(WINDOW *w, tl_rect r, const char *title, int focused);
/* inner area of a boxed pane */
tl_rect Draw_inner(tl_rect r);

void Pane_prompt(WINDOW *w, tl_rect r, const tl_view *v, tl_ui *ui);
void Pane_tokens(WINDOW *w, tl_rect r, const tl_view *v, tl_ui *ui);
void Pane_logits(WINDOW *w, tl_rect r, const tl_view *v, tl_ui *ui);
void Pane_stream(WINDOW *w, tl_rect r, const tl_view *v, tl_ui *ui);
void Pane_stop(WINDOW *w, tl_rect r, const tl_view *v, tl_ui *ui);
void Pane_timing(WINDOW *w, tl_rect r, const tl_view *v, tl_ui *ui);

/* The whole frame: bars, panes (or the tab), help and edit overlays. */
void Screen_draw(WINDOW *w, int cols, int rows, const tl_view *v, tl_ui *ui);
/* The one-line summary used by tabs and the title: TTFT, TPOT, stop. */
void Screen_summary(const tl_view *v, char *out, size_t n);

/* Lessons: until core has a lesson API, the panel says there are none. */
void LessonPanel_draw(WINDOW *w, tl_rect r, tl_ui *ui);

#endif
