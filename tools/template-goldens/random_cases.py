"""Random templates for differential testing against Jinja2 (a fixed seed, so the set is stable):
expressions mixing every operator, filter, test and method the engine has, inside if/for/set/
namespace/macro statements. Jinja2's lazy filters (select, map, unique, batch, items, ...) are
always followed by |list, and assignments use fresh names, so that every render is either a
deterministic text or an eager error on both sides."""
import random

CTX = {"n": 7, "m": -3, "f": 2.5, "z": 0, "s": "  Hello World  ", "e": "", "u": "Tiếng Việt",
       "l": [3, 1, 2], "ls": ["b", "A", "c"], "d": {"b": 2, "a": 1}, "t": True, "nn": None,
       "people": [{"name": "Bo", "age": 30}, {"name": "al", "age": 25, "x": [1]}],
       "msgs": [{"role": "user", "content": " hi "}, {"role": "assistant", "content": "yo"}]}
VARS = ["n", "m", "f", "z", "s", "e", "u", "l", "ls", "d", "t", "nn", "people", "msgs", "undef",
        "msgs[0]", "people[1]", "d.a", "l[0]", "l[-1]", "msgs[1].content", "people[0]['name']"]
LITS = ["1", "0", "-2", "3", "0.5", "2.0", "1e3", "'a'", "'Hello World'", "' pad '", "''", "'é'",
        "none", "true", "false", "[1, 2]", "['x', 'y']", "{'k': 1}", "(1, 'a')", "[]"]
FILTERS = ["trim", "upper", "lower", "length", "first", "last", "join", "join(', ')", "list", "sort",
           "string", "int", "float", "abs", "round", "round(1)", "default('D')", "default('D', true)",
           "tojson", "tojson(indent=2)", "dictsort", "sum", "min", "max", "replace('l', 'L')",
           "capitalize", "title", "wordcount", "indent(2)", "center(9)", "count", "d", "trim('H ')",
           "sort(reverse=true)", "join('-', attribute='name')"]
LAZY = ["reverse", "unique", "items", "map(attribute='name')", "map('upper')", "select", "reject",
        "select('odd')", "selectattr('age')", "rejectattr('x')", "batch(2)"]
TESTS = ["defined", "undefined", "none", "string", "number", "integer", "float", "mapping", "iterable",
         "sequence", "even", "odd", "divisibleby 2", "in [1, 2, 'a']", "eq 1", "lt 3", "boolean", "true",
         "false", "sameas none", "upper", "lower"]
METHODS = [".upper()", ".lower()", ".split()", ".split('l')", ".strip()", ".strip(' H')",
           ".startswith('H')", ".endswith('d')", ".replace('o', '0')", ".get('a')", ".get('q', 5)",
           ".find('o')", ".count('l')", ".title()", ".format(1)", ".lstrip()", ".rstrip()",
           ".capitalize()", ".rsplit('o', 1)", ".splitlines()"]
BIN = ["+", "-", "*", "/", "//", "%", "**", "~", "==", "!=", "<", ">", "<=", ">=", "in", "not in",
       "and", "or"]
SUBS = ["0", "1", "-1", "1:", ":2", "::-1", "::2", "'a'", "'role'", "'name'"]


def make(seed, count):
    rnd = random.Random(seed)

    # The compound forms by the share of draws below each bound (a leaf below 0.25, and always
    # past depth 3); each form draws its parts left to right, as its f-string reads.
    forms = [
        (0.43, lambda d: f"{expr(d + 1)} {rnd.choice(BIN)} {expr(d + 1)}"),
        (0.55, lambda d: f"({expr(d + 1)})|{rnd.choice(FILTERS)}"),
        (0.6, lambda d: f"({expr(d + 1)})|{rnd.choice(LAZY)}|list"),
        (0.68, lambda d: f"({expr(d + 1)} is {rnd.choice(['', 'not '])}{rnd.choice(TESTS)})"),
        (0.75, lambda d: f"({expr(d + 1)}){rnd.choice(METHODS)}"),
        (0.8, lambda d: f"{rnd.choice(VARS)}[{rnd.choice(SUBS)}]"),
        (0.86, lambda d: f"({expr(d + 1)} if {expr(d + 1)} else {expr(d + 1)})"),
        (0.9, lambda d: f"not {expr(d + 1)}"),
        (0.95, lambda d: f"[{expr(d + 1)}, {expr(d + 1)}]"),
        (float("inf"), lambda d: f"-{expr(d + 1)}"),
    ]

    def expr(d=0):
        r = rnd.random()
        if d > 3 or r < 0.25:
            return rnd.choice(VARS + LITS)
        return next(form for bound, form in forms if r < bound)(d)

    def stmt(d=0):
        r = rnd.random()
        if d > 2 or r < 0.4:
            return "{{ " + expr() + " }}" + rnd.choice(["", " ", "\n", "|"])
        if r < 0.55:
            return ("{% if " + expr() + " %}" + body(d + 1) +
                    rnd.choice(["", "{% elif " + expr() + " %}" + body(d + 1), "{% else %}" + body(d + 1)]) +
                    "{% endif %}")
        if r < 0.72:
            v = rnd.choice(["x", "y"])
            seq = rnd.choice(["l", "ls", "msgs", "people", "d", "'ab'", "range(3)", "s", expr()])
            return ("{%- for " + v + " in " + seq + rnd.choice(["", " if " + v]) + " -%}" +
                    "{{ loop.index }}{{ loop.revindex0 }}{{ loop.first }}{{ " + v + " }}" + body(d + 1) +
                    rnd.choice(["", "{% if loop.first %}{% continue %}{% endif %}", "{% break %}"]) +
                    rnd.choice(["", "{% else %}empty"]) + "{%- endfor %}\n")
        if r < 0.82:
            w = rnd.choice(["q", "w"])
            return "{% set " + w + " = " + expr() + " %}{{ " + w + " }}"
        if r < 0.9:
            return ("{% set ns = namespace(v=" + expr() + ") %}{% for i in [1, 2] %}"
                    "{% set ns.v = ns.v ~ i %}{% endfor %}{{ ns.v }}")
        return "{% macro mm(a, b='B') %}[{{ a }}{{ b }}]{% endmacro %}{{ mm(" + expr() + ") }}"

    def body(d):
        return "".join(stmt(d) for _ in range(rnd.randint(1, 3)))

    return [(f"random{i}", body(0), CTX) for i in range(count)]
