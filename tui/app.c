/* The TUI's event loop: keys -> session calls -> view -> frame. Run mode hands the session to
 * the iterator streamer's background thread and only reads its queue until the run ends, so
 * the screen keeps repainting and any key pauses. The terminal is restored on every exit path:
 * q, SIGINT/SIGTERM/SIGHUP, fatal signals and exit(). */
#include "app.h"

#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "format.h"
#include "lesson_ctl.h"
#include "session_view.h"
#include "tokenloop/engine.h"
#include "tokenloop/lesson.h"
#include "tokenloop/paths.h"
#include "i18n.h"
#include "keys.h"
#include "welcome.h"
#include "tokenloop/template.h"
#include "ui.h"
#include "tokenloop/system.h"

/* ---- terminal ownership ---- */

static volatile sig_atomic_t g_signal;
static volatile sig_atomic_t g_curses;

static void restore_terminal(void)
{
    if (g_curses) {
        g_curses = 0;
        endwin();
    }
}

static void on_quit_signal(int sig)
{
    g_signal = sig;
}

static void on_fatal_signal(int sig)
{
    restore_terminal();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_quit_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = on_fatal_signal;
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGABRT, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGFPE, &sa, NULL);
    sigaction(SIGILL, &sa, NULL);
    atexit(restore_terminal);
}

/* ---- the application ---- */

/* Every setting of the request lives in the session; the app keeps only what is on screen
 * (selection, overlays) and a pending confirmation. */
typedef struct tl_app {
    tl_session *s;
    tl_sview sv;
    tl_ui ui;
    int confirm;                 /* a key that starts over, pressed once: press again to do it */
    int confirm_was;             /* confirm as the key being handled found it */
    int welcome;                 /* the opening strip (what the model knows) is up */
    int example;                 /* the example question x puts in next */
    char *welcome_text;
    int show_wrong;
    int logit_rows;
    tl_iter *it;
    double run_t0;
    int run_chunks;
    int cut_told;                /* Enter on a cut paste said so once; the next Enter applies */
    int standin;                 /* D: random weights stand in for the model opened */
    int quit;
    char message[256];
    tl_lesson_ctl lesson;
} tl_app;

__attribute__((noinline)) static void say(tl_app *a, const char *fmt, const char *arg)
{
    /* every notice is for the class: in the screen's language (a bare "%s" is core's error) */
    if (!strcmp(fmt, "%s") && arg)
        I18n_error(a->ui.lang, arg, a->message, sizeof a->message);
    else
        snprintf(a->message, sizeof a->message, I18n_tr(a->ui.lang, fmt), arg ? arg : "");
}

/* Renders the request (so the prompt shows before the first pass). */
static int apply_request(tl_app *a)
{
    tl_error err;
    int rc = tl_session_prepare(a->s, &err);
    if (rc)
        say(a, "%s", err.msg);
    return rc;
}

static void refresh_view(tl_app *a)
{
    a->sv.v.logit_rows = a->logit_rows;
    SessionView_fill(&a->sv, a->s, &a->ui);
    tl_view *v = &a->sv.v;
    v->show_wrong = a->show_wrong;
    v->running = 0;
    snprintf(v->message, sizeof v->message, "%s", a->message);
}

/* A setting that applies from the next token changed: say so, and that nothing was lost. */
static void settings_changed(tl_app *a, const char *what)
{
    int n = tl_session_n_steps(a->s);
    char m[160];
    if (n > 0)
        snprintf(m, sizeof m, I18n_tr(a->ui.lang, "%s: from the next token on; the tokens so far stay (%d)"),
                 I18n_tr(a->ui.lang, what), n);
    else
        snprintf(m, sizeof m, "%s", I18n_tr(a->ui.lang, what));
    say(a, "%s", m);
}

/* Keys that change the prompt throw the answer away: with tokens on screen the first press
 * only says so, the second does it. Returns 1 when the change may go ahead. */
static int confirm_restart(tl_app *a, int key, const char *what)
{
    int n = tl_session_n_steps(a->s);
    if (n == 0 || a->confirm_was == key)
        return 1;
    a->confirm = key;
    char m[160];
    if (n == 1)
        snprintf(m, sizeof m, I18n_tr(a->ui.lang, "%c again = %s: starts over, the 1 token goes"), key, I18n_tr(a->ui.lang, what));
    else
        snprintf(m, sizeof m, I18n_tr(a->ui.lang, "%c again = %s: starts over, %d tokens go"), key, I18n_tr(a->ui.lang, what), n);
    say(a, "%s", m);
    return 0;
}

/* The first pass of a request: let the request's clock start now, not when the prompt was
 * first shown (re-setting a setting to its value makes the session prepare afresh). */
static void fresh_request(tl_app *a)
{
    if (tl_session_n_steps(a->s) == 0)
        tl_session_set_add_generation_prompt(a->s, tl_session_add_generation_prompt(a->s));
}

static void follow(tl_app *a, int pane)
{
    if (a->ui.follow)
        a->ui.active = pane;
}

static void draw(tl_app *a);

