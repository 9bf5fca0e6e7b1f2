/* manifest.c: building, writing and exporting the manifest; see manifest.h. */
#include "manifest.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "input.h"
#include "journal.h"
#include "runner.h"
#include "slurm.h"
#include "util.h"
#include "verify.h"

static const char *op_text(cmp_op op) {
    static const char *ops[] = {"<=", "<", ">=", ">"};
    return ops[op];
}

/* A number, or JSON null when it is not finite (JSON has no infinity). */
static cJSON *number_or_null(double v) {
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

/* "measured" / "verified": median, min, max and sd of every numeric metric over the runs
 * that produced a result. */
static cJSON *figures_block(const point_stats *p, const char *prompt_set) {
    cJSON *median = cJSON_CreateObject(), *spread = cJSON_CreateObject();
    double *vals = xmalloc((size_t)(p->n_runs + 1) * sizeof *vals);
    for (int r = 0; r < p->n_runs; r++) {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(p->runs[r], "status");
        if (!cJSON_IsString(st) || strcmp(st->valuestring, "failed") == 0) continue;
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(p->runs[r], "metrics");
        const cJSON *item;
        cJSON_ArrayForEach(item, m) {
            if (!cJSON_IsNumber(item) || cJSON_GetObjectItemCaseSensitive(median, item->string))
                continue;
            int n = 0; /* first time this metric is seen: gather it over all runs */
            for (int q = 0; q < p->n_runs; q++) {
                const cJSON *sq = cJSON_GetObjectItemCaseSensitive(p->runs[q], "status");
                if (!cJSON_IsString(sq) || strcmp(sq->valuestring, "failed") == 0) continue;
                const cJSON *mq = cJSON_GetObjectItemCaseSensitive(p->runs[q], "metrics");
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(mq, item->string);
                if (cJSON_IsNumber(v) && isfinite(v->valuedouble)) vals[n++] = v->valuedouble;
            }
            if (n == 0) continue;
            gsl_sort(vals, 1, (size_t)n);
            cJSON_AddNumberToObject(median, item->string,
                                    gsl_stats_median_from_sorted_data(vals, 1, (size_t)n));
            cJSON *s = cJSON_AddObjectToObject(spread, item->string);
            cJSON_AddNumberToObject(s, "min", vals[0]);
            cJSON_AddNumberToObject(s, "max", vals[n - 1]);
            cJSON_AddNumberToObject(s, "sd", n > 1 ? gsl_stats_sd(vals, 1, (size_t)n) : 0.0);
        }
    }
    free(vals);
    cJSON *out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "prompt_set", prompt_set);
    cJSON_AddNumberToObject(out, "runs", p->n_runs);
    cJSON_AddNumberToObject(out, "runs_with_result", p->n_measured);
    cJSON_AddItemToObject(out, "median", median);
    cJSON_AddItemToObject(out, "spread", spread);
    return out;
}

/* The "device" an engine reported for this point, if any. */
static const char *point_device(const point_stats *p) {
    for (int r = 0; r < p->n_runs; r++) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(p->runs[r], "metrics");
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(m, "device");
        if (cJSON_IsString(d)) return d->valuestring;
    }
    return NULL;
}

