"""Small random Llama models as GGUF files, written with the `gguf` package's GGUFWriter as
llama.cpp's converter lays them out (tensor names, Q/K rows permuted for llama.cpp's rope,
norms in F32, llama3 rope scaling as rope_freqs.weight), and their float64 reference.

The reference reads the file back with gguf's GGUFReader, decodes every tensor with
gguf.quants.dequantize, undoes the Q/K permutation and runs tests/reference/llama_ref.py.
"""
import json
import math
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as QT

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
import llama_ref  # noqa: E402
import check_engine  # noqa: E402  (QuantizedMatrix: a product whose input is quantized to Q8_0)

DTYPES = {"f32": QT.F32, "f16": QT.F16, "bf16": QT.BF16, "q8_0": QT.Q8_0, "q4_0": QT.Q4_0,
          "q4_1": QT.Q4_1, "q4_k": QT.Q4_K, "q5_k": QT.Q5_K, "q6_k": QT.Q6_K}

LLAMA_NAMES = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
               "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
               "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}


def small_cfg(**kw):
    c = dict(hidden=64, ff=160, layers=2, heads=4, kv_heads=2, vocab=272, ctx=512, eps=1e-5, theta=10000.0,
             rope_scaling=None, tied=False)
    c.update(kw)
    return c


def gpt2_bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def small_tokenizer(vocab):
    """256 byte tokens, a few merges, the Llama 3 special tokens the chat template uses, padding."""
    b2u = gpt2_bytes_to_unicode()
    tokens = [b2u[b] for b in range(256)]
    types = [gguf.TokenType.NORMAL] * 256
    merges = []
    for a, b in [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("Ġ", "a")]:
        merges.append(f"{a} {b}")
        tokens.append(a + b)
        types.append(gguf.TokenType.NORMAL)
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    ids = {}
    for s in specials:
        ids[s] = len(tokens)
        tokens.append(s)
        types.append(gguf.TokenType.CONTROL)
    while len(tokens) < vocab:
        tokens.append(f"<|reserved_{len(tokens)}|>")
        types.append(gguf.TokenType.CONTROL)
    return dict(tokens=tokens, types=types, merges=merges, bos=ids["<|begin_of_text|>"],
                eos=ids["<|end_of_text|>"], eot=ids["<|eot_id|>"])


def llama3_tokenizer():
    """assets/tokenizer as llama.cpp's converter writes it: HF token strings by id, added tokens
    CONTROL when special (USER_DEFINED otherwise), merges as "a b"."""
    tok = json.load(open(os.path.join(ROOT, "assets/tokenizer/tokenizer.json"), encoding="utf-8"))
    vocab = dict(tok["model"]["vocab"])
    kinds = {}
    for t in tok["added_tokens"]:
        vocab[t["content"]] = t["id"]
        kinds[t["id"]] = gguf.TokenType.CONTROL if t["special"] else gguf.TokenType.USER_DEFINED
    n = max(vocab.values()) + 1
    tokens, types = [f"[PAD{i}]" for i in range(n)], [gguf.TokenType.UNUSED] * n
    for s, i in vocab.items():
        tokens[i] = s
        types[i] = kinds.get(i, gguf.TokenType.NORMAL)
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    return dict(tokens=tokens, types=types, merges=merges, bos=128000, eos=128009, eot=128009, eom=128008)


def chat_template():
    with open(os.path.join(ROOT, "assets/tokenizer/tokenizer_config.json"), encoding="utf-8") as f:
        return json.load(f)["chat_template"]


def rope_factors(head_dim, theta, rs):
    """llama3 scaling as llama.cpp's converter stores it: a divisor per frequency."""
    factor, lo, hi, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position"]
    out = []
    for i in range(0, head_dim, 2):
        freq = 1.0 / theta ** (i / head_dim)
        wavelen = 2 * math.pi / freq
        if wavelen < old / hi:
            out.append(1.0)
        elif wavelen > old / lo:
            out.append(factor)
        else:
            s = (old / wavelen - lo) / (hi - lo)
            out.append(1.0 / ((1 - s) / factor + s))
    return np.array(out, dtype=np.float32)


