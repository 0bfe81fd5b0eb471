/* Whole frames drawn from a made-up view into a virtual terminal (newterm on /dev/null), read
 * back cell by cell: at 160x48 all six panes with their content, at 80x24 tabs plus the summary,
 * a tiny terminal says so; Vietnamese, CJK and emoji keep the borders in their columns. No
 * model and no core: this links only the TUI's drawing and pure libraries. */
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "format.h"
#include "tl_test.h"
#include "ui.h"

static char screen[64][1024];   /* rows as UTF-8, borders as '|' '-' '+' */
static int scr_rows, scr_cols;

static void grab(int rows, int cols)
{
    scr_rows = rows, scr_cols = cols;
    for (int y = 0; y < rows; y++) {
        size_t o = 0;
        for (int x = 0; x < cols; x++) {
            cchar_t cc;
            wchar_t wch[CCHARW_MAX + 1] = {0};
            attr_t at;
            short pair;
            if (mvwin_wch(stdscr, y, x, &cc) == ERR)
                break;
            getcchar(&cc, wch, &at, &pair, NULL);
            if (at & A_ALTCHARSET) {
                screen[y][o++] = wch[0] == 'x' ? '|' : wch[0] == 'q' ? '-' : '+';
                continue;
            }
            int w = wcwidth(wch[0]);
            for (int k = 0; wch[k] && k < CCHARW_MAX; k++) {
                char mb[8];
                int n = (int)wcrtomb(mb, wch[k], NULL);
                if (n > 0 && o + (size_t)n < sizeof screen[y] - 1) {
                    memcpy(screen[y] + o, mb, (size_t)n);
                    o += (size_t)n;
                }
            }
            if (w == 2)
                x++;   /* the cell after a wide character belongs to it */
        }
        screen[y][o] = 0;
    }
}

static int find_row(const char *needle)
{
    for (int y = 0; y < scr_rows; y++)
        if (strstr(screen[y], needle))
            return y;
    return -1;
}

static int all_widths_ok(void)
{
    for (int y = 0; y < scr_rows; y++)
        if (Format_widthz(screen[y]) != scr_cols) {
            fprintf(stderr, "row %d is %d columns: %s\n", y, Format_widthz(screen[y]), screen[y]);
            return 0;
        }
    return 1;
}

static tl_view_token toks[8];
static unsigned char style[256];
static double steps[30];

