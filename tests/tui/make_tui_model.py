#!/usr/bin/python3
"""A small random Llama checkpoint with the Llama 3 vocabulary (128,256) and Llama 3.1's EOS ids,
for the TUI's end-to-end tests when the bundled model is absent. The tokenizer is the bundled
assets/tokenizer (the session falls back to it).

    make_tui_model.py OUT_DIR
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import make_checkpoints  # noqa: E402

out = sys.argv[1]
if not os.path.exists(os.path.join(out, "model.safetensors")):
    make_checkpoints.make(out, "BF16", True, 1,
                          dict(vocab=128256, hidden=64, intermediate=176, layers=2, max_pos=2048), 7)
    for name in ("config.json", "generation_config.json"):
        p = os.path.join(out, name)
        with open(p) as f:
            c = json.load(f)
        c["eos_token_id"] = [128001, 128008, 128009]
        c["bos_token_id"] = 128000
        with open(p, "w") as f:
            json.dump(c, f, indent=2)
print(out)
