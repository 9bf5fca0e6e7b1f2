/* model_derive.c: from the hyperparameters in config.json to the shape of every layer.
 *
 * Gemma 4 layers are not all alike: full-attention layers may have their own head_dim
 * (global_head_dim) and kv-head count, the last num_kv_shared_layers layers reuse the KV of
 * an earlier layer of the same type and then may have a double-wide MLP. transformers
 * derives all this in Gemma4TextConfig.__post_init__, Gemma4TextAttention.__init__ and
 * Gemma4TextMLP.__init__; model_config_derive() does the same once, so the loader can check
 * tensor shapes and the forward pass can just read c->layers[i]. */
#include <stdio.h>
#include <stdlib.h>

#include "model.h"
#include "util.h"

static int check_rope(const rope_params *r, const char *which, char *err, size_t errlen) {
    if (!(r->theta > 0))
        return err_set(err, errlen, "rope_parameters.%s.rope_theta must be > 0", which);
    if (r->proportional && !(r->partial_rotary_factor > 0 && r->partial_rotary_factor <= 1))
        return err_set(err, errlen, "rope_parameters.%s.partial_rotary_factor must be in (0, 1]",
                       which);
    if (r->proportional && !(r->factor > 0))
        return err_set(err, errlen, "rope_parameters.%s.factor must be > 0", which);
    return 0;
}