static void make_view(tl_view *v)
{
    memset(v, 0, sizeof *v);
    snprintf(v->model_name, sizeof v->model_name, "test-model");
    snprintf(v->device, sizeof v->device, "cpu");
    v->vocab_size = 128256;
    v->temperature = 0.6f, v->top_k = 50, v->top_p = 0.9f;
    v->logit_rows = 10;
    static const char prompt[] = "<|start_header_id|>user<|end_header_id|>\n\nXin ch\xC3\xA0o th\xE1\xBA\xBF gi\xE1\xBB\x9Bi "
                                 "\xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80<|eot_id|>"
                                 "<|start_header_id|>assistant<|end_header_id|>\n\n";
    v->prompt = prompt;
    v->prompt_len = strlen(prompt);
    memset(style, VSTYLE_TEMPLATE, sizeof style);
    memset(style, VSTYLE_SPECIAL, 19);
    v->prompt_style = style;
    v->add_generation_prompt = 1;
    v->genprompt_at = (long)(strstr(prompt, "<|eot_id|>") - prompt) + 10;
    static const char *pieces[] = {"<|start_header_id|>", "user", "\xE4\xB8\xAD\xE6\x96\x87",
                                   "\xE2\x90\xA3\xF0\x9F\x98\x80", "\xE2\x90\xA3th\xE1\xBA\xBF", "Hello"};
    for (int i = 0; i < 6; i++) {
        toks[i].id = 1000 + i;
        snprintf(toks[i].display, sizeof toks[i].display, "%s", pieces[i]);
        toks[i].generated = i == 5;
    }
    v->tokens = toks;
    v->n_tokens = 6, v->n_prompt = 5, v->pos = 6;
    v->has_logits = 1;
    v->logits_step = 1;
    v->n_rows = 12;
    float cum = 0;
    for (int i = 0; i < 12; i++) {
        tl_view_row *r = &v->rows[i];
        r->id = 9000 + i;
        snprintf(r->display, sizeof r->display, i == 1 ? "\xE4\xB8\xAD\xE6\x96\x87\xE5\xAD\x97" : "w%d", i);
        r->logit = 20.0f - i;
        r->prob_temp = 0.5f / (float)(1 << i);
        cum += r->prob_temp;
        r->cum = cum;
        r->prob_final = i < 3 ? r->prob_temp * 1.2f : 0;
        r->cut_p = i >= 3;
        r->chosen = i == 0;
    }
    v->entropy = 1.234;
    v->mass_outside = 0.0005;
    v->kept = 3;
    v->printed = "Xin ch\xC3\xA0o ";
    v->held = "th\xE1\xBA\xBF";
    snprintf(v->held_reason, sizeof v->held_reason, "partial word");
    v->n_eos = 1;
    v->eos_ids[0] = 128009;
    snprintf(v->eos_names[0], sizeof v->eos_names[0], "<|eot_id|>");
    v->budget = 20;
    snprintf(v->budget_source, sizeof v->budget_source, "transformers' default of 20");
    v->generated = 1;
    v->stopped = 1;
    snprintf(v->stop_reason, sizeof v->stop_reason, "eos");
    snprintf(v->stop_detail, sizeof v->stop_detail, "eos id 128009");
    v->ttft_ms = 12.34, v->template_ms = 0.1, v->tokenize_ms = 0.2, v->prefill_ms = 11.5;
    v->tpot_ms = 3.5, v->decode_tps = 285.7;
    for (int i = 0; i < 30; i++)
        steps[i] = 3 + (i % 5) * 0.25;
    v->step_ms = steps, v->n_step_ms = 30, v->pass_mean_ms = 3.5;
    v->floor_ms = 2.0, v->step_bytes = 16e6, v->bandwidth_gbs = 8;
    snprintf(v->bandwidth_source, sizeof v->bandwidth_source, "probed");
    snprintf(v->next, sizeof v->next, "stopped (eos)");
}

