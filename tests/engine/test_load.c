/* test_load.c: model loading (safetensors.c, config.c, model_load.c).
 *
 * Happy path: the three golden fixtures load, and what our config parser derives for every
 * layer (head dim, kv heads, kv sharing and its source, k==v, MLP width, layer_scalar) equals
 * what transformers 5.17 built for the same config.json (golden.json "layers"); the weight
 * descriptors point where they should; the config defaults are transformers'.
 * Bad input: each case below is made in a temp dir from a fixture or from scratch, and must
 * fail with a message naming the file and the tensor or key - truncated and malformed
 * safetensors, bad offsets and dtypes, wrong shapes, missing and unexpected tensors, bad
 * JSON, the MoE variant, unknown model types, unsupported settings, broken shard indexes. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "engine.h"
#include "model.h"
#include "safetensors.h"
#include "util.h"
#include "../test_util.h"

static char *tmp; /* the test's temporary folder */

/* ---- files ---------------------------------------------------------------------------- */

static void copy_file(const char *src, const char *dst, long truncate_by) {
    char err[512];
    size_t n;
    char *data = file_read_all(src, &n, err, sizeof err);
    if (!data) die("%s", err);
    test_write_file(dst, data,
                    truncate_by > 0 && (size_t)truncate_by < n ? n - (size_t)truncate_by : n);
    free(data);
}

static void write_json(const char *path, const cJSON *j) {
    char *s = cJSON_Print(j);
    test_write_file(path, s, strlen(s));
    free(s);
}

/* A fresh model folder tmp/name with the fixture's safetensors files and its config.json
 * (the config as a cJSON tree the caller may edit, then write with finish_dir). */
static char *fresh_dir(const char *name, const char *fixture, cJSON **config) {
    char *dir = xasprintf("%s/%s", tmp, name);
    char *cmd = xasprintf("rm -rf '%s' && mkdir -p '%s' && cp fixtures/%s/*.safetensors* '%s'/",
                          dir, dir, fixture, dir);
    if (system(cmd) != 0) die("%s failed", cmd);
    free(cmd);
    char *src = xasprintf("fixtures/%s/config.json", fixture);
    *config = test_read_json(src);
    free(src);
    return dir;
}

static void finish_dir(const char *dir, cJSON *config) {
    char *path = xasprintf("%s/config.json", dir);
    write_json(path, config);
    free(path);
    cJSON_Delete(config);
}

static void set_num(cJSON *obj, const char *key, double v) {
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    cJSON_AddNumberToObject(obj, key, v);
}

static void set_bool(cJSON *obj, const char *key, int v) {
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    cJSON_AddBoolToObject(obj, key, v);
}

static void set_str(cJSON *obj, const char *key, const char *v) {
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    cJSON_AddStringToObject(obj, key, v);
}

/* model_load(dir) must fail, with every one of the NULL-terminated substrings in its
 * message. */
static void expect_load_error(const char *what, const char *dir, ...) {
    char err[2048] = "";
    model *m = model_load(dir, err, sizeof err);
    if (m) {
        EXPECT(0, "%s: model_load(%s) succeeded, expected an error", what, dir);
        model_free(m);
        return;
    }
    va_list ap;
    va_start(ap, dir);
    for (const char *s; (s = va_arg(ap, const char *));)
        EXPECT(strstr(err, s), "%s: error \"%s\" does not mention \"%s\"", what, err, s);
    va_end(ap);
    printf("ok   %-28s %s\n", what, err);
}

/* A safetensors file from a header string (space-padded to 8 bytes unless hlen is given)
 * and a data block. */
static void write_st(const char *path, const char *header, const void *data, size_t n,
                     long long hlen) {
    size_t h = strlen(header), padded = (h + 7) / 8 * 8;
    if (hlen >= 0) padded = h;
    uint64_t len = hlen >= 0 ? (uint64_t)hlen : padded;
    uint8_t *buf = xcalloc(8 + padded + n, 1);
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)(len >> (8 * i));
    memcpy(buf + 8, header, h);
    memset(buf + 8 + h, ' ', padded - h);
    if (n) memcpy(buf + 8 + padded, data, n);
    test_write_file(path, buf, 8 + padded + n);
    free(buf);
}

/* ---- happy path --------------------------------------------------------------------------- */

