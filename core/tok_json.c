/* JSON (RFC 8259) into a flat node array; see tok_json.h. */
#include "tok_json.h"

#include <stdlib.h>
#include <string.h>

#define TJ_MAX_DEPTH 256

typedef struct {
    tj_doc *d;
    char *p, *end;
    const char *why;
    char *at;
} parser;

static tj new_node(parser *ps, int type)
{
    tj_doc *d = ps->d;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 4096;
        tj_node *v = realloc(d->nodes, cap * sizeof *v);
        if (!v) {
            ps->why = "out of memory";
            return -1;
        }
        d->nodes = v;
        d->cap = cap;
    }
    tj i = (tj)d->n++;
    tj_node *n = &d->nodes[i];
    n->type = (int8_t)type;
    n->next = -1;
    n->key = NULL;
    return i;
}

static int fail(parser *ps, char *at, const char *why)
{
    ps->at = at;
    ps->why = why;
    return -1;
}

static void skip_ws(parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t'))
        ps->p++;
}

static int hex4(const char *s, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

/* At the opening quote: unescapes in place, NUL-terminates, leaves p after the closing quote. */
static int parse_string(parser *ps, const char **s, uint32_t *len)
{
    char *r = ++ps->p, *w = r;
    for (;;) {
        /* fast path: runs without escapes */
        while (r < ps->end && *r != '"' && *r != '\\' && (unsigned char)*r >= 0x20)
            *w++ = *r++;
        if (r >= ps->end)
            return fail(ps, r, "unterminated string");
        if (*r == '"')
            break;
        if ((unsigned char)*r < 0x20)
            return fail(ps, r, "control character in string");
        if (r + 1 >= ps->end)
            return fail(ps, r, "unterminated string");
        char e = r[1];
        r += 2;
        switch (e) {
        case '"': *w++ = '"'; break;
        case '\\': *w++ = '\\'; break;
        case '/': *w++ = '/'; break;
        case 'b': *w++ = '\b'; break;
        case 'f': *w++ = '\f'; break;
        case 'n': *w++ = '\n'; break;
        case 'r': *w++ = '\r'; break;
        case 't': *w++ = '\t'; break;
        case 'u': {
            unsigned cp;
            if (ps->end - r < 4 || hex4(r, &cp))
                return fail(ps, r - 2, "bad \\u escape");
            r += 4;
            if (cp >= 0xd800 && cp <= 0xdbff) {
                unsigned lo;
                if (ps->end - r < 6 || r[0] != '\\' || r[1] != 'u' || hex4(r + 2, &lo) || lo < 0xdc00 || lo > 0xdfff)
                    return fail(ps, r - 6, "unpaired surrogate in \\u escape");
                r += 6;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            } else if (cp >= 0xdc00 && cp <= 0xdfff)
                return fail(ps, r - 6, "unpaired surrogate in \\u escape");
            /* the escape took 6 or 12 bytes; UTF-8 needs at most 4: it fits behind r */
            if (cp < 0x80)
                *w++ = (char)cp;
            else if (cp < 0x800) {
                *w++ = (char)(0xc0 | (cp >> 6));
                *w++ = (char)(0x80 | (cp & 0x3f));
            } else if (cp < 0x10000) {
                *w++ = (char)(0xe0 | (cp >> 12));
                *w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
                *w++ = (char)(0x80 | (cp & 0x3f));
            } else {
                *w++ = (char)(0xf0 | (cp >> 18));
                *w++ = (char)(0x80 | ((cp >> 12) & 0x3f));
                *w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
                *w++ = (char)(0x80 | (cp & 0x3f));
            }
            break;
        }
        default:
            return fail(ps, r - 2, "bad escape in string");
        }
    }
    *len = (uint32_t)(w - (ps->p));
    *s = ps->p;
    *w = 0;  /* w <= r, and r is at the closing quote */
    ps->p = r + 1;
    return 0;
}

static int parse_number(parser *ps, double *out)
{
    char *s = ps->p, *q = s;
    int neg = 0;
    if (q < ps->end && *q == '-') {
        neg = 1;
        q++;
    }
    if (q >= ps->end || *q < '0' || *q > '9')
        return fail(ps, s, "bad value");
    double v = 0;
    if (*q == '0')
        q++;
    else
        while (q < ps->end && *q >= '0' && *q <= '9')
            v = v * 10 + (*q++ - '0');
    if (q < ps->end && *q == '.') {
        q++;
        if (q >= ps->end || *q < '0' || *q > '9')
            return fail(ps, q, "bad number");
        double scale = 0.1;
        while (q < ps->end && *q >= '0' && *q <= '9') {
            v += (*q++ - '0') * scale;
            scale *= 0.1;
        }
    }
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        q++;
        int eneg = 0, ex = 0;
        if (q < ps->end && (*q == '+' || *q == '-'))
            eneg = *q++ == '-';
        if (q >= ps->end || *q < '0' || *q > '9')
            return fail(ps, q, "bad number");
        while (q < ps->end && *q >= '0' && *q <= '9') {
            if (ex < 10000)
                ex = ex * 10 + (*q - '0');
            q++;
        }
        double f = 1;
        for (int i = 0; i < ex && f < 1e308; i++)
            f *= 10;
        v = eneg ? v / f : v * f;
    }
    *out = neg ? -v : v;
    ps->p = q;
    return 0;
}

