/* sweep.c: one session of a study; see sweep.h.
 *
 * The loop keeps no state of its own between runs: everything it decides (which point is
 * unfinished, what the bounds are, what to propose next, how much budget is left) is
 * recomputed from the trial table, which is rebuilt from trials.jsonl on resume. That is
 * what makes `kill -9` harmless: the next session sees exactly the runs that were
 * journaled and continues from there, proposing what the first session would have.
 *
 * Shape of the loop: fill every free worker slot with the next run (next_work: the
 * baseline alone first, then unfinished repeats, the warm-start queue, the strategy's
 * proposal given the points in flight; once the search is over and nothing of it is in
 * flight, the verification plan), then wait for runs to end and journal each one whole
 * (collect_run). Beyond the tables, the only state is what is in flight (the worker pool)
 * and the next trial id; both are empty again when a session starts. With one worker the
 * order of runs is exactly that of the one-at-a-time loop.
 */
#include "sweep.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "answer.h"
#include "conditions.h"
#include "input.h"
#include "journal.h"
#include "manifest.h"
#include "noise.h"
#include "progress.h"
#include "runner.h"
#include "slurm.h"
#include "space.h"
#include "strategy.h"
#include "trials.h"
#include "util.h"
#include "verify.h"
#include "warmstart.h"
#include "workers.h"

enum { ERR_LEN = 2048 };

/* Everything one session works with. */
typedef struct {
    const sweep_options *opt;
    space *sp;
    const strategy_ops *ops;
    strategy *strat;
    char *study;       /* the study's name */
    char *dir;         /* out/<study> */
    char *running_dir; /* out/<study>/running: the runs in flight (runner.h) */
    int lock_fd;       /* the study's lock (journal.h: study_lock), -1 when none */
    int runs_started;  /* runs this session started */
    journal *j;
    trial_table *t;          /* tuning phases (baseline, warm, search) */
    trial_table *vt;         /* verification runs (phase verify) */
    resolved_constraint *rc; /* [n_constraints + 1] */
    progress prog;
    double session_t0;
    double elapsed_base; /* study wall time of earlier sessions */
    worker_pool pool;    /* the runs in flight */
    long next_id;        /* the id the next run gets (ids are allocated at start) */
    warm_queue warm;     /* --warm-start points, measured first (n == 0: none) */
    const char *stop;    /* why the search ended (NULL while it goes on) */
    int search_over;     /* the search is over and nothing of it is in flight */
    verify_plan plan;    /* made when the search is over */
    int plan_made;
    double noise;           /* relative sd of the baseline's objective (noise.h), NAN: none */
    int noise_given;        /* measured and handed to the strategy */
    conditions *cond_start; /* [pool.n] each slot's conditions at the start of its run */
    conditions cond_ref;    /* at the start of this session's first run */
    int cond_ref_set, drift_warned;
} sweep_state;

/* ---------------------------------------------------------------------------------------- */
/* helpers over the table */

/* "tps 312.4 at K=V,..." for the live line (into buf): the best measured median so far
 * (not the strategy's rank, which may be costly to compute at every trial). */
static const char *best_text(sweep_state *s, char *buf, size_t n) {
    const char *why;
    if (!s->prog.tty || !trials_resolve(s->t, s->rc, &why)) return NULL;
    int *order = xmalloc((size_t)(s->t->n_points + 1) * sizeof *order);
    int b = trials_order(s->t, s->rc, order) > 0 ? order[0] : -1;
    free(order);
    if (b < 0) return NULL;
    snprintf(buf, n, "%s %.6g at %s", s->sp->objective, s->t->points[b].objective,
             s->t->points[b].key);
    return buf;
}

/* ---------------------------------------------------------------------------------------- */
/* one run */

