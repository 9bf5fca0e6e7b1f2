/* synth_engine.c: a synthetic engine for testing the tuner (DESIGN.md 4.1 protocol).
 *
 * It reads the knobs from the environment like the real engine and reports tokens/s and
 * perplexity that are known closed-form functions of them, shaped like the public record:
 *
 *   ppl = 2.30 * (1 + 0.1 * (512 - W) / 512) + keep(S)      W = SLIDING_WINDOW (512)
 *         keep(0) = 0, keep(S < 4096) = infinite (reported as null with a reason),
 *         keep(S) = 0.01 * 16384 / S otherwise              S = LM_HEAD_KEEPSET (0)
 *   tps = 1000 / (1 + W / 256)                               window: smaller is faster
 *         * (1 + 0.4 K - 0.04 K^2)                           K = NUM_SPECULATIVE_TOKENS (0),
 *                                                            an inverted U peaking at 5
 *         * (S == 0 ? 1 : 1 + 0.1 * (1 - S / 32768))         a smaller head is faster
 *         * (1 + 0.002 C - 0.00003 C^2)                      C = CENTROID_TOP_K (32)
 *         * (1 + NOISE * (2u - 1))                           u uniform, seeded by TUNER_TRIAL
 *
 * Behaviour switches (environment; each *_WHEN takes "always" or "KNOB=VALUE", several
 * joined by '|', and applies when any of them matches the knobs of this run):
 *   SYNTH_CRASH_WHEN      abort() after printing a line (a signal)
 *   SYNTH_HANG_WHEN       fork a grandchild, then both sleep forever (timeout test); the
 *                         pids go to SYNTH_PIDFILE; SYNTH_IGNORE_TERM=1 ignores SIGTERM
 *   SYNTH_GARBAGE_WHEN    print text that is not JSON, exit 0
 *   SYNTH_EXIT_WHEN       print the result, then exit with status 3
 *   SYNTH_NULLPPL_WHEN    report ppl null with a "reason" (measured infinite)
 *   SYNTH_MISSING_WHEN    leave tps out of the result
 *   SYNTH_STRING_WHEN     report tps as a string
 *   SYNTH_SLOW_START      seconds to sleep before starting (e.g. 0.2)
 *   SYNTH_NOISE           relative noise amplitude of tps (default 0)
 *   SYNTH_MIXED_NOISE     relative noise amplitude of tps, independent from trial to trial
 *                         (SYNTH_NOISE's draws move almost linearly with the trial id)
 *   SYNTH_OUTPUT          "stdout" (default: a few log lines, then the JSON line),
 *                         "file" (write $TUNER_RESULT), "text" (lines for the regex mode)
 *   SYNTH_LIVE_DIR        parallel-worker tests: a file named by the pid lives in this folder
 *                         while the engine runs; after the slow start the engine appends to
 *                         DIR.log how many engines are running at that moment
 *   SYNTH_CALLS           append "TUNER_TRIAL KNOBS" to this file at every start
 *                         (followed by " holdout" on runs with TUNER_PROMPT_SET=holdout)
 *   SYNTH_DAEMON_WHEN     daemonize a sleeper first (fork, setsid, fork; the middle process
 *                         exits): it sleeps 300 s with its output on /dev/null and appends
 *                         its pid to SYNTH_DAEMON_PIDFILE; with SYNTH_DAEMON_CLEARENV=1 it
 *                         runs sleep(1) with an empty environment (no TUNER_TRIAL)
 *   SYNTH_CHECK_PIDS      at start, for each pid in this file append "TRIAL PID alive" or
 *                         "TRIAL PID gone" to SYNTH_CHECK_LOG (a zombie counts as gone)
 *   SYNTH_SPAM_BYTES      print this many bytes of log lines to stdout before the result
 *   SYNTH_RESULT_WHEN     print SYNTH_RESULT_TEXT as the result line instead of the JSON
 *                         (a line of SYNTH_RESULT_PAD bytes of padding inside a JSON object
 *                         when SYNTH_RESULT_PAD is set)
 *   SYNTH_TPS_WHEN        report tps as SYNTH_TPS (e.g. -5, 0, 1e12)
 *   SYNTH_SLOW_WHEN       sleep SYNTH_SLOW_S seconds more after the slow start
 * On the held-out prompt set (TUNER_PROMPT_SET=holdout) only:
 *   SYNTH_HOLDOUT_PPL_WHEN  a "fragile" point: ppl is SYNTH_HOLDOUT_PPL_DELTA (default 0.2)
 *                           higher than on the tuning prompts
 *   SYNTH_HOLDOUT_TPS_SCALE tps is multiplied by this (default 1): a speed that does not
 *                           reproduce
 *   SYNTH_HOLDOUT_SLOW_WHEN tps is multiplied by SYNTH_HOLDOUT_SLOW_SCALE (default 0.8) on
 *                           these points only: slower than it looked, e.g. than the baseline
 *   SYNTH_HOLDOUT_NULLPPL_WHEN  ppl is reported infinite (null with a reason) on these points
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

static const char *knob_names[] = {"SLIDING_WINDOW", "NUM_SPECULATIVE_TOKENS", "LM_HEAD_KEEPSET",
                                   "CENTROID_TOP_K"};

static double knob(const char *name, double dflt) {
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    char *end;
    double d = strtod(v, &end);
    if (*end) {
        fprintf(stderr, "synth_engine: %s=%s is not a number\n", name, v);
        exit(2);
    }
    return d;
}

/* Does the condition list in env var `var` match this run? */
static int when(const char *var) {
    const char *v = getenv(var);
    if (!v || !*v) return 0;
    char *list = strdup(v), *save = NULL;
    int hit = 0;
    for (char *c = strtok_r(list, "|", &save); c && !hit; c = strtok_r(NULL, "|", &save)) {
        if (!strcmp(c, "always")) {
            hit = 1;
            continue;
        }
        char *eq = strchr(c, '=');
        if (!eq) continue;
        *eq = '\0';
        const char *have = getenv(c);
        hit = have && !strcmp(have, eq + 1);
    }
    free(list);
    return hit;
}

