/* decoder.c: one decoding stream over a model - its knobs, KV cache and scratch buffers,
 * and decoder_forward(), which cuts its input into chunks for forward.c.
 *
 * KV cache sizing. Every layer that computes its own KV (the non-shared ones) gets a
 * [len][n_kv_heads * head_dim] ring for keys and one for values. Full-attention layers need
 * every position: len = max_model_len. A sliding layer with window W only ever reads the
 * last W positions, but a chunk of n new rows is written before it is attended to, and its
 * first row still needs the W - 1 positions before the chunk: len = W + DECODER_CHUNK - 1
 * (capped at max_model_len) is enough, and it also lets decoder_truncate() roll back up to
 * DECODER_CHUNK - 1 positions (speculative decoding) without losing anything a later query
 * needs. That is what makes SLIDING_WINDOW a memory and speed knob as well as a quality one. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder.h"
#include "util.h"
#ifdef ENGINE_WITH_CUDA
#include "backend_cuda.h"
#endif

static decoder *fail(decoder *d, char *err, size_t errlen, const char *fmt, ...) PRINTF_LIKE(4, 5);
static decoder *fail(decoder *d, char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    decoder_free(d);
    return NULL;
}

/* A scale as transformers applies it: computed in double, stored as an fp32 tensor, then
 * cast to the weight's dtype (sqrt(3072) = 55.4256 becomes 55.5 in bf16). */
static float round_to_dtype(double v, weight_dtype t) {
    float f = (float)v;
    if (t == DT_BF16) return bf16_to_f32(f32_to_bf16(f));
    if (t == DT_F16) return f16_to_f32(f32_to_f16(f));
    return f;
}

/* RoPE inverse frequencies for one layer type, as transformers' default and proportional
 * rope init functions compute them (the latter rotates only the first
 * partial_rotary_factor * head_dim / 2 pairs, with exponents over the full head_dim). */
float *decoder_rope_table(backend *b, const rope_params *r, int head_dim) {
    const int half = head_dim / 2;
    float *host = xcalloc((size_t)half, sizeof(float));
    if (r->proportional) {
        int angles = (int)floor(r->partial_rotary_factor * head_dim / 2.0);
        if (angles > half) angles = half;
        for (int i = 0; i < angles; i++)
            host[i] = (float)(1.0 / pow(r->theta, (double)(2 * i) / head_dim) / r->factor);
    } else {
        for (int i = 0; i < half; i++)
            host[i] = (float)(1.0 / pow(r->theta, (double)(2 * i) / head_dim));
    }
    float *dev = b->alloc(b, (size_t)half);
    b->upload(b, dev, host, (size_t)half);
    free(host);
    return dev;
}

