/* report.c: `tuner report STUDY`; see report.h.
 *
 * The study is read the way `tuner show` reads it (study.json + trials.jsonl through
 * trials.c, so the medians, the feasibility and the order are exactly the sweep's), plus
 * the manifest for the chosen point. From that we derive two things the sweep does not
 * keep: the feasible Pareto front (no other feasible point is at least as good on both the
 * objective and the x metric and better on one), and how much each knob mattered.
 *
 * Knob importance is the correlation ratio eta^2 of each knob over the measured points:
 * group the points by the knob's value, and take the share of the variance of the metric
 * that lies between the groups' means, sum n_g (mean_g - mean)^2 / sum (y - mean)^2. It
 * needs no model and no balanced design, reads directly off the table of level means it
 * comes from (printed beside it), and on a grid or Sobol design it estimates the knob's
 * first-order (main-effect) Sobol index. On a Bayesian study the points crowd around the
 * optimum and the knobs are correlated, so it describes the points measured rather than
 * the whole space; the report says so. Infinite values (ppl of a keepset that misses
 * target tokens) are left out of eta^2 and counted per level instead.
 *
 * The Markdown is built in memory and written atomically, then report_plot.c draws the
 * picture; a study with no feasible point, or no point at all that produced a result,
 * still gets its report (the failures are the interesting part then).
 */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_statistics_double.h>

#include "input.h"
#include "journal.h"
#include "show.h"
#include "util.h"

enum { ERR_LEN = 2048 };

/* ---- small helpers ------------------------------------------------------------------- */

static const char *point_value(const point_stats *p, const char *knob) {
    const cJSON *pt = cJSON_GetObjectItemCaseSensitive(p->runs[0], "point");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(pt, knob);
    return cJSON_IsString(v) ? v->valuestring : "?";
}

static void md_num(FILE *f, double v) {
    if (isnan(v))
        fputs("-", f);
    else if (isinf(v))
        fputs(v > 0 ? "inf" : "-inf", f);
    else
        fprintf(f, "%.6g", v);
}

/* A cell of free text: pipes and newlines would break the table. */
static void md_text(FILE *f, const char *s) {
    for (; s && *s; s++)
        fputs(*s == '|' ? "\\|" : (*s == '\n' || *s == '\r') ? " " : (char[]){*s, 0}, f);
}

static void md_pct(FILE *f, double frac) {
    if (isfinite(frac))
        fprintf(f, "%+.1f %%", 100 * frac);
    else
        fputs("-", f);
}

/* Is a at least as good as b on the x metric (lower for <=/<, higher for >=/>)? */
static int x_better_eq(const report_data *d, double a, double b) {
    if (d->x_con < 0) return 1;
    cmp_op op = d->sp->constraints[d->x_con].op;
    return (op == OP_LE || op == OP_LT) ? a <= b : a >= b;
}

static const report_data *sort_ctx;
static int by_x(const void *a, const void *b) {
    double xa = report_point_x(sort_ctx, *(const int *)a);
    double xb = report_point_x(sort_ctx, *(const int *)b);
    return (xa > xb) - (xa < xb);
}

/* The feasible points no other feasible point dominates, by increasing x. */
static int pareto_front(const report_data *d, int *front) {
    const trial_table *t = d->t;
    int n = 0;
    for (int i = 0; i < d->n_feasible; i++) {
        int p = d->order[i], dominated = 0;
        double xp = report_point_x(d, p), yp = t->points[p].objective;
        for (int j = 0; j < d->n_feasible && !dominated; j++) {
            int q = d->order[j];
            if (q == p) continue;
            double xq = report_point_x(d, q), yq = t->points[q].objective;
            int ge = x_better_eq(d, xq, xp) && !trials_better(t, yp, yq);
            int strict = trials_better(t, yq, yp) || (d->x_con >= 0 && xq != xp);
            dominated = ge && strict;
        }
        if (!dominated) front[n++] = p;
    }
    sort_ctx = d;
    qsort(front, (size_t)n, sizeof *front, by_x);
    return n;
}

/* ---- knob importance ----------------------------------------------------------------- */

static int level_cmp(const void *a, const void *b) {
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    char *ex, *ey;
    double dx = strtod(x, &ex), dy = strtod(y, &ey);
    if (ex != x && !*ex && ey != y && !*ey) return (dx > dy) - (dx < dy);
    return strcmp(x, y);
}

