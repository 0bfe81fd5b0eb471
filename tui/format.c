/* Pure text helpers: widths, fitting, numbers. See format.h. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#include "format.h"

#include "i18n.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

int Format_utf8Next(const char *str, size_t len, int32_t *cp)
{
    const unsigned char *s = (const unsigned char *)str;
    if (len == 0) {
        *cp = -1;
        return 0;
    }
    unsigned c = s[0];
    int n;
    int32_t v, min;
    if (c < 0x80) {
        *cp = (int32_t)c;
        return 1;
    } else if ((c & 0xE0) == 0xC0) {
        n = 2, v = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        n = 3, v = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        n = 4, v = c & 0x07, min = 0x10000;
    } else {
        *cp = -1;
        return 1;
    }
    if ((size_t)n > len) {
        *cp = -1;
        return 1;
    }
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *cp = -1;
            return 1;
        }
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        *cp = -1;
        return 1;
    }
    *cp = v;
    return n;
}

int Format_cpWidth(int32_t cp)
{
    if (cp < 0)
        return 1;
    if (cp < 0x20 || cp == 0x7F)
        return 1;
    int w = wcwidth((wchar_t)cp);
    if (w < 0)
        return 1;
    return w;
}

int Format_width(const char *s, size_t len)
{
    int w = 0;
    size_t i = 0;
    while (i < len) {
        int32_t cp;
        i += (size_t)Format_utf8Next(s + i, len - i, &cp);
        w += Format_cpWidth(cp);
    }
    return w;
}

int Format_widthz(const char *s)
{
    return s ? Format_width(s, strlen(s)) : 0;
}

/* The longest prefix of whole characters at most cols wide and max_bytes long: its bytes, and
 * its width in *used. */
static size_t prefix_within(const char *s, size_t len, int cols, size_t max_bytes, int *used)
{
    size_t i = 0;
    int w = 0;
    while (i < len) {
        int32_t cp;
        int n = Format_utf8Next(s + i, len - i, &cp);
        int cw = Format_cpWidth(cp);
        if (w + cw > cols || i + (size_t)n > max_bytes)
            break;
        w += cw;
        i += (size_t)n;
    }
    *used = w;
    return i;
}

size_t Format_prefixFitting(const char *s, size_t len, int cols, int *used)
{
    int w;
    size_t i = prefix_within(s, len, cols, len, &w);
    if (i == 0 && len > 0 && cols > 0) {  /* a character wider than the space: take it anyway */
        int32_t cp;
        i = (size_t)Format_utf8Next(s, len, &cp);
        w = Format_cpWidth(cp);
    }
    if (used)
        *used = w;
    return i;
}

int Format_fit(const char *s, size_t len, int cols, int ellipsis, char *out, size_t outsz)
{
    if (outsz == 0)
        return 0;
    out[0] = 0;
    if (cols <= 0)
        return 0;
    int total = Format_width(s, len);
    int budget = cols;
    int trunc = total > cols;
    if (trunc && ellipsis)
        budget = cols - 1;
    int w;
    size_t o = prefix_within(s, len, budget, outsz - 1, &w);
    memcpy(out, s, o);
    if (trunc && ellipsis && o + 4 <= outsz) {
        memcpy(out + o, "\xE2\x80\xA6", 3);  /* … */
        o += 3;
        w += 1;
    }
    out[o] = 0;
    return w;
}

size_t Format_pad(const char *s, int cols, int align, char *out, size_t outsz)
{
    if (outsz == 0)
        return 0;
    char tmp[1024];
    int w = Format_fit(s, strlen(s), cols, 1, tmp, sizeof tmp);
    size_t tl = strlen(tmp);
    int padn = cols > w ? cols - w : 0;
    size_t o = 0;
    if (align > 0)
        for (; padn > 0 && o + 1 < outsz; padn--)
            out[o++] = ' ';
    if (o + tl + 1 > outsz)
        tl = outsz - 1 - o;
    memcpy(out + o, tmp, tl);
    o += tl;
    for (; padn > 0 && o + 1 < outsz; padn--)
        out[o++] = ' ';
    out[o] = 0;
    return o;
}

static size_t put(char *out, size_t outsz, size_t o, const char *s, size_t n)
{
    if (o < outsz) {
        size_t room = outsz - 1 - o;
        memcpy(out + o, s, n < room ? n : room);
    }
    return o + n;
}

