/* report_plot.c: the report's picture, drawn by gnuplot (see report.h).
 *
 * We do not draw pixels ourselves: we write one small whitespace-separated data file per
 * series (feasible, over budget, infinite, Pareto front, measured -> verified arrows, the
 * chosen point, the baseline), a gnuplot script that plots them, and run `gnuplot plot.gp`
 * in the report folder (pngcairo terminal: plot.png). A user can restyle the picture by
 * editing plot.gp and running gnuplot again; nothing else is needed.
 *
 * Axes: y is the objective, x the metric of the first constraint (tps against ppl), so the
 * budget is a vertical line. Points whose x is infinite (a keepset that misses target
 * tokens) cannot sit at infinity: they are drawn at the right edge with a marker of their
 * own. A log x scale is used when the finite x values span more than two decades. Series
 * with no rows are left out of the plot command (gnuplot refuses an empty data file).
 */
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

/* One series of the plot: a data file and how gnuplot draws it. */
typedef struct {
    const char *file;  /* data file name in the report folder */
    const char *using; /* gnuplot `using` columns */
    const char *style; /* gnuplot `with` clause */
    const char *title; /* legend entry */
    int rows;          /* rows written; 0: the series is left out */
} series;

/* Quote a string for a gnuplot double-quoted literal into buf. */
static const char *gp_quote(const char *s, char *buf, size_t n) {
    size_t k = 0;
    for (; *s && k + 3 < n; s++) {
        if (*s == '"' || *s == '\\') buf[k++] = '\\';
        buf[k++] = (*s == '\n') ? ' ' : *s;
    }
    buf[k] = '\0';
    return buf;
}

static FILE *data_open(const char *dir, const char *name, char *err, size_t errlen) {
    char *path = xasprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    free(path);
    return f;
}

static int data_close(FILE *f, const char *dir, const char *name, char *err, size_t errlen) {
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    if (bad) snprintf(err, errlen, "%s/%s: write error: %s", dir, name, strerror(errno));
    return !bad;
}

double report_point_x(const report_data *d, int p) {
    if (d->x_con < 0) return p + 1;
    return d->t->points[p].cons[d->x_con];
}

/* x of a verification point (NAN when it has no value). */
static double verify_x(const report_data *d, int v) {
    if (d->x_con < 0) return NAN;
    return d->vt->points[v].cons[d->x_con];
}

int report_gnuplot(const char *dir, const char *name, char *err, size_t errlen) {
    char script[64], log[64];
    snprintf(script, sizeof script, "%s.gp", name);
    snprintf(log, sizeof log, "%s", strcmp(name, "plot") ? name : "gnuplot");
    strncat(log, ".log", sizeof log - strlen(log) - 1);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "cannot start gnuplot: fork: %s", strerror(errno));
        return 0;
    }
    if (pid == 0) {
        if (chdir(dir) != 0) _exit(126);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execlp("gnuplot", "gnuplot", script, (char *)NULL);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            snprintf(err, errlen, "waiting for gnuplot: %s", strerror(errno));
            return 0;
        }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        snprintf(err, errlen,
                 "gnuplot was not found on PATH: install the Debian package gnuplot-nox "
                 "(scripts/setup.sh does) to draw %s/%s.png",
                 dir, name);
        return 0;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(err, errlen, "gnuplot failed on %s/%s (exit %d); its messages are in %s/%s", dir,
                 script, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), dir,
                 log);
        return 0;
    }
    char *png = xasprintf("%s/%s.png", dir, name);
    struct stat st;
    int ok = stat(png, &st) == 0 && st.st_size > 0;
    if (!ok) snprintf(err, errlen, "gnuplot ran but wrote no %s (see %s/%s)", png, dir, log);
    free(png);
    return ok;
}

