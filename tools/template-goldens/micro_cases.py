"""Hand-written templates, one or a few Jinja2 features each: (name, template, context).
render.py renders them with Jinja2 into tests/template/micro-goldens.json."""

M = {"messages": [{"role": "system", "content": "sys"},
                  {"role": "user", "content": "Hi 'there' \"you\""},
                  {"role": "assistant", "content": "Hello!"}],
     "d": {"b": 2, "a": 1, "C": 3},
     "people": [{"name": "Bo", "age": 30, "tags": ["x"]}, {"name": "al", "age": 25},
                {"name": "Cy", "age": 30, "tags": []}],
     "n": 7, "f": 2.5, "s": "  Hello World  ", "u": "Tiếng Việt 你好 👩‍👧",
     "empty": [], "none": None, "t": True, "words": ["b", "A", "c", "a", "B"]}

CASES = [
    # whitespace: trim_blocks, lstrip_blocks, -/+ markers, comments, trailing newline
    ("ws_trim_blocks", "{% if true %}\nyes\n{% endif %}\nafter\n", {}),
    ("ws_lstrip_blocks", "a\n    {% if true %}\n    b\n    {% endif %}\nc", {}),
    ("ws_lstrip_not_vars", "x\n    {{ 1 }}\n    {% if 1 %}y{% endif %}", {}),
    ("ws_minus", "a   {%- if true -%}   b   {%- endif -%}   c", {}),
    ("ws_minus_vars", "a \n {{- 'x' -}} \n b", {}),
    ("ws_plus", "a\n    {%+ if true %}b{% endif +%}\nc", {}),
    ("ws_comment", "a\n  {# comment #}\nb {#- c -#} c\n{# x #}d", {}),
    ("ws_inline_tag_after_text", "text {% if true %}\nx{% endif %}", {}),
    ("ws_trailing_newlines", "line\n\n", {}),
    ("ws_crlf_template", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc", {}),
    ("ws_line_starting_after_var", "{{ 'v' }}   {% if true %}x{% endif %}", {}),
    ("ws_raw", "{% raw %}{{ not }} {% evaluated %}{% endraw %}!", {}),
    ("ws_raw_minus", "a  {%- raw -%}  {{ x }}  {%- endraw -%}  b", {}),
    ("ws_tabs", "\t{% for i in [1,2] %}\n\t{{ i }}\n\t{% endfor %}\n", {}),
    # literals and printing
    ("print_literals", "{{ 1 }}|{{ -3 }}|{{ 1.0 }}|{{ 2.50 }}|{{ 1e3 }}|{{ 1_000 }}|{{ true }}|{{ False }}|{{ none }}|{{ 'a' \"b\" }}", {}),
    ("print_containers", "{{ [1, 'a', none, true, 2.0] }}|{{ (1,) }}|{{ (1, 'b') }}|{{ {'k': 'v', 1: [2]} }}|{{ [] }}|{{ {} }}", {}),
    ("print_str_repr", "{{ ['it\\'s', 'say \"hi\"', 'both \\' \"', 'nl\\n', 'tab\\t', 'back\\\\slash', 'ünï'] }}", {}),
    ("print_floats", "{{ 0.1 + 0.2 }}|{{ 1 / 3 }}|{{ 10 / 2 }}|{{ 1e16 }}|{{ 1.5e-5 }}|{{ 123456789.123 }}|{{ 2 ** 0.5 }}|{{ -0.0 }}|{{ 1e100 }}", {}),
    ("print_context_values", "{{ messages[1] }}|{{ d }}|{{ f }}|{{ none }}|{{ t }}|{{ u }}", M),
    # repr of a list of strings escapes what str.isprintable says is not printable
    ("print_str_repr_unicode", "{{ s2 }}|{{ s2 | list }}",
     {"s2": ["a\u00a0b\u200bc\u2028d\u3000e\ufeff\ue000f\u0378g\u00adh\u00e9\U0001f999 \x85\x7f\U000e0001"]}),
    # %-formatting as Python does it: %c, signs, bases with a minus sign, '#' prefixes, widths in characters
    ("percent_format_python", open(__file__.replace("micro_cases.py", "percent_format.jinja")).read(), {}),
    ("percent_c_range", "{{ '%c' % 1114112 }}", {}),
    ("percent_x_float", "{{ '%x' % 2.5 }}", {}),
    ("string_escapes", "{{ 'a\\nb\\tc\\\\d\\'e\\\"f\\x41\\u00e9\\U0001F600' }}", {}),
    # arithmetic and operators
    ("arith_int", "{{ 7 + 3 }} {{ 7 - 10 }} {{ 7 * 3 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }}", {}),
    ("arith_float", "{{ 7.5 + 1 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 2.0 ** 3 }} {{ 1 - 0.9 }} {{ 3 * 1.1 }}", {}),
    ("arith_strings_lists", "{{ 'ab' + 'cd' }} {{ 'ab' * 3 }} {{ 3 * 'x' }} {{ [1] + [2, 3] }} {{ [0] * 3 }} {{ '%s-%s' % ('a', 1) }} {{ '%d%%' % 5 }}", {}),
    ("arith_unary", "{{ -n }} {{ +n }} {{ -f }} {{ not n }} {{ not empty }} {{ - -3 }} {{ -2 ** 2 }}", M),
    ("concat_tilde", "{{ 1 ~ 'a' ~ none ~ true ~ 2.0 ~ [1] ~ undefined_var ~ 'z' }}", {}),
    ("compare", "{{ 1 < 2 }} {{ 2 <= 2 }} {{ 3 > 4 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' != 'a' }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ [1, 2] < [1, 3] }} {{ none == none }}", {}),
    ("in_notin", "{{ 'ell' in 'hello' }} {{ 2 in [1, 2] }} {{ 'a' in {'a': 1} }} {{ 'z' not in 'abc' }} {{ 3 not in [3] }} {{ '' in 'x' }} {{ 'role' in messages[0] }}", M),
    ("and_or_values", "{{ 0 or 'x' }} {{ 'a' and 'b' }} {{ '' and 'b' }} {{ none or [] }} {{ 1 and 0 or 5 }} {{ not 0 and 1 }}", {}),
    ("condexpr", "{{ 'y' if n > 5 else 'n' }}|{{ 'y' if n > 10 }}|{{ 'a' if false else 'b' if true else 'c' }}|{{ ('x' if false) ~ '!' }}", M),
    ("precedence", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ 10 - 2 - 3 }} {{ 1 ~ 2 + 3 }} {{ -3|abs }} {{ 'a' ~ 'b'|upper }} {{ not 1 == 2 }}", {}),
    # access
    ("attr_subscript", "{{ messages[0].role }} {{ messages[1]['content'] }} {{ messages[-1].content }} {{ d.a }} {{ d['b'] }} {{ people[0].tags[0] }} {{ people.0.name }}", M),
    ("slices", "{{ [1,2,3,4,5][1:3] }} {{ [1,2,3,4,5][::-1] }} {{ [1,2,3,4,5][::2] }} {{ [1,2,3,4,5][-2:] }} {{ [1,2,3,4,5][:-1] }} {{ [1,2,3][5:] }} {{ [1,2,3,4,5][4:1:-2] }} {{ 'hello'[1:-1] }} {{ 'hello'[::-1] }}", {}),
    ("slices_unicode", "{{ u[:5] }}|{{ u[-3:] }}|{{ u[::-1] }}|{{ u[3] }}|{{ u|length }}", M),
    ("messages_slice", "{% for m in messages[1:] %}{{ m.role }};{% endfor %}{{ messages[0:1]|length }}", M),
    ("tuple_literals", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c = (3, 4) %}{{ c[1] }}{{ c|length }}{{ (1, 2) == (1, 2) }}", {}),
    ("dict_literal_order", "{% set x = {'z': 1, 'a': 2, 'm': 3} %}{% for k in x %}{{ k }}{% endfor %}|{{ x.items()|list }}", {}),
    # control flow
    ("if_elif_else", "{% for i in [1, 2, 3, 4] %}{% if i == 1 %}one{% elif i == 2 %}two{% elif i == 3 %}three{% else %}many{% endif %} {% endfor %}", {}),
    ("for_loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}", {}),
    ("for_prev_next", "{% for x in [1, 2, 3] %}[{{ loop.previtem }}:{{ x }}:{{ loop.nextitem }}]{{ loop.previtem is defined }}{% endfor %}", {}),
    ("for_if", "{% for m in messages if m.role != 'system' %}{{ loop.index }}{{ m.role }}{{ loop.length }}{% endfor %}", M),
    ("for_else", "{% for x in empty %}no{% else %}empty!{% endfor %}{% for x in [1] %}{{ x }}{% else %}no{% endfor %}{% for x in [1, 2] if x > 5 %}{% else %}filtered{% endfor %}", M),
    ("for_break_continue", "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}", {}),
    ("for_nested_loop", "{% for a in [1, 2] %}{% for b in 'xy' %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }};{% endfor %}", {}),
    ("for_unpack", "{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}{% for k in d %}{{ k }}{% endfor %}", M),
    ("for_string_and_dict", "{% for c in 'héllo' %}{{ c }}.{% endfor %}{% for k in {'x': 1, 'y': 2} %}{{ k }}{% endfor %}", {}),
    ("for_undefined", "[{% for x in nothing %}{{ x }}{% endfor %}]", {}),
    ("loop_cycle", "{% for i in range(5) %}{{ loop.cycle('a', 'b', 'c') }}{% endfor %}", {}),
    ("range_forms", "{{ range(3)|list }} {{ range(2, 5)|list }} {{ range(10, 0, -3)|list }} {{ range(0)|list }}", {}),
    # set, scoping, namespace
    ("set_scoping", "{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{{ x }}{% endfor %}|{{ x }}{% if true %}{% set y = 5 %}{% endif %}|{{ y }}", {}),
    ("set_persist_iterations", "{% for i in [1, 2, 3] %}{% if i > 1 %}{{ prev }}{% endif %}{% set prev = i %}{% endfor %}", {}),
    ("namespace", "{% set ns = namespace(found=false, count=0, items=[]) %}{% for m in messages %}{% if m.role == 'user' %}{% set ns.found = true %}{% endif %}{% set ns.count = ns.count + 1 %}{% set ns.items = ns.items + [m.role] %}{% endfor %}{{ ns.found }} {{ ns.count }} {{ ns.items }}", M),
    ("block_set", "{% set greeting %}Hello {{ 'World' }}\n{% endset %}[{{ greeting }}]{% set shout | upper | trim %}  quiet  {% endset %}[{{ shout }}]", {}),
    ("set_in_macro_scope", "{% set x = 'outer' %}{% macro m() %}{% set x = 'inner' %}{{ x }}{% endmacro %}{{ m() }} {{ x }}", {}),
    ("with_block", "{% with a = 1, b = 'x' %}{{ a }}{{ b }}{% endwith %}[{{ a }}]", {}),
    # macros, call, filter blocks
    ("macro_args", "{% macro f(a, b=2, c='x') %}{{ a }}-{{ b }}-{{ c }}{% endmacro %}{{ f(1) }} {{ f(1, 3) }} {{ f(1, c='z') }} {{ f(a=5, b=6) }}", {}),
    ("macro_recursive", "{% macro render(v) %}{% if v is mapping %}{ {% for k, x in v.items() %}{{ k }}: {{ render(x) }} {% endfor %}}{% elif v is iterable and v is not string %}[{% for x in v %}{{ render(x) }},{% endfor %}]{% else %}{{ v }}{% endif %}{% endmacro %}{{ render({'a': [1, {'b': 'c'}], 'd': none}) }}", {}),
    ("macro_sees_globals", "{% set g = 'G' %}{% macro m() %}{{ g }}{{ messages|length }}{% endmacro %}{{ m() }}", M),
    ("macro_missing_arg", "{% macro f(a, b) %}[{{ a }}][{{ b }}]{% endmacro %}{{ f(1) }}", {}),
    ("call_block", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ 1 + 1 }}{% endcall %}", {}),
    ("call_block_args", "{% macro each(xs) %}{% for x in xs %}{{ caller(x, loop.index) }}{% endfor %}{% endmacro %}{% call(item, i) each(['a', 'b']) %}{{ i }}:{{ item }} {% endcall %}", {}),
    ("filter_block", "{% filter upper %}hello {{ 'world' }}{% endfilter %}|{% filter replace('a', 'o') | trim %}  banana  {% endfilter %}", {}),
    ("generation_tag", "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}{{ m.content }}{% endgeneration %}{% else %}{{ m.content }}{% endif %};{% endfor %}", M),
    # tests
    ("tests_types", "{% for v in [1, 1.5, 'a', none, true, [1], {'a': 1}, nothing] %}{{ v is defined }}{{ v is undefined }}{{ v is none }}{{ v is string }}{{ v is number }}{{ v is integer }}{{ v is float }}{{ v is mapping }}{{ v is iterable }}{{ v is sequence }}{{ v is boolean }}{{ v is true }}{{ v is false }};{% endfor %}", {}),
    ("tests_numbers", "{{ 4 is even }}{{ 3 is odd }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(4) }}{{ 2 is equalto 2 }}{{ 2 is eq 3 }}{{ 2 is ne 3 }}{{ 2 is in [1, 2] }}{{ 'a' is in 'cat' }}{{ 1 is lt 2 }}{{ 1 is gt 2 }}{{ 2 is ge 2 }}{{ 2 is le 1 }}{{ none is sameas none }}{{ 1 is not none }}", {}),
    ("tests_misc", "{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ 'aBc' is lower }}{{ range is callable }}{{ messages is not string }}{{ d.missing is not defined }}{{ 1 is number }}", M),
    ("tests_in_select", "{{ [1, 2, 3, 4]|select('odd')|list }} {{ [1, 2, 3, 4]|reject('even')|list }} {{ [0, 1, '', 'a', none]|select|list }} {{ [1, 5, 10]|select('gt', 4)|list }} {{ ['a', 'b']|select('in', 'abc')|list }}", {}),
    # filters
    ("f_trim_case", "[{{ s|trim }}] [{{ '  x\\n\\t'|trim }}] [{{ 'xxhixx'|trim('x') }}] {{ s|upper }} {{ s|lower }} {{ 'hello wORLD-foo bar'|title }} {{ 'hELLO world'|capitalize }} {{ \"they're o'neil\"|title }}", M),
    ("f_length", "{{ messages|length }} {{ 'héllo'|length }} {{ d|count }} {{ empty|length }} {{ nothing|length }} {{ u|count }}", M),
    ("f_replace", "{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'abc'|replace('', '-') }} {{ 'x.y.z'|replace('.', '::') }}", {}),
    ("f_join", "{{ [1, 2, 3]|join }} {{ ['a', 'b']|join(', ') }} {{ people|join('/', attribute='name') }} {{ 'abc'|join('.') }}", M),
    ("f_default", "[{{ nothing|default('dflt') }}] [{{ ''|default('dflt') }}] [{{ ''|default('dflt', true) }}] [{{ none|d('x') }}] [{{ 0|d('z', boolean=true) }}] [{{ nothing|default }}] [{{ d.missing|default(d.a) }}]", M),
    ("f_first_last", "{{ [1, 2, 3]|first }} {{ [1, 2, 3]|last }} {{ 'abc'|first }} {{ 'abc'|last }} {{ d|first }} [{{ empty|first }}] {{ messages|last|attr('role') }}", M),
    ("f_list_items", "{{ 'ab'|list }} {{ d|list }} {{ d|items|list }} {{ d.items()|list }} {{ (1, 2)|list }} {{ nothing|items|list }}", M),
    ("f_map", "{{ messages|map(attribute='role')|list }} {{ people|map(attribute='tags')|list }} {{ ['a', 'B']|map('upper')|list }} {{ [1.4, 2.6]|map('round')|list }} {{ people|map(attribute='nope', default='?')|list }}", M),
    ("f_selectattr", "{{ people|selectattr('age', 'equalto', 30)|map(attribute='name')|list }} {{ people|rejectattr('tags')|map(attribute='name')|list }} {{ people|selectattr('tags', 'defined')|list|length }} {{ messages|selectattr('role', 'in', ['user', 'system'])|list|length }} {{ people|selectattr('age', 'gt', 26)|map(attribute='name')|join }}", M),
    ("f_dictsort", "{{ d|dictsort }} {{ d|dictsort(true) }} {{ d|dictsort(by='value') }} {{ d|dictsort(reverse=true) }}", M),
    ("f_sort_unique", "{{ words|sort }} {{ words|sort(case_sensitive=true) }} {{ words|sort(reverse=true) }} {{ people|sort(attribute='age')|map(attribute='name')|list }} {{ people|sort(attribute='name')|map(attribute='name')|list }} {{ words|unique|list }} {{ words|unique(case_sensitive=true)|list }} {{ [3, 1, 2]|sort }}", M),
    ("f_reverse", "{{ [1, 2, 3]|reverse|list }} {{ 'abc'|reverse }} {{ u|reverse }}", M),
    ("f_string_int_float", "{{ 12|string ~ 'x' }} {{ '42'|int + 1 }} {{ ' 7 '|int }} {{ '3.9'|int }} {{ 'x'|int }} {{ 'x'|int(5) }} {{ 3.99|int }} {{ '2.5'|float }} {{ 3|float }} {{ 'y'|float }} {{ true|int }} {{ [1]|string }}", {}),
    ("f_abs_round", "{{ -3|abs }} {{ -2.5|abs }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 1.4|round(0, 'ceil') }} {{ 1.6|round(method='floor') }} {{ 7|round }}", {}),
    ("f_indent", "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(2, blank=true) }}|{{ 'x\\ny'|indent('> ') }}", {}),
    ("f_tojson", "{{ messages|tojson }}\n{{ d|tojson(indent=2) }}\n{{ people|tojson(indent=4, sort_keys=true) }}\n{{ [1, 'é', none, true, 1.5, {}, []]|tojson }}\n{{ 'quote\" back\\\\ nl\\n tab\\t ctl\\x01'|tojson }}\n{{ d|tojson(separators=(',', ':')) }}", M),
    ("f_tojson_nested_empty", "{{ {'a': [], 'b': {}, 'c': [[]], 'd': [{}]}|tojson(indent=2) }}", {}),
    ("f_safe_wordcount_batch", "{{ '<b>'|safe }} {{ 'Hello big world, 3 times!'|wordcount }} {{ [1, 2, 3, 4, 5]|batch(2)|list }} {{ [1, 2, 3]|batch(2, 0)|list }}", {}),
    ("f_sum_min_max", "{{ [1, 2, 3]|sum }} {{ people|sum(attribute='age') }} {{ [1.5, 2]|sum(start=10) }} {{ [3, 1, 2]|min }} {{ [3, 1, 2]|max }} {{ words|min }} {{ words|max }} {{ words|max(case_sensitive=true) }} {{ people|max(attribute='age')|attr('name') }}", M),
    ("f_escape_format_center", "{{ '<a href=\"x\">&\\'</a>'|e }} {{ '%s=%d'|format('n', 5) }} [{{ 'ab'|center(6) }}]", {}),
    # string methods
    ("m_strip_split", "[{{ s.strip() }}] [{{ s.lstrip() }}] [{{ s.rstrip() }}] [{{ 'xxaxx'.strip('x') }}] {{ 'a b  c'.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a b c'.split(' ', 1) }} {{ '  a  b  '.split() }} {{ 'a\\nb'.splitlines() }}", M),
    ("m_starts_ends", "{{ 'hello'.startswith('he') }} {{ 'hello'.endswith('lo') }} {{ 'hello'.startswith(('x', 'h')) }} {{ 'hi'.endswith('hello') }} {{ messages[2].content.endswith('!') }}", M),
    ("m_case_replace", "{{ 'aBc'.upper() }} {{ 'aBc'.lower() }} {{ 'hello world'.title() }} {{ 'hello'.capitalize() }} {{ 'a-a-a'.replace('-', '+') }} {{ 'a-a-a'.replace('-', '', 1) }} {{ 'AbC'.swapcase() }}", {}),
    ("m_format_find_count", "{{ '{} and {}'.format(1, 'b') }} {{ '{0}{1}{0}'.format('x', 'y') }} {{ '{name}!'.format(name='N') }} {{ '{{literal}}'.format() }} {{ 'hello'.find('l') }} {{ 'hello'.find('z') }} {{ 'hello'.rfind('l') }} {{ 'banana'.count('an') }} {{ 'héllo'.find('l') }}", {}),
    ("m_join_misc", "{{ ', '.join(['a', 'b']) }} {{ '-'.join('xyz') }} {{ '12'.isdigit() }} {{ 'ab'.isalpha() }} {{ 'ab1'.isalnum() }} {{ '5'.zfill(3) }} [{{ 'a'.ljust(3) }}] [{{ 'a'.rjust(3) }}]", {}),
    ("m_dict", "{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 'dflt') }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }} {% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %} {{ messages[0].get('content') }}", M),
    ("m_list", "{{ [1, 2, 1].count(1) }} {{ ['a', 'b'].index('b') }}", {}),
    # Undefined semantics
    ("undef_render", "[{{ nothing }}] [{{ d.missing }}] [{{ messages[9] }}] [{{ none.attr }}] [{{ nothing is defined }}] [{{ nothing|string }}] [{{ nothing|trim }}] [{{ nothing|upper }}] [{{ nothing|list }}] [{{ nothing == nothing }}] [{{ nothing != 1 }}] [{{ not nothing }}] [{{ nothing in [1] }}] [{{ 'a' in nothing }}]", M),
    ("undef_if_and_or", "{% if nothing %}x{% else %}y{% endif %}{{ nothing or 'fallback' }}{{ nothing and 'no' }}{% if d.missing is not defined %}ok{% endif %}", M),
    ("undef_attr_error", "{{ nothing.attr }}", {}),
    ("undef_missing_attr_chain_error", "{{ d.missing.deeper }}", M),
    ("undef_arith_error", "{{ nothing + 1 }}", {}),
    ("undef_call_error", "{{ nothing() }}", {}),
    ("undef_compare_error", "{{ nothing < 1 }}", {}),
    ("undef_tojson_error", "{{ nothing|tojson }}", {}),
    ("undef_int_error", "{{ nothing|int }}", {}),
    ("undef_iter_ok", "{% for x in d.missing %}{{ x }}{% endfor %}{{ d.missing|join }}{{ nothing|length }}{{ nothing|default([1])|first }}", M),
    ("undef_condexpr_no_else", "[{{ 'x' if false }}][{{ ('x' if false) is defined }}]", {}),
    # errors with messages
    ("raise_exception", "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}", M),
    ("raise_in_loop", "{% for m in messages %}{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% endfor %}", M),
    ("type_error_add", "{{ 1 + 'a' }}", {}),
    ("type_error_compare", "{{ 1 < 'a' }}", {}),
    ("zero_division", "{{ 1 // 0 }}", {}),
    ("unsafe_append", "{% set l = [] %}{{ l.append(1) }}", {}),
    ("unpack_error", "{% for a, b in [[1, 2, 3]] %}{% endfor %}", {}),
    ("no_filter_error", "{{ 1|nosuchfilter }}", {}),
    ("no_test_error", "{{ 1 is nosuchtest }}", {}),
    ("not_iterable_error", "{% for x in 5 %}{% endfor %}", {}),
    ("none_iter_error", "{% for x in none %}{% endfor %}", {}),
    # strftime_now with the fixed clock
    ("strftime_now", "{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d %H:%M:%S') }}|{{ strftime_now('%A %B %-d %j %y %I%p') }}", {}),
    ("strftime_defined", "{{ strftime_now is defined }} {{ raise_exception is defined }} {{ namespace is defined }}", {}),
    # a small real-world shape: tools rendering
    ("tools_render", "{% for tool in tools %}{{ tool.function.name }}({% for p, spec in tool.function.parameters.properties.items() %}{{ p }}: {{ spec.type }}{% if not loop.last %}, {% endif %}{% endfor %}){{ '\\n' }}{{ tool|tojson(indent=2) }}\n{% endfor %}",
     {"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string", "enum": ["x", "y"]}}}}}]}),
    # tojson arguments as transformers defines them: (ensure_ascii, indent, separators, sort_keys)
    ("f_tojson_args", "{{ u|tojson(true) }}|{{ {'é': 'ü 😀'}|tojson(ensure_ascii=true) }}|{{ d|tojson(false, 1) }}|{{ d|tojson(indent=0) }}|{{ d|tojson(sort_keys=true, separators=(';', '=')) }}|{{ [1.0, 1e20, -0.5, 3]|tojson }}|{{ {1: 'int key', true: 'b', none: 'n'}|tojson }}", M),
    ("f_tojson_indent_str", "{{ people|tojson(indent='\t') }}", M),
    ("print_tool_call_args", "{% for m in messages %}{{ m.content|string|length }} {% endfor %}{{ {'a': 1.5, 'b': [true, none]} }}", M),
    ("loop_in_macro_in_loop", "{% macro row(xs) %}{% for x in xs %}{{ loop.index }}{{ x }}{% endfor %}{% endmacro %}{% for r in [[1, 2], [3]] %}[{{ row(r) }}|{{ loop.index }}]{% endfor %}", {}),
    ("ns_in_nested_loops", "{% set ns = namespace(total=0, last='') %}{% for a in [1, 2] %}{% for b in [10, 20] %}{% set ns.total = ns.total + a * b %}{% set ns.last = a ~ '-' ~ b %}{% endfor %}{% endfor %}{{ ns.total }} {{ ns.last }}", {}),
    ("string_concat_provenance_shapes", "{% for m in messages %}{{ '<' + m.role + '>' + m.content|trim + '</' ~ m.role ~ '>' }}{{ m.content[:3] }}{{ m.content.strip().split(' ')|join('_') }}{% endfor %}", M),
    ("is_defined_chains", "{{ messages[0].tool_calls is defined }} {{ messages[0]['tool_calls'] is not defined }} {{ (messages[0].tool_calls or []) | length }} {{ messages[5] is defined }}", M),
    ("whitespace_real_template", "{%- for message in messages %}\n    {%- if message.role == 'user' %}\n        {{- '<|user|>\\n' + message.content }}\n    {%- elif message.role == 'assistant' %}\n        {{- '<|assistant|>\\n' + message.content }}\n    {%- endif %}\n{%- endfor %}\n{%- if add_generation_prompt %}\n    {{- '<|assistant|>' }}\n{%- endif %}\n", dict(M, add_generation_prompt=True)),
    ("m_split_maxsplit", "{{ 'a b  c '.split(none, 1) }} {{ '  a b '.split(none, 0) }} {{ 'a</think>b</think>c'.rsplit('</think>', 1) }} {{ 'x,y,z'.rsplit(',', 5) }} {{ 'abc'.rsplit('z', 1) }} {{ 'a,b'.rsplit(',') }}", {}),
    ("unicode_case", "{{ u|upper }}|{{ u|lower }}|{{ 'ÉCOLE ça'|lower }}|{{ 'élan vital-été'|title }}|{{ 'émile'|capitalize }}|{{ 'ĐẶNG ƯƠ'.lower() }}|{{ 'đặng văn'.title() }}|{{ 'straße'|length }}", M),
    ("percent_format", "{{ '%.2f|%5d|%-4s|%x|%05.1f|%e|%s|%r' % (3.14159, 42, 'ab', 255, 2.25, 12345.678, none, 'q') }}|{{ '%s' % 'one' }}|{{ '%d%%' % 7 }}", {}),
    ("ws_unicode_spaces", "a\n\u00a0\u3000{% if true %}b{% endif %}\u00a0 {%- if true %}c{% endif -%}\u2003\u00a0d", {}),
    ("for_else_break_continue", "{% for x in [1, 2] %}{{ x }}{% break %}{% else %}E1{% endfor %}|{% for x in [1, 2] %}{% continue %}{% else %}E2{% endfor %}|{% for x in [1, 2] %}{% if x == 2 %}{% continue %}{% endif %}{{ x }}{% else %}E3{% endfor %}|{% for x in [1, 2] %}{% if x == 2 %}{% break %}{% endif %}{% else %}E4{% endfor %}", {}),
    ("unhashable_errors", "{{ [[1], [1]]|unique|list }}", {}),
    ("block_scopes", "{% set x %}{% set y = 1 %}in{% endset %}{{ x }}[{{ y }}]{% filter upper %}{% set z = 2 %}a{% endfilter %}[{{ z }}]{% set w = 0 %}{% filter upper %}{{ w }}{% set w = 2 %}{{ w }}{% endfilter %}[{{ w }}]", {}),
    # names a scope assigns before any read start out undefined there (Jinja2's compile-time scoping)
    ("scope_store_first_root", "{% for i in [1] %}[{{ n }}]{% endfor %}{% set n = 5 %}{{ n }}", {"n": 7}),
    ("scope_store_first_macro", "{% macro m() %}[{{ n }}]{% endmacro %}{{ m() }}{% set n = 5 %}{{ m() }}", {"n": 7}),
    ("scope_store_first_loop", "{% for i in [1, 2] %}{% for k in [0] %}({{ n }}){% endfor %}{% set n = i %}{{ n }}{% endfor %}", {"n": 7}),
    ("scope_alias_outer", "{{ n }}{% for i in [1, 2] %}{% for k in [0] %}({{ n }}){% endfor %}{% set n = i %}{{ n }}{% endfor %}{{ n }}", {"n": 7}),
    ("scope_conditional_store", "{% for i in [1] %}[{{ n }}]{% endfor %}{% if true %}{% set n = 5 %}{% endif %}{{ n }}", {"n": 7}),
    ("scope_if_else_both_store", "{% for i in [1] %}[{{ n }}]{% endfor %}{% if n %}{% set m = 1 %}{% else %}{% set m = 2 %}{% endif %}{{ m }}", {"n": 7, "m": 3}),
    ("scope_macro_param_shadow", "{% macro m(n) %}{% for i in [0] %}{{ n }}{% endfor %}{% set n = 9 %}{{ n }}{% endmacro %}{{ m(1) }}", {"n": 7}),
    ("scope_set_read_first", "{% set n = n + 1 %}{% for i in [0] %}{{ n }}{% endfor %}", {"n": 7}),
    # lazy filters return iterators in Jinja2: always true, no len() or []
    ("lazy_truthiness", "{{ 'yes' if empty|select else 'no' }} {{ 'yes' if l|select('gt', 99) else 'no' }} {{ (l|select('gt', 99))|list|length }} {{ l|map('string')|join('+') }} {{ l|select|first }} {{ l|reject is sequence }} {{ l|unique is iterable }} {{ l|reverse|list }} {{ d|items|list }}", {"empty": [], "l": [3, 1, 2], "d": {"a": 1}}),
    ("lazy_len_error", "{{ l|select|length }}", {"l": [1]}),
    ("lazy_subscript_error", "{{ (l|map('string'))[0] }}", {"l": [1]}),
    ("lazy_last_error", "{{ l|select|last }}", {"l": [1]}),
    ("lazy_tojson_error", "{{ l|unique|tojson }}", {"l": [1]}),
]

