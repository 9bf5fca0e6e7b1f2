/* conditions.h: the state of the machine around each run, recorded in its journal line.
 *
 * Throughput depends on more than the knobs: other work on the machine, GPU clocks that
 * throttle, a GPU that heats up. Each run records, at its start and at its end, the 1-minute
 * load average (/proc/loadavg) and, where `nvidia-smi` is on the PATH, the GPU's SM and
 * memory clocks (MHz) and temperature (degrees C) of the GPU the run is pinned to (the
 * first GPU otherwise). A figure that cannot be read is left out. The journal line holds
 *   "conditions": {"start": {"load1": 2.1, "gpu_sm_mhz": 1980, "gpu_mem_mhz": 2619,
 *                            "gpu_temp_c": 41}, "end": {...}}
 * The sweep compares each run's figures with those at the start of its session and warns
 * once per kind when they drift (conditions_drift); the report plots the objective against
 * them when they vary (report_conditions.c).
 */
#ifndef CONDITIONS_H
#define CONDITIONS_H

#include <stddef.h>

#include <cjson/cJSON.h>

typedef struct {
    double load1;                   /* NAN: unknown */
    double gpu_sm_mhz, gpu_mem_mhz; /* NAN: unknown (no nvidia-smi) */
    double gpu_temp_c;              /* NAN: unknown */
} conditions;

/* Read the machine's conditions now. gpu: the CUDA_VISIBLE_DEVICES of the run (an index or
 * a UUID), NULL for the first GPU. nvidia-smi is looked up once per process. */
void conditions_sample(conditions *c, const char *gpu);

/* {"start": {...}, "end": {...}} with the known figures. */
cJSON *conditions_json(const conditions *start, const conditions *end);

/* Read a figure of a journal line's conditions ("start" or "end", e.g. "load1"): NAN when
 * absent. */
double conditions_get(const cJSON *record, const char *when, const char *figure);

enum { DRIFT_LOAD = 1, DRIFT_CLOCK = 2, DRIFT_TEMP = 4 };

/* Has now drifted from ref? Returns the kinds (DRIFT_*) not in `already` that drifted,
 * with a message for the first into msg: the load average by more than 1 + half of ref's,
 * a GPU clock by more than 10 %, the temperature by more than 10 degrees. */
int conditions_drift(const conditions *ref, const conditions *now, int already, char *msg,
                     size_t n);

#endif
