"""Runs tests/engine/engine_dump on a checkpoint and checks every forward pass against llama_ref.py.

    check_engine.py DUMP_EXE MODEL_DIR OUT_PREFIX TOL [--bf16-activations] [--dtype q8_0|q4_0]
                    [--kv-cache bf16] OP...

With --dtype the reference's matrices are quantized and dequantized by the `gguf` package
(llama.cpp's quantizers in NumPy), and the input of every product with them is quantized to
Q8_0 and back the same way, as tokenloop's kernels (and llama.cpp's) quantize x: what remains is
the arithmetic (fp32 activations in tokenloop, float64 here), so the tolerance stays small.
With --kv-cache bf16 the reference rounds K (after RoPE) and V to bf16 as the cache holds them.

For each pass the error is max|tokenloop - ref| / max|ref| over the vocabulary at that position
(ref: float64 NumPy over the whole sequence so far, no cache); it must be <= TOL. Greedy passes
also check that the token tokenloop fed is the argmax of the reference logits before it, or a
token whose reference score lies within TOL (the same relative measure) of the argmax's: scores
that close are a tie at the precision TOL promises, and each such step is printed.
"""
import os
import subprocess
import sys

import numpy as np

import llama_ref


class QuantizedInput:
    """W.T for a product `x @ W.T` whose x is first quantized to Q8_0 and back (fp32 x, as the
    engine holds it). numpy hands `x @ this` to __rmatmul__ (__array_ufunc__ = None)."""
    __array_ufunc__ = None

    def __init__(self, wt):
        self.wt = wt

    def __rmatmul__(self, x):
        from gguf import GGMLQuantizationType, quants
        q8 = GGMLQuantizationType.Q8_0
        xq = quants.dequantize(quants.quantize(np.ascontiguousarray(x, dtype=np.float32), q8), q8)
        return xq.astype(np.float64).reshape(x.shape) @ self.wt


class QuantizedMatrix:
    """A dequantized weight: rows by index (the embedding), products through QuantizedInput."""

    def __init__(self, w):
        self.w, self.ndim, self.shape = w, w.ndim, w.shape

    def __getitem__(self, idx):
        return self.w[idx]

    @property
    def T(self):
        return QuantizedInput(self.w.T)


def quantize_matrices(W, dtype):
    """Every matrix tokenloop converts (embedding, lm_head, the seven of each layer) through
    gguf's quantizer and back; norms stay as they are."""
    from gguf import GGMLQuantizationType, quants
    qt = {"q8_0": GGMLQuantizationType.Q8_0, "q4_0": GGMLQuantizationType.Q4_0}[dtype]
    for name in list(W):
        if W[name].ndim == 2:
            q = quants.quantize(W[name].astype(np.float32), qt)
            W[name] = QuantizedMatrix(quants.dequantize(q, qt).astype(np.float64).reshape(W[name].shape))


def main():
    exe, model, prefix, tol, ops = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5:]
    dtype, kv = None, None
    if "--dtype" in ops:
        i = ops.index("--dtype")
        dtype = ops[i + 1]
        del ops[i:i + 2]
    if "--kv-cache" in ops:
        i = ops.index("--kv-cache")
        kv = ops[i + 1]
        del ops[i:i + 2]
    flags = [op for op in ops if op.startswith("--")]
    ops = [op for op in ops if not op.startswith("--")]
    if dtype:
        flags += ["--dtype", dtype]
    if kv:
        flags += ["--kv-cache", kv]
    name = os.path.basename(model.rstrip("/")) + (" " + " ".join(flags) if flags else "")
    r = subprocess.run([exe, model, prefix] + flags + ops, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"engine_dump failed ({r.returncode}): {r.stderr.strip()}")
        print(f"check_engine {name}: 0 passed, 1 failed")
        return 1
    cfg, W = llama_ref.load(model)
    if dtype:
        quantize_matrices(W, dtype)
    vocab = cfg["vocab_size"]
    logits = np.fromfile(prefix + ".f32", dtype="<f4").reshape(-1, vocab).astype(np.float64)
    records = [line.split() for line in open(prefix + ".txt")]

    # replay the ops on a plain token list to know what the cache holds after each pass
    expanded = []
    for op in ops:
        kind, arg = op.split(":")
        expanded += [("greedy", None)] * int(arg) if kind == "greedy" else [(kind, arg)]
    if len(expanded) != len(records):
        print(f"engine_dump wrote {len(records)} records for {len(expanded)} passes")
        print(f"check_engine {name}: 0 passed, 1 failed")
        return 1
    tokens, passed, failed, ties, worst, row, prev_ref = [], 0, 0, 0, 0.0, 0, None
    for (kind, pos, fed), (_, arg) in zip(records, expanded):
        pos, fed = int(pos), int(fed)
        if kind == "prefill":
            tokens += [int(t) for t in arg.split(",")]
        elif kind == "decode":
            tokens.append(fed)
        elif kind == "rewind":
            del tokens[len(tokens) - int(arg):]
        elif kind == "greedy" and prev_ref is None:
            print("greedy right after a rewind: the logits are stale")
            return 1
        elif kind == "greedy":
            want = int(np.argmax(prev_ref))
            gap = (prev_ref[want] - prev_ref[fed]) / np.max(np.abs(prev_ref)) if 0 <= fed < vocab else np.inf
            if fed == want:
                passed += 1
            elif gap <= tol:
                passed += 1
                ties += 1
                print(f"greedy at position {len(tokens)}: tokenloop fed {fed}, reference argmax {want}: their "
                      f"reference scores {gap:.3g} apart (relative), within {tol:g}: a tie at this precision")
            else:
                failed += 1
                print(f"greedy at position {len(tokens)}: tokenloop fed {fed}, reference argmax {want}: their "
                      f"reference scores {gap:.3g} apart (relative), more than {tol:g}")
            tokens.append(fed)
        if len(tokens) != pos:
            print(f"{kind}: tokenloop reports position {pos}, the replay has {len(tokens)} tokens")
            failed += 1
        if kind == "rewind":
            prev_ref = None
            continue
        ref = llama_ref.forward(cfg, W, tokens, last_only=True, kv_bf16=kv == "bf16")[-1]
        err = np.max(np.abs(logits[row] - ref)) / np.max(np.abs(ref))
        worst = max(worst, err)
        if err <= tol:
            passed += 1
        else:
            failed += 1
            print(f"{kind} at position {pos - 1}: relative error {err:.3g} > {tol:g}")
        prev_ref, row = ref, row + 1
    print(f"{name}: worst relative error {worst:.3g} (tolerance {tol:g}) over {row} passes, "
          f"{ties} greedy tie{'' if ties == 1 else 's'}")
    print(f"check_engine {name}: {passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
