/* assistant.c: loading a gemma4_assistant folder and running its draft steps (assistant.h).
 *
 * Loading reuses the target's config parser for the drafter's text_config (it is a Gemma 4
 * text config whose layers are all kv-shared): the object is copied, its kv-sharing and
 * per-layer-embedding fields are checked against what Gemma4AssistantConfig requires and
 * neutralised, and the copy goes through config_parse(), so every key is read with the same
 * defaults and checks as for the target. The weights are mmapped (safetensors.c) and checked
 * by name and shape; anything missing or left over is reported by name.
 *
 * The step is written as calls on the target decoder's backend (backend.h), like forward.c,
 * and attends to the target's KV rings directly. The head's clusters are contiguous rows of
 * head_by_cluster, so scoring a cluster is one matmul over per_centroid rows.
 *
 * Two ways through the head. The reference way (every backend; the one the tests read scores
 * from) downloads the centroid scores, picks the clusters on the host, runs one matmul per
 * cluster and picks the token on the host. A backend with draft_head and embed_dev (CUDA) does
 * all of that on the device and leaves the token there, where the next step's embedding reads
 * it: drafter_draft then issues its k steps as one recorded step of the backend (a CUDA graph,
 * replayed from the third round on) and downloads the k tokens once at the end. */
#include "assistant.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "decoder.h"
#include "safetensors.h"
#include "util.h"

typedef struct {
    safetensors st;
    void *head_copy; /* head_by_cluster's rows */
} storage;

/* ---------------------------------------------------------------------------------------- */
/* config.json                                                                              */

static int cfg_fail(char *err, size_t errlen, const char *path, const char *key, const char *fmt,
                    ...) PRINTF_LIKE(5, 6);
static int cfg_fail(char *err, size_t errlen, const char *path, const char *key, const char *fmt,
                    ...) {
    int n = snprintf(err, errlen, "%s: %s: ", path, key);
    if (n < 0 || (size_t)n >= errlen) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* An integer key (absent: def). */
static int cfg_int(const cJSON *o, const char *key, int def, int *out, const char *path, char *err,
                   size_t errlen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 ||
        v->valuedouble > 1e9)
        return cfg_fail(err, errlen, path, key, "must be a non-negative integer");
    *out = (int)v->valuedouble;
    return 0;
}

static int cfg_bool(const cJSON *o, const char *key, int def, int *out, const char *path, char *err,
                    size_t errlen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsBool(v)) return cfg_fail(err, errlen, path, key, "must be true or false");
    *out = cJSON_IsTrue(v);
    return 0;
}

