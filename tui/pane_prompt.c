/* Prompt pane: the rendered chat template as the model receives it, byte for byte. Special
 * tokens, message content and the generation prompt each have their own style; newlines are
 * shown as ↵ so the template's exact whitespace is visible. */
#include <string.h>

#include "format.h"
#include "i18n.h"
#include "ui.h"

#define T(s) I18n_tr(ui->lang, s)

static attr_t style_attr(unsigned char st)
{
    attr_t a;
    if (st & VSTYLE_SPECIAL)
        a = Theme_attr(TA_SPECIAL);
    else if (st & VSTYLE_CONTENT)
        a = Theme_attr(TA_CONTENT);
    else
        a = A_NORMAL;
    if (st & VSTYLE_GENPROMPT)
        a |= Theme_attr(TA_GENPROMPT);
    return a;
}

/* Calls fn for each visual line [start, end) of the text wrapped at cols; returns the count. */
typedef void (*line_fn)(void *ctx, int line, size_t start, size_t end, int newline);

static int wrap_lines(const char *s, size_t len, int cols, line_fn fn, void *ctx)
{
    int line = 0;
    size_t i = 0;
    if (cols < 2)
        cols = 2;
    while (i < len) {
        /* keep a column for the ↵ mark; break between words and tokens, never inside
         * <|end_header_id|>, so what the class reads is the tokens the model gets */
        size_t n = Format_wrap(s + i, len - i, cols - 1, NULL);
        size_t end = i + n;
        int nl = end < len && s[end] == '\n';
        fn(ctx, line++, i, end, nl);
        i = end + (size_t)nl;
    }
    if (line == 0 || (len > 0 && s[len - 1] == '\n'))
        fn(ctx, line++, len, len, 0);
    return line;
}

struct draw_ctx {
    WINDOW *w;
    tl_rect in;
    int first;
    const tl_view *v;
    int tagged;
    const char *tag;   /* "◀ generation prompt" in the screen's language */
};

static void count_line(void *ctx, int line, size_t a, size_t b, int nl)
{
    (void)ctx, (void)line, (void)a, (void)b, (void)nl;
}

static void draw_line(void *ctx, int line, size_t a, size_t b, int nl)
{
    struct draw_ctx *c = ctx;
    int row = line - c->first;
    if (row < 0 || row >= c->in.h)
        return;
    const tl_view *v = c->v;
    int y = c->in.y + row, x = c->in.x, end = c->in.x + c->in.w;
    size_t i = a;
    while (i < b && x < end) {
        unsigned char st = v->prompt_style ? v->prompt_style[i] : 0;
        size_t j = i;
        while (j < b && (v->prompt_style ? v->prompt_style[j] : 0) == st)
            j++;
        x += Draw_textn(c->w, y, x, end - x, v->prompt + i, j - i, style_attr(st));
        i = j;
    }
    /* a visible tag where the generation prompt starts, also without colours */
    if (!c->tagged && v->genprompt_at >= 0 && (b > (size_t)v->genprompt_at || (nl && b == (size_t)v->genprompt_at))) {
        const char *tag = c->tag;
        int tw = Format_widthz(tag);
        if (end - x - (nl ? 1 : 0) >= tw + 2) {
            Draw_text(c->w, y, end - tw, tw, tag, Theme_attr(TA_GENPROMPT));
            c->tagged = 1;
        }
    }
    if (nl && x < end) {
        unsigned char st = v->prompt_style && b < v->prompt_len ? v->prompt_style[b] : 0;
        Draw_text(c->w, y, x, 1, "\xE2\x86\xB5", Theme_attr(TA_DIM) | (st & VSTYLE_GENPROMPT ? Theme_attr(TA_GENPROMPT) : 0));
    }
}

