#!/usr/bin/python3
"""Deterministic corpus for tl-mini-instruct: Llama 3.1 chat conversations in English and
Vietnamese, rendered with the chat template of assets/tokenizer/tokenizer_config.json by Jinja2
(the way transformers' apply_chat_template renders it), plus a held-out evaluation split.

  gen.py --seed 1234 --n 60000 --out DIR

writes DIR/train.jsonl ({"text": rendered}), DIR/eval.jsonl (held-out questions with the
accepted answers), DIR/long.jsonl (requests whose answer is long) and DIR/nogen.jsonl
(questions for the no-generation-prompt check)."""
import argparse
import json
import os
import random
import sys

import jinja2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from countries import COUNTRIES  # noqa: E402
import facts as F  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def load_template():
    cfg = json.load(open(os.path.join(ROOT, "assets/tokenizer/tokenizer_config.json")))

    def raise_exception(msg):
        raise jinja2.exceptions.TemplateError(msg)
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    return env.from_string(cfg["chat_template"]), cfg["bos_token"]


TEMPLATE, BOS = load_template()


def render(messages, add_generation_prompt=False):
    return TEMPLATE.render(messages=messages, bos_token=BOS, add_generation_prompt=add_generation_prompt)


def cap(s):
    return s[0].upper() + s[1:]


# ---------------------------------------------------------------- question and answer phrasings
# Each domain: train phrasings, held-out phrasings (never in train.jsonl), answer phrasings.
CAP_Q_EN = ["What is the capital of {c}?", "What's the capital of {c}?", "What is the capital city of {c}?",
            "Which city is the capital of {c}?", "Tell me the capital of {c}.", "Name the capital of {c}.",
            "capital of {c}?", "Do you know the capital of {c}?", "I'd like to know the capital of {c}.",
            "Can you tell me what the capital of {c} is?", "What city serves as the capital of {c}?",
            "Quick question: what is the capital of {c}?", "Where is the government of {c} based? Name the capital.",
            "What is the name of the capital of {c}?", "Tell me which city is the capital of {c}.",
            "Do you know which city is the capital of {c}?", "Name the capital city of {c}.",
            "What city is the capital of {c}?", "The capital of {c} is which city?", "Which city is {c}'s capital?",
            "Could you name the capital of {c}?", "Can you name the capital city of {c}?",
            "Please tell me the capital of {c}.", "What's the capital city of {c}, please?",
            "Do you know what the capital city of {c} is?", "Which is the capital of {c}?",
            "I want to know the capital of {c}.", "{C}: what is its capital?", "What is {c}'s capital city?",
            "Tell me, what is the capital city of {c}?", "Which city is the capital of {c}, if you know?"]
CAP_Q_EN_HELD = ["Could you please tell me which city is the capital of {c}?",
                 "I was wondering, what is the capital city of {c}?",
                 "Please name the capital city of {c}.",
                 "Which city is the capital city of {c}, please?",
                 "Hi! What's the capital city of {c}?"]
CAP_A_EN = ["The capital of {c} is {k}.", "{K} is the capital of {c}.", "The capital city of {c} is {k}.",
            "{c}'s capital is {k}."]
CAP_Q_VI = ["Thủ đô của {c} là gì?", "Thủ đô của {c} là thành phố nào?", "{C} có thủ đô là gì?",
            "Cho tôi biết thủ đô của {c}.", "Bạn có biết thủ đô của {c} không?", "Thủ đô {c} ở đâu?",
            "Thành phố nào là thủ đô của {c}?", "Thủ đô của nước {c} là gì?", "Thủ đô của {c} tên là gì?",
            "Hãy cho tôi biết thủ đô của nước {c}.", "Nước {c} có thủ đô là thành phố nào?",
            "Bạn biết thủ đô của {c} là gì không?", "Thủ đô của {c} là thành phố gì vậy?"]
CAP_Q_VI_HELD = ["Xin cho biết thủ đô của {c} là thành phố nào?",
                 "Bạn cho tôi hỏi, thủ đô của {c} là gì?",
                 "Thủ đô nước {c} là gì vậy?"]
CAP_A_VI = ["Thủ đô của {c} là {k}.", "{K} là thủ đô của {c}.", "{C} có thủ đô là {k}."]

ADD_Q_EN = ["What is {a} plus {b}?", "What is {a} + {b}?", "How much is {a} plus {b}?", "Add {a} and {b}.",
            "Calculate {a} + {b}.", "{a} + {b} = ?", "What do you get if you add {a} and {b}?"]
