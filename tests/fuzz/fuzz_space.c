/* fuzz_space.c: libFuzzer target for the space loader: YAML in, every check of space.h,
 * then the canonical JSON and the lattice helpers of whatever loads. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "space.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[64], err[2048];
    int fd = fuzz_file(data, size, path, sizeof path);
    if (fd < 0) return 0;
    space *sp = space_load(path, err, sizeof err);
    close(fd);
    if (!sp) return 0;
    free(space_to_json_text(sp));
    int *levels = calloc((size_t)sp->n_params + 1, sizeof *levels);
    for (int i = 0; i < sp->n_params; i++) {
        const param_def *p = &sp->params[i];
        levels[i] = p->n_levels - 1;
        char buf[256];
        space_param_value(p, levels[i], buf, sizeof buf);
        (void)space_param_level(p, space_param_unit(p, levels[i]));
    }
    free(space_point_key(sp, levels));
    (void)space_n_points(sp);
    metric_bound b;
    space_metric_bounds(sp, sp->objective, &b);
    free(levels);
    space_free(sp);
    return 0;
}
