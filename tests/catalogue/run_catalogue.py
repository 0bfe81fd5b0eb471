#!/usr/bin/python3
"""The bad-input catalogue as a test: every row of the table in docs/bad-inputs.md is run.

    run_catalogue.py TOKENLOOP DOC [ROW_ID...]

The table is the only list. For each row this builds the row's fixture in a temp folder of its
own, runs the row's command with TOKENLOOP for `tokenloop`, and checks that

  - it ends (60 s), by exiting, not by a signal;
  - the exit status is the row's;
  - stderr's last line is the row's error line exactly, after the placeholders below are
    replaced, and no other stderr line is an error (starts with "tokenloop: ");
  - nothing went to stdout;
  - no sanitizer report is on stderr (ASan, UBSan, LSan).

Placeholders: {tmp} the row's folder, {model} {tmp}/model, {file} {tmp}/file, {dir} {tmp}/dir,
{messages} {tmp}/messages.json (a good messages file, always there), {bundled} the bundled model.

Fixtures (the table's fixture column: a name, then optionally one JSON value):

  none                nothing but {messages}
  bundled [SPEC]      {model}: the bundled model as symlinks, SPEC applied
  tiny [SPEC]         {model}: a 1-layer model (hidden 8, vocab 16, BF16) written here, with the
                      bundled tokenizer symlinked; SPEC applied
  sharded [SPEC]      tiny, its weights in two shards named by model.safetensors.index.json
  file CONTENT        {file}
  dir                 {dir}, an empty folder
  lesson CONTENT      {dir}/lesson.json; an object is merged into a valid one-step lesson

SPEC maps a file name in {model} to what it becomes: null (removed), a string (its text), or
an object: {"$patch": {...}} (keys merged into the file's JSON; "$absent" removes a key),
{"$sparse": N} (N bytes of holes), {"$dir": true} (a folder), {"$st": {...}} (a safetensors
file: see st_bytes). CONTENT is a string (the text) or a SPEC-style object.
"""
import concurrent.futures
import copy
import json
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUNDLED = os.path.join(ROOT, "assets", "models", "tl-mini-instruct")
COLUMNS = ["id", "area", "command", "fixture", "input", "example", "error", "exit"]
SANITIZER = re.compile(r"(AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|ThreadSanitizer|"
                       r"runtime error:|==\d+==ERROR)")


# ---------- the table ----------

def split_row(line):
    """Cells of a markdown table row; \\| is a literal bar."""
    cells, cur, i = [], "", 0
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body) and body[i + 1] == "|":
            cur += "|"
            i += 2
            continue
        if body[i] == "|":
            cells.append(cur.strip())
            cur = ""
        else:
            cur += body[i]
        i += 1
    cells.append(cur.strip())
    return cells


def code(cell):
    """The text of a cell that is one code span (`...` or ``...``)."""
    m = re.fullmatch(r"(`+) ?(.*?) ?\1", cell)
    return m.group(2) if m else cell


def parse_table(doc):
    rows, header = [], None
    for n, line in enumerate(open(doc, encoding="utf-8"), 1):
        if not line.startswith("|"):
            if header and rows:
                break   # one table: it ends at the first line that is not a row
            continue
        cells = split_row(line)
        if header is None:
            header = [c.lower() for c in cells]
            if header[:1] != ["id"]:
                header = None
                continue
            if len(header) != len(COLUMNS):
                sys.exit("%s:%d: the table has %d columns, expected %s" % (doc, n, len(header), COLUMNS))
            continue
        if set(line.strip()) <= set("|-: "):
            continue
        if len(cells) != len(COLUMNS):
            sys.exit("%s:%d: %d cells, expected %d" % (doc, n, len(cells), len(COLUMNS)))
        r = dict(zip(COLUMNS, cells))
        r["line"] = n
        r["command"] = code(r["command"])
        r["fixture"] = code(r["fixture"])
        r["error"] = code(r["error"])
        if not r["exit"].isdigit():
            sys.exit("%s:%d: exit %r is not a number" % (doc, n, r["exit"]))
        r["exit"] = int(r["exit"])
        rows.append(r)
    if not rows:
        sys.exit("%s: no table with an id column" % doc)
    ids = [r["id"] for r in rows]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        sys.exit("%s: ids used twice: %s" % (doc, ", ".join(dup)))
    return rows


# ---------- fixtures ----------

def bf16_zeros(n):
    return b"\0\0" * n


TINY_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8,
    "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
    "head_dim": 4, "vocab_size": 16, "max_position_embeddings": 64, "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "bos_token_id": 0, "eos_token_id": 1,
}


