/* report.h: `tuner report STUDY`, a self-contained report folder of a study.
 *
 * Written into <study folder>/report/ from the study folder alone (study.json,
 * trials.jsonl, manifest.json when there is one), so it works on a finished study, one
 * that stopped half way, one with no feasible point, or a copy on another machine:
 *
 *   report.md      the outcome (chosen knobs, measured against verified figures), the
 *                  plot, the verification of the candidates, the feasible Pareto front,
 *                  every point, the failures grouped by reason, and how much each knob
 *                  mattered (main effects and the correlation ratio, see report.c)
 *   plot.png       every point as objective against the first constraint's metric (tps
 *                  against ppl), the budget line, the feasible Pareto front, the held-out
 *                  re-runs as arrows from measured to verified, the chosen point; drawn
 *                  by gnuplot (report_plot.c)
 *   plot.gp, *.dat the gnuplot script and its data, to redraw or restyle the picture
 *   conditions.png the objective of every run against the load average (and the GPU's
 *                  clocks and temperature) at its start, when they vary (report_conditions.c)
 *
 * report.c gathers the study into a report_data and writes the Markdown; report_plot.c
 * turns the same report_data into the picture.
 */
#ifndef REPORT_H
#define REPORT_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "space.h"
#include "trials.h"

typedef struct {
    const char *study_dir;          /* the study folder */
    const char *report_dir;         /* study_dir/report */
    const char *study_name;         /* last component of study_dir */
    const space *sp;                /* rebuilt from study.json (no levels, see show.h) */
    const trial_table *t;           /* the tuning runs (baseline, warm, search) */
    const trial_table *vt;          /* the held-out verification runs (n_points may be 0) */
    const resolved_constraint *rc;  /* [sp->n_constraints] bounds, NAN when unresolved */
    const resolved_constraint *vrc; /* [sp->n_constraints] bounds for the held-out runs */
    const int *order;               /* [t->n_points] feasible best first, then the rest */
    int n_feasible;                 /* the first n_feasible of order are feasible */
    int x_con;         /* constraint whose metric is the plot's x axis; -1: none (x = point no.) */
    int chosen;        /* index into t->points of the manifest's point; -1: no manifest */
    const int *pareto; /* [n_pareto] indices into t->points: the feasible Pareto front,
                          by increasing x */
    int n_pareto;
    const cJSON *manifest; /* manifest.json, or NULL */
    const char *strategy;  /* the study's strategy (from its space.json), or "?" */
} report_data;

/* `tuner report`: build the report of the study named `study` in out_dir (or at the path
 * `study` when it is a study folder). Progress and errors go to stderr; the report's path
 * is printed on `out`; with to_stdout, report.md itself is printed there and nothing is
 * written. Returns the exit status (0, or 1 with a message naming the file). */
int report_main(const char *study, const char *out_dir, FILE *out, int to_stdout);

/* x of point p of the tuning table: its median of the x constraint's metric (INFINITY when
 * reported infinite), or its 1-based number when the study has no constraint. */
double report_point_x(const report_data *d, int p);

/* Write the plot's data files and plot.gp into d->report_dir and run gnuplot to draw
 * plot.png. Returns 1, or 0 with err saying what failed (gnuplot missing, its error). */
int report_plot_write(const report_data *d, char *err, size_t errlen);

/* Run gnuplot on NAME.gp in dir (its messages into gnuplot.log for "plot", else NAME.log);
 * it must write NAME.png. Returns 1, or 0 with err saying what failed. */
int report_gnuplot(const char *dir, const char *name, char *err, size_t errlen);

/* The "Noise and machine conditions" section of report.md (report_conditions.c): the noise
 * measured from the baseline's runs and the load average and GPU clocks and temperature
 * the runs saw; when they vary, the objective plotted against them in conditions.png. */
void report_conditions_md(FILE *f, const report_data *d);
/* Draw conditions.png (with conditions.gp and conditions.dat) when the conditions vary;
 * nothing otherwise. Returns 1, or 0 with err set. */
int report_conditions_plot(const report_data *d, char *err, size_t errlen);

/* The "Nodes" section of report.md (report_nodes.c): the runs grouped by the model of the
 * node they ran on, and the points measured on several models side by side. */
void report_nodes_md(FILE *f, const report_data *d);

#endif
