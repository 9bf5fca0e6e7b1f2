/* test_verify_judge.c: choosing the candidates to verify and judging their held-out runs, on
 * hand-made trial tables (verify.h).
 *
 * The table: four points of one knob W, measured on the tuning prompts as
 *   W=0: tps 100, ppl 2.5 (breaks ppl <= 2.4)   W=1: tps 90, ppl 2.3
 *   W=2: tps 80,  ppl 2.2                        W=3: tps 70, ppl 2.1
 * so by measured medians the ranking is W=1, W=2, W=3. A strategy's rank order comes first
 * when it has one (infeasible entries skipped, the list filled up from the measured order).
 * Without a baseline: a candidate whose held-out ppl breaks the bound is dropped with a
 * warning and the next of the ranking comes into play; the winner is the best verified
 * median among the survivors; a gap beyond the tolerance is warned about.
 *
 * With a baseline (second part): the t interval of the speed-up against a hand computation;
 * the runs alternate baseline and candidate in rotated order, with a closing baseline run; a
 * candidate clearly faster stops once its interval is narrow and wins; one no faster than the
 * baseline runs to its cap and is "not measurably faster"; when no candidate wins the baseline is
 * the answer. */
#include "verify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"
#include "../test_util.h"

static space *space_make(const char *extra) {
    char path[] = "/tmp/test_verify_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    const char *text = "engine: {command: ./engine}\n"
                       "objective: {metric: tps}\n"
                       "constraints: [ppl <= 2.4]\n"
                       "parameters: {W: {type: int, min: 0, max: 3}}\n"
                       "verify: {top: 2, repeats: 1, tolerance: 0.05}\n";
    if (extra)
        text = "engine: {command: ./engine}\n"
               "objective: {metric: tps}\n"
               "constraints: [ppl <= 2.4]\n"
               "parameters: {W: {type: int, min: 0, max: 3}}\n";
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    if (extra) CHECK(write(fd, extra, strlen(extra)) == (ssize_t)strlen(extra));
    close(fd);
    char err[512];
    space *sp = space_load(path, err, sizeof err);
    if (!sp) die("%s", err);
    unlink(path);
    return sp;
}

/* Records are kept by the tables: they live in this list until the end. */
static cJSON *records[128];
static int n_records;

