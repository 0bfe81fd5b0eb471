/* Jinja2's filters that format text for people and the web (truncate, wordwrap, striptags,
 * filesizeformat, urlencode, xmlattr): each follows its Python one line by line, apart from
 * the filters every chat template leans on (filters.c). */
#define _GNU_SOURCE   /* memmem */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jinja/internal.h"

static jstr *need_str(J *j, jv v) { return jinja_to_str(j, v).u.s; }

/* markupsafe.escape: & < > " ' */
void jinja_put_escaped(sb *r, const jstr *s)
{
    for (size_t i = 0; i < s->len; i++) {
        char c = s->p[i];
        if (c == '&') jinja_sb_puts(r, "&amp;");
        else if (c == '<') jinja_sb_puts(r, "&lt;");
        else if (c == '>') jinja_sb_puts(r, "&gt;");
        else if (c == '"') jinja_sb_puts(r, "&#34;");
        else if (c == '\'') jinja_sb_puts(r, "&#39;");
        else jinja_sb_putc(r, c);
    }
}

/* truncate(s, length=255, killwords=False, end='...', leeway=5), lengths in characters */
static jv truncate(J *j, jv v, jargs *A)
{
    if (v.t == T_UNDEF) return v;   /* len(Undefined) is 0: returned as it is */
    if (v.t != T_STR) jinja_fail(j, JE_TYPE, "object of type '%s' has no len()", jinja_type_name(v));
    jv lv = jinja_arg(A, 0, "length", v_int(255)), end = jinja_arg(A, 2, "end", jinja_v_cstr(j, "...")), lw = jinja_arg(A, 3, "leeway", v_none());
    int killwords = jinja_truthy(jinja_arg(A, 1, "killwords", v_bool(0)));
    if (lv.t != T_INT && lv.t != T_BOOL) jinja_fail(j, JE_TYPE, "'%s' object cannot be interpreted as an integer", jinja_type_name(lv));
    if (end.t != T_STR) jinja_fail(j, JE_TYPE, "object of type '%s' has no len()", jinja_type_name(end));
    long long length = num_i(lv), leeway = lw.t == T_NONE ? 5 : num_i(lw);
    long long n = (long long)jinja_u8_count(v.u.s->p, v.u.s->len), en = (long long)jinja_u8_count(end.u.s->p, end.u.s->len);
    if (length < en) jinja_fail(j, JE_PYASSERT, "expected length >= %lld, got %lld", en, length);
    if (leeway < 0) jinja_fail(j, JE_PYASSERT, "expected leeway >= 0, got %lld", leeway);
    if (n <= length + leeway) return v;
    jstr *s = v.u.s;
    size_t cut = jinja_u8_offset(s->p, s->len, (size_t)(length - en));
    if (!killwords) { /* s[:length - len(end)].rsplit(" ", 1)[0] */
        size_t k = cut;
        while (k > 0 && s->p[k - 1] != ' ') k--;
        if (k > 0) cut = k - 1;
    }
    sb r;
    jinja_sb_init(&r, j);
    jinja_sb_put_sub(&r, s, 0, cut);
    jinja_sb_put_str(&r, end.u.s);
    return jinja_sb_val(&r);
}

