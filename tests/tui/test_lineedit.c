/* The one-line editor of tui/lineedit.c on multi-byte text. */
#include <locale.h>

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
    return TL_TEST_END("tui_lineedit");
}
