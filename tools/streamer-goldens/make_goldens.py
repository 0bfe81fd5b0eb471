#!/usr/bin/python3
"""Expected TextStreamer output for crafted token sequences (tests/generate/streamer_goldens.json).

The streamer below is transformers' TextStreamer (transformers/generation/streamers.py)
transcribed as-is; its tokenizer.decode is replaced by what a byte-level BPE fast tokenizer
does: join the tokens' bytes (special tokens dropped with skip_special_tokens), decode with
errors="replace", then clean_up_tokenization_spaces when the tokenizer config sets it.
transformers is not installed here, so nothing is imported from it.

Run: /usr/bin/python3 tools/streamer-goldens/make_goldens.py > tests/generate/streamer_goldens.json
"""
import json
import sys


class FakeTokenizer:
    def __init__(self, pieces, special, clean_up):
        self.pieces = pieces          # id -> bytes
        self.special = special        # set of ids
        self.clean_up = clean_up

    def decode(self, ids, skip_special_tokens=False):
        b = b"".join(self.pieces[i] for i in ids
                     if not (skip_special_tokens and i in self.special))
        text = b.decode("utf-8", errors="replace")
        if self.clean_up:
            text = (text.replace(" .", ".").replace(" ?", "?").replace(" !", "!")
                    .replace(" ,", ",").replace(" ' ", "'").replace(" n't", "n't")
                    .replace(" 'm", "'m").replace(" 's", "'s").replace(" 've", "'ve")
                    .replace(" 're", "'re"))
        return text


class TextStreamer:
    """transformers.TextStreamer; on_finalized_text records instead of printing."""

    def __init__(self, tokenizer, skip_prompt=False, **decode_kwargs):
        self.tokenizer = tokenizer
        self.skip_prompt = skip_prompt
        self.decode_kwargs = decode_kwargs
        self.token_cache = []
        self.print_len = 0
        self.next_tokens_are_prompt = True
        self.chunks = []

    def put(self, value):
        if self.skip_prompt and self.next_tokens_are_prompt:
            self.next_tokens_are_prompt = False
            self.chunks.append({"printed": "", "held": ""})
            return
        self.token_cache.extend(value)
        text = self.tokenizer.decode(self.token_cache, **self.decode_kwargs)
        if text.endswith("\n"):
            printable_text = text[self.print_len:]
            self.token_cache = []
            self.print_len = 0
        elif len(text) > 0 and self._is_chinese_char(ord(text[-1])):
            printable_text = text[self.print_len:]
            self.print_len += len(printable_text)
        else:
            printable_text = text[self.print_len: text.rfind(" ") + 1]
            self.print_len += len(printable_text)
        held = text[self.print_len:] if self.token_cache else ""
        self.on_finalized_text(printable_text, held=held)

    def end(self):
        if len(self.token_cache) > 0:
            text = self.tokenizer.decode(self.token_cache, **self.decode_kwargs)
            printable_text = text[self.print_len:]
            self.token_cache = []
            self.print_len = 0
        else:
            printable_text = ""
        self.next_tokens_are_prompt = True
        self.on_finalized_text(printable_text, stream_end=True)

    def on_finalized_text(self, text, stream_end=False, held=""):
        self.chunks.append({"printed": text, "held": "" if stream_end else held})

    def _is_chinese_char(self, cp):
        if ((cp >= 0x4E00 and cp <= 0x9FFF) or (cp >= 0x3400 and cp <= 0x4DBF)
                or (cp >= 0x20000 and cp <= 0x2A6DF) or (cp >= 0x2A700 and cp <= 0x2B73F)
                or (cp >= 0x2B740 and cp <= 0x2B81F) or (cp >= 0x2B820 and cp <= 0x2CEAF)
                or (cp >= 0xF900 and cp <= 0xFAFF) or (cp >= 0x2F800 and cp <= 0x2FA1F)):
            return True
        return False


def u(s):
    return s.encode("utf-8")


SPECIAL = b"<|eot_id|>"
# Each case: the pieces (bytes) of the prompt put, then one put per generated token.
CASES = [
    ("word_split", [u("Say hi")], [u(" Hel"), u("lo"), u(" wor"), u("ld"), u("!")]),
    ("multibyte_split", [u("Q")], [u(" caf"), b"\xc3", b"\xa9", u(" ok"), u(" na"), b"\xc3", b"\xafve "]),
    ("three_byte_split", [u("Q")], [u(" Vi"), b"\xe1\xbb", b"\x87t", u(" Nam")]),
    ("cjk", [u("Q")], [u("你"), u("好"), u("，"), u("世界"), u("ok"), u("!")]),
    ("cjk_split_bytes", [u("Q")], [b"\xe4\xbd", b"\xa0", u("好")]),
    ("newline_flush", [u("Q")], [u(" one"), u(" two"), u("\n"), u("three"), u(" four"), u("\n\n"), u("five")]),
    ("no_space_run", [u("Q")], [u("https"), u("://"), u("example"), u(".com"), u("/a"), u("/b"), u("?q=1")]),
    ("emoji_zwj", [u("Q")], [u(" family"), b" \xf0\x9f\x91", b"\xa8\xe2\x80", b"\x8d\xf0\x9f\x91\xa9",
                              b"\xe2\x80\x8d", b"\xf0\x9f\x91\xa7", u(" done")]),
    ("special_skipped", [u("Q")], [u(" Hi"), u(" there"), SPECIAL]),
    ("cleanup_spaces", [u("Q")], [u(" Hello"), u(" ,"), u(" world"), u(" ."), u(" I"), u(" 'm"), u(" fine")]),
    ("space_then_newline", [u("Q")], [u(" a "), u(" b"), u(" \n"), u("c")]),
    ("invalid_byte_mid", [u("Q")], [u(" x"), b"\xff", u(" y"), u("z")]),
]


def run_case(name, prompt, gen, skip_prompt, skip_special, clean_up):
    pieces = []
    special = set()

    def idof(b):
        pieces.append(b)
        if b == SPECIAL:
            special.add(len(pieces) - 1)
        return len(pieces) - 1

    prompt_ids = [idof(b) for b in prompt]
    gen_ids = [idof(b) for b in gen]
    tok = FakeTokenizer(pieces, special, clean_up)
    st = TextStreamer(tok, skip_prompt=skip_prompt, skip_special_tokens=skip_special)
    st.put(prompt_ids)
    for i in gen_ids:
        st.put([i])
    st.end()
    return {
        "name": name,
        "skip_prompt": skip_prompt, "skip_special_tokens": skip_special, "clean_up_spaces": clean_up,
        "pieces": [b.hex() for b in pieces],
        "special": sorted(special),
        "prompt_ids": prompt_ids,
        "generated_ids": gen_ids,
        "chunks": st.chunks,   # one per put (the prompt first), then end()
    }


def main():
    out = []
    for name, prompt, gen in CASES:
        out.append(run_case(name, prompt, gen, True, True, False))
    # The same sequences with the prompt streamed, specials kept, and Llama 3's clean-up.
    for name, prompt, gen in CASES:
        out.append(run_case(name + "+prompt+special+cleanup", prompt, gen, False, False, True))
    json.dump({"generator": "tools/streamer-goldens/make_goldens.py", "cases": out}, sys.stdout,
              ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
