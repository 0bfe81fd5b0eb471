/* config.json and generation_config.json as transformers reads them for LlamaForCausalLM.
 * Absent optional fields take LlamaConfig's defaults; fields of the wrong type are errors
 * that name the file and the field. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_priv.h"
#include "safetensors.h"
#include "tokenloop/model.h"
#include "tokenloop/file.h"

#define MAX_JSON (16u << 20)


static cJSON *read_json(const char *path, tl_error *err)
{
    char *text;
    size_t len = 0;
    tl_file_read(path, MAX_JSON, &text, &len, err);
    if (!text)
        return NULL;
    /* cJSON would call a byte-order mark malformed JSON at line 1 and stop quietly at a NUL:
     * say what the byte is instead */
    if (len == 0) {
        tl_error_set(err, "%s: malformed JSON: the file is empty", path);
        free(text);
        return NULL;
    }
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) {
        tl_error_set(err, "%s: starts with a UTF-8 byte-order mark (JSON must not; save without it)", path);
        free(text);
        return NULL;
    }
    if (strlen(text) != len) {
        tl_error_set(err, "%s: a NUL byte at offset %zu", path, strlen(text));
        free(text);
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    if (!root) {
        const char *head_end = NULL;
        cJSON *head = cJSON_ParseWithOpts(text, &head_end, 0);
        if (head)
            end = head_end;
        int line = 1;
        for (const char *c = text; end && c < end; c++)
            line += *c == '\n';
        if (head)
            tl_error_set(err, "%s: text after the JSON value on line %d", path, line);
        else
            tl_error_set(err, "%s: malformed JSON near line %d", path, line);
        cJSON_Delete(head);
    } else if (!cJSON_IsObject(root)) {
        tl_error_set(err, "%s: not a JSON object", path);
        cJSON_Delete(root);
        root = NULL;
    }
    free(text);
    return root;
}

static const cJSON *field(const cJSON *o, const char *key)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNull(j) ? NULL : j;
}

static int is_int(const cJSON *j, double lo, double hi)
{
    return cJSON_IsNumber(j) && j->valuedouble >= lo && j->valuedouble <= hi &&
           j->valuedouble == (double)(long long)j->valuedouble;
}

/* An integer in [lo, hi]; *out keeps its value when an optional field is absent or null. */
static int get_int(const cJSON *o, const char *key, int *out, int lo, int hi, int required,
                   const char *path, tl_error *err)
{
    const cJSON *j = field(o, key);
    if (!j)
        return required ? tl_error_set(err, "%s: %s is missing", path, key) : 0;
    if (!is_int(j, lo, hi))
        return tl_error_set(err, "%s: %s must be an integer in [%d, %d]", path, key, lo, hi);
    *out = (int)j->valuedouble;
    return 0;
}

static int get_float(const cJSON *o, const char *key, float *out, double lo, double hi,
                     const char *path, tl_error *err)
{
    const cJSON *j = field(o, key);
    if (!j)
        return 0;
    if (!cJSON_IsNumber(j) || !(j->valuedouble >= lo && j->valuedouble <= hi))
        return tl_error_set(err, "%s: %s must be a number in [%g, %g]", path, key, lo, hi);
    *out = (float)j->valuedouble;
    return 0;
}

/* eos_token_id: an int or a list of ints. */
static int get_ids(const cJSON *o, const char *key, int *ids, int *n, const char *path, tl_error *err)
{
    const cJSON *j = field(o, key), *e;
    *n = 0;
    if (!j)
        return 0;
    if (is_int(j, 0, 1e9)) {
        ids[(*n)++] = (int)j->valuedouble;
        return 0;
    }
    if (!cJSON_IsArray(j))
        return tl_error_set(err, "%s: %s must be a token id or a list of them", path, key);
    cJSON_ArrayForEach(e, j) {
        if (!is_int(e, 0, 1e9))
            return tl_error_set(err, "%s: %s must be a token id or a list of them", path, key);
        if (*n == TL_MAX_EOS)
            return tl_error_set(err, "%s: %s lists more than %d ids", path, key, TL_MAX_EOS);
        ids[(*n)++] = (int)e->valuedouble;
    }
    return 0;
}

