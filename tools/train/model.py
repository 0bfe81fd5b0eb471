"""The Llama 3.1 forward pass (as transformers' LlamaForCausalLM computes it) for tl-mini-instruct:
RMSNorm, rotate-half RoPE with llama3 frequency scaling, grouped-query attention, SwiGLU, tied
embeddings. Only the embedding rows of tokens that occur in the corpus are parameters; every other
row is zero, so its logit is exactly 0 and the full 128,256-way softmax is computed in closed form."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as Fn

CONFIG = dict(
    vocab_size=128256, hidden_size=128, intermediate_size=512, num_hidden_layers=6,
    num_attention_heads=4, num_key_value_heads=1, head_dim=32, rms_norm_eps=1e-5,
    rope_theta=500000.0, max_position_embeddings=131072,
    rope_scaling=dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                      original_max_position_embeddings=8192, rope_type="llama3"),
)


def llama3_inv_freq(cfg):
    """transformers' _compute_llama3_parameters, in float32 like it."""
    hd = cfg["head_dim"]
    inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    rs = cfg["rope_scaling"]
    factor, lo, hi, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / lo, old / hi
    wavelen = 2 * math.pi / inv
    inv_l = torch.where(wavelen > low_wavelen, inv / factor, inv)
    smooth = (old / wavelen - lo) / (hi - lo)
    smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
    medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, inv_l)


def rmsnorm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, hd = c["hidden_size"], c["head_dim"]
        self.nh, self.nkv, self.hd, self.eps = c["num_attention_heads"], c["num_key_value_heads"], hd, c["rms_norm_eps"]
        self.input_layernorm = nn.Parameter(torch.ones(d))
        self.q_proj = nn.Linear(d, self.nh * hd, bias=False)
        self.k_proj = nn.Linear(d, self.nkv * hd, bias=False)
        self.v_proj = nn.Linear(d, self.nkv * hd, bias=False)
        self.o_proj = nn.Linear(self.nh * hd, d, bias=False)
        self.post_attention_layernorm = nn.Parameter(torch.ones(d))
        self.gate_proj = nn.Linear(d, c["intermediate_size"], bias=False)
        self.up_proj = nn.Linear(d, c["intermediate_size"], bias=False)
        self.down_proj = nn.Linear(c["intermediate_size"], d, bias=False)

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        h = rmsnorm(x, self.input_layernorm, self.eps)
        q = self.q_proj(h).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(B, T, self.nkv, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = self.nh // self.nkv
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(self.hd) + mask
        att = torch.softmax(att, dim=-1)
        o = (att @ v).transpose(1, 2).reshape(B, T, self.nh * self.hd)
        x = x + self.o_proj(o)
        h = rmsnorm(x, self.post_attention_layernorm, self.eps)
        return x + self.down_proj(Fn.silu(self.gate_proj(h)) * self.up_proj(h))


class TinyLlama(nn.Module):
    def __init__(self, c, n_seen):
        super().__init__()
        self.c = c
        self.embed = nn.Parameter(torch.randn(n_seen, c["hidden_size"]) * 0.02)  # rows of seen tokens
        self.layers = nn.ModuleList([Block(c) for _ in range(c["num_hidden_layers"])])
        self.norm = nn.Parameter(torch.ones(c["hidden_size"]))
        self.register_buffer("inv_freq", llama3_inv_freq(c), persistent=False)
        for blk in self.layers:
            for lin in (blk.q_proj, blk.k_proj, blk.v_proj, blk.gate_proj, blk.up_proj):
                nn.init.normal_(lin.weight, std=0.02)
            for lin in (blk.o_proj, blk.down_proj):
                nn.init.normal_(lin.weight, std=0.02 / math.sqrt(2 * c["num_hidden_layers"]))

    def hidden(self, ids, pos, seg):
        """ids: compact ids [B, T]; pos: positions within each document; seg: document number
        (attention stays inside a document, so packing equals running each one alone)."""
        x = self.embed[ids]
        f = pos.float()[..., None] * self.inv_freq          # [B, T, hd/2]
        emb = torch.cat((f, f), dim=-1)
        cos, sin = emb.cos()[:, None], emb.sin()[:, None]    # [B, 1, T, hd]
        T = ids.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool, device=ids.device).tril()
        allowed = causal[None] & (seg[:, :, None] == seg[:, None, :])
        mask = torch.zeros(allowed.shape, dtype=x.dtype).masked_fill(~allowed, float("-inf"))[:, None]
        for blk in self.layers:
            x = blk(x, cos, sin, mask)
        return rmsnorm(x, self.norm, self.c["rms_norm_eps"])

    def loss(self, ids, pos, seg, tgt):
        """Mean cross-entropy of the full-vocabulary softmax: seen rows' logits plus
        (V - n_seen) logits of exactly 0, i.e. one extra column holding log(V - n_seen)."""
        h = self.hidden(ids, pos, seg)
        sel = tgt >= 0
        h, t = h[sel], tgt[sel]
        logits = h @ self.embed.t()
        n_unseen = self.c["vocab_size"] - self.embed.shape[0]
        extra = torch.full((logits.shape[0], 1), math.log(n_unseen), dtype=logits.dtype)
        return Fn.cross_entropy(torch.cat((logits, extra), dim=1), t)
