/* What the files of the Jinja engine share: the value model, the AST, the compile and render
 * state, and the functions one file defines for another. The chat layer sees only jinja.h.
 * Everything a render allocates lives in one arena, and errors unwind with longjmp (jfail,
 * pfail), so a failing render cannot leak. */
#ifndef TOKENLOOP_JINJA_INTERNAL_H
#define TOKENLOOP_JINJA_INTERNAL_H

#include <setjmp.h>
#include <stddef.h>

#include "jinja/jinja.h"

enum {
    MAX_DEPTH = 500,                 /* nested calls/expressions/blocks */
    MAX_PARSE_DEPTH = 200,
};
static const size_t MAX_STRING = 32u << 20;        /* one string or the output */
static const size_t MAX_ARENA = 512u << 20;
static const long long MAX_ITERS = 1000000;         /* loop iterations per render */

#if defined(__GNUC__)
#define TL_NORETURN __attribute__((noreturn))
#define TL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TL_NORETURN
#define TL_PRINTF(f, a)
#endif

/* The exception class an error names, as "template:LINE: Class: message": Jinja2's own, or
 * Python's where Jinja2 lets Python's through; JE_UNSUPPORTED and JE_LIMIT for what only
 * tokenloop refuses (JE_NAMES in values.c has the words) */
enum {
    JE_UNDEFINED, JE_SYNTAX, JE_ASSERTION, JE_SECURITY, JE_RUNTIME, JE_FILTERARG, JE_TEMPLATE,
    JE_TYPE, JE_VALUE, JE_ATTRIBUTE, JE_KEY, JE_INDEX, JE_ZERODIV, JE_OVERFLOW, JE_RECURSION,
    JE_MEMORY, JE_UNICODE, JE_JSON, JE_UNSUPPORTED, JE_LIMIT, JE_PYASSERT
};
extern const char *const jinja_error_names[];

/* ---- arena (values.c) */

typedef struct ablk {
    struct ablk *next;
    size_t used, cap;
    max_align_t data[];
} ablk;

typedef struct arena {
    ablk *head;
    size_t total;
} arena;

void jinja_arena_free(arena *a);

/* ---- values */

enum { T_UNDEF, T_NONE, T_BOOL, T_INT, T_FLOAT, T_STR, T_LIST, T_DICT, T_NS, T_FUNC, T_BIG };

typedef struct jstr {
    size_t len;
    const char *p;
    size_t nsp;
    tl_span *sp;
} jstr;

struct jlist;
struct jdict;
struct jfunc;

typedef struct jv {
    int t;
    int xc; /* T_UNDEF: the exception class its use raises (JE_UNDEFINED, JE_SECURITY);
             * T_STR: 1 for markupsafe's Markup (safe, escape), which escape leaves alone */
    union {
        int b;
        long long i;
        double f;
        jstr *s; /* T_STR; T_BIG: an int past 64 bits in decimal ('-' first when negative) */
        struct jlist *l;
        struct jdict *d;
        struct jfunc *fn;
        const char *undef; /* the message of the error its use raises */
    } u;
} jv;

typedef struct jlist {
    size_t n, cap;
    jv *it;
    int tuple;
    int gen; /* a lazy filter's result: Jinja2 has a generator there */
    char view; /* 'k', 'v', 'i': dict.keys(), values(), items(): iterable, no [] (0: a list) */
    char named; /* 'g': groupby's (grouper, list), a tuple with those attributes too */
} jlist;

typedef struct jdict {
    size_t n, cap;
    jv *k, *v;
} jdict;

struct node;
struct frame;

enum { F_BUILTIN, F_METHOD, F_MACRO, F_CALLER };

typedef struct jfunc {
    int kind;
    const char *name;
    jv self;
    struct node *macro;
    struct frame *closure;
} jfunc;

typedef struct frame {
    struct frame *parent;
    jdict vars;
} frame;

/* ---- AST */

enum {
    E_CONST, E_NAME, E_ATTR, E_ITEM, E_SLICE, E_CALL, E_FILTER, E_TEST, E_BIN, E_NEG, E_POS,
    E_NOT, E_AND, E_OR, E_CMP, E_COND, E_LIST, E_TUPLE, E_DICT, E_CONCAT, E_BLOCKINPUT,
    S_TEXT, S_OUT, S_IF, S_FOR, S_SET, S_SETBLOCK, S_MACRO, S_CALLBLOCK, S_FILTERBLOCK, S_BREAK,
    S_CONTINUE, S_WITH, S_BODY
};

enum { C_EQ = 1, C_NE, C_LT, C_LE, C_GT, C_GE, C_IN, C_NOTIN }; /* E_CMP's operators */

