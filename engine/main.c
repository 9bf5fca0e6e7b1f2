/* main.c: the `engine` command - bench, ppl and generate over one model folder.
 *
 *   engine bench MODEL_DIR [--data DIR | --prompts F [--ppl F]] [knob flags]
 *   engine ppl MODEL_DIR [--ppl F | --data DIR] [knob flags]
 *   engine generate MODEL_DIR [--prompt TEXT] [knob flags]      (the prompt from stdin otherwise)
 *
 * Knobs come from the environment and flags override them (knobs.h), read once into one struct;
 * serve_open (serve.h) turns it into the decoder, head and drafter every command runs on, and
 * bench and generate serve every token through its one serving loop. bench and ppl print their
 * result as one JSON object on the last line of stdout (DESIGN.md 4.1) and also write it to
 * $TUNER_RESULT when that is set; everything meant for a person goes to stderr. Every error is one
 * line on stderr naming the file (and line or key) at fault, and a non-zero exit: 2 for a bad
 * command line, 1 for anything else.
 *
 * The order of work puts cheap checks first: knobs, then the data files, then the model, then
 * what needs the model (vocabulary, lengths), and only then the server and the timed run. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "dataset.h"
#include "engine.h"
#include "knobs.h"
#include "ppl.h"
#include "serve.h"
#include "tokenizer.h"
#include "util.h"

#define ERRLEN 1024

typedef struct {
    const char *command;   /* "bench", "ppl" or "generate" */
    const char *model_dir; /* MODEL_DIR */
    const char *data_dir;  /* --data: holds prompts_<set>.jsonl and ppl_<set>.jsonl */
    const char *prompts;   /* --prompts */
    const char *ppl;       /* --ppl */
    const char *prompt;    /* --prompt (generate) */
    const char *assistant; /* --assistant: the drafter's folder (default MODEL_DIR-assistant) */
    knobs k;
} cli;

static void usage(const char *command) {
    if (!command || !strcmp(command, "bench"))
        fprintf(stderr,
                "usage: engine bench MODEL_DIR [--data DIR | --prompts FILE [--ppl FILE]] [knobs]\n"
                "  Greedy-decode every prompt of a JSONL prompt set (WARMUP_NUM_PROMPTS untimed\n"
                "  first), then score the perplexity records through the same decoder. Prints\n"
                "  the result JSON (tps, ppl, ...) as the last line of stdout and writes it to\n"
                "  $TUNER_RESULT when set. --data DIR reads DIR/prompts_<set>.jsonl and\n"
                "  DIR/ppl_<set>.jsonl (<set> = TUNER_PROMPT_SET, default tune); without --data\n"
                "  or --prompts, DIR is MODEL_DIR/eval. NUM_SPECULATIVE_TOKENS > 0 drafts with\n"
                "  the gemma4_assistant in --assistant DIR (default: MODEL_DIR-assistant).\n");
    if (!command || !strcmp(command, "ppl"))
        fprintf(stderr,
                "usage: engine ppl MODEL_DIR [--ppl FILE | --data DIR] [knobs]\n"
                "  Teacher-forced perplexity over a JSONL record set\n"
                "  ({\"context_token_ids\": [..], \"target_token_ids\": [..]} per line).\n");
    if (!command || !strcmp(command, "generate"))
        fprintf(stderr,
                "usage: engine generate MODEL_DIR [--prompt TEXT] [--assistant DIR] [knobs]\n"
                "  Greedy continuation of TEXT (or of stdin), printed as it is generated;\n"
                "  stops at end-of-sequence or after MAX_NEW_TOKENS tokens.\n");
    knobs_print_help();
}

/* ---------------------------------------------------------------------------------------- */
/* Command line                                                                             */

