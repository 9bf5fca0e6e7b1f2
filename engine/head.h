/* head.h: the target's greedy head - the lm_head, or the pruned lm_head LM_HEAD_KEEPSET asks for.
 *
 * A keepset file (keepset.txt beside the model) lists token ids, one per line, most frequent
 * first; lines starting with '#' are comments. LM_HEAD_KEEPSET=N keeps the first N: the head
 * then has only those N rows, for the greedy argmax and for perplexity alike (the challenge's
 * pruned head), so a perplexity target outside the set has probability zero and makes ppl
 * infinite - reported beside ppl as coverage.
 *
 * The head works on the final-normed hidden rows the decoder's last forward left behind
 * (decoder.h: d->hidden), so one verify pass of k+1 positions costs one head pass over k+1
 * rows. With a keepset the kept rows are copied once, in ascending id order, into a compact
 * [N, hidden] tensor, so the head reads N rows only; ascending ids keep "first maximum wins"
 * equal to torch.argmax over the full masked vocabulary. The argmax is the backend's fused
 * matmul_argmax where it has one (the CPU backend: each score is computed, softcapped and
 * compared in registers; no logits are stored, not even the N kept ones), else matmul, softcap
 * and argmax over the N scores. Softcapping is applied as the target applies it (tanh can tie
 * two close logits; the tie then goes to the smaller id, as it would in the full head).
 *
 * The full head's greedy token after a single position is the decoder's own last step
 * (decoder_forward_argmax: the lm_head and its argmax inside the step the backend may record
 * as one graph); every path computes the same scores, so the choice is the same token. */
#ifndef HEAD_H
#define HEAD_H

#include <stddef.h>

#include "dataset.h"
#include "engine.h"
#include "quant.h"
#include "ppl.h"

typedef struct {
    int n;          /* kept ids */
    int vocab;      /* the model's vocabulary */
    int *ids;       /* [n] kept token ids, ascending */
    int *index;     /* [vocab] position of a token in ids, or -1 when it is not kept */
    int file_count; /* ids the file lists in all */
} keepset;

/* Read the first n ids of a keepset file for a vocabulary of `vocab` tokens. Every line must be
 * a comment, empty, or one id in [0, vocab) not seen before; n must be between 1 and the
 * number of ids listed. Returns 0, or -1 with err naming the file (and line). */
int keepset_load(const char *path, int n, int vocab, keepset *ks, char *err, size_t errlen);
void keepset_free(keepset *ks);

/* Share of the perplexity records' target tokens inside the keepset (1 when there are none);
 * *outside gets how many are not. */
double keepset_coverage(const keepset *ks, const ppl_set *pp, long *outside);

/* The greedy head of a decoder: the full lm_head, or its keepset rows. */
typedef struct head head;
head *head_new(decoder *d, const keepset *ks /* NULL: full vocabulary */);
/* head_new with the head's rows (the kept ones) held as dtype (HEAD_DTYPE) with group columns
 * per scale (WEIGHT_GROUP). A quantized full head scores through its own copy, not the
 * decoder's lm_head (so head_forward_argmax then never takes the decoder's own step). NULL with
 * err when the group does not divide hidden_size. */
head *head_new_prec(decoder *d, const keepset *ks, quant_dtype dtype, int group, char *err,
                    size_t errlen);
void head_free(head *h);
int head_quantized(const head *h);     /* rows held as int8 / int4 */
quant_dtype head_dtype(const head *h); /* what they are held as */
size_t head_bytes(const head *h);      /* bytes of the rows one greedy step reads */

/* Greedy tokens of rows [from, from + n) of the decoder's last forward call (its last chunk),
 * into out[n]. */
void head_argmax(head *h, int from, int n, int *out);

/* Run tokens[0..n) through the decoder (appending them to its cache) and put the greedy tokens
 * after its last `rows` positions into out[rows]; those rows must lie in the last chunk the
 * decoder runs (decoder_forward cuts n into chunks of DECODER_CHUNK). Returns 0, or
 * decoder_forward's error code (nothing appended). */
int head_forward_argmax(head *h, const int *tokens, int n, int rows, int *out);

/* Teacher-forced perplexity of pp through the decoder and this head (ppl.h's definition; a
 * target outside the keepset counts as non-finite). max_len as in ppl_score. */
int head_ppl_score(head *h, int max_len, const ppl_set *pp, ppl_total *out, char *err,
                   size_t errlen);

#endif
