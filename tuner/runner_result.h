/* runner_result.h: reading a finished run's result, for runner.c (runner_result.c). */
#ifndef RUNNER_RESULT_H
#define RUNNER_RESULT_H

#include "runner.h"

/* Fill out->status, metrics and reason from a run that exited with status 0: the
 * $TUNER_RESULT file, else the last JSON line of stdout_tail, else the space's regexes over
 * the log. long_line: the length of the longest stdout line that started with '{' when it
 * was longer than a result line may be (0 otherwise). */
void runner_result_read(const space *sp, const run_request *req, const char *stdout_tail,
                        unsigned long long long_line, run_result *out);

/* The last output of a crashed trial, for its reason, or NULL: the last non-empty line the
 * engine wrote on stderr (err_tail, err_len bytes: the end of it), else the log's last. Its
 * own stream, not the log's, first: the log interleaves stdout and stderr in the order the
 * runner happened to read the two pipes, so its last line changes from run to run. Caller
 * frees. */
char *runner_last_output(const char *log_path, const char *err_tail, size_t err_len);

#endif