/* eta^2 of metric values y[n] grouped by g[n] in 0..n_groups-1; NAN when undefined. */
static double eta_squared(const double *y, const int *g, int n, int n_groups) {
    if (n < 3 || n_groups < 2) return NAN;
    double mean = gsl_stats_mean(y, 1, (size_t)n), total = 0, between = 0;
    for (int i = 0; i < n; i++)
        total += (y[i] - mean) * (y[i] - mean);
    if (!(total > 0)) return NAN;
    for (int k = 0; k < n_groups; k++) {
        double s = 0;
        int m = 0;
        for (int i = 0; i < n; i++)
            if (g[i] == k) s += y[i], m++;
        if (m) between += m * (s / m - mean) * (s / m - mean);
    }
    return between / total;
}

static void md_knob_effects(FILE *f, const report_data *d) {
    const trial_table *t = d->t;
    const space *sp = d->sp;
    const char *xm = d->x_con >= 0 ? sp->constraints[d->x_con].metric : NULL;
    int n = t->n_points;
    int *meas = xmalloc((size_t)(n + 1) * sizeof *meas), n_meas = 0;
    for (int p = 0; p < n; p++)
        if (t->points[p].status != TRIAL_FAILED && isfinite(t->points[p].objective))
            meas[n_meas++] = p;
    fprintf(f, "## How much each knob mattered\n\n");
    if (n_meas < 3) {
        fprintf(f, "Fewer than 3 points produced a result (%d): too few to say.\n\n", n_meas);
        free(meas);
        return;
    }
    fprintf(f,
            "eta² is the share of the variance of a metric over the %d measured points that "
            "lies between the mean values of the knob's levels (the correlation ratio: 0 = the "
            "knob does not move it, 1 = the knob alone explains it). It needs no model and reads "
            "straight off the table of level means below; on a grid or Sobol study it estimates "
            "the knob's first-order Sobol index. On a `%s` study %s",
            n_meas, d->strategy,
            "the points crowd where the strategy expected the best, and knobs move together, "
            "so read it as a description of the points measured, not of the whole space.");
    if (xm)
        fprintf(f, " Points with an infinite %s are left out of its eta² and counted per level.",
                xm);
    fprintf(f, "\n\n| knob | levels measured | eta² %s |", sp->objective);
    if (xm) fprintf(f, " eta² %s | infinite %s |", xm, xm);
    fprintf(f, " best level by mean %s |\n|---|---|---|%s---|\n", sp->objective,
            xm ? "---|---|" : "");

    double *y = xmalloc((size_t)n_meas * sizeof *y), *x = xmalloc((size_t)n_meas * sizeof *x);
    int *g = xmalloc((size_t)n_meas * sizeof *g), *gx = xmalloc((size_t)n_meas * sizeof *gx);
    const char **levels = xmalloc((size_t)n_meas * sizeof *levels);
    char *table = NULL; /* the level means, printed after the summary */
    size_t table_len = 0;
    FILE *lt = open_memstream(&table, &table_len);
    CHECK(lt);
    fprintf(lt, "| knob | value | points | mean %s |", sp->objective);
    if (xm) fprintf(lt, " mean %s (finite) | infinite %s |", xm, xm);
    fprintf(lt, "\n|---|---|---|---|%s\n", xm ? "---|---|" : "");
    for (int k = 0; k < sp->n_params; k++) {
        const char *knob = sp->params[k].name;
        int n_levels = 0;
        for (int i = 0; i < n_meas; i++) {
            const char *v = point_value(&t->points[meas[i]], knob);
            int j = 0;
            while (j < n_levels && strcmp(levels[j], v))
                j++;
            if (j == n_levels) levels[n_levels++] = v;
        }
        qsort(levels, (size_t)n_levels, sizeof *levels, level_cmp);
        int nx = 0, n_inf = 0;
        for (int i = 0; i < n_meas; i++) {
            const point_stats *p = &t->points[meas[i]];
            const char *v = point_value(p, knob);
            for (g[i] = 0; strcmp(levels[g[i]], v); g[i]++)
                ;
            y[i] = p->objective;
            if (xm && isfinite(p->cons[d->x_con]))
                x[nx] = p->cons[d->x_con], gx[nx++] = g[i];
            else if (xm)
                n_inf++;
        }
        int best = -1;
        double best_mean = NAN;
        for (int l = 0; l < n_levels; l++) {
            double sy = 0, sx = 0;
            int m = 0, mx = 0, minf = 0;
            for (int i = 0; i < n_meas; i++)
                if (g[i] == l) sy += y[i], m++;
            for (int i = 0; i < nx; i++)
                if (gx[i] == l) sx += x[i], mx++;
            if (xm) minf = m - mx;
            if (best < 0 || trials_better(t, sy / m, best_mean)) best = l, best_mean = sy / m;
            fprintf(lt, "| %s | %s | %d | ", knob, levels[l], m);
            md_num(lt, sy / m);
            if (xm) {
                fputs(" | ", lt);
                md_num(lt, mx ? sx / mx : NAN);
                fprintf(lt, " | %d |", minf);
            } else {
                fputs(" |", lt);
            }
            fputc('\n', lt);
        }
        fprintf(f, "| %s | %d | ", knob, n_levels);
        double e = eta_squared(y, g, n_meas, n_levels);
        if (isnan(e))
            fputs("-", f);
        else
            fprintf(f, "%.3f", e);
        if (xm) {
            e = eta_squared(x, gx, nx, n_levels);
            fputs(" | ", f);
            if (isnan(e))
                fputs("-", f);
            else
                fprintf(f, "%.3f", e);
            fprintf(f, " | %d of %d", n_inf, n_meas);
        }
        fprintf(f, " | %s (", levels[best]);
        md_num(f, best_mean);
        fputs(") |\n", f);
    }
    fclose(lt);
    fprintf(f, "\nMean of each level over the measured points:\n\n%s\n", table);
    free(table);
    free(levels);
    free(g);
    free(gx);
    free(x);
    free(y);
    free(meas);
}

