/* { English, Vietnamese } formats of the errors core hands the screen (tl_error's text): a
 * lesson action that failed, a key the session refused. Included by i18n.c only; read by
 * I18n_error, which matches a message against the English and writes the Vietnamese with the
 * same values (each %s matched is itself looked up again, for a message inside a message).
 * Keep the conversions of the English in the same order (test_i18n checks); only %s and %d.
 * Core's field and action names (force, prompt, max_new_tokens) stay, as in the lesson files. */

/* a lesson's step: where, then why */
{"%s: step %d: action \"%s\": %s", "%s: bước %d: thao tác \"%s\": %s"},
{"%s: no step %d", "%s: không có bước %d"},
{"%s: remember: cannot read %s", "%s: remember: không đọc được %s"},
{"%s: compare: cannot read %s", "%s: compare: không đọc được %s"},
{"%s: compare: %s is n/a after the side's actions", "%s: compare: %s là n/a sau các thao tác của vế đó"},
{"%s: out of memory", "%s: hết bộ nhớ"},
{"out of memory", "hết bộ nhớ"},
{"async: %s", "async: %s"},

/* the actions' own */
{"force: \"%s\" is not a single token", "force: \"%s\" không phải là một token duy nhất"},
{"force: id %d is outside the vocabulary (0..%d)", "force: id %d nằm ngoài bộ từ vựng (0..%d)"},
{"force: no step to change yet", "force: chưa có bước nào để đổi"},
{"force: no tokenizer loaded", "force: chưa nạp bộ tách token"},
{"force_rank: %d: only %d candidates", "force_rank: %d: chỉ có %d ứng viên"},
{"force_rank: no step yet", "force_rank: chưa có bước nào"},
{"raw_prompt: no tokenizer loaded", "raw_prompt: chưa nạp bộ tách token"},
{"tokenize: no tokenizer loaded, or the text does not encode", "tokenize: chưa nạp bộ tách token, hoặc văn bản không mã hoá được"},
{"serve_request: this tokenloop has no chat server (built without libmicrohttpd)",
 "serve_request: bản tokenloop này không có máy chủ chat (được build không có libmicrohttpd)"},

/* the session's */
{"prompt: %d tokens do not fit the context (%d positions)", "prompt: %d token không vừa ngữ cảnh (%d vị trí)"},
{"prompt: an empty conversation (apply_chat_template refuses one too: give a message)",
 "prompt: cuộc hội thoại trống (apply_chat_template cũng từ chối: hãy nhập một tin nhắn)"},
{"prompt: no messages and no prompt ids", "prompt: không có tin nhắn và không có id nào của prompt"},
{"prompt: the rendered prompt is empty", "prompt: prompt dựng ra bị rỗng"},
{"prompt: token id %d is outside the model's vocabulary (%d)", "prompt: id token %d nằm ngoài bộ từ vựng của mô hình (%d)"},
{"prompt: no tokenizer (tokenizer.json) for this model", "prompt: mô hình này không có bộ tách token (tokenizer.json)"},
{"dtype: cannot change while generating", "dtype: không đổi được khi đang sinh"},
{"rewind: %d steps asked, %d taken", "rewind: yêu cầu lùi %d bước, đã lùi %d"},
{"session: no room for step %d", "session: hết chỗ cho bước %d"},
{"--stop: at most %d stop strings", "--stop: tối đa %d chuỗi dừng"},
{"--stop: empty stop string", "--stop: chuỗi dừng rỗng"},
