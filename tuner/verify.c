/* verify.c: the ranking of the candidates to verify and the verdict on their held-out runs;
 * see verify.h (the rules) and verify_runs.h (each candidate's state from the journal). */
#include "verify.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "verify_runs.h"

static int same_point(const int *a, const int *b, int n_params) {
    return !memcmp(a, b, (size_t)n_params * sizeof *a);
}

static int knobs_differing(const int *a, const int *b, int n_params) {
    int d = 0;
    for (int i = 0; i < n_params; i++)
        d += a[i] != b[i];
    return d;
}

/* Append levels to list (n entries) unless it is there already or is the baseline. */
static void ranking_add(const space *sp, int ***list, int *n, const int *levels) {
    if (sp->baseline && same_point(levels, sp->baseline, sp->n_params)) return;
    for (int i = 0; i < *n; i++)
        if (same_point((*list)[i], levels, sp->n_params)) return;
    *list = xrealloc(*list, (size_t)(*n + 1) * sizeof **list);
    (*list)[(*n)++] = (int *)levels; /* borrowed from the table; copied by the plan */
}

int verify_plan_make(const space *sp, const trial_table *t, const strategy_ops *ops, strategy *st,
                     const resolved_constraint *rc, verify_plan *vp) {
    memset(vp, 0, sizeof *vp);
    vp->paired = sp->baseline != NULL;
    int n_rc = sp->n_constraints, n_rank = 0;
    int **ranking = NULL;
    int *order = xmalloc((size_t)(t->n_points + 1) * sizeof *order);
    if (ops && ops->rank && t->n_points > 0) {
        observation *obs = xmalloc((size_t)t->n_points * sizeof *obs);
        for (int i = 0; i < t->n_points; i++)
            obs[i] = t->points[i].obs;
        int n = ops->rank(st, obs, t->n_points, rc, n_rc, order);
        for (int k = 0; k < n; k++) {
            int i = order[k];
            if (i >= 0 && i < t->n_points && observation_feasible(&obs[i], rc, n_rc))
                ranking_add(sp, &ranking, &n_rank, t->points[i].levels);
        }
        free(obs);
    }
    int n_feasible = trials_order(t, rc, order);
    for (int k = 0; k < n_feasible; k++)
        ranking_add(sp, &ranking, &n_rank, t->points[order[k]].levels);
    free(order);
    /* Diverse: each next candidate is the best-ranked point differing from every one before
     * it in at least two knobs (one in a one-knob space), else the best-ranked one left. */
    int need = sp->n_params < 2 ? sp->n_params : 2;
    char *taken = xcalloc((size_t)n_rank + 1, 1);
    int max = sp->verify_max_candidates;
    while (vp->n < n_rank && vp->n < max) {
        int pick = -1, first = -1;
        for (int k = 0; k < n_rank && pick < 0; k++) {
            if (taken[k]) continue;
            if (first < 0) first = k;
            int ok = 1;
            for (int j = 0; j < vp->n && ok; j++)
                ok = knobs_differing(ranking[k], vp->points[j], sp->n_params) >= need;
            if (ok) pick = k;
        }
        if (pick < 0) pick = first;
        taken[pick] = 1;
        vp->points = xrealloc(vp->points, (size_t)(vp->n + 1) * sizeof *vp->points);
        vp->points[vp->n] = xmalloc((size_t)sp->n_params * sizeof(int));
        memcpy(vp->points[vp->n], ranking[pick], (size_t)sp->n_params * sizeof(int));
        vp->n++;
    }
    free(taken);
    free(ranking);
    vp->n_candidates = vp->n;
    return vp->n;
}

void verify_plan_free(verify_plan *vp) {
    for (int i = 0; i < vp->n; i++)
        free(vp->points[i]);
    free(vp->points);
    memset(vp, 0, sizeof *vp);
}