/* filesizeformat(value, binary=False): float(value) in kB/MB... or KiB/MiB... */
static jv filesizeformat(J *j, jv v, jargs *A)
{
    int binary = jinja_truthy(jinja_arg(A, 0, "binary", v_bool(0)));
    double bytes;
    if (v.t == T_BIG) bytes = strtod(v.u.s->p, NULL);
    else if (is_num(v)) bytes = num_f(v);
    else if (v.t == T_STR) {
        jv s = jinja_str_strip(j, v, NULL, 3);
        char *e;
        bytes = strtod(s.u.s->p, &e);
        if (!s.u.s->len || *e) {
            sb m;
            jinja_sb_init(&m, j);
            jinja_put_repr(&m, v);
            jinja_fail(j, JE_VALUE, "could not convert string to float: %s", jinja_sb_val(&m).u.s->p);
        }
    } else
        jinja_fail(j, JE_TYPE, "float() argument must be a string or a real number, not '%s'", jinja_type_name(v));
    static const char *const dec[] = {"kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
    static const char *const bin[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
    double base = binary ? 1024 : 1000;
    if (bytes == 1) return jinja_v_cstr(j, "1 Byte");
    if (bytes < base) {
        sb r;
        jinja_sb_init(&r, j);
        jinja_put_str(&r, jinja_big_from_double(j, bytes));   /* int(bytes) */
        jinja_sb_puts(&r, " Bytes");
        return jinja_sb_val(&r);
    }
    double unit = 0;
    int i;
    for (i = 0; i < 8; i++) {
        char e[16];
        snprintf(e, sizeof e, "1e%d", 3 * (i + 2));
        unit = binary ? ldexp(1, 10 * (i + 2)) : strtod(e, NULL); /* base ** (i + 2), exactly rounded */
        if (bytes < unit) break;
    }
    if (i == 8) i = 7;
    char buf[400];
    snprintf(buf, sizeof buf, "%.1f %s", base * bytes / unit, binary ? bin[i] : dec[i]);
    return jinja_v_cstr(j, buf);
}

/* urllib.parse.quote: letters, digits and _.-~ stay, as does '/' outside a query; for_qs
 * writes spaces as '+' */
static void url_quote(sb *r, jv v, int for_qs)
{
    jstr *s = need_str(r->j, v);
    for (size_t i = 0; i < s->len; i++) {
        unsigned char c = (unsigned char)s->p[i];
        if (isalnum(c) || c == '_' || c == '.' || c == '-' || c == '~' || (c == '/' && !for_qs)) jinja_sb_putc(r, (char)c);
        else if (c == ' ' && for_qs) jinja_sb_putc(r, '+');
        else {
            char t[4];
            snprintf(t, sizeof t, "%%%02X", c);
            jinja_sb_puts(r, t);
        }
    }
}

static jv urlencode(J *j, jv v)
{
    sb r;
    jinja_sb_init(&r, j);
    if (v.t != T_LIST && v.t != T_DICT && v.t != T_UNDEF) { /* a str, or anything not iterable */
        url_quote(&r, v, 0);
        return jinja_sb_val(&r);
    }
    jlist *items = jinja_iter_list(j, v);
    for (size_t i = 0; i < items->n; i++) {
        jv k, x;
        if (v.t == T_DICT) { k = v.u.d->k[i]; x = v.u.d->v[i]; }
        else {
            jlist *pair = jinja_iter_list(j, items->it[i]);
            if (pair->n != 2) jinja_fail(j, JE_VALUE, pair->n < 2 ? "not enough values to unpack (expected 2, got %zu)"
                                                               : "too many values to unpack (expected 2)", pair->n);
            k = pair->it[0];
            x = pair->it[1];
        }
        if (i) jinja_sb_putc(&r, '&');
        url_quote(&r, k, 1);
        jinja_sb_putc(&r, '=');
        url_quote(&r, x, 1);
    }
    return jinja_sb_val(&r);
}

/* xmlattr(d, autospace=True): key="value" for values that are not None or undefined, both
 * escaped; a key with white space, '/', '>' or '=' is a ValueError (Jinja2 3.1.4) */
static jv xmlattr(J *j, jv v, jargs *A)
{
    if (v.t == T_UNDEF) jinja_fail_undef(j, v);
    if (v.t != T_DICT) jinja_fail(j, JE_ATTRIBUTE, "'%s' object has no attribute 'items'", jinja_type_name(v));
    int autospace = jinja_truthy(jinja_arg(A, 0, "autospace", v_bool(1)));
    sb r;
    jinja_sb_init(&r, j);
    int any = 0;
    for (size_t i = 0; i < v.u.d->n; i++) {
        jv k = v.u.d->k[i], x = v.u.d->v[i];
        if (x.t == T_NONE || x.t == T_UNDEF) continue;
        if (k.t != T_STR) jinja_fail(j, JE_TYPE, "expected string or bytes-like object, got '%s'", jinja_type_name(k));
        for (size_t c = 0; c < k.u.s->len; c++)
            if (strchr(" \t\n\r\f\v/>=", k.u.s->p[c]) && k.u.s->p[c]) {
                sb m;
                jinja_sb_init(&m, j);
                jinja_put_repr(&m, k);
                jinja_fail(j, JE_VALUE, "Invalid character in attribute name: %s", jinja_sb_val(&m).u.s->p);
            }
        jinja_sb_putc(&r, any || autospace ? ' ' : 0);
        if (!any && !autospace) r.len--;
        any = 1;
        jinja_put_escaped(&r, k.u.s);
        jinja_sb_puts(&r, "=\"");
        jinja_put_escaped(&r, need_str(j, x));
        jinja_sb_putc(&r, '"');
    }
    return jinja_sb_val(&r);
}

/* html.unescape for the entities markup commonly holds: &amp; &lt; &gt; &quot; &#39; &apos;
 * &nbsp; and numeric ones */
static void put_unescaped(sb *r, const char *s, size_t n)
{
    static const struct { const char *name; unsigned cp; } ents[] = {
        {"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''}, {"nbsp;", 0xA0},
    };
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '&') { jinja_sb_putc(r, s[i]); continue; }
        size_t k;
        for (k = 0; k < sizeof ents / sizeof ents[0]; k++) {
            size_t l = strlen(ents[k].name);
            if (i + 1 + l <= n && !memcmp(s + i + 1, ents[k].name, l)) { jinja_u8_put(r, ents[k].cp); i += l; break; }
        }
        if (k < sizeof ents / sizeof ents[0]) continue;
        if (i + 2 < n && s[i + 1] == '#') {
            int hex = s[i + 2] == 'x' || s[i + 2] == 'X';
            size_t e = i + 2 + (size_t)hex;
            unsigned long cp = 0;
            size_t d = e;
            while (d < n && (hex ? isxdigit((unsigned char)s[d]) : isdigit((unsigned char)s[d])) && d - e < 8)
                cp = cp * (hex ? 16 : 10) + (unsigned long)(isdigit((unsigned char)s[d]) ? s[d] - '0' : (tolower((unsigned char)s[d]) - 'a' + 10)), d++;
            if (d > e && cp && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF)) {
                jinja_u8_put(r, (unsigned)cp);
                i = d < n && s[d] == ';' ? d : d - 1;
                continue;
            }
        }
        jinja_sb_putc(r, '&');
    }
}

