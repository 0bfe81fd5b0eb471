#!/usr/bin/python3
"""The templated prompts tests/model runs (rendered like tools/corpus): "logits" prompts end with
the generation prompt (their logits are compared); "nogen" prompts end with the user's
<|eot_id|> and no assistant header (their greedy continuation is compared and must be more
user text, not an answer)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "corpus"))
from gen import render  # noqa: E402

LOGITS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "Bạn là một trợ lý hữu ích."}, {"role": "user", "content": "Thủ đô của Nhật Bản là gì?"}],
    [{"role": "user", "content": "Count from 1 to 50."}],
]
NOGEN = ["What is the capital of Peru?", "What is the opposite of hot?", "How many legs does a spider have?",
         "Thủ đô của Việt Nam là gì?", "What colour is the sky?"]
with open(sys.argv[1], "w") as f:
    for msgs in LOGITS:
        f.write(json.dumps({"kind": "logits", "text": render(msgs, add_generation_prompt=True)}, ensure_ascii=False) + "\n")
    for q in NOGEN:
        f.write(json.dumps({"kind": "nogen", "text": render([{"role": "user", "content": q}], add_generation_prompt=False)},
                           ensure_ascii=False) + "\n")
