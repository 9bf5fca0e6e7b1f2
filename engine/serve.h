/* serve.h: what the engine serves with, built from its knobs - the one road from the knobs
 * (knobs.h) to the decoder, the head and the serving loop.
 *
 * serve_open reads one knobs struct and opens, over a loaded model:
 *   the decoder   SLIDING_WINDOW, MAX_MODEL_LEN, --threads, ENGINE_DEVICE (engine.h);
 *   the head      LM_HEAD_KEEPSET=N: MODEL_DIR/keepset.txt's first N ids (head.h), for the
 *                 greedy argmax and for perplexity alike; 0: the full lm_head; its rows held
 *                 as HEAD_DTYPE with WEIGHT_GROUP (the model arrives with WEIGHT_DTYPE applied:
 *                 model_load_prec);
 *   the drafter   NUM_SPECULATIVE_TOKENS=k > 0: the gemma4_assistant in --assistant DIR
 *                 (default MODEL_DIR-assistant, beside the model), scoring CENTROID_TOP_K
 *                 clusters (assistant.h); k = 0: none;
 *   the loop      the serving loop over the three (speculate.h): every token bench and
 *                 generate serve comes out of it, k = 0 included.
 * Perplexity is scored through the same decoder and head, so the figure describes exactly the
 * configuration that was timed. serve_result adds the serving figures to the result JSON,
 * the precision and the weight bytes per token among them. */
#ifndef SERVE_H
#define SERVE_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "assistant.h"
#include "dataset.h"
#include "engine.h"
#include "head.h"
#include "knobs.h"
#include "ppl.h"
#include "speculate.h"

typedef struct {
    decoder *d;
    int capacity; /* the decoder's KV capacity in positions */
    int has_keepset;
    keepset ks;
    char *keepset_path;
    assistant *a;
    char *assistant_dir;
    drafter *dr;
    head *h;
    int h_group;   /* WEIGHT_GROUP of a quantized head */
    speculator sp; /* the serving loop: k = NUM_SPECULATIVE_TOKENS drafts per step */
} server;

/* Open what the knobs k ask for over model m (see above). need is the positions the work needs
 * (the longest prompt plus MAX_NEW_TOKENS, the longest perplexity record): the decoder's capacity
 * when MAX_MODEL_LEN is unset, since full-attention caches are allocated at capacity and a
 * 128k-position cache nobody uses would cost gigabytes (attention reads only filled positions,
 * so speed does not depend on it). Returns 0, or -1 with err naming the file or knob at fault
 * (serve_close is still safe then). */
int serve_open(server *s, const model *m, const knobs *k, const char *model_dir,
               const char *assistant_dir, int need, char *err, size_t errlen);
void serve_close(server *s);

/* Perplexity of pp through the server's decoder and head (ppl.h). Returns 0, or -1 with err. */
int serve_ppl(server *s, const ppl_set *pp, ppl_total *out, char *err, size_t errlen);

/* The serving fields of the result JSON o: with speculation the accepted-length figures (and
 * CENTROID_TOP_K under "knobs" as the clusters actually scored); with speculation or a keepset,
 * the draft / verify / other shares of decode_s (the timed decode time; 0: none) and the
 * keepset's coverage of pp's targets (pp may be NULL). */
void serve_result(const server *s, cJSON *o, const ppl_set *pp, double decode_s);

/* Weight bytes one greedy decode step of the target reads: model_bytes_per_token with the head
 * as served (kept rows, HEAD_DTYPE) in place of the full lm_head. */
size_t serve_weight_bytes_per_token(const server *s);

#endif
