/* Issue 39, item 6: an expectation that fails is said in the class's language. The lesson in
 * vi_fails/ fails once per step, each step another way (text equality, a bound on a time, a large
 * count, a remembered value, another field, contains, empty, a number kept where text is wanted, a
 * name never kept, a figure not measured, a fraction). For every step, played on the bundled
 * model and checked in English and in Vietnamese:
 *  - English is tl_lesson_check's sentence, unchanged ("FIELD is VALUE, expected ...");
 *  - the Vietnamese has none of the English sentence's words outside quoted values and the
 *    lesson file's names, and every figure in it has the vi marks (comma decimal, dot thousands:
 *    "0,9", "128.256") and is the English sentence's figure, in the same order;
 *  - the vocabulary's size reads as the Logits title prints it (grouped in the language's way).
 * argv[1]: the lesson file, argv[2]: the bundled model. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tl_test.h"
#include "tokenloop/lesson.h"
#include "tokenloop/model.h"
#include "tokenloop/session.h"

/* The text with each "..." left out: a quoted value is the model's or the lesson's, in any language. */
static void unquote(const char *in, char *out, size_t n)
{
    size_t o = 0;
    int q = 0;
    for (; *in && o + 1 < n; in++) {
        if (*in == '"')
            q = !q;
        else if (!q)
            out[o++] = *in;
    }
    out[o] = '\0';
}

/* A whole word of ASCII letters (and _), not part of a longer identifier or a Vietnamese word. */
static int has_word(const char *s, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = strstr(s, w); p; p = strstr(p + 1, w)) {
        unsigned char b = p > s ? (unsigned char)p[-1] : ' ', a = (unsigned char)p[n];
        if (!(isalnum(b) || b == '_' || b >= 0x80) && !(isalnum(a) || a == '_' || a >= 0x80))
            return 1;
    }
    return 0;
}

/* tok in a language's form: en as %g writes it ("128256", "0.9"); vi with a dot between each
 * three digits of four or more and a comma decimal mark ("128.256", "0,9"). Writes the value. */
static int in_form(const char *tok, int vi, double *v)
{
    char canon[64];
    size_t c = 0, digits = 0, k = 0;
    int dec = 0;
    for (; tok[k] && c + 1 < sizeof canon; k++) {
        char ch = tok[k];
        if (isdigit((unsigned char)ch)) {
            canon[c++] = ch;
            digits++;
        } else if (ch == (vi ? ',' : '.') && !dec) {
            dec = 1;
            canon[c++] = '.';
        } else if (vi && ch == '.' && !dec && digits >= 1 && digits <= 3) {
            digits = 0;   /* a group starts: three digits must follow before the next mark */
            if (!(isdigit((unsigned char)tok[k + 1]) && isdigit((unsigned char)tok[k + 2]) &&
                  isdigit((unsigned char)tok[k + 3]) && !isdigit((unsigned char)tok[k + 4])))
                return 0;
        } else {
            return 0;
        }
        if (vi && !dec && digits > 3)   /* four digits in a row before the decimal mark: not grouped */
            return 0;
    }
    canon[c] = '\0';
    *v = atof(canon);
    return 1;
}

/* The figures of a text, each as a number (a digit run with marks between digits, not part of
 * a name such as q4_0). 1 when each is in the language's form, else 0. */
static int figures(const char *s, int vi, double *v, int max, int *n)
{
    int ok = 1;
    *n = 0;
    for (const char *p = s; *p;) {
        if (!isdigit((unsigned char)*p) || (p > s && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))) {
            p++;
            continue;
        }
        char tok[64];
        size_t k = 0;
        while ((isdigit((unsigned char)*p) || ((*p == '.' || *p == ',') && isdigit((unsigned char)p[1])))
               && k + 1 < sizeof tok)
            tok[k++] = *p++;
        tok[k] = '\0';
        if (isalpha((unsigned char)*p) || *p == '_')   /* part of a name */
            continue;
        double x = NAN;
        ok &= in_form(tok, vi, &x);
        if (*n < max)
            v[(*n)++] = x;
    }
    return ok;
}

