/* model_load.c: a Hugging Face model folder -> struct model (model.h).
 *
 * config.c gives the hyperparameters and the derived shape of every layer; this file finds
 * each weight by its transformers name, checks its dtype and shape against that config, and
 * points the weight descriptors into the mmapped safetensors files (no copies: weights stay
 * bf16 / f16 / f32 as stored, as model.h asks). Every tensor the config implies must be
 * present; every tensor of the text model must be used. Both lists are reported by name, so
 * a config that does not match its checkpoint fails here, not as garbage logits later.
 *
 * Names: `model.` + the Gemma4TextModel names for gemma4_text checkpoints
 * (Gemma4ForCausalLM), `model.language_model.` + the same for the multimodal gemma4 ones
 * (Gemma4ForConditionalGeneration; its vision and audio towers are skipped), `lm_head.weight`
 * when the head is not tied to the embedding.
 *
 * Precision (model_load_prec): the decoder's linear layers (q/k/v/o/gate/up/down) may be held
 * as quant.h int8 / int4 matrices, quantized here once from the stored weights (WEIGHT_DTYPE,
 * WEIGHT_GROUP), or read as such from a compressed-tensors pack-quantized checkpoint
 * (ctensors.h: <module>.weight_packed / weight_scale / weight_shape in place of
 * <module>.weight). Both give the same bytes for the same weights, so a checkpoint written by
 * tools/quantize_checkpoint.py computes exactly what quantization at load computes. A matrix
 * whose input columns WEIGHT_GROUP does not divide is refused by name rather than kept in bf16:
 * a knob is never silently ignored, and a sweep must not label a mixed model as int4. The
 * quantized copies are the model's (model_free frees them); the mmapped file is never written. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "ctensors.h"
#include "engine.h"
#include "model.h"
#include "safetensors.h"
#include "util.h"

typedef struct {
    const safetensors *st;
    char *used;         /* [st->n_tensors] 1 once a tensor has been taken */
    const char *prefix; /* of the text model's tensors: "model." or "model.language_model." */
    const char *dir;
    char *missing; /* names of missing tensors, ", "-separated (the first few) */
    size_t missing_len;
    int n_missing;
    int failed; /* a hard error is in err */
    char *err;
    size_t errlen;
    const ctensors_config *ct; /* a pre-quantized checkpoint's quantization_config, or NULL */
    model *m;                  /* quantized matrices go to m->quant[m->n_quant++] */
} loader;

static void failf(loader *L, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void failf(loader *L, const char *fmt, ...) {
    if (L->failed) return; /* keep the first error */
    L->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(L->err, L->errlen, fmt, ap);
    va_end(ap);
}

static void note_missing(loader *L, const char *name) {
    if (L->n_missing++ >= 8) return;
    size_t n = strlen(name) + 3;
    L->missing = xrealloc(L->missing, L->missing_len + n + 1);
    L->missing_len += (size_t)snprintf(L->missing + L->missing_len, n + 1, "%s%s",
                                       L->missing_len ? ", " : "", name);
}

static const st_tensor *lookup(loader *L, const char *name) {
    const st_tensor *t = safetensors_find(L->st, name);
    if (t) L->used[t - L->st->tensors] = 1;
    return t;
}

/* Take tensor `name` (under the text prefix unless absolute) with shape [rows, cols] or, when
 * cols is 0, [rows]. Missing: noted (and out left empty) unless optional. */
static const st_tensor *take(loader *L, tensor *out, int optional, int absolute, int rows, int cols,
                             const char *fmt, ...) PRINTF_LIKE(7, 8);
static const st_tensor *take(loader *L, tensor *out, int optional, int absolute, int rows, int cols,
                             const char *fmt, ...) {
    char name[256];
    int n = absolute ? 0 : snprintf(name, sizeof name, "%s", L->prefix);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name + n, sizeof name - (size_t)n, fmt, ap);
    va_end(ap);
    memset(out, 0, sizeof *out);
    const st_tensor *t = lookup(L, name);
    if (!t) {
        if (!optional) note_missing(L, name);
        return NULL;
    }
    char why[1024];
    if (tensor_from_checkpoint(out, t, L->st->files[t->file].path, name, rows, cols, L->dir, why,
                               sizeof why)) {
        failf(L, "%s", why);
        return NULL;
    }
    /* bf16 and f16 share a size, so a file whose labels were swapped loads and decodes garbage:
     * a 16-bit tensor must carry the 16-bit type config.json names (f32 tensors, e.g. norms kept
     * in full precision, are fine either way). */
    const int want = L->m->config.weights_dtype;
    if ((want == DT_BF16 || want == DT_F16) && (out->dtype == DT_BF16 || out->dtype == DT_F16) &&
        (int)out->dtype != want) {
        failf(L,
              "%s: tensor '%s' is %s, but %s/config.json says the weights are %s: the file's "
              "dtype labels disagree with the model (a relabelled file decodes garbage)",
              L->st->files[t->file].path, name, out->dtype == DT_BF16 ? "BF16" : "F16", L->dir,
              want == DT_BF16 ? "bfloat16" : "float16");
        return NULL;
    }
    return t;
}

