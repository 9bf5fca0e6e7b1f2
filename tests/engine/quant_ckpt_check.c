/* quant_ckpt_check.c: checks a checkpoint written by tools/quantize_checkpoint.py against the
 * bf16 folder it came from (test_quantize_checkpoint.sh runs it).
 *
 *   quant_ckpt_check ORIG_DIR QUANT_DIR BITS GROUP
 *
 * QUANT_DIR/config.json must pass ctensors_config_load with these bits and group and ignore
 * lm_head. Every linear layer of the decoder in ORIG_DIR (the names the tool quantizes) read
 * back from QUANT_DIR through ctensors_to_quant must equal quant_from_bf16 of the original
 * weights bit for bit, values and scales, and must not be in the ignore list; every other
 * tensor must be there unchanged (dtype, shape, bytes), every other 2-D weight ignored, and
 * nothing else may be in QUANT_DIR. Prints one line per problem and exits 1 on any. */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctensors.h"
#include "quant.h"
#include "safetensors.h"
#include "util.h"

static int problems;

static void problem(const char *fmt, ...) PRINTF_LIKE(1, 2);
static void problem(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "quant_ckpt_check: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    problems++;
}

static const st_tensor *find3(const safetensors *st, const char *module, const char *suffix) {
    char name[512];
    snprintf(name, sizeof name, "%s.%s", module, suffix);
    const st_tensor *t = safetensors_find(st, name);
    if (!t) problem("%s: no %s in the quantized checkpoint", module, name);
    return t;
}

static void check_layer(const ctensors_config *c, const st_tensor *w, const safetensors *qs,
                        const char *module, int bits, int group) {
    if (w->dtype != ST_BF16 || w->ndim != 2) {
        problem("%s: the original is not a BF16 matrix", w->name);
        return;
    }
    if (ctensors_ignored(c, module)) problem("%s: quantized but in the ignore list", module);
    const st_tensor *p = find3(qs, module, "weight_packed"), *s = find3(qs, module, "weight_scale"),
                    *sh = find3(qs, module, "weight_shape");
    if (!p || !s || !sh) return;
    char wname[512];
    snprintf(wname, sizeof wname, "%s.weight", module);
    if (safetensors_find(qs, wname)) problem("%s: still in the quantized checkpoint", wname);
    const int rows = (int)w->shape[0], cols = (int)w->shape[1];
    quant_matrix want, got;
    char err[512];
    if (quant_from_bf16(&want, w->name, (const uint16_t *)w->data, rows, cols,
                        bits == 4 ? QUANT_INT4 : QUANT_INT8, group, err, sizeof err)) {
        problem("%s", err);
        return;
    }
    ctensors_raw rp = ctensors_raw_of(p), rs = ctensors_raw_of(s), rsh = ctensors_raw_of(sh);
    if (ctensors_to_quant(c, module, &rp, &rs, &rsh, rows, cols, &got, err, sizeof err)) {
        problem("%s", err);
        quant_free(&want);
        return;
    }
    size_t diff_q = 0, diff_s = 0;
    for (size_t i = 0; i < want.row_bytes * (size_t)rows; i++)
        diff_q += want.q[i] != got.q[i];
    for (size_t i = 0; i < (size_t)rows * (size_t)(cols / group); i++)
        diff_s += want.scales[i] != got.scales[i];
    if (diff_q || diff_s)
        problem("%s: %zu value bytes and %zu scales differ from quant_from_bf16", module, diff_q,
                diff_s);
    quant_free(&want);
    quant_free(&got);
}

int main(int argc, char **argv) {
    util_progname = "quant_ckpt_check";
    if (argc != 5) die("usage: quant_ckpt_check ORIG_DIR QUANT_DIR BITS GROUP");
    const char *orig_dir = argv[1], *quant_dir = argv[2];
    const int bits = atoi(argv[3]), group = atoi(argv[4]);
    char err[1024];
    char *cfg_path = xasprintf("%s/config.json", quant_dir);
    ctensors_config c;
    int rc = ctensors_config_load(cfg_path, &c, err, sizeof err);
    if (rc != 1) die("%s", rc ? err : "no quantization_config");
    if (c.num_bits != bits || c.group_size != group)
        problem("%s: num_bits %d group_size %d, expected %d and %d", cfg_path, c.num_bits,
                c.group_size, bits, group);
    if (!ctensors_ignored(&c, "lm_head")) problem("%s: lm_head is not ignored", cfg_path);

    safetensors os = {0}, qs = {0};
    if (safetensors_open_dir(&os, orig_dir, err, sizeof err)) die("%s", err);
    if (safetensors_open_dir(&qs, quant_dir, err, sizeof err)) die("%s", err);
    regex_t target;
    if (regcomp(&target,
                "^(model\\.|model\\.language_model\\.|language_model\\.model\\.)layers\\.[0-9]+\\."
                "(self_attn\\.(q|k|v|o)_proj|mlp\\.(gate|up|down)_proj)\\.weight$",
                REG_EXTENDED | REG_NOSUB))
        die("regcomp");
    int layers = 0, others = 0;
    for (int i = 0; i < os.n_tensors; i++) {
        const st_tensor *t = &os.tensors[i];
        const size_t len = strlen(t->name);
        char *module = xstrdup(t->name);
        if (len > 7 && !strcmp(t->name + len - 7, ".weight")) module[len - 7] = 0;
        if (!regexec(&target, t->name, 0, NULL, 0)) {
            check_layer(&c, t, &qs, module, bits, group);
            layers++;
        } else {
            const st_tensor *q = safetensors_find(&qs, t->name);
            if (!q)
                problem("%s: missing from the quantized checkpoint", t->name);
            else if (q->dtype != t->dtype || q->ndim != t->ndim || q->nbytes != t->nbytes ||
                     memcmp(q->shape, t->shape, sizeof t->shape) ||
                     (t->nbytes && memcmp(q->data, t->data, t->nbytes)))
                problem("%s: changed by the tool", t->name);
            if (t->ndim == 2 && strcmp(module, t->name) && !ctensors_ignored(&c, module))
                problem("%s: a 2-D weight left as is but not in the ignore list", module);
            others++;
        }
        free(module);
    }
    if (!layers) problem("%s: no linear layer of the decoder", orig_dir);
    if (qs.n_tensors != others + 3 * layers)
        problem("%s: %d tensors, expected %d (%d copied + 3 x %d layers)", quant_dir, qs.n_tensors,
                others + 3 * layers, others, layers);
    regfree(&target);
    safetensors_close(&os);
    safetensors_close(&qs);
    ctensors_config_free(&c);
    free(cfg_path);
    if (problems) {
        fprintf(stderr, "quant_ckpt_check: %d problem(s) in %s\n", problems, quant_dir);
        return 1;
    }
    printf("quant_ckpt_check: %d layers bit-identical to quant_from_bf16 (int%d, group %d), %d "
           "other tensors unchanged\n",
           layers, bits, group, others);
    return 0;
}
