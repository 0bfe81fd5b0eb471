#!/usr/bin/python3
"""Trains tl-mini-instruct on the tokenized corpus (tools/corpus): packs whole conversations
into rows, attention kept inside each conversation, AdamW with warmup + cosine decay, fixed
seed. Writes DIR/ckpt.pt (weights, the seen-token list, the loss log).

  train.py --data PREFIX --out DIR [--steps N] [--batch B] [--seq L] [--threads 2]"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import CONFIG, TinyLlama  # noqa: E402

START_HEADER, END_HEADER, EOT = 128006, 128007, 128009
ROLE_USER, ROLE_ASSISTANT = 882, 78191


def load_docs(prefix):
    ids = np.fromfile(prefix + ".ids", dtype="<i4")
    lens = np.fromfile(prefix + ".lens", dtype="<i4")
    offs = np.concatenate([[0], np.cumsum(lens)])
    return [ids[offs[i]:offs[i + 1]] for i in range(len(lens))]


def target_mask(doc):
    """False for the tokens of an assistant header that directly follows a user turn: that is
    the generation prompt, which the template supplies; the model is not taught to predict it.
    So after a closed user turn the model has only seen more user text follow (the follow-up
    conversations), and without the generation prompt it continues the user's side."""
    keep = np.ones(len(doc), dtype=bool)
    keep[0] = False
    prev_role = None
    i = 0
    while i < len(doc):
        if doc[i] == START_HEADER and i + 1 < len(doc):
            role = int(doc[i + 1])
            if role == ROLE_ASSISTANT and prev_role == ROLE_USER:
                keep[i:i + 4] = False            # <|start_header_id|> assistant <|end_header_id|> \n\n
            prev_role = role
        i += 1
    return keep


def batches(docs, batch, seq, rng):
    """One epoch: conversations grouped by length (within shuffled chunks), one per row, padded
    to the longest in the batch; positions start at 0 as at inference."""
    order = rng.permutation(len(docs))
    out = []
    for c in range(0, len(order), batch * 50):
        chunk = sorted(order[c:c + batch * 50], key=lambda j: len(docs[j][0]))
        for b in range(0, len(chunk), batch):
            sel = [(docs[j][0][:seq], docs[j][1][:seq]) for j in chunk[b:b + batch]]
            T = max(len(d) for d, _ in sel)
            ids = np.zeros((len(sel), T), np.int64)
            tgt = np.full((len(sel), T), -100, np.int64)
            seg = np.full((len(sel), T), -1, np.int64)
            for r, (d, keep) in enumerate(sel):
                n = len(d)
                ids[r, :n] = d
                tgt[r, :n - 1] = np.where(keep[1:], d[1:], -100)
                seg[r, :n] = 0
            pos = np.tile(np.arange(T), (len(sel), 1))
            out.append(tuple(torch.from_numpy(a) for a in (ids, tgt, pos, seg)))
    return [out[i] for i in rng.permutation(len(out))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=150)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-minutes", type=float, default=0, help="stop early (saves the checkpoint)")
    ap.add_argument("--stop-at", type=int, default=0, help="stop after this many steps (the schedule still spans --steps)")
    ap.add_argument("--init", help="continue from this checkpoint (same corpus): a second phase")
    ap.add_argument("--layers", type=int, default=CONFIG["num_hidden_layers"])
    ap.add_argument("--ff", type=int, default=CONFIG["intermediate_size"])
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.RandomState(args.seed)
    cfg = dict(CONFIG, num_hidden_layers=args.layers, intermediate_size=args.ff)

    docs = load_docs(args.data)
    seen = np.unique(np.concatenate(docs))
    remap = np.full(cfg["vocab_size"], -1, np.int64)
    remap[seen] = np.arange(len(seen))
    docs = [(remap[d], target_mask(d)) for d in docs]
    print("documents %d, tokens %d, seen vocabulary %d" % (len(docs), sum(len(d) for d, _ in docs), len(seen)), flush=True)

    model = TinyLlama(cfg, len(seen))
    global PRIOR
    prior = []
    if args.init:
        ck = torch.load(args.init)
        assert ck["seen"] == seen.tolist(), "--init: checkpoint of another corpus"
        model.load_state_dict(ck["state"])
        prior = ck["log"]
        print("continuing from %s (%d steps)" % (args.init, ck["steps"]), flush=True)
    PRIOR = prior
    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and n != "embed"]
    other = [p for n, p in model.named_parameters() if not (p.dim() == 2 and n != "embed")]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)

    def lr_at(step):
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        p = (step - args.warmup) / max(1, args.steps - args.warmup)
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, p))))

    os.makedirs(args.out, exist_ok=True)
    log, epoch, rows, cursor = [], 0, None, 0
    base = prior[-1][0] + 1 if prior else 0
    t0 = time.time()
    step = 0
    for step in range(args.steps):
        if rows is None or cursor >= len(rows):
            rows = batches(docs, args.batch, args.seq, rng)
            cursor = 0
            epoch += 1
            print("epoch %d: %d batches" % (epoch, len(rows)), flush=True)
        ids, tgt, pos, seg = rows[cursor]
        cursor += 1
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        loss = model.loss(ids, pos, seg, tgt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        el = time.time() - t0
        log.append((base + step, float(loss), el))
        if step % 25 == 0 or step == args.steps - 1:
            print("step %d/%d loss %.4f lr %.2e epoch %d %.0fs" % (step, args.steps, float(loss), lr_at(step), epoch, el), flush=True)
        if step % 500 == 499:
            save(args.out, model, cfg, seen, log, args, el, step + 1)
        if args.stop_at and step + 1 >= args.stop_at:
            break
        if args.max_minutes and el > args.max_minutes * 60:
            print("time limit reached at step %d" % step, flush=True)
            break
    save(args.out, model, cfg, seen, log, args, time.time() - t0, step + 1)
    print("done: %d steps in %.1f min, last loss %.4f" % (step + 1, (time.time() - t0) / 60, log[-1][1]), flush=True)


PRIOR = []


def save(out, model, cfg, seen, log, args, seconds, steps):
    tmp = os.path.join(out, "ckpt.pt.tmp")
    torch.save({"state": model.state_dict(), "config": cfg, "seen": seen.tolist(), "log": PRIOR + log,
                "args": vars(args), "seconds": seconds, "steps": steps}, tmp)
    os.replace(tmp, os.path.join(out, "ckpt.pt"))
    with open(os.path.join(out, "train_log.json"), "w") as f:
        json.dump({"steps": steps, "seconds": seconds, "args": vars(args)}, f)


if __name__ == "__main__":
    main()