/* ---- the Markdown sections ----------------------------------------------------------- */

/* Why a measured point is not feasible, or the reason of a failed one. */
static void point_note(FILE *f, const report_data *d, const point_stats *p, int feasible) {
    static const char *neg[] = {">", ">=", "<", "<="};
    if (feasible) return;
    if (p->status != TRIAL_OK && p->reason) {
        md_text(f, p->reason);
        return;
    }
    for (int c = 0; c < d->sp->n_constraints; c++) {
        observation one = p->obs;
        one.cons = &p->cons[c];
        if (observation_feasible(&one, d->rc + c, 1)) continue;
        if (isnan(d->rc[c].bound)) {
            fprintf(f, "%s: bound not resolved (no baseline)", d->rc[c].def->metric);
        } else {
            fprintf(f, "%s ", d->rc[c].def->metric);
            md_num(f, p->cons[c]);
            fprintf(f, " %s bound %.6g", neg[d->rc[c].def->op], d->rc[c].bound);
        }
        return;
    }
}

static const cJSON *jget(const cJSON *o, const char *a, const char *b) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
    return b ? cJSON_GetObjectItemCaseSensitive(x, b) : x;
}

static double jnum(const cJSON *o) {
    return cJSON_IsNumber(o) ? o->valuedouble : cJSON_IsNull(o) ? INFINITY : NAN;
}

