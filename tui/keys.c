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
