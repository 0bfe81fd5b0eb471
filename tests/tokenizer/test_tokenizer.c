/* Tokenizer behaviour: small hand-made tokenizer.json files (merge ranks and forms, ignore_merges,
 * Split behaviours as Hugging Face documents them), bad files, and the Llama 3 tokenizer's
 * lookups, display form, decoding with an unfinished UTF-8 tail and edge inputs.
 * usage: test_tokenizer LLAMA3_TOKENIZER_DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tl_test.h"
#include "tokenloop/tokenizer.h"

static char dir[] = "/tmp/tl_tok_test_XXXXXX";

static void write_file(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void remove_file(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
}

/* GPT-2's byte -> character table, spelled as UTF-8 (JSON-safe: no quote or backslash escapes
 * needed except for '"' and '\\', which are escaped). */
static void byte_char(int b, char *out)
{
    int printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
    int cp = b;
    if (!printable) {
        int extra = 0;
        for (int k = 0; k < b; k++)
            if (!((k >= 0x21 && k <= 0x7e) || (k >= 0xa1 && k <= 0xac) || k >= 0xae))
                extra++;
        cp = 0x100 + extra;
    }
    if (cp == '"' || cp == '\\')
        sprintf(out, "\\%c", cp);
    else if (cp < 0x80)
        sprintf(out, "%c", cp);
    else
        sprintf(out, "%c%c", 0xc0 | (cp >> 6), 0x80 | (cp & 0x3f));
}

/* A byte-level BPE tokenizer.json: the 256 byte tokens (ids 0..255), then `extra` tokens (ids from
 * 256, comma-separated JSON strings), the merges, the pre_tokenizer and ignore_merges. */
static void make_tokenizer(const char *extra, const char *merges, const char *pre, int ignore_merges)
{
    static char buf[65536];
    size_t o = 0;
    o += (size_t)sprintf(buf + o, "{\"version\":\"1.0\",\"added_tokens\":[{\"id\":%d,\"content\":\"<|end|>\","
                                  "\"special\":true}],\"normalizer\":null,\"pre_tokenizer\":%s,"
                                  "\"post_processor\":null,\"decoder\":{\"type\":\"ByteLevel\"},"
                                  "\"model\":{\"type\":\"BPE\",\"ignore_merges\":%s,\"vocab\":{",
                         1000, pre, ignore_merges ? "true" : "false");
    for (int b = 0; b < 256; b++) {
        char c[8];
        byte_char(b, c);
        o += (size_t)sprintf(buf + o, "%s\"%s\":%d", b ? "," : "", c, b);
    }
    int id = 256;
    const char *p = extra;
    while (p && *p) {
        const char *end = strchr(p, ',');
        size_t l = end ? (size_t)(end - p) : strlen(p);
        o += (size_t)sprintf(buf + o, ",\"%.*s\":%d", (int)l, p, id++);
        p = end ? end + 1 : NULL;
    }
    o += (size_t)sprintf(buf + o, "},\"merges\":[%s]}}", merges);
    write_file("tokenizer.json", buf);
}

static tl_tokenizer *load_here(void)
{
    tl_tokenizer *tok = NULL;
    tl_error err = {{0}};
    if (tl_tokenizer_load(&tok, dir, &err))
        fprintf(stderr, "load: %s\n", err.msg);
    return tok;
}

/* The pieces of encode(text), joined by '|'. */
static const char *pieces(tl_tokenizer *tok, const char *text, int flags)
{
    static char out[4096];
    out[0] = 0;
    int *ids, n;
    tl_error err = {{0}};
    if (!tok || tl_tokenizer_encode(tok, text, strlen(text), flags, &ids, &n, &err))
        return "(error)";
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        size_t l;
        const char *p = tl_tokenizer_piece(tok, ids[i], &l);
        o += (size_t)snprintf(out + o, sizeof out - o, "%s%.*s", i ? "|" : "", (int)l, p);
    }
    free(ids);
    return out;
}

static const char *SPLIT_NONE = "null";

