/* test_tokenizer_damage.c: damaged tokenizer.json files are refused with a message, never
 * a crash (run from tests/engine; most useful in the ASan/UBSan build).
 *
 *   - type confusion: every value of tokenizer/unit/tiny_gemma.json and tiny_llama.json, one
 *     at a time, is replaced by each of null, true, -1, 1e30, 2.5, "", "x", [], {} and
 *     [["a", "b"]]; the file then either loads (some swaps are harmless, e.g. true for
 *     false) and encodes and decodes a few texts, or fails with a message naming the file;
 *   - truncation: the file cut at every byte before its closing brace fails with "not
 *     valid JSON";
 *   - removal: every key, one at a time, deleted: loads or fails naming the file.
 * It counts each case and prints the totals. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tokenizer.h"
#include "util.h"

static int failures, loaded, refused;

/* The damaged file lives in memory (memfd): thousands of rewrites of a real file would
 * wait on the disk. tokenizer_load reads it through /proc/self/fd/N. */
static int tmp_fd = -1;
static char tmp_path[64];

static void write_file(const char *text, size_t n) {
    if (ftruncate(tmp_fd, 0) != 0 || pwrite(tmp_fd, text, n, 0) != (ssize_t)n)
        die("cannot write %s", tmp_path);
}

/* Load tmp_path: it must load and work, or fail with a message naming it (and want). */
static void check_load(const char *what, const char *want) {
    char err[512] = "";
    tokenizer *t = tokenizer_load(tmp_path, err, sizeof err);
    if (!t) {
        refused++;
        if (!strstr(err, tmp_path) || (want && !strstr(err, want))) {
            fprintf(stderr, "%s: message \"%s\" does not name the file%s%s\n", what, err,
                    want ? " or say " : "", want ? want : "");
            failures++;
        }
        return;
    }
    loaded++;
    if (want) {
        fprintf(stderr, "%s: loaded, want an error saying %s\n", what, want);
        failures++;
    }
    static const char *texts[] = {"hello world", "<start_of_turn>hi\n", "é😀 zz  ", ""};
    for (int k = 0; k < 4; k++) {
        int *ids;
        int n = tokenizer_encode(t, texts[k], strlen(texts[k]), k & 1, &ids);
        if (n < 0) continue; /* no BOS in this variant */
        free(tokenizer_decode(t, ids, n));
        free(ids);
    }
    int junk[] = {0, 5, 2, 100000, -3};
    free(tokenizer_decode(t, junk, 5));
    tokenizer_free(t);
}

/* Every (parent, child) pair of the tree, depth first. */
typedef struct {
    cJSON **parent, **child;
    int n, cap;
} node_list;

static void collect(cJSON *parent, node_list *l) {
    for (cJSON *c = parent->child; c; c = c->next) {
        if (l->n == l->cap) {
            l->cap = l->cap ? l->cap * 2 : 256;
            l->parent = xrealloc(l->parent, (size_t)l->cap * sizeof *l->parent);
            l->child = xrealloc(l->child, (size_t)l->cap * sizeof *l->child);
        }
        l->parent[l->n] = parent;
        l->child[l->n++] = c;
        collect(c, l);
    }
}

static cJSON *replacement(int r) {
    switch (r) {
    case 0:
        return cJSON_CreateNull();
    case 1:
        return cJSON_CreateTrue();
    case 2:
        return cJSON_CreateNumber(-1);
    case 3:
        return cJSON_CreateNumber(1e30);
    case 4:
        return cJSON_CreateNumber(2.5);
    case 5:
        return cJSON_CreateString("");
    case 6:
        return cJSON_CreateString("x");
    case 7:
        return cJSON_CreateArray();
    case 8:
        return cJSON_CreateObject();
    default: {
        const char *pair[] = {"a", "b"};
        cJSON *outer = cJSON_CreateArray();
        cJSON_AddItemToArray(outer, cJSON_CreateStringArray(pair, 2));
        return outer;
    }
    }
}
enum { N_REPLACEMENTS = 10 };

static void sweep(const char *name) {
    char path[256], err[512];
    snprintf(path, sizeof path, "tokenizer/unit/%s", name);
    size_t len;
    char *text = file_read_all(path, &len, err, sizeof err);
    if (!text) die("%s", err);
    cJSON *doc = cJSON_Parse(text);
    CHECK(doc);

    /* Type confusion: the i-th node of a fresh copy replaced. */
    node_list all = {0};
    collect(doc, &all);
    for (int i = 0; i < all.n; i++) {
        for (int r = 0; r < N_REPLACEMENTS; r++) {
            cJSON *copy = cJSON_Duplicate(doc, 1);
            node_list l = {0};
            collect(copy, &l);
            CHECK(l.n == all.n);
            cJSON *rep = replacement(r);
            if (l.child[i]->string) rep->string = xstrdup(l.child[i]->string);
            CHECK(cJSON_ReplaceItemViaPointer(l.parent[i], l.child[i], rep));
            char *out = cJSON_PrintUnformatted(copy);
            write_file(out, strlen(out));
            char what[128];
            snprintf(what, sizeof what, "%s: node %d replaced by kind %d", name, i, r);
            check_load(what, NULL);
            free(out);
            free(l.parent);
            free(l.child);
            cJSON_Delete(copy);
        }
    }

    /* Removal of each object member. */
    for (int i = 0; i < all.n; i++) {
        if (!cJSON_IsObject(all.parent[i])) continue;
        cJSON *copy = cJSON_Duplicate(doc, 1);
        node_list l = {0};
        collect(copy, &l);
        cJSON_Delete(cJSON_DetachItemViaPointer(l.parent[i], l.child[i]));
        char *out = cJSON_PrintUnformatted(copy);
        write_file(out, strlen(out));
        char what[128];
        snprintf(what, sizeof what, "%s: node %d removed", name, i);
        check_load(what, NULL);
        free(out);
        free(l.parent);
        free(l.child);
        cJSON_Delete(copy);
    }

    /* Truncation at every byte before the closing brace. */
    size_t end = len;
    while (end > 0 && strchr(" \t\r\n", text[end - 1]))
        end--;
    for (size_t cut = 0; cut + 1 < end; cut++) {
        write_file(text, cut);
        char what[128];
        snprintf(what, sizeof what, "%s: cut at byte %zu", name, cut);
        check_load(what, cut == 0 ? "not valid JSON" : "not valid JSON (near line");
    }
    free(all.parent);
    free(all.child);
    cJSON_Delete(doc);
    free(text);
}

int main(void) {
    util_progname = "test_tokenizer_damage";
    tmp_fd = memfd_create("damaged_tokenizer.json", 0);
    if (tmp_fd < 0) die("memfd_create failed");
    snprintf(tmp_path, sizeof tmp_path, "/proc/self/fd/%d", tmp_fd);
    sweep("tiny_gemma.json");
    sweep("tiny_llama.json");
    close(tmp_fd);
    printf("test_tokenizer_damage: %d damaged files loaded and worked, %d refused with a message, "
           "%d failure(s)\n",
           loaded, refused, failures);
    return failures ? 1 : 0;
}