cJSON *manifest_build(const space *sp, const trial_table *t, int best,
                      const resolved_constraint *rc, const manifest_info *info) {
    const point_stats *p = &t->points[best];
    cJSON *m = cJSON_CreateObject();
    char when[32], hash[32], buf[256];
    time_iso_utc(when, sizeof when);
    snprintf(hash, sizeof hash, "%016" PRIx64, sp->hash);

    cJSON *env = cJSON_AddObjectToObject(m, "env");
    for (int i = 0; i < sp->n_env; i++)
        cJSON_AddStringToObject(env, sp->env[i].key, sp->env[i].value);
    cJSON *point = cJSON_CreateObject();
    for (int i = 0; i < sp->n_params; i++) {
        space_param_value(&sp->params[i], p->levels[i], buf, sizeof buf);
        cJSON_AddStringToObject(point, sp->params[i].name, buf);
        if (cJSON_GetObjectItemCaseSensitive(env, sp->params[i].name))
            cJSON_DeleteItemFromObjectCaseSensitive(env, sp->params[i].name);
        cJSON_AddStringToObject(env, sp->params[i].name, buf);
    }
    cJSON_AddItemToObject(m, "point", point);
    if (sp->n_allow_env > 0) {
        cJSON *allow = cJSON_AddArrayToObject(m, "allow_env");
        for (int i = 0; i < sp->n_allow_env; i++)
            cJSON_AddItemToArray(allow, cJSON_CreateString(sp->allow_env[i]));
    }

    cJSON *obj = cJSON_AddObjectToObject(m, "objective");
    cJSON_AddStringToObject(obj, "metric", sp->objective);
    cJSON_AddStringToObject(obj, "direction", sp->maximize ? "maximize" : "minimize");
    cJSON_AddItemToObject(obj, "median", number_or_null(p->objective));
    cJSON_AddItemToObject(m, "measured", figures_block(p, "tune"));
    const manifest_verified *mv = info->verified;
    const point_stats *vp = mv->point;
    cJSON_AddItemToObject(obj, "verified_median", number_or_null(vp ? vp->objective : NAN));
    cJSON *gap = cJSON_CreateObject();
    cJSON_AddItemToObject(gap, sp->objective, number_or_null(mv->gap));
    if (vp) {
        cJSON *ver = figures_block(vp, sp->verify_prompt_set);
        cJSON *vcons = cJSON_AddArrayToObject(ver, "constraints");
        for (int c = 0; c < sp->n_constraints; c++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "text",
                                    sp->constraints[c].text ? sp->constraints[c].text : "");
            cJSON_AddItemToObject(o, "bound", number_or_null(mv->rc[c].bound));
            cJSON_AddItemToObject(o, "verified", number_or_null(vp->cons[c]));
            cJSON_AddItemToArray(vcons, o);
            const char *metric = sp->constraints[c].metric;
            if (!cJSON_GetObjectItemCaseSensitive(gap, metric))
                cJSON_AddItemToObject(gap, metric,
                                      number_or_null(isfinite(p->cons[c]) && p->cons[c] != 0
                                                         ? vp->cons[c] / p->cons[c] - 1
                                                         : NAN));
        }
        cJSON_AddItemToObject(m, "verified", ver);
    } else {
        cJSON_AddNullToObject(m, "verified");
    }
    cJSON_AddItemToObject(m, "gap", gap);
    cJSON *vinfo = cJSON_AddObjectToObject(m, "verification");
    cJSON_AddStringToObject(vinfo, "outcome", mv->baseline_answer ? "baseline" : "winner");
    if (mv->summary) cJSON_AddStringToObject(vinfo, "summary", mv->summary);
    if (mv->pairs > 0) {
        cJSON *su = cJSON_AddObjectToObject(vinfo, "speedup");
        cJSON_AddItemToObject(su, "estimate", number_or_null(mv->speedup[0]));
        cJSON_AddItemToObject(su, "low", number_or_null(mv->speedup[1]));
        cJSON_AddItemToObject(su, "high", number_or_null(mv->speedup[2]));
        cJSON_AddNumberToObject(su, "confidence", sp->verify_confidence);
        cJSON_AddNumberToObject(su, "confidence_each", verify_confidence_each(sp));
        cJSON_AddNumberToObject(su, "pairs", mv->pairs);
        cJSON_AddStringToObject(su, "method",
                                "t interval on the log-ratios of each candidate run to the "
                                "baseline runs around it, Bonferroni over verify.top");
    }
    cJSON_AddNumberToObject(vinfo, "top", sp->verify_top);
    cJSON_AddNumberToObject(vinfo, "repeats", sp->verify_repeats);
    cJSON_AddNumberToObject(vinfo, "max_repeats", sp->verify_max_repeats);
    cJSON_AddNumberToObject(vinfo, "max_candidates", sp->verify_max_candidates);
    cJSON_AddNumberToObject(vinfo, "confidence", sp->verify_confidence);
    cJSON_AddNumberToObject(vinfo, "precision", sp->verify_precision);
    cJSON_AddStringToObject(vinfo, "prompt_set", sp->verify_prompt_set);
    cJSON_AddNumberToObject(vinfo, "tolerance", sp->verify_tolerance);
    cJSON_AddItemToObject(vinfo, "candidates", cJSON_Duplicate(mv->candidates, 1));
    cJSON_AddItemToObject(m, "noise", number_or_null(mv->noise));
    cJSON *warn = cJSON_AddArrayToObject(m, "warnings");
    for (int i = 0; i < mv->n_warnings; i++)
        cJSON_AddItemToArray(warn, cJSON_CreateString(mv->warnings[i]));

    cJSON *cons = cJSON_AddArrayToObject(m, "constraints");
    for (int c = 0; c < sp->n_constraints; c++) {
        const constraint_def *d = &sp->constraints[c];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "text", d->text ? d->text : "");
        cJSON_AddStringToObject(o, "metric", d->metric);
        cJSON_AddStringToObject(o, "op", op_text(d->op));
        cJSON_AddBoolToObject(o, "relative", d->relative);
        cJSON_AddNumberToObject(o, d->relative ? "factor" : "value", d->value);
        cJSON_AddItemToObject(o, "bound", number_or_null(rc[c].bound));
        cJSON_AddItemToObject(o, "measured", number_or_null(p->cons[c]));
        cJSON_AddItemToArray(cons, o);
    }
    for (int i = 0; i < t->n_points; i++) {
        if (!t->points[i].baseline) continue;
        cJSON *b = cJSON_AddObjectToObject(m, "baseline");
        cJSON_AddStringToObject(b, "point", t->points[i].key);
        cJSON *bm = cJSON_AddObjectToObject(b, "median");
        cJSON_AddItemToObject(bm, sp->objective, number_or_null(t->points[i].objective));
        for (int c = 0; c < sp->n_constraints; c++)
            if (!cJSON_GetObjectItemCaseSensitive(bm, sp->constraints[c].metric))
                cJSON_AddItemToObject(bm, sp->constraints[c].metric,
                                      number_or_null(t->points[i].cons[c]));
        break;
    }

    cJSON *budget = cJSON_AddObjectToObject(m, "budget");
    if (sp->max_evaluations > 0)
        cJSON_AddNumberToObject(budget, "evaluations", (double)sp->max_evaluations);
    else
        cJSON_AddNullToObject(budget, "evaluations");
    if (sp->max_wall_s > 0)
        cJSON_AddNumberToObject(budget, "wall_time_s", sp->max_wall_s);
    else
        cJSON_AddNullToObject(budget, "wall_time_s");
    cJSON_AddNumberToObject(budget, "repeats", sp->repeats);
    cJSON_AddNumberToObject(budget, "evaluations_used", t->n_points);
    cJSON_AddNumberToObject(budget, "runs_used", t->n_runs);
    cJSON_AddNumberToObject(budget, "wall_time_used_s", info->wall_used_s);

    cJSON *engine = cJSON_AddObjectToObject(m, "engine");
    cJSON *argv = cJSON_AddArrayToObject(engine, "command");
    for (int i = 0; i < sp->argc; i++)
        cJSON_AddItemToArray(argv, cJSON_CreateString(sp->argv[i]));
    char *wd = sp->workdir ? (sp->workdir[0] == '/' ? xstrdup(sp->workdir)
                                                    : xasprintf("%s/%s", sp->dir, sp->workdir))
                           : xstrdup(sp->dir ? sp->dir : ".");
    char real[PATH_MAX];
    cJSON_AddStringToObject(engine, "workdir", realpath(wd, real) ? real : wd);
    free(wd);
    if (sp->launcher) cJSON_AddStringToObject(engine, "launcher", sp->launcher);
    if (sp->slurm) { /* the srun line each trial ran under (slurm.h) */
        char *srun = slurm_srun_line(sp->slurm, sp->timeout_s);
        cJSON_AddStringToObject(engine, "launcher", srun);
        free(srun);
    }
    /* One line a user can paste: the env, the folder, the command (all shell-quoted). */
    char *qdir = shell_single_quote(cJSON_GetObjectItem(engine, "workdir")->valuestring);
    char *qpath = shell_single_quote(info->study_dir);
    size_t cap = strlen(qdir) + strlen(qpath) + 128, len;
    for (int i = 0; i < sp->argc; i++)
        cap += 4 * strlen(sp->argv[i]) + 3;
    char *line = xmalloc(cap);
    len = (size_t)snprintf(line, cap, "eval \"$(tuner env %s/manifest.json)\" && cd %s &&", qpath,
                           qdir);
    char *program = runner_command_path(sp);
    cap += 4 * strlen(program) + 3;
    line = xrealloc(line, cap);
    for (int i = 0; i < sp->argc; i++) {
        char *q = shell_single_quote(i == 0 ? program : sp->argv[i]);
        len += (size_t)snprintf(line + len, cap - len, " %s", q);
        free(q);
    }
    free(program);
    cJSON_AddStringToObject(engine, "reproduce", line);
    free(line);
    free(qdir);
    free(qpath);
    const char *device = point_device(p);
    if (device)
        cJSON_AddStringToObject(m, "device", device);
    else
        cJSON_AddNullToObject(m, "device");

    cJSON_AddStringToObject(m, "study", info->study);
    cJSON_AddStringToObject(m, "study_dir", info->study_dir);
    cJSON_AddStringToObject(m, "space", sp->path ? sp->path : "");
    cJSON_AddStringToObject(m, "space_hash", hash);
    cJSON_AddStringToObject(m, "strategy", sp->strategy);
    cJSON_AddStringToObject(m, "created", when);
    return m;
}