static int parse_dtype(const cJSON *root, tl_dtype *out, const char *path, tl_error *err)
{
    const char *key = field(root, "torch_dtype") ? "torch_dtype" : "dtype";  /* newer transformers */
    const cJSON *j = field(root, key);
    if (!j)
        return 0;
    if (cJSON_IsString(j)) {
        if (!strcmp(j->valuestring, "bfloat16")) { *out = TL_BF16; return 0; }
        if (!strcmp(j->valuestring, "float16")) { *out = TL_F16; return 0; }
        if (!strcmp(j->valuestring, "float32")) { *out = TL_F32; return 0; }
    }
    return tl_error_set(err, "%s: %s must be \"bfloat16\", \"float16\" or \"float32\"", path, key);
}

static int check_architecture(const cJSON *root, const char *path, tl_error *err)
{
    const cJSON *mt = field(root, "model_type"), *arch = field(root, "architectures"), *a;
    if (!cJSON_IsString(mt))
        return tl_error_set(err, "%s: model_type is missing", path);
    char pb[80];
    if (strcmp(mt->valuestring, "llama"))
        return tl_error_set(err, "%s: model_type \"%s\" is not supported (only \"llama\")", path,
                            tl_st_printable(mt->valuestring, pb, sizeof pb));
    if (!arch)
        return 0;
    if (!cJSON_IsArray(arch))
        return tl_error_set(err, "%s: architectures must be a list", path);
    cJSON_ArrayForEach(a, arch)
        if (!cJSON_IsString(a) || strcmp(a->valuestring, "LlamaForCausalLM"))
            return tl_error_set(err, "%s: architecture \"%s\" is not supported (only LlamaForCausalLM)",
                                path, cJSON_IsString(a) ? tl_st_printable(a->valuestring, pb, sizeof pb) : "?");
    return 0;
}