static void md_outcome(FILE *f, const report_data *d) {
    const space *sp = d->sp;
    const cJSON *m = d->manifest;
    fprintf(f, "## Outcome\n\n");
    if (!m || d->chosen < 0) {
        const char *why =
            d->n_feasible == 0 ? "no point met the constraints on the tuning prompts"
            : d->vt->n_points > 0
                ? "no candidate stayed inside the constraints when re-run on the held-out prompts"
                : "the study has not reached its held-out verification yet (run the same "
                  "`tuner sweep` again to resume it)";
        fprintf(f, "**No manifest**: %s%s.\n\n", why,
                m ? " (manifest.json names a point this study's trials do not hold)" : "");
        return;
    }
    fprintf(f, "Chosen point (`manifest.json`):");
    const cJSON *item;
    cJSON_ArrayForEach(item, jget(m, "point", NULL)) {
        if (cJSON_IsString(item)) fprintf(f, " `%s=%s`", item->string, item->valuestring);
    }
    const cJSON *dev = jget(m, "device", NULL);
    if (cJSON_IsString(dev)) fprintf(f, " on `%s`", dev->valuestring);
    fprintf(f, ".\n\n| figures | prompt set | runs | %s |", sp->objective);
    /* the objective and each distinct constraint metric */
    const char *metrics[16];
    int n_metrics = 0;
    metrics[n_metrics++] = sp->objective;
    for (int c = 0; c < sp->n_constraints && n_metrics < 16; c++) {
        int seen = 0;
        for (int k = 0; k < n_metrics; k++)
            seen |= !strcmp(metrics[k], sp->constraints[c].metric);
        if (!seen) metrics[n_metrics++] = sp->constraints[c].metric;
    }
    for (int k = 1; k < n_metrics; k++)
        fprintf(f, " %s |", metrics[k]);
    fputs("\n|---|---|---|", f);
    for (int k = 0; k < n_metrics; k++)
        fputs("---|", f);
    fputc('\n', f);
    const char *blocks[] = {"measured", "verified"};
    for (int b = 0; b < 2; b++) {
        const cJSON *blk = jget(m, blocks[b], NULL);
        if (!cJSON_IsObject(blk)) continue;
        const cJSON *set = jget(blk, "prompt_set", NULL), *runs = jget(blk, "runs", NULL);
        fprintf(f, "| %s | %s | %d |", blocks[b], cJSON_IsString(set) ? set->valuestring : "?",
                cJSON_IsNumber(runs) ? runs->valueint : 0);
        for (int k = 0; k < n_metrics; k++) {
            fputc(' ', f);
            md_num(f, jnum(jget(jget(blk, "median", NULL), metrics[k], NULL)));
            double sd = jnum(jget(jget(jget(blk, "spread", NULL), metrics[k], NULL), "sd", NULL));
            if (isfinite(sd) && sd > 0) fprintf(f, " ± %.3g", sd);
            fputs(" |", f);
        }
        fputc('\n', f);
    }
    fputs("| gap (verified / measured - 1) | | |", f);
    for (int k = 0; k < n_metrics; k++) {
        fputc(' ', f);
        md_pct(f, jnum(jget(m, "gap", metrics[k])));
        fputs(" |", f);
    }
    fputs("\n\n", f);
    const cJSON *sum = jget(jget(m, "verification", NULL), "summary", NULL);
    if (cJSON_IsString(sum))
        fprintf(f, "Answer: %s (%s).\n\n", sum->valuestring,
                cJSON_IsString(jget(m, "verified", "prompt_set"))
                    ? "each candidate run between two baseline runs; a t interval on the "
                      "log-ratios, Bonferroni over the candidates side by side"
                    : "no held-out runs");
    cJSON_ArrayForEach(item, jget(m, "warnings", NULL)) {
        if (cJSON_IsString(item)) fprintf(f, "- warning: %s\n", item->valuestring);
    }
    const cJSON *rep = jget(m, "engine", "reproduce");
    if (cJSON_IsString(rep)) fprintf(f, "\nReproduce it:\n\n```sh\n%s\n```\n", rep->valuestring);
    fputc('\n', f);
}

/* A candidate's speed-up as the manifest records it: "1.45x [0.86, 2.44], 6 pairs". */
static void md_speedup(FILE *f, const report_data *d, const point_stats *vp) {
    if (vp->baseline) {
        fputs("(the baseline)", f);
        return;
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, jget(jget(d->manifest, "verification", NULL), "candidates", NULL)) {
        const cJSON *pt = jget(c, "point", NULL), *su = jget(c, "speedup", NULL);
        if (!cJSON_IsString(pt) || strcmp(pt->valuestring, vp->key) != 0 || !su) continue;
        double e = jnum(jget(su, "estimate", NULL)), lo = jnum(jget(su, "low", NULL)),
               hi = jnum(jget(su, "high", NULL));
        const cJSON *n = jget(su, "pairs", NULL);
        if (isfinite(lo) && isfinite(hi))
            fprintf(f, "%.2fx [%.2f, %.2f], %d pairs", e, lo, hi, n ? n->valueint : 0);
        else if (isfinite(e))
            fprintf(f, "%.2fx, %d pair", e, n ? n->valueint : 0);
        else
            fputs("-", f);
        return;
    }
    fputs("-", f);
}