int manifest_write(const cJSON *manifest, const char *study_dir, char *err, size_t errlen) {
    char *path = xasprintf("%s/manifest.json", study_dir);
    char *text = cJSON_Print(manifest);
    char *line = xasprintf("%s\n", text);
    int ok = file_write_atomic(path, line, err, errlen);
    free(text);
    free(line);
    free(path);
    return ok;
}

/* m without the fields that change at every write. Caller frees. */
static cJSON *manifest_stable(const cJSON *m) {
    cJSON *c = cJSON_Duplicate(m, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(c, "created");
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, "budget"),
                                            "wall_time_used_s");
    return c;
}

cJSON *manifest_unchanged(const cJSON *m, const char *study_dir) {
    char *path = xasprintf("%s/manifest.json", study_dir), err[512];
    char *text = input_read(path, INPUT_MAX_DOCUMENT, NULL, err, sizeof err);
    free(path);
    cJSON *old = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!old) return NULL;
    cJSON *a = manifest_stable(m), *b = manifest_stable(old);
    int same = cJSON_Compare(a, b, 1);
    cJSON_Delete(a);
    cJSON_Delete(b);
    if (same) return old;
    cJSON_Delete(old);
    return NULL;
}

static int shell_name_ok(const char *k) {
    if (!(*k == '_' || (*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z'))) return 0;
    for (const char *q = k + 1; *q; q++)
        if (!(*q == '_' || (*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z') ||
              (*q >= '0' && *q <= '9')))
            return 0;
    return 1;
}

int manifest_print_env(const char *path, FILE *out, char *err, size_t errlen) {
    char *text = input_read(path, INPUT_MAX_DOCUMENT, NULL, err, errlen);
    if (!text) return 0;
    cJSON *m = cJSON_Parse(text);
    free(text);
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(m, "env");
    if (!cJSON_IsObject(m) || !cJSON_IsObject(env)) {
        snprintf(err, errlen, "%s: not a manifest: %s", path,
                 !cJSON_IsObject(m) ? "not a JSON object" : "no \"env\" object");
        cJSON_Delete(m);
        return 0;
    }
    const cJSON *allow = cJSON_GetObjectItemCaseSensitive(m, "allow_env"), *item;
    cJSON_ArrayForEach(item, env) {
        int allowed = 0;
        const cJSON *a;
        cJSON_ArrayForEach(a, allow) allowed |=
            cJSON_IsString(a) && !strcmp(a->valuestring, item->string);
        if (space_env_reserved(item->string)) {
            snprintf(err, errlen, "%s: env key '%s' is set by the tuner for each run; not exported",
                     path, item->string);
            cJSON_Delete(m);
            return 0;
        }
        if (space_env_risky(item->string) && !allowed) {
            snprintf(err, errlen,
                     "%s: env key '%s' is acted on by the dynamic loader or shells and the "
                     "manifest's allow_env does not list it; not exported",
                     path, item->string);
            cJSON_Delete(m);
            return 0;
        }
        if (!shell_name_ok(item->string)) {
            snprintf(err, errlen, "%s: env key '%s' is not a valid shell variable name", path,
                     item->string);
            cJSON_Delete(m);
            return 0;
        }
        if (!cJSON_IsString(item)) {
            snprintf(err, errlen, "%s: env key '%s': value must be a string", path, item->string);
            cJSON_Delete(m);
            return 0;
        }
    }
    cJSON_ArrayForEach(item, env) {
        char *q = shell_single_quote(item->valuestring);
        fprintf(out, "export %s=%s\n", item->string, q);
        free(q);
    }
    cJSON_Delete(m);
    return 1;
}