size_t Format_visible(const char *s, size_t len, char *out, size_t outsz)
{
    size_t o = 0, i = 0;
    while (i < len) {
        int32_t cp;
        int n = Format_utf8Next(s + i, len - i, &cp);
        if (cp == ' ')
            o = put(out, outsz, o, "\xE2\x90\xA3", 3);      /* ␣ */
        else if (cp == '\n')
            o = put(out, outsz, o, "\xE2\x86\xB5", 3);      /* ↵ */
        else if (cp == '\t')
            o = put(out, outsz, o, "\xE2\x86\x92", 3);      /* → */
        else if (cp == '\r')
            o = put(out, outsz, o, "\xE2\x90\x8D", 3);      /* ␍ */
        else if (cp < 0 || cp < 0x20 || cp == 0x7F) {
            char hex[8];
            snprintf(hex, sizeof hex, "<0x%02X>", (unsigned char)s[i]);
            o = put(out, outsz, o, hex, 6);
        } else
            o = put(out, outsz, o, s + i, (size_t)n);
        i += (size_t)n;
    }
    if (outsz)
        out[o < outsz ? o : outsz - 1] = 0;
    /* never leave half a character at a truncation point */
    if (o >= outsz && outsz) {
        size_t end = outsz - 1;
        size_t k = end;
        while (k > 0 && ((unsigned char)out[k - 1] & 0xC0) == 0x80)
            k--;
        if (k > 0 && ((unsigned char)out[k - 1] & 0xC0) == 0xC0) {
            int32_t cp;
            if ((size_t)Format_utf8Next(out + k - 1, end - (k - 1), &cp) != end - (k - 1) || cp < 0)
                out[k - 1] = 0;
        }
    }
    return o;
}

void Format_ms(double ms, char *out, size_t outsz)
{
    if (!(ms >= 0) || isinf(ms))
        snprintf(out, outsz, "\xE2\x80\x94");
    else if (ms < 10)
        snprintf(out, outsz, "%.2f ms", ms);
    else if (ms < 1000)
        snprintf(out, outsz, "%.1f ms", ms);
    else
        snprintf(out, outsz, "%.2f s", ms / 1000);
}

void Format_prob(double p, char *out, size_t outsz)
{
    double pc = p * 100;
    if (!(p >= 0))
        snprintf(out, outsz, "\xE2\x80\x94");
    else if (p == 0)
        snprintf(out, outsz, "0%%");
    else if (pc < 0.01)
        snprintf(out, outsz, "<0.01%%");
    else if (pc >= 99.95 && p < 1)
        snprintf(out, outsz, ">99.9%%");
    else if (p >= 1)
        snprintf(out, outsz, "100%%");
    else if (pc < 1)
        snprintf(out, outsz, "%.2f%%", pc);
    else
        snprintf(out, outsz, "%.1f%%", pc);
}

