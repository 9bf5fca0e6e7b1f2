/* safetensors.h: read-only access to the tensors of a Hugging Face checkpoint.
 *
 * A safetensors file is an 8-byte little-endian header length N, N bytes of JSON
 * ({"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}, ...,
 * "__metadata__": {..}}) and then the raw tensor bytes, offsets relative to the end of the
 * header. We mmap each file and hand out pointers into the mapping, so loading a model costs
 * no copies and the OS pages weights in as the forward pass touches them.
 *
 * A checkpoint is either one `model.safetensors` or several shards listed by
 * `model.safetensors.index.json` ({"weight_map": {"tensor name": "shard file"}}); the set
 * below holds every tensor of every file, sorted by name. Everything the header claims is
 * checked against the file before any pointer is handed out: the header length, the JSON,
 * the dtype, the shape, and the offsets (inside the file, not overlapping, and exactly
 * shape x element size long). Errors name the file and, where there is one, the tensor. */
#ifndef SAFETENSORS_H
#define SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define ST_MAX_DIMS 8

/* The dtypes of the safetensors format. Only F32, F16 and BF16 can hold weights here; the
 * others are recognised (so their byte ranges can be checked) and refused where used. */
typedef enum {
    ST_F32,
    ST_F16,
    ST_BF16,
    ST_F64,
    ST_I64,
    ST_I32,
    ST_I16,
    ST_I8,
    ST_U64,
    ST_U32,
    ST_U16,
    ST_U8,
    ST_BOOL,
    ST_F8_E4M3,
    ST_F8_E5M2,
} st_dtype;

typedef struct {
    char *name;                 /* tensor name, e.g. "model.layers.0.self_attn.q_proj.weight" */
    st_dtype dtype;             /* element type */
    int ndim;                   /* number of dimensions (0 = a scalar) */
    int64_t shape[ST_MAX_DIMS]; /* [ndim] dimensions, outermost first */
    int64_t numel;              /* product of shape (1 for a scalar) */
    const void *data;           /* numel elements, row-major, inside the file's mapping */
    size_t nbytes;              /* numel * element size */
    int file;                   /* index into safetensors.files */
} st_tensor;

typedef struct {
    char *path;  /* the file as opened */
    void *map;   /* its read-only mapping (NULL for an empty file) */
    size_t size; /* its size in bytes */
} st_file;

typedef struct {
    st_file *files; /* [n_files] */
    int n_files;
    st_tensor *tensors; /* [n_tensors] sorted by name */
    int n_tensors;
} safetensors;

/* Open the checkpoint in a model folder: dir/model.safetensors, or else the shards named by
 * dir/model.safetensors.index.json. On error returns -1 with a message in err and leaves st
 * empty (safetensors_close is still safe). */
int safetensors_open_dir(safetensors *st, const char *dir, char *err, size_t errlen);

/* Add one safetensors file to the set (st must start zeroed). Returns 0 or -1 with err. */
int safetensors_add_file(safetensors *st, const char *path, char *err, size_t errlen);

/* Sort the set by name and refuse duplicates (a name in two shards). Called by
 * safetensors_open_dir; call it yourself after your own safetensors_add_file calls. */
int safetensors_finish(safetensors *st, char *err, size_t errlen);

/* The tensor with this exact name, or NULL. */
const st_tensor *safetensors_find(const safetensors *st, const char *name);

/* Unmap every file and free everything; st is zeroed. */
void safetensors_close(safetensors *st);

/* "BF16", "F32", ... */
const char *st_dtype_name(st_dtype t);
/* Bytes per element. */
size_t st_dtype_size(st_dtype t);
/* Whether a tensor of this dtype can be read as weights (F32, F16, BF16). */
int st_dtype_is_float(st_dtype t);

/* Convert a whole F32 / F16 / BF16 tensor to fp32 into out[numel]. Returns 0, or -1 for
 * any other dtype. */
int st_to_f32(const st_tensor *t, float *out);

/* Format "[a, b, c]" of a tensor's shape into buf. */
const char *st_shape_str(const st_tensor *t, char *buf, size_t len);

#endif
