/* report_conditions.c: the report's section on noise and machine conditions, and its
 * second picture (see report.h).
 *
 * The noise is the relative sd of the objective over the baseline's runs (noise.h). The
 * conditions are what each journal line recorded at the run's start (conditions.h): the
 * load average and, on a GPU machine, the SM clock and the temperature. A condition
 * "varies" when its range over the runs is over 0.5 (load), 5 % of its largest value (clock)
 * or 5 degrees (temperature); only then is the objective of every run plotted against it,
 * one panel per varying condition, in conditions.png (data in conditions.dat: the
 * condition's three figures and the objective per run, tuning and verification runs alike;
 * conditions.gp redraws it). Runs of studies journaled before conditions were recorded
 * simply have none.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "conditions.h"
#include "noise.h"
#include "report.h"
#include "util.h"

enum { C_LOAD, C_CLOCK, C_TEMP, N_COND };

static const struct {
    const char *figure, *label;
    double min_range; /* absolute; the clock's is relative (see vary) */
} conds[N_COND] = {
    {"load1", "load average (1 min) at the run's start", 0.5},
    {"gpu_sm_mhz", "GPU SM clock (MHz) at the run's start", 0.05},
    {"gpu_temp_c", "GPU temperature (C) at the run's start", 5},
};

typedef struct {
    double *x[N_COND], *y; /* [n] per run with an objective */
    int n, have[N_COND];   /* runs; of them, runs with the condition */
} cond_data;

static void gather(const report_data *d, cond_data *cd) {
    memset(cd, 0, sizeof *cd);
    int cap = d->t->n_runs + d->vt->n_runs + 1;
    cd->y = xmalloc((size_t)cap * sizeof *cd->y);
    for (int c = 0; c < N_COND; c++)
        cd->x[c] = xmalloc((size_t)cap * sizeof(double));
    const trial_table *tabs[] = {d->t, d->vt};
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < tabs[k]->n_points; p++)
            for (int r = 0; r < tabs[k]->points[p].n_runs && cd->n < cap; r++) {
                const cJSON *rec = tabs[k]->points[p].runs[r];
                const cJSON *m = cJSON_GetObjectItemCaseSensitive(rec, "metrics");
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, d->sp->objective);
                if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) continue;
                cd->y[cd->n] = v->valuedouble;
                for (int c = 0; c < N_COND; c++) {
                    cd->x[c][cd->n] = conditions_get(rec, "start", conds[c].figure);
                    cd->have[c] += isfinite(cd->x[c][cd->n]);
                }
                cd->n++;
            }
}

static void gather_free(cond_data *cd) {
    free(cd->y);
    for (int c = 0; c < N_COND; c++)
        free(cd->x[c]);
}

/* min, median, max of condition c over the runs that have it; returns how many. */
static int summary(const cond_data *cd, int c, double *lo, double *med, double *hi) {
    double *v = xmalloc((size_t)cd->n * sizeof *v + 1);
    int n = 0;
    for (int i = 0; i < cd->n; i++)
        if (isfinite(cd->x[c][i])) v[n++] = cd->x[c][i];
    if (n > 0) {
        gsl_sort(v, 1, (size_t)n);
        *lo = v[0];
        *hi = v[n - 1];
        *med = gsl_stats_median_from_sorted_data(v, 1, (size_t)n);
    }
    free(v);
    return n;
}

static int vary(const cond_data *cd, int c) {
    double lo, med, hi;
    if (summary(cd, c, &lo, &med, &hi) < 3) return 0;
    return c == C_CLOCK ? hi > 0 && (hi - lo) / hi > conds[c].min_range
                        : hi - lo > conds[c].min_range;
}

void report_conditions_md(FILE *f, const report_data *d) {
    fprintf(f, "## Noise and machine conditions\n\n");
    int n_base;
    char text[256];
    double noise = noise_measure(d->sp, d->t, &n_base);
    noise_text(d->sp, noise, n_base, text, sizeof text);
    fprintf(f, "Noise: %s%s.\n\n", text,
            isfinite(noise) && noise > NOISE_HIGH
                ? " (high: single runs of one point differ by this much, so small differences "
                  "between points are not resolved; the verification pairs each run with the "
                  "baseline for that reason)"
                : "");
    cond_data cd;
    gather(d, &cd);
    int any = 0, n_vary = 0;
    for (int c = 0; c < N_COND; c++) {
        double lo, med, hi;
        int n = summary(&cd, c, &lo, &med, &hi);
        if (!n) continue;
        if (!any)
            fputs("| condition | runs | min | median | max | varies |\n|---|---|---|---|---|---|\n",
                  f);
        any = 1;
        n_vary += vary(&cd, c);
        fprintf(f, "| %s | %d | %.4g | %.4g | %.4g | %s |\n", conds[c].label, n, lo, med, hi,
                vary(&cd, c) ? "yes" : "no");
    }
    if (!any)
        fputs("The journal records no machine conditions (a study from before they were "
              "recorded).\n\n",
              f);
    else if (n_vary)
        fprintf(f,
                "\n![%s against the conditions](conditions.png)\n\nEach dot is one run (tuning "
                "and verification alike): its %s against the condition at its start. A slope "
                "means the machine, not only the knobs, moved the figures.\n\n",
                d->sp->objective, d->sp->objective);
    else
        fputs("\nThe conditions did not vary enough to plot against.\n\n", f);
    gather_free(&cd);
}

int report_conditions_plot(const report_data *d, char *err, size_t errlen) {
    cond_data cd;
    gather(d, &cd);
    int panels[N_COND], n_p = 0;
    for (int c = 0; c < N_COND; c++)
        if (vary(&cd, c)) panels[n_p++] = c;
    if (n_p == 0) {
        gather_free(&cd);
        return 1;
    }
    char *dat = xasprintf("%s/conditions.dat", d->report_dir);
    char *gp = xasprintf("%s/conditions.gp", d->report_dir);
    FILE *f = fopen(dat, "w"), *g = f ? fopen(gp, "w") : NULL;
    int ok = f && g;
    if (ok) {
        fprintf(f, "# load1 gpu_sm_mhz gpu_temp_c %s (one run a line; NaN: not recorded)\n",
                d->sp->objective);
        for (int i = 0; i < cd.n; i++)
            fprintf(f, "%.10g %.10g %.10g %.10g\n", cd.x[C_LOAD][i], cd.x[C_CLOCK][i],
                    cd.x[C_TEMP][i], cd.y[i]);
        fprintf(g, "# conditions.gp: written by `tuner report`; redraw with `gnuplot "
                   "conditions.gp` in this folder.\n");
        fprintf(g, "set terminal pngcairo size %d,420 noenhanced\nset output 'conditions.png'\n",
                420 * n_p);
        fprintf(g, "set datafile missing 'NaN'\nset grid\nunset key\nset multiplot layout 1,%d\n",
                n_p);
        for (int k = 0; k < n_p; k++)
            fprintf(g,
                    "set xlabel \"%s\"\nset ylabel \"%s\"\nplot 'conditions.dat' using %d:4 with "
                    "points pt 7 ps 0.6 lc rgb '#1f77b4'\n",
                    conds[panels[k]].label, d->sp->objective, panels[k] + 1);
        fprintf(g, "unset multiplot\n");
    }
    if (f) ok &= fclose(f) == 0;
    if (g) ok &= fclose(g) == 0;
    if (!ok) snprintf(err, errlen, "%s: cannot write: %s", dat, strerror(errno));
    free(dat);
    free(gp);
    gather_free(&cd);
    return ok ? report_gnuplot(d->report_dir, "conditions", err, errlen) : 0;
}