void Format_bytes(double b, char *out, size_t outsz)
{
    static const char *unit[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (b >= 999.95 && u < 4) {
        b /= 1000;
        u++;
    }
    if (u == 0)
        snprintf(out, outsz, "%.0f B", b);
    else
        snprintf(out, outsz, "%.*f %s", b < 9.995 ? 2 : b < 99.95 ? 1 : 0, b, unit[u]);
}

void Format_count(long long n, char *out, size_t outsz)
{
    char digits[32];
    int neg = n < 0;
    unsigned long long v = neg ? 0ULL - (unsigned long long)n : (unsigned long long)n;
    snprintf(digits, sizeof digits, "%llu", v);
    size_t nd = strlen(digits), o = 0;
    char buf[48];
    if (neg)
        buf[o++] = '-';
    for (size_t i = 0; i < nd; i++) {
        if (i && (nd - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = 0;
    snprintf(out, outsz, "%s", buf);
}

void Format_logit(double x, char *out, size_t outsz)
{
    if (isinf(x))
        snprintf(out, outsz, x < 0 ? "-inf" : "inf");
    else if (isnan(x))
        snprintf(out, outsz, "nan");
    else
        snprintf(out, outsz, "%.2f", x);
}

/* A special token literal starting at s[i] ("<|" name "|>", no spaces): its length, else 0. */
static size_t special_at(const char *s, size_t len, size_t i)
{
    if (i + 1 >= len || s[i] != '<' || s[i + 1] != '|')
        return 0;
    for (size_t j = i + 2; j + 1 < len && j < i + 64; j++) {
        if (s[j] == ' ' || s[j] == '\n' || s[j] == '<')
            return 0;
        if (s[j] == '|' && s[j + 1] == '>')
            return j + 2 - i;
    }
    return 0;
}

size_t Format_wrap(const char *s, size_t len, int cols, int *used)
{
    size_t i = 0, brk = 0;       /* brk: the last place the line may end (0: none yet) */
    int w = 0, wbrk = 0;
    size_t special_end = 0;      /* inside a special token until here */
    if (cols < 1)
        cols = 1;
    while (i < len && s[i] != '\n') {
        if (i >= special_end) {
            size_t k = special_at(s, len, i);
            if (k) {
                if (i > 0)
                    brk = i, wbrk = w;   /* before a special token */
                special_end = i + k;
            }
        }
        int32_t cp;
        int n = Format_utf8Next(s + i, len - i, &cp);
        int cw = Format_cpWidth(cp);
        if (w + cw > cols) {
            if (cp == ' ') {   /* a space at the edge: it ends this line, undrawn */
                i++;
                if (used)
                    *used = w;
                return i;
            }
            if (brk > 0) {
                if (used)
                    *used = wbrk;
                return brk;
            }
            if (i == 0) {   /* wider than the line: take it anyway */
                if (used)
                    *used = cw;
                return (size_t)n;
            }
            break;   /* one word or token wider than the line: cut it here */
        }
        w += cw;
        i += (size_t)n;
        if (cp == ' ' || (special_end && i == special_end))
            brk = i, wbrk = w;   /* after a space, after a special token */
    }
    if (used)
        *used = w;
    return i;
}

void Format_localize(const char *lang, char *num)
{
    if (!I18n_isVi(lang))
        return;
    /* only marks between digits, so "<0.01%" becomes "<0,01%" and a unit or a dash is left alone */
    for (size_t i = 1; num[i]; i++) {
        if ((num[i] == '.' || num[i] == ',') && num[i - 1] >= '0' && num[i - 1] <= '9' && num[i + 1] >= '0' &&
            num[i + 1] <= '9')
            num[i] = num[i] == '.' ? ',' : '.';
    }
}

void Format_num(const char *lang, double x, int decimals, char *out, size_t outsz)
{
    if (outsz == 0)
        return;
    /* grouped after rounding, so 999.95 is "1,000.0"; inf and nan have no digits to group */
    char raw[400], buf[540];
    int n = snprintf(raw, sizeof raw, "%.*f", decimals, x);
    if (n < 0 || (size_t)n >= sizeof raw) {   /* wider than any screen: as printf wrote it */
        snprintf(out, outsz, "%.*f", decimals, x);
        Format_localize(lang, out);
        return;
    }
    size_t i = 0, o = 0;
    if (raw[0] == '-')
        buf[o++] = raw[i++];
    size_t nd = 0;
    while (raw[i + nd] >= '0' && raw[i + nd] <= '9')
        nd++;
    for (size_t k = 0; k < nd; k++) {
        if (k && (nd - k) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = raw[i + k];
    }
    snprintf(buf + o, sizeof buf - o, "%s", raw + i + nd);
    snprintf(out, outsz, "%s", buf);
    Format_localize(lang, out);
}

void Format_msLang(const char *lang, double ms, char *out, size_t outsz)
{
    Format_ms(ms, out, outsz);
    Format_localize(lang, out);
}

void Format_probLang(const char *lang, double p, char *out, size_t outsz)
{
    Format_prob(p, out, outsz);
    Format_localize(lang, out);
}

void Format_bytesLang(const char *lang, double bytes, char *out, size_t outsz)
{
    Format_bytes(bytes, out, outsz);
    Format_localize(lang, out);
}

void Format_countLang(const char *lang, long long n, char *out, size_t outsz)
{
    Format_count(n, out, outsz);
    Format_localize(lang, out);
}

void Format_logitLang(const char *lang, double x, char *out, size_t outsz)
{
    Format_logit(x, out, outsz);
    Format_localize(lang, out);
}

void Format_device(const char *device, const char *kernels, int with_kernels, char *out, size_t outsz)
{
    int add = with_kernels && kernels && kernels[0] && strcmp(kernels, device);
    snprintf(out, outsz, "%s%s%s", device, add ? " " : "", add ? kernels : "");
}