static void md_verification(FILE *f, const report_data *d) {
    const trial_table *vt = d->vt;
    const space *sp = d->sp;
    fprintf(f, "## Measured against verified\n\n");
    if (vt->n_points == 0) {
        fprintf(f, "No held-out verification runs in this study.\n\n");
        return;
    }
    const cJSON *set = cJSON_GetObjectItemCaseSensitive(vt->points[0].runs[0], "prompt_set");
    fprintf(f,
            "The best candidates re-run on the `%s` prompts (%d runs of %d points), each run "
            "between two runs of the baseline; the speed-up over the baseline is a t interval on "
            "the log-ratios of those pairs (`manifest.json`, \"verification\"). The manifest "
            "keeps the candidate with the largest speed-up whose interval lies above 1 and that "
            "meets every constraint there, else the baseline.\n\n",
            cJSON_IsString(set) ? set->valuestring : "held-out", vt->n_runs, vt->n_points);
    fprintf(f, "| point | runs | measured %s | verified %s | gap |", sp->objective, sp->objective);
    for (int c = 0; c < sp->n_constraints; c++)
        fprintf(f, " measured %s | verified %s |", sp->constraints[c].metric,
                sp->constraints[c].metric);
    fputs(" speed-up over the baseline | verdict |\n|---|---|---|---|---|", f);
    for (int c = 0; c < sp->n_constraints; c++)
        fputs("---|---|", f);
    fputs("---|---|\n", f);
    for (int v = 0; v < vt->n_points; v++) {
        const point_stats *vp = &vt->points[v];
        int p = trials_find(d->t, vp->levels);
        const point_stats *tp = p >= 0 ? &d->t->points[p] : NULL;
        double meas = tp ? tp->objective : NAN;
        fprintf(f, "| `%s` | %d | ", vp->key, vp->n_runs);
        md_num(f, meas);
        fputs(" | ", f);
        md_num(f, vp->objective);
        if (vp->objective_sd > 0) fprintf(f, " ± %.3g", vp->objective_sd);
        fputs(" | ", f);
        md_pct(f, isfinite(meas) && meas != 0 ? vp->objective / meas - 1 : NAN);
        fputs(" |", f);
        int ok = vp->status != TRIAL_FAILED;
        for (int c = 0; c < sp->n_constraints; c++) {
            fputc(' ', f);
            md_num(f, tp ? tp->cons[c] : NAN);
            fputs(" | ", f);
            md_num(f, vp->cons[c]);
            fputs(" |", f);
            observation one = vp->obs;
            one.cons = &vp->cons[c];
            if (ok && !observation_feasible(&one, d->vrc + c, 1)) ok = 0;
        }
        fputc(' ', f);
        md_speedup(f, d, vp);
        fprintf(f, " | %s%s |\n",
                vp->status == TRIAL_FAILED ? "failed"
                : ok                       ? "meets the constraints"
                                           : "breaks a constraint",
                p == d->chosen ? " (chosen)" : "");
    }
    fputc('\n', f);
}

static void md_point_row(FILE *f, const report_data *d, int rank, int p, const char *label) {
    const point_stats *ps = &d->t->points[p];
    char r[16] = "-";
    if (rank > 0) snprintf(r, sizeof r, "%d", rank);
    fprintf(f, "| %s | %s | ", r, label);
    md_num(f, ps->objective);
    if (ps->objective_sd > 0) fprintf(f, " ± %.3g", ps->objective_sd);
    for (int c = 0; c < d->sp->n_constraints; c++) {
        fputs(" | ", f);
        md_num(f, ps->cons[c]);
    }
    fprintf(f, " | %d |", ps->n_runs);
    for (int k = 0; k < d->sp->n_params; k++)
        fprintf(f, " %s |", point_value(ps, d->sp->params[k].name));
    fputc(' ', f);
    point_note(f, d, ps, !strcmp(label, "feasible"));
    fprintf(f, "%s%s |\n", ps->baseline ? " (baseline)" : "", p == d->chosen ? " **chosen**" : "");
}

static void md_table_head(FILE *f, const report_data *d) {
    fprintf(f, "| rank | status | %s |", d->sp->objective);
    for (int c = 0; c < d->sp->n_constraints; c++)
        fprintf(f, " %s |", d->sp->constraints[c].metric);
    fputs(" runs |", f);
    for (int k = 0; k < d->sp->n_params; k++)
        fprintf(f, " %s |", d->sp->params[k].name);
    fputs(" note |\n|---|---|---|", f);
    for (int c = 0; c < d->sp->n_constraints + 1 + d->sp->n_params; c++)
        fputs("---|", f);
    fputs("---|\n", f);
}

