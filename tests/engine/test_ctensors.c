/* test_ctensors.c: compressed-tensors pack-quantized checkpoints (engine/ctensors.c).
 *
 * The config: a W4A16 group config as llm-compressor writes it is accepted (and its allowed
 * variations), a config without quantization_config is a plain checkpoint, and every key or
 * value we do not support is refused with "config.json: quantization_config.<key>: <value>".
 * The layer: hand-made int32 words (whose nibbles and bytes are written out below) unpack to
 * the expected signed values on an unaligned buffer; a random matrix quantized by quant.c,
 * packed here by the pack_to_int32 rule, comes back bit for bit; every bad dtype, shape and
 * scale is refused naming the tensor. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctensors.h"
#include "../test_util.h"

static const char *valid_json =
    "{\"architectures\": [\"Gemma4ForCausalLM\"], \"model_type\": \"gemma4_text\","
    " \"quantization_config\": {"
    "  \"config_groups\": {\"group_0\": {"
    "    \"format\": \"pack-quantized\","
    "    \"input_activations\": null, \"output_activations\": null,"
    "    \"targets\": [\"Linear\"],"
    "    \"weights\": {\"actorder\": null, \"block_structure\": null, \"dynamic\": false,"
    "      \"group_size\": 32, \"num_bits\": 4, \"observer\": \"minmax\","
    "      \"observer_kwargs\": {}, \"scale_dtype\": null, \"strategy\": \"group\","
    "      \"symmetric\": true, \"type\": \"int\", \"zp_dtype\": null}}},"
    "  \"format\": \"pack-quantized\", \"global_compression_ratio\": null,"
    "  \"ignore\": [\"lm_head\", \"re:.*per_layer_input_gate$\", \"model.embed_tokens\"],"
    "  \"kv_cache_scheme\": null, \"quant_method\": \"compressed-tensors\","
    "  \"quantization_status\": \"compressed\", \"sparsity_config\": {},"
    "  \"transform_config\": {}, \"version\": \"0.12.2\"}}";

static cJSON *valid(void) {
    cJSON *j = cJSON_Parse(valid_json);
    if (!j) die("valid_json does not parse");
    return j;
}

/* The object at a dotted path under quantization_config ("" = quantization_config itself). */
static cJSON *at(cJSON *root, const char *path) {
    cJSON *o = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *tok = strtok(buf, "."); tok && o; tok = strtok(NULL, "."))
        o = cJSON_GetObjectItemCaseSensitive(o, tok);
    if (!o) die("no %s in the test config", path);
    return o;
}

static void test_valid(void) {
    cJSON *j = valid();
    ctensors_config c;
    char err[512] = "";
    int rc = ctensors_config_parse(j, "config.json", &c, err, sizeof err);
    EXPECT(rc == 1, " %s", err);
    EXPECT(c.num_bits == 4 && c.dtype == QUANT_INT4 && c.group_size == 32);
    EXPECT(c.n_targets == 1 && !strcmp(c.targets[0], "Linear"));
    EXPECT(c.n_ignore == 3 && !strcmp(c.ignore[0], "lm_head"));
    EXPECT(ctensors_ignored(&c, "lm_head"));
    EXPECT(ctensors_ignored(&c, "model.embed_tokens"));
    EXPECT(ctensors_ignored(&c, "model.layers.3.per_layer_input_gate"));
    EXPECT(!ctensors_ignored(&c, "model.layers.3.per_layer_input_gate.x"));
    EXPECT(!ctensors_ignored(&c, "model.layers.3.self_attn.q_proj"));
    EXPECT(!ctensors_ignored(&c, "lm_head2"));
    ctensors_config_free(&c);
    EXPECT(c.ignore == NULL && c.n_ignore == 0);

    /* allowed variations: int8 group 128, actorder "weight", bf16 scale_dtype, no status,
     * no per-scheme format, sparsity_config / transform_config null, no ignore list */
    cJSON *w = at(j, "config_groups.group_0.weights");
    cJSON_ReplaceItemInObject(w, "num_bits", cJSON_CreateNumber(8));
    cJSON_ReplaceItemInObject(w, "group_size", cJSON_CreateNumber(128));
    cJSON_ReplaceItemInObject(w, "actorder", cJSON_CreateString("weight"));
    cJSON_ReplaceItemInObject(w, "scale_dtype", cJSON_CreateString("torch.bfloat16"));
    cJSON *q = at(j, "");
    cJSON_DeleteItemFromObject(q, "quantization_status");
    cJSON_DeleteItemFromObject(at(j, "config_groups.group_0"), "format");
    cJSON_ReplaceItemInObject(q, "sparsity_config", cJSON_CreateNull());
    cJSON_DeleteItemFromObject(q, "transform_config");
    cJSON_DeleteItemFromObject(q, "ignore");
    rc = ctensors_config_parse(j, "config.json", &c, err, sizeof err);
    EXPECT(rc == 1, " %s", err);
    EXPECT(c.num_bits == 8 && c.dtype == QUANT_INT8 && c.group_size == 128 && c.n_ignore == 0);
    EXPECT(!ctensors_ignored(&c, "lm_head"));
    ctensors_config_free(&c);
    cJSON_Delete(j);

    /* no quantization_config, or null: a plain checkpoint */
    j = cJSON_Parse("{\"model_type\": \"gemma4_text\"}");
    EXPECT(ctensors_config_parse(j, "config.json", &c, err, sizeof err) == 0);
    cJSON_Delete(j);
    j = cJSON_Parse("{\"quantization_config\": null}");
    EXPECT(ctensors_config_parse(j, "config.json", &c, err, sizeof err) == 0);
    cJSON_Delete(j);
}

