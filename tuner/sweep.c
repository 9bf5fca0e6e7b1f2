/* sweep.c: one session of a study; see sweep.h.
 *
 * The loop keeps no state of its own between runs: everything it decides (which point is
 * unfinished, what the bounds are, what to propose next, how much budget is left) is
 * recomputed from the trial table, which is rebuilt from trials.jsonl on resume. That is
 * what makes `kill -9` harmless: the next session sees exactly the runs that were
 * journaled and continues from there, proposing what the first session would have.
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

#include "journal.h"
#include "manifest.h"
#include "progress.h"
#include "runner.h"
#include "space.h"
#include "strategy.h"
#include "trials.h"
#include "util.h"

enum { ERR_LEN = 2048 };

/* Everything one session works with. */
typedef struct {
    const sweep_options *opt;
    space *sp;
    const strategy_ops *ops;
    strategy *strat;
    char *study; /* the study's name */
    char *dir;   /* out/<study> */
    journal *j;
    trial_table *t;
    resolved_constraint *rc; /* [n_constraints + 1] */
    progress prog;
    double session_t0;
    double elapsed_base; /* study wall time of earlier sessions */
} sweep_state;

/* ---------------------------------------------------------------------------------------- */
/* study folder */

/* The study name when none is given: the space's `study`, else the file name without its
 * extension. Caller frees. */
static char *study_default_name(const space *sp, const char *path) {
    if (sp->study) return xstrdup(sp->study);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    return xasprintf("%.*s", (int)n, base);
}

static int study_exists(const char *out_dir, const char *name) {
    char *p = xasprintf("%s/%s/space.hash", out_dir, name);
    struct stat st;
    int e = stat(p, &st) == 0;
    free(p);
    return e;
}