static void step(tl_app *a)
{
    tl_error err;
    if (tl_session_done(a->s)) {
        say(a, "already stopped: \xE2\x86\x90 steps back, n starts over", NULL);
        return;
    }
    /* a big model on the CPU takes a while: say what is being computed before blocking */
    snprintf(a->sv.v.next, sizeof a->sv.v.next, "%s",
             I18n_tr(a->ui.lang, tl_session_n_steps(a->s) == 0 ? "computing the prefill\xE2\x80\xA6" : "computing one decode step\xE2\x80\xA6"));
    if (g_curses)
        draw(a);
    fresh_request(a);
    int rc = tl_session_step(a->s, NULL, &err);
    if (rc < 0)
        say(a, "%s", err.msg);
    a->ui.logit_sel = 0;
    a->ui.tok_sel = -1;
    follow(a, tl_session_done(a->s) ? PANE_STOP : PANE_LOGITS);
}

static void rewind1(tl_app *a)
{
    tl_error err;
    if (tl_session_n_steps(a->s) == 0) {
        say(a, "nothing to step back: no pass made yet", NULL);
        return;
    }
    if (tl_session_rewind(a->s, 1, &err))
        say(a, "%s", err.msg);
    a->ui.tok_sel = -1;
    follow(a, PANE_TOKENS);
}

static void force(tl_app *a)
{
    tl_error err;
    int n = tl_session_n_steps(a->s);
    const tl_step *st = n ? tl_session_step_at(a->s, n - 1) : NULL;
    if (!st) {
        say(a, "no pass yet: Space makes the first one", NULL);
        return;
    }
    int row = a->ui.logit_sel;
    if (row < 0 || row >= st->sample.n) {
        say(a, "no such row", NULL);
        return;
    }
    int id = st->sample.cand[row].id;
    if (tl_session_force(a->s, id, &err))
        say(a, "%s", err.msg);
    else {
        char m[32];
        snprintf(m, sizeof m, "%d", id);
        say(a, "forced token %s instead: the next pass continues from it", m);
    }
}

/* The row of dt in the session's dtype table; NULL before that dtype ran. */
static const tl_dtype_row *find_row(const tl_dtype_row *rows, int n, tl_dtype dt)
{
    for (int i = 0; i < n; i++)
        if (rows[i].dtype == dt)
            return &rows[i];
    return NULL;
}

/* d: the weights in the next dtype of file's -> q8_0 -> q4_0 -> file's. The tokens so far came
 * from the old weights and the KV cache holds their keys, so generation starts over; what they
 * measured stays in the Timing pane's table, and the status line says so rather than letting
 * the answer vanish. */
static void next_dtype(tl_app *a)
{
    tl_dtype file = tl_session_file_dtype(a->s), cur = tl_session_dtype(a->s);
    tl_dtype cycle[3] = {file, TL_Q8_0, TL_Q4_0}, list[3];
    int n = 0, at = 0;
    for (int i = 0; i < 3; i++) {
        int dup = 0;
        for (int k = 0; k < n; k++)
            dup |= list[k] == cycle[i];
        if (!dup)
            list[n++] = cycle[i];
    }
    for (int i = 0; i < n; i++)
        if (list[i] == cur)
            at = i;
    tl_dtype next = list[(at + 1) % n];
    const char *lang = a->ui.lang, *from = tl_dtype_name(cur), *to = tl_dtype_name(next);
    int ng = 0;
    tl_session_generated_ids(a->s, &ng);
    /* a big model takes seconds to convert: say so before blocking */
    snprintf(a->sv.v.next, sizeof a->sv.v.next, I18n_tr(lang, "converting the weights to %s\xE2\x80\xA6"), to);
    if (g_curses)
        draw(a);
    tl_error err;
    double t0 = tl_now_ms();
    if (tl_session_set_dtype(a->s, next, &err)) {
        char m[256];
        snprintf(m, sizeof m, I18n_tr(lang, "weights stay %s: %s"), from, err.msg);
        say(a, "%s", m);
        return;
    }
    double conv_ms = tl_now_ms() - t0;
    apply_request(a);
    tl_dtype_row rows[TL_DTYPE_COUNT];
    int nr = tl_session_dtype_rows(a->s, rows, TL_DTYPE_COUNT);
    const tl_dtype_row *now = find_row(rows, nr, next), *was = find_row(rows, nr, cur);
    char wb[32], ob[32], t[32], m[256];
    Format_bytesLang(lang, now ? now->weight_bytes : -1, wb, sizeof wb);
    Format_bytesLang(lang, was ? was->weight_bytes : -1, ob, sizeof ob);
    Format_msLang(lang, conv_ms, t, sizeof t);
    if (ng > 0)
        snprintf(m, sizeof m, I18n_tr(lang, "weights %s (%s a step): the %d tokens on %s are kept in the Timing table; Space or r prefills again (converted in %s)"),
                 to, wb, ng, from, t);
    else
        snprintf(m, sizeof m, I18n_tr(lang, "weights %s: %s a step instead of %s on %s (converted in %s)"), to, wb, ob, from, t);
    say(a, "%s", m);
    a->ui.tok_sel = -1;
    a->ui.logit_sel = 0;
    follow(a, PANE_TIMING);
}

/* D: random weights of Llama 3.2 1B's shape in place of the model opened, and back. The bundled
 * model's weights fit in a CPU's cache, so its pace is no read from memory; these 2.5 GB are
 * (the tokens they choose are noise, the timing is real). */
