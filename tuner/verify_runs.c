/* verify_runs.c: each verification candidate's pairs, interval and phase rebuilt from the
 * journaled runs, and the choice of the next run; see verify_runs.h and verify.h. */
#include "verify_runs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_statistics_double.h>

#include "util.h"

double verify_confidence_each(const space *sp) {
    return 1 - (1 - sp->verify_confidence) / sp->verify_top;
}

verify_speedup verify_speedup_of(const double *lr, int n, double confidence) {
    verify_speedup su = {.pairs = n, .estimate = NAN, .low = NAN, .high = NAN};
    if (n < 1) return su;
    double mean = gsl_stats_mean(lr, 1, (size_t)n);
    su.estimate = exp(mean);
    if (n < 2) return su;
    double se = gsl_stats_sd_m(lr, 1, (size_t)n, mean) / sqrt((double)n);
    double q = gsl_cdf_tdist_Pinv(0.5 + confidence / 2, (double)(n - 1));
    su.low = exp(mean - q * se);
    su.high = exp(mean + q * se);
    return su;
}

/* One verification run in trial-id order. */
typedef struct {
    double id;
    int vi; /* its point in the verification table */
    const cJSON *rec;
} seq_run;

static int seq_cmp(const void *a, const void *b) {
    double x = ((const seq_run *)a)->id, y = ((const seq_run *)b)->id;
    return (x > y) - (x < y);
}

