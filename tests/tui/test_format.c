/* Widths, fitting and number formats of tui/format.c. Expected widths follow Unicode's East
 * Asian Width and emoji presentation: CJK ideographs and emoji take 2 columns, precomposed
 * Vietnamese letters 1, combining marks and ZWJ 0. */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "tl_test.h"

static void test_width(void)
{
    TL_CHECK_INT(Format_widthz("hello"), 5);
    TL_CHECK_INT(Format_widthz("Xin chào thế giới"), 17);           /* precomposed: 1 each */
    TL_CHECK_INT(Format_widthz("Vie\xCC\xA3t"), 4);                  /* e + U+0323 combining */
    TL_CHECK_INT(Format_widthz("\xE4\xB8\xAD\xE6\x96\x87"), 4);      /* 中文 */
    TL_CHECK_INT(Format_widthz("\xF0\x9F\x98\x80"), 2);              /* 😀 */
    /* 👩‍💻: woman ZWJ laptop: 2 + 0 + 2 by wcwidth (a terminal may join them; we count cells) */
    TL_CHECK_INT(Format_widthz("\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB"), 4);
    TL_CHECK_INT(Format_widthz("a\xFF" "b"), 3);                     /* a malformed byte: 1 */
    TL_CHECK_INT(Format_widthz("\xE4\xB8"), 2);                      /* truncated: 1 per byte */
    int32_t cp;
    TL_CHECK_INT(Format_utf8Next("\xC3\xA0", 2, &cp), 2);
    TL_CHECK_INT(cp, 0xE0);
    TL_CHECK_INT(Format_utf8Next("\xC0\x80", 2, &cp), 1);             /* overlong */
    TL_CHECK_INT(cp, -1);
    TL_CHECK_INT(Format_utf8Next("\xED\xA0\x80", 3, &cp), 1);         /* surrogate */
    TL_CHECK_INT(cp, -1);
}

static void test_fit(void)
{
    char out[256];
    TL_CHECK_INT(Format_fit("hello world", 11, 5, 1, out, sizeof out), 5);
    TL_CHECK_STR(out, "hell\xE2\x80\xA6");
    TL_CHECK_INT(Format_fit("hello", 5, 5, 1, out, sizeof out), 5);
    TL_CHECK_STR(out, "hello");
    /* 中文字 is 6 columns; in 5 with an ellipsis: 中文 (4) + … (1) */
    TL_CHECK_INT(Format_fit("\xE4\xB8\xAD\xE6\x96\x87\xE5\xAD\x97", 9, 5, 1, out, sizeof out), 5);
    TL_CHECK_STR(out, "\xE4\xB8\xAD\xE6\x96\x87\xE2\x80\xA6");
    /* in 4 with an ellipsis: 中 (2) + … (1) = 3: never half a wide character */
    TL_CHECK_INT(Format_fit("\xE4\xB8\xAD\xE6\x96\x87\xE5\xAD\x97", 9, 4, 1, out, sizeof out), 3);
    TL_CHECK_STR(out, "\xE4\xB8\xAD\xE2\x80\xA6");
    /* without an ellipsis, in 3: just 中 */
    TL_CHECK_INT(Format_fit("\xE4\xB8\xAD\xE6\x96\x87", 6, 3, 0, out, sizeof out), 2);
    TL_CHECK_STR(out, "\xE4\xB8\xAD");
    /* a combining mark stays with its base: "ệ" as e + U+0302 + U+0323 fits in 1 column */
    TL_CHECK_INT(Format_fit("e\xCC\x82\xCC\xA3x", 6, 1, 0, out, sizeof out), 1);
    TL_CHECK_STR(out, "e\xCC\x82\xCC\xA3");
    TL_CHECK_INT(Format_fit("abc", 3, 0, 1, out, sizeof out), 0);
    TL_CHECK_STR(out, "");
    /* emoji: 😀😀 is 4 columns; in 3 -> 😀… */
    TL_CHECK_INT(Format_fit("\xF0\x9F\x98\x80\xF0\x9F\x98\x80", 8, 3, 1, out, sizeof out), 3);
    TL_CHECK_STR(out, "\xF0\x9F\x98\x80\xE2\x80\xA6");
}

