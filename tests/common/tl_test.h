/* A few assertion macros for C tests. Each test binary ends with one line
 * "<name>: N passed, N failed" and exits non-zero when anything failed. */
#ifndef TL_TEST_H
#define TL_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int tl_test_passed, tl_test_failed;

#define TL_CHECK(cond) do { \
    if (cond) tl_test_passed++; \
    else { tl_test_failed++; fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); } \
} while (0)

#define TL_CHECK_MSG(cond, ...) do { \
    if (cond) tl_test_passed++; \
    else { tl_test_failed++; fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
           fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } \
} while (0)

#define TL_CHECK_INT(a, b) do { long long _a = (long long)(a), _b = (long long)(b); \
    TL_CHECK_MSG(_a == _b, "%lld != %lld", _a, _b); } while (0)

#define TL_CHECK_STR(a, b) do { const char *_a = (a), *_b = (b); \
    TL_CHECK_MSG(_a && _b && !strcmp(_a, _b), "\"%s\" != \"%s\"", _a ? _a : "(null)", _b ? _b : "(null)"); } while (0)

#define TL_CHECK_NEAR(a, b, tol) do { double _a = (a), _b = (b); \
    TL_CHECK_MSG(fabs(_a - _b) <= (tol), "%.9g vs %.9g (tol %g)", _a, _b, (double)(tol)); } while (0)

#define TL_TEST_END(name) ( \
    printf("%s: %d passed, %d failed\n", (name), tl_test_passed, tl_test_failed), \
    tl_test_failed ? 1 : 0)

#endif
