/* A one-line UTF-8 editor for the message, the system prompt and small inputs: cursor keys,
 * Home/End, Backspace/Delete, ^U/^K; horizontal scrolling keeps the cursor in view. Pure.
 * Every operation costs at most the screen's width or one move of the text after the cursor, so
 * a paste of N characters at the end costs O(N). What does not fit is counted in `dropped`, never
 * lost silently: the caller says so. */
#ifndef TL_TUI_LINEEDIT_H
#define TL_TUI_LINEEDIT_H

#include <stddef.h>
#include <stdint.h>

#define TL_LINEEDIT_MAX 65536   /* bytes, with the final NUL: a long pasted question fits */

typedef struct tl_lineedit {
    char buf[TL_LINEEDIT_MAX];
    size_t len, cur;           /* bytes; cur is always on a character boundary */
    size_t dropped;            /* characters refused because the buffer was full (since set) */
} tl_lineedit;

void LineEdit_set(tl_lineedit *e, const char *text);   /* text past the limit counts as dropped */
int LineEdit_insert(tl_lineedit *e, int32_t cp);   /* 0, or -1 when full (counted) / invalid */
void LineEdit_left(tl_lineedit *e);
void LineEdit_right(tl_lineedit *e);
void LineEdit_home(tl_lineedit *e);
void LineEdit_end(tl_lineedit *e);
void LineEdit_backspace(tl_lineedit *e);
void LineEdit_delete(tl_lineedit *e);
void LineEdit_killEnd(tl_lineedit *e);
void LineEdit_killStart(tl_lineedit *e);
/* The byte range [*from, *to) to show in cols columns with the cursor visible, and the
 * cursor's column inside it. */
void LineEdit_view(const tl_lineedit *e, int cols, size_t *from, size_t *to, int *cursor_col);

#endif