static void test_merges(void)
{
    /* ranks decide, not length: "b c" outranks "a b" */
    make_tokenizer("bc,ab,abc", "\"b c\",\"a b\"", SPLIT_NONE, 0);
    tl_tokenizer *tok = load_here();
    TL_CHECK_STR(pieces(tok, "abc", 0), "a|bc");
    TL_CHECK_STR(pieces(tok, "ab", 0), "ab");
    tl_tokenizer_free(tok);
    /* the same merges as ["a", "b"] pairs */
    make_tokenizer("bc,ab,abc", "[\"b\",\"c\"],[\"a\",\"b\"]", SPLIT_NONE, 0);
    tok = load_here();
    TL_CHECK_STR(pieces(tok, "abc", 0), "a|bc");
    tl_tokenizer_free(tok);
    /* leftmost pair first on equal rank; merges chain */
    make_tokenizer("aa,aaaa", "\"a a\",\"aa aa\"", SPLIT_NONE, 0);
    tok = load_here();
    TL_CHECK_STR(pieces(tok, "aaaaa", 0), "aaaa|a");
    TL_CHECK_STR(pieces(tok, "aaa", 0), "aa|a");
    tl_tokenizer_free(tok);
    /* ignore_merges: a pre-token that is a token stays whole whatever the merges say */
    make_tokenizer("ab,abc,abcd", "\"a b\",\"ab c\"", SPLIT_NONE, 1);
    tok = load_here();
    TL_CHECK_STR(pieces(tok, "abcd", 0), "abcd");
    tl_tokenizer_free(tok);
    make_tokenizer("ab,abc,abcd", "\"a b\",\"ab c\"", SPLIT_NONE, 0);
    tok = load_here();
    TL_CHECK_STR(pieces(tok, "abcd", 0), "abc|d");
    /* the added token is matched before BPE, or is plain text on request */
    TL_CHECK_STR(pieces(tok, "ab<|end|>c", 0), "ab|<|end|>|c");
    TL_CHECK_STR(pieces(tok, "<|end|>", TL_TOK_NO_PARSE_SPECIAL), "<|||e|n|d|||>");
    tl_tokenizer_free(tok);
}

/* Hugging Face's documentation of Split/SplitDelimiterBehavior: "the-final--countdown" split on
 * "-". ignore_merges with every expected piece in the vocabulary shows the pre-tokens as tokens. */