/* A linear layer `layers.<i>.<what>` [rows, cols]: `<module>.weight`, or in a pre-quantized
 * checkpoint its packed form when the checkpoint has one (then a quantized tensor). */
static void take_linear(loader *L, tensor *out, int rows, int cols, int i, const char *what) {
    char module[256];
    snprintf(module, sizeof module, "%slayers.%d.%s", L->prefix, i, what);
    char *packed = xasprintf("%s.weight_packed", module);
    const st_tensor *p = L->ct ? safetensors_find(L->st, packed) : NULL;
    free(packed);
    if (!p) {
        take(L, out, 0, 1, rows, cols, "%s.weight", module);
        return;
    }
    memset(out, 0, sizeof *out);
    const st_tensor *sc = NULL, *sh = NULL;
    char *names[3] = {xasprintf("%s.weight_packed", module), xasprintf("%s.weight_scale", module),
                      xasprintf("%s.weight_shape", module)};
    const st_tensor **got[3] = {&p, &sc, &sh};
    for (int k = 0; k < 3; k++) {
        if (!(*got[k] = lookup(L, names[k]))) note_missing(L, names[k]);
        free(names[k]);
    }
    if (!sc || !sh) return;
    quant_matrix *q = &L->m->quant[L->m->n_quant];
    ctensors_raw rp = ctensors_raw_of(p), rs = ctensors_raw_of(sc), rh = ctensors_raw_of(sh);
    char why[1024];
    if (ctensors_to_quant(L->ct, module, &rp, &rs, &rh, rows, cols, q, why, sizeof why)) {
        failf(L, "%s: %s", L->st->files[p->file].path, why);
        return;
    }
    L->m->n_quant++;
    *out = tensor_of_quant(q);
}

static void load_layer(loader *L, const model_config *c, int i, layer_weights *w) {
    const layer_config *l = &c->layers[i];
    const int H = c->hidden, q_dim = c->n_heads * l->head_dim, kv_dim = l->n_kv_heads * l->head_dim;
    take(L, &w->input_norm, 0, 0, H, 0, "layers.%d.input_layernorm.weight", i);
    take_linear(L, &w->q_proj, q_dim, H, i, "self_attn.q_proj");
    take(L, &w->q_norm, 0, 0, l->head_dim, 0, "layers.%d.self_attn.q_norm.weight", i);
    if (!l->kv_shared) {
        take_linear(L, &w->k_proj, kv_dim, H, i, "self_attn.k_proj");
        take(L, &w->k_norm, 0, 0, l->head_dim, 0, "layers.%d.self_attn.k_norm.weight", i);
        if (!l->k_eq_v) take_linear(L, &w->v_proj, kv_dim, H, i, "self_attn.v_proj");
    }
    take_linear(L, &w->o_proj, H, q_dim, i, "self_attn.o_proj");
    take(L, &w->post_attn_norm, 0, 0, H, 0, "layers.%d.post_attention_layernorm.weight", i);
    take(L, &w->pre_ffn_norm, 0, 0, H, 0, "layers.%d.pre_feedforward_layernorm.weight", i);
    take_linear(L, &w->gate_proj, l->intermediate, H, i, "mlp.gate_proj");
    take_linear(L, &w->up_proj, l->intermediate, H, i, "mlp.up_proj");
    take_linear(L, &w->down_proj, H, l->intermediate, i, "mlp.down_proj");
    take(L, &w->post_ffn_norm, 0, 0, H, 0, "layers.%d.post_feedforward_layernorm.weight", i);
    if (c->ple_dim) {
        take(L, &w->ple_gate, 0, 0, c->ple_dim, H, "layers.%d.per_layer_input_gate.weight", i);
        take(L, &w->ple_proj, 0, 0, H, c->ple_dim, "layers.%d.per_layer_projection.weight", i);
        take(L, &w->ple_post_norm, 0, 0, H, 0, "layers.%d.post_per_layer_input_norm.weight", i);
    }
    /* layer_scalar: a persistent one-element buffer; model.h takes 1 when it is absent. */
    tensor s;
    const st_tensor *t = take(L, &s, 1, 0, 1, 0, "layers.%d.layer_scalar", i);
    w->layer_scalar = 1.0f;
    if (t) st_to_f32(t, &w->layer_scalar);
}

