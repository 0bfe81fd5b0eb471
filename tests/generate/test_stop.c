/* Stop criteria: EOS from a multi-id set, stop strings as transformers' StopStringCriteria
 * matches them (its docstring's examples), the budget and where it came from. */
#include <stdlib.h>
#include <string.h>

#include "tl_test.h"
#include "tokenloop/stop.h"

/* Feeds pieces one at a time; returns the index of the token that stopped (or -1). */
static int feed(const tl_stop_config *c, const char *const *pieces, int n, tl_stop_result *out)
{
    char text[512] = "";
    for (int i = 0; i < n; i++) {
        size_t start = strlen(text);
        strcat(text, pieces[i]);
        tl_stop_result r = tl_stop_check(c, 1000 + i, i + 1, text, strlen(text), start);
        if (r.reason != TL_STOP_NONE) {
            if (out) *out = r;
            return i;
        }
    }
    return -1;
}

static void stop_strings(void)
{
    tl_stop_config c = {.max_new_tokens = 100, .n_stop = 1, .stop = {"stop"}};
    /* StopStringCriteria's docstring: these stop on their last token ... */
    const char *a[] = {"st", "op"}, *b[] = {"stop"}, *c1[] = {"st", "opera"}, *d[] = {"sto", "pper"},
               *e[] = {"las", "topper"}, *f[] = {"s", "to", "pped"};
    TL_CHECK_INT(feed(&c, a, 2, NULL), 1);
    TL_CHECK_INT(feed(&c, b, 1, NULL), 0);
    TL_CHECK_INT(feed(&c, c1, 2, NULL), 1);
    TL_CHECK_INT(feed(&c, d, 2, NULL), 1);
    TL_CHECK_INT(feed(&c, e, 2, NULL), 1);
    TL_CHECK_INT(feed(&c, f, 3, NULL), 2);
    /* ... and a match is reported once, on the token that completes it: checking only the
     * tokens after it (as "stop","at" would be seen at "at") finds nothing. */
    const char *g[] = {"stop", "at"};
    tl_stop_result r;
    TL_CHECK_INT(feed(&c, g, 2, &r), 0);
    char text[] = "stopat";
    r = tl_stop_check(&c, 5, 2, text, 6, 4);   /* the newest token "at" alone */
    TL_CHECK_INT(r.reason, TL_STOP_NONE);
    r = tl_stop_check(&c, 5, 3, "stoperated", 10, 7);   /* "st","opera","ted" at "ted" */
    TL_CHECK_INT(r.reason, TL_STOP_NONE);

    /* which string and where; spanning three tokens */
    tl_stop_config c2 = {.max_new_tokens = 100, .n_stop = 2, .stop = {"</answer>", "\n\n"}};
    const char *h[] = {"The", " answer", "</", "ans", "wer>", " more"};
    TL_CHECK_INT(feed(&c2, h, 6, &r), 4);
    TL_CHECK_INT(r.reason, TL_STOP_STRING);
    TL_CHECK_INT(r.stop_index, 0);
    TL_CHECK_INT(r.match_start, 10);
    TL_CHECK_INT(r.match_end, 19);
    TL_CHECK_INT(r.token_index, 4);
    TL_CHECK(strstr(r.detail, "</answer>") != NULL);
    const char *i2[] = {"a", ".\n", "\nb"};
    TL_CHECK_INT(feed(&c2, i2, 3, &r), 2);
    TL_CHECK_INT(r.stop_index, 1);
    TL_CHECK_INT(r.match_start, 2);
    TL_CHECK(strstr(r.detail, "\\n\\n") != NULL);
}

