/* Shared by the harnesses in tests/fuzz: each defines LLVMFuzzerTestOneInput (and may define
 * LLVMFuzzerInitialize). Built two ways: with clang's libFuzzer (-DTL_FUZZ=ON, scripts/fuzz.sh)
 * and, in every other build, with driver.c, which runs the committed seeds and regression
 * inputs once each, so a crasher fixed once stays fixed under gcc, ASan and UBSan too. */
#ifndef TL_FUZZ_H
#define TL_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "tokenloop/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A private scratch directory (made once per process, removed at exit). */
const char *tlf_dir(void);
/* Writes data to tlf_dir()/name and returns the full path (static buffer per name slot). */
const char *tlf_write(const char *name, const void *data, size_t size);
/* The project's source tree (for the bundled tokenizer and templates). */
const char *tlf_source_dir(void);
/* A failed parse must say why in one line: abort() (a finding) when err is empty or has a
 * newline or a control byte in it. */
void tlf_check_error(const tl_error *err);
/* abort() with a message: the harness's oracle found a wrong answer. */
_Noreturn void tlf_fail(const char *what);

#endif
