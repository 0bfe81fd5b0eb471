/* Python's str operations shared by filters and methods: case mappings, strip, replace,
 * split. */
#include <ctype.h>
#include <locale.h>
#include <pthread.h>
#include <string.h>
#include <wctype.h>
#ifdef __APPLE__
#include <xlocale.h>   /* newlocale and the *_l calls; after <wctype.h>, whose ones it adds */
#endif

#include "jinja/internal.h"

/* Unicode simple case mappings from glibc's C.UTF-8 (ASCII only where that locale is missing) */
static locale_t utf8_locale;
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;
static void utf8_init(void)
{
    utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
#ifdef __APPLE__   /* macOS has no C.UTF-8; its UTF-8 character type is named alone */
    if (!utf8_locale) utf8_locale = newlocale(LC_CTYPE_MASK, "UTF-8", (locale_t)0);
#endif
}

static unsigned cp_case(unsigned c, int up)
{
    if (c < 0x80) return (unsigned)(up ? toupper((int)c) : tolower((int)c));
    pthread_once(&utf8_once, utf8_init);
    if (!utf8_locale) return c;
    return (unsigned)(up ? towupper_l((wint_t)c, utf8_locale) : towlower_l((wint_t)c, utf8_locale));
}

static int cp_alpha(unsigned c)
{
    if (c < 0x80) return isalpha((int)c);
    pthread_once(&utf8_once, utf8_init);
    return utf8_locale ? iswalpha_l((wint_t)c, utf8_locale) != 0 : 1;
}

/* mode: 0 lower, 1 upper, 2 capitalize, 3 str.title, 4 Jinja's title filter */
jv jinja_str_case(J *j, jstr *s, int mode)
{
    sb r;
    jinja_sb_init(&r, j);
    int prev = 0;
    size_t idx = 0;
    for (size_t i = 0; i < s->len; idx++) {
        unsigned cp;
        size_t k = jinja_u8_next(s->p, s->len, i, &cp);
        int up;
        if (mode < 2) up = mode;
        else if (mode == 2) up = idx == 0;
        else if (mode == 3) { int a = cp_alpha(cp); up = !prev; if (!a) { prev = 0; jinja_u8_put(&r, cp); i += k; continue; } prev = 1; }
        else {
            int sepc = cp == '-' || jinja_py_isspace(cp) || cp == '(' || cp == '{' || cp == '[' || cp == '<';
            if (sepc) { prev = 0; jinja_u8_put(&r, cp); i += k; continue; }
            up = !prev;
            prev = 1;
        }
        jinja_u8_put(&r, cp_case(cp, up));
        i += k;
    }
    if (r.len == s->len) /* same length: the bytes stay where they were */
        for (size_t i = 0; i < s->nsp; i++) jinja_sb_span(&r, s->sp[i].start, s->sp[i].end);
    return jinja_sb_val(&r);
}

jv jinja_str_lower_upper(J *j, jv v, int up) { return jinja_str_case(j, jinja_to_str(j, v).u.s, up); }

static int cp_in(const jstr *chars, unsigned cp)
{
    for (size_t i = 0; i < chars->len;) {
        unsigned c;
        i += jinja_u8_next(chars->p, chars->len, i, &c);
        if (c == cp) return 1;
    }
    return 0;
}

/* strip: which 1 = left, 2 = right, 3 = both; chars NULL = whitespace */
jv jinja_str_strip(J *j, jv v, const jstr *chars, int which)
{
    jstr *s = v.u.s;
    size_t a = 0, e = s->len;
    if (which & 1)
        while (a < e) {
            unsigned cp;
            size_t k = jinja_u8_next(s->p, s->len, a, &cp);
            if (chars ? !cp_in(chars, cp) : !jinja_py_isspace(cp)) break;
            a += k;
        }
    if (which & 2)
        while (e > a) {
            size_t st = e - 1;
            while (st > a && ((unsigned char)s->p[st] & 0xC0) == 0x80) st--;
            unsigned cp;
            jinja_u8_next(s->p, s->len, st, &cp);
            if (chars ? !cp_in(chars, cp) : !jinja_py_isspace(cp)) break;
            e = st;
        }
    return jinja_v_sub(j, s, a, e);
}

static const char *find_sub(const char *h, size_t hn, const char *n, size_t nn)
{
    if (!nn) return h;
    for (size_t i = 0; i + nn <= hn; i++)
        if (!memcmp(h + i, n, nn)) return h + i;
    return NULL;
}

