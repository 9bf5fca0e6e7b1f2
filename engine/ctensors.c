/* ctensors.c: compressed-tensors "pack-quantized" checkpoints -> quant.h (ctensors.h has the
 * accepted format and the refusals).
 *
 * The config is checked key by key against a closed list, and every refusal prints the key's
 * full path and its JSON value. A layer's tensors are checked (dtype, rank, shape, sizes,
 * finite scales) before a byte is copied; the packed words are read byte by byte so the result
 * does not depend on the host's byte order or the alignment of the mapping. */
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctensors.h"
#include "util.h"

typedef struct {
    const char *path; /* the config.json, for messages */
    char *err;
    size_t errlen;
} ctx;

/* The value as compact JSON for a message (at most ~80 characters), freed by the caller. */
static char *json_str(const cJSON *v) {
    char *s = v ? cJSON_PrintUnformatted(v) : NULL;
    if (!s) return xstrdup("(missing)");
    if (strlen(s) > 80) strcpy(s + 76, "...");
    return s;
}

/* "path: quantization_config.<key>: <value> <what>" */
static int refuse(const ctx *x, const char *key, const cJSON *v, const char *what) {
    char *s = json_str(v);
    err_set(x->err, x->errlen, "%s: quantization_config%s%s: %s %s", x->path, *key ? "." : "", key,
            s, what);
    free(s);
    return -1;
}

/* buf = a "." b (b alone when a is empty), cut to fit. */
static const char *join(char *buf, size_t n, const char *a, const char *b) {
    int k = snprintf(buf, n, "%s%s%s", a, *a ? "." : "", b);
    if (k < 0) buf[0] = 0;
    return buf;
}

/* The member, or NULL when absent or JSON null. */
static const cJSON *get(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

static int is_str(const cJSON *v, const char *s) {
    return cJSON_IsString(v) && v->valuestring && !strcmp(v->valuestring, s);
}

static int is_empty_object(const cJSON *v) {
    return cJSON_IsObject(v) && !v->child;
}

/* Refuse any member of obj not in known (NULL-terminated); prefix is obj's key path. */
static int check_keys(const ctx *x, const cJSON *obj, const char *prefix,
                      const char *const *known) {
    for (const cJSON *m = obj->child; m; m = m->next) {
        int ok = 0;
        for (int i = 0; known[i] && !ok; i++)
            ok = m->string && !strcmp(m->string, known[i]);
        if (ok) continue;
        char list[512] = "", key[256];
        for (int i = 0; known[i]; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                     known[i]);
        join(key, sizeof key, prefix, m->string ? m->string : "?");
        char what[600];
        snprintf(what, sizeof what, "is not supported: unknown key (known: %s)", list);
        return refuse(x, key, m, what);
    }
    return 0;
}

/* A list of strings (NULL or absent: empty) into a fresh array. */
static int str_list(const ctx *x, const cJSON *v, const char *key, char ***out, int *n) {
    *out = NULL;
    *n = 0;
    if (!v) return 0;
    if (!cJSON_IsArray(v)) return refuse(x, key, v, "is not supported (a list of strings)");
    int len = cJSON_GetArraySize(v);
    for (const cJSON *e = v->child; e; e = e->next)
        if (!cJSON_IsString(e) || !e->valuestring)
            return refuse(x, key, v, "is not supported (a list of strings)");
    *out = xcalloc((size_t)(len ? len : 1), sizeof(char *));
    for (const cJSON *e = v->child; e; e = e->next)
        (*out)[(*n)++] = xstrdup(e->valuestring);
    return 0;
}

static int parse_weights(const ctx *x, const cJSON *w, const char *pre, ctensors_config *c) {
    static const char *const known[] = {"num_bits",    "type",     "symmetric", "strategy",
                                        "group_size",  "dynamic",  "actorder",  "block_structure",
                                        "scale_dtype", "zp_dtype", "observer",  "observer_kwargs",
                                        NULL};
    char key[256];
    if (!cJSON_IsObject(w)) {
        join(key, sizeof key, "", pre);
        return refuse(x, key, w, "is not supported (an object of weight quantization args)");
    }
    if (check_keys(x, w, pre, known)) return -1;
#define KEY(k) join(key, sizeof key, pre, k)
    const cJSON *v = get(w, "num_bits");
    if (!cJSON_IsNumber(v) || (v->valuedouble != 4 && v->valuedouble != 8))
        return refuse(x, KEY("num_bits"), v, "is not supported (4 or 8)");
    c->num_bits = (int)v->valuedouble;
    c->dtype = c->num_bits == 4 ? QUANT_INT4 : QUANT_INT8;
    v = get(w, "type");
    if (!is_str(v, "int")) return refuse(x, KEY("type"), v, "is not supported (\"int\" only)");
    v = get(w, "symmetric");
    if (!cJSON_IsTrue(v))
        return refuse(x, KEY("symmetric"), v, "is not supported (true only: no zero points)");
    v = get(w, "strategy");
    if (!is_str(v, "group"))
        return refuse(x, KEY("strategy"), v, "is not supported (\"group\" only)");
    v = get(w, "group_size");
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
        !quant_group_valid((int)v->valuedouble))
        return refuse(x, KEY("group_size"), v, "is not supported (32, 64 or 128)");
    c->group_size = (int)v->valuedouble;
    v = get(w, "dynamic");
    if (v && !cJSON_IsFalse(v))
        return refuse(x, KEY("dynamic"), v, "is not supported (false only: static scales)");
    v = get(w, "actorder");
    if (v && !cJSON_IsFalse(v) && !is_str(v, "weight") && !is_str(v, "static"))
        return refuse(x, KEY("actorder"), v,
                      "is not supported (null, false, \"weight\" or \"static\": no g_idx)");
    v = get(w, "block_structure");
    if (v) return refuse(x, KEY("block_structure"), v, "is not supported (null only)");
    v = get(w, "scale_dtype");
    if (v && !is_str(v, "torch.bfloat16") && !is_str(v, "bfloat16"))
        return refuse(x, KEY("scale_dtype"), v, "is not supported (null or \"torch.bfloat16\")");
    v = get(w, "zp_dtype");
    if (v) return refuse(x, KEY("zp_dtype"), v, "is not supported (null only: symmetric)");
#undef KEY
    return 0;
}

