/* Fills the TUI's view from a tl_session: the only file that reads the session for drawing. */
#ifndef TL_TUI_SESSION_VIEW_H
#define TL_TUI_SESSION_VIEW_H

#include "tokenloop/session.h"
#include "ui.h"

typedef struct tl_sview {
    tl_view v;
    tl_view_token *tokens;
    int tokens_cap;
    unsigned char *style;
    size_t style_cap;
    double *step_ms;
    int step_cap;
    char *printed;
    size_t printed_cap;
    char held[256];
} tl_sview;

/* s must not be running on another thread. */
void SessionView_fill(tl_sview *sv, tl_session *s, const tl_ui *ui);
/* During a run only the streamed text changes: append a chunk. */
void SessionView_appendPrinted(tl_sview *sv, const char *chunk, size_t len);
void SessionView_free(tl_sview *sv);
/* "partial word", "incomplete UTF-8", "possible stop string" joined by ", ". */
void SessionView_holdReason(const char *lang, int flags, char *out, size_t n);

#endif
