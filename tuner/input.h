/* input.h: reading the tuner's input files with a size cap.
 *
 * Every file the tuner parses (the space, a study's journal and snapshots, an engine's
 * result, a manifest) is read through input_read: it must be a regular file (so a FIFO or
 * /dev/zero fails at once instead of blocking or filling memory) and at most `max` bytes,
 * a cap no real file of that kind reaches. The caps below are those limits.
 */
#ifndef INPUT_H
#define INPUT_H

#include <stddef.h>

#define INPUT_MAX_SPACE    ((size_t)1 << 20)  /* a space file: 1 MiB */
#define INPUT_MAX_JOURNAL  ((size_t)1 << 30)  /* trials.jsonl: 1 GiB */
#define INPUT_MAX_RESULT   ((size_t)16 << 20) /* an engine's $TUNER_RESULT file: 16 MiB */
#define INPUT_MAX_DOCUMENT ((size_t)64 << 20) /* manifest, study.json, space.json: 64 MiB */
#define INPUT_MAX_SMALL    ((size_t)4096)     /* space.hash, the lock file */

/* Read the whole file at path (NUL-terminated; *len gets its length when len is not NULL).
 * Returns NULL with err naming the file when it cannot be opened or read, is not a
 * regular file, or is larger than max bytes. Caller frees. */
char *input_read(const char *path, size_t max, size_t *len, char *err, size_t errlen);

#endif
