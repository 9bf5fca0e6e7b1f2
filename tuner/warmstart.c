/* warmstart.c: the warm-start queue from an earlier study or manifest; see warmstart.h. */
#include "warmstart.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "input.h"
#include "journal.h"
#include "show.h"
#include "trials.h"
#include "util.h"

static void queue_add(warm_queue *q, const space *sp, const int *levels) {
    size_t bytes = (size_t)sp->n_params * sizeof *levels;
    for (int i = 0; i < q->n; i++)
        if (!memcmp(q->points[i], levels, bytes)) return;
    q->points = xrealloc(q->points, (size_t)(q->n + 1) * sizeof *q->points);
    q->points[q->n] = xmalloc(bytes);
    memcpy(q->points[q->n], levels, bytes);
    q->n++;
}

void warmstart_free(warm_queue *q) {
    for (int i = 0; i < q->n; i++)
        free(q->points[i]);
    free(q->points);
    free(q->source);
    memset(q, 0, sizeof *q);
}

static int parse_number(const char *s, double *v) {
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return end != s && *end == '\0' && errno == 0 && isfinite(*v);
}

/* The level of parameter p for the earlier value s; -1 when it does not map. *exact says
 * whether the level's value is s itself. */
static int map_value(const param_def *p, const char *s, int *exact) {
    *exact = 0;
    int l = space_param_find(p, s);
    if (l >= 0) {
        *exact = 1;
        return l;
    }
    double v, w;
    if (!parse_number(s, &v)) return -1;
    if (p->kind == PARAM_INT) {
        double k = round((v - (double)p->min) / (double)p->step);
        if (k < 0) k = 0;
        if (k > p->n_levels - 1) k = p->n_levels - 1;
        return (int)k;
    }
    int best = -1;
    double dist = INFINITY;
    for (int i = 0; i < p->n_levels; i++) {
        if (!parse_number(p->values[i], &w)) return -1; /* not a numeric categorical */
        if (fabs(w - v) < dist) {
            dist = fabs(w - v);
            best = i;
        }
    }
    return best;
}

/* The level a knob takes when the earlier point does not say. */
static int fallback_level(const space *sp, int i) {
    if (sp->params[i].default_level >= 0) return sp->params[i].default_level;
    if (sp->baseline) return sp->baseline[i];
    return sp->params[i].n_levels / 2;
}

/* Map an earlier point {KNOB: "value"} onto the lattice. A knob the earlier point lacks
 * takes its fallback level. A value that is not a level: with notes (the winner), the
 * nearest level (or the fallback) and a note; without (the prior points), the point is
 * left out (returns 0). */
static int map_point(const space *sp, const cJSON *point, int *levels, FILE *notes) {
    char buf[256];
    for (int i = 0; i < sp->n_params; i++) {
        const param_def *p = &sp->params[i];
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(point, p->name);
        if (!cJSON_IsString(v)) {
            levels[i] = fallback_level(sp, i);
            space_param_value(p, levels[i], buf, sizeof buf);
            if (notes)
                fprintf(notes, "%s: warm start: %s is not set in the earlier point; using %s\n",
                        util_progname, p->name, buf);
            continue;
        }
        int exact = 0, l = map_value(p, v->valuestring, &exact);
        if (l < 0) l = fallback_level(sp, i);
        if (!exact) {
            if (!notes) return 0;
            space_param_value(p, l, buf, sizeof buf);
            fprintf(notes, "%s: warm start: %s=%s is not on this space's lattice; using %s\n",
                    util_progname, p->name, v->valuestring, buf);
        }
        levels[i] = l;
    }
    return 1;
}

/* The earlier study in folder dir: its tuning table (over study.json's partial space) and
 * resolved bounds. Returns 1, or 0 with err. */
typedef struct {
    space *meta;
    cJSON **recs;
    int n_recs;
    trial_table *t;
    resolved_constraint *rc;
} earlier_study;