static void eos(void)
{
    tl_model m;
    memset(&m, 0, sizeof m);
    m.cfg.eos_ids[0] = 128001;
    m.cfg.n_eos = 1;
    int g[] = {128001, 128008, 128009};
    memcpy(m.gen.eos_ids, g, sizeof g);
    m.gen.n_eos = 3;
    tl_stop_config c = {.max_new_tokens = 50};
    tl_stop_eos_from_model(&c, &m);
    TL_CHECK_INT(c.n_eos, 3);
    TL_CHECK_STR(c.eos_source, "generation_config.json");
    tl_stop_result r = tl_stop_check(&c, 128008, 4, "abc", 3, 3);   /* the middle one of the set */
    TL_CHECK_INT(r.reason, TL_STOP_EOS);
    TL_CHECK_INT(r.eos_id, 128008);
    TL_CHECK_STR(tl_stop_reason_name(r.reason), "eos");
    r = tl_stop_check(&c, 128000, 4, "abc", 3, 3);
    TL_CHECK_INT(r.reason, TL_STOP_NONE);
    m.gen.n_eos = 0;   /* no EOS in generation_config.json: config.json's */
    tl_stop_eos_from_model(&c, &m);
    TL_CHECK_INT(c.n_eos, 1);
    TL_CHECK_INT(c.eos_ids[0], 128001);
    TL_CHECK_STR(c.eos_source, "config.json");
    r = tl_stop_check(&c, 128009, 4, "abc", 3, 3);
    TL_CHECK_INT(r.reason, TL_STOP_NONE);

    /* one reason when several hold: eos before stop_string before max_new_tokens */
    c.max_new_tokens = 4;
    c.n_stop = 1;
    c.stop[0] = "c";
    r = tl_stop_check(&c, 128001, 4, "abc", 3, 2);
    TL_CHECK_INT(r.reason, TL_STOP_EOS);
    r = tl_stop_check(&c, 5, 4, "abc", 3, 2);
    TL_CHECK_INT(r.reason, TL_STOP_STRING);
    r = tl_stop_check(&c, 5, 4, "abd", 3, 2);
    TL_CHECK_INT(r.reason, TL_STOP_MAX_NEW_TOKENS);
    r = tl_stop_check(&c, 5, 3, "abd", 3, 2);
    TL_CHECK_INT(r.reason, TL_STOP_NONE);
}

static void budget(void)
{
    tl_gen_config g;
    memset(&g, 0, sizeof g);
    tl_budget_source s;
    TL_CHECK_INT(tl_stop_budget(&g, 0, 30, 4096, &s), 20);            /* transformers' default */
    TL_CHECK_INT(s, TL_BUDGET_DEFAULT);
    TL_CHECK_STR(tl_budget_source_name(s), "default");
    TL_CHECK_INT(tl_stop_budget(&g, 5, 30, 4096, &s), 5);
    TL_CHECK_INT(s, TL_BUDGET_REQUEST);
    g.has_max_length = 1;
    g.max_length = 100;
    TL_CHECK_INT(tl_stop_budget(&g, 0, 30, 4096, &s), 70);            /* max_length counts the prompt */
    TL_CHECK_INT(s, TL_BUDGET_GEN_MAX_LENGTH);
    TL_CHECK_INT(tl_stop_budget(&g, 0, 130, 4096, &s), 1);            /* prompt past max_length: one token */
    g.has_max_new_tokens = 1;
    g.max_new_tokens = 64;
    TL_CHECK_INT(tl_stop_budget(&g, 0, 30, 4096, &s), 64);            /* max_new_tokens wins over max_length */
    TL_CHECK_INT(s, TL_BUDGET_GEN_MAX_NEW_TOKENS);
    TL_CHECK_STR(tl_budget_source_name(s), "generation_config.max_new_tokens");
    TL_CHECK_INT(tl_stop_budget(&g, 9, 30, 4096, &s), 9);             /* the request wins over both */
    TL_CHECK_INT(s, TL_BUDGET_REQUEST);
    TL_CHECK_INT(tl_stop_budget(&g, 500, 100, 256, &s), 156);         /* what the context still holds */
    TL_CHECK_INT(s, TL_BUDGET_CONTEXT);
}

int main(void)
{
    stop_strings();
    eos();
    budget();
    return TL_TEST_END("generate_stop");
}
