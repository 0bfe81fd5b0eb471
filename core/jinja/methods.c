/* Methods of str, dict and list that the immutable sandbox allows, and the globals a chat
 * template gets (range, namespace, dict, raise_exception, strftime_now, loop.cycle). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jinja/internal.h"

static const char *const STR_METHODS[] = {"strip", "lstrip", "rstrip", "split", "rsplit", "startswith", "endswith", "upper", "lower", "title", "capitalize", "replace", "format", "find", "rfind", "index", "count", "join", "splitlines", "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper", "swapcase", "center", "ljust", "rjust", "zfill", NULL};
static const char *const DICT_METHODS[] = {"get", "items", "keys", "values", "copy", NULL};
static const char *const DICT_UNSAFE[] = {"pop", "popitem", "update", "clear", "setdefault", NULL};
static const char *const LIST_METHODS[] = {"count", "index", "copy", NULL};
static const char *const LIST_UNSAFE[] = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear", NULL};

static int in_list(const char *const *l, const char *s)
{
    for (int i = 0; l[i]; i++)
        if (!strcmp(l[i], s)) return 1;
    return 0;
}

/* getattr(obj, name) as a method, or 0 */
int jinja_method_of(J *j, jv obj, const char *name, jv *out)
{
    const char *const *ok = obj.t == T_STR ? STR_METHODS : obj.t == T_DICT ? DICT_METHODS : obj.t == T_LIST ? LIST_METHODS : NULL;
    const char *const *bad = obj.t == T_DICT ? DICT_UNSAFE : obj.t == T_LIST ? LIST_UNSAFE : NULL;
    if (ok && in_list(ok, name)) { *out = jinja_mk_func(j, F_METHOD, jinja_strdup(j, name, strlen(name)), obj); return 1; }
    if (bad && in_list(bad, name)) {
        *out = v_undef(jinja_printf(j, "access to attribute '%s' of '%s' object is unsafe.", name, jinja_type_name(obj)));
        out->xc = JE_SECURITY; /* the sandbox's unsafe_undefined */
        return 1;
    }
    return 0;
}