/* striptags: comments, then tags, removed; white space runs become one space; entities
 * unescaped (markupsafe's Markup.striptags) */
static jv striptags(J *j, jv v)
{
    jstr *s = need_str(j, v);
    sb a;
    jinja_sb_init(&a, j);
    for (size_t i = 0; i < s->len;) {   /* <!-- ... --> */
        const char *st = i + 4 <= s->len ? memmem(s->p + i, s->len - i, "<!--", 4) : NULL;
        const char *en = st ? memmem(st, (size_t)(s->p + s->len - st), "-->", 3) : NULL;
        if (!en) { jinja_sb_put(&a, s->p + i, s->len - i); break; }
        jinja_sb_put(&a, s->p + i, (size_t)(st - (s->p + i)));
        i = (size_t)(en + 3 - s->p);
    }
    jstr *t = jinja_sb_val(&a).u.s;
    sb b;
    jinja_sb_init(&b, j);
    for (size_t i = 0; i < t->len;) {   /* <...> */
        const char *st = memchr(t->p + i, '<', t->len - i);
        const char *en = st ? memchr(st, '>', (size_t)(t->p + t->len - st)) : NULL;
        if (!en) { jinja_sb_put(&b, t->p + i, t->len - i); break; }
        jinja_sb_put(&b, t->p + i, (size_t)(st - (t->p + i)));
        i = (size_t)(en + 1 - t->p);
    }
    jlist *words = jinja_str_split(j, jinja_sb_val(&b).u.s, v_none(), -1).u.l;
    sb c;
    jinja_sb_init(&c, j);
    for (size_t i = 0; i < words->n; i++) {
        if (i) jinja_sb_putc(&c, ' ');
        jinja_sb_put_str(&c, words->it[i].u.s);
    }
    sb r;
    jinja_sb_init(&r, j);
    put_unescaped(&r, c.p ? c.p : "", c.len);
    return jinja_sb_val(&r);
}

