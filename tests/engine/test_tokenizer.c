/* test_tokenizer.c: unit tests of engine/tokenizer.{c,h} on small hand-written
 * tokenizer.json files in tokenizer/unit/ (run from tests/engine):
 *
 *   tiny_gemma.json      Gemma's layout: Replace " " -> "▁", Split on " ", BPE with
 *                        byte_fallback and fuse_unk, raw added tokens ("\n", "▁▁", a prefix
 *                        of another one), a <bos> template, Replace/ByteFallback/Fuse decoder.
 *   tiny_llama.json      Prepend + Replace normalizer, merges as "a b" strings, lstrip/rstrip
 *                        and normalized added tokens, Strip decoder, no fuse_unk.
 *   tiny_metaspace.json  Split (Isolated) + Metaspace (prepend "first", split) pre-tokenizer,
 *                        ignore_merges, no unk token (unknown chars are dropped), Metaspace
 *                        decoder, no post-processor and no BOS.
 *   bad_*.json           one defect each, for the load errors.
 * and, written on the fly, a Split pre-tokenizer in each of its ten configurations and
 * the Strip normalizer and decoder, Metaspace under each prepend scheme, and single_word
 * and lstrip added tokens without a decoder.
 *
 * Every expected id list and decoded string below was produced by the Hugging Face
 * tokenizers library (0.23.2, its Node binding) on the same files; the reference test
 * (test_tokenizer_ref.sh) does the same comparison at scale on Gemma 3's real file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tokenizer.h"
#include "util.h"
#include "../test_util.h"

static tokenizer *load(const char *name) {
    char path[256], err[512];
    snprintf(path, sizeof path, "tokenizer/unit/%s", name);
    tokenizer *t = tokenizer_load(path, err, sizeof err);
    if (!t) die("%s", err);
    return t;
}

static void print_ids(const char *label, const int *ids, int n) {
    fprintf(stderr, "  %s [", label);
    for (int i = 0; i < n; i++)
        fprintf(stderr, "%s%d", i ? ", " : "", ids[i]);
    fprintf(stderr, "]\n");
}

static void expect_ids_at(int line, const tokenizer *t, const char *text, int add_bos,
                          const int *want, int nwant) {
    int *ids;
    int n = tokenizer_encode(t, text, strlen(text), add_bos, &ids);
    if (n != nwant || (n > 0 && memcmp(ids, want, (size_t)n * sizeof *ids) != 0)) {
        fprintf(stderr, "%s:%d: encode(\"%s\", bos=%d) differs\n", __FILE__, line, text, add_bos);
        print_ids("want", want, nwant);
        if (n >= 0)
            print_ids("got ", ids, n);
        else
            fprintf(stderr, "  got  error (-1)\n");
        failures++;
    }
    free(ids);
}

#define EXPECT_IDS(t, text, bos, ...)                                                              \
    do {                                                                                           \
        const int want_[] = {__VA_ARGS__};                                                         \
        expect_ids_at(__LINE__, t, text, bos, want_, (int)(sizeof want_ / sizeof *want_));         \
    } while (0)

static void expect_decode_at(int line, const tokenizer *t, const int *ids, int n,
                             const char *want) {
    char *got = tokenizer_decode(t, ids, n);
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "%s:%d: decode gave \"%s\", want \"%s\"\n", __FILE__, line, got, want);
        failures++;
    }
    free(got);
}

#define EXPECT_DECODE(t, want, ...)                                                                \
    do {                                                                                           \
        const int ids_[] = {__VA_ARGS__};                                                          \
        expect_decode_at(__LINE__, t, ids_, (int)(sizeof ids_ / sizeof *ids_), want);              \
    } while (0)

/* encode must fail (-1, *ids NULL). */
static void expect_encode_error_at(int line, const tokenizer *t, const char *text, size_t len,
                                   int add_bos) {
    int *ids = (int *)&failures; /* anything but NULL: encode must reset it */
    int n = tokenizer_encode(t, text, len, add_bos, &ids);
    if (n != -1 || ids != NULL) {
        fprintf(stderr, "%s:%d: encode of bad input gave %d, want -1\n", __FILE__, line, n);
        failures++;
        if (n > 0) free(ids);
    }
}
#define EXPECT_ENCODE_ERROR(t, s, len, bos) expect_encode_error_at(__LINE__, t, s, len, bos)