/* Parse argv into c. Returns 0, 1 for --help, or -1 with err. */
static int cli_parse(int argc, char **argv, cli *c, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    knobs_init(&c->k);
    for (int i = 1; i < argc; i++) /* help wins over everything, a bad environment included */
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h") ||
            (i == 1 && !strcmp(argv[i], "help"))) {
            int known = i > 1 && (!strcmp(argv[1], "bench") || !strcmp(argv[1], "ppl") ||
                                  !strcmp(argv[1], "generate"));
            c->command = known ? argv[1] : NULL;
            return 1;
        }
    if (knobs_from_env(&c->k, err, errlen)) return -1;
    if (argc < 2) {
        snprintf(err, errlen, "missing command (bench, ppl or generate)");
        return -1;
    }
    c->command = argv[1];
    if (strcmp(c->command, "bench") && strcmp(c->command, "ppl") &&
        strcmp(c->command, "generate")) {
        snprintf(err, errlen, "unknown command \"%s\" (bench, ppl or generate)", c->command);
        return -1;
    }
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2)) {
            if (c->model_dir) {
                snprintf(err, errlen, "unexpected argument \"%s\" (MODEL_DIR is \"%s\")", a,
                         c->model_dir);
                return -1;
            }
            c->model_dir = a;
            continue;
        }
        /* --name VALUE or --name=VALUE */
        char name[64];
        const char *value, *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (len >= sizeof name) len = sizeof name - 1;
        memcpy(name, a + 2, len);
        name[len] = '\0';
        if (eq)
            value = eq + 1;
        else if (i + 1 < argc)
            value = argv[++i];
        else {
            snprintf(err, errlen, "flag --%s needs a value", name);
            return -1;
        }
        const char **path = !strcmp(name, "data")        ? &c->data_dir
                            : !strcmp(name, "prompts")   ? &c->prompts
                            : !strcmp(name, "ppl")       ? &c->ppl
                            : !strcmp(name, "prompt")    ? &c->prompt
                            : !strcmp(name, "assistant") ? &c->assistant
                                                         : NULL;
        if (path) {
            int ok = !strcmp(c->command, "bench") ? strcmp(name, "prompt") != 0
                     : !strcmp(c->command, "ppl")
                         ? !strcmp(name, "ppl") || !strcmp(name, "data")
                         : !strcmp(name, "prompt") || !strcmp(name, "assistant");
            if (!ok) {
                snprintf(err, errlen, "flag --%s does not apply to \"engine %s\"", name,
                         c->command);
                return -1;
            }
            *path = value;
            continue;
        }
        char origin[96];
        snprintf(origin, sizeof origin, "flag --%s", name);
        int rc = knobs_set(&c->k, name, value, origin, err, errlen);
        if (rc == 1)
            snprintf(err, errlen, "unknown flag --%s (see engine %s --help)", name, c->command);
        if (rc) return -1;
    }
    if (!c->model_dir) {
        snprintf(err, errlen, "missing MODEL_DIR (see engine %s --help)", c->command);
        return -1;
    }
    return 0;
}

/* The files bench and ppl read, resolved from --prompts/--ppl, --data or MODEL_DIR/eval.
 * Paths are malloc'd; ppl may come back NULL for bench with --prompts and no --ppl. */
static void cli_files(const cli *c, char **prompts, char **ppl) {
    const char *set = c->k.prompt_set;
    char *dir = c->data_dir ? xstrdup(c->data_dir) : xasprintf("%s/eval", c->model_dir);
    int from_dir = c->data_dir || !c->prompts;
    *prompts = c->prompts ? xstrdup(c->prompts) : xasprintf("%s/prompts_%s.jsonl", dir, set);
    *ppl = c->ppl ? xstrdup(c->ppl) : from_dir ? xasprintf("%s/ppl_%s.jsonl", dir, set) : NULL;
    free(dir);
}

/* ---------------------------------------------------------------------------------------- */
/* Model, device, result                                                                    */

static model *model_open(const char *dir, const knobs *k, char *err, size_t errlen) {
    struct stat st;
    if (stat(dir, &st)) {
        snprintf(err, errlen, "%s: model folder: %s", dir, strerror(errno));
        return NULL;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: model folder: not a directory", dir);
        return NULL;
    }
    return model_load_prec(dir, k->weight_dtype, k->weight_group, err, errlen);
}

/* "cpu: <model name from /proc/cpuinfo> x<threads>" */
static char *device_name(const knobs *k) {
    if (!strcmp(k->device, "cuda")) return xasprintf("cuda"); /* the GPU's name: on stderr */
    char cpu[256] = "unknown cpu";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            char *colon = strchr(line, ':');
            if (strncmp(line, "model name", 10) || !colon) continue;
            colon++;
            while (*colon == ' ' || *colon == '\t')
                colon++;
            colon[strcspn(colon, "\n")] = '\0';
            snprintf(cpu, sizeof cpu, "%s", colon);
            break;
        }
        fclose(f);
    }
    int threads = k->n_threads ? k->n_threads : omp_get_max_threads();
    return xasprintf("cpu: %s x%d", cpu, threads);
}

static double peak_rss_bytes(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss * 1024.0; /* Linux reports kilobytes */
}

