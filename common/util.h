/* util.h: the few helpers every part of the product uses.
 *
 * Errors in this code base are reported in one of two ways. Programming errors and
 * out-of-memory abort through die()/CHECK, which name the source file and line (as in
 * llm.c). Errors caused by the user's input (a bad file, a bad value) are returned to the
 * caller with a message that names the input file and, where known, its line and key; the
 * command-line front ends print that message and exit non-zero. Nothing here ever exits
 * silently. */
#ifndef UTIL_H
#define UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#if defined(__GNUC__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#define NORETURN          __attribute__((noreturn))
#else
#define PRINTF_LIKE(f, a)
#define NORETURN
#endif

/* Print "program: file:line: message" to stderr and exit(1). */
NORETURN void die_at(const char *file, int line, const char *fmt, ...) PRINTF_LIKE(3, 4);
#define die(...) die_at(__FILE__, __LINE__, __VA_ARGS__)
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) die("check failed: %s", #cond);                                               \
    } while (0)

/* Allocation that never returns NULL (dies naming the caller's file and line). */
void *xmalloc_at(const char *file, int line, size_t n);
void *xcalloc_at(const char *file, int line, size_t count, size_t size);
void *xrealloc_at(const char *file, int line, void *p, size_t n);
char *xstrdup_at(const char *file, int line, const char *s);
#define xmalloc(n)     xmalloc_at(__FILE__, __LINE__, (n))
#define xcalloc(c, s)  xcalloc_at(__FILE__, __LINE__, (c), (s))
#define xrealloc(p, n) xrealloc_at(__FILE__, __LINE__, (p), (n))
#define xstrdup(s)     xstrdup_at(__FILE__, __LINE__, (s))

/* printf into a freshly allocated string. */
char *xasprintf(const char *fmt, ...) PRINTF_LIKE(1, 2);

/* Format a message for the caller into err[errlen] (nothing when err is NULL or errlen 0) and
 * return -1: the `return err_set(err, errlen, "...", ...)` of functions that report a bad input. */
int err_set(char *err, size_t errlen, const char *fmt, ...) PRINTF_LIKE(3, 4);

/* Read a whole file into a NUL-terminated buffer. Returns NULL and fills err (with the
 * path and strerror) when it cannot; *len_out gets the length without the NUL. */
char *file_read_all(const char *path, size_t *len_out, char *err, size_t errlen);

/* Monotonic seconds, for timing. */
double now_seconds(void);

/* The program name used in messages (set once from argv[0] by each main). */
extern const char *util_progname;

#endif
