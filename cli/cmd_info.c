/* tokenloop info [--model DIR] [--json]: what a model directory holds, after the loader has
 * checked every tensor against config.json. Sampling defaults are shown as transformers
 * fills them in: a field generation_config.json leaves out takes GenerationConfig's default
 * (do_sample false, temperature 1.0, top_k 50, top_p 1.0). */
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>

#include "commands.h"
#include "tokenloop/model.h"
#include "tokenloop/paths.h"

static const char usage[] =
    "usage: tokenloop info [--model DIR] [--json]\n"
    "  Loads a Hugging Face Llama directory (config.json, generation_config.json, safetensors)\n"
    "  and prints its architecture, parameter count, weight bytes, dtype, context length,\n"
    "  EOS set and sampling defaults.\n"
    "  --model DIR   the model (default: $TOKENLOOP_MODEL, else the bundled tl-mini-instruct)\n";

typedef struct sampling_defaults {
    int do_sample, top_k;
    double temperature, top_p;
} sampling_defaults;

static sampling_defaults defaults(const tl_gen_config *g)
{
    sampling_defaults s = {0, 50, 1.0, 1.0};
    if (g->has_do_sample) s.do_sample = g->do_sample;
    if (g->has_top_k) s.top_k = g->top_k;
    if (g->has_temperature) s.temperature = g->temperature;
    if (g->has_top_p) s.top_p = g->top_p;
    return s;
}

/* generation_config.json's EOS set wins over config.json's, as in transformers. */
static const int *eos_set(const tl_model *m, int *n)
{
    if (m->gen.n_eos) {
        *n = m->gen.n_eos;
        return m->gen.eos_ids;
    }
    *n = m->cfg.n_eos;
    return m->cfg.eos_ids;
}

static uint64_t file_weight_bytes(const tl_model *m)
{
    uint64_t b = 0;
    const tl_weight *top[] = {&m->embed, &m->final_norm, &m->lm_head};
    for (int i = 0; i < 3; i++)
        if (i < 2 || m->lm_head.data != m->embed.data)
            b += tl_weight_bytes(top[i]);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const tl_layer *L = &m->layers[l];
        const tl_weight *w[] = {&L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo,
                                &L->mlp_norm, &L->w_gate, &L->w_up, &L->w_down};
        for (int i = 0; i < 9; i++)
            b += tl_weight_bytes(w[i]);
    }
    return b;
}

static void print_json(const tl_model *m)
{
    const tl_config *c = &m->cfg;
    sampling_defaults s = defaults(&m->gen);
    int n_eos;
    const int *eos = eos_set(m, &n_eos);
    printf("{\"model\":\"");
    for (const char *p = m->dir; *p; p++) {
        if (*p == '"' || *p == '\\')
            putchar('\\');
        putchar((unsigned char)*p < 0x20 ? '?' : *p);
    }
    printf("\",\"architecture\":\"LlamaForCausalLM\",\"model_type\":\"llama\"");
    printf(",\"parameters\":%lld,\"weight_bytes\":%llu,\"decode_bytes\":%llu",
           (long long)m->n_params, (unsigned long long)file_weight_bytes(m), (unsigned long long)m->weight_bytes);
    printf(",\"dtype\":\"%s\",\"torch_dtype\":\"%s\"", tl_dtype_name(m->embed.dtype), tl_dtype_name(c->dtype));
    printf(",\"context_length\":%d,\"vocab_size\":%d", c->max_position_embeddings, c->vocab_size);
    printf(",\"hidden_size\":%d,\"intermediate_size\":%d,\"num_hidden_layers\":%d", c->hidden_size,
           c->intermediate_size, c->n_layers);
    printf(",\"num_attention_heads\":%d,\"num_key_value_heads\":%d,\"head_dim\":%d", c->n_heads, c->n_kv_heads,
           c->head_dim);
    printf(",\"rms_norm_eps\":%g,\"rope_theta\":%g,\"rope_scaling\":", c->rms_norm_eps, c->rope_theta);
    if (c->rope_llama3)
        printf("{\"rope_type\":\"llama3\",\"factor\":%g,\"low_freq_factor\":%g,\"high_freq_factor\":%g,"
               "\"original_max_position_embeddings\":%d}", c->rope_factor, c->rope_low_freq_factor,
               c->rope_high_freq_factor, c->rope_original_max_position);
    else
        printf("null");
    /* GGUF files: llama3 scaling as per-frequency divisors; the loader's note on its weights,
     * e.g. which K-quants run natively (ASCII) */
    printf(",\"rope_freqs\":%s,\"weights_note\":", m->rope_freqs ? "true" : "false");
    if (m->note[0]) printf("\"%s\"", m->note); else printf("null");
    printf(",\"tie_word_embeddings\":%s", c->tie_word_embeddings ? "true" : "false");
    printf(",\"bos_token_id\":");
    if (c->bos_id >= 0) printf("%d", c->bos_id); else printf("null");
    printf(",\"eos_token_ids\":[");
    for (int i = 0; i < n_eos; i++)
        printf("%s%d", i ? "," : "", eos[i]);
    printf("],\"sampling\":{\"do_sample\":%s,\"temperature\":%g,\"top_k\":%d,\"top_p\":%g", s.do_sample ? "true" : "false",
           s.temperature, s.top_k, s.top_p);
    printf(",\"max_new_tokens\":");
    if (m->gen.has_max_new_tokens) printf("%d", m->gen.max_new_tokens); else printf("null");
    printf(",\"max_length\":");
    if (m->gen.has_max_length) printf("%d", m->gen.max_length); else printf("null");
    printf("}}\n");
}