static void expect_load_error_at(int line, const char *name, const char *want) {
    char path[256], err[512] = "";
    snprintf(path, sizeof path, "tokenizer/unit/%s", name);
    tokenizer *t = tokenizer_load(path, err, sizeof err);
    if (t || !strstr(err, path) || !strstr(err, want)) {
        fprintf(stderr, "%s:%d: loading %s: want an error naming the file and \"%s\", got \"%s\"\n",
                __FILE__, line, name, want, t ? "(loaded)" : err);
        failures++;
    }
    tokenizer_free(t);
}
#define EXPECT_LOAD_ERROR(name, want) expect_load_error_at(__LINE__, name, want)

static void test_gemma_layout(void) {
    tokenizer *t = load("tiny_gemma.json");
    EXPECT_IDS(t, "hello", 0, 21);
    EXPECT_IDS(t, " hello", 0, 22);
    EXPECT_IDS(t, "abc", 0, 25);     /* rank order: b+c (rank 5) before a+b (rank 6) */
    EXPECT_IDS(t, "aaa", 0, 26, 15); /* equal ranks: the leftmost pair merges first */
    EXPECT_IDS(t, "é", 0, 4, 5);     /* byte fallback */
    EXPECT_IDS(t, "😀", 0, 6, 7, 8, 9);
    EXPECT_IDS(t, "zz", 0, 3); /* no byte tokens for 'z': <unk>, fused */
    EXPECT_IDS(t, "z", 0, 3);
    /* The library's order: byte-fallback bytes go out before a pending (fused) <unk>. */
    EXPECT_IDS(t, "zé", 0, 4, 5, 3);
    EXPECT_IDS(t, "zéh", 0, 4, 5, 3, 11);
    EXPECT_IDS(t, "hzézé", 0, 11, 4, 5, 4, 5, 3);
    EXPECT_IDS(t, "hello\n\nhello", 0, 21, 27, 27, 21);
    EXPECT_IDS(t, "<start_of_turn>hello", 0, 29, 21);
    EXPECT_IDS(t, "<sthello", 0, 32, 21);
    EXPECT_IDS(t, "<start_of_tur", 0, 32, 15, 3, 14, 3); /* longest match is the prefix token */
    EXPECT_IDS(t, "  w", 0, 28, 30);
    EXPECT_IDS(t, "▁▁", 0, 28); /* a literal added token matched in the raw text */
    EXPECT_IDS(t, "hello é😀 zz", 0, 21, 10, 4, 5, 6, 7, 8, 9, 10, 3);
    EXPECT_IDS(t, "x<start_of_turn>\n", 0, 3, 29, 27);
    EXPECT_IDS(t, "   ", 0, 28, 10);
    EXPECT_IDS(t, "hello", 1, 2, 21); /* the template's <bos> */
    EXPECT_IDS(t, "", 1, 2);
    int *ids = (int *)&failures;
    EXPECT(tokenizer_encode(t, "", 0, 0, &ids) == 0 && ids == NULL);
    EXPECT(tokenizer_encode(t, NULL, 0, 0, &ids) == 0 && ids == NULL);
    EXPECT_ENCODE_ERROR(t, NULL, 3, 0);
    /* Length, not NUL, ends the text. */
    EXPECT(tokenizer_encode(t, "hello world", 5, 0, &ids) == 1 && ids[0] == 21);
    free(ids);

    EXPECT_ENCODE_ERROR(t, "\xff", 1, 0);
    EXPECT_ENCODE_ERROR(t, "ok\xc3", 3, 0);           /* cut-off sequence */
    EXPECT_ENCODE_ERROR(t, "\xc0\xaf", 2, 0);         /* overlong */
    EXPECT_ENCODE_ERROR(t, "\xed\xa0\x80", 3, 0);     /* surrogate */
    EXPECT_ENCODE_ERROR(t, "\xf4\x90\x80\x80", 4, 0); /* past U+10FFFF */

    EXPECT_DECODE(t, " helloé", 22, 4, 5);
    EXPECT_DECODE(t, "\xef\xbf\xbd", 4);
    EXPECT_DECODE(t, "\xef\xbf\xbdhello", 4, 21);
    EXPECT_DECODE(t, "<bos><start_of_turn>hello", 2, 29, 21);
    EXPECT_DECODE(t, "hello", 999, 21, -5); /* ids outside the vocabulary are skipped */
    EXPECT_DECODE(t, "  ", 28);
    EXPECT_DECODE(t, "<st  ", 32, 10, 10);
    /* A run of byte tokens that is not valid UTF-8 as a whole: one U+FFFD per byte. */
    EXPECT_DECODE(t, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 6,
                  7, 8, 9, 6, 7);
    char *empty = tokenizer_decode(t, NULL, 0);
    EXPECT(empty && empty[0] == '\0');
    free(empty);

    EXPECT(tokenizer_vocab_size(t) == 33);
    EXPECT(tokenizer_bos_id(t) == 2 && tokenizer_eos_id(t) == 1);
    EXPECT(tokenizer_pad_id(t) == 0 && tokenizer_unk_id(t) == 3);
    EXPECT(tokenizer_is_special(t, 29) && !tokenizer_is_special(t, 27) &&
           !tokenizer_is_special(t, 999));
    EXPECT(!strcmp(tokenizer_piece(t, 21), "hello") && tokenizer_piece(t, 999) == NULL);
    EXPECT(tokenizer_piece(t, -1) == NULL && !strcmp(tokenizer_piece(t, 32), "<st"));
    EXPECT(tokenizer_find(t, "<st") == 32 && tokenizer_find(t, "hello") == 21);
    EXPECT(tokenizer_find(t, "nope") == -1);
    tokenizer_free(t);
}