/* Replace (value != NULL) or delete the member `key` of the object at `path`, parse, and
 * require a refusal whose message holds "config.json: quantization_config.<full key>: <shown>"
 * and "is not supported". */
static void refused(int line, const char *path, const char *key, const char *value,
                    const char *full, const char *shown) {
    cJSON *j = valid();
    cJSON *o = at(j, path);
    if (value) {
        cJSON *v = cJSON_Parse(value);
        if (!v) die("line %d: bad test value %s", line, value);
        if (cJSON_GetObjectItemCaseSensitive(o, key))
            cJSON_ReplaceItemInObjectCaseSensitive(o, key, v);
        else
            cJSON_AddItemToObject(o, key, v);
    } else {
        cJSON_DeleteItemFromObjectCaseSensitive(o, key);
    }
    ctensors_config c;
    char err[1024] = "", want[512];
    snprintf(want, sizeof want, "config.json: quantization_config%s%s: %s", *full ? "." : "", full,
             shown);
    int rc = ctensors_config_parse(j, "config.json", &c, err, sizeof err);
    if (rc != -1 || !strstr(err, want) || !strstr(err, "is not supported")) {
        fprintf(stderr, "test_ctensors.c:%d: rc %d, message \"%s\"\n  want \"%s\"\n", line, rc, err,
                want);
        failures++;
    }
    EXPECT(c.targets == NULL && c.ignore == NULL);
    cJSON_Delete(j);
}

#define W  "config_groups.group_0.weights"
#define G0 "config_groups.group_0"

