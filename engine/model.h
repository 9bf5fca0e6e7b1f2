/* model.h: the Gemma 4 text model as plain data - its hyperparameters (model_config),
 * its weights (model_weights) and the two together (struct model, opaque in engine.h).
 *
 * Who fills what:
 *   - config.c / model_load.c (the loader) fill every field of model_config marked
 *     "config.json" below, then call model_config_derive(), which fills the per-layer
 *     array (layer types, head dims, kv heads, windows, kv-sharing sources, MLP widths) the
 *     way transformers' Gemma4TextConfig / Gemma4TextAttention / Gemma4TextMLP derive them,
 *     and checks that the whole is consistent. The loader then checks every tensor's shape
 *     against the derived config and fills model_weights.
 *   - forward.c (the forward pass) and decoder.c read both and never write them.
 *
 * Weights stay as they are in the file (bf16 / f16 / f32, usually mmapped): a tensor is a
 * pointer plus a dtype tag, and the backend's matvec converts to fp32 on the fly inside its
 * inner loop. Decoding one token is memory-bound, so a whole-model fp32 copy would double
 * the bytes read per token; we never make one. The one exception goes the other way:
 * WEIGHT_DTYPE int8 / int4 (quant.h) holds the linear layers as smaller quantized copies, made at
 * load or read from a pre-quantized checkpoint (model_load_prec, engine.h).
 *
 * Names in comments like `q_proj` are the transformers module names; the safetensors key
 * of a layer tensor is `model.layers.{i}.self_attn.q_proj.weight` and so on (with a
 * `model.language_model.` prefix in the multimodal `gemma4` checkpoints). */
#ifndef MODEL_H
#define MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "float16.h"
#include "quant.h"
#include "safetensors.h"

/* ------------------------------------------------------------------------------------- */
/* Tensors                                                                              */

/* DT_Q8 / DT_Q4: a linear layer held as a quant.h matrix (WEIGHT_DTYPE, HEAD_DTYPE, or a
 * pre-quantized checkpoint); only a backend that handles them is ever given one. */
typedef enum { DT_F32 = 0, DT_BF16 = 1, DT_F16 = 2, DT_Q8 = 3, DT_Q4 = 4 } weight_dtype;

typedef struct {
    const void *data; /* [rows * cols] elements of dtype, row-major; NULL when absent. DT_Q8 /
                         DT_Q4: q->q (the packed values), so "present" tests still work */
    weight_dtype dtype;
    int rows, cols;        /* 2-D shape as stored ([out, in] for a linear layer); 1-D: rows = 1 */
    void *dev;             /* a backend's own copy (GPU backends); NULL for the CPU backend */
    const quant_matrix *q; /* DT_Q8 / DT_Q4: the matrix [rows, cols] (values and bf16 scales,
                              owned by the model or the head); NULL otherwise */
} tensor;

/* Size of one element of a dtype in bytes (plain dtypes only; quant_bytes for DT_Q8 / DT_Q4). */
static inline size_t dtype_size(weight_dtype t) {
    return t == DT_F32 ? 4 : 2;
}

/* Bytes the tensor's weights occupy (values plus scales when quantized); 0 when absent. */
size_t tensor_bytes(const tensor *t);

/* A tensor over quantized matrix q (DT_Q8 or DT_Q4 by q->dtype). */
tensor tensor_of_quant(const quant_matrix *q);

/* One element of a tensor as fp32 (slow path: tests, gathers of single values). */
float tensor_get(const tensor *t, size_t i);

/* Point *out at checkpoint tensor t (named `name`, stored in `file`), which must be F32, BF16 or
 * F16 and of shape [rows, cols] - [rows] when cols is 0 - as dir/config.json implies. Returns 0,
 * or -1 with err naming the file, the tensor and what is wrong (the model and assistant loaders
 * share it). */