static void key_random_weights(tl_app *a, int key)
{
    (void)key;
    const char *lang = a->ui.lang;
    int back = a->standin;
    snprintf(a->sv.v.next, sizeof a->sv.v.next, "%s",
             I18n_tr(lang, back ? "bringing the model back\xE2\x80\xA6"
                                : "filling 2.5 GB of random weights in Llama 3.2 1B's shape\xE2\x80\xA6"));
    if (g_curses)
        draw(a);
    char note[256];
    tl_error err;
    if (tl_session_use_synthetic(a->s, back ? NULL : "llama-3.2-1b", note, sizeof note, &err)) {
        char m[300];
        snprintf(m, sizeof m, I18n_tr(lang, "weights stay: %s"), err.msg);
        say(a, "%s", m);
        return;
    }
    a->standin = !back;
    apply_request(a);
    if (note[0])
        say(a, "%s", note);
    else
        say(a, back ? "the model opened is back (D: random 1B weights again)"
                    : "random weights in Llama 3.2 1B's shape: the tokens are noise, the pace is real (D: the model back)",
            NULL);
    a->ui.tok_sel = -1;
    a->ui.logit_sel = 0;
    follow(a, PANE_TIMING);
}

/* A lesson step about to measure for seconds: said on the status line before it blocks. */
static void lesson_busy(void *ctx, const char *en, const char *vi)
{
    tl_app *a = ctx;
    /* the view again first: the step's earlier actions may have freed what the last one
     * pointed at (the prompt's text after "defaults"; ASan: heap-use-after-free in lesson 3) */
    refresh_view(a);
    snprintf(a->sv.v.next, sizeof a->sv.v.next, "%s", I18n_isVi(a->ui.lang) ? vi : en);
    if (g_curses)
        draw(a);
}

/* ---- run mode ---- */

static void run_start(tl_app *a)
{
    tl_error err;
    if (tl_session_done(a->s)) {
        say(a, "already stopped: \xE2\x86\x90 steps back, n starts over", NULL);
        return;
    }
    fresh_request(a);
    /* Render and tokenize here, then rebuild the view: while the thread runs, the view may only
     * point at session memory that generation never changes (the render, the stop strings). */
    if (tl_session_prepare(a->s, &err)) {
        say(a, "%s", err.msg);
        return;
    }
    refresh_view(a);
    if (tl_iter_start(&a->it, a->s, &err)) {
        a->it = NULL;
        say(a, "%s", err.msg);
        return;
    }
    a->run_t0 = tl_now_ms();
    a->run_chunks = 0;
    a->sv.v.running = 1;
    a->sv.v.stopped = 0;
    a->sv.v.held = "";
    snprintf(a->sv.v.next, sizeof a->sv.v.next, "%s", I18n_tr(a->ui.lang, "running \xE2\x80\x94 any key pauses, q quits"));
    a->sv.v.message[0] = 0;
    follow(a, PANE_STREAM);
}

/* Joins the generation thread; the session is ours again. */
static void run_finish(tl_app *a, int cancelled)
{
    tl_error err;
    if (!a->it)
        return;
    if (cancelled)
        tl_iter_cancel(a->it);
    char *chunk;
    size_t len;
    while (tl_iter_next(a->it, &chunk, &len, 1000) == 1)   /* drain what is left */
        free(chunk);
    int rc = tl_iter_finish(a->it, &err);
    a->it = NULL;
    if (rc < 0)
        say(a, "%s", err.msg);
    else if (rc == TL_GENERATE_CANCELLED)
        say(a, "paused: Space steps on, r runs again", NULL);
    else
        a->message[0] = 0;
    a->ui.tok_sel = -1;
    a->ui.logit_sel = 0;
    if (rc != TL_GENERATE_CANCELLED)
        follow(a, PANE_STOP);
}

/* Reads what the generation thread has queued; returns 1 when the stream ended. */
static int run_poll(tl_app *a)
{
    for (;;) {
        char *chunk;
        size_t len;
        int r = tl_iter_next(a->it, &chunk, &len, 0);
        if (r == 1) {
            SessionView_appendPrinted(&a->sv, chunk, len);
            a->run_chunks++;
            free(chunk);
            continue;
        }
        tl_iter_counts(a->it, &a->sv.v.queue_put, &a->sv.v.queue_got);
        return r == 0;
    }
}

/* ---- input ---- */

static void begin_edit(tl_app *a, int what, const char *text)
{
    a->ui.edit = what;
    a->cut_told = 0;
    a->ui.edit_label[0] = 0;
    if (what == EDIT_MAXNEW) {   /* what 0 means for this model, not "the model's" in general */
        const tl_gen_config *g = &tl_session_model(a->s)->gen;
        const char *lang = a->ui.lang;
        if (g->has_max_new_tokens && g->max_new_tokens > 0)
            snprintf(a->ui.edit_label, sizeof a->ui.edit_label,
                     I18n_tr(lang, "max_new_tokens (0: generation_config.json's %d): "), g->max_new_tokens);
        else if (g->has_max_length && g->max_length > 0)
            snprintf(a->ui.edit_label, sizeof a->ui.edit_label,
                     I18n_tr(lang, "max_new_tokens (0: generation_config.json's max_length %d less the prompt): "), g->max_length);
        else
            snprintf(a->ui.edit_label, sizeof a->ui.edit_label, "%s",
                     I18n_tr(lang, "max_new_tokens (0: none set, so transformers' default 20): "));
    }
    LineEdit_set(&a->ui.le, text);
    if (what == EDIT_USER || what == EDIT_SYSTEM)
        a->ui.active = PANE_PROMPT;
    curs_set(1);
}