typedef struct chunk { size_t a, e; int ws; } chunk;

static int tw_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }
static int tw_letter(unsigned char c) { return isalpha(c) || c >= 0x80 || c == '_'; }

/* textwrap's chunks: runs of ASCII white space, and words; with break_on_hyphens a word also
 * ends after a hyphen with two letters before it and a letter after it */
static chunk *tw_chunks(J *j, const jstr *s, int hyphens, size_t *count)
{
    size_t cap = 16, n = 0;
    chunk *c = jinja_alloc(j, cap * sizeof *c);
    for (size_t i = 0; i < s->len;) {
        size_t st = i;
        int ws = tw_space(s->p[i]);
        while (i < s->len && tw_space(s->p[i]) == ws) {
            i++;
            if (!ws && hyphens && s->p[i - 1] == '-' && i - st >= 3 && tw_letter((unsigned char)s->p[i - 2]) &&
                tw_letter((unsigned char)s->p[i - 3]) && i < s->len && tw_letter((unsigned char)s->p[i]))
                break;
        }
        if (n == cap) {
            chunk *nc = jinja_alloc(j, 2 * cap * sizeof *nc);
            memcpy(nc, c, cap * sizeof *nc);
            c = nc;
            cap *= 2;
        }
        c[n++] = (chunk){st, i, ws};
    }
    *count = n;
    return c;
}

static long long clen(const jstr *s, chunk c) { return (long long)jinja_u8_count(s->p + c.a, c.e - c.a); }

/* textwrap.TextWrapper._wrap_chunks with expand_tabs and replace_whitespace off; the lines
 * are written joined with wrapstring; returns how many */
static size_t tw_wrap(J *j, sb *out, const jstr *s, long long width, int break_long, int hyphens, const jstr *wrapstring)
{
    size_t n, ci = 0, lines = 0;
    chunk *c = tw_chunks(j, s, hyphens, &n);
    chunk *line = jinja_alloc(j, (n + 1) * sizeof *line);
    while (ci < n) {
        size_t ln = 0;
        long long cur = 0;
        if (c[ci].ws && lines) ci++;   /* a line's leading white space, but the text's first */
        while (ci < n && cur + clen(s, c[ci]) <= width) { cur += clen(s, c[ci]); line[ln++] = c[ci++]; }
        if (ci < n && clen(s, c[ci]) > width) {   /* a word longer than any line */
            long long left = width - cur < 1 ? 1 : width - cur;
            if (break_long) {
                size_t end = jinja_u8_offset(s->p + c[ci].a, c[ci].e - c[ci].a, (size_t)left);
                if (hyphens && clen(s, c[ci]) > left) {   /* after the last hyphen that fits */
                    size_t h = end;
                    while (h > 0 && s->p[c[ci].a + h - 1] != '-') h--;
                    if (h > 1) {
                        size_t k = 0;
                        while (k < h - 1 && s->p[c[ci].a + k] == '-') k++;
                        if (k < h - 1) end = h;
                    }
                }
                line[ln++] = (chunk){c[ci].a, c[ci].a + end, 0};
                c[ci].a += end;
            } else if (!ln)
                line[ln++] = c[ci++];
        }
        if (ln && line[ln - 1].ws) ln--;
        if (ln) {
            if (lines++) jinja_sb_put_str(out, wrapstring);
            for (size_t k = 0; k < ln; k++) jinja_sb_put_sub(out, s, line[k].a, line[k].e);
        }
    }
    return lines;
}