int tensor_from_checkpoint(tensor *out, const st_tensor *t, const char *file, const char *name,
                           int rows, int cols, const char *dir, char *err, size_t errlen);

/* ------------------------------------------------------------------------------------- */
/* Config                                                                               */

typedef enum { LAYER_SLIDING = 0, LAYER_FULL = 1 } layer_type;

/* RoPE of one layer type (config.json rope_parameters["sliding_attention"/"full_attention"]). */
typedef struct {
    int proportional;            /* rope_type "proportional" (1) or "default" (0) */
    float theta;                 /* rope_theta */
    float partial_rotary_factor; /* proportional only: fraction of head_dim rotated (1.0) */
    float factor;                /* proportional only: frequency divisor ("factor", 1.0) */
} rope_params;

/* What one decoder layer looks like, derived from the config by model_config_derive(). */
typedef struct {
    layer_type type;  /* layer_types[i] */
    int head_dim;     /* per_layer_config's head_dim when given, else global_head_dim on
                         full layers when set, else head_dim */
    int n_kv_heads;   /* per_layer_config's num_key_value_heads when given, else
                         num_global_key_value_heads on full layers when attention_k_eq_v and
                         it is set, else num_key_value_heads */
    int window;       /* sliding layers: the native sliding_window; full layers: 0 */
    int k_eq_v;       /* attention_k_eq_v on a full layer: no v_proj, values are the raw
                         key projection (before k_norm and RoPE) */
    int kv_shared;    /* one of the last num_kv_shared_layers layers: no k/v weights */
    int kv_source;    /* layer whose KV cache this layer attends to: itself, or (kv_shared)
                         the last non-shared layer of the same type */
    int intermediate; /* MLP width: intermediate_size, doubled on kv-shared layers when
                         use_double_wide_mlp */
} layer_config;

typedef struct {
    /* config.json (text_config for model_type "gemma4") */
    int n_layers;               /* num_hidden_layers */
    int hidden;                 /* hidden_size */
    int intermediate;           /* intermediate_size */
    int n_heads;                /* num_attention_heads */
    int n_kv_heads;             /* num_key_value_heads */
    int head_dim;               /* head_dim */
    int global_head_dim;        /* global_head_dim (full layers); 0 = same as head_dim */
    int n_global_kv_heads;      /* num_global_key_value_heads; 0 = none given */
    int vocab;                  /* vocab_size */
    int max_positions;          /* max_position_embeddings */
    int sliding_window;         /* sliding_window (native) */
    float rms_eps;              /* rms_norm_eps */
    float final_softcap;        /* final_logit_softcapping; 0 = none (null in the file) */
    int attention_k_eq_v;       /* attention_k_eq_v */
    int num_kv_shared_layers;   /* num_kv_shared_layers */
    int use_double_wide_mlp;    /* use_double_wide_mlp */
    int ple_dim;                /* hidden_size_per_layer_input; 0 = no per-layer embeddings */
    int ple_vocab;              /* vocab_size_per_layer_input */
    int tie_embeddings;         /* tie_word_embeddings */
    int weights_dtype;          /* dtype (or torch_dtype), text_config's or the file's: DT_BF16,
                                   DT_F16 or DT_F32; -1 when not given */
    int bos_id, eos_id, pad_id; /* bos/eos/pad_token_id (first eos when a list); -1 = none */
    rope_params rope_sliding;   /* rope_parameters["sliding_attention"] */
    rope_params rope_full;      /* rope_parameters["full_attention"] */
    layer_type *layer_types;    /* [n_layers] layer_types (malloc'd by the loader) */
    int *layer_head_dim;        /* [n_layers] per_layer_config[i].head_dim (transformers 5.17 writes
                                   global_head_dim this way); 0 = no override; NULL = none at all */
    int *layer_kv_heads;        /* [n_layers] per_layer_config[i].num_key_value_heads; as above */
    /* hidden_activation must be gelu_pytorch_tanh and enable_moe_block false: the loader
       refuses anything else, so neither has a field here. */

    /* derived by model_config_derive() */
    layer_config *layers; /* [n_layers] */
    int max_head_dim;     /* largest head_dim over layers */
    int max_kv_dim;       /* largest n_kv_heads * head_dim over layers */
    int max_q_dim;        /* largest n_heads * head_dim over layers */
    int max_intermediate; /* largest MLP width over layers */
} model_config;

