/* tokenizer.h: a Hugging Face `tokenizer.json` BPE tokenizer (Gemma style) in plain C.
 *
 * It reads the JSON that the `tokenizers` library writes (with cJSON) and reproduces that
 * library's encode and decode for the components Gemma's file and our own small model use:
 *
 *   text -> added/special tokens split out first (leftmost-longest, lstrip/rstrip)
 *        -> normalizer (Sequence / Replace / Prepend)
 *        -> pre-tokenizer (Sequence / Split on a string / Metaspace)
 *        -> BPE model (merges ranked by order, byte_fallback, unk, fuse_unk, ignore_merges)
 *        -> ids (a <bos> in front when asked)
 *   ids  -> pieces -> decoder (Sequence / Replace / ByteFallback / Fuse / Strip / Metaspace)
 *
 * Anything else in the file (regex patterns, Unicode normalization forms, other models) is
 * refused at load time with a message naming the file and the key, never silently ignored.
 * A loaded tokenizer is read-only: encode and decode may run from several threads at once.
 */
#ifndef TOKENIZER_H
#define TOKENIZER_H

#include <stddef.h>

typedef struct tokenizer tokenizer;

/* Load a tokenizer.json. NULL on error, with a message naming the file and the key in err. */
tokenizer *tokenizer_load(const char *path_to_tokenizer_json, char *err, size_t errlen);
void tokenizer_free(tokenizer *t);

/* Encode len bytes of UTF-8 text (text may be NULL when len is 0). On success *ids_out
 * gets a malloc'd array (the caller frees it; NULL when the count is 0) and the count is
 * returned. With add_bos the special tokens are added as `tokenizers` does with
 * add_special_tokens: the post-processor template's ids around the text (Gemma: <bos>
 * first), or the BOS id in front when the file has no template. Returns -1 when the text is
 * not valid UTF-8, or add_bos is asked of a file with neither (*ids_out is then NULL). */
int tokenizer_encode(const tokenizer *t, const char *text, size_t len, int add_bos, int **ids_out);

/* Decode ids to a malloc'd NUL-terminated UTF-8 string, as the file's decoder says
 * (special tokens included, as `tokenizers` does by default). Ids outside the vocabulary
 * are skipped, and a run of byte tokens that is not valid UTF-8 gives one U+FFFD per byte,
 * both as `tokenizers` does. */
char *tokenizer_decode(const tokenizer *t, const int *ids, int n);

/* The piece (vocabulary string) of an id, NULL when the id has none. */
const char *tokenizer_piece(const tokenizer *t, int id);
/* The id of a piece (model vocabulary or added token), -1 when absent. */
int tokenizer_find(const tokenizer *t, const char *piece);
/* One more than the largest id in the vocabulary and the added tokens. */
int tokenizer_vocab_size(const tokenizer *t);
/* 1 when id is an added token marked "special" (e.g. <bos>, <start_of_turn>), else 0. */
int tokenizer_is_special(const tokenizer *t, int id);

/* Well-known ids, -1 when the file has none. BOS comes from the post-processor's template
 * when there is one, else from a "<bos>"/"<s>" token; EOS from "<eos>"/"</s>". */
int tokenizer_bos_id(const tokenizer *t);
int tokenizer_eos_id(const tokenizer *t);
int tokenizer_pad_id(const tokenizer *t);
int tokenizer_unk_id(const tokenizer *t);

#endif