static void check_fixture(const char *name, weight_dtype dtype) {
    char dir[256], err[1024];
    snprintf(dir, sizeof dir, "fixtures/%s", name);
    model *m = model_load(dir, err, sizeof err);
    if (!m) {
        EXPECT(0, "%s: %s", dir, err);
        return;
    }
    char *gpath = xasprintf("%s/golden.json", dir);
    cJSON *golden = test_read_json(gpath);
    free(gpath);
    const cJSON *kw = cJSON_GetObjectItem(golden, "config_kwargs");
    const cJSON *layers = cJSON_GetObjectItem(golden, "layers");
    const model_config *c = &m->config;
    const model_weights *w = &m->weights;

    EXPECT(c->n_layers == cJSON_GetArraySize(layers), "%s: %d layers", name, c->n_layers);
    EXPECT(c->vocab == cJSON_GetObjectItem(kw, "vocab_size")->valueint, "%s: vocab", name);
    EXPECT(c->hidden == cJSON_GetObjectItem(kw, "hidden_size")->valueint, "%s: hidden", name);
    EXPECT(c->sliding_window == cJSON_GetObjectItem(kw, "sliding_window")->valueint, "%s: window",
           name);
    EXPECT(c->ple_dim == cJSON_GetObjectItem(kw, "hidden_size_per_layer_input")->valueint,
           "%s: ple_dim", name);
    const cJSON *cap = cJSON_GetObjectItem(kw, "final_logit_softcapping");
    EXPECT(cJSON_IsNull(cap) ? c->final_softcap == 0 : c->final_softcap == cap->valuedouble,
           "%s: softcap %g", name, c->final_softcap);
    const int tied = cJSON_IsTrue(cJSON_GetObjectItem(kw, "tie_word_embeddings"));
    EXPECT(c->tie_embeddings == tied, "%s: tie", name);
    EXPECT((w->lm_head.data == w->embed.data) == tied, "%s: lm_head tied=%d", name, tied);
    EXPECT(w->embed.dtype == dtype && w->lm_head.dtype == dtype, "%s: dtype", name);
    EXPECT(!!w->embed_ple.data == !!c->ple_dim && !!w->ple_model_proj.data == !!c->ple_dim,
           "%s: PLE tensors", name);
    const cJSON *rope = cJSON_GetObjectItem(kw, "rope_parameters");
    const cJSON *rf = cJSON_GetObjectItem(rope, "full_attention");
    EXPECT(c->rope_full.proportional &&
               c->rope_full.partial_rotary_factor ==
                   (float)cJSON_GetObjectItem(rf, "partial_rotary_factor")->valuedouble &&
               c->rope_full.theta == (float)cJSON_GetObjectItem(rf, "rope_theta")->valuedouble,
           "%s: full-layer rope", name);

    for (int i = 0; i < c->n_layers && i < cJSON_GetArraySize(layers); i++) {
        const cJSON *f = cJSON_GetArrayItem(layers, i);
        const layer_config *l = &c->layers[i];
        const layer_weights *lw = &w->layers[i];
        const int full = !strcmp(cJSON_GetObjectItem(f, "type")->valuestring, "full_attention");
        const int shared = cJSON_IsTrue(cJSON_GetObjectItem(f, "kv_shared"));
        const int has_v = cJSON_IsTrue(cJSON_GetObjectItem(f, "has_v_proj"));
        const cJSON *kvh = cJSON_GetObjectItem(f, "num_kv_heads");
        EXPECT((l->type == LAYER_FULL) == full, "%s layer %d: type", name, i);
        EXPECT(l->head_dim == cJSON_GetObjectItem(f, "head_dim")->valueint,
               "%s layer %d: head_dim %d", name, i, l->head_dim);
        EXPECT(c->n_heads / l->n_kv_heads == cJSON_GetObjectItem(f, "num_kv_groups")->valueint,
               "%s layer %d: kv groups", name, i);
        if (!cJSON_IsNull(kvh))
            EXPECT(l->n_kv_heads == kvh->valueint, "%s layer %d: kv heads %d", name, i,
                   l->n_kv_heads);
        EXPECT(l->kv_shared == shared, "%s layer %d: kv_shared", name, i);
        EXPECT(l->k_eq_v == (!has_v && !shared), "%s layer %d: k_eq_v", name, i);
        EXPECT(l->intermediate == cJSON_GetObjectItem(f, "intermediate")->valueint,
               "%s layer %d: intermediate %d", name, i, l->intermediate);
        EXPECT(lw->layer_scalar == (float)cJSON_GetObjectItem(f, "layer_scalar")->valuedouble,
               "%s layer %d: layer_scalar %g", name, i, lw->layer_scalar);
        if (shared) {
            /* The source is the layer transformers stores full-length KV from. */
            const cJSON *src = cJSON_GetArrayItem(layers, l->kv_source);
            EXPECT(l->kv_source >= 0 && l->kv_source < i && src &&
                       cJSON_IsTrue(cJSON_GetObjectItem(src, "store_full_length_kv")) &&
                       c->layers[l->kv_source].type == l->type,
                   "%s layer %d: kv_source %d", name, i, l->kv_source);
        } else {
            EXPECT(l->kv_source == i, "%s layer %d: kv_source %d", name, i, l->kv_source);
        }
        EXPECT(!!lw->k_proj.data == !shared && !!lw->k_norm.data == !shared,
               "%s layer %d: k_proj presence", name, i);
        EXPECT(!!lw->v_proj.data == has_v, "%s layer %d: v_proj presence", name, i);
        EXPECT(lw->gate_proj.rows == l->intermediate && lw->gate_proj.cols == c->hidden,
               "%s layer %d: gate_proj shape", name, i);
        EXPECT(!!lw->ple_gate.data == !!c->ple_dim, "%s layer %d: PLE gate", name, i);
    }

    /* bytes per token, counted independently from the files: everything stored, minus the
     * embedding tables (one row each is read), plus the head (the tied embedding again),
     * minus the layer_scalar buffers (read once at load). */
    safetensors st;
    if (safetensors_open_dir(&st, dir, err, sizeof err)) die("%s", err);
    size_t expect = 0;
    for (int i = 0; i < st.n_tensors; i++) {
        const st_tensor *t = &st.tensors[i];
        if (strstr(t->name, "layer_scalar")) continue;
        if (strstr(t->name, "embed_tokens"))
            expect += (size_t)t->shape[1] * st_dtype_size(t->dtype);
        else
            expect += t->nbytes;
    }
    if (tied) expect += (size_t)c->vocab * c->hidden * dtype_size(w->embed.dtype);
    EXPECT(model_bytes_per_token(m) == expect, "%s: bytes per token %zu, expected %zu", name,
           model_bytes_per_token(m), expect);
    safetensors_close(&st);
    printf("ok   %-28s %d layers, %zu bytes per token\n", name, c->n_layers,
           model_bytes_per_token(m));
    cJSON_Delete(golden);
    model_free(m);
}

