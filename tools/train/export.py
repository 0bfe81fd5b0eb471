#!/usr/bin/python3
"""Exports a tools/train checkpoint to the Hugging Face layout and writes the reference logits
that tests/model compares tokenloop against.

  export.py --ckpt DIR/ckpt.pt --model-dir assets/models/tl-mini-instruct \
            --ref-dir tests/model/reference --ref-ids PROMPTS_PREFIX

model.safetensors: bf16, Hub tensor names, tied embeddings (no lm_head.weight); rows of tokens
that never occur in the corpus are zero. The reference forward runs in float32 on the
bf16-rounded weights (what tokenloop does: bf16 weights, fp32 arithmetic)."""
import argparse
import json
import os
import re
import shutil
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import TinyLlama  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def full_state(ck):
    """HF-named fp32 tensors of the full-vocabulary model, rounded through bf16."""
    cfg, st, seen = ck["config"], ck["state"], ck["seen"]
    emb = torch.zeros(cfg["vocab_size"], cfg["hidden_size"])
    emb[torch.tensor(seen)] = st["embed"].float()
    out = {"model.embed_tokens.weight": emb}
    for i in range(cfg["num_hidden_layers"]):
        p = "layers.%d." % i
        h = "model.layers.%d." % i
        out[h + "input_layernorm.weight"] = st[p + "input_layernorm"]
        out[h + "post_attention_layernorm.weight"] = st[p + "post_attention_layernorm"]
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            out[h + "self_attn.%s.weight" % n] = st[p + n + ".weight"]
        for n in ("gate_proj", "up_proj", "down_proj"):
            out[h + "mlp.%s.weight" % n] = st[p + n + ".weight"]
    out["model.norm.weight"] = st["norm"]
    return {k: v.float().contiguous().to(torch.bfloat16) for k, v in out.items()}


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name]
        b = t.view(torch.int16).numpy().astype("<i2").tobytes()
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def hf_config(cfg):
    return {
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 128000,
        "eos_token_id": [128001, 128008, 128009],
        "head_dim": cfg["head_dim"],
        "hidden_act": "silu",
        "hidden_size": cfg["hidden_size"],
        "initializer_range": 0.02,
        "intermediate_size": cfg["intermediate_size"],
        "max_position_embeddings": cfg["max_position_embeddings"],
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": cfg["num_attention_heads"],
        "num_hidden_layers": cfg["num_hidden_layers"],
        "num_key_value_heads": cfg["num_key_value_heads"],
        "pretraining_tp": 1,
        "rms_norm_eps": cfg["rms_norm_eps"],
        "rope_scaling": cfg["rope_scaling"],
        "rope_theta": cfg["rope_theta"],
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.43.0",
        "use_cache": True,
        "vocab_size": cfg["vocab_size"],
    }


GEN_CONFIG = {"bos_token_id": 128000, "do_sample": True, "eos_token_id": [128001, 128008, 128009],
              "temperature": 0.6, "top_p": 0.9, "transformers_version": "4.43.0"}


def reference_model(ck, tensors):
    """A TinyLlama over the whole vocabulary holding the exported (bf16-rounded) weights."""
    cfg = ck["config"]
    m = TinyLlama(cfg, cfg["vocab_size"])
    st = {"embed": tensors["model.embed_tokens.weight"].float(), "norm": tensors["model.norm.weight"].float()}
    for i in range(cfg["num_hidden_layers"]):
        h = "model.layers.%d." % i
        p = "layers.%d." % i
        st[p + "input_layernorm"] = tensors[h + "input_layernorm.weight"].float()
        st[p + "post_attention_layernorm"] = tensors[h + "post_attention_layernorm.weight"].float()
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            st[p + n + ".weight"] = tensors[h + "self_attn.%s.weight" % n].float()
        for n in ("gate_proj", "up_proj", "down_proj"):
            st[p + n + ".weight"] = tensors[h + "mlp.%s.weight" % n].float()
    m.load_state_dict(st)
    return m.eval()


def logits_all(m, ids):
    t = torch.tensor([ids])
    with torch.no_grad():
        h = m.hidden(t, torch.arange(len(ids))[None], torch.zeros_like(t))
        return (h[0] @ m.embed.t()).numpy().astype(np.float32)