static cJSON *record_build(const sweep_state *s, const worker_slot *w, const run_result *r,
                           const char *finished, double study_elapsed) {
    const space *sp = s->sp;
    const int *levels = w->levels;
    cJSON *rec = cJSON_CreateObject();
    cJSON_AddNumberToObject(rec, "id", (double)w->id);
    cJSON_AddStringToObject(rec, "phase", w->phase);
    cJSON_AddStringToObject(rec, "prompt_set", w->prompt_set);
    if (w->gpu) cJSON_AddStringToObject(rec, "gpu", w->gpu);
    cJSON *point = cJSON_AddObjectToObject(rec, "point");
    cJSON *lv = cJSON_AddArrayToObject(rec, "levels");
    char buf[256];
    for (int i = 0; i < sp->n_params; i++) {
        space_param_value(&sp->params[i], levels[i], buf, sizeof buf);
        cJSON_AddStringToObject(point, sp->params[i].name, buf);
        cJSON_AddItemToArray(lv, cJSON_CreateNumber(levels[i]));
    }
    cJSON_AddNumberToObject(rec, "repeat", w->repeat);
    cJSON_AddStringToObject(rec, "status", trial_status_name(r->status));
    if (r->metrics)
        cJSON_AddItemToObject(rec, "metrics", cJSON_Duplicate(r->metrics, 1));
    else
        cJSON_AddNullToObject(rec, "metrics");
    if (r->reason)
        cJSON_AddStringToObject(rec, "reason", r->reason);
    else
        cJSON_AddNullToObject(rec, "reason");
    cJSON_AddNumberToObject(rec, "exit_code", r->exit_code);
    cJSON_AddNumberToObject(rec, "signal", r->term_signal);
    cJSON_AddNumberToObject(rec, "wall_s", r->wall_s);
    cJSON_AddStringToObject(rec, "started", w->started);
    cJSON_AddStringToObject(rec, "finished", finished);
    cJSON_AddNumberToObject(rec, "study_elapsed_s", study_elapsed);
    run_result_where_json(r, rec); /* "node", and "slurm" for a Slurm job */
    return rec;
}

/* s as one shell word: as it is when it is plain, else single-quoted. Caller frees. */
static char *shell_word(const char *s) {
    return s[0] && strspn(
                       s,
                       "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-+=:,") ==
                       strlen(s)
               ? xstrdup(s)
               : shell_single_quote(s);
}

/* The message that ends an interrupted session. */
static int interrupted_exit(sweep_state *s, int sig, int during_trial) {
    progress_end(&s->prog);
    char *space_arg = shell_word(s->opt->space_path), *out_arg = shell_word(s->opt->out_dir);
    fprintf(stderr,
            "%s: interrupted by %s%s; %d trials of study '%s' are safe in %s.\n"
            "resume with: tuner sweep %s --study %s%s%s\n",
            util_progname,
            sig == SIGINT    ? "SIGINT"
            : sig == SIGTERM ? "SIGTERM"
                             : "a signal",
            during_trial > 1    ? " (the running trials were stopped and will be run again)"
            : during_trial == 1 ? " (the running trial was stopped and will be run again)"
                                : "",
            s->t->n_runs, s->study, s->j->trials_path, space_arg, s->study,
            strcmp(s->opt->out_dir, "out") ? " --out " : "",
            strcmp(s->opt->out_dir, "out") ? out_arg : "");
    free(space_arg);
    free(out_arg);
    return 128 + sig;
}

/* The metrics the space uses (objective, then each distinct constraint metric) as
 * " tps=312.4 ppl=2.38" into buf, for the per-trial log line. */
static void figures_text(const space *sp, const cJSON *metrics, char *buf, size_t n) {
    size_t off = 0;
    buf[0] = '\0';
    for (int c = -1; metrics && c < sp->n_constraints && off < n; c++) {
        const char *name = c < 0 ? sp->objective : sp->constraints[c].metric;
        int seen = c >= 0 && strcmp(name, sp->objective) == 0;
        for (int k = 0; k < c && !seen; k++)
            seen = strcmp(name, sp->constraints[k].metric) == 0;
        if (seen) continue;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(metrics, name);
        if (cJSON_IsNumber(v))
            off += (size_t)snprintf(buf + off, n - off, " %s=%.6g", name, v->valuedouble);
        else if (cJSON_IsNull(v))
            off += (size_t)snprintf(buf + off, n - off, " %s=inf", name);
    }
}

/* Start the next run of the point `levels` in free slot `slot`: its id is allocated now,
 * its repeat number counts the runs finished and in flight of its phase's table. */