static jv wordwrap(J *j, jv v, jargs *A)
{
    jstr *s = need_str(j, v);
    jv w = jinja_arg(A, 0, "width", v_int(79)), ws = jinja_arg(A, 2, "wrapstring", v_none());
    int break_long = jinja_truthy(jinja_arg(A, 1, "break_long_words", v_bool(1)));
    int hyphens = jinja_truthy(jinja_arg(A, 3, "break_on_hyphens", v_bool(1)));
    if (w.t != T_INT && w.t != T_BOOL) jinja_fail(j, JE_TYPE, "'<=' not supported between instances of '%s' and 'int'", jinja_type_name(w));
    if (num_i(w) <= 0) jinja_fail(j, JE_VALUE, "invalid width %lld (must be > 0)", num_i(w));
    jstr *wrapstring = ws.t == T_NONE ? jinja_v_cstr(j, "\n").u.s : need_str(j, ws);
    jlist *lines = jinja_str_splitlines(j, s, 0);
    sb r;
    jinja_sb_init(&r, j);
    for (size_t i = 0; i < lines->n; i++) {
        if (i) jinja_sb_put_str(&r, wrapstring);
        tw_wrap(j, &r, lines->it[i].u.s, num_i(w), break_long, hyphens, wrapstring);
    }
    return jinja_sb_val(&r);
}

/* ---- urlize, after jinja2.utils.urlize */

static int w_char(unsigned char c) { return isalnum(c) || c == '_' || c >= 0x80; }   /* \w, roughly */
static int ends_with(const char *s, size_t n, const char *x) { size_t k = strlen(x); return n >= k && !memcmp(s + n - k, x, k); }
static int starts_ci(const char *s, size_t n, const char *x) { size_t k = strlen(x); return n >= k && !strncasecmp(s, x, k); }

static size_t count_sub(const char *s, size_t n, const char *x)
{
    size_t k = strlen(x), c = 0;
    for (size_t i = 0; i + k <= n;)
        if (!memcmp(s + i, x, k)) { c++; i += k; }
        else i++;
    return c;
}

/* _http_re: (https?://|www.)labels.tld, or labels.com/net/..., or https?:// and an IP
 * address; then :port and a path, query or fragment */