def greedy(m, ids, n):
    """Greedy continuation, stopping after an end-of-turn token (128001, 128008, 128009)."""
    ids, out = list(ids), []
    for _ in range(n):
        t = int(np.argmax(logits_all(m, ids)[-1]))
        out.append(t)
        ids.append(t)
        if t in (128001, 128008, 128009):
            break
    return out


def loss_curve(log, png):
    """log: the checkpoint's (step, loss, seconds) of every step."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    xs = [x[0] for x in log]
    ys = [x[1] for x in log]
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    ax.plot(xs, ys)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats/token, full 128,256-way softmax)")
    ax.set_yscale("log")
    ax.set_title("tl-mini-instruct training loss")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(png)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--ref-dir", required=True)
    ap.add_argument("--ref-ids", required=True, help="PREFIX.ids/.lens of the reference prompts (tools/corpus/tokenize.js)")
    ap.add_argument("--ref-texts", required=True, help="the JSONL those ids came from")
    args = ap.parse_args()
    torch.set_num_threads(2)
    ck = torch.load(args.ckpt)
    tensors = full_state(ck)
    os.makedirs(args.model_dir, exist_ok=True)
    write_safetensors(os.path.join(args.model_dir, "model.safetensors"), tensors)
    with open(os.path.join(args.model_dir, "config.json"), "w") as f:
        json.dump(hf_config(ck["config"]), f, indent=2)
        f.write("\n")
    with open(os.path.join(args.model_dir, "generation_config.json"), "w") as f:
        json.dump(GEN_CONFIG, f, indent=2)
        f.write("\n")
    for n in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(ROOT, "assets/tokenizer", n), os.path.join(args.model_dir, n))
    loss_curve(ck["log"], os.path.join(args.model_dir, "loss_curve.png"))

    # reference logits
    m = reference_model(ck, tensors)
    ids = np.fromfile(args.ref_ids + ".ids", dtype="<i4")
    lens = np.fromfile(args.ref_ids + ".lens", dtype="<i4")
    items = [json.loads(l) for l in open(args.ref_texts) if l.strip()]
    os.makedirs(args.ref_dir, exist_ok=True)
    prompts, nogen, o = [], [], 0
    for i, n in enumerate(lens):
        p = ids[o:o + n].tolist()
        o += n
        if items[i]["kind"] == "nogen":
            nogen.append({"text": items[i]["text"], "ids": p, "greedy": greedy(m, p, 12)})
            continue
        k = len(prompts)
        lg = logits_all(m, p)
        lg[-1].astype("<f4").tofile(os.path.join(args.ref_dir, "last%d.f32" % k))
        top = []
        for row in lg:
            kk = np.argsort(-row, kind="stable")[:20]
            top.append([[int(j), round(float(row[j]), 5)] for j in kk])
        prompts.append({"text": items[i]["text"], "ids": p, "last_logits": "last%d.f32" % k, "top20": top,
                        "greedy": greedy(m, p, 12)})
    with open(os.path.join(args.ref_dir, "reference.json"), "w") as f:
        json.dump({"model": "assets/models/tl-mini-instruct",
                   "how": "tools/train/export.py: float32 forward of the bf16-rounded weights",
                   "prompts": prompts, "nogen": nogen}, f, ensure_ascii=False)
    secs, last = 0.0, 0.0
    for _, _, el in ck["log"]:           # each training phase restarts its clock
        if el < last:
            secs += last
        last = el
    secs += last
    ck_info = {"steps": len(ck["log"]), "seconds": round(secs, 1), "final_loss": ck["log"][-1][1],
               "mean_loss_last_20": float(np.mean([x[1] for x in ck["log"][-20:]])),
               "seen_tokens": len(ck["seen"]),
               "params": int(sum(t.numel() for t in tensors.values())),
               "file_bytes": os.path.getsize(os.path.join(args.model_dir, "model.safetensors"))}
    print(json.dumps(ck_info))
    with open(os.path.join(args.model_dir, "training_summary.json"), "w") as f:
        json.dump(ck_info, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
