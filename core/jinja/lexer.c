/* The lexer: template text to tokens, with Jinja2's whitespace control (trim_blocks,
 * lstrip_blocks, '-' and '+'), comments, raw blocks and string escapes. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/internal.h"

/* the error's one line; near: quote the token's text after the message */
TL_NORETURN static void perr(P *p, int cls, const tok *t, int near, const char *msg)
{
    if (t && t->t != K_EOF && near) {
        int n = (int)(t->n > 40 ? 40 : t->n);
        while (n > 0 && (size_t)n < t->n && ((unsigned char)t->s[n] & 0xC0) == 0x80)
            n--;   /* do not cut a character in two */
        char txt[48];
        int k = 0;
        for (int i = 0; i < n; i++)
            txt[k++] = t->s[i] == '\n' ? ' ' : t->s[i];
        txt[k] = 0;
        tl_error_set(p->j.err, "template:%d:%d: %s: %s near '%s'", t->line, t->col, jinja_error_names[cls], msg, txt);
    } else if (t && t->t == K_EOF && near)
        tl_error_set(p->j.err, "template:%d:%d: %s: %s at the end of the template", t->line, t->col, jinja_error_names[cls], msg);
    else if (t)
        tl_error_set(p->j.err, "template:%d:%d: %s: %s", t->line, t->col, jinja_error_names[cls], msg);
    else
        tl_error_set(p->j.err, "template: %s: %s", jinja_error_names[cls], msg);
    longjmp(p->j.jb, 1);
}

void jinja_pfail(P *p, int cls, const tok *t, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    perr(p, cls, t, 1, msg);
}

/* Jinja2's describe_token: a name or an operator as itself, other tokens by their kind */
static void tok_describe(const tok *t, char *out, size_t cap)
{
    static const char *const kinds[] = {
        [K_DATA] = "template data / text", [K_VBEGIN] = "begin of print statement",
        [K_VEND] = "end of print statement", [K_BBEGIN] = "begin of statement block",
        [K_BEND] = "end of statement block", [K_STR] = "string", [K_INT] = "integer",
        [K_FLOAT] = "float", [K_EOF] = "end of template",
    };
    if (t->t == K_NAME || t->t == K_OP) snprintf(out, cap, "%.*s", (int)(t->n > 40 ? 40 : t->n), t->s);
    else snprintf(out, cap, "%s", kinds[t->t]);
}

void jinja_pfail_expected(P *p, const tok *t, const char *expected)
{
    char got[48], msg[160];
    tok_describe(t, got, sizeof got);
    snprintf(msg, sizeof msg, "expected token '%s', got '%s'", expected, got);
    perr(p, JE_SYNTAX, t, 0, msg);
}

static void linecol(P *p, size_t pos, int *line, int *col)
{
    if (pos < p->lc_pos) { /* an error path looking back: count again from the start */
        p->lc_pos = 0;
        p->lc_line = 1;
        p->lc_bol = 0;
        p->lc_col = 0;
    }
    /* counting the column afresh from the line's start for every token made a long
     * one-line template quadratic (1 MB: 21 s) */
    while (p->lc_pos < pos) {
        unsigned char c = (unsigned char)p->src[p->lc_pos];
        if (c == '\n') {
            p->lc_line++;
            p->lc_bol = p->lc_pos + 1;
            p->lc_col = 0;
        } else if ((c & 0xC0) != 0x80) {
            p->lc_col++;
        }
        p->lc_pos++;
    }
    *line = p->lc_line;
    *col = (int)p->lc_col + 1;
}

static tok *emit(P *p, int t, size_t at, size_t n)
{
    if (p->ntok == p->cap) {
        /* the tokens live only until the parse ends: outside the template's arena, which
         * would keep every outgrown copy for the template's life */
        size_t cap = p->cap ? p->cap * 2 : 256;
        tok *nt = cap <= MAX_ARENA / sizeof *nt ? realloc(p->toks, cap * sizeof *nt) : NULL;
        if (!nt)
            jinja_pfail(p, JE_MEMORY, NULL, "out of memory for the tokens of the template");
        p->toks = nt;
        p->cap = cap;
    }
    tok *k = &p->toks[p->ntok++];
    memset(k, 0, sizeof *k);
    k->t = t;
    k->s = p->src + at;
    k->n = n;
    linecol(p, at, &k->line, &k->col);
    return k;
}