static void earlier_free(earlier_study *e) {
    trials_free(e->t);
    for (int i = 0; i < e->n_recs; i++)
        cJSON_Delete(e->recs[i]);
    free(e->recs);
    free(e->rc);
    if (e->meta) study_space_free(e->meta);
    memset(e, 0, sizeof *e);
}

static int earlier_load(const char *dir, earlier_study *e, char *err, size_t errlen) {
    memset(e, 0, sizeof *e);
    char *meta = xasprintf("%s/study.json", dir), *tp = xasprintf("%s/trials.jsonl", dir);
    int ok = 0;
    err[0] = '\0';
    e->meta = study_space_load(meta, err, errlen);
    if (!e->meta || err[0]) goto out;
    if (!journal_load(tp, 0, &e->recs, &e->n_recs, err, errlen)) goto out;
    e->t = trials_new(e->meta);
    for (int i = 0; i < e->n_recs; i++) {
        char where[600];
        snprintf(where, sizeof where, "%s:%d", tp, i + 1);
        if (trials_add(e->t, e->recs[i], where, err, errlen) == TRIALS_BAD) goto out;
    }
    e->rc = xcalloc((size_t)e->meta->n_constraints + 1, sizeof *e->rc);
    const char *why;
    trials_resolve(e->t, e->rc, &why);
    ok = 1;
out:
    free(meta);
    free(tp);
    if (!ok) earlier_free(e);
    return ok;
}

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int warmstart_build(const space *sp, const char *other, warm_queue *q, FILE *notes, char *err,
                    size_t errlen) {
    memset(q, 0, sizeof *q);
    q->source = xstrdup(other);
    cJSON *manifest = NULL;
    char *study_dir = NULL;
    earlier_study e = {0};
    int have_study = 0, ok = 0;
    int *levels = xmalloc((size_t)sp->n_params * sizeof *levels + 1);
    if (is_dir(other)) {
        study_dir = xstrdup(other);
        char *mp = xasprintf("%s/manifest.json", other);
        struct stat st;
        if (stat(mp, &st) == 0) {
            char *text = input_read(mp, INPUT_MAX_DOCUMENT, NULL, err, errlen);
            manifest = text ? cJSON_Parse(text) : NULL;
            free(text);
        }
        free(mp);
        if (!earlier_load(study_dir, &e, err, errlen)) goto out;
        have_study = 1;
    } else {
        char *text = input_read(other, INPUT_MAX_DOCUMENT, NULL, err, errlen);
        if (!text) goto out;
        manifest = cJSON_Parse(text);
        free(text);
        if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(manifest, "point"))) {
            snprintf(err, errlen,
                     "%s: --warm-start needs a study folder or a manifest.json with a \"point\" "
                     "object",
                     other);
            goto out;
        }
        const cJSON *sd = cJSON_GetObjectItemCaseSensitive(manifest, "study_dir");
        if (cJSON_IsString(sd) && is_dir(sd->valuestring)) {
            char e2[1024];
            have_study = earlier_load(sd->valuestring, &e, e2, sizeof e2);
            if (!have_study && notes)
                fprintf(notes, "%s: warm start: no earlier trials used as prior: %s\n",
                        util_progname, e2);
        }
    }
    /* The winner: the manifest's point, else the earlier study's best feasible point. */
    const cJSON *winner = cJSON_GetObjectItemCaseSensitive(manifest, "point");
    int *order = NULL;
    int n_feasible = 0;
    if (have_study) {
        order = xmalloc((size_t)(e.t->n_points + 1) * sizeof *order);
        n_feasible = trials_order(e.t, e.rc, order);
    }
    if (!cJSON_IsObject(winner)) {
        if (n_feasible == 0) {
            snprintf(err, errlen,
                     "%s: no earlier winner to start from: no manifest.json and no feasible "
                     "point in its trials",
                     other);
            free(order);
            goto out;
        }
        winner = cJSON_GetObjectItemCaseSensitive(e.t->points[order[0]].runs[0], "point");
    }
    map_point(sp, winner, levels, notes);
    queue_add(q, sp, levels);
    /* Its neighbours on this lattice. */
    int *nb = xmalloc((size_t)sp->n_params * sizeof *nb + 1);
    for (int i = 0; i < sp->n_params; i++) {
        const param_def *p = &sp->params[i];
        for (int l = 0; l < p->n_levels; l++) {
            int near = p->kind == PARAM_INT ? abs(l - levels[i]) == 1 : l != levels[i];
            if (!near) continue;
            memcpy(nb, levels, (size_t)sp->n_params * sizeof *nb);
            nb[i] = l;
            queue_add(q, sp, nb);
        }
    }
    /* The earlier study's other feasible points, best first. */
    int added = 0;
    for (int k = 0; k < n_feasible && added < WARM_PRIOR_POINTS; k++) {
        const cJSON *pt = cJSON_GetObjectItemCaseSensitive(e.t->points[order[k]].runs[0], "point");
        if (!map_point(sp, pt, nb, NULL)) continue;
        int before = q->n;
        queue_add(q, sp, nb);
        added += q->n > before;
    }
    free(nb);
    free(order);
    ok = 1;
