/* warmstart.h: `tuner sweep --warm-start OTHER`, a porting start from an earlier study.
 *
 * OTHER is an earlier study folder or its manifest.json (e.g. the winner on an A10G, when
 * the configuration moves to an L4). Its winner is mapped onto this space's lattice by knob
 * name and value (knobs this space lacks are ignored; knobs the earlier point lacks take
 * their default, else their baseline level, else the middle level; an int value between
 * levels snaps to the nearest level; a categorical value this space lacks maps to the
 * nearest numeric value when the values are numbers, else to the default). The queue is:
 * that point, then its lattice neighbours (one step down and up along each int knob, every
 * other value of each categorical knob, since categories are unordered), then the earlier
 * study's other feasible points best first (at most WARM_PRIOR_POINTS, mapped the same way;
 * points that do not map are left out), without duplicates.
 *
 * What "prior" means here, concretely: the earlier trials decide which points are measured
 * first on this machine, and nothing else. Their figures are never mixed into this study's
 * observations: tokens/s on another GPU differ by an unknown factor per region of the space
 * (draft acceptance, bandwidth, kernel choices), so the strategy (a GP for bayes) learns the
 * new surface from these seeded points measured here, which sit where the old optimum was.
 * Every queued point is a trial of this study (phase "warm", counted in its budget).
 *
 * The queue is saved in the study folder (warmstart.json) when the study begins, so a
 * resumed study runs exactly the same queue without the flag.
 */
#ifndef WARMSTART_H
#define WARMSTART_H

#include <stdio.h>

#include "space.h"

enum { WARM_PRIOR_POINTS = 6 };

typedef struct {
    int **points; /* [n] levels on this space's lattice, in evaluation order */
    int n;
    char *source; /* the study folder or manifest they came from */
} warm_queue;

/* Build the queue for sp from OTHER (a study folder or a manifest). Notes on how the
 * winner was mapped go to `notes`. Returns 1, or 0 with err naming the file. */
int warmstart_build(const space *sp, const char *other, warm_queue *q, FILE *notes, char *err,
                    size_t errlen);

/* study_dir/warmstart.json. save: returns 1, or 0 with err. load: 1 loaded, 0 no such
 * file, -1 error (err names the file). */
int warmstart_save(const char *study_dir, const space *sp, const warm_queue *q, char *err,
                   size_t errlen);
int warmstart_load(const char *study_dir, const space *sp, warm_queue *q, char *err, size_t errlen);
void warmstart_free(warm_queue *q);

#endif
