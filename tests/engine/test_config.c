/* config.json and generation_config.json, field by field: LlamaConfig's defaults for absent
 * fields, the forms the Hub uses (eos as int or list, rope_scaling null or llama3, "type" for
 * "rope_type", "dtype" for "torch_dtype"), and one-line errors naming the file and the field.
 * Files are written into argv[1]. */
#include <stdio.h>

#include "../common/tl_test.h"
#include "tokenloop/model.h"

static char dir[4096], path[4200];

static const char *write_file(const char *name, const char *text)
{
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return path;
}

#define BASE "\"model_type\": \"llama\", \"hidden_size\": 64, \"intermediate_size\": 128, " \
             "\"num_hidden_layers\": 2, \"num_attention_heads\": 8, \"vocab_size\": 100"

static void test_defaults(void)
{
    tl_config c;
    tl_error err = {{0}};
    TL_CHECK_MSG(tl_config_load(&c, write_file("config.json", "{" BASE ", \"eos_token_id\": 5}"), &err) == 0,
                 "%s", err.msg);
    TL_CHECK_INT(c.n_kv_heads, 8);            /* num_key_value_heads defaults to the heads */
    TL_CHECK_INT(c.head_dim, 8);              /* hidden_size / heads */
    TL_CHECK(c.rms_norm_eps == 1e-6f);
    TL_CHECK(c.rope_theta == 10000.0f);
    TL_CHECK_INT(c.max_position_embeddings, 2048);
    TL_CHECK_INT(c.tie_word_embeddings, 0);
    TL_CHECK_INT(c.bos_id, -1);
    TL_CHECK_INT(c.n_eos, 1);
    TL_CHECK_INT(c.eos_ids[0], 5);
    TL_CHECK_INT(c.rope_llama3, 0);
}

static void test_hub_forms(void)
{
    tl_config c;
    tl_error err = {{0}};
    TL_CHECK_MSG(tl_config_load(&c, write_file("config.json", "{" BASE ", \"num_key_value_heads\": 2, "
        "\"head_dim\": 12, \"eos_token_id\": [128001, 128008, 128009], \"bos_token_id\": 7, \"dtype\": \"bfloat16\", "
        "\"rope_scaling\": {\"type\": \"llama3\", \"factor\": 32.0, \"low_freq_factor\": 1.0, "
        "\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192}, \"rope_theta\": 500000.0, "
        "\"tie_word_embeddings\": true, \"max_position_embeddings\": 131072}"), &err) == 0, "%s", err.msg);
    TL_CHECK_INT(c.n_kv_heads, 2);
    TL_CHECK_INT(c.head_dim, 12);
    TL_CHECK_INT(c.n_eos, 3);
    TL_CHECK_INT(c.eos_ids[2], 128009);
    TL_CHECK_INT(c.bos_id, 7);
    TL_CHECK_INT(c.dtype, TL_BF16);
    TL_CHECK_INT(c.rope_llama3, 1);
    TL_CHECK(c.rope_factor == 32.0f && c.rope_low_freq_factor == 1.0f && c.rope_high_freq_factor == 4.0f);
    TL_CHECK_INT(c.rope_original_max_position, 8192);
    TL_CHECK(c.rope_theta == 500000.0f);
    TL_CHECK_INT(c.tie_word_embeddings, 1);
    TL_CHECK_INT(c.max_position_embeddings, 131072);
    TL_CHECK(tl_config_load(&c, write_file("config.json", "{" BASE ", \"rope_scaling\": null}"), &err) == 0);
    TL_CHECK_INT(c.rope_llama3, 0);
}

