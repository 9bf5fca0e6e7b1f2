/* safetensors.c: see safetensors.h. The header is parsed with cJSON; every number in it is
 * checked before it is trusted, because a truncated download or a hand-edited file must end
 * in a message, never in a read past the mapping. */
#include "safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "float16.h"
#include "util.h"

/* The format's own limit on the JSON header (the reference implementation refuses more). */
#define ST_MAX_HEADER ((uint64_t)100 << 20)

static const struct {
    const char *name;
    st_dtype dtype;
    size_t size;
} dtypes[] = {
    {"F32", ST_F32, 4},   {"F16", ST_F16, 2},         {"BF16", ST_BF16, 2},
    {"F64", ST_F64, 8},   {"I64", ST_I64, 8},         {"I32", ST_I32, 4},
    {"I16", ST_I16, 2},   {"I8", ST_I8, 1},           {"U64", ST_U64, 8},
    {"U32", ST_U32, 4},   {"U16", ST_U16, 2},         {"U8", ST_U8, 1},
    {"BOOL", ST_BOOL, 1}, {"F8_E4M3", ST_F8_E4M3, 1}, {"F8_E5M2", ST_F8_E5M2, 1},
};
#define N_DTYPES (sizeof dtypes / sizeof dtypes[0])

const char *st_dtype_name(st_dtype t) {
    for (size_t i = 0; i < N_DTYPES; i++)
        if (dtypes[i].dtype == t) return dtypes[i].name;
    return "?";
}

size_t st_dtype_size(st_dtype t) {
    for (size_t i = 0; i < N_DTYPES; i++)
        if (dtypes[i].dtype == t) return dtypes[i].size;
    return 0;
}

int st_dtype_is_float(st_dtype t) {
    return t == ST_F32 || t == ST_F16 || t == ST_BF16;
}

int st_to_f32(const st_tensor *t, float *out) {
    const uint8_t *p = t->data;
    for (int64_t i = 0; i < t->numel; i++) {
        uint16_t h;
        switch (t->dtype) {
        case ST_F32:
            memcpy(&out[i], p + 4 * i, 4);
            break;
        case ST_BF16:
            memcpy(&h, p + 2 * i, 2);
            out[i] = bf16_to_f32(h);
            break;
        case ST_F16:
            memcpy(&h, p + 2 * i, 2);
            out[i] = f16_to_f32(h);
            break;
        default:
            return -1;
        }
    }
    return 0;
}

const char *st_shape_str(const st_tensor *t, char *buf, size_t len) {
    size_t used = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < t->ndim && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%lld", i ? ", " : "",
                                 (long long)t->shape[i]);
    if (used < len) snprintf(buf + used, len - used, "]");
    return buf;
}

/* A JSON number that is a whole number in [0, max]; the value goes to *out. */
static int json_uint(const cJSON *v, double max, int64_t *out) {
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= max) || d != floor(d)) return -1;
    *out = (int64_t)d;
    return 0;
}

/* Parse one tensor entry of a header into t (its data pointer is set by the caller). */
static int parse_entry(const char *path, const cJSON *e, uint64_t data_len, st_tensor *t, char *err,
                       size_t errlen) {
    const char *name = e->string;
    if (!cJSON_IsObject(e))
        return err_set(err, errlen, "%s: tensor '%s': header entry is not an object", path, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt))
        return err_set(err, errlen, "%s: tensor '%s': missing or non-string \"dtype\"", path, name);
    size_t k = 0;
    while (k < N_DTYPES && strcmp(dtypes[k].name, dt->valuestring))
        k++;
    if (k == N_DTYPES)
        return err_set(err, errlen, "%s: tensor '%s': unknown dtype \"%s\"", path, name,
                       dt->valuestring);
    t->dtype = dtypes[k].dtype;
    if (!cJSON_IsArray(shape))
        return err_set(err, errlen, "%s: tensor '%s': missing or non-array \"shape\"", path, name);
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > ST_MAX_DIMS)
        return err_set(err, errlen, "%s: tensor '%s': %d dimensions (at most %d supported)", path,
                       name, ndim, ST_MAX_DIMS);
    t->ndim = ndim;
    t->numel = 1;
    for (int i = 0; i < ndim; i++) {
        int64_t dim;
        if (json_uint(cJSON_GetArrayItem(shape, i), (double)(1LL << 40), &dim))
            return err_set(err, errlen, "%s: tensor '%s': shape[%d] is not a non-negative integer",
                           path, name, i);
        t->shape[i] = dim;
        if (dim && t->numel > (INT64_C(1) << 50) / dim)
            return err_set(err, errlen, "%s: tensor '%s': shape too large", path, name);
        t->numel *= dim;
    }
    int64_t begin, end;
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 ||
        json_uint(cJSON_GetArrayItem(offs, 0), 9007199254740992.0, &begin) ||
        json_uint(cJSON_GetArrayItem(offs, 1), 9007199254740992.0, &end))
        return err_set(err, errlen,
                       "%s: tensor '%s': \"data_offsets\" must be two non-negative integers", path,
                       name);
    if (begin > end)
        return err_set(err, errlen, "%s: tensor '%s': data_offsets [%lld, %lld] end before begin",
                       path, name, (long long)begin, (long long)end);
    if ((uint64_t)end > data_len)
        return err_set(err, errlen,
                       "%s: tensor '%s': data_offsets [%lld, %lld] run past the end of the data "
                       "(%llu bytes after the header): is the file truncated?",
                       path, name, (long long)begin, (long long)end, (unsigned long long)data_len);
    t->nbytes = (size_t)t->numel * dtypes[k].size;
    if ((uint64_t)(end - begin) != (uint64_t)t->nbytes) {
        char sb[128];
        return err_set(err, errlen,
                       "%s: tensor '%s': data_offsets [%lld, %lld] hold %lld bytes but %s %s "
                       "needs %zu",
                       path, name, (long long)begin, (long long)end, (long long)(end - begin),
                       dtypes[k].name, st_shape_str(t, sb, sizeof sb), t->nbytes);
    }
    t->data = (const void *)(uintptr_t)begin; /* relative for now; made absolute by caller */
    return 0;
}

