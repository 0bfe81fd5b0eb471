/* What a lesson writes in the class's language: numbers with one decimal mark and one thousands
 * separator (the panes' own, tui/format.c), core's few English values and sentences in
 * Vietnamese. See lesson_text.h. */
#include "lesson_text.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tokenloop/lesson.h"

int lt_is_vi(const char *lang)
{
    return lang && !strncmp(lang, "vi", 2);
}

/* ',' between the thousands of the integer part of a number written with a '.' decimal mark:
 * "128256" -> "128,256", "-2082.4" -> "-2,082.4"; from four digits, as tui/format.c's
 * Format_count. Anything else (an exponent, "n/a") is left alone. */
static void group(char *s, size_t n)
{
    char tmp[96];
    const char *p = s + (*s == '-'), *d = p;
    while (*d >= '0' && *d <= '9')
        d++;
    size_t nd = (size_t)(d - p), o = 0;
    if (nd < 4 || nd > 30 || strchr(d, 'e'))
        return;
    if (*s == '-')
        tmp[o++] = '-';
    for (size_t i = 0; i < nd; i++) {
        if (i && (nd - i) % 3 == 0)
            tmp[o++] = ',';
        tmp[o++] = p[i];
    }
    snprintf(tmp + o, sizeof tmp - o, "%s", d);
    snprintf(s, n, "%s", tmp);
}

/* Vietnamese swaps the two marks, as the panes do: "3,35" and "128.256". Only a mark between
 * digits: "<0.01%" becomes "<0,01%", a unit or a dash is left alone. */
static void localize(char *s, const char *lang)
{
    if (!lt_is_vi(lang) || !*s)
        return;
    for (size_t i = 1; s[i]; i++)
        if ((s[i] == '.' || s[i] == ',') && s[i - 1] >= '0' && s[i - 1] <= '9' && s[i + 1] >= '0' && s[i + 1] <= '9')
            s[i] = s[i] == '.' ? ',' : '.';
}

void lt_num(char *out, size_t n, double v, const char *lang)
{
    if (isnan(v))
        snprintf(out, n, "n/a");
    else if (fabs(v) >= 1e15)
        snprintf(out, n, "%.3g", v);
    else if (v == (long long)v)
        snprintf(out, n, "%lld", (long long)v);
    else if (fabs(v) >= 100)
        snprintf(out, n, "%.0f", v);
    else if (fabs(v) >= 10)
        snprintf(out, n, "%.1f", v);
    else if (fabs(v) >= 0.01)
        snprintf(out, n, "%.2f", v);
    else
        snprintf(out, n, "%.2g", v);
    group(out, n);
    localize(out, lang);
}

/* tui/format.c's Format_prob, so the figure in the narration is the one the student finds on
 * screen. */
void lt_prob(char *out, size_t n, double p, const char *lang)
{
    double pc = p * 100;
    if (!(p >= 0)) snprintf(out, n, "n/a");
    else if (p == 0) snprintf(out, n, "0%%");
    else if (pc < 0.01) snprintf(out, n, "<0.01%%");
    else if (pc >= 99.95 && p < 1) snprintf(out, n, ">99.9%%");
    else if (p >= 1) snprintf(out, n, "100%%");
    else if (pc < 1) snprintf(out, n, "%.2f%%", pc);
    else snprintf(out, n, "%.1f%%", pc);
    localize(out, lang);
}

void lt_plain(char *out, size_t n, double v)
{
    if (isnan(v) || fabs(v) >= 1e15)
        snprintf(out, n, "n/a");
    else
        snprintf(out, n, "%lld", (long long)v);
}

void lt_exact(char *out, size_t n, double v, const char *lang)
{
    if (!lt_is_vi(lang)) {
        snprintf(out, n, "%g", v);
        return;
    }
    if (isnan(v)) {
        snprintf(out, n, "n/a");
        return;
    }
    snprintf(out, n, "%g", v);
    group(out, n);
    localize(out, lang);
}

const char *lt_field_words(const char *field, const char *value, const char *lang)
{
    static const struct { const char *field, *value, *vi; } words[] = {
        /* where the budget came from: the Stop pane's words (tui/i18n_table.h) */
        { "budget_source", "request", "yêu cầu" },
        { "budget_source", "default", "mặc định của transformers" },
        { "budget_source", "context", "phần còn lại của ngữ cảnh" },
        { "budget_source", "generation_config.max_new_tokens", "max_new_tokens của generation_config.json" },
        { "budget_source", "generation_config.max_length", "max_length của generation_config.json" },
        /* why the streamer holds text back: the Stream pane's words */
        { "hold_reason", "partial_word", "từ chưa trọn" },
        { "hold_reason", "incomplete_utf8", "ký tự UTF-8 chưa trọn" },
        { "hold_reason", "stop_prefix", "có thể thành chuỗi dừng" },
        { "hold_reason", "none", "không giữ gì" },
        /* a compare's outcome, a against b (cmp.NAME.outcome) */
        { "outcome", "lower", "thấp hơn" },
        { "outcome", "same", "như nhau" },
        { "outcome", "higher", "cao hơn" },
        { "outcome", "undecided", "chưa phân định" },
    };
    if (!lt_is_vi(lang) || !field || !value)
        return value;
    const char *dot = strrchr(field, '.');   /* cmp.NAME.outcome: its last part */
    const char *name = dot && !strncmp(field, "cmp.", 4) ? dot + 1 : field;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (!strcmp(words[i].field, name) && !strcmp(words[i].value, value))
            return words[i].vi;
    return value;
}