static void unescape(char *s)
{
    char *o = s;
    for (char *p = s; *p; p++) {
        if (p[0] == '\\' && p[1] == 'n') {
            *o++ = '\n';
            p++;
        } else if (p[0] == '\\' && p[1] == 't') {
            *o++ = '\t';
            p++;
        } else
            *o++ = *p;
    }
    *o = 0;
}

static void end_edit(tl_app *a, int apply)
{
    int what = a->ui.edit;
    if (apply && a->ui.le.dropped && !a->cut_told) {   /* the text is not what was pasted: ask */
        char m[200];
        snprintf(m, sizeof m, I18n_tr(a->ui.lang, "%zu characters did not fit the editor (%d bytes): Enter again applies the text as cut, Esc cancels"),
                 a->ui.le.dropped, TL_LINEEDIT_MAX - 1);
        say(a, "%s", m);
        a->cut_told = 1;
        return;
    }
    a->ui.edit = EDIT_NONE;
    curs_set(0);
    if (!apply)
        return;
    const char *t = a->ui.le.buf;
    tl_error err;
    if (what == EDIT_USER || what == EDIT_SYSTEM) {
        const char *role = what == EDIT_USER ? "user" : "system";
        const char *old = tl_session_message(a->s, role);
        if (old ? !strcmp(old, t) : (what == EDIT_SYSTEM && !*t)) {
            say(a, "unchanged: the answer stays", NULL);
            return;
        }
        if (tl_session_set_message(a->s, role, what == EDIT_SYSTEM && !*t ? NULL : t, &err)) {
            say(a, "%s", err.msg);
            return;
        }
        if (apply_request(a) == 0)
            say(a, what == EDIT_USER ? "message changed: the prompt is rendered again"
                                     : "system prompt changed: the prompt is rendered again", NULL);
        a->ui.prompt_scroll = -1;
    } else if (what == EDIT_MAXNEW) {
        char *end;
        long n = strtol(t, &end, 10);
        if (end == t || *end || n < 0 || n > 1000000) {
            say(a, "max_new_tokens: %s: not a number >= 0", t);
            return;
        }
        tl_session_set_max_new_tokens(a->s, (int)n);
        char m[64];
        if (n > 0)
            snprintf(m, sizeof m, "max_new_tokens %ld", n);
        else
            snprintf(m, sizeof m, I18n_tr(a->ui.lang, "max_new_tokens back to the config's (%d)"), tl_session_stop_config(a->s)->max_new_tokens);
        settings_changed(a, m);
    } else if (what == EDIT_STOP) {
        char buf[TL_LINEEDIT_MAX];
        snprintf(buf, sizeof buf, "%s", t);
        unescape(buf);
        if (!buf[0])
            return;
        int n = 0, found = -1;
        const char *const *cur = tl_session_stop_strings(a->s, &n);
        const char *list[TL_VIEW_MAX_STOPS + 1];
        int m = 0;
        for (int i = 0; i < n; i++) {
            if (!strcmp(cur[i], buf))
                found = i;
            else if (m < TL_VIEW_MAX_STOPS)
                list[m++] = cur[i];
        }
        if (found < 0) {
            if (n >= TL_VIEW_MAX_STOPS) {
                say(a, "at most 8 stop strings", NULL);
                return;
            }
            list[m++] = buf;
        }
        /* the session copies the strings before it frees its old ones */
        char *copies[TL_VIEW_MAX_STOPS + 1];
        for (int i = 0; i < m; i++)
            copies[i] = strdup(list[i]);
        int rc = tl_session_set_stop_strings(a->s, (const char *const *)copies, m, &err);
        for (int i = 0; i < m; i++)
            free(copies[i]);
        if (rc)
            say(a, "%s", err.msg);
        else
            settings_changed(a, found >= 0 ? "stop string removed" : "stop string added");
    }
}

static void edit_key(tl_app *a, int is_code, wint_t ch)
{
    tl_lineedit *e = &a->ui.le;
    if (!is_code) {
        if (ch == 27)
            end_edit(a, 0);
        else if (ch == '\n' || ch == '\r')
            end_edit(a, 1);
        else if (ch == 127 || ch == 8)
            LineEdit_backspace(e);
        else if (ch == 1)
            LineEdit_home(e);
        else if (ch == 5)
            LineEdit_end(e);
        else if (ch == 11)
            LineEdit_killEnd(e);
        else if (ch == 21)
            LineEdit_killStart(e);
        else if (ch >= 0x20)
            LineEdit_insert(e, (int32_t)ch);
        return;
    }
    switch (ch) {
    case KEY_LEFT: LineEdit_left(e); break;
    case KEY_RIGHT: LineEdit_right(e); break;
    case KEY_HOME: LineEdit_home(e); break;
    case KEY_END: LineEdit_end(e); break;
    case KEY_BACKSPACE: LineEdit_backspace(e); break;
    case KEY_DC: LineEdit_delete(e); break;
    case KEY_ENTER: end_edit(a, 1); break;
    default: break;
    }
}

