/* Every string a student reads in the TUI, in English and Vietnamese. The English text is the
 * key: a caller writes I18n_tr(ui->lang, "not stopped") and gets the Vietnamese when lang
 * is "vi", the English otherwise or when the table has no entry (so a missing translation
 * shows English rather than nothing; tests/tui/vi_screen.py finds those on screen).
 * printf formats work: each Vietnamese entry keeps the English conversions in the same order
 * (test_i18n checks it), so snprintf(buf, n, I18n_tr(lang, "prompt %d"), n) is safe.
 * Technical identifiers (token names, add_generation_prompt, TextStreamer, TTFT/TPOT, JSON
 * field names) stay as they are inside the translations. The keys' footer words and key list
 * lines are not here: each is in its key's row of keys_table.h. Pure: no ncurses, no core. */
#ifndef TL_TUI_I18N_H
#define TL_TUI_I18N_H

#include <stddef.h>

/* 1 when lang asks for Vietnamese ("vi", "vi_VN.UTF-8", ...). */
int I18n_isVi(const char *lang);

/* The text to show for the English string en in lang. Never NULL (NULL en gives ""). */
const char *I18n_tr(const char *lang, const char *en);

/* A lesson expectation that failed (core's why: "FIELD is VALUE, expected OP WANT", "FIELD:
 * cannot read NAME", ...) worded in lang: the words around the field names, values and the
 * lesson file's operator names are translated, those stay. Writes out (always terminated). */
void I18n_expectation(const char *lang, const char *why, char *out, size_t size);

/* An error core gave (tl_error's text: a lesson action that failed, a key the session refused)
 * worded in lang: matched against i18n_errors.h's English formats, written with the Vietnamese
 * one and the same values; a message the table does not know stays as it is. */
void I18n_error(const char *lang, const char *msg, char *out, size_t size);
int I18n_errorCount(void);
const char *I18n_errorEn(int i);
const char *I18n_errorVi(int i);

/* The table itself, for tests: entry i's English and Vietnamese, i in [0, I18n_count()). */
int I18n_count(void);
const char *I18n_en(int i);
const char *I18n_vi(int i);

#endif
