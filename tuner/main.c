/* main.c: the `tuner` command line: sweep, show, env, and their help.
 *
 * Only argument parsing lives here; each command is a function of its own file
 * (sweep_main, show_main, manifest_print_env).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"
#include "report.h"
#include "runner.h"
#include "show.h"
#include "space.h"
#include "sweep.h"
#include "util.h"

static const char *usage_main =
    "usage: tuner COMMAND [ARGS]\n"
    "\n"
    "Finds the fastest engine configuration that stays inside a quality budget.\n"
    "\n"
    "commands:\n"
    "  sweep SPACE   run (or resume) a sweep of the search space file SPACE (YAML)\n"
    "  show STUDY    print the points of a study as a table, best first\n"
    "  env MANIFEST  print the manifest's environment as `export K='V'` lines\n"
    "  report STUDY  write a report folder (report.md and a plot) of a study\n"
    "\n"
    "`tuner COMMAND --help` describes a command.\n";

static const char *usage_sweep =
    "usage: tuner sweep SPACE [--study NAME] [--out DIR] [--new] [--dry-run] [--grace SECONDS]\n"
    "                   [--workers N] [--gpus LIST] [--warm-start STUDY_OR_MANIFEST]\n"
    "                   [--log-limit SIZE]\n"
    "\n"
    "Runs the engine of the search space SPACE once per trial, as the space file says, and\n"
    "journals every trial in DIR/NAME/trials.jsonl. Running the same command again resumes\n"
    "the study where it stopped (after Ctrl-C, a crash or a reboot) without repeating a\n"
    "finished trial. After the search the best candidates (verify.top of the space) are\n"
    "re-run verify.repeats times on the held-out prompts (TUNER_PROMPT_SET=holdout); the\n"
    "fastest one that still meets every constraint there is written to\n"
    "DIR/NAME/manifest.json with its measured and verified figures, and printed on stdout;\n"
    "progress goes to stderr.\n"
    "\n"
    "  --study NAME   study name (default: the space's `study`, else the file's name):\n"
    "                 letters, digits, '.', '_', '-', not starting with '-' or '.', at most\n"
    "                 100 characters\n"
    "  --out DIR      folder of the studies (default: out)\n"
    "  --new          start a new study even if NAME exists (as NAME-2, NAME-3, ...);\n"
    "                 needed when the space file changed since the study began\n"
    "  --dry-run      print the plan and the first proposals, run nothing, write nothing\n"
    "  --grace S      seconds between SIGTERM and SIGKILL when stopping an engine\n"
    "                 (default 5, or $TUNER_KILL_GRACE)\n"
    "  --workers N    run N trials at once (default 1; with --gpus, one per GPU)\n"
    "  --gpus LIST    comma-separated GPU ids, e.g. 0,1,2: worker i runs its trials with\n"
    "                 CUDA_VISIBLE_DEVICES set to the i-th id\n"
    "  --warm-start S start from an earlier study folder or manifest.json S (e.g. from\n"
    "                 another GPU): its winner and its lattice neighbours, then its other\n"
    "                 feasible points, are measured first (only when a study begins)\n"
    "  --log-limit S  bytes each trial's log keeps (default 8M; K, M, G suffixes): past it\n"
    "                 the log keeps its first and last halves and a line saying how many\n"
    "                 bytes were cut between them\n"
    "\n"
    "A study is worked on by one sweep at a time: a second sweep of the same study is\n"
    "refused, naming the pid of the first. Processes that a killed sweep left running are\n"
    "stopped when the study is resumed.\n"
    "\n"
    "exit status: 0 with a manifest; 1 on an error (bad space, I/O, failed baseline);\n"
    "2 on a bad command line; 3 when no point was feasible, or none stayed feasible on\n"
    "the held-out prompts (no manifest);\n"
    "130/143 when interrupted by SIGINT/SIGTERM (the study stays resumable).\n";

static const char *usage_show =
    "usage: tuner show STUDY [--out DIR]\n"
    "\n"
    "Prints the points of a study, best first: feasible points by objective, then measured\n"
    "points that break a constraint (and which), then failed points with their reasons.\n"
    "STUDY is a study name under DIR (default: out) or a study folder.\n";

static const char *usage_env =
    "usage: tuner env MANIFEST\n"
    "\n"
    "Prints the \"env\" of a manifest as `export K='V'` lines, quoted for the shell:\n"
    "  eval \"$(tuner env out/demo/manifest.json)\"\n"
    "A name the dynamic loader or shells act on (PATH, LD_*, BASH_ENV, IFS, ...) is\n"
    "exported only when the manifest's \"allow_env\" lists it (from the space's allow_env);\n"
    "TUNER_RESULT, TUNER_TRIAL and TUNER_PROMPT_SET never are.\n";

static const char *usage_report =
    "usage: tuner report STUDY [--out DIR] [--stdout]\n"
    "\n"
    "Writes STUDY/report/: report.md (the chosen point, measured against verified\n"
    "figures, the feasible Pareto front, every point, failures and their reasons, how much\n"
    "each knob mattered) and plot.png (drawn by gnuplot from plot.gp and its data files).\n"
    "STUDY is a study name under DIR (default: out) or a study folder. Prints the path of\n"
    "report.md. With --stdout, prints report.md itself and writes nothing (no plot): it\n"
    "works on a study folder that cannot be written.\n";

static int is_help(const char *a) {
    return !strcmp(a, "--help") || !strcmp(a, "-h");
}

static int usage_error(const char *usage, const char *fmt, const char *arg) {
    fprintf(stderr, "%s: ", util_progname);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n\n%s", usage);
    return EXIT_USAGE;
}

/* "0,1,2" into a NULL-terminated list of ids (malloc'd); NULL when an id is empty or not
 * made of [A-Za-z0-9-] (ids are numbers or GPU UUIDs such as GPU-5a3f...). */
