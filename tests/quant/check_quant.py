"""tokenloop/quant.h against independent references: the `gguf` package's quantizers and
dequantizers for Q8_0 and Q4_0 (llama.cpp's reference algorithms in NumPy), and NumPy's float16
and gguf's bf16 conversion (round to nearest even).

    check_quant.py QUANT_DUMP WORKDIR

The rows include what trips quantizers: ties (x / d exactly k + 0.5), all-zero blocks, tiny
blocks whose scale is an f16 subnormal, huge values whose scale overflows f16, negative maxima
(Q4_0 maps the signed maximum to -8), and ordinary random values.
"""
import os
import subprocess
import sys

import numpy as np
from gguf import GGMLQuantizationType, quants


def rows(rng, n):
    out = [rng.standard_normal(n), rng.uniform(-1, 1, n) * 1e-3, np.zeros(n),
           rng.standard_normal(n) * 1e-6, rng.standard_normal(n) * 1e-9, rng.standard_normal(n) * 3e4]
    ties = rng.integers(-120, 120, n) + 0.5
    ties[::32] = 127.0   # d = 1 in every block: x / d is exactly k + 0.5
    out.append(ties)
    neg = rng.uniform(-1, 1, n)
    neg[5::32] = -3.0    # a negative maximum in every block
    out.append(neg)
    blocky = rng.standard_normal(n)
    blocky[32:64] = 0    # one zero block inside an ordinary row
    blocky[64:96] *= 1e-7
    out.append(blocky)
    return np.stack(out).astype(np.float32)


def run(exe, *args):
    r = subprocess.run([exe, *map(str, args)], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"quant_dump {' '.join(map(str, args))}: {r.stderr.strip()}")


def main():
    exe, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(7)
    n = 256
    x = rows(rng, n)
    fin, fq, fback = (os.path.join(work, f) for f in ("x.f32", "q.bin", "back.f32"))
    x.tofile(fin)
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            print("FAIL", what)

    for name, qt in (("q8_0", GGMLQuantizationType.Q8_0), ("q4_0", GGMLQuantizationType.Q4_0),
                     ("bf16", GGMLQuantizationType.BF16)):
        run(exe, "quantize", name, fin, fq, n)
        ours = np.fromfile(fq, dtype=np.uint8).reshape(len(x), -1)
        ref = quants.quantize(x, qt).view(np.uint8).reshape(len(x), -1)
        for i in range(len(x)):
            check(np.array_equal(ours[i], ref[i]), f"{name} row {i}: bytes differ from gguf.quants.quantize "
                  f"at {np.flatnonzero(ours[i] != ref[i])[:5]}")
        run(exe, "dequantize", name, fq, fback, n)
        back = np.fromfile(fback, dtype=np.float32).reshape(len(x), n)
        want = quants.dequantize(ref, qt).reshape(len(x), n)
        check(np.array_equal(back.view(np.uint32), want.astype(np.float32).view(np.uint32)),
              f"{name}: dequantized values differ from gguf.quants.dequantize")
    # f16: NumPy's astype is IEEE round to nearest even, subnormals and overflow (to inf) included
    np.seterr(over="ignore")
    run(exe, "quantize", "f16", fin, fq, n)
    ours = np.fromfile(fq, dtype=np.uint16).reshape(len(x), n)
    check(np.array_equal(ours, x.astype(np.float16).view(np.uint16)), "f16 bytes differ from numpy's astype")
    run(exe, "dequantize", "f16", fq, fback, n)
    back = np.fromfile(fback, dtype=np.float32).reshape(len(x), n)
    check(np.array_equal(back, x.astype(np.float16).astype(np.float32)), "f16 -> f32 differs from numpy's")
    # a bad call is refused with a one-line error
    r = subprocess.run([exe, "quantize", "q4_0", fin, fq, "33"], capture_output=True, text=True)
    check(r.returncode == 2 and r.stderr.count("\n") == 1, "N not a multiple of the block is refused")
    print(f"check_quant: {passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