ADD_A_EN = ["{a} plus {b} is {s}.", "{a} + {b} = {s}.", "The answer is {s}.", "{a} plus {b} equals {s}."]
SUB_Q_EN = ["What is {a} minus {b}?", "What is {a} - {b}?", "How much is {a} minus {b}?",
            "Subtract {b} from {a}.", "Calculate {a} - {b}.", "{a} - {b} = ?"]
SUB_A_EN = ["{a} minus {b} is {s}.", "{a} - {b} = {s}.", "The answer is {s}.", "{a} minus {b} equals {s}."]
ADD_Q_VI = ["{a} cộng {b} bằng mấy?", "{a} + {b} bằng bao nhiêu?", "Tính {a} cộng {b}.", "{a} cộng {b} là bao nhiêu?"]
ADD_A_VI = ["{a} cộng {b} bằng {s}.", "{a} + {b} = {s}.", "Kết quả là {s}."]
SUB_Q_VI = ["{a} trừ {b} bằng mấy?", "{a} - {b} bằng bao nhiêu?", "Tính {a} trừ {b}."]
SUB_A_VI = ["{a} trừ {b} bằng {s}.", "{a} - {b} = {s}.", "Kết quả là {s}."]

COL_Q_EN = ["What colour is {t}?", "What color is {t}?", "Which colour is {t}?", "Tell me the colour of {t}.",
            "What is the colour of {t}?", "What color is {t} usually?",
            "Usually, {t} is which colour?", "Which colour is {t} usually?", "When you see {t}, what colour is it?"]
COL_Q_EN_HELD = ["Can you tell me what color {t} usually is?", "Usually, what colour is {t}?"]
COL_A_EN = ["{T} is {k}.", "{T} is usually {k}.", "The colour of {t} is {k}."]
COL_Q_VI = ["{T} màu gì?", "{T} có màu gì?", "Màu của {t} là gì?"]
COL_Q_VI_HELD = ["Bạn có biết {t} thường có màu gì không?"]
COL_A_VI = ["{T} có màu {k}.", "{T} thường có màu {k}.", "Màu của {t} là màu {k}."]
MIX_Q_EN = ["What colour do you get when you mix {a} and {b}?", "If I mix {a} and {b}, what colour do I get?",
            "What do {a} and {b} make when mixed?",
            "If I mix {a} paint and {b} paint, what colour do I get?",
            "When you mix {a} and {b}, what colour do you get?", "What colour is made by mixing {a} and {b}?",
            "Which colour do {a} paint and {b} paint make?"]
MIX_Q_EN_HELD = ["Mixing {a} paint with {b} paint gives which colour?"]
MIX_A_EN = ["Mixing {a} and {b} gives {k}.", "You get {k}.", "{a} and {b} make {k}."]

SND_Q_EN = ["What sound does a {a} make?", "What noise does a {a} make?", "How does a {a} sound?",
            "What does a {a} say?",
            "When a {a} is happy, what sound does it make?"]
SND_Q_EN_HELD = ["Which sound is made by a {a}?", "When a {a} makes a noise, what does it sound like?"]
SND_A_EN = ["A {a} says \"{k}\".", "A {a} makes a \"{k}\" sound.", "It goes \"{k}\"."]
LEG_Q_EN = ["How many legs does a {a} have?", "How many legs has a {a} got?", "Count the legs of a {a}.",
            "Tell me the number of legs a {a} has.", "How many legs are on a {a}?"]
LEG_Q_EN_HELD = ["What is the number of legs on a {a}?"]
LEG_A_EN = ["A {a} has {k} legs.", "It has {k} legs.", "A {a} walks on {k} legs."]
LEG_Q_VI = ["Con {a} có mấy chân?", "Con {a} có bao nhiêu chân?",
            "Con {a} có tất cả bao nhiêu chân?", "Bạn có biết con {a} có bao nhiêu chân không?"]
LEG_Q_VI_HELD = ["Bạn có biết con {a} có tất cả mấy chân không?"]
LEG_A_VI = ["Con {a} có {k} chân.", "Nó có {k} chân."]
BABY_Q_EN = ["What is a baby {a} called?", "What do you call a baby {a}?", "What is the name of a baby {a}?",
             "What do you call a young {a}?", "A young {a} is called what?"]
