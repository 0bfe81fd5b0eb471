/* The one-line editor of tui/lineedit.c on multi-byte text. */
#include <locale.h>
#include <string.h>

#include "format.h"
#include "lineedit.h"
#include "tl_test.h"

int main(void)
{
    if (!setlocale(LC_ALL, "C.UTF-8"))
        return 77;
    static tl_lineedit e;
    LineEdit_set(&e, "Vi\xE1\xBB\x87t");     /* Việt: ệ is 3 bytes */
    TL_CHECK_INT(e.len, 6);
    TL_CHECK_INT(e.cur, 6);
    LineEdit_left(&e);                        /* before t */
    TL_CHECK_INT(e.cur, 5);
    LineEdit_left(&e);                        /* before ệ */
    TL_CHECK_INT(e.cur, 2);
    LineEdit_delete(&e);                      /* removes all 3 bytes of ệ */
    TL_CHECK_STR(e.buf, "Vit");
    LineEdit_insert(&e, 0x4E2D);              /* 中 */
    TL_CHECK_STR(e.buf, "Vi\xE4\xB8\xADt");
    TL_CHECK_INT(e.cur, 5);
    LineEdit_backspace(&e);
    TL_CHECK_STR(e.buf, "Vit");
    TL_CHECK_INT(e.cur, 2);
    LineEdit_insert(&e, 0x1F600);             /* 😀 */
    TL_CHECK_INT(e.len, 7);
    LineEdit_home(&e);
    TL_CHECK_INT(e.cur, 0);
    LineEdit_backspace(&e);                   /* nothing before: no change */
    TL_CHECK_INT(e.len, 7);
    LineEdit_end(&e);
    LineEdit_right(&e);
    TL_CHECK_INT(e.cur, 7);
    TL_CHECK_INT(LineEdit_insert(&e, 0xD800), -1);   /* a surrogate is refused */
    LineEdit_home(&e);
    LineEdit_right(&e);
    LineEdit_killEnd(&e);
    TL_CHECK_STR(e.buf, "V");
    LineEdit_set(&e, "hello world");
    e.cur = 6;
    LineEdit_killStart(&e);
    TL_CHECK_STR(e.buf, "world");
    TL_CHECK_INT(e.cur, 0);

    /* view: 20 characters in 8 columns with the cursor at the end -> the last 7 plus the cursor */
    size_t from, to;
    int col;
    LineEdit_set(&e, "abcdefghijklmnopqrst");
    LineEdit_view(&e, 8, &from, &to, &col);
    TL_CHECK_INT(from, 13);
    TL_CHECK_INT(to, 20);
    TL_CHECK_INT(col, 7);
    LineEdit_home(&e);
    LineEdit_view(&e, 8, &from, &to, &col);
    TL_CHECK_INT(from, 0);
    TL_CHECK_INT(to, 8);
    TL_CHECK_INT(col, 0);
    /* wide characters: 中文字 with the cursor at the end, 4 columns: 字 (2) + cursor */
    LineEdit_set(&e, "\xE4\xB8\xAD\xE6\x96\x87\xE5\xAD\x97");
    LineEdit_view(&e, 4, &from, &to, &col);
    TL_CHECK_INT(from, 6);
    TL_CHECK_INT(col, 2);
    /* a string longer than the buffer is cut on a character boundary */
    static char big[TL_LINEEDIT_MAX + 8];
    for (int i = 0; i + 3 <= TL_LINEEDIT_MAX + 6; i += 3)
        memcpy(big + i, "\xE4\xB8\xAD", 3);
    LineEdit_set(&e, big);
    TL_CHECK(e.len < TL_LINEEDIT_MAX);
    TL_CHECK_INT(e.len % 3, 0);
    /* what was cut is counted, in characters, and so is each character typed into a full buffer */
    size_t chars = 0;
    for (size_t i = 0; big[i]; i++)
        chars += ((unsigned char)big[i] & 0xC0) != 0x80;
    TL_CHECK_INT(e.dropped, chars - e.len / 3);
    size_t before = e.dropped;
    TL_CHECK_INT(LineEdit_insert(&e, 0x4E2D), -1);
    TL_CHECK_INT(e.dropped, before + 1);
    LineEdit_set(&e, "short");
    TL_CHECK_INT(e.dropped, 0);
    /* the view walked back from the cursor equals the definition: the first start from which
     * the text before the cursor takes at most cols-1 columns */
    static const char *pieces[] = {"a", "\xE4\xB8\xAD", "e\xCC\x81", "\xF0\x9F\x98\x80", " "};
    unsigned seed = 7;
    for (int round = 0; round < 300; round++) {
        LineEdit_set(&e, "");
        int n = (int)((seed = seed * 1103515245u + 12345u) >> 16) % 60;
        for (int i = 0; i < n; i++) {
            const char *p = pieces[((seed = seed * 1103515245u + 12345u) >> 16) % 5];
            int32_t cp;
            for (size_t k = 0; p[k];)
                k += (size_t)Format_utf8Next(p + k, strlen(p + k), &cp), LineEdit_insert(&e, cp);
        }
        int moves = (int)((seed = seed * 1103515245u + 12345u) >> 16) % (n + 1);
        for (int i = 0; i < moves; i++)
            LineEdit_left(&e);
        int cols = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 20;
        size_t ref = 0;
        while (Format_width(e.buf + ref, e.cur - ref) > cols - 1 && ref < e.cur) {
            int32_t cp;
            ref += (size_t)Format_utf8Next(e.buf + ref, e.len - ref, &cp);
        }
        LineEdit_view(&e, cols, &from, &to, &col);
        TL_CHECK_MSG(from == ref && col == Format_width(e.buf + ref, e.cur - ref),
                     "round %d: cols %d cursor %zu: start %zu col %d, the definition's %zu", round, cols, e.cur, from, col, ref);
    }
    return TL_TEST_END("tui_lineedit");
}
