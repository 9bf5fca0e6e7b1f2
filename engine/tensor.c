/* tensor.c: reading one element of a weight tensor, and a tensor over a checkpoint's bytes
 * (type and shape checked) for the model and assistant loaders. */
#include <math.h>
#include <stdio.h>

#include "model.h"

float tensor_get(const tensor *t, size_t i) {
    switch (t->dtype) {
    case DT_F32:
        return ((const float *)t->data)[i];
    case DT_BF16:
        return bf16_to_f32(((const uint16_t *)t->data)[i]);
    case DT_F16:
        return f16_to_f32(((const uint16_t *)t->data)[i]);
    case DT_Q8:
    case DT_Q4: {
        const int r = (int)(i / (size_t)t->cols), c = (int)(i % (size_t)t->cols);
        return (float)quant_value(t->q, r, c) * quant_scale(t->q, r, c / t->q->group);
    }
    }
    return NAN;
}

size_t tensor_bytes(const tensor *t) {
    if (!t->data) return 0;
    if (t->q) return quant_bytes(t->q->dtype, t->rows, t->cols, t->q->group);
    return (size_t)t->rows * (size_t)t->cols * dtype_size(t->dtype);
}

tensor tensor_of_quant(const quant_matrix *q) {
    tensor t = {0};
    t.data = q->q;
    t.dtype = q->dtype == QUANT_INT8 ? DT_Q8 : DT_Q4;
    t.rows = q->rows;
    t.cols = q->cols;
    t.q = q;
    return t;
}

int tensor_from_checkpoint(tensor *out, const st_tensor *t, const char *file, const char *name,
                           int rows, int cols, const char *dir, char *err, size_t errlen) {
    if (!st_dtype_is_float(t->dtype)) {
        snprintf(err, errlen, "%s: tensor '%s' has dtype %s; weights must be BF16, F16 or F32",
                 file, name, st_dtype_name(t->dtype));
        return -1;
    }
    int ok = cols ? t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols
                  : t->ndim == 1 && t->shape[0] == rows;
    if (!ok) {
        char got[128], want[64];
        if (cols)
            snprintf(want, sizeof want, "[%d, %d]", rows, cols);
        else
            snprintf(want, sizeof want, "[%d]", rows);
        snprintf(err, errlen, "%s: tensor '%s' has shape %s, but %s/config.json implies %s", file,
                 name, st_shape_str(t, got, sizeof got), dir, want);
        return -1;
    }
    out->data = t->data;
    out->dtype = t->dtype == ST_F32 ? DT_F32 : t->dtype == ST_BF16 ? DT_BF16 : DT_F16;
    out->rows = cols ? rows : 1;
    out->cols = cols ? cols : rows;
    return 0;
}