jv jinja_str_replace(J *j, jstr *s, jstr *old, jstr *new_, long long count)
{
    sb r;
    jinja_sb_init(&r, j);
    size_t i = 0;
    long long done = 0;
    if (!old->len) {
        for (; i <= s->len && (count < 0 || done < count); done++) {
            jinja_sb_put_str(&r, new_);
            if (i == s->len) { i++; break; }
            size_t k = jinja_u8_next(s->p, s->len, i, NULL);
            jinja_sb_put_sub(&r, s, i, i + k);
            i += k;
        }
        if (i < s->len) jinja_sb_put_sub(&r, s, i, s->len);
        return jinja_sb_val(&r);
    }
    while (count < 0 || done < count) {
        const char *f = find_sub(s->p + i, s->len - i, old->p, old->len);
        if (!f) break;
        size_t at = (size_t)(f - s->p);
        jinja_sb_put_sub(&r, s, i, at);
        jinja_sb_put_str(&r, new_);
        i = at + old->len;
        done++;
    }
    jinja_sb_put_sub(&r, s, i, s->len);
    return jinja_sb_val(&r);
}

jv jinja_str_split(J *j, jstr *s, jv sep, long long maxsplit)
{
    jlist *l = jinja_list_new(j, 4);
    size_t i = 0;
    if (sep.t == T_NONE || sep.t == T_UNDEF) {
        for (;;) {
            while (i < s->len) {
                unsigned cp;
                size_t k = jinja_u8_next(s->p, s->len, i, &cp);
                if (!jinja_py_isspace(cp)) break;
                i += k;
            }
            if (i >= s->len) break;
            if (maxsplit >= 0 && (long long)l->n >= maxsplit) { /* the rest, trailing space kept */
                jinja_list_push(j, l, jinja_v_sub(j, s, i, s->len));
                break;
            }
            size_t st = i;
            while (i < s->len) {
                unsigned cp;
                size_t k = jinja_u8_next(s->p, s->len, i, &cp);
                if (jinja_py_isspace(cp)) break;
                i += k;
            }
            jinja_list_push(j, l, jinja_v_sub(j, s, st, i));
        }
        return v_list(l);
    }
    if (sep.t != T_STR) jinja_fail(j, JE_TYPE, "must be str or None, not %s", jinja_type_name(sep));
    jstr *d = sep.u.s;
    if (!d->len) jinja_fail(j, JE_VALUE, "empty separator");
    for (;;) {
        const char *f = maxsplit >= 0 && (long long)l->n >= maxsplit ? NULL : find_sub(s->p + i, s->len - i, d->p, d->len);
        if (!f) { jinja_list_push(j, l, jinja_v_sub(j, s, i, s->len)); break; }
        size_t at = (size_t)(f - s->p);
        jinja_list_push(j, l, jinja_v_sub(j, s, i, at));
        i = at + d->len;
    }
    return v_list(l);
}

jv jinja_str_title(J *j, jstr *s, int jinja_filter) { return jinja_str_case(j, s, jinja_filter ? 4 : 3); }

/* the length of the line break at s[i] as str.splitlines counts them (\n, \r, \r\n, \v, \f,
 * \x1c-\x1e, U+0085, U+2028, U+2029), or 0 */
static size_t line_break(const jstr *s, size_t i)
{
    unsigned cp;
    size_t k = jinja_u8_next(s->p, s->len, i, &cp);
    if (cp == '\r' && i + 1 < s->len && s->p[i + 1] == '\n') return 2;
    if (cp == '\n' || cp == '\r' || cp == '\v' || cp == '\f' || (cp >= 0x1c && cp <= 0x1e) || cp == 0x85 ||
        cp == 0x2028 || cp == 0x2029)
        return k;
    return 0;
}

jlist *jinja_str_splitlines(J *j, jstr *s, int keepends)
{
    jlist *l = jinja_list_new(j, 4);
    size_t i = 0, start = 0;
    while (i < s->len) {
        size_t k = line_break(s, i);
        if (!k) { i += jinja_u8_next(s->p, s->len, i, NULL); continue; }
        jinja_list_push(j, l, jinja_v_sub(j, s, start, keepends ? i + k : i));
        i += k;
        start = i;
    }
    if (start < s->len) jinja_list_push(j, l, jinja_v_sub(j, s, start, s->len));
    return l;
}