def tiny_tensors():
    """(name, dtype, shape) of every tensor the tiny config implies, in file order."""
    d, ff, v = 8, 16, 16
    t = [("model.embed_tokens.weight", "BF16", [v, d]), ("model.norm.weight", "BF16", [d])]
    p = "model.layers.0."
    t += [(p + "input_layernorm.weight", "BF16", [d]), (p + "self_attn.q_proj.weight", "BF16", [8, d]),
          (p + "self_attn.k_proj.weight", "BF16", [4, d]), (p + "self_attn.v_proj.weight", "BF16", [4, d]),
          (p + "self_attn.o_proj.weight", "BF16", [d, 8]), (p + "post_attention_layernorm.weight", "BF16", [d]),
          (p + "mlp.gate_proj.weight", "BF16", [ff, d]), (p + "mlp.up_proj.weight", "BF16", [ff, d]),
          (p + "mlp.down_proj.weight", "BF16", [d, ff])]
    return t


def st_bytes(spec, names=None):
    """A safetensors file of the tiny tensors (or those in names). spec changes it:
    drop [names]; shape {name: shape}; dtype {name: dtype}; offsets {name: [begin, end]};
    dup name (the entry written twice); header "text" (instead of the JSON); header_len N (the
    8-byte length field); bytes "text" (the whole file); truncate N (cut the file to N bytes)."""
    spec = spec or {}
    if "bytes" in spec:
        return spec["bytes"].encode("latin-1")
    tensors = [t for t in tiny_tensors() if names is None or t[0] in names]
    tensors = [t for t in tensors if t[0] not in spec.get("drop", [])]
    entries, data, off = [], b"", 0
    for name, dt, shape in tensors:
        n = 1
        for s in shape:
            n *= s
        size = 2 * n
        entries.append((name, {"dtype": spec.get("dtype", {}).get(name, dt),
                               "shape": spec.get("shape", {}).get(name, shape),
                               "data_offsets": spec.get("offsets", {}).get(name, [off, off + size])}))
        data += bf16_zeros(n)
        off += size
    parts = ['"__metadata__":{"format":"pt"}'] + ["%s:%s" % (json.dumps(k), json.dumps(v)) for k, v in entries]
    if "dup" in spec:
        parts += ["%s:%s" % (json.dumps(k), json.dumps(v)) for k, v in entries if k == spec["dup"]]
    header = spec.get("header", "{" + ",".join(parts) + "}").encode("utf-8")
    header += b" " * (-len(header) % 8)
    hlen = spec.get("header_len", len(header))
    blob = struct.pack("<Q", hlen) + header + data
    if "truncate" in spec:
        blob = blob[:spec["truncate"]]
    return blob


def write_entry(path, value, original=None):
    if os.path.lexists(path):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)
    if value is None:
        return
    if isinstance(value, str):
        with open(path, "wb") as f:
            f.write(value.encode("utf-8", "surrogatepass"))
        return
    if "$patch" in value:
        base = copy.deepcopy(original) if original is not None else {}
        for k, v in value["$patch"].items():
            if v == "$absent":
                base.pop(k, None)
            else:
                base[k] = v
        with open(path, "w") as f:
            json.dump(base, f, indent=1)
    elif "$sparse" in value:
        with open(path, "wb") as f:
            f.truncate(value["$sparse"])
    elif "$dir" in value:
        os.mkdir(path)
    elif "$st" in value:
        with open(path, "wb") as f:
            f.write(st_bytes(value["$st"]))
    else:
        raise ValueError("unknown SPEC entry %r" % value)