static void test_split_behaviors(void)
{
    static const struct {
        const char *behavior, *want;
    } cases[] = {
        {"Removed", "the|final|countdown"},
        {"Isolated", "the|-|final|-|-|countdown"},
        {"MergedWithPrevious", "the-|final-|-|countdown"},
        {"MergedWithNext", "the|-final|-|-countdown"},
        {"Contiguous", "the|-|final|--|countdown"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char pre[256];
        snprintf(pre, sizeof pre, "{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},\"behavior\":\"%s\",\"invert\":false}",
                 cases[i].behavior);
        make_tokenizer("the,final,countdown,--,the-,final-,-final,-countdown", "", pre, 1);
        tl_tokenizer *tok = load_here();
        const char *got = pieces(tok, "the-final--countdown", 0);
        TL_CHECK_MSG(!strcmp(got, cases[i].want), "%s: %s, want %s", cases[i].behavior, got, cases[i].want);
        tl_tokenizer_free(tok);
    }
    /* a regex Split with invert: the matches are the pieces kept apart from the rest */
    make_tokenizer("ab,cd", "", "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"[a-z]+\"},\"behavior\":\"Removed\",\"invert\":true}", 1);
    tl_tokenizer *tok = load_here();
    TL_CHECK_STR(pieces(tok, "ab cd", 0), "ab|cd");
    tl_tokenizer_free(tok);
}

static void expect_load_error(const char *what, const char *needle)
{
    tl_tokenizer *tok = NULL;
    tl_error err = {{0}};
    int rc = tl_tokenizer_load(&tok, dir, &err);
    TL_CHECK_MSG(rc != 0 && tok == NULL, "%s: loaded", what);
    TL_CHECK_MSG(strstr(err.msg, needle) != NULL && !strchr(err.msg, '\n'), "%s: message \"%s\" lacks \"%s\"", what,
                 err.msg, needle);
    tl_tokenizer_free(tok);
}

static void test_bad_files(void)
{
    remove_file("tokenizer.json");
    expect_load_error("missing file", "tokenizer.json: cannot open: No such file");
    write_file("tokenizer.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0,");
    expect_load_error("truncated JSON", "malformed JSON");
    write_file("tokenizer.json", "[1, 2, 3]");
    expect_load_error("not an object", "not a JSON object");
    write_file("tokenizer.json", "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"a\": 0}}}");
    expect_load_error("WordPiece", "model type 'WordPiece' is not supported");
    write_file("tokenizer.json", "{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", 0.0]]}}");
    expect_load_error("Unigram", "model type 'Unigram' is not supported");
    write_file("tokenizer.json", "{\"version\": \"1.0\"}");
    expect_load_error("no model", "no 'model' object");
    write_file("tokenizer.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -4}, \"merges\": []}}");
    expect_load_error("negative id", "no valid id");
    make_tokenizer("ab", "\"a b c\"", SPLIT_NONE, 0);
    expect_load_error("merge of three", "is not two tokens");
    make_tokenizer("ab", "\"a q\\u00e9\"", SPLIT_NONE, 0);
    expect_load_error("merge of an unknown token", "not in the vocabulary");
    make_tokenizer("ab", "\"a c\"", SPLIT_NONE, 0);
    expect_load_error("merge result not in the vocabulary", "not in the vocabulary");
    make_tokenizer("ab", "\"a b\"", "{\"type\":\"Metaspace\",\"replacement\":\"_\"}", 0);
    expect_load_error("Metaspace", "pre_tokenizer type 'Metaspace' is not supported");
    make_tokenizer("ab", "\"a b\"", "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(a\"},\"behavior\":\"Isolated\"}", 0);
    expect_load_error("bad regex", "pre-tokenizer regex");
    make_tokenizer("ab", "\"a b\"", "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"a\"},\"behavior\":\"Sideways\"}", 0);
    expect_load_error("bad behaviour", "Split behavior 'Sideways'");
    write_file("tokenizer.json", "{\"normalizer\": {\"type\": \"Lowercase\"}, \"model\": {\"type\": \"BPE\", "
                                 "\"vocab\": {\"a\": 0}, \"merges\": []}}");
    expect_load_error("Lowercase normalizer", "normalizer 'Lowercase' is not supported");
    make_tokenizer("ab", "\"a b\"", SPLIT_NONE, 0);
    write_file("tokenizer_config.json", "{\"bos_token\": ");
    expect_load_error("malformed tokenizer_config.json", "tokenizer_config.json");
    write_file("tokenizer_config.json", "{\"bos_token\": {\"content\": \"<|end|>\"}, \"eos_token\": \"<|end|>\"}");
    tl_tokenizer *tok = load_here();
    TL_CHECK(tok != NULL);
    if (tok) {
        TL_CHECK_INT(tl_tokenizer_bos(tok), 1000);
        TL_CHECK_INT(tl_tokenizer_eos(tok), 1000);
        TL_CHECK_STR(tl_tokenizer_bos_token(tok), "<|end|>");
        TL_CHECK_INT(tl_tokenizer_vocab_size(tok), 1001);
        TL_CHECK(tl_tokenizer_piece(tok, 500, NULL) == NULL);  /* a hole in the ids */
        tl_tokenizer_free(tok);
    }
    remove_file("tokenizer_config.json");
    remove_file("tokenizer.json");
}

/* The JSON reader: escapes as serde_json writes them, and malformed or hostile files. */
static void test_json(void)
{
    static const char head[] = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"\\u0041\": 0, \"\\u0120x\": 1, \"\\ud83e\\udd17\": 2,"
                               " \"q\\\"\\\\\\/\": 3}, \"merges\": []}, \"decoder\": {\"type\": \"ByteLevel\"}, "
                               "\"added_tokens\": [{\"id\": 4, \"content\": \"<\\u00e9\\t>\", \"special\": true}]}";
    write_file("tokenizer.json", head);
    tl_tokenizer *tok = load_here();
    TL_CHECK(tok != NULL);
    if (tok) {
        TL_CHECK_INT(tl_tokenizer_find(tok, "A"), 0);
        TL_CHECK_INT(tl_tokenizer_find(tok, "\xc4\xa0x"), 1);
        TL_CHECK_INT(tl_tokenizer_find(tok, "\xf0\x9f\xa4\x97"), 2);
        TL_CHECK_INT(tl_tokenizer_find(tok, "q\"\\/"), 3);
        TL_CHECK_INT(tl_tokenizer_find(tok, "<\xc3\xa9\t>"), 4);
        size_t l;
        const char *p = tl_tokenizer_piece(tok, 1, &l);  /* Ġ is the byte-level spelling of a space */
        TL_CHECK(p && l == 2 && !memcmp(p, " x", 2));
        tl_tokenizer_free(tok);
    }
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"", "malformed JSON at byte 0"},
        {"{\"model\": {\"type\": \"BPE\"} } x", "text after the value"},
        {"{\"a\": \"\\ud83e\"}", "unpaired surrogate"},
        {"{\"a\": \"\\q\"}", "bad escape"},
        {"{\"a\": \"\\u12\"}", "bad \\u escape"},
        {"{\"a\": \"line\nbreak\"}", "control character"},
        {"{\"a\" 1}", "expected ':'"},
        {"{\"a\": [1, 2}", "expected ',' or ']'"},
        {"{\"a\": tru}", "bad value"},
        {"{\"a\": 1.}", "bad number"},
        {"{\"a\": \"open", "unterminated string"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_file("tokenizer.json", bad[i].text);
        expect_load_error(bad[i].text, bad[i].needle);
    }
    /* 100000 nested arrays: an error, not a stack overflow */
    size_t depth = 100000;
    char *deep = malloc(depth + 1);
    if (deep) {
        memset(deep, '[', depth);
        deep[depth] = 0;
        write_file("tokenizer.json", deep);
        expect_load_error("deep nesting", "nested too deeply");
        free(deep);
    }
    remove_file("tokenizer.json");
}

