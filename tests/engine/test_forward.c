/* test_forward.c: the forward pass (engine/forward.c, decoder.c, model_derive.c) on tiny
 * Gemma 4 models built in memory with random weights.
 *
 * The yardstick is a naive reference written here from transformers' modeling_gemma4.py:
 * double precision, the whole sequence recomputed from scratch, full K/V arrays and an
 * explicit causal / sliding-window mask, no ring buffers and no chunks. Checked against it:
 *   - prefill of a long prompt (several chunks, the sliding rings wrapping many times);
 *   - prefill then token-by-token decode, and token-by-token from the start;
 *   - SLIDING_WINDOW overrides (smaller, larger than the prompt, 1);
 *   - KV sharing (shared layers of both types), k == v attention, double-wide MLPs,
 *     per-layer embeddings, proportional partial RoPE, softcapping, layer_scalar, on two
 *     differently shaped models (one with every feature, one with none of the optional ones);
 *   - rollback with decoder_truncate, then a different continuation;
 *   - the same logits, bit for bit, whatever the thread count;
 * plus the refusals: bad knobs, cache overflow, bad token ids, inconsistent configs. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "decoder.h"
#include "util.h"
#include "../test_util.h"

/* Uniform on [-1, -0.05] U [0.05, 1]: never zero (half test_util.h's rng_val range). */
static float rng_small(void) {
    double m = 0.05 + 0.95 * rng_unit();
    return (float)(rng_u64() & 1 ? m : -m);
}

/* ---- building a model ------------------------------------------------------------------ */

#define MAX_ALLOCS 512
static void *allocs[MAX_ALLOCS];
static int n_allocs;
static void *keep(void *p) {
    CHECK(n_allocs < MAX_ALLOCS);
    return allocs[n_allocs++] = p;
}
static void free_all(void) {
    while (n_allocs)
        free(allocs[--n_allocs]);
}

/* A random tensor around `center` with spread `spread`, alternating dtypes per call. */
static tensor make_tensor(int rows, int cols, float center, float spread, weight_dtype dt) {
    size_t n = (size_t)rows * cols;
    tensor t = {.dtype = dt, .rows = rows, .cols = cols};
    if (dt == DT_F32) {
        float *d = keep(xmalloc(n * 4));
        for (size_t i = 0; i < n; i++)
            d[i] = center + spread * rng_small();
        t.data = d;
    } else {
        uint16_t *d = keep(xmalloc(n * 2));
        for (size_t i = 0; i < n; i++) {
            float v = center + spread * rng_small();
            d[i] = dt == DT_BF16 ? f32_to_bf16(v) : f32_to_f16(v);
        }
        t.data = d;
    }
    return t;
}
static weight_dtype next_dtype(void) {
    static const weight_dtype order[] = {DT_BF16, DT_F32, DT_BF16, DT_F16};
    return order[rng_int(4)];
}
static tensor linear(int out, int in) {
    return make_tensor(out, in, 0.0f, 1.5f / sqrtf((float)in), next_dtype());
}
static tensor norm(int dim) {
    return make_tensor(1, dim, 1.0f, 0.3f, next_dtype());
}

/* Every optional feature on: PLE, KV sharing of both layer types, k == v on full layers,
 * global head_dim / kv heads, double-wide MLP, proportional partial RoPE, softcap. */
static void config_full(model_config *c) {
    memset(c, 0, sizeof *c);
    c->n_layers = 7;
    c->hidden = 48;
    c->intermediate = 40;
    c->n_heads = 4;
    c->n_kv_heads = 2;
    c->head_dim = 16;
    c->global_head_dim = 32;
    c->n_global_kv_heads = 1;
    c->vocab = 61;
    c->max_positions = 1024;
    c->sliding_window = 5;
    c->rms_eps = 1e-6f;
    c->final_softcap = 30.0f;
    c->attention_k_eq_v = 1;
    c->num_kv_shared_layers = 3;
    c->use_double_wide_mlp = 1;
    c->ple_dim = 8;
    c->ple_vocab = 61;
    c->tie_embeddings = 1;
    c->rope_sliding = (rope_params){.proportional = 0, .theta = 10000.0f};
    c->rope_full = (rope_params){
        .proportional = 1, .theta = 1000000.0f, .partial_rotary_factor = 0.25f, .factor = 1.0f};
    /* layers: S S F S | S F S(forced F as the last layer) -> shared: 4 (S, src 3), 5 (F,
     * src 2), 6 (F, src 2) */
    static const layer_type types[] = {LAYER_SLIDING, LAYER_SLIDING, LAYER_FULL,   LAYER_SLIDING,
                                       LAYER_SLIDING, LAYER_FULL,    LAYER_SLIDING};
    c->layer_types = xmalloc(sizeof types);
    memcpy(c->layer_types, types, sizeof types);
}

