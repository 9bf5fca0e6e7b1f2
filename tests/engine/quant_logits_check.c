/* quant_logits_check.c: the engine loading a tools/quantize_checkpoint.py checkpoint computes
 * exactly what it computes from the bf16 folder with WEIGHT_DTYPE / WEIGHT_GROUP set at load
 * (test_quantize_checkpoint.sh runs it).
 *
 *   quant_logits_check ORIG_DIR QUANT_DIR BITS GROUP
 *
 * ORIG_DIR loaded at int<BITS> / GROUP and QUANT_DIR loaded as stored (the knobs unset) and with
 * agreeing knobs must give bit-identical logits over every position of a token sequence, on
 * the CPU backend; the checkpoint must load pre-quantized (every linear layer from its packed
 * form). Knobs that disagree with the checkpoint (the other bit width, another group) must be
 * refused with a message naming both. Prints one line per problem and exits 1 on any. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder.h"
#include "engine.h"
#include "model.h"
#include "util.h"

static int problems;

static void problem(const char *fmt, ...) PRINTF_LIKE(1, 2);
static void problem(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "quant_logits_check: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    problems++;
}

static model *load(const char *dir, quant_dtype t, int group) {
    char err[1024];
    model *m = model_load_prec(dir, t, group, err, sizeof err);
    if (!m) die("%s", err);
    return m;
}

/* Logits of every position of ids[n] (one pass of 8 rows, then single steps). */
static float *logits_of(const model *m, const int *ids, int n) {
    engine_options o = {.max_model_len = 64, .n_threads = 1};
    char err[512];
    decoder *d = decoder_new(m, &o, err, sizeof err);
    if (!d) die("%s", err);
    const int V = m->config.vocab;
    float *out = xmalloc((size_t)n * V * sizeof(float));
    CHECK(decoder_forward(d, ids, 8, out, 0) == 0);
    for (int i = 8; i < n; i++)
        CHECK(decoder_forward(d, &ids[i], 1, out + (size_t)i * V, 0) == 0);
    decoder_free(d);
    return out;
}

int main(int argc, char **argv) {
    util_progname = "quant_logits_check";
    if (argc != 5) die("usage: quant_logits_check ORIG_DIR QUANT_DIR BITS GROUP");
    const char *orig = argv[1], *qdir = argv[2];
    const int bits = atoi(argv[3]), group = atoi(argv[4]);
    const quant_dtype t = bits == 4 ? QUANT_INT4 : QUANT_INT8,
                      other = bits == 4 ? QUANT_INT8 : QUANT_INT4;
    model *a = load(orig, t, group), *b = load(qdir, QUANT_BF16, 0), *c = load(qdir, t, group);
    if (!b->prequantized || b->n_quant != a->n_quant || a->prequantized)
        problem("%s: %d linear layers read pre-quantized, %d quantized at load from %s", qdir,
                b->prequantized ? b->n_quant : 0, a->n_quant, orig);
    if (model_weight_dtype(b) != t || model_weight_group(b) != group)
        problem("%s: loads as %s group %d, not int%d group %d", qdir,
                quant_dtype_name(model_weight_dtype(b)), model_weight_group(b), bits, group);
    const int n = 24, V = a->config.vocab;
    int ids[24];
    for (int i = 0; i < n; i++)
        ids[i] = 2 + (i * 104729) % (V - 2);
    float *la = logits_of(a, ids, n), *lb = logits_of(b, ids, n), *lc = logits_of(c, ids, n);
    for (int k = 0; k < 2; k++) {
        const float *l = k ? lc : lb;
        size_t differ = 0;
        for (size_t i = 0; i < (size_t)n * V; i++)
            differ += memcmp(&la[i], &l[i], sizeof(float)) != 0;
        if (differ)
            problem("%s%s: %zu of %zu logits differ from %s at WEIGHT_DTYPE=int%d "
                    "WEIGHT_GROUP=%d",
                    qdir, k ? " (knobs set)" : "", differ, (size_t)n * V, orig, bits, group);
    }
    char err[1024];
    model *bad = model_load_prec(qdir, other, 0, err, sizeof err);
    if (bad || !strstr(err, quant_dtype_name(other)) || !strstr(err, quant_dtype_name(t)) ||
        !strstr(err, "WEIGHT_DTYPE"))
        problem("WEIGHT_DTYPE=%s over an int%d checkpoint: %s", quant_dtype_name(other), bits,
                bad ? "accepted" : err);
    model_free(bad);
    const int og = group == 32 ? 64 : 32;
    bad = model_load_prec(qdir, QUANT_BF16, og, err, sizeof err);
    if (bad || !strstr(err, "WEIGHT_GROUP") || !strstr(err, "group_size"))
        problem("WEIGHT_GROUP=%d over a group-%d checkpoint: %s", og, group,
                bad ? "accepted" : err);
    model_free(bad);
    free(la);
    free(lb);
    free(lc);
    model_free(a);
    model_free(b);
    model_free(c);
    if (problems) return 1;
    printf("quant_logits_check: %s: logits equal %s at int%d group %d bit for bit\n", qdir, orig,
           bits, group);
    return 0;
}