static int encode_ids(tl_tokenizer *tok, const char *text, int flags, int **ids)
{
    int n = -1;
    tl_error err = {{0}};
    if (tl_tokenizer_encode(tok, text, strlen(text), flags, ids, &n, &err)) {
        fprintf(stderr, "encode: %s\n", err.msg);
        *ids = NULL;
        return -1;
    }
    return n;
}

static void test_llama3(const char *tokdir)
{
    tl_tokenizer *tok;
    tl_error err = {{0}};
    if (tl_tokenizer_load(&tok, tokdir, &err)) {
        TL_CHECK_MSG(0, "%s", err.msg);
        return;
    }
    TL_CHECK_INT(tl_tokenizer_vocab_size(tok), 128256);
    int bot = tl_tokenizer_find(tok, "<|begin_of_text|>"), eot = tl_tokenizer_find(tok, "<|eot_id|>");
    TL_CHECK(bot >= 0 && eot >= 0 && bot != eot);
    TL_CHECK_INT(tl_tokenizer_bos(tok), bot);
    TL_CHECK_INT(tl_tokenizer_eos(tok), eot);  /* 3.1 Instruct: eos_token is <|eot_id|> */
    TL_CHECK_STR(tl_tokenizer_bos_token(tok), "<|begin_of_text|>");
    TL_CHECK_STR(tl_tokenizer_eos_token(tok), "<|eot_id|>");
    TL_CHECK(tl_tokenizer_is_special(tok, eot));
    TL_CHECK(tl_tokenizer_find(tok, "<|python_tag|>") >= 0);  /* the 3.1 names */
    TL_CHECK(tl_tokenizer_find(tok, "<|eom_id|>") >= 0);
    TL_CHECK_INT(tl_tokenizer_find(tok, "<|no such token|>"), -1);
    TL_CHECK(tl_tokenizer_piece(tok, -1, NULL) == NULL && tl_tokenizer_piece(tok, 128256, NULL) == NULL);

    int *ids, n;
    /* " Hello" is one token whose HF string is "ĠHello" and whose bytes are " Hello" */
    n = encode_ids(tok, " Hello", 0, &ids);
    TL_CHECK_INT(n, 1);
    if (n == 1) {
        TL_CHECK_STR(tl_tokenizer_token(tok, ids[0]), "\xc4\xa0Hello");
        TL_CHECK_INT(tl_tokenizer_find(tok, "\xc4\xa0Hello"), ids[0]);
        TL_CHECK(!tl_tokenizer_is_special(tok, ids[0]));
        char buf[64];
        TL_CHECK_INT(tl_tokenizer_display(tok, ids[0], buf, sizeof buf), strlen("\xe2\x90\xa3Hello"));
        TL_CHECK_STR(buf, "\xe2\x90\xa3Hello");
        char small[4];  /* truncated like snprintf, still terminated */
        TL_CHECK_INT(tl_tokenizer_display(tok, ids[0], small, sizeof small), 8);
        TL_CHECK(strlen(small) == 3);
    }
    free(ids);

    /* display: newline, tab, CR markers; a special token as its text */
    static const struct {
        const char *text, *want;
    } disp[] = {{"\n", "\xe2\x86\xb5"}, {"\t", "\xe2\x86\x92"}, {"\r", "\xe2\x90\x8d"}, {"<|eot_id|>", "<|eot_id|>"},
                {"\x01", "<0x01>"}};
    for (size_t i = 0; i < sizeof disp / sizeof *disp; i++) {
        n = encode_ids(tok, disp[i].text, 0, &ids);
        TL_CHECK_INT(n, 1);
        if (n == 1) {
            char buf[64];
            tl_tokenizer_display(tok, ids[0], buf, sizeof buf);
            TL_CHECK_STR(buf, disp[i].want);
        }
        free(ids);
    }

    /* "🤗" (F0 9F A4 97) takes several tokens: decoding a prefix reports the unfinished tail */
    n = encode_ids(tok, " \xf0\x9f\xa4\x97", 0, &ids);
    TL_CHECK(n >= 2);
    int finished = 0;
    for (int k = 0; k <= n && n > 0; k++) {
        char *text;
        size_t len;
        int tail = -1;
        TL_CHECK(tl_tokenizer_decode(tok, ids, k, &text, &len, &tail, &err) == 0);
        size_t bytes = 0;
        for (int i = 0; i < k; i++) {
            size_t l;
            tl_tokenizer_piece(tok, ids[i], &l);
            bytes += l;
        }
        /* bytes past the space belong to the emoji: shown only when all four are there */
        size_t emoji = bytes > 1 ? bytes - 1 : 0;
        size_t want_tail = emoji == 4 ? 0 : emoji;
        TL_CHECK_MSG((size_t)tail == want_tail && len == bytes - want_tail && len == strlen(text),
                     "prefix of %d tokens: tail %d len %zu", k, tail, len);
        if (k == n)
            finished = !strcmp(text, " \xf0\x9f\xa4\x97");
        free(text);
    }
    TL_CHECK(finished);
    /* a lone emoji byte piece displays as <0xNN> */
    if (n >= 2) {
        char buf[64];
        tl_tokenizer_display(tok, ids[n - 1], buf, sizeof buf);
        TL_CHECK_MSG(!strncmp(buf, "<0x", 3), "display of a continuation byte: %s", buf);
    }
    free(ids);
    int bad_id = 128256;
    char *text = NULL;
    TL_CHECK(tl_tokenizer_decode(tok, &bad_id, 1, &text, NULL, NULL, &err) != 0 && text == NULL);
    TL_CHECK(strstr(err.msg, "128256") != NULL);

    /* special tokens: parsed by default, plain text on request; BOS only when asked */
    n = encode_ids(tok, "a<|eot_id|>b", 0, &ids);
    TL_CHECK(n == 3 && ids[1] == eot);
    free(ids);
    n = encode_ids(tok, "a<|eot_id|>b", TL_TOK_NO_PARSE_SPECIAL, &ids);
    int any_special = 0;
    for (int i = 0; i < n; i++)
        any_special |= tl_tokenizer_is_special(tok, ids[i]);
    TL_CHECK(n > 3 && !any_special);
    free(ids);
    n = encode_ids(tok, "Hi", TL_TOK_ADD_BOS, &ids);
    TL_CHECK(n == 2 && ids[0] == bot);
    free(ids);
    n = encode_ids(tok, "", TL_TOK_ADD_BOS, &ids);
    TL_CHECK(n == 1 && ids[0] == bot);
    free(ids);
    n = encode_ids(tok, "", 0, &ids);
    TL_CHECK(n == 0 && ids != NULL);
    free(ids);

    /* not UTF-8: an error naming the byte */
    static const char *bad[] = {"ok\xff", "\xc3", "a\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ids = NULL;
        TL_CHECK(tl_tokenizer_encode(tok, bad[i], strlen(bad[i]), 0, &ids, &n, &err) != 0 && ids == NULL);
        TL_CHECK(strstr(err.msg, "not valid UTF-8 at byte") != NULL);
    }
    /* embedded NUL is text like any other */
    n = -1;
    TL_CHECK(tl_tokenizer_encode(tok, "a\0b", 3, 0, &ids, &n, &err) == 0 && n >= 2);
    if (n > 0) {
        char *back;
        size_t blen;
        TL_CHECK(tl_tokenizer_decode(tok, ids, n, &back, &blen, NULL, &err) == 0 && blen == 3 && !memcmp(back, "a\0b", 3));
        free(back);
    }
    free(ids);

    /* long inputs end and round-trip: one 200 kB whitespace run, one 100 kB word without spaces */
    size_t big = 200000;
    char *s = malloc(big + 1);
    for (int round = 0; round < 2 && s; round++) {
        for (size_t i = 0; i < big; i++)
            s[i] = round ? "qxzjv"[i % 5] : (i % 7 ? ' ' : '\t');
        s[big] = 0;
        n = encode_ids(tok, s, 0, &ids);
        TL_CHECK(n > 0);
        if (n > 0) {
            char *back;
            size_t blen;
            TL_CHECK(tl_tokenizer_decode(tok, ids, n, &back, &blen, NULL, &err) == 0 && blen == big && !memcmp(back, s, big));
            free(back);
        }
        free(ids);
    }
    free(s);
    tl_tokenizer_free(tok);
}

