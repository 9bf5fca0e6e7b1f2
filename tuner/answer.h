/* answer.h: the end of a sweep (DESIGN.md 4.2).
 *
 * Prints what the search did, counting what happened to its points (feasible, over a
 * constraint, with an infinite metric, failed); judges the verification (verify.h); and
 * writes the manifest of the answer: the winner, or the baseline when no setting was
 * measurably faster. Without an answer (no feasible point, or no candidate and no baseline
 * that survives the held-out prompts) it says why and writes nothing.
 */
#ifndef ANSWER_H
#define ANSWER_H

#include "space.h"
#include "trials.h"
#include "verify.h"

typedef struct {
    const space *sp;
    const trial_table *t, *vt; /* tuning and verification tables */
    const verify_plan *plan;
    resolved_constraint *rc; /* the tuning table's bounds (resolved here) */
    const char *study, *dir; /* the study's name and folder */
    const char *stop;        /* why the search ended */
    double wall_used_s;      /* the study's wall time, all sessions */
    double noise;            /* relative sd of the baseline's objective, NAN: none */
    int unchanged_ok;        /* nothing ran: an identical manifest on disk stands */
} answer_input;

enum {
    ANSWER_MANIFEST, /* a manifest was written (or an identical one stands) */
    ANSWER_NONE,     /* no answer: no manifest */
    ANSWER_ERROR     /* the manifest could not be written */
};

/* Returns one of the ANSWER_* values above. */
int answer_finish(const answer_input *in);

#endif