static void test_refusals(void) {
    /* the exact message for the commonest refusal */
    {
        cJSON *j = valid();
        cJSON_ReplaceItemInObject(at(j, ""), "format", cJSON_CreateString("float-quantized"));
        ctensors_config c;
        char err[512];
        EXPECT(ctensors_config_parse(j, "config.json", &c, err, sizeof err) == -1);
        EXPECT(!strcmp(err, "config.json: quantization_config.format: \"float-quantized\" is not "
                            "supported (pack-quantized only)"),
               " got \"%s\"", err);
        cJSON_Delete(j);
    }
    const char *formats[] = {"\"naive-quantized\"", "\"int-quantized\"",
                             "\"marlin-24\"",       "\"mixed-precision\"",
                             "\"dense\"",           "\"nvfp4-pack-quantized\""};
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        refused(__LINE__, "", "format", formats[i], "format", formats[i]);
    refused(__LINE__, "", "format", NULL, "format", "(missing)");
    refused(__LINE__, "", "quant_method", "\"gptq\"", "quant_method", "\"gptq\"");
    refused(__LINE__, "", "quant_method", "\"awq\"", "quant_method", "\"awq\"");
    refused(__LINE__, "", "quant_method", NULL, "quant_method", "(missing)");
    refused(__LINE__, "", "quantization_status", "\"frozen\"", "quantization_status", "\"frozen\"");
    refused(__LINE__, "", "kv_cache_scheme", "{\"num_bits\":8}", "kv_cache_scheme",
            "{\"num_bits\":8}");
    refused(__LINE__, "", "sparsity_config", "{\"format\":\"sparse-24-bitmask\"}",
            "sparsity_config", "{\"format\":\"sparse-24-bitmask\"}");
    refused(__LINE__, "", "transform_config", "{\"config_groups\":{}}", "transform_config",
            "{\"config_groups\":{}}");
    refused(__LINE__, "", "config_groups", "{}", "config_groups", "{}");
    refused(__LINE__, "", "config_groups", "[]", "config_groups", "[]");
    refused(__LINE__, "", "foo", "1", "foo", "1");
    refused(__LINE__, "", "ignore", "\"lm_head\"", "ignore", "\"lm_head\"");
    refused(__LINE__, "", "ignore", "[1]", "ignore", "[1]");
    refused(__LINE__, "config_groups", "group_1", "{\"targets\":[\"Linear\"]}", "config_groups",
            "{\"group_0\":");
    refused(__LINE__, "config_groups", "group_0", "[\"Linear\"]", G0, "[\"Linear\"]");
    refused(__LINE__, G0, "input_activations", "{\"num_bits\":8}", G0 ".input_activations",
            "{\"num_bits\":8}");
    refused(__LINE__, G0, "output_activations", "{\"num_bits\":8}", G0 ".output_activations",
            "{\"num_bits\":8}");
    refused(__LINE__, G0, "format", "\"float-quantized\"", G0 ".format", "\"float-quantized\"");
    refused(__LINE__, G0, "targets", "[]", G0 ".targets", "[]");
    refused(__LINE__, G0, "targets", "\"Linear\"", G0 ".targets", "\"Linear\"");
    refused(__LINE__, G0, "targets", NULL, G0 ".targets", "(missing)");
    refused(__LINE__, G0, "weights", NULL, G0 ".weights", "(missing)");
    refused(__LINE__, G0, "weights", "null", G0 ".weights", "(missing)");
    refused(__LINE__, G0, "bar", "true", G0 ".bar", "true");
    const char *bits[] = {"2", "3", "16", "4.5", "\"4\""};
    for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
        refused(__LINE__, W, "num_bits", bits[i], W ".num_bits", bits[i]);
    refused(__LINE__, W, "num_bits", NULL, W ".num_bits", "(missing)");
    refused(__LINE__, W, "type", "\"float\"", W ".type", "\"float\"");
    refused(__LINE__, W, "symmetric", "false", W ".symmetric", "false");
    refused(__LINE__, W, "symmetric", NULL, W ".symmetric", "(missing)");
    const char *strategies[] = {"\"channel\"",      "\"tensor\"", "\"block\"",
                                "\"tensor_group\"", "\"token\"",  "\"attn_head\""};
    for (size_t i = 0; i < sizeof strategies / sizeof strategies[0]; i++)
        refused(__LINE__, W, "strategy", strategies[i], W ".strategy", strategies[i]);
    const char *gs[] = {"16", "256", "-1", "32.5", "96", "\"32\""};
    for (size_t i = 0; i < sizeof gs / sizeof gs[0]; i++)
        refused(__LINE__, W, "group_size", gs[i], W ".group_size", gs[i]);
    refused(__LINE__, W, "dynamic", "true", W ".dynamic", "true");
    refused(__LINE__, W, "dynamic", "\"local\"", W ".dynamic", "\"local\"");
    refused(__LINE__, W, "actorder", "\"group\"", W ".actorder", "\"group\"");
    refused(__LINE__, W, "actorder", "\"dynamic\"", W ".actorder", "\"dynamic\"");
    refused(__LINE__, W, "actorder", "true", W ".actorder", "true");
    refused(__LINE__, W, "block_structure", "[128,128]", W ".block_structure", "[128,128]");
    refused(__LINE__, W, "scale_dtype", "\"torch.float16\"", W ".scale_dtype", "\"torch.float16\"");
    refused(__LINE__, W, "zp_dtype", "\"torch.int8\"", W ".zp_dtype", "\"torch.int8\"");
    refused(__LINE__, W, "baz", "1", W ".baz", "1");

    /* not an object */
    cJSON *j = cJSON_Parse("{\"quantization_config\": \"int4\"}");
    ctensors_config c;
    char err[512];
    EXPECT(ctensors_config_parse(j, "config.json", &c, err, sizeof err) == -1);
    EXPECT(strstr(err, "config.json: quantization_config: \"int4\" is not supported"), " %s", err);
    cJSON_Delete(j);
}

/* ---- layers --------------------------------------------------------------------------- */

typedef struct {
    ctensors_raw packed, scale, shape;
    int64_t packed_shape[2], scale_shape[2], shape_shape[1];
} layer;

