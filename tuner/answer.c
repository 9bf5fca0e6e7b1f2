/* answer.c: the end of a sweep: what the search found, the verdict of the verification, and
 * the manifest; see answer.h. */
#include "answer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "manifest.h"
#include "util.h"

int answer_finish(const answer_input *s) {
    const space *sp = s->sp;
    const char *why;
    trials_resolve(s->t, s->rc, &why);
    int n_feasible = 0, n_over = 0, n_inf = 0, n_fail = 0;
    for (int i = 0; i < s->t->n_points; i++) {
        const point_stats *p = &s->t->points[i];
        n_inf += p->status == TRIAL_INFEASIBLE;
        n_fail += p->status == TRIAL_FAILED;
        if (p->status == TRIAL_OK && observation_feasible(&p->obs, s->rc, sp->n_constraints))
            n_feasible++;
        else if (p->status == TRIAL_OK)
            n_over++;
    }
    fprintf(stderr,
            "%s: sweep of study '%s' ended: %s. %d points (%d feasible, %d over a constraint, "
            "%d with an infinite metric, %d failed) in %d runs.\n",
            util_progname, s->study, s->stop, s->t->n_points, n_feasible, n_over, n_inf, n_fail,
            s->t->n_runs);
    verify_outcome vo;
    verify_judge(sp, s->t, s->vt, s->plan, &vo);
    for (int i = 0; i < vo.n_warnings; i++)
        fprintf(stderr, "%s: warning: %s\n", util_progname, vo.warnings[i]);
    if (vo.winner < 0 && !vo.baseline_answer) {
        if (s->plan->n == 0)
            fprintf(stderr,
                    "%s: no feasible point: of the %d points, %d broke a constraint, %d had an "
                    "infinite metric and %d failed%s; no manifest written. See: tuner show %s\n",
                    util_progname, s->t->n_points, n_over, n_inf, n_fail,
                    sp->baseline ? " (the baseline among them)" : "", s->dir);
        else
            fprintf(stderr,
                    "%s: no candidate survived verification: %d of the %d candidates tried were "
                    "dropped on the %s prompts (the warnings say why)%s; no manifest written. "
                    "See: tuner show %s\n",
                    util_progname, vo.n_dropped, vo.n_tried, sp->verify_prompt_set,
                    sp->baseline ? ", and the baseline broke a constraint there too" : "", s->dir);
        verify_outcome_free(&vo);
        return ANSWER_NONE;
    }
    if (vo.baseline_answer)
        fprintf(stderr,
                "%s: no setting was measurably faster than the baseline: the manifest "
                "is the baseline's (%s)\n",
                util_progname, vo.summary);
    manifest_verified mv = {.point = vo.vt_index >= 0 ? &s->vt->points[vo.vt_index] : NULL,
                            .rc = vo.vrc,
                            .gap = vo.gap,
                            .candidates = vo.candidates,
                            .warnings = (const char *const *)vo.warnings,
                            .n_warnings = vo.n_warnings,
                            .summary = vo.summary,
                            .baseline_answer = vo.baseline_answer,
                            .pairs = vo.speedup.pairs,
                            .speedup = {vo.speedup.estimate, vo.speedup.low, vo.speedup.high},
                            .noise = s->noise};
    manifest_info info = {
        .study = s->study, .study_dir = s->dir, .wall_used_s = s->wall_used_s, .verified = &mv};
    cJSON *m = manifest_build(sp, s->t, vo.t_index, s->rc, &info);
    char err[2048];
    int rc = ANSWER_MANIFEST;
    /* A finished study resumed with nothing left to run: its manifest stands as written. */
    cJSON *same = s->unchanged_ok ? manifest_unchanged(m, s->dir) : NULL;
    if (same) {
        cJSON_Delete(m);
        m = same;
    }
    if (!same && !manifest_write(m, s->dir, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", util_progname, err);
        rc = ANSWER_ERROR;
    } else {
        char *text = cJSON_Print(m);
        const point_stats *p = &s->t->points[vo.t_index];
        fprintf(stderr,
                "%s: %s: %s = %.6g at %s (%s; verified median %.6g, gap %+.1f %%); manifest: "
                "%s/manifest.json\n",
                util_progname, vo.baseline_answer ? "answer" : "best", sp->objective, p->objective,
                p->key, vo.summary, mv.point ? mv.point->objective : NAN, 100 * vo.gap, s->dir);
        printf("%s\n", text);
        free(text);
    }
    cJSON_Delete(m);
    verify_outcome_free(&vo);
    return rc;
}
