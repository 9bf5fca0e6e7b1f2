/* log_pump.h: an engine's output copied into its capped log file (log_pump.c).
 *
 * For runner.c: the runner polls the engine's stdout and stderr pipes and hands each
 * readable one to log_pump_read; the pump writes what it reads into the log and keeps the
 * end of stdout in memory, where the result line is looked for once the run is over.
 */
#ifndef LOG_PUMP_H
#define LOG_PUMP_H

#include <stddef.h>

/* A result line on stdout may be this long (the $TUNER_RESULT file may be longer); the pump
 * notes the longest '{' line over it so that the result reader can say so. */
#define RUNNER_RESULT_LINE_MAX (1 << 20)

/* Bytes of the end of stderr the pump keeps (log_pump.err_tail). */
#define LOG_PUMP_ERR_MAX 4096

/* Copies the engine's output into the log, keeping the last bytes of stdout in `tail`.
 * Past its limit the log keeps its first head_max bytes and its last tail_max bytes:
 * output goes on being appended after the head, and whenever the part after the head has
 * grown to twice tail_max it is cut back to its last tail_max bytes (so the file never
 * exceeds head + 2 tails); log_pump_close puts the line that says what was cut in between. */
typedef struct {
    int log_fd;
    const char *log_path;
    int log_broken; /* a write to the log failed (reported once) */
    char *tail;     /* the end of stdout (malloc'd; the caller frees it after close) */
    size_t tail_len;
    unsigned long long total;   /* bytes of output received */
    unsigned long long written; /* bytes in the log file now */
    size_t head_max, tail_max;
    /* stdout lines that start with '{': the longest one over RUNNER_RESULT_LINE_MAX */
    unsigned long long line_len, long_line;
    int line_started, line_brace;
    /* the last LOG_PUMP_ERR_MAX bytes of stderr: a crashed run's own last words, whatever
     * order its two pipes were read in */
    char err_tail[LOG_PUMP_ERR_MAX];
    size_t err_len;
} log_pump;

/* Start pumping into the open log_fd (named log_path in warnings), keeping at most limit
 * bytes of log. */
void log_pump_open(log_pump *p, int log_fd, const char *log_path, long long limit);

/* Read what fd (the engine's stdout when is_stdout, else its stderr) has; returns 0 at end
 * of file (or on a read error). */
int log_pump_read(log_pump *p, int fd, int is_stdout);

/* At the end of the run: the line that says what was cut, if anything was, and the tail
 * ended with a NUL (the log_fd stays open). */
void log_pump_close(log_pump *p);

#endif
