"""Small random Llama checkpoints in the Hugging Face layout, for tests.

    make_checkpoints.py OUT_DIR [--bad BAD_DIR]
        OUT_DIR: every variant in VARIANTS, one folder each
        BAD_DIR: one folder per bad-input case (tests/engine/CMakeLists.txt), each a small
                 f32 checkpoint with exactly one thing wrong

The sharded variant copies meta-llama/Llama-3.1-8B-Instruct's layout: config.json and
generation_config.json with the same fields, model-0000N-of-00004.safetensors, and
model.safetensors.index.json = {"metadata": {"total_size": N}, "weight_map": {name: shard}}
with sorted keys, the shards cut by size so that a layer straddles two of them.
"""
import json
import os
import struct
import sys

import numpy as np

import st_numpy

BASE = dict(vocab=300, hidden=64, intermediate=176, layers=3, heads=8, kv_heads=2, head_dim=None,
            rope_theta=10000.0, llama3=True, max_pos=512)

VARIANTS = {
    # name: dtype, tied, shards, overrides
    "f32-untied": ("F32", False, 1, {}),
    "bf16-tied": ("BF16", True, 1, {}),
    "f16-untied": ("F16", False, 1, {}),
    "bf16-8b-layout": ("BF16", False, 4, {}),                   # Llama-3.1-8B-Instruct's files
    "f32-headdim-norope": ("F32", True, 2, dict(head_dim=12, llama3=False, layers=2)),
}


def config_json(v, dtype, tied):
    hd = v["head_dim"] or v["hidden"] // v["heads"]
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "eos_token_id": [2, 7, 9],
        "head_dim": hd if v["head_dim"] else None,
        "hidden_act": "silu",
        "hidden_size": v["hidden"],
        "initializer_range": 0.02,
        "intermediate_size": v["intermediate"],
        "max_position_embeddings": v["max_pos"],
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": v["heads"],
        "num_hidden_layers": v["layers"],
        "num_key_value_heads": v["kv_heads"],
        "pretraining_tp": 1,
        "rms_norm_eps": 1e-05,
        # original 64: wavelengths below 16 kept, 16..64 interpolated, above 64 divided by 8
        "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 64, "rope_type": "llama3"} if v["llama3"] else None,
        "rope_theta": v["rope_theta"],
        "tie_word_embeddings": tied,
        "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype],
        "transformers_version": "4.43.0.dev0",
        "use_cache": True,
        "vocab_size": v["vocab"],
    }
    if cfg["head_dim"] is None:
        del cfg["head_dim"]
    return cfg


def generation_config_json():
    return {"bos_token_id": 1, "do_sample": True, "eos_token_id": [2, 7, 9], "temperature": 0.6,
            "top_p": 0.9, "transformers_version": "4.42.3"}


def random_weights(v, tied, rng):
    """Scaled so that activations and logits are O(1): greedy choices are not near-ties."""
    hd = v["head_dim"] or v["hidden"] // v["heads"]
    d, ff, q, kv = v["hidden"], v["intermediate"], v["heads"] * hd, v["kv_heads"] * hd

    def mat(rows, cols):
        return rng.standard_normal((rows, cols)) / np.sqrt(cols)

    def norm(n):
        return 1.0 + 0.2 * rng.standard_normal(n)

    W = {"model.embed_tokens.weight": rng.standard_normal((v["vocab"], d))}
    for l in range(v["layers"]):
        p = f"model.layers.{l}."
        W[p + "input_layernorm.weight"] = norm(d)
        W[p + "self_attn.q_proj.weight"] = mat(q, d) * 2.0    # sharper attention
        W[p + "self_attn.k_proj.weight"] = mat(kv, d) * 2.0
        W[p + "self_attn.v_proj.weight"] = mat(kv, d)
        W[p + "self_attn.o_proj.weight"] = mat(d, q)
        W[p + "post_attention_layernorm.weight"] = norm(d)
        W[p + "mlp.gate_proj.weight"] = mat(ff, d)
        W[p + "mlp.up_proj.weight"] = mat(ff, d)
        W[p + "mlp.down_proj.weight"] = mat(d, ff)
    W["model.norm.weight"] = norm(d)
    if not tied:
        W["lm_head.weight"] = mat(v["vocab"], d) * 4.0
    return W


def natural_order(names):
    """embed, layer 0, layer 1, ..., norm, lm_head: the order the shards are cut in."""
    def key(n):
        if n.startswith("model.layers."):
            return (1, int(n.split(".")[2]), n)
        return (0 if "embed" in n else 2 if n == "model.norm.weight" else 3, 0, n)
    return sorted(names, key=key)


def write_sharded(out, W, dtype, n_shards):
    nbytes = {n: a.size * (4 if dtype == "F32" else 2) for n, a in W.items()}
    total = sum(nbytes.values())
    shard_of, acc = {}, 0
    for n in natural_order(W):
        shard_of[n] = min(n_shards - 1, acc * n_shards // total)
        acc += nbytes[n]
    fname = [f"model-{i + 1:05d}-of-{n_shards:05d}.safetensors" for i in range(n_shards)]
    for i in range(n_shards):
        st_numpy.write(os.path.join(out, fname[i]), {n: a for n, a in W.items() if shard_of[n] == i}, dtype)
    index = {"metadata": {"total_size": total}, "weight_map": {n: fname[shard_of[n]] for n in sorted(W)}}
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2, sort_keys=True)