out:
    if (have_study) earlier_free(&e);
    cJSON_Delete(manifest);
    free(study_dir);
    free(levels);
    if (!ok) warmstart_free(q);
    return ok;
}

int warmstart_save(const char *study_dir, const space *sp, const warm_queue *q, char *err,
                   size_t errlen) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "source", q->source ? q->source : "");
    cJSON *pts = cJSON_AddArrayToObject(m, "points");
    char buf[256];
    for (int k = 0; k < q->n; k++) {
        cJSON *pt = cJSON_CreateObject();
        for (int i = 0; i < sp->n_params; i++) {
            space_param_value(&sp->params[i], q->points[k][i], buf, sizeof buf);
            cJSON_AddStringToObject(pt, sp->params[i].name, buf);
        }
        cJSON_AddItemToArray(pts, pt);
    }
    char *text = cJSON_Print(m), *path = xasprintf("%s/warmstart.json", study_dir);
    char *line = xasprintf("%s\n", text);
    int ok = file_write_atomic(path, line, err, errlen);
    free(line);
    free(path);
    free(text);
    cJSON_Delete(m);
    return ok;
}

int warmstart_load(const char *study_dir, const space *sp, warm_queue *q, char *err,
                   size_t errlen) {
    memset(q, 0, sizeof *q);
    char *path = xasprintf("%s/warmstart.json", study_dir);
    struct stat st;
    if (stat(path, &st) != 0) {
        free(path);
        return 0;
    }
    char *text = input_read(path, INPUT_MAX_DOCUMENT, NULL, err, errlen);
    cJSON *m = text ? cJSON_Parse(text) : NULL;
    free(text);
    int rc = -1;
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(m, "source");
    const cJSON *pts = cJSON_GetObjectItemCaseSensitive(m, "points");
    if (!cJSON_IsString(src) || !cJSON_IsArray(pts)) {
        if (m || !err[0])
            snprintf(err, errlen, "%s: not a warm-start queue (source, points)", path);
        goto out;
    }
    q->source = xstrdup(src->valuestring);
    int *levels = xmalloc((size_t)sp->n_params * sizeof *levels + 1), k = 0;
    const cJSON *pt;
    cJSON_ArrayForEach(pt, pts) {
        k++;
        if (!map_point(sp, pt, levels, NULL)) {
            snprintf(err, errlen, "%s: point %d is not a point of this space", path, k);
            free(levels);
            warmstart_free(q);
            goto out;
        }
        queue_add(q, sp, levels);
    }
    free(levels);
    rc = 1;
out:
    cJSON_Delete(m);
    free(path);
    return rc;
}