static jv decode_string(P *p, const char *s, size_t n, tok *t)
{
    sb b;
    jinja_sb_init(&b, &p->j);
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\' || i + 1 >= n) { jinja_sb_putc(&b, s[i]); continue; }
        char c = s[++i];
        unsigned cp;
        int digits;
        switch (c) {
        case '\n': break;
        case '\\': jinja_sb_putc(&b, '\\'); break;
        case '\'': jinja_sb_putc(&b, '\''); break;
        case '"': jinja_sb_putc(&b, '"'); break;
        case 'a': jinja_sb_putc(&b, '\a'); break;
        case 'b': jinja_sb_putc(&b, '\b'); break;
        case 'f': jinja_sb_putc(&b, '\f'); break;
        case 'n': jinja_sb_putc(&b, '\n'); break;
        case 'r': jinja_sb_putc(&b, '\r'); break;
        case 't': jinja_sb_putc(&b, '\t'); break;
        case 'v': jinja_sb_putc(&b, '\v'); break;
        case 'x': digits = 2; goto hex;
        case 'u': digits = 4; goto hex;
        case 'U': digits = 8;
        hex:
            cp = 0;
            for (int k = 0; k < digits; k++) {
                if (i + 1 >= n || !isxdigit((unsigned char)s[i + 1]))
                    jinja_pfail(p, JE_SYNTAX, t, "invalid \\%c escape in a string", c);
                char h = s[++i];
                cp = cp * 16 + (unsigned)(isdigit((unsigned char)h) ? h - '0' : (tolower((unsigned char)h) - 'a' + 10));
            }
            if (cp > 0x10FFFF) jinja_pfail(p, JE_SYNTAX, t, "invalid \\U escape in a string");
            jinja_u8_put(&b, cp);
            break;
        default:
            if (c >= '0' && c <= '7') {
                cp = (unsigned)(c - '0');
                for (int k = 0; k < 2 && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '7'; k++)
                    cp = cp * 8 + (unsigned)(s[++i] - '0');
                jinja_u8_put(&b, cp);
            } else {
                jinja_sb_putc(&b, '\\');
                jinja_sb_putc(&b, c);
            }
        }
    }
    return jinja_sb_val(&b);
}

static const char *const OPS2[] = {"//", "**", "==", "!=", ">=", "<="};
static const char OPS1[] = "+-/*%~[](){}=><.:|,;";