static void test_pad(void)
{
    char out[256];
    Format_pad("ab", 5, -1, out, sizeof out);
    TL_CHECK_STR(out, "ab   ");
    Format_pad("ab", 5, 1, out, sizeof out);
    TL_CHECK_STR(out, "   ab");
    Format_pad("Tiếng Việt", 12, -1, out, sizeof out);
    TL_CHECK_INT(Format_widthz(out), 12);
    TL_CHECK_STR(out, "Tiếng Việt  ");
    Format_pad("\xE4\xB8\xAD\xE6\x96\x87", 5, -1, out, sizeof out);   /* 中文 + 1 space */
    TL_CHECK_STR(out, "\xE4\xB8\xAD\xE6\x96\x87 ");
    Format_pad("\xE4\xB8\xAD\xE6\x96\x87\xE5\xAD\x97", 4, -1, out, sizeof out);  /* 中… + pad */
    TL_CHECK_STR(out, "\xE4\xB8\xAD\xE2\x80\xA6 ");
    TL_CHECK_INT(Format_widthz(out), 4);
    size_t used;
    int w;
    used = Format_prefixFitting("ab\xE4\xB8\xAD" "c", 6, 3, &w);
    TL_CHECK_INT(used, 2);   /* 中 would need columns 3-4 */
    TL_CHECK_INT(w, 2);
    used = Format_prefixFitting("\xE4\xB8\xAD", 3, 1, &w);   /* wider than the space: taken */
    TL_CHECK_INT(used, 3);
}

static void test_visible(void)
{
    char out[128];
    Format_visible(" the\n", 5, out, sizeof out);
    TL_CHECK_STR(out, "\xE2\x90\xA3the\xE2\x86\xB5");
    Format_visible("\t\r", 2, out, sizeof out);
    TL_CHECK_STR(out, "\xE2\x86\x92\xE2\x90\x8D");
    Format_visible("\x01", 1, out, sizeof out);
    TL_CHECK_STR(out, "<0x01>");
    Format_visible("\xE4\xB8", 2, out, sizeof out);   /* half of 中: two bytes shown */
    TL_CHECK_STR(out, "<0xE4><0xB8>");
    Format_visible("Vi\xE1\xBB\x87t", 6, out, sizeof out);
    TL_CHECK_STR(out, "Vi\xE1\xBB\x87t");
    /* truncation never leaves half a character */
    char small[5];
    size_t n = Format_visible("a\xE4\xB8\xAD", 4, small, 3);
    TL_CHECK_INT(n, 4);
    TL_CHECK_STR(small, "a");
}

static void test_numbers(void)
{
    char b[64];
    Format_ms(4.8, b, sizeof b);
    TL_CHECK_STR(b, "4.80 ms");
    Format_ms(48.25, b, sizeof b);
    TL_CHECK_STR(b, "48.2 ms");
    Format_ms(1234, b, sizeof b);
    TL_CHECK_STR(b, "1.23 s");
    Format_ms(-1, b, sizeof b);
    TL_CHECK_STR(b, "\xE2\x80\x94");
    Format_prob(0.4123, b, sizeof b);
    TL_CHECK_STR(b, "41.2%");
    Format_prob(0.0031, b, sizeof b);
    TL_CHECK_STR(b, "0.31%");
    Format_prob(0.00000001, b, sizeof b);
    TL_CHECK_STR(b, "<0.01%");
    Format_prob(0.99999, b, sizeof b);
    TL_CHECK_STR(b, ">99.9%");
    Format_prob(1.0, b, sizeof b);
    TL_CHECK_STR(b, "100%");
    Format_prob(0.0, b, sizeof b);
    TL_CHECK_STR(b, "0%");
    Format_bytes(16e9, b, sizeof b);
    TL_CHECK_STR(b, "16.0 GB");
    Format_bytes(3.35e12, b, sizeof b);
    TL_CHECK_STR(b, "3.35 TB");
    Format_bytes(28.6e6, b, sizeof b);
    TL_CHECK_STR(b, "28.6 MB");
    Format_bytes(512, b, sizeof b);
    TL_CHECK_STR(b, "512 B");
    Format_bytes(999.99e6, b, sizeof b);
    TL_CHECK_STR(b, "1.00 GB");
    Format_count(128256, b, sizeof b);
    TL_CHECK_STR(b, "128,256");
    Format_count(-1234567, b, sizeof b);
    TL_CHECK_STR(b, "-1,234,567");
    Format_count(999, b, sizeof b);
    TL_CHECK_STR(b, "999");
    Format_logit(17.254, b, sizeof b);
    TL_CHECK_STR(b, "17.25");
    Format_logit(-1.0 / 0.0, b, sizeof b);
    TL_CHECK_STR(b, "-inf");
}