static void test_llama_layout(void) {
    tokenizer *t = load("tiny_llama.json");
    EXPECT_IDS(t, "hello", 0, 12);
    EXPECT_IDS(t, "hello hello", 0, 12, 12);
    EXPECT_IDS(t, "zz", 0, 3, 0, 0);                    /* fuse_unk false: one <unk> per char */
    EXPECT_IDS(t, "hello <mask> hello", 0, 12, 14, 12); /* lstrip and rstrip eat the spaces */
    EXPECT_IDS(t, "hello  <mask>", 0, 12, 14);
    EXPECT_IDS(t, "<mask>", 0, 14);
    EXPECT_IDS(t, "hello xx", 0, 12, 15); /* normalized token, matched as "▁xx" */
    EXPECT_IDS(t, "xx", 0, 15);
    EXPECT_IDS(t, "helloxx", 0, 12, 13, 13); /* "xx" without its "▁" is not the token */
    EXPECT_IDS(t, " hello", 0, 3, 12);
    EXPECT_IDS(t, "hello", 1, 1, 12);
    EXPECT_DECODE(t, "hello xx hello", 12, 15, 12);
    EXPECT_DECODE(t, "hello<mask>", 12, 14);
    EXPECT_DECODE(t, "<s> hello", 1, 12);
    EXPECT_DECODE(t, " hello", 3, 12); /* Strip removes one leading space only */
    EXPECT(tokenizer_bos_id(t) == 1 && tokenizer_eos_id(t) == 2 && tokenizer_unk_id(t) == 0);
    EXPECT(tokenizer_pad_id(t) == -1 && tokenizer_vocab_size(t) == 16);
    tokenizer_free(t);
}

static void test_metaspace_layout(void) {
    tokenizer *t = load("tiny_metaspace.json");
    EXPECT_IDS(t, "ab ab", 0, 4, 4);
    EXPECT_IDS(t, "ab-ab", 0, 4, 5, 6); /* "first": only the piece at offset 0 gets "▁" */
    EXPECT_IDS(t, "abab", 0, 7);        /* ignore_merges: "▁abab" is in the vocabulary */
    EXPECT_IDS(t, "zab", 0, 0, 6);      /* no unk token: 'z' is dropped */
    EXPECT_IDS(t, "-", 0, 0, 5);
    EXPECT_IDS(t, "ab--ab", 0, 4, 5, 5, 6);
    EXPECT_IDS(t, " ab", 0, 4);
    EXPECT_IDS(t, "a b", 0, 3, 0, 2);
    EXPECT_ENCODE_ERROR(t, "ab", 2, 1); /* no BOS token in this file */
    EXPECT_DECODE(t, "ab ab", 4, 4);
    EXPECT_DECODE(t, " ab", 0, 0, 6);
    EXPECT_DECODE(t, "- ab", 5, 4);
    EXPECT(tokenizer_bos_id(t) == -1 && tokenizer_unk_id(t) == -1);
    tokenizer_free(t);
}