/* the inside of {{ }} or {% %}; returns the position after the end tag */
static size_t lex_tag(P *p, size_t pos, int block, int *line_starting)
{
    const char *s = p->src;
    size_t n = p->len;
    char stack[256];
    int sp = 0;
    for (;;) {
        pos = jinja_ws_fwd(s, pos, n);
        if (pos >= n) {
            tok t = {.t = K_EOF};
            linecol(p, n, &t.line, &t.col);
            jinja_pfail(p, JE_SYNTAX, &t, "unexpected end of template, expected '%s'", block ? "%}" : "}}");
        }
        if (!sp) {
            const char *end = block ? "%}" : "}}";
            if ((s[pos] == '-' || (block && s[pos] == '+')) && pos + 2 < n + 0 && !memcmp(s + pos + 1, end, 2)) {
                emit(p, block ? K_BEND : K_VEND, pos, 3);
                size_t e = pos + 3;
                *line_starting = 0;
                if (s[pos] == '-') {
                    e = jinja_ws_fwd(s, e, n);
                    *line_starting = e > pos + 3 && s[e - 1] == '\n';
                }
                return e;
            }
            if (pos + 1 < n && !memcmp(s + pos, end, 2)) {
                emit(p, block ? K_BEND : K_VEND, pos, 2);
                size_t e = pos + 2;
                *line_starting = 0;
                if (block && e < n && s[e] == '\n') {
                    e++;
                    *line_starting = 1;
                }
                return e;
            }
        }
        char c = s[pos];
        if (isdigit((unsigned char)c)) {
            size_t e = pos;
            int isf = 0;
            while (e < n && (isdigit((unsigned char)s[e]) || (s[e] == '_' && e + 1 < n && isdigit((unsigned char)s[e + 1])))) e++;
            if (e + 1 < n && s[e] == '.' && isdigit((unsigned char)s[e + 1]) && !(pos > 0 && s[pos - 1] == '.')) {
                isf = 1;
                e++;
                while (e < n && (isdigit((unsigned char)s[e]) || (s[e] == '_' && e + 1 < n && isdigit((unsigned char)s[e + 1])))) e++;
            }
            if (e < n && (s[e] == 'e' || s[e] == 'E') && !(pos > 0 && s[pos - 1] == '.')) {
                size_t f = e + 1;
                if (f < n && (s[f] == '+' || s[f] == '-')) f++;
                if (f < n && isdigit((unsigned char)s[f])) {
                    isf = 1;
                    e = f;
                    while (e < n && isdigit((unsigned char)s[e])) e++;
                }
            }
            char *tmp = jinja_alloc(&p->j, e - pos + 1);
            size_t k = 0;
            for (size_t i = pos; i < e; i++)
                if (s[i] != '_') tmp[k++] = s[i];
            tmp[k] = 0;
            tok *t = emit(p, isf ? K_FLOAT : K_INT, pos, e - pos);
            t->val = isf ? v_float(strtod(tmp, NULL)) : jinja_big_parse(&p->j, tmp, k);
            pos = e;
            continue;
        }
        if (isalpha((unsigned char)c) || c == '_' || (unsigned char)c >= 0x80) {
            size_t e = pos;
            while (e < n && (isalnum((unsigned char)s[e]) || s[e] == '_' || (unsigned char)s[e] >= 0x80)) e++;
            emit(p, K_NAME, pos, e - pos);
            pos = e;
            continue;
        }
        if (c == '\'' || c == '"') {
            size_t e = pos + 1;
            while (e < n && s[e] != c) {
                if (s[e] == '\\') e++;
                e++;
            }
            tok *t = emit(p, K_STR, pos, (e < n ? e + 1 : n) - pos);
            if (e >= n) jinja_pfail(p, JE_SYNTAX, t, "unexpected char %c (an unterminated string)", c);
            t->val = decode_string(p, s + pos + 1, e - pos - 1, t);
            pos = e + 1;
            continue;
        }
        size_t on = 0;
        for (size_t k = 0; k < sizeof OPS2 / sizeof OPS2[0]; k++)
            if (pos + 1 < n && !memcmp(s + pos, OPS2[k], 2)) on = 2;
        if (!on && strchr(OPS1, c) && c) on = 1;
        tok *t = emit(p, K_OP, pos, on ? on : jinja_u8_next(s, n, pos, NULL));
        if (!on) jinja_pfail(p, JE_SYNTAX, t, "unexpected char");
        if (on == 1 && (c == '(' || c == '[' || c == '{')) {
            if (sp >= (int)sizeof stack) jinja_pfail(p, JE_RECURSION, t, "brackets nested too deeply");
            stack[sp++] = c == '(' ? ')' : c == '[' ? ']' : '}';
        } else if (on == 1 && (c == ')' || c == ']' || c == '}')) {
            if (!sp) jinja_pfail(p, JE_SYNTAX, t, "unexpected '%c'", c);
            if (stack[sp - 1] != c) jinja_pfail(p, JE_SYNTAX, t, "unexpected '%c', expected '%c'", c, stack[sp - 1]);
            sp--;
        }
        pos += on;
    }
}

