/* fuzz_journal.c: libFuzzer target for trials.jsonl: the line parser (torn and damaged
 * lines included), then each record into the tables as a resumed sweep adds them, and the
 * orders and bounds computed from them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "journal.h"
#include "trials.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const space *sp = fuzz_space();
    char path[64], err[2048];
    int fd = fuzz_file(data, size, path, sizeof path);
    if (fd < 0) return 0;
    cJSON **recs = NULL;
    int n = 0;
    if (journal_load(path, 0, &recs, &n, err, sizeof err)) {
        trial_table *t = trials_new(sp), *vt = trials_new_verify(sp);
        for (int i = 0; i < n; i++) {
            if (trials_add(t, recs[i], "fuzz", err, sizeof err) == TRIALS_BAD) continue;
            trials_add(vt, recs[i], "fuzz", err, sizeof err);
        }
        resolved_constraint rc[8];
        const char *why;
        trials_resolve(t, rc, &why);
        int *order = malloc(((size_t)t->n_points + 1) * sizeof *order);
        trials_order(t, rc, order);
        free(order);
        trials_free(t);
        trials_free(vt);
        for (int i = 0; i < n; i++)
            cJSON_Delete(recs[i]);
        free(recs);
    }
    close(fd);
    return 0;
}
