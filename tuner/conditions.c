/* conditions.c: load average and GPU clocks and temperature around each run; see
 * conditions.h. */
#include "conditions.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/* Is there an executable nvidia-smi on the PATH? Looked up once. */
static int have_nvidia_smi(void) {
    static int known = -1;
    if (known >= 0) return known;
    known = 0;
    const char *path = getenv("PATH");
    char *copy = xstrdup(path ? path : ""), *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d && !known; d = strtok_r(NULL, ":", &save)) {
        char *f = xasprintf("%s/nvidia-smi", *d ? d : ".");
        known = access(f, X_OK) == 0;
        free(f);
    }
    free(copy);
    return known;
}

/* A GPU id is passed to a shell: only plain characters (an index or a UUID). */
static int gpu_id_ok(const char *gpu) {
    return gpu && *gpu && strlen(gpu) < 100 &&
           strspn(gpu, "0123456789abcdefABCDEF-GPUMIG/") == strlen(gpu);
}

void conditions_sample(conditions *c, const char *gpu) {
    c->load1 = c->gpu_sm_mhz = c->gpu_mem_mhz = c->gpu_temp_c = NAN;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &c->load1) != 1) c->load1 = NAN;
        fclose(f);
    }
    if (!have_nvidia_smi()) return;
    char *cmd = xasprintf("nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu "
                          "--format=csv,noheader,nounits%s%s 2>/dev/null",
                          gpu_id_ok(gpu) ? " -i " : "", gpu_id_ok(gpu) ? gpu : "");
    FILE *p = popen(cmd, "r");
    free(cmd);
    if (!p) return;
    char line[256];
    if (fgets(line, sizeof line, p)) {
        double a, b, t;
        if (sscanf(line, "%lf , %lf , %lf", &a, &b, &t) == 3) {
            c->gpu_sm_mhz = a;
            c->gpu_mem_mhz = b;
            c->gpu_temp_c = t;
        }
    }
    while (fgets(line, sizeof line, p)) {
    }
    pclose(p);
}

static cJSON *one(const conditions *c) {
    cJSON *o = cJSON_CreateObject();
    if (isfinite(c->load1)) cJSON_AddNumberToObject(o, "load1", c->load1);
    if (isfinite(c->gpu_sm_mhz)) cJSON_AddNumberToObject(o, "gpu_sm_mhz", c->gpu_sm_mhz);
    if (isfinite(c->gpu_mem_mhz)) cJSON_AddNumberToObject(o, "gpu_mem_mhz", c->gpu_mem_mhz);
    if (isfinite(c->gpu_temp_c)) cJSON_AddNumberToObject(o, "gpu_temp_c", c->gpu_temp_c);
    return o;
}

cJSON *conditions_json(const conditions *start, const conditions *end) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "start", one(start));
    cJSON_AddItemToObject(o, "end", one(end));
    return o;
}

double conditions_get(const cJSON *record, const char *when, const char *figure) {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(record, "conditions");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(c, when);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(w, figure);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

int conditions_drift(const conditions *ref, const conditions *now, int already, char *msg,
                     size_t n) {
    int out = 0;
    msg[0] = '\0';
    if (!(already & DRIFT_LOAD) && isfinite(ref->load1) && isfinite(now->load1) &&
        fabs(now->load1 - ref->load1) > 1 + 0.5 * ref->load1) {
        out |= DRIFT_LOAD;
        snprintf(msg, n,
                 "the load average moved from %.2f to %.2f since this session's first run: "
                 "other work competes with the engine, so figures measured now and then differ "
                 "for reasons that are not the knobs",
                 ref->load1, now->load1);
    }
    if (!(already & DRIFT_CLOCK) && isfinite(ref->gpu_sm_mhz) && isfinite(now->gpu_sm_mhz) &&
        ref->gpu_sm_mhz > 0 && fabs(now->gpu_sm_mhz / ref->gpu_sm_mhz - 1) > 0.10) {
        if (!out)
            snprintf(msg, n,
                     "the GPU's SM clock moved from %.0f to %.0f MHz since this session's first "
                     "run (throttling or a changed clock policy)",
                     ref->gpu_sm_mhz, now->gpu_sm_mhz);
        out |= DRIFT_CLOCK;
    }
    if (!(already & DRIFT_TEMP) && isfinite(ref->gpu_temp_c) && isfinite(now->gpu_temp_c) &&
        fabs(now->gpu_temp_c - ref->gpu_temp_c) > 10) {
        if (!out)
            snprintf(msg, n,
                     "the GPU's temperature moved from %.0f to %.0f C since this session's first "
                     "run",
                     ref->gpu_temp_c, now->gpu_temp_c);
        out |= DRIFT_TEMP;
    }
    return out;
}