/* None of the optional features: no PLE, no sharing, separate v_proj, one head_dim, default
 * RoPE everywhere, no softcap, untied head. */
static void config_plain(model_config *c) {
    memset(c, 0, sizeof *c);
    c->n_layers = 4;
    c->hidden = 32;
    c->intermediate = 64;
    c->n_heads = 2;
    c->n_kv_heads = 2;
    c->head_dim = 16;
    c->vocab = 37;
    c->max_positions = 640;
    c->sliding_window = 3;
    c->rms_eps = 1e-6f;
    c->rope_sliding = (rope_params){.theta = 10000.0f};
    c->rope_full = (rope_params){.theta = 10000.0f};
    c->layer_types = NULL; /* transformers' default pattern, last layer forced full */
}

static void build_weights(model *m) {
    const model_config *c = &m->config;
    model_weights *w = &m->weights;
    memset(w, 0, sizeof *w);
    w->embed = make_tensor(c->vocab, c->hidden, 0.0f, 1.0f, DT_BF16);
    w->final_norm = norm(c->hidden);
    w->lm_head = c->tie_embeddings ? w->embed : linear(c->vocab, c->hidden);
    if (c->ple_dim) {
        int width = c->n_layers * c->ple_dim;
        w->embed_ple = make_tensor(c->ple_vocab, width, 0.0f, 1.0f, DT_BF16);
        w->ple_model_proj = linear(width, c->hidden);
        w->ple_proj_norm = norm(c->ple_dim);
    }
    w->layers = keep(xcalloc((size_t)c->n_layers, sizeof *w->layers));
    for (int i = 0; i < c->n_layers; i++) {
        const layer_config *l = &c->layers[i];
        layer_weights *lw = &w->layers[i];
        int q_dim = c->n_heads * l->head_dim, kv_dim = l->n_kv_heads * l->head_dim;
        lw->input_norm = norm(c->hidden);
        lw->q_proj = linear(q_dim, c->hidden);
        lw->q_norm = norm(l->head_dim);
        if (!l->kv_shared) {
            lw->k_proj = linear(kv_dim, c->hidden);
            lw->k_norm = norm(l->head_dim);
            if (!l->k_eq_v) lw->v_proj = linear(kv_dim, c->hidden);
        }
        lw->o_proj = linear(c->hidden, q_dim);
        lw->post_attn_norm = norm(c->hidden);
        lw->pre_ffn_norm = norm(c->hidden);
        lw->gate_proj = linear(l->intermediate, c->hidden);
        lw->up_proj = linear(l->intermediate, c->hidden);
        lw->down_proj = linear(c->hidden, l->intermediate);
        lw->post_ffn_norm = norm(c->hidden);
        if (c->ple_dim) {
            lw->ple_gate = linear(c->ple_dim, c->hidden);
            lw->ple_proj = linear(c->hidden, c->ple_dim);
            lw->ple_post_norm = norm(c->hidden);
        }
        lw->layer_scalar = c->ple_dim ? 0.5f + (float)rng_unit() : 1.0f;
    }
}

static model *model_build(void (*config)(model_config *)) {
    model *m = keep(xcalloc(1, sizeof *m));
    config(&m->config);
    char err[256];
    if (model_config_derive(&m->config, err, sizeof err)) die("derive: %s", err);
    build_weights(m);
    return m;
}

/* ---- the naive reference --------------------------------------------------------------- */

static double get(const tensor *t, size_t i) {
    return tensor_get(t, i);
}

/* y[out] = W[out][in] x[in] */
static void ref_linear(double *y, const tensor *w, const double *x) {
    for (int r = 0; r < w->rows; r++) {
        double s = 0;
        for (int c = 0; c < w->cols; c++)
            s += get(w, (size_t)r * w->cols + c) * x[c];
        y[r] = s;
    }
}

/* Gemma4RMSNorm: x * (mean(x^2) + eps)^-0.5 * weight (weight may be NULL: with_scale=False). */
static void ref_rms(double *x, int dim, const tensor *w, double eps) {
    double ss = 0;
    for (int i = 0; i < dim; i++)
        ss += x[i] * x[i];
    double inv = pow(ss / dim + eps, -0.5);
    for (int i = 0; i < dim; i++)
        x[i] *= inv * (w ? get(w, (size_t)i) : 1.0);
}