static int cmp_begin(const void *a, const void *b) {
    const st_tensor *x = *(st_tensor *const *)a, *y = *(st_tensor *const *)b;
    uintptr_t p = (uintptr_t)x->data, q = (uintptr_t)y->data;
    return p < q ? -1 : p > q;
}

/* No two tensors of one file may share a byte. */
static int check_overlaps(const char *path, st_tensor *ts, int n, char *err, size_t errlen) {
    st_tensor **order = xmalloc((size_t)(n ? n : 1) * sizeof *order);
    for (int i = 0; i < n; i++)
        order[i] = &ts[i];
    qsort(order, (size_t)n, sizeof *order, cmp_begin);
    int rc = 0;
    for (int i = 1; i < n && !rc; i++) {
        const st_tensor *a = order[i - 1], *b = order[i];
        if (a->nbytes && b->nbytes && (uintptr_t)a->data + a->nbytes > (uintptr_t)b->data)
            rc = err_set(err, errlen, "%s: tensors '%s' and '%s' overlap in the file", path,
                         a->name, b->name);
    }
    free(order);
    return rc;
}

int safetensors_add_file(safetensors *st, const char *path, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return err_set(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return err_set(err, errlen, "%s: cannot stat: %s", path, strerror(e));
    }
    size_t size = (size_t)sb.st_size;
    if (size < 8) {
        close(fd);
        return err_set(err, errlen,
                       "%s: %zu bytes is too short for a safetensors file (8-byte header length "
                       "first): truncated or not safetensors",
                       path, size);
    }
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (map == MAP_FAILED) return err_set(err, errlen, "%s: cannot mmap: %s", path, strerror(e));

    const uint8_t *bytes = map;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | bytes[i];
    if (hlen > ST_MAX_HEADER || hlen > size - 8) {
        munmap(map, size);
        return err_set(err, errlen,
                       "%s: bad header length %llu (file has %zu bytes): truncated or not "
                       "safetensors",
                       path, (unsigned long long)hlen, size);
    }
    const char *hdr = (const char *)bytes + 8;
    const uint8_t *data = bytes + 8 + hlen;
    uint64_t data_len = size - 8 - hlen;

    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(hdr, (size_t)hlen, &end, 0);
    if (!cJSON_IsObject(root)) {
        long at = end ? (long)(end - hdr) : (root ? 0 : -1);
        if (!root && cJSON_GetErrorPtr()) at = (long)(cJSON_GetErrorPtr() - hdr);
        cJSON_Delete(root);
        munmap(map, size);
        return err_set(err, errlen, "%s: header is not a JSON object (error near byte %ld of it)",
                       path, at);
    }

    int file_idx = st->n_files;
    st->files = xrealloc(st->files, (size_t)(st->n_files + 1) * sizeof *st->files);
    st->files[file_idx] = (st_file){xstrdup(path), map, size};
    st->n_files++;

    int first = st->n_tensors, count = 0;
    for (const cJSON *e = root->child; e; e = e->next)
        count += strcmp(e->string, "__metadata__") != 0;
    st->tensors = xrealloc(st->tensors, (size_t)(first + count + 1) * sizeof *st->tensors);
    int rc = 0;
    for (const cJSON *e = root->child; e && !rc; e = e->next) {
        if (!strcmp(e->string, "__metadata__")) {
            if (!cJSON_IsObject(e))
                rc = err_set(err, errlen, "%s: \"__metadata__\" is not an object", path);
            continue;
        }
        st_tensor *t = &st->tensors[st->n_tensors];
        memset(t, 0, sizeof *t);
        rc = parse_entry(path, e, data_len, t, err, errlen);
        if (rc) break;
        t->name = xstrdup(e->string);
        t->file = file_idx;
        st->n_tensors++;
    }
    cJSON_Delete(root);
    if (!rc) rc = check_overlaps(path, st->tensors + first, st->n_tensors - first, err, errlen);
    for (int i = first; i < st->n_tensors && !rc; i++) {
        st_tensor *t = &st->tensors[i];
        t->data = data + (uintptr_t)t->data;
        /* Weights are read through typed pointers: each must sit on its element size. The
         * safetensors writers pad the header to 8 bytes, so this holds for real files. */
        if ((uintptr_t)t->data % st_dtype_size(t->dtype))
            rc = err_set(err, errlen,
                         "%s: tensor '%s' is not aligned to its %zu-byte elements (header length "
                         "%llu is not padded)",
                         path, t->name, st_dtype_size(t->dtype), (unsigned long long)hlen);
    }
    return rc;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const st_tensor *)a)->name, ((const st_tensor *)b)->name);
}