/* n / s, or JSON null when there is nothing to divide. */
static cJSON *rate(double n, double s) {
    return s > 0 && n > 0 ? cJSON_CreateNumber(n / s) : cJSON_CreateNull();
}

/* The knob values actually used, under "knobs". */
static void result_add_knobs(cJSON *o, const knobs *k, const model *m, int max_len) {
    cJSON *j = cJSON_AddObjectToObject(o, "knobs");
    cJSON_AddNumberToObject(j, "SLIDING_WINDOW", knobs_window(k, model_native_window(m)));
    cJSON_AddNumberToObject(j, "NUM_SPECULATIVE_TOKENS", k->num_speculative_tokens);
    cJSON_AddNumberToObject(j, "CENTROID_TOP_K", k->centroid_top_k);
    cJSON_AddNumberToObject(j, "LM_HEAD_KEEPSET", k->lm_head_keepset);
    cJSON_AddNumberToObject(j, "WARMUP_NUM_PROMPTS", k->warmup_num_prompts);
    cJSON_AddNumberToObject(j, "MAX_NEW_TOKENS", k->max_new_tokens);
    cJSON_AddNumberToObject(j, "MAX_MODEL_LEN", max_len);
    cJSON_AddStringToObject(j, "TUNER_PROMPT_SET", k->prompt_set);
    cJSON_AddNumberToObject(j, "threads", k->n_threads ? k->n_threads : omp_get_max_threads());
    /* the precision as loaded (a pre-quantized checkpoint's own when the knobs are unset) */
    cJSON_AddStringToObject(j, "WEIGHT_DTYPE", quant_dtype_name(model_weight_dtype(m)));
    cJSON_AddNumberToObject(j, "WEIGHT_GROUP",
                            model_weight_group(m) ? model_weight_group(m) : knobs_weight_group(k));
    cJSON_AddStringToObject(j, "HEAD_DTYPE", quant_dtype_name(k->head_dtype));
}

/* ppl, or null beside a reason, plus the totals. */
static void result_add_ppl(cJSON *o, const ppl_total *t, const char *none_reason) {
    double ppl = t ? ppl_value(t) : INFINITY;
    if (t && isfinite(ppl)) {
        cJSON_AddNumberToObject(o, "ppl", ppl);
    } else {
        cJSON_AddNullToObject(o, "ppl");
        char *why = !t ? xstrdup(none_reason)
                    : t->nonfinite
                        ? xasprintf("%ld of %ld target tokens have zero probability or a "
                                    "non-finite logit: perplexity is infinite",
                                    t->nonfinite, t->tokens)
                        : xstrdup("perplexity overflows a double");
        cJSON_AddStringToObject(o, "reason", why);
        free(why);
    }
    if (!t) return;
    cJSON_AddNumberToObject(o, "ppl_tokens", (double)t->tokens);
    cJSON_AddNumberToObject(o, "ppl_records", t->records);
    cJSON_AddNumberToObject(o, "nll", t->nll);
}

/* Print o as the last line of stdout and write it to $TUNER_RESULT (through a temporary file
 * and a rename, so a reader never sees half of it). Returns 0 or -1 with err. */
static int result_emit(cJSON *o, char *err, size_t errlen) {
    char *s = cJSON_PrintUnformatted(o);
    CHECK(s);
    printf("%s\n", s);
    fflush(stdout);
    const char *path = getenv("TUNER_RESULT");
    int rc = 0;
    if (path && *path) {
        char *tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%s\n", s) < 0 || fclose(f)) {
            snprintf(err, errlen, "%s: cannot write the result (TUNER_RESULT): %s", path,
                     strerror(errno));
            rc = -1;
        } else if (rename(tmp, path)) {
            snprintf(err, errlen, "%s: cannot write the result (TUNER_RESULT): %s", path,
                     strerror(errno));
            unlink(tmp);
            rc = -1;
        }
        free(tmp);
    }
    free(s);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Commands                                                                                 */