/* Failed and infinite runs grouped by their reason, with their trial ids. */
static void md_failures(FILE *f, const report_data *d) {
    const trial_table *tabs[] = {d->t, d->vt};
    const char *reasons[256];
    int counts[256], n_reasons = 0, n_failed = 0, n_inf = 0;
    char *ids[256];
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < tabs[k]->n_points; p++)
            for (int r = 0; r < tabs[k]->points[p].n_runs; r++) {
                const cJSON *run = tabs[k]->points[p].runs[r];
                const cJSON *st = cJSON_GetObjectItemCaseSensitive(run, "status");
                const cJSON *why = cJSON_GetObjectItemCaseSensitive(run, "reason");
                const cJSON *id = cJSON_GetObjectItemCaseSensitive(run, "id");
                if (!cJSON_IsString(st) || !strcmp(st->valuestring, "ok")) continue;
                int failed = !strcmp(st->valuestring, "failed");
                n_failed += failed, n_inf += !failed;
                char *text = xasprintf("%s: %s", failed ? "failed" : "infinite metric",
                                       cJSON_IsString(why) ? why->valuestring : "(no reason)");
                int j = 0;
                while (j < n_reasons && strcmp(reasons[j], text))
                    j++;
                if (j == n_reasons && n_reasons < 256) {
                    reasons[n_reasons] = text, counts[n_reasons] = 0, ids[n_reasons] = xstrdup("");
                    n_reasons++;
                } else {
                    free(text);
                    if (j == n_reasons) continue;
                }
                counts[j]++;
                if (counts[j] <= 8) {
                    char *more = xasprintf("%s%s%d", ids[j], counts[j] > 1 ? ", " : "",
                                           cJSON_IsNumber(id) ? id->valueint : 0);
                    free(ids[j]);
                    ids[j] = more;
                }
            }
    fprintf(f, "## Failures and their reasons\n\n");
    if (!n_reasons) {
        fprintf(f, "Every run produced a finite result.\n\n");
        return;
    }
    fprintf(f,
            "%d runs failed (no result: crash, timeout, bad output) and %d reported an infinite "
            "metric (measured, never feasible). Each engine log is `logs/<trial id>.log` in the "
            "study folder.\n\n| runs | kind: reason | trial ids |\n|---|---|---|\n",
            n_failed, n_inf);
    for (int j = 0; j < n_reasons; j++) {
        fprintf(f, "| %d | ", counts[j]);
        md_text(f, reasons[j]);
        fprintf(f, " | %s%s |\n", ids[j], counts[j] > 8 ? ", ..." : "");
        free((char *)reasons[j]);
        free(ids[j]);
    }
    fputc('\n', f);
}

