/* journal.c: the study folder and its append-only trial log; see journal.h. */
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "input.h"
#include "util.h"

void time_iso_utc(char *buf, size_t n) {
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int dir_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int dir_make(const char *path, char *err, size_t errlen) {
    char *p = xstrdup(path);
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (mkdir(p, 0755) != 0 && errno != EEXIST) {
                snprintf(err, errlen, "cannot create folder %s: %s", p, strerror(errno));
                free(p);
                return 0;
            }
            if (!dir_exists(p)) {
                snprintf(err, errlen, "cannot create folder %s: a file of that name is in the way",
                         p);
                free(p);
                return 0;
            }
            *s = c;
            if (c == '\0') break;
        }
    }
    free(p);
    return 1;
}

/* fsync the folder holding path, so a rename or a new file survives a power cut. */
static void dir_sync_of(const char *path) {
    char *copy = xstrdup(path);
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(copy);
}

/* Write all of buf with one write() call (retried only when interrupted). */
static int write_once(int fd, const char *buf, size_t len) {
    ssize_t n;
    do
        n = write(fd, buf, len);
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)len) return 1;
    if (n >= 0) errno = ENOSPC; /* a short write: the disk filled up under us */
    return 0;
}

int file_write_atomic(const char *path, const char *text, char *err, size_t errlen) {
    char *tmp = xasprintf("%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        free(tmp);
        return 0;
    }
    int ok = write_once(fd, text, strlen(text)) && fsync(fd) == 0;
    int saved = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        saved = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        saved = errno;
    }
    if (!ok) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(saved));
        unlink(tmp);
        free(tmp);
        return 0;
    }
    dir_sync_of(path);
    free(tmp);
    return 1;
}

/* journal_load, with the line number of each record in *lines (when lines is not NULL). */
static int journal_load_lines(const char *path, int repair, cJSON ***records, int *n_records,
                              int **lines, char *err, size_t errlen) {
    *records = NULL;
    *n_records = 0;
    if (lines) *lines = NULL;
    size_t len;
    char *text = input_read(path, INPUT_MAX_JOURNAL, &len, err, errlen);
    if (!text) return 0;
    if (strlen(text) != len) {
        snprintf(err, errlen, "%s: contains NUL bytes: not a trials journal", path);
        free(text);
        return 0;
    }
    int cap = 16, n = 0, line = 0;
    cJSON **recs = xmalloc((size_t)cap * sizeof *recs);
    size_t good_end = 0; /* byte offset just after the last good line */
    char *p = text;
    while (*p) {
        line++;
        char *nl = strchr(p, '\n');
        int complete = nl != NULL;
        size_t l = complete ? (size_t)(nl - p) : strlen(p);
        int last = !complete || nl[1] == '\0';
        const char *a = p;
        while (a < p + l && (*a == ' ' || *a == '\t' || *a == '\r'))
            a++;
        if (a == p + l) { /* blank line */
            if (complete) good_end = (size_t)(nl + 1 - text);
            p += l + complete;
            continue;
        }
        cJSON *j = cJSON_ParseWithLength(p, l);
        int ok = j && cJSON_IsObject(j) && complete;
        if (!ok) {
            cJSON_Delete(j);
            if (!last) {
                snprintf(err, errlen, "%s:%d: not a JSON object: the journal is damaged", path,
                         line);
                if (lines) {
                    free(*lines);
                    *lines = NULL;
                }
                for (int i = 0; i < n; i++)
                    cJSON_Delete(recs[i]);
                free(recs);
                free(text);
                return 0;
            }
            fprintf(stderr,
                    "%s: %s:%d: the last line (%zu bytes) is incomplete, probably cut by a crash "
                    "while it was written; ignoring it%s\n",
                    util_progname, path, line, l, repair ? " and cutting it away" : "");
            if (repair && truncate(path, (off_t)good_end) != 0) {
                snprintf(err, errlen, "cannot truncate %s: %s", path, strerror(errno));
                if (lines) {
                    free(*lines);
                    *lines = NULL;
                }
                for (int i = 0; i < n; i++)
                    cJSON_Delete(recs[i]);
                free(recs);
                free(text);
                return 0;
            }
            break;
        }
        if (n == cap) {
            recs = xrealloc(recs, (size_t)(cap *= 2) * sizeof *recs);
            if (lines) *lines = xrealloc(*lines, (size_t)cap * sizeof **lines);
        }
        if (lines && !*lines) *lines = xmalloc((size_t)cap * sizeof **lines);
        if (lines) (*lines)[n] = line;
        recs[n++] = j;
        good_end = (size_t)(nl + 1 - text);
        p = nl + 1;
    }
    free(text);
    *records = recs;
    *n_records = n;
    return 1;
}

