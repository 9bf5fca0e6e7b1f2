/* manifest.h: the sweep's answer, out/<study>/manifest.json (DESIGN.md 4.2), and the
 * `tuner env` command that turns it back into a shell environment.
 *
 * The manifest holds, for the best feasible point: "env" (the space's fixed env plus the
 * chosen knobs, every value a string: run the engine command under it to reproduce),
 * "measured" (median and spread of every numeric metric over the point's runs on the tuning
 * prompts), "verified" (null until the held-out verification phase exists, with a note
 * saying so), the objective, the constraints with their resolved bounds, the budget and how
 * much of it was used, the engine command and working directory, the device the engine
 * reported, the study and the time. It is written atomically (tmp, fsync, rename).
 */
#ifndef MANIFEST_H
#define MANIFEST_H

#include <stdio.h>

#include "space.h"
#include "strategy.h"
#include "trials.h"

typedef struct {
    const char *study;     /* study name */
    const char *study_dir; /* out/<study> */
    double wall_used_s;    /* study wall time so far (all sessions) */
} manifest_info;

/* Build the manifest of point `best` of t (a feasible point). Caller frees (cJSON_Delete). */
cJSON *manifest_build(const space *sp, const trial_table *t, int best,
                      const resolved_constraint *rc, const manifest_info *info);

/* Write it to study_dir/manifest.json atomically. Returns 1, or 0 with err naming the file. */
int manifest_write(const cJSON *manifest, const char *study_dir, char *err, size_t errlen);

/* Print `export K='V'` lines for the "env" of the manifest file at path. Returns 1, or 0
 * with err naming the file (and key) when it is not a manifest a shell can use. */
int manifest_print_env(const char *path, FILE *out, char *err, size_t errlen);

#endif