static int cmd_bench(const cli *c, char *err, size_t errlen) {
    const knobs *k = &c->k;
    char *prompts_path, *ppl_path;
    cli_files(c, &prompts_path, &ppl_path);
    prompt_set ps = {0};
    ppl_set pp = {0};
    model *m = NULL;
    tokenizer *t = NULL;
    cJSON *o = NULL;
    server sv = {0};
    int rc = -1;
    double t_start = now_seconds();

    if (prompt_set_load(prompts_path, &ps, err, errlen)) goto done;
    if (ppl_path && ppl_set_load(ppl_path, &pp, err, errlen)) goto done;
    if (!(m = model_open(c->model_dir, k, err, errlen))) goto done;
    int vocab = model_vocab_size(m), max_len = knobs_max_model_len(k, model_max_positions(m));
    if (knobs_check_model(k, model_max_positions(m), 1, err, errlen)) goto done;
    if (prompt_set_check_vocab(&ps, vocab, err, errlen)) goto done;
    if (ppl_path && ppl_set_check_vocab(&pp, vocab, err, errlen)) goto done;
    int need_tokenizer = 0;
    for (int i = 0; i < ps.n; i++)
        need_tokenizer |= ps.items[i].tokens == NULL;
    if (need_tokenizer) {
        char *tok_path = xasprintf("%s/tokenizer.json", c->model_dir);
        t = tokenizer_load(tok_path, err, errlen);
        free(tok_path);
        if (!t || bench_tokenize(&ps, t, err, errlen)) goto done;
        if (prompt_set_check_vocab(&ps, vocab, err, errlen)) goto done;
    }
    if (bench_check_lengths(&ps, max_len, k->max_new_tokens, err, errlen)) goto done;
    if (ppl_check_lengths(&pp, max_len, err, errlen)) goto done;
    int need = 0;
    for (int i = 0; i < ps.n; i++)
        if (ps.items[i].n_tokens + k->max_new_tokens > need)
            need = ps.items[i].n_tokens + k->max_new_tokens;
    int longest = ppl_set_longest(&pp);
    if (longest > need) need = longest;
    if (serve_open(&sv, m, k, c->model_dir, c->assistant, need, err, errlen)) goto done;

    bench_result br;
    fprintf(stderr, "engine: bench %s: %d prompts x %d new tokens, %d warm-up\n", prompts_path,
            ps.n, k->max_new_tokens, k->warmup_num_prompts);
    if (bench_run(&sv.sp, &ps, k->warmup_num_prompts, k->max_new_tokens, &br, err, errlen))
        goto done;
    ppl_total pt = {0};
    double ppl_s = 0;
    if (ppl_path) {
        fprintf(stderr, "engine: perplexity over %s: %d records, %ld target tokens\n", ppl_path,
                pp.n, pp.n_targets);
        double t0 = now_seconds();
        if (serve_ppl(&sv, &pp, &pt, err, errlen)) goto done;
        ppl_s = now_seconds() - t0;
    }

    o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "tps", br.tokens / br.wall_s);
    result_add_ppl(o, ppl_path ? &pt : NULL, "no perplexity records were given (--ppl or --data)");
    cJSON_AddNumberToObject(o, "tokens", (double)br.tokens);
    cJSON_AddNumberToObject(o, "prompts", br.prompts);
    cJSON_AddNumberToObject(o, "prompt_tokens", (double)br.prompt_tokens);
    cJSON_AddItemToObject(o, "decode_tps",
                          rate((double)br.prompts * (k->max_new_tokens - 1), br.decode_s));
    cJSON_AddItemToObject(o, "prefill_tps", rate((double)br.prompt_tokens, br.prefill_s));
    cJSON_AddNumberToObject(o, "decode_s", br.decode_s);
    cJSON_AddNumberToObject(o, "prefill_s", br.prefill_s);
    cJSON_AddNumberToObject(o, "wall_s", br.wall_s);
    cJSON_AddNumberToObject(o, "warmup_s", br.warmup_s);
    cJSON_AddNumberToObject(o, "ppl_s", ppl_s);
    cJSON_AddNumberToObject(o, "total_s", now_seconds() - t_start);
    cJSON_AddNumberToObject(o, "peak_rss_bytes", peak_rss_bytes());
    cJSON_AddNumberToObject(o, "bytes_per_token", (double)model_bytes_per_token(m));
    char *dev = device_name(k), hash[17];
    cJSON_AddStringToObject(o, "device", dev);
    free(dev);
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)br.out_hash);
    cJSON_AddStringToObject(o, "output_hash", hash);
    cJSON_AddStringToObject(o, "model", c->model_dir);
    cJSON_AddStringToObject(o, "prompts_file", prompts_path);
    if (ppl_path) cJSON_AddStringToObject(o, "ppl_file", ppl_path);
    result_add_knobs(o, k, m, max_len);
    serve_result(&sv, o, ppl_path ? &pp : NULL, br.decode_s);
    rc = result_emit(o, err, errlen);