int report_plot_write(const report_data *d, char *err, size_t errlen) {
    const trial_table *t = d->t;
    const space *sp = d->sp;
    const char *dir = d->report_dir;
    enum { S_OVER, S_INF, S_FEAS, S_PARETO, S_VERIFY, S_VPOINT, S_BASE, S_CHOSEN, N_SERIES };
    series s[N_SERIES] = {
        {"over_budget.dat", "1:2", "points pt 6 ps 1.3 lc rgb '#8c8c8c'",
         "measured, breaks a constraint", 0},
        {"infinite.dat", "1:2", "points pt 2 ps 1.6 lw 2 lc rgb '#9467bd'",
         "infinite (drawn at the right edge)", 0},
        {"feasible.dat", "1:2", "points pt 7 ps 1.3 lc rgb '#1f77b4'", "feasible", 0},
        {"pareto.dat", "1:2", "linespoints pt 7 ps 1.3 lw 2 lc rgb '#2ca02c'",
         "feasible Pareto front", 0},
        {"verified.dat", "1:2:3:4",
         "vectors head filled size screen 0.012,20 lw 2 lc rgb '#ff7f0e'",
         "measured -> verified on held-out prompts", 0},
        {"verified_points.dat", "1:2", "points pt 13 ps 1.6 lc rgb '#ff7f0e'",
         "verified (held-out median)", 0},
        {"baseline.dat", "1:2", "points pt 4 ps 2.5 lw 2 lc rgb '#000000'", "baseline", 0},
        {"chosen.dat", "1:2", "points pt 3 ps 3.5 lw 3 lc rgb '#d62728'", "chosen (manifest)", 0},
    };

    const char *xname = d->x_con >= 0 ? sp->constraints[d->x_con].metric : "point number";
    char inf_title[160];
    snprintf(inf_title, sizeof inf_title, "%s infinite (drawn at the right edge)", xname);
    s[S_INF].title = inf_title;

    /* The x range: every finite x drawn, and every bound on the x metric. */
    double lo = INFINITY, hi = -INFINITY;
    for (int p = 0; p < t->n_points; p++) {
        double x = report_point_x(d, p);
        if (t->points[p].status == TRIAL_FAILED || !isfinite(x)) continue;
        lo = fmin(lo, x), hi = fmax(hi, x);
    }
    for (int v = 0; d->vt && v < d->vt->n_points; v++) {
        double x = verify_x(d, v);
        if (isfinite(x)) lo = fmin(lo, x), hi = fmax(hi, x);
    }
    for (int c = 0; d->x_con >= 0 && c < sp->n_constraints; c++) {
        if (strcmp(sp->constraints[c].metric, sp->constraints[d->x_con].metric)) continue;
        if (isfinite(d->rc[c].bound)) lo = fmin(lo, d->rc[c].bound), hi = fmax(hi, d->rc[c].bound);
        if (d->vt->n_points > 0 && isfinite(d->vrc[c].bound))
            lo = fmin(lo, d->vrc[c].bound), hi = fmax(hi, d->vrc[c].bound);
    }
    int have_x = isfinite(lo);
    int logx = have_x && lo > 0 && hi / lo > 100;
    double edge = 0; /* where infinite x is drawn */
    if (have_x) {
        if (logx) {
            edge = hi * 2;
            lo /= 1.5, hi = edge * 1.5;
        } else {
            double span = hi - lo > 0 ? hi - lo : (fabs(hi) > 0 ? fabs(hi) * 0.1 : 1);
            edge = hi + 0.1 * span;
            lo -= 0.06 * span, hi = edge + 0.06 * span;
        }
    }

    /* The data files. */
    FILE *f[N_SERIES];
    for (int k = 0; k < N_SERIES; k++)
        if (!(f[k] = data_open(dir, s[k].file, err, errlen))) {
            for (int j = 0; j < k; j++)
                fclose(f[j]);
            return 0;
        }
    for (int k = 0; k < N_SERIES; k++)
        fprintf(f[k], "# %s: columns %s\n", s[k].title,
                k == S_VERIFY ? "x_measured y_measured dx dy" : "x y point");
    for (int k = 0; k < t->n_points; k++) {
        int p = d->order[k];
        const point_stats *ps = &t->points[p];
        if (ps->status == TRIAL_FAILED || !isfinite(ps->objective)) continue;
        double x = report_point_x(d, p);
        int which = !isfinite(x) ? S_INF : k < d->n_feasible ? S_FEAS : S_OVER;
        if (!isfinite(x)) x = edge;
        if (!have_x && which == S_INF) continue;
        fprintf(f[which], "%.10g %.10g %s\n", x, ps->objective, ps->key);
        s[which].rows++;
        if (ps->baseline) {
            fprintf(f[S_BASE], "%.10g %.10g %s\n", x, ps->objective, ps->key);
            s[S_BASE].rows++;
        }
        if (p == d->chosen) {
            fprintf(f[S_CHOSEN], "%.10g %.10g %s\n", x, ps->objective, ps->key);
            s[S_CHOSEN].rows++;
        }
    }
    for (int k = 0; k < d->n_pareto; k++) {
        const point_stats *ps = &t->points[d->pareto[k]];
        fprintf(f[S_PARETO], "%.10g %.10g %s\n", report_point_x(d, d->pareto[k]), ps->objective,
                ps->key);
        s[S_PARETO].rows++;
    }
    for (int v = 0; d->vt && v < d->vt->n_points; v++) {
        const point_stats *vp = &d->vt->points[v];
        int p = trials_find(t, vp->levels);
        if (p < 0 || !isfinite(vp->objective) || !isfinite(t->points[p].objective)) continue;
        double x0 = report_point_x(d, p), x1 = d->x_con < 0 ? x0 : verify_x(d, v);
        if (!isfinite(x0) || !isfinite(x1)) continue;
        fprintf(f[S_VERIFY], "%.10g %.10g %.10g %.10g %s\n", x0, t->points[p].objective, x1 - x0,
                vp->objective - t->points[p].objective, vp->key);
        s[S_VERIFY].rows++;
        fprintf(f[S_VPOINT], "%.10g %.10g %s\n", x1, vp->objective, vp->key);
        s[S_VPOINT].rows++;
    }
    int ok = 1;
    for (int k = 0; k < N_SERIES; k++)
        ok &= data_close(f[k], dir, s[k].file, err, errlen);
    if (!ok) return 0;

    /* The script. */
    char *gp_path = xasprintf("%s/plot.gp", dir);
    FILE *g = fopen(gp_path, "w");
    if (!g) {
        snprintf(err, errlen, "%s: cannot write: %s", gp_path, strerror(errno));
        free(gp_path);
        return 0;
    }
    char q1[512], q2[512];
    fprintf(
        g, "# plot.gp: written by `tuner report`; redraw with `gnuplot plot.gp` in this folder.\n");
    fprintf(g, "set terminal pngcairo size 1360,760 noenhanced font 'sans,11'\n");
    fprintf(g, "set output 'plot.png'\n");
    fprintf(g, "set title \"study %s: %s against %s, %d points (%d feasible)\"\n",
            gp_quote(d->study_name, q1, sizeof q1), sp->objective, xname, t->n_points,
            d->n_feasible);
    fprintf(g, "set xlabel \"%s (median over repeats, tuning prompts)%s\"\n",
            gp_quote(xname, q1, sizeof q1), d->x_con >= 0 ? "" : "");
    fprintf(g, "set ylabel \"%s (median over repeats, %s is better)\"\n", sp->objective,
            sp->maximize ? "higher" : "lower");
    fprintf(g, "set grid\nset key outside right top vertical box\n");
    fprintf(g, "set offsets 0, 0, graph 0.06, graph 0.06\n");
    if (have_x) fprintf(g, "set xrange [%.10g:%.10g]\n", lo, hi);
    if (logx) fprintf(g, "set logscale x\n");
    int arrow = 1;
    for (int c = 0; d->x_con >= 0 && c < sp->n_constraints; c++) {
        if (strcmp(sp->constraints[c].metric, xname) || !isfinite(d->rc[c].bound)) continue;
        fprintf(g,
                "set arrow %d from %.10g, graph 0 to %.10g, graph 1 nohead lw 2 dt 2 lc rgb "
                "'#d62728'\n",
                arrow, d->rc[c].bound, d->rc[c].bound);
        fprintf(g,
                "set label %d \"budget: %s (bound %.6g)\" at %.10g, graph %.2f right offset "
                "-0.6,0 textcolor rgb '#d62728'\n",
                arrow, gp_quote(sp->constraints[c].text, q2, sizeof q2), d->rc[c].bound,
                d->rc[c].bound, 0.96 - 0.05 * (arrow - 1));
        arrow++;
    }
    /* A relative bound is re-based on the baseline's held-out re-run for the verification:
     * when that moves it, the held-out budget gets a line of its own. */
    for (int c = 0; d->x_con >= 0 && d->vt->n_points > 0 && c < sp->n_constraints; c++) {
        double b = d->vrc[c].bound;
        if (strcmp(sp->constraints[c].metric, xname) || !isfinite(b) ||
            fabs(b - d->rc[c].bound) <= 1e-9 * fabs(b))
            continue;
        fprintf(g,
                "set arrow %d from %.10g, graph 0 to %.10g, graph 1 nohead lw 2 dt 3 lc rgb "
                "'#ff7f0e'\n",
                arrow, b, b);
        fprintf(g,
                "set label %d \"held-out budget (bound %.6g)\" at %.10g, graph %.2f right offset "
                "-0.6,0 textcolor rgb '#ff7f0e'\n",
                arrow, b, b, 0.96 - 0.05 * (arrow - 1));
        arrow++;
    }
    if (s[S_INF].rows)
        fprintf(g,
                "set label %d \"%s = inf\" at %.10g, graph 0.04 center textcolor rgb '#9467bd'\n",
                arrow++, gp_quote(xname, q1, sizeof q1), edge);
    int n_drawn = 0;
    for (int k = 0; k < N_SERIES; k++)
        n_drawn += s[k].rows > 0;
    if (!n_drawn) {
        fprintf(g, "set xrange [0:1]\nset yrange [0:1]\nunset key\n");
        fprintf(g,
                "set label %d \"no point of this study produced a result (see report.md: "
                "failures)\" at graph 0.5, graph 0.5 center\n",
                arrow);
        fprintf(g, "plot -1 notitle\n");
    } else {
        fprintf(g, "plot");
        const char *sep = " ";
        for (int k = 0; k < N_SERIES; k++) {
            if (!s[k].rows) continue;
            fprintf(g, "%s'%s' using %s with %s title \"%s\"", sep, s[k].file, s[k].using,
                    s[k].style, s[k].title);
            sep = ", \\\n     ";
        }
        fputc('\n', g);
    }
    int bad = ferror(g);
    bad |= fclose(g) != 0;
    if (bad) {
        snprintf(err, errlen, "%s: write error: %s", gp_path, strerror(errno));
        free(gp_path);
        return 0;
    }
    free(gp_path);
    return report_gnuplot(dir, "plot", err, errlen);
}
