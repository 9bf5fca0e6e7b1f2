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
 * (sweep_collect_run). Beyond the tables, the only state is what is in flight (the worker
 * pool) and the next trial id; both are empty again when a session starts. With one worker
 * the order of runs is exactly that of the one-at-a-time loop.
 *
 * The session's state is sweep_state (sweep_state.h). This file claims the study, runs the
 * loop and ends the session; one run's start and record are in sweep_run.c, the plan and
 * --dry-run in sweep_plan.c.
 */
#include "sweep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "journal.h"
#include "noise.h"
#include "progress.h"
#include "proc_track.h"
#include "runner.h"
#include "slurm.h"
#include "space.h"
#include "strategy.h"
#include "sweep_state.h"
#include "trials.h"
#include "util.h"
#include "verify.h"
#include "warmstart.h"
#include "workers.h"

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
            rc = sweep_interrupted_exit(s, runner_interrupted(), n);
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
            sweep_start_run(s, slot, levels, phase);
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
            rc = sweep_collect_run(s, ended);
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
            track_stop_recorded(running, opt->grace_s);
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
        rc = sweep_dry_run(s);
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
    progress_init(&s->prog, stderr, sweep_planned_runs(s->sp), s->t->n_runs + s->vt->n_runs,
                  s->elapsed_base, s->pool.n);
    rc = sweep_loop(s);

done:
    if (s->runs_started > 0) track_cleanup(opt->grace_s); /* what runs that are over left */
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
