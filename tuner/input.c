/* input.c: capped reads of input files; see input.h. */
#include "input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

char *input_read(const char *path, size_t max, size_t *len, char *err, size_t errlen) {
    /* O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below anyway). */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file (%s)", path,
                 S_ISDIR(st.st_mode)                          ? "a folder"
                 : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                 : S_ISFIFO(st.st_mode)                       ? "a pipe"
                                                              : "not a plain file");
        close(fd);
        return NULL;
    }
    if ((unsigned long long)st.st_size > max) {
        snprintf(err, errlen, "%s: %lld bytes, larger than the %zu bytes such a file may have",
                 path, (long long)st.st_size, max);
        close(fd);
        return NULL;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    /* The file may grow while it is read: never read more than max + 1 bytes. */
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *buf = xmalloc(cap + 1);
    for (;;) {
        if (n == cap) {
            if (cap > max) break;
            cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
            buf = xrealloc(buf, cap + 1);
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
            close(fd);
            free(buf);
            return NULL;
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    close(fd);
    if (n > max) {
        snprintf(err, errlen, "%s: larger than the %zu bytes such a file may have", path, max);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}
