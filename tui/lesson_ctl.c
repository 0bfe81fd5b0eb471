/* Lessons in the TUI, through core's lesson player (tokenloop/lesson.h). */
#include "lesson_ctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "i18n.h"
#include "tokenloop/buf.h"
#include "tokenloop/engine.h"
#include "tokenloop/lesson.h"
#include "tokenloop/sampler.h"
#include "tokenloop/stop.h"

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

/* ---- the state a step starts from ---- */

/* Everything a key can change that a lesson step reads: the request, every setting, the
 * weights, the engine's mode and the tokens so far. Two equal marks: the same state. */
static char *lesson_mark(tl_session *s)
{
    tl_strbuf b = {0};
    const char *msgs = tl_session_messages(s);
    tl_sampling sp = tl_session_sampling(s);
    tl_strbuf_printf(&b, "%s|%d%d|%d %.6f %d %.6f %llu|%d|%d|%s|%d|", msgs ? msgs : "(ids)",
                     tl_session_add_generation_prompt(s), tl_session_parse_special_in_content(s), sp.greedy,
                     sp.temperature, sp.top_k, sp.top_p, (unsigned long long)sp.seed, tl_session_max_new_tokens(s),
                     (int)tl_session_stream_mode(s), tl_dtype_name(tl_session_dtype(s)),
                     tl_engine_async(tl_session_engine(s)));
    int n = 0;
    const char *const *stop = tl_session_stop_strings(s, &n);
    for (int i = 0; i < n; i++)
        tl_strbuf_printf(&b, "%zu:%s", strlen(stop[i]), stop[i]);
    const int *ids = msgs ? NULL : tl_session_prompt_ids(s, &n);
    for (int i = 0; ids && i < n; i++)
        tl_strbuf_printf(&b, "%d,", ids[i]);
    tl_strbuf_printf(&b, "|");
    ids = tl_session_generated_ids(s, &n);
    for (int i = 0; ids && i < n; i++)
        tl_strbuf_printf(&b, "%d,", ids[i]);
    return b.p;
}

/* The teacher's session, kept when the first lesson starts and given back when they leave. */
typedef struct tl_lesson_saved {
    char *messages;            /* NULL: the prompt was ids */
    int *ids, n_ids;
    int gen_prompt, parse_special, max_new, stream_mode, async, n_stop;
    char *stop[TL_MAX_STOP];
    tl_sampling sp;
    tl_dtype dtype;
} tl_lesson_saved;

static void saved_free(tl_lesson_saved *v)
{
    if (!v)
        return;
    free(v->messages);
    free(v->ids);
    for (int i = 0; i < v->n_stop; i++)
        free(v->stop[i]);
    free(v);
}

static tl_lesson_saved *saved_take(tl_session *s)
{
    tl_lesson_saved *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    const char *msgs = tl_session_messages(s);
    int n = 0;
    if (msgs) {
        v->messages = strdup(msgs);
    } else {
        const int *ids = tl_session_prompt_ids(s, &n);
        v->ids = n > 0 ? malloc((size_t)n * sizeof *ids) : NULL;
        if (v->ids) {
            memcpy(v->ids, ids, (size_t)n * sizeof *ids);
            v->n_ids = n;
        }
    }
    v->gen_prompt = tl_session_add_generation_prompt(s);
    v->parse_special = tl_session_parse_special_in_content(s);
    v->max_new = tl_session_max_new_tokens(s);
    v->stream_mode = (int)tl_session_stream_mode(s);
    v->async = tl_engine_async(tl_session_engine(s));
    v->sp = tl_session_sampling(s);
    v->dtype = tl_session_dtype(s);
    const char *const *stop = tl_session_stop_strings(s, &n);
    for (int i = 0; i < n && i < TL_MAX_STOP; i++)
        if ((v->stop[i] = strdup(stop[i])))
            v->n_stop++;
    return v;
}