# indent: (s + "\n").splitlines() rejoined with "\n" (every Python line break), first, blank, width
CASES += [
    ("f_indent_lines", "[{{ 'a\\nb\\n'|indent }}]|[{{ 'a\\n\\nb'|indent(2) }}]|[{{ 'a\\n\\nb\\n'|indent(2, blank=true) }}]|[{{ 'a\\nb'|indent('> ', true) }}]|[{{ ''|indent(first=true) }}]|[{{ 'x'|indent(0, true) }}]", {}),
    ("f_indent_breaks", "[{{ 'a\\rb\\r\\nc\\vd\\fe\\x1cf\\x1dg\\x1eh\\x85i\\u2028j\\u2029k'|indent(1) }}]|{{ 'a\\r\\nb\\x85c\\u2028'.splitlines() }}|{{ 'a\\nb\\r\\n'.splitlines(true) }}", {}),
    ("f_indent_tojson", "{{ {'a': [1, {'b': none}]}|tojson(indent=2)|indent(4, first=true) }}", {}),
    ("f_indent_width_true", "[{{ 'a\\nb'|indent(true) }}]", {}),
    ("f_indent_width_float", "{{ 'a\\nb'|indent(2.0) }}", {}),
]

# dict views print as Python prints them and stay iterable, without []
CASES += [
    ("m_dict_views", "{{ d.keys() }}|{{ d.values() }}|{{ d.items() }}|{{ {}.items() }}|{{ d.keys()|list }}|{{ d.items()|length }}|{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{{ 'b' in d.keys() }}|{{ ('a', 1) in d.items() }}|{{ d.values()|sum }}|{{ d.keys()|first }}|{{ d.keys()|last }}|{{ d.keys()|sort|join }}|{{ d.keys() is sequence }}|{{ d.keys() is iterable }}|{{ [d.items()] }}|{{ d.keys() == d.keys() }}|{{ d.values() == d.values() }}|{{ d.keys() ~ '' }}|{{ d.keys()|string }}|{{ d.keys()[0] is defined }}", {"d": {"b": 2, "a": 1}}),
    ("m_dict_view_tojson", "{{ d.items()|tojson }}", {"d": {"a": 1}}),
    ("m_dict_view_concat", "{{ d.keys() + [1] }}", {"d": {"a": 1}}),
    ("m_dict_view_slice", "{{ d.values()[1:] }}", {"d": {"a": 1}}),
]