def make(out, dtype, tied, shards, overrides, seed):
    v = dict(BASE, **overrides)
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(seed)
    W = random_weights(v, tied, rng)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config_json(v, dtype, tied), f, indent=2, sort_keys=True)
    with open(os.path.join(out, "generation_config.json"), "w") as f:
        json.dump(generation_config_json(), f, indent=2)
    if shards == 1:
        st_numpy.write(os.path.join(out, "model.safetensors"), W, dtype)
    else:
        write_sharded(out, W, dtype, shards)


def edit_json(path, fn):
    with open(path) as f:
        d = json.load(f)
    fn(d)
    with open(path, "w") as f:
        json.dump(d, f, indent=2)


def write_text(path, text):
    with open(path, "w") as f:
        f.write(text)


def make_bad(root):
    """Each case: a good checkpoint, then one thing broken."""
    import shutil
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    rng = np.random.default_rng(7)
    W = random_weights(BASE, False, rng)
    header, data = st_numpy.encode(W, "F32")

    def base(name, shards=1):
        d = os.path.join(root, name)
        make(d, "F32", False, shards, {}, seed=7)
        return d

    def with_header(name, fn, payload=None):
        d = base(name)
        h = json.loads(json.dumps(header))
        fn(h)
        st_numpy.write_raw(os.path.join(d, "model.safetensors"), h, data if payload is None else payload)

    # config.json and generation_config.json
    d = base("missing-config")
    os.remove(os.path.join(d, "config.json"))
    d = base("malformed-config")
    write_text(os.path.join(d, "config.json"), '{\n  "model_type": "llama",\n  "hidden_size": 64,,\n}\n')
    edit_json(os.path.join(base("unknown-model-type"), "config.json"), lambda c: c.update(model_type="gpt2"))
    edit_json(os.path.join(base("unknown-architecture"), "config.json"),
              lambda c: c.update(architectures=["MistralForCausalLM"]))
    edit_json(os.path.join(base("missing-field"), "config.json"), lambda c: c.pop("num_hidden_layers"))
    edit_json(os.path.join(base("wrong-type-field"), "config.json"), lambda c: c.update(hidden_size="64"))
    edit_json(os.path.join(base("unsupported-rope"), "config.json"),
              lambda c: c["rope_scaling"].update(rope_type="yarn"))
    d = base("malformed-generation-config")
    write_text(os.path.join(d, "generation_config.json"), '{"do_sample": true, "temperature": }')
    d = base("no-weights")
    os.remove(os.path.join(d, "model.safetensors"))

    # safetensors headers that lie
    with_header("offsets-past-end", lambda h: h["model.norm.weight"].update(data_offsets=[688000, 688256]))

    def overlap(h):
        k = h["model.layers.0.self_attn.k_proj.weight"]["data_offsets"]
        o = h["model.layers.0.self_attn.o_proj.weight"]
        n = o["data_offsets"][1] - o["data_offsets"][0]
        o["data_offsets"] = [k[0] + 64, k[0] + 64 + n]
    with_header("overlapping-ranges", overlap)

    def short(h):
        h["model.layers.0.self_attn.q_proj.weight"]["data_offsets"][1] -= 4
    with_header("shape-bytes-mismatch", short)

    d = base("header-longer-than-file")
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", 1000000) + b'{"a": 1}')

    d = base("non-utf8-name")
    h = dict(header)
    h["model.layers.0.@@"] = h.pop("model.layers.0.input_layernorm.weight")
    path = os.path.join(d, "model.safetensors")
    st_numpy.write_raw(path, h, data)
    with open(path, "rb") as f:
        blob = f.read()
    with open(path, "wb") as f:
        f.write(blob.replace(b"model.layers.0.@@", b"model.layers.0.\xff\xfe", 1))

    d = base("header-not-json")
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", 16) + b"{not json at all" + data)
    d = base("truncated-file")
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(b"\x10\x00\x00\x00\x00")

    # tensors that do not match the config
    def without(name, drop):
        d = base(name)
        st_numpy.write(os.path.join(d, "model.safetensors"), {n: a for n, a in W.items() if n != drop}, "F32")
    without("missing-tensor", "model.layers.1.mlp.up_proj.weight")
    without("missing-lm-head", "lm_head.weight")
    d = base("wrong-shape")
    W2 = dict(W)
    W2["model.layers.1.self_attn.k_proj.weight"] = rng.standard_normal((32, 64))
    st_numpy.write(os.path.join(d, "model.safetensors"), W2, "F32")

    def as_i32(h):
        h["model.norm.weight"]["dtype"] = "I32"
    with_header("wrong-dtype", as_i32)

    # model.safetensors.index.json
    idx = "model.safetensors.index.json"
    d = base("index-malformed", shards=2)
    write_text(os.path.join(d, idx), '{"weight_map": {"model.norm.weight": ')
    d = base("index-missing-shard", shards=2)
    os.remove(os.path.join(d, "model-00002-of-00002.safetensors"))
    edit_json(os.path.join(base("index-unlisted-tensor", shards=2), idx),
              lambda j: j["weight_map"].pop("model.norm.weight"))
    edit_json(os.path.join(base("index-wrong-shard", shards=2), idx),
              lambda j: j["weight_map"].update({"model.norm.weight": "model-00001-of-00002.safetensors"}))


def main():
    root = sys.argv[1]
    for i, (name, (dtype, tied, shards, over)) in enumerate(sorted(VARIANTS.items())):
        make(os.path.join(root, name), dtype, tied, shards, over, seed=1000 + i)
    if len(sys.argv) > 3 and sys.argv[2] == "--bad":
        make_bad(sys.argv[3])


if __name__ == "__main__":
    main()
