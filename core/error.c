#include "tokenloop/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Messages quote what they refuse (a token, a template's text, a field name), and that text can
 * hold any byte. A newline would break the one-line form, an ESC would reach the terminal, so
 * control characters (C0, DEL and C1 as UTF-8) are written as \n, \t or \xNN, \u0080. */
static void escape_controls(char *msg, size_t cap, const char *src)
{
    size_t k = 0;
    for (const unsigned char *s = (const unsigned char *)src; *s && k + 1 < cap; s++) {
        char esc[8];
        const char *put = NULL;
        if (*s == '\n') put = "\\n";
        else if (*s == '\t') put = "\\t";
        else if (*s < 0x20 || *s == 0x7f) {
            snprintf(esc, sizeof esc, "\\x%02x", *s);
            put = esc;
        } else if (*s == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f) {
            snprintf(esc, sizeof esc, "\\u%04x", s[1]);
            put = esc;
            s++;
        }
        if (!put) {
            msg[k++] = (char)*s;
            continue;
        }
        size_t n = strlen(put);
        if (k + n + 1 > cap) break;
        memcpy(msg + k, put, n);
        k += n;
    }
    msg[k] = 0;
}

int tl_error_set(tl_error *err, const char *fmt, ...)
{
    if (err) {
        char raw[sizeof err->msg];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(raw, sizeof raw, fmt, ap);
        va_end(ap);
        escape_controls(err->msg, sizeof err->msg, raw);
    }
    return -1;
}