static double ref_gelu(double x) {
    return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

/* apply_rotary_pos_emb with the cos/sin of the layer type's rope init function. */
static void ref_rope(double *x, int hd, int pos, const rope_params *r) {
    int half = hd / 2;
    for (int i = 0; i < half; i++) {
        double inv;
        if (r->proportional) {
            int rope_angles = (int)(r->partial_rotary_factor * hd / 2);
            inv = i < rope_angles ? pow(r->theta, -(2.0 * i) / hd) / r->factor : 0.0;
        } else {
            inv = pow(r->theta, -(2.0 * i) / hd);
        }
        /* transformers forms the angle in fp32 (inv_freq @ position_ids, autocast off): at
         * position 500 its rounding moves the angle by up to 3e-5, which is the model's
         * definition, not an error of the engine. Everything after it is in double. */
        double ang = (double)((float)inv * (float)pos), c = cos(ang), s = sin(ang);
        double x1 = x[i], x2 = x[i + half];
        x[i] = x1 * c - x2 * s;
        x[i + half] = x2 * c + x1 * s;
    }
}

static double round_scale(double v, weight_dtype t) {
    float f = (float)v;
    if (t == DT_BF16) return bf16_to_f32(f32_to_bf16(f));
    if (t == DT_F16) return f16_to_f32(f32_to_f16(f));
    return f;
}

/* Logits [T][vocab] of the whole sequence; `window` is the sliding layers' window. */
static double *ref_forward(const model *m, int window, const int *ids, int T) {
    const model_config *c = &m->config;
    const model_weights *w = &m->weights;
    const int H = c->hidden, L = c->n_layers, P = c->ple_dim;
    double *x = xcalloc((size_t)T * H, sizeof(double));
    double escale = round_scale(sqrt((double)H), w->embed.dtype);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < H; i++)
            x[t * H + i] = get(&w->embed, (size_t)ids[t] * H + i) * escale;

    double *ple = NULL;
    if (P) { /* get_per_layer_inputs + project_per_layer_inputs */
        ple = xcalloc((size_t)T * L * P, sizeof(double));
        double pscale = round_scale(sqrt((double)P), w->embed_ple.dtype);
        for (int t = 0; t < T; t++) {
            double *row = ple + (size_t)t * L * P;
            ref_linear(row, &w->ple_model_proj, x + (size_t)t * H);
            for (int i = 0; i < L * P; i++)
                row[i] *= pow(H, -0.5);
            for (int l = 0; l < L; l++)
                ref_rms(row + l * P, P, &w->ple_proj_norm, c->rms_eps);
            for (int i = 0; i < L * P; i++)
                row[i] = (row[i] + get(&w->embed_ple, (size_t)ids[t] * L * P + i) * pscale) *
                         pow(2.0, -0.5);
        }
    }

    double **K = xcalloc((size_t)L, sizeof(double *)), **V = xcalloc((size_t)L, sizeof(double *));
    double *xn = xmalloc((size_t)H * sizeof(double)), *o = xmalloc((size_t)H * sizeof(double));
    double *q = xmalloc((size_t)T * c->max_q_dim * sizeof(double));
    double *att = xmalloc((size_t)c->max_q_dim * sizeof(double));
    double *g = xmalloc((size_t)c->max_intermediate * sizeof(double));
    double *u = xmalloc((size_t)c->max_intermediate * sizeof(double));
    double *s = xmalloc((size_t)T * sizeof(double));
    for (int l = 0; l < L; l++) {
        const layer_config *lc = &c->layers[l];
        const layer_weights *lw = &w->layers[l];
        const int hd = lc->head_dim, nkv = lc->n_kv_heads, kvd = nkv * hd;
        const rope_params *rp = lc->type == LAYER_SLIDING ? &c->rope_sliding : &c->rope_full;
        const int win = lc->type == LAYER_SLIDING ? window : 0;
        if (!lc->kv_shared) {
            K[l] = xcalloc((size_t)T * kvd, sizeof(double));
            V[l] = xcalloc((size_t)T * kvd, sizeof(double));
        }
        /* attention: all projections first (the whole sequence at once, as transformers) */
        for (int t = 0; t < T; t++) {
            memcpy(xn, x + (size_t)t * H, (size_t)H * sizeof(double));
            ref_rms(xn, H, &lw->input_norm, c->rms_eps);
            double *qt = q + (size_t)t * c->n_heads * hd;
            ref_linear(qt, &lw->q_proj, xn);
            for (int h = 0; h < c->n_heads; h++) {
                ref_rms(qt + h * hd, hd, &lw->q_norm, c->rms_eps);
                ref_rope(qt + h * hd, hd, t, rp);
            }
            if (!lc->kv_shared) {
                double *kt = K[l] + (size_t)t * kvd, *vt = V[l] + (size_t)t * kvd;
                ref_linear(kt, &lw->k_proj, xn);
                if (lc->k_eq_v)
                    memcpy(vt, kt, (size_t)kvd * sizeof(double));
                else
                    ref_linear(vt, &lw->v_proj, xn);
                for (int h = 0; h < nkv; h++) {
                    ref_rms(kt + h * hd, hd, &lw->k_norm, c->rms_eps);
                    ref_rope(kt + h * hd, hd, t, rp);
                    ref_rms(vt + h * hd, hd, NULL, c->rms_eps);
                }
            }
        }
        const double *Ks = K[lc->kv_source], *Vs = V[lc->kv_source];
        for (int t = 0; t < T; t++) {
            for (int h = 0; h < c->n_heads; h++) {
                int kvh = h / (c->n_heads / nkv);
                const double *qh = q + ((size_t)t * c->n_heads + h) * hd;
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < T; j++) { /* causal, and kv_idx > q_idx - window */
                    int visible = j <= t && (!win || j > t - win);
                    s[j] = -INFINITY;
                    if (!visible) continue;
                    double d = 0;
                    for (int i = 0; i < hd; i++)
                        d += qh[i] * Ks[(size_t)j * kvd + kvh * hd + i];
                    s[j] = d; /* scaling = 1.0 */
                    if (d > mx) mx = d;
                }
                for (int j = 0; j < T; j++)
                    if (s[j] != -INFINITY) sum += exp(s[j] - mx);
                double *ah = att + h * hd;
                for (int i = 0; i < hd; i++)
                    ah[i] = 0;
                for (int j = 0; j < T; j++) {
                    if (s[j] == -INFINITY) continue;
                    double pj = exp(s[j] - mx) / sum;
                    for (int i = 0; i < hd; i++)
                        ah[i] += pj * Vs[(size_t)j * kvd + kvh * hd + i];
                }
            }
            double *xt = x + (size_t)t * H;
            ref_linear(o, &lw->o_proj, att);
            ref_rms(o, H, &lw->post_attn_norm, c->rms_eps);
            for (int i = 0; i < H; i++)
                xt[i] += o[i];
            /* MLP */
            memcpy(xn, xt, (size_t)H * sizeof(double));
            ref_rms(xn, H, &lw->pre_ffn_norm, c->rms_eps);
            ref_linear(g, &lw->gate_proj, xn);
            ref_linear(u, &lw->up_proj, xn);
            for (int i = 0; i < lc->intermediate; i++)
                g[i] = ref_gelu(g[i]) * u[i];
            ref_linear(o, &lw->down_proj, g);
            ref_rms(o, H, &lw->post_ffn_norm, c->rms_eps);
            for (int i = 0; i < H; i++)
                xt[i] += o[i];
            if (P) {
                double pg[64];
                CHECK(P <= 64);
                ref_linear(pg, &lw->ple_gate, xt);
                for (int i = 0; i < P; i++)
                    pg[i] = ref_gelu(pg[i]) * ple[(size_t)t * L * P + (size_t)l * P + i];
                ref_linear(o, &lw->ple_proj, pg);
                ref_rms(o, H, &lw->ple_post_norm, c->rms_eps);
                for (int i = 0; i < H; i++)
                    xt[i] += o[i];
            }
            for (int i = 0; i < H; i++)
                xt[i] *= lw->layer_scalar;
        }
    }
    double *logits = xmalloc((size_t)T * c->vocab * sizeof(double));
    for (int t = 0; t < T; t++) {
        memcpy(xn, x + (size_t)t * H, (size_t)H * sizeof(double));
        ref_rms(xn, H, &w->final_norm, c->rms_eps);
        double *lt = logits + (size_t)t * c->vocab;
        ref_linear(lt, &w->lm_head, xn);
        if (c->final_softcap > 0)
            for (int i = 0; i < c->vocab; i++)
                lt[i] = c->final_softcap * tanh(lt[i] / c->final_softcap);
    }
    for (int l = 0; l < L; l++) {
        free(K[l]);
        free(V[l]);
    }
    free(K);
    free(V);
    free(x);
    free(ple);
    free(xn);
    free(o);
    free(q);
    free(att);
    free(g);
    free(u);
    free(s);
    return logits;
}