static tj parse_value(parser *ps, int depth);

static tj parse_container(parser *ps, int depth, int obj)
{
    tj self = new_node(ps, obj ? TJ_OBJ : TJ_ARR);
    if (self < 0)
        return -1;
    ps->p++;
    tj last = -1;
    uint32_t count = 0;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
        ps->p++;
        ps->d->nodes[self].u.kids.first = -1;
        ps->d->nodes[self].u.kids.count = 0;
        return self;
    }
    for (;;) {
        const char *key = NULL;
        if (obj) {
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != '"')
                return fail(ps, ps->p, "expected a member name"), -1;
            uint32_t kl;
            if (parse_string(ps, &key, &kl))
                return -1;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':')
                return fail(ps, ps->p, "expected ':'"), -1;
            ps->p++;
        }
        tj child = parse_value(ps, depth + 1);
        if (child < 0)
            return -1;
        ps->d->nodes[child].key = key;
        if (last >= 0)
            ps->d->nodes[last].next = child;
        else
            ps->d->nodes[self].u.kids.first = child;
        last = child;
        count++;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
            ps->p++;
            break;
        }
        return fail(ps, ps->p, obj ? "expected ',' or '}'" : "expected ',' or ']'"), -1;
    }
    ps->d->nodes[self].u.kids.count = count;
    return self;
}

static tj parse_value(parser *ps, int depth)
{
    if (depth > TJ_MAX_DEPTH)
        return fail(ps, ps->p, "nested too deeply"), -1;
    skip_ws(ps);
    if (ps->p >= ps->end)
        return fail(ps, ps->p, "unexpected end"), -1;
    char c = *ps->p;
    if (c == '{' || c == '[')
        return parse_container(ps, depth, c == '{');
    if (c == '"') {
        tj i = new_node(ps, TJ_STR);
        if (i < 0)
            return -1;
        const char *s;
        uint32_t len;
        if (parse_string(ps, &s, &len))
            return -1;
        ps->d->nodes[i].u.str.s = s;
        ps->d->nodes[i].u.str.len = len;
        return i;
    }
    static const struct {
        const char *word;
        int type;
    } words[] = {{"null", TJ_NULL}, {"true", TJ_TRUE}, {"false", TJ_FALSE}};
    for (int k = 0; k < 3; k++) {
        size_t l = strlen(words[k].word);
        if ((size_t)(ps->end - ps->p) >= l && !memcmp(ps->p, words[k].word, l)) {
            ps->p += l;
            return new_node(ps, words[k].type);
        }
    }
    double v;
    if (parse_number(ps, &v))
        return -1;
    tj i = new_node(ps, TJ_NUM);
    if (i >= 0)
        ps->d->nodes[i].u.num = v;
    return i;
}

int tj_parse(tj_doc *d, char *text, size_t len, size_t *err_off, const char **why)
{
    memset(d, 0, sizeof *d);
    /* every value but the first follows a ',' or opens a container: reserve that many nodes */
    size_t est = 16;
    for (size_t i = 0; i < len; i++)
        est += text[i] == ',' || text[i] == '[' || text[i] == '{';
    d->nodes = malloc(est * sizeof *d->nodes);
    d->cap = d->nodes ? est : 0;
    parser ps = {d, text, text + len, NULL, NULL};
    tj root = parse_value(&ps, 0);
    if (root >= 0) {
        skip_ws(&ps);
        if (ps.p != ps.end) {
            fail(&ps, ps.p, "text after the value");
            root = -1;
        }
    }
    if (root < 0) {
        *err_off = (size_t)((ps.at ? ps.at : ps.p) - text);
        *why = ps.why ? ps.why : "malformed";
        tj_free(d);
        return -1;
    }
    return 0;
}

void tj_free(tj_doc *d)
{
    free(d->nodes);
    memset(d, 0, sizeof *d);
}

tj tj_get(const tj_doc *d, tj obj, const char *key)
{
    if (tj_type(d, obj) != TJ_OBJ)
        return -1;
    TJ_FOR(d, c, obj)
        if (!strcmp(d->nodes[c].key, key))
            return c;
    return -1;
}

tj tj_item(const tj_doc *d, tj arr, size_t k)
{
    if (tj_type(d, arr) != TJ_ARR)
        return -1;
    TJ_FOR(d, c, arr)
        if (k-- == 0)
            return c;
    return -1;
}
