/* The key table of tui/keys_table.h: every row runs a handler on keys no other row takes, says
 * what it shows in both languages (set, valid UTF-8), the key list's lines line up and fit an
 * 80-column screen, and the pinned footer entries are the last ones (so the others fill in
 * before them). test_screen and vi_screen.py check the footer and the key list on screen. */
#include <curses.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "format.h"
#include "keys.h"
#include "tl_test.h"
#include "valid_utf8.h"

static int set_text(const char *s)
{
    return s && s[0] && valid_utf8(s);
}

/* Keys_dropSequence as the TUI's loop calls it: bytes into a terminal of type screen (whose
 * description names Left, Esc O D, but not Ctrl+Left, Esc [ 1 ; 5 D), the keys that come out. */
static int g_in = -1;

static int keys_of(const char *bytes, int *out, int max)
{
    if (write(g_in, bytes, strlen(bytes)) != (ssize_t)strlen(bytes))
        return -1;
    int n = 0;
    for (;;) {
        wint_t c;
        wtimeout(stdscr, 150);
        int r = wget_wch(stdscr, &c);
        if (r == ERR)
            break;
        if (r == OK && c == 27 && Keys_dropSequence(stdscr, 25))
            continue;
        if (n < max)
            out[n] = r == KEY_CODE_YES ? KC((int)c) : (int)c;
        n++;
    }
    return n;
}

#define KEYS_ARE(bytes, ...) do { \
    const int want_[] = {__VA_ARGS__}; int got_[16]; \
    int n_ = keys_of(bytes, got_, 16), m_ = (int)(sizeof want_ / sizeof want_[0]) - 1; \
    int same_ = n_ == m_; \
    for (int i_ = 0; same_ && i_ < m_; i_++) same_ = got_[i_] == want_[i_]; \
    TL_CHECK_MSG(same_, "%s: %d keys, first %#x", #bytes, n_, n_ > 0 ? got_[0] : 0); \
} while (0)

static void check_sequences(void)
{
    setlocale(LC_ALL, "C.UTF-8");   /* as the TUI does: keys are UTF-8 */
    int p[2];
    FILE *out = fopen("/dev/null", "w"), *in = NULL;
    if (pipe(p) == 0)
        in = fdopen(p[0], "r");
    SCREEN *scr = in && out ? newterm("screen", out, in) : NULL;
    if (!scr) {
        printf("tui_keys: no terminal of type screen: the sequence checks skipped\n");
        return;
    }
    g_in = p[1];
    set_term(scr);
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    set_escdelay(25);
    /* each list ends with 0 (not a key) */
    KEYS_ARE("\x1b[1;5D" "x", 'x', 0);                  /* Ctrl+Left: no D (random weights) */
    KEYS_ARE("\x1b[1;3A\x1b[1;5Cq", 'q', 0);           /* Alt+Up, Ctrl+Right */
    KEYS_ARE("\x1bOD", KC(KEY_LEFT), 0);                 /* a named key is the key */
    KEYS_ARE("\x1b", 27, 0);                             /* Esc alone stays Esc */
    KEYS_ARE("\x1bx", 27, 'x', 0);                       /* Alt+x: Esc, then x */
    KEYS_ARE("\x1b\xe1\xba\xbf", 27, 0x1ebf, 0);           /* Esc, then a Vietnamese letter */
    KEYS_ARE("\x1b[1;5", 0);                             /* cut short: dropped */
    KEYS_ARE("y", 'y', 0);                                /* and the next key is itself */
    KEYS_ARE("\x1b[\x1bOD", KC(KEY_LEFT), 0);            /* a key ends a broken sequence */
    KEYS_ARE("\x1b[200~hi", 'h', 'i', 0);                /* a paste's bracket, had it been on */
    endwin();
    delscreen(scr);
    fclose(in);
    fclose(out);
    close(p[1]);
}