static void sleep_s(double s) {
    if (s <= 0) return;
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* SYNTH_LIVE_DIR: enter (make our file), count the engines alive, leave (remove it). */
static char live_path[4096];

static void live_enter(void) {
    const char *dir = getenv("SYNTH_LIVE_DIR");
    if (!dir || !*dir) return;
    snprintf(live_path, sizeof live_path, "%s/%d", dir, (int)getpid());
    FILE *f = fopen(live_path, "w");
    if (f) fclose(f);
}

static void live_count(void) {
    const char *dir = getenv("SYNTH_LIVE_DIR");
    if (!dir || !*dir) return;
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d))
        n += e->d_name[0] != '.';
    if (d) closedir(d);
    char log[4200];
    snprintf(log, sizeof log, "%s.log", dir);
    FILE *f = fopen(log, "a");
    if (f) {
        fprintf(f, "%d\n", n);
        fclose(f);
    }
}

static void live_leave(void) {
    if (live_path[0]) unlink(live_path);
}

static void hang(void) {
    if (getenv("SYNTH_IGNORE_TERM")) signal(SIGTERM, SIG_IGN);
    pid_t g = fork();
    if (g == 0) {
        for (;;)
            pause(); /* the grandchild: same process group, never exits by itself */
    }
    const char *pf = getenv("SYNTH_PIDFILE");
    if (pf) {
        FILE *f = fopen(pf, "a");
        if (f) {
            fprintf(f, "%d %d\n", (int)getpid(), (int)g);
            fclose(f);
        }
    }
    printf("synth_engine: hanging (pid %d, grandchild %d)\n", (int)getpid(), (int)g);
    fflush(stdout);
    for (;;)
        pause();
}

