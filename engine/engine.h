/* engine.h: the engine's public API, between the model code (model loading, forward pass,
 * backends) and its users (the `engine` command: bench, generate, ppl; the serving loop; tests).
 *
 * A model is the read-only part: config and weights (mmapped from safetensors). A decoder
 * is one stream over a model: its KV cache, its scratch buffers and its knobs. Single
 * stream is the product's whole point, so there is no batch dimension anywhere; the only
 * multi-token calls are prefill, teacher-forced scoring and speculative verify, which all run
 * n consecutive positions of the one stream.
 */
#ifndef ENGINE_H
#define ENGINE_H

#include <stddef.h>

#include "quant.h"

typedef struct {
    int sliding_window; /* SLIDING_WINDOW: window of the sliding layers; 0 = native (config) */
    int max_model_len;  /* MAX_MODEL_LEN: KV cache capacity in positions; 0 = config's max */
    int n_threads;      /* OpenMP threads for the CPU backend; 0 = OpenMP's default */
    const char *device; /* ENGINE_DEVICE: "cpu" (NULL or "" too) or "cuda" (engines built with
                           CUDA; elsewhere decoder_new refuses it with a clear message) */
} engine_options;

typedef struct model model;
typedef struct decoder decoder;

/* Load a Hugging Face model folder (config.json + model.safetensors[.index.json]).
 * NULL on error, with a message naming the file and the problem in err. */
model *model_load(const char *dir, char *err, size_t errlen);
/* model_load with the linear layers of the decoder (q/k/v/o/gate/up/down of every layer; not
 * embeddings, norms, per-layer projections or the head) held as weight_dtype with weight_group
 * columns per scale (WEIGHT_DTYPE / WEIGHT_GROUP; group 0 = 32). QUANT_BF16 keeps them as stored.
 * A pre-quantized compressed-tensors checkpoint (config.json quantization_config, ctensors.h)
 * loads as it is stored; weight_dtype / weight_group must then be unset (bf16 / 0) or agree
 * with it. A matrix whose input columns the group does not divide is refused, naming it. */
model *model_load_prec(const char *dir, quant_dtype weight_dtype, int weight_group, char *err,
                       size_t errlen);
void model_free(model *m);
int model_vocab_size(const model *m);
int model_native_window(const model *m);
int model_max_positions(const model *m);
int model_bos_id(const model *m);
quant_dtype model_weight_dtype(const model *m); /* linear layers as held (QUANT_BF16: stored) */
int model_weight_group(const model *m);         /* their group; 0 when not quantized */
/* Bytes of weights one decode step reads (for bandwidth floors in benchmarks). */
size_t model_bytes_per_token(const model *m);

decoder *decoder_new(const model *m, const engine_options *opt, char *err, size_t errlen);
void decoder_free(decoder *d);
void decoder_reset(decoder *d); /* empty the KV cache: next token is at position 0 */
/* decoder_reset for a sequence that will hold at most horizon positions (its prompt and the
 * tokens to generate; 0: unknown). A backend may run faster kernels for a sequence much shorter
 * than max_model_len (on a GPU: the full-attention layers of a long cache as one kernel); the
 * results depend on the horizon only in the last bits and never within a sequence, and a
 * sequence that runs past its horizon stays correct, only slower. */
void decoder_begin(decoder *d, int horizon);
int decoder_pos(const decoder *d); /* tokens in the cache so far */

/* Run tokens[0..n) at positions pos..pos+n-1, appending them to the cache. For every i with
 * i >= logits_from, the final (softcapped) logits of position pos+i are written to
 * logits[(i - logits_from) * vocab]; logits may be NULL (prefill only). Returns 0, or -1
 * when the cache would exceed max_model_len (nothing is appended then). */
int decoder_forward(decoder *d, const int *tokens, int n, float *logits, int logits_from);
/* (decoder_forward also returns -2, appending nothing, when a token id lies outside the
 * vocabulary or the per-layer-embedding table.) */

/* As decoder_forward with logits for the last position only, but what comes back is their
 * argmax (the first maximum, as torch.argmax), taken where the logits are: on a GPU nothing
 * but the token id crosses to the host. n >= 1. Returns 0, -1 or -2 as decoder_forward. */
int decoder_forward_argmax(decoder *d, const int *tokens, int n, int *next);

/* Roll the cache back to pos (<= decoder_pos), dropping later positions, e.g. rejected
 * speculative tokens. Returns 0, or -1 when pos is out of range or a sliding layer's ring
 * no longer holds what the rollback needs (more than DECODER_CHUNK - 1 positions back). */
int decoder_truncate(decoder *d, int pos);
/* The hidden state (hidden_size floats) of the last position of the last decoder_forward
 * call, into out: after the final norm (transformers' last_hidden_state, what lm_head reads)
 * when final_norm, else the residual stream before it. Returns -1 when there is none (after
 * reset / truncate). */
int decoder_last_hidden(const decoder *d, float *out, int final_norm);
const char *decoder_backend_name(const decoder *d); /* "cpu", ... */
int decoder_max_len(const decoder *d);              /* KV capacity actually used */
int decoder_sliding_window(const decoder *d);       /* window of the sliding layers actually used */

#endif
