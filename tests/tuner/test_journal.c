/* test_journal.c: the study folder and its trial journal.
 *
 * A torn last line is reported, ignored and (when repairing) cut away, never fatal; a bad
 * line before the last one is an error naming file and line; an append that hits a full
 * disk fails with the file named and leaves the earlier trials intact; a changed space is
 * told apart from a damaged folder; atomic writes leave no temporary behind. */
#include "journal.h"
#include "trials.h"
#include "util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../test_util.h"

static char *tmpdir; /* the test's temporary folder */

static char *path_in(const char *name) {
    return xasprintf("%s/%s", tmpdir, name);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f);
    fputs(text, f);
    fclose(f);
}

static char *read_text(const char *path) {
    char err[512];
    char *t = file_read_all(path, NULL, err, sizeof err);
    CHECK(t);
    return t;
}

static void free_records(cJSON **r, int n) {
    for (int i = 0; i < n; i++)
        cJSON_Delete(r[i]);
    free(r);
}

static void test_torn_last_line(void) {
    char *p = path_in("torn.jsonl");
    const char *good = "{\"id\":1}\n\n{\"id\":2}\n";
    char *text = xasprintf("%s{\"id\":3,\"pha", good);
    write_text(p, text);
    cJSON **r;
    int n;
    char err[512];
    /* without repair: ignored, file untouched */
    EXPECT(journal_load(p, 0, &r, &n, err, sizeof err));
    EXPECT(n == 2);
    free_records(r, n);
    char *now = read_text(p);
    EXPECT(strcmp(now, text) == 0);
    free(now);
    /* with repair: cut back to the last good line */
    EXPECT(journal_load(p, 1, &r, &n, err, sizeof err));
    EXPECT(n == 2);
    EXPECT(cJSON_GetObjectItem(r[1], "id")->valueint == 2);
    free_records(r, n);
    now = read_text(p);
    EXPECT(strcmp(now, good) == 0);
    free(now);
    /* a complete last line that is not JSON counts as torn too */
    write_text(p, "{\"id\":1}\n{\"id\":2,\n");
    EXPECT(journal_load(p, 1, &r, &n, err, sizeof err));
    EXPECT(n == 1);
    free_records(r, n);
    now = read_text(p);
    EXPECT(strcmp(now, "{\"id\":1}\n") == 0);
    free(now);
    free(text);
    free(p);
}

static void test_bad_middle_line(void) {
    char *p = path_in("bad.jsonl");
    write_text(p, "{\"id\":1}\nnot json\n{\"id\":3}\n");
    cJSON **r;
    int n;
    char err[512];
    EXPECT(!journal_load(p, 1, &r, &n, err, sizeof err));
    char *want = xasprintf("%s:2: not a JSON object", p);
    EXPECT(strstr(err, want) != NULL);
    free(want);
    /* an array line is not a trial object either */
    write_text(p, "[1,2]\n{\"id\":3}\n");
    EXPECT(!journal_load(p, 1, &r, &n, err, sizeof err));
    EXPECT(strstr(err, ":1: not a JSON object") != NULL);
    /* a missing file is named */
    char *missing = path_in("missing.jsonl");
    EXPECT(!journal_load(missing, 0, &r, &n, err, sizeof err));
    EXPECT(strstr(err, missing) != NULL);
    free(missing);
    free(p);
}

static space *load_space(const char *name, const char *max) {
    char *p = path_in(name);
    char *text = xasprintf("engine: {command: [/bin/true]}\n"
                           "objective: {metric: tps, direction: maximize}\n"
                           "parameters: {A: {type: int, min: 1, max: %s}}\n",
                           max);
    write_text(p, text);
    char err[1024];
    space *sp = space_load(p, err, sizeof err);
    if (!sp) die("%s", err);
    free(text);
    free(p);
    return sp;
}

static cJSON *record(int id, const char *a) {
    char *t = xasprintf("{\"id\":%d,\"phase\":\"search\",\"point\":{\"A\":\"%s\"},\"levels\":[%d],"
                        "\"repeat\":0,\"status\":\"ok\",\"metrics\":{\"tps\":%d}}",
                        id, a, atoi(a) - 1, 10 * id);
    cJSON *r = cJSON_Parse(t);
    free(t);
    CHECK(r);
    return r;
}