/* Long words: Gemma's pre-tokenizer never splits, so a whole line is one BPE word. */
static void test_long_input(void) {
    tokenizer *t = load("tiny_gemma.json");
    enum { N = 200000 };
    char *text = xmalloc(6 * N + 1);
    for (int i = 0; i < N; i++)
        memcpy(text + 6 * i, "hello ", 6);
    text[6 * N - 1] = '\0'; /* "hello hello ... hello" */
    int *ids;
    int n = tokenizer_encode(t, text, strlen(text), 0, &ids);
    int ok = n == N && ids[0] == 21;
    for (int i = 1; ok && i < n; i++)
        ok = ids[i] == 22;
    EXPECT(ok);
    char *back = tokenizer_decode(t, ids, n);
    EXPECT(!strcmp(back, text));
    free(back);
    free(ids);

    memset(text, 'a', 100001);
    text[100001] = '\0';
    n = tokenizer_encode(t, text, 100001, 0, &ids);
    ok = n == 50001 && ids[n - 1] == 15;
    for (int i = 0; ok && i < n - 1; i++)
        ok = ids[i] == 26;
    EXPECT(ok);
    free(ids);
    free(text);
    tokenizer_free(t);
}

/* A loaded tokenizer is read-only: many threads may encode with it at once. */
static void test_threads(void) {
    tokenizer *t = load("tiny_gemma.json");
    static const char *texts[] = {"hello é😀 zz", "<start_of_turn>hello\n", "aaa abc", "  w hello"};
    int *want[4], nwant[4], bad = 0;
    for (int k = 0; k < 4; k++)
        nwant[k] = tokenizer_encode(t, texts[k], strlen(texts[k]), 1, &want[k]);
#pragma omp parallel for reduction(+ : bad)
    for (int i = 0; i < 4000; i++) {
        int k = i % 4, *ids;
        int n = tokenizer_encode(t, texts[k], strlen(texts[k]), 1, &ids);
        bad += n != nwant[k] || memcmp(ids, want[k], (size_t)n * sizeof *ids) != 0;
        free(ids);
    }
    EXPECT(bad == 0);
    for (int k = 0; k < 4; k++)
        free(want[k]);
    tokenizer_free(t);
}

/* Load a tokenizer from JSON text, written to a memfd and read through /proc/self/fd. */
static tokenizer *load_string(const char *json) {
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("test_tokenizer.json", 0);
        if (fd < 0) die("memfd_create failed");
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    size_t n = strlen(json);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, json, n, 0) != (ssize_t)n) die("cannot write %s", path);
    char err[512];
    tokenizer *t = tokenizer_load(path, err, sizeof err);
    if (!t) die("%s", err);
    return t;
}

/* Split's five behaviours, each with and without invert, on one pattern ("--") and a BPE
 * whose merges would cross the split points: the ids show where the splits fell. */
