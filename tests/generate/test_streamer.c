/* The streamer against transformers' TextStreamer algorithm run in Python on the same pieces
 * (streamer_goldens.json, made by tools/streamer-goldens/make_goldens.py), and the server mode
 * against hand-worked cases. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tl_test.h"
#include "tokenloop/streamer.h"

typedef struct table {
    char *bytes[64];
    size_t len[64];
    int special[64];
    int n;
} table;

static const char *table_bytes(void *ctx, int id, size_t *len, int *special)
{
    table *t = ctx;
    if (id < 0 || id >= t->n) return NULL;
    *len = t->len[id];
    *special = t->special[id];
    return t->bytes[id];
}

static void unhex(const char *h, char **out, size_t *len)
{
    size_t n = strlen(h) / 2;
    *out = malloc(n + 1);
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(h + 2 * i, "%2x", &v);
        (*out)[i] = (char)v;
    }
    *len = n;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
    s[n] = 0;
    fclose(f);
    return s;
}

static void run_golden(const cJSON *c)
{
    const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
    table t = {0};
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(c, "pieces")) {
        unhex(p->valuestring, &t.bytes[t.n], &t.len[t.n]);
        t.n++;
    }
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(c, "special")) t.special[p->valueint] = 1;
    tl_streamer_opts o = {
        .mode = TL_STREAM_HF,
        .skip_prompt = cJSON_IsTrue(cJSON_GetObjectItem(c, "skip_prompt")),
        .skip_special_tokens = cJSON_IsTrue(cJSON_GetObjectItem(c, "skip_special_tokens")),
        .clean_up_spaces = cJSON_IsTrue(cJSON_GetObjectItem(c, "clean_up_spaces")),
    };
    tl_streamer *s = tl_streamer_create((tl_piece_source){&t, table_bytes}, &o);
    const cJSON *chunks = cJSON_GetObjectItem(c, "chunks");
    int k = 0, prompt[64], np = 0;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(c, "prompt_ids")) prompt[np++] = p->valueint;
    char all[4096] = "";
    for (int step = 0; step < cJSON_GetArraySize(chunks); step++) {
        const cJSON *want = cJSON_GetArrayItem(chunks, step);
        int rc;
        if (step == 0) rc = tl_streamer_put(s, prompt, np);
        else if (step == cJSON_GetArraySize(chunks) - 1) rc = tl_streamer_end(s);
        else {
            int id = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "generated_ids"), step - 1)->valueint;
            rc = tl_streamer_put(s, &id, 1);
        }
        TL_CHECK_INT(rc, 0);
        const char *got = tl_streamer_printed(s, NULL), *held = tl_streamer_held(s, NULL);
        const char *wp = cJSON_GetObjectItem(want, "printed")->valuestring;
        const char *wh = cJSON_GetObjectItem(want, "held")->valuestring;
        TL_CHECK_MSG(!strcmp(got, wp), "%s step %d printed \"%s\" want \"%s\"", name, step, got, wp);
        TL_CHECK_MSG(!strcmp(held, wh), "%s step %d held \"%s\" want \"%s\"", name, step, held, wh);
        /* a held buffer always has a reason, an empty one none */
        TL_CHECK_MSG((tl_streamer_hold_reason(s) != 0) == (held[0] != 0), "%s step %d reason %d", name, step,
                     tl_streamer_hold_reason(s));
        if (strstr(held, "\xEF\xBF\xBD") && held[strlen(held) - 1] == '\xBD' && step != 0 &&
            strcmp(name, "invalid_byte_mid") && !strstr(name, "invalid_byte_mid"))
            TL_CHECK_MSG(tl_streamer_hold_reason(s) & TL_HOLD_INCOMPLETE_UTF8, "%s step %d", name, step);
        strncat(all, wp, sizeof all - strlen(all) - 1);
        k++;
    }
    size_t olen;
    TL_CHECK_STR(tl_streamer_output(s, &olen), all);
    tl_streamer_free(s);
    for (int i = 0; i < t.n; i++) free(t.bytes[i]);
}

static table mk(const char *const *pieces, int n)
{
    table t = {0};
    for (int i = 0; i < n; i++) {
        t.bytes[i] = strdup(pieces[i]);
        t.len[i] = strlen(pieces[i]);
        t.special[i] = !strcmp(pieces[i], "<|eot_id|>");
    }
    t.n = n;
    return t;
}