/* Gives the teacher's session back; the tokens of the lessons go (the prompt changed). */
static int saved_restore(const tl_lesson_saved *v, tl_session *s, tl_error *err)
{
    tl_session_reset(s);
    if (v->dtype != tl_session_dtype(s) && tl_session_set_dtype(s, v->dtype, err))
        return -1;
    if (v->messages ? tl_session_set_messages(s, v->messages, err)
                    : v->n_ids > 0 && tl_session_set_prompt_ids(s, v->ids, v->n_ids, err))
        return -1;
    tl_session_set_add_generation_prompt(s, v->gen_prompt);
    tl_session_set_parse_special_in_content(s, v->parse_special);
    tl_session_set_sampling(s, v->sp);
    tl_session_set_max_new_tokens(s, v->max_new);
    if (tl_session_set_stop_strings(s, (const char *const *)v->stop, v->n_stop, err))
        return -1;
    tl_session_set_stream_mode(s, (tl_stream_mode)v->stream_mode);
    tl_session_set_top_n(s, TL_MAX_TOP);   /* the TUI's: a lesson may show fewer */
    tl_error e2;
    if (tl_engine_async(tl_session_engine(s)) != v->async)
        tl_engine_set_async(tl_session_engine(s), v->async, &e2);
    return tl_session_prepare(s, err);
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
    ui->stream_note[0] = 0;
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

/* Plays step c->step: on top of the session as it is when that is what the step before left,
 * else every step from the lesson's first again (they begin with "defaults"), so a key the
 * teacher pressed in between (a, d, g, ...) cannot break the step. */
static int play_step(tl_lesson_ctl *c, tl_session *s, tl_lesson_ui *lui, tl_error *err)
{
    int from = c->step;
    c->show_wrong = -1;
    if (c->step > 0) {
        char *now = lesson_mark(s);
        if (!c->mark || !now || c->mark_step != c->step - 1 || strcmp(now, c->mark))
            from = 0;
        free(now);
    }
    free(c->mark);
    c->mark = NULL;
    for (int i = from; i <= c->step; i++) {
        tl_lesson_ui before = {"", -1};
        if (tl_lesson_apply(c->cur, i, s, i == c->step ? lui : &before, err))
            return -1;
        if (i < c->step && before.show_wrong_readings >= 0)
            c->show_wrong = before.show_wrong_readings;
    }
    return 0;
}

static void step_text(tl_lesson_ctl *c, tl_session *s, tl_ui *ui);
static void stream_note(tl_lesson_ctl *c, tl_session *s, tl_ui *ui);

/* shown_why holds the shown step's why twice: English, its terminator, then Vietnamese ("" when
 * there is none, as for an action's error: the English is shown). */
static void keep_why(tl_lesson_ctl *c, const char *en, const char *vi)
{
    size_t cap = sizeof c->shown_why;
    snprintf(c->shown_why, cap - 1, "%s", en);   /* room left for the second's terminator */
    size_t at = strlen(c->shown_why) + 1;
    snprintf(c->shown_why + at, cap - at, "%s", vi);
}

static const char *shown_why(const tl_lesson_ctl *c)
{
    const char *en = c->shown_why, *vi = en + strlen(en) + 1;
    return I18n_isVi(c->lang) && *vi ? vi : en;
}

static void show_step(tl_lesson_ctl *c, tl_session *s, tl_ui *ui)
{
    tl_error err;
    tl_lesson_ui lui = {"", -1};
    char why[512] = "";
    int rc = play_step(c, s, &lui, &err);
    if (rc == 0 && tl_session_n_steps(s) == 0 && tl_session_prepare(s, &err))   /* render what the step set up */
        rc = -1;
    if (rc == 0) {
        c->mark = lesson_mark(s);
        c->mark_step = c->step;
    }
    /* why in the strip's language: a Vietnamese sentence with the panes' marks ("0,9", "128.256") */
    int chk = rc ? -1 : tl_lesson_check_lang(c->cur, c->step, s, c->lang, why, sizeof why);
    /* and in the other one, checked now on the same state: v says it again without checking
     * the session the teacher may have moved on since */
    int vi = I18n_isVi(c->lang);
    char other[512] = "";
    if (chk > 0)
        tl_lesson_check_lang(c->cur, c->step, s, vi ? "en" : "vi", other, sizeof other);
    c->shown_rc = rc;
    c->shown_chk = chk;
    stream_note(c, s, ui);
    keep_why(c, rc ? err.msg : vi ? other : why, rc ? "" : vi ? why : other);
    step_text(c, s, ui);
    c->applied = 1;
    if (lui.show_wrong_readings >= 0)
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

/* The strip's text for the shown step: its line (title, place, outcome, keys), the narration. */
static void step_text(tl_lesson_ctl *c, tl_session *s, tl_ui *ui)
{
    int rc = c->shown_rc, chk = c->shown_chk;
    char said[1200];   /* an expectation that failed, in the strip's language */
    if (rc)   /* an action's error: core's English, worded in the strip's language */
        I18n_error(c->lang, shown_why(c), said, sizeof said);
    else
        I18n_expectation(chk == 1 ? c->lang : "en", shown_why(c), said, sizeof said);
    const char *why = said;
    char *say = tl_lesson_narrate(c->cur, c->step, c->lang, s);
    size_t cap = (say ? strlen(say) : 0) + 1024;
    char *t = malloc(cap);
    if (t) {
        /* the step's line first, with the way on: the strip may show only it and two more */
        snprintf(t, cap, "%s \xC2\xB7 %d/%d \xC2\xB7 %s%s \xC2\xB7 %s\n%s\n%s",
                 tl_lesson_title(c->cur, c->lang), c->step + 1, tl_lesson_n_steps(c->cur),
                 rc ? T("action failed: ") : chk == 0 ? T("\xE2\x9C\x93 checked on this model") : chk == 1 ? T("\xE2\x9C\x97 expectation failed: ")
                    : chk == 2 ? T("? not decided on this machine, the runs' spread hides the answer: ") : "",
                 rc || chk == 1 || chk == 2 ? why : "", T("\xE2\x86\x92/Space next \xC2\xB7 \xE2\x86\x90 back \xC2\xB7 Esc leaves"), say ? say : "",
                 T("(the other keys still work)"));
        set_text(c, ui, t);
    }
    free(say);
}

void LessonCtl_setLang(tl_lesson_ctl *c, const char *lang, tl_session *s, tl_ui *ui)
{
    snprintf(c->lang, sizeof c->lang, "%s", lang);
    int list_shown = ui->lesson_open && c->text && ui->lesson_text == c->text && c->step < 0;
    if (c->paths)   /* the titles again, in lang, when the list opens next */
        tl_lesson_list_free(c->paths, c->n);
    for (int i = 0; c->titles && i < c->n; i++)
        free(c->titles[i]);
    free(c->titles);
    c->paths = NULL;
    c->titles = NULL;
    c->n = 0;
    if (c->cur && c->step >= 0) {
        int scroll = ui->lesson_scroll;
        step_text(c, s, ui);
        ui->lesson_scroll = scroll;
        if (!ui->lesson_open)
            ui->lesson_text = NULL;   /* hidden: l shows it again */
    } else if (list_shown) {
        LessonCtl_open(c, ui);
    }
}

/* What the lesson's runs through the iterator queue delivered, for the Stream pane: the step
 * narrates these figures, so the screen shows them (and the HTTP client's beside the server's). */
static void stream_note(tl_lesson_ctl *c, tl_session *s, tl_ui *ui)
{
    char *iter = tl_lesson_field(c->cur, s, "iter_chunks", c->lang);
    char *served = tl_lesson_field(c->cur, s, "served_chunks", c->lang);
    char *client = tl_lesson_field(c->cur, s, "client_ttft_ms", c->lang);
    char *server = tl_lesson_field(c->cur, s, "server_ttft_ms", c->lang);
    ui->stream_note[0] = 0;
    if (served && client && server && strcmp(served, "0"))
        snprintf(ui->stream_note, sizeof ui->stream_note,
                 T("HTTP client: %s chunks, first text %s ms; server TTFT %s ms"), served, client, server);
    else if (iter && strcmp(iter, "0"))
        snprintf(ui->stream_note, sizeof ui->stream_note, T("iterator streamer: %s chunks through the queue"), iter);
    free(iter);
    free(served);
    free(client);
    free(server);
}

/* Esc: out of the lessons, and the teacher's session back as it was before the first. */
static void leave(tl_lesson_ctl *c, tl_session *s, tl_ui *ui)
{
    ui->lesson_open = 0;
    ui->stream_note[0] = 0;
    ui->lesson_highlight = -1;
    tl_lesson_free(c->cur);
    c->cur = NULL;
    c->step = -1;
    free(c->mark);
    c->mark = NULL;
    if (!c->saved)
        return;
    tl_error err;
    char why[400];
    if (saved_restore(c->saved, s, &err)) {
        I18n_error(c->lang, err.msg, why, sizeof why);
        snprintf(c->note, sizeof c->note, T("left the lessons; your session could not be restored: %s"), why);
    } else
        snprintf(c->note, sizeof c->note, T("left the lessons: your prompt and settings are back, %s weights"),
                 tl_dtype_name(tl_session_dtype(s)));
    saved_free(c->saved);
    c->saved = NULL;
    c->applied = 1;
    c->show_wrong = 0;
    c->highlight = -1;
}

int LessonCtl_key(tl_lesson_ctl *c, tl_session *s, int is_code, wint_t ch, tl_ui *ui)
{
    if (!is_code && ch == 27) {
        leave(c, s, ui);
        return 1;
    }
    if (!is_code && ch == 'l') {   /* hides the strip; l again comes back to the same place */
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
            if (c->busy)
                tl_lesson_set_busy(c->cur, c->busy, c->busy_ctx);
            if (!c->saved)   /* the first lesson: what Esc gives back */
                c->saved = saved_take(s);
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
    if (is_code && ch == KEY_LEFT) {   /* the step before, as the lesson leaves it */
        if (c->step > 0)
            c->step--;
        show_step(c, s, ui);
        return 1;
    }
    if ((is_code && ch == KEY_RIGHT) || (!is_code && ch == ' ')) {
        if (c->step + 1 < tl_lesson_n_steps(c->cur)) {
            c->step++;
            show_step(c, s, ui);
        } else {   /* the end: back to the list */
            c->step = -1;
            free(c->mark);
            c->mark = NULL;
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
    free(c->mark);
    saved_free(c->saved);
    memset(c, 0, sizeof *c);
}