static void start_run(sweep_state *s, int slot, const int *levels, const char *phase) {
    int verify = strcmp(phase, "verify") == 0;
    const trial_table *t = verify ? s->vt : s->t;
    int idx = trials_find(t, levels);
    /* The lowest repeat number no finished run and no run in flight of this point has (a
     * resumed study may lack a middle one, e.g. the one a killed sweep was running). */
    int repeat = 0;
    for (int taken = 1; taken;) {
        taken = 0;
        for (int r = 0; idx >= 0 && r < t->points[idx].n_runs && !taken; r++) {
            const cJSON *rep = cJSON_GetObjectItemCaseSensitive(t->points[idx].runs[r], "repeat");
            taken = cJSON_IsNumber(rep) && rep->valuedouble == repeat;
        }
        for (int i = 0; i < s->pool.n && !taken; i++) {
            const worker_slot *w = &s->pool.slots[i];
            taken = w->h && (strcmp(w->phase, "verify") == 0) == verify &&
                    !memcmp(w->levels, levels, (size_t)s->sp->n_params * sizeof *levels) &&
                    w->repeat == repeat;
        }
        repeat += taken;
    }
    long id = s->next_id++;
    char *log_path = xasprintf("%s/logs/%ld.log", s->dir, id);
    char *result_path = xasprintf("%s/logs/%ld.result.json", s->dir, id);
    run_request req = {.prompt_set = verify ? s->sp->verify_prompt_set : "tune",
                       .trial_id = id,
                       .log_path = log_path,
                       .result_path = result_path,
                       .grace_s = s->opt->grace_s,
                       .running_dir = s->running_dir,
                       .log_limit = s->opt->log_limit,
                       .study = s->study};
    char started[32];
    time_iso_utc(started, sizeof started);
    conditions_sample(&s->cond_start[slot], s->pool.slots[slot].gpu);
    if (!s->cond_ref_set) s->cond_ref = s->cond_start[slot];
    s->cond_ref_set = 1;
    workers_start(&s->pool, slot, s->sp, levels, phase, &req, repeat, started);
    free(log_path);
    free(result_path);
}

/* Journal the ended run of slot `slot` and add it to the tables. Returns 0 to go on, else
 * an exit status (interrupted, or the journal cannot be written). */