static void free_table(table *t)
{
    for (int i = 0; i < t->n; i++) free(t->bytes[i]);
}

static void server_mode(void)
{
    /* ids: 0 prompt, 1 " Hel", 2 "lo", 3 " caf", 4 "\xc3", 5 "\xa9", 6 " END", 7 "ING", 8 " E", 9 "N" */
    const char *pieces[] = {"Q", " Hel", "lo", " caf", "\xc3", "\xa9", " END", "ING", " E", "N", "<|eot_id|>"};
    table t = mk(pieces, 11);
    const char *stop[] = {"END"};
    tl_streamer_opts o = {.mode = TL_STREAM_SERVER, .skip_prompt = 1, .skip_special_tokens = 1,
                          .stop = stop, .n_stop = 1};
    tl_streamer *s = tl_streamer_create((tl_piece_source){&t, table_bytes}, &o);
    int id = 0;
    tl_streamer_put(s, &id, 1);
    TL_CHECK_STR(tl_streamer_printed(s, NULL), "");
    id = 1; tl_streamer_put(s, &id, 1);
    TL_CHECK_STR(tl_streamer_printed(s, NULL), " Hel");       /* no word hold-back */
    TL_CHECK_INT(tl_streamer_hold_reason(s), 0);
    id = 3; tl_streamer_put(s, &id, 1);
    TL_CHECK_STR(tl_streamer_printed(s, NULL), " caf");
    id = 4; tl_streamer_put(s, &id, 1);
    TL_CHECK_STR(tl_streamer_printed(s, NULL), "");
    TL_CHECK_STR(tl_streamer_held(s, NULL), "\xEF\xBF\xBD");
    TL_CHECK_INT(tl_streamer_hold_reason(s), TL_HOLD_INCOMPLETE_UTF8);
    id = 5; tl_streamer_put(s, &id, 1);
    TL_CHECK_STR(tl_streamer_printed(s, NULL), "\xC3\xA9");
    id = 8; tl_streamer_put(s, &id, 1);                          /* " E": could become END */
    TL_CHECK_STR(tl_streamer_printed(s, NULL), " ");
    TL_CHECK_STR(tl_streamer_held(s, NULL), "E");
    TL_CHECK_INT(tl_streamer_hold_reason(s), TL_HOLD_STOP_PREFIX);
    id = 9; tl_streamer_put(s, &id, 1);                          /* "EN" */
    TL_CHECK_STR(tl_streamer_printed(s, NULL), "");
    TL_CHECK_STR(tl_streamer_held(s, NULL), "EN");
    id = 2; tl_streamer_put(s, &id, 1);                          /* "ENlo": no longer a prefix */
    TL_CHECK_STR(tl_streamer_printed(s, NULL), "ENlo");
    id = 6; tl_streamer_put(s, &id, 1);                          /* " END": the stop string */
    TL_CHECK_STR(tl_streamer_printed(s, NULL), " ");
    id = 7; tl_streamer_put(s, &id, 1);                          /* nothing after it prints */
    TL_CHECK_STR(tl_streamer_printed(s, NULL), "");
    tl_streamer_end(s);
    TL_CHECK_STR(tl_streamer_printed(s, NULL), "");
    TL_CHECK_STR(tl_streamer_output(s, NULL), " Hel caf\xC3\xA9 ENlo ");
    tl_streamer_free(s);

    /* end() flushes an unfinished tail as U+FFFD, as a decode with errors="replace" would */
    s = tl_streamer_create((tl_piece_source){&t, table_bytes}, &o);
    id = 0; tl_streamer_put(s, &id, 1);
    int ids[] = {3, 4};
    tl_streamer_put(s, ids, 2);
    TL_CHECK_STR(tl_streamer_printed(s, NULL), " caf");
    id = 10; tl_streamer_put(s, &id, 1);                         /* special token skipped */
    tl_streamer_end(s);
    TL_CHECK_STR(tl_streamer_printed(s, NULL), "\xEF\xBF\xBD");
    tl_streamer_free(s);
    free_table(&t);
}