BABY_Q_EN_HELD = ["What's the word for a young {a}?"]
BABY_A_EN = ["A baby {a} is called a {k}.", "We call a baby {a} a {k}.", "It is called a {k}."]

OPP_Q_EN = ["What is the opposite of {w}?", "What's the opposite of \"{w}\"?", "Give me the opposite of {w}.",
            "Opposite of {w}?", "What word means the opposite of {w}?", "Tell me the opposite of \"{w}\"."]
OPP_Q_EN_HELD = ["Can you tell me a word that is the opposite of {w}?", "Which word is the opposite of \"{w}\"?"]
OPP_A_EN = ["The opposite of \"{w}\" is \"{k}\".", "The opposite of {w} is {k}.", "\"{K}\" is the opposite of \"{w}\"."]
OPP_Q_VI = ["Từ trái nghĩa với \"{w}\" là gì?", "Trái nghĩa của {w} là gì?", "Cho tôi từ trái nghĩa của \"{w}\"."]
OPP_Q_VI_HELD = ["Bạn biết từ nào trái nghĩa với \"{w}\" không?"]
OPP_A_VI = ["Từ trái nghĩa với \"{w}\" là \"{k}\".", "Trái nghĩa của {w} là {k}."]

SPELL_Q_EN = ["How do you spell \"{w}\"?", "Spell the word \"{w}\".", "Can you spell {w}?", "Spell {w} letter by letter.",
              "Which letters spell \"{w}\"?", "Give me the letters of \"{w}\" one by one.", "Spell out {w}."]
SPELL_Q_EN_HELD = ["Please spell out the word \"{w}\" for me.", "What are the letters of \"{w}\"?"]
SPELL_A_EN = ["\"{w}\" is spelled {k}.", "The word \"{w}\" is spelled {k}.", "It is spelled {k}."]
LEN_Q_EN = ["How many letters are in \"{w}\"?", "How many letters does the word \"{w}\" have?",
            "Count the letters in {w}.",
            "Tell me the number of letters in {w}."]
LEN_Q_EN_HELD = ["What is the number of letters in the word \"{w}\"?"]
LEN_A_EN = ["The word \"{w}\" has {k} letters.", "\"{w}\" has {k} letters: {s}.", "There are {k} letters in \"{w}\"."]
NEXT_Q_EN = ["What number comes after {n}?", "What is the next number after {n}?", "Which number is one more than {n}?",
             "What number follows {n} when you count?", "When you count, which number comes after {n}?",
             "Tell me the number that follows {n}."]
NEXT_Q_EN_HELD = ["Which number follows {n}?"]
NEXT_A_EN = ["{k} comes after {n}.", "The number after {n} is {k}.", "It is {k}."]
NEXT_Q_VI = ["Số nào đứng sau số {n}?", "Sau số {n} là số mấy?",
             "Số nào liền sau số {n}?", "Khi đếm, số nào liền sau {n}?"]
NEXT_Q_VI_HELD = ["Số liền sau của {n} là số nào?"]
NEXT_A_VI = ["Số đứng sau {n} là {k}.", "Sau {n} là {k}."]

HOW_Q_EN = ["How do I {x}?", "How can I {x}?", "What is the best way to {x}?", "Tell me how to {x}.",
            "Explain how to {x}.", "how to {x}?",
            "How should I {x}?", "What should I do to {x}?", "Can you explain how to {x}?", "Briefly, how do I {x}?"]
HOW_Q_EN_HELD = ["Could you explain briefly how I should {x}?", "I need to {x}. How?"]
HOW_Q_VI = ["Làm sao để {x}?", "Làm thế nào để {x}?", "Hướng dẫn tôi cách {x}.",
            "Bạn hãy chỉ cho tôi cách {x}.", "Chỉ cho tôi cách {x} với."]
HOW_Q_VI_HELD = ["Bạn chỉ tôi cách {x} được không?"]

# Filler around a training question, so the model learns to look past it to the question itself.
# The held-out phrasings use other fillers ("Hi!", "I was wondering,", "Could you please ..."),
# so robustness to filler is tested, not memorised. Every word of a held-out phrasing still occurs
# somewhere in training (here, in the greetings, or in another question): a model trained from
# scratch has no meaning at all for a token it never saw (its embedding row stays zero), and the
# evaluation is about new phrasings, not new words. The held-out phrasing as a whole never occurs.
FILL_PRE_EN = ["Hey! ", "Hello. ", "Excuse me. ", "Sorry to ask. ", "Okay. ", "Good morning! ", "One question: ",
               "Teacher: ", "Hmm. ", "I have a question. ", "My friend asked me this: ", "Here is my question. ",
               "Quick check: ", "Help me with this one. ", "I want to know something. ", "For my homework: ",
               "Good evening. ", "Let me ask you something. ", "Tell me please: ",
               "Hi. ", "Hi there! ", "I am wondering about something. ", "When you have a moment: "]
