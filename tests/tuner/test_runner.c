/* test_runner.c: one trial in a child process, with small shell-script engines.
 *
 * The protocol's environment reaches the engine; results are read from the result file,
 * from the last JSON line of stdout, never from stderr; every way of failing (exit status,
 * signal, timeout, garbage, missing, null or non-numeric metric) gives its precise reason;
 * a timeout and a finished engine's leftovers take the whole process group with them, the
 * grandchildren included; an interruption of the tuner is reported as such. */
#include "runner.h"
#include "util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../test_util.h"

static char *tmpdir; /* the test's temporary folder */

static const char *launcher; /* engine.launcher of the next space, or NULL */

/* A space whose engine is `sh -c SCRIPT`, with knob A in {1,2} and a fixed env. */
static space *script_space(const char *script, double timeout) {
    char *path = xasprintf("%s/space.yaml", tmpdir);
    FILE *f = fopen(path, "w");
    CHECK(f);
    fprintf(f,
            "engine:\n  command: [sh, -c, '%s']\n  env: {FIXED: 'fixed value'}\n  timeout: %g\n"
            "%s%s%s"
            "objective: {metric: tps, direction: maximize}\nconstraints: [ppl <= 3]\n"
            "parameters: {A: {type: int, min: 1, max: 2}}\n",
            script, timeout, launcher ? "  launcher: \"" : "", launcher ? launcher : "",
            launcher ? "\"\n" : "");
    fclose(f);
    char err[1024];
    space *sp = space_load(path, err, sizeof err);
    if (!sp) die("%s", err);
    free(path);
    return sp;
}

static long next_id = 1;

/* Run `script` for level 1 (A=2); returns the outcome, fills r. */
static run_outcome run_script(const char *script, double timeout, run_result *r) {
    space *sp = script_space(script, timeout);
    long id = next_id++;
    char *log = xasprintf("%s/%ld.log", tmpdir, id), *res = xasprintf("%s/%ld.json", tmpdir, id);
    run_request req = {
        .prompt_set = "tune", .trial_id = id, .log_path = log, .result_path = res, .grace_s = 0.3};
    int levels[1] = {1};
    run_outcome oc = runner_run(sp, levels, &req, r);
    free(log);
    free(res);
    space_free(sp);
    return oc;
}

static double metric(const run_result *r, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->metrics, name);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static int reason_has(const run_result *r, const char *s) {
    if (r->reason && strstr(r->reason, s)) return 1;
    fprintf(stderr, "  reason \"%s\" lacks \"%s\"\n", r->reason ? r->reason : "(null)", s);
    return 0;
}

static void test_protocol_env_and_stdout(void) {
    run_result r;
    /* knob, fixed env, TUNER_* all arrive; JSON on stderr is ignored; trailing text ok */
    EXPECT(run_script("echo \"{\\\"tps\\\": 99, \\\"ppl\\\": 9}\" >&2; "
                      "test \"$FIXED\" = \"fixed value\" || exit 9; "
                      "test \"$TUNER_PROMPT_SET\" = tune || exit 8; "
                      "case \"$TUNER_RESULT\" in /*) ;; *) exit 7;; esac; "
                      "echo \"{\\\"tps\\\": $A$TUNER_TRIAL, \\\"ppl\\\": 2.5}\"; echo done",
                      10, &r) == RUN_DONE);
    EXPECT(r.status == TRIAL_OK);
    EXPECT(metric(&r, "tps") == 21.0); /* A=2, trial 1 */
    EXPECT(metric(&r, "ppl") == 2.5);
    EXPECT(r.exit_code == 0 && r.reason == NULL);
    run_result_free(&r);
}

static void test_result_file(void) {
    run_result r;
    run_script("echo \"{\\\"tps\\\": 5, \\\"ppl\\\": 1}\" > \"$TUNER_RESULT\"; "
               "echo \"{\\\"tps\\\": 6, \\\"ppl\\\": 1}\"",
               10, &r);
    EXPECT(r.status == TRIAL_OK && metric(&r, "tps") == 5.0); /* the file wins */
    run_result_free(&r);
    run_script("echo nope > \"$TUNER_RESULT\"", 10, &r);
    EXPECT(r.status == TRIAL_FAILED && reason_has(&r, "garbage result: $TUNER_RESULT file"));
    run_result_free(&r);
}

