/* show.h: `tuner show STUDY`, the table of a study's points, best first.
 *
 * Works from the study folder alone (study.json and trials.jsonl), so it can be run while
 * a sweep is in progress, after a crash, or on a copy of the folder on another machine.
 */
#ifndef SHOW_H
#define SHOW_H

#include <stdio.h>

#include "space.h"

/* Print the table of the study named `study` in out_dir (or at the path `study` when it
 * is a study folder). Returns the exit status (0, or 1 with a message naming the file). */
int show_main(const char *study, const char *out_dir, FILE *out);

/* The folder of the study named on the command line: `study` itself when it holds a '/' or a
 * study.json, else out_dir/study; trailing slashes removed. Caller frees. */
char *study_dir_find(const char *study, const char *out_dir);

/* The part of a space that a study folder's study.json records (objective, direction,
 * constraints, parameter names, repeats; parameters have no levels): enough to aggregate
 * the study's trials without its space file (also used by --warm-start). NULL with err set
 * when the file is unreadable or not a study description; a space with err set when an
 * entry is malformed. Free with study_space_free. */
space *study_space_load(const char *path, char *err, size_t errlen);
void study_space_free(space *sp);

#endif
