/* The lesson strip: the list, or the current step's narration, wrapped at words, in a few rows
 * the layout takes from the body (never over the pane the lesson points at). A chrome row says
 * whether there is more to read; PgUp/PgDn and ↑↓ (lesson_ctl.c) move ui->lesson_scroll. */
#include <string.h>

#include "format.h"
#include "i18n.h"
#include "ui.h"

#define T(s) I18n_tr(ui->lang, s)
#define MAX_LINES 512

/* Wrapped lines of t in cols columns, blank lines dropped (rows are scarce in a strip). */
static int wrap(const char *t, int cols, size_t *at, size_t *len)
{
    int n = 0;
    size_t i = 0, tl = strlen(t);
    while (i < tl && n < MAX_LINES) {
        size_t k = Format_wrap(t + i, tl - i, cols, NULL);
        if (k > 0) {
            at[n] = i;
            len[n++] = k;
        }
        i += k;
        if (i < tl && t[i] == '\n')
            i++;
    }
    return n;
}

void LessonPanel_draw(WINDOW *w, tl_rect r, tl_ui *ui)
{
    if (r.h < 2 || r.w < 10)
        return;
    for (int y = 0; y < r.h; y++)
        Draw_fill(w, r.y + y, r.x, r.w, A_NORMAL);
    const char *t = ui->lesson_text ? ui->lesson_text : T("no lessons available");
    int cols = r.w - 2, rows = r.h - 1;
    static size_t at[MAX_LINES], len[MAX_LINES];
    int n = wrap(t, cols, at, len);
    int maxscroll = n > rows ? n - rows : 0;
    if (ui->lesson_scroll > maxscroll)
        ui->lesson_scroll = maxscroll;
    if (ui->lesson_scroll < 0)
        ui->lesson_scroll = 0;
    int first = ui->lesson_scroll;

    /* chrome: what this is, how to leave it, and whether there is more below or above */
    Draw_fill(w, r.y, r.x, r.w, Theme_attr(TA_TITLE));
    char chrome[256], more[64] = "";
    snprintf(chrome, sizeof chrome, " %s \xC2\xB7 %s", T("Lessons (l)"),
             T("PgUp/PgDn or \xE2\x86\x91\xE2\x86\x93 scroll \xC2\xB7 z all of it \xC2\xB7 l hides"));
    int pages = (n + rows - 1) / rows;
    int page = first >= maxscroll ? pages : first / rows + 1;
    if (first < maxscroll)
        snprintf(more, sizeof more, T("\xE2\x86\x93 more %d/%d "), page, pages);
    else if (first > 0)
        snprintf(more, sizeof more, T("\xE2\x86\x91 end %d/%d "), page, pages);
    int mw = Format_widthz(more);
    Draw_text(w, r.y, r.x, r.w - mw - 1, chrome, Theme_attr(TA_TITLE));
    if (mw)
        Draw_text(w, r.y, r.x + r.w - mw, mw, more, Theme_attr(TA_TITLE) | A_BOLD);
    for (int i = 0; i < rows && first + i < n; i++)
        Draw_textn(w, r.y + 1 + i, r.x + 1, cols, t + at[first + i], len[first + i], i == 0 && first == 0 ? A_BOLD : A_NORMAL);
}