static void set_raw(ctensors_raw *r, const void *data, st_dtype dt, int ndim,
                    const int64_t *shape) {
    r->data = data;
    r->dtype = dt;
    r->ndim = ndim;
    r->shape = shape;
}

/* Describe a layer whose buffers are given; shapes as a well-formed checkpoint has them. */
static void layer_init(layer *L, const void *packed, int rows, int words, const void *scale,
                       st_dtype scale_dt, int groups, const void *shape, st_dtype shape_dt) {
    L->packed_shape[0] = rows, L->packed_shape[1] = words;
    L->scale_shape[0] = rows, L->scale_shape[1] = groups;
    L->shape_shape[0] = 2;
    set_raw(&L->packed, packed, ST_I32, 2, L->packed_shape);
    set_raw(&L->scale, scale, scale_dt, 2, L->scale_shape);
    set_raw(&L->shape, shape, shape_dt, 1, L->shape_shape);
}

static ctensors_config cfg(int bits, int group) {
    ctensors_config c = {0};
    c.num_bits = bits;
    c.dtype = bits == 4 ? QUANT_INT4 : QUANT_INT8;
    c.group_size = group;
    return c;
}

static void put_le32(uint8_t *p, uint32_t v) {
    for (int k = 0; k < 4; k++)
        p[k] = (uint8_t)(v >> (8 * k));
}

static void test_hand_words(void) {
    /* int4, [2, 32], group 32: row 0 is -8..7 twice; row 1 is 7..-8 then zeros.
     * Word 0x76543210: nibble i (bits 4i..4i+3) = i -> value i - 8 at column i. */
    const uint32_t words4[2][4] = {{0x76543210u, 0xFEDCBA98u, 0x76543210u, 0xFEDCBA98u},
                                   {0x89ABCDEFu, 0x01234567u, 0x88888888u, 0x88888888u}};
    uint8_t buf[1 + 32];
    for (int r = 0; r < 2; r++)
        for (int w = 0; w < 4; w++)
            put_le32(buf + 1 + 16 * r + 4 * w, words4[r][w]); /* unaligned on purpose */
    const uint16_t scales[2] = {0x3E80 /* 0.25 */, 0xBE00 /* -0.125 */};
    uint8_t sbuf[1 + 4];
    memcpy(sbuf + 1, scales, 4);
    const int64_t shape64[2] = {2, 32};
    layer L;
    layer_init(&L, buf + 1, 2, 4, sbuf + 1, ST_BF16, 1, shape64, ST_I64);
    ctensors_config c = cfg(4, 32);
    quant_matrix m;
    char err[512];
    EXPECT(!ctensors_to_quant(&c, "l", &L.packed, &L.scale, &L.shape, 2, 32, &m, err, sizeof err),
           " %s", err);
    for (int i = 0; i < 32; i++) {
        EXPECT(quant_value(&m, 0, i) == (i % 16) - 8);
        EXPECT(quant_value(&m, 1, i) == (i < 16 ? 7 - i : 0));
    }
    EXPECT(m.q[0] == 0x10 && m.q[1] == 0x32 && m.q[16] == 0xEF); /* low nibble = even column */
    EXPECT(quant_scale(&m, 0, 0) == 0.25f && quant_scale(&m, 1, 0) == -0.125f);
    float row[32];
    quant_dequant_row(&m, 1, row);
    EXPECT(row[0] == -0.875f && row[15] == 1.0f);
    quant_free(&m);

    /* int8, [1, 32], group 32, weight_shape I32: byte k of a word = value 4w+k plus 128 */
    uint8_t b8[1 + 32];
    put_le32(b8 + 1, 0x03020180u); /* columns 0..3: 0, -127, -126, -125 */
    put_le32(b8 + 5, 0xFF7F0000u); /* columns 4..7: -128, -128, -1, 127 */
    for (int w = 2; w < 8; w++)
        put_le32(b8 + 1 + 4 * w, 0x80808080u);
    const int32_t shape32[2] = {1, 32};
    const uint16_t s8 = 0x3C00; /* 2^-7 */
    layer_init(&L, b8 + 1, 1, 8, &s8, ST_BF16, 1, shape32, ST_I32);
    c = cfg(8, 32);
    EXPECT(!ctensors_to_quant(&c, "l", &L.packed, &L.scale, &L.shape, 0, 0, &m, err, sizeof err),
           " %s", err);
    const int want[8] = {0, -127, -126, -125, -128, -128, -1, 127};
    for (int i = 0; i < 32; i++)
        EXPECT(quant_value(&m, 0, i) == (i < 8 ? want[i] : 0));
    /* held as two's complement int8 (quant.h): offset byte XOR 0x80 */
    EXPECT(m.q[0] == 0x00 && m.q[1] == 0x81 && m.q[4] == 0x80 && m.q[6] == 0xFF && m.q[7] == 0x7F);
    quant_free(&m);
}

