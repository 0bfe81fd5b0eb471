"""safetensors with NumPy alone: read and write, independent of tokenloop's C reader.

Format: 8-byte little-endian header length, a JSON header mapping each tensor name to
{"dtype", "shape", "data_offsets": [begin, end]} (offsets into the data section), then the data.
bf16 has no NumPy dtype: it is carried as uint16 bit patterns.
"""
import json
import struct

import numpy as np

_NP = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2"),
       "F64": np.dtype("<f8"), "I64": np.dtype("<i8"), "I32": np.dtype("<i4")}


def bf16_bits(a):
    """float array -> bf16 bit patterns, rounding to nearest even (as torch does)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def bf16_to_f64(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def encode(tensors, dtype):
    """tensors: {name: float array}; dtype: F32, F16 or BF16 -> (header entries, raw bytes) in name order."""
    header, chunks, off = {}, [], 0
    for name in sorted(tensors):
        a = np.asarray(tensors[name])
        if dtype == "BF16":
            raw = bf16_bits(a).tobytes()
        else:
            raw = np.ascontiguousarray(a, dtype=_NP[dtype]).tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        chunks.append(raw)
        off += len(raw)
    return header, b"".join(chunks)


def write_raw(path, header, data, metadata=True):
    """Writes a header dict (used as given, even if it lies) and the data section."""
    h = dict(header)
    if metadata:
        h = {"__metadata__": {"format": "pt"}, **h}
    js = json.dumps(h, separators=(",", ":")).encode()
    js += b" " * (-len(js) % 8)          # like the reference writer: data starts 8-aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(js)))
        f.write(js)
        f.write(data)


def write(path, tensors, dtype):
    header, data = encode(tensors, dtype)
    write_raw(path, header, data)
    return len(data)


def read(path):
    """-> {name: float64 array} for every F32/F16/BF16 tensor."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        a = np.frombuffer(blob, dtype=_NP[e["dtype"]], count=(end - b) // _NP[e["dtype"]].itemsize,
                          offset=base + b)
        a = bf16_to_f64(a) if e["dtype"] == "BF16" else a.astype(np.float64)
        out[name] = a.reshape(e["shape"])
    return out
