/* fuzz_util.h: what the fuzz targets share.
 *
 * The tuner's parsers read files by path, and refuse anything but a regular file. A fuzz
 * input is therefore put in a memfd (a regular file in memory) and handed over as
 * /proc/self/fd/N; the fixed space some targets judge against is loaded the same way, once.
 */
#ifndef FUZZ_UTIL_H
#define FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "space.h"

/* A memfd holding data; its path into path. Returns the fd (close it), -1 on failure. */
static inline int fuzz_file(const uint8_t *data, size_t size, char *path, size_t n) {
    int fd = memfd_create("fuzz", MFD_CLOEXEC);
    if (fd < 0) return -1;
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        off += (size_t)w;
    }
    snprintf(path, n, "/proc/self/fd/%d", fd);
    return fd;
}

/* The space the journal, result and manifest targets work with (loaded once, never freed):
 * the knobs of the synthetic engine, so that the seed files (from its studies) fit it. */
static inline const space *fuzz_space(void) {
    static space *sp;
    if (sp) return sp;
    static const char text[] =
        "engine: {command: [./engine], timeout: 60}\n"
        "objective: {metric: tps, direction: maximize}\n"
        "constraints: [ppl <= 1.05 * baseline, mem_gb < 20]\n"
        "baseline: {SLIDING_WINDOW: 512, LM_HEAD_KEEPSET: '0'}\n"
        "bounds: {mem_gb: [0, 80], lat_ms: [null, 1e4]}\n"
        "parameters:\n"
        "  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 128, default: 512}\n"
        "  LM_HEAD_KEEPSET: {type: categorical, values: ['0', '8192'], default: '0'}\n";
    char path[64], err[1024];
    int fd = fuzz_file((const uint8_t *)text, sizeof text - 1, path, sizeof path);
    sp = fd >= 0 ? space_load(path, err, sizeof err) : NULL;
    if (fd >= 0) close(fd);
    if (!sp) {
        fprintf(stderr, "fuzz: the fixed space does not load: %s\n", fd >= 0 ? err : "memfd");
        abort();
    }
    return sp;
}

#endif
