/* The message table; see i18n.h. One line per string, English first. Keep the order of printf
 * conversions; put technical identifiers in the Vietnamese unchanged. */
#include "i18n.h"

#include <string.h>

typedef struct { const char *en, *vi; } entry;

static const entry table[] = {
#include "i18n_table.h"
};

int I18n_isVi(const char *lang)
{
    return lang && lang[0] == 'v' && lang[1] == 'i' && (lang[2] == 0 || lang[2] == '_' || lang[2] == '-' || lang[2] == '.');
}

int I18n_count(void)
{
    return (int)(sizeof table / sizeof table[0]);
}

const char *I18n_en(int i)
{
    return i >= 0 && i < I18n_count() ? table[i].en : "";
}

const char *I18n_vi(int i)
{
    return i >= 0 && i < I18n_count() ? table[i].vi : "";
}

const char *I18n_tr(const char *lang, const char *en)
{
    if (!en)
        return "";
    if (!I18n_isVi(lang))
        return en;
    /* a few hundred entries, a few dozen look-ups a frame: a linear scan costs microseconds */
    for (int i = 0; i < I18n_count(); i++)
        if (!strcmp(table[i].en, en))
            return table[i].vi;
    return en;
}