/* Numbers in the screen's language: vi has a comma decimal mark and dots between thousands,
 * applied to every figure the panes print (ms, %, bytes, counts, logits) and nothing else. */
static void test_decimal_mark(void)
{
    char b[64];
    Format_num("vi", 3.35, 2, b, sizeof b);
    TL_CHECK_STR(b, "3,35");
    Format_num("en", 3.35, 2, b, sizeof b);
    TL_CHECK_STR(b, "3.35");
    Format_num("vi", 4.78, 2, b, sizeof b);
    TL_CHECK_STR(b, "4,78");
    Format_num("vi", 7, 0, b, sizeof b);
    TL_CHECK_STR(b, "7");
    Format_num("vi", -0.25, 2, b, sizeof b);
    TL_CHECK_STR(b, "-0,25");
    /* thousands grouped as the narration groups them (vi "2.082,3" beside "128.256") */
    Format_num("vi", 2082.34, 1, b, sizeof b);
    TL_CHECK_STR(b, "2.082,3");
    Format_num("en", 2082.34, 1, b, sizeof b);
    TL_CHECK_STR(b, "2,082.3");
    Format_num("en", -1234567.0, 0, b, sizeof b);
    TL_CHECK_STR(b, "-1,234,567");
    Format_num("vi", -1234567.0, 0, b, sizeof b);
    TL_CHECK_STR(b, "-1.234.567");
    Format_num("en", 1234567.5, 1, b, sizeof b);
    TL_CHECK_STR(b, "1,234,567.5");
    Format_num("vi", 1234567.5, 1, b, sizeof b);
    TL_CHECK_STR(b, "1.234.567,5");
    Format_num("en", 999.95, 1, b, sizeof b);   /* grouped after rounding */
    TL_CHECK_STR(b, "1,000.0");
    Format_num("vi", 1338.2, 1, b, sizeof b);   /* the Timing pane's tok/s, as lesson 6 says it */
    TL_CHECK_STR(b, "1.338,2");
    Format_num("en", 999.4, 1, b, sizeof b);    /* small numbers: no separator */
    TL_CHECK_STR(b, "999.4");
    Format_num("vi", 999, 0, b, sizeof b);
    TL_CHECK_STR(b, "999");
    Format_num("en", -999.5, 1, b, sizeof b);
    TL_CHECK_STR(b, "-999.5");
    Format_num("en", 0.6, 2, b, sizeof b);
    TL_CHECK_STR(b, "0.60");
    Format_num("en", 1000, 0, b, sizeof b);
    TL_CHECK_STR(b, "1,000");
    Format_num("en", 1.0 / 0.0, 1, b, sizeof b);
    TL_CHECK_STR(b, "inf");
    Format_num("en", 1234.5, 1, b, 4);   /* cut like snprintf, never past the buffer */
    TL_CHECK_STR(b, "1,2");
    Format_msLang("vi", 4.78, b, sizeof b);
    TL_CHECK_STR(b, "4,78 ms");
    Format_msLang("en", 4.78, b, sizeof b);
    TL_CHECK_STR(b, "4.78 ms");
    Format_msLang("vi", 1234.5, b, sizeof b);
    TL_CHECK_STR(b, "1,23 s");
    Format_msLang("vi", -1, b, sizeof b);
    TL_CHECK_STR(b, "\xE2\x80\x94");
    Format_bytesLang("vi", 3.35e12, b, sizeof b);
    TL_CHECK_STR(b, "3,35 TB");
    Format_bytesLang("vi", 512, b, sizeof b);
    TL_CHECK_STR(b, "512 B");
    Format_probLang("vi", 0.412, b, sizeof b);
    TL_CHECK_STR(b, "41,2%");
    Format_probLang("vi", 0.00001, b, sizeof b);
    TL_CHECK_STR(b, "<0,01%");
    Format_probLang("vi", 0.99999, b, sizeof b);
    TL_CHECK_STR(b, ">99,9%");
    Format_probLang("vi", 1, b, sizeof b);
    TL_CHECK_STR(b, "100%");
    Format_countLang("vi", 128256, b, sizeof b);   /* thousands: the other mark */
    TL_CHECK_STR(b, "128.256");
    Format_countLang("en", 128256, b, sizeof b);
    TL_CHECK_STR(b, "128,256");
    Format_countLang("vi", 1234567, b, sizeof b);
    TL_CHECK_STR(b, "1.234.567");
    Format_logitLang("vi", 17.25, b, sizeof b);
    TL_CHECK_STR(b, "17,25");
    Format_logitLang("vi", -1.0 / 0.0, b, sizeof b);
    TL_CHECK_STR(b, "-inf");
    /* the language as LANG spells it counts too; anything else is English */
    Format_num("vi_VN.UTF-8", 0.6, 2, b, sizeof b);
    TL_CHECK_STR(b, "0,60");
    Format_num(NULL, 0.6, 2, b, sizeof b);
    TL_CHECK_STR(b, "0.60");
    Format_num("fr", 0.6, 2, b, sizeof b);
    TL_CHECK_STR(b, "0.60");
    /* only marks between digits change */
    char t[] = "v1.2 . 3, x.5";
    Format_localize("vi", t);
    TL_CHECK_STR(t, "v1,2 . 3, x.5");
}

