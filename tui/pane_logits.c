/* Logits pane: the scores of the pass just made at the last position, the top k of the whole
 * vocabulary: raw logit, probability after temperature, the running total, what top-k/top-p
 * cut, and which token was chosen. Enter on a row forces that token instead. */
#include <string.h>

#include "format.h"
#include "i18n.h"
#include "ui.h"

#define T(s) I18n_tr(ui->lang, s)

void Pane_logits(WINDOW *w, tl_rect r, const tl_view *v, tl_ui *ui)
{
    char title[160], vs[32];
    Format_countLang(ui->lang, v->vocab_size, vs, sizeof vs);
    snprintf(title, sizeof title, T("3 Logits \xC2\xB7 top %d of %s"), v->logit_rows, vs);
    Draw_box(w, r, title, ui->active == PANE_LOGITS);
    tl_rect in = Draw_inner(r);
    if (in.h < 2 || in.w < 20)
        return;
    /* the header names the settings that made the rows below it: after a pass, that pass's;
     * settings changed since apply from the next token, and the header says so */
    int greedy = v->has_logits ? v->rows_greedy : v->greedy, top_k = v->has_logits ? v->rows_top_k : v->top_k;
    float temp = v->has_logits ? v->rows_temperature : v->temperature, top_p = v->has_logits ? v->rows_top_p : v->top_p;
    int changed = v->has_logits && (greedy != v->greedy || (!v->greedy && (top_k != v->top_k || temp != v->temperature || top_p != v->top_p)));
    char line[320], tv[16], pv[16];
    Format_num(ui->lang, temp, 2, tv, sizeof tv);
    Format_num(ui->lang, top_p, 2, pv, sizeof pv);
    if (greedy)
        snprintf(line, sizeof line, T("greedy (argmax)  \xC2\xB7 T %s  top-k %d  top-p %s unused"), tv, top_k, pv);
    else
        snprintf(line, sizeof line, T("sampled \xC2\xB7 temperature %s \xC2\xB7 top-k %d%s \xC2\xB7 top-p %s%s"), tv,
                 top_k, top_k ? "" : T(" (off)"), pv, top_p >= 1 ? T(" (off)") : "");
    int hx = Draw_text(w, in.y, in.x, in.w, line, Theme_attr(TA_HEADER));
    if (changed)
        Draw_text(w, in.y, in.x + hx, in.w - hx, T(" \xC2\xB7 changed: next token"), Theme_attr(TA_WARN));
    if (!v->has_logits) {
        Draw_text(w, in.y + 1, in.x, in.w,
                  T("no forward pass yet \xE2\x80\x94 Space runs the first one (the prefill)"),
                  Theme_attr(TA_DIM));
        return;
    }
    char ent[32], out[32];
    Format_probLang(ui->lang, v->mass_outside, out, sizeof out);
    Format_num(ui->lang, v->entropy, 3, ent, sizeof ent);
    snprintf(line, sizeof line, T("token %d \xC2\xB7 entropy %s nats \xC2\xB7 outside these rows %s \xC2\xB7 kept after cuts %d"),
             v->logits_step, ent, out, v->kept);
    if (Format_widthz(line) > in.w)   /* vi at 78 columns: the same figures, fewer words */
        snprintf(line, sizeof line, T("token %d \xC2\xB7 entropy %s nats \xC2\xB7 outside %s \xC2\xB7 kept %d"),
                 v->logits_step, ent, out, v->kept);
    if (in.h > 1)
        Draw_text(w, in.y + 1, in.x, in.w, line, A_NORMAL);
    if (in.h < 4)
        return;
    int y = in.y + 2;
    /* columns: mark rank id piece logit p p(T) cum cut p_final bar. p is the model's own
     * softmax (T = 1): what it "thinks" before any setting; final is after the cuts (1 under
     * greedy, whatever the model thought) */
    int pw = in.w >= 90 ? 18 : in.w >= 70 ? 14 : 10;
    /* padded by columns, not bytes: the Vietnamese headers have multi-byte letters */
    char hdr[256], c_piece[64], c_cum[32], c_cut[16], c_final[32];
    Format_pad(T("piece"), pw, -1, c_piece, sizeof c_piece);
    Format_pad(T("cum"), 7, 1, c_cum, sizeof c_cum);
    Format_pad(T("cut"), 3, -1, c_cut, sizeof c_cut);
    Format_pad(T("final"), 7, 1, c_final, sizeof c_final);
    snprintf(hdr, sizeof hdr, "    # %7s  %s %7s %7s %7s %s %s %s", "id", c_piece, "logit", "p", "p(T)", c_cum, c_cut, c_final);
    Draw_text(w, y, in.x, in.w, hdr, Theme_attr(TA_DIM));
    int fixed = Format_widthz(hdr);
    y++;
    int n = v->n_rows < v->logit_rows ? v->n_rows : v->logit_rows;
    if (ui->logit_sel >= n)
        ui->logit_sel = n - 1;
    if (ui->logit_sel < 0)
        ui->logit_sel = 0;
    int room = in.y + in.h - y;
    int first = 0;
    if (n > room && ui->active == PANE_LOGITS && ui->logit_sel >= room)
        first = ui->logit_sel - room + 1;
    float pmax = 0;
    for (int i = 0; i < n; i++)
        if (v->rows[i].prob_temp > pmax)
            pmax = v->rows[i].prob_temp;
    for (int i = first; i < n && y < in.y + in.h; i++, y++) {
        const tl_view_row *row = &v->rows[i];
        char lg[16], p1[16], pt[16], cu[16], pf[16], piece[128], cut[8];
        Format_logitLang(ui->lang, row->logit, lg, sizeof lg);
        Format_probLang(ui->lang, row->prob, p1, sizeof p1);
        Format_probLang(ui->lang, row->prob_temp, pt, sizeof pt);
        Format_probLang(ui->lang, row->cum, cu, sizeof cu);
        Format_probLang(ui->lang, row->prob_final, pf, sizeof pf);
        Format_pad(row->display, pw, -1, piece, sizeof piece);
        snprintf(cut, sizeof cut, "%s%s", row->cut_k ? "k" : "", row->cut_p ? "p" : "");
        if (!cut[0])
            strcpy(cut, v->greedy ? " " : "\xC2\xB7");
        char s[400];
        snprintf(s, sizeof s, "%s %3d %7d  %s %7s %7s %7s %7s %-3s %7s",
                 row->chosen ? (row->forced ? "F\xE2\x96\xB6" : " \xE2\x96\xB6") : "  ", i + 1, row->id,
                 piece, lg, p1, pt, cu, cut, pf);
        int sel = ui->active == PANE_LOGITS && i == ui->logit_sel;
        attr_t a = sel ? Theme_attr(TA_SELECTED)
                   : row->chosen ? Theme_attr(TA_CHOSEN)
                   : (row->cut_k || row->cut_p) ? Theme_attr(TA_CUT)
                                                : A_NORMAL;
        if (sel)
            Draw_fill(w, y, in.x, in.w, a);
        Draw_text(w, y, in.x, in.w, s, a);
        int bw = in.w - fixed - 2;
        if (bw > 2 && pmax > 0) {
            /* bar: p(T) relative to the most likely row, in eighths of a cell */
            int e = (int)(row->prob_temp / pmax * bw * 8 + 0.5);
            if (row->prob_temp > 0 && e < 1)
                e = 1;
            char bar[512];
            size_t o = 0;
            for (int k = 0; k < e / 8 && o + 4 < sizeof bar; k++) {
                memcpy(bar + o, "\xE2\x96\x88", 3);
                o += 3;
            }
            static const char *part[8] = {"", "\xE2\x96\x8F", "\xE2\x96\x8E", "\xE2\x96\x8D",
                                          "\xE2\x96\x8C", "\xE2\x96\x8B", "\xE2\x96\x8A", "\xE2\x96\x89"};
            if (e % 8 && o + 4 < sizeof bar) {
                memcpy(bar + o, part[e % 8], 3);
                o += 3;
            }
            bar[o] = 0;
            Draw_text(w, y, in.x + fixed + 2, bw, bar, sel ? a : Theme_attr(TA_BAR));
        }
    }
}