/* Seeded random texts: encode never fails on UTF-8 and decodes back to the text; random id
 * sequences decode to their pieces' bytes less the reported unfinished tail. */
static void test_random(const char *tokdir)
{
    tl_tokenizer *tok;
    tl_error err = {{0}};
    if (tl_tokenizer_load(&tok, tokdir, &err)) {
        TL_CHECK_MSG(0, "%s", err.msg);
        return;
    }
    static const char *parts[] = {"a", "Z", " ", "  ", "\n", "\r\n", "\t", "'", "'S", "'ll", "7", "123456", ".", "!?",
                                  "\xc3\xa9", "\xe1\xbb\x87", "\xe4\xb8\xad", "\xf0\x9f\x98\x80", "\xe2\x80\x8d",
                                  "\xc2\x85", "\xef\xbb\xbf", "\xe3\x80\x80", "<|eot_id|>", "<|", "|>", "_", "\x01"};
    unsigned state = 12345;
    int ok_round = 1, ok_ids = 1;
    for (int iter = 0; iter < 400; iter++) {
        char text[1024];
        size_t len = 0;
        state = state * 1103515245u + 12345u;
        int parts_n = 1 + (int)(state >> 16) % 40;
        for (int k = 0; k < parts_n; k++) {
            state = state * 1103515245u + 12345u;
            const char *p = parts[(state >> 16) % (sizeof parts / sizeof *parts)];
            memcpy(text + len, p, strlen(p));
            len += strlen(p);
        }
        int flags = iter % 3 == 0 ? TL_TOK_NO_PARSE_SPECIAL : 0;
        int *ids, n;
        if (tl_tokenizer_encode(tok, text, len, flags, &ids, &n, &err)) {
            ok_round = 0;
            continue;
        }
        char *back;
        size_t blen;
        int tail;
        if (tl_tokenizer_decode(tok, ids, n, &back, &blen, &tail, &err) || blen != len || memcmp(back, text, len) || tail)
            ok_round = 0;
        else
            free(back);
        free(ids);

        int rid[12], rn = 1 + iter % 12;
        char bytes[1024];
        size_t nb = 0;
        for (int k = 0; k < rn; k++) {
            state = state * 1103515245u + 12345u;
            rid[k] = (int)((state >> 8) % 128256u);
            size_t pl;
            const char *p = tl_tokenizer_piece(tok, rid[k], &pl);
            if (p && nb + pl < sizeof bytes) {
                memcpy(bytes + nb, p, pl);
                nb += pl;
            } else
                rid[k] = 0, memcpy(bytes + nb, "!", 1), nb++;  /* id 0 is "!" */
        }
        if (tl_tokenizer_decode(tok, rid, rn, &back, &blen, &tail, &err) || blen + (size_t)tail != nb ||
            memcmp(back, bytes, blen) || tail < 0 || tail > 3)
            ok_ids = 0;
        else
            free(back);
        char disp[256];
        for (int k = 0; k < rn; k++)
            if (tl_tokenizer_display(tok, rid[k], disp, sizeof disp) == 0 || strlen(disp) == 0)
                ok_ids = 0;
    }
    TL_CHECK_MSG(ok_round, "random texts: decode(encode(x)) != x");
    TL_CHECK_MSG(ok_ids, "random ids: decode != pieces less the tail");
    tl_tokenizer_free(tok);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s LLAMA3_TOKENIZER_DIR\n", argv[0]);
        return 2;
    }
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_merges();
    test_split_behaviors();
    test_bad_files();
    test_json();
    test_llama3(argv[1]);
    test_random(argv[1]);
    rmdir(dir);
    return TL_TEST_END("tokenizer");
}
