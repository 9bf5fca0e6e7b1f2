/* show.c: `tuner show STUDY`; see show.h.
 *
 * The table is built with the same code the sweep uses (trials.c) over a space that is
 * rebuilt from study.json with just what aggregation needs: the objective and its
 * direction, the constraints, the knob names and the repeats. Rows: feasible points best
 * first, then measured points that break a constraint (with the constraint they break),
 * then failed points with the engine's reason. Below it, when the study has reached its
 * verification, the held-out re-runs of the candidates: measured against verified
 * objective, the spread and the gap, the verified constraint metrics and whether they
 * still meet the budget; then the manifest's pick and its warnings, when it exists.
 */
#include "show.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "input.h"
#include "journal.h"
#include "sweep.h"
#include "trials.h"
#include "util.h"

enum { ERR_LEN = 2048 };

char *study_dir_find(const char *study, const char *out_dir) {
    char *probe = xasprintf("%s/study.json", study);
    char *dir = strchr(study, '/') || access(probe, F_OK) == 0 ? xstrdup(study)
                                                               : xasprintf("%s/%s", out_dir, study);
    free(probe);
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        dir[--len] = '\0';
    return dir;
}

/* The parts of a space that study.json records (see journal.c). */
space *study_space_load(const char *path, char *err, size_t errlen) {
    char *text = input_read(path, INPUT_MAX_DOCUMENT, NULL, err, errlen);
    if (!text) return NULL;
    cJSON *m = cJSON_Parse(text);
    free(text);
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(m, "objective");
    const cJSON *dir = cJSON_GetObjectItemCaseSensitive(m, "direction");
    const cJSON *cons = cJSON_GetObjectItemCaseSensitive(m, "constraints");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(m, "parameters");
    const cJSON *rep = cJSON_GetObjectItemCaseSensitive(m, "repeats");
    if (!cJSON_IsString(obj) || !cJSON_IsString(dir) || !cJSON_IsArray(cons) ||
        !cJSON_IsArray(params) || !cJSON_IsNumber(rep)) {
        snprintf(err, errlen,
                 "%s: not a study description (objective, direction, constraints, "
                 "parameters, repeats)",
                 path);
        cJSON_Delete(m);
        return NULL;
    }
    space *sp = xcalloc(1, sizeof *sp);
    sp->path = xstrdup(path);
    sp->objective = xstrdup(obj->valuestring);
    sp->maximize = strcmp(dir->valuestring, "maximize") == 0;
    sp->repeats = rep->valueint;
    sp->n_constraints = cJSON_GetArraySize(cons);
    sp->constraints = xcalloc((size_t)sp->n_constraints + 1, sizeof *sp->constraints);
    int i = 0, bad = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cons) {
        constraint_def *d = &sp->constraints[i++];
        const cJSON *metric = cJSON_GetObjectItemCaseSensitive(c, "metric");
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(c, "op");
        const cJSON *value = cJSON_GetObjectItemCaseSensitive(c, "value");
        const cJSON *txt = cJSON_GetObjectItemCaseSensitive(c, "text");
        if (!cJSON_IsString(metric) || !cJSON_IsString(op) || !cJSON_IsNumber(value)) {
            bad = 1;
            d->metric = xstrdup("?");
            continue;
        }
        d->metric = xstrdup(metric->valuestring);
        d->op = !strcmp(op->valuestring, "<=")   ? OP_LE
                : !strcmp(op->valuestring, "<")  ? OP_LT
                : !strcmp(op->valuestring, ">=") ? OP_GE
                                                 : OP_GT;
        d->value = value->valuedouble;
        d->relative = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "relative"));
        d->text = xstrdup(cJSON_IsString(txt) ? txt->valuestring : "");
    }
    sp->n_params = cJSON_GetArraySize(params);
    sp->params = xcalloc((size_t)sp->n_params + 1, sizeof *sp->params);
    i = 0;
    cJSON_ArrayForEach(c, params) {
        sp->params[i++].name = xstrdup(cJSON_IsString(c) ? c->valuestring : "?");
        if (!cJSON_IsString(c)) bad = 1;
    }
    cJSON_Delete(m);
    if (bad) snprintf(err, errlen, "%s: a constraint or parameter entry is malformed", path);
    return sp; /* bad entries are reported by the caller through err[0] */
}

void study_space_free(space *sp) {
    if (!sp) return;
    free(sp->path);
    free(sp->objective);
    for (int i = 0; i < sp->n_constraints; i++) {
        free(sp->constraints[i].metric);
        free(sp->constraints[i].text);
    }
    free(sp->constraints);
    for (int i = 0; i < sp->n_params; i++)
        free(sp->params[i].name);
    free(sp->params);
    free(sp);
}

