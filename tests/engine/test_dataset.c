/* test_dataset.c: the JSONL readers of prompt sets and perplexity records (engine/dataset.c).
 *
 * Each case writes a small file into a temporary folder and loads it: the happy paths check every
 * field that comes back; the failure paths check that the message names the file and the line
 * (and the key) of the problem. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset.h"
#include "util.h"
#include "../test_util.h"

static char *dir; /* the test's temporary folder */

/* Write content to dir/name; returns the path (caller frees). */
static char *write_file(const char *name, const char *content) {
    char *path = xasprintf("%s/%s", dir, name);
    test_write_file(path, content, strlen(content));
    return path;
}

static void expect_prompt_error(const char *content, int line, const char *needle) {
    char *path = write_file("bad_prompts.jsonl", content);
    prompt_set ps;
    char err[512] = "";
    int rc = prompt_set_load(path, &ps, err, sizeof err);
    char *where = line ? xasprintf("%s:%d: ", path, line) : xasprintf("%s: ", path);
    EXPECT(rc == -1);
    if (!strstr(err, where) || !strstr(err, needle)) {
        fprintf(stderr, "prompt error mismatch: want \"%s\" and \"%s\", got \"%s\"\n", where,
                needle, err);
        failures++;
    }
    free(where);
    unlink(path);
    free(path);
}

static void expect_ppl_error(const char *content, int line, const char *needle) {
    char *path = write_file("bad_ppl.jsonl", content);
    ppl_set pp;
    char err[512] = "";
    int rc = ppl_set_load(path, &pp, err, sizeof err);
    char *where = line ? xasprintf("%s:%d: ", path, line) : xasprintf("%s: ", path);
    EXPECT(rc == -1);
    if (!strstr(err, where) || !strstr(err, needle)) {
        fprintf(stderr, "ppl error mismatch: want \"%s\" and \"%s\", got \"%s\"\n", where, needle,
                err);
        failures++;
    }
    free(where);
    unlink(path);
    free(path);
}

static void test_prompts_ok(void) {
    char *path = write_file("prompts.jsonl",
                            "{\"id\": \"a\", \"prompt_token_ids\": [2, 10, 11], \"text\": \"hi\"}\n"
                            "\n"
                            "   \t\n"
                            "{\"id\": 7, \"prompt\": \"Hello there\"}\r\n"
                            "{\"text\": \"no id\", \"extra\": {\"ignored\": true}}");
    prompt_set ps;
    char err[512] = "";
    EXPECT(prompt_set_load(path, &ps, err, sizeof err) == 0);
    EXPECT(ps.n == 3);
    if (ps.n == 3) {
        EXPECT(!strcmp(ps.items[0].id, "a") && ps.items[0].line == 1);
        EXPECT(ps.items[0].n_tokens == 3 && ps.items[0].tokens[0] == 2 &&
               ps.items[0].tokens[2] == 11);
        EXPECT(!strcmp(ps.items[0].text, "hi"));
        EXPECT(!strcmp(ps.items[1].id, "7") && ps.items[1].line == 4);
        EXPECT(!ps.items[1].tokens && !strcmp(ps.items[1].text, "Hello there"));
        EXPECT(!strcmp(ps.items[2].id, "line 5") && !strcmp(ps.items[2].text, "no id"));
        EXPECT(prompt_set_check_vocab(&ps, 12, err, sizeof err) == 0);
        EXPECT(prompt_set_check_vocab(&ps, 11, err, sizeof err) == -1);
        char *want = xasprintf("%s:1: prompt_token_ids[2] = 11 is outside", path);
        EXPECT(strstr(err, want));
        free(want);
    }
    prompt_set_free(&ps);
    unlink(path);
    free(path);
}

