/* forward.c: the Gemma 4 text model's forward pass, over one chunk of consecutive positions.
 *
 * It follows transformers' modeling_gemma4.py (Gemma4ForCausalLM -> Gemma4TextModel ->
 * Gemma4TextDecoderLayer -> Gemma4TextAttention / Gemma4TextMLP) top to bottom, written as
 * calls on a backend (backend.h). Where the C departs from the reference it says so:
 *   - everything runs in fp32 (weights are converted inside the matmul), where transformers
 *     runs in the weights' dtype; the scales it rounds to the weight dtype (the embedding
 *     scales) are rounded the same way here (decoder.c);
 *   - the KV cache holds keys after k_norm and RoPE and values after v_norm, as the
 *     reference's cache does; a sliding layer's cache is a ring (decoder.h), and the window
 *     is applied by the attention op rather than by a mask;
 *   - kv-shared layers read their source layer's cache directly: that is what the
 *     reference's shared_kv_states hands them.
 */
#include <math.h>
#include <stdlib.h>

#include "decoder.h"
#include "util.h"

/* Per-layer inputs (PLE), Gemma4TextModel.get_per_layer_inputs + project_per_layer_inputs:
 * (rmsnorm(per_layer_model_projection(embeds) / sqrt(hidden)) + embed_ple(ids)) / sqrt(2),
 * one [n_layers][ple_dim] block per position, into d->ple_in. */
static void per_layer_inputs(decoder *d, const int *tokens, int n) {
    const model_config *c = &d->m->config;
    const model_weights *w = &d->m->weights;
    backend *b = d->b;
    const size_t width = (size_t)c->n_layers * c->ple_dim;

    b->embed(b, d->ple_tmp, &w->embed_ple, tokens, n, d->ple_embed_scale);
    b->matmul(b, d->ple_in, &w->ple_model_proj, d->x, n);
    b->scale(b, d->ple_in, 1.0f / sqrtf((float)c->hidden), (size_t)n * width);
    b->rmsnorm(b, d->ple_in, d->ple_in, &w->ple_proj_norm, n * c->n_layers, c->ple_dim, c->rms_eps);
    b->add(b, d->ple_in, d->ple_in, d->ple_tmp, (size_t)n * width);
    b->scale(b, d->ple_in, 1.0f / sqrtf(2.0f), (size_t)n * width);
}

/* Gemma4TextAttention: d->xn (normed input) -> d->o (o_proj output). */
static void attention_block(decoder *d, int layer, int n) {
    const model_config *c = &d->m->config;
    const layer_config *l = &c->layers[layer];
    const layer_weights *w = &d->m->weights.layers[layer];
    backend *b = d->b;
    const int hd = l->head_dim, kv_dim = l->n_kv_heads * hd;
    const float *inv_freq = l->type == LAYER_SLIDING ? d->inv_freq_sliding : d->inv_freq_full;

    b->matmul(b, d->q, &w->q_proj, d->xn, n);
    b->rmsnorm(b, d->q, d->q, &w->q_norm, n * c->n_heads, hd, c->rms_eps);
    b->rope(b, d->q, n, c->n_heads, hd, d->pos, inv_freq);

    if (!l->kv_shared) {
        b->matmul(b, d->k, &w->k_proj, d->xn, n);
        /* attention_k_eq_v: the values are the raw key projection (before k_norm / RoPE). */
        if (l->k_eq_v)
            b->copy(b, d->v, d->k, (size_t)n * kv_dim);
        else
            b->matmul(b, d->v, &w->v_proj, d->xn, n);
        b->rmsnorm(b, d->k, d->k, &w->k_norm, n * l->n_kv_heads, hd, c->rms_eps);
        b->rope(b, d->k, n, l->n_kv_heads, hd, d->pos, inv_freq);
        b->rmsnorm(b, d->v, d->v, NULL, n * l->n_kv_heads, hd, c->rms_eps); /* v_norm */
        b->kv_write(b, d->k_cache[layer], d->k, n, kv_dim, d->pos, d->cache_len[layer]);
        b->kv_write(b, d->v_cache[layer], d->v, n, kv_dim, d->pos, d->cache_len[layer]);
    }
    /* A kv-shared layer attends over its source layer's cache (shared_kv_states). */
    const int src = l->kv_source;
    b->attention(b, d->att, d->q, d->k_cache[src], d->v_cache[src], n, d->pos, d->cache_len[src],
                 d->window[layer], c->n_heads, l->n_kv_heads, hd);
    b->matmul(b, d->o, &w->o_proj, d->att, n);
}