static void set_sampling(tl_app *a, tl_sampling p, const char *what)
{
    tl_session_set_sampling(a->s, p);
    settings_changed(a, what);
}

static void scroll_active(tl_app *a, int d)
{
    tl_ui *u = &a->ui;
    switch (u->active) {
    case PANE_LOGITS:
        u->logit_sel += d;
        if (u->logit_sel < 0)
            u->logit_sel = 0;
        if (u->logit_sel >= a->logit_rows)
            u->logit_sel = a->logit_rows - 1;
        break;
    case PANE_TOKENS: {
        int n = a->sv.v.n_tokens;
        if (u->tok_sel < 0)
            u->tok_sel = n;
        u->tok_sel += d;
        if (u->tok_sel < 0)
            u->tok_sel = 0;
        if (u->tok_sel >= n)
            u->tok_sel = n - 1;
        break;
    }
    case PANE_PROMPT:
        if (u->prompt_scroll < 0)
            u->prompt_scroll = 0;
        u->prompt_scroll += d;
        if (u->prompt_scroll < 0)
            u->prompt_scroll = 0;
        break;
    default:
        break;
    }
}

static void welcome_open(tl_app *a);

/* v: every string of the screen, the lesson shown and the opening strip in the other language;
 * the session is untouched. */
static void switch_lang(tl_app *a)
{
    snprintf(a->ui.lang, sizeof a->ui.lang, "%s", strcmp(a->ui.lang, "vi") ? "vi" : "en");
    LessonCtl_setLang(&a->lesson, a->ui.lang, a->s, &a->ui);
    if (a->welcome)
        welcome_open(a);
    say(a, "language: English (v: Ti\xE1\xBA\xBFng Vi\xE1\xBB\x87t)", NULL);
}

/* ---- the keys: a handler per row of keys_table.h ---- */

static void key_step(tl_app *a, int key)
{
    (void)key;
    step(a);
}

static void key_run(tl_app *a, int key)
{
    (void)key;
    run_start(a);
}

static void key_back(tl_app *a, int key)
{
    (void)key;
    rewind1(a);
}

/* Enter forces the selected logits row; the Return character only where no token is selected
 * outside the Logits pane */
static void key_force(tl_app *a, int key)
{
    if (key == KC(KEY_ENTER) || a->ui.active == PANE_LOGITS || a->ui.tok_sel < 0)
        force(a);
}

static void key_scroll(tl_app *a, int key)
{
    scroll_active(a, key == KC(KEY_UP) ? -1 : key == KC(KEY_DOWN) ? 1 : key == KC(KEY_PPAGE) ? -10 : 10);
}

static void key_greedy(tl_app *a, int key)
{
    (void)key;
    tl_sampling sp = tl_session_sampling(a->s);
    sp.greedy = !sp.greedy;
    set_sampling(a, sp, sp.greedy ? "greedy" : "sampling");
}

static void key_temperature(tl_app *a, int key)
{
    tl_sampling sp = tl_session_sampling(a->s);
    if (key == 't')
        sp.temperature = sp.temperature > 0.15f ? sp.temperature - 0.1f : 0.05f;
    else {
        sp.temperature = sp.temperature < 0.1f ? 0.1f : sp.temperature + 0.1f;
        if (sp.temperature > 5)
            sp.temperature = 5;
    }
    set_sampling(a, sp, "temperature");
}

static void key_top_k(tl_app *a, int key)
{
    tl_sampling sp = tl_session_sampling(a->s);
    if (key == 'k')
        sp.top_k = sp.top_k > 1 ? sp.top_k - (sp.top_k > 10 ? 10 : 1) : 0;
    else
        sp.top_k = sp.top_k >= 10 ? sp.top_k + 10 : sp.top_k + 1;
    set_sampling(a, sp, "top-k");
}

static void key_top_p(tl_app *a, int key)
{
    tl_sampling sp = tl_session_sampling(a->s);
    if (key == 'p')
        sp.top_p = sp.top_p > 0.06f ? sp.top_p - 0.05f : 0.05f;
    else
        sp.top_p = sp.top_p + 0.05f > 0.999f ? 1.0f : sp.top_p + 0.05f;
    set_sampling(a, sp, "top-p");
}

static void key_logit_rows(tl_app *a, int key)
{
    if (key == '[' && a->logit_rows > 1)
        a->logit_rows--;
    else if (key == ']' && a->logit_rows < TL_MAX_TOP)
        a->logit_rows++;
}

static void key_max_new_tokens(tl_app *a, int key)
{
    (void)key;
    char b[32];
    snprintf(b, sizeof b, "%d", tl_session_max_new_tokens(a->s));
    begin_edit(a, EDIT_MAXNEW, b);
}

static void key_stop_string(tl_app *a, int key)
{
    (void)key;
    begin_edit(a, EDIT_STOP, "");
}

/* a and i: the prompt is rendered another way, so the answer starts over (asked first) */
static void toggle_render(tl_app *a, int key, int (*get)(const tl_session *), void (*set)(tl_session *, int),
                          const char *what_off, const char *what_on, const char *said_off, const char *said_on)
{
    int on = !get(a->s);
    if (!confirm_restart(a, key, on ? what_on : what_off))
        return;
    set(a->s, on);
    apply_request(a);
    say(a, on ? said_on : said_off, NULL);
}

