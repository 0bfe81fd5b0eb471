/* Tokens pane: what the prompt became and what was generated, one row per position: id and the
 * piece with visible whitespace. Selecting a token shows its bytes. */
#include <string.h>

#include "format.h"
#include "i18n.h"
#include "ui.h"

#define T(s) I18n_tr(ui->lang, s)

void Pane_tokens(WINDOW *w, tl_rect r, const tl_view *v, tl_ui *ui)
{
    char title[160];
    snprintf(title, sizeof title, T("2 Tokens \xC2\xB7 prompt %d \xC2\xB7 generated %d \xC2\xB7 pos %d"),
             v->n_prompt, v->n_tokens - v->n_prompt, v->pos);
    Draw_box(w, r, title, ui->active == PANE_TOKENS);
    tl_rect in = Draw_inner(r);
    if (in.h < 2 || in.w < 10)
        return;
    int n = v->n_tokens;
    if (ui->tok_sel >= n)
        ui->tok_sel = n - 1;
    /* the selected token's detail: one row, or two when its bytes would not fit beside it */
    char d[320] = "", bytes[160] = "";
    if (ui->tok_sel >= 0 && ui->tok_sel < n) {
        const tl_view_token *t = &v->tokens[ui->tok_sel];
        snprintf(d, sizeof d, T("#%d %s id %d \xC2\xAB%s\xC2\xBB %s%sbytes %s"), ui->tok_sel,
                 t->generated ? T("generated") : T("prompt"), t->id, v->sel_text, v->sel_choice,
                 v->sel_choice[0] ? " \xC2\xB7 " : "", v->sel_bytes);
        if (Format_widthz(d) > in.w && in.h >= 4) {
            snprintf(d, sizeof d, T("#%d %s id %d \xC2\xAB%s\xC2\xBB %s"), ui->tok_sel,
                     t->generated ? T("generated") : T("prompt"), t->id, v->sel_text, v->sel_choice);
            snprintf(bytes, sizeof bytes, T("bytes %s"), v->sel_bytes);   /* below, with their label */
        }
    }
    int rows = in.h - (bytes[0] ? 2 : 1);   /* the last rows: the selected token's detail */
    int focus = ui->tok_sel >= 0 ? ui->tok_sel : n - 1;
    /* columns of entries: "  pos id piece" */
    int colw = 30;
    int ncol = in.w / colw;
    if (ncol < 1)
        ncol = 1, colw = in.w;
    else
        colw = in.w / ncol;
    int per_page = rows * ncol;
    /* keep the focused token in view; follow the end unless a token is selected */
    if (ui->tok_sel < 0)
        ui->tok_scroll = n > per_page ? ((n - per_page + ncol - 1) / ncol) * ncol : 0;
    if (focus < ui->tok_scroll)
        ui->tok_scroll = focus - focus % ncol;
    while (focus >= ui->tok_scroll + per_page)
        ui->tok_scroll += ncol;
    if (ui->tok_scroll < 0)
        ui->tok_scroll = 0;
    for (int k = 0; k < per_page; k++) {
        int i = ui->tok_scroll + k;
        if (i >= n)
            break;
        /* row-major across columns so the reading order is left to right, top to bottom */
        int row = k / ncol, col = k % ncol;
        const tl_view_token *t = &v->tokens[i];
        int y = in.y + row, x = in.x + col * colw;
        char head[32];
        snprintf(head, sizeof head, "%4d %6d ", i, t->id);
        attr_t a = i == ui->tok_sel ? Theme_attr(TA_SELECTED)
                   : t->generated   ? Theme_attr(TA_GEN_TOK)
                                    : Theme_attr(TA_PROMPT_TOK);
        if (i == ui->tok_sel)
            Draw_fill(w, y, x, colw - 1, a);
        int used = Draw_text(w, y, x, colw - 1, head, i == ui->tok_sel ? a : Theme_attr(TA_DIM));
        attr_t pa = a;
        if (t->special && i != ui->tok_sel)
            pa = Theme_attr(TA_SPECIAL);
        Draw_text(w, y, x + used, colw - 1 - used, t->display, pa);
    }
    /* detail line */
    int dy = in.y + in.h - 1;
    if (ui->tok_sel >= 0 && ui->tok_sel < n) {
        Draw_text(w, bytes[0] ? dy - 1 : dy, in.x, in.w, d, Theme_attr(TA_HEADER));
        if (bytes[0])
            Draw_text(w, dy, in.x, in.w, bytes, Theme_attr(TA_HEADER));
    } else if (n == 0) {
        Draw_text(w, in.y, in.x, in.w, T("no tokens yet"), Theme_attr(TA_DIM));
    } else {
        Draw_text(w, dy, in.x, in.w, T("\xE2\x86\x91\xE2\x86\x93 select a token to see its bytes"),
                  Theme_attr(TA_DIM));
    }
}
