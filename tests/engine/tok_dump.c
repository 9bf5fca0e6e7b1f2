/* tok_dump: run our tokenizer over a file of texts, for the reference comparison and the
 * speed measurement (tests/engine/test_tokenizer_ref.sh, tests/engine/tokenizer/bench.sh).
 *
 *   tok_dump TOKENIZER_JSON TEXTS_JSONL            one JSON line per text:
 *                                                  {"ids": [...], "decoded": "..."}
 *   tok_dump --decode TOKENIZER_JSON IDS_JSONL     one {"decoded": "..."} per {"ids": [...]}
 *   tok_dump --bench SECONDS TOKENIZER_JSON FILE   encode FILE's whole content repeatedly for
 *                                                  about SECONDS; print MB/s and tokens/s
 *
 * TEXTS_JSONL has one {"text": "..."} object per line (blank lines are skipped). Texts
 * may not contain NUL characters (they are passed as C strings). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tokenizer.h"
#include "util.h"

static void print_json(cJSON *obj) {
    char *out = cJSON_PrintUnformatted(obj);
    puts(out);
    free(out);
    cJSON_Delete(obj);
}

/* {"ids": [...]} -> {"decoded": "..."}. */
static int decode_line(const tokenizer *t, const cJSON *obj, const char *path, int lineno) {
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(obj, "ids"), *it;
    if (!cJSON_IsArray(ids)) {
        fprintf(stderr, "tok_dump: %s:%d: expected {\"ids\": [...]}\n", path, lineno);
        return 1;
    }
    int n = cJSON_GetArraySize(ids), i = 0;
    int *v = xmalloc((size_t)(n + 1) * sizeof *v);
    cJSON_ArrayForEach(it, ids) v[i++] = cJSON_IsNumber(it) ? it->valueint : -1;
    char *text = tokenizer_decode(t, v, n);
    cJSON *res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "decoded", text);
    print_json(res);
    free(text);
    free(v);
    return 0;
}

static int dump(const tokenizer *t, const char *path, int decode_only) {
    char err[512];
    size_t len;
    char *data = file_read_all(path, &len, err, sizeof err);
    if (!data) {
        fprintf(stderr, "tok_dump: %s\n", err);
        return 1;
    }
    int lineno = 0, rc = 0;
    for (char *line = data, *end; line && *line; line = end ? end + 1 : NULL) {
        end = strchr(line, '\n');
        if (end) *end = '\0';
        lineno++;
        if (strspn(line, " \t\r") == strlen(line)) continue;
        cJSON *obj = cJSON_Parse(line);
        if (decode_only) {
            rc = decode_line(t, obj, path, lineno);
            cJSON_Delete(obj);
            if (rc) break;
            continue;
        }
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(obj, "text");
        if (!cJSON_IsString(text)) {
            fprintf(stderr, "tok_dump: %s:%d: expected {\"text\": \"...\"}\n", path, lineno);
            cJSON_Delete(obj);
            rc = 1;
            break;
        }
        int *ids;
        int n = tokenizer_encode(t, text->valuestring, strlen(text->valuestring), 0, &ids);
        if (n < 0) {
            fprintf(stderr, "tok_dump: %s:%d: text is not valid UTF-8\n", path, lineno);
            cJSON_Delete(obj);
            rc = 1;
            break;
        }
        char *decoded = tokenizer_decode(t, ids, n);
        cJSON *res = cJSON_CreateObject();
        cJSON *arr = cJSON_AddArrayToObject(res, "ids");
        for (int i = 0; i < n; i++)
            cJSON_AddItemToArray(arr, cJSON_CreateNumber(ids[i]));
        cJSON_AddStringToObject(res, "decoded", decoded);
        print_json(res);
        cJSON_Delete(obj);
        free(decoded);
        free(ids);
    }
    free(data);
    return rc;
}

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int bench(const tokenizer *t, const char *path, double seconds) {
    char err[512];
    size_t len;
    char *data = file_read_all(path, &len, err, sizeof err);
    if (!data) {
        fprintf(stderr, "tok_dump: %s\n", err);
        return 1;
    }
    long reps = 0, tokens = 0;
    double t0 = now_seconds(), c0 = cpu_seconds(), elapsed;
    do {
        int *ids;
        int n = tokenizer_encode(t, data, len, 0, &ids);
        if (n < 0) {
            fprintf(stderr, "tok_dump: %s: not valid UTF-8\n", path);
            free(data);
            return 1;
        }
        free(ids);
        tokens += n;
        reps++;
        elapsed = now_seconds() - t0;
    } while (elapsed < seconds);
    double cpu = cpu_seconds() - c0, total = (double)len * (double)reps;
    printf("{\"bytes\": %zu, \"repetitions\": %ld, \"wall_s\": %.3f, \"cpu_s\": %.3f, "
           "\"MB_per_s\": %.2f, \"MB_per_cpu_s\": %.2f, \"tokens_per_cpu_s\": %.0f, "
           "\"bytes_per_token\": %.3f}\n",
           len, reps, elapsed, cpu, total / elapsed / 1e6, total / cpu / 1e6, (double)tokens / cpu,
           tokens ? total / (double)tokens : 0.0);
    free(data);
    return 0;
}

int main(int argc, char **argv) {
    util_progname = "tok_dump";
    double seconds = -1;
    int a = 1, decode_only = 0;
    if (argc > 2 && !strcmp(argv[1], "--bench")) {
        seconds = atof(argv[2]);
        a = 3;
    } else if (argc > 1 && !strcmp(argv[1], "--decode")) {
        decode_only = 1;
        a = 2;
    }
    if (argc - a != 2) {
        fprintf(stderr, "usage: tok_dump [--decode | --bench SECONDS] TOKENIZER_JSON FILE\n");
        return 2;
    }
    char err[512];
    double t0 = now_seconds();
    tokenizer *t = tokenizer_load(argv[a], err, sizeof err);
    if (!t) {
        fprintf(stderr, "tok_dump: %s\n", err);
        return 1;
    }
    if (seconds >= 0)
        fprintf(stderr, "tok_dump: loaded %s in %.2f s\n", argv[a], now_seconds() - t0);
    int rc = seconds >= 0 ? bench(t, argv[a + 1], seconds) : dump(t, argv[a + 1], decode_only);
    tokenizer_free(t);
    return rc;
}