/* Parse the assistant's config.json into a (config, the top-level fields). */
static int assistant_config(assistant *a, const char *dir, char *err, size_t errlen) {
    char *path = xasprintf("%s/config.json", dir);
    size_t len;
    char *text = file_read_all(path, &len, err, errlen);
    cJSON *root = text ? cJSON_ParseWithLength(text, len) : NULL, *tc = NULL;
    int rc = -1, n_layers = 0, shared = 0, v_ple = 0, ple = 0, dw = 0, tie = 1;
    if (!text) goto done;
    if (!root) {
        snprintf(err, errlen, "%s: not valid JSON", path);
        goto done;
    }
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (!cJSON_IsString(mt) || strcmp(mt->valuestring, "gemma4_assistant")) {
        cfg_fail(err, errlen, path, "model_type", "must be \"gemma4_assistant\" (an MTP drafter)");
        goto done;
    }
    if (cfg_int(root, "backbone_hidden_size", 1536, &a->backbone_hidden, path, err, errlen) ||
        cfg_bool(root, "use_ordered_embeddings", 0, &a->ordered, path, err, errlen) ||
        cfg_int(root, "num_centroids", 2048, &a->n_centroids, path, err, errlen) ||
        cfg_int(root, "centroid_intermediate_top_k", 32, &a->default_top_k, path, err, errlen) ||
        cfg_bool(root, "tie_word_embeddings", 1, &tie, path, err, errlen))
        goto done;
    if (a->backbone_hidden < 1) {
        cfg_fail(err, errlen, path, "backbone_hidden_size", "must be > 0");
        goto done;
    }
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "text_config");
    if (!cJSON_IsObject(t)) {
        cfg_fail(err, errlen, path, "text_config", "missing or not an object");
        goto done;
    }
    /* Gemma4AssistantConfig.validate_architecture: no PLE, no double-wide MLP, every layer
     * kv-shared (0 or absent means "all", as its __post_init__ sets). */
    if (cfg_int(t, "num_hidden_layers", 30, &n_layers, path, err, errlen) ||
        cfg_int(t, "num_kv_shared_layers", 0, &shared, path, err, errlen) ||
        cfg_int(t, "vocab_size_per_layer_input", 0, &v_ple, path, err, errlen) ||
        cfg_int(t, "hidden_size_per_layer_input", 256, &ple, path, err, errlen) ||
        cfg_bool(t, "use_double_wide_mlp", 0, &dw, path, err, errlen))
        goto done;
    if (shared && shared != n_layers) {
        cfg_fail(err, errlen, path, "text_config.num_kv_shared_layers",
                 "must equal num_hidden_layers (%d): every drafter layer reads the target's KV; "
                 "got %d",
                 n_layers, shared);
        goto done;
    }
    if (ple || v_ple) {
        cfg_fail(err, errlen, path,
                 ple ? "text_config.hidden_size_per_layer_input"
                     : "text_config.vocab_size_per_layer_input",
                 "must be 0 for an assistant (no per-layer embeddings)");
        goto done;
    }
    if (dw) {
        cfg_fail(err, errlen, path, "text_config.use_double_wide_mlp", "must be false");
        goto done;
    }
    /* The rest is an ordinary text config: parse a copy without the kv-sharing (the drafter's
     * sharing is with the target, not among its own layers). */
    tc = cJSON_Duplicate(t, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(tc, "model_type");
    cJSON_AddStringToObject(tc, "model_type", "gemma4_text");
    cJSON_DeleteItemFromObjectCaseSensitive(tc, "num_kv_shared_layers");
    cJSON_DeleteItemFromObjectCaseSensitive(tc, "vocab_size_per_layer_input");
    cJSON_DeleteItemFromObjectCaseSensitive(tc, "tie_word_embeddings");
    cJSON_AddBoolToObject(tc, "tie_word_embeddings", tie);
    char *sub = cJSON_PrintUnformatted(tc);
    CHECK(sub);
    char *where = xasprintf("%s (text_config)", path);
    config_info info;
    rc = config_parse(sub, strlen(sub), where, &a->config, &info, err, errlen);
    free(where);
    free(sub);
    if (rc) goto done;
    rc = -1;
    if (a->ordered) {
        if (a->n_centroids < 1 || a->config.vocab % a->n_centroids) {
            cfg_fail(err, errlen, path, "num_centroids",
                     "must be > 0 and divide the vocabulary (%d); got %d", a->config.vocab,
                     a->n_centroids);
            goto done;
        }
        if (a->default_top_k < 1 || a->default_top_k > a->n_centroids) {
            cfg_fail(err, errlen, path, "centroid_intermediate_top_k",
                     "must be between 1 and num_centroids (%d); got %d", a->n_centroids,
                     a->default_top_k);
            goto done;
        }
        a->per_centroid = a->config.vocab / a->n_centroids;
    }
    rc = 0;
done:
    cJSON_Delete(tc);
    cJSON_Delete(root);
    free(text);
    free(path);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Weights                                                                                  */

typedef struct {
    const safetensors *st;
    char *used; /* [n_tensors] */
    const char *dir;
    char *err;
    size_t errlen;
    int failed;
} wloader;

/* Take `name` with shape [rows, cols] ([rows] when cols is 0). */
static const st_tensor *take(wloader *L, tensor *out, int optional, int rows, int cols,
                             const char *fmt, ...) PRINTF_LIKE(6, 7);
static const st_tensor *take(wloader *L, tensor *out, int optional, int rows, int cols,
                             const char *fmt, ...) {
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    memset(out, 0, sizeof *out);
    if (L->failed) return NULL;
    const st_tensor *t = safetensors_find(L->st, name);
    if (!t) {
        if (!optional) {
            snprintf(L->err, L->errlen, "%s: tensor %s is missing from the checkpoint", L->dir,
                     name);
            L->failed = 1;
        }
        return NULL;
    }
    L->used[t - L->st->tensors] = 1;
    if (tensor_from_checkpoint(out, t, L->st->files[t->file].path, name, rows, cols, L->dir, L->err,
                               L->errlen)) {
        L->failed = 1;
        return NULL;
    }
    return t;
}

static void load_layer(wloader *L, const model_config *c, int i, assistant_layer *w) {
    const layer_config *l = &c->layers[i];
    const int H = c->hidden, q_dim = c->n_heads * l->head_dim;
    take(L, &w->input_norm, 0, H, 0, "model.layers.%d.input_layernorm.weight", i);
    take(L, &w->q_proj, 0, q_dim, H, "model.layers.%d.self_attn.q_proj.weight", i);
    take(L, &w->q_norm, 0, l->head_dim, 0, "model.layers.%d.self_attn.q_norm.weight", i);
    take(L, &w->o_proj, 0, H, q_dim, "model.layers.%d.self_attn.o_proj.weight", i);
    take(L, &w->post_attn_norm, 0, H, 0, "model.layers.%d.post_attention_layernorm.weight", i);
    take(L, &w->pre_ffn_norm, 0, H, 0, "model.layers.%d.pre_feedforward_layernorm.weight", i);
    take(L, &w->gate_proj, 0, l->intermediate, H, "model.layers.%d.mlp.gate_proj.weight", i);
    take(L, &w->up_proj, 0, l->intermediate, H, "model.layers.%d.mlp.up_proj.weight", i);
    take(L, &w->down_proj, 0, H, l->intermediate, "model.layers.%d.mlp.down_proj.weight", i);
    take(L, &w->post_ffn_norm, 0, H, 0, "model.layers.%d.post_feedforward_layernorm.weight", i);
    tensor s;
    const st_tensor *t = take(L, &s, 1, 1, 0, "model.layers.%d.layer_scalar", i);
    w->layer_scalar = 1.0f;
    if (t) st_to_f32(t, &w->layer_scalar);
}

/* token_ordering: an integer vector that must be a permutation of the vocabulary (cluster c's
 * tokens are entries c*per_centroid..). */
static void load_ordering(wloader *L, assistant *a) {
    const char *name = "masked_embedding.token_ordering";
    const st_tensor *t = safetensors_find(L->st, name);
    const int V = a->config.vocab;
    if (L->failed) return;
    if (!t) {
        snprintf(L->err, L->errlen, "%s: tensor %s is missing from the checkpoint", L->dir, name);
        L->failed = 1;
        return;
    }
    L->used[t - L->st->tensors] = 1;
    const char *file = L->st->files[t->file].path;
    if (t->ndim != 1 || t->shape[0] != V || (t->dtype != ST_I64 && t->dtype != ST_I32)) {
        char shape[96];
        snprintf(L->err, L->errlen, "%s: tensor %s must be I64 or I32 of shape [%d]; got %s %s",
                 file, name, V, st_dtype_name(t->dtype), st_shape_str(t, shape, sizeof shape));
        L->failed = 1;
        return;
    }
    a->token_ordering = xmalloc((size_t)V * sizeof(int));
    char *seen = xcalloc((size_t)V, 1);
    for (int i = 0; i < V && !L->failed; i++) {
        int64_t v;
        if (t->dtype == ST_I64)
            memcpy(&v, (const char *)t->data + (size_t)i * 8, 8);
        else {
            int32_t w;
            memcpy(&w, (const char *)t->data + (size_t)i * 4, 4);
            v = w;
        }
        if (v < 0 || v >= V || seen[v]) {
            snprintf(L->err, L->errlen,
                     "%s: tensor %s: entry %d is %lld, %s (it must be a permutation of the "
                     "vocabulary)",
                     file, name, i, (long long)v,
                     v < 0 || v >= V ? "outside the vocabulary" : "a repeat");
            L->failed = 1;
            break;
        }
        seen[v] = 1;
        a->token_ordering[i] = (int)v;
    }
    free(seen);
}

static int load_weights(wloader *L, assistant *a, storage *s) {
    const model_config *c = &a->config;
    const int H = c->hidden, B = a->backbone_hidden;
    take(L, &a->pre_proj, 0, H, 2 * B, "pre_projection.weight");
    take(L, &a->post_proj, 0, B, H, "post_projection.weight");
    take(L, &a->final_norm, 0, H, 0, "model.norm.weight");
    tensor embed;
    take(L, &embed, 0, c->vocab, H, "model.embed_tokens.weight");
    if (c->tie_embeddings)
        a->lm_head = embed;
    else
        take(L, &a->lm_head, 0, c->vocab, H, "lm_head.weight");
    a->layers = xcalloc((size_t)c->n_layers, sizeof *a->layers);
    for (int i = 0; i < c->n_layers; i++)
        load_layer(L, c, i, &a->layers[i]);
    if (a->ordered) {
        take(L, &a->centroids, 0, a->n_centroids, H, "masked_embedding.centroids.weight");
        load_ordering(L, a);
    }
    if (L->failed) return -1;
    for (int i = 0; i < L->st->n_tensors; i++) {
        const char *name = L->st->tensors[i].name;
        if (L->used[i] || (c->tie_embeddings && !strcmp(name, "lm_head.weight"))) continue;
        snprintf(L->err, L->errlen,
                 "%s: unexpected tensor %s for this config.json (does it match the checkpoint?)",
                 L->dir, name);
        return -1;
    }
    if (a->ordered) {
        /* The head's rows in cluster order: cluster c is rows c*per_centroid.. of one tensor. */
        const size_t row = (size_t)H * dtype_size(a->lm_head.dtype);
        char *copy = xmalloc((size_t)c->vocab * row);
        for (int i = 0; i < c->vocab; i++)
            memcpy(copy + (size_t)i * row,
                   (const char *)a->lm_head.data + (size_t)a->token_ordering[i] * row, row);
        s->head_copy = copy;
        a->head_by_cluster = a->lm_head;
        a->head_by_cluster.data = copy;
    }
    return 0;
}

assistant *assistant_load(const char *dir, char *err, size_t errlen) {
    assistant *a = xcalloc(1, sizeof *a);
    storage *s = xcalloc(1, sizeof *s);
    a->storage = s;
    if (assistant_config(a, dir, err, errlen)) goto fail;
    if (safetensors_open_dir(&s->st, dir, err, errlen)) goto fail;
    wloader L = {&s->st, xcalloc((size_t)s->st.n_tensors + 1, 1), dir, err, errlen, 0};
    int rc = load_weights(&L, a, s);
    free(L.used);
    if (rc) goto fail;
    return a;
fail:
    assistant_free(a);
    return NULL;
}

void assistant_free(assistant *a) {
    if (!a) return;
    storage *s = a->storage;
    if (s) {
        safetensors_close(&s->st);
        free(s->head_copy);
        free(s);
    }
    free(a->layers);
    free(a->token_ordering);
    model_config_free(&a->config);
    free(a);
}

/* The target layer whose KV a drafter layer of this type reads: the last non-shared layer of
 * the type (store_full_length_kv in the reference); -1 when there is none. */
static int kv_source(const model_config *t, layer_type type) {
    int src = -1;
    for (int i = 0; i < t->n_layers; i++)
        if (!t->layers[i].kv_shared && t->layers[i].type == type) src = i;
    return src;
}

int assistant_check_target(const assistant *a, const model *m, char *err, size_t errlen) {
    const model_config *t = &m->config, *c = &a->config;
    if (a->backbone_hidden != t->hidden) {
        snprintf(err, errlen,
                 "assistant backbone_hidden_size %d does not match the target's hidden_size %d",
                 a->backbone_hidden, t->hidden);
        return -1;
    }
    if (c->vocab != t->vocab) {
        snprintf(err, errlen, "assistant vocab_size %d does not match the target's %d", c->vocab,
                 t->vocab);
        return -1;
    }
    for (int i = 0; i < c->n_layers; i++) {
        const layer_config *l = &c->layers[i];
        const char *type = l->type == LAYER_SLIDING ? "sliding_attention" : "full_attention";
        int src = kv_source(t, l->type);
        if (src < 0) {
            snprintf(err, errlen, "assistant layer %d is %s, but the target has no such layer", i,
                     type);
            return -1;
        }
        const layer_config *s = &t->layers[src];
        if (s->head_dim != l->head_dim || s->n_kv_heads != l->n_kv_heads) {
            snprintf(err, errlen,
                     "assistant layer %d (%s): head_dim %d x %d kv heads, but the target's KV "
                     "(layer %d) has head_dim %d x %d kv heads",
                     i, type, l->head_dim, l->n_kv_heads, src, s->head_dim, s->n_kv_heads);
            return -1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The drafter                                                                              */

struct drafter {
    const assistant *a;
    decoder *d;
    backend *b;
    int top_k;          /* clusters scored */
    int window;         /* window of the sliding layers, in positions before the query */
    int *src;           /* [n_layers] target layer whose KV each drafter layer reads */
    float *inv_freq[2]; /* [head_dim/2] RoPE frequencies per layer type (LAYER_SLIDING/FULL) */

    float *h;      /* [backbone_hidden] the carried hidden state */
    float *in;     /* [2 * backbone_hidden] [embedding, h] */
    float *x;      /* [hidden] residual stream */
    float *xn;     /* [hidden] */
    float *o;      /* [hidden] */
    float *q;      /* [max_q_dim] */
    float *att;    /* [max_q_dim] */
    float *gate;   /* [max_intermediate] */
    float *up;     /* [max_intermediate] */
    float *scores; /* [vocab + n_centroids] centroid scores, then token logits (the device
                      head keeps both: logits from scores + n_centroids) */

    float *host_scores; /* [vocab] host copy */
    int *clusters;      /* [top_k] chosen clusters */

    /* The device head (on_device: the backend has draft_head and embed_dev, and the head is
     * the centroid-masked one). Int words in backend buffers. */
    int on_device;
    int *ids_dev;  /* [DRAFTER_MAX_STEPS] the tokens of a draft chain, step by step */
    int *work_dev; /* [top_k + 4] draft_head's scratch */
    int graph_key; /* the backend's step key of a k-step chain is graph_key + k */
};

/* Step keys of the backend's recorded steps: forward.c uses small ones (rows with logits);
 * each drafter takes its own block above them, so a drafter made later on the same backend
 * never replays another one's graph (whose buffers may be gone). */
static int drafter_serial;

drafter *drafter_new(const assistant *a, decoder *d, int top_k, char *err, size_t errlen) {
    if (assistant_check_target(a, d->m, err, errlen)) return NULL;
    const model_config *c = &a->config;
    if (top_k == 0) top_k = a->default_top_k;
    if (a->ordered && (top_k < 1 || top_k > a->n_centroids)) {
        snprintf(err, errlen,
                 "CENTROID_TOP_K=%d: must be between 1 and the assistant's "
                 "num_centroids (%d)",
                 top_k, a->n_centroids);
        return NULL;
    }
    drafter *dr = xcalloc(1, sizeof *dr);
    backend *b = dr->b = d->b;
    dr->a = a;
    dr->d = d;
    dr->top_k = a->ordered ? top_k : 0;
    dr->window = c->sliding_window + 1;
    if (dr->window > d->sliding_window) dr->window = d->sliding_window;
    dr->src = xmalloc((size_t)c->n_layers * sizeof(int));
    for (int i = 0; i < c->n_layers; i++) {
        const layer_config *l = &c->layers[i];
        dr->src[i] = kv_source(&d->m->config, l->type);
        if (!dr->inv_freq[l->type])
            dr->inv_freq[l->type] = decoder_rope_table(
                b, l->type == LAYER_SLIDING ? &c->rope_sliding : &c->rope_full, l->head_dim);
    }
    const int H = c->hidden, B = a->backbone_hidden;
    dr->h = b->alloc(b, (size_t)B);
    dr->in = b->alloc(b, 2 * (size_t)B);
    dr->x = b->alloc(b, (size_t)H);
    dr->xn = b->alloc(b, (size_t)H);
    dr->o = b->alloc(b, (size_t)H);
    dr->q = b->alloc(b, (size_t)c->max_q_dim);
    dr->att = b->alloc(b, (size_t)c->max_q_dim);
    dr->gate = b->alloc(b, (size_t)c->max_intermediate);
    dr->up = b->alloc(b, (size_t)c->max_intermediate);
    dr->scores = b->alloc(b, (size_t)c->vocab + (size_t)(a->ordered ? a->n_centroids : 0));
    dr->host_scores = xmalloc((size_t)c->vocab * sizeof(float));
    dr->clusters = xmalloc((size_t)(dr->top_k ? dr->top_k : 1) * sizeof(int));
    dr->on_device = a->ordered && b->draft_head && b->embed_dev;
    if (dr->on_device) {
        /* a backend buffer holds 4-byte words; these hold ints */
        dr->ids_dev = (int *)b->alloc(b, DRAFTER_MAX_STEPS);
        dr->work_dev = (int *)b->alloc(b, (size_t)dr->top_k + 4);
    }
    dr->graph_key = (1 << 24) + (drafter_serial++ % (1 << 18)) * 32;
    return dr;
}

void drafter_free(drafter *dr) {
    if (!dr) return;
    backend *b = dr->b;
    float *bufs[] = {dr->inv_freq[0], dr->inv_freq[1], dr->h,   dr->in,   dr->x,  dr->xn,
                     dr->o,           dr->q,           dr->att, dr->gate, dr->up, dr->scores};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) b->release(b, bufs[i]);
    if (dr->ids_dev) b->release(b, (float *)dr->ids_dev);
    if (dr->work_dev) b->release(b, (float *)dr->work_dev);
    free(dr->src);
    free(dr->host_scores);
    free(dr->clusters);
    free(dr);
}

int drafter_top_k(const drafter *dr) {
    return dr->top_k;
}

int drafter_sliding_window(const drafter *dr) {
    return dr->window;
}

void drafter_begin(drafter *dr, int row) {
    const decoder *d = dr->d;
    CHECK(row >= 0 && row < d->hidden_rows);
    dr->b->copy(dr->b, dr->h, d->hidden + (size_t)row * d->m->config.hidden,
                (size_t)dr->a->backbone_hidden);
}

void drafter_projected(const drafter *dr, float *out) {
    dr->b->download(dr->b, out, dr->h, (size_t)dr->a->backbone_hidden);
}

/* One query-only layer at position pos over the target's cache (positions < pos). */
static void drafter_layer(drafter *dr, int i, int pos) {
    const model_config *c = &dr->a->config;
    const layer_config *l = &c->layers[i];
    const assistant_layer *w = &dr->a->layers[i];
    const decoder *d = dr->d;
    backend *b = dr->b;
    const int H = c->hidden, hd = l->head_dim, src = dr->src[i];

    b->rmsnorm(b, dr->xn, dr->x, &w->input_norm, 1, H, c->rms_eps);
    b->matmul(b, dr->q, &w->q_proj, dr->xn, 1);
    b->rmsnorm(b, dr->q, dr->q, &w->q_norm, c->n_heads, hd, c->rms_eps);
    b->rope(b, dr->q, 1, c->n_heads, hd, pos, dr->inv_freq[l->type]);
    /* The attention op's query "at" pos - 1 sees pos - window .. pos - 1 (all of 0 .. pos - 1
     * on full layers): exactly the cached positions the drafter may read. */
    b->attention(b, dr->att, dr->q, d->k_cache[src], d->v_cache[src], 1, pos - 1, d->cache_len[src],
                 l->type == LAYER_SLIDING ? dr->window : 0, c->n_heads, l->n_kv_heads, hd);
    b->matmul(b, dr->o, &w->o_proj, dr->att, 1);
    b->rmsnorm(b, dr->o, dr->o, &w->post_attn_norm, 1, H, c->rms_eps);
    b->add(b, dr->x, dr->x, dr->o, (size_t)H);

    b->rmsnorm(b, dr->xn, dr->x, &w->pre_ffn_norm, 1, H, c->rms_eps);
    b->matmul(b, dr->gate, &w->gate_proj, dr->xn, 1);
    b->matmul(b, dr->up, &w->up_proj, dr->xn, 1);
    b->gelu_mul(b, dr->gate, dr->gate, dr->up, 1, l->intermediate, l->intermediate);
    b->matmul(b, dr->o, &w->down_proj, dr->gate, 1);
    b->rmsnorm(b, dr->o, dr->o, &w->post_ffn_norm, 1, H, c->rms_eps);
    b->add(b, dr->x, dr->x, dr->o, (size_t)H);
    if (w->layer_scalar != 1.0f) b->scale(b, dr->x, w->layer_scalar, (size_t)H);
}

/* Better of two scored tokens: the higher logit, the smaller id on a tie (torch.argmax over
 * the scattered vocabulary returns the first maximum). */
static int better(float s, int id, float best, int best_id) {
    return s > best || (s == best && id < best_id);
}

/* The top_k clusters by score (descending; ties to the lower index), into out. */
static void top_clusters(const float *score, int n, int k, int *out) {
    for (int j = 0; j < k; j++)
        out[j] = -1;
    for (int c = 0; c < n; c++) {
        int j = k;
        while (j > 0 && (out[j - 1] < 0 || score[c] > score[out[j - 1]]))
            j--;
        if (j == k) continue;
        memmove(out + j + 1, out + j, (size_t)(k - j - 1) * sizeof(int));
        out[j] = c;
    }
}

/* Everything of a step before the head: the token (x_host: a host word; else x_dev: a device
 * word, for embed_dev) and h through the layers; leaves the final-normed state in xn and h'
 * in h. */
static void drafter_trunk(drafter *dr, const int *x_host, const int *x_dev, int pos) {
    const assistant *a = dr->a;
    const model_config *c = &a->config;
    decoder *d = dr->d;
    backend *b = dr->b;
    const int B = a->backbone_hidden;

    /* in = [target_embed(x) * sqrt(H_target), h] -> pre_projection */
    if (x_host)
        b->embed(b, dr->in, &d->m->weights.embed, x_host, 1, d->embed_scale);
    else
        b->embed_dev(b, dr->in, &d->m->weights.embed, x_dev, 1, d->embed_scale);
    b->copy(b, dr->in + B, dr->h, (size_t)B);
    b->matmul(b, dr->x, &a->pre_proj, dr->in, 1);
    for (int i = 0; i < c->n_layers; i++)
        drafter_layer(dr, i, pos);
    b->rmsnorm(b, dr->xn, dr->x, &a->final_norm, 1, c->hidden, c->rms_eps);
    b->matmul(b, dr->h, &a->post_proj, dr->xn, 1);
}

/* The head on the device: the picked token goes to the device word id (no synchronisation). */
static void drafter_head_device(drafter *dr, int *id) {
    const assistant *a = dr->a;
    backend *b = dr->b;
    b->matmul(b, dr->scores, &a->centroids, dr->xn, 1);
    b->draft_head(b, id, dr->work_dev, dr->scores + a->n_centroids, dr->scores, a->n_centroids,
                  dr->top_k, &a->head_by_cluster, a->token_ordering, dr->xn);
}

/* The head the reference way: scores to the host, the pick there (see the top of the file). */
static int drafter_head_host(drafter *dr, int *ids, float *scores, int *n_scored) {
    const assistant *a = dr->a;
    const model_config *c = &a->config;
    backend *b = dr->b;
    int best_id = -1, n = 0;
    float best = -INFINITY;
    if (!a->ordered) {
        b->matmul(b, dr->scores, &a->lm_head, dr->xn, 1);
        n = c->vocab;
        if (ids || scores) b->download(b, dr->host_scores, dr->scores, (size_t)n);
        best_id = b->argmax(b, dr->scores, n);
        for (int i = 0; i < n && (ids || scores); i++) {
            if (ids) ids[i] = i;
            if (scores) scores[i] = dr->host_scores[i];
        }
    } else {
        /* Centroid scores -> top clusters -> exact logits for their tokens only. */
        const int K = dr->top_k, per = a->per_centroid;
        b->matmul(b, dr->scores, &a->centroids, dr->xn, 1);
        b->download(b, dr->host_scores, dr->scores, (size_t)a->n_centroids);
        top_clusters(dr->host_scores, a->n_centroids, K, dr->clusters);
        const size_t row = (size_t)c->hidden * dtype_size(a->head_by_cluster.dtype);
        for (int j = 0; j < K; j++) {
            tensor rows = a->head_by_cluster;
            rows.data = (const char *)rows.data + (size_t)dr->clusters[j] * per * row;
            rows.rows = per;
            b->matmul(b, dr->scores + (size_t)j * per, &rows, dr->xn, 1);
        }
        n = K * per;
        b->download(b, dr->host_scores, dr->scores, (size_t)n);
        for (int j = 0; j < K; j++)
            for (int t = 0; t < per; t++) {
                int id = a->token_ordering[dr->clusters[j] * per + t];
                float s = dr->host_scores[j * per + t];
                if (ids) ids[j * per + t] = id;
                if (scores) scores[j * per + t] = s;
                if (better(s, id, best, best_id)) {
                    best = s;
                    best_id = id;
                }
            }
    }
    if (n_scored) *n_scored = n;
    return best_id;
}

int drafter_step(drafter *dr, int x, int pos, int *ids, float *scores, int *n_scored) {
    const assistant *a = dr->a;
    decoder *d = dr->d;
    CHECK(pos >= 1 && pos <= d->pos && x >= 0 && x < a->config.vocab);
    drafter_trunk(dr, &x, NULL, pos);
    if (!dr->on_device || ids || scores) return drafter_head_host(dr, ids, scores, n_scored);
    drafter_head_device(dr, dr->ids_dev);
    float word;
    dr->b->download(dr->b, &word, (const float *)dr->ids_dev, 1);
    int id;
    memcpy(&id, &word, sizeof id); /* the word holds an int */
    if (n_scored) *n_scored = dr->top_k * a->per_centroid;
    return id;
}

int drafter_draft(drafter *dr, int row, int x, int pos, int k, int *out) {
    CHECK(k >= 1 && k <= DRAFTER_MAX_STEPS);
    drafter_begin(dr, row);
    if (!dr->on_device) {
        for (int i = 0; i < k; i++)
            out[i] = x = drafter_step(dr, x, pos, NULL, NULL, NULL);
        return k;
    }
    CHECK(pos >= 1 && pos <= dr->d->pos && x >= 0 && x < dr->a->config.vocab);
    /* The chain as one recorded step: x and pos reach a replay through the backend's step
     * parameters (the first embed takes x by this very pointer, as forward.c's steps do), and
     * later steps embed what the previous head left in ids_dev. */
    backend *b = dr->b;
    if (!(b->step_begin && b->step_begin(b, &x, 1, pos, dr->graph_key + k))) {
        for (int i = 0; i < k; i++) {
            drafter_trunk(dr, i == 0 ? &x : NULL, i == 0 ? NULL : dr->ids_dev + i - 1, pos);
            drafter_head_device(dr, dr->ids_dev + i);
        }
        if (b->step_end) b->step_end(b);
    }
    float words[DRAFTER_MAX_STEPS];
    b->download(b, words, (const float *)dr->ids_dev, (size_t)k);
    memcpy(out, words, (size_t)k * sizeof(int)); /* the words hold ints */
    return k;
}
