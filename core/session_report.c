/* What the session's settings are, for people and programs: tl_session_hf_call (the
 * transformers code that runs the same request, so a class can check tokenloop against a
 * notebook) and tl_session_settings_json. Built from the public getters only. */
#define _GNU_SOURCE   /* realpath */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tokenloop/session.h"

typedef struct {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void put(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0 || b->oom) return;
    if (b->n + (size_t)need + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + (size_t)need + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)need;
}

/* A Python string literal: JSON's escapes are Python's too. */
static void put_str(sbuf *b, const char *s)
{
    cJSON *j = cJSON_CreateString(s ? s : "");
    char *q = j ? cJSON_PrintUnformatted(j) : NULL;
    put(b, "%s", q ? q : "\"\"");
    free(q);
    cJSON_Delete(j);
}

static const char *py_bool(int v) { return v ? "True" : "False"; }

/* Where the model was loaded from, for from_pretrained: absolute, so the program runs from any
 * folder; a GGUF file is its folder plus gguf_file=. */
static void put_load(sbuf *b, const tl_session *s)
{
    const tl_model *m = tl_session_model(s);
    char abs[PATH_MAX];
    const char *dir = m && m->dir[0] ? (realpath(m->dir, abs) ? abs : m->dir) : "";
    size_t len = strlen(dir);
    put(b, "import torch\nfrom transformers import AutoModelForCausalLM, AutoTokenizer, TextStreamer\n\n");
    if (len > 5 && !strcmp(dir + len - 5, ".gguf")) {
        const char *slash = strrchr(dir, '/');
        char folder[PATH_MAX];
        snprintf(folder, sizeof folder, "%.*s", slash ? (int)(slash - dir) : 1, slash ? dir : ".");
        put(b, "model_dir, gguf = ");
        put_str(b, folder);
        put(b, ", ");
        put_str(b, slash ? slash + 1 : dir);
        put(b, "\ntok = AutoTokenizer.from_pretrained(model_dir, gguf_file=gguf)\n"
               "model = AutoModelForCausalLM.from_pretrained(model_dir, gguf_file=gguf, dtype=torch.float32)\n");
    } else {
        put(b, "model_dir = ");
        put_str(b, dir);
        put(b, "\ntok = AutoTokenizer.from_pretrained(model_dir)\n"
               "model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)\n");
    }
}