int main(void)
{
    if (!setlocale(LC_ALL, "C.UTF-8"))
        return 77;
    FILE *out = fopen("/dev/null", "w"), *in = fopen("/dev/null", "r");
    SCREEN *scr = out && in ? newterm("xterm-256color", out, in) : NULL;
    if (!scr)
        scr = out && in ? newterm("vt100", out, in) : NULL;
    if (!scr) {
        fprintf(stderr, "no terminal description: skipped\n");
        return 77;
    }
    set_term(scr);
    Theme_init(0);
    static tl_view v;
    static tl_ui ui;
    make_view(&v);
    ui.active = PANE_LOGITS;
    ui.tok_sel = -1;
    ui.prompt_scroll = -1;

    /* 160x48: every pane */
    resizeterm(48, 160);
    Screen_draw(stdscr, 160, 48, &v, &ui);
    grab(48, 160);
    TL_CHECK(all_widths_ok());
    TL_CHECK(strncmp(screen[0], " tokenloop \xC2\xB7 test-model \xC2\xB7 cpu", 30) == 0);
    const char *titles[] = {"1 Prompt", "2 Tokens", "3 Logits", "4 Stream", "5 Stop", "6 Timing"};
    for (int i = 0; i < 6; i++)
        TL_CHECK_MSG(find_row(titles[i]) >= 0, "%s missing", titles[i]);
    TL_CHECK(find_row("<|start_header_id|>user<|end_header_id|>") >= 0);
    TL_CHECK(find_row("\xE2\x97\x80 generation prompt") > find_row("<|start_header_id|>user"));
    int r1 = find_row("  1    9000  w0");
    TL_CHECK_MSG(r1 > 0, "logits row 1");
    for (int i = 1; i < 10; i++) {
        char want[64];
        snprintf(want, sizeof want, "%3d    %d", i + 1, 9000 + i);
        TL_CHECK_MSG(r1 > 0 && strstr(screen[r1 + i], want), "logits row %d: %s", i + 1, r1 > 0 ? screen[r1 + i] : "");
    }
    TL_CHECK(r1 > 0 && !strstr(screen[r1 + 10], "9010"));   /* k = 10 rows, not 12 */
    TL_CHECK(r1 > 0 && strstr(screen[r1], "\xE2\x96\xB6"));   /* the chosen row */
    TL_CHECK(r1 > 0 && strstr(screen[r1 + 1], "\xE4\xB8\xAD\xE6\x96\x87\xE5\xAD\x97"));
    /* the CJK piece is padded by width: its logit lines up with the row above */
    if (r1 > 0) {
        const char *a = strstr(screen[r1], "20.00"), *b = strstr(screen[r1 + 1], "19.00");
        TL_CHECK(a && b && Format_width(screen[r1], (size_t)(a - screen[r1])) ==
                               Format_width(screen[r1 + 1], (size_t)(b - screen[r1 + 1])));
    }
    TL_CHECK(find_row("entropy 1.234 nats") >= 0);
    TL_CHECK(find_row("STOPPED: eos") >= 0);
    TL_CHECK(find_row("TTFT 12.3 ms") >= 0);
    TL_CHECK(find_row("floor 16.0 MB \xC3\xB7 8.00 GB/s = 2.00 ms") >= 0);
    TL_CHECK(find_row("4.8 ms") >= 0);
    TL_CHECK(find_row("held back \xC2\xAB" "th\xE1\xBA\xBF\xC2\xBB: partial word") >= 0);
    TL_CHECK(find_row("\xE2\x96\x88") >= 0);   /* chart bars */
    /* every pane row keeps both borders where the layout put them */
    tl_layout L;
    Layout_compute(160, 48, ui.active, v.logit_rows + 3, &L);
    for (int p = 0; p < PANE_COUNT; p++) {
        tl_rect r = L.pane[p];
        for (int y = r.y + 1; y < r.y + r.h - 1; y++) {
            char left = 0, right = 0;
            int col = 0;
            for (const char *s = screen[y]; *s;) {
                int32_t cp;
                int n = Format_utf8Next(s, strlen(s), &cp);
                if (col == r.x)
                    left = *s;
                if (col == r.x + r.w - 1)
                    right = *s;
                col += Format_cpWidth(cp);
                s += n;
            }
            TL_CHECK_MSG(left == '|' && right == '|', "%s row %d: borders at %d and %d: %s",
                         Layout_paneName(p), y, r.x, r.x + r.w - 1, screen[y]);
        }
    }

    /* 80x24: tabs and the summary; the logits tab shows its 10 rows */
    resizeterm(24, 80);
    Screen_draw(stdscr, 80, 24, &v, &ui);
    grab(24, 80);
    TL_CHECK(all_widths_ok());
    TL_CHECK_INT(find_row(" 1 Prompt  2 Tokens  3 Logits"), 1);
    TL_CHECK_INT(find_row("TTFT 12.3 ms"), 2);
    TL_CHECK(find_row("stop: eos") == 2);
    TL_CHECK(find_row("  10    9009") > 0);
    TL_CHECK_INT(find_row("stopped (eos)"), 22);
    TL_CHECK(strstr(screen[23], "q quit") != NULL);
    /* the tokens tab with wide pieces */
    ui.active = PANE_TOKENS;
    Screen_draw(stdscr, 80, 24, &v, &ui);
    grab(24, 80);
    TL_CHECK(all_widths_ok());
    TL_CHECK(find_row("\xE4\xB8\xAD\xE6\x96\x87") > 0);
    /* help on top */
    ui.help = 1;
    Screen_draw(stdscr, 80, 24, &v, &ui);
    grab(24, 80);
    TL_CHECK(find_row("run to the stop") > 0);
    TL_CHECK(all_widths_ok());
    ui.help = 0;

    /* too small */
    resizeterm(10, 30);
    Screen_draw(stdscr, 30, 10, &v, &ui);
    grab(10, 30);
    TL_CHECK_INT(find_row("terminal too small"), 0);

    endwin();
    delscreen(scr);
    fclose(out);
    fclose(in);
    return TL_TEST_END("tui_screen");
}