/* ---- comparisons ------------------------------------------------------------------------ */

/* Every element within 5e-4 of the largest |logit| of the comparison: fp32 activations against
 * double. The full model's random attention amplifies rounding at near ties; over 900 seeds the
 * worst error was 2.3e-4 of the largest logit (most stay under 5e-5). The errors this test is for
 * are far above it: a sliding window one position too wide gives 0.3 - 0.8. */
static int compare(const char *what, const float *got, const double *want, size_t n) {
    double worst = 0, scale = 0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs(want[i]) > scale) scale = fabs(want[i]);
    for (size_t i = 0; i < n; i++) {
        double e = fabs(got[i] - want[i]);
        if (!(e <= worst)) {
            worst = e;
            at = i;
        }
    }
    if (getenv("TEST_VERBOSE")) printf("%s: max error %.3g of %.3g\n", what, worst, scale);
    if (!(worst <= 5e-4 * scale)) {
        fprintf(stderr, "%s: element %zu: got %.7g want %.7g (error %.3g, largest logit %.3g)\n",
                what, at, got[at], want[at], worst, scale);
        failures++;
        return 0;
    }
    return 1;
}

static decoder *new_decoder(const model *m, int window, int max_len) {
    engine_options o = {.sliding_window = window, .max_model_len = max_len};
    char err[256] = "";
    decoder *d = decoder_new(m, &o, err, sizeof err);
    if (!d) die("decoder_new: %s", err);
    return d;
}

