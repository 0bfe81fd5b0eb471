"""A float64 NumPy forward pass of a Llama checkpoint, as transformers' LlamaForCausalLM computes it.

No KV cache: every call recomputes the whole sequence with a causal mask, so it is an
independent check of tokenloop's cache, rewind and prefill chunking as well as its arithmetic.
"""
import json
import math
import os

import numpy as np

import st_numpy


def load(model_dir):
    """-> (config dict, {name: float64 array}) from a single file or the shards of the index."""
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    index = os.path.join(model_dir, "model.safetensors.index.json")
    weights = {}
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    for name in files:
        weights.update(st_numpy.read(os.path.join(model_dir, name)))
    return cfg, weights


def inv_freq(cfg):
    hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    base = cfg.get("rope_theta", 10000.0)
    f = 1.0 / base ** (np.arange(0, hd, 2, dtype=np.float64) / hd)
    rs = cfg.get("rope_scaling")
    if rs and rs.get("rope_type", rs.get("type")) == "llama3":
        factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        wavelen = 2 * math.pi / f
        scaled = np.where(wavelen > old / lo, f / factor, f)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= old / hi) & (wavelen <= old / lo)
        f = np.where(medium, smoothed, scaled)
    return f


def rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def round_bf16(a):
    """float64 -> float32 -> bf16 (nearest even, as tl_f32_to_bf16) -> float64."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32).astype(np.float64).reshape(np.shape(a))


def forward(cfg, W, ids, last_only=False, kv_bf16=False):
    """-> logits [len(ids), vocab], float64 ([1, vocab]: the last position's, if last_only).
    kv_bf16: K (after RoPE) and V rounded to bf16, as a bf16 KV cache holds them."""
    nh, nkv = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    hd = cfg.get("head_dim") or cfg["hidden_size"] // nh
    eps = cfg.get("rms_norm_eps", 1e-6)
    T = len(ids)
    ang = np.arange(T, dtype=np.float64)[:, None] * inv_freq(cfg)[None, :]
    cos = np.cos(np.concatenate([ang, ang], axis=-1))[:, None, :]
    sin = np.sin(np.concatenate([ang, ang], axis=-1))[:, None, :]
    mask = np.triu(np.full((T, T), -np.inf), k=1)

    x = W["model.embed_tokens.weight"][np.asarray(ids)]
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rmsnorm(x, W[p + "input_layernorm.weight"], eps)
        q = (h @ W[p + "self_attn.q_proj.weight"].T).reshape(T, nh, hd)
        k = (h @ W[p + "self_attn.k_proj.weight"].T).reshape(T, nkv, hd)
        v = (h @ W[p + "self_attn.v_proj.weight"].T).reshape(T, nkv, hd)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if kv_bf16:
            k, v = round_bf16(k), round_bf16(v)
        k = np.repeat(k, nh // nkv, axis=1)          # GQA: head h reads kv head h // group
        v = np.repeat(v, nh // nkv, axis=1)
        scores = np.einsum("thd,shd->hts", q, k) / math.sqrt(hd) + mask
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        att = np.einsum("hts,shd->thd", probs, v).reshape(T, nh * hd)
        x = x + att @ W[p + "self_attn.o_proj.weight"].T
        h = rmsnorm(x, W[p + "post_attention_layernorm.weight"], eps)
        g = h @ W[p + "mlp.gate_proj.weight"].T
        u = h @ W[p + "mlp.up_proj.weight"].T
        x = x + (g / (1 + np.exp(-g)) * u) @ W[p + "mlp.down_proj.weight"].T
    if last_only:
        x = x[-1:]
    x = rmsnorm(x, W["model.norm.weight"], eps)
    head = W["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else W["lm_head.weight"]
    return x @ head.T
