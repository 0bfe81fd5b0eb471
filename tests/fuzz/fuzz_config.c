/* config.json and generation_config.json (the same input given to both readers). Oracle: a
 * config the reader accepts is one the forward pass can run: sizes positive, query heads a
 * multiple of key/value heads, EOS ids within bounds. */
#include <math.h>

#include "fuzz.h"
#include "tokenloop/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = tlf_write("config.json", data, size);
    tl_config c;
    tl_error err = {{0}};
    if (tl_config_load(&c, path, &err)) {
        tlf_check_error(&err);
    } else {
        if (c.hidden_size <= 0 || c.intermediate_size <= 0 || c.n_layers <= 0 || c.n_heads <= 0 ||
            c.n_kv_heads <= 0 || c.head_dim <= 0 || c.vocab_size <= 0 || c.max_position_embeddings <= 0)
            tlf_fail("config accepted with a size <= 0");
        if (c.n_heads % c.n_kv_heads) tlf_fail("config accepted with heads that do not divide");
        if (c.n_eos < 0 || c.n_eos > TL_MAX_EOS) tlf_fail("config: eos count out of range");
        if (!(c.rms_norm_eps >= 0) || !isfinite(c.rms_norm_eps) || !(c.rope_theta > 0) || !isfinite(c.rope_theta))
            tlf_fail("config: eps or theta not usable");
    }
    path = tlf_write("generation_config.json", data, size);
    tl_gen_config g;
    err.msg[0] = 0;
    if (tl_gen_config_load(&g, path, &err)) {
        tlf_check_error(&err);
    } else {
        if (g.n_eos < 0 || g.n_eos > TL_MAX_EOS) tlf_fail("generation config: eos count out of range");
        if (g.has_temperature && !isfinite(g.temperature)) tlf_fail("generation config: temperature not finite");
        if (g.has_top_p && !isfinite(g.top_p)) tlf_fail("generation config: top_p not finite");
    }
    return 0;
}