/* Tensors transformers itself skips on load: k/v projections and norms of kv-shared
 * layers (Gemma4TextModel._keys_to_ignore_on_load_unexpected). */
static int ignorable(const model_config *c, const char *rest) {
    int i, n = 0;
    char what[64], suffix[32];
    if (sscanf(rest, "layers.%d.self_attn.%63[a-z_].%31[a-z_]%n", &i, what, suffix, &n) != 3 ||
        rest[n] != '\0' || i < 0 || i >= c->n_layers || !c->layers[i].kv_shared)
        return 0;
    /* a pre-quantized checkpoint stores them packed (ctensors.h) */
    if (strcmp(suffix, "weight") && strcmp(suffix, "weight_packed") &&
        strcmp(suffix, "weight_scale") && strcmp(suffix, "weight_shape"))
        return 0;
    return !strcmp(what, "k_proj") || !strcmp(what, "v_proj") || !strcmp(what, "k_norm") ||
           !strcmp(what, "v_norm");
}

/* Every tensor of the text model must have been used; the wrapper's other towers are
 * skipped (with a count on stderr), and so is a stored lm_head when the head is tied. */
static void check_unexpected(loader *L, const model_config *c, const config_info *info) {
    const size_t plen = strlen(L->prefix);
    int n_bad = 0, n_skipped = 0;
    char list[512] = "";
    size_t used = 0;
    for (int i = 0; i < L->st->n_tensors; i++) {
        if (L->used[i]) continue;
        const char *name = L->st->tensors[i].name;
        int in_text = !strncmp(name, L->prefix, plen);
        if (in_text && ignorable(c, name + plen)) continue;
        if (!in_text && !strcmp(name, "lm_head.weight") && c->tie_embeddings) continue;
        if (!in_text && info->wrapped && strncmp(name, "lm_head.", 8)) {
            n_skipped++;
            continue;
        }
        if (n_bad++ < 6 && used < sizeof list)
            used +=
                (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", name);
    }
    if (n_skipped)
        fprintf(stderr, "note: %s: skipped %d tensors outside the text model (vision/audio)\n",
                L->dir, n_skipped);
    if (n_bad)
        failf(L,
              "%s: %d unexpected tensor%s for this config.json: %s%s (does config.json match "
              "the checkpoint?)",
              L->dir, n_bad, n_bad > 1 ? "s" : "", list, n_bad > 6 ? ", ..." : "");
}

static int load_weights(loader *L, const model_config *c, const config_info *info,
                        model_weights *w) {
    const int H = c->hidden;
    take(L, &w->embed, 0, 0, c->vocab, H, "embed_tokens.weight");
    if (c->ple_dim) {
        take(L, &w->embed_ple, 0, 0, c->ple_vocab, c->n_layers * c->ple_dim,
             "embed_tokens_per_layer.weight");
        take(L, &w->ple_model_proj, 0, 0, c->n_layers * c->ple_dim, H,
             "per_layer_model_projection.weight");
        take(L, &w->ple_proj_norm, 0, 0, c->ple_dim, 0, "per_layer_projection_norm.weight");
    }
    take(L, &w->final_norm, 0, 0, H, 0, "norm.weight");
    w->layers = xcalloc((size_t)c->n_layers, sizeof *w->layers);
    for (int i = 0; i < c->n_layers && !L->failed; i++)
        load_layer(L, c, i, &w->layers[i]);
    if (c->tie_embeddings)
        w->lm_head = w->embed;
    else
        take(L, &w->lm_head, 0, 1, c->vocab, H, "lm_head.weight");
    if (!L->failed && L->n_missing)
        failf(L, "%s: %d tensor%s missing from the checkpoint: %s%s", L->dir, L->n_missing,
              L->n_missing > 1 ? "s" : "", L->missing, L->n_missing > 8 ? ", ..." : "");
    if (!L->failed) check_unexpected(L, c, info);
    return L->failed ? -1 : 0;
}

#define LINEARS 7 /* q, k, v, o, gate, up, down */

static void layer_linears(layer_weights *w, tensor *out[LINEARS], const char *names[LINEARS]) {
    tensor *t[LINEARS] = {&w->q_proj,    &w->k_proj,  &w->v_proj,   &w->o_proj,
                          &w->gate_proj, &w->up_proj, &w->down_proj};
    static const char *const n[LINEARS] = {
        "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
        "mlp.gate_proj",    "mlp.up_proj",      "mlp.down_proj"};
    for (int k = 0; k < LINEARS; k++) {
        out[k] = t[k];
        names[k] = n[k];
    }
}

/* Quantize every linear layer still held as stored into m->quant (WEIGHT_DTYPE at load). */
static int quantize_linears(model *m, const char *prefix, quant_dtype dtype, int group, char *err,
                            size_t errlen) {
    for (int i = 0; i < m->config.n_layers; i++) {
        tensor *t[LINEARS];
        const char *what[LINEARS];
        layer_linears(&m->weights.layers[i], t, what);
        for (int k = 0; k < LINEARS; k++) {
            if (!t[k]->data || t[k]->q) continue;
            char name[320];
            snprintf(name, sizeof name, "%slayers.%d.%s.weight", prefix, i, what[k]);
            if (t[k]->cols % group) {
                snprintf(err, errlen,
                         "%s [%d, %d]: WEIGHT_GROUP=%d does not divide its %d input columns "
                         "(WEIGHT_DTYPE=%s quantizes every q/k/v/o/gate/up/down_proj; choose a "
                         "WEIGHT_GROUP of 32, 64 or 128 that divides it, or WEIGHT_DTYPE=bf16)",
                         name, t[k]->rows, t[k]->cols, group, t[k]->cols, quant_dtype_name(dtype));
                return -1;
            }
            quant_matrix *q = &m->quant[m->n_quant];
            int rc;
            if (t[k]->dtype == DT_BF16) {
                rc = quant_from_bf16(q, name, t[k]->data, t[k]->rows, t[k]->cols, dtype, group, err,
                                     errlen);
            } else {
                const size_t n = (size_t)t[k]->rows * (size_t)t[k]->cols;
                float *f = xmalloc(n * sizeof(float));
                for (size_t j = 0; j < n; j++)
                    f[j] = tensor_get(t[k], j);
                rc = quant_from_f32(q, name, f, t[k]->rows, t[k]->cols, dtype, group, err, errlen);
                free(f);
            }
            if (rc) return -1;
            m->n_quant++;
            *t[k] = tensor_of_quant(q);
        }
    }
    return 0;
}

/* The precision knobs against a pre-quantized checkpoint: unset, or the checkpoint's own. */
static int check_checkpoint_precision(const ctensors_config *ct, const char *dir, quant_dtype dtype,
                                      int group, char *err, size_t errlen) {
    if (dtype != QUANT_BF16 && dtype != ct->dtype) {
        snprintf(err, errlen,
                 "WEIGHT_DTYPE=%s disagrees with %s/config.json: quantization_config has "
                 "num_bits %d (%s); leave WEIGHT_DTYPE unset or set it to %s",
                 quant_dtype_name(dtype), dir, ct->num_bits, quant_dtype_name(ct->dtype),
                 quant_dtype_name(ct->dtype));
        return -1;
    }
    if (group && group != ct->group_size) {
        snprintf(err, errlen,
                 "WEIGHT_GROUP=%d disagrees with %s/config.json: quantization_config has "
                 "group_size %d; leave WEIGHT_GROUP unset or set it to %d",
                 group, dir, ct->group_size, ct->group_size);
        return -1;
    }
    return 0;
}

model *model_load(const char *dir, char *err, size_t errlen) {
    return model_load_prec(dir, QUANT_BF16, 0, err, errlen);
}

model *model_load_prec(const char *dir, quant_dtype weight_dtype, int weight_group, char *err,
                       size_t errlen) {
    if (weight_group && !quant_group_valid(weight_group)) {
        snprintf(err, errlen, "WEIGHT_GROUP=%d: must be 32, 64 or 128", weight_group);
        return NULL;
    }
    model *m = xcalloc(1, sizeof *m);
    config_info info;
    if (config_load(dir, &m->config, &info, err, errlen)) {
        free(m);
        return NULL;
    }
    char *cfg_path = xasprintf("%s/config.json", dir);
    ctensors_config ct;
    int has_ct = ctensors_config_load(cfg_path, &ct, err, errlen);
    free(cfg_path);
    if (has_ct < 0 ||
        (has_ct && check_checkpoint_precision(&ct, dir, weight_dtype, weight_group, err, errlen))) {
        if (has_ct > 0) ctensors_config_free(&ct);
        model_config_free(&m->config);
        free(m);
        return NULL;
    }
    m->quant = xcalloc((size_t)m->config.n_layers * LINEARS + 1, sizeof *m->quant);
    safetensors *st = xcalloc(1, sizeof *st);
    m->storage = st;
    if (safetensors_open_dir(st, dir, err, errlen)) {
        if (has_ct) ctensors_config_free(&ct);
        model_free(m);
        return NULL;
    }
    /* Which naming the checkpoint uses: the first prefix that has the embedding. */
    static const char *const text_prefixes[] = {"model.", "model.language_model.", NULL};
    static const char *const wrapped_prefixes[] = {"model.language_model.", "language_model.model.",
                                                   "model.", NULL};
    const char *const *cands = info.wrapped ? wrapped_prefixes : text_prefixes;
    const char *prefix = NULL;
    for (int i = 0; cands[i] && !prefix; i++) {
        char *name = xasprintf("%sembed_tokens.weight", cands[i]);
        if (safetensors_find(st, name)) prefix = cands[i];
        free(name);
    }
    if (!prefix) {
        snprintf(err, errlen,
                 "%s: no %sembed_tokens.weight in the checkpoint (is it a Gemma 4 "
                 "text model?)",
                 dir, cands[0]);
        if (has_ct) ctensors_config_free(&ct);
        model_free(m);
        return NULL;
    }
    loader L = {.st = st, .prefix = prefix, .dir = dir, .err = err, .errlen = errlen, .m = m};
    L.ct = has_ct ? &ct : NULL;
    L.used = xcalloc((size_t)(st->n_tensors ? st->n_tensors : 1), 1);
    int rc = load_weights(&L, &m->config, &info, &m->weights);
    free(L.used);
    free(L.missing);
    m->prequantized = m->n_quant > 0;
    /* Layers a checkpoint keeps unquantized stay so unless WEIGHT_DTYPE asks (it then agrees
     * with the checkpoint, checked above, and so does the group used). */
    const int requested = weight_dtype != QUANT_BF16;
    if (has_ct) {
        weight_dtype = ct.dtype;
        weight_group = ct.group_size;
        ctensors_config_free(&ct);
    }
    if (!weight_group) weight_group = 32;
    if (!rc && requested && quantize_linears(m, prefix, weight_dtype, weight_group, err, errlen))
        rc = -1;
    if (rc) {
        model_free(m);
        return NULL;
    }
    m->weight_dtype = m->n_quant ? weight_dtype : QUANT_BF16;
    m->weight_group = m->n_quant ? weight_group : 0;
    return m;
}

void model_free(model *m) {
    if (!m) return;
    if (m->storage) {
        safetensors_close(m->storage);
        free(m->storage);
    }
    for (int i = 0; i < m->n_quant; i++)
        quant_free(&m->quant[i]);
    free(m->quant);
    free(m->weights.layers);
    model_config_free(&m->config);
    free(m);
}

int model_vocab_size(const model *m) {
    return m->config.vocab;
}
int model_native_window(const model *m) {
    return m->config.sliding_window;
}
int model_max_positions(const model *m) {
    return m->config.max_positions;
}
int model_bos_id(const model *m) {
    return m->config.bos_id;
}
quant_dtype model_weight_dtype(const model *m) {
    return m->weight_dtype;
}
int model_weight_group(const model *m) {
    return m->weight_group;
}

/* One decode step reads every layer weight, the whole lm_head, one row of the embedding and
 * of the PLE table, and the PLE projection. (The KV cache it reads grows with the position
 * and is not counted here.) */
size_t model_bytes_per_token(const model *m) {
    const model_config *c = &m->config;
    const model_weights *w = &m->weights;
    size_t total = tensor_bytes(&w->lm_head) + tensor_bytes(&w->final_norm);
    if (w->embed.data) total += (size_t)w->embed.cols * dtype_size(w->embed.dtype);
    if (w->embed_ple.data) total += (size_t)w->embed_ple.cols * dtype_size(w->embed_ple.dtype);
    total += tensor_bytes(&w->ple_model_proj) + tensor_bytes(&w->ple_proj_norm);
    for (int i = 0; i < c->n_layers; i++) {
        const layer_weights *l = &w->layers[i];
        const tensor *all[] = {&l->input_norm,    &l->q_proj,    &l->q_norm,   &l->k_proj,
                               &l->v_proj,        &l->k_norm,    &l->o_proj,   &l->post_attn_norm,
                               &l->pre_ffn_norm,  &l->gate_proj, &l->up_proj,  &l->down_proj,
                               &l->post_ffn_norm, &l->ple_gate,  &l->ple_proj, &l->ple_post_norm};
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
            total += tensor_bytes(all[k]);
    }
    return total;
}