static int *random_ids(const model *m, int T) {
    int *ids = xmalloc((size_t)T * sizeof(int));
    for (int t = 0; t < T; t++)
        ids[t] = rng_int(m->config.vocab);
    return ids;
}

/* One prefill of all T tokens (logits of every position) against the reference. */
static void test_prefill(const model *m, const char *name, int window, int T) {
    const int V = m->config.vocab;
    int *ids = random_ids(m, T);
    decoder *d = new_decoder(m, window, 0);
    float *logits = xmalloc((size_t)T * V * sizeof(float));
    EXPECT(decoder_forward(d, ids, T, logits, 0) == 0);
    EXPECT(decoder_pos(d) == T);
    double *want = ref_forward(m, d->sliding_window, ids, T);
    char what[128];
    snprintf(what, sizeof what, "%s: prefill of %d, window %d", name, T, d->sliding_window);
    compare(what, logits, want, (size_t)T * V);
    decoder_free(d);
    free(ids);
    free(logits);
    free(want);
}

/* Prefill of `split` tokens then decode one by one, versus all-one-by-one, versus the
 * reference; and the greedy choices agree. */
static void test_prefill_then_decode(const model *m, const char *name, int window, int T,
                                     int split) {
    const int V = m->config.vocab;
    int *ids = random_ids(m, T);
    double *want = ref_forward(m, window ? window : m->config.sliding_window, ids, T);
    decoder *a = new_decoder(m, window, 0), *b = new_decoder(m, window, 0);
    float *la = xmalloc((size_t)T * V * sizeof(float)),
          *lb = xmalloc((size_t)T * V * sizeof(float));
    /* a: prefill [0, split) with logits only from split - 1 (the usual prompt call) */
    EXPECT(decoder_forward(a, ids, split, la + (size_t)(split - 1) * V, split - 1) == 0);
    for (int t = split; t < T; t++)
        EXPECT(decoder_forward(a, ids + t, 1, la + (size_t)t * V, 0) == 0);
    for (int t = 0; t < T; t++)
        EXPECT(decoder_forward(b, ids + t, 1, lb + (size_t)t * V, 0) == 0);
    char what[128];
    snprintf(what, sizeof what, "%s: prefill %d + decode to %d", name, split, T);
    compare(what, la + (size_t)(split - 1) * V, want + (size_t)(split - 1) * V,
            (size_t)(T - split + 1) * V);
    snprintf(what, sizeof what, "%s: one by one to %d", name, T);
    compare(what, lb, want, (size_t)T * V);
    /* the two orders of the same arithmetic: as close as each is to the reference */
    size_t tail = (size_t)(T - split + 1) * V;
    double *lbd = xmalloc(tail * sizeof(double));
    for (size_t i = 0; i < tail; i++)
        lbd[i] = lb[(size_t)(split - 1) * V + i];
    snprintf(what, sizeof what, "%s: prefill %d + decode against one by one", name, split);
    compare(what, la + (size_t)(split - 1) * V, lbd, tail);
    free(lbd);
    /* the last hidden state: the normed one is what lm_head reads (tied: embed rows) */
    float hidden[256], pre[256];
    CHECK(m->config.hidden <= 256);
    EXPECT(decoder_last_hidden(a, hidden, 1) == 0 && decoder_last_hidden(a, pre, 0) == 0);
    if (m->config.tie_embeddings && m->config.final_softcap > 0) {
        const model_config *c = &m->config;
        double ss = 0;
        for (int i = 0; i < c->hidden; i++)
            ss += (double)pre[i] * pre[i];
        double inv = 1 / sqrt(ss / c->hidden + c->rms_eps), worst = 0;
        for (int i = 0; i < c->hidden; i++)
            worst =
                fmax(worst, fabs(hidden[i] - pre[i] * inv * tensor_get(&m->weights.final_norm, i)));
        EXPECT(worst < 1e-4);
        for (int v = 0; v < V; v++) {
            double s = 0;
            for (int i = 0; i < c->hidden; i++)
                s += hidden[i] * tensor_get(&m->weights.lm_head, (size_t)v * c->hidden + i);
            s = c->final_softcap * tanh(s / c->final_softcap);
            if (fabs(s - la[(size_t)(T - 1) * V + v]) > 1e-3) {
                fprintf(stderr, "%s: last hidden does not give the last logits (%d)\n", name, v);
                failures++;
                break;
            }
        }
    }
    decoder_free(a);
    decoder_free(b);
    free(ids);
    free(want);
    free(la);
    free(lb);
}