decoder *decoder_new(const model *m, const engine_options *opt, char *err, size_t errlen) {
    const model_config *c = &m->config;
    engine_options o = {0};
    if (opt) o = *opt;
    decoder *d = xcalloc(1, sizeof *d);
    d->m = m;

    if (o.max_model_len < 0 || o.max_model_len > c->max_positions)
        return fail(d, err, errlen,
                    "MAX_MODEL_LEN must be between 1 and the model's max_position_embeddings "
                    "(%d); got %d",
                    c->max_positions, o.max_model_len);
    d->max_len = o.max_model_len ? o.max_model_len : c->max_positions;
    if (o.sliding_window < 0 || o.sliding_window > c->max_positions)
        return fail(d, err, errlen,
                    "SLIDING_WINDOW must be between 1 and max_position_embeddings (%d), or 0 "
                    "for the native window; got %d",
                    c->max_positions, o.sliding_window);
    if (o.n_threads < 0) return fail(d, err, errlen, "thread count must be >= 0");
    d->native_window = c->sliding_window;
    d->sliding_window = o.sliding_window ? o.sliding_window : c->sliding_window;

    const char *device = o.device && *o.device ? o.device : "cpu";
    if (!strcmp(device, "cpu")) {
        d->b = backend_cpu_new(o.n_threads);
    } else if (!strcmp(device, "cuda")) {
#ifdef ENGINE_WITH_CUDA
        char why[256];
        for (int i = 0; i < m->n_quant; i++)
            if (!backend_cuda_takes_quant(&m->quant[i]))
                return fail(d, err, errlen,
                            "ENGINE_DEVICE=cuda: WEIGHT_DTYPE=%s needs every linear layer's input "
                            "features to be a multiple of 128 on the GPU (a layer has %d); use "
                            "WEIGHT_DTYPE=bf16 or ENGINE_DEVICE=cpu",
                            quant_dtype_name(m->quant[i].dtype), m->quant[i].cols);
        d->b = backend_cuda_new(why, sizeof why);
        if (!d->b) return fail(d, err, errlen, "ENGINE_DEVICE=cuda: %s", why);
#else
        return fail(d, err, errlen,
                    "ENGINE_DEVICE=cuda: this engine was built without CUDA (build where nvcc "
                    "is installed, with -DWITH_CUDA=ON and without SANITIZE)");
#endif
    } else {
        return fail(d, err, errlen, "ENGINE_DEVICE=\"%s\": must be \"cpu\" or \"cuda\"", device);
    }
    backend *b = d->b;
    const int L = c->n_layers;
    d->window = xcalloc((size_t)L, sizeof(int));
    d->cache_len = xcalloc((size_t)L, sizeof(int));
    d->k_cache = xcalloc((size_t)L, sizeof(float *));
    d->v_cache = xcalloc((size_t)L, sizeof(float *));
    int sliding_head_dim = 0, full_head_dim = 0;
    for (int i = 0; i < L; i++) {
        const layer_config *l = &c->layers[i];
        d->window[i] = l->type == LAYER_SLIDING ? d->sliding_window : 0;
        if (l->type == LAYER_SLIDING)
            sliding_head_dim = l->head_dim;
        else
            full_head_dim = l->head_dim;
        if (l->kv_shared) continue;
        long len = d->max_len;
        if (d->window[i] && (long)d->window[i] + DECODER_CHUNK - 1 < len)
            len = (long)d->window[i] + DECODER_CHUNK - 1;
        d->cache_len[i] = (int)len;
        size_t n = (size_t)len * (size_t)(l->n_kv_heads * l->head_dim);
        d->k_cache[i] = b->alloc(b, n);
        d->v_cache[i] = b->alloc(b, n);
    }
    if (sliding_head_dim)
        d->inv_freq_sliding = decoder_rope_table(b, &c->rope_sliding, sliding_head_dim);
    if (full_head_dim) d->inv_freq_full = decoder_rope_table(b, &c->rope_full, full_head_dim);

    const model_weights *w = &m->weights;
    d->embed_scale = round_to_dtype(sqrt((double)c->hidden), w->embed.dtype);
    if (c->ple_dim)
        d->ple_embed_scale = round_to_dtype(sqrt((double)c->ple_dim), w->embed_ple.dtype);

    const size_t C = DECODER_CHUNK;
    d->x = b->alloc(b, C * c->hidden);
    d->xn = b->alloc(b, C * c->hidden);
    d->o = b->alloc(b, C * c->hidden);
    d->hidden = b->alloc(b, C * c->hidden);
    d->q = b->alloc(b, C * c->max_q_dim);
    d->att = b->alloc(b, C * c->max_q_dim);
    d->k = b->alloc(b, C * c->max_kv_dim);
    d->v = b->alloc(b, C * c->max_kv_dim);
    d->gate = b->alloc(b, C * c->max_intermediate);
    d->up = b->alloc(b, C * c->max_intermediate);
    d->logits = b->alloc(b, C * c->vocab);
    if (c->ple_dim) {
        d->ple_in = b->alloc(b, C * c->n_layers * c->ple_dim);
        d->ple_tmp = b->alloc(b, C * c->n_layers * c->ple_dim);
        d->ple_h = b->alloc(b, C * c->ple_dim);
    }
    return d;
}

