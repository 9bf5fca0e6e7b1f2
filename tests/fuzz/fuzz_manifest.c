/* fuzz_manifest.c: libFuzzer target for the JSON documents of a study folder that the
 * tuner reads back: a manifest as `tuner env` exports it and as --warm-start reads it, and
 * study.json as `tuner show` reads it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_util.h"
#include "manifest.h"
#include "show.h"
#include "warmstart.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *devnull;
    if (!devnull) devnull = fopen("/dev/null", "w");
    char path[64], err[2048];
    int fd = fuzz_file(data, size, path, sizeof path);
    if (fd < 0) return 0;
    manifest_print_env(path, devnull, err, sizeof err);
    space *meta = study_space_load(path, err, sizeof err);
    if (meta) study_space_free(meta);
    warm_queue q;
    if (warmstart_build(fuzz_space(), path, &q, devnull, err, sizeof err)) warmstart_free(&q);
    close(fd);
    return 0;
}