# integers past 64 bits are Python's unbounded ints: they print, compare, hash and compute
# exactly. As literals here: the test reads contexts with cJSON, which keeps numbers as doubles
# (test_template's errors test gives JSON numbers past 64 bits as template variables).
BIG_SET = ("{% set args = {'id': 12345678901234567890, 'neg': -98765432109876543210, 'n': 7} %}"
           "{% set ids = [18446744073709551616, 1, -9223372036854775809] %}")
BIG = {}
CASES += [
    ("big_print", BIG_SET + "{{ args.id }}|{{ args.neg }}|{{ ids }}|{{ args }}|{{ args|tojson }}|{{ ids|tojson }}|{{ args.id|string }}|{{ 99999999999999999999999 }}|{{ -99999999999999999999999 }}|{{ 123_456_789_012_345_678_901 }}", BIG),
    ("big_compare", BIG_SET + "{{ args.id == 12345678901234567890 }} {{ args.id != 12345678901234567890 }} {{ args.id > 9223372036854775807 }} {{ args.neg < -9223372036854775808 }} {{ ids[0] == 2 ** 64 }} {{ ids[0] == 18446744073709551616.0 }} {{ ids[0] < 1.8446744073709552e19 }} {{ ids[0] > 1e19 }} {{ ids|sort }} {{ ids|max }} {{ ids|min }} {{ args.id in [12345678901234567890] }} {{ args.id is integer }} {{ args.id is number }} {{ args.id is even }}", BIG),
    ("big_dict_keys", "{% set d = {12345678901234567890: 'a', 18446744073709551616: 'b'} %}{{ d[12345678901234567890] }}{{ d[2 ** 64] }}{{ d[18446744073709551616.0] }}{{ d|tojson }}{{ 12345678901234567890 in d }}", {}),
    ("big_arith", BIG_SET + "{{ 9223372036854775807 + 1 }}|{{ -9223372036854775808 - 1 }}|{{ 2 ** 64 }}|{{ 2 ** 100 }}|{{ (-3) ** 41 }}|{{ 4294967296 * 4294967296 }}|{{ args.id * args.neg }}|{{ args.id // 7 }}|{{ args.id % 7 }}|{{ args.neg // 7 }}|{{ args.neg % 7 }}|{{ args.id // -7 }}|{{ args.id % -7 }}|{{ args.neg // args.id }}|{{ args.neg % args.id }}|{{ -(-9223372036854775808) }}|{{ args.id - args.id }}|{{ args.id + 0.5 }}|{{ args.id / 10 }}|{{ ids|sum }}|{{ args.neg|abs }}|{{ (-9223372036854775807 - 1)|abs }}|{{ -9223372036854775808 // -1 }}|{{ 2 ** -1 }}|{{ (-1) ** 3 }}|{{ 3 ** 39 }}", BIG),
    ("big_convert", BIG_SET + "{{ '12345678901234567890'|int }}|{{ ' -1_000_000_000_000_000_000_000 '|int }}|{{ 1e30|int }}|{{ -1.5e19|int }}|{{ args.id|float }}|{{ args.id|round }}|{{ '%d|%5d|%-24d|%+d|%030d|%.25d' % (args.id, args.id, args.neg, args.id, args.id, args.id) }}|{{ '%d' % 9.25e18 }}|{{ '%s %r' % (args.id, args.neg) }}|{{ '%.3e' % args.id }}|{{ '{} {}'.format(args.id, ids) }}|{{ args.id ~ '' }}", BIG),
    ("big_inf_int", "{{ s|float|int }}", {"s": "inf"}),
    ("big_str_repeat", "{{ 'x' * 18446744073709551616 }}", {}),
    ("big_float_overflow", "{{ (10 ** 400) + 0.5 }}", {}),
]