int main(void)
{
    check_sequences();
    TL_CHECK(Keys_count >= 20);
    int help_lines = 0, foot = 0, pinned_seen = 0;
    for (int i = 0; i < Keys_count; i++) {
        const tl_key *k = &Keys_rows[i];
        const char *name = k->fn_name ? k->fn_name : "(no handler)";
        TL_CHECK_MSG(k->fn_name && !strncmp(k->fn_name, "key_", 4), "row %d: handler %s", i, name);
        TL_CHECK_MSG(k->fn == NULL, "row %d %s: the drawing's copy holds no handler", i, name);
        TL_CHECK_MSG(k->keys[0] != 0, "row %d %s: no key", i, name);
        /* no key in two rows: the second would never run */
        for (int j = 0; j < TL_KEYS_MAX && k->keys[j]; j++) {
            TL_CHECK_MSG(Keys_find(Keys_rows, Keys_count, k->keys[j]) == k, "row %d %s: key %#x also in row %d", i,
                         name, k->keys[j], (int)(Keys_find(Keys_rows, Keys_count, k->keys[j]) - Keys_rows));
            TL_CHECK_MSG(k->keys[j] < 0x110000 || (k->keys[j] & TL_KEY_CODE), "row %d %s: key %#x", i, name, k->keys[j]);
        }
        if (k->foot.key) {
            foot++;
            TL_CHECK_MSG(set_text(k->foot.key) && set_text(k->foot.en) && set_text(k->foot.vi), "row %d %s: footer", i, name);
            if (k->foot.pin)
                pinned_seen = 1;
            else
                TL_CHECK_MSG(!pinned_seen, "row %d %s: after a pinned footer entry", i, name);
        } else
            TL_CHECK_MSG(!k->foot.en && !k->foot.vi && !k->foot.pin, "row %d %s: footer words without a key", i, name);
        if (k->help.keys) {
            help_lines++;
            TL_CHECK_MSG(set_text(k->help.en) && set_text(k->help.vi), "row %d %s: key list line", i, name);
            TL_CHECK_MSG(Format_widthz(k->help.keys) < TL_KEYS_HELP_COL, "row %d %s: key column \"%s\"", i, name, k->help.keys);
            /* the key list's box at 80 columns: the line, 2 columns each side, 1 for the screen */
            for (int vi = 0; vi < 2; vi++) {
                char line[256];
                Keys_helpLine(k, vi ? "vi" : "en", line, sizeof line);
                TL_CHECK_MSG(Format_widthz(line) + 4 <= 78, "row %d %s: %d columns: %s", i, name, Format_widthz(line), line);
                TL_CHECK_MSG(Format_widthz(line) == TL_KEYS_HELP_COL + Format_widthz(vi ? k->help.vi : k->help.en),
                             "row %d %s: text not at column %d", i, name, TL_KEYS_HELP_COL);
            }
        } else
            TL_CHECK_MSG(!k->help.en && !k->help.vi, "row %d %s: key list text without a key column", i, name);
    }
    /* the key list fits 80x24 with its border */
    TL_CHECK(help_lines >= 20 && help_lines + 2 <= 24);
    TL_CHECK(foot >= 3 && pinned_seen);

    /* look-up: characters as they are, ncurses keys with the bit */
    const tl_key *k = Keys_find(Keys_rows, Keys_count, ' ');
    TL_CHECK(k && !strcmp(k->fn_name, "key_step"));
    TL_CHECK(Keys_find(Keys_rows, Keys_count, KC(KEY_RIGHT)) == k);
    TL_CHECK(Keys_find(Keys_rows, Keys_count, KEY_RIGHT) == NULL);   /* U+0105 is not the arrow */
    TL_CHECK(Keys_find(Keys_rows, Keys_count, 0) == NULL);
    TL_CHECK(Keys_find(Keys_rows, Keys_count, KC(KEY_RESIZE)) == NULL);
    k = Keys_find(Keys_rows, Keys_count, 'q');
    TL_CHECK(k && k->foot.pin && !strcmp(Keys_footWord(k, "vi_VN.UTF-8"), "tho\xC3\xA1t") && !strcmp(Keys_footWord(k, "en"), "quit"));
    char line[256];
    Keys_helpLine(Keys_find(Keys_rows, Keys_count, 'r'), "en", line, sizeof line);
    TL_CHECK_STR(line, "r           run to the stop (background thread); any key pauses");
    Keys_helpLine(Keys_find(Keys_rows, Keys_count, KC(KEY_LEFT)), "vi", line, sizeof line);
    TL_CHECK_STR(line, "\xE2\x86\x90 / Bksp    l\xC3\xB9i m\xE1\xBB\x99t token (tua l\xE1\xBA\xA1i KV cache)");
    Keys_helpLine(Keys_find(Keys_rows, Keys_count, 'x'), "en", line, sizeof line);   /* said in e's line */
    TL_CHECK_STR(line, "");
    return TL_TEST_END("tui_keys");
}