static int parse_rope_scaling(const cJSON *root, tl_config *c, const char *path, tl_error *err)
{
    const cJSON *rs = field(root, "rope_scaling");
    if (!rs)
        return 0;
    const cJSON *type = field(rs, "rope_type");
    if (!type)
        type = field(rs, "type");
    if (!cJSON_IsObject(rs) || !cJSON_IsString(type))
        return tl_error_set(err, "%s: rope_scaling must be null or an object with a rope_type", path);
    if (!strcmp(type->valuestring, "default"))
        return 0;
    char pb[80];
    if (strcmp(type->valuestring, "llama3"))
        return tl_error_set(err, "%s: rope_scaling.rope_type \"%s\" is not supported (only llama3)", path,
                            tl_st_printable(type->valuestring, pb, sizeof pb));
    c->rope_llama3 = 1;
    const char *keys[] = {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"};
    for (int i = 0; i < 4; i++)
        if (!cJSON_IsNumber(field(rs, keys[i])))
            return tl_error_set(err, "%s: rope_scaling.%s is missing", path, keys[i]);
    if (get_float(rs, "factor", &c->rope_factor, 1e-3, 1e6, path, err) ||
        get_float(rs, "low_freq_factor", &c->rope_low_freq_factor, 1e-6, 1e6, path, err) ||
        get_float(rs, "high_freq_factor", &c->rope_high_freq_factor, 1e-6, 1e6, path, err) ||
        get_int(rs, "original_max_position_embeddings", &c->rope_original_max_position, 1, 1 << 30, 1, path, err))
        return -1;
    if (c->rope_high_freq_factor <= c->rope_low_freq_factor)
        return tl_error_set(err, "%s: rope_scaling.high_freq_factor must exceed low_freq_factor", path);
    return 0;
}

static int parse_config(const cJSON *root, tl_config *c, const char *path, tl_error *err)
{
    memset(c, 0, sizeof *c);
    c->rms_norm_eps = 1e-6f;
    c->rope_theta = 10000.0f;
    c->max_position_embeddings = 2048;
    c->bos_id = -1;
    c->dtype = TL_F32;
    c->n_kv_heads = -1;
    c->head_dim = -1;
    const int big = 1 << 20;
    if (check_architecture(root, path, err) ||
        get_int(root, "hidden_size", &c->hidden_size, 1, big, 1, path, err) ||
        get_int(root, "intermediate_size", &c->intermediate_size, 1, 4 * big, 1, path, err) ||
        get_int(root, "num_hidden_layers", &c->n_layers, 1, 4096, 1, path, err) ||
        get_int(root, "num_attention_heads", &c->n_heads, 1, 4096, 1, path, err) ||
        get_int(root, "num_key_value_heads", &c->n_kv_heads, 1, 4096, 0, path, err) ||
        get_int(root, "head_dim", &c->head_dim, 2, 4096, 0, path, err) ||
        get_int(root, "vocab_size", &c->vocab_size, 1, 16 * big, 1, path, err) ||
        get_int(root, "max_position_embeddings", &c->max_position_embeddings, 1, 1 << 30, 0, path, err) ||
        get_float(root, "rms_norm_eps", &c->rms_norm_eps, 0, 1, path, err) ||
        get_float(root, "rope_theta", &c->rope_theta, 1, 1e12, path, err) ||
        parse_rope_scaling(root, c, path, err) ||
        get_int(root, "bos_token_id", &c->bos_id, 0, 1 << 30, 0, path, err) ||
        get_ids(root, "eos_token_id", c->eos_ids, &c->n_eos, path, err) ||
        parse_dtype(root, &c->dtype, path, err))
        return -1;
    const cJSON *tie = field(root, "tie_word_embeddings");
    if (tie && !cJSON_IsBool(tie))
        return tl_error_set(err, "%s: tie_word_embeddings must be true or false", path);
    c->tie_word_embeddings = cJSON_IsTrue(tie);

    if (c->n_kv_heads < 0)
        c->n_kv_heads = c->n_heads;
    if (c->n_heads % c->n_kv_heads)
        return tl_error_set(err, "%s: num_attention_heads (%d) is not a multiple of num_key_value_heads (%d)",
                            path, c->n_heads, c->n_kv_heads);
    if (c->head_dim < 0) {
        if (c->hidden_size % c->n_heads)
            return tl_error_set(err, "%s: hidden_size (%d) is not a multiple of num_attention_heads (%d)", path,
                                c->hidden_size, c->n_heads);
        c->head_dim = c->hidden_size / c->n_heads;
    }
    if (c->head_dim % 2)
        return tl_error_set(err, "%s: head_dim (%d) must be even for rotary embeddings", path, c->head_dim);
    if ((long long)c->n_heads * c->head_dim > big)
        return tl_error_set(err, "%s: num_attention_heads x head_dim is too large", path);
    return 0;
}

int tl_config_load_ex(tl_config *cfg, const char *path, int *has_dtype, tl_error *err)
{
    cJSON *root = read_json(path, err);
    if (!root)
        return -1;
    int rc = parse_config(root, cfg, path, err);
    *has_dtype = field(root, "torch_dtype") || field(root, "dtype");
    cJSON_Delete(root);
    return rc;
}

int tl_config_load(tl_config *cfg, const char *path, tl_error *err)
{
    int has_dtype;
    return tl_config_load_ex(cfg, path, &has_dtype, err);
}

static int get_bool(const cJSON *o, const char *key, int *has, int *out, const char *path, tl_error *err)
{
    const cJSON *j = field(o, key);
    if (!j)
        return 0;
    if (!cJSON_IsBool(j))
        return tl_error_set(err, "%s: %s must be true or false", path, key);
    *has = 1;
    *out = cJSON_IsTrue(j);
    return 0;
}

int tl_gen_config_load(tl_gen_config *g, const char *path, tl_error *err)
{
    memset(g, 0, sizeof *g);
    cJSON *root = read_json(path, err);
    if (!root)
        return -1;
    int rc = get_bool(root, "do_sample", &g->has_do_sample, &g->do_sample, path, err) ||
             get_float(root, "temperature", &g->temperature, 0, 1e6, path, err) ||
             get_float(root, "top_p", &g->top_p, 0, 1, path, err) ||
             get_int(root, "top_k", &g->top_k, 0, 1 << 30, 0, path, err) ||
             get_int(root, "max_new_tokens", &g->max_new_tokens, 0, 1 << 30, 0, path, err) ||
             get_int(root, "max_length", &g->max_length, 0, 1 << 30, 0, path, err) ||
             get_ids(root, "eos_token_id", g->eos_ids, &g->n_eos, path, err);
    if (!rc) {
        g->has_temperature = field(root, "temperature") != NULL;
        g->has_top_p = field(root, "top_p") != NULL;
        /* "top_k": null switches top-k off (0); absent leaves transformers' default of 50 */
        g->has_top_k = cJSON_GetObjectItemCaseSensitive(root, "top_k") != NULL;
        g->has_max_new_tokens = field(root, "max_new_tokens") != NULL;
        g->has_max_length = field(root, "max_length") != NULL;
        /* transformers refuses to sample at temperature 0 (TemperatureLogitsWarper); the
         * sampler would skip it and sample at 1, which is neither what the file says nor greedy */
        if (g->has_do_sample && g->do_sample && g->has_temperature && !(g->temperature > 0))
            rc = tl_error_set(err, "%s: temperature must be > 0 when do_sample is true (for greedy, do_sample false)",
                              path);
    }
    cJSON_Delete(root);
    return rc ? -1 : 0;
}