static void add(trial_table *t, trial_table *vt, const char *phase, int w, double tps, double ppl) {
    char *text = xasprintf("{\"id\":%d,\"phase\":\"%s\",\"point\":{\"W\":\"%d\"},\"levels\":[%d],"
                           "\"status\":\"ok\",\"metrics\":{\"tps\":%g,\"ppl\":%g}}",
                           n_records + 1, phase, w, w, tps, ppl);
    cJSON *r = cJSON_Parse(text);
    free(text);
    CHECK(r && n_records < 128);
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

/* The paired verification against a baseline W=0 (tps 100). */
static void paired(void) {
    /* t interval: log-ratios 0.1, 0.2, 0.3: mean 0.2, sd 0.1, t(0.975, 2) = 4.302653. */
    verify_speedup su = verify_speedup_of((const double[]){0.1, 0.2, 0.3}, 3, 0.95);
    EXPECT(su.pairs == 3 && fabs(su.estimate - exp(0.2)) < 1e-12);
    EXPECT(fabs(su.low - exp(0.2 - 4.302653 * 0.1 / sqrt(3))) < 1e-6);
    EXPECT(fabs(su.high - exp(0.2 + 4.302653 * 0.1 / sqrt(3))) < 1e-6);
    su = verify_speedup_of((const double[]){0.1}, 1, 0.95);
    EXPECT(su.pairs == 1 && isnan(su.low) && isnan(su.high));

    space *sp = space_make("baseline: {W: 0}\n"
                           "verify: {top: 2, repeats: 2, max_repeats: 4, precision: 0.08}\n");
    trial_table *t = trials_new(sp), *vt = trials_new_verify(sp);
    add(t, vt, "baseline", 0, 100, 2.3);
    add(t, vt, "search", 1, 120, 2.3);
    add(t, vt, "search", 2, 110, 2.3);
    add(t, vt, "search", 3, 90, 2.3);
    resolved_constraint rc[1];
    const char *why;
    EXPECT(trials_resolve(t, rc, &why));
    verify_plan vp;
    EXPECT(verify_plan_make(sp, t, strategy_find("grid"), NULL, rc, &vp) == 3);
    EXPECT(vp.paired && plan_w(&vp, 0) == 1 && plan_w(&vp, 1) == 2 && plan_w(&vp, 2) == 3);
    /* Held out: W=1 is about 1.2x the baseline, W=2 about 1.0x. */
    static const double r1[] = {1.21, 1.18, 1.20, 1.19}, r2[] = {1.01, 0.98, 1.00, 1.02};
    static const double r3[] = {1.01, 0.96, 1.03, 0.99}; /* wider: runs to the cap */
    int n1 = 0, n2 = 0, seq[64], n = 0, lv[1];
    while (n < 64 && verify_next(sp, vt, &vp, lv)) {
        seq[n++] = lv[0];
        double v = lv[0] == 0 ? 100 : lv[0] == 1 ? 100 * r1[n1++ % 4] : 100 * r2[n2++ % 4];
        add(t, vt, "verify", lv[0], v, 2.3);
    }
    /* baseline, W=1, baseline, W=2; then the round rotated: baseline, W=2, baseline, W=1 */
    EXPECT(n >= 8 && seq[0] == 0 && seq[1] == 1 && seq[2] == 0 && seq[3] == 2);
    EXPECT(seq[4] == 0 && seq[5] == 2 && seq[6] == 0 && seq[7] == 1);
    for (int i = 0; i < n; i += 2)
        EXPECT(seq[i] == 0 && (i + 1 >= n || seq[i + 1] != 0));
    /* Both stop at 3 pairs, before the cap of 4: with two candidates side by side each
     * interval is at 97.5 % (t = 6.205 at 2 degrees of freedom), half-widths on the speed-up
     * 0.055 and 0.054, under 0.08. A closing baseline run ends the sequence. */
    EXPECT(n1 == 3 && n2 == 3 && n == 13 && seq[12] == 0);
    verify_outcome vo;
    verify_judge(sp, t, vt, &vp, &vo);
    EXPECT(vo.winner == 0 && !vo.baseline_answer && vo.speedup.pairs == 3);
    EXPECT(vo.speedup.low > 1 && fabs(vo.speedup.estimate - 1.1966) < 1e-3);
    EXPECT(vo.summary && strstr(vo.summary, "1.20x [") &&
           strstr(vo.summary, "] over the baseline on the holdout prompts, 3 pairs"));
    const cJSON *c1 = cJSON_GetArrayItem(vo.candidates, 1);
    EXPECT(!strcmp(cJSON_GetObjectItem(c1, "verdict")->valuestring, "not measurably faster"));
    verify_outcome_free(&vo);
    verify_plan_free(&vp);

    /* Only W=2 and W=3 left to choose from: neither is measurably faster, so the answer is
     * the baseline. */
    trial_table *t2 = trials_new(sp), *vt2 = trials_new_verify(sp);
    add(t2, vt2, "baseline", 0, 100, 2.3);
    add(t2, vt2, "search", 2, 110, 2.3);
    EXPECT(trials_resolve(t2, rc, &why));
    EXPECT(verify_plan_make(sp, t2, strategy_find("grid"), NULL, rc, &vp) == 1);
    n2 = 0;
    while (verify_next(sp, vt2, &vp, lv))
        add(t2, vt2, "verify", lv[0], lv[0] == 0 ? 100 : 100 * r3[n2++ % 4], 2.3);
    EXPECT(n2 == 4); /* half-width 0.09 after 3 pairs: on to the cap */
    verify_judge(sp, t2, vt2, &vp, &vo);
    EXPECT(vo.winner == -1 && vo.baseline_answer && vo.t_index == 0);
    EXPECT(vo.summary && strstr(vo.summary, "no setting was measurably faster"));
    verify_outcome_free(&vo);
    verify_plan_free(&vp);
    trials_free(vt2);
    trials_free(t2);

    /* A machine that speeds up 5 % a run, and a candidate no faster than the baseline: each
     * candidate run against the baseline runs on both sides of it gives a ratio of exactly 1
     * (against the run before it alone, 1.05: "faster"). */
    trial_table *t3 = trials_new(sp), *vt3 = trials_new_verify(sp);
    add(t3, vt3, "baseline", 0, 100, 2.3);
    add(t3, vt3, "search", 1, 120, 2.3);
    EXPECT(trials_resolve(t3, rc, &why));
    EXPECT(verify_plan_make(sp, t3, strategy_find("grid"), NULL, rc, &vp) == 1);
    n = 0;
    while (n < 64 && verify_next(sp, vt3, &vp, lv))
        add(t3, vt3, "verify", lv[0], 100 * pow(1.05, n++), 2.3);
    EXPECT(n == 5 && lv[0] == 0); /* 2 pairs of equal ratios end it, then the closing run */
    verify_judge(sp, t3, vt3, &vp, &vo);
    EXPECT(vo.winner == -1 && vo.baseline_answer);
    const cJSON *js = cJSON_GetObjectItem(cJSON_GetArrayItem(vo.candidates, 0), "speedup");
    EXPECT(fabs(cJSON_GetObjectItem(js, "estimate")->valuedouble - 1) < 1e-5); /* %g records */
    verify_outcome_free(&vo);
    verify_plan_free(&vp);
    trials_free(vt3);
    trials_free(t3);
    trials_free(vt);
    trials_free(t);
    space_free(sp);
}

int main(void) {
    space *sp = space_make(NULL);
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
    EXPECT(verify_plan_make(sp, t, grid, NULL, rc, &vp) == 3);
    EXPECT(vp.n == 3 && plan_w(&vp, 0) == 1 && plan_w(&vp, 1) == 2 && plan_w(&vp, 2) == 3);
    EXPECT(!vp.paired);
    verify_plan_free(&vp);

    /* A rank hook first: W=3, (W=0 is infeasible: skipped), W=2. */
    strategy_ops ranked = *grid;
    ranked.rank = fake_rank;
    fake_order = (const int[]){3, 0, 2};
    fake_n = 3;
    EXPECT(verify_plan_make(sp, t, &ranked, NULL, rc, &vp) == 3);
    EXPECT(plan_w(&vp, 0) == 3 && plan_w(&vp, 1) == 2 && plan_w(&vp, 2) == 1);
    verify_plan_free(&vp);
    /* A rank naming one point: filled up from the measured order. */
    fake_order = (const int[]){2};
    fake_n = 1;
    EXPECT(verify_plan_make(sp, t, &ranked, NULL, rc, &vp) == 3);
    EXPECT(plan_w(&vp, 0) == 2 && plan_w(&vp, 1) == 1 && plan_w(&vp, 2) == 3);
    verify_plan_free(&vp);

    /* Judging. W=1 breaks the bound on held-out prompts; W=2 wins with a gap of -1.25 %. */
    EXPECT(verify_plan_make(sp, t, grid, NULL, rc, &vp) == 3);
    verify_outcome vo;
    verify_judge(sp, t, vt, &vp, &vo); /* nothing verified yet: no verdict, no answer */
    EXPECT(vo.winner == -1 && !vo.baseline_answer && vo.n_warnings == 0 && vo.n_tried == 0);
    verify_outcome_free(&vo);
    int lv[1];
    EXPECT(verify_next(sp, vt, &vp, lv) && lv[0] == 1);
    add(t, vt, "verify", 1, 80, 2.45);
    add(t, vt, "verify", 2, 79, 2.25);
    EXPECT(t->n_points == 4 && t->n_runs == 4 && vt->n_points == 2 && vt->n_runs == 2);
    verify_judge(sp, t, vt, &vp, &vo);
    EXPECT(vo.winner == 1 && vo.t_index == 2 && vt->points[vo.vt_index].levels[0] == 2);
    EXPECT(vo.n_tried == 2 && vo.n_dropped == 1);
    /* W=1 is dropped: W=3 comes into play and is the next run. */
    EXPECT(verify_next(sp, vt, &vp, lv) && lv[0] == 3);
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
    space_free(sp);

    paired();
    for (int i = 0; i < n_records; i++)
        cJSON_Delete(records[i]);
    if (failures) fprintf(stderr, "%d failures\n", failures);
    return failures ? 1 : 0;
}
