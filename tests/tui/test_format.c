/* Widths, fitting and number formats of tui/format.c. Expected widths follow Unicode's East
 * Asian Width and emoji presentation: CJK ideographs and emoji take 2 columns, precomposed
 * Vietnamese letters 1, combining marks and ZWJ 0. */
#include <locale.h>
#include <stdlib.h>

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
    return TL_TEST_END("tui_format");
}
