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

    /* core's errors (i18n_errors.h): the same conversions, set, and matched with their values */
    for (int i = 0; i < I18n_errorCount(); i++) {
        const char *en = I18n_errorEn(i), *vi = I18n_errorVi(i);
        char ce[128], cv[128];
        conversions(en, ce, sizeof ce);
        conversions(vi, cv, sizeof cv);
        TL_CHECK_MSG(!strcmp(ce, cv), "error \"%s\": conversions %s, Vietnamese has %s", en, ce, cv);
        TL_CHECK_MSG(vi[0] && valid_utf8(vi), "error %d \"%s\"", i, en);
        for (const char *p = ce; *p; p++)
            TL_CHECK_MSG(*p == '%' || *p == 's' || *p == 'd', "error \"%s\": only %%s and %%d", en);
    }
    /* a lesson action that failed: the step's frame and core's why, each in Vietnamese */
    I18n_error("vi", "/l/1-x.json: step 2: action \"force\": force: \"xyz\" is not a single token", o, sizeof o);
    TL_CHECK_STR(o, "/l/1-x.json: bước 2: thao tác \"force\": force: \"xyz\" không phải là một token duy nhất");
    I18n_error("vi", "/l/1-x.json: step 1: action \"force_rank\": force_rank: 9: only 5 candidates", o, sizeof o);
    TL_CHECK_STR(o, "/l/1-x.json: bước 1: thao tác \"force_rank\": force_rank: 9: chỉ có 5 ứng viên");
    I18n_error("vi", "prompt: 14598 tokens do not fit the context (4096 positions)", o, sizeof o);
    TL_CHECK_STR(o, "prompt: 14598 token không vừa ngữ cảnh (4096 vị trí)");
    /* nested: async's own message inside the step's */
    I18n_error("vi", "a: step 3: action \"async\": async: out of memory", o, sizeof o);
    TL_CHECK_STR(o, "a: bước 3: thao tác \"async\": async: hết bộ nhớ");
    /* not known: as it is; English: as it is; a short buffer: cut, terminated */
    I18n_error("vi", "something else: 3 things", o, sizeof o);
    TL_CHECK_STR(o, "something else: 3 things");
    I18n_error("en", "prompt: 5 tokens do not fit the context (4 positions)", o, sizeof o);
    TL_CHECK_STR(o, "prompt: 5 tokens do not fit the context (4 positions)");
    char small[12];
    I18n_error("vi", "prompt: 14598 tokens do not fit the context (4096 positions)", small, sizeof small);
    TL_CHECK(strlen(small) < sizeof small && !strncmp(small, "prompt: 145", 11));
    I18n_error("vi", "force: id -3 is outside the vocabulary (0..128255)", o, sizeof o);
    TL_CHECK_STR(o, "force: id -3 nằm ngoài bộ từ vựng (0..128255)");
    return TL_TEST_END("tui_i18n");
}
