/* The message table; see i18n.h. One line per string, English first. Keep the order of printf
 * conversions; put technical identifiers in the Vietnamese unchanged. */
#include "i18n.h"

#include <stdio.h>
#include <string.h>

typedef struct { const char *en, *vi; } entry;

static const entry table[] = {
#include "i18n_table.h"
};

static const entry errors[] = {
#include "i18n_errors.h"
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

/* Matches text[0..n) against the format f ("%s" any run, shortest first; "%d" an optional minus
 * and digits; "%%" a percent sign; the rest literally). On a match each conversion's span goes
 * to cap[k] / caplen[k] (at most max) and the count to *ncap. */
static int match(const char *f, const char *t, size_t n, const char **cap, size_t *caplen, int max, int *ncap)
{
    while (*f) {
        if (f[0] == '%' && f[1] == 's') {
            int k = *ncap;
            if (k >= max)
                return 0;
            for (size_t len = 0; len <= n; len++) {
                *ncap = k + 1;   /* a failed try may have taken more after it */
                cap[k] = t;
                caplen[k] = len;
                if (match(f + 2, t + len, n - len, cap, caplen, max, ncap))
                    return 1;
            }
            *ncap = k;
            return 0;
        }
        if (f[0] == '%' && f[1] == 'd') {
            size_t len = n && *t == '-';
            while (len < n && t[len] >= '0' && t[len] <= '9')
                len++;
            if (len == 0 || (len == 1 && *t == '-') || *ncap >= max)
                return 0;
            cap[*ncap] = t;
            caplen[(*ncap)++] = len;
            f += 2, t += len, n -= len;
            continue;
        }
        if (f[0] == '%' && f[1] == '%')
            f++;
        if (!n || *t != *f)
            return 0;
        f++, t++, n--;
    }
    return n == 0;
}

static void error_in(const char *lang, const char *msg, size_t n, char *out, size_t size, int depth)
{
    enum { MAXCAP = 8 };
    const char *cap[MAXCAP];
    size_t caplen[MAXCAP];
    for (size_t i = 0; depth < 4 && i < sizeof errors / sizeof errors[0]; i++) {
        int nc = 0;
        if (!match(errors[i].en, msg, n, cap, caplen, MAXCAP, &nc))
            continue;
        /* the Vietnamese format with each value put back; a %s value translated in turn */
        size_t o = 0;
        int k = 0;
        out[0] = 0;
        for (const char *f = errors[i].vi; *f && o + 1 < size; f++) {
            if (f[0] == '%' && (f[1] == 's' || f[1] == 'd') && k < nc) {
                if (f[1] == 's')
                    error_in(lang, cap[k], caplen[k], out + o, size - o, depth + 1);
                else
                    snprintf(out + o, size - o, "%.*s", (int)caplen[k], cap[k]);
                o += strlen(out + o);
                k++;
                f++;
                continue;
            }
            if (f[0] == '%' && f[1] == '%')
                f++;
            out[o++] = *f;
            out[o] = 0;
        }
        return;
    }
    snprintf(out, size, "%.*s", (int)n, msg);
}

void I18n_error(const char *lang, const char *msg, char *out, size_t size)
{
    if (!size)
        return;
    if (!msg)
        msg = "";
    if (!I18n_isVi(lang)) {
        snprintf(out, size, "%s", msg);
        return;
    }
    error_in(lang, msg, strlen(msg), out, size, 0);
}

int I18n_errorCount(void)
{
    return (int)(sizeof errors / sizeof errors[0]);
}

const char *I18n_errorEn(int i)
{
    return i >= 0 && i < I18n_errorCount() ? errors[i].en : "";
}

const char *I18n_errorVi(int i)
{
    return i >= 0 && i < I18n_errorCount() ? errors[i].vi : "";
}
