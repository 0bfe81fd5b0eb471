/* Integers past 64 bits, as Python's ints are unbounded (tool-call arguments such as
 * 12345678901234567890 must print as they came). A T_BIG holds its decimal digits, so printing,
 * tojson and comparing are exact and cheap; arithmetic is schoolbook on those digits. A value
 * that fits in 64 bits is always a T_INT, so the two never compare equal by accident. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/internal.h"

enum { MAX_DIGITS = 4300 }; /* Python's limit for turning an int into a string */

/* an integer as a sign and its digits (ASCII, most significant first, no leading zeros) */
typedef struct mag {
    int neg;
    const char *d;
    size_t n;
} mag;

/* buf: room for a 64-bit integer's digits */
static mag mag_of(jv v, char *buf)
{
    mag m = {0, "0", 1};
    if (v.t == T_BIG) {
        m.neg = v.u.s->p[0] == '-';
        m.d = v.u.s->p + m.neg;
        m.n = v.u.s->len - (size_t)m.neg;
        return m;
    }
    long long x = num_i(v);
    unsigned long long u = x < 0 ? 0ull - (unsigned long long)x : (unsigned long long)x;
    int k = snprintf(buf, 24, "%llu", u);
    m.neg = x < 0;
    m.d = buf;
    m.n = (size_t)k;
    return m;
}

/* digits d[0..n) with sign: a T_INT when it fits, else a T_BIG */
static jv from_digits(J *j, int neg, const char *d, size_t n)
{
    while (n > 1 && d[0] == '0') { d++; n--; }
    if (n == 1 && d[0] == '0') neg = 0;
    if (n < 19 || (n == 19 && memcmp(d, neg ? "9223372036854775808" : "9223372036854775807", 19) <= 0)) {
        unsigned long long u = 0;
        for (size_t i = 0; i < n; i++) u = u * 10 + (unsigned)(d[i] - '0');
        return v_int(neg ? (long long)(0ull - u) : (long long)u);
    }
    if (n > MAX_DIGITS)
        jinja_fail(j, JE_VALUE, "Exceeds the limit (%d digits) for integer string conversion; use "
              "sys.set_int_max_str_digits() to increase the limit", MAX_DIGITS);
    char *p = jinja_alloc(j, n + 2);
    size_t k = 0;
    if (neg) p[k++] = '-';
    memcpy(p + k, d, n);
    p[k + n] = 0;
    jstr *s = jinja_alloc(j, sizeof *s);
    s->p = p;
    s->len = k + n;
    s->nsp = 0;
    s->sp = NULL;
    jv v = {.t = T_BIG};
    v.u.s = s;
    return v;
}

jv jinja_big_parse(J *j, const char *s, size_t n)
{
    int neg = n && s[0] == '-';
    if (n && (s[0] == '-' || s[0] == '+')) { s++; n--; }
    return from_digits(j, neg, s, n);
}

jv jinja_big_from_double(J *j, double f)
{
    if (isnan(f)) jinja_fail(j, JE_VALUE, "cannot convert float NaN to integer");
    if (isinf(f)) jinja_fail(j, JE_OVERFLOW, "cannot convert float infinity to integer");
    char buf[400]; /* a double's integral part has at most 309 digits; glibc prints them exactly */
    int k = snprintf(buf, sizeof buf, "%.0f", trunc(f));
    return jinja_big_parse(j, buf, (size_t)k);
}

double jinja_big_to_double(J *j, jv v)
{
    double f = strtod(v.u.s->p, NULL);
    if (isinf(f)) jinja_fail(j, JE_OVERFLOW, "int too large to convert to float");
    return f;
}

static int mag_cmp(mag a, mag b)
{
    if (a.n != b.n) return a.n < b.n ? -1 : 1;
    int c = memcmp(a.d, b.d, a.n);
    return c < 0 ? -1 : c > 0;
}

