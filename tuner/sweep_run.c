/* sweep_run.c: one run of a sweep session, from its start in a worker slot to its record in
 * the journal; see sweep_state.h.
 *
 * The loop (sweep.c) decides which point runs next; what happens to one run is here: its
 * repeat number and trial id, the conditions sampled at its start and end, the record built
 * from its result and appended whole, the tables it joins, and its line in the log. It
 * stands apart because it is the only place a run's outcome becomes journal state, and the
 * loop stays free of record and message details. An interrupted run ends the session here
 * too, with the line that says how to resume.
 */
#include "sweep_state.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "noise.h"
#include "runner.h"
#include "util.h"

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
int sweep_interrupted_exit(sweep_state *s, int sig, int during_trial) {
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
void sweep_start_run(sweep_state *s, int slot, const int *levels, const char *phase) {
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
int sweep_collect_run(sweep_state *s, int slot) {
    const space *sp = s->sp;
    worker_slot *w = &s->pool.slots[slot];
    run_result r;
    run_outcome oc = workers_collect(&s->pool, slot, &r);
    if (oc == RUN_INTERRUPTED) {
        run_result_free(&r);
        int n = 1 + s->pool.n_running;
        workers_stop_all(&s->pool);
        return sweep_interrupted_exit(s, runner_interrupted(), n);
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