/* config_parse on a literal; returns 0 on success. */
static int parse(const char *json, model_config *c, config_info *info, char *err, size_t n) {
    return config_parse(json, strlen(json), "test.json", c, info, err, n);
}

static void check_config_rules(void) {
    model_config c;
    config_info info;
    char err[1024];
    /* An empty gemma4_text config gets transformers 5.17's Gemma4TextConfig defaults. */
    EXPECT(parse("{\"model_type\": \"gemma4_text\"}", &c, &info, err, sizeof err) == 0, "%s", err);
    EXPECT(c.vocab == 262144 && c.hidden == 2304 && c.intermediate == 9216 && c.n_layers == 30 &&
               c.n_heads == 8 && c.n_kv_heads == 4 && c.head_dim == 256 &&
               c.max_positions == 131072 && c.sliding_window == 512 && c.ple_dim == 256 &&
               c.ple_vocab == 262144 && c.bos_id == 2 && c.eos_id == 1 && c.pad_id == 0 &&
               c.tie_embeddings && c.final_softcap == 0 && !c.attention_k_eq_v &&
               c.num_kv_shared_layers == 0 && c.rms_eps == 1e-6f,
           "defaults differ from Gemma4TextConfig's");
    EXPECT(c.layers[5].type == LAYER_FULL && c.layers[4].type == LAYER_SLIDING &&
               c.layers[29].type == LAYER_FULL && c.layers[5].head_dim == 512 &&
               c.layers[4].head_dim == 256,
           "default layer pattern / global_head_dim 512");
    EXPECT(c.rope_full.proportional && c.rope_full.theta == 1e6f &&
               c.rope_full.partial_rotary_factor == 0.25f && !c.rope_sliding.proportional &&
               c.rope_sliding.theta == 1e4f,
           "default rope parameters");
    model_config_free(&c);

    /* The released checkpoints' spelling: global_head_dim, num_global_key_value_heads (used
     * only with attention_k_eq_v), eos as a list, the last layer forced to full. */
    const char *base = "{\"model_type\": \"gemma4_text\", \"num_hidden_layers\": 3, "
                       "\"layer_types\": [\"sliding_attention\", \"full_attention\", "
                       "\"sliding_attention\"], \"head_dim\": 32, \"global_head_dim\": 64, "
                       "\"num_key_value_heads\": 2, \"num_global_key_value_heads\": 1, "
                       "\"eos_token_id\": [106, 1], \"attention_k_eq_v\": %s}";
    char json[1024];
    snprintf(json, sizeof json, base, "false");
    EXPECT(parse(json, &c, &info, err, sizeof err) == 0, "%s", err);
    EXPECT(c.layers[1].head_dim == 64 && c.layers[1].n_kv_heads == 2 && !c.layers[1].k_eq_v &&
               c.layers[0].head_dim == 32 && c.layers[2].type == LAYER_FULL && c.eos_id == 106,
           "global_head_dim without k_eq_v");
    model_config_free(&c);
    snprintf(json, sizeof json, base, "true");
    EXPECT(parse(json, &c, &info, err, sizeof err) == 0, "%s", err);
    EXPECT(c.layers[1].n_kv_heads == 1 && c.layers[1].k_eq_v && c.layers[0].n_kv_heads == 2 &&
               !c.layers[0].k_eq_v,
           "num_global_key_value_heads with k_eq_v");
    model_config_free(&c);

    /* The wrapper: text_config inside; the wrapper's tie flag wins. */
    EXPECT(parse("{\"model_type\": \"gemma4\", \"tie_word_embeddings\": false, \"text_config\": "
                 "{\"num_hidden_layers\": 2, \"tie_word_embeddings\": true}}",
                 &c, &info, err, sizeof err) == 0,
           "%s", err);
    EXPECT(info.wrapped && !info.tie_embeddings && !c.tie_embeddings && c.n_layers == 2,
           "gemma4 wrapper");
    model_config_free(&c);

    /* Refusals through config_parse: each message names the key. */
    static const struct {
        const char *json, *want;
    } bad[] = {
        {"{\"model_type\": \"gemma4_text\", \"enable_moe_block\": true}", "enable_moe_block"},
        {"{\"model_type\": \"gemma4_text\", \"head_dim\": 0}", "head_dim"},
        {"{\"model_type\": \"gemma4_text\", \"num_hidden_layers\": 2.5}", "num_hidden_layers"},
        {"{\"model_type\": \"gemma4_text\", \"layer_types\": [\"sliding_attention\"]}",
         "layer_types"},
        {"{\"model_type\": \"gemma4_text\", \"num_hidden_layers\": 1, \"layer_types\": "
         "[\"chunked_attention\"]}",
         "layer_types"},
        {"{\"model_type\": \"gemma4_text\", \"attention_bias\": true}", "attention_bias"},
        {"{\"model_type\": \"gemma4_text\", \"use_bidirectional_attention\": \"all\"}",
         "use_bidirectional_attention"},
        {"{\"model_type\": \"gemma4_text\", \"tie_word_embeddings\": 1}", "tie_word_embeddings"},
        {"{\"model_type\": \"gemma4_text\", \"rope_parameters\": {\"rope_type\": \"default\", "
         "\"rope_theta\": 1}}",
         "rope_parameters"},
        {"{\"model_type\": \"gemma4_text\", \"rope_parameters\": {\"sliding_attention\": "
         "{\"rope_type\": \"default\", \"rope_theta\": 1e4}}}",
         "rope_parameters.full_attention"},
        {"{\"model_type\": \"gemma4_text\", \"num_kv_shared_layers\": 30}", "num_kv_shared_layers"},
        {"{\"model_type\": \"gemma4_text\", \"num_attention_heads\": 3}", "kv heads"},
        {"{\"model_type\": \"gemma4_text\", \"per_layer_config\": {\"5\": {\"head_dim\": 64}, "
         "\"11\": {\"head_dim\": 128}}}",
         "different shapes"},
        {"{\"model_type\": \"gemma4_text\", \"per_layer_config\": {\"99\": {}}}",
         "per_layer_config.99"},
        {"{\"model_type\": \"gemma4_text\", \"per_layer_config\": {\"0\": {\"head_dim\": 64}}}",
         "sliding layer"},
        {"{\"model_type\": \"gemma4_text\", \"num_hidden_layers\": 6, \"per_layer_config\": "
         "{\"5\": {\"num_key_value_heads\": 1}}}",
         "attention_k_eq_v"},
        {"{\"model_type\": \"gemma4\", \"text_config\": {\"model_type\": \"gemma3_text\"}}",
         "text_config.model_type"},
        {"{\"model_type\": \"gemma4\", \"text_config\": {\"hidden_size\": -1}}",
         "text_config.hidden_size"},
        {"{\"model_type\": \"gemma4_assistant\"}", "gemma4_assistant"},
        {"[1, 2]", "not a JSON object"},
        {"{\"model_type\": \"gemma4_text\",\n \"hidden_size\": }", "line 2"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        int rc = parse(bad[i].json, &c, &info, err, sizeof err);
        EXPECT(rc != 0, "config %zu accepted: %s", i, bad[i].json);
        if (rc == 0) model_config_free(&c);
        EXPECT(rc == 0 || (strstr(err, bad[i].want) && strstr(err, "test.json")),
               "config %zu: error \"%s\" does not mention \"%s\"", i, err, bad[i].want);
    }
    printf("ok   config rules (%zu refusals)\n", sizeof bad / sizeof bad[0]);
}

/* ---- safetensors unit checks --------------------------------------------------------------- */

static void expect_st_error(const char *what, const char *path, const char *want) {
    safetensors st = {0};
    char err[1024] = "";
    int rc = safetensors_add_file(&st, path, err, sizeof err);
    if (!rc) rc = safetensors_finish(&st, err, sizeof err);
    EXPECT(rc != 0, "%s: accepted", what);
    EXPECT(rc == 0 || (strstr(err, want) && strstr(err, path)),
           "%s: error \"%s\" does not mention \"%s\" and the file", what, err, want);
    if (rc) printf("ok   %-28s %s\n", what, err);
    safetensors_close(&st);
}

static void check_safetensors(void) {
    char *p = xasprintf("%s/unit.safetensors", tmp);
    /* Values: 1.5 and -2 in F32, BF16 (0x3FC0, 0xC000) and F16 (0x3E00, 0xC000). */
    uint8_t data[20] = {0};
    float f[2] = {1.5f, -2.0f};
    uint16_t bf[2] = {0x3FC0, 0xC000}, hf[2] = {0x3E00, 0xC000};
    memcpy(data, f, 8);
    memcpy(data + 8, bf, 4);
    memcpy(data + 12, hf, 4);
    write_st(p,
             "{\"__metadata__\": {\"format\": \"pt\"}, \"a\": {\"dtype\": \"F32\", \"shape\": [2], "
             "\"data_offsets\": [0, 8]}, \"b\": {\"dtype\": \"BF16\", \"shape\": [1, 2], "
             "\"data_offsets\": [8, 12]}, \"c\": {\"dtype\": \"F16\", \"shape\": [2], "
             "\"data_offsets\": [12, 16]}, \"s\": {\"dtype\": \"I32\", \"shape\": [], "
             "\"data_offsets\": [16, 20]}}",
             data, 20, -1);
    safetensors st = {0};
    char err[1024];
    EXPECT(safetensors_add_file(&st, p, err, sizeof err) == 0 &&
               safetensors_finish(&st, err, sizeof err) == 0,
           "unit file: %s", err);
    const char *names[] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        const st_tensor *t = safetensors_find(&st, names[i]);
        float out[2] = {0, 0};
        EXPECT(t && st_to_f32(t, out) == 0 && out[0] == 1.5f && out[1] == -2.0f,
               "tensor %s converts to %g %g", names[i], out[0], out[1]);
    }
    const st_tensor *s = safetensors_find(&st, "s");
    EXPECT(s && s->ndim == 0 && s->numel == 1 && !st_dtype_is_float(s->dtype),
           "scalar I32 entry parsed (numel %lld)", s ? (long long)s->numel : -1LL);
    EXPECT(!safetensors_find(&st, "nope"), "find of an absent name");
    /* The same names again from a second file: a duplicate across shards. */
    char *q = xasprintf("%s/unit2.safetensors", tmp);
    write_st(q, "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", data, 4,
             -1);
    EXPECT(safetensors_add_file(&st, q, err, sizeof err) == 0, "%s", err);
    EXPECT(safetensors_finish(&st, err, sizeof err) != 0 && strstr(err, "'a' appears twice"),
           "duplicate across files: %s", err);
    safetensors_close(&st);
    free(q);
    printf("ok   safetensors values and duplicates\n");

    static const struct {
        const char *what, *header, *want;
        long long hlen;
    } bad[] = {
        {"unknown dtype",
         "{\"w\": {\"dtype\": \"Q4_K\", \"shape\": [2], \"data_offsets\": [0, 8]}}",
         "'w': unknown dtype \"Q4_K\"", -1},
        {"offsets past the end",
         "{\"w\": {\"dtype\": \"F32\", \"shape\": [8], \"data_offsets\": [0, 32]}}",
         "'w': data_offsets [0, 32] run past the end", -1},
        {"offsets reversed",
         "{\"w\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [8, 4]}}",
         "end before begin", -1},
        {"offsets vs shape",
         "{\"w\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}",
         "'w': data_offsets [0, 8] hold 8 bytes but F32 [3] needs 12", -1},
        {"overlapping tensors",
         "{\"u\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, \"v\": "
         "{\"dtype\": "
         "\"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}",
         "overlap", -1},
        {"misaligned tensor",
         "{\"w\": {\"dtype\": \"BF16\", \"shape\": [2], \"data_offsets\": [1, 5]}}", "not aligned",
         -1},
        {"negative shape",
         "{\"w\": {\"dtype\": \"F32\", \"shape\": [-2], \"data_offsets\": [0, 8]}}", "shape[0]",
         -1},
        {"missing dtype", "{\"w\": {\"shape\": [2], \"data_offsets\": [0, 8]}}", "\"dtype\"", -1},
        {"scalar size", "{\"s\": {\"dtype\": \"I32\", \"shape\": [], \"data_offsets\": [0, 0]}}",
         "hold 0 bytes but I32 [] needs 4", -1},
        {"header not JSON", "{\"w\": {\"dtype\": \"F32\", ", "not a JSON object", -1},
        {"header length too big", "{}", "bad header length", 1 << 20},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_st(p, bad[i].header, data, 16, bad[i].hlen);
        expect_st_error(bad[i].what, p, bad[i].want);
    }
    test_write_file(p, "abc", 3);
    expect_st_error("file of 3 bytes", p, "too short");
    free(p);
}

