/* test_verify_judge.c: choosing the candidates to verify and judging their held-out runs, on
 * hand-made trial tables (verify.h).
 *
 * The table: four points of one knob W, measured on the tuning prompts as
 *   W=0: tps 100, ppl 2.5 (breaks ppl <= 2.4)   W=1: tps 90, ppl 2.3
 *   W=2: tps 80,  ppl 2.2                        W=3: tps 70, ppl 2.1
 * so by measured medians the candidates are W=1 then W=2. A strategy's rank order comes
 * first when it has one (infeasible entries skipped, the list filled up from the measured
 * order). Verification: a candidate whose held-out ppl breaks the bound is dropped with a
 * warning; the winner is the best verified median among the survivors; a gap beyond the
 * tolerance is warned about. */
#include "verify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"
#include "../test_util.h"

static space *space_make(void) {
    char path[] = "/tmp/test_verify_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    const char *text = "engine: {command: ./engine}\n"
                       "objective: {metric: tps}\n"
                       "constraints: [ppl <= 2.4]\n"
                       "parameters: {W: {type: int, min: 0, max: 3}}\n"
                       "verify: {top: 2, repeats: 1, tolerance: 0.05}\n";
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    char err[512];
    space *sp = space_load(path, err, sizeof err);
    if (!sp) die("%s", err);
    unlink(path);
    return sp;
}

/* Records are kept by the tables: they live in this list until the end. */
static cJSON *records[64];
static int n_records;

static void add(trial_table *t, trial_table *vt, const char *phase, int w, double tps, double ppl) {
    char *text = xasprintf("{\"id\":%d,\"phase\":\"%s\",\"point\":{\"W\":\"%d\"},\"levels\":[%d],"
                           "\"status\":\"ok\",\"metrics\":{\"tps\":%g,\"ppl\":%g}}",
                           n_records + 1, phase, w, w, tps, ppl);
    cJSON *r = cJSON_Parse(text);
    free(text);
    CHECK(r && n_records < 64);
    records[n_records++] = r;
    char err[256];
    CHECK(trials_add(t, r, "x", err, sizeof err) != TRIALS_BAD);
    CHECK(trials_add(vt, r, "x", err, sizeof err) != TRIALS_BAD);
}

/* A strategy whose rank hook returns a fixed order (indices into the observations). */
static const int *fake_order;
static int fake_n;
static int fake_rank(strategy *s, const observation *obs, int n_obs, const resolved_constraint *rc,
                     int n_rc, int *order) {
    (void)s, (void)obs, (void)n_obs, (void)rc, (void)n_rc;
    memcpy(order, fake_order, (size_t)fake_n * sizeof *order);
    return fake_n;
}

static int plan_w(const verify_plan *vp, int k) {
    return vp->points[k][0];
}

int main(void) {
    space *sp = space_make();
    trial_table *t = trials_new(sp), *vt = trials_new_verify(sp);
    add(t, vt, "search", 0, 100, 2.5);
    add(t, vt, "search", 1, 90, 2.3);
    add(t, vt, "search", 2, 80, 2.2);
    add(t, vt, "search", 3, 70, 2.1);
    resolved_constraint rc[1];
    const char *why;
    EXPECT(trials_resolve(t, rc, &why) && rc[0].bound == 2.4);

    /* Measured order: W=1, W=2. */
    const strategy_ops *grid = strategy_find("grid");
    verify_plan vp;
    EXPECT(verify_plan_make(sp, t, grid, NULL, rc, &vp) == 2);
    EXPECT(vp.n == 2 && plan_w(&vp, 0) == 1 && plan_w(&vp, 1) == 2);
    verify_plan_free(&vp);

    /* A rank hook first: W=3, (W=0 is infeasible: skipped), W=2. */
    strategy_ops ranked = *grid;
    ranked.rank = fake_rank;
    fake_order = (const int[]){3, 0, 2};
    fake_n = 3;
    EXPECT(verify_plan_make(sp, t, &ranked, NULL, rc, &vp) == 2);
    EXPECT(plan_w(&vp, 0) == 3 && plan_w(&vp, 1) == 2);
    verify_plan_free(&vp);
    /* A rank naming one point: filled up from the measured order. */
    fake_order = (const int[]){2};
    fake_n = 1;
    EXPECT(verify_plan_make(sp, t, &ranked, NULL, rc, &vp) == 2);
    EXPECT(plan_w(&vp, 0) == 2 && plan_w(&vp, 1) == 1);
    verify_plan_free(&vp);

    /* Judging. W=1 breaks the bound on held-out prompts; W=2 wins with a gap of -1.25 %. */
    EXPECT(verify_plan_make(sp, t, grid, NULL, rc, &vp) == 2);
    verify_outcome vo;
    verify_judge(sp, t, vt, &vp, &vo); /* nothing verified yet: every candidate failed */
    EXPECT(vo.winner == -1 && vo.n_warnings == 2);
    EXPECT(strstr(vo.warnings[0], "every verification run failed") != NULL);
    verify_outcome_free(&vo);
    add(t, vt, "verify", 1, 80, 2.45);
    add(t, vt, "verify", 2, 79, 2.25);
    EXPECT(t->n_points == 4 && t->n_runs == 4 && vt->n_points == 2 && vt->n_runs == 2);
    verify_judge(sp, t, vt, &vp, &vo);
    EXPECT(vo.winner == 1 && vo.t_index == 2 && vt->points[vo.vt_index].levels[0] == 2);
    EXPECT(fabs(vo.gap - (79.0 / 80.0 - 1)) < 1e-12);
    EXPECT(vo.n_warnings == 1);
    EXPECT(vo.n_warnings == 1 &&
           strstr(vo.warnings[0], "candidate 1 (W=1) dropped by verification on the holdout "
                                  "prompts: verified ppl 2.45 against bound 2.4") != NULL);
    const cJSON *c0 = cJSON_GetArrayItem(vo.candidates, 0);
    EXPECT(cJSON_IsFalse(cJSON_GetObjectItem(c0, "feasible")));
    EXPECT(cJSON_GetObjectItem(c0, "dropped") != NULL);
    EXPECT(cJSON_GetObjectItem(c0, "measured")->valuedouble == 90);
    EXPECT(cJSON_GetObjectItem(c0, "verified")->valuedouble == 80);
    verify_outcome_free(&vo);

    /* Two more runs of W=1 within the bound: its median ppl 2.35 passes, its median tps 80
     * beats W=2's 79, but 80 against 90 measured is a gap of -11 %: warned. */
    add(t, vt, "verify", 1, 81, 2.35);
    add(t, vt, "verify", 1, 79.5, 2.3);
    verify_judge(sp, t, vt, &vp, &vo);
    EXPECT(vo.winner == 0 && t->points[vo.t_index].levels[0] == 1);
    EXPECT(fabs(vo.gap - (80.0 / 90.0 - 1)) < 1e-12);
    EXPECT(vo.n_warnings == 1 &&
           strstr(vo.warnings[0], "tps of the winner W=1 does not reproduce on the holdout "
                                  "prompts: measured 90, verified 80, gap -11.1 % exceeds the "
                                  "tolerance of 5.0 %") != NULL);
    verify_outcome_free(&vo);
    verify_plan_free(&vp);

    trials_free(vt);
    trials_free(t);
    for (int i = 0; i < n_records; i++)
        cJSON_Delete(records[i]);
    space_free(sp);
    if (failures) fprintf(stderr, "%d failures\n", failures);
    return failures ? 1 : 0;
}