static char **gpu_list_parse(const char *text, int *n) {
    char *copy = xstrdup(text), *save = NULL;
    char **ids = NULL;
    *n = 0;
    int bad = !text[0] || text[strlen(text) - 1] == ',' || strstr(text, ",,") || text[0] == ',';
    for (char *t = strtok_r(copy, ",", &save); t && !bad; t = strtok_r(NULL, ",", &save)) {
        bad = strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") !=
              strlen(t);
        ids = xrealloc(ids, (size_t)(*n + 2) * sizeof *ids);
        ids[(*n)++] = xstrdup(t);
        ids[*n] = NULL;
    }
    free(copy);
    if (bad) {
        for (int i = 0; i < *n; i++)
            free(ids[i]);
        free(ids);
        return NULL;
    }
    return ids;
}

static void gpu_list_free(char **ids) {
    for (int i = 0; ids && ids[i]; i++)
        free(ids[i]);
    free(ids);
}

/* "8M", "512K", "1G" or a number of bytes; -1 when malformed. */
static long long size_parse(const char *v) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || errno || x < 0) return -1;
    double unit = 1;
    if (*end == 'K' || *end == 'k')
        unit = 1024, end++;
    else if (*end == 'M' || *end == 'm')
        unit = 1024.0 * 1024, end++;
    else if (*end == 'G' || *end == 'g')
        unit = 1024.0 * 1024 * 1024, end++;
    if (*end == 'B' || *end == 'i') end++; /* "MB", "MiB" */
    if (*end == 'B') end++;
    if (*end || x * unit > 1e15) return -1;
    return (long long)(x * unit);
}

static int cmd_sweep(int argc, char **argv) {
    sweep_options o = {.out_dir = "out", .grace_s = 5.0};
    char **gpus = NULL;
    const char *gpus_text = NULL;
    int n_gpus = 0, rc;
    const char *g = getenv("TUNER_KILL_GRACE");
    if (g && *g) o.grace_s = atof(g);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (is_help(a)) {
            fputs(usage_sweep, stdout);
            return EXIT_OK;
        } else if (!strcmp(a, "--new")) {
            o.new_study = 1;
        } else if (!strcmp(a, "--dry-run")) {
            o.dry_run = 1;
        } else if (!strcmp(a, "--study") || !strcmp(a, "--out") || !strcmp(a, "--grace") ||
                   !strcmp(a, "--workers") || !strcmp(a, "--gpus") || !strcmp(a, "--warm-start") ||
                   !strcmp(a, "--log-limit")) {
            if (!has_value) return usage_error(usage_sweep, "%s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--workers")) {
                char *end;
                long n = strtol(v, &end, 10);
                if (end == v || *end || n < 1 || n > 256)
                    return usage_error(usage_sweep, "--workers '%s': a number of trials 1..256", v);
                o.workers = (int)n;
            } else if (!strcmp(a, "--gpus")) {
                gpus_text = v; /* parsed after the loop */
            } else if (!strcmp(a, "--warm-start")) {
                o.warm_start = v;
            } else if (!strcmp(a, "--log-limit")) {
                o.log_limit = size_parse(v);
                if (o.log_limit < 1024)
                    return usage_error(usage_sweep,
                                       "--log-limit '%s': a size of at least 1K, such as 8M", v);
            } else if (!strcmp(a, "--study")) {
                const char *why = space_study_name_problem(v);
                if (why) {
                    fprintf(stderr, "%s: --study '%s': %s\n\n%s", util_progname, v, why,
                            usage_sweep);
                    return EXIT_USAGE;
                }
                o.study = v;
            } else if (!strcmp(a, "--out")) {
                o.out_dir = v;
            } else {
                char *end;
                o.grace_s = strtod(v, &end);
                if (end == v || *end || o.grace_s < 0)
                    return usage_error(usage_sweep, "--grace '%s': not a number of seconds", v);
            }
        } else if (a[0] == '-') {
            return usage_error(usage_sweep, "unknown option %s", a);
        } else if (o.space_path) {
            return usage_error(usage_sweep, "more than one space file (%s)", a);
        } else {
            o.space_path = a;
        }
    }
    if (!o.space_path) return usage_error(usage_sweep, "%s", "no space file given");
    if (gpus_text && !(gpus = gpu_list_parse(gpus_text, &n_gpus)))
        return usage_error(
            usage_sweep, "--gpus '%s': a comma-separated list of GPU ids such as 0,1,2", gpus_text);
    if (gpus) {
        if (o.workers == 0) o.workers = n_gpus;
        if (o.workers > n_gpus) {
            char msg[64];
            snprintf(msg, sizeof msg, "%d", n_gpus);
            gpu_list_free(gpus);
            return usage_error(usage_sweep,
                               "--workers is larger than the %s GPUs of --gpus: each worker "
                               "needs a GPU of its own",
                               msg);
        }
        o.gpus = gpus;
    }
    runner_install_signals();
    rc = sweep_main(&o);
    gpu_list_free(gpus);
    return rc;
}

