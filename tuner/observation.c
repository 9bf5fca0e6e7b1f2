/* observation.c: the feasibility rule every part of the tuner judges points by
 * (observation.h). */
#include "observation.h"

#include <math.h>

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
