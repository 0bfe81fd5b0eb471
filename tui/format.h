/* Pure text helpers for the TUI: display widths (wcwidth, so Vietnamese, CJK and emoji line
 * up), truncation and padding to a number of columns, and the numbers the panes print.
 * No ncurses here: everything is unit-tested. */
#ifndef TL_TUI_FORMAT_H
#define TL_TUI_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* Decodes one UTF-8 code point at s[0..len); returns bytes used (>= 1). A malformed or
 * truncated sequence yields *cp = -1 and consumes one byte. */
int Format_utf8Next(const char *s, size_t len, int32_t *cp);

/* Columns one code point takes: wcwidth(), with control and malformed bytes counted as 1
 * (the panes draw them as a replacement mark) and combining marks as 0. */
int Format_cpWidth(int32_t cp);

/* Columns of the first len bytes of s. */
int Format_width(const char *s, size_t len);
int Format_widthz(const char *s);

/* Copies the longest prefix of s[0..len) that fits in cols columns into out (NUL-terminated,
 * never splitting a character, combining marks kept with their base). When s does not fit and
 * ellipsis is set, the last column holds "…". Returns the columns used. */
int Format_fit(const char *s, size_t len, int cols, int ellipsis, char *out, size_t outsz);

/* Format_fit, then spaces up to exactly cols columns; align < 0 left, > 0 right. A wide
 * character that would straddle the edge is replaced by a space. Returns bytes written. */
size_t Format_pad(const char *s, int cols, int align, char *out, size_t outsz);

/* Bytes of s that fit into cols columns starting at byte 0 (for wrapping); at least one
 * character if cols > 0 and s is not empty. *used gets the columns. */
size_t Format_prefixFitting(const char *s, size_t len, int cols, int *used);

/* Visible form of raw token/text bytes: space ␣, newline ↵, tab →, CR ␍, other control bytes
 * and malformed UTF-8 as <0xNN>. Returns the length written (snprintf-like truncation). */
size_t Format_visible(const char *s, size_t len, char *out, size_t outsz);

/* One line of wrapped text: the bytes of s[0..len) (up to, not including, a newline) that go
 * on a line of cols columns. A line ends after a space or at the edge of a special token
 * ("<|eot_id|>": never split), so words and tokens stay whole; a space that does not fit
 * hangs past the edge instead of starting the next line. Only a word or token wider than the
 * whole line is cut, between characters. At least one character when len > 0 and the text
 * does not start with a newline. *used (may be NULL) gets the columns of what fits. */
size_t Format_wrap(const char *s, size_t len, int cols, int *used);

/* Numbers in the language of the screen: vi writes a comma decimal mark and a dot between
 * thousands ("3,35", "128.256"), en the other way round. lang as in i18n.h. */
/* x with the given decimals, thousands grouped: "3.35" / "3,35", "1,338.2" / "1.338,2". */
void Format_num(const char *lang, double x, int decimals, char *out, size_t outsz);
/* Rewrites, in place, a number that one of the en functions below wrote into lang's marks. */
void Format_localize(const char *lang, char *num);
/* The en functions below in lang: the same text with lang's marks. */
void Format_msLang(const char *lang, double ms, char *out, size_t outsz);
void Format_probLang(const char *lang, double p, char *out, size_t outsz);
void Format_bytesLang(const char *lang, double bytes, char *out, size_t outsz);
void Format_countLang(const char *lang, long long n, char *out, size_t outsz);
void Format_logitLang(const char *lang, double x, char *out, size_t outsz);

/* "0.42 ms", "4.80 ms", "48.2 ms", "1.23 s"; "—" when ms < 0. */
void Format_ms(double ms, char *out, size_t outsz);
/* Probability as a percentage with sensible precision: "41.2%", "0.31%", "<0.01%", "100%". */
void Format_prob(double p, char *out, size_t outsz);
/* "16.0 GB", "28.6 MB", "512 B" (powers of 1000, as bandwidth figures are quoted). */
void Format_bytes(double bytes, char *out, size_t outsz);
/* "128,256" */
void Format_count(long long n, char *out, size_t outsz);
/* The device with the kernel set it runs, where that differs from its name: "cpu avx2", "cuda";
 * with_kernels 0: the device alone. */
void Format_device(const char *device, const char *kernels, int with_kernels, char *out, size_t outsz);
/* A logit: "17.25", "-3.10", "-inf". */
void Format_logit(double x, char *out, size_t outsz);

#endif