/* ---- bad model folders ------------------------------------------------------------------- */

static void check_bad_folders(void) {
    cJSON *cfg;
    char *dir, *path;

    /* Truncated weights: the last tensors' bytes are gone. */
    dir = fresh_dir("truncated", "a_ple_kvshare", &cfg);
    finish_dir(dir, cfg);
    path = xasprintf("%s/model.safetensors", dir);
    copy_file("fixtures/a_ple_kvshare/model.safetensors", path, 1000);
    expect_load_error("truncated safetensors", dir, path, "run past the end", "truncated", NULL);
    copy_file("fixtures/a_ple_kvshare/model.safetensors", path, 575868 - 6);
    expect_load_error("truncated to 6 bytes", dir, path, "too short", NULL);
    free(path);
    free(dir);

    /* A shape that does not match the config. */
    dir = fresh_dir("wrong_shape", "a_ple_kvshare", &cfg);
    set_num(cfg, "intermediate_size", 72);
    finish_dir(dir, cfg);
    expect_load_error("wrong shape", dir, "model.safetensors",
                      "'model.layers.0.mlp.gate_proj.weight' has shape [64, 64]", "[72, 64]", NULL);
    free(dir);

    /* Missing tensors: an untied head the checkpoint does not have; a layer too many. */
    dir = fresh_dir("missing_head", "a_ple_kvshare", &cfg);
    set_bool(cfg, "tie_word_embeddings", 0);
    finish_dir(dir, cfg);
    expect_load_error("missing lm_head", dir, "missing", "lm_head.weight", NULL);
    free(dir);
    dir = fresh_dir("missing_layer", "b_keqv_untied", &cfg);
    set_num(cfg, "num_hidden_layers", 6);
    cJSON_AddItemToArray(cJSON_GetObjectItem(cfg, "layer_types"),
                         cJSON_CreateString("full_attention"));
    cJSON *layer5 = cJSON_AddObjectToObject(cJSON_GetObjectItem(cfg, "per_layer_config"), "5");
    cJSON_AddNumberToObject(layer5, "head_dim", 48);
    cJSON_AddNumberToObject(layer5, "num_key_value_heads", 1);
    finish_dir(dir, cfg);
    expect_load_error("missing layer", dir, "missing", "model.layers.5.input_layernorm.weight",
                      NULL);
    free(dir);

    /* Unexpected tensors: the config says no per-layer embeddings, the checkpoint has them. */
    dir = fresh_dir("unexpected", "a_ple_kvshare", &cfg);
    set_num(cfg, "hidden_size_per_layer_input", 0);
    finish_dir(dir, cfg);
    expect_load_error("unexpected tensors", dir, "unexpected", "embed_tokens_per_layer", NULL);
    free(dir);

    /* config.json problems. */
    dir = fresh_dir("bad_json", "a_ple_kvshare", &cfg);
    cJSON_Delete(cfg);
    path = xasprintf("%s/config.json", dir);
    const char *broken = "{\"model_type\": \"gemma4_text\",\n\"vocab_size\": 384,,\n}";
    test_write_file(path, broken, strlen(broken));
    expect_load_error("bad JSON", dir, path, "line 2", "not valid JSON", NULL);
    unlink(path);
    expect_load_error("no config.json", dir, path, "cannot open", NULL);
    free(path);
    free(dir);

    dir = fresh_dir("moe", "a_ple_kvshare", &cfg);
    set_bool(cfg, "enable_moe_block", 1);
    set_num(cfg, "num_experts", 8);
    finish_dir(dir, cfg);
    expect_load_error("MoE config", dir, "config.json", "enable_moe_block", "Mixture-of-Experts",
                      NULL);
    free(dir);

    dir = fresh_dir("model_type", "a_ple_kvshare", &cfg);
    set_str(cfg, "model_type", "llama");
    finish_dir(dir, cfg);
    expect_load_error("unknown model_type", dir, "config.json", "model_type", "\"llama\"", NULL);
    free(dir);

    dir = fresh_dir("no_model_type", "a_ple_kvshare", &cfg);
    cJSON_DeleteItemFromObject(cfg, "model_type");
    finish_dir(dir, cfg);
    expect_load_error("missing model_type", dir, "config.json", "model_type", "missing", NULL);
    free(dir);

    dir = fresh_dir("wrapper_no_text", "c_wrapped_f16", &cfg);
    cJSON_DeleteItemFromObject(cfg, "text_config");
    finish_dir(dir, cfg);
    expect_load_error("gemma4 without text_config", dir, "config.json", "text_config", NULL);
    free(dir);

    dir = fresh_dir("string_hidden", "a_ple_kvshare", &cfg);
    set_str(cfg, "hidden_size", "64");
    finish_dir(dir, cfg);
    expect_load_error("hidden_size as string", dir, "config.json", "hidden_size",
                      "must be an integer", NULL);
    free(dir);

    dir = fresh_dir("activation", "b_keqv_untied", &cfg);
    set_str(cfg, "hidden_activation", "relu");
    finish_dir(dir, cfg);
    expect_load_error("activation", dir, "config.json", "hidden_activation", NULL);
    free(dir);

    dir = fresh_dir("rope_yarn", "b_keqv_untied", &cfg);
    set_str(cJSON_GetObjectItem(cJSON_GetObjectItem(cfg, "rope_parameters"), "full_attention"),
            "rope_type", "yarn");
    finish_dir(dir, cfg);
    expect_load_error("rope type", dir, "config.json", "rope_parameters.full_attention", "\"yarn\"",
                      NULL);
    free(dir);

    dir = fresh_dir("per_layer_key", "a_ple_kvshare", &cfg);
    cJSON_AddNumberToObject(cJSON_GetObjectItem(cJSON_GetObjectItem(cfg, "per_layer_config"), "1"),
                            "sliding_window", 4);
    finish_dir(dir, cfg);
    expect_load_error("per_layer_config key", dir, "config.json", "per_layer_config.1",
                      "\"sliding_window\"", NULL);
    free(dir);

    /* Weights problems beyond one file. */
    dir = fresh_dir("no_weights", "a_ple_kvshare", &cfg);
    finish_dir(dir, cfg);
    path = xasprintf("%s/model.safetensors", dir);
    unlink(path);
    expect_load_error("no safetensors", dir, "no model.safetensors", NULL);
    free(path);
    free(dir);

    dir = fresh_dir("index_missing_shard", "c_wrapped_f16", &cfg);
    finish_dir(dir, cfg);
    path = xasprintf("%s/model-00003-of-00004.safetensors", dir);
    unlink(path);
    expect_load_error("index, missing shard", dir, path, "cannot open", NULL);
    free(path);
    free(dir);

    dir = fresh_dir("index_wrong_file", "c_wrapped_f16", &cfg);
    finish_dir(dir, cfg);
    path = xasprintf("%s/model.safetensors.index.json", dir);
    cJSON *index = test_read_json(path);
    cJSON *wm = cJSON_GetObjectItem(index, "weight_map");
    const char *victim = "model.language_model.norm.weight";
    const char *was = cJSON_GetObjectItem(wm, victim)->valuestring;
    const char *other = strcmp(was, "model-00001-of-00004.safetensors")
                            ? "model-00001-of-00004.safetensors"
                            : "model-00002-of-00004.safetensors";
    cJSON_ReplaceItemInObject(wm, victim, cJSON_CreateString(other));
    write_json(path, index);
    cJSON_Delete(index);
    expect_load_error("index, wrong shard", dir, "model.safetensors.index.json", victim,
                      "no such tensor", NULL);
    const char *outside = "{\"weight_map\": {\"x\": \"../x.safetensors\"}}";
    test_write_file(path, outside, strlen(outside));
    expect_load_error("index, path outside", dir, "model.safetensors.index.json",
                      "must be a file name", NULL);
    free(path);
    free(dir);

    /* A weight of an integer dtype, and one truncated shard among several. */
    dir = fresh_dir("shard_truncated", "c_wrapped_f16", &cfg);
    finish_dir(dir, cfg);
    path = xasprintf("%s/model-00002-of-00004.safetensors", dir);
    copy_file("fixtures/c_wrapped_f16/model-00002-of-00004.safetensors", path, 100);
    expect_load_error("truncated shard", dir, path, "truncated", NULL);
    free(path);
    free(dir);
}