static void key_generation_prompt(tl_app *a, int key)
{
    toggle_render(a, key, tl_session_add_generation_prompt, tl_session_set_add_generation_prompt,
                  "add_generation_prompt off", "add_generation_prompt on",
                  "add_generation_prompt off: the model continues the user's text",
                  "add_generation_prompt on: the model answers as the assistant");
}

static void key_special_in_content(tl_app *a, int key)
{
    toggle_render(a, key, tl_session_parse_special_in_content, tl_session_set_parse_special_in_content,
                  "content as plain text", "special tokens in content parsed",
                  "content as plain text: a typed <|eot_id|> stays ordinary text tokens",
                  "special tokens in content parsed, as transformers does: a typed <|eot_id|> ends the turn");
}

/* e the user's message, S the system prompt */
static void key_edit_message(tl_app *a, int key)
{
    const char *m = tl_session_message(a->s, key == 'e' ? "user" : "system");
    begin_edit(a, key == 'e' ? EDIT_USER : EDIT_SYSTEM, m ? m : "");
    int n = tl_session_n_steps(a->s);
    if (n > 0) {
        char b[128];
        if (n == 1)
            snprintf(b, sizeof b, "%s", I18n_tr(a->ui.lang, "Enter changes the prompt: generation starts over and the 1 token goes; Esc keeps it"));
        else
            snprintf(b, sizeof b, I18n_tr(a->ui.lang, "Enter changes the prompt: generation starts over and %d tokens go; Esc keeps them"), n);
        say(a, "%s", b);
    }
}

static void key_example(tl_app *a, int key)
{
    tl_ui *u = &a->ui;
    const char *q = Welcome_example(a->example, u->lang);
    if (!confirm_restart(a, key, I18n_tr(u->lang, "an example question")))
        return;
    tl_error err;
    if (tl_session_set_user(a->s, tl_session_message(a->s, "system"), q, &err)) {
        say(a, "%s", err.msg);
        return;
    }
    a->example++;
    apply_request(a);
    say(a, I18n_tr(u->lang, "example question: %s (x: the next one, Space: the prefill)"), q);
    u->prompt_scroll = -1;
    follow(a, PANE_PROMPT);
}

static void key_streamer(tl_app *a, int key)
{
    (void)key;
    int server = tl_session_stream_mode(a->s) != TL_STREAM_SERVER;
    tl_session_set_stream_mode(a->s, server ? TL_STREAM_SERVER : TL_STREAM_HF);
    int n = tl_session_n_steps(a->s);
    char b[128];
    snprintf(b, sizeof b, I18n_tr(a->ui.lang, "streamer: %s, replayed over the same %d tokens"),
             server ? I18n_tr(a->ui.lang, "server mode") : "hf TextStreamer", n);
    say(a, "%s", b);
    follow(a, PANE_STREAM);
}

static void key_wrong_timings(tl_app *a, int key)
{
    (void)key;
    a->show_wrong = !a->show_wrong;
    follow(a, PANE_TIMING);
}

static void key_async(tl_app *a, int key)
{
    (void)key;
    tl_engine *e = tl_session_engine(a->s);
    tl_error err;
    int on = !tl_engine_async(e);
    if (tl_engine_set_async(e, on, &err))
        say(a, "%s", err.msg);
    else
        say(a, on ? I18n_tr(a->ui.lang, "async: each pass is queued to a worker, like a GPU stream; the clock read before synchronizing measures the launch (w shows it)")
                  : I18n_tr(a->ui.lang, "sync: each pass finishes before the call returns"), NULL);
    follow(a, PANE_TIMING);
}

static void key_dtype(tl_app *a, int key)
{
    (void)key;
    next_dtype(a);
}

static void key_new_conversation(tl_app *a, int key)
{
    (void)key;
    tl_session_reset(a->s);
    a->ui.tok_sel = -1;
    say(a, "new conversation: same prompt, from the start", NULL);
    follow(a, PANE_PROMPT);
}

/* Tab the next pane, Shift-Tab the one before */
static void key_next_pane(tl_app *a, int key)
{
    a->ui.active = (a->ui.active + (key == '\t' ? 1 : PANE_COUNT - 1)) % PANE_COUNT;
    a->ui.follow = 0;
}

static void key_pane_n(tl_app *a, int key)
{
    a->ui.active = key - '1';
    a->ui.follow = 0;
}

static void key_transformers_call(tl_app *a, int key)
{
    (void)key;
    a->ui.hf_call = 1;
}

static void key_lessons(tl_app *a, int key)
{
    (void)key;
    a->ui.lesson_open = 1;
    LessonCtl_open(&a->lesson, &a->ui);
}

static void key_lesson_full(tl_app *a, int key)
{
    (void)key;
    a->ui.lesson_full = a->ui.lesson_open;
}

static void key_language(tl_app *a, int key)
{
    (void)key;
    switch_lang(a);
}

static void key_help(tl_app *a, int key)
{
    (void)key;
    a->ui.help = 1;
}

static void key_quit(tl_app *a, int key)
{
    (void)key;
    a->quit = 1;
}