/* n with the thousands grouped the Logits title's way: en "128,256", vi "128.256". */
static void grouped(long long n, char sep, char *out, size_t size)
{
    char d[32];
    snprintf(d, sizeof d, "%lld", n);
    size_t nd = strlen(d), o = 0;
    for (size_t i = 0; i < nd && o + 2 < size; i++) {
        if (i && (nd - i) % 3 == 0)
            out[o++] = sep;
        out[o++] = d[i];
    }
    out[o] = '\0';
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_vi_expect LESSON.json MODEL_DIR\n");
        return 2;
    }
    /* the words of the English sentences, and the lesson file's comparison names */
    static const char *const english[] = {
        "is", "expected", "from", "nothing", "numeric", "remembered", "as", "no", "text remembered",
        "cannot", "read", "step", "nan", "eq", "min", "max", "gt", "lt", "equals", "contains",
        "not_contains", "starts_with", "not_ends_with", "nonempty", "empty", "gt_saved", "lt_saved",
        "eq_saved", "gt_field", "lt_field", "eq_field", "equals_saved", "differs_from_saved", NULL,
    };
    tl_error err = {{0}};
    tl_lesson *l = NULL;
    tl_session *s = NULL;
    tl_session_opts o = {.model_dir = argv[2], .threads = 1, .bandwidth_gbs = 10};
    TL_CHECK_MSG(tl_lesson_load(&l, argv[1], &err) == 0, "%s", err.msg);
    TL_CHECK_MSG(tl_session_open(&s, &o, &err) == 0, "%s", err.msg);
    if (!l || !s)
        return 1;
    long long vocab = tl_session_model(s)->cfg.vocab_size;
    char vocab_en[32], vocab_vi[32];
    grouped(vocab, ',', vocab_en, sizeof vocab_en);
    grouped(vocab, '.', vocab_vi, sizeof vocab_vi);
    int saw_vocab = 0, saw_fraction = 0;
    for (int i = 0; i < tl_lesson_n_steps(l); i++) {
        char en[512], en_old[512], vi[512], flat_en[512], flat_vi[512];
        TL_CHECK_MSG(tl_lesson_apply(l, i, s, NULL, &err) == 0, "step %d: %s", i + 1, err.msg);
        int rc_old = tl_lesson_check(l, i, s, en_old, sizeof en_old);
        int rc_en = tl_lesson_check_lang(l, i, s, "en", en, sizeof en);
        int rc_vi = tl_lesson_check_lang(l, i, s, "vi", vi, sizeof vi);
        printf("step %d\n  en: %s\n  vi: %s\n", i + 1, en, vi);
        TL_CHECK_MSG(rc_old == 1 && rc_en == 1 && rc_vi == 1, "step %d: rc %d %d %d", i + 1, rc_old, rc_en, rc_vi);
        TL_CHECK_STR(en, en_old);   /* the English API is what it was */
        TL_CHECK_MSG(strstr(en, " is ") || strstr(en, " remembered as "), "step %d: the English sentence: %s", i + 1, en);
        unquote(en, flat_en, sizeof flat_en);
        unquote(vi, flat_vi, sizeof flat_vi);
        /* the lesson file's names stay: the field before the sentence, a kept name, a compared field */
        const char *names[] = {"gen", "missing", "max_new_tokens"};
        char *sp = strpbrk(flat_vi, " :");
        char *rest = sp ? sp : flat_vi;
        for (int w = 0; english[w]; w++) {
            int in_names = 0;
            for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
                in_names |= !strcmp(names[k], english[w]);
            TL_CHECK_MSG(in_names || !has_word(rest, english[w]), "step %d: English \"%s\" in the Vietnamese: %s",
                         i + 1, english[w], vi);
        }
        TL_CHECK_MSG(strcmp(en, vi), "step %d: the same sentence in both languages: %s", i + 1, vi);
        /* the figures: the same values, each in its language's marks */
        double fe[16], fv[16];
        int ne = 0, nv = 0;
        figures(flat_en, 0, fe, 16, &ne);
        int marks = figures(flat_vi, 1, fv, 16, &nv);
        TL_CHECK_MSG(marks, "step %d: a figure without the Vietnamese marks: %s", i + 1, vi);
        TL_CHECK_MSG(ne == nv, "step %d: %d figures in English, %d in Vietnamese", i + 1, ne, nv);
        for (int k = 0; k < ne && k < nv; k++)
            TL_CHECK_MSG(fabs(fe[k] - fv[k]) <= 1e-9 * fabs(fe[k]), "step %d: figure %d: %g in English, %g in Vietnamese",
                         i + 1, k + 1, fe[k], fv[k]);
        if (!strncmp(en, "vocab ", 6)) {
            saw_vocab = 1;
            TL_CHECK_MSG(strstr(vi, vocab_vi) != NULL, "the vocabulary in Vietnamese reads %s: %s", vocab_vi, vi);
            TL_CHECK_MSG(strstr(en, vocab_en) == NULL, "English keeps tl_lesson_check's %%g: %s", en);
        }
        for (int k = 0; k < nv; k++)
            saw_fraction |= fv[k] != floor(fv[k]);
    }
    TL_CHECK_MSG(saw_vocab && saw_fraction, "the lesson failed on the vocabulary (%d) and on a fraction (%d)", saw_vocab,
                 saw_fraction);
    tl_session_free(s);
    tl_lesson_free(l);
    return TL_TEST_END("lesson_vi_expect");
}