/* Roll back and continue differently: equals the reference on the new sequence. */
static void test_truncate(const model *m, const char *name) {
    const int V = m->config.vocab, T = DECODER_CHUNK + 26, back = DECODER_CHUNK - 1;
    int *ids = random_ids(m, T);
    decoder *d = new_decoder(m, 0, 0);
    EXPECT(decoder_forward(d, ids, T, NULL, 0) == 0);
    EXPECT(decoder_truncate(d, T + 1) == -1 && decoder_truncate(d, -1) == -1);
    EXPECT(decoder_truncate(d, T - back - 1) == -1); /* the sliding rings cannot go that far */
    EXPECT(decoder_pos(d) == T);
    float tmp[256];
    EXPECT(decoder_truncate(d, T - back) == 0 && decoder_pos(d) == T - back);
    EXPECT(decoder_last_hidden(d, tmp, 1) == -1);
    for (int t = T - back; t < T; t++)
        ids[t] = rng_int(V);
    float *logits = xmalloc((size_t)back * V * sizeof(float));
    EXPECT(decoder_forward(d, ids + T - back, back, logits, 0) == 0);
    double *want = ref_forward(m, m->config.sliding_window, ids, T);
    char what[128];
    snprintf(what, sizeof what, "%s: truncate by %d and continue", name, back);
    compare(what, logits, want + (size_t)(T - back) * V, (size_t)back * V);
    /* and it is exact: a fresh decoder given the kept prefix and the same call agrees bit for
     * bit (the same chunks, so the same arithmetic) */
    decoder *fresh = new_decoder(m, 0, 0);
    float *lf = xmalloc((size_t)back * V * sizeof(float));
    EXPECT(decoder_forward(fresh, ids, T - back, NULL, 0) == 0);
    EXPECT(decoder_forward(fresh, ids + T - back, back, lf, 0) == 0);
    EXPECT(memcmp(lf, logits, (size_t)back * V * sizeof(float)) == 0);
    decoder_free(fresh);
    free(lf);
    /* reset: a fresh start equals a fresh decoder */
    decoder_reset(d);
    EXPECT(decoder_pos(d) == 0);
    EXPECT(decoder_forward(d, ids, 10, logits, 9) == 0);
    compare("after reset", logits, want + (size_t)9 * V, (size_t)V);
    /* decoder_begin is a reset with a horizon; a sequence that runs past it (here 12 positions
     * for a horizon of 5) is still the reference's */
    EXPECT(decoder_truncate(d, 4) == 0);
    decoder_begin(d, 5);
    EXPECT(decoder_pos(d) == 0 && decoder_last_hidden(d, tmp, 1) == -1);
    EXPECT(decoder_forward(d, ids, 12, logits, 11) == 0);
    compare("after begin, past the horizon", logits, want + (size_t)11 * V, (size_t)V);
    decoder_free(d);
    free(ids);
    free(logits);
    free(want);
}

/* The thread count changes who computes what, never the arithmetic: logits are bit for bit
 * the same with one thread and with several (so greedy output does not depend on it). */
static void test_threads(const model *m) {
    const int V = m->config.vocab, T = DECODER_CHUNK + 44; /* two chunks, then steps */
    int *ids = random_ids(m, T);
    float *la = xmalloc((size_t)T * V * sizeof(float)),
          *lb = xmalloc((size_t)T * V * sizeof(float));
    engine_options one = {.n_threads = 1}, three = {.n_threads = 3};
    char err[256];
    decoder *a = decoder_new(m, &one, err, sizeof err),
            *b = decoder_new(m, &three, err, sizeof err);
    CHECK(a && b);
    EXPECT(decoder_forward(a, ids, T - 10, la, 0) == 0 &&
           decoder_forward(b, ids, T - 10, lb, 0) == 0);
    for (int t = T - 10; t < T; t++) /* and token by token */
        EXPECT(decoder_forward(a, ids + t, 1, la + (size_t)t * V, 0) == 0 &&
               decoder_forward(b, ids + t, 1, lb + (size_t)t * V, 0) == 0);
    EXPECT(!memcmp(la, lb, (size_t)T * V * sizeof(float)));
    decoder_free(a);
    decoder_free(b);
    free(ids);
    free(la);
    free(lb);
}

