/* The opening screen's words about the bundled model: what tl-mini-instruct was taught, and
 * questions it really answers (tests/welcome asks the shipped model each one, greedy and
 * sampled, and checks the answer). Pure data, no core, no ncurses. lang is "en" or "vi";
 * anything else reads as "en". */
#ifndef TOKENLOOP_WELCOME_H
#define TOKENLOOP_WELCOME_H

/* Three short paragraphs separated by '\n' (no trailing newline); the screen wraps them. */
const char *Welcome_intro(const char *lang);
/* Example questions; the same count in both languages. */
int Welcome_count(void);
/* Question i (taken modulo Welcome_count, so a key can cycle with i + 1), in lang. */
const char *Welcome_example(int i, const char *lang);
/* A word the right answer to question i contains (what the test checks). */
const char *Welcome_expect(int i, const char *lang);

#endif
