/* dataset.h: the two JSONL inputs of the bench protocol, read with cJSON.
 *
 * A prompt set has one object per line: {"id": "...", "prompt_token_ids": [..], "text": "..."}.
 * The token ids are used when present; otherwise the text ("prompt" or "text") is kept for the
 * caller to tokenize with the model's tokenizer. A perplexity record set has one object per line:
 * {"context_token_ids": [..], "target_token_ids": [..]}. In both, blank lines are skipped, and
 * anything else that is not such an object is an error naming the file and the line. A file with
 * no records at all is an error too: a benchmark over nothing must not report a figure.
 *
 * Every record remembers its line, so later checks (a prompt too long for MAX_MODEL_LEN, a token
 * id outside the vocabulary) can name the file and line as well. */
#ifndef DATASET_H
#define DATASET_H

#include <stddef.h>

typedef struct {
    char *id;    /* the record's "id", or "line N" when it has none */
    int line;    /* 1-based line in the file */
    int *tokens; /* [n_tokens] prompt token ids; NULL until known (text-only prompts) */
    int n_tokens;
    char *text; /* the "prompt" or "text" string, or NULL */
} prompt;

typedef struct {
    char *path;
    prompt *items; /* [n] */
    int n;
} prompt_set;

typedef struct {
    int line;
    int *context; /* [n_context] token ids, n_context >= 1 */
    int n_context;
    int *target; /* [n_target] token ids scored after the context, n_target >= 1 */
    int n_target;
} ppl_record;

typedef struct {
    char *path;
    ppl_record *items; /* [n] */
    int n;
    long n_targets; /* total target tokens over all records */
} ppl_set;

/* Load a file. Returns 0, or -1 with err naming the file, line and problem (nothing to free). */
int prompt_set_load(const char *path, prompt_set *ps, char *err, size_t errlen);
void prompt_set_free(prompt_set *ps);
int ppl_set_load(const char *path, ppl_set *pp, char *err, size_t errlen);
void ppl_set_free(ppl_set *pp);

/* Every token id in the set below vocab? Returns 0, or -1 with err naming file and line. */
int prompt_set_check_vocab(const prompt_set *ps, int vocab, char *err, size_t errlen);
int ppl_set_check_vocab(const ppl_set *pp, int vocab, char *err, size_t errlen);

#endif
