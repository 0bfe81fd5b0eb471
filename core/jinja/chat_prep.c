/* What apply_chat_template does to the messages before the template sees them (transformers
 * 5.23: tokenization_utils_base.py and utils/chat_template_utils.py), kept apart from the Jinja
 * language itself:
 * - a message's keys whose value is None are dropped (APIs send "content": null beside tool
 *   calls; a template then sees no content rather than printing "None");
 * - reasoning written under any of its three names ("reasoning_content", "thinking",
 *   "reasoning") is offered as "thinking" and "reasoning_content" too, so a template that
 *   reads one name sees a message that wrote another;
 * - continue_final_message appends a marker to the final message's text, so that the chat
 *   layer can cut the render where that text ends (core/chat.c). */
#include <string.h>

#include "jinja/internal.h"

static const char *const REASONING[] = {"reasoning_content", "thinking", "reasoning"};

/* {"thinking": r, **message, "reasoning_content": r}, r the first of the names not None */
static jv alias_reasoning(J *j, jv m)
{
    if (m.t != T_DICT) return m;
    long at = -1;
    for (int k = 0; k < 3 && at < 0; k++) {
        long i = jinja_dict_find_s(m.u.d, REASONING[k]);
        if (i >= 0 && m.u.d->v[i].t != T_NONE) at = i;
    }
    if (at < 0) return m;
    jv r = m.u.d->v[at];
    jdict *d = jinja_dict_new(j);
    jinja_dict_set_s(j, d, "thinking", r);
    for (size_t i = 0; i < m.u.d->n; i++) jinja_dict_set(j, d, m.u.d->k[i], m.u.d->v[i]);
    jinja_dict_set_s(j, d, "reasoning_content", r);
    return v_dict(d);
}

static jv with_tag(J *j, jv s, const char *tag)
{
    sb b;
    jinja_sb_init(&b, j);
    jinja_sb_put_str(&b, s.u.s);   /* the content keeps its provenance spans; the tag has none */
    jinja_sb_puts(&b, tag);
    return jinja_sb_val(&b);
}

/* transformers' errors here are its own ValueError/TypeError, raised before any rendering */
static void append_tag(J *j, jv msgs, const char *tag)
{
    if (msgs.t != T_LIST || !msgs.u.l->n)
        jinja_fail(j, JE_VALUE, "continue_final_message is set but the conversation is empty!");
    jv last = msgs.u.l->it[msgs.u.l->n - 1];
    long ci = last.t == T_DICT ? jinja_dict_find_s(last.u.d, "content") : -1;
    if (ci < 0 || last.u.d->v[ci].t == T_NONE)
        jinja_fail(j, JE_VALUE, "continue_final_message is set but the final message has no \"content\" to continue!");
    jv c = last.u.d->v[ci];
    if (c.t == T_LIST) {
        for (size_t k = c.u.l->n; k-- > 0;) {
            jv part = c.u.l->it[k];
            long ti = part.t == T_DICT ? jinja_dict_find_s(part.u.d, "text") : -1;
            if (ti < 0) continue;
            jv t = part.u.d->v[ti];
            if (t.t != T_STR)
                jinja_fail(j, JE_TYPE, "unsupported operand type(s) for +: '%s' and 'str'", jinja_type_name(t));
            part.u.d->v[ti] = with_tag(j, t, tag);
            return;
        }
        jinja_fail(j, JE_VALUE, "continue_final_message is set but we could not find any text to continue in the final message!");
    }
    if (c.t != T_STR) jinja_fail(j, JE_TYPE, "unsupported operand type(s) for +: '%s' and 'str'", jinja_type_name(c));
    last.u.d->v[ci] = with_tag(j, c, tag);
}

/* {k: v for k, v in message.items() if v is not None} */
static jv drop_none(J *j, jv m)
{
    if (m.t != T_DICT) return m;
    jdict *d = NULL;
    for (size_t i = 0; i < m.u.d->n && !d; i++)
        if (m.u.d->v[i].t == T_NONE) d = jinja_dict_new(j);
    if (!d) return m;
    for (size_t i = 0; i < m.u.d->n; i++)
        if (m.u.d->v[i].t != T_NONE) jinja_dict_set(j, d, m.u.d->k[i], m.u.d->v[i]);
    return v_dict(d);
}

jv jinja_chat_prepare(J *j, jv msgs, const char *continue_tag)
{
    if (msgs.t == T_LIST)
        for (size_t i = 0; i < msgs.u.l->n; i++) msgs.u.l->it[i] = alias_reasoning(j, drop_none(j, msgs.u.l->it[i]));
    if (continue_tag) append_tag(j, msgs, continue_tag);
    return msgs;
}
