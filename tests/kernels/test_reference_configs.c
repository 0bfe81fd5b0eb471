/* The built-in synthetic shapes hold the published config.json values
 * (../shared/reference-configs), field by field as tl_config_load reads them. */
#include <stdio.h>

#include "tl_test.h"
#include "tokenloop/synthetic.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_reference_configs SHARED_DIR\n");
        return 2;
    }
    static const char *pairs[][2] = {{"llama-3.2-1b", "llama-3.2-1b-instruct"}, {"llama-3.1-8b", "llama-3.1-8b-instruct"}};
    for (int i = 0; i < 2; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/reference-configs/%s/config.json", argv[1], pairs[i][1]);
        FILE *f = fopen(path, "r");
        if (!f) {
            printf("%s: absent, skipped\n", path);
            return 77;
        }
        fclose(f);
        tl_config a, b;
        tl_error err;
        TL_CHECK(tl_synthetic_config(&a, pairs[i][0], &err) == 0);
        TL_CHECK_MSG(tl_config_load(&b, path, &err) == 0, "%s", err.msg);
        TL_CHECK_INT(a.hidden_size, b.hidden_size);
        TL_CHECK_INT(a.intermediate_size, b.intermediate_size);
        TL_CHECK_INT(a.n_layers, b.n_layers);
        TL_CHECK_INT(a.n_heads, b.n_heads);
        TL_CHECK_INT(a.n_kv_heads, b.n_kv_heads);
        TL_CHECK_INT(a.head_dim, b.head_dim);
        TL_CHECK_INT(a.vocab_size, b.vocab_size);
        TL_CHECK_INT(a.max_position_embeddings, b.max_position_embeddings);
        TL_CHECK(a.rms_norm_eps == b.rms_norm_eps);
        TL_CHECK(a.rope_theta == b.rope_theta);
        TL_CHECK_INT(a.rope_llama3, b.rope_llama3);
        TL_CHECK(a.rope_factor == b.rope_factor);
        TL_CHECK(a.rope_low_freq_factor == b.rope_low_freq_factor);
        TL_CHECK(a.rope_high_freq_factor == b.rope_high_freq_factor);
        TL_CHECK_INT(a.rope_original_max_position, b.rope_original_max_position);
        TL_CHECK_INT(a.tie_word_embeddings, b.tie_word_embeddings);
        TL_CHECK_INT(a.bos_id, b.bos_id);
        TL_CHECK_INT(a.n_eos, b.n_eos);
        for (int k = 0; k < a.n_eos && k < b.n_eos; k++)
            TL_CHECK_INT(a.eos_ids[k], b.eos_ids[k]);
        TL_CHECK_INT(a.dtype, b.dtype);
    }
    return TL_TEST_END("reference_configs");
}