/* With --new, the first of NAME, NAME-2, NAME-3... that is not a study yet. Caller frees. */
static char *study_fresh_name(const char *out_dir, const char *name) {
    if (!study_exists(out_dir, name)) return xstrdup(name);
    for (int k = 2;; k++) {
        char *n = xasprintf("%s-%d", name, k);
        if (!study_exists(out_dir, n)) return n;
        free(n);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* helpers over the table */

static int point_complete(const sweep_state *s, int idx) {
    return idx >= 0 && s->t->points[idx].n_runs >= s->sp->repeats;
}

/* Index of the best feasible point (the strategy's rank when it has one), or -1. */
static int best_point(sweep_state *s) {
    trial_table *t = s->t;
    int n_rc = s->sp->n_constraints;
    int *order = xmalloc((size_t)(t->n_points + 1) * sizeof *order);
    int best = -1;
    if (s->ops->rank && t->n_points > 0) {
        observation *obs = xmalloc((size_t)t->n_points * sizeof *obs);
        for (int i = 0; i < t->n_points; i++)
            obs[i] = t->points[i].obs;
        int n = s->ops->rank(s->strat, obs, t->n_points, s->rc, n_rc, order);
        for (int k = 0; k < n && best < 0; k++)
            if (order[k] >= 0 && order[k] < t->n_points && t->points[order[k]].status == TRIAL_OK &&
                observation_feasible(&obs[order[k]], s->rc, n_rc))
                best = order[k];
        free(obs);
    }
    if (best < 0 && trials_order(t, s->rc, order) > 0) best = order[0];
    free(order);
    return best;
}

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

static cJSON *record_build(const sweep_state *s, long id, const char *phase, const int *levels,
                           int repeat, const run_result *r, const char *started,
                           const char *finished, double study_elapsed) {
    const space *sp = s->sp;
    cJSON *rec = cJSON_CreateObject();
    cJSON_AddNumberToObject(rec, "id", (double)id);
    cJSON_AddStringToObject(rec, "phase", phase);
    cJSON_AddStringToObject(rec, "prompt_set", "tune");
    cJSON *point = cJSON_AddObjectToObject(rec, "point");
    cJSON *lv = cJSON_AddArrayToObject(rec, "levels");
    char buf[256];
    for (int i = 0; i < sp->n_params; i++) {
        space_param_value(&sp->params[i], levels[i], buf, sizeof buf);
        cJSON_AddStringToObject(point, sp->params[i].name, buf);
        cJSON_AddItemToArray(lv, cJSON_CreateNumber(levels[i]));
    }
    cJSON_AddNumberToObject(rec, "repeat", repeat);
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
    cJSON_AddStringToObject(rec, "started", started);
    cJSON_AddStringToObject(rec, "finished", finished);
    cJSON_AddNumberToObject(rec, "study_elapsed_s", study_elapsed);
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
            during_trial ? " (the running trial was stopped and will be run again)" : "",
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

/* Run the next repeat of the point `levels`. Returns 0 to go on, else an exit status. */
static int run_one(sweep_state *s, const int *levels, const char *phase) {
    const space *sp = s->sp;
    int idx = trials_find(s->t, levels);
    int repeat = idx >= 0 ? s->t->points[idx].n_runs : 0;
    long id = s->t->max_id + 1;
    char *log_path = xasprintf("%s/logs/%ld.log", s->dir, id);
    char *result_path = xasprintf("%s/logs/%ld.result.json", s->dir, id);
    run_request req = {.prompt_set = "tune",
                       .trial_id = id,
                       .log_path = log_path,
                       .result_path = result_path,
                       .grace_s = s->opt->grace_s};
    char started[32], finished[32], best[512];
    progress_update(&s->prog, s->t->n_runs, best_text(s, best, sizeof best));
    time_iso_utc(started, sizeof started);
    run_result r;
    run_outcome oc = runner_run(sp, levels, &req, &r);
    time_iso_utc(finished, sizeof finished);
    free(log_path);
    free(result_path);
    if (oc == RUN_INTERRUPTED) {
        run_result_free(&r);
        return interrupted_exit(s, runner_interrupted(), 1);
    }
    double elapsed = s->elapsed_base + now_seconds() - s->session_t0;
    cJSON *rec = record_build(s, id, phase, levels, repeat, &r, started, finished, elapsed);
    char err[ERR_LEN];
    if (!journal_append(s->j, rec, err, sizeof err)) {
        cJSON_Delete(rec);
        run_result_free(&r);
        progress_end(&s->prog);
        fprintf(stderr, "%s: %s\n", util_progname, err);
        return EXIT_ERROR;
    }
    cJSON_Delete(rec);
    const cJSON *kept = s->j->records[s->j->n_records - 1];
    char where[64];
    snprintf(where, sizeof where, "trial %ld", id);
    if (trials_add(s->t, kept, where, err, sizeof err) == TRIALS_BAD) die("%s", err);

    char *key = space_point_key(sp, levels);
    char figures[256];
    figures_text(sp, r.metrics, figures, sizeof figures);
    progress_log(&s->prog, "trial %ld [%s] %s repeat %d/%d: %s%s%s%s (%.1f s)", id, phase, key,
                 repeat + 1, sp->repeats, trial_status_name(r.status), figures,
                 r.reason ? ": " : "", r.reason ? r.reason : "", r.wall_s);
    free(key);
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

static void print_plan(const sweep_state *s, FILE *f) {
    const space *sp = s->sp;
    fprintf(f, "study:      %s (%s)\n", s->study, s->dir);
    fprintf(f, "engine:    ");
    for (int i = 0; i < sp->argc; i++)
        fprintf(f, " %s", sp->argv[i]);
    fprintf(f, "\nobjective:  %s %s\n", sp->maximize ? "maximize" : "minimize", sp->objective);
    for (int c = 0; c < sp->n_constraints; c++)
        fprintf(f, "constraint: %s\n", sp->constraints[c].text);
    fprintf(f, "space:      %d knobs, %ld points; strategy %s; repeats %d\n", sp->n_params,
            space_n_points(sp), sp->strategy, sp->repeats);
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
        char *stored = file_read_all(hp, NULL, err, sizeof err);
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

/* Pick the next point: an unfinished one first (the baseline before anything), else a
 * proposal. Returns 1 with levels/phase set, 0 when the sweep is over (stop says why),
 * -1 when it must stop with an error (already reported). */
static int next_point(sweep_state *s, int *levels, const char **phase, const char **stop) {
    const space *sp = s->sp;
    size_t bytes = (size_t)sp->n_params * sizeof *levels;
    int need_baseline = 0;
    for (int c = 0; c < sp->n_constraints; c++)
        need_baseline |= sp->constraints[c].relative;
    if (sp->baseline) {
        int b = trials_find(s->t, sp->baseline);
        if (!point_complete(s, b)) {
            memcpy(levels, sp->baseline, bytes);
            *phase = "baseline";
            return 1;
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
            return -1;
        }
    }
    for (int i = 0; i < s->t->n_points; i++) {
        if (!point_complete(s, i)) {
            memcpy(levels, s->t->points[i].levels, bytes);
            *phase = s->t->points[i].baseline ? "baseline" : "search";
            return 1;
        }
    }
    if (sp->max_evaluations > 0 && s->t->n_points >= sp->max_evaluations) {
        *stop = "the evaluation budget is used up";
        return 0;
    }
    double elapsed = s->elapsed_base + now_seconds() - s->session_t0;
    if (sp->max_wall_s > 0 && elapsed >= sp->max_wall_s) {
        *stop = "the wall-time budget is used up";
        return 0;
    }
    const char *why;
    trials_resolve(s->t, s->rc, &why);
    observation *obs = xmalloc((size_t)(s->t->n_points + 1) * sizeof *obs);
    for (int i = 0; i < s->t->n_points; i++)
        obs[i] = s->t->points[i].obs;
    int got =
        s->ops->propose(s->strat, obs, s->t->n_points, s->rc, sp->n_constraints, NULL, 0, levels);
    free(obs);
    if (!got) {
        *stop = "the strategy has no point left to propose";
        return 0;
    }
    if (trials_find(s->t, levels) >= 0) {
        char *key = space_point_key(sp, levels);
        die("strategy '%s' proposed %s, which is already measured", sp->strategy, key);
    }
    *phase = "search";
    return 1;
}

/* After the loop: the report and the manifest. */
static int finish(sweep_state *s, const char *stop) {
    progress_end(&s->prog);
    const space *sp = s->sp;
    int n_ok = 0, n_inf = 0, n_fail = 0;
    for (int i = 0; i < s->t->n_points; i++) {
        trial_status st = s->t->points[i].status;
        n_ok += st == TRIAL_OK;
        n_inf += st == TRIAL_INFEASIBLE;
        n_fail += st == TRIAL_FAILED;
    }
    const char *why;
    trials_resolve(s->t, s->rc, &why);
    fprintf(stderr,
            "%s: sweep of study '%s' ended: %s. %d points (%d measured, %d infeasible, %d "
            "failed) in %d runs.\n",
            util_progname, s->study, stop, s->t->n_points, n_ok, n_inf, n_fail, s->t->n_runs);
    int best = best_point(s);
    if (best < 0) {
        fprintf(stderr,
                "%s: no feasible point: none of the %d points met the objective and every "
                "constraint; no manifest written. See: tuner show %s\n",
                util_progname, s->t->n_points, s->dir);
        return EXIT_NO_FEASIBLE;
    }
    manifest_info info = {.study = s->study,
                          .study_dir = s->dir,
                          .wall_used_s = s->elapsed_base + now_seconds() - s->session_t0};
    cJSON *m = manifest_build(sp, s->t, best, s->rc, &info);
    char err[ERR_LEN];
    if (!manifest_write(m, s->dir, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", util_progname, err);
        cJSON_Delete(m);
        return EXIT_ERROR;
    }
    char *text = cJSON_Print(m);
    fprintf(stderr, "%s: best: %s = %.6g at %s; manifest: %s/manifest.json\n", util_progname,
            sp->objective, s->t->points[best].objective, s->t->points[best].key, s->dir);
    printf("%s\n", text);
    free(text);
    cJSON_Delete(m);
    return EXIT_OK;
}

static int sweep_loop(sweep_state *s) {
    const space *sp = s->sp;
    int *levels = xmalloc((size_t)sp->n_params * sizeof *levels);
    const char *phase = NULL, *stop = NULL;
    int rc = 0;
    for (;;) {
        if (runner_interrupted()) {
            rc = interrupted_exit(s, runner_interrupted(), 0);
            break;
        }
        int got = next_point(s, levels, &phase, &stop);
        if (got < 0) {
            rc = EXIT_ERROR;
            break;
        }
        if (got == 0) {
            rc = finish(s, stop);
            break;
        }
        if ((rc = run_one(s, levels, phase)) != 0) break;
    }
    free(levels);
    return rc;
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
    char *name = opt->study ? xstrdup(opt->study) : study_default_name(s->sp, opt->space_path);
    s->study = opt->new_study ? study_fresh_name(opt->out_dir, name) : xstrdup(name);
    s->dir = xasprintf("%s/%s", opt->out_dir, s->study);
    s->strat = s->ops->create(s->sp, s->sp->seed);
    s->rc = xcalloc((size_t)s->sp->n_constraints + 1, sizeof *s->rc);
    int rc = EXIT_OK;
    if (opt->dry_run) {
        rc = dry_run(s);
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
    s->t = trials_new(s->sp);
    for (int i = 0; i < s->j->n_records; i++) {
        char where[512];
        snprintf(where, sizeof where, "%s:%d", s->j->trials_path, i + 1);
        if (trials_add(s->t, s->j->records[i], where, err, sizeof err) == TRIALS_BAD) {
            fprintf(stderr, "%s: %s\n", util_progname, err);
            rc = EXIT_ERROR;
            goto done;
        }
    }
    s->elapsed_base = s->t->study_elapsed;
    s->session_t0 = now_seconds();
    if (s->t->n_runs > 0)
        fprintf(stderr, "%s: resuming study '%s': %d runs of %d points already done\n",
                util_progname, s->study, s->t->n_runs, s->t->n_points);
    else
        fprintf(stderr, "%s: study '%s' in %s\n", util_progname, s->study, s->dir);
    progress_init(&s->prog, stderr, planned_points(s->sp) * s->sp->repeats, s->t->n_runs,
                  s->elapsed_base);
    rc = sweep_loop(s);

done:
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
