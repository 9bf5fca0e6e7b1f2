/* ctensors.h: pre-quantized checkpoints in compressed-tensors' "pack-quantized" format (the
 * W4A16 / W8A16 layout vLLM serves), read into quant.h matrices.
 *
 * Only what quant.h can hold exactly is accepted; everything else is refused with a message
 * naming the file, the key (its full path under quantization_config) and the value, e.g.
 *   config.json: quantization_config.format: "float-quantized" is not supported
 *   (pack-quantized only)
 * so a checkpoint we would misread never loads. Accepted config.json `quantization_config`:
 *   quant_method "compressed-tensors"; format "pack-quantized"; quantization_status
 *   "compressed" (or absent); kv_cache_scheme null; sparsity_config / transform_config absent,
 *   null or {}; ignore: a list of strings; global_compression_ratio / version /
 *   run_compressed / provider: informational; exactly one entry in config_groups, an object
 *   {targets: [strings], weights: {...}, input_activations: null, output_activations: null,
 *   format: "pack-quantized" (optional)} whose weights are
 *   {num_bits: 4 | 8, type: "int", symmetric: true, strategy: "group",
 *    group_size: 32 | 64 | 128, dynamic: false, actorder: null | false | "weight" | "static"
 *    (these change calibration only, not the stored format), block_structure: null,
 *    scale_dtype: null | "torch.bfloat16", zp_dtype: null, observer / observer_kwargs:
 *    calibration-only, ignored}.
 * Any other key is refused by name: a field we do not know may change the format. (The
 * compressed-tensors source: compressed_tensors/quantization/quant_config.py, quant_args.py,
 * quant_scheme.py.)
 *
 * One quantized linear layer `<module>` (e.g. model.layers.0.self_attn.q_proj) is stored as
 * (compressors/quantized_compressors/pack_quantized.py):
 *   <module>.weight_packed  I32 [out, in / (32 / num_bits)]: value c of a row sits in word
 *                           c / (32 / num_bits) at bits [num_bits * (c % (32 / num_bits)),
 *                           + num_bits), stored unsigned as q + 2^(num_bits - 1)
 *                           (pack_to_int32; vLLM reads it as uint4b8 / uint8b128);
 *   <module>.weight_scale   [out, in / group_size] in the model dtype: BF16 here (F16 / F32
 *                           only when every value is exactly a bf16, since quant.h's scales
 *                           are bf16);
 *   <module>.weight_shape   I64 (or I32) [2] = [out, in].
 * Dequantized weight = q * scale. The little-endian bytes of each word are, in order, quant.h's
 * bytes: as they are for int4 (low nibble first, offset-binary in both), XOR 0x80 for int8
 * (offset-binary -> two's complement), so the conversion is a checked byte copy. Symmetric only: no
 * weight_zero_point, no weight_g_idx (the loader reports such tensors as unused).
 *
 * The tensors come as raw pointers + dtype + shape (ctensors_raw) so this file does not depend
 * on how the model loader walks the checkpoint. */
#ifndef CTENSORS_H
#define CTENSORS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "quant.h"
#include "safetensors.h"

typedef struct {
    quant_dtype dtype; /* QUANT_INT4 (num_bits 4) or QUANT_INT8 (num_bits 8) */
    int num_bits;      /* config_groups.<g>.weights.num_bits */
    int group_size;    /* config_groups.<g>.weights.group_size: 32, 64 or 128 */
    char **targets;    /* [n_targets] config_groups.<g>.targets, as written (classes, "re:..") */
    int n_targets;
    char **ignore; /* [n_ignore] quantization_config.ignore: module names or "re:<regex>" */
    int n_ignore;
} ctensors_config;

/* One checkpoint tensor as raw little-endian elements (data may be unaligned). */
typedef struct {
    const void *data;     /* [numel] elements, row-major */
    st_dtype dtype;       /* as stored */
    int ndim;             /* dimensions */
    const int64_t *shape; /* [ndim] */
} ctensors_raw;

static inline ctensors_raw ctensors_raw_of(const st_tensor *t) {
    ctensors_raw r = {t->data, t->dtype, t->ndim, t->shape};
    return r;
}

/* Read root["quantization_config"] of a parsed config.json (path only for messages) into c.
 * Returns 1 when present and supported, 0 when absent or null (a plain checkpoint; c zeroed),
 * -1 with err "path: quantization_config.<key>: <value> ..." when refused. */
int ctensors_config_parse(const cJSON *root, const char *path, ctensors_config *c, char *err,
                          size_t errlen);

/* The same from the file itself (path: a config.json). */
int ctensors_config_load(const char *path, ctensors_config *c, char *err, size_t errlen);

void ctensors_config_free(ctensors_config *c);

/* Whether the ignore list names module: an entry equal to it, or an entry "re:<pattern>" whose
 * POSIX extended regex matches it from its first character (as Python's re.match). */
int ctensors_ignored(const ctensors_config *c, const char *module);

/* One layer's weight_packed / weight_scale / weight_shape -> a freshly allocated m. module
 * (e.g. "model.layers.0.mlp.down_proj") names the tensors in messages. rows / cols: the shape
 * the model's config implies ([out, in]); 0 accepts weight_shape's. Every dtype, shape and
 * size is checked, and every scale must be finite. Returns 0, or -1 with err naming the tensor
 * and the problem (m zeroed). */
int ctensors_to_quant(const ctensors_config *c, const char *module, const ctensors_raw *packed,
                      const ctensors_raw *scale, const ctensors_raw *shape, int rows, int cols,
                      quant_matrix *m, char *err, size_t errlen);

#endif