int model_config_derive(model_config *c, char *err, size_t errlen) {
    free(c->layers);
    c->layers = NULL;
    struct {
        const char *key;
        int value;
    } positive[] = {
        {"num_hidden_layers", c->n_layers},
        {"hidden_size", c->hidden},
        {"intermediate_size", c->intermediate},
        {"num_attention_heads", c->n_heads},
        {"num_key_value_heads", c->n_kv_heads},
        {"head_dim", c->head_dim},
        {"vocab_size", c->vocab},
        {"max_position_embeddings", c->max_positions},
    };
    for (size_t i = 0; i < sizeof positive / sizeof positive[0]; i++)
        if (positive[i].value <= 0)
            return err_set(err, errlen, "%s must be > 0 (got %d)", positive[i].key,
                           positive[i].value);
    if (c->head_dim % 2) return err_set(err, errlen, "head_dim must be even (got %d)", c->head_dim);
    if (c->global_head_dim < 0 || c->global_head_dim % 2)
        return err_set(err, errlen, "global_head_dim must be even and >= 0 (got %d)",
                       c->global_head_dim);
    if (c->n_global_kv_heads < 0)
        return err_set(err, errlen, "num_global_key_value_heads must be >= 0");
    if (!(c->rms_eps > 0)) return err_set(err, errlen, "rms_norm_eps must be > 0");
    if (c->final_softcap < 0) return err_set(err, errlen, "final_logit_softcapping must be >= 0");
    if (c->num_kv_shared_layers < 0 || c->num_kv_shared_layers >= c->n_layers)
        return err_set(err, errlen,
                       "num_kv_shared_layers must be in [0, num_hidden_layers) (got %d)",
                       c->num_kv_shared_layers);
    if (c->ple_dim < 0) return err_set(err, errlen, "hidden_size_per_layer_input must be >= 0");
    if (c->ple_dim > 0 && c->ple_vocab <= 0)
        return err_set(err, errlen, "vocab_size_per_layer_input must be > 0");
    if (check_rope(&c->rope_sliding, "sliding_attention", err, errlen)) return -1;
    if (check_rope(&c->rope_full, "full_attention", err, errlen)) return -1;

    if (!c->layer_types) {
        /* transformers' default: every sixth layer is full attention. */
        c->layer_types = xcalloc((size_t)c->n_layers, sizeof *c->layer_types);
        for (int i = 0; i < c->n_layers; i++)
            c->layer_types[i] = (i + 1) % 6 ? LAYER_SLIDING : LAYER_FULL;
    }
    if (c->layer_types[c->n_layers - 1] != LAYER_FULL) {
        /* Gemma4TextConfig forces this too (with a warning); so do we, to stay equal. */
        fprintf(stderr, "note: layer_types: the last layer must use full_attention; using it\n");
        c->layer_types[c->n_layers - 1] = LAYER_FULL;
    }

    c->layers = xcalloc((size_t)c->n_layers, sizeof *c->layers);
    const int first_shared = c->n_layers - c->num_kv_shared_layers;
    c->max_head_dim = c->max_kv_dim = c->max_q_dim = c->max_intermediate = 0;
    for (int i = 0; i < c->n_layers; i++) {
        layer_config *l = &c->layers[i];
        const int sliding = c->layer_types[i] == LAYER_SLIDING;
        if (sliding && c->sliding_window <= 0)
            return err_set(err, errlen, "sliding_window must be > 0 (got %d)", c->sliding_window);
        l->type = c->layer_types[i];
        l->head_dim = !sliding && c->global_head_dim ? c->global_head_dim : c->head_dim;
        if (c->layer_head_dim && c->layer_head_dim[i]) l->head_dim = c->layer_head_dim[i];
        if (l->head_dim <= 0 || l->head_dim % 2)
            return err_set(err, errlen,
                           "per_layer_config.%d.head_dim must be even and > 0 (got %d)", i,
                           l->head_dim);
        l->k_eq_v = c->attention_k_eq_v && !sliding;
        /* Full layers with k == v take num_global_key_value_heads when it is given. */
        l->n_kv_heads = l->k_eq_v && c->n_global_kv_heads ? c->n_global_kv_heads : c->n_kv_heads;
        if (c->layer_kv_heads && c->layer_kv_heads[i]) l->n_kv_heads = c->layer_kv_heads[i];
        if (l->n_kv_heads <= 0)
            return err_set(err, errlen, "per_layer_config.%d.num_key_value_heads must be > 0", i);
        /* One RoPE table per layer type: all layers of a type share a head_dim. */
        for (int j = 0; j < i; j++)
            if (c->layer_types[j] == l->type && c->layers[j].head_dim != l->head_dim)
                return err_set(err, errlen,
                               "layers %d and %d are both %s attention but have head_dim %d and "
                               "%d; this engine needs one head_dim per layer type",
                               j, i, sliding ? "sliding" : "full", c->layers[j].head_dim,
                               l->head_dim);
        if (c->n_heads % l->n_kv_heads)
            return err_set(err, errlen,
                           "num_attention_heads (%d) must be a multiple of the kv heads (%d) of "
                           "layer %d",
                           c->n_heads, l->n_kv_heads, i);
        l->window = sliding ? c->sliding_window : 0;
        l->kv_shared = c->num_kv_shared_layers > 0 && i >= first_shared;
        l->kv_source = i;
        if (l->kv_shared) {
            l->kv_source = -1;
            for (int j = first_shared - 1; j >= 0; j--)
                if (c->layer_types[j] == l->type) {
                    l->kv_source = j;
                    break;
                }
            if (l->kv_source < 0)
                return err_set(err, errlen,
                               "layer %d shares KV (num_kv_shared_layers %d) but no earlier layer "
                               "has its type (%s)",
                               i, c->num_kv_shared_layers, sliding ? "sliding" : "full");
            const layer_config *src = &c->layers[l->kv_source];
            if (src->head_dim != l->head_dim || src->n_kv_heads != l->n_kv_heads)
                return err_set(err, errlen, "layer %d and its KV source %d differ in shape", i,
                               l->kv_source);
        }
        l->intermediate = c->intermediate * (c->use_double_wide_mlp && l->kv_shared ? 2 : 1);
        if (l->head_dim > c->max_head_dim) c->max_head_dim = l->head_dim;
        if (l->n_kv_heads * l->head_dim > c->max_kv_dim)
            c->max_kv_dim = l->n_kv_heads * l->head_dim;
        if (c->n_heads * l->head_dim > c->max_q_dim) c->max_q_dim = c->n_heads * l->head_dim;
        if (l->intermediate > c->max_intermediate) c->max_intermediate = l->intermediate;
    }
    return 0;
}

void model_config_free(model_config *c) {
    free(c->layer_types);
    free(c->layer_head_dim);
    free(c->layer_kv_heads);
    free(c->layers);
    c->layer_types = NULL;
    c->layer_head_dim = c->layer_kv_heads = NULL;
    c->layers = NULL;
}
