"""The published Llama configs (../shared/reference-configs) with weights of their real shapes:
each directory gets the Hub's files (config.json, generation_config.json, the shards and
model.safetensors.index.json for 3.1 8B Instruct, one model.safetensors for 3.2 1B) whose
data sections are sparse (holes read as zeros, no disk used). `tokenloop info --json` must
load them and report what the shapes say: parameters and bytes counted here from the tensor
list, which for 3.1 8B are the published 8,030,261,248 parameters and 16,060,522,496 bytes.

    check_real_shapes.py TOKENLOOP_EXE SHARED_DIR WORK_DIR      (exit 77 without SHARED_DIR)
"""
import json
import os
import shutil
import struct
import subprocess
import sys

import make_checkpoints

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


def shapes(cfg):
    d, ff, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    hd = cfg.get("head_dim") or d // cfg["num_attention_heads"]
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    s = {"model.embed_tokens.weight": [v, d], "model.norm.weight": [d]}
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        s.update({p + "input_layernorm.weight": [d], p + "post_attention_layernorm.weight": [d],
                  p + "self_attn.q_proj.weight": [q, d], p + "self_attn.k_proj.weight": [kv, d],
                  p + "self_attn.v_proj.weight": [kv, d], p + "self_attn.o_proj.weight": [d, q],
                  p + "mlp.gate_proj.weight": [ff, d], p + "mlp.up_proj.weight": [ff, d],
                  p + "mlp.down_proj.weight": [d, ff]})
    if not cfg["tie_word_embeddings"]:
        s["lm_head.weight"] = [v, d]
    return s


def numel(shape):
    n = 1
    for x in shape:
        n *= x
    return n


def write_sparse(path, tensors):
    """A BF16 safetensors file whose data section is one hole."""
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for name in sorted(tensors):
        n = numel(tensors[name]) * 2
        header[name] = {"dtype": "BF16", "shape": tensors[name], "data_offsets": [off, off + n]}
        off += n
    js = json.dumps(header).encode()
    js += b" " * (-len(js) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(js)) + js)
        f.truncate(8 + len(js) + off)


def make_dir(src, out, n_shards):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for name in ("config.json", "generation_config.json"):
        if os.path.exists(os.path.join(src, name)):
            shutil.copy(os.path.join(src, name), out)
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    s = shapes(cfg)
    if n_shards == 1:
        write_sparse(os.path.join(out, "model.safetensors"), s)
        return cfg, s
    total = sum(numel(x) * 2 for x in s.values())
    shard_of, acc = {}, 0
    for n in make_checkpoints.natural_order(s):
        shard_of[n] = min(n_shards - 1, acc * n_shards // total)
        acc += numel(s[n]) * 2
    fname = [f"model-{i + 1:05d}-of-{n_shards:05d}.safetensors" for i in range(n_shards)]
    for i in range(n_shards):
        write_sparse(os.path.join(out, fname[i]), {n: x for n, x in s.items() if shard_of[n] == i})
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": {n: fname[shard_of[n]] for n in sorted(s)}},
                  f, indent=2)
    return cfg, s


def main():
    exe, shared, work = sys.argv[1], sys.argv[2], sys.argv[3]
    refs = os.path.join(shared, "reference-configs")
    if not os.path.isdir(refs):
        print(f"{refs}: absent, skipped")
        return 77
    for name, n_shards in (("llama-3.1-8b-instruct", 4), ("llama-3.2-1b-instruct", 1)):
        out = os.path.join(work, name)
        cfg, s = make_dir(os.path.join(refs, name), out, n_shards)
        r = subprocess.run([exe, "info", "--model", out, "--json"], capture_output=True, text=True)
        check(r.returncode == 0, f"{name}: status {r.returncode}: {r.stderr.strip()}")
        if r.returncode:
            continue
        info = json.loads(r.stdout)
        params = sum(numel(x) for x in s.values())
        check(info["parameters"] == params, f"{name}: parameters {info['parameters']} != {params}")
        check(info["weight_bytes"] == 2 * params, f"{name}: weight_bytes {info['weight_bytes']} != {2 * params}")
        check(info["dtype"] == "bf16" and info["context_length"] == cfg["max_position_embeddings"], f"{name}: dtype")
        check(info["eos_token_ids"] == [128001, 128008, 128009], f"{name}: eos {info['eos_token_ids']}")
        check(info["rope_scaling"]["factor"] == cfg["rope_scaling"]["factor"], f"{name}: rope factor")
        if name == "llama-3.1-8b-instruct":
            check(params == 8030261248, f"{name}: {params} parameters, published 8,030,261,248")
            check(info["sampling"] == {"do_sample": True, "temperature": 0.6, "top_k": 50, "top_p": 0.9,
                                       "max_new_tokens": None, "max_length": None}, f"{name}: {info['sampling']}")
            # a decode step reads everything but the embedding table, plus one of its rows
            check(info["decode_bytes"] == 2 * (params - 128256 * 4096 + 4096), f"{name}: decode_bytes")
        else:
            check(params == 1235814400, f"{name}: {params} parameters, published 1,235,814,400")
            check(info["tie_word_embeddings"] is True and info["decode_bytes"] == 2 * params, f"{name}: tied")
        print(f"{name}: {info['parameters']} parameters, {info['weight_bytes']} bytes, "
              f"{info['decode_bytes']} read per decode step")
        shutil.rmtree(out)
    print(f"check_real_shapes: {passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