void jinja_lex(P *p)
{
    const char *s = p->src;
    size_t n = p->len, pos = 0;
    int line_starting = 1;
    while (pos < n) {
        size_t t = pos;
        while (t + 1 < n && !(s[t] == '{' && (s[t + 1] == '{' || s[t + 1] == '%' || s[t + 1] == '#')))
            t++;
        if (t + 1 >= n) {
            emit(p, K_DATA, pos, n - pos);
            break;
        }
        char kind = s[t + 1];
        char sign = t + 2 < n && (s[t + 2] == '-' || s[t + 2] == '+') ? s[t + 2] : 0;
        size_t text_end = t;
        if (sign == '-') {
            text_end = jinja_ws_back(s, pos, text_end);
        } else if (sign != '+' && kind != '{') {
            size_t lp = pos;
            int nl = 0;
            for (size_t i = t; i > pos; i--)
                if (s[i - 1] == '\n') { lp = i; nl = 1; break; }
            if ((nl || line_starting) && lp < t) {
                if (jinja_ws_fwd(s, lp, t) == t) text_end = lp;
            }
        }
        if (text_end > pos)
            emit(p, K_DATA, pos, text_end - pos);
        size_t after = t + 2 + (sign ? 1 : 0);
        if (kind == '#') {
            size_t i = after;
            for (; i + 1 < n; i++) {
                if ((s[i] == '+' || s[i] == '-') && i + 2 < n && s[i + 1] == '#' && s[i + 2] == '}') break;
                if (s[i] == '#' && s[i + 1] == '}') break;
            }
            if (i + 1 >= n) {
                tok *k = emit(p, K_OP, t, 2);
                jinja_pfail(p, JE_SYNTAX, k, "missing end of comment tag");
            }
            size_t e;
            line_starting = 0;
            if (s[i] == '+') e = i + 3;
            else if (s[i] == '-') {
                e = jinja_ws_fwd(s, i + 3, n);
                line_starting = e > i + 3 && s[e - 1] == '\n';
            } else {
                e = i + 2;
                if (e < n && s[e] == '\n') { e++; line_starting = 1; }
            }
            pos = e;
            continue;
        }
        if (kind == '%') { /* {% raw %} ... {% endraw %} */
            size_t i = after;
            while (i < n && jinja_is_ws(s[i])) i++;
            if (i + 3 <= n && !memcmp(s + i, "raw", 3)) {
                size_t k = i + 3;
                while (k < n && jinja_is_ws(s[k])) k++;
                int minus = k < n && s[k] == '-';
                if (k + minus + 1 < n && !memcmp(s + k + minus, "%}", 2)) {
                    k += minus + 2;
                    if (minus) k = jinja_ws_fwd(s, k, n);
                    /* find {%[-+]? endraw [-+]?%} */
                    size_t r = k;
                    for (; r + 1 < n; r++) {
                        if (s[r] != '{' || s[r + 1] != '%') continue;
                        size_t q = r + 2;
                        char rs = q < n && (s[q] == '-' || s[q] == '+') ? s[q] : 0;
                        if (rs) q++;
                        while (q < n && jinja_is_ws(s[q])) q++;
                        if (q + 6 > n || memcmp(s + q, "endraw", 6)) continue;
                        q += 6;
                        while (q < n && jinja_is_ws(s[q])) q++;
                        char es = q < n && (s[q] == '-' || s[q] == '+') ? s[q] : 0;
                        if (q + (es ? 1 : 0) + 1 >= n || memcmp(s + q + (es ? 1 : 0), "%}", 2)) continue;
                        size_t te = r;
                        if (rs == '-')
                            te = jinja_ws_back(s, k, te);
                        else if (rs != '+') {
                            size_t lp = k; int nl = 0;
                            for (size_t x = r; x > k; x--)
                                if (s[x - 1] == '\n') { lp = x; nl = 1; break; }
                            if (nl && lp < r) {
                                if (jinja_ws_fwd(s, lp, r) == r) te = lp;
                            }
                        }
                        if (te > k) emit(p, K_DATA, k, te - k);
                        size_t e = q + (es ? 1 : 0) + 2;
                        line_starting = 0;
                        if (es == '-') { e = jinja_ws_fwd(s, e, n); line_starting = s[e - 1] == '\n'; }
                        else if (!es && e < n && s[e] == '\n') { e++; line_starting = 1; }
                        pos = e;
                        break;
                    }
                    if (r + 1 >= n) {
                        tok *kt = emit(p, K_OP, t, 2);
                        jinja_pfail(p, JE_SYNTAX, kt, "missing end of raw directive");
                    }
                    continue;
                }
            }
        }
        emit(p, kind == '{' ? K_VBEGIN : K_BBEGIN, t, after - t);
        pos = lex_tag(p, after, kind == '%', &line_starting);
    }
    tok *e = emit(p, K_EOF, n, 0);
    (void)e;
}