#define H(f) .fn = f, .fn_name = #f
static const tl_key app_keys[] = {
#include "keys_table.h"
};
#undef H

static void key(tl_app *a, int is_code, wint_t ch)
{
    tl_ui *u = &a->ui;
    a->message[0] = 0;
    if (u->help || u->hf_call || u->lesson_full) {   /* an overlay: any key only closes it */
        u->help = u->hf_call = u->lesson_full = 0;
        return;
    }
    if (u->edit) {
        edit_key(a, is_code, ch);
        return;
    }
    /* a key that starts over asks first: any other key forgets the question */
    a->confirm_was = a->confirm;
    a->confirm = 0;
    if (a->welcome && !is_code && (ch == 27 || ch == 'l')) {
        a->welcome = 0;
        u->lesson_open = 0;
        if (ch == 27)
            return;
    }
    if (u->lesson_open && !a->welcome) {
        if (LessonCtl_key(&a->lesson, a->s, is_code, ch, u)) {
            if (a->lesson.applied) {
                /* a lesson step drove the session; the panes read it back on the next fill (the
                 * highlighted pane LessonCtl sets itself) */
                a->show_wrong = a->lesson.show_wrong >= 0 ? a->lesson.show_wrong : a->show_wrong;
                a->lesson.applied = 0;
                u->tok_sel = -1;
                u->logit_sel = 0;
                u->prompt_scroll = -1;
            }
            if (a->lesson.note[0]) {
                say(a, "%s", a->lesson.note);
                a->lesson.note[0] = 0;
            }
            return;
        }
    }
    int k = is_code ? KC((int)ch) : (int)ch;
    const tl_key *row = Keys_find(app_keys, (int)(sizeof app_keys / sizeof app_keys[0]), k);
    if (row)
        row->fn(a, k);
}

/* The opening strip: what the bundled model was taught and a question it answers. Only for the
 * bundled model: another model's knowledge is not ours to describe. */
static void welcome_open(tl_app *a)
{
    const tl_model *m = tl_session_model(a->s);
    const char *b = strrchr(m->dir, '/');
    if (strcmp(b ? b + 1 : m->dir, TL_DEFAULT_MODEL_NAME))
        return;
    const char *lang = a->ui.lang;
    size_t cap = 2048;
    free(a->welcome_text);
    a->welcome_text = malloc(cap);
    if (!a->welcome_text)
        return;
    char keys[256];
    snprintf(keys, sizeof keys, I18n_tr(lang, "Try: \"%s\" \xC2\xB7 x puts the next example in \xC2\xB7 e types your own \xC2\xB7 l lessons \xC2\xB7 Esc hides this"),
             Welcome_example(0, lang));
    snprintf(a->welcome_text, cap, "%s\n%s", keys, Welcome_intro(lang));
    a->welcome = 1;
    a->ui.lesson_open = 1;
    a->ui.lesson_text = a->welcome_text;
    a->ui.lesson_scroll = 0;
}

/* ---- the loop ---- */

static void draw(tl_app *a)
{
    Screen_draw(stdscr, COLS, LINES, &a->sv.v, &a->ui);
    wnoutrefresh(stdscr);
    doupdate();
}

static SCREEN *g_screen;

/* newterm rather than initscr: an unknown $TERM is an error message, not an exit from inside
 * ncurses. */
static int init_curses(const tl_app_opts *o, tl_ui *ui)
{
    const char *term = getenv("TERM");
    g_screen = newterm(NULL, stdout, stdin);
    if (!g_screen) {
        fprintf(stderr, "tokenloop: TERM=%s: unknown terminal type\n", term ? term : "(unset)");
        return -1;
    }
    set_term(g_screen);
    g_curses = 1;
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    Theme_init(o->colour);
    ui->mono = Theme_mono();
    return 0;
}

static int app_init(tl_app *a, tl_session *s, const tl_app_opts *o)
{
    memset(a, 0, sizeof *a);
    a->s = s;
    a->logit_rows = 10;
    a->ui.lesson_highlight = -1;
    snprintf(a->ui.lang, sizeof a->ui.lang, "%s", o->lang && *o->lang ? o->lang : tl_lesson_default_lang());
    a->ui.follow = 1;
    a->ui.tok_sel = -1;
    a->ui.prompt_scroll = -1;
    tl_session_set_top_n(s, TL_MAX_TOP);
    LessonCtl_init(&a->lesson, a->ui.lang);
    a->lesson.server = o->lesson_server;
    a->lesson.busy = lesson_busy;
    a->lesson.busy_ctx = a;
    welcome_open(a);
    tl_error err;
    if (tl_session_set_user(s, o->system, o->user ? o->user : "", &err)) {
        say(a, "%s", err.msg);
        return -1;
    }
    return apply_request(a);
}

static void app_free(tl_app *a)
{
    if (a->it)
        run_finish(a, 1);
    SessionView_free(&a->sv);
    LessonCtl_free(&a->lesson);
    free(a->welcome_text);
}

