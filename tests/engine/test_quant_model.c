/* test_quant_model.c: WEIGHT_DTYPE / WEIGHT_GROUP / HEAD_DTYPE through the model (model_load_prec,
 * head_new_prec) on the CPU backend.
 *
 *   - The quantized forward matches a reference forward whose linear layers are the quantized
 *     matrices dequantized to fp32 (q * s, exact) and run by the plain fp32 matmul: equal up to
 *     fp32 rounding (the sums are ordered differently), while the bf16 model is far from both
 *     (so the comparison would see a layer left unquantized).
 *   - Rows of one multi-row pass equal single-token steps bit for bit (what keeps speculation
 *     lossless; test_speculate checks the serving loop itself).
 *   - A matrix whose input columns WEIGHT_GROUP does not divide is refused, naming the tensor
 *     and the knob; the head likewise (HEAD_DTYPE).
 *   - The quantized head scores what quant_matmul_ref scores of its kept rows, and its weight
 *     bytes shrink as quant_bytes says. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "decoder.h"
#include "engine.h"
#include "head.h"
#include "model.h"
#include "quant.h"
#include "util.h"
#include "../test_util.h"
#include "fixture_util.h"

static const char *const TINY = "../../models/gemma4-tiny";

static model *load_prec(const char *dir, quant_dtype t, int group) {
    char err[1024];
    model *m = model_load_prec(dir, t, group, err, sizeof err);
    if (!m) die("%s", err);
    return m;
}

/* Point every linear layer of ref at fp32 copies of q's dequantized matrices (owned by *bufs). */
static void dequantized_into(model *ref, const model *q, float ***bufs, int *n_bufs) {
    *bufs = xcalloc((size_t)q->n_quant + 1, sizeof(float *));
    *n_bufs = 0;
    for (int i = 0; i < q->config.n_layers; i++) {
        layer_weights *r = &ref->weights.layers[i];
        const layer_weights *w = &q->weights.layers[i];
        tensor *rt[] = {&r->q_proj,    &r->k_proj,  &r->v_proj,   &r->o_proj,
                        &r->gate_proj, &r->up_proj, &r->down_proj};
        const tensor *qt[] = {&w->q_proj,    &w->k_proj,  &w->v_proj,   &w->o_proj,
                              &w->gate_proj, &w->up_proj, &w->down_proj};
        for (int k = 0; k < 7; k++) {
            if (!qt[k]->data) continue;
            CHECK(qt[k]->q && (qt[k]->dtype == DT_Q8 || qt[k]->dtype == DT_Q4));
            const quant_matrix *m = qt[k]->q;
            float *f = xmalloc((size_t)m->rows * m->cols * sizeof(float));
            for (int row = 0; row < m->rows; row++)
                quant_dequant_row(m, row, f + (size_t)row * m->cols);
            (*bufs)[(*n_bufs)++] = f;
            tensor t = {.data = f, .dtype = DT_F32, .rows = m->rows, .cols = m->cols};
            *rt[k] = t;
        }
    }
}

static void logits_of(const model *m, const int *ids, int n, float *out) {
    decoder *d = fixture_decoder(m, 0, 128);
    CHECK(decoder_forward(d, ids, n, out, 0) == 0);
    decoder_free(d);
}

/* Largest |a - b| over n values, and the largest |b|. */
static double max_diff(const float *a, const float *b, size_t n, double *scale) {
    double mx = 0, sc = 0;
    for (size_t i = 0; i < n; i++) {
        mx = fmax(mx, fabs((double)a[i] - b[i]));
        sc = fmax(sc, fabs((double)b[i]));
    }
    *scale = sc;
    return mx;
}