void Pane_prompt(WINDOW *w, tl_rect r, const tl_view *v, tl_ui *ui)
{
    char title[192];
    int n = snprintf(title, sizeof title, T("1 Prompt \xC2\xB7 %d tokens \xC2\xB7 add_generation_prompt %s"),
                     v->n_prompt, v->add_generation_prompt ? T("on") : T("off"));
    /* the room for " title " left of the scroll mark (r.w - 6): shorter forms where there is
     * none (vi at 160x48: 76 columns), an ellipsis where even they do not fit */
    int room = r.w - 8;
    if (!v->parse_special_in_content && n > 0 && (size_t)n < sizeof title) {
        snprintf(title + n, sizeof title - (size_t)n, "%s", T(" \xC2\xB7 content as plain text"));
        if (Format_widthz(title) + 2 > room)
            snprintf(title + n, sizeof title - (size_t)n, "%s", T(" \xC2\xB7 plain text"));
        if (Format_widthz(title) + 2 > room) {
            n = snprintf(title, sizeof title, T("1 Prompt \xC2\xB7 %d tok \xC2\xB7 add_generation_prompt %s"),
                         v->n_prompt, v->add_generation_prompt ? T("on") : T("off"));
            if (n > 0 && (size_t)n < sizeof title)
                snprintf(title + n, sizeof title - (size_t)n, "%s", T(" \xC2\xB7 plain text"));
        }
    }
    char fit[sizeof title];
    Format_fit(title, strlen(title), room - 2, 1, fit, sizeof fit);
    Draw_box(w, r, fit, ui->active == PANE_PROMPT);
    tl_rect in = Draw_inner(r);
    if (in.h < 1 || in.w < 4)
        return;
    /* legend */
    int x = in.x;
    x += Draw_text(w, in.y, x, in.x + in.w - x, "<|special|>", Theme_attr(TA_SPECIAL));
    x += Draw_text(w, in.y, x, in.x + in.w - x, " ", A_NORMAL);
    x += Draw_text(w, in.y, x, in.x + in.w - x, T("message content"), Theme_attr(TA_CONTENT));
    x += Draw_text(w, in.y, x, in.x + in.w - x, " ", A_NORMAL);
    x += Draw_text(w, in.y, x, in.x + in.w - x, T("template"), A_NORMAL);
    x += Draw_text(w, in.y, x, in.x + in.w - x, " ", A_NORMAL);
    x += Draw_text(w, in.y, x, in.x + in.w - x, T("generation prompt"), Theme_attr(TA_GENPROMPT));
    Draw_text(w, in.y, x, in.x + in.w - x, T("  e/S edit  a toggle"), Theme_attr(TA_DIM));
    in.y++;
    in.h--;

    int edit = ui->edit == EDIT_USER || ui->edit == EDIT_SYSTEM;
    if (edit && in.h >= 3) {
        /* editing in place: the message being edited, with a cursor */
        int ey = in.y + in.h - 2;
        Draw_fill(w, ey, in.x, in.w, Theme_attr(TA_SELECTED));
        int lx = Draw_text(w, ey, in.x, in.w,
                           ui->edit == EDIT_USER ? T(" user message (Enter: apply, Esc: cancel)")
                                                 : T(" system prompt (Enter: apply, Esc: cancel; empty: none)"),
                           Theme_attr(TA_SELECTED));
        if (ui->le.dropped) {   /* a paste longer than the editor: said, never cut silently */
            char m[160];
            snprintf(m, sizeof m, T(" \xC2\xB7 full: %zu characters not taken (the editor holds %d bytes)"),
                     ui->le.dropped, TL_LINEEDIT_MAX - 1);
            Draw_text(w, ey, in.x + lx, in.w - lx, m, Theme_attr(TA_WARN));
        }
        size_t from, to;
        int col;
        LineEdit_view(&ui->le, in.w - 2, &from, &to, &col);
        Draw_fill(w, ey + 1, in.x, in.w, A_NORMAL);
        Draw_text(w, ey + 1, in.x, 2, "> ", Theme_attr(TA_KEY));
        Draw_textn(w, ey + 1, in.x + 2, in.w - 2, ui->le.buf + from, to - from, A_NORMAL);
        wmove(w, ey + 1, in.x + 2 + col);
        in.h -= 2;
    }
    if (!v->prompt) {
        Draw_text(w, in.y, in.x, in.w, T("(no prompt: raw ids)"), Theme_attr(TA_DIM));
        return;
    }
    int total = wrap_lines(v->prompt, v->prompt_len, in.w, count_line, NULL);
    /* by default show the end: the generation prompt is what the model answers from */
    int maxscroll = total > in.h ? total - in.h : 0;
    if (ui->prompt_scroll < 0 || ui->prompt_scroll > maxscroll)
        ui->prompt_scroll = maxscroll;
    struct draw_ctx c = {w, in, ui->prompt_scroll, v, 0, T("\xE2\x97\x80 generation prompt")};
    wrap_lines(v->prompt, v->prompt_len, in.w, draw_line, &c);
    if (ui->prompt_scroll > 0)
        Draw_text(w, r.y, r.x + r.w - 6, 3, "\xE2\x86\x91", Theme_attr(TA_DIM));
}
