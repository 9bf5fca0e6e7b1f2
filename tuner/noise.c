/* noise.c: the study's measured noise and the runs it buys a promising point; see noise.h. */
#include "noise.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_statistics_double.h>

#include "util.h"

int noise_baseline_runs(const space *sp) {
    return sp->repeats > NOISE_BASELINE_RUNS ? sp->repeats : NOISE_BASELINE_RUNS;
}

double noise_measure(const space *sp, const trial_table *t, int *n_runs) {
    *n_runs = 0;
    int b = -1;
    for (int i = 0; i < t->n_points && b < 0; i++)
        if (t->points[i].baseline) b = i;
    if (b < 0) return NAN;
    const point_stats *p = &t->points[b];
    double *v = xmalloc((size_t)(p->n_runs + 1) * sizeof *v);
    int n = 0;
    for (int r = 0; r < p->n_runs; r++) {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(p->runs[r], "status");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(p->runs[r], "metrics");
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(m, sp->objective);
        if (cJSON_IsString(st) && strcmp(st->valuestring, "failed") != 0 && cJSON_IsNumber(x) &&
            isfinite(x->valuedouble))
            v[n++] = x->valuedouble;
    }
    double out = NAN;
    if (n >= 2) {
        double mean = gsl_stats_mean(v, 1, (size_t)n);
        if (mean != 0) out = gsl_stats_sd_m(v, 1, (size_t)n, mean) / fabs(mean);
    }
    free(v);
    *n_runs = n;
    return out;
}

int noise_runs_wanted(const space *sp, const trial_table *t, const resolved_constraint *rc,
                      double rel_noise, int i) {
    const point_stats *p = &t->points[i];
    if (p->baseline) return noise_baseline_runs(sp);
    int want = (int)ceil((rel_noise / NOISE_TARGET_SE) * (rel_noise / NOISE_TARGET_SE));
    if (!isfinite(rel_noise) || want <= sp->repeats || p->n_runs < sp->repeats) return sp->repeats;
    if (!observation_feasible(&p->obs, rc, sp->n_constraints)) return sp->repeats;
    double best = NAN;
    for (int k = 0; k < t->n_points; k++)
        if (k != i && observation_feasible(&t->points[k].obs, rc, sp->n_constraints) &&
            trials_better(t, t->points[k].objective, best))
            best = t->points[k].objective;
    /* Promising: better than the best other feasible point, or within one noise sd of it. */
    double margin = rel_noise * fabs(best);
    int promising = isnan(best) ||
                    (sp->maximize ? p->objective >= best - margin : p->objective <= best + margin);
    if (!promising) return sp->repeats;
    return want < sp->repeats + NOISE_MAX_EXTRA ? want : sp->repeats + NOISE_MAX_EXTRA;
}

void noise_text(const space *sp, double rel_noise, int n_runs, char *buf, size_t n) {
    if (isfinite(rel_noise))
        snprintf(buf, n, "%s of the baseline over %d runs: relative sd %.1f %%", sp->objective,
                 n_runs, 100 * rel_noise);
    else
        snprintf(buf, n, "not measured (no baseline, or fewer than 2 of its runs with a figure)");
}
