/* log_pump.c: an engine's output copied into its capped log file; see log_pump.h.
 *
 * A chatty engine must neither fill the disk nor lose what matters in its log: the start
 * (how it began) and the end (how it ended, and its result line). So past the limit the
 * log keeps a head and a tail with one line between them that says how much was cut, and
 * the cut is made as output arrives, so the file never grows past the head and two tails
 * however long the engine writes. The pump also keeps the end of stdout in memory and
 * measures each stdout line that starts with '{', so that the runner reads the result line
 * without reading the log back and tells a result line that is too long from none; and the
 * end of stderr, whose last line names a crashed run's failure.
 *
 * It knows nothing of processes: the runner owns the pipes and the poll.
 */
#include "log_pump.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/* TAIL_MAX: bytes of stdout kept to find the result line. */
enum { TAIL_MAX = 1 << 20 };

void log_pump_open(log_pump *p, int log_fd, const char *log_path, long long limit) {
    *p = (log_pump){.log_fd = log_fd,
                    .log_path = log_path,
                    .tail = xmalloc(TAIL_MAX + 1),
                    .head_max = (size_t)(limit / 2),
                    .tail_max = (size_t)(limit - limit / 2)};
}

static void log_warn(log_pump *p) {
    if (p->log_broken) return;
    p->log_broken = 1;
    fprintf(stderr, "%s: warning: cannot write log %s: %s\n", util_progname, p->log_path,
            strerror(errno));
}

/* Keep the last `keep` bytes after the head, then `marker` (may be NULL) between them. */
static void log_cut(log_pump *p, size_t keep, const char *marker) {
    if (p->log_broken || p->written <= p->head_max + keep) return;
    char *buf = xmalloc(keep + 1);
    size_t mlen = marker ? strlen(marker) : 0;
    ssize_t got = pread(p->log_fd, buf, keep, (off_t)(p->written - keep));
    if (got != (ssize_t)keep ||
        (mlen && pwrite(p->log_fd, marker, mlen, (off_t)p->head_max) != (ssize_t)mlen) ||
        pwrite(p->log_fd, buf, keep, (off_t)(p->head_max + mlen)) != (ssize_t)keep ||
        ftruncate(p->log_fd, (off_t)(p->head_max + mlen + keep)) != 0) {
        log_warn(p);
    } else {
        p->written = p->head_max + mlen + keep;
    }
    free(buf);
}

static void log_write(log_pump *p, const char *buf, size_t n) {
    p->total += n;
    if (p->log_broken) return;
    if (pwrite(p->log_fd, buf, n, (off_t)p->written) != (ssize_t)n) {
        log_warn(p);
        return;
    }
    p->written += n;
    if (p->written > p->head_max + 2 * p->tail_max) log_cut(p, p->tail_max, NULL);
}

void log_pump_close(log_pump *p) {
    if (p->total > p->head_max + p->tail_max) {
        char marker[256];
        snprintf(marker, sizeof marker,
                 "\n[tuner: %llu bytes of output cut here; the log keeps the first %zu and the "
                 "last %zu bytes]\n",
                 p->total - p->head_max - p->tail_max, p->head_max, p->tail_max);
        log_cut(p, p->tail_max, marker);
    }
    p->tail[p->tail_len] = '\0';
}

/* Follow the lines of stdout that start with '{' (result lines), for their length. */
static void lines_follow(log_pump *p, const char *buf, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char ch = buf[i];
        if (ch == '\n') {
            if (p->line_brace && p->line_len > RUNNER_RESULT_LINE_MAX && p->line_len > p->long_line)
                p->long_line = p->line_len;
            p->line_len = 0;
            p->line_started = p->line_brace = 0;
            continue;
        }
        if (!p->line_started && ch != ' ' && ch != '\t' && ch != '\r') {
            p->line_started = 1;
            p->line_brace = ch == '{';
        }
        if (p->line_started) p->line_len++;
    }
}

/* Append data[n] to keep[*len], keeping only its last max bytes. */
static void keep_end(char *keep, size_t *len, size_t max, const char *data, size_t n) {
    const size_t take = n < max ? n : max;                     /* data's last bytes */
    const size_t stay = *len + take > max ? max - take : *len; /* keep's last bytes */
    if (stay < *len) memmove(keep, keep + *len - stay, stay);
    memcpy(keep + stay, data + n - take, take);
    *len = stay + take;
}

int log_pump_read(log_pump *p, int fd, int is_stdout) {
    char buf[65536];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return 1;
    if (n <= 0) {
        if (is_stdout) lines_follow(p, "\n", 1); /* the last line ends with the output */
        return 0;
    }
    log_write(p, buf, (size_t)n);
    if (is_stdout) {
        lines_follow(p, buf, (size_t)n);
        keep_end(p->tail, &p->tail_len, TAIL_MAX, buf, (size_t)n);
    } else {
        keep_end(p->err_tail, &p->err_len, LOG_PUMP_ERR_MAX, buf, (size_t)n);
    }
    return 1;
}