static int collect_run(sweep_state *s, int slot) {
    const space *sp = s->sp;
    worker_slot *w = &s->pool.slots[slot];
    run_result r;
    run_outcome oc = workers_collect(&s->pool, slot, &r);
    if (oc == RUN_INTERRUPTED) {
        run_result_free(&r);
        int n = 1 + s->pool.n_running;
        workers_stop_all(&s->pool);
        return interrupted_exit(s, runner_interrupted(), n);
    }
    char finished[32];
    time_iso_utc(finished, sizeof finished);
    double elapsed = s->elapsed_base + now_seconds() - s->session_t0;
    cJSON *rec = record_build(s, w, &r, finished, elapsed);
    conditions end;
    conditions_sample(&end, w->gpu);
    cJSON_AddItemToObject(rec, "conditions", conditions_json(&s->cond_start[slot], &end));
    char err[ERR_LEN];
    if (!journal_append(s->j, rec, err, sizeof err)) {
        cJSON_Delete(rec);
        run_result_free(&r);
        workers_stop_all(&s->pool);
        progress_end(&s->prog);
        fprintf(stderr, "%s: %s\n", util_progname, err);
        return EXIT_ERROR;
    }
    cJSON_Delete(rec);
    const cJSON *kept = s->j->records[s->j->n_records - 1];
    char where[64];
    snprintf(where, sizeof where, "trial %ld", w->id);
    if (trials_add(s->t, kept, where, err, sizeof err) == TRIALS_BAD ||
        trials_add(s->vt, kept, where, err, sizeof err) == TRIALS_BAD)
        die("%s", err);

    char *key = space_point_key(sp, w->levels);
    char figures[256], gpu[64] = "";
    figures_text(sp, r.metrics, figures, sizeof figures);
    if (w->gpu) snprintf(gpu, sizeof gpu, " on GPU %s", w->gpu);
    int verify = strcmp(w->phase, "verify") == 0;
    int of = verify                              ? sp->verify_max_repeats
             : strcmp(w->phase, "baseline") == 0 ? noise_baseline_runs(sp)
                                                 : sp->repeats;
    char rep[32];
    snprintf(rep, sizeof rep, w->repeat < of ? "%d/%d" : "%d", w->repeat + 1, of);
    progress_log(&s->prog, "trial %ld [%s] %s repeat %s%s: %s%s%s%s (%.1f s)", w->id, w->phase, key,
                 rep, gpu, trial_status_name(r.status), figures, r.reason ? ": " : "",
                 r.reason ? r.reason : "", r.wall_s);
    free(key);
    char drift[512];
    int kinds = conditions_drift(&s->cond_ref, &end, s->drift_warned, drift, sizeof drift);
    if (kinds) progress_log(&s->prog, "%s: warning: %s", util_progname, drift);
    s->drift_warned |= kinds;
    run_result_free(&r);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* the plan */

static long planned_points(const space *sp) {
    long n = space_n_points(sp);
    if (sp->max_evaluations > 0 && sp->max_evaluations < n) n = sp->max_evaluations;
    return n;
}

/* Runs planned for the whole study: the search, then the verification of the candidates. */
static long planned_runs(const space *sp) {
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
static int dry_run(sweep_state *s) {
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

/* ---------------------------------------------------------------------------------------- */
/* the loop */

typedef enum {
    WORK_RUN,  /* start this point now */
    WORK_WAIT, /* nothing to start until a run in flight ends */
    WORK_DONE, /* the study is over (s->stop says why the search ended) */
    WORK_ERROR /* stop with an error (already reported) */
} work;

/* Points of the tuning phases in flight that have no finished run yet: the strategy's
 * pending points. Returns how many (pointers into the pool's slots). */
static int pending_points(const sweep_state *s, const int **pending) {
    int n = 0;
    size_t bytes = (size_t)s->sp->n_params * sizeof(int);
    for (int i = 0; i < s->pool.n; i++) {
        const worker_slot *w = &s->pool.slots[i];
        if (!w->h || !strcmp(w->phase, "verify") || trials_find(s->t, w->levels) >= 0) continue;
        int dup = 0;
        for (int k = 0; k < n && !dup; k++)
            dup = !memcmp(pending[k], w->levels, bytes);
        if (!dup) pending[n++] = w->levels;
    }
    return n;
}

/* Total runs of a point in a table, finished and in flight. */
static int runs_of(const sweep_state *s, const int *levels, int verify) {
    const trial_table *t = verify ? s->vt : s->t;
    int idx = trials_find(t, levels);
    return (idx >= 0 ? t->points[idx].n_runs : 0) + workers_inflight(&s->pool, levels, verify);
}

/* The noise of the baseline's runs (noise.h): printed, warned about when high, handed to
 * the strategy. Also on resume, rebuilt from the journal. */
static void noise_take(sweep_state *s) {
    int n;
    char text[256];
    s->noise = noise_measure(s->sp, s->t, &n);
    s->noise_given = 1;
    noise_text(s->sp, s->noise, n, text, sizeof text);
    progress_log(&s->prog, "noise: %s", text);
    if (isfinite(s->noise) && s->noise > NOISE_HIGH)
        progress_log(&s->prog,
                     "%s: warning: the measurements are noisy (relative sd %.1f %%, over %.0f %%): "
                     "promising points get up to %d runs, verification needs more pairs, and "
                     "small differences will not be resolved; a quieter machine gives sharper "
                     "answers",
                     util_progname, 100 * s->noise, 100 * NOISE_HIGH,
                     s->sp->repeats + NOISE_MAX_EXTRA);
    if (isfinite(s->noise) && s->ops->set_noise) s->ops->set_noise(s->strat, s->noise);
}

/* The next run of the search: the baseline before anything (and alone, until its repeats
 * are done), then more repeats of points already started, then (within the budgets) the
 * warm-start queue, then the strategy's proposal given the points in flight. */
static work next_tuning(sweep_state *s, int *levels, const char **phase) {
    const space *sp = s->sp;
    size_t bytes = (size_t)sp->n_params * sizeof *levels;
    int need_baseline = 0;
    for (int c = 0; c < sp->n_constraints; c++)
        need_baseline |= sp->constraints[c].relative;
    if (sp->baseline) {
        int b = trials_find(s->t, sp->baseline), want = noise_baseline_runs(sp);
        if (b < 0 || s->t->points[b].n_runs < want) {
            if (runs_of(s, sp->baseline, 0) >= want) return WORK_WAIT;
            memcpy(levels, sp->baseline, bytes);
            *phase = "baseline";
            return WORK_RUN;
        }
        const char *why;
        if (need_baseline && !trials_resolve(s->t, s->rc, &why)) {
            const point_stats *p = &s->t->points[b];
            progress_end(&s->prog);
            fprintf(stderr,
                    "%s: the baseline point %s cannot resolve the relative constraints: %s%s%s%s.\n"
                    "The sweep stops here. Fix the engine or the baseline, then start a new "
                    "study with --new (logs: %s/logs/).\n",
                    util_progname, p->key, why, p->reason ? " (" : "", p->reason ? p->reason : "",
                    p->reason ? ")" : "", s->dir);
            return WORK_ERROR;
        }
        if (!s->noise_given) noise_take(s);
    }
    const char *why_rc;
    trials_resolve(s->t, s->rc, &why_rc);
    for (int i = 0; i < s->t->n_points; i++) {
        const point_stats *p = &s->t->points[i];
        if (runs_of(s, p->levels, 0) < noise_runs_wanted(sp, s->t, s->rc, s->noise, i)) {
            memcpy(levels, p->levels, bytes);
            *phase = p->baseline ? "baseline" : p->phase;
            return WORK_RUN;
        }
    }
    const int **pending = xcalloc((size_t)s->pool.n + 1, sizeof *pending);
    int n_pending = pending_points(s, pending);
    for (int k = 0; k < n_pending; k++) {
        if (runs_of(s, pending[k], 0) < sp->repeats) {
            for (int i = 0; i < s->pool.n; i++) /* the phase of the run in flight */
                if (s->pool.slots[i].h && s->pool.slots[i].levels == pending[k])
                    *phase = s->pool.slots[i].phase;
            memcpy(levels, pending[k], bytes);
            free(pending);
            return WORK_RUN;
        }
    }
    work out = WORK_DONE;
    double elapsed = s->elapsed_base + now_seconds() - s->session_t0;
    if (sp->max_evaluations > 0 && s->t->n_points + n_pending >= sp->max_evaluations) {
        s->stop = "the evaluation budget is used up";
        goto done;
    }
    if (sp->max_wall_s > 0 && elapsed >= sp->max_wall_s) {
        s->stop = "the wall-time budget is used up";
        goto done;
    }
    for (int k = 0; k < s->warm.n; k++) {
        if (trials_find(s->t, s->warm.points[k]) >= 0 || runs_of(s, s->warm.points[k], 0) > 0)
            continue;
        memcpy(levels, s->warm.points[k], bytes);
        *phase = "warm";
        out = WORK_RUN;
        goto done;
    }
    const char *why;
    trials_resolve(s->t, s->rc, &why);
    observation *obs = xmalloc((size_t)(s->t->n_points + 1) * sizeof *obs);
    for (int i = 0; i < s->t->n_points; i++)
        obs[i] = s->t->points[i].obs;
    int got = s->ops->propose(s->strat, obs, s->t->n_points, s->rc, sp->n_constraints,
                              (const int *const *)pending, n_pending, levels);
    free(obs);
    if (!got) {
        s->stop = "the strategy has no point left to propose";
        goto done;
    }
    int dup = trials_find(s->t, levels) >= 0;
    for (int k = 0; k < n_pending && !dup; k++)
        dup = !memcmp(pending[k], levels, bytes);
    if (dup) {
        char *key = space_point_key(sp, levels);
        die("strategy '%s' proposed %s, which is already measured or running", sp->strategy, key);
    }
    *phase = "search";
    out = WORK_RUN;
done:
    free(pending);
    return out;
}

/* The next run of the verification (verify.h): one at a time, since a pair's two runs must
 * see the same machine. */
static work next_verify(sweep_state *s, int *levels, const char **phase) {
    const space *sp = s->sp;
    if (!s->plan_made) {
        const char *why;
        trials_resolve(s->t, s->rc, &why);
        verify_plan_make(sp, s->t, s->ops, s->strat, s->rc, &s->plan);
        s->plan_made = 1;
        int top = s->plan.n < sp->verify_top ? s->plan.n : sp->verify_top;
        s->prog.total_runs =
            s->t->n_runs + s->vt->n_runs + (long)top * sp->verify_repeats * (s->plan.paired + 1);
        if (s->plan.n > 0) progress_log(&s->prog, "%s", verify_plan_text(sp, &s->plan));
    }
    if (s->pool.n_running > 0) return WORK_WAIT;
    if (!verify_next(sp, s->vt, &s->plan, levels)) return WORK_DONE;
    *phase = "verify";
    return WORK_RUN;
}

static work next_work(sweep_state *s, int *levels, const char **phase) {
    if (!s->search_over) {
        work w = next_tuning(s, levels, phase);
        if (w != WORK_DONE) return w;
        if (s->pool.n_running > 0) return WORK_WAIT; /* the search's last runs */
        s->search_over = 1;
    }
    return next_verify(s, levels, phase);
}

/* After the loop: the summary, the verdict of the verification and the manifest
 * (answer.h). */
static int finish(sweep_state *s) {
    progress_end(&s->prog);
    answer_input in = {.sp = s->sp,
                       .t = s->t,
                       .vt = s->vt,
                       .plan = &s->plan,
                       .rc = s->rc,
                       .study = s->study,
                       .dir = s->dir,
                       .stop = s->stop,
                       .wall_used_s = s->elapsed_base + now_seconds() - s->session_t0,
                       .noise = s->noise,
                       .unchanged_ok = s->runs_started == 0};
    int a = answer_finish(&in);
    return a == ANSWER_MANIFEST ? EXIT_OK : a == ANSWER_NONE ? EXIT_NO_FEASIBLE : EXIT_ERROR;
}

static int sweep_loop(sweep_state *s) {
    const space *sp = s->sp;
    int *levels = xmalloc((size_t)sp->n_params * sizeof *levels);
    const char *phase = NULL;
    char best[512];
    int rc = 0;
    for (;;) {
        if (runner_interrupted()) {
            int n = s->pool.n_running;
            workers_stop_all(&s->pool);
            rc = interrupted_exit(s, runner_interrupted(), n);
            break;
        }
        /* Fill the free slots. */
        work w = WORK_WAIT;
        int slot;
        while ((slot = workers_free_slot(&s->pool)) >= 0 &&
               (w = next_work(s, levels, &phase)) == WORK_RUN) {
            if (s->j->read_only) {
                progress_end(&s->prog);
                fprintf(stderr,
                        "%s: study '%s' is not finished, and its folder %s cannot be written: "
                        "no trial can be run\n",
                        util_progname, s->study, s->dir);
                w = WORK_ERROR;
                break;
            }
            s->runs_started++;
            start_run(s, slot, levels, phase);
            progress_update(&s->prog, s->t->n_runs + s->vt->n_runs, s->pool.n_running,
                            best_text(s, best, sizeof best));
        }
        if (w == WORK_ERROR) {
            workers_stop_all(&s->pool);
            rc = EXIT_ERROR;
            break;
        }
        if (w == WORK_DONE && s->pool.n_running == 0) {
            rc = finish(s);
            break;
        }
        /* Wait for a run to end, then journal every run that has ended (before anything
         * new is proposed, so the strategy sees them as observations, not pending). */
        for (int ended = workers_wait(&s->pool, 20); ended >= 0 && rc == 0;
             ended = workers_ended(&s->pool))
            rc = collect_run(s, ended);
        if (rc != 0) break;
    }
    free(levels);
    return rc;
}

/* The warm-start queue: the one saved when the study began, else (on a study without
 * trials) the one --warm-start built (s->warm, built before the study folder was touched),
 * saved before the first trial. Returns 0, or -1 with err set. */
static int warm_setup(sweep_state *s, char *err, size_t errlen) {
    const char *other = s->opt->warm_start;
    warm_queue saved;
    int loaded = warmstart_load(s->dir, s->sp, &saved, err, errlen);
    if (loaded < 0) return -1;
    if (loaded > 0) {
        if (other && strcmp(other, saved.source) != 0) {
            snprintf(err, errlen,
                     "study '%s' began with --warm-start %s; it cannot switch to %s (pass --new "
                     "for a new study)",
                     s->study, saved.source, other);
            warmstart_free(&saved);
            return -1;
        }
        warmstart_free(&s->warm);
        s->warm = saved;
        return 0;
    }
    if (!other) return 0;
    if (s->t->n_runs > 0) {
        snprintf(err, errlen,
                 "study '%s' already has %d trials without a warm start; --warm-start applies "
                 "only when a study begins (pass --new for a new study)",
                 s->study, s->t->n_runs);
        return -1;
    }
    if (!warmstart_save(s->dir, s->sp, &s->warm, err, errlen)) return -1;
    char *key = space_point_key(s->sp, s->warm.points[0]);
    fprintf(stderr,
            "%s: warm start from %s: %d points first, beginning with the earlier winner %s\n",
            util_progname, other, s->warm.n, key);
    free(key);
    return 0;
}

/* Take the study for this session: its folder made and locked (journal.h: study_lock), and
 * what a killed earlier sweep left running stopped. With --new, the first of NAME,
 * NAME-2, ... that is neither a study nor being made into one by another sweep. Returns 0,
 * or -1 after printing why. */
static int study_claim(sweep_state *s, const char *name, char *err, size_t errlen) {
    const sweep_options *opt = s->opt;
    for (int k = 1;; k++) {
        if (opt->new_study) {
            free(s->study);
            s->study = k == 1 ? xstrdup(name) : xasprintf("%s-%d", name, k);
            if (study_exists(opt->out_dir, s->study)) continue;
            free(s->dir);
            s->dir = xasprintf("%s/%s", opt->out_dir, s->study);
        }
        if (!dir_make(s->dir, err, errlen)) break;
        int got = study_lock(s->dir, s->study, &s->lock_fd, err, errlen);
        if (got < 0 || (got == 0 && !opt->new_study)) break;
        if (got == 1 && (!opt->new_study || !study_exists(opt->out_dir, s->study))) {
            char *running = xasprintf("%s/running", s->dir);
            runner_stop_recorded(running, opt->grace_s);
            free(running);
            /* Slurm jobs a killed sweep left in the queue (slurm.h) go before anything runs. */
            if (s->sp->slurm && slurm_cancel(s->study, -1, "left by an earlier sweep",
                                             30 + opt->grace_s, NULL) < 0) {
                snprintf(err, errlen, "cannot check the Slurm queue for jobs of study '%s'",
                         s->study);
                break;
            }
            return 0;
        }
        study_unlock(s->lock_fd); /* another sweep took this name first: the next one */
        s->lock_fd = -1;
    }
    fprintf(stderr, "%s: %s\n", util_progname, err);
    return -1;
}

int sweep_main(const sweep_options *opt) {
    char err[ERR_LEN];
    sweep_state st;
    memset(&st, 0, sizeof st);
    sweep_state *s = &st;
    s->opt = opt;
    s->sp = space_load(opt->space_path, err, sizeof err);
    if (!s->sp) {
        fprintf(stderr, "%s: %s\n", util_progname, err);
        return EXIT_ERROR;
    }
    s->ops = strategy_find(s->sp->strategy);
    if (!s->ops) {
        fprintf(stderr, "%s: %s: unknown strategy '%s'\n", util_progname, opt->space_path,
                s->sp->strategy);
        space_free(s->sp);
        return EXIT_ERROR;
    }
    if (s->sp->slurm && opt->gpus) { /* this machine's GPU ids mean nothing on a node */
        fprintf(stderr,
                "%s: --gpus pins trials to this machine's GPUs, but the space %s runs them as "
                "Slurm jobs (engine.launcher.slurm), whose GPUs Slurm picks: leave --gpus out "
                "and give --workers N\n",
                util_progname, opt->space_path);
        space_free(s->sp);
        return EXIT_USAGE;
    }
    char *name = opt->study ? xstrdup(opt->study) : study_default_name(s->sp, opt->space_path);
    s->lock_fd = -1;
    const char *bad_name = space_study_name_problem(name);
    if (bad_name) { /* --study and `study:` were checked: this is the file's name */
        fprintf(stderr,
                "%s: the space file %s gives the study the name '%s': %s; pass --study NAME or "
                "set `study:` in the space\n",
                util_progname, opt->space_path, name, bad_name);
        free(name);
        space_free(s->sp);
        return EXIT_ERROR;
    }
    s->study = opt->new_study ? study_fresh_name(opt->out_dir, name) : xstrdup(name);
    s->dir = xasprintf("%s/%s", opt->out_dir, s->study);
    s->strat = s->ops->create(s->sp, s->sp->seed);
    s->noise = NAN;
    s->rc = xcalloc((size_t)s->sp->n_constraints + 1, sizeof *s->rc);
    workers_init(&s->pool, opt->workers > 0 ? opt->workers : 1, s->sp->n_params, opt->gpus);
    s->cond_start = xcalloc((size_t)s->pool.n + 1, sizeof *s->cond_start);
    int rc = EXIT_OK;
    if (opt->warm_start &&
        !warmstart_build(s->sp, opt->warm_start, &s->warm, stderr, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", util_progname, err);
        rc = EXIT_ERROR;
        goto done;
    }
    if (opt->dry_run) {
        rc = dry_run(s);
        goto done;
    }

    if (study_claim(s, name, err, sizeof err) != 0) {
        rc = EXIT_ERROR;
        goto done;
    }
    journal_status js = journal_open(s->dir, s->sp, &s->j, err, sizeof err);
    if (js == JOURNAL_CHANGED) {
        char *fresh = study_fresh_name(opt->out_dir, name);
        fprintf(stderr,
                "%s: the space %s has changed since study '%s' began (%s).\n"
                "The study's snapshot is %s/space.json; resuming would mix trials of two "
                "different spaces, so it is refused.\n"
                "Pass --new to start a new study (it will be '%s'), or --study NAME for another "
                "name.\n",
                util_progname, opt->space_path, s->study, err, s->dir, fresh);
        free(fresh);
        rc = EXIT_ERROR;
        goto done;
    }
    if (js == JOURNAL_ERROR) {
        fprintf(stderr, "%s: %s\n", util_progname, err);
        rc = EXIT_ERROR;
        goto done;
    }
    /* The engine runs in its own working directory: give it absolute paths. */
    char *abs = realpath(s->dir, NULL);
    if (abs) {
        free(s->dir);
        s->dir = abs;
    }
    s->running_dir = xasprintf("%s/running", s->dir);
    s->t = trials_new(s->sp);
    s->vt = trials_new_verify(s->sp);
    for (int i = 0; i < s->j->n_records; i++) {
        char where[512];
        snprintf(where, sizeof where, "%s:%d", s->j->trials_path, i + 1);
        if (trials_add(s->t, s->j->records[i], where, err, sizeof err) == TRIALS_BAD ||
            trials_add(s->vt, s->j->records[i], where, err, sizeof err) == TRIALS_BAD) {
            fprintf(stderr, "%s: %s\n", util_progname, err);
            rc = EXIT_ERROR;
            goto done;
        }
    }
    s->next_id = s->t->max_id + 1;
    if (warm_setup(s, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", util_progname, err);
        rc = EXIT_ERROR;
        goto done;
    }
    s->elapsed_base = s->t->study_elapsed;
    s->session_t0 = now_seconds();
    if (s->t->n_runs > 0)
        fprintf(stderr, "%s: resuming study '%s': %d runs of %d points already done\n",
                util_progname, s->study, s->t->n_runs, s->t->n_points);
    else
        fprintf(stderr, "%s: study '%s' in %s\n", util_progname, s->study, s->dir);
    progress_init(&s->prog, stderr, planned_runs(s->sp), s->t->n_runs + s->vt->n_runs,
                  s->elapsed_base, s->pool.n);
    rc = sweep_loop(s);

done:
    if (s->runs_started > 0) runner_cleanup(opt->grace_s); /* what runs that are over left */
    study_unlock(s->lock_fd);
    free(s->running_dir);
    verify_plan_free(&s->plan);
    warmstart_free(&s->warm);
    workers_free(&s->pool);
    free(s->cond_start);
    trials_free(s->vt);
    trials_free(s->t);
    journal_close(s->j);
    if (s->strat) s->ops->destroy(s->strat);
    free(s->rc);
    free(s->dir);
    free(s->study);
    free(name);
    space_free(s->sp);
    return rc;
}
