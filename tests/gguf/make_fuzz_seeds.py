"""Writes the seed corpus of tests/fuzz/fuzz_gguf.c into tests/fuzz/seeds/gguf: tiny valid Llama
GGUF files (f16, q8_0, q4_0 with rope_freqs and a tied head, K-quant blocks, no tokenizer) and
the small bad files of check_gguf.py. Deterministic; run it again after changing the files."""
import os
import shutil
import sys

import numpy as np
import gguf

import check_gguf
import gguf_models as gm


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(gm.ROOT, "tests", "fuzz", "seeds", "gguf")
    os.makedirs(out, exist_ok=True)
    cfg = gm.small_cfg(hidden=32, ff=32, heads=2, kv_heads=1, layers=1, vocab=272)
    W = gm.random_weights(cfg, 5)
    gm.write(os.path.join(out, "tiny-f16.gguf"), cfg, W, "f16", template=False)
    gm.write(os.path.join(out, "tiny-q8_0.gguf"), cfg, W, "q8_0")
    rope = gm.small_cfg(hidden=32, ff=32, heads=2, kv_heads=1, layers=1, vocab=272, tied=True,
                        rope_scaling=check_gguf.ROPE)
    gm.write(os.path.join(out, "tiny-q4_0-rope-tied.gguf"), rope, gm.random_weights(rope, 6), "q4_0", tokenizer=None)
    # K-quant tensors need rows of 256; gguf has no K quantizer, so random blocks with sane scales
    kcfg = gm.small_cfg(hidden=256, ff=32, heads=2, kv_heads=1, layers=1, vocab=8, tied=True)
    kw = gm.random_weights(kcfg, 7)
    types = {}
    rng = np.random.default_rng(8)
    for i, name in enumerate(n for n in kw if kw[n].ndim == 2 and kw[n].shape[1] % 256 == 0):
        qt = [gguf.GGMLQuantizationType.Q4_K, gguf.GGMLQuantizationType.Q5_K, gguf.GGMLQuantizationType.Q6_K][i % 3]
        rows = kw[name].shape[0]
        kw[name] = check_gguf.random_blocks(qt, rows * kw[name].shape[1] // 256, rng).reshape(rows, -1)
        types[name] = qt
    path = os.path.join(out, "tiny-kquant.gguf")
    w = gguf.GGUFWriter(path, "llama")
    for k, v in [("context_length", 64), ("embedding_length", 256), ("block_count", 1), ("feed_forward_length", 32),
                 ("attention.head_count", 2), ("attention.head_count_kv", 1)]:
        w.add_uint32(f"llama.{k}", v)
    w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5)
    for name, arr in kw.items():
        if name in types:
            w.add_tensor(name, arr, raw_dtype=types[name])
        else:
            w.add_tensor(name, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    bad = os.path.join(out, "..", "gguf-bad-tmp")
    check_gguf.make_bad(bad)
    for f in sorted(os.listdir(bad)):
        if os.path.getsize(os.path.join(bad, f)) < 4096:
            shutil.copy(os.path.join(bad, f), os.path.join(out, "bad-" + f))
    shutil.rmtree(bad)
    for f in sorted(os.listdir(out)):
        print(f, os.path.getsize(os.path.join(out, f)))


if __name__ == "__main__":
    main()