/* The wrapped, sharded f16 fixture loads to the same layer shapes its golden.json lists and
 * a kv-shared checkpoint may carry (ignored) k/v weights for shared layers, as released
 * checkpoints do. */
static void check_ignorable_shared_kv(void) {
    cJSON *cfg;
    char *dir = fresh_dir("shared_extra", "a_ple_kvshare", &cfg);
    finish_dir(dir, cfg);
    /* Rewrite the checkpoint with a copy of layer 1's k_proj named as layer 3's (shared). */
    char err[1024];
    safetensors st;
    if (safetensors_open_dir(&st, "fixtures/a_ple_kvshare", err, sizeof err)) die("%s", err);
    const st_tensor *k = safetensors_find(&st, "model.layers.1.self_attn.k_proj.weight");
    CHECK(k);
    char header[256];
    snprintf(header, sizeof header,
             "{\"model.layers.3.self_attn.k_proj.weight\": {\"dtype\": \"BF16\", \"shape\": "
             "[%lld, %lld], \"data_offsets\": [0, %zu]}}",
             (long long)k->shape[0], (long long)k->shape[1], k->nbytes);
    char *extra = xasprintf("%s/extra.safetensors", dir);
    write_st(extra, header, k->data, k->nbytes, -1);
    /* Index over the original file plus the extra one. */
    cJSON *index = cJSON_CreateObject();
    cJSON *wm = cJSON_AddObjectToObject(index, "weight_map");
    for (int i = 0; i < st.n_tensors; i++)
        cJSON_AddStringToObject(wm, st.tensors[i].name, "model.safetensors.orig");
    cJSON_AddStringToObject(wm, "model.layers.3.self_attn.k_proj.weight", "extra.safetensors");
    char *src = xasprintf("%s/model.safetensors", dir),
         *dst = xasprintf("%s/model.safetensors.orig", dir);
    if (rename(src, dst)) die("rename %s", src);
    char *ipath = xasprintf("%s/model.safetensors.index.json", dir);
    write_json(ipath, index);
    cJSON_Delete(index);
    model *m = model_load(dir, err, sizeof err);
    EXPECT(m, "shared-layer k_proj should be ignored as transformers does: %s", err);
    model_free(m);
    printf("ok   kv-shared layers' stored k/v weights ignored\n");
    /* But a tensor with a made-up name is unexpected. */
    snprintf(header, sizeof header,
             "{\"model.layers.3.self_attn.k_proj.weight\": {\"dtype\": \"BF16\", \"shape\": "
             "[%lld, %lld], \"data_offsets\": [0, %zu]}, \"model.layers.0.mlp.extra.weight\": "
             "{\"dtype\": \"BF16\", \"shape\": [1], \"data_offsets\": [%zu, %zu]}}",
             (long long)k->shape[0], (long long)k->shape[1], k->nbytes, k->nbytes, k->nbytes + 2);
    uint8_t *buf = xcalloc(k->nbytes + 2, 1);
    memcpy(buf, k->data, k->nbytes);
    write_st(extra, header, buf, k->nbytes + 2, -1);
    index = test_read_json(ipath);
    cJSON_AddStringToObject(cJSON_GetObjectItem(index, "weight_map"),
                            "model.layers.0.mlp.extra.weight", "extra.safetensors");
    write_json(ipath, index);
    cJSON_Delete(index);
    expect_load_error("unexpected extra tensor", dir, "unexpected",
                      "model.layers.0.mlp.extra.weight", NULL);
    free(buf);
    free(ipath);
    free(src);
    free(dst);
    free(extra);
    free(dir);
    safetensors_close(&st);
}