static void test_failures(void) {
    run_result r;
    run_script("echo \"{\\\"tps\\\": 5, \\\"ppl\\\": 1}\"; echo bye >&2; exit 7", 10, &r);
    EXPECT(r.status == TRIAL_FAILED && r.exit_code == 7);
    EXPECT(reason_has(&r, "exit status 7; last output: \"bye\""));
    run_result_free(&r);
    /* stderr's last line, whichever pipe was read last: the reason is the same every run */
    run_script("echo failing >&2; sleep 0.2; echo later output; exit 3", 10, &r);
    EXPECT(reason_has(&r, "exit status 3; last output: \"failing\""));
    run_result_free(&r);
    run_script("echo only stdout; exit 4", 10, &r); /* no stderr: the log's last line */
    EXPECT(reason_has(&r, "exit status 4; last output: \"only stdout\""));
    run_result_free(&r);
    run_script("kill -SEGV $$", 10, &r);
    EXPECT(r.status == TRIAL_FAILED && r.term_signal == SIGSEGV);
    EXPECT(reason_has(&r, "killed by signal 11"));
    run_result_free(&r);
    run_script("echo plain text", 10, &r);
    EXPECT(r.status == TRIAL_FAILED && reason_has(&r, "no result"));
    run_result_free(&r);
    run_script("echo \"{\\\"ppl\\\": 1}\"", 10, &r);
    EXPECT(r.status == TRIAL_FAILED && reason_has(&r, "metric 'tps' missing from the result"));
    run_result_free(&r);
    run_script("echo \"{\\\"tps\\\": 1, \\\"ppl\\\": null}\"", 10, &r);
    EXPECT(r.status == TRIAL_FAILED && reason_has(&r, "is null and the result gives no"));
    run_result_free(&r);
    run_script("echo \"{\\\"tps\\\": 1, \\\"ppl\\\": null, \\\"reason\\\": \\\"keepset\\\"}\"", 10,
               &r);
    EXPECT(r.status == TRIAL_INFEASIBLE && reason_has(&r, "ppl is infinite: keepset"));
    EXPECT(metric(&r, "tps") == 1.0);
    run_result_free(&r);
    run_script("echo \"{\\\"tps\\\": true, \\\"ppl\\\": 1}\"", 10, &r);
    EXPECT(r.status == TRIAL_FAILED && reason_has(&r, "metric 'tps' is not a number (got true)"));
    run_result_free(&r);
    run_script("echo \"{\\\"tps\\\": 1e999, \\\"ppl\\\": 1}\"", 10, &r);
    EXPECT(r.status == TRIAL_FAILED && reason_has(&r, "metric 'tps' is not finite"));
    run_result_free(&r);
    run_script("exec /no/such/engine", 10, &r);
    EXPECT(r.status == TRIAL_FAILED && reason_has(&r, "exit status 127"));
    run_result_free(&r);
}

static int alive(pid_t p) {
    return kill(p, 0) == 0;
}

static pid_t read_pid(const char *name) {
    char *p = xasprintf("%s/%s", tmpdir, name), err[256];
    char *t = file_read_all(p, NULL, err, sizeof err);
    free(p);
    pid_t pid = t ? (pid_t)atol(t) : -1;
    free(t);
    return pid;
}

static void test_timeout_kills_group(void) {
    run_result r;
    char *script =
        xasprintf("sleep 30 & echo $! > %s/grandchild; trap \"\" TERM; sleep 30", tmpdir);
    double t0 = now_seconds();
    run_script(script, 0.5, &r);
    double took = now_seconds() - t0;
    EXPECT(r.status == TRIAL_FAILED);
    EXPECT(reason_has(&r, "timed out after 0.5 s (process group stopped with SIGKILL)"));
    EXPECT(took >= 0.5 && took < 8.0);
    pid_t g = read_pid("grandchild");
    EXPECT(g > 0 && !alive(g));
    run_result_free(&r);
    free(script);
}

