/* The theme and the clipping text helpers every pane uses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "ui.h"

static attr_t attrs[TA_COUNT];
static int mono = 1;

void Theme_init(int want_colour)
{
    static const attr_t plain[TA_COUNT] = {
        [TA_TITLE] = A_REVERSE, [TA_BORDER] = A_NORMAL, [TA_BORDER_FOCUS] = A_BOLD,
        [TA_HEADER] = A_BOLD, [TA_DIM] = A_DIM, [TA_SPECIAL] = A_REVERSE, [TA_CONTENT] = A_BOLD,
        [TA_GENPROMPT] = A_UNDERLINE, [TA_PROMPT_TOK] = A_NORMAL, [TA_GEN_TOK] = A_BOLD,
        [TA_SELECTED] = A_REVERSE, [TA_CHOSEN] = A_BOLD, [TA_CUT] = A_DIM, [TA_BAR] = A_NORMAL,
        [TA_HELD] = A_REVERSE, [TA_STOP] = A_BOLD | A_REVERSE, [TA_FLOOR] = A_BOLD,
        [TA_STATUS] = A_BOLD, [TA_KEY] = A_BOLD, [TA_WARN] = A_BOLD,
    };
    memcpy(attrs, plain, sizeof attrs);
    mono = 1;
    if (!want_colour || !has_colors())
        return;
    if (start_color() != OK)
        return;
    use_default_colors();
    mono = 0;
    struct { int slot, fg, bg; attr_t extra; } c[] = {
        {TA_TITLE, COLOR_BLACK, COLOR_CYAN, 0},
        {TA_BORDER, COLOR_BLUE, -1, 0},
        {TA_BORDER_FOCUS, COLOR_YELLOW, -1, A_BOLD},
        {TA_HEADER, COLOR_CYAN, -1, A_BOLD},
        {TA_SPECIAL, COLOR_MAGENTA, -1, A_BOLD},
        {TA_CONTENT, COLOR_GREEN, -1, 0},
        {TA_GENPROMPT, COLOR_YELLOW, -1, A_UNDERLINE},
        {TA_PROMPT_TOK, COLOR_CYAN, -1, 0},
        {TA_GEN_TOK, COLOR_GREEN, -1, A_BOLD},
        {TA_CHOSEN, COLOR_YELLOW, -1, A_BOLD},
        {TA_BAR, COLOR_CYAN, -1, 0},
        {TA_HELD, COLOR_BLACK, COLOR_YELLOW, 0},
        {TA_STOP, COLOR_WHITE, COLOR_RED, A_BOLD},
        {TA_FLOOR, COLOR_RED, -1, A_BOLD},
        {TA_KEY, COLOR_CYAN, -1, A_BOLD},
        {TA_WARN, COLOR_RED, -1, A_BOLD},
    };
    for (unsigned i = 0; i < sizeof c / sizeof c[0]; i++) {
        short pair = (short)(i + 1);
        if (init_pair(pair, (short)c[i].fg, (short)c[i].bg) == OK)
            attrs[c[i].slot] = COLOR_PAIR(pair) | c[i].extra;
    }
}

attr_t Theme_attr(int which)
{
    return which >= 0 && which < TA_COUNT ? attrs[which] : A_NORMAL;
}

int Theme_mono(void)
{
    return mono;
}

/* Controls become spaces and malformed bytes '?', so what is drawn has the width measured. */
static size_t sanitize(const char *s, size_t n, char *out, size_t outsz)
{
    size_t i = 0, o = 0;
    while (i < n && o + 5 < outsz) {
        int32_t cp;
        int k = Format_utf8Next(s + i, n - i, &cp);
        if (cp < 0)
            out[o++] = '?';
        else if (cp < 0x20 || cp == 0x7F)
            out[o++] = ' ';
        else if (cp >= 0x80 && cp < 0xA0)
            out[o++] = '?';
        else {
            memcpy(out + o, s + i, (size_t)k);
            o += (size_t)k;
        }
        i += (size_t)k;
    }
    out[o] = 0;
    return o;
}