/* Damage anywhere must end in an error, never in a crash or a read outside the file (run
 * under ASan by scripts/test.sh): the weights cut at many lengths, and single bytes of the
 * JSON header replaced by characters that keep it parseable or break it. */
static void check_corruption(void) {
    cJSON *cfg;
    char *dir = fresh_dir("corrupt", "a_ple_kvshare", &cfg);
    finish_dir(dir, cfg);
    char *path = xasprintf("%s/model.safetensors", dir);
    const char *src = "fixtures/a_ple_kvshare/model.safetensors";
    char err[1024];
    size_t size;
    char *orig = file_read_all(src, &size, err, sizeof err);
    if (!orig) die("%s", err);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | (uint8_t)orig[i];

    int cuts = 0;
    size_t special[] = {0, 7, 8, 9, 8 + hlen - 1, 8 + hlen, 8 + hlen + 1, size - 1};
    for (size_t k = 0; k < sizeof special / sizeof special[0] + size / 4099; k++) {
        size_t cut = k < sizeof special / sizeof special[0]
                         ? special[k]
                         : (k - sizeof special / sizeof special[0]) * 4099;
        test_write_file(path, orig, cut);
        model *m = model_load(dir, err, sizeof err);
        EXPECT(!m && strstr(err, "model.safetensors"), "cut at %zu bytes: %s", cut,
               m ? "loaded" : err);
        model_free(m);
        cuts++;
    }

    test_write_file(path, orig, size);
    FILE *f = fopen(path, "r+b");
    if (!f) die("cannot open %s", path);
    int loads = 0, errors = 0;
    const char repl[] = {'9', '}', '"', ',', '-'};
    for (size_t at = 8; at < 8 + hlen; at += 29) {
        for (size_t r = 0; r < sizeof repl; r++) {
            if (orig[at] == repl[r]) continue;
            fseek(f, (long)at, SEEK_SET);
            fputc(repl[r], f);
            fflush(f);
            model *m = model_load(dir, err, sizeof err);
            errors += !m;
            model_free(m);
            loads++;
            fseek(f, (long)at, SEEK_SET);
            fputc(orig[at], f);
            fflush(f);
        }
    }
    fclose(f);
    EXPECT(errors > loads / 2, "only %d of %d damaged headers were refused", errors, loads);
    printf("ok   corruption                   %d cuts refused; %d damaged headers, %d refused, "
           "none crashed\n",
           cuts, loads, errors);
    free(orig);
    free(path);
    free(dir);
}

int main(void) {
    tmp = test_tmpdir_new("test_load");

    check_fixture("a_ple_kvshare", DT_BF16);
    check_fixture("b_keqv_untied", DT_BF16);
    check_fixture("c_wrapped_f16", DT_F16);
    check_config_rules();
    check_safetensors();
    check_bad_folders();
    check_ignorable_shared_kv();
    check_corruption();

    test_tmpdir_remove(tmp);
    free(tmp);
    return test_exit("test_load");
}