int jinja_big_cmp(jv a, jv b)
{
    char ba[24], bb[24];
    mag x = mag_of(a, ba), y = mag_of(b, bb);
    if (x.neg != y.neg) return x.neg ? -1 : 1;
    int c = mag_cmp(x, y);
    return x.neg ? -c : c;
}

int jinja_big_cmp_float(jv a, double f)
{
    if (isnan(f)) return 2; /* unordered */
    if (isinf(f)) return f > 0 ? -1 : 1;
    char buf[400], ba[24];
    int k = snprintf(buf, sizeof buf, "%.0f", trunc(f));
    mag y = {buf[0] == '-', buf + (buf[0] == '-'), (size_t)k - (buf[0] == '-')};
    if (y.n == 1 && y.d[0] == '0') y.neg = 0;
    mag x = mag_of(a, ba);
    int c = x.neg != y.neg ? (x.neg ? -1 : 1) : (x.neg ? -mag_cmp(x, y) : mag_cmp(x, y));
    if (c) return c;
    double frac = f - trunc(f);
    return frac > 0 ? -1 : frac < 0 ? 1 : 0;
}

/* the magnitudes' sum, difference (a >= b), product, quotient and remainder; out has room */
static mag mag_add(J *j, mag a, mag b)
{
    size_t n = (a.n > b.n ? a.n : b.n) + 1;
    char *r = jinja_alloc(j, n);
    int carry = 0;
    for (size_t i = 0; i < n; i++) {
        int s = carry + (i < a.n ? a.d[a.n - 1 - i] - '0' : 0) + (i < b.n ? b.d[b.n - 1 - i] - '0' : 0);
        r[n - 1 - i] = (char)('0' + s % 10);
        carry = s / 10;
    }
    return (mag){0, r, n};
}

static mag mag_sub(J *j, mag a, mag b)
{
    char *r = jinja_alloc(j, a.n);
    int borrow = 0;
    for (size_t i = 0; i < a.n; i++) {
        int s = (a.d[a.n - 1 - i] - '0') - borrow - (i < b.n ? b.d[b.n - 1 - i] - '0' : 0);
        borrow = s < 0;
        r[a.n - 1 - i] = (char)('0' + (s + 10) % 10);
    }
    size_t k = 0;
    while (k + 1 < a.n && r[k] == '0') k++;
    return (mag){0, r + k, a.n - k};
}

static mag mag_mul(J *j, mag a, mag b)
{
    if (a.n + b.n > 2 * MAX_DIGITS + 2)
        jinja_fail(j, JE_VALUE, "Exceeds the limit (%d digits) for integer string conversion; use "
              "sys.set_int_max_str_digits() to increase the limit", MAX_DIGITS);
    size_t n = a.n + b.n;
    unsigned *acc = jinja_alloc(j, n * sizeof *acc);
    memset(acc, 0, n * sizeof *acc);
    for (size_t i = 0; i < a.n; i++)
        for (size_t k = 0; k < b.n; k++)
            acc[i + k + 1] += (unsigned)(a.d[i] - '0') * (unsigned)(b.d[k] - '0');
    char *r = jinja_alloc(j, n);
    unsigned carry = 0;
    for (size_t i = n; i-- > 0;) {
        unsigned s = acc[i] + carry;
        r[i] = (char)('0' + s % 10);
        carry = s / 10;
    }
    size_t k = 0;
    while (k + 1 < n && r[k] == '0') k++;
    return (mag){0, r + k, n - k};
}

/* r[0..n) >= b, as digits with leading zeros allowed in r */
static int ge_padded(const char *r, size_t n, mag b)
{
    size_t z = 0;
    while (z < n && r[z] == '0') z++;
    if (n - z != b.n) return n - z > b.n;
    return memcmp(r + z, b.d, b.n) >= 0;
}

/* long division, one digit at a time: each quotient digit is how often b fits (at most 9); the
 * remainder lives in one buffer of b.n + 1 digits, subtracted in place */