int journal_load(const char *path, int repair, cJSON ***records, int *n_records, char *err,
                 size_t errlen) {
    return journal_load_lines(path, repair, records, n_records, NULL, err, errlen);
}

typedef struct {
    double id;
    int line;
} id_line;

static int id_line_cmp(const void *a, const void *b) {
    const id_line *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return x->line - y->line;
}

/* A trial id twice in the journal: an error naming both lines. Returns 1 when all differ. */
static int journal_ids_unique(const char *path, cJSON **recs, const int *lines, int n, char *err,
                              size_t errlen) {
    id_line *v = xmalloc(((size_t)n + 1) * sizeof *v);
    int k = 0;
    for (int i = 0; i < n; i++) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(recs[i], "id");
        if (cJSON_IsNumber(id)) v[k++] = (id_line){id->valuedouble, lines[i]};
    }
    qsort(v, (size_t)k, sizeof *v, id_line_cmp);
    for (int i = 1; i < k; i++)
        if (v[i].id == v[i - 1].id) {
            snprintf(err, errlen,
                     "%s:%d: trial id %.0f appears again (first at line %d): two sweeps wrote "
                     "this study at once, or the file was edited; the study cannot be resumed "
                     "until one of the two lines is removed",
                     path, v[i].line, v[i].id, v[i - 1].line);
            free(v);
            return 0;
        }
    free(v);
    return 1;
}

/* The study.json of a space: what `tuner show` needs when the space file is elsewhere. */
static char *study_meta_text(const space *sp) {
    static const char *ops[] = {"<=", "<", ">=", ">"};
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "space_path", sp->path ? sp->path : "");
    cJSON_AddStringToObject(m, "objective", sp->objective);
    cJSON_AddStringToObject(m, "direction", sp->maximize ? "maximize" : "minimize");
    cJSON *cons = cJSON_AddArrayToObject(m, "constraints");
    for (int i = 0; i < sp->n_constraints; i++) {
        const constraint_def *c = &sp->constraints[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "metric", c->metric);
        cJSON_AddStringToObject(o, "op", ops[c->op]);
        cJSON_AddNumberToObject(o, "value", c->value);
        cJSON_AddBoolToObject(o, "relative", c->relative);
        cJSON_AddStringToObject(o, "text", c->text ? c->text : "");
        cJSON_AddItemToArray(cons, o);
    }
    cJSON *params = cJSON_AddArrayToObject(m, "parameters");
    for (int i = 0; i < sp->n_params; i++)
        cJSON_AddItemToArray(params, cJSON_CreateString(sp->params[i].name));
    cJSON_AddNumberToObject(m, "repeats", sp->repeats);
    char *text = cJSON_Print(m);
    cJSON_Delete(m);
    char *out = xasprintf("%s\n", text);
    free(text);
    return out;
}