static cJSON *number_or_null(double v) {
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static void warn(verify_outcome *out, char *msg) {
    out->warnings = xrealloc(out->warnings, (size_t)(out->n_warnings + 1) * sizeof(char *));
    out->warnings[out->n_warnings++] = msg;
}

/* Relative gap verified / measured - 1 (NAN when either is missing or measured is 0). */
static double gap_of(double measured, double verified) {
    if (!isfinite(measured) || !isfinite(verified) || measured == 0) return NAN;
    return verified / measured - 1;
}

/* The constraints of one candidate on the held-out prompts (into c); the first broken one
 * described into broken. */
static void add_constraints(const space *sp, const point_stats *mp, const point_stats *vpnt,
                            const resolved_constraint *vrc, cJSON *c, char *broken, size_t n) {
    cJSON *cons = cJSON_AddArrayToObject(c, "constraints");
    broken[0] = '\0';
    for (int i = 0; i < sp->n_constraints; i++) {
        cJSON *o = cJSON_CreateObject();
        double mv = mp ? mp->cons[i] : NAN, vv = vpnt ? vpnt->cons[i] : NAN;
        cJSON_AddStringToObject(o, "text", sp->constraints[i].text);
        cJSON_AddItemToObject(o, "bound", number_or_null(vrc[i].bound));
        cJSON_AddItemToObject(o, "measured", number_or_null(mv));
        cJSON_AddItemToObject(o, "verified", number_or_null(vv));
        cJSON_AddItemToObject(o, "gap", number_or_null(gap_of(mv, vv)));
        observation one = vpnt ? vpnt->obs : (observation){.status = TRIAL_FAILED};
        one.cons = &vv;
        int ok = observation_feasible(&one, &vrc[i], 1);
        cJSON_AddBoolToObject(o, "met", ok);
        if (!ok && !broken[0] && vpnt && vpnt->status != TRIAL_FAILED)
            snprintf(broken, n, "verified %s %.6g against bound %.6g (%s)",
                     sp->constraints[i].metric, vv, vrc[i].bound, sp->constraints[i].text);
        cJSON_AddItemToArray(cons, o);
    }
}

/* Why a dropped candidate was dropped. Caller frees. */
static char *drop_text(const space *sp, const cand_state *cs, const point_stats *vpnt,
                       const verify_state *vs, const char *broken) {
    switch (cs->drop) {
    case DROP_INFINITE:
        return xasprintf("a metric is infinite on the %s prompts%s%s", sp->verify_prompt_set,
                         cs->why && cs->why[0] ? ": " : "", cs->why ? cs->why : "");
    case DROP_FAILED:
        return xasprintf("every verification run failed%s%s", vpnt && vpnt->reason ? ": " : "",
                         vpnt && vpnt->reason ? vpnt->reason : "");
    case DROP_UNRESOLVED:
        return xasprintf("relative bounds unresolved on the %s prompts: %s", sp->verify_prompt_set,
                         vs->why ? vs->why : "?");
    default:
        return xstrdup(broken[0] ? broken : "a constraint is broken on the held-out prompts");
    }
}

/* "1.31x [1.27, 1.35]" */
static char *speedup_text(const verify_speedup *su) {
    if (su->pairs < 2)
        return xasprintf("%.2fx (%d pair%s, no interval)", su->estimate, su->pairs,
                         su->pairs == 1 ? "" : "s");
    return xasprintf("%.2fx [%.2f, %.2f]", su->estimate, su->low, su->high);
}

/* One candidate's entry of the "candidates" array (and its warning when dropped). */
static cJSON *candidate_entry(const space *sp, const trial_table *t, const trial_table *vt,
                              const verify_plan *vp, const verify_state *vs, int k,
                              verify_outcome *out) {
    const cand_state *cs = &vs->c[k];
    int ti = trials_find(t, vp->points[k]);
    const point_stats *mp = ti >= 0 ? &t->points[ti] : NULL;
    const point_stats *vpnt = cs->vi >= 0 ? &vt->points[cs->vi] : NULL;
    cJSON *c = cJSON_CreateObject();
    char *key = space_point_key(sp, vp->points[k]);
    cJSON_AddNumberToObject(c, "rank", k + 1);
    cJSON_AddStringToObject(c, "point", key);
    double m_obj = mp ? mp->objective : NAN, v_obj = vpnt ? vpnt->objective : NAN;
    cJSON_AddItemToObject(c, "measured", number_or_null(m_obj));
    cJSON_AddItemToObject(c, "verified", number_or_null(v_obj));
    cJSON_AddItemToObject(c, "verified_sd", number_or_null(vpnt ? vpnt->objective_sd : NAN));
    cJSON_AddNumberToObject(c, "verify_runs", cs->n_runs);
    cJSON_AddItemToObject(c, "gap", number_or_null(gap_of(m_obj, v_obj)));
    if (vp->paired) {
        cJSON *su = cJSON_AddObjectToObject(c, "speedup");
        cJSON_AddNumberToObject(su, "pairs", cs->su.pairs);
        cJSON_AddItemToObject(su, "estimate", number_or_null(cs->su.estimate));
        cJSON_AddItemToObject(su, "low", number_or_null(cs->su.low));
        cJSON_AddItemToObject(su, "high", number_or_null(cs->su.high));
    }
    char broken[512];
    add_constraints(sp, mp, vpnt, vs->vrc, c, broken, sizeof broken);
    int dropped = cs->phase == CAND_DROPPED;
    cJSON_AddBoolToObject(c, "feasible", !dropped && cs->phase == CAND_DONE);
    if (dropped) {
        char *reason = drop_text(sp, cs, vpnt, vs, broken);
        cJSON_AddStringToObject(c, "dropped", reason);
        cJSON_AddStringToObject(c, "verdict", "dropped");
        warn(out, xasprintf("candidate %d (%s) dropped by verification on the %s prompts: %s",
                            k + 1, key, sp->verify_prompt_set, reason));
        out->n_dropped++;
        free(reason);
    } else if (cs->phase != CAND_DONE) {
        cJSON_AddStringToObject(c, "verdict", "unfinished");
    } else if (vp->paired && !(cs->su.low > 1)) {
        cJSON_AddStringToObject(c, "verdict", "not measurably faster");
    } else {
        cJSON_AddStringToObject(c, "verdict", "eligible");
    }
    free(key);
    return c;
}

/* The baseline as the answer: it must meet the constraints where it was last measured. */
static void baseline_answer(const space *sp, const trial_table *t, const trial_table *vt,
                            const verify_plan *vp, const verify_state *vs, verify_outcome *out) {
    if (!sp->baseline) return;
    int ti = trials_find(t, sp->baseline), vi = vs->base_vi;
    if (ti < 0) return;
    int ok;
    if (vi >= 0) {
        ok = vs->bounds_ok && observation_feasible(&vt->points[vi].obs, vs->vrc, sp->n_constraints);
    } else {
        resolved_constraint *rc = xcalloc((size_t)sp->n_constraints + 1, sizeof *rc);
        const char *why;
        ok = trials_resolve(t, rc, &why) &&
             observation_feasible(&t->points[ti].obs, rc, sp->n_constraints);
        free(rc);
    }
    if (!ok) return;
    out->baseline_answer = 1;
    out->t_index = ti;
    out->vt_index = vi;
    out->gap = vi >= 0 ? gap_of(t->points[ti].objective, vt->points[vi].objective) : NAN;
    int pairs = 0;
    for (int k = 0; k < vs->n; k++)
        pairs += vs->c[k].n_pairs;
    if (vp->n == 0)
        out->summary = xstrdup("the baseline: no other point met every constraint in the search");
    else
        out->summary =
            xasprintf("the baseline: no setting was measurably faster on the %s prompts at %g %% "
                      "confidence (%d candidate%s tried, %d pair%s)",
                      sp->verify_prompt_set, 100 * sp->verify_confidence, out->n_tried,
                      out->n_tried == 1 ? "" : "s", pairs, pairs == 1 ? "" : "s");
}

void verify_judge(const space *sp, const trial_table *t, const trial_table *vt,
                  const verify_plan *vp, verify_outcome *out) {
    memset(out, 0, sizeof *out);
    out->winner = out->t_index = out->vt_index = -1;
    out->gap = NAN;
    out->speedup = (verify_speedup){0, NAN, NAN, NAN};
    verify_state vs;
    verify_state_build(sp, vt, vp, &vs);
    out->vrc = xcalloc((size_t)sp->n_constraints + 1, sizeof *out->vrc);
    memcpy(out->vrc, vs.vrc, (size_t)sp->n_constraints * sizeof *out->vrc);
    out->bounds_ok = vs.bounds_ok;
    out->candidates = cJSON_CreateArray();
    double best = NAN;
    for (int k = 0; k < vp->n; k++) {
        const cand_state *cs = &vs.c[k];
        if (cs->n_runs == 0 && !cs->in_play) continue;
        out->n_tried += cs->n_runs > 0;
        cJSON_AddItemToArray(out->candidates, candidate_entry(sp, t, vt, vp, &vs, k, out));
        if (cs->phase != CAND_DONE) continue;
        double score = vp->paired ? cs->su.estimate : vt->points[cs->vi].objective;
        if (vp->paired ? !(cs->su.low > 1) || !(isnan(best) || score > best)
                       : !trials_better(t, score, best))
            continue;
        best = score;
        out->winner = k;
        out->t_index = trials_find(t, vp->points[k]);
        out->vt_index = cs->vi;
        out->speedup = cs->su;
    }
    if (out->winner >= 0) {
        const point_stats *mp = out->t_index >= 0 ? &t->points[out->t_index] : NULL;
        const point_stats *vpnt = &vt->points[out->vt_index];
        out->gap = gap_of(mp ? mp->objective : NAN, vpnt->objective);
        if (vp->paired) {
            char *st = speedup_text(&out->speedup);
            out->summary = xasprintf("%s over the baseline on the %s prompts, %d pair%s", st,
                                     sp->verify_prompt_set, out->speedup.pairs,
                                     out->speedup.pairs == 1 ? "" : "s");
            free(st);
        } else {
            out->summary = xasprintf("the best verified %s on the %s prompts (no baseline to "
                                     "compare with)",
                                     sp->objective, sp->verify_prompt_set);
        }
        if (mp && isfinite(out->gap) && fabs(out->gap) > sp->verify_tolerance)
            warn(out,
                 xasprintf("%s of the winner %s does not reproduce on the %s prompts: measured "
                           "%.6g, verified %.6g, gap %+.1f %% exceeds the tolerance of %.1f %%",
                           sp->objective, mp->key, sp->verify_prompt_set, mp->objective,
                           vpnt->objective, 100 * out->gap, 100 * sp->verify_tolerance));
    } else if (vp->paired || vp->n == 0) {
        baseline_answer(sp, t, vt, vp, &vs, out);
    }
    verify_state_free(&vs);
}

void verify_outcome_free(verify_outcome *out) {
    free(out->vrc);
    free(out->summary);
    cJSON_Delete(out->candidates);
    for (int i = 0; i < out->n_warnings; i++)
        free(out->warnings[i]);
    free(out->warnings);
    memset(out, 0, sizeof *out);
}

const char *verify_plan_text(const space *sp, const verify_plan *vp) {
    static char buf[512];
    int top = vp->n < sp->verify_top ? vp->n : sp->verify_top;
    if (vp->paired)
        snprintf(buf, sizeof buf,
                 "verification: %d candidate%s side by side (up to %d down the ranking), each "
                 "run in pairs with the baseline on the %s prompts, %d to %d pairs until the "
                 "%g %% interval of the speed-up is within +-%g",
                 top, top == 1 ? "" : "s", vp->n, sp->verify_prompt_set,
                 sp->verify_repeats > 2 ? sp->verify_repeats : 2,
                 sp->verify_max_repeats > 2 ? sp->verify_max_repeats : 2,
                 100 * sp->verify_confidence, sp->verify_precision);
    else
        snprintf(buf, sizeof buf,
                 "verification: the top %d candidate%s (up to %d down the ranking), %d run%s "
                 "each on the %s prompts (no baseline to pair with)",
                 top, top == 1 ? "" : "s", vp->n, sp->verify_repeats,
                 sp->verify_repeats == 1 ? "" : "s", sp->verify_prompt_set);
    return buf;
}
