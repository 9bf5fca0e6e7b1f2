/* verify.c: choosing the candidates to verify and judging their held-out runs; see
 * verify.h. */
#include "verify.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static int plan_has(const verify_plan *vp, const int *levels, int n_params) {
    for (int i = 0; i < vp->n; i++)
        if (!memcmp(vp->points[i], levels, (size_t)n_params * sizeof *levels)) return 1;
    return 0;
}

static void plan_add(verify_plan *vp, const int *levels, int n_params) {
    vp->points = xrealloc(vp->points, (size_t)(vp->n + 1) * sizeof *vp->points);
    vp->points[vp->n] = xmalloc((size_t)n_params * sizeof *levels);
    memcpy(vp->points[vp->n], levels, (size_t)n_params * sizeof *levels);
    vp->n++;
}

int verify_plan_make(const space *sp, const trial_table *t, const strategy_ops *ops, strategy *st,
                     const resolved_constraint *rc, verify_plan *vp) {
    memset(vp, 0, sizeof *vp);
    int n_rc = sp->n_constraints, top = sp->verify_top;
    int *order = xmalloc((size_t)(t->n_points + 1) * sizeof *order);
    if (ops->rank && t->n_points > 0) {
        observation *obs = xmalloc((size_t)t->n_points * sizeof *obs);
        for (int i = 0; i < t->n_points; i++)
            obs[i] = t->points[i].obs;
        int n = ops->rank(st, obs, t->n_points, rc, n_rc, order);
        for (int k = 0; k < n && vp->n < top; k++) {
            int i = order[k];
            if (i < 0 || i >= t->n_points || !observation_feasible(&obs[i], rc, n_rc)) continue;
            if (!plan_has(vp, t->points[i].levels, sp->n_params))
                plan_add(vp, t->points[i].levels, sp->n_params);
        }
        free(obs);
    }
    int n_feasible = trials_order(t, rc, order);
    for (int k = 0; k < n_feasible && vp->n < top; k++)
        if (!plan_has(vp, t->points[order[k]].levels, sp->n_params))
            plan_add(vp, t->points[order[k]].levels, sp->n_params);
    free(order);
    vp->n_candidates = vp->n;
    int relative = 0;
    for (int c = 0; c < n_rc; c++)
        relative |= sp->constraints[c].relative;
    if (vp->n_candidates > 0 && relative && sp->baseline &&
        !plan_has(vp, sp->baseline, sp->n_params))
        plan_add(vp, sp->baseline, sp->n_params);
    return vp->n_candidates;
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

void verify_judge(const space *sp, const trial_table *t, const trial_table *vt,
                  const verify_plan *vp, verify_outcome *out) {
    memset(out, 0, sizeof *out);
    out->winner = out->t_index = out->vt_index = -1;
    out->gap = NAN;
    int n_rc = sp->n_constraints;
    out->vrc = xcalloc((size_t)n_rc + 1, sizeof *out->vrc);
    const char *why = NULL;
    out->bounds_ok = trials_resolve(vt, out->vrc, &why);
    out->candidates = cJSON_CreateArray();
    double best = NAN;
    for (int k = 0; k < vp->n_candidates; k++) {
        int ti = trials_find(t, vp->points[k]), vi = trials_find(vt, vp->points[k]);
        const point_stats *mp = ti >= 0 ? &t->points[ti] : NULL;
        const point_stats *vpnt = vi >= 0 ? &vt->points[vi] : NULL;
        cJSON *c = cJSON_CreateObject();
        char *key = space_point_key(sp, vp->points[k]);
        cJSON_AddNumberToObject(c, "rank", k + 1);
        cJSON_AddStringToObject(c, "point", key);
        double m_obj = mp ? mp->objective : NAN, v_obj = vpnt ? vpnt->objective : NAN;
        cJSON_AddItemToObject(c, "measured", number_or_null(m_obj));
        cJSON_AddItemToObject(c, "verified", number_or_null(v_obj));
        cJSON_AddItemToObject(c, "verified_sd", number_or_null(vpnt ? vpnt->objective_sd : NAN));
        cJSON_AddNumberToObject(c, "verify_runs", vpnt ? vpnt->n_runs : 0);
        double g = gap_of(m_obj, v_obj);
        cJSON_AddItemToObject(c, "gap", number_or_null(g));
        cJSON *cons = cJSON_AddArrayToObject(c, "constraints");
        char broken[512] = "";
        for (int i = 0; i < n_rc; i++) {
            cJSON *o = cJSON_CreateObject();
            double mv = mp ? mp->cons[i] : NAN, vv = vpnt ? vpnt->cons[i] : NAN;
            cJSON_AddStringToObject(o, "text", sp->constraints[i].text);
            cJSON_AddItemToObject(o, "bound", number_or_null(out->vrc[i].bound));
            cJSON_AddItemToObject(o, "measured", number_or_null(mv));
            cJSON_AddItemToObject(o, "verified", number_or_null(vv));
            cJSON_AddItemToObject(o, "gap", number_or_null(gap_of(mv, vv)));
            observation one = vpnt ? vpnt->obs : (observation){.status = TRIAL_FAILED};
            one.cons = &vv;
            int ok = observation_feasible(&one, &out->vrc[i], 1);
            cJSON_AddBoolToObject(o, "met", ok);
            if (!ok && !broken[0] && vpnt && vpnt->status != TRIAL_FAILED)
                snprintf(broken, sizeof broken, "verified %s %.6g against bound %.6g (%s)",
                         sp->constraints[i].metric, vv, out->vrc[i].bound, sp->constraints[i].text);
            cJSON_AddItemToArray(cons, o);
        }
        int feasible = vpnt && observation_feasible(&vpnt->obs, out->vrc, n_rc);
        cJSON_AddBoolToObject(c, "feasible", feasible);
        if (!feasible) {
            char *reason;
            if (!vpnt || vpnt->status == TRIAL_FAILED)
                reason =
                    xasprintf("every verification run failed%s%s", vpnt && vpnt->reason ? ": " : "",
                              vpnt && vpnt->reason ? vpnt->reason : "");
            else if (!out->bounds_ok)
                reason = xasprintf("relative bounds unresolved on the %s prompts: %s",
                                   sp->verify_prompt_set, why ? why : "?");
            else if (broken[0])
                reason = xstrdup(broken);
            else
                reason =
                    xasprintf("a metric is infinite on the %s prompts%s%s", sp->verify_prompt_set,
                              vpnt->reason ? ": " : "", vpnt->reason ? vpnt->reason : "");
            cJSON_AddStringToObject(c, "dropped", reason);
            warn(out, xasprintf("candidate %d (%s) dropped by verification on the %s prompts: "
                                "%s",
                                k + 1, key, sp->verify_prompt_set, reason));
            free(reason);
        } else if (trials_better(t, v_obj, best)) {
            best = v_obj;
            out->winner = k;
            out->t_index = ti;
            out->vt_index = vi;
            out->gap = g;
        }
        cJSON_AddItemToArray(out->candidates, c);
        free(key);
    }
    if (out->winner >= 0 && isfinite(out->gap) && fabs(out->gap) > sp->verify_tolerance) {
        const point_stats *mp = &t->points[out->t_index], *vpnt = &vt->points[out->vt_index];
        warn(out, xasprintf("%s of the winner %s does not reproduce on the %s prompts: measured "
                            "%.6g, verified %.6g, gap %+.1f %% exceeds the tolerance of %.1f %%",
                            sp->objective, mp->key, sp->verify_prompt_set, mp->objective,
                            vpnt->objective, 100 * out->gap, 100 * sp->verify_tolerance));
    }
}

void verify_outcome_free(verify_outcome *out) {
    free(out->vrc);
    cJSON_Delete(out->candidates);
    for (int i = 0; i < out->n_warnings; i++)
        free(out->warnings[i]);
    free(out->warnings);
    memset(out, 0, sizeof *out);
}