static void test_refusals(const model *m) {
    const model_config *c = &m->config;
    char err[256];
    struct {
        engine_options o;
        const char *needle;
    } bad[] = {
        {{.sliding_window = -1}, "SLIDING_WINDOW"},
        {{.sliding_window = c->max_positions + 1}, "SLIDING_WINDOW"},
        {{.max_model_len = -5}, "MAX_MODEL_LEN"},
        {{.max_model_len = c->max_positions + 1}, "MAX_MODEL_LEN"},
        {{.n_threads = -1}, "thread"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        decoder *d = decoder_new(m, &bad[i].o, err, sizeof err);
        EXPECT(d == NULL);
        if (!strstr(err, bad[i].needle)) {
            fprintf(stderr, "refusal %zu: want \"%s\" in \"%s\"\n", i, bad[i].needle, err);
            failures++;
        }
        decoder_free(d);
    }
    /* cache capacity: MAX_MODEL_LEN positions, not one more; nothing appended on refusal */
    decoder *d = new_decoder(m, 0, 70);
    EXPECT(decoder_max_len(d) == 70 && decoder_sliding_window(d) == c->sliding_window);
    int *ids = random_ids(m, 71);
    EXPECT(decoder_forward(d, ids, 71, NULL, 0) == -1 && decoder_pos(d) == 0);
    EXPECT(decoder_forward(d, ids, 70, NULL, 0) == 0 && decoder_pos(d) == 70);
    EXPECT(decoder_forward(d, ids, 1, NULL, 0) == -1 && decoder_pos(d) == 70);
    decoder_reset(d);
    int bad_ids[3] = {1, c->vocab, 2}, neg[1] = {-1};
    EXPECT(decoder_forward(d, bad_ids, 3, NULL, 0) == -2 && decoder_pos(d) == 0);
    EXPECT(decoder_forward(d, neg, 1, NULL, 0) == -2 && decoder_pos(d) == 0);
    EXPECT(decoder_forward(d, ids, 0, NULL, 0) == 0 && decoder_pos(d) == 0);
    /* decoder_forward_argmax makes the same checks, and wants at least one token */
    int next = -7;
    EXPECT(decoder_forward_argmax(d, bad_ids, 3, &next) == -2 && decoder_pos(d) == 0);
    EXPECT(decoder_forward_argmax(d, neg, 1, &next) == -2 && decoder_pos(d) == 0);
    EXPECT(decoder_forward_argmax(d, ids, 0, &next) == -1 && decoder_pos(d) == 0);
    EXPECT(decoder_forward_argmax(d, ids, 71, &next) == -1 && decoder_pos(d) == 0 && next == -7);
    EXPECT(decoder_forward_argmax(d, ids, 70, &next) == 0 && decoder_pos(d) == 70);
    EXPECT(next >= 0 && next < c->vocab);
    EXPECT(decoder_forward_argmax(d, ids, 1, &next) == -1 && decoder_pos(d) == 70);
    decoder_free(d);
    free(ids);
}

/* What model_config_derive makes of the full config, and what it refuses. */
static void test_derive(void) {
    model_config c;
    config_full(&c);
    c.layers = NULL;
    char err[256] = "";
    EXPECT(model_config_derive(&c, err, sizeof err) == 0);
    EXPECT(c.layer_types[6] == LAYER_FULL); /* forced, as Gemma4TextConfig does */
    EXPECT(c.layers[0].head_dim == 16 && c.layers[2].head_dim == 32);
    EXPECT(c.layers[0].n_kv_heads == 2 && c.layers[2].n_kv_heads == 1);
    EXPECT(!c.layers[0].k_eq_v && c.layers[2].k_eq_v);
    EXPECT(!c.layers[3].kv_shared && c.layers[4].kv_shared && c.layers[6].kv_shared);
    EXPECT(c.layers[4].kv_source == 3 && c.layers[5].kv_source == 2 && c.layers[6].kv_source == 2);
    EXPECT(c.layers[3].intermediate == 40 && c.layers[4].intermediate == 80);
    EXPECT(c.layers[0].window == 5 && c.layers[2].window == 0);
    EXPECT(c.max_q_dim == 4 * 32 && c.max_kv_dim == 32 && c.max_intermediate == 80);
    EXPECT(model_config_derive(&c, err, sizeof err) == 0); /* again: rebuilds */

    /* transformers 5.17 writes the full layers' shape as per_layer_config overrides */
    model_config p;
    config_full(&p);
    p.layers = NULL;
    p.global_head_dim = p.n_global_kv_heads = 0;
    p.layer_head_dim = xcalloc(7, sizeof(int));
    p.layer_kv_heads = xcalloc(7, sizeof(int));
    for (int i = 0; i < 7; i++)
        if (p.layer_types[i] == LAYER_FULL || i == 6)
            p.layer_head_dim[i] = 32, p.layer_kv_heads[i] = 1;
    EXPECT(model_config_derive(&p, err, sizeof err) == 0);
    for (int i = 0; i < 7; i++)
        EXPECT(p.layers[i].head_dim == c.layers[i].head_dim &&
               p.layers[i].n_kv_heads == c.layers[i].n_kv_heads &&
               p.layers[i].kv_source == c.layers[i].kv_source);
    p.layer_head_dim[5] = 64; /* two full layers of different head_dim: refused */
    EXPECT(model_config_derive(&p, err, sizeof err) == -1 && strstr(err, "head_dim"));
    p.layer_head_dim[5] = 32;
    p.layer_kv_heads[2] = 3; /* 4 heads over 3 kv heads */
    EXPECT(model_config_derive(&p, err, sizeof err) == -1 && strstr(err, "kv heads"));
    model_config_free(&p);

#define REFUSE(stmt, needle)                                                                       \
    do {                                                                                           \
        model_config b;                                                                            \
        config_full(&b);                                                                           \
        b.layers = NULL;                                                                           \
        stmt;                                                                                      \
        err[0] = 0;                                                                                \
        EXPECT(model_config_derive(&b, err, sizeof err) == -1);                                    \
        if (!strstr(err, needle)) {                                                                \
            fprintf(stderr, "derive after `%s`: want \"%s\" in \"%s\"\n", #stmt, needle, err);     \
            failures++;                                                                            \
        }                                                                                          \
        model_config_free(&b);                                                                     \
    } while (0)
    REFUSE(b.hidden = 0, "hidden_size");
    REFUSE(b.n_heads = 3, "num_attention_heads");
    REFUSE(b.head_dim = 15, "head_dim");
    REFUSE(b.global_head_dim = 33, "global_head_dim");
    REFUSE(b.num_kv_shared_layers = 7, "num_kv_shared_layers");
    REFUSE(b.num_kv_shared_layers = -1, "num_kv_shared_layers");
    REFUSE(b.layer_types[2] = LAYER_SLIDING, "no earlier layer");
    REFUSE(b.sliding_window = 0, "sliding_window");
    REFUSE(b.rms_eps = 0, "rms_norm_eps");
    REFUSE(b.rope_full.partial_rotary_factor = 0, "partial_rotary_factor");
    REFUSE(b.rope_sliding.theta = -1, "rope_theta");
    REFUSE(b.ple_vocab = 0, "vocab_size_per_layer_input");
    REFUSE(b.max_positions = 0, "max_position_embeddings");
#undef REFUSE
    model_config_free(&c);
}

int main(void) {
    uint64_t seed = rng_seed_from_env();
    printf("seed %llu (replay with TEST_SEED=%llu)\n", (unsigned long long)seed,
           (unsigned long long)seed);

    test_derive();
    model *full = model_build(config_full), *plain = model_build(config_plain);
    EXPECT(plain->config.layer_types[3] == LAYER_FULL &&
           plain->config.layer_types[0] == LAYER_SLIDING);

    test_prefill(full, "full", 0, 2 * DECODER_CHUNK + 22); /* three chunks; the rings wrap */
    test_prefill(full, "full", 9, DECODER_CHUNK + 40);     /* a window below the prompt; 2 chunks */
    test_prefill(full, "full", 1, 40);   /* a window of one: only the token itself */
    test_prefill(full, "full", 500, 80); /* a window longer than the prompt: full attention */
    test_prefill(plain, "plain", 0, DECODER_CHUNK + 66);
    test_prefill_then_decode(full, "full", 0, DECODER_CHUNK + 36, DECODER_CHUNK + 3);
    test_prefill_then_decode(full, "full", 6, 40, 1);
    test_prefill_then_decode(plain, "plain", 0, DECODER_CHUNK + 30, 20); /* the ring wraps */
    test_truncate(full, "full");
    test_truncate(plain, "plain");
    test_refusals(full);
    test_threads(full);

    model_config_free(&full->config);
    model_config_free(&plain->config);
    free_all();
    if (failures) fprintf(stderr, "replay with TEST_SEED=%llu\n", (unsigned long long)seed);
    return test_exit("test_forward");
}
