/* The TUI's keys as one table, tui/keys_table.h: a row per action holds the keys that run it, its
 * handler, what the footer shows and its line in the key list (?), in English and Vietnamese.
 * The footer, the key list and app.c's dispatch are all read from the rows, so adding a key is
 * a row there plus its handler in app.c.
 *
 * The table is included twice: here (keys.c, the drawing library) with H(f) naming the handler
 * only, and in app.c with H(f) taking its address too, so the drawing code and its tests need no
 * session. Keys that are not in it: the line editor's (app.c's edit_key), the lesson strip's
 * (lesson_ctl.c), Esc closing the opening strip, and any key closing an overlay. */
#ifndef TL_TUI_KEYS_H
#define TL_TUI_KEYS_H

#include <curses.h>
#include <stddef.h>

struct tl_app;
typedef void (*tl_key_fn)(struct tl_app *a, int key);

/* A key as a row lists it and a handler gets it: a character as it is, an ncurses KEY_* code with
 * this bit (a character never has it: Unicode ends at 0x10FFFF). */
#define TL_KEY_CODE 0x1000000
#define KC(k) (TL_KEY_CODE | (k))

enum { TL_KEYS_MAX = 8, TL_KEYS_HELP_COL = 12 };

typedef struct {
    int keys[TL_KEYS_MAX];   /* the keys that run fn, 0-terminated */
    tl_key_fn fn;            /* app.c's handler; NULL in Keys_rows (the drawing's copy) */
    const char *fn_name;
    /* the footer: "key word"; key NULL: not in the footer. pin: shown whatever the width, the
     * others leave room for it */
    struct { const char *key, *en, *vi; int pin; } foot;
    /* the key list: the key column, then the text; keys NULL: no line of its own (another row's
     * line names it) */
    struct { const char *keys, *en, *vi; } help;
} tl_key;

extern const tl_key Keys_rows[];
extern const int Keys_count;

/* The row of rows[0..n) that key runs; NULL for none. */
const tl_key *Keys_find(const tl_key *rows, int n, int key);
/* The footer's word and the key list's text in lang ("vi..." Vietnamese, else English). */
const char *Keys_footWord(const tl_key *k, const char *lang);
/* The key list's line: the key column padded to TL_KEYS_HELP_COL columns, then the text. */
void Keys_helpLine(const tl_key *k, const char *lang, char *out, size_t n);
/* Called after w gave a bare Esc. A control sequence whose name this terminal's description
 * lacks arrives as Esc and then its characters one by one (Ctrl+Left is Esc [ 1 ; 5 D under
 * TERM=screen): read to its final byte (each byte waited for up to wait_ms) and dropped, so its
 * tail is no key press; returns 1. Anything else read is put back for the next read; returns 0.
 * Leaves w's timeout at wait_ms. */
int Keys_dropSequence(WINDOW *w, int wait_ms);

#endif