/* Why a measured point is not feasible: the first constraint it breaks. */
static void broken_constraint(const point_stats *p, const resolved_constraint *rc, int n, char *buf,
                              size_t len) {
    static const char *neg[] = {">", ">=", "<", "<="};
    buf[0] = '\0';
    for (int c = 0; c < n; c++) {
        observation one = p->obs; /* the point judged on constraint c alone */
        one.cons = &p->cons[c];
        if (observation_feasible(&one, rc + c, 1)) continue;
        if (isnan(rc[c].bound))
            snprintf(buf, len, "%s: bound not resolved (no baseline)", rc[c].def->metric);
        else
            snprintf(buf, len, "%s %.6g %s bound %.6g (%s)", rc[c].def->metric, p->cons[c],
                     neg[rc[c].def->op], rc[c].bound, rc[c].def->text);
        return;
    }
}

static void print_num(FILE *out, double v, int width) {
    if (isnan(v))
        fprintf(out, " %*s", width, "-");
    else if (isinf(v))
        fprintf(out, " %*s", width, "inf");
    else
        fprintf(out, " %*.6g", width, v);
}

/* The verification section: the held-out re-runs (phase verify) grouped by point, best
 * verified first, and the manifest's pick with its warnings. */
static void show_verification(const trial_table *t, cJSON **recs, int n_recs,
                              const char *trials_path, const char *dir, FILE *out) {
    const space *sp = t->sp;
    char err[ERR_LEN];
    trial_table *vt = trials_new_verify(sp);
    for (int i = 0; i < n_recs; i++)
        if (trials_add(vt, recs[i], trials_path, err, sizeof err) == TRIALS_BAD) {
            trials_free(vt);
            return; /* already reported by the tuning table's pass */
        }
    if (vt->n_points == 0) {
        trials_free(vt);
        return;
    }
    /* The baseline of the relative bounds is the tuning baseline's point, re-run. */
    for (int i = 0; i < t->n_points; i++) {
        if (!t->points[i].baseline) continue;
        int v = trials_find(vt, t->points[i].levels);
        if (v >= 0) vt->points[v].baseline = 1;
    }
    resolved_constraint *vrc = xcalloc((size_t)sp->n_constraints + 1, sizeof *vrc);
    const char *why;
    trials_resolve(vt, vrc, &why);
    int *order = xmalloc((size_t)vt->n_points * sizeof *order);
    int n_ok = trials_order(vt, vrc, order);
    const cJSON *set = cJSON_GetObjectItemCaseSensitive(vt->points[0].runs[0], "prompt_set");
    fprintf(out, "\nverification on the %s prompts: %d runs of %d points, %d still feasible\n",
            cJSON_IsString(set) ? set->valuestring : "held-out", vt->n_runs, vt->n_points, n_ok);
    fprintf(out, "%-10s %12s %12s %10s %8s", "verdict", "measured", "verified", "sd", "gap");
    for (int c = 0; c < sp->n_constraints; c++)
        fprintf(out, " %10s", sp->constraints[c].metric);
    fprintf(out, " %5s  %-s\n", "runs", "point");
    for (int k = 0; k < vt->n_points; k++) {
        const point_stats *v = &vt->points[order[k]];
        int ti = trials_find(t, v->levels);
        double measured = ti >= 0 ? t->points[ti].objective : NAN;
        double gap = isfinite(measured) && measured != 0 && isfinite(v->objective)
                         ? v->objective / measured - 1
                         : NAN;
        fprintf(out, "%-10s", k < n_ok ? "kept" : v->status == TRIAL_FAILED ? "failed" : "dropped");
        print_num(out, measured, 12);
        print_num(out, v->objective, 12);
        print_num(out, v->objective_sd, 10);
        if (isfinite(gap))
            fprintf(out, " %+7.1f%%", 100 * gap);
        else
            fprintf(out, " %8s", "-");
        for (int c = 0; c < sp->n_constraints; c++)
            print_num(out, v->cons[c], 10);
        fprintf(out, " %5d  %s%s\n", v->n_runs, v->key, v->baseline ? " (baseline)" : "");
        char broken[512];
        if (k >= n_ok && v->status != TRIAL_FAILED) {
            broken_constraint(v, vrc, sp->n_constraints, broken, sizeof broken);
            if (v->status == TRIAL_INFEASIBLE && v->reason)
                fprintf(out, "%33s reason: %s\n", "", v->reason);
            else if (broken[0])
                fprintf(out, "%33s breaks: %s\n", "", broken);
        } else if (v->status == TRIAL_FAILED && v->reason) {
            fprintf(out, "%33s reason: %s\n", "", v->reason);
        }
    }
    free(order);
    free(vrc);
    trials_free(vt);
    /* The manifest's pick, when the study has one. */
    char *mp = xasprintf("%s/manifest.json", dir);
    char *text =
        access(mp, F_OK) == 0 ? input_read(mp, INPUT_MAX_DOCUMENT, NULL, err, sizeof err) : NULL;
    cJSON *m = text ? cJSON_Parse(text) : NULL;
    const cJSON *pt = cJSON_GetObjectItemCaseSensitive(m, "point");
    if (cJSON_IsObject(pt)) {
        fprintf(out, "manifest %s:", mp);
        const cJSON *item;
        cJSON_ArrayForEach(item, pt) {
            if (cJSON_IsString(item)) fprintf(out, " %s=%s", item->string, item->valuestring);
        }
        fputc('\n', out);
        const cJSON *sum = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(m, "verification"), "summary");
        if (cJSON_IsString(sum)) fprintf(out, "answer: %s\n", sum->valuestring);
        cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(m, "warnings")) {
            if (cJSON_IsString(item)) fprintf(out, "warning: %s\n", item->valuestring);
        }
    }
    cJSON_Delete(m);
    free(text);
    free(mp);
}