int tl_tui_run(tl_session *s, const tl_app_opts *o)
{
    static tl_app app;   /* large: keep it off the stack */
    tl_app *a = &app;
    if (app_init(a, s, o)) {
        fprintf(stderr, "tokenloop: %s\n", a->message);
        app_free(a);
        return 1;
    }
    refresh_view(a);   /* before the screen: the first fill may probe the bandwidth */
    install_signals();
    if (init_curses(o, &a->ui)) {
        app_free(a);
        return 1;
    }
    int dirty = 1, burst = 0;   /* burst: keys typed into the line editor since the last frame */
    double last_draw = 0;
    while (!a->quit && !g_signal) {
        if (a->it) {
            if (run_poll(a)) {
                run_finish(a, 0);
                refresh_view(a);
                dirty = 1;
            } else {
                char m[128];
                snprintf(m, sizeof m, I18n_tr(a->ui.lang, "running: %d chunks from the queue in %.0f ms"), a->run_chunks,
                         tl_now_ms() - a->run_t0);
                snprintf(a->sv.v.message, sizeof a->sv.v.message, "%s", m);
                dirty = 1;
            }
        }
        double t = tl_now_ms();
        /* a paste arrives as thousands of keys: the frame waits until they are read (or 100 ms) */
        if (dirty && (!a->it || t - last_draw >= 33) && (!burst || t - last_draw >= 100)) {
            if (burst)
                refresh_view(a);
            draw(a);
            last_draw = t;
            dirty = 0;
            burst = 0;
        }
        timeout(a->it ? 15 : burst ? 0 : 250);
        wint_t ch;
        int r = wget_wch(stdscr, &ch);
        if (r == ERR) {
            if (burst) {   /* the typing stopped: its frame now */
                refresh_view(a);
                burst = 0;
                last_draw = 0;
            }
            continue;
        }
        /* Esc [ 1 ; 5 D (Ctrl+Left on a terminal whose description lacks it) is no Esc, [, 1, ;,
         * 5 and D: D would fill 2.5 GB of random weights */
        if (r == OK && ch == 27 && Keys_dropSequence(stdscr, 25))
            continue;
        if (r == KEY_CODE_YES && ch == KEY_RESIZE) {   /* not a key press: redraw, keep running */
            dirty = 1;
            last_draw = 0;
            continue;
        }
        if (a->it) {
            /* any key pauses; q pauses and quits */
            run_finish(a, 1);
            if (r == OK && (ch == 'q' || ch == 'Q'))
                a->quit = 1;
            refresh_view(a);
            dirty = 1;
            continue;
        }
        key(a, r == KEY_CODE_YES, ch);
        dirty = 1;
        if (a->ui.edit && !a->it) {   /* the session did not change: its view can wait */
            burst++;
            continue;
        }
        burst = 0;
        if (!a->it)
            refresh_view(a);
    }
    int sig = g_signal;
    app_free(a);
    restore_terminal();
    delscreen(g_screen);
    g_screen = NULL;
    return sig ? 128 + sig : 0;
}

int tl_tui_bench_frame(tl_session *s, const tl_app_opts *o, int frames, int cols, int rows)
{
    static tl_app app;
    tl_app *a = &app;
    if (app_init(a, s, o)) {
        fprintf(stderr, "tokenloop: %s\n", a->message);
        app_free(a);
        return 1;
    }
    /* a realistic frame: the prefill and a few decode steps, every pane filled */
    tl_error err;
    for (int i = 0; i < 12 && !tl_session_done(s); i++)
        if (tl_session_step(s, NULL, &err) < 0) {
            fprintf(stderr, "tokenloop: %s\n", err.msg);
            app_free(a);
            return 1;
        }
    a->show_wrong = 1;
    refresh_view(a);   /* the first fill probes the memory bandwidth once: not a frame */
    FILE *out = fopen("/dev/null", "w"), *in = fopen("/dev/null", "r");
    if (!out || !in) {
        fprintf(stderr, "tokenloop: /dev/null: cannot open\n");
        app_free(a);
        return 1;
    }
    SCREEN *scr = newterm("xterm-256color", out, in);
    if (!scr)
        scr = newterm("vt100", out, in);
    if (!scr) {
        fprintf(stderr, "tokenloop: bench-frame: no terminal description (xterm-256color)\n");
        fclose(out);
        fclose(in);
        app_free(a);
        return 1;
    }
    set_term(scr);
    g_curses = 1;
    resizeterm(rows, cols);
    Theme_init(o->colour);
    a->ui.mono = Theme_mono();
    a->ui.active = PANE_LOGITS;
    double fill_ms = 0, draw_ms = 0;
    for (int f = 0; f < frames; f++) {
        double t0 = tl_now_ms();
        refresh_view(a);
        double t1 = tl_now_ms();
        Screen_draw(stdscr, cols, rows, &a->sv.v, &a->ui);
        wnoutrefresh(stdscr);
        redrawwin(stdscr);   /* a full repaint every frame: the worst case */
        doupdate();
        double t2 = tl_now_ms();
        fill_ms += t1 - t0;
        draw_ms += t2 - t1;
    }
    restore_terminal();
    delscreen(scr);
    fclose(out);
    fclose(in);
    printf("frame %dx%d: %.3f ms per frame (draw %.3f ms + view fill %.3f ms) over %d frames, %s, %d generated tokens\n",
           cols, rows, (draw_ms + fill_ms) / frames, draw_ms / frames, fill_ms / frames, frames,
           a->ui.mono ? "monochrome" : "colour", a->sv.v.generated);
    app_free(a);
    return 0;
}