int safetensors_finish(safetensors *st, char *err, size_t errlen) {
    if (st->n_tensors) qsort(st->tensors, (size_t)st->n_tensors, sizeof *st->tensors, cmp_name);
    for (int i = 1; i < st->n_tensors; i++)
        if (!strcmp(st->tensors[i - 1].name, st->tensors[i].name))
            return err_set(err, errlen, "tensor '%s' appears twice: in %s and in %s",
                           st->tensors[i].name, st->files[st->tensors[i - 1].file].path,
                           st->files[st->tensors[i].file].path);
    return 0;
}

const st_tensor *safetensors_find(const safetensors *st, const char *name) {
    if (!st->n_tensors) return NULL;
    st_tensor key = {.name = (char *)name};
    return bsearch(&key, st->tensors, (size_t)st->n_tensors, sizeof *st->tensors, cmp_name);
}

void safetensors_close(safetensors *st) {
    for (int i = 0; i < st->n_files; i++) {
        if (st->files[i].map) munmap(st->files[i].map, st->files[i].size);
        free(st->files[i].path);
    }
    for (int i = 0; i < st->n_tensors; i++)
        free(st->tensors[i].name);
    free(st->files);
    free(st->tensors);
    memset(st, 0, sizeof *st);
}

/* Shards named by model.safetensors.index.json: open each distinct file once, then check
 * that every tensor the index places in a file is really there. */
static int open_index(safetensors *st, const char *dir, const char *index_path, char *err,
                      size_t errlen) {
    size_t len;
    char *text = file_read_all(index_path, &len, err, errlen);
    if (!text) return -1;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(root) || !cJSON_IsObject(map)) {
        cJSON_Delete(root);
        return err_set(err, errlen, "%s: not a JSON object with a \"weight_map\" object",
                       index_path);
    }
    int rc = 0, n_names = 0;
    char **names = NULL; /* distinct shard files, in order of first mention */
    for (const cJSON *e = map->child; e && !rc; e = e->next) {
        if (!cJSON_IsString(e) || !e->valuestring[0] || strchr(e->valuestring, '/')) {
            rc = err_set(err, errlen,
                         "%s: weight_map[\"%s\"] must be a file name in the same folder",
                         index_path, e->string);
            break;
        }
        int seen = 0;
        for (int i = 0; i < n_names && !seen; i++)
            seen = !strcmp(names[i], e->valuestring);
        if (seen) continue;
        names = xrealloc(names, (size_t)(n_names + 1) * sizeof *names);
        names[n_names++] = e->valuestring;
        char *path = xasprintf("%s/%s", dir, e->valuestring);
        rc = safetensors_add_file(st, path, err, errlen);
        free(path);
    }
    if (!rc && n_names == 0) rc = err_set(err, errlen, "%s: \"weight_map\" is empty", index_path);
    if (!rc) rc = safetensors_finish(st, err, errlen);
    for (const cJSON *e = map->child; e && !rc; e = e->next) {
        const st_tensor *t = safetensors_find(st, e->string);
        const char *file = t ? strrchr(st->files[t->file].path, '/') + 1 : NULL;
        if (!t || strcmp(file, e->valuestring))
            rc = err_set(err, errlen, "%s: says tensor '%s' is in %s, but %s/%s has no such tensor",
                         index_path, e->string, e->valuestring, dir, e->valuestring);
    }
    free(names);
    cJSON_Delete(root);
    return rc;
}

int safetensors_open_dir(safetensors *st, const char *dir, char *err, size_t errlen) {
    memset(st, 0, sizeof *st);
    char *single = xasprintf("%s/model.safetensors", dir);
    char *index = xasprintf("%s/model.safetensors.index.json", dir);
    int rc;
    if (access(single, F_OK) == 0) {
        rc = safetensors_add_file(st, single, err, errlen);
        if (!rc) rc = safetensors_finish(st, err, errlen);
    } else if (access(index, F_OK) == 0) {
        rc = open_index(st, dir, index, err, errlen);
    } else {
        rc = err_set(err, errlen, "%s: no model.safetensors or model.safetensors.index.json", dir);
    }
    free(single);
    free(index);
    if (rc) safetensors_close(st);
    return rc;
}
