/* runner_result.c: what a finished run reported (runner.h, runner_result.h).
 *
 * The result of a clean exit is read in the protocol's order (docs/design.md 4.1): the
 * $TUNER_RESULT file, else the last stdout line that is a JSON object, else the space's
 * regexes over the log. A result that is almost one gets a reason saying what is wrong
 * (truncated JSON, a NaN, a key twice, an over-long line), and every metric the space judges
 * is checked against its bounds (runner_judge).
 */
#include "runner_result.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "input.h"
#include "util.h"

/* The line of text that ends at *end (exclusive), blanks trimmed, when it starts with '{':
 * [*a, *b) and 1; else 0. *end moves to the end of the line before (text when none is left).
 * Walking back from text + strlen(text) visits every line, last first. */
static int prev_brace_line(const char *text, const char **end, const char **a, const char **b) {
    const char *start = *end;
    while (start > text && start[-1] != '\n')
        start--;
    const char *x = start, *y = *end;
    while (x < y && (*x == ' ' || *x == '\t' || *x == '\r'))
        x++;
    while (y > x && (y[-1] == ' ' || y[-1] == '\t' || y[-1] == '\r' || y[-1] == '\n'))
        y--;
    *end = start > text ? start - 1 : text;
    if (y == x || *x != '{') return 0;
    *a = x;
    *b = y;
    return 1;
}

cJSON *runner_last_json_line(const char *text) {
    const char *end = text + strlen(text), *a, *b;
    while (end > text)
        if (prev_brace_line(text, &end, &a, &b)) {
            cJSON *j = cJSON_ParseWithLength(a, (size_t)(b - a));
            if (j && cJSON_IsObject(j)) return j;
            cJSON_Delete(j);
        }
    return NULL;
}

/* Apply the space's regexes to the log text: last match of each, first capture group. */
static cJSON *metrics_from_regex(const space *sp, const char *text, char **reason) {
    cJSON *m = cJSON_CreateObject();
    for (int i = 0; i < sp->n_regex; i++) {
        const regex_t *re = &sp->regex[i].re; /* compiled by the space loader */
        regmatch_t g[2];
        const char *p = text, *last = NULL;
        size_t last_len = 0;
        while (*p && regexec(re, p, 2, g, p == text ? 0 : REG_NOTBOL) == 0) {
            if (g[1].rm_so >= 0) {
                last = p + g[1].rm_so;
                last_len = (size_t)(g[1].rm_eo - g[1].rm_so);
            }
            p += g[0].rm_eo > 0 ? g[0].rm_eo : 1;
        }
        if (!last) {
            *reason = xasprintf("no result: regex for '%s' matched nothing in the output",
                                sp->regex[i].metric);
            cJSON_Delete(m);
            return NULL;
        }
        char *s = xasprintf("%.*s", (int)last_len, last), *e;
        errno = 0;
        double v = strtod(s, &e);
        if (e == s || *e != '\0' || errno == ERANGE) {
            *reason = xasprintf("metric '%s' is not a number (regex captured \"%.40s\")",
                                sp->regex[i].metric, s);
            free(s);
            cJSON_Delete(m);
            return NULL;
        }
        free(s);
        cJSON_AddNumberToObject(m, sp->regex[i].metric, v);
    }
    return m;
}

/* The dotted path of a key that appears twice in one object of j (recursively), or NULL.
 * Caller frees. */
static char *duplicate_key(const cJSON *j, const char *prefix) {
    if (!cJSON_IsObject(j) && !cJSON_IsArray(j)) return NULL;
    for (const cJSON *a = j->child; a; a = a->next) {
        if (cJSON_IsObject(j) && a->string)
            for (const cJSON *b = a->next; b; b = b->next)
                if (b->string && !strcmp(a->string, b->string))
                    return xasprintf("%s%s", prefix, a->string);
        char *sub = cJSON_IsObject(j) && a->string ? xasprintf("%s%s.", prefix, a->string)
                                                   : xstrdup(prefix);
        char *d = duplicate_key(a, sub);
        free(sub);
        if (d) return d;
    }
    return NULL;
}

/* Does s start with a number JSON has no word for (NaN, Infinity, in any case, signed)? */
static int non_json_number(const char *s, size_t n) {
    static const char *const words[] = {"nan", "inf"};
    size_t i = n > 0 && (s[0] == '-' || s[0] == '+') ? 1 : 0;
    for (int w = 0; w < 2; w++)
        if (n - i >= 3 && !strncasecmp(s + i, words[w], 3)) return 1;
    return 0;
}