static void check_forward(const char *dir, quant_dtype t, int group) {
    model *q = load_prec(dir, t, group), *ref = fixture_model(dir), *plain = fixture_model(dir);
    EXPECT(model_weight_dtype(q) == t && model_weight_group(q) == group && !q->prequantized,
           "%s: reported precision", dir);
    float **bufs;
    int n_bufs;
    dequantized_into(ref, q, &bufs, &n_bufs);
    const int V = q->config.vocab, n = 24;
    int ids[24];
    for (int i = 0; i < n; i++)
        ids[i] = 2 + (i * 7919) % (V - 2);
    float *lq = xmalloc((size_t)n * V * sizeof(float)),
          *lr = xmalloc((size_t)n * V * sizeof(float)),
          *lp = xmalloc((size_t)n * V * sizeof(float));
    logits_of(q, ids, n, lq);
    logits_of(ref, ids, n, lr);
    logits_of(plain, ids, n, lp);
    double scale, d_ref = max_diff(lq, lr, (size_t)n * V, &scale), s2;
    double d_plain = max_diff(lp, lr, (size_t)n * V, &s2);
    const double tol = 2e-4 * (1.0 + scale);
    EXPECT(d_ref <= tol,
           "%s %s g%d: quantized forward differs from the dequantized fp32 "
           "reference by %.3g (logits up to %.3g; allowed %.3g)",
           dir, quant_dtype_name(t), group, d_ref, scale, tol);
    EXPECT(d_plain > 10 * tol, "%s %s g%d: the bf16 model is as close (%.3g) as the quantized one",
           dir, quant_dtype_name(t), group, d_plain);
    printf("test_quant_model: %s %s g%d: |quantized - dequantized fp32| <= %.3g, |bf16 - "
           "dequantized| = %.3g (logits up to %.3g)\n",
           dir, quant_dtype_name(t), group, d_ref, d_plain, scale);

    /* rows of passes of up to 16 (a verify pass) == single-token steps, bit for bit */
    decoder *d = fixture_decoder(q, 0, 128);
    float *step = xmalloc((size_t)V * sizeof(float));
    CHECK(decoder_forward(d, ids, 8, lq, 0) == 0 &&
          decoder_forward(d, ids + 8, 16, lq + (size_t)8 * V, 0) == 0);
    decoder_reset(d);
    int same = 1;
    for (int i = 0; i < n; i++) {
        CHECK(decoder_forward(d, &ids[i], 1, step, 0) == 0);
        same &= !memcmp(step, lq + (size_t)i * V, (size_t)V * sizeof(float));
    }
    EXPECT(same, "%s %s g%d: a multi-row pass differs from single-token steps", dir,
           quant_dtype_name(t), group);

    /* bytes per token: the linear layers shrink, nothing else changes */
    size_t lin_q = 0, lin_p = 0;
    for (int i = 0; i < q->config.n_layers; i++) {
        const layer_weights *a = &q->weights.layers[i], *b = &plain->weights.layers[i];
        const tensor *ta[] = {&a->q_proj,    &a->k_proj,  &a->v_proj,   &a->o_proj,
                              &a->gate_proj, &a->up_proj, &a->down_proj};
        const tensor *tb[] = {&b->q_proj,    &b->k_proj,  &b->v_proj,   &b->o_proj,
                              &b->gate_proj, &b->up_proj, &b->down_proj};
        for (int k = 0; k < 7; k++) {
            lin_q += tensor_bytes(ta[k]);
            lin_p += tensor_bytes(tb[k]);
            if (tb[k]->data)
                EXPECT(tensor_bytes(ta[k]) == quant_bytes(t, tb[k]->rows, tb[k]->cols, group));
        }
    }
    EXPECT(model_bytes_per_token(plain) - model_bytes_per_token(q) == lin_p - lin_q);

    /* the quantized head: its argmax is the argmax of quant_matmul_ref's scores */
    char err[512];
    head *h = head_new_prec(d, NULL, t, group, err, sizeof err);
    if (!h) die("%s", err);
    EXPECT(head_quantized(h) && head_dtype(h) == t &&
           head_bytes(h) == quant_bytes(t, V, q->config.hidden, group));
    int tok[3] = {5, 9, 11}, got[3];
    decoder_reset(d);
    CHECK(head_forward_argmax(h, tok, 3, 3, got) == 0);
    float *hid = xmalloc((size_t)3 * q->config.hidden * sizeof(float));
    memcpy(hid, d->hidden, (size_t)3 * q->config.hidden * sizeof(float));
    quant_matrix hm;
    const tensor *lm = &q->weights.lm_head;
    float *w = xmalloc((size_t)V * lm->cols * sizeof(float));
    for (size_t i = 0; i < (size_t)V * lm->cols; i++)
        w[i] = tensor_get(lm, i);
    CHECK(!quant_from_f32(&hm, "lm_head", w, V, lm->cols, t, group, err, sizeof err));
    float *sc = xmalloc((size_t)3 * V * sizeof(float));
    quant_matmul_ref(&hm, hid, 3, sc);
    for (int r = 0; r < 3; r++) {
        float *s = sc + (size_t)r * V;
        int best = 0;
        for (int j = 0; j < V; j++) {
            if (q->config.final_softcap > 0)
                s[j] = q->config.final_softcap * tanhf(s[j] / q->config.final_softcap);
            if (s[j] > s[best]) best = j;
        }
        EXPECT(got[r] == best || fabsf(s[got[r]] - s[best]) < 1e-5f * (1 + fabsf(s[best])),
               "%s %s g%d: quantized head picks %d, the reference %d", dir, quant_dtype_name(t),
               group, got[r], best);
    }
    quant_free(&hm);
    free(w);
    free(sc);
    free(hid);
    head_free(h);
    decoder_free(d);

    free(step);
    for (int i = 0; i < n_bufs; i++)
        free(bufs[i]);
    free(bufs);
    free(lq);
    free(lr);
    free(lp);
    model_free(q);
    model_free(ref);
    model_free(plain);
}

