/* Stop criteria: EOS, stop strings (transformers' StopStringCriteria), the max_new_tokens
 * budget and where it came from. */
#include "tokenloop/stop.h"

#include <stdio.h>
#include <string.h>

const char *tl_stop_reason_name(tl_stop_reason r)
{
    switch (r) {
    case TL_STOP_EOS: return "eos";
    case TL_STOP_STRING: return "stop_string";
    case TL_STOP_MAX_NEW_TOKENS: return "max_new_tokens";
    default: return "none";
    }
}

const char *tl_budget_source_name(tl_budget_source s)
{
    switch (s) {
    case TL_BUDGET_REQUEST: return "request";
    case TL_BUDGET_GEN_MAX_NEW_TOKENS: return "generation_config.max_new_tokens";
    case TL_BUDGET_GEN_MAX_LENGTH: return "generation_config.max_length";
    case TL_BUDGET_DEFAULT: return "default";
    case TL_BUDGET_CONTEXT: return "context";
    }
    return "?";
}

void tl_stop_eos_from_model(tl_stop_config *c, const tl_model *m)
{
    c->n_eos = 0;
    c->eos_source = NULL;
    if (!m) return;
    const int *ids = m->gen.eos_ids;
    int n = m->gen.n_eos;
    c->eos_source = "generation_config.json";
    if (n <= 0) {
        ids = m->cfg.eos_ids;
        n = m->cfg.n_eos;
        c->eos_source = n <= 0 ? NULL : m->eos_source ? m->eos_source : "config.json";
    }
    for (int i = 0; i < n && i < TL_MAX_EOS; i++) c->eos_ids[c->n_eos++] = ids[i];
}

int tl_stop_budget(const tl_gen_config *gen, int request, int prompt_len, int capacity,
                   tl_budget_source *src)
{
    int budget;
    tl_budget_source s;
    if (request > 0) {
        budget = request;
        s = TL_BUDGET_REQUEST;
    } else if (gen && gen->has_max_new_tokens && gen->max_new_tokens > 0) {
        budget = gen->max_new_tokens;
        s = TL_BUDGET_GEN_MAX_NEW_TOKENS;
    } else if (gen && gen->has_max_length && gen->max_length > 0) {
        budget = gen->max_length - prompt_len;
        s = TL_BUDGET_GEN_MAX_LENGTH;
    } else {
        budget = 20;   /* transformers: "by default let's always generate 20 new tokens" */
        s = TL_BUDGET_DEFAULT;
    }
    /* transformers stops at max_length after at least one new token. */
    if (budget < 1) budget = 1;
    if (capacity > 0 && prompt_len + budget > capacity) {
        budget = capacity - prompt_len;
        if (budget < 1) budget = 1;
        s = TL_BUDGET_CONTEXT;
    }
    if (src) *src = s;
    return budget;
}

static void quote(char *out, size_t size, const char *s, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 8 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') o += (size_t)snprintf(out + o, size - o, "\\n");
        else if (c == '\t') o += (size_t)snprintf(out + o, size - o, "\\t");
        else if (c == '"' || c == '\\') o += (size_t)snprintf(out + o, size - o, "\\%c", c);
        else if (c < 0x20) o += (size_t)snprintf(out + o, size - o, "\\x%02x", c);
        else out[o++] = (char)c;
    }
    out[o < size ? o : size - 1] = 0;
}

tl_stop_result tl_stop_check(const tl_stop_config *c, int id, int n_generated,
                             const char *text, size_t len, size_t last_start)
{
    tl_stop_result r;
    memset(&r, 0, sizeof r);
    r.reason = TL_STOP_NONE;
    r.eos_id = -1;
    r.stop_index = -1;
    r.token_index = n_generated - 1;
    for (int i = 0; i < c->n_eos; i++)
        if (c->eos_ids[i] == id) {
            r.reason = TL_STOP_EOS;
            r.eos_id = id;
            snprintf(r.detail, sizeof r.detail, "eos id %d (from %s)", id,
                     c->eos_source ? c->eos_source : "?");
            return r;
        }
    /* An occurrence that ends inside the newest token: end in (last_start, len]. The earliest
     * such end wins, then the earliest start. */
    size_t best_end = (size_t)-1, best_start = 0;
    int best = -1;
    for (int k = 0; k < c->n_stop; k++) {
        const char *s = c->stop[k];
        size_t L = s ? strlen(s) : 0;
        if (!L || L > len) continue;
        size_t lo = last_start + 1 > L ? last_start + 1 - L : 0;   /* start >= end - L */
        for (size_t st = lo; st + L <= len; st++)
            if (!memcmp(text + st, s, L)) {
                size_t e = st + L;
                if (e > last_start && (e < best_end || (e == best_end && st < best_start))) {
                    best_end = e;
                    best_start = st;
                    best = k;
                }
                break;
            }
    }
    if (best >= 0) {
        char q[128];
        quote(q, sizeof q, c->stop[best], strlen(c->stop[best]));
        r.reason = TL_STOP_STRING;
        r.stop_index = best;
        r.match_start = best_start;
        r.match_end = best_end;
        snprintf(r.detail, sizeof r.detail, "stop string \"%s\" at bytes %zu-%zu of the generated text",
                 q, best_start, best_end);
        return r;
    }
    if (n_generated >= c->max_new_tokens) {
        r.reason = TL_STOP_MAX_NEW_TOKENS;
        snprintf(r.detail, sizeof r.detail, "%d new tokens (budget from %s)", n_generated,
                 tl_budget_source_name(c->budget_source));
    }
    return r;
}