static int parse_group(const ctx *x, const cJSON *g, ctensors_config *c) {
    static const char *const known[] = {
        "targets", "weights", "input_activations", "output_activations", "format", NULL};
    char pre[200], key[256];
    join(pre, sizeof pre, "config_groups", g->string ? g->string : "?");
    if (!cJSON_IsObject(g))
        return refuse(x, pre, g, "is not supported (a scheme object; preset names are not)");
    if (check_keys(x, g, pre, known)) return -1;
    join(key, sizeof key, pre, "targets");
    const cJSON *v = get(g, "targets");
    if (!v || !cJSON_GetArraySize(v))
        return refuse(x, key, v, "is not supported (a non-empty list of strings)");
    if (str_list(x, v, key, &c->targets, &c->n_targets)) return -1;
    join(key, sizeof key, pre, "input_activations");
    if ((v = get(g, "input_activations")))
        return refuse(x, key, v, "is not supported (null only: weight-only quantization)");
    join(key, sizeof key, pre, "output_activations");
    if ((v = get(g, "output_activations")))
        return refuse(x, key, v, "is not supported (null only: weight-only quantization)");
    join(key, sizeof key, pre, "format");
    if ((v = get(g, "format")) && !is_str(v, "pack-quantized"))
        return refuse(x, key, v, "is not supported (pack-quantized only)");
    join(key, sizeof key, pre, "weights");
    return parse_weights(x, get(g, "weights"), key, c);
}

