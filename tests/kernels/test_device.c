/* test_device.c: choosing the backend with engine_options.device (ENGINE_DEVICE / --device).
 * Runs everywhere (it is a ctest test), and asserts what this build and this machine must do:
 *   - "cpu", NULL and "" give the CPU backend;
 *   - an unknown device is refused, naming it;
 *   - "cuda" without CUDA in the build is refused with a message saying so; with CUDA but no
 *     usable GPU, refused with a message saying that; with both, it runs, and the logits of a
 *     short prefill agree with the CPU backend's (cuda_ops checks this in depth).
 * Model: the committed fixture tests/engine/fixtures/a_ple_kvshare. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "util.h"
#include "../test_util.h"

static decoder *open_on(const model *m, const char *device, char *err, size_t errlen) {
    engine_options o = {.max_model_len = 64, .device = device};
    err[0] = '\0';
    return decoder_new(m, &o, err, errlen);
}

int main(void) {
    util_progname = "test_device";
    char err[512];
    model *m = model_load("../engine/fixtures/a_ple_kvshare", err, sizeof err);
    if (!m) die("%s", err);

    const char *cpu_names[] = {"cpu", NULL, ""};
    for (int i = 0; i < 3; i++) {
        decoder *d = open_on(m, cpu_names[i], err, sizeof err);
        EXPECT(d && !strcmp(decoder_backend_name(d), "cpu"), "device %s: %s",
               cpu_names[i] ? cpu_names[i] : "NULL", err);
        decoder_free(d);
    }

    decoder *bad = open_on(m, "tpu", err, sizeof err);
    EXPECT(!bad && strstr(err, "\"tpu\"") && strstr(err, "cpu") && strstr(err, "cuda"),
           "unknown device: %s", err);

    decoder *g = open_on(m, "cuda", err, sizeof err);
#ifdef ENGINE_WITH_CUDA_TEST
    const int built = 1;
#else
    const int built = 0;
#endif
    if (!g) {
        printf("cuda refused: %s\n", err);
        EXPECT(strstr(err, "ENGINE_DEVICE=cuda"), "the refusal names the knob: %s", err);
        if (built)
            EXPECT(strstr(err, "no CUDA device"), "built with CUDA, so a missing GPU: %s", err);
        else
            EXPECT(strstr(err, "without CUDA"), "built without CUDA, so it says that: %s", err);
    } else {
        EXPECT(built, "a CUDA decoder from a build without CUDA");
        EXPECT(!strcmp(decoder_backend_name(g), "cuda"), "backend %s", decoder_backend_name(g));
        decoder *c = open_on(m, "cpu", err, sizeof err);
        CHECK(c);
        const int V = model_vocab_size(m), ids[4] = {2, 17, 5, 9};
        float *lg = xmalloc((size_t)V * sizeof(float)), *lc = xmalloc((size_t)V * sizeof(float));
        CHECK(decoder_forward(g, ids, 4, lg, 3) == 0 && decoder_forward(c, ids, 4, lc, 3) == 0);
        double worst = 0, amax = 0;
        for (int i = 0; i < V; i++) {
            double dd = fabs((double)lg[i] - lc[i]);
            if (!(dd <= worst)) worst = dd;
            if (fabs(lc[i]) > amax) amax = fabs(lc[i]);
        }
        EXPECT(worst <= 2e-3 * (1 + amax), "cuda vs cpu logits differ by %g", worst);
        printf("cuda runs: logits max|gpu-cpu| %.2e\n", worst);
        free(lg);
        free(lc);
        decoder_free(c);
        decoder_free(g);
    }
    model_free(m);
    if (failures) fprintf(stderr, "test_device: %d failure(s)\n", failures);
    return failures != 0;
}
