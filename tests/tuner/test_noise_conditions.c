/* test_noise_conditions.c: the noise measured from the baseline's runs and the runs it buys
 * a promising point (noise.h); the machine conditions recorded around each run and the
 * drift warnings (conditions.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conditions.h"
#include "noise.h"
#include "util.h"
#include "../test_util.h"

static cJSON *records[32];
static int n_records;

static void add(trial_table *t, const char *phase, int w, double tps) {
    char *text = xasprintf("{\"id\":%d,\"phase\":\"%s\",\"point\":{\"W\":\"%d\"},\"levels\":[%d],"
                           "\"status\":\"ok\",\"metrics\":{\"tps\":%g,\"ppl\":2.3}}",
                           n_records + 1, phase, w, w, tps);
    cJSON *r = cJSON_Parse(text);
    free(text);
    CHECK(r && n_records < 32);
    records[n_records++] = r;
    char err[256];
    CHECK(trials_add(t, r, "x", err, sizeof err) != TRIALS_BAD);
}

static void noise(void) {
    char path[] = "/tmp/test_noise_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    const char *text = "engine: {command: ./engine}\n"
                       "objective: {metric: tps}\n"
                       "constraints: [ppl <= 1.05 * baseline]\n"
                       "baseline: {W: 0}\n"
                       "parameters: {W: {type: int, min: 0, max: 3}}\n";
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    char err[512];
    space *sp = space_load(path, err, sizeof err);
    unlink(path);
    CHECK(sp);
    EXPECT(noise_baseline_runs(sp) == NOISE_BASELINE_RUNS && sp->repeats == 1);
    trial_table *t = trials_new(sp);
    int n;
    EXPECT(isnan(noise_measure(sp, t, &n)) && n == 0);
    add(t, "baseline", 0, 100);
    EXPECT(isnan(noise_measure(sp, t, &n)) && n == 1); /* one run: no sd */
    add(t, "baseline", 0, 110);
    add(t, "baseline", 0, 90);
    double rel = noise_measure(sp, t, &n);
    EXPECT(n == 3 && fabs(rel - 0.1) < 1e-12); /* sd 10 over mean 100 */
    char buf[128];
    noise_text(sp, rel, n, buf, sizeof buf);
    EXPECT(!strcmp(buf, "tps of the baseline over 3 runs: relative sd 10.0 %"));
    add(t, "search", 1, 104); /* better than the baseline: promising */
    add(t, "search", 2, 60);  /* far below: not */
    add(t, "search", 3, 96);  /* within one noise sd of the best: promising */
    resolved_constraint rc[1];
    const char *why;
    EXPECT(trials_resolve(t, rc, &why));
    EXPECT(noise_runs_wanted(sp, t, rc, rel, 0) == 3);                   /* the baseline */
    EXPECT(noise_runs_wanted(sp, t, rc, rel, 1) == 1 + NOISE_MAX_EXTRA); /* capped */
    EXPECT(noise_runs_wanted(sp, t, rc, rel, 2) == 1);                   /* hopeless */
    EXPECT(noise_runs_wanted(sp, t, rc, rel, 3) == 1 + NOISE_MAX_EXTRA); /* close */
    EXPECT(noise_runs_wanted(sp, t, rc, 0.04, 1) == 2); /* (0.04 / 0.03)^2 = 1.8: 2 runs */
    EXPECT(noise_runs_wanted(sp, t, rc, 0.01, 1) == 1); /* a quiet machine: repeats */
    EXPECT(noise_runs_wanted(sp, t, rc, NAN, 1) == 1);  /* not measured: repeats */
    trials_free(t);
    space_free(sp);
}

static void conds(void) {
    conditions a, b;
    conditions_sample(&a, NULL);
    EXPECT(isfinite(a.load1) && a.load1 >= 0); /* Linux has /proc/loadavg */
    a = (conditions){1.0, 1980, 2619, 40};
    b = (conditions){2.4, 1900, 2619, 45};
    char msg[512];
    EXPECT(conditions_drift(&a, &b, 0, msg, sizeof msg) == 0 && msg[0] == '\0');
    b.load1 = 2.6; /* more than 1 + half of 1.0 */
    EXPECT(conditions_drift(&a, &b, 0, msg, sizeof msg) == DRIFT_LOAD);
    EXPECT(strstr(msg, "the load average moved from 1.00 to 2.60") != NULL);
    EXPECT(conditions_drift(&a, &b, DRIFT_LOAD, msg, sizeof msg) == 0); /* warned once */
    b.gpu_sm_mhz = 1700;                                                /* 14 % down */
    b.gpu_temp_c = 52;                                                  /* 12 degrees up */
    EXPECT(conditions_drift(&a, &b, DRIFT_LOAD, msg, sizeof msg) == (DRIFT_CLOCK | DRIFT_TEMP));
    EXPECT(strstr(msg, "SM clock moved from 1980 to 1700 MHz") != NULL);
    conditions none = {NAN, NAN, NAN, NAN};
    EXPECT(conditions_drift(&none, &b, 0, msg, sizeof msg) == 0); /* unknown: no warning */
    /* the journal's form, read back */
    cJSON *rec = cJSON_CreateObject();
    cJSON_AddItemToObject(rec, "conditions", conditions_json(&a, &none));
    char *text = cJSON_PrintUnformatted(rec);
    EXPECT(!strcmp(text, "{\"conditions\":{\"start\":{\"load1\":1,\"gpu_sm_mhz\":1980,"
                         "\"gpu_mem_mhz\":2619,\"gpu_temp_c\":40},\"end\":{}}}"));
    free(text);
    EXPECT(conditions_get(rec, "start", "gpu_sm_mhz") == 1980);
    EXPECT(isnan(conditions_get(rec, "end", "load1")));
    EXPECT(isnan(conditions_get(rec, "middle", "load1")));
    cJSON_Delete(rec);
}

int main(void) {
    noise();
    conds();
    for (int i = 0; i < n_records; i++)
        cJSON_Delete(records[i]);
    if (failures) fprintf(stderr, "%d failures\n", failures);
    return failures ? 1 : 0;
}