int ctensors_config_parse(const cJSON *root, const char *path, ctensors_config *c, char *err,
                          size_t errlen) {
    static const char *const known[] = {"quant_method",
                                        "format",
                                        "quantization_status",
                                        "config_groups",
                                        "ignore",
                                        "kv_cache_scheme",
                                        "sparsity_config",
                                        "transform_config",
                                        "global_compression_ratio",
                                        "version",
                                        "run_compressed",
                                        "provider",
                                        NULL};
    memset(c, 0, sizeof *c);
    ctx x = {path, err, errlen};
    const cJSON *q = get(root, "quantization_config");
    if (!q) return 0;
    if (!cJSON_IsObject(q)) return refuse(&x, "", q, "is not supported (an object)");
    if (check_keys(&x, q, "", known)) goto fail;
    const cJSON *v = get(q, "quant_method");
    if (!is_str(v, "compressed-tensors")) {
        refuse(&x, "quant_method", v, "is not supported (compressed-tensors only)");
        goto fail;
    }
    v = get(q, "format");
    if (!is_str(v, "pack-quantized")) {
        refuse(&x, "format", v, "is not supported (pack-quantized only)");
        goto fail;
    }
    v = get(q, "quantization_status");
    if (v && !is_str(v, "compressed")) {
        refuse(&x, "quantization_status", v, "is not supported (\"compressed\" only)");
        goto fail;
    }
    if ((v = get(q, "kv_cache_scheme"))) {
        refuse(&x, "kv_cache_scheme", v, "is not supported (null only)");
        goto fail;
    }
    if ((v = get(q, "sparsity_config")) && !is_empty_object(v)) {
        refuse(&x, "sparsity_config", v, "is not supported (null or {} only)");
        goto fail;
    }
    if ((v = get(q, "transform_config")) && !is_empty_object(v)) {
        refuse(&x, "transform_config", v, "is not supported (null or {} only)");
        goto fail;
    }
    v = get(q, "config_groups");
    if (!cJSON_IsObject(v) || cJSON_GetArraySize(v) != 1) {
        refuse(&x, "config_groups", v, "is not supported (exactly one scheme)");
        goto fail;
    }
    if (parse_group(&x, v->child, c)) goto fail;
    if (str_list(&x, get(q, "ignore"), "ignore", &c->ignore, &c->n_ignore)) goto fail;
    return 1;
fail:
    ctensors_config_free(c);
    return -1;
}

int ctensors_config_load(const char *path, ctensors_config *c, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    size_t n;
    char *text = file_read_all(path, &n, err, errlen);
    if (!text) return -1;
    cJSON *root = cJSON_ParseWithLength(text, n);
    free(text);
    if (!root) return err_set(err, errlen, "%s: not valid JSON", path);
    int rc = ctensors_config_parse(root, path, c, err, errlen);
    cJSON_Delete(root);
    return rc;
}

void ctensors_config_free(ctensors_config *c) {
    for (int i = 0; i < c->n_targets; i++)
        free(c->targets[i]);
    for (int i = 0; i < c->n_ignore; i++)
        free(c->ignore[i]);
    free(c->targets);
    free(c->ignore);
    memset(c, 0, sizeof *c);
}

int ctensors_ignored(const ctensors_config *c, const char *module) {
    for (int i = 0; i < c->n_ignore; i++) {
        const char *e = c->ignore[i];
        if (strncmp(e, "re:", 3)) {
            if (!strcmp(e, module)) return 1;
            continue;
        }
        char *pat = xasprintf("^(%s)", e + 3);
        regex_t re;
        int bad = regcomp(&re, pat, REG_EXTENDED | REG_NOSUB);
        free(pat);
        if (bad) continue; /* a pattern POSIX cannot read matches nothing */
        int hit = !regexec(&re, module, 0, NULL, 0);
        regfree(&re);
        if (hit) return 1;
    }
    return 0;
}

/* ---- one layer ------------------------------------------------------------------------ */

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static float f16_f32(uint16_t h) {
    const int e = (h >> 10) & 0x1f;
    const int mant = h & 0x3ff;
    float f = e == 0    ? ldexpf((float)mant, -24)
              : e == 31 ? (mant ? NAN : INFINITY)
                        : ldexpf((float)(mant | 0x400), e - 25);
    return h & 0x8000 ? -f : f;
}

static float bf16_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static const char *shape_str(const ctensors_raw *t, char *buf, size_t len) {
    size_t at = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < t->ndim && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    if (at < len) snprintf(buf + at, len - at, "]");
    return buf;
}

/* The scale at index i as bf16 bits; -1 when it is not exactly a finite bf16. */
static long scale_bits(const ctensors_raw *s, size_t i) {
    const uint8_t *p = (const uint8_t *)s->data;
    float f;
    uint16_t b;
    if (s->dtype == ST_BF16) {
        b = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
        f = bf16_f32(b);
    } else if (s->dtype == ST_F16) {
        f = f16_f32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
    } else {
        uint32_t u = le32(p + 4 * i);
        memcpy(&f, &u, 4);
    }
    if (!isfinite(f)) return -1;
    uint32_t u;
    memcpy(&u, &f, 4);
    if (u & 0xffffu) return -1; /* not a bf16 */
    return (long)(u >> 16);
}