static void md_write(FILE *f, const report_data *d) {
    const space *sp = d->sp;
    const trial_table *t = d->t;
    int n_failed = 0, n_inf = 0;
    for (int p = 0; p < t->n_points; p++)
        n_failed += t->points[p].status == TRIAL_FAILED,
            n_inf += t->points[p].status == TRIAL_INFEASIBLE;
    char when[32];
    time_iso_utc(when, sizeof when);
    fprintf(f, "# Study `%s`\n\n", d->study_name);
    fprintf(f,
            "Written by `tuner report` at %s from `%s`: %d runs of %d points on the tuning "
            "prompts (%d feasible, %d over a constraint, of which %d with an infinite metric, %d "
            "failed), %d held-out verification runs; study wall time %.0f s.\n\n",
            when, d->study_dir, t->n_runs, t->n_points, d->n_feasible,
            t->n_points - d->n_feasible - n_failed, n_inf, n_failed, d->vt->n_runs,
            t->study_elapsed);
    fprintf(f, "Objective: %s `%s`.", sp->maximize ? "maximize" : "minimize", sp->objective);
    for (int c = 0; c < sp->n_constraints; c++) {
        fprintf(f, " Constraint `%s`: bound ", sp->constraints[c].text);
        md_num(f, d->rc[c].bound);
        fputs(".", f);
    }
    fputs("\n\n", f);
    md_outcome(f, d);
    const char *xm = d->x_con >= 0 ? sp->constraints[d->x_con].metric : "point number";
    fprintf(f, "## Every point, %s against %s\n\n![%s against %s](plot.png)\n\n", sp->objective, xm,
            sp->objective, xm);
    fprintf(f,
            "Each dot is one point (median over its repeats on the tuning prompts): blue "
            "feasible, grey over a constraint, purple an infinite %s drawn at the right edge; "
            "the dashed red line is the budget, the green line the feasible Pareto front, orange "
            "arrows go from a candidate's measured to its held-out verified figures (a "
            "different record set, so %s moves too; a relative budget is re-based on the "
            "baseline's held-out re-run, the dotted orange line when that moves it), the black "
            "square is the baseline and the red cross the chosen point. `plot.gp` and the "
            "`*.dat` files beside this file redraw it.\n\n",
            xm, xm);
    md_verification(f, d);
    report_conditions_md(f, d);
    report_nodes_md(f, d);
    fprintf(f, "## Feasible Pareto front\n\n");
    if (d->n_pareto == 0) {
        fprintf(f, "No feasible point.\n\n");
    } else {
        fprintf(f,
                "No other feasible point is at least as good on both %s and %s: the best %s "
                "for each quality level.\n\n",
                sp->objective, xm, sp->objective);
        md_table_head(f, d);
        for (int k = 0; k < d->n_pareto; k++) {
            int rank = 0;
            while (d->order[rank] != d->pareto[k])
                rank++;
            md_point_row(f, d, rank + 1, d->pareto[k], "feasible");
        }
        fputc('\n', f);
    }
    fprintf(f, "## Every point\n\nFeasible best first, then over a constraint, then failed.\n\n");
    md_table_head(f, d);
    for (int k = 0; k < t->n_points; k++) {
        int p = d->order[k];
        const char *label = k < d->n_feasible                     ? "feasible"
                            : t->points[p].status == TRIAL_FAILED ? "failed"
                                                                  : "infeasible";
        md_point_row(f, d, k < d->n_feasible ? k + 1 : 0, p, label);
    }
    fputc('\n', f);
    md_failures(f, d);
    md_knob_effects(f, d);
}

/* ---- the command --------------------------------------------------------------------- */

/* The strategy's name from the study's space.json ("?" when unreadable). */
static const char *study_strategy(const char *dir, char *buf, size_t n) {
    char err[ERR_LEN];
    char *path = xasprintf("%s/space.json", dir);
    char *text = input_read(path, INPUT_MAX_DOCUMENT, NULL, err, sizeof err);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    const cJSON *name = jget(j, "strategy", "name");
    snprintf(buf, n, "%s", cJSON_IsString(name) ? name->valuestring : "?");
    cJSON_Delete(j);
    free(text);
    free(path);
    return buf;
}

/* The tuning point the manifest chose, or -1. */
static int chosen_point(const trial_table *t, const space *sp, const cJSON *m) {
    const cJSON *pt = cJSON_GetObjectItemCaseSensitive(m, "point");
    if (!cJSON_IsObject(pt)) return -1;
    for (int p = 0; p < t->n_points; p++) {
        int same = 1;
        for (int k = 0; k < sp->n_params && same; k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(pt, sp->params[k].name);
            same = cJSON_IsString(v) &&
                   !strcmp(v->valuestring, point_value(&t->points[p], sp->params[k].name));
        }
        if (same) return p;
    }
    return -1;
}

