/* config.h: a Hugging Face config.json -> model_config (model.h).
 *
 * Accepts model_type "gemma4_text" and "gemma4" (the multimodal wrapper: its text_config is
 * the text model; the vision and audio towers are not needed to decode text and are skipped
 * with a note on stderr). Every field the forward pass needs is read with the default
 * transformers 5.17's Gemma4TextConfig gives it when absent. What our engine does not
 * implement is refused with a message naming the file and the key: the MoE variant
 * (enable_moe_block), another activation, attention biases, bidirectional attention, RoPE
 * types other than default/proportional, and per-layer overrides that model_config cannot
 * express.
 *
 * Head dims of full-attention layers come in two spellings: the released checkpoints'
 * `global_head_dim` / `num_global_key_value_heads` (transformers turns these into per-layer
 * overrides, global_head_dim defaulting to 512), and `per_layer_config` ({"<layer>":
 * {"head_dim": .., "num_key_value_heads": ..}}) as transformers 5.17 writes it back. Both end
 * up in model_config.global_head_dim / n_global_kv_heads. */
#ifndef CONFIG_H
#define CONFIG_H

#include <stddef.h>

#include "model.h"

typedef struct {
    int wrapped;        /* model_type "gemma4": tensors live under model.language_model. */
    int tie_embeddings; /* the effective tie_word_embeddings (the wrapper's own wins) */
} config_info;

/* Parse config.json text (path is only used in messages) into c (zeroed by the call) and
 * run model_config_derive(). Returns 0, or -1 with "path: key: problem" in err; c is then
 * freed. */
int config_parse(const char *text, size_t len, const char *path, model_config *c, config_info *info,
                 char *err, size_t errlen);

/* Read and parse dir/config.json. */
int config_load(const char *dir, model_config *c, config_info *info, char *err, size_t errlen);

#endif
