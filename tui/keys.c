/* The key table as the footer and the key list read it; see keys.h. */
#include "keys.h"

#include <curses.h>
#include <stdio.h>

#include "format.h"
#include "i18n.h"

#define H(f) .fn_name = #f
const tl_key Keys_rows[] = {
#include "keys_table.h"
};
#undef H
const int Keys_count = (int)(sizeof Keys_rows / sizeof Keys_rows[0]);

const tl_key *Keys_find(const tl_key *rows, int n, int key)
{
    if (!key)
        return NULL;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < TL_KEYS_MAX && rows[i].keys[j]; j++)
            if (rows[i].keys[j] == key)
                return &rows[i];
    return NULL;
}

const char *Keys_footWord(const tl_key *k, const char *lang)
{
    return I18n_isVi(lang) ? k->foot.vi : k->foot.en;
}

void Keys_helpLine(const tl_key *k, const char *lang, char *out, size_t n)
{
    if (!n)
        return;
    out[0] = 0;
    if (!k->help.keys)
        return;
    int pad = TL_KEYS_HELP_COL - Format_widthz(k->help.keys);
    snprintf(out, n, "%s%*s%s", k->help.keys, pad > 1 ? pad : 1, "", I18n_isVi(lang) ? k->help.vi : k->help.en);
}

/* ECMA-48: after Esc [ (CSI) or Esc O (SS3), parameter bytes 0x30-0x3F and intermediate bytes
 * 0x20-0x2F, then one final byte 0x40-0x7E. */
int Keys_dropSequence(WINDOW *w, int wait_ms)
{
    wint_t c;
    wtimeout(w, wait_ms);
    int r = wget_wch(w, &c);
    if (r == ERR)
        return 0;
    if (r == KEY_CODE_YES || (c != '[' && c != 'O')) {
        if (r == KEY_CODE_YES)
            ungetch((int)c);
        else
            unget_wch((wchar_t)c);
        return 0;
    }
    /* a sequence is a few bytes; 32 ends one that never does */
    for (int i = 0; i < 32; i++) {
        r = wget_wch(w, &c);
        if (r == ERR)   /* cut short: what came of it is dropped */
            return 1;
        if (r == KEY_CODE_YES) {   /* a key of its own (a resize, an arrow) ended it */
            ungetch((int)c);
            return 1;
        }
        if (c >= 0x40 && c <= 0x7e)
            return 1;
        if (c < 0x20 || c > 0x3f) {
            unget_wch((wchar_t)c);
            return 1;
        }
    }
    return 1;
}