# text filters: truncate, wordwrap, striptags, filesizeformat, urlencode, xmlattr
LOREM = "The quick brown fox jumps over the lazy dog, then naps in the sun all afternoon long."
CASES += [
    ("f_truncate", "{{ s|truncate(20) }}|{{ s|truncate(20, true) }}|{{ s|truncate(30, false, '…') }}|{{ s|truncate(84) }}|{{ s|truncate(80, leeway=0) }}|{{ 'short'|truncate(3, leeway=0) }}|{{ 'Tiếng Việt có dấu rất dài'|truncate(12, leeway=0) }}|{{ 'abcdefghij'|truncate(5, end='', leeway=0) }}|{{ 'abcdefghij'|truncate(5, leeway=0) }}", {"s": LOREM}),
    ("f_truncate_assert", "{{ 'abcdef'|truncate(2, leeway=0) }}", {}),
    ("f_wordwrap", "{{ s|wordwrap(20) }}|{{ s|wordwrap(10, wrapstring='<br>') }}|{{ 'a-very-long-hyphenated-word and more'|wordwrap(8) }}|{{ 'a-very-long-hyphenated-word and more'|wordwrap(8, break_on_hyphens=false) }}|{{ 'supercalifragilisticexpialidocious x'|wordwrap(10) }}|{{ 'supercalifragilisticexpialidocious x'|wordwrap(10, false) }}|{{ '  lead and  double  spaces\\n\\nsecond para here'|wordwrap(9) }}|{{ 'Tiếng Việt có dấu rất dài nhé'|wordwrap(8) }}", {"s": LOREM}),
    ("f_striptags", "{{ '<p>Hello <b>World</b></p>\\n<!-- a <b>comment</b> -->  &amp; &lt;x&gt; &#39;q&#39; &#x41;'|striptags }}|{{ 'a < b and c > d'|striptags }}|{{ 'no tags   here '|striptags }}", {}),
    ("f_filesizeformat", "{{ 0|filesizeformat }}|{{ 1|filesizeformat }}|{{ 999|filesizeformat }}|{{ 1000|filesizeformat }}|{{ 1234567|filesizeformat }}|{{ 1234567|filesizeformat(true) }}|{{ 1024|filesizeformat(true) }}|{{ 1e30|filesizeformat }}|{{ '2048'|filesizeformat(binary=true) }}|{{ 1.5|filesizeformat }}|{{ -5|filesizeformat }}|{{ (10 ** 25)|filesizeformat }}", {}),
    ("f_urlencode", "{{ 'a b/c?d=e&f'|urlencode }}|{{ 'Tiếng Việt'|urlencode }}|{{ {'q': 'a b', 'n': 1, 'x': 'é/&'}|urlencode }}|{{ [('a', 1), ('b', 'c d')]|urlencode }}|{{ 42|urlencode }}|{{ \"~_.-!*'()\"|urlencode }}", {}),
    ("f_xmlattr", "<ul{{ {'class': 'my list', 'id': 'l-42', 'missing': none, 'q': '\"<&>\\''}|xmlattr }}>|{{ {'a': 1}|xmlattr(false) }}|{{ {}|xmlattr }}|{{ {'a': none}|xmlattr }}", {}),
]