typedef struct node {
    int k, op, line, col;
    struct node *a, *b, *c, *d, *next;
    struct node **v, **v2;
    int nv, nv2;
    const char *name, *attr;
    const char **names;
    int nnames;
    jv val;
} node;

/* ---- render state */

typedef struct J {
    arena *ar;
    jmp_buf jb;
    tl_error *err;
    int depth;
    long long iters;
    int line;
    frame *root;
    jstr *block_input;
} J;

/* a call's arguments: positional a[0..n), keyword kn[i] = kv[i] */
typedef struct jargs {
    jv *a;
    int n;
    const char **kn;
    jv *kv;
    int nk;
} jargs;

TL_PRINTF(3, 4) TL_NORETURN void jinja_fail(J *j, int cls, const char *fmt, ...);
TL_NORETURN void jinja_fail_undef(J *j, jv undef); /* the error using an undefined value raises */
TL_NORETURN void jinja_raise(J *j, const char *msg, size_t n);
void *jinja_alloc(J *j, size_t n);
char *jinja_strdup(J *j, const char *s, size_t n);
TL_PRINTF(2, 3) const char *jinja_printf(J *j, const char *fmt, ...);

static inline jv v_undef(const char *msg) { jv v = {.t = T_UNDEF, .xc = JE_UNDEFINED}; v.u.undef = msg; return v; }
static inline jv v_none(void) { jv v = {.t = T_NONE}; return v; }
static inline jv v_bool(int b) { jv v = {.t = T_BOOL}; v.u.b = !!b; return v; }
static inline jv v_int(long long i) { jv v = {.t = T_INT}; v.u.i = i; return v; }
static inline jv v_float(double f) { jv v = {.t = T_FLOAT}; v.u.f = f; return v; }
static inline jv v_list(jlist *l) { jv v = {.t = T_LIST}; v.u.l = l; return v; }
static inline jv v_dict(jdict *d) { jv v = {.t = T_DICT}; v.u.d = d; return v; }
static inline int is_num(jv v) { return v.t == T_BOOL || v.t == T_INT || v.t == T_FLOAT; }
static inline double num_f(jv v) { return v.t == T_FLOAT ? v.u.f : v.t == T_INT ? (double)v.u.i : (double)v.u.b; }
static inline long long num_i(jv v) { return v.t == T_INT ? v.u.i : v.u.b; }
static inline int is_int(jv v) { return v.t == T_INT || v.t == T_BOOL || v.t == T_BIG; }
static inline int is_seq(const jlist *l) { return !l->gen && !l->view; } /* has [] and + */
static inline const char *undef_msg(jv v) { return v.u.undef ? v.u.undef : "undefined value"; }

jv jinja_v_str(J *j, const char *s, size_t n);
jv jinja_v_cstr(J *j, const char *s);
jv jinja_mk_func(J *j, int kind, const char *name, jv self);
jlist *jinja_list_new(J *j, size_t cap);
void jinja_list_push(J *j, jlist *l, jv v);
jdict *jinja_dict_new(J *j);
long jinja_dict_find(jdict *d, jv k);
long jinja_dict_find_s(jdict *d, const char *s);
void jinja_dict_set(J *j, jdict *d, jv k, jv v);
void jinja_dict_set_s(J *j, jdict *d, const char *k, jv v);
const char *jinja_type_name(jv v);
const char *jinja_obj_repr(jv v);
int jinja_truthy(jv v);
int jinja_py_eq(jv a, jv b);
int jinja_py_cmp(J *j, jv a, jv b, const char *op);

/* ---- integers past 64 bits (bigint.c): a T_INT whenever the value fits */

jv jinja_big_parse(J *j, const char *s, size_t n);   /* [+-]digits */
jv jinja_big_from_double(J *j, double f);            /* int(f) */
double jinja_big_to_double(J *j, jv v);              /* float(v): OverflowError past a double */
int jinja_big_cmp(jv a, jv b);                       /* integers: -1, 0, 1 */
int jinja_big_cmp_float(jv a, double f);             /* -1, 0, 1; 2 when f is NaN */
jv jinja_big_arith(J *j, int op, jv a, jv b);        /* + - * // % ** of integers */

/* ---- string builder and UTF-8 (strbuf.c): a string with its provenance spans */

typedef struct sb {
    J *j;
    char *p;
    size_t len, cap;
    tl_span *sp;
    size_t nsp, spcap;
} sb;