void decoder_free(decoder *d) {
    if (!d) return;
    backend *b = d->b;
    if (b) {
        const int L = d->m->config.n_layers;
        for (int i = 0; i < L && d->k_cache; i++) {
            if (d->k_cache[i]) b->release(b, d->k_cache[i]);
            if (d->v_cache[i]) b->release(b, d->v_cache[i]);
        }
        float *bufs[] = {d->inv_freq_sliding,
                         d->inv_freq_full,
                         d->x,
                         d->xn,
                         d->o,
                         d->hidden,
                         d->q,
                         d->att,
                         d->k,
                         d->v,
                         d->gate,
                         d->up,
                         d->logits,
                         d->ple_in,
                         d->ple_tmp,
                         d->ple_h};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            if (bufs[i]) b->release(b, bufs[i]);
        b->destroy(b);
    }
    free(d->window);
    free(d->cache_len);
    free(d->k_cache);
    free(d->v_cache);
    free(d);
}

/* The cache needs no clearing: every position is written before it is read. */
void decoder_reset(decoder *d) {
    decoder_begin(d, 0);
}

void decoder_begin(decoder *d, int horizon) {
    d->pos = 0;
    d->hidden_rows = 0;
    /* Fixed for the whole sequence, so its verify passes cut their attention as its decode
     * steps do, even a verify that runs a few positions past the horizon. */
    if (d->b->set_horizon) d->b->set_horizon(d->b, horizon > 0 ? horizon : 0);
}

int decoder_pos(const decoder *d) {
    return d->pos;
}

int decoder_truncate(decoder *d, int pos) {
    if (pos < 0 || pos > d->pos) return -1;
    const int back = d->pos - pos;
    const model_config *c = &d->m->config;
    for (int i = 0; i < c->n_layers; i++) {
        /* A ring shorter than max_model_len has overwritten what lies before its last
         * cache_len positions; rolling back is safe while the window still fits. */
        if (d->cache_len[i] && d->cache_len[i] < d->max_len &&
            back > d->cache_len[i] - d->window[i])
            return -1;
    }
    d->pos = pos;
    d->hidden_rows = 0;
    return 0;
}

int decoder_last_hidden(const decoder *d, float *out, int final_norm) {
    if (d->hidden_rows <= 0) return -1;
    const int H = d->m->config.hidden;
    const float *src = final_norm ? d->hidden : d->x; /* x: the last chunk's residual stream */
    d->b->download(d->b, out, src + (size_t)(d->hidden_rows - 1) * H, (size_t)H);
    return 0;
}

/* The checks both forward entry points make: -1 when n tokens do not fit the cache, -2 when a
 * token is outside the embedding tables (the vocabulary, and the PLE table's when there is one),
 * else 0. */
static int input_check(const decoder *d, const int *tokens, int n) {
    const model_config *c = &d->m->config;
    if (n < 0 || (long)d->pos + n > d->max_len) return -1;
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c->vocab || (c->ple_dim && tokens[i] >= c->ple_vocab))
            return -2;
    return 0;
}

int decoder_forward(decoder *d, const int *tokens, int n, float *logits, int logits_from) {
    const model_config *c = &d->m->config;
    const int rc = input_check(d, tokens, n);
    if (rc) return rc;
    for (int start = 0; start < n; start += DECODER_CHUNK) {
        const int len = n - start < DECODER_CHUNK ? n - start : DECODER_CHUNK;
        /* Rows of this chunk with global index >= logits_from get logits. */
        int from = logits_from - start;
        if (from < 0) from = 0;
        float *dst = NULL;
        if (logits && from < len)
            dst = logits + (size_t)(start + from - logits_from) * (size_t)c->vocab;
        forward_chunk(d, tokens + start, len, dst, from);
    }
    return 0;
}

int decoder_forward_argmax(decoder *d, const int *tokens, int n, int *next) {
    const model_config *c = &d->m->config;
    if (n <= 0) return -1;
    const int rc = input_check(d, tokens, n);
    if (rc) return rc;
    for (int start = 0; start < n; start += DECODER_CHUNK) {
        const int len = n - start < DECODER_CHUNK ? n - start : DECODER_CHUNK;
        forward_chunk_device(d, tokens + start, len, start + len == n ? len - 1 : len);
    }
    *next = d->b->argmax(d->b, d->logits, c->vocab);
    return 0;
}

const char *decoder_backend_name(const decoder *d) {
    return d->b->name;
}
int decoder_max_len(const decoder *d) {
    return d->max_len;
}
int decoder_sliding_window(const decoder *d) {
    return d->sliding_window;
}
