/* space_lattice.c: the lattice of a loaded space - counting points, naming levels, and the
 * mapping between levels and the unit interval that Sobol and Bayesian proposals work in.
 *
 * The unit mapping: a categorical parameter, or an int parameter on a linear scale, splits
 * [0,1] into n_levels equal bins and level i sits at the centre of bin i, (i + 0.5) / n.
 * Equal bins give every level the same share of a uniform (or Sobol) sample. An int parameter
 * with log: true sits at its log position, (ln v - ln min) / (ln max - ln min), and a unit
 * position maps back to the level nearest in log space. Either way
 * space_param_level(p, space_param_unit(p, i)) == i for every level i. */
#include "space.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

long space_n_points(const space *sp) {
    long n = 1;
    for (int i = 0; i < sp->n_params; i++) {
        long k = sp->params[i].n_levels;
        if (k > 0 && n > LONG_MAX / k) return LONG_MAX;
        n *= k;
    }
    return n;
}

static long int_level_value(const param_def *p, int level) {
    return p->min + (long)level * p->step;
}

void space_param_value(const param_def *p, int level, char *buf, size_t n) {
    CHECK(level >= 0 && level < p->n_levels);
    if (p->kind == PARAM_INT)
        snprintf(buf, n, "%ld", int_level_value(p, level));
    else
        snprintf(buf, n, "%s", p->values[level]);
}

double space_param_unit(const param_def *p, int level) {
    CHECK(level >= 0 && level < p->n_levels);
    if (p->n_levels == 1) return 0.5;
    if (p->kind == PARAM_INT && p->log_scale) {
        double lo = log((double)p->min), hi = log((double)p->max);
        return (log((double)int_level_value(p, level)) - lo) / (hi - lo);
    }
    return (level + 0.5) / p->n_levels;
}

int space_param_level(const param_def *p, double unit) {
    if (!(unit > 0)) unit = 0; /* also catches NaN */
    if (unit > 1) unit = 1;
    if (p->n_levels == 1) return 0;
    if (p->kind == PARAM_INT && p->log_scale) {
        double lo = log((double)p->min), hi = log((double)p->max);
        double target = lo + unit * (hi - lo);
        double x = exp(target);
        long k = (long)floor((x - (double)p->min) / (double)p->step);
        if (k < 0) k = 0;
        if (k > p->n_levels - 2) k = p->n_levels - 2;
        double d0 = fabs(log((double)int_level_value(p, (int)k)) - target);
        double d1 = fabs(log((double)int_level_value(p, (int)k + 1)) - target);
        return (int)(d1 < d0 ? k + 1 : k);
    }
    int i = (int)floor(unit * p->n_levels);
    return i >= p->n_levels ? p->n_levels - 1 : i;
}

int space_param_find(const param_def *p, const char *s) {
    if (p->kind == PARAM_CATEGORICAL) {
        for (int i = 0; i < p->n_levels; i++)
            if (!strcmp(p->values[i], s)) return i;
        return -1;
    }
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno == ERANGE) return -1;
    if (v < p->min || v > p->max || (v - p->min) % p->step != 0) return -1;
    return (int)((v - p->min) / p->step);
}

char *space_point_key(const space *sp, const int *levels) {
    size_t cap = 64, len = 0;
    char *key = xmalloc(cap);
    key[0] = '\0';
    for (int i = 0; i < sp->n_params; i++) {
        const param_def *p = &sp->params[i];
        char buf[32];
        CHECK(levels[i] >= 0 && levels[i] < p->n_levels);
        if (p->kind == PARAM_INT) snprintf(buf, sizeof buf, "%ld", int_level_value(p, levels[i]));
        const char *value = p->kind == PARAM_INT ? buf : p->values[levels[i]];
        size_t need = strlen(sp->params[i].name) + strlen(value) + 3;
        while (len + need >= cap)
            key = xrealloc(key, cap *= 2);
        len += (size_t)snprintf(key + len, cap - len, "%s%s=%s", i ? "," : "", sp->params[i].name,
                                value);
    }
    return key;
}
