/* config.c: see config.h. Defaults are those of transformers 5.17's Gemma4TextConfig
 * (configuration_gemma4.py); a key that is present must have the right JSON type, and a value
 * we cannot run is refused by name rather than silently run differently. */
#include "config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Where a message points: the file and, inside a gemma4 wrapper, the text_config prefix. */
typedef struct {
    const char *path;
    const char *prefix; /* "" or "text_config." */
    char *err;
    size_t errlen;
} ctx;

static int fail(const ctx *x, const char *key, const char *fmt, ...) PRINTF_LIKE(3, 4);
static int fail(const ctx *x, const char *key, const char *fmt, ...) {
    if (!x->err || !x->errlen) return -1;
    int n = snprintf(x->err, x->errlen, "%s: %s%s: ", x->path, x->prefix, key);
    if (n >= 0 && (size_t)n < x->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(x->err + n, x->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Largest size any dimension may claim: far above real models, low enough that products of
 * a few of them stay inside size_t and int arithmetic elsewhere. */
#define CONFIG_MAX_DIM (1 << 24)

static const cJSON *item(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

/* An integer in [min, max]; def when the key is absent or null (as for every getter below
 * but get_token, where null means "no such token"). */
static int get_int(const ctx *x, const cJSON *obj, const char *key, int def, int min, int max,
                   int *out) {
    const cJSON *v = item(obj, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
        return fail(x, key, "must be an integer");
    if (v->valuedouble < min || v->valuedouble > max)
        return fail(x, key, "%g is out of range [%d, %d]", v->valuedouble, min, max);
    *out = (int)v->valuedouble;
    return 0;
}

/* A token id: an integer >= 0, null (-1), or for eos a list whose first entry counts. */
static int get_token(const ctx *x, const cJSON *obj, const char *key, int def, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (cJSON_IsNull(v)) {
        *out = -1;
        return 0;
    }
    if (cJSON_IsArray(v)) {
        if (cJSON_GetArraySize(v) == 0) {
            *out = -1;
            return 0;
        }
        v = cJSON_GetArrayItem(v, 0);
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 ||
        v->valuedouble > CONFIG_MAX_DIM)
        return fail(x, key, "must be a token id, a list of them, or null");
    *out = (int)v->valuedouble;
    return 0;
}

static int get_float(const ctx *x, const cJSON *obj, const char *key, double def, float *out) {
    const cJSON *v = item(obj, key);
    if (!v) {
        *out = (float)def;
        return 0;
    }
    if (!cJSON_IsNumber(v)) return fail(x, key, "must be a number");
    *out = (float)v->valuedouble;
    return 0;
}

static int get_bool(const ctx *x, const cJSON *obj, const char *key, int def, int *out) {
    const cJSON *v = item(obj, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsBool(v)) return fail(x, key, "must be true or false");
    *out = cJSON_IsTrue(v);
    return 0;
}

/* rope_parameters[which]; defaults as Gemma4TextConfig's default_rope_params. */
static int get_rope(const ctx *x, const cJSON *rope, const char *which, int used, rope_params *r) {
    const int full = !strcmp(which, "full_attention");
    *r = (rope_params){.proportional = full,
                       .theta = full ? 1000000.0f : 10000.0f,
                       .partial_rotary_factor = full ? 0.25f : 1.0f,
                       .factor = 1.0f};
    if (!rope) return 0;
    const cJSON *p = item(rope, which);
    char key[96];
    snprintf(key, sizeof key, "rope_parameters.%s", which);
    if (!p) {
        if (used) return fail(x, key, "missing, but layer_types has layers of this type");
        return 0;
    }
    if (!cJSON_IsObject(p)) return fail(x, key, "must be an object");
    const cJSON *type = item(p, "rope_type");
    if (type && !cJSON_IsString(type)) return fail(x, key, "rope_type must be a string");
    const char *t = type ? type->valuestring : "default";
    if (!strcmp(t, "default"))
        r->proportional = 0;
    else if (!strcmp(t, "proportional"))
        r->proportional = 1;
    else
        return fail(x, key, "rope_type \"%s\" is not supported (default or proportional)", t);
    ctx sub = *x;
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s%s.", x->prefix, key);
    sub.prefix = prefix;
    if (!item(p, "rope_theta")) return fail(&sub, "rope_theta", "missing");
    if (get_float(&sub, p, "rope_theta", 0, &r->theta)) return -1;
    /* transformers' default RoPE ignores partial_rotary_factor; proportional reads it with
     * a default of 1.0 (modeling_rope_utils), as it reads "factor". */
    if (r->proportional) {
        if (get_float(&sub, p, "partial_rotary_factor", 1.0, &r->partial_rotary_factor)) return -1;
        if (get_float(&sub, p, "factor", 1.0, &r->factor)) return -1;
    } else {
        r->partial_rotary_factor = 1.0f;
        r->factor = 1.0f;
    }
    return 0;
}

static int get_layer_types(const ctx *x, const cJSON *text, model_config *c) {
    c->layer_types = xcalloc((size_t)c->n_layers, sizeof *c->layer_types);
    const cJSON *lt = item(text, "layer_types");
    if (!lt) {
        /* Gemma4TextConfig's default: every sixth layer is full attention. */
        for (int i = 0; i < c->n_layers; i++)
            c->layer_types[i] = (i + 1) % 6 ? LAYER_SLIDING : LAYER_FULL;
    } else {
        if (!cJSON_IsArray(lt)) return fail(x, "layer_types", "must be a list of strings");
        if (cJSON_GetArraySize(lt) != c->n_layers)
            return fail(x, "layer_types", "has %d entries but num_hidden_layers is %d",
                        cJSON_GetArraySize(lt), c->n_layers);
        for (int i = 0; i < c->n_layers; i++) {
            const cJSON *e = cJSON_GetArrayItem(lt, i);
            if (cJSON_IsString(e) && !strcmp(e->valuestring, "sliding_attention"))
                c->layer_types[i] = LAYER_SLIDING;
            else if (cJSON_IsString(e) && !strcmp(e->valuestring, "full_attention"))
                c->layer_types[i] = LAYER_FULL;
            else
                return fail(x, "layer_types",
                            "entry %d must be \"sliding_attention\" or \"full_attention\"", i);
        }
    }
    if (c->layer_types[c->n_layers - 1] != LAYER_FULL) {
        /* Gemma4TextConfig forces this (with a warning); so do we, to stay equal. */
        fprintf(stderr, "note: %s: layer_types: the last layer must use full_attention; using it\n",
                x->path);
        c->layer_types[c->n_layers - 1] = LAYER_FULL;
    }
    return 0;
}

/* per_layer_config as transformers 5.17 writes it: {"<layer>": {"head_dim": n,
 * "num_key_value_heads": n}}. model_config holds one override for all full-attention
 * layers, so that is what we accept. */
static int get_per_layer(const ctx *x, const cJSON *plc, model_config *c) {
    if (!cJSON_IsObject(plc)) return fail(x, "per_layer_config", "must be an object");
    int full_hd = -1, full_kv = -1, full_seen = 0, n_full = 0;
    for (int i = 0; i < c->n_layers; i++)
        n_full += c->layer_types[i] == LAYER_FULL;
    for (const cJSON *e = plc->child; e; e = e->next) {
        char key[96];
        snprintf(key, sizeof key, "per_layer_config.%s", e->string);
        char *end;
        long li = strtol(e->string, &end, 10);
        if (!e->string[0] || *end || li < 0 || li >= c->n_layers)
            return fail(x, key, "is not a layer index in [0, %d)", c->n_layers);
        if (!cJSON_IsObject(e)) return fail(x, key, "must be an object");
        int hd = -1, kv = -1;
        for (const cJSON *f = e->child; f; f = f->next) {
            int *dst = !strcmp(f->string, "head_dim")              ? &hd
                       : !strcmp(f->string, "num_key_value_heads") ? &kv
                                                                   : NULL;
            if (!dst)
                return fail(x, key, "overriding \"%s\" per layer is not supported", f->string);
            if (!cJSON_IsNumber(f) || f->valuedouble != floor(f->valuedouble) ||
                f->valuedouble < 1 || f->valuedouble > CONFIG_MAX_DIM)
                return fail(x, key, "\"%s\" must be a positive integer", f->string);
            *dst = (int)f->valuedouble;
        }
        if (c->layer_types[li] == LAYER_SLIDING) {
            if ((hd >= 0 && hd != c->head_dim) || (kv >= 0 && kv != c->n_kv_heads))
                return fail(x, key, "overriding a sliding layer's shape is not supported");
            continue;
        }
        if (full_seen && (hd != full_hd || kv != full_kv))
            return fail(x, key, "full-attention layers with different shapes are not supported");
        full_seen++;
        full_hd = hd;
        full_kv = kv;
    }
    if (full_seen && full_seen != n_full)
        return fail(x, "per_layer_config",
                    "overrides %d of the %d full-attention layers: "
                    "mixed full-layer shapes are not supported",
                    full_seen, n_full);
    c->global_head_dim = full_hd > 0 ? full_hd : c->head_dim;
    c->n_global_kv_heads = 0;
    if (full_kv > 0 && full_kv != c->n_kv_heads) {
        if (!c->attention_k_eq_v)
            return fail(x, "per_layer_config",
                        "full layers with %d kv heads (num_key_value_heads %d) without "
                        "attention_k_eq_v are not supported",
                        full_kv, c->n_kv_heads);
        c->n_global_kv_heads = full_kv;
    }
    return 0;
}

static int parse_text(const ctx *x, const cJSON *t, model_config *c) {
    const int M = CONFIG_MAX_DIM;
    const cJSON *act = item(t, "hidden_activation");
    if (act && (!cJSON_IsString(act) || strcmp(act->valuestring, "gelu_pytorch_tanh")))
        return fail(x, "hidden_activation", "only \"gelu_pytorch_tanh\" is supported");
    int moe = 0, bias = 0; /* set by get_bool; initialised for -O3, which cannot see that */
    if (get_bool(x, t, "enable_moe_block", 0, &moe)) return -1;
    if (moe)
        return fail(x, "enable_moe_block",
                    "the Mixture-of-Experts variant is not supported by this engine");
    if (get_bool(x, t, "attention_bias", 0, &bias)) return -1;
    if (bias) return fail(x, "attention_bias", "attention biases are not supported");
    const cJSON *bidi = item(t, "use_bidirectional_attention");
    if (bidi && !(cJSON_IsString(bidi) && !strcmp(bidi->valuestring, "vision")))
        return fail(x, "use_bidirectional_attention",
                    "only null or \"vision\" (causal text attention) is supported");

    if (get_int(x, t, "vocab_size", 262144, 1, M, &c->vocab) ||
        get_int(x, t, "hidden_size", 2304, 1, M, &c->hidden) ||
        get_int(x, t, "intermediate_size", 9216, 1, M, &c->intermediate) ||
        get_int(x, t, "num_hidden_layers", 30, 1, 4096, &c->n_layers) ||
        get_int(x, t, "num_attention_heads", 8, 1, 4096, &c->n_heads) ||
        get_int(x, t, "num_key_value_heads", 4, 1, 4096, &c->n_kv_heads) ||
        get_int(x, t, "head_dim", 256, 1, 65536, &c->head_dim) ||
        get_int(x, t, "max_position_embeddings", 131072, 1, M, &c->max_positions) ||
        get_int(x, t, "sliding_window", 512, 1, M, &c->sliding_window) ||
        get_int(x, t, "vocab_size_per_layer_input", 262144, 1, M, &c->ple_vocab) ||
        get_int(x, t, "hidden_size_per_layer_input", 256, 0, 65536, &c->ple_dim) ||
        get_int(x, t, "num_kv_shared_layers", 0, 0, 4096, &c->num_kv_shared_layers))
        return -1;
    if (get_float(x, t, "rms_norm_eps", 1e-6, &c->rms_eps)) return -1;
    c->final_softcap = 0; /* null or absent: no softcapping */
    if (item(t, "final_logit_softcapping") &&
        get_float(x, t, "final_logit_softcapping", 0, &c->final_softcap))
        return -1;
    if (c->final_softcap < 0) return fail(x, "final_logit_softcapping", "must be >= 0 or null");
    if (get_bool(x, t, "attention_k_eq_v", 0, &c->attention_k_eq_v) ||
        get_bool(x, t, "use_double_wide_mlp", 0, &c->use_double_wide_mlp) ||
        get_bool(x, t, "tie_word_embeddings", 1, &c->tie_embeddings))
        return -1;
    if (get_token(x, t, "bos_token_id", 2, &c->bos_id) ||
        get_token(x, t, "eos_token_id", 1, &c->eos_id) ||
        get_token(x, t, "pad_token_id", 0, &c->pad_id))
        return -1;

    if (get_layer_types(x, t, c)) return -1;
    int any_sliding = 0, any_full = 0;
    for (int i = 0; i < c->n_layers; i++) {
        any_sliding |= c->layer_types[i] == LAYER_SLIDING;
        any_full |= c->layer_types[i] == LAYER_FULL;
    }
    const cJSON *rope = item(t, "rope_parameters");
    if (rope && !cJSON_IsObject(rope)) return fail(x, "rope_parameters", "must be an object");
    if (rope && item(rope, "rope_type"))
        return fail(x, "rope_parameters",
                    "expected one entry per layer type (sliding_attention, full_attention)");
    if (get_rope(x, rope, "sliding_attention", any_sliding, &c->rope_sliding) ||
        get_rope(x, rope, "full_attention", any_full, &c->rope_full))
        return -1;

    const cJSON *plc = item(t, "per_layer_config");
    if (plc) {
        if (item(t, "global_head_dim") || item(t, "num_global_key_value_heads"))
            return fail(x, "per_layer_config",
                        "given together with global_head_dim / num_global_key_value_heads");
        return get_per_layer(x, plc, c);
    }
    /* Gemma4TextConfig.__post_init__: global_head_dim defaults to 512; the global kv-head
     * count applies only with attention_k_eq_v (model_config_derive gates it so). */
    if (get_int(x, t, "global_head_dim", 512, 1, 65536, &c->global_head_dim) ||
        get_int(x, t, "num_global_key_value_heads", 0, 1, 4096, &c->n_global_kv_heads))
        return -1;
    return 0;
}

int config_parse(const char *text, size_t len, const char *path, model_config *c, config_info *info,
                 char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    memset(info, 0, sizeof *info);
    ctx x = {path, "", err, errlen};
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        long off = at && at >= text && at <= text + len ? (long)(at - text) : -1;
        int line = 1;
        for (long i = 0; i < off; i++)
            line += text[i] == '\n';
        snprintf(err, errlen, "%s: line %d: not valid JSON (error near byte %ld)", path, line, off);
        return -1;
    }
    int rc = -1;
    const cJSON *text_cfg = root, *mt;
    if (!cJSON_IsObject(root)) {
        snprintf(err, errlen, "%s: not a JSON object", path);
        goto done;
    }
    mt = item(root, "model_type");
    if (!mt || !cJSON_IsString(mt)) {
        fail(&x, "model_type", "missing (expected \"gemma4_text\" or \"gemma4\")");
        goto done;
    }
    if (!strcmp(mt->valuestring, "gemma4")) {
        text_cfg = item(root, "text_config");
        if (!cJSON_IsObject(text_cfg)) {
            fail(&x, "text_config", "model_type gemma4 needs a text_config object");
            goto done;
        }
        const cJSON *tmt = item(text_cfg, "model_type");
        if (tmt && (!cJSON_IsString(tmt) || strcmp(tmt->valuestring, "gemma4_text"))) {
            fail(&x, "text_config.model_type", "must be \"gemma4_text\"");
            goto done;
        }
        info->wrapped = 1;
        x.prefix = "text_config.";
        fprintf(stderr,
                "note: %s: model_type gemma4: decoding text with its text_config; the vision "
                "and audio towers are skipped\n",
                path);
    } else if (strcmp(mt->valuestring, "gemma4_text")) {
        fail(&x, "model_type", "\"%s\" is not supported (expected \"gemma4_text\" or \"gemma4\")",
             mt->valuestring);
        goto done;
    }
    if (parse_text(&x, text_cfg, c)) goto done;
    /* The dtype the weights were saved in (transformers writes "dtype", older files
     * "torch_dtype"), text_config's first: the loader checks the tensors' labels against it. */
    c->weights_dtype = -1;
    const cJSON *const where[] = {text_cfg, root};
    for (int w = 0; w < 2 && c->weights_dtype < 0; w++)
        for (int k = 0; k < 2 && c->weights_dtype < 0; k++) {
            const cJSON *d = item(where[w], k ? "torch_dtype" : "dtype");
            if (!cJSON_IsString(d)) continue;
            c->weights_dtype = !strcmp(d->valuestring, "bfloat16")  ? DT_BF16
                               : !strcmp(d->valuestring, "float16") ? DT_F16
                               : !strcmp(d->valuestring, "float32") ? DT_F32
                                                                    : -1;
        }
    info->tie_embeddings = c->tie_embeddings;
    if (info->wrapped) {
        /* Gemma4ForConditionalGeneration ties by the wrapper's own flag. */
        ctx top = {path, "", err, errlen};
        if (get_bool(&top, root, "tie_word_embeddings", c->tie_embeddings, &info->tie_embeddings))
            goto done;
        c->tie_embeddings = info->tie_embeddings;
    }
    char derr[512];
    if (model_config_derive(c, derr, sizeof derr)) {
        snprintf(err, errlen, "%s: %s%s", path, x.prefix, derr);
        goto done;
    }
    rc = 0;
done:
    cJSON_Delete(root);
    if (rc) model_config_free(c);
    return rc;
}

int config_load(const char *dir, model_config *c, config_info *info, char *err, size_t errlen) {
    char *path = xasprintf("%s/config.json", dir);
    size_t len;
    char *text = file_read_all(path, &len, err, errlen);
    int rc = -1;
    if (text) rc = config_parse(text, len, path, c, info, err, errlen);
    free(text);
    free(path);
    return rc;
}