static void test_leftovers_of_a_finished_engine(void) {
    run_result r;
    /* the engine reports and exits, but leaves a child holding its stdout */
    char *script = xasprintf("sleep 30 & echo $! > %s/leftover; "
                             "echo \"{\\\"tps\\\": 3, \\\"ppl\\\": 1}\"",
                             tmpdir);
    double t0 = now_seconds();
    run_script(script, 20, &r);
    EXPECT(now_seconds() - t0 < 8.0);
    EXPECT(r.status == TRIAL_OK && metric(&r, "tps") == 3.0);
    pid_t g = read_pid("leftover");
    EXPECT(g > 0 && !alive(g));
    run_result_free(&r);
    free(script);
}

static void test_escaped_process_holding_stdout(void) {
    run_result r;
    /* a grandchild leaves the process group (setsid) and keeps stdout open: it is still a
     * process of the run, stopped with it */
    char *script = xasprintf("setsid sleep 20 & echo $! > %s/escaped; "
                             "echo \"{\\\"tps\\\": 2, \\\"ppl\\\": 1}\"",
                             tmpdir);
    double t0 = now_seconds();
    run_script(script, 20, &r);
    EXPECT(now_seconds() - t0 < 10.0); /* not the 20 s of the escaped sleep */
    EXPECT(r.status == TRIAL_OK && metric(&r, "tps") == 2.0);
    pid_t g = read_pid("escaped");
    EXPECT(g > 0 && !alive(g));
    if (g > 0) kill(g, SIGKILL);
    run_result_free(&r);
    free(script);
}

/* A daemon (setsid, then a fork whose parent exits at once) is re-parented to the runner
 * and stopped with its run, even though the run ends first. */
static void test_daemon_of_a_finished_engine(void) {
    run_result r;
    char *script = xasprintf("setsid sh -c \"sleep 30 </dev/null >/dev/null 2>&1 & echo \\$! > "
                             "%s/daemon\"; sleep 0.3; "
                             "echo \"{\\\"tps\\\": 4, \\\"ppl\\\": 1}\"",
                             tmpdir);
    run_script(script, 20, &r);
    EXPECT(r.status == TRIAL_OK && metric(&r, "tps") == 4.0);
    pid_t g = read_pid("daemon");
    EXPECT(g > 0 && !alive(g));
    if (g > 0) kill(g, SIGKILL);
    run_result_free(&r);
    free(script);
}

