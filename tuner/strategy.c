/* strategy.c: the registry of search strategies and the feasibility rule they share.
 *
 * Each strategy lives in its own file and exports one strategy_ops; adding one (e.g. the
 * Bayesian strategy) means adding its file and one line to the table below. */
#include "strategy.h"

#include <math.h>
#include <string.h>

extern const strategy_ops strategy_grid_ops;
extern const strategy_ops strategy_sobol_ops;
extern const strategy_ops bayes_ops;

static const strategy_ops *const registry[] = {
    &strategy_grid_ops,
    &strategy_sobol_ops,
    &bayes_ops,
};

const strategy_ops *strategy_find(const char *name) {
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
        if (!strcmp(registry[i]->name, name)) return registry[i];
    return NULL;
}

/* Feasible: measured (TRIAL_OK) and every constraint metric satisfies its bound. A NaN
 * (not measured) or a value on the wrong side of the bound makes it infeasible; infinity
 * compares as it should (ppl = inf is never <= a finite bound). */
int observation_feasible(const observation *o, const resolved_constraint *rc, int n_rc) {
    if (o->status != TRIAL_OK) return 0;
    for (int i = 0; i < n_rc; i++) {
        double v = o->cons[i], b = rc[i].bound;
        if (isnan(v) || isnan(b)) return 0;
        int ok = 0;
        switch (rc[i].def->op) {
        case OP_LE:
            ok = v <= b;
            break;
        case OP_LT:
            ok = v < b;
            break;
        case OP_GE:
            ok = v >= b;
            break;
        case OP_GT:
            ok = v > b;
            break;
        }
        if (!ok) return 0;
    }
    return 1;
}