static void utf8_helpers(void)
{
    size_t n, chars;
    char *d = tl_utf8_decode_replace("a\xE1\xBB", 3, &n, &chars);   /* truncated 3-byte: one U+FFFD */
    TL_CHECK_STR(d, "a\xEF\xBF\xBD");
    TL_CHECK_INT(chars, 2);
    free(d);
    d = tl_utf8_decode_replace("\xE1\x41\xC0\xAF", 4, &n, &chars); /* bad continuation; C0 always invalid */
    TL_CHECK_STR(d, "\xEF\xBF\xBD" "A" "\xEF\xBF\xBD\xEF\xBF\xBD");
    TL_CHECK_INT(chars, 4);
    free(d);
    d = tl_utf8_decode_replace("\xED\xA0\x80", 3, &n, &chars);      /* a surrogate: 3 replacements */
    TL_CHECK_INT(chars, 3);
    free(d);
    TL_CHECK_INT(tl_utf8_incomplete_tail("ab\xF0\x9F\x91", 5), 3);
    TL_CHECK_INT(tl_utf8_incomplete_tail("ab\xF0\x9F\x91\xA8", 6), 0);
    TL_CHECK_INT(tl_utf8_incomplete_tail("ab\xC3", 3), 1);
    TL_CHECK_INT(tl_utf8_incomplete_tail("ab\xA9", 3), 0);
    TL_CHECK_INT(tl_utf8_incomplete_tail("\xE0\x80", 2), 0);           /* never valid */
    TL_CHECK(tl_is_chinese_char(0x4F60));
    TL_CHECK(!tl_is_chinese_char(0xFF0C));                             /* fullwidth comma */
    TL_CHECK(!tl_is_chinese_char(0x3042));                             /* hiragana */
}

/* Python's str.replace of each clean-up pattern in turn, written out: the reference for random
 * texts, with and without the patterns (the streamer skips the ten passes when none occurs). */
static char *py_clean_up(const char *t)
{
    static const char *pat[][2] = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
        {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
    };
    char *cur = strdup(t);
    for (size_t k = 0; k < sizeof pat / sizeof pat[0]; k++) {
        char *out = malloc(strlen(cur) + 1), *o = out;
        for (const char *q = cur; *q;) {
            if (!strncmp(q, pat[k][0], strlen(pat[k][0]))) {
                o += sprintf(o, "%s", pat[k][1]);
                q += strlen(pat[k][0]);
            } else {
                *o++ = *q++;
            }
        }
        *o = 0;
        free(cur);
        cur = out;
    }
    return cur;
}

static void clean_up_random(void)
{
    static const char *frag[] = {" ", ".", "?", "!", ",", "'", " '", "n't", " n", "t", "m", "s", "ve", "re",
                                 "a", "b", "\xc3\xa9", "x y", "\n"};
    const int nf = (int)(sizeof frag / sizeof frag[0]);
    uint64_t r = 12345;
    int with = 0, without = 0;
    for (int c = 0; c < 3000; c++) {
        const char *pieces[24];
        int n = 1 + (int)((r >> 33) % 24);
        char text[24 * 4 + 1] = "";
        for (int i = 0; i < n; i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            /* half the texts from letters and spaces only: no pattern, the fast path */
            int f = c % 2 ? (int)((r >> 33) % (uint64_t)nf) : (int[]){0, 8, 9, 10, 14, 15, 17}[(r >> 33) % 7];
            pieces[i] = frag[f];
            strcat(text, frag[f]);
        }
        table t = mk(pieces, n);
        tl_piece_source src = {.bytes = table_bytes, .ctx = &t};
        int ids[24];
        for (int i = 0; i < n; i++) ids[i] = i;
        char *got = tl_streamer_decode(src, ids, n, 0, 1, NULL), *want = py_clean_up(text);
        TL_CHECK_MSG(got && !strcmp(got, want), "clean-up of \"%s\": \"%s\", want \"%s\"", text, got ? got : "(null)", want);
        if (strcmp(text, want)) with++;
        else without++;
        free(got);
        free(want);
        free_table(&t);
    }
    TL_CHECK(with > 300 && without > 300);   /* both paths taken */
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "streamer_goldens.json";
    char *src = slurp(path);
    TL_CHECK_MSG(src != NULL, "%s: cannot read", path);
    cJSON *j = src ? cJSON_Parse(src) : NULL;
    const cJSON *c;
    int n = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "cases")) {
        run_golden(c);
        n++;
    }
    TL_CHECK(n >= 20);
    cJSON_Delete(j);
    free(src);
    server_mode();
    utf8_helpers();
    clean_up_random();
    return TL_TEST_END("generate_streamer");
}