char *tl_session_hf_call(const tl_session *s)
{
    sbuf b = {0};
    put_load(&b, s);
    const char *msgs = tl_session_messages(s);
    if (msgs) {
        put(&b, "messages = %s\n", msgs);
        put(&b, "inputs = tok.apply_chat_template(messages, add_generation_prompt=%s, return_tensors=\"pt\", return_dict=True)\n",
            py_bool(tl_session_add_generation_prompt(s)));
        if (!tl_session_parse_special_in_content(s))
            put(&b, "# tokenloop encodes message content as plain text (\"<|eot_id|>\" typed by a user stays text);\n"
                    "# apply_chat_template has no such switch: it parses special tokens everywhere\n");
    } else {
        /* every id: a program that runs needs the whole prompt */
        int n = 0;
        const int *ids = tl_session_prompt_ids(s, &n);
        put(&b, "# the prompt as token ids: no chat template\n");
        put(&b, "ids = torch.tensor([[");
        for (int i = 0; ids && i < n; i++) put(&b, "%s%d", i ? ", " : "", ids[i]);
        put(&b, "]])\ninputs = {\"input_ids\": ids, \"attention_mask\": torch.ones_like(ids)}\n");
    }
    tl_sampling sp = tl_session_sampling(s);
    if (!sp.greedy)
        put(&b, "# tokenloop draws from its own generator: same seed, other tokens\ntorch.manual_seed(%llu)\n",
            (unsigned long long)sp.seed);
    const tl_stop_config *sc = tl_session_stop_config(s);
    int req = tl_session_max_new_tokens(s);
    if (req <= 0 && sc && sc->max_new_tokens > 0)
        put(&b, "%s\n", sc->budget_source == TL_BUDGET_DEFAULT ? "# max_new_tokens: transformers' default (nothing set it)"
                        : sc->budget_source == TL_BUDGET_CONTEXT ? "# max_new_tokens: what is left of the context"
                                                                 : "# max_new_tokens: from generation_config.json");
    if (tl_session_stream_mode(s) == TL_STREAM_SERVER)
        put(&b, "# server mode is not a transformers streamer: it prints every byte at once except an\n"
                "# unfinished UTF-8 character and a tail that could become a stop string\n");
    int skip_prompt, skip_special;
    tl_session_streamer_flags(s, &skip_prompt, &skip_special, NULL);
    put(&b, "streamer = TextStreamer(tok, skip_prompt=%s, skip_special_tokens=%s)\n", py_bool(skip_prompt),
        py_bool(skip_special));
    put(&b, "out = model.generate(**inputs");
    if (sp.greedy)
        put(&b, ", do_sample=False");
    else
        put(&b, ", do_sample=True, temperature=%.2f, top_k=%d, top_p=%.2f", sp.temperature, sp.top_k, sp.top_p);
    /* the budget the session stops at, whoever set it (generate() would find the same) */
    if (req > 0) put(&b, ", max_new_tokens=%d", req);
    else if (sc && sc->max_new_tokens > 0) put(&b, ", max_new_tokens=%d", sc->max_new_tokens);
    int n_stop = 0;
    const char *const *stop = tl_session_stop_strings(s, &n_stop);
    if (n_stop) {
        put(&b, ", stop_strings=[");
        for (int i = 0; i < n_stop; i++) {
            if (i) put(&b, ", ");
            put_str(&b, stop[i]);
        }
        put(&b, "], tokenizer=tok");
    }
    put(&b, ", streamer=streamer)\n");
    put(&b, "# generate() returns prompt + answer: the answer starts after the prompt\n");
    put(&b, "new_ids = out[0][inputs[\"input_ids\"].shape[1]:]\n");
    put(&b, "answer = tok.decode(new_ids, skip_special_tokens=True)\n");
    put(&b, "print(new_ids.tolist())\n");
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

char *tl_session_settings_json(const tl_session *s)
{
    cJSON *o = cJSON_CreateObject();
    const char *msgs = tl_session_messages(s);
    cJSON *m = msgs ? cJSON_Parse(msgs) : NULL;
    cJSON_AddItemToObject(o, "messages", m ? m : cJSON_CreateNull());
    cJSON_AddBoolToObject(o, "add_generation_prompt", tl_session_add_generation_prompt(s));
    cJSON_AddBoolToObject(o, "parse_special_in_content", tl_session_parse_special_in_content(s));
    tl_sampling sp = tl_session_sampling(s);
    cJSON_AddBoolToObject(o, "greedy", sp.greedy);
    /* float settings printed as the decimals they were set from, not float32's 0.6000000238 */
    cJSON_AddNumberToObject(o, "temperature", round(sp.temperature * 1e6) / 1e6);
    cJSON_AddNumberToObject(o, "top_k", sp.top_k);
    cJSON_AddNumberToObject(o, "top_p", round(sp.top_p * 1e6) / 1e6);
    cJSON_AddNumberToObject(o, "seed", (double)sp.seed);
    const tl_stop_config *sc = tl_session_stop_config(s);
    cJSON_AddNumberToObject(o, "max_new_tokens_requested", tl_session_max_new_tokens(s));
    /* the effective budget exists once the prompt is rendered (it may depend on its length) */
    if (sc && sc->max_new_tokens > 0) {
        cJSON_AddNumberToObject(o, "max_new_tokens", sc->max_new_tokens);
        cJSON_AddStringToObject(o, "budget_source", tl_budget_source_name(sc->budget_source));
    }
    int n = 0;
    const char *const *stop = tl_session_stop_strings(s, &n);
    cJSON *st = cJSON_AddArrayToObject(o, "stop_strings");
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(st, cJSON_CreateString(stop[i]));
    cJSON_AddStringToObject(o, "stream_mode", tl_session_stream_mode(s) == TL_STREAM_SERVER ? "server" : "hf");
    int skip_prompt, skip_special, clean_up;
    tl_session_streamer_flags(s, &skip_prompt, &skip_special, &clean_up);
    cJSON_AddBoolToObject(o, "skip_prompt", skip_prompt);
    cJSON_AddBoolToObject(o, "skip_special_tokens", skip_special);
    cJSON_AddBoolToObject(o, "clean_up_tokenization_spaces", clean_up);
    char *js = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return js;
}