def permute_qk(w, n_head):
    """The converter's row order: within each head, row pairs (i, i + hd/2) side by side."""
    rows = w.shape[0]
    return w.reshape(n_head, 2, rows // n_head // 2, w.shape[1]).swapaxes(1, 2).reshape(w.shape)


def unpermute_qk(w, n_head):
    rows = w.shape[0]
    return w.reshape(n_head, rows // n_head // 2, 2, w.shape[1]).swapaxes(1, 2).reshape(w.shape)


def random_weights(cfg, seed):
    """{gguf name: float32 array [rows, cols]} in transformers' row order."""
    rng = np.random.default_rng(seed)
    d, ff, hd = cfg["hidden"], cfg["ff"], cfg["hidden"] // cfg["heads"]
    q, kv = cfg["heads"] * hd, cfg["kv_heads"] * hd
    W = {"token_embd.weight": rng.normal(0, 1.0, (cfg["vocab"], d)),
         "output_norm.weight": 1 + 0.1 * rng.normal(size=d)}
    if not cfg["tied"]:
        W["output.weight"] = rng.normal(0, d ** -0.5, (cfg["vocab"], d))
    for l in range(cfg["layers"]):
        p = f"blk.{l}."
        W[p + "attn_norm.weight"] = 1 + 0.1 * rng.normal(size=d)
        W[p + "ffn_norm.weight"] = 1 + 0.1 * rng.normal(size=d)
        for name, shape in [("attn_q", (q, d)), ("attn_k", (kv, d)), ("attn_v", (kv, d)), ("attn_output", (d, q)),
                            ("ffn_gate", (ff, d)), ("ffn_up", (ff, d)), ("ffn_down", (d, ff))]:
            W[p + name + ".weight"] = rng.normal(0, shape[1] ** -0.5, shape)
    return {k: v.astype(np.float32) for k, v in W.items()}


def tensor_bytes(arr, qtype):
    """(data, raw_dtype) for GGUFWriter.add_tensor: gguf's own quantizers for the block types."""
    if qtype == QT.F32:
        return arr.astype(np.float32), None
    if qtype == QT.F16:
        return arr.astype(np.float16), None
    return gguf.quants.quantize(arr.astype(np.float32), qtype), qtype


def write(path, cfg, W, dtype, tokenizer="small", template=True, extra_kv=None, types=None, drop=(), arch="llama",
          pre="llama-bpe", skip_keys=()):
    """Writes a GGUF file. dtype: a DTYPES key for every matrix; types: {name: DTYPES key} overrides;
    drop: tensors left out; skip_keys: metadata keys left out."""
    hd = cfg["hidden"] // cfg["heads"]
    tk = llama3_tokenizer() if tokenizer == "llama3" else small_tokenizer(cfg["vocab"]) if tokenizer else None
    w = gguf.GGUFWriter(path, arch)
    w.add_name("tokenloop test model (random weights)")
    w.add_context_length(cfg["ctx"])
    w.add_embedding_length(cfg["hidden"])
    w.add_block_count(cfg["layers"])
    w.add_feed_forward_length(cfg["ff"])
    w.add_rope_dimension_count(hd)
    w.add_head_count(cfg["heads"])
    w.add_head_count_kv(cfg["kv_heads"])
    w.add_layer_norm_rms_eps(cfg["eps"])
    w.add_rope_freq_base(cfg["theta"])
    w.add_vocab_size(cfg["vocab"])
    if tk:
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre(pre)
        w.add_token_list(tk["tokens"])
        w.add_token_types(tk["types"])
        w.add_token_merges(tk["merges"])
        w.add_bos_token_id(tk["bos"])
        w.add_eos_token_id(tk["eos"])
        w.add_eot_token_id(tk["eot"])
        if "eom" in tk:
            w.add_eom_token_id(tk["eom"])
        w.add_add_bos_token(True)
        if template:
            w.add_chat_template(chat_template())
    for k, v in (extra_kv or {}).items():
        if isinstance(v, str):
            w.add_string(k, v)
        elif isinstance(v, float):
            w.add_float32(k, v)
        else:
            w.add_uint32(k, v)
    if cfg["rope_scaling"]:
        w.add_tensor("rope_freqs.weight", rope_factors(hd, cfg["theta"], cfg["rope_scaling"]))
    for name, arr in W.items():
        if name in drop:
            continue
        if arr.ndim == 1:
            w.add_tensor(name, arr.astype(np.float32))
            continue
        if ".attn_q." in name:
            arr = permute_qk(arr, cfg["heads"])
        elif ".attn_k." in name:
            arr = permute_qk(arr, cfg["kv_heads"])
        data, raw = tensor_bytes(np.ascontiguousarray(arr), DTYPES[(types or {}).get(name, dtype)])
        w.add_tensor(name, data, raw_dtype=raw)
    for d in w.kv_data:
        for k in skip_keys:
            d.pop(k, None)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def field(reader, key):
    f = reader.get_field(key)
    return None if f is None else f.contents()


def q8_k(x):
    """x quantized to llama.cpp's Q8_K and back (ggml's quantize_row_q8_K_ref, in NumPy): per 256
    values the first of largest magnitude, max, gives iscale = -127 / max (fp32), q = min(127,
    round-half-even(iscale * x)), and the value is q / iscale."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    b = x.reshape(-1, 256)
    mx = b[np.arange(len(b)), np.argmax(np.abs(b), axis=1)]
    out = np.zeros(b.shape, dtype=np.float64)
    nz = mx != 0
    iscale = (np.float32(-127.0) / mx[nz]).astype(np.float32)
    q = np.minimum(np.rint(b[nz] * iscale[:, None]), 127)
    out[nz] = q.astype(np.float64) * (np.float32(1.0) / iscale).astype(np.float64)[:, None]
    return out.reshape(x.shape)


class Q8KInput:
    """W.T for `x @ W.T` with x through q8_k first (K-quant weights); numpy hands it __rmatmul__."""
    __array_ufunc__ = None

    def __init__(self, wt):
        self.wt = wt

    def __rmatmul__(self, x):
        return q8_k(x) @ self.wt


class Q8KMatrix(check_engine.QuantizedMatrix):
    @property
    def T(self):
        return Q8KInput(self.w.T)


def reference(path):
    """-> (llama_ref cfg dict, {HF name: float64 array}, inv_freq) read back from the file."""
    r = gguf.GGUFReader(path)
    heads, kv = field(r, "llama.attention.head_count"), field(r, "llama.attention.head_count_kv")
    d = field(r, "llama.embedding_length")
    W, factors, quantized = {}, None, {}
    block_types = (gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.Q4_0, gguf.GGMLQuantizationType.Q4_K,
                   gguf.GGMLQuantizationType.Q5_K, gguf.GGMLQuantizationType.Q6_K)
    for t in r.tensors:
        a = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64)
        a = a.reshape([int(x) for x in reversed(t.shape)])
        if t.name == "rope_freqs.weight":
            factors = a
            continue
        if t.name == "token_embd.weight":
            W["model.embed_tokens.weight"] = a
        elif t.name == "output_norm.weight":
            W["model.norm.weight"] = a
        elif t.name == "output.weight":
            W["lm_head.weight"] = a
        else:
            _, l, kind, _ = t.name.split(".")
            if kind == "attn_q":
                a = unpermute_qk(a, heads)
            elif kind == "attn_k":
                a = unpermute_qk(a, kv)
            W[f"model.layers.{l}.{LLAMA_NAMES[kind]}.weight"] = a
        hf = {"token_embd.weight": "model.embed_tokens.weight", "output.weight": "lm_head.weight"}.get(
            t.name, f"model.layers.{t.name.split('.')[1]}.{LLAMA_NAMES.get(t.name.split('.')[2], '')}.weight"
            if t.name.startswith("blk.") else None)
        if t.tensor_type in block_types and hf in W and W[hf].ndim == 2:
            quantized[hf] = t.tensor_type
    tied = "lm_head.weight" not in W
    for name, typ in quantized.items():
        # tokenloop quantizes the input of a product with Q8_0/Q4_0 weights to Q8_0, as llama.cpp
        # does (check_engine.QuantizedMatrix does the same here), and with K-quant weights to Q8_K
        # (Q8KMatrix)
        kq = typ not in (gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.Q4_0)
        W[name] = (Q8KMatrix if kq else check_engine.QuantizedMatrix)(W[name])
    if tied:
        W["lm_head.weight"] = W["model.embed_tokens.weight"]
    cfg = dict(hidden_size=d, num_attention_heads=heads, num_key_value_heads=kv,
               num_hidden_layers=field(r, "llama.block_count"), vocab_size=W["model.embed_tokens.weight"].shape[0],
               rms_norm_eps=field(r, "llama.attention.layer_norm_rms_epsilon"),
               rope_theta=field(r, "llama.rope.freq_base"))
    hd = d // heads
    inv = 1.0 / cfg["rope_theta"] ** (np.arange(0, hd, 2, dtype=np.float64) / hd)
    if factors is not None:
        inv = inv / factors
    return cfg, W, inv


def ref_logits(path, ids_list):
    """float64 last-position logits for each id sequence in ids_list."""
    cfg, W, inv = reference(path)
    saved = llama_ref.inv_freq
    llama_ref.inv_freq = lambda c: inv
    try:
        return [llama_ref.forward(cfg, W, ids, last_only=True)[-1] for ids in ids_list]
    finally:
        llama_ref.inv_freq = saved
