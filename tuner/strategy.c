/* strategy.c: the registry of search strategies.
 *
 * Each strategy lives in its own file and exports one strategy_ops; adding one (e.g. the
 * Bayesian strategy) means adding its file and one line to the table below. */
#include "strategy.h"

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