/* The arguments of show and report: STUDY [--out DIR] (and --stdout where to_stdout is not
 * NULL). Returns -1 when they are fine (*study and *out set), else the exit status for the
 * command (help printed, or a usage error). */
static int study_args(int argc, char **argv, const char *usage, const char **study,
                      const char **out, int *to_stdout) {
    *study = NULL;
    *out = "out";
    for (int i = 0; i < argc; i++) {
        if (is_help(argv[i])) {
            fputs(usage, stdout);
            return EXIT_OK;
        } else if (to_stdout && !strcmp(argv[i], "--stdout")) {
            *to_stdout = 1;
        } else if (!strcmp(argv[i], "--out")) {
            if (i + 1 >= argc) return usage_error(usage, "%s needs a value", argv[i]);
            *out = argv[++i];
        } else if (argv[i][0] == '-') {
            return usage_error(usage, "unknown option %s", argv[i]);
        } else if (*study) {
            return usage_error(usage, "more than one study (%s)", argv[i]);
        } else {
            *study = argv[i];
        }
    }
    if (!*study) return usage_error(usage, "%s", "no study given");
    return -1;
}

static int cmd_show(int argc, char **argv) {
    const char *study, *out;
    int rc = study_args(argc, argv, usage_show, &study, &out, NULL);
    return rc >= 0 ? rc : show_main(study, out, stdout);
}

static int cmd_env(int argc, char **argv) {
    const char *path = NULL;
    for (int i = 0; i < argc; i++) {
        if (is_help(argv[i])) {
            fputs(usage_env, stdout);
            return EXIT_OK;
        } else if (argv[i][0] == '-') {
            return usage_error(usage_env, "unknown option %s", argv[i]);
        } else if (path) {
            return usage_error(usage_env, "more than one manifest (%s)", argv[i]);
        } else {
            path = argv[i];
        }
    }
    if (!path) return usage_error(usage_env, "%s", "no manifest given");
    char err[2048];
    if (!manifest_print_env(path, stdout, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", util_progname, err);
        return EXIT_ERROR;
    }
    return EXIT_OK;
}

static int cmd_report(int argc, char **argv) {
    const char *study, *out;
    int to_stdout = 0;
    int rc = study_args(argc, argv, usage_report, &study, &out, &to_stdout);
    return rc >= 0 ? rc : report_main(study, out, stdout, to_stdout);
}

int main(int argc, char **argv) {
    util_progname = "tuner";
    if (argc < 2) {
        fputs(usage_main, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (is_help(cmd) || !strcmp(cmd, "help")) {
        fputs(usage_main, stdout);
        return EXIT_OK;
    }
    if (!strcmp(cmd, "sweep")) return cmd_sweep(argc - 2, argv + 2);
    if (!strcmp(cmd, "show")) return cmd_show(argc - 2, argv + 2);
    if (!strcmp(cmd, "env")) return cmd_env(argc - 2, argv + 2);
    if (!strcmp(cmd, "report")) return cmd_report(argc - 2, argv + 2);
    return usage_error(usage_main, "unknown command '%s'", cmd);
}