/* Each bad config.json: refused with "<path>: <field> ..." on one line. */
static void test_config_errors(void)
{
    static const char *cases[][2] = {
        {"{" BASE ", \"num_key_value_heads\": 3}", "num_attention_heads (8) is not a multiple of num_key_value_heads (3)"},
        {"{" BASE ", \"head_dim\": 7}", "head_dim (7) must be even"},
        {"{\"model_type\": \"llama\", \"hidden_size\": 0}", "hidden_size must be an integer"},
        {"{" BASE ", \"eos_token_id\": [1, \"2\"]}", "eos_token_id must be a token id or a list of them"},
        {"{" BASE ", \"eos_token_id\": [1,2,3,4,5,6,7,8,9]}", "eos_token_id lists more than 8 ids"},
        {"{" BASE ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8}}", "rope_scaling.low_freq_factor is missing"},
        {"{" BASE ", \"rope_scaling\": {\"rope_type\": \"dynamic\", \"factor\": 8}}", "rope_scaling.rope_type \"dynamic\" is not supported"},
        {"{" BASE ", \"tie_word_embeddings\": \"yes\"}", "tie_word_embeddings must be true or false"},
        {"{" BASE ", \"torch_dtype\": \"float8\"}", "torch_dtype must be"},
        {"{\"model_type\": \"mistral\\n\", \"hidden_size\": 64}", "model_type \"mistral\\x0a\" is not supported"},
        {"{" BASE ", \"rms_norm_eps\": \"small\"}", "rms_norm_eps must be a number"},
        {"[1, 2]", "not a JSON object"},
        {"", "malformed JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tl_config c;
        tl_error err = {{0}};
        const char *p = write_file("config.json", cases[i][0]);
        int rc = tl_config_load(&c, p, &err);
        TL_CHECK_MSG(rc == -1 && !strncmp(err.msg, p, strlen(p)) && strstr(err.msg, cases[i][1]) &&
                     !strchr(err.msg, '\n'), "case %zu: \"%s\"", i, err.msg);
    }
}

static void test_gen_config(void)
{
    tl_gen_config g;
    tl_error err = {{0}};
    /* Llama 3.1 8B Instruct's file */
    TL_CHECK(tl_gen_config_load(&g, write_file("generation_config.json",
        "{\"bos_token_id\": 128000, \"do_sample\": true, \"eos_token_id\": [128001, 128008, 128009], "
        "\"temperature\": 0.6, \"top_p\": 0.9, \"transformers_version\": \"4.42.3\"}"), &err) == 0);
    TL_CHECK(g.has_do_sample && g.do_sample);
    TL_CHECK(g.has_temperature && g.temperature == 0.6f);
    TL_CHECK(g.has_top_p && g.top_p == 0.9f);
    TL_CHECK_INT(g.has_top_k, 0);             /* transformers then uses 50 */
    TL_CHECK_INT(g.has_max_new_tokens, 0);
    TL_CHECK_INT(g.n_eos, 3);
    /* top_k null switches top-k off; eos as one int; lengths */
    TL_CHECK(tl_gen_config_load(&g, write_file("generation_config.json",
        "{\"top_k\": null, \"eos_token_id\": 2, \"max_new_tokens\": 64, \"max_length\": 4096}"), &err) == 0);
    TL_CHECK(g.has_top_k && g.top_k == 0);
    TL_CHECK(g.n_eos == 1 && g.eos_ids[0] == 2);
    TL_CHECK(g.has_max_new_tokens && g.max_new_tokens == 64);
    TL_CHECK(g.has_max_length && g.max_length == 4096);
    const char *p = write_file("generation_config.json", "{\"do_sample\": \"true\"}");
    TL_CHECK(tl_gen_config_load(&g, p, &err) == -1 && strstr(err.msg, "do_sample must be true or false"));
    p = write_file("generation_config.json", "{\"top_p\": 1.5}");
    TL_CHECK(tl_gen_config_load(&g, p, &err) == -1 && strstr(err.msg, "top_p must be a number in [0, 1]"));
    TL_CHECK(tl_gen_config_load(&g, "/nonexistent/generation_config.json", &err) == -1 &&
             strstr(err.msg, "/nonexistent/generation_config.json: cannot open"));
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_config SCRATCH_DIR\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    test_defaults();
    test_hub_forms();
    test_config_errors();
    test_gen_config();
    return TL_TEST_END("test_config");
}
