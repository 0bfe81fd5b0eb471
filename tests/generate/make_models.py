"""Tiny random Llama checkpoints with Llama 3's vocabulary (128,256), so the bundled Llama 3
tokenizer (assets/tokenizer) works with them, for the generation tests.

    make_models.py OUT_DIR

Variants (one folder each; config.json's EOS is 128001 alone so the source of the EOS set shows):
    llama31         generation_config.json as Llama 3.1 Instruct's (EOS 128001/128008/128009,
                    do_sample, temperature 0.6, top_p 0.9)
    gen-max-new     the same + max_new_tokens 7
    gen-max-length  the same + max_length 40 (counts the prompt)
    no-genconfig    no generation_config.json: EOS from config.json, budget 20
    eos-always      attention and MLP write nothing, every embedding has a large first
                    component, and lm_head's row 128008 reads it: greedy picks 128008 (<|eom_id|>)
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import st_numpy  # noqa: E402

V, D, FF, L, H, KV = 128256, 32, 64, 2, 4, 2
HD = D // H


def config():
    return {
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "bos_token_id": 128000,
        "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": D, "intermediate_size": FF,
        "max_position_embeddings": 256, "mlp_bias": False, "model_type": "llama",
        "num_attention_heads": H, "num_hidden_layers": L, "num_key_value_heads": KV,
        "rms_norm_eps": 1e-05,
        "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 64, "rope_type": "llama3"},
        "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "vocab_size": V,
    }


GEN = {"bos_token_id": 128000, "do_sample": True, "eos_token_id": [128001, 128008, 128009],
       "temperature": 0.6, "top_p": 0.9, "transformers_version": "4.42.3"}


def weights(rng, rigged):
    def mat(r, c, scale=1.0):
        return rng.standard_normal((r, c)) / np.sqrt(c) * scale
    W = {"model.embed_tokens.weight": rng.standard_normal((V, D))}
    for l in range(L):
        p = f"model.layers.{l}."
        W[p + "input_layernorm.weight"] = np.ones(D)
        W[p + "self_attn.q_proj.weight"] = mat(D, D, 2.0)
        W[p + "self_attn.k_proj.weight"] = mat(KV * HD, D, 2.0)
        W[p + "self_attn.v_proj.weight"] = mat(KV * HD, D)
        W[p + "self_attn.o_proj.weight"] = mat(D, D) * (0.0 if rigged else 1.0)
        W[p + "post_attention_layernorm.weight"] = np.ones(D)
        W[p + "mlp.gate_proj.weight"] = mat(FF, D)
        W[p + "mlp.up_proj.weight"] = mat(FF, D)
        W[p + "mlp.down_proj.weight"] = mat(D, FF) * (0.0 if rigged else 1.0)
    W["model.norm.weight"] = np.ones(D)
    W["lm_head.weight"] = mat(V, D, 4.0)
    if rigged:
        W["model.embed_tokens.weight"][:, 0] = 8.0
        W["lm_head.weight"][:, 0] = 0.0
        W["lm_head.weight"][128008, 0] = 20.0
    return W


def make(out, name, gen, rigged, seed):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config(), f, indent=2)
    if gen is not None:
        with open(os.path.join(d, "generation_config.json"), "w") as f:
            json.dump(gen, f, indent=2)
    st_numpy.write(os.path.join(d, "model.safetensors"), weights(np.random.default_rng(seed), rigged), "BF16")


def main():
    out = sys.argv[1]
    make(out, "llama31", GEN, False, 1)
    make(out, "gen-max-new", dict(GEN, max_new_tokens=7), False, 1)
    make(out, "gen-max-length", dict(GEN, max_length=40), False, 1)
    make(out, "no-genconfig", None, False, 1)
    make(out, "eos-always", GEN, True, 2)


if __name__ == "__main__":
    main()