static void mag_divmod(J *j, mag a, mag b, mag *q, mag *rem)
{
    char *qd = jinja_alloc(j, a.n), *r = jinja_alloc(j, b.n + 1);
    size_t rn = b.n + 1;
    memset(r, '0', rn);
    for (size_t i = 0; i < a.n; i++) {
        memmove(r, r + 1, rn - 1);   /* r = r * 10 + a.d[i]; r < b, so it still fits */
        r[rn - 1] = a.d[i];
        int digit = 0;
        while (ge_padded(r, rn, b)) {
            int borrow = 0;
            for (size_t k = 0; k < rn; k++) {
                int s = (r[rn - 1 - k] - '0') - borrow - (k < b.n ? b.d[b.n - 1 - k] - '0' : 0);
                borrow = s < 0;
                r[rn - 1 - k] = (char)('0' + (s + 10) % 10);
            }
            digit++;
        }
        qd[i] = (char)('0' + digit);
    }
    size_t k = 0;
    while (k + 1 < a.n && qd[k] == '0') k++;
    *q = (mag){0, qd + k, a.n - k};
    k = 0;
    while (k + 1 < rn && r[k] == '0') k++;
    *rem = (mag){0, r + k, rn - k};
}

static int is_zero(mag m) { return m.n == 1 && m.d[0] == '0'; }

static mag add_signed(J *j, mag a, mag b)
{
    if (a.neg == b.neg) { mag r = mag_add(j, a, b); r.neg = a.neg; return r; }
    int c = mag_cmp(a, b);
    if (!c) return (mag){0, "0", 1};
    mag r = c > 0 ? mag_sub(j, a, b) : mag_sub(j, b, a);
    r.neg = c > 0 ? a.neg : b.neg;
    return r;
}

static jv to_jv(J *j, mag m) { return from_digits(j, m.neg, m.d, m.n); }

jv jinja_big_arith(J *j, int op, jv a, jv b)
{
    char ba[24], bb[24];
    mag x = mag_of(a, ba), y = mag_of(b, bb);
    switch (op) {
    case '+': return to_jv(j, add_signed(j, x, y));
    case '-': y.neg = !y.neg && !is_zero(y); return to_jv(j, add_signed(j, x, y));
    case '*': { mag r = mag_mul(j, x, y); r.neg = x.neg != y.neg; return to_jv(j, r); }
    case 'F': case '%': {
        if (is_zero(y)) jinja_fail(j, JE_ZERODIV, "integer division or modulo by zero");
        mag q, r;
        mag_divmod(j, x, y, &q, &r);
        q.neg = x.neg != y.neg;
        r.neg = x.neg;
        if (!is_zero(r) && x.neg != y.neg) { /* floor: one more, and the remainder takes b's sign */
            mag one = {0, "1", 1};
            q = mag_add(j, q, one);
            q.neg = 1;
            r = mag_sub(j, y, r);
            r.neg = y.neg;
        }
        return to_jv(j, op == 'F' ? q : r);
    }
    case 'P': {
        if (b.t == T_BIG) {
            if (is_zero(x) || (x.n == 1 && x.d[0] == '1' && !x.neg)) return to_jv(j, x);
            jinja_fail(j, JE_VALUE, "Exceeds the limit (%d digits) for integer string conversion; use "
                  "sys.set_int_max_str_digits() to increase the limit", MAX_DIGITS);
        }
        long long e = num_i(b);
        mag r = {0, "1", 1}, base = x;
        base.neg = 0;
        for (long long k = e; k > 0; k >>= 1) {   /* square and multiply */
            if (k & 1) r = mag_mul(j, r, base);
            if (k > 1) base = mag_mul(j, base, base);
        }
        r.neg = x.neg && (e & 1);
        return to_jv(j, r);
    }
    }
    jinja_fail(j, JE_RUNTIME, "internal error: big integer operator %c", op);
}
