/* journal.h: the study folder on disk, the tuner's only memory (DESIGN.md 4.3).
 *
 *   out/<study>/space.json    the space as loaded (space_to_json_text), what the hash covers
 *   out/<study>/space.hash    its hash, 16 hex digits: a changed space is refused on resume
 *   out/<study>/study.json    what `tuner show` needs without the space file (objective,
 *                             constraints, parameter names, repeats, space file path)
 *   out/<study>/trials.jsonl  one JSON object per finished trial, in the order they ended
 *   out/<study>/logs/<id>.log the engine's stdout+stderr of trial <id>
 *   out/<study>/lock          held (flock) by the sweep working on the study; holds its pid
 *   out/<study>/running/<id>  the processes of trial <id> while it runs (runner.h)
 *
 * Every trial line is written with a single write() and fsync'd before the next trial
 * starts, so a crash can at worst leave the last line torn; loading detects a torn last
 * line, says so, and cuts it away. Nothing that was fsync'd is ever rewritten.
 */
#ifndef JOURNAL_H
#define JOURNAL_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "space.h"

typedef struct {
    char *dir;         /* the study folder */
    char *trials_path; /* dir/trials.jsonl */
    int fd;            /* trials.jsonl opened for appending */
    cJSON **records;   /* [n_records] the trial lines, in file order (owned) */
    int n_records;
    int read_only; /* the folder cannot be written: fine as long as nothing is appended */
} journal;

typedef enum {
    JOURNAL_OK,
    JOURNAL_CHANGED, /* the folder holds a study of a different space (hash differs) */
    JOURNAL_ERROR    /* anything else; err says what, naming the file */
} journal_status;

/* Open the study folder `dir` for the space sp, creating it (and its parents) when it does
 * not exist, and load its trials. On JOURNAL_CHANGED, err names both hashes. A journal that
 * holds a trial id twice is an error naming both lines. A study folder that cannot be
 * written is opened read-only (j->read_only): loading works, appending fails. */
journal_status journal_open(const char *dir, const space *sp, journal **out, char *err,
                            size_t errlen);
void journal_close(journal *j);

/* Append one trial record: one write(), then fsync. On failure (disk full, I/O error) the
 * partial line is cut away again, err names the file and 0 is returned; the lines already
 * written are untouched. The record is also kept in j->records (copied). */
int journal_append(journal *j, const cJSON *record, char *err, size_t errlen);

/* Read a trials.jsonl file. A torn or unparsable last line is reported on stderr and
 * ignored; with `repair` it is also truncated away. A bad line before the last one is an
 * error naming file and line. Returns 1 on success. */
int journal_load(const char *path, int repair, cJSON ***records, int *n_records, char *err,
                 size_t errlen);

/* Lock the study folder dir (its file "lock", flock'd) for one sweep at a time; the lock
 * goes with the process (a crash releases it). Returns 1 with *fd set when locked; 0 when
 * another process holds it (err names the study and that process's pid); -1 on an error.
 * In a folder that cannot be written the lock file is opened read-only (and when it does
 * not exist there, nothing is locked: *fd is -1 and 1 is returned). */
int study_lock(const char *dir, const char *study, int *fd, char *err, size_t errlen);
void study_unlock(int fd);

/* Write a file atomically: path.tmp, fsync, rename, fsync of the folder. Returns 1 on
 * success; on failure err names the file and the temporary is removed. */
int file_write_atomic(const char *path, const char *text, char *err, size_t errlen);

/* mkdir -p. Returns 1 on success, else err names the folder that could not be made. */
int dir_make(const char *path, char *err, size_t errlen);

/* The current time as "2026-08-03T21:04:05Z" into buf (at least 21 bytes). */
void time_iso_utc(char *buf, size_t n);

/* Is path an existing folder? */
int dir_exists(const char *path);

/* Study names. The default: the space's `study`, else the space file's name without its
 * extension (caller frees). study_exists: out_dir/name holds a study (its space.hash).
 * study_fresh_name, for --new: the first of NAME, NAME-2, NAME-3... that is not a study
 * yet (caller frees). */
char *study_default_name(const space *sp, const char *path);
int study_exists(const char *out_dir, const char *name);
char *study_fresh_name(const char *out_dir, const char *name);

#endif