def json_of(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def apply_spec(model, spec, originals):
    for name, value in (spec or {}).items():
        write_entry(os.path.join(model, name), value, originals.get(name))


def build(fixture, tmp):
    name, _, arg = fixture.partition(" ")
    arg = json.loads(arg) if arg.strip() else None
    model = os.path.join(tmp, "model")
    with open(os.path.join(tmp, "messages.json"), "w") as f:
        json.dump([{"role": "user", "content": "What is the capital of France?"}], f)
    if name == "none":
        return
    if name == "bundled":
        os.mkdir(model)
        originals = {}
        for f in os.listdir(BUNDLED):
            os.symlink(os.path.join(BUNDLED, f), os.path.join(model, f))
            if f.endswith(".json") and f != "tokenizer.json":
                originals[f] = json_of(os.path.join(BUNDLED, f))
        apply_spec(model, arg, originals)
    elif name in ("tiny", "sharded"):
        os.mkdir(model)
        with open(os.path.join(model, "config.json"), "w") as f:
            json.dump(TINY_CONFIG, f, indent=1)
        for f in ("tokenizer.json", "tokenizer_config.json"):
            os.symlink(os.path.join(BUNDLED, f), os.path.join(model, f))
        originals = {"config.json": TINY_CONFIG}
        if name == "tiny":
            with open(os.path.join(model, "model.safetensors"), "wb") as f:
                f.write(st_bytes({}))
        else:
            tensors = [t[0] for t in tiny_tensors()]
            shards = {"model-00001-of-00002.safetensors": tensors[:2], "model-00002-of-00002.safetensors": tensors[2:]}
            wmap = {}
            for shard, names in shards.items():
                with open(os.path.join(model, shard), "wb") as f:
                    f.write(st_bytes({}, set(names)))
                wmap.update({n: shard for n in names})
            index = {"metadata": {"total_size": 0}, "weight_map": wmap}
            with open(os.path.join(model, "model.safetensors.index.json"), "w") as f:
                json.dump(index, f, indent=1)
            originals["model.safetensors.index.json"] = index
        apply_spec(model, arg, originals)
    elif name == "file":
        write_entry(os.path.join(tmp, "file"), arg)
    elif name == "dir":
        os.mkdir(os.path.join(tmp, "dir"))
    elif name == "lesson":
        d = os.path.join(tmp, "dir")
        os.mkdir(d)
        good = {"id": "bad-input", "title": {"en": "A lesson", "vi": "Một bài"},
                "steps": [{"say": {"en": "One step.", "vi": "Một bước."}}]}
        if isinstance(arg, dict):
            write_entry(os.path.join(d, "lesson.json"), {"$patch": arg}, good)
        else:
            write_entry(os.path.join(d, "lesson.json"), arg)
    else:
        raise ValueError("unknown fixture %r" % name)


# ---------- running ----------

def substitute(text, places):
    for k, v in places.items():
        text = text.replace("{" + k + "}", v)
    return text


def run_row(exe, row, base):
    tmp = tempfile.mkdtemp(prefix="row-%s-" % row["id"], dir=base)
    places = {"tmp": tmp, "model": os.path.join(tmp, "model"), "file": os.path.join(tmp, "file"),
              "dir": os.path.join(tmp, "dir"), "messages": os.path.join(tmp, "messages.json"), "bundled": BUNDLED}
    problems = []
    try:
        build(row["fixture"], tmp)
    except Exception as e:   # a bad fixture spec is the table's fault: say which row
        return row, ["fixture %r: %s: %s" % (row["fixture"], type(e).__name__, e)], 0.0
    argv = [substitute(a, places) for a in shlex.split(row["command"])]
    if argv[:1] != ["tokenloop"]:
        return row, ["command must start with tokenloop"], 0.0
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKENLOOP_")}
    env.update(LANG="C.UTF-8", LC_ALL="C.UTF-8")
    want = substitute(row["error"], places)
    t0 = time.time()
    try:
        r = subprocess.run([exe] + argv[1:], capture_output=True, timeout=60, stdin=subprocess.DEVNULL, env=env,
                           cwd=tmp)
    except subprocess.TimeoutExpired:
        return row, ["hung: no exit within 60 s"], time.time() - t0
    took = time.time() - t0
    err = r.stderr.decode("utf-8", "replace")
    out = r.stdout.decode("utf-8", "replace")
    lines = err.rstrip("\n").split("\n") if err.strip() else []
    last = lines[-1] if lines else ""
    if SANITIZER.search(err):
        problems.append("sanitizer report on stderr:\n" + err[-4000:])
    if r.returncode < 0:
        problems.append("killed by signal %d" % -r.returncode)
    elif r.returncode != row["exit"]:
        problems.append("exit %d, the table says %d" % (r.returncode, row["exit"]))
    if last != want:
        problems.append("last stderr line differs:\n  - table: %s\n  + got:   %s" % (want, last))
    extra = [l for l in lines[:-1] if l.startswith("tokenloop: ")]
    if extra:
        problems.append("more than one error line: %r" % extra)
    if out:
        problems.append("stdout not empty: %r" % out[:300])
    if problems and not SANITIZER.search(err) and len(lines) > 1:
        problems.append("whole stderr:\n" + err[-2000:])
    if not problems:
        shutil.rmtree(tmp, ignore_errors=True)
    return row, problems, took


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    exe, doc, only = os.path.abspath(sys.argv[1]), sys.argv[2], set(sys.argv[3:])
    rows = [r for r in parse_table(doc) if not only or r["id"] in only]
    base = tempfile.mkdtemp(prefix="tl-catalogue-")
    t0 = time.time()
    failed = 0
    jobs = int(os.environ.get("TL_CATALOGUE_JOBS", "2"))
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for row, problems, took in pool.map(lambda r: run_row(exe, r, base), rows):
            tag = "ok  " if not problems else "FAIL"
            print("%s %-10s %5.2fs  %s" % (tag, row["id"], took, row["command"]))
            for p in problems:
                print("       " + p.replace("\n", "\n       "))
            failed += bool(problems)
    if not failed:
        shutil.rmtree(base, ignore_errors=True)
    else:
        print("fixtures of the failed rows are kept in %s" % base)
    areas = {}
    for r in rows:
        areas[r["area"]] = areas.get(r["area"], 0) + 1
    print("catalogue: %d rows (%s), %d failed, %.1f s" %
          (len(rows), ", ".join("%s %d" % kv for kv in sorted(areas.items())), failed, time.time() - t0))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