int show_main(const char *study, const char *out_dir, FILE *out) {
    char err[ERR_LEN] = "";
    char *dir = study_dir_find(study, out_dir);
    char *meta_path = xasprintf("%s/study.json", dir);
    char *trials_path = xasprintf("%s/trials.jsonl", dir);
    space *sp = NULL;
    trial_table *t = NULL;
    cJSON **recs = NULL;
    int n_recs = 0, rc_exit = 1;
    int *order = NULL;
    resolved_constraint *rc = NULL;
    if (!dir_exists(dir)) {
        fprintf(stderr, "%s: no study folder %s (give a study name under %s/ or a folder)\n",
                util_progname, dir, out_dir);
        goto done;
    }
    sp = study_space_load(meta_path, err, sizeof err);
    if (!sp || err[0]) {
        fprintf(stderr, "%s: %s\n", util_progname, err);
        goto done;
    }
    if (!journal_load(trials_path, 0, &recs, &n_recs, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", util_progname, err);
        goto done;
    }
    t = trials_new(sp);
    for (int i = 0; i < n_recs; i++) {
        char where[600];
        snprintf(where, sizeof where, "%s:%d", trials_path, i + 1);
        if (trials_add(t, recs[i], where, err, sizeof err) == TRIALS_BAD) {
            fprintf(stderr, "%s: %s\n", util_progname, err);
            goto done;
        }
    }
    rc = xcalloc((size_t)sp->n_constraints + 1, sizeof *rc);
    const char *why;
    trials_resolve(t, rc, &why);
    order = xmalloc((size_t)(t->n_points + 1) * sizeof *order);
    int n_feasible = trials_order(t, rc, order);

    fprintf(out, "study %s: %d runs of %d points, %d feasible; %s %s\n", dir, t->n_runs,
            t->n_points, n_feasible, sp->maximize ? "maximize" : "minimize", sp->objective);
    for (int c = 0; c < sp->n_constraints; c++) {
        fprintf(out, "constraint %s: bound", sp->constraints[c].text);
        print_num(out, rc[c].bound, 0);
        fputc('\n', out);
    }
    fprintf(out, "%4s %-10s %12s", "rank", "status", sp->objective);
    for (int c = 0; c < sp->n_constraints; c++)
        fprintf(out, " %10s", sp->constraints[c].metric);
    fprintf(out, " %5s  %-s\n", "runs", "point / reason");
    for (int k = 0; k < t->n_points; k++) {
        const point_stats *p = &t->points[order[k]];
        const char *label = k < n_feasible              ? "feasible"
                            : p->status == TRIAL_FAILED ? "failed"
                                                        : "infeasible";
        char rank[16] = "-";
        if (k < n_feasible) snprintf(rank, sizeof rank, "%d", k + 1);
        fprintf(out, "%4s %-10s", rank, label);
        print_num(out, p->objective, 12);
        for (int c = 0; c < sp->n_constraints; c++)
            print_num(out, p->cons[c], 10);
        fprintf(out, " %5d  %s%s\n", p->n_runs, p->key,
                p->baseline                                 ? " (baseline)"
                : p->phase && strcmp(p->phase, "warm") == 0 ? " (warm start)"
                                                            : "");
        char broken[512];
        if (k >= n_feasible && p->status != TRIAL_FAILED) {
            broken_constraint(p, rc, sp->n_constraints, broken, sizeof broken);
            if (p->status == TRIAL_INFEASIBLE && p->reason)
                fprintf(out, "%33s reason: %s\n", "", p->reason);
            else if (broken[0])
                fprintf(out, "%33s breaks: %s\n", "", broken);
        } else if (p->status == TRIAL_FAILED && p->reason) {
            fprintf(out, "%33s reason: %s\n", "", p->reason);
        }
    }
    show_verification(t, recs, n_recs, trials_path, dir, out);
    rc_exit = 0;

done:
    free(order);
    free(rc);
    trials_free(t);
    for (int i = 0; i < n_recs; i++)
        cJSON_Delete(recs[i]);
    free(recs);
    study_space_free(sp);
    free(meta_path);
    free(trials_path);
    free(dir);
    return rc_exit;
}
