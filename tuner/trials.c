/* trials.c: trial records grouped by point and aggregated over repeats; see trials.h. */
#include "trials.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "util.h"

const char *trial_status_name(trial_status s) {
    switch (s) {
    case TRIAL_OK:
        return "ok";
    case TRIAL_INFEASIBLE:
        return "infeasible";
    case TRIAL_FAILED:
        return "failed";
    }
    return "?";
}

trial_table *trials_new(const space *sp) {
    trial_table *t = xcalloc(1, sizeof *t);
    t->sp = sp;
    return t;
}

trial_table *trials_new_verify(const space *sp) {
    trial_table *t = trials_new(sp);
    t->verify = 1;
    return t;
}

void trials_free(trial_table *t) {
    if (!t) return;
    for (int i = 0; i < t->n_points; i++) {
        point_stats *p = &t->points[i];
        free(p->key);
        free(p->levels);
        free(p->runs);
        free(p->cons);
    }
    free(t->points);
    free(t);
}

int trials_find(const trial_table *t, const int *levels) {
    size_t bytes = (size_t)t->sp->n_params * sizeof *levels;
    for (int i = 0; i < t->n_points; i++)
        if (memcmp(t->points[i].levels, levels, bytes) == 0) return i;
    return -1;
}

/* A metric of a record as a number: NAN when absent or not a number, INFINITY when null. */
static double record_metric(const cJSON *rec, const char *name) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(rec, "metrics");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, name);
    if (cJSON_IsNull(v)) return INFINITY;
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static int record_status(const cJSON *rec, trial_status *s) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, "status");
    if (!cJSON_IsString(v)) return 0;
    if (strcmp(v->valuestring, "ok") == 0)
        *s = TRIAL_OK;
    else if (strcmp(v->valuestring, "infeasible") == 0)
        *s = TRIAL_INFEASIBLE;
    else if (strcmp(v->valuestring, "failed") == 0)
        *s = TRIAL_FAILED;
    else
        return 0;
    return 1;
}

/* Median of the first n values of v (reordered); NAN when n == 0. */
static double median_of(double *v, int n) {
    if (n == 0) return NAN;
    gsl_sort(v, 1, (size_t)n);
    return gsl_stats_median_from_sorted_data(v, 1, (size_t)n);
}

/* Recompute the aggregate of point p from its runs. */
static void point_aggregate(const trial_table *t, point_stats *p) {
    const space *sp = t->sp;
    double *vals = xmalloc((size_t)(p->n_runs + 1) * sizeof *vals);
    int n = 0;
    p->reason = NULL;
    for (int r = 0; r < p->n_runs; r++) {
        trial_status s = TRIAL_FAILED;
        record_status(p->runs[r], &s);
        const cJSON *why = cJSON_GetObjectItemCaseSensitive(p->runs[r], "reason");
        if (cJSON_IsString(why)) p->reason = why->valuestring;
        if (s != TRIAL_FAILED) vals[n++] = record_metric(p->runs[r], sp->objective);
    }
    p->n_measured = n;
    if (n > 0) {
        p->objective = median_of(vals, n); /* vals now sorted */
        p->objective_min = vals[0];
        p->objective_max = vals[n - 1];
        p->objective_sd = n > 1 && isfinite(vals[0]) && isfinite(vals[n - 1])
                              ? gsl_stats_sd(vals, 1, (size_t)n)
                              : 0.0;
    } else {
        p->objective = p->objective_min = p->objective_max = NAN;
        p->objective_sd = 0.0;
    }
    int all_finite = n > 0 && isfinite(p->objective);
    for (int c = 0; c < sp->n_constraints; c++) {
        int k = 0;
        for (int r = 0; r < p->n_runs; r++) {
            trial_status s = TRIAL_FAILED;
            record_status(p->runs[r], &s);
            if (s != TRIAL_FAILED) vals[k++] = record_metric(p->runs[r], sp->constraints[c].metric);
        }
        p->cons[c] = median_of(vals, k);
        if (!isfinite(p->cons[c])) all_finite = 0;
    }
    free(vals);
    p->status = n == 0 ? TRIAL_FAILED : all_finite ? TRIAL_OK : TRIAL_INFEASIBLE;
    p->obs.levels = p->levels;
    p->obs.status = p->status;
    p->obs.objective = p->status == TRIAL_OK ? p->objective : NAN;
    p->obs.cons = p->cons;
    p->obs.objective_sd = p->objective_sd;
    p->obs.n_runs = p->n_runs;
}