/* Fill c->layers and the max_* fields from the config.json fields, and check them (positive
 * sizes, heads dividing evenly, a full-attention source layer for every shared layer...).
 * Returns 0, or -1 with a message in err naming the offending key. Safe to call again (it
 * frees and rebuilds the derived part). */
int model_config_derive(model_config *c, char *err, size_t errlen);
void model_config_free(model_config *c); /* frees layer_types, the overrides and layers */

/* ------------------------------------------------------------------------------------- */
/* Weights                                                                              */

typedef struct {
    tensor input_norm;     /* input_layernorm [hidden] */
    tensor q_proj;         /* self_attn.q_proj [n_heads * head_dim, hidden] */
    tensor q_norm;         /* self_attn.q_norm [head_dim] */
    tensor k_proj;         /* self_attn.k_proj [n_kv_heads * head_dim, hidden]; absent when
                              kv_shared */
    tensor v_proj;         /* self_attn.v_proj [n_kv_heads * head_dim, hidden]; absent when
                              kv_shared or k_eq_v */
    tensor k_norm;         /* self_attn.k_norm [head_dim]; absent when kv_shared (v_norm has
                              no weight) */
    tensor o_proj;         /* self_attn.o_proj [hidden, n_heads * head_dim] */
    tensor post_attn_norm; /* post_attention_layernorm [hidden] */
    tensor pre_ffn_norm;   /* pre_feedforward_layernorm [hidden] */
    tensor gate_proj;      /* mlp.gate_proj [intermediate, hidden] */
    tensor up_proj;        /* mlp.up_proj [intermediate, hidden] */
    tensor down_proj;      /* mlp.down_proj [hidden, intermediate] */
    tensor post_ffn_norm;  /* post_feedforward_layernorm [hidden] */
    tensor ple_gate;       /* per_layer_input_gate [ple_dim, hidden]; only when ple_dim */
    tensor ple_proj;       /* per_layer_projection [hidden, ple_dim]; only when ple_dim */
    tensor ple_post_norm;  /* post_per_layer_input_norm [hidden]; only when ple_dim */
    float layer_scalar;    /* layer_scalar (a one-element buffer in the file; 1 if absent) */
} layer_weights;

typedef struct {
    tensor embed;          /* embed_tokens [vocab, hidden] */
    tensor embed_ple;      /* embed_tokens_per_layer [ple_vocab, n_layers * ple_dim] */
    tensor ple_model_proj; /* per_layer_model_projection [n_layers * ple_dim, hidden] */
    tensor ple_proj_norm;  /* per_layer_projection_norm [ple_dim] */
    tensor final_norm;     /* norm [hidden] */
    tensor lm_head;        /* lm_head [vocab, hidden]; a copy of the embed descriptor when
                              tie_embeddings (same data pointer) */
    layer_weights *layers; /* [n_layers] */
} model_weights;

/* The model: what model_load() returns. */
struct model {
    model_config config;
    model_weights weights;
    void *storage;       /* the loader's own state (mmapped files, owned buffers); freed by
                            model_free() */
    quant_matrix *quant; /* [n_quant] the quantized linear layers (at load or read from a
                            pre-quantized checkpoint); freed by model_free() */
    int n_quant;
    quant_dtype weight_dtype; /* what q/k/v/o/gate/up/down are held as (QUANT_BF16: as stored) */
    int weight_group;         /* their group (0 when not quantized) */
    int prequantized;         /* 1 when they came quantized from the checkpoint */
};

#endif