/* Does text end inside a string (2), or with an object or list still open (1)? 0: no. */
static int json_unclosed(const char *text, size_t len) {
    int depth = 0, in_string = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if ((c == '}' || c == ']') && --depth < 0) {
            return 0;
        }
    }
    return in_string ? 2 : depth > 0;
}

cJSON *runner_parse_result(const char *text, size_t len, char **why) {
    *why = NULL;
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!j) {
        /* cJSON points at the failing value, or at the last byte when the text ran out */
        size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : len;
        while (at < len &&
               (text[at] == ' ' || text[at] == '\t' || text[at] == '\r' || text[at] == '\n'))
            at++;
        int shown = len - at < 20 ? (int)(len - at) : 20;
        if (at < len && non_json_number(text + at, len - at))
            *why = xasprintf("a number JSON cannot hold at byte %zu (\"%.*s\"): report a metric "
                             "that cannot be measured as null with a \"reason\"",
                             at + 1, shown > 12 ? 12 : shown, text + at);
        else if (json_unclosed(text, len) == 2 || (json_unclosed(text, len) && at + 1 >= len))
            *why = xasprintf("truncated JSON: the text ends (after %zu bytes) before the object "
                             "is closed",
                             len);
        else
            *why = xasprintf("not valid JSON: syntax error at byte %zu (near \"%.*s\")", at + 1,
                             shown, text + at);
        return NULL;
    }
    if (!cJSON_IsObject(j)) {
        *why = xstrdup("JSON, but not an object {\"metric\": value, ...}");
        cJSON_Delete(j);
        return NULL;
    }
    char *dup = duplicate_key(j, "");
    if (dup) {
        *why = xasprintf("key '%s' appears twice in the result", dup);
        free(dup);
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

/* Judge one metric; returns 0 ok, 1 infeasible, 2 failed (with *why set). */
static int judge_metric(const space *sp, const cJSON *metrics, const char *name, char **why) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(metrics, name);
    if (!v) {
        *why = xasprintf("metric '%s' missing from the result", name);
        return 2;
    }
    if (cJSON_IsNull(v)) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(metrics, "reason");
        if (cJSON_IsString(r) && r->valuestring[0]) {
            *why = xasprintf("%s is infinite: %s", name, r->valuestring);
            return 1;
        }
        *why = xasprintf("metric '%s' is null and the result gives no \"reason\"", name);
        return 2;
    }
    if (!cJSON_IsNumber(v)) {
        char *txt = cJSON_PrintUnformatted(v);
        *why = xasprintf("metric '%s' is not a number (got %.40s)", name, txt);
        free(txt);
        return 2;
    }
    double x = v->valuedouble;
    if (!isfinite(x)) {
        *why = xasprintf("metric '%s' is not finite", name);
        return 2;
    }
    metric_bound b;
    space_metric_bounds(sp, name, &b);
    int below = b.lo_open ? !(x > b.lo) : x<b.lo, above = x> b.hi;
    if (below || above) {
        *why = xasprintf("impossible figure: metric '%s' = %.9g is %s its bound %s %.9g (%s)", name,
                         x, below ? "below" : "above",
                         below ? (b.lo_open ? ">" : ">=") : "<=", below ? b.lo : b.hi,
                         b.explicit_ ? "bounds in the space"
                                     : "default for rates and perplexities; set bounds in the "
                                       "space to change it");
        return 2;
    }
    return 0;
}

char *runner_judge(const space *sp, const cJSON *metrics, trial_status *status) {
    char *dup = duplicate_key(metrics, "");
    if (dup) {
        *status = TRIAL_FAILED;
        char *why = xasprintf("key '%s' appears twice in the result", dup);
        free(dup);
        return why;
    }
    char *infeasible = NULL, *why = NULL;
    int n = 1 + sp->n_constraints + sp->n_bounds;
    for (int i = 0; i < n; i++) {
        const char *name = i == 0                   ? sp->objective
                           : i <= sp->n_constraints ? sp->constraints[i - 1].metric
                                                    : sp->bounds[i - 1 - sp->n_constraints].metric;
        /* A metric with bounds that the study does not use: only a number is checked. */
        if (i > sp->n_constraints &&
            !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(metrics, name)))
            continue;
        int v = judge_metric(sp, metrics, name, &why);
        if (v == 2) {
            free(infeasible);
            *status = TRIAL_FAILED;
            return why;
        }
        if (v == 1 && !infeasible)
            infeasible = why;
        else
            free(why);
        why = NULL;
    }
    *status = infeasible ? TRIAL_INFEASIBLE : TRIAL_OK;
    return infeasible;
}