static void print_text(const tl_model *m)
{
    const tl_config *c = &m->cfg;
    sampling_defaults s = defaults(&m->gen);
    int n_eos;
    const int *eos = eos_set(m, &n_eos);
    printf("model          %s\n", m->dir);
    printf("architecture   LlamaForCausalLM (llama): %d layers, hidden %d, MLP %d\n", c->n_layers, c->hidden_size,
           c->intermediate_size);
    printf("attention      %d query heads, %d key/value heads (GQA %d:1), head_dim %d\n", c->n_heads,
           c->n_kv_heads, c->n_heads / c->n_kv_heads, c->head_dim);
    printf("rope           theta %g", c->rope_theta);
    if (c->rope_llama3)
        printf(", llama3 scaling: factor %g, low %g, high %g, original context %d\n", c->rope_factor,
               c->rope_low_freq_factor, c->rope_high_freq_factor, c->rope_original_max_position);
    else if (m->rope_freqs)
        printf(", scaled by the GGUF file's rope_freqs.weight (a divisor per frequency, llama3's)\n");
    else
        printf(", no scaling\n");
    if (m->note[0]) printf("quantization   %s\n", m->note);
    printf("vocabulary     %d tokens, lm_head %s\n", c->vocab_size,
           c->tie_word_embeddings ? "tied to the embedding" : "separate");
    printf("parameters     %lld (%.2f B)\n", (long long)m->n_params, m->n_params / 1e9);
    struct stat st;
    int is_dir = stat(m->dir, &st) == 0 && S_ISDIR(st.st_mode);   /* else a GGUF file: no config.json */
    printf("weights        %llu bytes (%.2f GB), %s", (unsigned long long)file_weight_bytes(m),
           file_weight_bytes(m) / 1e9, tl_dtype_name(m->layers[0].wq.dtype));
    if (is_dir) printf(" (config.json says %s)", tl_dtype_name(c->dtype));
    printf("\n");
    printf("decode step    reads %llu bytes of weights (%.2f GB) plus the KV cache\n",
           (unsigned long long)m->weight_bytes, m->weight_bytes / 1e9);
    printf("context        %d positions\n", c->max_position_embeddings);
    printf("bos            ");
    if (c->bos_id >= 0) printf("%d\n", c->bos_id); else printf("none\n");
    printf("eos            ");
    for (int i = 0; i < n_eos; i++)
        printf("%s%d", i ? " " : "", eos[i]);
    printf("%s\n", n_eos ? "" : "none");
    printf("sampling       %s, temperature %g, top_k %d%s, top_p %g\n", s.do_sample ? "do_sample" : "greedy",
           s.temperature, s.top_k, m->gen.has_top_k ? "" : " (transformers' default)", s.top_p);
    if (m->gen.has_max_new_tokens)
        printf("max_new_tokens %d\n", m->gen.max_new_tokens);
    if (m->gen.has_max_length)
        printf("max_length     %d\n", m->gen.max_length);
}

int cmd_info(int argc, char **argv)
{
    const char *dir = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--model")) {
            if (i + 1 >= argc)
                return cli_fail(2, "info: --model needs a directory");
            dir = argv[++i];
        } else {
            return cli_fail(2, "info: %s: unknown option (see tokenloop info --help)", argv[i]);
        }
    }
    char default_model[4096];
    if (!dir) {
        tl_error perr = {{0}};
        if (tl_paths_default_model(default_model, sizeof default_model, &perr))
            return cli_fail(2, "--model: no model given, and %s", perr.msg);
        dir = default_model;
    }
    tl_model *m = NULL;
    tl_error err = {{0}};
    if (tl_model_load(&m, dir, &err))
        return cli_fail(1, "%s", err.msg);
    if (json)
        print_json(m);
    else
        print_text(m);
    tl_model_free(m);
    return 0;
}
