/* assistant.h: Gemma 4's multi-token-prediction drafter (model_type gemma4_assistant), loaded
 * from its own Hugging Face folder and run against a target decoder's KV cache.
 *
 * What it is (transformers 5.17, Gemma4AssistantForCausalLM, driven by
 * SinglePositionMultiTokenCandidateGenerator): a small Gemma 4 text model whose layers are all
 * query-only - they attend to the KV cache of the target's last sliding and last full
 * non-shared layer instead of computing their own. With the target's cache holding positions
 * 0..P-1, the newest token x at position P (not yet run through the target) and h the target's
 * last hidden state (after its final norm) at position P-1, one draft step is
 *
 *     in   = pre_projection([target_embed(x) * sqrt(H_target), h])
 *     hn   = final_norm(layers(in))          query position P for RoPE; no KV of its own
 *     h'   = post_projection(hn)             fed to the next step in place of h
 *     next = argmax of the head on hn        the centroid-masked head when use_ordered_embeddings
 *
 * and every later step keeps position P (the drafter never sees its own tokens as KV). The
 * centroid-masked head scores num_centroids clusters with a linear layer, keeps the top
 * CENTROID_TOP_K, and computes exact logits only for the tokens of those clusters (token_ordering
 * lists the vocabulary cluster by cluster); all other tokens lose. No softcapping (the
 * reference applies none to the drafter).
 *
 * Masks, as the reference builds them (create_attention_masks, bidirectional masks over the
 * shared KV): full layers see every cached position 0..P-1; sliding layers see the last
 * sliding_window + 1 of them (transformers' bidirectional sliding overlay is |q - kv| <= W, then
 * flipped to the past). Where the target's own sliding window W_t is smaller, the target's
 * sliding KV state after a one-token step holds only W_t positions, so we take
 * min(W_assistant + 1, W_t): the drafter never reads what the target itself has dropped.
 *
 * One difference from transformers' loop, on purpose: after a partially accepted verify,
 * transformers crops the shared KV by sequence length, which leaves the rejected draft's KV
 * at position P visible to the next round; we roll the cache back first, so the drafter always
 * sees exactly positions < P. Proposals may differ in that case, served tokens never do (the
 * target verifies every draft). */
#ifndef ASSISTANT_H
#define ASSISTANT_H

#include <stddef.h>

#include "engine.h"
#include "model.h"

typedef struct {
    tensor input_norm;     /* input_layernorm [hidden] */
    tensor q_proj;         /* self_attn.q_proj [n_heads * head_dim, hidden] */
    tensor q_norm;         /* self_attn.q_norm [head_dim] */
    tensor o_proj;         /* self_attn.o_proj [hidden, n_heads * head_dim] */
    tensor post_attn_norm; /* post_attention_layernorm [hidden] */
    tensor pre_ffn_norm;   /* pre_feedforward_layernorm [hidden] */
    tensor gate_proj;      /* mlp.gate_proj [intermediate, hidden] */
    tensor up_proj;        /* mlp.up_proj [intermediate, hidden] */
    tensor down_proj;      /* mlp.down_proj [hidden, intermediate] */
    tensor post_ffn_norm;  /* post_feedforward_layernorm [hidden] */
    float layer_scalar;    /* layer_scalar (1 when absent) */
} assistant_layer;

typedef struct {
    model_config config; /* text_config, derived by model_config_derive (layer types, head dims) */
    int backbone_hidden; /* backbone_hidden_size: the target's hidden size */
    int ordered;         /* use_ordered_embeddings: the centroid-masked head */
    int n_centroids;     /* num_centroids */
    int default_top_k;   /* centroid_intermediate_top_k from config.json */
    int per_centroid;    /* vocab / num_centroids tokens per cluster */

    tensor pre_proj;         /* pre_projection [hidden, 2 * backbone_hidden] */
    tensor post_proj;        /* post_projection [backbone_hidden, hidden] */
    tensor final_norm;       /* model.norm [hidden] */
    tensor lm_head;          /* lm_head [vocab, hidden] (model.embed_tokens when tied) */
    tensor centroids;        /* masked_embedding.centroids [n_centroids, hidden]; ordered only */
    int *token_ordering;     /* [vocab] masked_embedding.token_ordering; ordered only */
    tensor head_by_cluster;  /* [vocab, hidden] lm_head rows in token_ordering order, so the
                                tokens of cluster c are rows c*per_centroid.. (owned copy) */
    assistant_layer *layers; /* [config.n_layers] */
    void *storage;           /* mmapped checkpoint and owned buffers */
} assistant;

/* Load a gemma4_assistant folder (config.json + model.safetensors). NULL on error, with a
 * message naming the file and the key or tensor. */
assistant *assistant_load(const char *dir, char *err, size_t errlen);
void assistant_free(assistant *a);

/* Whether a fits the target m: backbone width, vocabulary, and for each layer type the
 * target's KV source layer with the same head_dim and kv-head count. Returns 0 or -1 with err. */
int assistant_check_target(const assistant *a, const model *m, char *err, size_t errlen);

/* A drafter: an assistant bound to one target decoder (its backend, KV cache and hidden rows),
 * with its own scratch buffers. top_k: clusters scored (CENTROID_TOP_K; 0 = config's). */
typedef struct drafter drafter;
drafter *drafter_new(const assistant *a, decoder *d, int top_k, char *err, size_t errlen);
void drafter_free(drafter *dr);

/* Start a draft round: take row `row` of the decoder's last forward (its final-normed hidden
 * state, the one that produced the pending token) as h. */
void drafter_begin(drafter *dr, int row);

/* One draft step for token x at query position pos (the target's cache holds 0..pos-1):
 * returns the proposed token and carries h forward. When ids/scores are non-NULL they receive
 * the scored tokens and their logits (in head order; *n_scored of them: top_k * per_centroid
 * for the masked head, vocab otherwise) - for tests; the head then runs the reference way
 * (scores to the host) on every backend, else on the device where the backend can. */
int drafter_step(drafter *dr, int x, int pos, int *ids, float *scores, int *n_scored);

/* Most steps one drafter_draft call chains. */
#define DRAFTER_MAX_STEPS 16

/* A whole draft round: drafter_begin(row), then k (1..DRAFTER_MAX_STEPS) chained steps from
 * token x at query position pos, the proposals into out[k]; returns k. On a backend with
 * draft_head and embed_dev (CUDA) the k steps run on the device with no host round trip, as
 * one recorded step of the backend (a CUDA graph once it has been seen twice), and the k
 * tokens come back in one download; elsewhere it is k drafter_step calls. The tokens are the
 * greedy picks of the same head either way (up to rounding: the device sums in another order). */
int drafter_draft(drafter *dr, int row, int x, int pos, int k, int *out);

/* The projected hidden state h' of the last step (backbone_hidden floats), for tests. */
void drafter_projected(const drafter *dr, float *out);

/* Clusters the head scores (CENTROID_TOP_K, or the config's value). */
int drafter_top_k(const drafter *dr);

/* The attention window the drafter's sliding layers use with this decoder (see above). */
int drafter_sliding_window(const drafter *dr);

#endif