/* The last non-empty line of text[len] (at most 160 bytes of it), or NULL. Caller frees. */
static char *last_line_of(const char *text, size_t len) {
    const char *end = text + len;
    while (end > text && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
        end--;
    const char *start = end;
    while (start > text && start[-1] != '\n')
        start--;
    return end > start ? xasprintf("%.*s", (int)(end - start > 160 ? 160 : end - start), start)
                       : NULL;
}

char *runner_last_output(const char *log_path, const char *err_tail, size_t err_len) {
    char *line = last_line_of(err_tail, err_len);
    if (line) return line;
    int fd = open(log_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    char text[4096];
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > (off_t)sizeof text ? size - (off_t)sizeof text : 0;
    ssize_t got = size > 0 ? pread(fd, text, (size_t)(size - from), from) : 0;
    close(fd);
    return got > 0 ? last_line_of(text, (size_t)got) : NULL;
}

/* The last line of text that starts with '{' (after blanks): [*a, *b). 0 when none. */
static int last_brace_line(const char *text, const char **a_out, const char **b_out) {
    const char *end = text + strlen(text);
    while (end > text)
        if (prev_brace_line(text, &end, a_out, b_out)) return 1;
    return 0;
}

/* Fill out->status/metrics/reason from a clean exit (status 0). long_line: the length of
 * the longest stdout line that started with '{', when it was longer than a result line may
 * be (0 otherwise). */
void runner_result_read(const space *sp, const run_request *req, const char *stdout_tail,
                        unsigned long long long_line, run_result *out) {
    char err[512];
    size_t len;
    char *reason = NULL;
    struct stat st;
    if (lstat(req->result_path, &st) == 0) {
        char *text = input_read(req->result_path, INPUT_MAX_RESULT, &len, err, sizeof err);
        char *why = NULL;
        cJSON *j = text ? runner_parse_result(text, len, &why) : NULL;
        free(text);
        if (!j) {
            out->status = TRIAL_FAILED;
            out->reason =
                why ? xasprintf("garbage result: $TUNER_RESULT file %s: %s", req->result_path, why)
                    : xasprintf("garbage result: $TUNER_RESULT file %s", err);
            free(why);
            return;
        }
        out->metrics = j;
    } else if ((out->metrics = runner_last_json_line(stdout_tail)) != NULL) {
        /* found on stdout: judged below (a key twice included) */
    } else if (sp->n_regex > 0) {
        long long cap = req->log_limit > 0 ? req->log_limit : RUNNER_LOG_LIMIT_DEFAULT;
        char *text = input_read(req->log_path, (size_t)cap + 4096, &len, err, sizeof err);
        if (!text) {
            out->status = TRIAL_FAILED;
            out->reason = xstrdup(err);
            return;
        }
        out->metrics = metrics_from_regex(sp, text, &reason);
        free(text);
        if (!out->metrics) {
            out->status = TRIAL_FAILED;
            out->reason = reason;
            return;
        }
    } else {
        const char *a, *b;
        char *why = NULL;
        out->status = TRIAL_FAILED;
        if (long_line) {
            out->reason = xasprintf("bad result: a line of stdout that starts with '{' is %llu "
                                    "bytes, over the %d bytes a result line may have (write a "
                                    "large result to the $TUNER_RESULT file)",
                                    long_line, RUNNER_RESULT_LINE_MAX);
        } else if (last_brace_line(stdout_tail, &a, &b)) {
            cJSON_Delete(runner_parse_result(a, (size_t)(b - a), &why));
            out->reason = xasprintf("bad result: the last line of stdout that starts with '{' "
                                    "is %s",
                                    why ? why : "not a JSON object");
            free(why);
        } else {
            out->reason = xstrdup("no result: no $TUNER_RESULT file and no line of stdout is a "
                                  "JSON object");
        }
        return;
    }
    out->reason = runner_judge(sp, out->metrics, &out->status);
}