/* ---------- why an expectation failed ---------- */

/* A comparison as a Vietnamese sentence says it; the lesson file's names stay in English. */
static const char *op_vi(const char *op)
{
    static const struct { const char *op, *vi; } ops[] = {
        { "eq", "bằng" }, { "min", "ít nhất" }, { "max", "nhiều nhất" }, { "gt", "lớn hơn" }, { "lt", "nhỏ hơn" },
        { "eq_saved", "bằng" }, { "gt_saved", "lớn hơn" }, { "lt_saved", "nhỏ hơn" },
        { "eq_field", "bằng" }, { "gt_field", "lớn hơn" }, { "lt_field", "nhỏ hơn" },
        { "equals", "bằng" }, { "contains", "chứa" }, { "not_contains", "không chứa" },
        { "starts_with", "bắt đầu bằng" }, { "not_ends_with", "không kết thúc bằng" },
        { "equals_saved", "bằng" }, { "differs_from_saved", "khác" },
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(ops[i].op, op))
            return ops[i].vi;
    return op;
}

void lt_why_value(char *why, size_t n, const char *lang, const char *field, const char *have, const char *op,
                  const char *want, const char *from)
{
    if (!lt_is_vi(lang)) {
        if (!op)
            snprintf(why, n, "%s is %s, expected %s", field, have, want);
        else
            snprintf(why, n, "%s is %s, expected %s %s%s%s", field, have, op, want, from ? " from " : "",
                     from ? from : "");
        return;
    }
    if (!op)
        snprintf(why, n, "%s là %s, mong đợi %s", field, have, want);
    else if (!strcmp(op, "nonempty") || !strcmp(op, "empty"))   /* what was wanted is the other one */
        snprintf(why, n, "%s là %s, mong đợi %s", field, have, !strcmp(have, "\"\"") ? "không rỗng" : "rỗng");
    else if (from)
        snprintf(why, n, "%s là %s, mong đợi %s %s (từ %s)", field, have, op_vi(op), want, from);
    else
        snprintf(why, n, "%s là %s, mong đợi %s %s", field, have, op_vi(op), want);
}

void lt_why_unsaved(char *why, size_t n, const char *lang, const char *field, const char *name, int text)
{
    if (lt_is_vi(lang))
        snprintf(why, n, "%s: không có %s nào được ghi nhớ với tên \"%s\"", field, text ? "văn bản" : "số", name);
    else
        snprintf(why, n, "%s: %s remembered as \"%s\"", field, text ? "no text" : "nothing numeric", name);
}

void lt_why_unread(char *why, size_t n, const char *lang, const char *field, const char *other)
{
    const char *verb = lt_is_vi(lang) ? "không đọc được" : "cannot read";
    if (field)
        snprintf(why, n, "%s: %s %s", field, verb, other);
    else
        snprintf(why, n, "%s %s", verb, other);
}

void lt_why_no_step(char *why, size_t n, const char *lang, int step)
{
    snprintf(why, n, lt_is_vi(lang) ? "không có bước %d" : "no step %d", step);
}

/* ---------- a stop's detail ---------- */

static const char *budget_source_vi(const char *src)
{
    const char *w = lt_field_words("budget_source", src, "vi");
    return w ? w : src;
}

void tl_lesson_stop_detail(const char *detail, const char *lang, char *out, size_t size)
{
    static const char eos[] = "eos id ", from[] = " (from ", sb[] = "stop string ", at[] = " at bytes ",
                      gen[] = " of the generated text";
    size_t len = strlen(detail);
    const char *f = strstr(detail, from), *a = strstr(detail, at);
    int n = 0, m = 0;
    char src[64];
    if (!size)
        return;
    snprintf(out, size, "%s", detail);
    if (!len || !lt_is_vi(lang))
        return;
    if (!strncmp(detail, eos, sizeof eos - 1) && f && detail[len - 1] == ')')
        snprintf(out, size, "%.*s (từ %s", (int)(f - detail), detail, f + sizeof from - 1);
    else if (!strncmp(detail, sb, sizeof sb - 1) && a && len > sizeof gen && !strcmp(detail + len - (sizeof gen - 1), gen))
        snprintf(out, size, "chuỗi dừng %.*s ở byte %.*s của văn bản đã sinh", (int)(a - detail - (sizeof sb - 1)),
                 detail + sizeof sb - 1, (int)(len - (sizeof gen - 1) - (size_t)(a - detail) - (sizeof at - 1)),
                 a + sizeof at - 1);
    else if (sscanf(detail, "%d new tokens (budget from %63[^)])", &n, src) == 2)
        snprintf(out, size, "%d token mới (ngân sách lấy từ %s)", n, budget_source_vi(src));
    /* core/session.c: the budget was set below what had already been generated */
    else if (sscanf(detail, "budget lowered to %d after %d new tokens (from %63[^)])", &n, &m, src) == 3)
        snprintf(out, size, "ngân sách hạ xuống %d sau %d token mới (lấy từ %s)", n, m, budget_source_vi(src));
}