done:
    cJSON_Delete(o);
    serve_close(&sv);
    if (t) tokenizer_free(t);
    if (m) model_free(m);
    ppl_set_free(&pp);
    prompt_set_free(&ps);
    free(prompts_path);
    free(ppl_path);
    return rc;
}

static int cmd_ppl(const cli *c, char *err, size_t errlen) {
    const knobs *k = &c->k;
    char *ppl_path = c->ppl        ? xstrdup(c->ppl)
                     : c->data_dir ? xasprintf("%s/ppl_%s.jsonl", c->data_dir, k->prompt_set)
                                   : xasprintf("%s/eval/ppl_%s.jsonl", c->model_dir, k->prompt_set);
    ppl_set pp = {0};
    model *m = NULL;
    cJSON *o = NULL;
    server sv = {0};
    int rc = -1;
    if (ppl_set_load(ppl_path, &pp, err, errlen)) goto done;
    if (!(m = model_open(c->model_dir, k, err, errlen))) goto done;
    int vocab = model_vocab_size(m), max_len = knobs_max_model_len(k, model_max_positions(m));
    if (knobs_check_model(k, model_max_positions(m), 0, err, errlen)) goto done;
    if (ppl_set_check_vocab(&pp, vocab, err, errlen)) goto done;
    if (ppl_check_lengths(&pp, max_len, err, errlen)) goto done;
    int need = ppl_set_longest(&pp);
    if (need < 1) need = 1;
    knobs scoring = *k; /* perplexity needs the head (keepset), never the drafter */
    scoring.num_speculative_tokens = 0;
    if (serve_open(&sv, m, &scoring, c->model_dir, NULL, need, err, errlen)) goto done;
    fprintf(stderr, "engine: perplexity over %s: %d records, %ld target tokens\n", ppl_path, pp.n,
            pp.n_targets);
    ppl_total pt = {0};
    double t0 = now_seconds();
    if (serve_ppl(&sv, &pp, &pt, err, errlen)) goto done;
    double wall = now_seconds() - t0;
    o = cJSON_CreateObject();
    result_add_ppl(o, &pt, NULL);
    cJSON_AddNumberToObject(o, "wall_s", wall);
    cJSON_AddItemToObject(o, "scored_tps", rate((double)pt.tokens, wall));
    cJSON_AddNumberToObject(o, "peak_rss_bytes", peak_rss_bytes());
    char *dev = device_name(k);
    cJSON_AddStringToObject(o, "device", dev);
    free(dev);
    cJSON_AddStringToObject(o, "model", c->model_dir);
    cJSON_AddStringToObject(o, "ppl_file", ppl_path);
    result_add_knobs(o, k, m, max_len);
    serve_result(&sv, o, &pp, 0);
    rc = result_emit(o, err, errlen);
done:
    cJSON_Delete(o);
    serve_close(&sv);
    if (m) model_free(m);
    ppl_set_free(&pp);
    free(ppl_path);
    return rc;
}

/* Read all of stdin (the prompt of generate). */
static char *stdin_read_all(void) {
    if (isatty(STDIN_FILENO))
        fprintf(stderr, "engine: reading the prompt from stdin (Ctrl-D ends it)\n");
    size_t cap = 4096, len = 0;
    char *buf = xmalloc(cap);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, stdin)) > 0)
        if ((len += got) + 1 >= cap) buf = xrealloc(buf, cap *= 2);
    buf[len] = '\0';
    if (len && buf[len - 1] == '\n') buf[--len] = '\0'; /* the newline that ends the input */
    return buf;
}

/* generate's output: the continuation so far, and how much of its text is on stdout. */
typedef struct {
    const tokenizer *t;
    int *gen; /* [MAX_NEW_TOKENS] */
    int n;
    size_t printed; /* bytes of tokenizer_decode(gen[0..n)) already written */
} continuation;

/* Print the text of the continuation beyond what is printed. Unless final, hold back a trailing
 * replacement character: it may be a UTF-8 sequence whose other bytes come next. */
static void continuation_print(continuation *g, int final) {
    char *s = tokenizer_decode(g->t, g->gen, g->n);
    size_t ready = strlen(s);
    if (!final && ready >= 3 && !memcmp(s + ready - 3, "\xEF\xBF\xBD", 3)) ready -= 3;
    if (ready > g->printed) {
        fwrite(s + g->printed, 1, ready - g->printed, stdout);
        fflush(stdout);
        g->printed = ready;
    }
    free(s);
}

