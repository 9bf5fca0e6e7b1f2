/* strategy_sobol.c: quasi-random search with GSL's Sobol sequence, snapped to the lattice.
 *
 * Sobol points fill the unit cube far more evenly than pseudo-random ones, so a small budget
 * still spreads over every knob's range. Dimension d of a Sobol point goes through
 * space_param_level onto parameter d's levels (equal bins per level, or log spacing).
 *
 * The strategy keeps no state: each proposal regenerates the sequence from its start,
 * skips the seed-dependent prefix, and takes the first point that is neither observed nor
 * pending. The seed picks the prefix: seed s skips the first splitmix64(s) mod 4096 points
 * of the sequence (seed 0 skips 3503 points; any two seeds give the same sequence shifted).
 * Duplicates after snapping are skipped. On a small lattice Sobol keeps landing on visited
 * points; after 4 * (visited + 1) + 64 draws without a new point the proposal falls back to
 * the first free point in grid order, so it always terminates, and returns 0 only once the
 * whole lattice is visited. */
#include "strategy.h"
#include "util.h"
#include "visited.h"

#include <gsl/gsl_qrng.h>
#include <stdlib.h>

#define SOBOL_MAX_DIM 40 /* GSL's limit for gsl_qrng_sobol */

struct strategy {
    const space *sp;
    uint64_t skip; /* points of the sequence skipped before the first proposal */
    double *point; /* [n_params] scratch for one Sobol point */
};

static uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static strategy *sobol_create(const space *sp, uint64_t seed) {
    if (sp->n_params < 1 || sp->n_params > SOBOL_MAX_DIM)
        die("sobol needs 1..%d parameters, the space has %d", SOBOL_MAX_DIM, sp->n_params);
    strategy *s = xcalloc(1, sizeof *s);
    s->sp = sp;
    s->skip = splitmix64(seed) % 4096;
    s->point = xcalloc((size_t)sp->n_params, sizeof *s->point);
    return s;
}

static int sobol_propose(strategy *s, const observation *obs, int n_obs,
                         const resolved_constraint *rc, int n_rc, const int *const *pending,
                         int n_pending, int *levels) {
    (void)rc;
    (void)n_rc;
    const space *sp = s->sp;
    visited_set v;
    visited_build(&v, sp, obs, n_obs, pending, n_pending);
    int found = 0;
    if (!visited_covers_lattice(&v, sp)) {
        gsl_qrng *q = gsl_qrng_alloc(gsl_qrng_sobol, (unsigned)sp->n_params);
        if (!q) die("gsl_qrng_alloc(sobol, %d) failed", sp->n_params);
        for (uint64_t i = 0; i < s->skip; i++)
            gsl_qrng_get(q, s->point);
        size_t max_draws = 4 * (v.count + 1) + 64;
        for (size_t d = 0; d < max_draws && !found; d++) {
            gsl_qrng_get(q, s->point);
            for (int k = 0; k < sp->n_params; k++)
                levels[k] = space_param_level(&sp->params[k], s->point[k]);
            found = !visited_has(&v, levels);
        }
        gsl_qrng_free(q);
        if (!found) found = visited_first_free(&v, sp, levels);
    }
    visited_free(&v);
    return found;
}

static void sobol_destroy(strategy *s) {
    if (!s) return;
    free(s->point);
    free(s);
}

const strategy_ops strategy_sobol_ops = {
    .name = "sobol",
    .create = sobol_create,
    .propose = sobol_propose,
    .rank = NULL,
    .destroy = sobol_destroy,
};