FILL_POST_EN = [" Thanks!", " Thank you.", " I forgot.", " Answer quickly.", " Just curious.", " I need it for class.",
                " Thanks a lot!", " Be brief.", " My friend doesn't know.",
                " Just wondering.", " My teacher made me ask.", " You should know this."]
FILL_PRE_VI = ["Chào bạn! ", "Cho mình hỏi: ", "Này! ", "Bạn ơi! ", "Dạ. ", "Mình có một câu hỏi. ", "Hỏi nhanh: ",
               "Bạn giúp mình nhé. ", "Cô giáo hỏi: "]
FILL_POST_VI = [" Cảm ơn!", " Mình quên mất rồi.", " Trả lời nhanh nhé.", " Cảm ơn bạn nhiều.", " Mình cần cho bài tập."]

GREET_Q_EN = ["Hi!", "Hi", "Hi there.", "Hello!", "Hi, how are you?", "Good morning!"]
GREET_A_EN = ["Hi! How can I help you today?", "Hello! What would you like to know?", "Hi! Ask me a question."]
GREET_Q_VI = ["Chào bạn!", "Xin chào!", "Chào bạn, bạn khỏe không?"]
GREET_A_VI = ["Chào bạn! Mình có thể giúp gì cho bạn?", "Xin chào! Bạn muốn hỏi gì?"]

SYSTEMS_EN = ["You are a helpful assistant.", "You are a friendly teacher. Answer briefly.",
              "Answer in one or two sentences.", "You are a concise assistant for a class.",
              "You are tl-mini, a tiny assistant. Be short and correct."]
SYSTEMS_VI = ["Bạn là một trợ lý hữu ích.", "Hãy trả lời ngắn gọn.", "Bạn là một giáo viên thân thiện."]


def held_out_pattern():
    """Every held-out phrasing as a regular expression (any fill for its fields), so training
    questions built from parts and fillers can be checked against them."""
    import re
    pats = []
    for name, val in globals().items():
        if name.endswith("_HELD"):
            for t in val:
                pats.append(re.sub(r"\\\{[a-zA-Z]\\\}", ".+", re.escape(t)))
    return re.compile("(?:%s)$" % "|".join(pats))


HELD_OUT = None


def hold_out(cases, frac, rng, allowed=None):
    """Split a list of cases into (train, held); held cases never occur in training.
    allowed(case, held so far) can refuse a case; the next one in the shuffled order is tried."""
    idx = list(range(len(cases)))
    rng.shuffle(idx)
    n = max(1, int(len(cases) * frac))
    held = []
    for i in idx:
        if len(held) < n and (allowed is None or allowed(cases[i], held)):
            held.append(cases[i])
    return [c for c in cases if c not in held], sorted(held)


def reverse_trained(pair, held):
    """For sums: hold out a + b (a != b) only while b + a stays in training, so the model has
    seen the fact in the other order, but never these two numbers in this order."""
    a, b = pair
    return a != b and (b, a) not in held


