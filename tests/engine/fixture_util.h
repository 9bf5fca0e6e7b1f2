/* fixture_util.h: opening the engine's test fixtures (models, assistants, decoders), for the
 * engine's C tests that run them (test_assistant, test_speculate, test_head). Each helper
 * dies with the loader's own message (naming the file) when the fixture cannot be opened: a
 * broken fixture is a failed test, never a skipped one.
 *
 * Everything is static inline: a test includes it as "fixture_util.h" after its engine headers. */
#ifndef FIXTURE_UTIL_H
#define FIXTURE_UTIL_H

#include "assistant.h"
#include "decoder.h"
#include "engine.h"
#include "model.h"
#include "util.h"

static inline model *fixture_model(const char *dir) {
    char err[1024];
    model *m = model_load(dir, err, sizeof err);
    if (!m) die("%s", err);
    return m;
}

static inline assistant *fixture_assistant(const char *dir) {
    char err[1024];
    assistant *a = assistant_load(dir, err, sizeof err);
    if (!a) die("%s", err);
    return a;
}

/* A decoder over m with SLIDING_WINDOW window (0: native) and max_len positions, on one
 * thread: the tests check correctness, and OpenMP spinning on a busy machine costs minutes. */
static inline decoder *fixture_decoder(const model *m, int window, int max_len) {
    engine_options o = {0};
    o.sliding_window = window;
    o.max_model_len = max_len;
    o.n_threads = 1;
    char err[1024];
    decoder *d = decoder_new(m, &o, err, sizeof err);
    if (!d) die("%s", err);
    return d;
}

#endif
