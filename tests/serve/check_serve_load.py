"""A class at once: `tokenloop serve --slots 4 --queue 28` under 32 concurrent streaming clients
(the openai client, one thread each), then 20 clients that disconnect mid-stream.
- every one of the 32 streams completes and equals what the same request gives alone (8 greedy
  requests on 8 questions, each sent by 4 clients; --exact, so the batched passes, which round
  otherwise than a lone one, cannot turn a tie); no 429, since 4 slots + 28 places in the queue
  hold them all;
- GET /health, polled meanwhile: never more than 4 slots busy nor 28 waiting, all 4 busy at some
  point (the slots really were shared), and a batch of more than one decode at some point (their
  passes too);
- after 20 clients each read two chunks and hung up: /health goes back to 0 busy, 0 waiting (no
  slot leaked), and 4 requests at once are served again, equal to their answers alone.
The time of each phase is printed; the bounds only catch a hang.
usage: check_serve_load.py TOKENLOOP"""
import json
import os
import sys
import threading
import time
import urllib.request

from openai import OpenAI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_common import check, finish, start, stop  # noqa: E402

exe = sys.argv[1]
SLOTS, QUEUE, CLIENTS, HANGUPS = 4, 28, 32, 20
srv, base = start(exe, "--slots", str(SLOTS), "--queue", str(QUEUE), "--threads", "1", "--exact")
client = OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=600)

QUESTIONS = ["What is the capital of France?", "Name a colour.", "What is 2 + 3?", "Tell me about owls.",
             "Spell the word flower.", "Hi", "Write a poem about the sea.", "What do cats eat?"]


def request(k, n=24):
    return dict(model="x", messages=[{"role": "user", "content": QUESTIONS[k % len(QUESTIONS)]}], temperature=0,
                max_tokens=n)


def health():
    with urllib.request.urlopen(base + "/health", timeout=30) as r:
        return json.loads(r.read())


def stream_text(kw):
    parts, finish = [], None
    for ch in client.chat.completions.create(stream=True, **kw):
        for c in ch.choices:
            parts.append(c.delta.content or "")
            finish = c.finish_reason or finish
    return "".join(parts), finish


class Monitor:
    """/health every 10 ms while a phase runs: the most slots busy and requests waiting seen"""

    def __init__(self):
        self.busy = self.waiting = self.batch = 0
        self.stop = False
        self.t = threading.Thread(target=self.run)
        self.t.start()

    def run(self):
        while not self.stop:
            h = health()
            self.busy, self.waiting = max(self.busy, h["busy"]), max(self.waiting, h["waiting"])
            self.batch = max(self.batch, h["batch"])
            time.sleep(0.01)

    def end(self):
        self.stop = True
        self.t.join()


def settle(limit_s=120):
    t0 = time.time()
    while time.time() - t0 < limit_s:
        h = health()
        if h["busy"] == 0 and h["waiting"] == 0:
            return h, time.time() - t0
        time.sleep(0.05)
    return health(), time.time() - t0


def all_at_once(fn, args):
    ts = [threading.Thread(target=fn, args=(a,)) for a in args]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=600)


try:
    t0 = time.time()
    alone = {}
    for k in range(8):
        r = client.chat.completions.create(**request(k))
        alone[k] = (r.choices[0].message.content, r.choices[0].finish_reason)
    print("8 requests alone: %.1f s" % (time.time() - t0))

    results, go = {}, threading.Barrier(CLIENTS)

    def one(i):
        go.wait()
        try:
            results[i] = stream_text(request(i % 8))
        except Exception as e:   # a 429 or a broken stream: reported below
            results[i] = e

    mon = Monitor()
    t0 = time.time()
    all_at_once(one, range(CLIENTS))
    took = time.time() - t0
    mon.end()
    bad = {i: r for i, r in results.items() if r != alone[i % 8]}
    check(len(results) == CLIENTS and not bad, "%d of %d streams differ from their answer alone: %s"
          % (len(bad), CLIENTS, list(bad.items())[:3]))
    check(mon.busy == SLOTS and mon.waiting <= QUEUE, "/health saw %d busy (of %d), %d waiting (queue %d)"
          % (mon.busy, SLOTS, mon.waiting, QUEUE))
    check(1 < mon.batch <= SLOTS, "/health saw batches of at most %d decodes (slots %d)" % (mon.batch, SLOTS))
    h, _ = settle()
    check(h["busy"] == 0 and h["waiting"] == 0, "after the 32 streams: %r" % h)
    print("%d concurrent streams on %d slots: all complete and equal to their answers alone, no 429; "
          "at most %d busy, %d waiting, batches of up to %d; %.1f s" % (CLIENTS, SLOTS, mon.busy, mon.waiting,
                                                                        mon.batch, took))

    # 20 students close the tab mid-answer: long answers, two chunks read, then the connection goes
    def hang_up(i):
        kw = dict(request(i, 2000), temperature=2, top_p=1, extra_body={"top_k": 0})
        s = client.chat.completions.create(stream=True, **kw)
        for j, _ in enumerate(s):
            if j == 2:
                break
        s.close()

    t0 = time.time()
    all_at_once(hang_up, range(HANGUPS))
    h, waited = settle()
    check(h["busy"] == 0 and h["waiting"] == 0, "after %d clients hung up: %r" % (HANGUPS, h))
    print("%d clients hung up mid-stream: slots free again %.1f s after the last (%.1f s in all)"
          % (HANGUPS, waited, time.time() - t0))
    again = {}
    all_at_once(lambda k: again.__setitem__(k, stream_text(request(k))), range(SLOTS))
    check(all(again.get(k) == alone[k] for k in range(SLOTS)), "after the hang-ups: %r" % again)
    print("then %d requests at once: served, equal to their answers alone" % SLOTS)
finally:
    stop(srv)
finish("load")