/* Create the files of a new study in dir (which exists and is empty of them). */
static int study_create(const char *dir, const space *sp, char *err, size_t errlen) {
    char *logs = xasprintf("%s/logs", dir);
    int ok = dir_make(logs, err, errlen);
    free(logs);
    if (!ok) return 0;
    char *space_text = space_to_json_text(sp);
    char *hash = xasprintf("%016" PRIx64 "\n", sp->hash);
    char *meta = study_meta_text(sp);
    char *p1 = xasprintf("%s/space.json", dir), *p2 = xasprintf("%s/space.hash", dir),
         *p3 = xasprintf("%s/study.json", dir);
    /* space.hash last: its presence marks a complete study folder */
    ok = file_write_atomic(p1, space_text, err, errlen) &&
         file_write_atomic(p3, meta, err, errlen) && file_write_atomic(p2, hash, err, errlen);
    free(space_text);
    free(hash);
    free(meta);
    free(p1);
    free(p2);
    free(p3);
    return ok;
}

journal_status journal_open(const char *dir, const space *sp, journal **out, char *err,
                            size_t errlen) {
    *out = NULL;
    if (!dir_make(dir, err, errlen)) return JOURNAL_ERROR;
    char *hash_path = xasprintf("%s/space.hash", dir);
    char *trials_path = xasprintf("%s/trials.jsonl", dir);
    struct stat st;
    if (stat(hash_path, &st) != 0) {
        if (stat(trials_path, &st) == 0) {
            snprintf(err, errlen,
                     "%s has trials but no space.hash: not a study folder this tuner made", dir);
            free(hash_path);
            free(trials_path);
            return JOURNAL_ERROR;
        }
        if (!study_create(dir, sp, err, errlen)) {
            free(hash_path);
            free(trials_path);
            return JOURNAL_ERROR;
        }
    } else {
        size_t stored_len;
        char *stored = input_read(hash_path, INPUT_MAX_SMALL, &stored_len, err, errlen);
        if (!stored) {
            free(hash_path);
            free(trials_path);
            return JOURNAL_ERROR;
        }
        char want[32];
        snprintf(want, sizeof want, "%016" PRIx64, sp->hash);
        /* Exactly 16 hex digits and an optional newline: no NUL byte, nothing else. */
        int well_formed = stored_len >= 16 && strspn(stored, "0123456789abcdef") == 16 &&
                          (stored_len == 16 || (stored_len == 17 && stored[16] == '\n'));
        stored[16 < stored_len ? 16 : stored_len] = '\0';
        if (!well_formed) {
            snprintf(err, errlen,
                     "%s: not a space hash (16 hex digits): the study folder is damaged",
                     hash_path);
            free(stored);
            free(hash_path);
            free(trials_path);
            return JOURNAL_ERROR;
        }
        int same = strcmp(stored, want) == 0;
        if (!same)
            snprintf(err, errlen, "hash %s in %s, %s for the space now", stored, hash_path, want);
        free(stored);
        if (!same) {
            free(hash_path);
            free(trials_path);
            return JOURNAL_CHANGED;
        }
        char *logs = xasprintf("%s/logs", dir);
        int ok = dir_make(logs, err, errlen);
        free(logs);
        if (!ok) {
            free(hash_path);
            free(trials_path);
            return JOURNAL_ERROR;
        }
    }
    free(hash_path);

    int fd = open(trials_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644), read_only = 0;
    if (fd < 0 && (errno == EACCES || errno == EROFS || errno == EPERM)) {
        /* A folder that cannot be written: enough to see that nothing is left to do. */
        fd = open(trials_path, O_RDONLY | O_CLOEXEC);
        read_only = fd >= 0;
        if (fd < 0) errno = EACCES;
    }
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s for appending: %s", trials_path, strerror(errno));
        free(trials_path);
        return JOURNAL_ERROR;
    }
    journal *j = xcalloc(1, sizeof *j);
    j->dir = xstrdup(dir);
    j->trials_path = trials_path;
    j->fd = fd;
    j->read_only = read_only;
    int *lines = NULL;
    if (!journal_load_lines(trials_path, !read_only, &j->records, &j->n_records, &lines, err,
                            errlen) ||
        !journal_ids_unique(trials_path, j->records, lines, j->n_records, err, errlen)) {
        free(lines);
        journal_close(j);
        return JOURNAL_ERROR;
    }
    free(lines);
    if (!read_only) dir_sync_of(trials_path);
    *out = j;
    return JOURNAL_OK;
}

