/* test_util.h: what the C tests share, so that each test file holds only its checks.
 *
 *   EXPECT(cond[, fmt, ...])   count a failure and print "file:line: expected <cond>", plus the
 *                              printf-style note when one is given; the test goes on
 *   EXPECT_NEAR(a, b, tol)     |a - b| <= tol, printing both values when not
 *   EXPECT_REL(a, b, rel)      |a - b| <= rel * |b|, likewise
 *   test_exit(name)            main's return value: 1 (after "name: N failure(s)") if any
 *                              expectation failed, else 0 (after "name: all passed")
 *   rng_*, rand_vec            a seeded xorshift64* generator; rng_seed_from_env() takes
 *                              TEST_SEED when set (to replay a failure), else a fresh seed
 *   close_all(got, want, ...)  fp32 results within atol + rtol |want| of a double reference
 *   test_read_json, test_write_file, test_tmpdir_new, test_tmpdir_remove
 *                              fixture files: each dies naming the path when it cannot work
 *
 * Everything is static (inline) in this header: a test is one .c file linked with its part's
 * library (tests/<part>/CMakeLists.txt), and it includes this as "../test_util.h". */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#include <cjson/cJSON.h>
#include <ftw.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

static int failures;

static inline void test_fail_at(const char *file, int line, const char *cond, const char *fmt, ...)
    PRINTF_LIKE(4, 5);
static inline void test_fail_at(const char *file, int line, const char *cond, const char *fmt,
                                ...) {
    failures++;
    fprintf(stderr, "%s:%d: expected %s", file, line, cond);
    if (fmt[1]) { /* fmt is " " followed by the caller's note, if any */
        va_list ap;
        va_start(ap, fmt);
        fputc(':', stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
}

/* The note, when given, must be a string literal: it is glued to " " at compile time. */
#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) test_fail_at(__FILE__, __LINE__, #cond, " " __VA_ARGS__);                     \
    } while (0)

#define EXPECT_NEAR(a, b, tol)                                                                     \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!(fabs(a_ - b_) <= (tol))) {                                                           \
            fprintf(stderr, "%s:%d: %s = %.12g, expected %.12g (tol %g)\n", __FILE__, __LINE__,    \
                    #a, a_, b_, (double)(tol));                                                    \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#define EXPECT_REL(a, b, rel)                                                                      \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!(fabs(a_ - b_) <= (rel)*fabs(b_))) {                                                  \
            fprintf(stderr, "%s:%d: %s = %.15g, expected %.15g (rel %g)\n", __FILE__, __LINE__,    \
                    #a, a_, b_, (double)(rel));                                                    \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static inline int test_exit(const char *name) {
    if (!failures) {
        printf("%s: all passed\n", name);
        return 0;
    }
    fprintf(stderr, "%s: %d failure(s)\n", name, failures);
    return 1;
}

/* ---- random numbers (xorshift64*) ------------------------------------------------------ */

static uint64_t rng_state = 88172645463325252ull;

static inline uint64_t rng_u64(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}
static inline double rng_unit(void) { /* [0, 1) */
    return (double)(rng_u64() >> 11) / 9007199254740992.0;
}
static inline float rng_val(void) { /* [-2, -0.1] U [0.1, 2]: never zero */
    double m = 0.1 + 1.9 * rng_unit();
    return (float)(rng_u64() & 1 ? m : -m);
}
static inline int rng_int(int n) { /* [0, n) */
    return (int)(rng_u64() % (uint64_t)n);
}
static inline float *rand_vec(size_t n) { /* [n] of rng_val() */
    float *v = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        v[i] = rng_val();
    return v;
}

/* |got - want| within atol + rtol * |want| everywhere; the first miss is printed and counted. */
static inline int close_all(const float *got, const double *want, size_t n, double atol,
                            double rtol, const char *what) {
    for (size_t i = 0; i < n; i++) {
        double tol = atol + rtol * fabs(want[i]);
        if (!(fabs(got[i] - want[i]) <= tol)) {
            fprintf(stderr, "%s: element %zu: got %.9g want %.9g\n", what, i, got[i], want[i]);
            failures++;
            return 0;
        }
    }
    return 1;
}

/* Seed the generator from TEST_SEED if set, else from the clock and pid; returns the seed
 * (tests print it so that a failing run can be replayed). */
static inline uint64_t rng_seed_from_env(void) {
    const char *env = getenv("TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10)
                        : (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid() << 16;
    if (!seed) seed = 1; /* xorshift stays at zero forever */
    rng_state = seed;
    return seed;
}

/* ---- fixture files --------------------------------------------------------------------- */

static inline cJSON *test_read_json(const char *path) {
    char err[512];
    size_t n;
    char *text = file_read_all(path, &n, err, sizeof err);
    if (!text) die("%s", err);
    cJSON *j = cJSON_ParseWithLength(text, n);
    free(text);
    if (!j) die("%s: not valid JSON", path);
    return j;
}

static inline void test_write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f)) die("cannot write %s", path);
}

/* A fresh folder /tmp/<name>.XXXXXX (caller frees the path after test_tmpdir_remove). */
static inline char *test_tmpdir_new(const char *name) {
    char *dir = xasprintf("/tmp/%s.XXXXXX", name);
    if (!mkdtemp(dir)) die("mkdtemp %s failed", dir);
    return dir;
}

static inline int test_remove_entry(const char *path, const struct stat *st, int flag,
                                    struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* Remove a folder and everything in it; a failure is only a warning. */
static inline void test_tmpdir_remove(const char *dir) {
    if (nftw(dir, test_remove_entry, 16, FTW_DEPTH | FTW_PHYS))
        fprintf(stderr, "warning: could not remove %s\n", dir);
}

#endif