static jv strftime_now(J *j, jv fmt)
{
    if (fmt.t != T_STR) jinja_fail(j, JE_TYPE, "strftime_now: the format must be a string");
    time_t t;
    struct tm tm;
    const char *env = getenv("TOKENLOOP_NOW");
    if (env && *env) {
        t = (time_t)strtoll(env, NULL, 10);
        gmtime_r(&t, &tm);
    } else {
        t = time(NULL);
        localtime_r(&t, &tm);
    }
    static const char *const mon[] = {"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"};
    static const char *const day[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
    sb r;
    jinja_sb_init(&r, j);
    jstr *f = fmt.u.s;
    char buf[64];
    for (size_t i = 0; i < f->len; i++) {
        if (f->p[i] != '%' || i + 1 >= f->len) { jinja_sb_putc(&r, f->p[i]); continue; }
        char c = f->p[++i];
        switch (c) {
        case 'd': snprintf(buf, sizeof buf, "%02d", tm.tm_mday); break;
        case 'e': snprintf(buf, sizeof buf, "%2d", tm.tm_mday); break;
        case 'm': snprintf(buf, sizeof buf, "%02d", tm.tm_mon + 1); break;
        case 'Y': snprintf(buf, sizeof buf, "%d", tm.tm_year + 1900); break;
        case 'y': snprintf(buf, sizeof buf, "%02d", tm.tm_year % 100); break;
        case 'b': case 'h': snprintf(buf, sizeof buf, "%.3s", mon[tm.tm_mon]); break;
        case 'B': snprintf(buf, sizeof buf, "%s", mon[tm.tm_mon]); break;
        case 'a': snprintf(buf, sizeof buf, "%.3s", day[tm.tm_wday]); break;
        case 'A': snprintf(buf, sizeof buf, "%s", day[tm.tm_wday]); break;
        case 'H': snprintf(buf, sizeof buf, "%02d", tm.tm_hour); break;
        case 'I': snprintf(buf, sizeof buf, "%02d", tm.tm_hour % 12 ? tm.tm_hour % 12 : 12); break;
        case 'M': snprintf(buf, sizeof buf, "%02d", tm.tm_min); break;
        case 'S': snprintf(buf, sizeof buf, "%02d", tm.tm_sec); break;
        case 'p': snprintf(buf, sizeof buf, "%s", tm.tm_hour < 12 ? "AM" : "PM"); break;
        case 'j': snprintf(buf, sizeof buf, "%03d", tm.tm_yday + 1); break;
        case '%': snprintf(buf, sizeof buf, "%%"); break;
        case '-':
            if (i + 1 < f->len) {
                char d = f->p[++i];
                int x = d == 'd' ? tm.tm_mday : d == 'm' ? tm.tm_mon + 1 : d == 'H' ? tm.tm_hour : d == 'M' ? tm.tm_min : d == 'j' ? tm.tm_yday + 1 : -1;
                if (x < 0) { snprintf(buf, sizeof buf, "%%-%c", d); break; }
                snprintf(buf, sizeof buf, "%d", x);
                break;
            }
            /* fall through */
        default: {
            char one[4] = {'%', c, 0, 0};
            if (!strftime(buf, sizeof buf, one, &tm)) buf[0] = 0;
        }
        }
        jinja_sb_puts(&r, buf);
    }
    return jinja_sb_val(&r);
}

/* s.rsplit(sep, maxsplit) with maxsplit >= 0: split from the right at most `want` times. */
static jv str_rsplit(J *j, jstr *s, jv sep, long long want)
{
    if (sep.t != T_STR || !sep.u.s->len) jinja_fail(j, JE_UNSUPPORTED, "rsplit with maxsplit needs a separator");
    jstr *d = sep.u.s;
    size_t cuts[64], nc = 0, e = s->len;
    while ((long long)nc < want && nc < 64 && e >= d->len) {
        size_t k = e - d->len;
        for (;; k--) {
            if (!memcmp(s->p + k, d->p, d->len)) break;
            if (!k) { k = (size_t)-1; break; }
        }
        if (k == (size_t)-1) break;
        cuts[nc++] = k;
        e = k;
    }
    jlist *l = jinja_list_new(j, nc + 1);
    size_t start = 0;
    for (size_t c = nc; c > 0; c--) {
        jinja_list_push(j, l, jinja_v_sub(j, s, start, cuts[c - 1]));
        start = cuts[c - 1] + d->len;
    }
    jinja_list_push(j, l, jinja_v_sub(j, s, start, s->len));
    return v_list(l);
}

/* s.startswith(a0) and s.endswith(a0): a0 a str or a tuple of them. */
static jv str_affix(J *j, jstr *s, const char *name, jv a0)
{
    jlist *opts;
    if (a0.t == T_STR) { opts = jinja_list_new(j, 1); jinja_list_push(j, opts, a0); }
    else if (a0.t == T_LIST && a0.u.l->tuple) opts = a0.u.l;
    else jinja_fail(j, JE_TYPE, "%s first arg must be str or a tuple of str, not %s", name, jinja_type_name(a0));
    for (size_t i = 0; i < opts->n; i++) {
        jv o = opts->it[i];
        if (o.t != T_STR) jinja_fail(j, JE_TYPE, "tuple for %s must only contain str", name);
        if (o.u.s->len > s->len) continue;
        const char *at = name[0] == 's' ? s->p : s->p + s->len - o.u.s->len;
        if (!memcmp(at, o.u.s->p, o.u.s->len)) return v_bool(1);
    }
    return v_bool(0);
}

/* s.find, s.rfind, s.index and s.count of a0; positions count code points. */
static jv str_search(J *j, jstr *s, const char *name, jv a0)
{
    if (a0.t != T_STR) jinja_fail(j, JE_TYPE, "must be str, not %s", jinja_type_name(a0));
    jstr *n = a0.u.s;
    if (!strcmp(name, "count")) {
        if (!n->len) return v_int((long long)jinja_u8_count(s->p, s->len) + 1);
        long long c = 0;
        for (size_t i = 0; i + n->len <= s->len;)
            if (!memcmp(s->p + i, n->p, n->len)) { c++; i += n->len; }
            else i++;
        return v_int(c);
    }
    long long pos = -1;
    for (size_t i = 0; i + n->len <= s->len; i++)
        if (!memcmp(s->p + i, n->p, n->len)) {
            pos = (long long)i;
            if (name[0] != 'r') break;
        }
    if (pos < 0 && name[0] == 'i') jinja_fail(j, JE_VALUE, "substring not found");
    return v_int(pos < 0 ? -1 : (long long)jinja_u8_count(s->p, (size_t)pos));
}

/* s.join(a0): every item a str. */
static jv str_join(J *j, jstr *s, jv a0)
{
    jlist *l = jinja_iter_list(j, a0);
    sb r;
    jinja_sb_init(&r, j);
    for (size_t i = 0; i < l->n; i++) {
        if (l->it[i].t != T_STR) jinja_fail(j, JE_TYPE, "sequence item %zu: expected str instance, %s found", i, jinja_type_name(l->it[i]));
        if (i) jinja_sb_put_str(&r, s);
        jinja_sb_put_str(&r, l->it[i].u.s);
    }
    return jinja_sb_val(&r);
}

/* s.isdigit() and the other is* tests, on ASCII classes as the C library has them. */
static jv str_is(jstr *s, const char *name)
{
    if (!s->len) return v_bool(0);
    int cased = 0;
    for (size_t i = 0; i < s->len; i++) {
        unsigned char c = (unsigned char)s->p[i];
        if (!strcmp(name, "isdigit") && !isdigit(c)) return v_bool(0);
        if (!strcmp(name, "isalpha") && !isalpha(c)) return v_bool(0);
        if (!strcmp(name, "isalnum") && !isalnum(c)) return v_bool(0);
        if (!strcmp(name, "isspace") && !jinja_is_ws((char)c)) return v_bool(0);
        if (!strcmp(name, "islower") && isupper(c)) return v_bool(0);
        if (!strcmp(name, "isupper") && islower(c)) return v_bool(0);
        if (isalpha(c)) cased = 1;
    }
    return v_bool(strcmp(name, "islower") && strcmp(name, "isupper") ? 1 : cased);
}

/* s.center, s.ljust, s.rjust and s.zfill to a width in code points. */
static jv str_pad(J *j, jv self, const char *name, jargs *A)
{
    jstr *s = self.u.s;
    long long w = num_i(jinja_arg(A, 0, "width", v_int(0)));
    long long n = (long long)jinja_u8_count(s->p, s->len);
    if (w <= n) return self;
    if (w > 1 << 20) jinja_fail(j, JE_LIMIT, "width too large");
    sb r;
    jinja_sb_init(&r, j);
    long long pad = w - n, left = name[0] == 'c' ? pad / 2 + (pad & w & 1) : name[0] == 'l' ? 0 : pad;
    char fill = name[0] == 'z' ? '0' : ' ';
    for (long long i = 0; i < left; i++) jinja_sb_putc(&r, fill);
    jinja_sb_put_str(&r, s);
    for (long long i = 0; i < pad - left; i++) jinja_sb_putc(&r, fill);
    return jinja_sb_val(&r);
}

jv jinja_call_method(J *j, jv self, const char *name, jargs *A)
{
    if (self.t == T_DICT) {
        jdict *d = self.u.d;
        if (!strcmp(name, "get")) {
            jv k = jinja_arg(A, 0, "key", v_undef(NULL));
            long i = jinja_dict_find(d, k);
            return i >= 0 ? d->v[i] : jinja_arg(A, 1, "default", v_none());
        }
        if (!strcmp(name, "items")) {
            jargs none = {0};
            jv r = jinja_apply_filter(j, "items", self, &none, NULL);
            r.u.l->gen = 0;
            r.u.l->view = 'i';
            return r;
        }
        if (!strcmp(name, "keys") || !strcmp(name, "values")) {
            jlist *l = jinja_list_new(j, d->n);
            for (size_t i = 0; i < d->n; i++) jinja_list_push(j, l, name[0] == 'k' ? d->k[i] : d->v[i]);
            l->view = name[0];
            return v_list(l);
        }
        if (!strcmp(name, "copy")) {
            jdict *n = jinja_dict_new(j);
            for (size_t i = 0; i < d->n; i++) jinja_dict_set(j, n, d->k[i], d->v[i]);
            return v_dict(n);
        }
    }
    if (self.t == T_LIST) {
        jv x = jinja_arg(A, 0, "value", v_undef(NULL));
        if (!strcmp(name, "count")) {
            long long c = 0;
            for (size_t i = 0; i < self.u.l->n; i++) c += jinja_py_eq(self.u.l->it[i], x);
            return v_int(c);
        }
        if (!strcmp(name, "index")) {
            for (size_t i = 0; i < self.u.l->n; i++)
                if (jinja_py_eq(self.u.l->it[i], x)) return v_int((long long)i);
            jinja_fail(j, JE_VALUE, "value is not in list");
        }
        if (!strcmp(name, "copy")) return jinja_apply_filter(j, "list", self, &(jargs){0}, NULL);
    }
    if (self.t == T_STR) {
        jstr *s = self.u.s;
        jv a0 = jinja_arg(A, 0, "", v_none());
        if (!strcmp(name, "strip") || !strcmp(name, "lstrip") || !strcmp(name, "rstrip")) {
            if (a0.t != T_NONE && a0.t != T_STR) jinja_fail(j, JE_TYPE, "%s arg must be None or str", name);
            return jinja_str_strip(j, self, a0.t == T_STR ? a0.u.s : NULL, name[0] == 's' ? 3 : name[0] == 'l' ? 1 : 2);
        }
        if (!strcmp(name, "split") || !strcmp(name, "rsplit")) {
            jv sep = jinja_arg(A, 0, "sep", v_none());
            jv ms = jinja_arg(A, 1, "maxsplit", v_int(-1));
            if (name[0] == 'r' && num_i(ms) >= 0) return str_rsplit(j, s, sep, num_i(ms));
            return jinja_str_split(j, s, sep, num_i(ms));
        }
        if (!strcmp(name, "startswith") || !strcmp(name, "endswith")) return str_affix(j, s, name, a0);
        if (!strcmp(name, "upper") || !strcmp(name, "lower")) return jinja_str_lower_upper(j, self, name[0] == 'u');
        if (!strcmp(name, "title")) return jinja_str_title(j, s, 0);
        if (!strcmp(name, "capitalize")) return jinja_apply_filter(j, "capitalize", self, &(jargs){0}, NULL);
        if (!strcmp(name, "swapcase")) {
            jv r = jinja_v_sub(j, s, 0, s->len);
            char *p = (char *)r.u.s->p;
            for (size_t i = 0; i < s->len; i++)
                p[i] = (char)(isupper((unsigned char)p[i]) ? tolower((unsigned char)p[i]) : toupper((unsigned char)p[i]));
            return r;
        }
        if (!strcmp(name, "replace")) {
            jv o = jinja_arg(A, 0, "old", v_undef(NULL)), n = jinja_arg(A, 1, "new", v_undef(NULL));
            if (o.t != T_STR || n.t != T_STR) jinja_fail(j, JE_TYPE, "replace() arguments must be str");
            return jinja_str_replace(j, s, o.u.s, n.u.s, num_i(jinja_arg(A, 2, "count", v_int(-1))));
        }
        if (!strcmp(name, "format")) {
            sb r;
            jinja_sb_init(&r, j);
            jinja_put_format(j, &r, s, A);
            return jinja_sb_val(&r);
        }
        if (!strcmp(name, "find") || !strcmp(name, "rfind") || !strcmp(name, "index") || !strcmp(name, "count"))
            return str_search(j, s, name, a0);
        if (!strcmp(name, "join")) return str_join(j, s, a0);
        if (!strcmp(name, "splitlines")) return v_list(jinja_str_splitlines(j, s, jinja_truthy(jinja_arg(A, 0, "keepends", v_bool(0)))));
        if (!strncmp(name, "is", 2)) return str_is(s, name);
        if (!strcmp(name, "center") || !strcmp(name, "ljust") || !strcmp(name, "rjust") || !strcmp(name, "zfill"))
            return str_pad(j, self, name, A);
    }
    jinja_fail(j, JE_ATTRIBUTE, "'%s' object has no method '%s'", jinja_type_name(self), name);
}

/* the globals transformers and Jinja2 give a chat template */
static const char *const BUILTINS[] = {"range", "namespace", "raise_exception", "strftime_now", "dict", NULL};

int jinja_global_of(J *j, const char *name, jv *out)
{
    for (int i = 0; BUILTINS[i]; i++)
        if (!strcmp(BUILTINS[i], name)) { *out = jinja_mk_func(j, F_BUILTIN, BUILTINS[i], v_none()); return 1; }
    return 0;
}

jv jinja_call_global(J *j, jfunc *fn, jargs *A)
{
    const char *name = fn->name;
    if (!strcmp(name, "raise_exception")) {
        jv m = jinja_to_str(j, jinja_arg(A, 0, "message", jinja_v_str(j, "", 0)));
        jinja_raise(j, m.u.s->p, m.u.s->len);
    }
    if (!strcmp(name, "strftime_now")) return strftime_now(j, jinja_arg(A, 0, "format", v_undef(NULL)));
    if (!strcmp(name, "range")) {
        long long a = 0, b, s = 1;
        for (int i = 0; i < A->n; i++)
            if (A->a[i].t != T_INT && A->a[i].t != T_BOOL) jinja_fail(j, JE_TYPE, "'%s' object cannot be interpreted as an integer", jinja_type_name(A->a[i]));
        if (A->n == 1) b = num_i(A->a[0]);
        else if (A->n >= 2) { a = num_i(A->a[0]); b = num_i(A->a[1]); if (A->n > 2) s = num_i(A->a[2]); }
        else jinja_fail(j, JE_TYPE, "range expected at least 1 argument, got 0");
        if (!s) jinja_fail(j, JE_VALUE, "range() arg 3 must not be zero");
        long long cnt = s > 0 ? (b > a ? (b - a + s - 1) / s : 0) : (a > b ? (a - b - s - 1) / -s : 0);
        if (cnt > 100000) jinja_fail(j, JE_OVERFLOW, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
        jlist *l = jinja_list_new(j, (size_t)cnt + 1);
        for (long long i = 0; i < cnt; i++) jinja_list_push(j, l, v_int(a + i * s));
        return v_list(l);
    }
    if (!strcmp(name, "namespace") || !strcmp(name, "dict")) {
        jdict *d = jinja_dict_new(j);
        if (A->n == 1 && A->a[0].t == T_DICT)
            for (size_t i = 0; i < A->a[0].u.d->n; i++) jinja_dict_set(j, d, A->a[0].u.d->k[i], A->a[0].u.d->v[i]);
        else if (A->n) jinja_fail(j, JE_TYPE, "%s() takes keyword arguments", name);
        for (int i = 0; i < A->nk; i++) jinja_dict_set_s(j, d, A->kn[i], A->kv[i]);
        jv v = v_dict(d);
        if (name[0] == 'n') v.t = T_NS;
        return v;
    }
    if (!strcmp(name, "cycle")) {
        if (!A->n) jinja_fail(j, JE_TYPE, "no items for cycling given");
        return A->a[num_i(fn->self.u.d->v[1]) % A->n]; /* self: the loop; v[1]: index0 */
    }
    jinja_fail(j, JE_TYPE, "'%s' is not callable", name);
}
