/* report_nodes.c: the report's section on the nodes the runs ran on (see report.h).
 *
 * Each journal line records the node of its run (node.h): the host and its model, a GPU's
 * name or else the CPU's. Figures from two models are not comparable (tokens/s on an L4 and
 * on an A10G differ by a factor that depends on the knobs), so the section groups the runs
 * by model: per model its hosts, its runs (tuning and verification) and the median of the
 * objective over them; and, when the study ran on more than one model, every point measured
 * on several models with its median on each, so the factor between the models can be read
 * off. Runs without a node (studies journaled before nodes were recorded, template
 * launchers, Slurm jobs that never started) are grouped as "unknown".
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "report.h"
#include "util.h"

enum { MAX_MODELS = 16, MAX_ROWS = 30 };

typedef struct {
    const char *name;
    const char **hosts; /* distinct, in order of appearance */
    int n_hosts, runs, verify_runs;
    double *y; /* [n_y] the objective of its runs that have one */
    int n_y;
} model_group;

static const char *node_field(const cJSON *rec, const char *key) {
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rec, "node"), key);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

static double run_objective(const report_data *d, const cJSON *rec) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(rec, "metrics"), d->sp->objective);
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble : NAN;
}

/* Index of the model of rec among g[0..*n) (added when new, up to MAX_MODELS; the last
 * group takes the rest). */
static int group_of(model_group *g, int *n, const cJSON *rec, int cap) {
    const char *model = node_field(rec, "model");
    if (!model) model = "unknown";
    for (int i = 0; i < *n; i++)
        if (!strcmp(g[i].name, model)) return i;
    if (*n == MAX_MODELS) return MAX_MODELS - 1;
    g[*n] = (model_group){.name = model,
                          .hosts = xcalloc((size_t)cap, sizeof(char *)),
                          .y = xcalloc((size_t)cap, sizeof(double))};
    return (*n)++;
}

static double median(double *y, int n) {
    if (n == 0) return NAN;
    double *c = xmalloc((size_t)n * sizeof *c);
    memcpy(c, y, (size_t)n * sizeof *c);
    gsl_sort(c, 1, (size_t)n);
    double m = gsl_stats_median_from_sorted_data(c, 1, (size_t)n);
    free(c);
    return m;
}

/* The table of points measured on more than one model, median objective per model. */
static void md_points_by_model(FILE *f, const report_data *d, model_group *g, int n_g) {
    const trial_table *t = d->t;
    int rows = 0, cap = t->n_runs + 1;
    double *y = xmalloc((size_t)cap * sizeof *y);
    for (int p = 0; p < t->n_points && rows < MAX_ROWS; p++) {
        const point_stats *ps = &t->points[p];
        double med[MAX_MODELS];
        int on = 0;
        for (int k = 0; k < n_g; k++) {
            int n = 0;
            for (int r = 0; r < ps->n_runs; r++) {
                const char *m = node_field(ps->runs[r], "model");
                double v = run_objective(d, ps->runs[r]);
                if (!strcmp(m ? m : "unknown", g[k].name) && isfinite(v)) y[n++] = v;
            }
            med[k] = median(y, n);
            on += n > 0;
        }
        if (on < 2) continue;
        if (rows++ == 0) {
            fprintf(f, "Points measured on more than one model, median %s on each:\n\n| point |",
                    d->sp->objective);
            for (int k = 0; k < n_g; k++)
                fprintf(f, " %s |", g[k].name);
            fputs("\n|---|", f);
            for (int k = 0; k < n_g; k++)
                fputs("---|", f);
            fputc('\n', f);
        }
        fprintf(f, "| `%s` |", ps->key);
        for (int k = 0; k < n_g; k++)
            isfinite(med[k]) ? fprintf(f, " %.6g |", med[k]) : fputs(" |", f);
        fputc('\n', f);
    }
    if (rows == 0)
        fputs("No point was measured on more than one model, so the models cannot be compared "
              "point for point.\n",
              f);
    fputc('\n', f);
    free(y);
}

void report_nodes_md(FILE *f, const report_data *d) {
    model_group g[MAX_MODELS];
    int n_g = 0, cap = d->t->n_runs + d->vt->n_runs + 1;
    const trial_table *tabs[] = {d->t, d->vt};
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < tabs[k]->n_points; p++)
            for (int r = 0; r < tabs[k]->points[p].n_runs; r++) {
                const cJSON *rec = tabs[k]->points[p].runs[r];
                model_group *m = &g[group_of(g, &n_g, rec, cap)];
                k ? m->verify_runs++ : m->runs++;
                double v = run_objective(d, rec);
                if (isfinite(v)) m->y[m->n_y++] = v;
                const char *host = node_field(rec, "host");
                int seen = !host;
                for (int h = 0; h < m->n_hosts && !seen; h++)
                    seen = !strcmp(m->hosts[h], host);
                if (!seen) m->hosts[m->n_hosts++] = host;
            }
    if (n_g == 0) return;
    fprintf(f, "## Nodes\n\n");
    fprintf(f,
            "Every run records the node it ran on and the node's model (its GPU, else its "
            "CPU). %s\n\n",
            n_g == 1 ? "All runs ran on one model, so their figures compare directly."
                     : "The runs ran on more than one model: figures from different models do "
                       "not compare directly (the factor between two models depends on the "
                       "knobs), so they are grouped here by model.");
    fprintf(f, "| model | hosts | tuning runs | verification runs | median %s |\n",
            d->sp->objective);
    fprintf(f, "|---|---|---|---|---|\n");
    for (int k = 0; k < n_g; k++) {
        fprintf(f, "| %s | ", g[k].name);
        for (int h = 0; h < g[k].n_hosts; h++)
            fprintf(f, "%s%s", h ? ", " : "", g[k].hosts[h]);
        fprintf(f, " | %d | %d |", g[k].runs, g[k].verify_runs);
        double m = median(g[k].y, g[k].n_y);
        isfinite(m) ? fprintf(f, " %.6g |\n", m) : fputs(" |\n", f);
    }
    fputc('\n', f);
    if (n_g > 1) md_points_by_model(f, d, g, n_g);
    for (int k = 0; k < n_g; k++) {
        free(g[k].hosts);
        free(g[k].y);
    }
}
