/* The message table of tui/i18n.c: each Vietnamese entry keeps its English printf conversions
 * in order (so snprintf with a translated format reads the same arguments), is valid UTF-8 and
 * set; no English key twice (the second would never be found); look-up by language. */
#include <string.h>

#include "format.h"
#include "i18n.h"
#include "tl_test.h"
#include "valid_utf8.h"

/* The conversions of a printf format ("%d", "%s", "%.2f", "%*s"), "%%" left out, joined. */
static void conversions(const char *f, char *out, size_t n)
{
    size_t o = 0;
    out[0] = 0;
    for (const char *p = f; *p; p++) {
        if (*p != '%')
            continue;
        if (p[1] == '%') {
            p++;
            continue;
        }
        const char *q = p + 1;
        while (*q && strchr("-+ #0123456789.*lhzjt", *q))
            q++;
        if (!*q)
            break;
        if (o + (size_t)(q - p) + 2 < n) {
            memcpy(out + o, p, (size_t)(q - p + 1));
            o += (size_t)(q - p + 1);
            out[o] = 0;
        }
        p = q;
    }
}

int main(void)
{
    int n = I18n_count();
    TL_CHECK(n > 100);
    for (int i = 0; i < n; i++) {
        const char *en = I18n_en(i), *vi = I18n_vi(i);
        char ce[128], cv[128];
        conversions(en, ce, sizeof ce);
        conversions(vi, cv, sizeof cv);
        TL_CHECK_MSG(!strcmp(ce, cv), "\"%s\": conversions %s, Vietnamese has %s", en, ce, cv);
        TL_CHECK_MSG(vi[0] && valid_utf8(vi) && valid_utf8(en), "entry %d \"%s\"", i, en);
        for (int j = i + 1; j < n; j++)
            TL_CHECK_MSG(strcmp(en, I18n_en(j)) != 0, "\"%s\" twice", en);
        TL_CHECK(I18n_tr("vi", en) == vi);
        TL_CHECK(I18n_tr("en", en) == en);
    }
    /* (the footer's "quit" is in the key table now, keys_table.h: test_keys) */
    TL_CHECK_STR(I18n_tr("vi", "running"), "\xC4\x91" "ang ch\xE1\xBA\xA1y");
    TL_CHECK_STR(I18n_tr("vi_VN.UTF-8", "running"), "\xC4\x91" "ang ch\xE1\xBA\xA1y");
    TL_CHECK_STR(I18n_tr("en", "running"), "running");
    TL_CHECK_STR(I18n_tr(NULL, "running"), "running");
    TL_CHECK_STR(I18n_tr("video", "running"), "running");   /* "vi" must be the whole language */
    TL_CHECK_STR(I18n_tr("vi", "no such string"), "no such string");
    TL_CHECK_STR(I18n_tr("vi", NULL), "");
    TL_CHECK(I18n_isVi("vi") && I18n_isVi("vi-VN") && !I18n_isVi("en_US.UTF-8") && !I18n_isVi(""));
        /* expectation failures in Vietnamese: the words around field names and values, which stay */
    char o[512];
    I18n_expectation("vi", "stop_reason is \"eos\", expected \"max_new_tokens\"", o, sizeof o);
    TL_CHECK_STR(o, "stop_reason là \"eos\", mong đợi \"max_new_tokens\"");
    I18n_expectation("vi", "text is \"It is red, expected or not\", expected contains \"green\"", o, sizeof o);
    TL_CHECK_STR(o, "text là \"It is red, expected or not\", mong đợi contains \"green\"");
    I18n_expectation("vi", "generated is 5, expected eq 7 from max_new_tokens", o, sizeof o);
    TL_CHECK_STR(o, "generated là 5, mong đợi eq 7 từ max_new_tokens");
    I18n_expectation("vi", "first_prob: cannot read x", o, sizeof o);
    TL_CHECK_STR(o, "first_prob: không đọc được x");
    I18n_expectation("en", "stop_reason is \"eos\", expected \"max_new_tokens\"", o, sizeof o);
    TL_CHECK_STR(o, "stop_reason is \"eos\", expected \"max_new_tokens\"");
    return TL_TEST_END("tui_i18n");
}