int report_main(const char *study, const char *out_dir, FILE *out, int to_stdout) {
    char err[ERR_LEN] = "";
    char *dir = study_dir_find(study, out_dir);
    const char *name = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
    char *meta_path = xasprintf("%s/study.json", dir);
    char *trials_path = xasprintf("%s/trials.jsonl", dir);
    char *manifest_path = xasprintf("%s/manifest.json", dir);
    char *report_dir = xasprintf("%s/report", dir);
    char *md_path = xasprintf("%s/report.md", report_dir);
    space *sp = NULL;
    trial_table *t = NULL, *vt = NULL;
    cJSON **recs = NULL, *manifest = NULL;
    int n_recs = 0, rc_exit = 1, *order = NULL, *front = NULL;
    resolved_constraint *rc = NULL, *vrc = NULL;
    char *md = NULL, strategy[64];
    size_t md_len = 0;

    if (!dir_exists(dir)) {
        fprintf(stderr, "%s: no study folder %s (give a study name under %s/ or a folder)\n",
                util_progname, dir, out_dir);
        goto done;
    }
    sp = study_space_load(meta_path, err, sizeof err);
    if (!sp || err[0]) goto fail;
    if (!journal_load(trials_path, 0, &recs, &n_recs, err, sizeof err)) goto fail;
    t = trials_new(sp);
    vt = trials_new_verify(sp);
    for (int i = 0; i < n_recs; i++) {
        char where[600];
        snprintf(where, sizeof where, "%s:%d", trials_path, i + 1);
        if (trials_add(t, recs[i], where, err, sizeof err) == TRIALS_BAD ||
            trials_add(vt, recs[i], where, err, sizeof err) == TRIALS_BAD)
            goto fail;
    }
    if (access(manifest_path, F_OK) == 0) {
        char *text = input_read(manifest_path, INPUT_MAX_DOCUMENT, NULL, err, sizeof err);
        if (!text) goto fail;
        manifest = cJSON_Parse(text);
        free(text);
        if (!cJSON_IsObject(manifest)) {
            snprintf(err, sizeof err, "%s: not a JSON object (a damaged manifest?)", manifest_path);
            goto fail;
        }
    }
    rc = xcalloc((size_t)sp->n_constraints + 1, sizeof *rc);
    const char *why;
    trials_resolve(t, rc, &why);
    /* The held-out runs are judged as the sweep judges them: relative bounds from the
     * baseline's own held-out re-run when there is one, else the tuning bounds. */
    for (int p = 0; p < t->n_points; p++) {
        int v = t->points[p].baseline ? trials_find(vt, t->points[p].levels) : -1;
        if (v >= 0) vt->points[v].baseline = 1;
    }
    vrc = xcalloc((size_t)sp->n_constraints + 1, sizeof *vrc);
    trials_resolve(vt, vrc, &why);
    for (int c = 0; c < sp->n_constraints; c++)
        if (isnan(vrc[c].bound)) vrc[c] = rc[c];
    order = xmalloc((size_t)(t->n_points + 1) * sizeof *order);
    front = xmalloc((size_t)(t->n_points + 1) * sizeof *front);
    report_data d = {
        .study_dir = dir,
        .report_dir = report_dir,
        .study_name = name,
        .sp = sp,
        .t = t,
        .vt = vt,
        .rc = rc,
        .vrc = vrc,
        .order = order,
        .x_con = sp->n_constraints > 0 ? 0 : -1,
        .manifest = manifest,
    };
    d.n_feasible = trials_order(t, rc, order);
    d.strategy = study_strategy(dir, strategy, sizeof strategy);
    d.chosen = manifest ? chosen_point(t, sp, manifest) : -1;
    d.n_pareto = pareto_front(&d, front);
    d.pareto = front;

    FILE *f = open_memstream(&md, &md_len);
    CHECK(f);
    md_write(f, &d);
    fclose(f);
    if (to_stdout) {
        fputs(md, out);
        rc_exit = fflush(out) == 0 ? 0 : 1;
        goto done;
    }
    if (!dir_make(report_dir, err, sizeof err)) goto fail;
    if (!file_write_atomic(md_path, md, err, sizeof err)) goto fail;
    if (!report_plot_write(&d, err, sizeof err) || !report_conditions_plot(&d, err, sizeof err)) {
        fprintf(stderr, "%s: %s (report.md is written: %s)\n", util_progname, err, md_path);
        goto done;
    }
    fprintf(stderr, "%s: report of %d points (%d feasible) in %s/\n", util_progname, t->n_points,
            d.n_feasible, report_dir);
    fprintf(out, "%s\n", md_path);
    rc_exit = 0;
    goto done;
fail:
    fprintf(stderr, "%s: %s\n", util_progname, err);
done:
    free(md);
    free(order);
    free(front);
    free(rc);
    free(vrc);
    trials_free(t);
    trials_free(vt);
    for (int i = 0; i < n_recs; i++)
        cJSON_Delete(recs[i]);
    free(recs);
    cJSON_Delete(manifest);
    study_space_free(sp);
    free(meta_path);
    free(trials_path);
    free(manifest_path);
    free(md_path);
    free(report_dir);
    free(dir);
    return rc_exit;
}