static void check_refusals(void) {
    char err[1024];
    /* fixture a: every linear layer has 64 input columns */
    model *m = model_load_prec("fixtures/a_ple_kvshare", QUANT_INT4, 128, err, sizeof err);
    EXPECT(!m && strstr(err, "layers.0.self_attn.q_proj.weight [64, 64]") &&
               strstr(err, "WEIGHT_GROUP=128 does not divide its 64 input columns") &&
               strstr(err, "WEIGHT_DTYPE=int4"),
           "group 128 over 64 columns: %s", err);
    model_free(m);
    /* fixture b: down_proj has 80 input columns */
    m = model_load_prec("fixtures/b_keqv_untied", QUANT_INT8, 32, err, sizeof err);
    EXPECT(!m && strstr(err, "mlp.down_proj.weight") && strstr(err, "80 input columns"),
           "group 32 over 80 columns: %s", err);
    model_free(m);
    m = model_load_prec("fixtures/a_ple_kvshare", QUANT_INT8, 48, err, sizeof err);
    EXPECT(!m && strstr(err, "WEIGHT_GROUP=48"), "group 48: %s", err);
    model_free(m);
    /* the head: fixture c's hidden size is 48 */
    m = fixture_model("fixtures/c_wrapped_f16");
    decoder *d = fixture_decoder(m, 0, 16);
    head *h = head_new_prec(d, NULL, QUANT_INT4, 32, err, sizeof err);
    EXPECT(!h && strstr(err, "lm_head") && strstr(err, "HEAD_DTYPE=int4") &&
               strstr(err, "48 input columns"),
           "head over 48 columns: %s", err);
    head_free(h);
    decoder_free(d);
    model_free(m);
    /* bf16 keeps the model as stored */
    m = load_prec("fixtures/a_ple_kvshare", QUANT_BF16, 32);
    EXPECT(m->n_quant == 0 && model_weight_dtype(m) == QUANT_BF16 && model_weight_group(m) == 0);
    model_free(m);
    /* ENGINE_DEVICE=cuda over int8 layers of 64 input columns: the GPU's quantized products want
     * a multiple of 128, so the decoder refuses them by the knob, before any device is opened
     * (an engine built without CUDA refuses the device itself) */
    m = load_prec("fixtures/a_ple_kvshare", QUANT_INT8, 32);
    engine_options o = {.max_model_len = 16, .n_threads = 1, .device = "cuda"};
    d = decoder_new(m, &o, err, sizeof err);
    EXPECT(!d && strstr(err, "ENGINE_DEVICE=cuda") &&
               (strstr(err, "built without CUDA") ||
                (strstr(err, "WEIGHT_DTYPE=int8") && strstr(err, "multiple of 128") &&
                 strstr(err, "a layer has 64") && strstr(err, "ENGINE_DEVICE=cpu"))),
           "cuda over int8: %s", err);
    if (d) decoder_free(d);
    model_free(m);
}

int main(void) {
    check_refusals();
    check_forward("fixtures/a_ple_kvshare", QUANT_INT4, 32);
    check_forward("fixtures/a_ple_kvshare", QUANT_INT8, 64);
    struct stat sb;
    if (stat(TINY, &sb)) {
        printf("test_quant_model: no shipped small model: skipping that part\n");
    } else {
        check_forward(TINY, QUANT_INT8, 128);
        check_forward(TINY, QUANT_INT4, 32);
        check_forward(TINY, QUANT_INT4, 128);
    }
    return test_exit("test_quant_model");
}