/* The lines Format_wrap makes of s at cols, joined with '|'. */
static void wrap_all(const char *s, int cols, char *out, size_t n)
{
    size_t i = 0, len = strlen(s), o = 0;
    out[0] = 0;
    while (i < len && o + 1 < n) {
        size_t k = Format_wrap(s + i, len - i, cols, NULL);
        if (o)
            out[o++] = '|';
        o += (size_t)snprintf(out + o, n - o, "%.*s", (int)k, s + i);
        i += k;
        if (i < len && s[i] == '\n')
            i++;
    }
}

/* Wrapping at words and token edges: the Stream pane never cuts a word the streamer printed,
 * the Prompt pane never cuts a special token. */
static void test_wrap(void)
{
    char b[512];
    int used;
    wrap_all("The capital of France is Paris.", 12, b, sizeof b);
    TL_CHECK_STR(b, "The capital |of France is |Paris.");
    /* a space at the edge hangs there instead of starting the next line */
    wrap_all("abc def", 3, b, sizeof b);
    TL_CHECK_STR(b, "abc |def");
    TL_CHECK_INT((int)Format_wrap("abc def", 7, 3, &used), 4);
    TL_CHECK_INT(used, 3);
    /* Vietnamese: breaks by columns, not bytes */
    wrap_all("Xin ch\xC3\xA0o th\xE1\xBA\xBF gi\xE1\xBB\x9Bi", 9, b, sizeof b);
    TL_CHECK_STR(b, "Xin ch\xC3\xA0o |th\xE1\xBA\xBF gi\xE1\xBB\x9Bi");
    /* special tokens stay whole: the break comes before <|end_header_id|>, not inside it */
    wrap_all("assistant<|end_header_id|>", 20, b, sizeof b);
    TL_CHECK_STR(b, "assistant|<|end_header_id|>");
    wrap_all("<|eot_id|><|start_header_id|>user<|end_header_id|>", 40, b, sizeof b);
    TL_CHECK_STR(b, "<|eot_id|><|start_header_id|>user|<|end_header_id|>");
    wrap_all("France?<|eot_id|><|start_header_id|>", 25, b, sizeof b);
    TL_CHECK_STR(b, "France?<|eot_id|>|<|start_header_id|>");
    /* a word wider than the line: cut, since nothing else fits */
    wrap_all("abcdefghij", 4, b, sizeof b);
    TL_CHECK_STR(b, "abcd|efgh|ij");
    /* a special token wider than the line is cut too (there is no other way to show it) */
    wrap_all("<|end_header_id|>", 8, b, sizeof b);
    TL_CHECK_STR(b, "<|end_he|ader_id||>");
    /* newlines end lines; an empty line between */
    wrap_all("ab\n\ncd", 10, b, sizeof b);
    TL_CHECK_STR(b, "ab||cd");
    TL_CHECK_INT((int)Format_wrap("\nx", 2, 10, NULL), 0);
    /* wide characters: 中文字 in 5 columns is 中文 then 字 */
    wrap_all("\xE4\xB8\xAD\xE6\x96\x87\xE5\xAD\x97", 5, b, sizeof b);
    TL_CHECK_STR(b, "\xE4\xB8\xAD\xE6\x96\x87|\xE5\xAD\x97");
    /* "<|" without a closing "|>" is ordinary text */
    wrap_all("a <|b c", 4, b, sizeof b);
    TL_CHECK_STR(b, "a |<|b |c");
}

int main(void)
{
    if (!setlocale(LC_ALL, "C.UTF-8")) {
        fprintf(stderr, "no C.UTF-8 locale\n");
        return 77;
    }
    test_width();
    test_fit();
    test_pad();
    test_visible();
    test_numbers();
    test_decimal_mark();
    test_wrap();
    return TL_TEST_END("tui_format");
}