/* Pack a quant_matrix's signed values the way pack_to_int32 does (value + 2^(bits-1), value i
 * of a word at bits [bits * i, bits * i + bits)), into little-endian bytes. */
static uint8_t *pack_words(const quant_matrix *m, int bits) {
    const int per = 32 / bits, words = m->cols / per;
    uint8_t *out = xmalloc((size_t)m->rows * words * 4);
    for (int r = 0; r < m->rows; r++)
        for (int w = 0; w < words; w++) {
            uint32_t v = 0;
            for (int i = 0; i < per; i++)
                v |= (uint32_t)(quant_value(m, r, w * per + i) + (1 << (bits - 1))) << (bits * i);
            put_le32(out + ((size_t)r * words + w) * 4, v);
        }
    return out;
}

static void test_round_trip(void) {
    const int rows = 12, cols = 256;
    float *w = rand_vec((size_t)rows * cols);
    const int bits[] = {4, 8}, groups[] = {32, 64, 128};
    for (int bi = 0; bi < 2; bi++)
        for (int gi = 0; gi < 3; gi++) {
            const int b = bits[bi], G = groups[gi];
            quant_matrix ref, m;
            char err[512];
            if (quant_from_f32(&ref, "w", w, rows, cols, b == 4 ? QUANT_INT4 : QUANT_INT8, G, err,
                               sizeof err))
                die("%s", err);
            uint8_t *packed = pack_words(&ref, b);
            const int64_t shape[2] = {rows, cols};
            layer L;
            layer_init(&L, packed, rows, cols / (32 / b), ref.scales, ST_BF16, cols / G, shape,
                       ST_I64);
            ctensors_config c = cfg(b, G);
            EXPECT(!ctensors_to_quant(&c, "w", &L.packed, &L.scale, &L.shape, rows, cols, &m, err,
                                      sizeof err),
                   " %s", err);
            EXPECT(m.dtype == ref.dtype && m.rows == rows && m.cols == cols && m.group == G);
            EXPECT(!memcmp(m.q, ref.q, ref.row_bytes * rows), " values differ (int%d g%d)", b, G);
            EXPECT(!memcmp(m.scales, ref.scales, (size_t)rows * (cols / G) * 2));
            quant_free(&m);
            free(packed);
            quant_free(&ref);
        }
    free(w);
}

static void layer_refused(int line, const ctensors_config *c, const layer *L, int rows, int cols,
                          const char *a, const char *b) {
    quant_matrix m;
    char err[512] = "";
    int rc = ctensors_to_quant(c, "model.layers.2.mlp.up_proj", &L->packed, &L->scale, &L->shape,
                               rows, cols, &m, err, sizeof err);
    if (rc != -1 || !strstr(err, a) || (b && !strstr(err, b))) {
        fprintf(stderr, "test_ctensors.c:%d: rc %d, message \"%s\" (want \"%s\", \"%s\")\n", line,
                rc, err, a, b ? b : "");
        failures++;
    }
    EXPECT(m.q == NULL && m.scales == NULL);
}