static int http_match(const char *s, size_t n)
{
    size_t i = 0;
    int scheme = 0;
    if (starts_ci(s, n, "https://")) i = 8, scheme = 2;
    else if (starts_ci(s, n, "http://")) i = 7, scheme = 2;
    else if (starts_ci(s, n, "www.")) i = 4, scheme = 1;
    size_t h = i;
    if (scheme == 2 && h < n && s[h] == '[') {   /* IPv6 */
        size_t e = h + 1, colons = 0;
        while (e < n && (isxdigit((unsigned char)s[e]) || s[e] == ':')) colons += s[e++] == ':';
        if (e >= n || s[e] != ']' || colons < 2) return 0;
        h = e + 1;
    } else {
        while (h < n && (w_char((unsigned char)s[h]) || s[h] == '%' || s[h] == '-' || s[h] == '.')) h++;
        const char *host = s + i;
        size_t hn = h - i, last = hn;
        while (last > 0 && host[last - 1] != '.') last--;   /* the tld starts at last */
        int ok = 0;
        int labels_ok = 1;   /* every label before the tld: [\w%-]+ */
        for (size_t k = 0, st = 0; k < last; k++)
            if (host[k] == '.') { if (k == st) labels_ok = 0; st = k + 1; }
        const char *tld = host + last;
        size_t tn = hn - last;
        if (scheme && labels_ok) {
            int letters = tn >= 2 && tn <= 63;
            for (size_t k = 0; k < tn && letters; k++) letters = isalpha((unsigned char)tld[k]);
            int idna = tn >= 6 && tn <= 63 && !strncasecmp(tld, "xn--", 4);
            for (size_t k = 4; k < tn && idna; k++) idna = w_char((unsigned char)tld[k]) || tld[k] == '%';
            ok = letters || idna;
        }
        if (!ok && !scheme && last > 0) {   /* ([\w%-]{2,63}\.)+(com|net|int|edu|gov|org|info|mil) */
            static const char *const tlds[] = {"com", "net", "int", "edu", "gov", "org", "info", "mil"};
            for (size_t k = 0; k < 8 && !ok; k++) ok = tn == strlen(tlds[k]) && !strncasecmp(tld, tlds[k], tn);
            for (size_t k = 0, st = 0; k < last && ok; k++)
                if (host[k] == '.') { ok = k - st >= 2 && k - st <= 63; st = k + 1; }
        }
        if (!ok && scheme == 2) {   /* IPv4 */
            int parts = 0, digits = 0;
            ok = 1;
            for (size_t k = 0; k < hn && ok; k++) {
                if (isdigit((unsigned char)host[k])) ok = ++digits <= 3;
                else if (host[k] == '.') { ok = digits > 0; digits = 0; parts++; }
                else ok = 0;
            }
            ok = ok && parts == 3 && digits > 0;
        }
        if (!ok) return 0;
    }
    if (h < n && s[h] == ':') {   /* port */
        size_t e = h + 1;
        while (e < n && isdigit((unsigned char)s[e]) && e - h <= 5) e++;
        if (e == h + 1 || e - h > 6) return 0;
        h = e;
    }
    return h == n || s[h] == '/' || s[h] == '?' || s[h] == '#';
}

/* _email_re: ^\S+@\w[\w.-]*\.\w+$ at one of its '@' */
static int email_match(const char *s, size_t n)
{
    for (size_t at = 1; at < n; at++) {
        if (s[at] != '@') continue;
        const char *d = s + at + 1;
        size_t dn = n - at - 1, dot = 0, ok = dn >= 3 && w_char((unsigned char)d[0]);
        for (size_t k = 0; k < dn && ok; k++) {
            if (d[k] == '.') dot = k;
            else ok = w_char((unsigned char)d[k]) || d[k] == '-';
        }
        if (ok && dot > 0 && dot + 1 < dn) {
            int tail_w = 1;
            for (size_t k = dot + 1; k < dn; k++) tail_w = tail_w && w_char((unsigned char)d[k]);
            if (tail_w) return 1;
        }
    }
    return 0;
}

static void put_link_text(sb *r, const char *m, size_t n, long long trim)
{
    if (trim >= 0 && (long long)jinja_u8_count(m, n) > trim) {
        jinja_sb_put(r, m, jinja_u8_offset(m, n, (size_t)trim));
        jinja_sb_puts(r, "...");
    } else
        jinja_sb_put(r, m, n);
}

/* The attributes of a link: rel (the given words, nofollow, and the policy's noopener,
 * sorted) and target. */
static jstr *link_attrs(J *j, jargs *A, jv rl, jv tg)
{
    jlist *rel = rl.t == T_STR ? jinja_str_split(j, rl.u.s, v_none(), -1).u.l : jinja_list_new(j, 2);
    if (jinja_truthy(jinja_arg(A, 1, "nofollow", v_bool(0)))) jinja_list_push(j, rel, jinja_v_cstr(j, "nofollow"));
    jinja_list_push(j, rel, jinja_v_cstr(j, "noopener"));
    jargs none = {0};
    rel = jinja_iter_list(j, jinja_apply_filter(j, "unique", v_list(rel), &none, NULL));
    rel = jinja_iter_list(j, jinja_apply_filter(j, "sort", v_list(rel), &(jargs){.a = (jv[]){v_bool(0), v_bool(1)}, .n = 2}, NULL));
    sb attrs;
    jinja_sb_init(&attrs, j);
    jinja_sb_puts(&attrs, " rel=\"");
    for (size_t i = 0; i < rel->n; i++) {
        if (i) jinja_sb_putc(&attrs, ' ');
        jinja_put_escaped(&attrs, rel->it[i].u.s);
    }
    jinja_sb_putc(&attrs, '"');
    if (tg.t != T_NONE) { jinja_sb_puts(&attrs, " target=\""); jinja_put_escaped(&attrs, need_str(j, tg)); jinja_sb_putc(&attrs, '"'); }
    return jinja_sb_val(&attrs).u.s;
}

