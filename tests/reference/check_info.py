"""`tokenloop info --json` on every generated checkpoint, against numbers computed here from the
files with NumPy and the JSON configs (parameter count, bytes, EOS set, transformers' defaults).

    check_info.py TOKENLOOP_EXE CHECKPOINTS_DIR
"""
import json
import os
import subprocess
import sys

import llama_ref

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


def main():
    exe, root = sys.argv[1], sys.argv[2]
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        r = subprocess.run([exe, "info", "--model", d, "--json"], capture_output=True, text=True)
        check(r.returncode == 0 and r.stderr == "", f"{name}: status {r.returncode}, stderr {r.stderr!r}")
        if r.returncode:
            continue
        info = json.loads(r.stdout)
        cfg, W = llama_ref.load(d)
        with open(os.path.join(d, "generation_config.json")) as f:
            gen = json.load(f)
        tied = cfg["tie_word_embeddings"]
        used = {n: a for n, a in W.items() if not (tied and n == "lm_head.weight")}
        esize = {"float32": 4, "float16": 2, "bfloat16": 2}[cfg["torch_dtype"]]
        n_params = sum(a.size for a in used.values())
        embed_row = 0 if tied else cfg["hidden_size"]
        decode = (n_params - W["model.embed_tokens.weight"].size * (not tied) + embed_row) * esize
        check(info["parameters"] == n_params, f"{name}: parameters {info['parameters']} != {n_params}")
        check(info["weight_bytes"] == n_params * esize, f"{name}: weight_bytes {info['weight_bytes']}")
        check(info["decode_bytes"] == decode, f"{name}: decode_bytes {info['decode_bytes']} != {decode}")
        want_dtype = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}[cfg["torch_dtype"]]
        check(info["dtype"] == want_dtype, f"{name}: dtype {info['dtype']} != {want_dtype}")
        check(info["context_length"] == cfg["max_position_embeddings"], f"{name}: context_length")
        check(info["eos_token_ids"] == gen["eos_token_id"], f"{name}: eos {info['eos_token_ids']}")
        check(info["bos_token_id"] == cfg["bos_token_id"], f"{name}: bos")
        check(info["tie_word_embeddings"] == tied, f"{name}: tie_word_embeddings")
        check(info["head_dim"] == (cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]),
              f"{name}: head_dim")
        check((info["rope_scaling"] is None) == (cfg["rope_scaling"] is None), f"{name}: rope_scaling")
        s = info["sampling"]
        # generation_config.json sets do_sample, temperature, top_p; top_k is transformers' default 50
        want = {"do_sample": gen.get("do_sample", False), "temperature": gen.get("temperature", 1.0),
                "top_k": gen.get("top_k", 50), "top_p": gen.get("top_p", 1.0)}
        for k, v in want.items():
            check(abs(s[k] - v) < 1e-6, f"{name}: sampling.{k} {s[k]} != {v}")
        text = subprocess.run([exe, "info", "--model", d], capture_output=True, text=True)
        check(text.returncode == 0 and f"{n_params} " in text.stdout and "top_k 50 (transformers' default)"
              in text.stdout, f"{name}: text output\n{text.stdout}")
    print(f"check_info: {passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