/* The serving loop's hook: each token is printed as it is served. */
static void continuation_add(void *ctx, int id) {
    continuation *g = ctx;
    g->gen[g->n++] = id;
    continuation_print(g, 0);
}

static int cmd_generate(const cli *c, char *err, size_t errlen) {
    const knobs *k = &c->k;
    char *text = c->prompt ? xstrdup(c->prompt) : stdin_read_all();
    model *m = NULL;
    tokenizer *t = NULL;
    int *ids = NULL, rc = -1;
    continuation g = {0};
    server sv = {0};
    if (!(m = model_open(c->model_dir, k, err, errlen))) goto done;
    if (knobs_check_model(k, model_max_positions(m), 1, err, errlen)) goto done;
    char *tok_path = xasprintf("%s/tokenizer.json", c->model_dir);
    t = tokenizer_load(tok_path, err, errlen);
    free(tok_path);
    if (!t) goto done;
    if (!text[0]) {
        snprintf(err, errlen, "the prompt is empty");
        goto done;
    }
    int n = prompt_encode(t, text, &ids);
    if (n < 0) {
        snprintf(err, errlen, "the prompt is not valid UTF-8");
        goto done;
    }
    if (n == 0) {
        snprintf(err, errlen, "the prompt is empty");
        goto done;
    }
    int vocab = model_vocab_size(m), max_len = knobs_max_model_len(k, model_max_positions(m));
    for (int i = 0; i < n; i++)
        if (ids[i] >= vocab) {
            snprintf(err, errlen,
                     "%s/tokenizer.json gives id %d, outside the model's vocabulary of %d",
                     c->model_dir, ids[i], vocab);
            goto done;
        }
    if (n > max_len - k->max_new_tokens) {
        snprintf(err, errlen,
                 "the prompt has %d tokens, more than MAX_MODEL_LEN - MAX_NEW_TOKENS = %d - %d", n,
                 max_len, k->max_new_tokens);
        goto done;
    }
    if (serve_open(&sv, m, k, c->model_dir, c->assistant, n + k->max_new_tokens, err, errlen))
        goto done;

    g.t = t;
    g.gen = xmalloc((size_t)k->max_new_tokens * sizeof *g.gen);
    sv.sp.served = continuation_add;
    sv.sp.served_ctx = &g;
    double t0 = now_seconds(), t1 = t0;
    if (spec_generate(&sv.sp, ids, n, k->max_new_tokens, tokenizer_eos_id(t), NULL, &t1, NULL) <
        0) {
        snprintf(err, errlen, "the decoder's cache is full");
        goto done;
    }
    continuation_print(&g, 1);
    printf("\n");
    double t2 = now_seconds();
    char drafts[64] = "";
    if (sv.sp.k > 0)
        snprintf(drafts, sizeof drafts, "; %.2f drafts accepted per step",
                 spec_mean_accept(&sv.sp.stats));
    fprintf(stderr,
            "engine: prompt %d tokens in %.3f s; %d new tokens in %.3f s (%.1f tokens/s)%s%s\n", n,
            t1 - t0, g.n, t2 - t1, g.n > 1 ? (g.n - 1) / (t2 - t1) : 0.0,
            g.n < k->max_new_tokens ? ", stopped at end-of-sequence" : "", drafts);
    rc = 0;
done:
    serve_close(&sv);
    free(g.gen);
    free(ids);
    if (t) tokenizer_free(t);
    if (m) model_free(m);
    free(text);
    return rc;
}

int main(int argc, char **argv) {
    util_progname = "engine";
    char err[ERRLEN] = "";
    cli c;
    int rc = cli_parse(argc, argv, &c, err, sizeof err);
    if (rc == 1) {
        usage(c.command);
        return 0;
    }
    if (rc) {
        fprintf(stderr, "engine: %s\n", err);
        fprintf(stderr, "(engine --help lists the commands and knobs)\n");
        return 2;
    }
    if (c.k.n_threads) omp_set_num_threads(c.k.n_threads);
    rc = !strcmp(c.command, "bench") ? cmd_bench(&c, err, sizeof err)
         : !strcmp(c.command, "ppl") ? cmd_ppl(&c, err, sizeof err)
                                     : cmd_generate(&c, err, sizeof err);
    if (rc) {
        fprintf(stderr, "engine: %s\n", err);
        return 1;
    }
    return 0;
}