int journal_append(journal *j, const cJSON *record, char *err, size_t errlen) {
    if (j->read_only) {
        snprintf(err, errlen, "cannot append a trial to %s: the study folder cannot be written",
                 j->trials_path);
        return 0;
    }
    char *text = cJSON_PrintUnformatted(record);
    char *line = xasprintf("%s\n", text);
    free(text);
    off_t before = lseek(j->fd, 0, SEEK_END);
    int ok = write_once(j->fd, line, strlen(line));
    int saved = errno;
    if (ok && fsync(j->fd) != 0) {
        ok = 0;
        saved = errno;
    }
    free(line);
    if (!ok) {
        if (before >= 0 && ftruncate(j->fd, before) != 0) {
            /* the torn line stays; the next load reports and cuts it */
        }
        snprintf(err, errlen, "cannot append a trial to %s: %s (the trials already in it are kept)",
                 j->trials_path, strerror(saved));
        return 0;
    }
    j->records = xrealloc(j->records, (size_t)(j->n_records + 1) * sizeof *j->records);
    j->records[j->n_records++] = cJSON_Duplicate(record, 1);
    return 1;
}

void journal_close(journal *j) {
    if (!j) return;
    if (j->fd >= 0) close(j->fd);
    for (int i = 0; i < j->n_records; i++)
        cJSON_Delete(j->records[i]);
    free(j->records);
    free(j->dir);
    free(j->trials_path);
    free(j);
}

/* ---------------------------------------------------------------------------------------- */
/* the lock */

int study_lock(const char *dir, const char *study, int *fd_out, char *err, size_t errlen) {
    char *path = xasprintf("%s/lock", dir);
    int writable = 1;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 && (errno == EACCES || errno == EROFS || errno == EPERM)) {
        writable = 0;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT) { /* read-only, never locked: nobody writes here */
            free(path);
            *fd_out = -1;
            return 1;
        }
    }
    if (fd < 0) {
        snprintf(err, errlen, "cannot open the lock file %s: %s", path, strerror(errno));
        free(path);
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (e != EWOULDBLOCK) {
            snprintf(err, errlen, "cannot lock %s: %s", path, strerror(e));
            close(fd);
            free(path);
            return -1;
        }
        /* The holder writes its pid right after it locks: give it a moment. */
        char buf[32] = "";
        for (int tries = 0; tries < 40; tries++) {
            ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
            buf[n > 0 ? n : 0] = '\0';
            buf[strcspn(buf, "\n")] = '\0';
            if (buf[0]) break;
            usleep(25000);
        }
        snprintf(err, errlen,
                 "study '%s' is in use by another sweep (pid %s, lock %s); wait for it to end, "
                 "or stop it",
                 study, buf[0] ? buf : "unknown", path);
        close(fd);
        free(path);
        return 0;
    }
    if (writable) {
        char pid[32];
        int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
        if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
            /* the lock holds; only its pid is missing from messages */
        }
    }
    free(path);
    *fd_out = fd;
    return 1;
}

void study_unlock(int fd) {
    if (fd >= 0) close(fd);
}

/* ---------------------------------------------------------------------------------------- */
/* study names */

char *study_default_name(const space *sp, const char *path) {
    if (sp->study) return xstrdup(sp->study);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    return xasprintf("%.*s", (int)n, base);
}

int study_exists(const char *out_dir, const char *name) {
    char *p = xasprintf("%s/%s/space.hash", out_dir, name);
    struct stat st;
    int e = stat(p, &st) == 0;
    free(p);
    return e;
}

char *study_fresh_name(const char *out_dir, const char *name) {
    if (!study_exists(out_dir, name)) return xstrdup(name);
    for (int k = 2;; k++) {
        char *n = xasprintf("%s-%d", name, k);
        if (!study_exists(out_dir, n)) return n;
        free(n);
    }
}
