/* The message table; see i18n.h. One line per string, English first. Keep the order of printf
 * conversions; put technical identifiers in the Vietnamese unchanged. */
#include "i18n.h"

#include <stdio.h>
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

/* The last occurrence of needle in hay, or NULL: a value quoted before it may hold it too. */
static const char *last_of(const char *hay, const char *needle)
{
    const char *at = NULL;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        at = p;
    return at;
}

void I18n_expectation(const char *lang, const char *why, char *out, size_t size)
{
    static const struct { const char *en, *vi; } tails[] = {
        {": nothing numeric remembered as ", ": không có số nào được ghi nhớ với tên "},
        {": no text remembered as ", ": không có văn bản nào được ghi nhớ với tên "},
        {": cannot read ", ": không đọc được "},
    };
    if (!size)
        return;
    snprintf(out, size, "%s", why ? why : "");
    if (!why || !I18n_isVi(lang))
        return;
    const char *sp = strchr(why, ' '), *exp = last_of(why, ", expected ");
    if (sp && !strncmp(sp, " is ", 4) && exp && exp > sp) {   /* FIELD is VALUE, expected ... */
        const char *rest = exp + strlen(", expected "), *from = last_of(rest, " from ");
        if (from)
            snprintf(out, size, "%.*s là %.*s, mong đợi %.*s từ %s", (int)(sp - why), why,
                     (int)(exp - sp - 4), sp + 4, (int)(from - rest), rest, from + 6);
        else
            snprintf(out, size, "%.*s là %.*s, mong đợi %s", (int)(sp - why), why,
                     (int)(exp - sp - 4), sp + 4, rest);
        return;
    }
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        const char *t = strstr(why, tails[i].en);
        if (t) {
            snprintf(out, size, "%.*s%s%s", (int)(t - why), why, tails[i].vi, t + strlen(tails[i].en));
            return;
        }
    }
    if (!strncmp(why, "no step ", 8))
        snprintf(out, size, "không có bước %s", why + 8);
    else if (!strncmp(why, "cannot read ", 12))
        snprintf(out, size, "không đọc được %s", why + 12);
}