static void test_prompts_bad(void) {
    expect_prompt_error("", 0, "no records");
    expect_prompt_error("\n\n  \n", 0, "no records");
    expect_prompt_error("{\"text\": \"ok\"}\n{\"text\": \"ok\"}\n{\"text\": oops}\n", 3,
                        "not valid JSON");
    expect_prompt_error("{\"text\": \"ok\"}\n[1, 2, 3]\n", 2, "expected a JSON object");
    expect_prompt_error("{\"text\": \"ok\"} {\"text\": \"two\"}\n", 1, "unexpected text after");
    expect_prompt_error("{\"id\": \"x\"}\n", 1, "needs \"prompt_token_ids\" or");
    expect_prompt_error("{\"prompt_token_ids\": []}\n", 1, "\"prompt_token_ids\" is empty");
    expect_prompt_error("{\"prompt_token_ids\": [1, -2]}\n", 1, "\"prompt_token_ids\"[1] is not");
    expect_prompt_error("{\"prompt_token_ids\": [1.5]}\n", 1, "\"prompt_token_ids\"[0] is not");
    expect_prompt_error("{\"prompt_token_ids\": [\"3\"]}\n", 1, "\"prompt_token_ids\"[0] is not");
    expect_prompt_error("{\"prompt_token_ids\": [1e12]}\n", 1, "\"prompt_token_ids\"[0] is not");
    expect_prompt_error("{\"prompt_token_ids\": 5}\n", 1, "must be an array");
    expect_prompt_error("{\"text\": \"\"}\n", 1, "\"text\" is empty");
    expect_prompt_error("{\"prompt\": 12}\n", 1, "\"prompt\" must be a string");
    expect_prompt_error("{\"text\": \"a\", \"id\": [1]}\n", 1, "\"id\" must be");

    prompt_set ps;
    char err[512] = "";
    char *missing = xasprintf("%s/does_not_exist.jsonl", dir);
    EXPECT(prompt_set_load(missing, &ps, err, sizeof err) == -1);
    EXPECT(strstr(err, missing) && strstr(err, "cannot open"));
    free(missing);
}

static void test_ppl_ok(void) {
    char *path =
        write_file("ppl.jsonl", "{\"context_token_ids\": [2, 5], \"target_token_ids\": [6, 7, 8]}\n"
                                "\n"
                                "{\"target_token_ids\": [9], \"context_token_ids\": [2]}\n");
    ppl_set pp;
    char err[512] = "";
    EXPECT(ppl_set_load(path, &pp, err, sizeof err) == 0);
    EXPECT(pp.n == 2 && pp.n_targets == 4);
    if (pp.n == 2) {
        EXPECT(pp.items[0].line == 1 && pp.items[0].n_context == 2 && pp.items[0].n_target == 3);
        EXPECT(pp.items[0].context[1] == 5 && pp.items[0].target[2] == 8);
        EXPECT(pp.items[1].line == 3 && pp.items[1].target[0] == 9);
        EXPECT(ppl_set_check_vocab(&pp, 10, err, sizeof err) == 0);
        EXPECT(ppl_set_check_vocab(&pp, 9, err, sizeof err) == -1);
        char *want = xasprintf("%s:3: target_token_ids[0] = 9 is outside", path);
        EXPECT(strstr(err, want));
        free(want);
    }
    ppl_set_free(&pp);
    unlink(path);
    free(path);
}

static void test_ppl_bad(void) {
    expect_ppl_error("", 0, "no records");
    expect_ppl_error("{\"context_token_ids\": [1]}\n", 1, "missing \"target_token_ids\"");
    expect_ppl_error("{\"target_token_ids\": [1]}\n", 1, "missing \"context_token_ids\"");
    expect_ppl_error("{\"context_token_ids\": [], \"target_token_ids\": [1]}\n", 1,
                     "\"context_token_ids\" is empty");
    expect_ppl_error("{\"context_token_ids\": [1], \"target_token_ids\": []}\n", 1,
                     "\"target_token_ids\" is empty");
    expect_ppl_error("{\"context_token_ids\": [1], \"target_token_ids\": [2]}\n"
                     "{\"context_token_ids\": [1], \"target_token_ids\": [true]}\n",
                     2, "\"target_token_ids\"[0] is not");
    expect_ppl_error("{\"context_token_ids\": [1], \"target_token_ids\": [2]}\nnot json\n", 2,
                     "not valid JSON");
    expect_ppl_error("\"just a string\"\n", 1, "expected a JSON object");
}

int main(void) {
    dir = test_tmpdir_new("test_dataset");
    test_prompts_ok();
    test_prompts_bad();
    test_ppl_ok();
    test_ppl_bad();
    test_tmpdir_remove(dir);
    free(dir);
    return test_exit("test_dataset");
}
