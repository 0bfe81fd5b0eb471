/* Whole frames drawn from a made-up view into a virtual terminal (newterm on /dev/null), read
 * back cell by cell: at 160x48 all six panes with their content, at 80x24 tabs plus the summary,
 * a tiny terminal says so; Vietnamese, CJK and emoji keep the borders in their columns. No
 * model and no core: this links only the TUI's drawing and pure libraries. */
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "format.h"
#include "i18n.h"
#include "keys.h"
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

/* Rows holding needle. */
static int count_rows(const char *needle)
{
    int n = 0;
    for (int y = 0; y < scr_rows; y++)
        n += strstr(screen[y], needle) != NULL;
    return n;
}

static int is_word(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* en in s as a whole word: "on" in "token" or "prompt" in "add_generation_prompt" is not it. */
static int word_in(const char *s, const char *en)
{
    size_t n = strlen(en);
    for (const char *p = strstr(s, en); p && n; p = strstr(p + 1, en))
        if ((p == s || !is_word(p[-1]) || !is_word(en[0])) && (!is_word(p[n]) || !is_word(en[n - 1])))
            return 1;
    return 0;
}

/* The strings with a Vietnamese: the message table's, then the key table's footer words and key
 * list texts (a row without one gives "" twice). */
static int n_pairs(void)
{
    return I18n_count() + 2 * Keys_count;
}

static const char *pair_text(int i, int vi)
{
    if (i < I18n_count())
        return vi ? I18n_vi(i) : I18n_en(i);
    const tl_key *k = &Keys_rows[(i - I18n_count()) / 2];
    const char *t = (i - I18n_count()) % 2 ? (vi ? k->help.vi : k->help.en) : (vi ? k->foot.vi : k->foot.en);
    return t ? t : "";
}

static const char *pair_en(int i)
{
    return pair_text(i, 0);
}

static const char *pair_vi(int i)
{
    return pair_text(i, 1);
}

/* An English string of the message table or the key table on screen as a whole word; NULL
 * when none. The Timing pane is left out: pane_timing.c is translated by its owner
 * (tests/tui/vi_screen.py checks the whole screen of the real program). */
static const char *english_on_screen(int cols, int rows, const tl_ui *ui)
{
    tl_layout L;
    Layout_computeLesson(cols, rows, ui->active, 13, ui->lesson_open, ui->lesson_highlight, &L);
    tl_rect t = L.pane[PANE_TIMING];
    for (int y = t.y; t.h > 0 && y < t.y + t.h; y++) {
        /* blank the pane's columns (its rows hold one-byte borders and UTF-8 text) */
        char out[1024];
        size_t o = 0;
        int col = 0;
        for (const char *p = screen[y]; *p;) {
            int32_t cp;
            int n = Format_utf8Next(p, strlen(p), &cp);
            if (col >= t.x && col < t.x + t.w)
                out[o++] = ' ';
            else {
                memcpy(out + o, p, (size_t)n);
                o += (size_t)n;
            }
            col += Format_cpWidth(cp);
            p += n;
        }
        out[o] = 0;
        memcpy(screen[y], out, o + 1);
    }
    for (int i = 0; i < n_pairs(); i++) {
        const char *en = pair_en(i);
        if (!strcmp(en, pair_vi(i)) || strchr(en, '%'))
            continue;
        /* technical terms the Vietnamese keeps on purpose, as vi_screen.py's TECHNICAL */
        if (!strcmp(en, "Prompt") || !strcmp(en, "template"))
            continue;
        for (int y = 0; y < scr_rows; y++)
            if (word_in(screen[y], en))
                return en;
    }
    return NULL;
}

/* Vietnamese frames, the lesson strip, wrapping and the transformers call. */
static void test_teaching(tl_view *v, tl_ui *ui)
{
    static const char lesson[] =
        "Streaming \xC2\xB7 2/6 \xC2\xB7 \xE2\x9C\x93 checked on this model \xC2\xB7 \xE2\x86\x92/Space next\n"
        "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty twentyone twentytwo twentythree twentyfour twentyfive twentysix "
        "twentyseven twentyeight twentynine thirty thirtyone thirtytwo thirtythree thirtyfour thirtyfive "
        "thirtysix thirtyseven thirtyeight thirtynine forty fortyone fortytwo fortythree fortyfour fortyfive "
        "fortysix fortyseven fortyeight fortynine fifty fiftyone fiftytwo fiftythree fiftyfour fiftyfive LAST";
    static const char sentence[] =
        "The capital of France is Paris, a city on the Seine with many bridges, museums and cafes, "
        "and the streamer prints whole words only";
    v->printed = sentence;
    v->held = "";
    v->skip_prompt = 1, v->skip_special = 1;
    snprintf(v->hf_call, sizeof v->hf_call,
             "from transformers import AutoModelForCausalLM, TextStreamer\n"
             "out = model.generate(input_ids, do_sample=True, temperature=0.6, top_k=50, top_p=0.9, max_new_tokens=20)");

    /* 160x48, the lesson on Timing: the strip is below the Timing pane, none of it covered */
    ui->active = PANE_TIMING;
    ui->lesson_open = 1;
    ui->lesson_text = lesson;
    ui->lesson_highlight = PANE_TIMING;
    ui->lesson_scroll = 0;
    resizeterm(48, 160);
    Screen_draw(stdscr, 160, 48, v, ui);
    grab(48, 160);
    TL_CHECK(all_widths_ok());
    int strip = find_row("Lessons (l)");
    TL_CHECK_MSG(strip == 46 - TL_LAYOUT_LESSON_ROWS, "strip at row %d", strip);
    TL_CHECK(find_row("6 Timing") >= 0 && find_row("6 Timing") < strip);
    TL_CHECK(strip > 0 && strstr(screen[strip - 1], "+-") == screen[strip - 1]);   /* the panes' bottom borders */
    TL_CHECK(strip > 0 && strstr(screen[strip], "\xE2\x86\x93 more 1/"));
    TL_CHECK(strstr(screen[strip + 1], "Streaming \xC2\xB7 2/6") != NULL);
    TL_CHECK(find_row("LAST") < 0);
    /* scrolled to the end: the last words, the hint says so, nothing past the strip */
    ui->lesson_scroll = 1000;
    Screen_draw(stdscr, 160, 48, v, ui);
    grab(48, 160);
    TL_CHECK(find_row("LAST") > strip && find_row("LAST") < 46);
    TL_CHECK(strstr(screen[strip], "\xE2\x86\x91 end") != NULL);
    TL_CHECK(ui->lesson_scroll < 10);   /* clamped to what the text wraps to */
    /* the lesson on the Prompt: the strip goes on top */
    ui->lesson_highlight = PANE_PROMPT;
    Screen_draw(stdscr, 160, 48, v, ui);
    grab(48, 160);
    TL_CHECK_INT(find_row("Lessons (l)"), 1);
    TL_CHECK(find_row("1 Prompt") == 1 + TL_LAYOUT_LESSON_ROWS);
    /* the Stream title names the streamer as the session runs it */
    TL_CHECK(find_row("4 Stream \xC2\xB7 hf TextStreamer(skip_prompt, skip_special_tokens) \xC2\xB7 h: server") >= 0);
    /* every word of the streamed text whole on some row: the pane wraps between words */
    char words[sizeof sentence];
    memcpy(words, sentence, sizeof sentence);
    for (char *wd = strtok(words, " "); wd; wd = strtok(NULL, " ")) {
        char pad[64];
        snprintf(pad, sizeof pad, "%s", wd);
        TL_CHECK_MSG(find_row(pad) >= 0, "word \"%s\" cut", wd);
    }
    ui->lesson_open = 0;

    /* 80x24 Prompt tab: the long line breaks before <|end_header_id|>, never inside it */
    ui->active = PANE_PROMPT;
    resizeterm(24, 80);
    Screen_draw(stdscr, 80, 24, v, ui);
    grab(24, 80);
    TL_CHECK_INT(count_rows("<|end_header_id|>"), 2);
    TL_CHECK_INT(count_rows("<|start_header_id|>"), 2);
    /* the Stream tab at 80 columns: still whole words */
    ui->active = PANE_STREAM;
    Screen_draw(stdscr, 80, 24, v, ui);
    grab(24, 80);
    TL_CHECK(find_row("bridges,") >= 0 && find_row("museums") >= 0 && find_row("streamer") >= 0);
    /* 80x24 with the lesson: the strip above the status line, narration scrolls */
    ui->lesson_open = 1;
    ui->lesson_highlight = PANE_STREAM;
    ui->lesson_scroll = 0;
    Screen_draw(stdscr, 80, 24, v, ui);
    grab(24, 80);
    TL_CHECK_INT(find_row("Lessons (l)"), 22 - TL_LAYOUT_LESSON_ROWS);
    TL_CHECK(find_row("4 Stream") >= 0 && find_row("4 Stream") < 22 - TL_LAYOUT_LESSON_ROWS);
    TL_CHECK(find_row("\xE2\x86\x93 more 1/") == 22 - TL_LAYOUT_LESSON_ROWS);
    TL_CHECK(all_widths_ok());
    ui->lesson_open = 0;

    /* the transformers call */
    ui->hf_call = 1;
    Screen_draw(stdscr, 80, 24, v, ui);
    grab(24, 80);
    TL_CHECK(find_row("the same in transformers") >= 0);
    TL_CHECK(find_row("from transformers import AutoModelForCausalLM") >= 0);
    TL_CHECK(find_row("max_new_tokens=20)") >= 0);   /* wrapped, not cut */
    TL_CHECK(all_widths_ok());
    ui->hf_call = 0;

    /* Vietnamese: no English of the table on any frame, numbers with a comma */
    snprintf(ui->lang, sizeof ui->lang, "vi");
    v->greedy = 0;
    v->printed = "Thủ đô ";
    v->held = "của";
    snprintf(v->held_reason, sizeof v->held_reason, "từ chưa trọn");
    snprintf(v->budget_source, sizeof v->budget_source, "mặc định");
    snprintf(v->next, sizeof v->next, "đã dừng (eos)");
    int sizes[][2] = {{160, 48}, {80, 24}};
    for (int z = 0; z < 2; z++) {
        int cols = sizes[z][0], rows = sizes[z][1];
        resizeterm(rows, cols);
        for (int a = 0; a < PANE_COUNT; a++) {
            for (int h = 0; h < 3; h++) {
                ui->active = a;
                ui->help = h == 1;
                ui->lesson_open = h == 2;
                ui->lesson_text = NULL;
                Screen_draw(stdscr, cols, rows, v, ui);
                grab(rows, cols);
                const char *en = english_on_screen(cols, rows, ui);
                TL_CHECK_MSG(!en, "%dx%d tab %d%s: English \"%s\" on screen", cols, rows, a,
                             h == 1 ? " help" : h == 2 ? " lessons" : "", en ? en : "");
                TL_CHECK(all_widths_ok());
            }
        }
    }
    ui->help = 0;
    ui->lesson_open = 0;
    ui->active = PANE_LOGITS;
    resizeterm(48, 160);
    Screen_draw(stdscr, 160, 48, v, ui);
    grab(48, 160);
    /* content as plain text (this view's): the short form, whole, in the 80-column pane */
    TL_CHECK(find_row("1 Lời nhắc · 5 token · add_generation_prompt bật · văn bản thường ") >= 0);
    TL_CHECK(find_row("3 Logits · 10 cao nhất trong 128.256") >= 0);
    TL_CHECK(find_row("T 0,60 · top-k 50 · top-p 0,90") == 0);
    TL_CHECK(find_row("20,00") > 0 && find_row("20.00") < 0);
    TL_CHECK(find_row("entropy 1,234 nat") > 0);
    TL_CHECK(find_row("ĐÃ DỪNG: eos") > 0);
    snprintf(ui->lang, sizeof ui->lang, "en");
}

/* The Timing pane's dtype table (key d): hidden while one dtype has run (the floor line says
 * it), then one row per dtype with the current one marked, "—" for what a dtype has not
 * measured, every column inside the pane at 160x48 and in the 80x24 tab, in en and vi; the
 * title names converted weights. */
static void test_dtypes(tl_view *v, tl_ui *ui)
{
    snprintf(v->dtype, sizeof v->dtype, "bf16");
    snprintf(v->file_dtype, sizeof v->file_dtype, "bf16");
    v->n_dtypes = 1;
    v->dtypes[0] = (tl_view_dtype){"bf16", 35.7e6, 35.8e6, 1.12, 3.86, 8, 1, -1};
    ui->active = PANE_TIMING;
    ui->lesson_open = 0;
    resizeterm(48, 160);
    Screen_draw(stdscr, 160, 48, v, ui);
    grab(48, 160);
    TL_CHECK(find_row("per step") < 0);
    TL_CHECK(find_row("weights \xC2\xB7") < 0);   /* the file's dtype: no note in the title */
    v->n_dtypes = 3;
    v->dtypes[0].current = 0;
    v->dtypes[1] = (tl_view_dtype){"q8_0", 19.0e6, 19.0e6, 0.60, 1.50, 8, 0, -1};
    v->dtypes[2] = (tl_view_dtype){"q4_0", 10.0e6, -1, -1, -1, 0, 1, -1};   /* converted, not run yet */
    snprintf(v->dtype, sizeof v->dtype, "q4_0");
    const int sizes[][2] = {{160, 48}, {80, 24}};
    for (int z = 0; z < 2; z++) {
        int cols = sizes[z][0], rows = sizes[z][1];
        resizeterm(rows, cols);
        Screen_draw(stdscr, cols, rows, v, ui);
        grab(rows, cols);
        TL_CHECK(all_widths_ok());
        TL_CHECK_MSG(find_row("q4_0 weights") == 0, "%dx%d: the title names the converted weights", cols, rows);
        int h = find_row("dtype  weights");
        TL_CHECK_MSG(h > 0, "%dx%d: the table's header", cols, rows);
        TL_CHECK(h > 0 && strstr(screen[h], "per step") && strstr(screen[h], "floor") && strstr(screen[h], "pace"));
        TL_CHECK_MSG(h > 0 && strstr(screen[h + 1], "  bf16   35.7 MB    35.8 MB    1.12 ms   3.86 ms   3.4\xC3\x97"),
                     "%dx%d: %s", cols, rows, h > 0 ? screen[h + 1] : "");
        TL_CHECK(h > 0 && strstr(screen[h + 2], "  q8_0   19.0 MB    19.0 MB    0.60 ms   1.50 ms   2.5\xC3\x97"));
        TL_CHECK_MSG(h > 0 && strstr(screen[h + 3], "\xE2\x96\xB6 q4_0   10.0 MB    \xE2\x80\x94          \xE2\x80\x94         \xE2\x80\x94         \xE2\x80\x94"),
                     "%dx%d: %s", cols, rows, h > 0 ? screen[h + 3] : "");
        TL_CHECK(h > 0 && strstr(screen[h + 4], "d: next dtype"));
    }
    /* Vietnamese: the headers and the legend translated, the comma decimal mark */
    snprintf(ui->lang, sizeof ui->lang, "vi");
    Screen_draw(stdscr, 80, 24, v, ui);
    grab(24, 80);
    TL_CHECK(all_widths_ok());
    TL_CHECK(find_row("tr\xE1\xBB\x8Dng s\xE1\xBB\x91 q4_0") == 0);
    int h = find_row("dtype  tr\xE1\xBB\x8Dng s\xE1\xBB\x91");
    TL_CHECK(h > 0 && strstr(screen[h], "m\xE1\xBB\x97i b\xC6\xB0\xE1\xBB\x9B\x63"));
    TL_CHECK(h > 0 && strstr(screen[h + 1], "35,7 MB") && strstr(screen[h + 1], "3,4\xC3\x97"));
    TL_CHECK(find_row("per step") < 0 && find_row("next dtype") < 0);
    snprintf(ui->lang, sizeof ui->lang, "en");
    v->n_dtypes = 0;
    v->dtype[0] = v->file_dtype[0] = 0;
    ui->active = PANE_LOGITS;
}

/* The Timing pane's batch table (lesson 8): a row per batch size under a header, the legend with
 * the shape, the arithmetic and the crossover; every column inside the pane at 160x48 and in the
 * 80x24 tab; Vietnamese headers and marks. */
static void test_batches(tl_view *v, tl_ui *ui)
{
    v->n_batches = 3;
    v->batches[0] = (tl_view_batch){1, 77.28, 12.94, 2.47e9, 1.03, 1};
    v->batches[1] = (tl_view_batch){4, 86.02, 46.5, 0.62e9, 1.16, 3.58};
    v->batches[2] = (tl_view_batch){16, 123.32, 1297.3, 0.156e9, 1.70, 9.85};
    v->batch_roof_gflops = 334.8;
    v->batch_crossover = 10.1;
    snprintf(v->batch_shape, sizeof v->batch_shape, "llama-3.2-1b");
    ui->active = PANE_TIMING;
    ui->lesson_open = 0;
    const int sizes[][2] = {{160, 48}, {80, 24}};
    for (int z = 0; z < 2; z++) {
        int cols = sizes[z][0], rows = sizes[z][1];
        resizeterm(rows, cols);
        Screen_draw(stdscr, cols, rows, v, ui);
        grab(rows, cols);
        TL_CHECK(all_widths_ok());
        int h = find_row("B      TPOT");
        TL_CHECK_MSG(h > 0, "%dx%d: the batch table's header", cols, rows);
        TL_CHECK(h > 0 && strstr(screen[h], "tokens/s") && strstr(screen[h], "per token") && strstr(screen[h], "floor"));
        TL_CHECK_MSG(h > 0 && strstr(screen[h + 1], "  1      77.3 ms    12.9        2.47 GB     1.03\xC3\x97"),
                     "%dx%d: %s", cols, rows, h > 0 ? screen[h + 1] : "");
        TL_CHECK_MSG(h > 0 && strstr(screen[h + 3], "  16     123.3 ms   1,297.3     156 MB      1.70\xC3\x97"),
                     "%dx%d: %s", cols, rows, h > 0 ? screen[h + 3] : "");
        TL_CHECK_MSG(h > 0 && strstr(screen[h + 4], "llama-3.2-1b: ") &&
                     (strstr(screen[h + 4], "crossover near B = 10.1") || strstr(screen[h + 4], "crossover B = 10.1")),
                     "%dx%d: %s", cols, rows, h > 0 ? screen[h + 4] : "");
    }
    snprintf(ui->lang, sizeof ui->lang, "vi");
    Screen_draw(stdscr, 80, 24, v, ui);
    grab(24, 80);
    TL_CHECK(all_widths_ok());
    int h = find_row("B      TPOT");
    TL_CHECK_MSG(h > 0, "vi: the batch table's header");
    TL_CHECK(h > 0 && strstr(screen[h], "m\xE1\xBB\x97i token") && strstr(screen[h + 3], "1.297,3") &&
             strstr(screen[h + 3], "1,70\xC3\x97"));
    TL_CHECK(find_row("per token") < 0 && find_row("crossover") < 0);
    snprintf(ui->lang, sizeof ui->lang, "en");
    v->n_batches = 0;
    ui->active = PANE_LOGITS;
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
    /* a narrow title drops the precision, then the streamer, instead of being cut; the summary
     * gives a stop's detail (brackets of its own) after a dash, or leaves it to the Stop pane */
    {
        tl_view w = v;
        snprintf(w.model_name, sizeof w.model_name, "tl-mini-instruct-2");
        snprintf(w.precision, sizeof w.precision, "mixed");
        snprintf(w.stop_detail, sizeof w.stop_detail, "eos id 128009 <|eot_id|> (from generation_config.json)");
        Screen_draw(stdscr, 80, 24, &w, &ui);
        grab(24, 80);
        TL_CHECK(all_widths_ok());
        char title[1024];
        snprintf(title, sizeof title, "%s", screen[0]);
        for (size_t n = strlen(title); n > 0 && title[n - 1] == ' '; n--)
            title[n - 1] = 0;
        size_t tn = strlen(title);
        TL_CHECK_MSG(strstr(title, "top-p 0.90") && tn >= 9 && (!strcmp(title + tn - 9, "hf stream") || !strcmp(title + tn - 4, "0.90")),
                     "title, whole parts only: %s", title);
        TL_CHECK_MSG(strstr(screen[2], "stop: eos") && !strstr(screen[2], "))") && !strstr(screen[2], "(eos id"),
                     "summary: %s", screen[2]);
        resizeterm(48, 160);
        Screen_draw(stdscr, 160, 48, &w, &ui);
        grab(48, 160);
        TL_CHECK_MSG(strstr(screen[0], "hf stream \xC2\xB7 precision mixed"), "title: %s", screen[0]);
        /* the kernel set beside the device; dropped after the precision, before the streamer */
        snprintf(w.kernels, sizeof w.kernels, "avx512bf16");
        Screen_draw(stdscr, 160, 48, &w, &ui);
        grab(48, 160);
        TL_CHECK_MSG(strstr(screen[0], " tokenloop \xC2\xB7 tl-mini-instruct-2 \xC2\xB7 cpu avx512bf16 \xC2\xB7 "), "title: %s", screen[0]);
        resizeterm(24, 80);
        /* 85 columns with the kernel set, 74 without */
        snprintf(w.model_name, sizeof w.model_name, "tl-mini-instruct-2-with-a-long-tag");
        Screen_draw(stdscr, 80, 24, &w, &ui);
        grab(24, 80);
        TL_CHECK_MSG(!strstr(screen[0], "tokenloop") && !strstr(screen[0], "avx512bf16") && strstr(screen[0], "cpu \xC2\xB7 ") &&
                     strstr(screen[0], "top-p 0.90"), "title at 80 columns: %s", screen[0]);
        snprintf(w.model_name, sizeof w.model_name, "m");
        Screen_draw(stdscr, 80, 24, &w, &ui);
        grab(24, 80);
        TL_CHECK_MSG(strstr(screen[0], " m \xC2\xB7 cpu avx512bf16 \xC2\xB7 "), "short title at 80 columns: %s", screen[0]);
        snprintf(w.model_name, sizeof w.model_name, "tl-mini-instruct-2");
        w.kernels[0] = 0;
        resizeterm(48, 160);
        /* two tokens, one gap between them: "1 gap" */
        w.n_step_ms = 1, w.lesson_tps = 300.0;
        Screen_draw(stdscr, 160, 48, &w, &ui);
        grab(48, 160);
        TL_CHECK(find_row("\xC3\xB7 1 gap)") >= 0 && (find_row("decode speed: 1 gap ") >= 0 || find_row("decode: 1 gap ") >= 0));
        TL_CHECK_MSG(find_row("1 gaps") < 0, "row %d: %s", find_row("1 gaps"), find_row("1 gaps") >= 0 ? screen[find_row("1 gaps")] : "");
        resizeterm(24, 80);
    }
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
    /* every key fits at 80x24, the last ones too */
    TL_CHECK(find_row("the same settings as a transformers call") > 0);
    TL_CHECK(find_row("quit (cancels a run first)") > 0);
    TL_CHECK(find_row("any key closes this help") > 0);
    ui.help = 0;

    test_teaching(&v, &ui);
    test_dtypes(&v, &ui);
    test_batches(&v, &ui);

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