int ctensors_to_quant(const ctensors_config *c, const char *module, const ctensors_raw *packed,
                      const ctensors_raw *scale, const ctensors_raw *shape, int rows, int cols,
                      quant_matrix *m, char *err, size_t errlen) {
    char sb[128];
    memset(m, 0, sizeof *m);
    /* weight_shape: [out, in] */
    if ((shape->dtype != ST_I64 && shape->dtype != ST_I32) || shape->ndim != 1 ||
        shape->shape[0] != 2)
        return err_set(err, errlen, "%s.weight_shape: %s %s, expected I64 (or I32) [2]", module,
                       st_dtype_name(shape->dtype), shape_str(shape, sb, sizeof sb));
    int64_t dims[2];
    for (int i = 0; i < 2; i++) {
        const uint8_t *p = (const uint8_t *)shape->data + (size_t)i * st_dtype_size(shape->dtype);
        dims[i] = shape->dtype == ST_I32
                      ? (int64_t)(int32_t)le32(p)
                      : (int64_t)((uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32);
    }
    if (dims[0] <= 0 || dims[1] <= 0 || dims[0] > INT32_MAX || dims[1] > INT32_MAX)
        return err_set(err, errlen, "%s.weight_shape: [%lld, %lld] is not a matrix shape", module,
                       (long long)dims[0], (long long)dims[1]);
    if ((rows && dims[0] != rows) || (cols && dims[1] != cols))
        return err_set(err, errlen,
                       "%s.weight_shape: [%lld, %lld], but the config implies [%d, %d]", module,
                       (long long)dims[0], (long long)dims[1], rows, cols);
    const int R = (int)dims[0], C = (int)dims[1], G = c->group_size;
    char name[300];
    snprintf(name, sizeof name, "%s.weight_shape", module);
    if (quant_check_shape(name, c->dtype, R, C, G, err, errlen)) return -1;
    /* weight_packed: I32 [out, in / (32 / bits)] */
    const int per_word = 32 / c->num_bits, words = C / per_word;
    if (packed->dtype != ST_I32 || packed->ndim != 2 || packed->shape[0] != R ||
        packed->shape[1] != words)
        return err_set(err, errlen,
                       "%s.weight_packed: %s %s, expected I32 [%d, %d] (%d-bit values, "
                       "%d per word, weight_shape [%d, %d])",
                       module, st_dtype_name(packed->dtype), shape_str(packed, sb, sizeof sb), R,
                       words, c->num_bits, per_word, R, C);
    /* weight_scale: [out, in / group] */
    const int groups = C / G;
    if ((scale->dtype != ST_BF16 && scale->dtype != ST_F16 && scale->dtype != ST_F32) ||
        scale->ndim != 2 || scale->shape[0] != R || scale->shape[1] != groups)
        return err_set(err, errlen,
                       "%s.weight_scale: %s %s, expected BF16 [%d, %d] (group_size %d)", module,
                       st_dtype_name(scale->dtype), shape_str(scale, sb, sizeof sb), R, groups, G);
    if (quant_alloc(m, module, c->dtype, R, C, G, err, errlen)) return -1;
    const size_t n_scales = (size_t)R * (size_t)groups;
    for (size_t i = 0; i < n_scales; i++) {
        long b = scale_bits(scale, i);
        if (b < 0) {
            quant_free(m);
            return err_set(err, errlen,
                           "%s.weight_scale: value [%zu, %zu] is %s (scales must be finite %s)",
                           module, i / (size_t)groups, i % (size_t)groups,
                           scale->dtype == ST_BF16 ? "not finite" : "not exactly a finite bf16",
                           scale->dtype == ST_BF16 ? "bf16" : "bf16 values");
        }
        m->scales[i] = (uint16_t)b;
    }
    /* The bytes of each little-endian word are quant.h's bytes, in order: as they are for int4
     * (a pair of offset-binary nibbles), XOR 0x80 for int8 (q + 128 -> q as int8). Any byte is
     * a valid value. */
    const uint8_t flip = c->num_bits == 8 ? 0x80 : 0x00;
    const uint8_t *src = (const uint8_t *)packed->data;
    for (int r = 0; r < R; r++) {
        uint8_t *dst = m->q + (size_t)r * m->row_bytes;
        const uint8_t *row = src + (size_t)r * (size_t)words * 4;
        for (int w = 0; w < words; w++) {
            const uint32_t v = le32(row + 4 * (size_t)w);
            for (int k = 0; k < 4; k++)
                dst[4 * (size_t)w + (size_t)k] = (uint8_t)(v >> (8 * k)) ^ flip;
        }
    }
    return 0;
}