/* Gemma4TextMLP: down(gelu_tanh(gate(xn)) * up(xn)), d->xn -> d->o. */
static void mlp_block(decoder *d, int layer, int n) {
    const layer_config *l = &d->m->config.layers[layer];
    const layer_weights *w = &d->m->weights.layers[layer];
    backend *b = d->b;
    b->matmul(b, d->gate, &w->gate_proj, d->xn, n);
    b->matmul(b, d->up, &w->up_proj, d->xn, n);
    b->gelu_mul(b, d->gate, d->gate, d->up, n, l->intermediate, l->intermediate);
    b->matmul(b, d->o, &w->down_proj, d->gate, n);
}

/* Gemma4TextDecoderLayer.forward, on the residual stream d->x. */
static void decoder_layer(decoder *d, int layer, int n) {
    const model_config *c = &d->m->config;
    const layer_weights *w = &d->m->weights.layers[layer];
    backend *b = d->b;
    const int H = c->hidden;
    const size_t nh = (size_t)n * H;

    b->rmsnorm(b, d->xn, d->x, &w->input_norm, n, H, c->rms_eps);
    attention_block(d, layer, n);
    b->rmsnorm(b, d->o, d->o, &w->post_attn_norm, n, H, c->rms_eps);
    b->add(b, d->x, d->x, d->o, nh);

    b->rmsnorm(b, d->xn, d->x, &w->pre_ffn_norm, n, H, c->rms_eps);
    mlp_block(d, layer, n);
    b->rmsnorm(b, d->o, d->o, &w->post_ffn_norm, n, H, c->rms_eps);
    b->add(b, d->x, d->x, d->o, nh);

    if (c->ple_dim) {
        /* per_layer_input_gate -> gelu -> * this layer's per-layer input -> projection ->
         * norm -> residual. Row t's input for this layer is at ple_in[t][layer][:]. */
        const int P = c->ple_dim;
        b->matmul(b, d->ple_h, &w->ple_gate, d->x, n);
        b->gelu_mul(b, d->ple_h, d->ple_h, d->ple_in + (size_t)layer * P, n, P, c->n_layers * P);
        b->matmul(b, d->o, &w->ple_proj, d->ple_h, n);
        b->rmsnorm(b, d->o, d->o, &w->ple_post_norm, n, H, c->rms_eps);
        b->add(b, d->x, d->x, d->o, nh);
    }
    if (w->layer_scalar != 1.0f) b->scale(b, d->x, w->layer_scalar, nh);
}

/* The chunk's ops, leaving the logits of its last `rows` rows in d->logits (on the backend). */
static void forward_ops(decoder *d, const int *tokens, int n, int rows) {
    const model_config *c = &d->m->config;
    const model_weights *w = &d->m->weights;
    backend *b = d->b;

    /* Gemma4TextScaledWordEmbedding: embed_tokens(ids) * sqrt(hidden). */
    b->embed(b, d->x, &w->embed, tokens, n, d->embed_scale);
    if (c->ple_dim) per_layer_inputs(d, tokens, n);

    for (int layer = 0; layer < c->n_layers; layer++)
        decoder_layer(d, layer, n);

    b->rmsnorm(b, d->hidden, d->x, &w->final_norm, n, c->hidden, c->rms_eps);

    /* lm_head and final_logit_softcapping, only for the rows asked for. */
    if (rows) {
        const size_t count = (size_t)rows * c->vocab;
        b->matmul(b, d->logits, &w->lm_head, d->hidden + (size_t)(n - rows) * c->hidden, rows);
        if (c->final_softcap > 0) b->softcap(b, d->logits, count, c->final_softcap);
    }
}

int forward_chunk_device(decoder *d, const int *tokens, int n, int logits_from) {
    backend *b = d->b;
    CHECK(n > 0 && n <= DECODER_CHUNK && d->pos + n <= d->max_len);
    const int from = logits_from > 0 ? logits_from : 0, rows = from < n ? n - from : 0;
    /* A backend that records steps (CUDA graphs) may replay this one instead of running the
     * ops; the key is what else decides the ops: how many rows get logits. */
    if (!(b->step_begin && b->step_begin(b, tokens, n, d->pos, rows))) {
        forward_ops(d, tokens, n, rows);
        if (b->step_end) b->step_end(b);
    }
    d->hidden_rows = n;
    d->pos += n;
    return rows;
}

void forward_chunk(decoder *d, const int *tokens, int n, float *logits, int logits_from) {
    const int rows = forward_chunk_device(d, tokens, n, logits ? logits_from : n);
    if (rows) d->b->download(d->b, logits, d->logits, (size_t)rows * d->m->config.vocab);
}
