/* Lessons in the TUI, through core's lesson player (tokenloop/lesson.h). */
#include "lesson_ctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "i18n.h"
#include "tokenloop/lesson.h"

#define T(s) I18n_tr(c->lang, s)

static const char *pane_names[PANE_COUNT] = {"prompt", "tokens", "logits", "stream", "stop", "timing"};

void LessonCtl_init(tl_lesson_ctl *c, const char *lang)
{
    memset(c, 0, sizeof *c);
    snprintf(c->lang, sizeof c->lang, "%s", lang && *lang ? lang : tl_lesson_default_lang());
    c->step = -1;
    c->show_wrong = -1;
    c->highlight = -1;
}

static void set_text(tl_lesson_ctl *c, tl_ui *ui, char *t)
{
    free(c->text);
    c->text = t;
    ui->lesson_text = t;
}

static void show_list(tl_lesson_ctl *c, tl_ui *ui)
{
    size_t cap = 256 + (size_t)c->n * 160, o = 0;
    char *t = malloc(cap);
    if (!t)
        return;
    o += (size_t)snprintf(t + o, cap - o, "%s\n", T("Lessons (\xE2\x86\x91\xE2\x86\x93 select, Enter starts)"));
    if (c->n == 0)
        o += (size_t)snprintf(t + o, cap - o, "%s\n", T("no lessons found (lessons/ or $TOKENLOOP_LESSONS)"));
    for (int i = 0; i < c->n && o < cap; i++)
        o += (size_t)snprintf(t + o, cap - o, "%s %s\n", i == c->sel ? "\xE2\x96\xB6" : " ", c->titles[i]);
    set_text(c, ui, t);
    /* the strip shows a few lines: keep the selected one (line sel + 1) in them */
    ui->lesson_scroll = c->sel;
    ui->lesson_highlight = -1;
    c->highlight = -1;
}

void LessonCtl_open(tl_lesson_ctl *c, tl_ui *ui)
{
    if (c->cur && c->step >= 0) {   /* reopening a lesson in progress: keep its place */
        ui->lesson_text = c->text;
        return;
    }
    if (!c->paths) {
        char dir[4096];
        if (tl_lesson_dir(dir, sizeof dir) == 0 && tl_lesson_list(dir, &c->paths, &c->n, NULL) == 0) {
            c->titles = calloc((size_t)c->n + 1, sizeof *c->titles);
            for (int i = 0; c->titles && i < c->n; i++) {
                tl_lesson *l;
                char buf[256];
                if (tl_lesson_load(&l, c->paths[i], NULL) == 0) {
                    snprintf(buf, sizeof buf, "%s  %s", tl_lesson_id(l), tl_lesson_title(l, c->lang));
                    tl_lesson_free(l);
                } else {
                    const char *b = strrchr(c->paths[i], '/');
                    snprintf(buf, sizeof buf, T("%s (does not load)"), b ? b + 1 : c->paths[i]);
                }
                c->titles[i] = strdup(buf);
            }
        } else {
            c->paths = NULL;
            c->n = 0;
        }
    }
    show_list(c, ui);
}

static void show_step(tl_lesson_ctl *c, tl_session *s, tl_ui *ui)
{
    tl_error err;
    tl_lesson_ui lui = {"", -1};
    char why[256] = "";
    int rc = tl_lesson_apply(c->cur, c->step, s, &lui, &err);
    if (rc == 0 && tl_session_n_steps(s) == 0 && tl_session_prepare(s, &err))   /* render what the step set up */
        rc = -1;
    int chk = rc ? -1 : tl_lesson_check(c->cur, c->step, s, why, sizeof why);
    char *say = tl_lesson_narrate(c->cur, c->step, c->lang, s);
    size_t cap = (say ? strlen(say) : 0) + 1024;
    char *t = malloc(cap);
    if (t) {
        /* the step's line first, with the way on: the strip may show only it and two more */
        snprintf(t, cap, "%s \xC2\xB7 %d/%d \xC2\xB7 %s%s \xC2\xB7 %s\n%s\n%s",
                 tl_lesson_title(c->cur, c->lang), c->step + 1, tl_lesson_n_steps(c->cur),
                 rc ? T("action failed: ") : chk == 0 ? T("\xE2\x9C\x93 checked on this model") : chk == 1 ? T("\xE2\x9C\x97 expectation failed: ") : "",
                 rc ? err.msg : chk == 1 ? why : "", T("\xE2\x86\x92/Space next"), say ? say : "",
                 T("(the other keys still work)"));
        set_text(c, ui, t);
    }
    free(say);
    c->applied = 1;
    c->show_wrong = lui.show_wrong_readings;
    c->highlight = -1;
    for (int i = 0; i < PANE_COUNT; i++)
        if (!strcmp(lui.highlight, pane_names[i]))
            c->highlight = i;
    /* the layout keeps the strip off this pane; a new step is read from its start */
    ui->lesson_highlight = c->highlight;
    if (c->highlight >= 0)
        ui->active = c->highlight;
    ui->lesson_scroll = 0;
}

int LessonCtl_key(tl_lesson_ctl *c, tl_session *s, int is_code, wint_t ch, tl_ui *ui)
{
    int esc = !is_code && (ch == 27 || ch == 'l');
    if (esc) {
        ui->lesson_open = 0;
        return 1;
    }
    if (c->step < 0) {   /* the list */
        if (is_code && ch == KEY_UP && c->sel > 0)
            c->sel--;
        else if (is_code && ch == KEY_DOWN && c->sel + 1 < c->n)
            c->sel++;
        else if ((is_code && ch == KEY_ENTER) || (!is_code && (ch == '\n' || ch == '\r'))) {
            if (c->n == 0)
                return 1;
            tl_error err;
            tl_lesson_free(c->cur);
            c->cur = NULL;
            if (tl_lesson_load(&c->cur, c->paths[c->sel], &err)) {
                char *t = strdup(err.msg);
                set_text(c, ui, t);
                return 1;
            }
            if (c->server)
                tl_lesson_set_server(c->cur, c->server, NULL);
            c->step = 0;
            show_step(c, s, ui);
            return 1;
        } else if (!is_code && ch == 'q')
            return 0;
        show_list(c, ui);
        return 1;
    }
    /* reading on: the panel clamps the scroll to what the narration wraps to */
    if (is_code && (ch == KEY_DOWN || ch == KEY_NPAGE)) {
        ui->lesson_scroll += ch == KEY_NPAGE ? TL_LAYOUT_LESSON_ROWS - 1 : 1;
        return 1;
    }
    if (is_code && (ch == KEY_UP || ch == KEY_PPAGE)) {
        ui->lesson_scroll -= ch == KEY_PPAGE ? TL_LAYOUT_LESSON_ROWS - 1 : 1;
        if (ui->lesson_scroll < 0)
            ui->lesson_scroll = 0;
        return 1;
    }
    if ((is_code && ch == KEY_RIGHT) || (!is_code && ch == ' ')) {
        if (c->step + 1 < tl_lesson_n_steps(c->cur)) {
            c->step++;
            show_step(c, s, ui);
        } else {   /* the end: back to the list */
            c->step = -1;
            show_list(c, ui);
        }
        return 1;
    }
    return 0;
}

void LessonCtl_free(tl_lesson_ctl *c)
{
    tl_lesson_free(c->cur);
    if (c->paths)
        tl_lesson_list_free(c->paths, c->n);
    for (int i = 0; c->titles && i < c->n; i++)
        free(c->titles[i]);
    free(c->titles);
    free(c->text);
    memset(c, 0, sizeof *c);
}