int trials_add(trial_table *t, const cJSON *rec, const char *where, char *err, size_t errlen) {
    const space *sp = t->sp;
    const cJSON *point = cJSON_GetObjectItemCaseSensitive(rec, "point");
    const cJSON *levels = cJSON_GetObjectItemCaseSensitive(rec, "levels");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(rec, "id");
    trial_status st;
    if (!cJSON_IsObject(point) || !cJSON_IsArray(levels) || !cJSON_IsNumber(id) ||
        !record_status(rec, &st)) {
        snprintf(err, errlen, "%s: trial record lacks id, point, levels or a valid status", where);
        return -1;
    }
    /* ids are counts the tuner gave: whole numbers, far below 2^53 (a cast of anything else to
     * long would be undefined) */
    if (!(id->valuedouble >= 0 && id->valuedouble <= 9007199254740992.0) ||
        id->valuedouble != floor(id->valuedouble)) {
        snprintf(err, errlen, "%s: trial id %g is not a whole number from 0 to 2^53", where,
                 id->valuedouble);
        return -1;
    }
    if (cJSON_GetArraySize(levels) != sp->n_params || cJSON_GetArraySize(point) != sp->n_params) {
        snprintf(err, errlen, "%s: trial has %d knobs, the space has %d", where,
                 cJSON_GetArraySize(levels), sp->n_params);
        return -1;
    }
    int *lv = xmalloc((size_t)sp->n_params * sizeof *lv);
    size_t keylen = 1;
    for (int i = 0; i < sp->n_params; i++) {
        const cJSON *l = cJSON_GetArrayItem(levels, i);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(point, sp->params[i].name);
        int n_levels = sp->params[i].n_levels;
        if (!cJSON_IsNumber(l) || l->valueint < 0 || (n_levels > 0 && l->valueint >= n_levels) ||
            !cJSON_IsString(v)) {
            snprintf(err, errlen, "%s: knob %s of the trial is not a level of the space", where,
                     sp->params[i].name);
            free(lv);
            return -1;
        }
        lv[i] = l->valueint;
        keylen += strlen(sp->params[i].name) + strlen(v->valuestring) + 2;
    }
    const cJSON *el = cJSON_GetObjectItemCaseSensitive(rec, "study_elapsed_s");
    if (cJSON_IsNumber(el) && el->valuedouble > t->study_elapsed)
        t->study_elapsed = el->valuedouble;
    if ((long)id->valuedouble > t->max_id) t->max_id = (long)id->valuedouble;
    const cJSON *phase = cJSON_GetObjectItemCaseSensitive(rec, "phase");
    const char *ph = cJSON_IsString(phase) ? phase->valuestring : "search";
    int is_verify = strcmp(ph, "verify") == 0;
    int is_tuning = !strcmp(ph, "baseline") || !strcmp(ph, "search") || !strcmp(ph, "warm");
    if (t->verify ? !is_verify : !is_tuning) {
        free(lv); /* a phase this table does not aggregate */
        return TRIALS_OTHER_PHASE;
    }
    int idx = trials_find(t, lv);
    if (idx < 0) {
        t->points = xrealloc(t->points, (size_t)(t->n_points + 1) * sizeof *t->points);
        idx = t->n_points++;
        point_stats *p = &t->points[idx];
        memset(p, 0, sizeof *p);
        p->levels = lv;
        p->phase = ph;
        p->cons = xcalloc((size_t)sp->n_constraints + 1, sizeof *p->cons);
        p->key = xmalloc(keylen);
        p->key[0] = '\0';
        for (int i = 0; i < sp->n_params; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(point, sp->params[i].name);
            if (i) strcat(p->key, ",");
            strcat(p->key, sp->params[i].name);
            strcat(p->key, "=");
            strcat(p->key, v->valuestring);
        }
    } else {
        free(lv);
    }
    point_stats *p = &t->points[idx];
    p->runs = xrealloc(p->runs, (size_t)(p->n_runs + 1) * sizeof *p->runs);
    p->runs[p->n_runs++] = rec;
    if (!t->verify && strcmp(ph, "baseline") == 0) p->baseline = 1;
    if (t->verify && sp->baseline &&
        memcmp(p->levels, sp->baseline, (size_t)sp->n_params * sizeof *p->levels) == 0)
        p->baseline = 1;
    t->n_runs++;
    point_aggregate(t, p);
    return idx;
}

int trials_resolve(const trial_table *t, resolved_constraint *rc, const char **why) {
    const space *sp = t->sp;
    const point_stats *base = NULL;
    for (int i = 0; i < t->n_points; i++)
        if (t->points[i].baseline) base = &t->points[i];
    int ok = 1;
    *why = NULL;
    for (int c = 0; c < sp->n_constraints; c++) {
        rc[c].def = &sp->constraints[c];
        rc[c].bound = sp->constraints[c].value;
        if (!sp->constraints[c].relative) continue;
        if (!base) {
            rc[c].bound = NAN;
            *why = "the baseline point has not been measured";
            ok = 0;
        } else if (base->status == TRIAL_FAILED) {
            rc[c].bound = NAN;
            *why = "every run of the baseline point failed";
            ok = 0;
        } else if (!isfinite(base->cons[c])) {
            rc[c].bound = NAN;
            *why = "the baseline point reported the constraint's metric as infinite";
            ok = 0;
        } else {
            rc[c].bound = sp->constraints[c].value * base->cons[c];
        }
    }
    return ok;
}

int trials_better(const trial_table *t, double value, double other) {
    if (isnan(value)) return 0;
    if (isnan(other)) return 1;
    return t->sp->maximize ? value > other : value < other;
}

static const trial_table *sort_table; /* qsort has no context argument in C11 */
static const resolved_constraint *sort_rc;

/* 0: feasible, 1: measured but infeasible, 2: failed. */
static int point_class(const point_stats *p) {
    if (p->status == TRIAL_FAILED) return 2;
    return observation_feasible(&p->obs, sort_rc, sort_table->sp->n_constraints) ? 0 : 1;
}

static int point_cmp(const void *a, const void *b) {
    const point_stats *p = &sort_table->points[*(const int *)a];
    const point_stats *q = &sort_table->points[*(const int *)b];
    int ca = point_class(p), cb = point_class(q);
    if (ca != cb) return ca - cb;
    if (trials_better(sort_table, p->objective, q->objective)) return -1;
    if (trials_better(sort_table, q->objective, p->objective)) return 1;
    return *(const int *)a - *(const int *)b; /* stable: earlier point first */
}

int trials_order(const trial_table *t, const resolved_constraint *rc, int *order) {
    for (int i = 0; i < t->n_points; i++)
        order[i] = i;
    sort_table = t;
    sort_rc = rc;
    qsort(order, (size_t)t->n_points, sizeof *order, point_cmp);
    int n_feasible = 0;
    while (n_feasible < t->n_points && point_class(&t->points[order[n_feasible]]) == 0)
        n_feasible++;
    return n_feasible;
}
