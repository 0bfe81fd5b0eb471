/* Stop pane: the three reasons generation can stop, with their current settings, and which one
 * fired and why. */
#include <string.h>

#include "format.h"
#include "i18n.h"
#include "ui.h"

#define T(s) I18n_tr(ui->lang, s)

void Pane_stop(WINDOW *w, tl_rect r, const tl_view *v, tl_ui *ui)
{
    Draw_box(w, r, T("5 Stop"), ui->active == PANE_STOP);
    tl_rect in = Draw_inner(r);
    if (in.h < 1 || in.w < 10)
        return;
    int y = in.y, end = in.y + in.h;
    char line[512];
    /* the three labels in one column, padded by width (Vietnamese letters are multi-byte) */
    char l_eos[48], l_str[48], l_bud[48];
    int lw = Format_widthz(T("strings")) > Format_widthz(T("budget")) ? Format_widthz(T("strings")) : Format_widthz(T("budget"));
    lw = (lw > 3 ? lw : 3) + 2;
    Format_pad("eos", lw, -1, l_eos, sizeof l_eos);
    Format_pad(T("strings"), lw, -1, l_str, sizeof l_str);
    Format_pad(T("budget"), lw, -1, l_bud, sizeof l_bud);
    size_t o = 0;
    o += (size_t)snprintf(line + o, sizeof line - o, "%s", l_eos);
    for (int i = 0; i < v->n_eos && o < sizeof line - 64; i++)
        o += (size_t)snprintf(line + o, sizeof line - o, "%s%d %s", i ? " \xC2\xB7 " : "", v->eos_ids[i],
                              v->eos_names[i]);
    if (!v->n_eos)
        snprintf(line + o, sizeof line - o, "%s", T("(none)"));
    int fired = v->stopped;
    Draw_text(w, y++, in.x, in.w, line, fired && !strcmp(v->stop_reason, "eos") ? Theme_attr(TA_CHOSEN) : A_NORMAL);
    if (y >= end)
        return;
    if (in.h >= 7 && v->eos_source[0]) {
        snprintf(line, sizeof line, "%*s", lw, "");
        snprintf(line + lw, sizeof line - (size_t)lw, T("(the EOS set of %s)"), v->eos_source);
        Draw_text(w, y++, in.x, in.w, line, Theme_attr(TA_DIM));
    }
    o = (size_t)snprintf(line, sizeof line, "%s", l_str);
    for (int i = 0; i < v->n_stops && o < sizeof line - 64; i++) {
        char vis[96];
        Format_visible(v->stops[i], strlen(v->stops[i]), vis, sizeof vis);
        o += (size_t)snprintf(line + o, sizeof line - o, "%s\"%s\"", i ? " " : "", vis);
    }
    if (!v->n_stops)
        snprintf(line + o, sizeof line - o, "%s", T("(none; s adds one)"));
    Draw_text(w, y++, in.x, in.w, line,
              fired && !strcmp(v->stop_reason, "stop_string") ? Theme_attr(TA_CHOSEN) : A_NORMAL);
    if (y >= end)
        return;
    o = (size_t)snprintf(line, sizeof line, "%s", l_bud);
    snprintf(line + o, sizeof line - o, T("%d of %d new tokens \xE2\x80\x94 %s"), v->generated, v->budget,
             v->budget_source);
    Draw_text(w, y++, in.x, in.w, line,
              fired && !strcmp(v->stop_reason, "max_new_tokens") ? Theme_attr(TA_CHOSEN) : A_NORMAL);
    if (y >= end)
        return;
    y += y + 1 < end;
    if (fired) {
        snprintf(line, sizeof line, T(" STOPPED: %s "), v->stop_reason);
        int x = in.x + Draw_text(w, y, in.x, in.w, line, Theme_attr(TA_STOP));
        if (Format_widthz(v->stop_detail) <= in.x + in.w - x - 1)
            Draw_text(w, y++, x + 1, in.x + in.w - x - 1, v->stop_detail, Theme_attr(TA_HEADER));
        else {   /* the detail under the label, whole: "20 token mới (ngân sách lấy từ ...)" */
            y++;
            Draw_wrapped(w, in, &y, end, Theme_attr(TA_HEADER), v->stop_detail);
        }
        const char *why = !strcmp(v->stop_reason, "eos")
                              ? T("the model chose an end-of-sequence token: it decided it was done")
                          : !strcmp(v->stop_reason, "stop_string")
                              ? T("a stop string you asked for appeared in the text")
                              : T("the budget ran out: the answer may be cut mid-sentence");
        if (y < end)
            Draw_text(w, y++, in.x, in.w, why, A_NORMAL);
    } else if (v->running) {
        Draw_text(w, y++, in.x, in.w, T("running: checked after every token"), Theme_attr(TA_DIM));
    } else {
        Draw_text(w, y++, in.x, in.w, T("not stopped: each token is checked against all three"),
                  Theme_attr(TA_DIM));
    }
}