/* Results that are not what they seem each get their own reason. */
static void test_bad_results(void) {
    static const struct {
        const char *script, *reason;
        trial_status status;
    } cases[] = {
        {"echo \"{\\\"tps\\\": 1, \\\"tps\\\": 99999, \\\"ppl\\\": 1}\"",
         "key 'tps' appears twice in the result", TRIAL_FAILED},
        {"echo \"{\\\"tps\\\": 1, \\\"x\\\": {\\\"a\\\": 1, \\\"a\\\": 2}, "
         "\\\"ppl\\\": 1}\"",
         "key 'x.a' appears twice in the result", TRIAL_FAILED},
        {"echo \"{\\\"tps\\\": NaN, \\\"ppl\\\": 1}\"",
         "bad result: the last line of stdout that starts with '{' is a number JSON cannot hold "
         "at byte 9 (\"NaN",
         TRIAL_FAILED},
        {"printf \"{\\\"tps\\\": 1, \\\"ppl\\\": 2.\"",
         "bad result: the last line of stdout that starts with '{' is truncated JSON",
         TRIAL_FAILED},
        {"echo \"{\\\"tps\\\": 12, broken\"",
         "bad result: the last line of stdout that starts with '{' is not valid JSON: syntax "
         "error at byte",
         TRIAL_FAILED},
        {"printf \"{\\\"tps\\\": 1, \\\"ppl\\\": 1, \\\"pad\\\": \\\"\"; "
         "head -c 1100000 /dev/zero | tr \"\\\\0\" x; echo \"\\\"}\"",
         "bad result: a line of stdout that starts with '{' is 1100031 bytes, over the 1048576 "
         "bytes a result line may have",
         TRIAL_FAILED},
        {"echo \"{\\\"tps\\\": -5, \\\"ppl\\\": 1}\"",
         "impossible figure: metric 'tps' = -5 is below its bound > 0", TRIAL_FAILED},
        {"echo \"{\\\"tps\\\": 5, \\\"ppl\\\": 0}\"",
         "impossible figure: metric 'ppl' = 0 is below its bound > 0", TRIAL_FAILED},
        {"echo \"{\\\"tps\\\": 5, \\\"ppl\\\": null, \\\"reason\\\": \\\"oom\\\"}\"",
         "ppl is infinite: oom", TRIAL_INFEASIBLE},
        {"echo \"{\\\"tps\\\": NaN}\" > \"$TUNER_RESULT\"", "garbage result: $TUNER_RESULT file",
         TRIAL_FAILED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_result r;
        run_script(cases[i].script, 20, &r);
        if (r.status != cases[i].status) {
            fprintf(stderr, "  case %zu: status %d, want %d\n", i, (int)r.status,
                    (int)cases[i].status);
            failures++;
        }
        EXPECT(reason_has(&r, cases[i].reason));
        run_result_free(&r);
    }
    /* the result file's own reason */
    run_result r;
    run_script("echo \"{\\\"tps\\\": NaN}\" > \"$TUNER_RESULT\"", 20, &r);
    EXPECT(reason_has(&r, ": a number JSON cannot hold at byte 9"));
    run_result_free(&r);
}

static void test_interrupted(void) {
    runner_install_signals();
    run_result r;
    char *script =
        xasprintf("sleep 30 & echo $! > %s/int_child; kill -INT $PPID; sleep 30", tmpdir);
    double t0 = now_seconds();
    EXPECT(run_script(script, 20, &r) == RUN_INTERRUPTED);
    EXPECT(now_seconds() - t0 < 8.0);
    EXPECT(runner_interrupted() == SIGINT);
    pid_t g = read_pid("int_child");
    EXPECT(g > 0 && !alive(g));
    run_result_free(&r);
    free(script);
}

static void test_last_json_line(void) {
    cJSON *j = runner_last_json_line("log\n{\"a\":1}\n{\"a\":2}  \r\nmore log\n{broken\n");
    EXPECT(j && cJSON_GetObjectItem(j, "a")->valueint == 2);
    cJSON_Delete(j);
    EXPECT(runner_last_json_line("[1,2]\n\"x\"\n") == NULL);
    EXPECT(runner_last_json_line("") == NULL);
    j = runner_last_json_line("{\"only\": true}");
    EXPECT(j != NULL);
    cJSON_Delete(j);
}

static void test_launcher(void) {
    run_result r;
    launcher = "LAUNCHED=yes {cmd}";
    run_script("test \"$LAUNCHED\" = yes || exit 5; echo \"{\\\"tps\\\": 4, \\\"ppl\\\": 1}\"", 10,
               &r);
    launcher = NULL;
    EXPECT(r.status == TRIAL_OK && metric(&r, "tps") == 4.0);
    run_result_free(&r);
}

static void test_shell_quote(void) {
    char *q = shell_single_quote("it's");
    EXPECT(strcmp(q, "'it'\\''s'") == 0);
    free(q);
    q = shell_single_quote("");
    EXPECT(strcmp(q, "''") == 0);
    free(q);
}

int main(void) {
    tmpdir = test_tmpdir_new("test_runner");
    test_last_json_line();
    test_shell_quote();
    test_protocol_env_and_stdout();
    test_result_file();
    test_launcher();
    test_failures();
    test_timeout_kills_group();
    test_leftovers_of_a_finished_engine();
    test_escaped_process_holding_stdout();
    test_daemon_of_a_finished_engine();
    test_bad_results();
    test_interrupted(); /* last: it leaves the interrupted flag set */
    test_tmpdir_remove(tmpdir);
    free(tmpdir);
    return test_exit("test_runner");
}