static double rec_number(const cJSON *rec, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The objective of a run: NAN when it failed or did not report it as a number. */
static double run_objective(const space *sp, const cJSON *rec) {
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(rec, "status");
    if (!cJSON_IsString(st) || !strcmp(st->valuestring, "failed")) return NAN;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(rec, "metrics");
    double v = rec_number(m, sp->objective);
    return isfinite(v) && v > 0 ? v : NAN;
}

static int run_infinite(const cJSON *rec) {
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(rec, "status");
    return cJSON_IsString(st) && !strcmp(st->valuestring, "infeasible");
}

static int plan_index(const verify_plan *vp, const int *levels, int n_params) {
    for (int k = 0; k < vp->n; k++)
        if (!memcmp(vp->points[k], levels, (size_t)n_params * sizeof *levels)) return k;
    return -1;
}

/* Runs and pairs of every candidate, in trial-id order. */
static void collect_runs(const space *sp, const trial_table *vt, const verify_plan *vp,
                         verify_state *vs) {
    int n = vt->n_runs, k = 0;
    seq_run *seq = xmalloc((size_t)(n + 1) * sizeof *seq);
    int *cand_of = xmalloc((size_t)(vt->n_points + 1) * sizeof *cand_of);
    for (int i = 0; i < vt->n_points; i++) {
        cand_of[i] = plan_index(vp, vt->points[i].levels, sp->n_params);
        if (cand_of[i] >= 0) vs->c[cand_of[i]].vi = i;
        if (vt->points[i].baseline) vs->base_vi = i;
        for (int r = 0; r < vt->points[i].n_runs && k < n; r++)
            seq[k++] = (seq_run){rec_number(vt->points[i].runs[r], "id"), i, vt->points[i].runs[r]};
    }
    qsort(seq, (size_t)k, sizeof *seq, seq_cmp);
    for (int j = 0; j < k; j++) {
        vs->last_is_baseline = seq[j].vi == vs->base_vi;
        int ci = cand_of[seq[j].vi];
        if (ci < 0) continue;
        cand_state *c = &vs->c[ci];
        c->n_runs++;
        if (run_infinite(seq[j].rec) && !c->why) {
            const cJSON *why = cJSON_GetObjectItemCaseSensitive(seq[j].rec, "reason");
            c->why = cJSON_IsString(why) ? why->valuestring : "";
        }
        if (j == 0 || seq[j - 1].vi != vs->base_vi || vs->base_vi < 0) continue;
        /* The baseline runs on both sides, when the next one has run: a drift that is linear
         * over the three runs cancels, and the baseline's share of the noise halves. */
        double b = run_objective(sp, seq[j - 1].rec), x = run_objective(sp, seq[j].rec);
        double after =
            j + 1 < k && seq[j + 1].vi == vs->base_vi ? run_objective(sp, seq[j + 1].rec) : NAN;
        if (isfinite(after) && isfinite(b)) b = sqrt(b * after);
        if (!isfinite(b) || !isfinite(x)) continue;
        c->lr = xrealloc(c->lr, (size_t)(c->n_pairs + 1) * sizeof *c->lr);
        c->lr[c->n_pairs++] = sp->maximize ? log(x / b) : log(b / x);
    }
    free(cand_of);
    free(seq);
}

/* The phase of one candidate from its runs (see verify.h, "Adaptive repeats"). */
static void judge_phase(const space *sp, const trial_table *vt, verify_state *vs, cand_state *c,
                        int paired) {
    int min_pairs = sp->verify_repeats > 2 ? sp->verify_repeats : 2;
    int cap = sp->verify_max_repeats > min_pairs ? sp->verify_max_repeats : min_pairs;
    const point_stats *p = c->vi >= 0 ? &vt->points[c->vi] : NULL;
    c->su = verify_speedup_of(c->lr, c->n_pairs, verify_confidence_each(sp));
    c->phase = c->n_runs == 0 ? CAND_UNTRIED : CAND_MEASURING;
    if (c->why) {
        c->phase = CAND_DROPPED;
        c->drop = DROP_INFINITE;
        return;
    }
    int done;
    if (paired) {
        double half = (c->su.high - c->su.low) / 2;
        done = c->n_runs >= cap ||
               (c->n_pairs >= min_pairs && (half < sp->verify_precision || c->su.high < 1));
    } else {
        done = c->n_runs >= sp->verify_repeats;
    }
    int all_failed = p && p->n_measured == 0;
    if (all_failed && c->n_runs >= (paired ? min_pairs : sp->verify_repeats)) done = 1;
    if (!done) return;
    c->phase = CAND_DONE;
    if (!p || all_failed) {
        c->phase = CAND_DROPPED;
        c->drop = DROP_FAILED;
    } else if (!vs->bounds_ok) {
        c->phase = CAND_DROPPED;
        c->drop = DROP_UNRESOLVED;
    } else if (!observation_feasible(&p->obs, vs->vrc, sp->n_constraints)) {
        c->phase = CAND_DROPPED;
        c->drop = DROP_BROKEN;
    }
}

void verify_state_build(const space *sp, const trial_table *vt, const verify_plan *vp,
                        verify_state *vs) {
    memset(vs, 0, sizeof *vs);
    vs->n = vp->n;
    vs->c = xcalloc((size_t)vp->n + 1, sizeof *vs->c);
    vs->base_vi = -1;
    for (int k = 0; k < vp->n; k++)
        vs->c[k].vi = -1;
    vs->vrc = xcalloc((size_t)sp->n_constraints + 1, sizeof *vs->vrc);
    vs->bounds_ok = trials_resolve(vt, vs->vrc, &vs->why);
    collect_runs(sp, vt, vp, vs);
    if (!vp->paired) vs->base_vi = -1;
    int survivors = 0;
    for (int k = 0; k < vp->n; k++) {
        cand_state *c = &vs->c[k];
        judge_phase(sp, vt, vs, c, vp->paired);
        if (survivors < sp->verify_top && k < sp->verify_max_candidates) {
            c->in_play = 1;
            survivors += c->phase != CAND_DROPPED;
        }
    }
}

void verify_state_free(verify_state *vs) {
    for (int k = 0; k < vs->n; k++)
        free(vs->c[k].lr);
    free(vs->c);
    free(vs->vrc);
    memset(vs, 0, sizeof *vs);
}

static int undecided(const cand_state *c) {
    return c->in_play && (c->phase == CAND_UNTRIED || c->phase == CAND_MEASURING);
}

int verify_next(const space *sp, const trial_table *vt, const verify_plan *vp, int *levels) {
    verify_state vs;
    verify_state_build(sp, vt, vp, &vs);
    int *list = xmalloc(((size_t)vp->n + 1) * sizeof *list), n = 0, m = -1;
    for (int k = 0; k < vp->n; k++) {
        if (!undecided(&vs.c[k])) continue;
        list[n++] = k;
        if (m < 0 || vs.c[k].n_runs < m) m = vs.c[k].n_runs;
    }
    int pick = -1;
    /* Round m takes the candidates in an order rotated by m, so that no candidate always
     * follows the same one. */
    for (int i = 0; i < n && pick < 0; i++) {
        int k = list[(m + i) % n];
        if (vs.c[k].n_runs == m) pick = k;
    }
    free(list);
    size_t bytes = (size_t)sp->n_params * sizeof *levels;
    /* Every candidate run sits between two baseline runs: one before it, and the closing one
     * after the last. */
    int closing = pick < 0 && vp->paired && vt->n_runs > 0 && !vs.last_is_baseline;
    int out = pick >= 0 || closing;
    if (closing || (pick >= 0 && vp->paired && !vs.last_is_baseline))
        memcpy(levels, sp->baseline, bytes);
    else if (pick >= 0)
        memcpy(levels, vp->points[pick], bytes);
    verify_state_free(&vs);
    return out;
}
