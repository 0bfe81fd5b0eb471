/* A small JSON reader for tokenizer.json: one flat array of nodes, strings unescaped in place in
 * the caller's buffer (so they are NUL-terminated C strings living in it). cJSON's node-per-malloc
 * tree made loading the 9 MB Llama 3 file several times slower. Internal to core/tok*.c. */
#ifndef TOKENLOOP_TOK_JSON_H
#define TOKENLOOP_TOK_JSON_H

#include <stddef.h>
#include <stdint.h>

enum { TJ_NONE = -1, TJ_NULL, TJ_FALSE, TJ_TRUE, TJ_NUM, TJ_STR, TJ_ARR, TJ_OBJ };

typedef struct {
    int8_t type;
    int32_t next;      /* next sibling, -1 at the end */
    const char *key;   /* member name inside an object, else NULL */
    union {
        double num;
        struct {
            const char *s;
            uint32_t len;
        } str;
        struct {
            int32_t first;
            uint32_t count;
        } kids;
    } u;
} tj_node;

typedef struct {
    tj_node *nodes;
    size_t n, cap;
} tj_doc;

typedef int32_t tj;  /* node index; -1: none */

/* Parses text[0, len) (text[len] must be writable) and rewrites strings in it. Returns 0, or -1 with
 * *err_off set to the byte offset of the problem and *why to a short reason. */
int tj_parse(tj_doc *d, char *text, size_t len, size_t *err_off, const char **why);
void tj_free(tj_doc *d);

static inline int tj_type(const tj_doc *d, tj i) { return i >= 0 ? d->nodes[i].type : TJ_NONE; }
static inline const char *tj_str(const tj_doc *d, tj i) { return tj_type(d, i) == TJ_STR ? d->nodes[i].u.str.s : NULL; }
static inline size_t tj_len(const tj_doc *d, tj i) { return tj_type(d, i) == TJ_STR ? d->nodes[i].u.str.len : 0; }
static inline double tj_num(const tj_doc *d, tj i) { return tj_type(d, i) == TJ_NUM ? d->nodes[i].u.num : 0; }
static inline const char *tj_key(const tj_doc *d, tj i) { return i >= 0 ? d->nodes[i].key : NULL; }
static inline tj tj_first(const tj_doc *d, tj i)
{
    int t = tj_type(d, i);
    return (t == TJ_ARR || t == TJ_OBJ) ? d->nodes[i].u.kids.first : -1;
}
static inline tj tj_next(const tj_doc *d, tj i) { return i >= 0 ? d->nodes[i].next : -1; }
static inline size_t tj_count(const tj_doc *d, tj i)
{
    int t = tj_type(d, i);
    return (t == TJ_ARR || t == TJ_OBJ) ? d->nodes[i].u.kids.count : 0;
}
tj tj_get(const tj_doc *d, tj obj, const char *key);  /* first member of that name; -1 if none */
tj tj_item(const tj_doc *d, tj arr, size_t k);        /* k-th element; -1 if none */

#define TJ_FOR(d, c, parent) for (tj c = tj_first((d), (parent)); c >= 0; c = tj_next((d), c))

#endif