class Gen:
    def __init__(self, seed, split_seed=None):
        """seed drives the text; split_seed (default: seed) picks the held-out number pairs, so the
        evaluation generator can draw other questions over the training run's held-out pairs."""
        self.rng = random.Random(seed)
        r = random.Random((seed if split_seed is None else split_seed) + 1)
        adds = [(a, b) for a in range(0, 11) for b in range(0, 11)]
        subs = [(a, b) for a in range(0, 13) for b in range(0, a + 1)]
        self.add_train, self.add_held = hold_out(adds, 0.1, r, reverse_trained)
        self.sub_train, self.sub_held = hold_out(subs, 0.1, r)

    def pick(self, xs):
        return self.rng.choice(xs)

    # ---- one fact -> (question, answer, accepted answers) for a split ("train" or "held")
    def capital(self, lang, split, i=None):
        en, k, vi, kvi = COUNTRIES[self.rng.randrange(len(COUNTRIES))] if i is None else COUNTRIES[i]
        if lang == "en":
            q = self.pick(CAP_Q_EN if split == "train" else CAP_Q_EN_HELD)
            a = self.pick(CAP_A_EN)
            fill = dict(c=en, C=cap(en), k=k, K=cap(k))
            accept = [k]
        else:
            kv = kvi or k
            q = self.pick(CAP_Q_VI if split == "train" else CAP_Q_VI_HELD)
            a = self.pick(CAP_A_VI)
            fill = dict(c=vi, C=cap(vi), k=kv, K=cap(kv))
            accept = sorted({kv, k})
        q = q.format(**fill)
        q = cap(q) if not q.startswith("capital") else q
        return q, cap(a.format(**fill)), accept

    def arith(self, lang, split):
        op = self.rng.random() < 0.6
        pairs = (self.add_train if op else self.sub_train) if split == "train" else (self.add_held if op else self.sub_held)
        a, b = self.pick(pairs)
        s = a + b if op else a - b
        if lang == "en":
            qs, ans = (ADD_Q_EN, ADD_A_EN) if op else (SUB_Q_EN, SUB_A_EN)
        else:
            qs, ans = (ADD_Q_VI, ADD_A_VI) if op else (SUB_Q_VI, SUB_A_VI)
        return self.pick(qs).format(a=a, b=b), cap(self.pick(ans).format(a=a, b=b, s=s)), [str(s)]

    def colour(self, lang, split):
        if lang == "en" and self.rng.random() < 0.2:
            a, b, k = self.pick(F.MIXES)
            if self.rng.random() < 0.5:
                a, b = b, a
            q = self.pick(MIX_Q_EN if split == "train" else MIX_Q_EN_HELD).format(a=a, b=b)
            return q, cap(self.pick(MIX_A_EN).format(a=a, b=b, k=k)), [k]
        t, k, tv, kv = self.pick(F.COLOURS)
        if lang == "en":
            q = self.pick(COL_Q_EN if split == "train" else COL_Q_EN_HELD).format(t=t, T=cap(t))
            return q, self.pick(COL_A_EN).format(t=t, T=cap(t), k=k), [k]
        q = self.pick(COL_Q_VI if split == "train" else COL_Q_VI_HELD).format(t=tv, T=cap(tv))
        return q, self.pick(COL_A_VI).format(t=tv, T=cap(tv), k=kv), [kv]

    def animal(self, lang, split):
        r = self.rng.random()
        if lang == "vi":
            a, _, av, kv = self.pick(F.LEGS)
            q = self.pick(LEG_Q_VI if split == "train" else LEG_Q_VI_HELD).format(a=av)
            return q, self.pick(LEG_A_VI).format(a=av, k=kv), [kv]
        if r < 0.4:
            a, k = self.pick(F.SOUNDS)
            qs, ans = (SND_Q_EN if split == "train" else SND_Q_EN_HELD), SND_A_EN
        elif r < 0.7:
            a, k, _, _ = self.pick(F.LEGS)
            qs, ans = (LEG_Q_EN if split == "train" else LEG_Q_EN_HELD), LEG_A_EN
        else:
            a, k = self.pick(F.BABIES)
            qs, ans = (BABY_Q_EN if split == "train" else BABY_Q_EN_HELD), BABY_A_EN
        accept = [k]
        if k in F.NUMBER_WORDS:
            accept = [k, str(F.NUMBER_WORDS.index(k))]
        return self.pick(qs).format(a=a), self.pick(ans).format(a=a, k=k), accept

    def opposite(self, lang, split):
        pairs = F.OPPOSITES_EN if lang == "en" else F.OPPOSITES_VI
        w, k = self.pick(pairs)
        if self.rng.random() < 0.5:
            w, k = k, w
        if lang == "en":
            q = self.pick(OPP_Q_EN if split == "train" else OPP_Q_EN_HELD)
            a = self.pick(OPP_A_EN)
        else:
            q = self.pick(OPP_Q_VI if split == "train" else OPP_Q_VI_HELD)
            a = self.pick(OPP_A_VI)
        return cap(q.format(w=w)), cap(a.format(w=w, k=k, K=cap(k))), [k]

    def spelling(self, lang, split):
        w = self.pick(F.WORDS)
        s = "-".join(w.upper())
        if self.rng.random() < 0.55:
            q = self.pick(SPELL_Q_EN if split == "train" else SPELL_Q_EN_HELD).format(w=w)
            return q, cap(self.pick(SPELL_A_EN).format(w=w, k=s)), [s]
        n = len(w)
        q = self.pick(LEN_Q_EN if split == "train" else LEN_Q_EN_HELD).format(w=w)
        return q, cap(self.pick(LEN_A_EN).format(w=w, k=n, s=s)), [str(n), F.NUMBER_WORDS[n] if n < 13 else str(n)]

    def counting(self, lang, split):
        n = self.rng.randrange(0, 99)
        if lang == "en":
            q = self.pick(NEXT_Q_EN if split == "train" else NEXT_Q_EN_HELD)
            a = self.pick(NEXT_A_EN)
        else:
            q = self.pick(NEXT_Q_VI if split == "train" else NEXT_Q_VI_HELD)
            a = self.pick(NEXT_A_VI)
        return q.format(n=n), cap(a.format(n=n, k=n + 1)), [str(n + 1)]

    def howto(self, lang, split):
        if lang == "en":
            x, key, answers = self.pick(F.HOWTO_EN)
            q = self.pick(HOW_Q_EN if split == "train" else HOW_Q_EN_HELD).format(x=x)
        else:
            x, key, answers = self.pick(F.HOWTO_VI)
            q = self.pick(HOW_Q_VI if split == "train" else HOW_Q_VI_HELD).format(x=x)
        return cap(q), self.pick(answers), [key]

    # ---- long answers (train only; long.jsonl asks the same kinds of request)
    def long(self, lang):
        r = self.rng.random()
        if r < 0.25:
            n = self.rng.randrange(25, 41)
            if lang == "en":
                q = self.pick(["Count from 1 to {n}.", "Count to {n}.", "Please count from one to {n}.",
                               "Can you count to {n}?"]).format(n=n)
                a = self.pick(["", "Sure! ", "Here you go: "]) + ", ".join(str(i) for i in range(1, n + 1)) + "."
            else:
                q = self.pick(["Đếm từ 1 đến {n}.", "Hãy đếm đến {n}."]).format(n=n)
                a = self.pick(["", "Được thôi: "]) + ", ".join(str(i) for i in range(1, n + 1)) + "."
            return q, a
        if r < 0.55:
            return self.story(lang)
        if r < 0.8:
            n = self.rng.randrange(3, 11)
            kind = self.pick(["animals", "fruits", "colours", "countries", "capitals"])
            if kind == "countries" or kind == "capitals":
                cs = self.rng.sample(COUNTRIES, n)
                if kind == "countries":
                    items = [c[0] if lang == "en" else c[2] for c in cs]
                    items = [cap(x) for x in items]
                else:
                    items = ["%s: %s" % (cap(c[0]), c[1]) if lang == "en" else "%s: %s" % (c[2], c[3] or c[1]) for c in cs]
            else:
                pool = {"animals": F.ANIMALS, "fruits": F.FRUITS, "colours": F.COLOUR_NAMES}[kind]
                items = self.rng.sample(pool, min(n, len(pool)))
                n = len(items)
            body = "\n".join("%d. %s" % (i + 1, x) for i, x in enumerate(items))
            word = F.NUMBER_WORDS[n] if n < 13 else str(n)
            if lang == "en":
                what = {"animals": "animals", "fruits": "fruits", "colours": "colours",
                        "countries": "countries", "capitals": "countries and their capitals"}[kind]
                q = self.pick(["List {w} {k}.", "Name {w} {k}.", "Give me a list of {w} {k}.",
                               "Write a numbered list of {n} {k}."]).format(w=word, n=n, k=what)
                a = self.pick(["Here are {w} {k}:\n", "Sure:\n", ""]).format(w=word, k=what) + body
            else:
                what = {"animals": "con vật", "fruits": "loại quả", "colours": "màu sắc",
                        "countries": "quốc gia", "capitals": "quốc gia và thủ đô"}[kind]
                q = self.pick(["Hãy liệt kê {n} {k}.", "Kể tên {n} {k}."]).format(n=n, k=what)
                a = self.pick(["Đây là {n} {k}:\n", ""]).format(n=n, k=what) + body
            return q, a
        # quiz with "Q:" lines (stop-string demos)
        n = self.rng.randrange(3, 7)
        lines = []
        for _ in range(n):
            fns = [self.capital, self.colour, self.opposite, self.animal] + ([self.arith] if lang == "en" else [])
            qq, aa, _ = self.pick(fns)(lang, "train")
            lines.append("Q: %s\nA: %s" % (qq, aa))
        if lang == "en":
            q = self.pick(["Write {n} quiz questions with answers.", "Give me {n} quiz questions and their answers.",
                           "Make a short quiz of {n} questions."]).format(n=n)
        else:
            q = self.pick(["Hãy viết {n} câu hỏi đố vui kèm đáp án.", "Cho tôi {n} câu đố có đáp án."]).format(n=n)
        return q, "\n".join(lines)

    def story(self, lang):
        an, av = self.pick(F.STORY_ANIMALS)
        if lang == "en":
            name = self.pick(F.NAMES)
            q = self.pick(["Tell me a short story about a {a}.", "Write a story about a {a}.",
                           "Can you tell me a story about a little {a}?", "Tell me a bedtime story about a {a}."]).format(a=an)
            place = self.pick(["in a quiet forest", "near a big river", "on a small farm", "in a busy city",
                               "at the edge of a village"])
            event = self.pick(["{n} found a shiny key under a tree", "{n} heard a strange sound in the night",
                               "a storm came and {n} lost the way home", "{n} met a lonely bird with a hurt wing",
                               "{n} saw a bright light in the sky"]).format(n=name)
            res = self.pick(["With the help of new friends, {n} solved the mystery.",
                             "{n} was brave, followed the path and found the way back.",
                             "{n} shared food and stayed until everyone was safe.",
                             "{n} asked the wise old owl, who knew exactly what to do."]).format(n=name)
            end = self.pick(["From that day on, {n} was never afraid again.", "{n} learned that kindness is the best gift.",
                             "And every evening after that, {n} told the story to the other animals."]).format(n=name)
            a = "Once upon a time, there was a little %s named %s who lived %s. One day, %s. %s %s The end." % (
                an, name, place, event, res, end)
        else:
            name = self.pick(F.NAMES_VI)
            q = self.pick(["Kể cho tôi một câu chuyện ngắn về con {a}.", "Hãy viết một câu chuyện về chú {a}."]).format(a=av)
            place = self.pick(["trong một khu rừng yên tĩnh", "bên một dòng sông lớn", "ở một trang trại nhỏ"])
            event = self.pick(["{n} tìm thấy một chiếc chìa khóa lấp lánh", "{n} nghe thấy một tiếng động lạ trong đêm",
                               "một cơn bão kéo đến và {n} bị lạc đường"]).format(n=name)
            res = self.pick(["Nhờ những người bạn mới, {n} đã tìm ra lời giải.",
                             "{n} rất dũng cảm và đã tìm được đường về nhà."]).format(n=name)
            a = "Ngày xửa ngày xưa, có một chú %s tên là %s sống %s. Một hôm, %s. %s Từ đó, %s không bao giờ sợ hãi nữa. Hết." % (
                av, name, place, event, res, name)
        return q, a

    DOMAINS = [("capital", 0.40), ("arith", 0.09), ("colour", 0.07), ("animal", 0.08), ("opposite", 0.07),
               ("spelling", 0.08), ("counting", 0.04), ("howto", 0.05)]

    def short(self, lang, split, domain=None):
        if domain is None:
            r = self.rng.random() * sum(w for _, w in self.DOMAINS)
            for domain, w in self.DOMAINS:
                if r < w:
                    break
                r -= w
        if lang == "vi" and domain == "spelling":
            domain = "opposite"
        return domain, getattr(self, domain)(lang, split)

    def system(self, lang):
        if self.rng.random() < 0.4:
            return [{"role": "system", "content": self.pick(SYSTEMS_EN if lang == "en" else SYSTEMS_VI)}]
        return []

    def turn(self, lang):
        """One exchange: [user, assistant] or, for a follow-up, [user, user, assistant]."""
        if self.rng.random() < 0.02:       # a greeting, as a class's first message often is
            if lang == "en":
                return [{"role": "user", "content": self.pick(GREET_Q_EN)},
                        {"role": "assistant", "content": self.pick(GREET_A_EN)}]
            return [{"role": "user", "content": self.pick(GREET_Q_VI)},
                    {"role": "assistant", "content": self.pick(GREET_A_VI)}]
        r = self.rng.random()
        if r < 0.09:                       # a long answer
            q, a = self.long(lang)
            return [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
        if r < 0.22:                       # the user sends a follow-up before the answer
            _, (q1, a1, _) = self.short(lang, "train")
            if self.rng.random() < 0.6:
                _, (q2, a2, _) = self.short(lang, "train")
                if self.rng.random() < 0.5:
                    q2 = self.pick(["And ", "Also, ", "One more: "] if lang == "en" else ["Và ", "Thêm nữa: "]) + q2[0].lower() + q2[1:]
                ans = a1 + " " + a2
            else:
                q2 = self.pick(["Please answer briefly.", "Thanks!", "Just the answer, please.", "Hello?"] if lang == "en"
                               else ["Trả lời ngắn gọn nhé.", "Cảm ơn!", "Bạn ơi?"])
                ans = a1
            return [{"role": "user", "content": q1}, {"role": "user", "content": q2},
                    {"role": "assistant", "content": ans}]
        while True:
            _, (q, a, _) = self.short(lang, "train")
            q = self.filler(q, lang)
            if not HELD_OUT.search(q):
                break
        return [{"role": "user", "content": q}, {"role": "assistant", "content": a}]

    def filler(self, q, lang):
        r = self.rng.random()
        if r >= 0.45:
            return q
        pre, post = (FILL_PRE_EN, FILL_POST_EN) if lang == "en" else (FILL_PRE_VI, FILL_POST_VI)
        if r < 0.3:
            return self.pick(pre) + q
        return q + self.pick(post)

    def conversation(self):
        """2-5 exchanges after the system header (several exchanges share one header)."""
        lang = "en" if self.rng.random() < 0.65 else "vi"
        msgs = self.system(lang)
        for _ in range(self.pick([2, 3, 3, 4, 4, 5])):
            msgs += self.turn(lang)
        return msgs

    def raw(self):
        """Untemplated text: a list of questions, or "Q:"/"A:" lines."""
        lang = "en" if self.rng.random() < 0.7 else "vi"
        n = self.rng.randrange(3, 9)
        items = [self.short(lang, "train")[1] for _ in range(n)]
        if self.rng.random() < 0.5:
            sep = self.pick(["\n", " "])
            return BOS + sep.join(q for q, _, _ in items)
        return BOS + "\n".join("Q: %s\nA: %s" % (q, a) for q, a, _ in items)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--n", type=int, default=60000)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    global HELD_OUT
    HELD_OUT = held_out_pattern()
    g = Gen(args.seed)
    with open(os.path.join(args.out, "train.jsonl"), "w") as f:
        for i in range(args.n):
            text = g.raw() if g.rng.random() < 0.05 else render(g.conversation())
            f.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")

    # Held-out questions: every country in both languages, then the other domains.
    e = Gen(args.seed + 7, split_seed=args.seed)
    ev = []
    for i in range(len(COUNTRIES)):
        for lang in ("en", "vi") if i % 3 == 0 else ("en",):
            q, _, acc = e.capital(lang, "held", i)
            ev.append({"domain": "capital", "lang": lang, "question": q, "accept": acc})
    quota = [("arith", "en", 12), ("arith", "vi", 6), ("colour", "en", 12), ("colour", "vi", 6),
             ("animal", "en", 14), ("animal", "vi", 5), ("opposite", "en", 12), ("opposite", "vi", 6),
             ("spelling", "en", 14), ("counting", "en", 6), ("counting", "vi", 4), ("howto", "en", 8),
             ("howto", "vi", 4)]
    for dom, lang, n in quota:
        seen = set()
        while n > 0:
            _, (q, _, acc) = e.short(lang, "held", dom)
            if q in seen:
                continue
            seen.add(q)
            ev.append({"domain": dom, "lang": lang, "question": q, "accept": acc})
            n -= 1
    with open(os.path.join(args.out, "eval.jsonl"), "w") as f:
        for x in ev:
            f.write(json.dumps(x, ensure_ascii=False) + "\n")
    with open(os.path.join(args.out, "long.jsonl"), "w") as f:
        for q in ["Count from 1 to 50.", "List ten animals.", "Tell me a short story about a fox.",
                  "Write five quiz questions with answers.", "Give me a list of eight countries and their capitals.",
                  "Đếm từ 1 đến 50.", "Kể cho tôi một câu chuyện ngắn về con mèo.", "Name ten fruits."]:
            f.write(json.dumps({"question": q}, ensure_ascii=False) + "\n")
    with open(os.path.join(args.out, "nogen.jsonl"), "w") as f:
        for x in ev[::12]:
            f.write(json.dumps({"question": x["question"], "lang": x["lang"]}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