/* TOKENLOOP_TUI_CUTS=FILE: every text drawn cut (wider than its room) is appended to FILE as
 * "ROOM<tab>TEXT", so a test can walk the screens and find the lines a student cannot read
 * whole (tests/tui/cuts.py). Unset, nothing is written. */
static void log_cut(int maxw, const char *s, size_t n)
{
    static FILE *f;
    static int tried;
    if (!tried) {
        tried = 1;
        const char *path = getenv("TOKENLOOP_TUI_CUTS");
        if (path && *path)
            f = fopen(path, "a");
    }
    if (f) {
        fprintf(f, "%d\t%.*s\n", maxw, (int)n, s);
        fflush(f);
    }
}

int Draw_textn(WINDOW *w, int y, int x, int maxw, const char *s, size_t n, attr_t a)
{
    if (maxw <= 0 || !s)
        return 0;
    char clean[2048], fit[2048];
    size_t cn = sanitize(s, n, clean, sizeof clean);
    int used = Format_fit(clean, cn, maxw, 0, fit, sizeof fit);
    size_t shown = cn;   /* a wrapped line's trailing spaces are not text cut off */
    while (shown > 0 && clean[shown - 1] == ' ')
        shown--;
    if (Format_width(clean, shown) > maxw)
        log_cut(maxw, clean, shown);
    wattrset(w, a);
    mvwaddstr(w, y, x, fit);
    wattrset(w, A_NORMAL);
    return used;
}

int Draw_text(WINDOW *w, int y, int x, int maxw, const char *s, attr_t a)
{
    return s ? Draw_textn(w, y, x, maxw, s, strlen(s), a) : 0;
}

void Draw_wrapped(WINDOW *w, tl_rect in, int *y, int end, attr_t a, const char *text)
{
    size_t i = 0, len = text ? strlen(text) : 0;
    while (i < len && *y < end) {
        size_t k = Format_wrap(text + i, len - i, in.w, NULL);
        Draw_textn(w, (*y)++, in.x, in.w, text + i, k, a);
        i += k;
        while (i < len && (text[i] == ' ' || text[i] == '\n'))
            i++;
    }
}

void Draw_fill(WINDOW *w, int y, int x, int n, attr_t a)
{
    if (n <= 0)
        return;
    wattrset(w, a);
    mvwhline(w, y, x, ' ', n);
    wattrset(w, A_NORMAL);
}

tl_rect Draw_inner(tl_rect r)
{
    tl_rect i = {r.y + 1, r.x + 1, r.h - 2, r.w - 2};
    if (i.h < 0)
        i.h = 0;
    if (i.w < 0)
        i.w = 0;
    return i;
}

void Draw_box(WINDOW *w, tl_rect r, const char *title, int focused)
{
    if (r.h < 2 || r.w < 2)
        return;
    attr_t a = Theme_attr(focused ? TA_BORDER_FOCUS : TA_BORDER);
    wattrset(w, a);
    mvwhline(w, r.y, r.x + 1, ACS_HLINE, r.w - 2);
    mvwhline(w, r.y + r.h - 1, r.x + 1, ACS_HLINE, r.w - 2);
    mvwvline(w, r.y + 1, r.x, ACS_VLINE, r.h - 2);
    mvwvline(w, r.y + 1, r.x + r.w - 1, ACS_VLINE, r.h - 2);
    mvwaddch(w, r.y, r.x, ACS_ULCORNER);
    mvwaddch(w, r.y, r.x + r.w - 1, ACS_URCORNER);
    mvwaddch(w, r.y + r.h - 1, r.x, ACS_LLCORNER);
    mvwaddch(w, r.y + r.h - 1, r.x + r.w - 1, ACS_LRCORNER);
    wattrset(w, A_NORMAL);
    if (title) {
        char t[400], fit[400];
        snprintf(t, sizeof t, " %s ", title);
        Format_fit(t, strlen(t), r.w - 4, 1, fit, sizeof fit);   /* a title cut says so: "…" */
        Draw_text(w, r.y, r.x + 2, r.w - 4, fit, Theme_attr(focused ? TA_BORDER_FOCUS : TA_HEADER));
    }
}
