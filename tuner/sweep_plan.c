/* sweep_plan.c: what a sweep session will do, told before it does it; see sweep_state.h.
 *
 * The plan (study, engine, objective, constraints, lattice, workers, verification, budgets,
 * baseline), the count of runs the progress line expects, and --dry-run, which prints the
 * plan and the strategy's first proposals on an empty study without running or writing
 * anything. Nothing here runs an engine or touches the study folder, so it stands apart
 * from the loop and from the runs.
 */
#include "sweep_state.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input.h"
#include "noise.h"
#include "slurm.h"
#include "util.h"

static long planned_points(const space *sp) {
    long n = space_n_points(sp);
    if (sp->max_evaluations > 0 && sp->max_evaluations < n) n = sp->max_evaluations;
    return n;
}

/* Runs planned for the whole study: the search, then the verification of the candidates. */
long sweep_planned_runs(const space *sp) {
    long n = planned_points(sp), top = sp->verify_top < n ? sp->verify_top : n;
    return n * sp->repeats + (sp->baseline ? noise_baseline_runs(sp) - sp->repeats : 0) +
           top * sp->verify_repeats * (sp->baseline ? 2 : 1);
}

static void print_plan(const sweep_state *s, FILE *f) {
    const space *sp = s->sp;
    fprintf(f, "study:      %s (%s)\n", s->study, s->dir);
    fprintf(f, "engine:    ");
    for (int i = 0; i < sp->argc; i++)
        fprintf(f, " %s", sp->argv[i]);
    if (sp->slurm) { /* each trial a Slurm job (slurm.h) */
        char *srun = slurm_srun_line(sp->slurm, sp->timeout_s);
        fprintf(f, "\nlauncher:   %s", srun);
        free(srun);
    }
    fprintf(f, "\nobjective:  %s %s\n", sp->maximize ? "maximize" : "minimize", sp->objective);
    for (int c = 0; c < sp->n_constraints; c++)
        fprintf(f, "constraint: %s\n", sp->constraints[c].text);
    fprintf(f, "space:      %d knobs, %ld points; strategy %s; repeats %d\n", sp->n_params,
            space_n_points(sp), sp->strategy, sp->repeats);
    fprintf(f, "workers:    %d", s->pool.n);
    for (int i = 0; i < s->pool.n && s->opt->gpus; i++)
        fprintf(f, "%s%s", i ? "," : " (GPUs ", s->opt->gpus[i]);
    fprintf(f, "%s\n", s->opt->gpus ? ")" : "");
    fprintf(f,
            "verify:     top %d (up to %d down the ranking), %d to %d %s each on the %s prompts, "
            "confidence %g, precision %g, tolerance %g\n",
            sp->verify_top, sp->verify_max_candidates, sp->verify_repeats, sp->verify_max_repeats,
            sp->baseline ? "pairs with the baseline" : "runs", sp->verify_prompt_set,
            sp->verify_confidence, sp->verify_precision, sp->verify_tolerance);
    if (s->warm.n > 0) {
        char *key = space_point_key(sp, s->warm.points[0]);
        fprintf(f, "warm start: %d points from %s, first %s\n", s->warm.n, s->warm.source, key);
        free(key);
    }
    fprintf(f, "budget:     ");
    if (sp->max_evaluations > 0)
        fprintf(f, "%ld evaluations", sp->max_evaluations);
    else
        fprintf(f, "no evaluation limit");
    if (sp->max_wall_s > 0)
        fprintf(f, ", %g s of wall time\n", sp->max_wall_s);
    else
        fprintf(f, ", no wall-time limit\n");
    if (sp->baseline) {
        char *key = space_point_key(sp, sp->baseline);
        fprintf(f, "baseline:   %s (measured first)\n", key);
        free(key);
    }
}

/* --dry-run: the plan and the first proposals of the strategy on an empty study. */
int sweep_dry_run(sweep_state *s) {
    const space *sp = s->sp;
    print_plan(s, stdout);
    if (study_exists(s->opt->out_dir, s->study)) {
        char *tp = xasprintf("%s/trials.jsonl", s->dir);
        cJSON **recs;
        int n;
        char err[ERR_LEN];
        char *hp = xasprintf("%s/space.hash", s->dir), want[32];
        char *stored = input_read(hp, INPUT_MAX_SMALL, NULL, err, sizeof err);
        snprintf(want, sizeof want, "%016" PRIx64, sp->hash);
        if (stored && strncmp(stored, want, 16) != 0)
            printf("resume:     refused: the space changed since the study began (pass --new)\n");
        else if (journal_load(tp, 0, &recs, &n, err, sizeof err)) {
            printf("resume:     %d trials already in %s\n", n, tp);
            for (int i = 0; i < n; i++)
                cJSON_Delete(recs[i]);
            free(recs);
        }
        free(stored);
        free(hp);
        free(tp);
    }
    int max = 10;
    int **pending = xcalloc((size_t)max, sizeof *pending);
    int n_pending = 0;
    resolved_constraint *rc = s->rc;
    for (int c = 0; c < sp->n_constraints; c++) {
        rc[c].def = &sp->constraints[c];
        rc[c].bound = sp->constraints[c].relative ? NAN : sp->constraints[c].value;
    }
    printf("first proposals on an empty study:\n");
    while (n_pending < max) {
        int *lv = xmalloc((size_t)sp->n_params * sizeof *lv);
        if (!s->ops->propose(s->strat, NULL, 0, rc, sp->n_constraints, (const int *const *)pending,
                             n_pending, lv)) {
            free(lv);
            break;
        }
        char *key = space_point_key(sp, lv);
        printf("  %2d. %s\n", n_pending + 1, key);
        free(key);
        pending[n_pending++] = lv;
    }
    for (int i = 0; i < n_pending; i++)
        free(pending[i]);
    free(pending);
    printf("dry run: nothing was run and nothing was written\n");
    return EXIT_OK;
}