void jinja_sb_init(sb *b, J *j);
void jinja_sb_put(sb *b, const char *s, size_t n);
void jinja_sb_puts(sb *b, const char *s);
void jinja_sb_putc(sb *b, char c);
void jinja_sb_span(sb *b, size_t start, size_t end);
void jinja_sb_put_sub(sb *b, const jstr *s, size_t a, size_t e);
void jinja_sb_put_str(sb *b, const jstr *s);
jv jinja_sb_val(sb *b);
jv jinja_v_sub(J *j, const jstr *s, size_t a, size_t e);
size_t jinja_u8_next(const char *s, size_t n, size_t i, unsigned *cp);
size_t jinja_u8_count(const char *s, size_t n);
size_t jinja_u8_offset(const char *s, size_t n, size_t ci);
void jinja_u8_put(sb *b, unsigned cp);
int jinja_py_isspace(unsigned c);
int jinja_is_ws(char c);

/* ---- Python's str(), repr() and formatting (pyfmt.c) */

void jinja_fmt_float(char *out, size_t cap, double d);
void jinja_put_str(sb *b, jv v);
void jinja_put_repr(sb *b, jv v);
void jinja_put_pformat(sb *b, jv v); /* pprint.pformat */
jv jinja_to_str(J *j, jv v);
jv jinja_py_percent(J *j, jstr *f, jv args);
void jinja_put_format(J *j, sb *r, jstr *f, jargs *A);

/* ---- Python's str methods (strings.c) */

jv jinja_str_case(J *j, jstr *s, int mode);
jv jinja_str_lower_upper(J *j, jv v, int up);
jv jinja_str_title(J *j, jstr *s, int jinja_filter);
jv jinja_str_strip(J *j, jv v, const jstr *chars, int which);
jv jinja_str_replace(J *j, jstr *s, jstr *old, jstr *new_, long long count);
jv jinja_str_split(J *j, jstr *s, jv sep, long long maxsplit);
jlist *jinja_str_splitlines(J *j, jstr *s, int keepends);

/* ---- JSON (json.c) */

jv jinja_json_parse(J *j, const char *s, int mark);
jv jinja_chat_prepare(J *j, jv messages, const char *continue_tag); /* chat_prep.c */
jv jinja_tojson(J *j, jv v, jargs *A);

/* ---- compiling (lexer.c, parser.c, scope.c) */

enum { K_DATA, K_VBEGIN, K_VEND, K_BBEGIN, K_BEND, K_NAME, K_STR, K_INT, K_FLOAT, K_OP, K_EOF };

typedef struct tok {
    int t;
    const char *s;
    size_t n;
    int line, col;
    jv val;
} tok;

typedef struct P {
    J j;
    const char *src;
    size_t len;
    tok *toks;
    size_t ntok, cap, i;
    int depth;
    size_t lc_pos; /* line/col tracking: the lexer asks in increasing order, so one pass */
    int lc_line;
    size_t lc_bol;
    size_t lc_col; /* code points from lc_bol to lc_pos */
} P;

typedef struct nvec {
    node **v;
    int n, cap;
} nvec;

TL_PRINTF(4, 5) TL_NORETURN void jinja_pfail(P *p, int cls, const tok *t, const char *fmt, ...);
TL_NORETURN void jinja_pfail_expected(P *p, const tok *t, const char *expected); /* stream.expect's */
void jinja_lex(P *p);
node *jinja_parse_body(P *p, const char *const *ends, const char *what);
void jinja_nv_push(P *p, nvec *v, node *x);
void jinja_analyze_scopes(P *p, node *body);

/* ---- rendering: operators (ops.c), tests, filters, methods and globals, the AST walk */

jv jinja_get_attr(J *j, jv obj, const char *name);
jv jinja_get_item(J *j, jv obj, jv key);
jv jinja_do_slice(J *j, jv obj, jv st, jv sp, jv se);
jlist *jinja_iter_list(J *j, jv v);
size_t jinja_py_len(J *j, jv v);
int jinja_contains(J *j, jv container, jv item);
jv jinja_arith(J *j, int op, jv a, jv b);

int jinja_apply_test(J *j, const char *name, jv v, jargs *A);
jv jinja_apply_filter(J *j, const char *name, jv v, jargs *A, frame *f);
int jinja_text_filter(J *j, const char *name, jv v, jargs *A, jv *out); /* textfilters.c; 0: not one */
void jinja_put_escaped(sb *r, const jstr *s);                          /* markupsafe.escape */
int jinja_method_of(J *j, jv obj, const char *name, jv *out);
jv jinja_call_method(J *j, jv self, const char *name, jargs *A);
int jinja_global_of(J *j, const char *name, jv *out);
jv jinja_call_global(J *j, jfunc *fn, jargs *A);

jv jinja_arg(jargs *A, int pos, const char *name, jv def);
int jinja_has_arg(jargs *A, int pos, const char *name);
frame *jinja_frame_new(J *j, frame *parent);
void jinja_bind_undef_start(J *j, frame *f, const node *body);
int jinja_exec(J *j, node *n, frame *f, sb *out);

#endif