/* extra_schemes, each checked as Jinja2 does: ^[\w.+-]{2,}:(/){0,2}$ */
static jlist *link_schemes(J *j, jv xs)
{
    jlist *schemes = xs.t == T_NONE ? jinja_list_new(j, 1) : jinja_iter_list(j, xs);
    for (size_t i = 0; i < schemes->n; i++) {
        jstr *sc = need_str(j, schemes->it[i]);
        size_t k = 0;
        while (k < sc->len && (w_char((unsigned char)sc->p[k]) || strchr(".+-", sc->p[k]))) k++;
        size_t sl = 0;
        while (k + 1 + sl < sc->len && sc->p[k + 1 + sl] == '/') sl++;
        if (k < 2 || k >= sc->len || sc->p[k] != ':' || sl > 2 || k + 1 + sl != sc->len) {
            sb m;
            jinja_sb_init(&m, j);
            jinja_put_repr(&m, schemes->it[i]);
            jinja_fail(j, JE_FILTERARG, "%s is not a valid URI scheme prefix.", jinja_sb_val(&m).u.s->p);
        }
    }
    return schemes;
}

/* One word m[0, mn) of the escaped text: its head ( < &lt; and tail ) > . , \n &gt; kept
 * outside (brackets balanced from the tail), the middle a link when it is a URL, an email
 * address or starts with one of the extra schemes. */
static void urlize_word(sb *r, const char *m, size_t mn, const jstr *attrs, const jlist *schemes, long long trim)
{
    size_t hn = 0, tn;
    for (;;) {   /* head: ( < &lt; */
        if (hn < mn && (m[hn] == '(' || m[hn] == '<')) hn++;
        else if (mn - hn >= 4 && !memcmp(m + hn, "&lt;", 4)) hn += 4;
        else break;
    }
    const char *mid = m + hn;
    size_t midn = mn - hn, te = midn;
    for (;;) {   /* tail: ) > . , \n &gt; */
        if (te > 0 && strchr(")>.,\n", mid[te - 1])) te--;
        else if (ends_with(mid, te, "&gt;")) te -= 4;
        else break;
    }
    tn = midn - te;
    midn = te;
    static const char *const pairs[][2] = {{"(", ")"}, {"<", ">"}, {"&lt;", "&gt;"}};
    for (int p = 0; p < 3; p++) {   /* balance brackets from the tail */
        size_t sc = count_sub(mid, midn, pairs[p][0]);
        if (sc <= count_sub(mid, midn, pairs[p][1])) continue;
        size_t moves = count_sub(mid + midn, tn, pairs[p][1]);
        if (moves > sc) moves = sc;
        for (size_t k = 0; k < moves; k++) {
            const char *e = strstr(mid + midn, pairs[p][1]);   /* the escaped text has no NUL before the end */
            size_t add = (size_t)(e - (mid + midn)) + strlen(pairs[p][1]);
            midn += add;
            tn -= add;
        }
    }
    jinja_sb_put(r, m, hn);
    int done = 0;
    if (http_match(mid, midn)) {
        jinja_sb_puts(r, "<a href=\"");
        if (!(midn >= 8 && !memcmp(mid, "https://", 8)) && !(midn >= 7 && !memcmp(mid, "http://", 7))) jinja_sb_puts(r, "https://");
        jinja_sb_put(r, mid, midn);
        jinja_sb_putc(r, '"');
        jinja_sb_put_str(r, attrs);
        jinja_sb_putc(r, '>');
        put_link_text(r, mid, midn, trim);
        jinja_sb_puts(r, "</a>");
        done = 1;
    } else if (midn > 7 && !memcmp(mid, "mailto:", 7) && email_match(mid + 7, midn - 7)) {
        jinja_sb_puts(r, "<a href=\"");
        jinja_sb_put(r, mid, midn);
        jinja_sb_puts(r, "\">");
        jinja_sb_put(r, mid + 7, midn - 7);
        jinja_sb_puts(r, "</a>");
        done = 1;
    } else if (memchr(mid, '@', midn) && !(midn >= 4 && !memcmp(mid, "www.", 4)) && mid[0] != '@' &&
               !memchr(mid, ':', midn) && email_match(mid, midn)) {
        jinja_sb_puts(r, "<a href=\"mailto:");
        jinja_sb_put(r, mid, midn);
        jinja_sb_puts(r, "\">");
        jinja_sb_put(r, mid, midn);
        jinja_sb_puts(r, "</a>");
        done = 1;
    } else {
        for (size_t k = 0; k < schemes->n && !done; k++) {
            jstr *sc = schemes->it[k].u.s;
            if (midn > sc->len && !memcmp(mid, sc->p, sc->len)) {
                jinja_sb_puts(r, "<a href=\"");
                jinja_sb_put(r, mid, midn);
                jinja_sb_putc(r, '"');
                jinja_sb_put_str(r, attrs);
                jinja_sb_putc(r, '>');
                jinja_sb_put(r, mid, midn);
                jinja_sb_puts(r, "</a>");
                done = 1;
            }
        }
    }
    if (!done) jinja_sb_put(r, mid, midn);
    jinja_sb_put(r, mid + midn, tn);
}