/* Is pid a live process (not a zombie)? */
static int pid_alive(int pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

static void check_pids(void) {
    const char *pids = getenv("SYNTH_CHECK_PIDS"), *log = getenv("SYNTH_CHECK_LOG");
    if (!pids || !log) return;
    FILE *in = fopen(pids, "r"), *out = fopen(log, "a");
    int pid;
    while (in && out && fscanf(in, "%d", &pid) == 1)
        fprintf(out, "%s %d %s\n", getenv("TUNER_TRIAL") ? getenv("TUNER_TRIAL") : "-", pid,
                pid_alive(pid) ? "alive" : "gone");
    if (in) fclose(in);
    if (out) fclose(out);
}

static void daemonize_sleeper(void) {
    fflush(NULL);
    int ready[2]; /* the middle process exits once the sleeper has written its pid */
    if (pipe(ready) != 0) ready[0] = ready[1] = -1;
    pid_t mid = fork();
    if (mid == 0) {
        setsid();
        if (fork() == 0) {
            const char *pf = getenv("SYNTH_DAEMON_PIDFILE");
            FILE *f = pf ? fopen(pf, "a") : NULL;
            if (f) {
                fprintf(f, "%d\n", (int)getpid());
                fclose(f);
            }
            close(ready[1]);
            int null = open("/dev/null", O_RDWR);
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
            if (getenv("SYNTH_DAEMON_CLEARENV")) {
                char *empty[] = {NULL};
                execle("/bin/sleep", "sleep", "300", (char *)NULL, empty);
            }
            sleep_s(300);
            _exit(0);
        }
        close(ready[1]);
        char c;
        while (read(ready[0], &c, 1) > 0) {
        }
        _exit(0);
    }
    close(ready[0]);
    close(ready[1]);
    waitpid(mid, NULL, 0);
}

int main(void) {
    const char *calls = getenv("SYNTH_CALLS");
    if (calls) {
        FILE *f = fopen(calls, "a");
        if (f) {
            fprintf(f, "%s", getenv("TUNER_TRIAL") ? getenv("TUNER_TRIAL") : "-");
            for (size_t i = 0; i < sizeof knob_names / sizeof *knob_names; i++)
                fprintf(f, " %s=%s", knob_names[i],
                        getenv(knob_names[i]) ? getenv(knob_names[i]) : "");
            const char *set = getenv("TUNER_PROMPT_SET");
            fprintf(f, "%s\n", set && !strcmp(set, "holdout") ? " holdout" : "");
            fclose(f);
        }
    }
    check_pids();
    if (when("SYNTH_DAEMON_WHEN")) daemonize_sleeper();
    live_enter();
    atexit(live_leave);
    sleep_s(knob("SYNTH_SLOW_START", 0));
    if (when("SYNTH_SLOW_WHEN")) sleep_s(knob("SYNTH_SLOW_S", 0));
    live_count();
    double W = knob("SLIDING_WINDOW", 512), K = knob("NUM_SPECULATIVE_TOKENS", 0);
    double S = knob("LM_HEAD_KEEPSET", 0), C = knob("CENTROID_TOP_K", 32);
    double noise = knob("SYNTH_NOISE", 0);
    const char *trial = getenv("TUNER_TRIAL");
    srand48(trial ? atol(trial) * 7919 + 17 : 1);
    double u = drand48();
    /* splitmix64 of the trial id: a draw independent of the neighbouring trials' */
    unsigned long long z = (unsigned long long)(trial ? atol(trial) : 0) + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    double mixed =
        knob("SYNTH_MIXED_NOISE", 0) * (2 * ((double)(z >> 11) / 9007199254740992.0) - 1);

    printf("synth_engine: window %g, speculative %g, keepset %g, centroid top-k %g\n", W, K, S, C);
    for (double spam = knob("SYNTH_SPAM_BYTES", 0), line = 0; spam > 0; spam -= 64, line++)
        printf("synth_engine: log line %09.0f, padding to 64 bytes ..................\n", line);
    fprintf(stderr, "synth_engine: a line on stderr\n");
    fflush(stdout);
    if (when("SYNTH_HANG_WHEN")) hang();
    if (when("SYNTH_CRASH_WHEN")) {
        fprintf(stderr, "synth_engine: crashing on purpose\n");
        abort();
    }
    if (when("SYNTH_GARBAGE_WHEN")) {
        printf("this is not json\n{\"tps\": 12, broken\n");
        return 0;
    }

    double ppl = 2.30 * (1 + 0.1 * (512 - W) / 512);
    int ppl_infinite = when("SYNTH_NULLPPL_WHEN");
    if (S > 0 && S < 4096)
        ppl_infinite = 1;
    else if (S > 0)
        ppl += 0.01 * 16384 / S;
    double tps = 1000 / (1 + W / 256) * (1 + 0.4 * K - 0.04 * K * K) *
                 (S == 0 ? 1 : 1 + 0.1 * (1 - S / 32768)) * (1 + 0.002 * C - 0.00003 * C * C) *
                 (1 + noise * (2 * u - 1)) * (1 + mixed);

    const char *set = getenv("TUNER_PROMPT_SET");
    if (set && !strcmp(set, "holdout")) {
        if (when("SYNTH_HOLDOUT_PPL_WHEN")) ppl += knob("SYNTH_HOLDOUT_PPL_DELTA", 0.2);
        tps *= knob("SYNTH_HOLDOUT_TPS_SCALE", 1);
        if (when("SYNTH_HOLDOUT_SLOW_WHEN")) tps *= knob("SYNTH_HOLDOUT_SLOW_SCALE", 0.8);
        if (when("SYNTH_HOLDOUT_NULLPPL_WHEN")) ppl_infinite = 1;
    }

    if (when("SYNTH_TPS_WHEN")) tps = knob("SYNTH_TPS", 0);
    if (when("SYNTH_RESULT_WHEN")) {
        long pad = (long)knob("SYNTH_RESULT_PAD", 0);
        if (pad > 0) {
            printf("{\"tps\": %g, \"ppl\": %g, \"pad\": \"", tps, ppl);
            for (long i = 0; i < pad; i++)
                putchar('x');
            printf("\"}\n");
        } else {
            printf("%s\n", getenv("SYNTH_RESULT_TEXT") ? getenv("SYNTH_RESULT_TEXT") : "");
        }
        return 0;
    }
    const char *mode = getenv("SYNTH_OUTPUT") ? getenv("SYNTH_OUTPUT") : "stdout";
    if (!strcmp(mode, "text")) {
        printf("decode speed: %.4f tok/s\nperplexity = %.6f\n", tps, ppl);
        return 0;
    }
    cJSON *r = cJSON_CreateObject();
    if (when("SYNTH_STRING_WHEN"))
        cJSON_AddStringToObject(r, "tps", "fast");
    else if (!when("SYNTH_MISSING_WHEN"))
        cJSON_AddNumberToObject(r, "tps", tps);
    if (ppl_infinite) {
        cJSON_AddNullToObject(r, "ppl");
        cJSON_AddStringToObject(r, "reason", "keepset misses target tokens");
    } else {
        cJSON_AddNumberToObject(r, "ppl", ppl);
    }
    cJSON_AddNumberToObject(r, "tokens", 512);
    cJSON_AddNumberToObject(r, "decode_tps", tps * 1.1);
    cJSON_AddStringToObject(r, "device", "synthetic");
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    if (cvd) cJSON_AddStringToObject(r, "cuda_visible_devices", cvd);
    cJSON_AddStringToObject(r, "prompt_set",
                            getenv("TUNER_PROMPT_SET") ? getenv("TUNER_PROMPT_SET") : "");
    char *text = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    if (!strcmp(mode, "file")) {
        const char *path = getenv("TUNER_RESULT");
        FILE *f = path ? fopen(path, "w") : NULL;
        if (!f) {
            fprintf(stderr, "synth_engine: cannot write $TUNER_RESULT\n");
            return 2;
        }
        fprintf(f, "%s\n", text);
        fclose(f);
        printf("synth_engine: result written to %s\n", path);
    } else {
        printf("%s\nsynth_engine: done\n", text);
    }
    free(text);
    if (when("SYNTH_EXIT_WHEN")) return 3;
    return 0;
}