static void test_append_and_full_disk(void) {
    space *sp = load_space("s.yaml", "4");
    char *dir = path_in("out/study");
    journal *j;
    char err[1024];
    EXPECT(journal_open(dir, sp, &j, err, sizeof err) == JOURNAL_OK);
    EXPECT(j->n_records == 0);
    cJSON *r1 = record(1, "1"), *r2 = record(2, "2");
    EXPECT(journal_append(j, r1, err, sizeof err));
    /* the disk fills up: the append fails naming the file; the first trial stays */
    int full = open("/dev/full", O_WRONLY);
    if (full >= 0) {
        close(j->fd);
        j->fd = full;
        EXPECT(!journal_append(j, r2, err, sizeof err));
        EXPECT(strstr(err, j->trials_path) != NULL);
        EXPECT(strstr(err, "No space left on device") != NULL);
        EXPECT(j->n_records == 1);
    }
    journal_close(j);
    /* reopened: the one trial is there; the same space resumes */
    EXPECT(journal_open(dir, sp, &j, err, sizeof err) == JOURNAL_OK);
    EXPECT(j->n_records == 1);
    EXPECT(journal_append(j, r2, err, sizeof err));
    journal_close(j);
    EXPECT(journal_open(dir, sp, &j, err, sizeof err) == JOURNAL_OK);
    EXPECT(j->n_records == 2);
    /* the table over them: two points, ids and medians */
    trial_table *t = trials_new(sp);
    for (int i = 0; i < j->n_records; i++)
        EXPECT(trials_add(t, j->records[i], "x", err, sizeof err) >= 0);
    EXPECT(t->n_points == 2 && t->max_id == 2);
    EXPECT(t->points[1].objective == 20.0 && t->points[1].status == TRIAL_OK);
    trials_free(t);
    journal_close(j);
    /* a different space: refused as changed, both hashes named */
    space *other = load_space("s2.yaml", "5");
    EXPECT(journal_open(dir, other, &j, err, sizeof err) == JOURNAL_CHANGED);
    EXPECT(strstr(err, "space.hash") != NULL);
    /* the snapshot files exist */
    char *snap = xasprintf("%s/space.json", dir), *meta = xasprintf("%s/study.json", dir);
    EXPECT(access(snap, F_OK) == 0 && access(meta, F_OK) == 0);
    free(snap);
    free(meta);
    cJSON_Delete(r1);
    cJSON_Delete(r2);
    space_free(other);
    space_free(sp);
    free(dir);
}

static void test_trials_reject_foreign_records(void) {
    space *sp = load_space("s3.yaml", "4");
    trial_table *t = trials_new(sp);
    char err[512];
    cJSON *r = cJSON_Parse("{\"id\":1,\"point\":{\"A\":\"9\"},\"levels\":[8],\"status\":\"ok\"}");
    EXPECT(trials_add(t, r, "f.jsonl:7", err, sizeof err) == TRIALS_BAD);
    EXPECT(strstr(err, "f.jsonl:7: knob A") != NULL);
    cJSON_Delete(r);
    r = cJSON_Parse("{\"id\":1,\"point\":{\"A\":\"1\"},\"levels\":[0],\"status\":\"weird\"}");
    EXPECT(trials_add(t, r, "f.jsonl:8", err, sizeof err) == TRIALS_BAD);
    EXPECT(strstr(err, "f.jsonl:8:") != NULL);
    cJSON_Delete(r);
    /* a verification run on held-out prompts: counted for ids and time, not aggregated */
    r = cJSON_Parse("{\"id\":9,\"phase\":\"verify\",\"point\":{\"A\":\"1\"},\"levels\":[0],"
                    "\"status\":\"ok\",\"study_elapsed_s\":12.5,\"metrics\":{\"tps\":1}}");
    EXPECT(trials_add(t, r, "f.jsonl:9", err, sizeof err) == TRIALS_OTHER_PHASE);
    EXPECT(t->n_points == 0 && t->n_runs == 0 && t->max_id == 9 && t->study_elapsed == 12.5);
    cJSON_Delete(r);
    trials_free(t);
    space_free(sp);
}

static void test_atomic_write(void) {
    char err[512];
    char *p = path_in("m.json");
    EXPECT(file_write_atomic(p, "{}\n", err, sizeof err));
    char *t = read_text(p);
    EXPECT(strcmp(t, "{}\n") == 0);
    free(t);
    char *tmp = xasprintf("%s.tmp", p);
    EXPECT(access(tmp, F_OK) != 0);
    free(tmp);
    char *bad = path_in("no/such/dir/m.json");
    EXPECT(!file_write_atomic(bad, "{}", err, sizeof err));
    EXPECT(strstr(err, "no/such/dir/m.json") != NULL);
    free(bad);
    free(p);
}

int main(void) {
    tmpdir = test_tmpdir_new("test_journal");
    test_torn_last_line();
    test_bad_middle_line();
    test_append_and_full_disk();
    test_trials_reject_foreign_records();
    test_atomic_write();
    test_tmpdir_remove(tmpdir);
    free(tmpdir);
    return test_exit("test_journal");
}