static jv urlize(J *j, jv v, jargs *A)
{
    jv tl = jinja_arg(A, 0, "trim_url_limit", v_none()), tg = jinja_arg(A, 2, "target", v_none()), rl = jinja_arg(A, 3, "rel", v_none());
    jv xs = jinja_arg(A, 4, "extra_schemes", v_none());
    long long trim = tl.t == T_NONE ? -1 : num_i(tl);
    jstr *attrs = link_attrs(j, A, rl, tg);
    jlist *schemes = link_schemes(j, xs);
    sb esc;
    jinja_sb_init(&esc, j);
    jinja_put_escaped(&esc, need_str(j, v));
    jstr *s = jinja_sb_val(&esc).u.s;
    sb r;
    jinja_sb_init(&r, j);
    for (size_t i = 0; i < s->len;) {
        unsigned cp;
        size_t st = i;
        jinja_u8_next(s->p, s->len, i, &cp);
        int space = jinja_py_isspace(cp);
        while (i < s->len) {   /* re.split(r"(\s+)"): words and the white space between */
            size_t k = jinja_u8_next(s->p, s->len, i, &cp);
            if (jinja_py_isspace(cp) != space) break;
            i += k;
        }
        if (space) jinja_sb_put(&r, s->p + st, i - st);
        else urlize_word(&r, s->p + st, i - st, attrs, schemes, trim);
    }
    return jinja_sb_val(&r);
}

int jinja_text_filter(J *j, const char *name, jv v, jargs *A, jv *out)
{
    if (!strcmp(name, "truncate")) *out = truncate(j, v, A);
    else if (!strcmp(name, "filesizeformat")) *out = filesizeformat(j, v, A);
    else if (!strcmp(name, "urlencode")) *out = urlencode(j, v);
    else if (!strcmp(name, "xmlattr")) *out = xmlattr(j, v, A);
    else if (!strcmp(name, "striptags")) *out = striptags(j, v);
    else if (!strcmp(name, "wordwrap")) *out = wordwrap(j, v, A);
    else if (!strcmp(name, "urlize")) *out = urlize(j, v, A);
    else return 0;
    return 1;
}