# groupby (Jinja2's (grouper, list) namedtuple prints as a tuple), slice, random, pprint
PEOPLE = [{"name": "Bo", "city": "Hanoi", "age": 30}, {"name": "al", "city": "hanoi", "age": 25},
          {"name": "Cy", "city": "Paris", "age": 30}, {"name": "Di", "age": 41}]
CASES += [
    ("f_groupby", "{% for g in people|groupby('city', default='?') %}[{{ g.grouper }}: {{ g.list|map(attribute='name')|join(',') }}]{% endfor %}|{% for city, items in people|groupby('city', 'none') %}{{ city }}={{ items|length }};{% endfor %}|{{ people|groupby('age')|map(attribute='grouper')|list }}|{{ people|groupby('city', 'x', true)|map(attribute=0)|list }}|{{ (people|groupby('age'))[0] }}|{{ [[1, 'a'], [0, 'b'], [1, 'c']]|groupby(0) }}|{{ (people|groupby('age'))[0].list[0].name }}", {"people": PEOPLE}),
    ("f_groupby_undefined_key", "{{ people|groupby('city') }}", {"people": PEOPLE}),
    ("f_slice", "{{ l|slice(3)|list }}|{{ l|slice(3, 'x')|list }}|{{ l|slice(10)|list }}|{{ []|slice(2)|list }}|{{ 'abcde'|slice(2)|list }}|{% for col in l|slice(2) %}<{{ col|join }}>{% endfor %}", {"l": [1, 2, 3, 4, 5, 6, 7]}),
    ("f_slice_zero", "{{ [1]|slice(0)|list }}", {}),
    ("f_random_member", "{{ l|random in l }} {{ 'abc'|random in 'abc' }} {{ [7]|random }} {{ []|random is defined }}", {"l": [1, 2, 3]}),
    ("f_pprint", "{{ d|pprint }}|{{ [1, 'two', none, true, 2.5]|pprint }}|{{ big|pprint }}", {"d": {"b": [1, 2], "a": {"z": 1, "y": 2}, "c": "x"},
        "big": {"messages": [{"role": "user", "content": "Hello there, how are you today?"}, {"role": "assistant", "content": "Fine, thanks! And you?", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Hanoi", "unit": "celsius"}}]}], "tools": None, "n": [1, 2, 3]}}),
]

# Markup: safe and escape make it (the test escaped), escape leaves it alone, + escapes the other side
CASES += [
    ("t_escaped_markup", "{{ 'a' is escaped }} {{ ('a'|safe) is escaped }} {{ ('<'|e) is escaped }} {{ '<&>'|e|e }} {{ '<&>'|e|forceescape }} {{ ('<b>'|safe) + '<i>' }} {{ '<i>' + ('<b>'|safe) }} {{ ('<b>'|safe) ~ '<i>' }} {{ (('<b>'|safe) ~ '') is escaped }} {{ ['<b>'|safe, '<'|e] }} {{ 1|safe is string }} {{ ('x'|safe) == 'x' }} {{ ('<b>'|safe)|tojson }}", {}),
]

# urlize: http(s), www., bare domains, IP addresses, e-mail, punctuation around, trim, rel/target
CASES += [
    ("f_urlize", "{{ t|urlize }}", {"t": "See https://example.com/a?b=1&c=2, (www.python.org) or docs.jinja.org/x. "
        "Mail me@example.com or mailto:you@ex.co.uk! http://192.168.0.1:8080/p http://[::1]/ "
        "<http://a.io> not.a.link foo@bar http://localhost:5000 (https://en.wikipedia.org/wiki/A_(b)) "
        "HTTPS://UPPER.EXAMPLE.COM www.x.y.z example.com. end.\nnew http://x.com/<b>"}),
    ("f_urlize_args", "{{ t|urlize(15) }}|{{ t|urlize(nofollow=true, target='_blank') }}|{{ t|urlize(rel='me  noopener') }}|{{ 'x tel:+123 ftp://h/f'|urlize(extra_schemes=['tel:', 'ftp://']) }}", {"t": "go https://example.com/a/long/path now"}),
    ("f_urlize_bad_scheme", "{{ 'x'|urlize(extra_schemes=['not a scheme']) }}", {}),
]