static void test_layer_refusals(void) {
    enum { R = 4, C = 64 };
    uint32_t packed[R * C / 8];
    for (int i = 0; i < R * C / 8; i++)
        packed[i] = 0x88888888u;
    uint16_t scales[R * 2];
    for (int i = 0; i < R * 2; i++)
        scales[i] = 0x3F80;
    const int64_t shape[2] = {R, C};
    const ctensors_config c = cfg(4, 32);
    layer L;
#define FRESH() layer_init(&L, packed, R, C / 8, scales, ST_BF16, 2, shape, ST_I64)
    FRESH();
    quant_matrix m;
    char err[512];
    EXPECT(!ctensors_to_quant(&c, "x", &L.packed, &L.scale, &L.shape, R, C, &m, err, sizeof err));
    quant_free(&m);

    FRESH();
    L.shape.dtype = ST_F32;
    layer_refused(__LINE__, &c, &L, R, C, "model.layers.2.mlp.up_proj.weight_shape: F32 [2]",
                  "expected I64");
    FRESH();
    L.shape_shape[0] = 3;
    layer_refused(__LINE__, &c, &L, R, C, "weight_shape: I64 [3]", "expected I64");
    FRESH();
    layer_refused(__LINE__, &c, &L, R, 128,
                  "weight_shape: [4, 64], but the config implies [4, 128]", NULL);
    FRESH();
    layer_refused(__LINE__, &c, &L, 8, C, "weight_shape: [4, 64], but the config implies [8, 64]",
                  NULL);
    const int64_t bad_cols[2] = {R, 48};
    FRESH();
    L.shape.data = bad_cols;
    layer_refused(__LINE__, &c, &L, 0, 0, "up_proj.weight_shape", "48 input columns");
    const int64_t neg[2] = {-4, 64};
    FRESH();
    L.shape.data = neg;
    layer_refused(__LINE__, &c, &L, 0, 0, "weight_shape: [-4, 64] is not a matrix shape", NULL);
    FRESH();
    L.packed.dtype = ST_I64;
    layer_refused(__LINE__, &c, &L, R, C, "up_proj.weight_packed: I64 [4, 8]",
                  "expected I32 [4, 8]");
    FRESH();
    L.packed_shape[1] = 16;
    layer_refused(__LINE__, &c, &L, R, C, "weight_packed: I32 [4, 16]", "expected I32 [4, 8]");
    FRESH();
    L.packed.ndim = 1;
    layer_refused(__LINE__, &c, &L, R, C, "weight_packed: I32 [4]", "expected I32 [4, 8]");
    const ctensors_config c8 = cfg(8, 32); /* 8-bit: 4 values per word -> [4, 16] */
    FRESH();
    layer_refused(__LINE__, &c8, &L, R, C, "weight_packed: I32 [4, 8]", "expected I32 [4, 16]");
    FRESH();
    L.scale_shape[1] = 4;
    layer_refused(__LINE__, &c, &L, R, C, "up_proj.weight_scale: BF16 [4, 4]",
                  "expected BF16 [4, 2] (group_size 32)");
    FRESH();
    L.scale.dtype = ST_I32;
    layer_refused(__LINE__, &c, &L, R, C, "weight_scale: I32 [4, 2]", "expected BF16");
    FRESH();
    scales[5] = 0x7FC0; /* NaN */
    layer_refused(__LINE__, &c, &L, R, C, "weight_scale: value [2, 1] is not finite", NULL);
    scales[5] = 0xFF80; /* -inf */
    layer_refused(__LINE__, &c, &L, R, C, "weight_scale: value [2, 1] is not finite", NULL);
    scales[5] = 0x3F80;

    /* F16 / F32 scales: accepted when exactly bf16, refused otherwise */
    uint16_t h[R * 2];
    for (int i = 0; i < R * 2; i++)
        h[i] = 0x3C00; /* 1.0 */
    FRESH();
    L.scale.data = h;
    L.scale.dtype = ST_F16;
    EXPECT(!ctensors_to_quant(&c, "x", &L.packed, &L.scale, &L.shape, R, C, &m, err, sizeof err),
           " %s", err);
    EXPECT(m.scales[0] == 0x3F80);
    quant_free(&m);
    h[3] = 0x3C01; /* 1 + 2^-10: not a bf16 */
    layer_refused(__LINE__, &c, &L, R, C, "weight_scale: value [1, 1] is not exactly a finite bf16",
                  NULL);
    float f[R * 2];
    for (int i = 0; i < R * 2; i++)
        f[i] = -0.375f;
    FRESH();
    L.scale.data = f;
    L.scale.dtype = ST_F32;
    EXPECT(!ctensors_to_quant(&c, "x", &L.packed, &L.scale, &L.shape, R, C, &m, err, sizeof err),
           " %s", err);
    EXPECT(quant_scale(&m, 3, 1) == -0.375f);
    quant_free(&m);
    f[0] = 0.1f;
    layer_refused(__LINE__, &c, &L, R, C, "weight_scale: value [0, 0] is not exactly a finite bf16",
                  NULL);
#undef FRESH
}

int main(void) {
    uint64_t seed = rng_seed_from_env();
    printf("test_ctensors: seed %llu (TEST_SEED to replay)\n", (unsigned long long)seed);
    test_valid();
    test_refusals();
    test_hand_words();
    test_round_trip();
    test_layer_refusals();
    return test_exit("test_ctensors");
}