static void test_split_behaviours(void) {
    static const char *texts[] = {"a--b", "a----b", "--a--", "ab", "a-b", "a---b", "----"};
    static const struct {
        const char *behavior;
        int invert;
        int ids[7][5]; /* -1 ends each list */
    } cases[] = {
        {"Removed", 0, {{0, 1, -1}, {0, 1, -1}, {0, -1}, {6, -1}, {3, 1, -1}, {0, 4, -1}, {-1}}},
        {"Removed", 1, {{5, -1}, {5, 5, -1}, {5, 5, -1}, {-1}, {-1}, {5, -1}, {5, 5, -1}}},
        {"Isolated",
         0,
         {{0, 5, 1, -1},
          {0, 5, 5, 1, -1},
          {5, 0, 5, -1},
          {6, -1},
          {3, 1, -1},
          {0, 5, 4, -1},
          {5, 5, -1}}},
        {"Isolated",
         1,
         {{0, 5, 1, -1},
          {0, 5, 5, 1, -1},
          {5, 0, 5, -1},
          {6, -1},
          {3, 1, -1},
          {0, 5, 4, -1},
          {5, 5, -1}}},
        {"MergedWithPrevious",
         0,
         {{3, 2, 1, -1},
          {3, 2, 5, 1, -1},
          {5, 3, 2, -1},
          {6, -1},
          {3, 1, -1},
          {3, 2, 4, -1},
          {5, 5, -1}}},
        {"MergedWithPrevious",
         1,
         {{0, 2, 4, -1},
          {0, 5, 2, 4, -1},
          {5, 0, 5, -1},
          {6, -1},
          {3, 1, -1},
          {0, 5, 4, -1},
          {5, 5, -1}}},
        {"MergedWithNext",
         0,
         {{0, 2, 4, -1},
          {0, 5, 2, 4, -1},
          {5, 0, 5, -1},
          {6, -1},
          {3, 1, -1},
          {0, 5, 4, -1},
          {5, 5, -1}}},
        {"MergedWithNext",
         1,
         {{3, 2, 1, -1},
          {3, 2, 5, 1, -1},
          {5, 3, 2, -1},
          {6, -1},
          {3, 1, -1},
          {3, 2, 4, -1},
          {5, 5, -1}}},
        {"Contiguous",
         0,
         {{0, 5, 1, -1},
          {0, 5, 5, 1, -1},
          {5, 0, 5, -1},
          {6, -1},
          {3, 1, -1},
          {0, 5, 4, -1},
          {5, 5, -1}}},
        {"Contiguous",
         1,
         {{0, 5, 1, -1},
          {0, 5, 5, 1, -1},
          {5, 0, 5, -1},
          {6, -1},
          {3, 1, -1},
          {0, 5, 4, -1},
          {5, 5, -1}}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char *json = xasprintf(
            "{\"added_tokens\": [], \"normalizer\": null, \"decoder\": {\"type\": \"Fuse\"},"
            " \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \"--\"},"
            " \"behavior\": \"%s\", \"invert\": %s},"
            " \"model\": {\"type\": \"BPE\", \"unk_token\": null,"
            " \"vocab\": {\"a\": 0, \"b\": 1, \"-\": 2, \"a-\": 3, \"-b\": 4, \"--\": 5, \"ab\": "
            "6},"
            " \"merges\": [[\"a\", \"-\"], [\"-\", \"b\"], [\"-\", \"-\"], [\"a\", \"b\"]]}}",
            cases[c].behavior, cases[c].invert ? "true" : "false");
        tokenizer *t = load_string(json);
        free(json);
        for (int k = 0; k < 7; k++) {
            int nwant = 0;
            while (cases[c].ids[k][nwant] >= 0)
                nwant++;
            char label[128];
            snprintf(label, sizeof label, "%s (Split %s, invert %d)", texts[k], cases[c].behavior,
                     cases[c].invert);
            int *ids;
            int got = tokenizer_encode(t, texts[k], strlen(texts[k]), 0, &ids);
            if (got != nwant ||
                (got > 0 && memcmp(ids, cases[c].ids[k], (size_t)got * sizeof *ids))) {
                fprintf(stderr, "%s:%d: encode(\"%s\") differs\n", __FILE__, __LINE__, label);
                print_ids("want", cases[c].ids[k], nwant);
                if (got >= 0) print_ids("got ", ids, got);
                failures++;
            }
            free(ids);
        }
        tokenizer_free(t);
    }
}

/* The Strip normalizer (Unicode whitespace, each side on its own) and the Strip decoder
 * with a stop count. (The library panics when the decoder's start and stop cuts overlap
 * within one token; we cut no more than the token, so only the cases it survives are here.) */
static void test_strip(void) {
    static const char *texts[] = {" a ", "\u3000\ta a\t ", "a", "  ", " a  a "};
    static const struct {
        const char *left, *right;
        int ids[5][5]; /* -1 ends each list */
    } cases[] = {
        {"true", "true", {{0, -1}, {0, 2, -1}, {0, -1}, {-1}, {3, 2, -1}}},
        {"true", "false", {{3, -1}, {0, 2, 5, 1, -1}, {0, -1}, {-1}, {3, 2, 1, -1}}},
        {"false", "true", {{2, -1}, {4, 5, 0, 2, -1}, {0, -1}, {-1}, {2, 1, 2, -1}}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char *json = xasprintf(
            "{\"added_tokens\": [], \"pre_tokenizer\": null, \"normalizer\": {\"type\": "
            "\"Sequence\","
            " \"normalizers\": [{\"type\": \"Strip\", \"strip_left\": %s, \"strip_right\": %s},"
            " {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\u2581\"}]},"
            " \"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\","
            " \"pattern\": {\"String\": \"\u2581\"}, \"content\": \" \"}, {\"type\": \"Strip\","
            " \"content\": \" \", \"start\": 1, \"stop\": 1}, {\"type\": \"Fuse\"}]},"
            " \"model\": {\"type\": \"BPE\", \"unk_token\": null, \"vocab\": {\"a\": 0,"
            " \"\u2581\": 1, \"\u2581a\": 2, \"a\u2581\": 3, \"\u3000\": 4, \"\\t\": 5},"
            " \"merges\": [[\"\u2581\", \"a\"], [\"a\", \"\u2581\"]]}}",
            cases[c].left, cases[c].right);
        tokenizer *t = load_string(json);
        free(json);
        for (int k = 0; k < 5; k++) {
            int nwant = 0;
            while (cases[c].ids[k][nwant] >= 0)
                nwant++;
            expect_ids_at(__LINE__, t, texts[k], 0, cases[c].ids[k], nwant);
        }
        if (c == 0) {
            EXPECT_DECODE(t, "aa", 2, 2);
            EXPECT_DECODE(t, "aa", 3, 2);
            EXPECT_DECODE(t, "aaa", 0, 3, 3);
            EXPECT_DECODE(t, "aa", 2, 3);
        }
        tokenizer_free(t);
    }
}

/* The Metaspace decoder under each prepend scheme: in the first token every "▁" is dropped
 * (the library's rule, not only a leading one), unless the scheme is "never". */
static void test_metaspace_decoder(void) {
    static const char *schemes[] = {"always", "first", "never"};
    static const char *want[3][5] = {{"a", "ab ", "a  ", "a b", "aba b"},
                                     {"a", "ab ", "a  ", "a b", "aba b"},
                                     {"  a", "a b ", "a  ", " a b", "a ba b"}};
    static const int ids[5][2] = {{2, 0}, {3, 1}, {0, 2}, {1, 3}, {3, 3}};
    for (int s = 0; s < 3; s++) {
        char *json = xasprintf(
            "{\"added_tokens\": [], \"normalizer\": null,"
            " \"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"\u2581\","
            " \"prepend_scheme\": \"%s\", \"split\": false},"
            " \"decoder\": {\"type\": \"Metaspace\", \"replacement\": \"\u2581\","
            " \"prepend_scheme\": \"%s\", \"split\": false},"
            " \"model\": {\"type\": \"BPE\", \"unk_token\": null, \"vocab\": {\"a\": 0,"
            " \"\u2581\": 1, \"\u2581\u2581\": 2, \"a\u2581b\": 3, \"b\": 4, \"a\u2581\": 5},"
            " \"merges\": [[\"\u2581\", \"\u2581\"], [\"a\", \"\u2581\"], [\"a\u2581\", \"b\"]]}}",
            schemes[s], schemes[s]);
        tokenizer *t = load_string(json);
        free(json);
        for (int k = 0; k < 5; k++)
            expect_decode_at(__LINE__, t, ids[k], 2, want[s][k]);
        if (s < 2) {
            EXPECT_IDS(t, "a b", 0, 1, 3);
            EXPECT_IDS(t, "a  b ", 0, 1, 0, 2, 4, 1);
        } else {
            EXPECT_IDS(t, "a b", 0, 3);
            EXPECT_IDS(t, "a  b ", 0, 0, 2, 4, 1);
        }
        EXPECT_IDS(t, " a b", 0, 1, 3);
        EXPECT_IDS(t, "  a", 0, 2, 0);
        tokenizer_free(t);
    }
}

/* single_word and lstrip added tokens, and no decoder (pieces joined with spaces). */
static void test_single_word(void) {
    tokenizer *t = load_string(
        "{\"added_tokens\": [{\"id\": 9, \"content\": \"hey\", \"single_word\": true,"
        " \"normalized\": false}, {\"id\": 10, \"content\": \"<x>\", \"lstrip\": true,"
        " \"normalized\": false, \"special\": true}], \"normalizer\": null, \"decoder\": null,"
        " \"model\": {\"type\": \"BPE\", \"unk_token\": \"?\", \"fuse_unk\": true, \"vocab\":"
        " {\"?\": 0, \"h\": 1, \"i\": 2, \" \": 3, \"!\": 4, \"_\": 5, \"e\": 6, \"y\": 7,"
        " \"hi\": 8}, \"merges\": [[\"h\", \"i\"]]}}");
    EXPECT_IDS(t, "hey there", 0, 9, 3, 0, 1, 6, 0, 6);
    EXPECT_IDS(t, "they", 0, 0, 1, 6, 7);
    EXPECT_IDS(t, "hey!", 0, 9, 4);
    EXPECT_IDS(t, "hey_", 0, 1, 6, 7, 5);
    EXPECT_IDS(t, "heyhey", 0, 1, 6, 7, 1, 6, 7);
    EXPECT_IDS(t, "hey hey", 0, 9, 3, 9);
    EXPECT_IDS(t, "heyé", 0, 1, 6, 7, 0);
    EXPECT_IDS(t, "é hey", 0, 0, 3, 9);
    EXPECT_IDS(t, "hey—x", 0, 9, 0);
    EXPECT_IDS(t, "a <x>", 0, 0, 10);
    EXPECT_IDS(t, "hey  <x>hey", 0, 9, 10, 9);
    EXPECT_IDS(t, "\u3000<x>", 0, 10);
    EXPECT_IDS(t, "\t\n <x>", 0, 10);
    EXPECT_DECODE(t, "hey   ? h e ? e", 9, 3, 0, 1, 6, 0, 6);
    EXPECT_DECODE(t, "hey <x> hey", 9, 10, 9);
    tokenizer_free(t);
}

static void test_load_errors(void) {
    EXPECT_LOAD_ERROR("missing.json", "missing.json");
    EXPECT_LOAD_ERROR("bad_syntax.json", "not valid JSON (near line");
    EXPECT_LOAD_ERROR("bad_model_type.json", "model.type: \"WordPiece\" is not supported");
    EXPECT_LOAD_ERROR("bad_regex.json", "pre_tokenizer.pretokenizers[0].pattern: Regex patterns");
    EXPECT_LOAD_ERROR("bad_merge.json", "model.merges[3]: \"q\" is not in model.vocab");
    EXPECT_LOAD_ERROR("bad_merge_string.json", "model.merges[1]: expected");
    EXPECT_LOAD_ERROR("bad_normalizer.json", "normalizer.normalizers[1]: normalizer type \"NFC\"");
    EXPECT_LOAD_ERROR("bad_added.json", "added_tokens[1]: missing \"content\"");
    EXPECT_LOAD_ERROR("bad_unk.json", "model.unk_token: \"<unk>\" is not in model.vocab");
    EXPECT_LOAD_ERROR("bad_vocab.json", "model.vocab[\"a\"]: expected a non-negative integer id");
    EXPECT_LOAD_ERROR("bad_decoder.json", "decoder: decoder type \"ByteLevel\" is not supported");
    EXPECT_LOAD_ERROR("bad_duplicate_id.json", "model.vocab: id 1 is given to both");
    EXPECT_LOAD_ERROR("bad_behavior.json", "behavior: unknown value \"Sideways\"");
    EXPECT_LOAD_ERROR("bad_huge_id.json", "added_tokens[0].id: expected a non-negative integer");
    EXPECT_LOAD_ERROR("bad_huge_vocab_id.json", "id 100000000 is past the limit of 16777216 ids");
}

int main(void) {
    util_progname = "test_tokenizer";
    test_gemma_layout();
    test_llama_layout();
    test_metaspace_layout();
    test_long_input();
    test_threads();
    test_split_behaviours();
    test_strip();
    test_metaspace_decoder();
    test_single_word();
    test_load_errors();
    return test_exit("test_tokenizer");
}
