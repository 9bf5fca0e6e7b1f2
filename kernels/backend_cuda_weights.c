/* backend_cuda_weights.c: the CUDA backend's weight table - each weight's device copy, made the
 * first time an op meets the weight and kept until the backend goes. Keyed by the tensor's host
 * data pointer and its layout (as it is, or transposed for mlp.cu's down): the model is shared
 * and read-only for decoders, so the backend never writes tensor.dev, and the host data of a
 * tensor must stay unchanged while the backend lives (true of mmapped models). An open-addressing
 * table; a copy is made and waited for outside captured steps only (backend_cuda.c's graphs).
 * A quantized matrix (DT_Q8 / DT_Q4: quant.h) is one device block, its packed values and then
 * its bf16 scales, which is the layout matvec_q.h reads (cuda_qmat): the upload is two copies;
 * transposed (mlp.cu's down) it is quant_transpose's values and scales, made on the host. An
 * int4 matrix's slot also keeps its fp16 exponent (quant_f16_exponent, found at upload), which a
 * prefill chunk's product needs every time. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend_cuda_internal.h"
#include "kernels.h"
#include "quant.h"
#include "util.h"

static void weights_grow(cuda_weights *cw) {
    size_t cap = cw->cap ? cw->cap * 2 : 256;
    cuda_weight_slot *t = xcalloc(cap, sizeof *t);
    for (size_t i = 0; i < cw->cap; i++) {
        if (!cw->slots[i].host) continue;
        size_t j = cuda_hash_ptr(cw->slots[i].host, cw->slots[i].transposed, cap);
        while (t[j].host)
            j = (j + 1) & (cap - 1);
        t[j] = cw->slots[i];
    }
    free(cw->slots);
    cw->slots = t;
    cw->cap = cap;
}

/* Copy a weight to the device, and wait for the copy. On the backend's stream: a plain cudaMemcpy
 * from pageable memory may return before the DMA lands, and our stream does not wait for the
 * legacy stream. Waited for, because a weight is first used in the middle of a forward pass, its
 * copy queued between two kernels of a programmatic-dependent-launch chain. Without the wait
 * the op test has seen a product whose weight had just been copied there come out wrong, far
 * beyond rounding, while its input was right in memory afterwards - rarely, and never reproduced
 * on purpose (the op test's test_first_use guards the sequence). A plausible cause: the product
 * reads its first weight chunks before its PDL wait (matvec.cu). After this wait the next kernel
 * starts with all work before it done, whatever PDL allows. It costs one synchronisation per
 * weight, once; activations uploaded between kernels (cu_upload) are read only after a kernel's
 * wait and are not waited for. */
static void weight_copy(cudaStream_t s, void *dev, const void *host, size_t bytes) {
    CU(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s));
    CU(cudaStreamSynchronize(s));
}

/* Copy w's data to dev: as it is, or transposed ([rows][cols] -> [cols][rows], 16-bit dtypes):
 * copied as it is into a temporary device buffer, transposed there (k_transpose16) and the
 * buffer freed, all waited for as weight_copy is. */
static void weight_upload(cudaStream_t s, void *dev, const tensor *w, size_t bytes,
                          int transposed) {
    if (w->q) {
        const size_t qb = (size_t)w->q->rows * w->q->row_bytes;
        if (!transposed) {
            weight_copy(s, dev, w->q->q, qb);
            weight_copy(s, (char *)dev + qb, w->q->scales, bytes - qb);
            return;
        }
        CHECK(w->q->rows % 2 == 0);
        uint8_t *tmp = xmalloc(bytes); /* values, then scales, transposed (quant_transpose) */
        quant_transpose(w->q, tmp, (uint16_t *)(tmp + qb));
        weight_copy(s, dev, tmp, bytes);
        free(tmp);
        return;
    }
    if (!transposed) {
        weight_copy(s, dev, w->data, bytes);
        return;
    }
    CHECK(dtype_size(w->dtype) == 2);
    void *tmp = NULL;
    if (cudaMalloc(&tmp, bytes) != cudaSuccess)
        die("CUDA: no room for a %zu-byte weight being transposed", bytes);
    weight_copy(s, tmp, w->data, bytes);
    k_transpose16(s, dev, tmp, w->rows, w->cols);
    CU(cudaStreamSynchronize(s));
    CU(cudaFree(tmp));
}

/* An int4 matrix's fp16 exponent (quant_f16_exponent), else CUDA_NO_F16. */
static int f16_exp_of(const tensor *w) {
    int e;
    return w->q && !quant_f16_exponent(w->q, &e) ? e : CUDA_NO_F16;
}

const cuda_weight_slot *cuda_weights_get(cuda_weights *cw, cudaStream_t s, const tensor *w,
                                         int transposed, int capturing, void (*drop)(void *),
                                         void *ctx) {
    CHECK(w && w->data);
    const size_t bytes = tensor_bytes(w);
    if (cw->cap) {
        for (size_t j = cuda_hash_ptr(w->data, transposed, cw->cap); cw->slots[j].host;
             j = (j + 1) & (cw->cap - 1))
            if (cw->slots[j].host == w->data && cw->slots[j].transposed == transposed) {
                cuda_weight_slot *ws = &cw->slots[j];
                /* (a smaller tensor at the same address may read a prefix of the plain copy,
                 * not of the transposed one) */
                if (ws->bytes == bytes || (ws->bytes > bytes && !transposed)) return ws;
                /* Another tensor at the address of one seen before (bigger, or smaller for a
                 * transposed copy): that one's host memory was freed and reused, so its copy is
                 * stale. Copy the new one. */
                if (capturing) die("a weight changed size inside a captured CUDA graph");
                fprintf(stderr,
                        "cuda: the weight at %p changed from %zu to %zu bytes: copied again\n",
                        w->data, ws->bytes, bytes);
                CU(cudaStreamSynchronize(s));
                drop(ctx); /* what may hold the old copy (the caller's graphs) */
                CU(cudaFree(ws->dev));
                cw->bytes -= ws->bytes;
                CU(cudaMalloc(&ws->dev, bytes));
                weight_upload(s, ws->dev, w, bytes, transposed);
                ws->bytes = bytes;
                ws->f16_exp = f16_exp_of(w);
                cw->bytes += bytes;
                return ws;
            }
    }
    if (capturing) die("a weight was first used inside a captured CUDA graph");
    if (2 * (cw->n + 1) > cw->cap) weights_grow(cw);
    void *dev = NULL;
    cudaError_t e = cudaMalloc(&dev, bytes ? bytes : 1);
    if (e != cudaSuccess)
        die("CUDA: cannot hold the weights on the device (%.2f GB already there, %zu more "
            "bytes asked): %s",
            cw->bytes / 1e9, bytes, cudaGetErrorString(e));
    weight_upload(s, dev, w, bytes, transposed);
    size_t j = cuda_hash_ptr(w->data, transposed, cw->cap);
    while (cw->slots[j].host)
        j = (j + 1) & (cw->cap - 1);
    cw->slots[j] = (cuda_weight_slot){w->data, transposed, dev, bytes, f16_exp_of(w)};
    cw->n++;
    cw->bytes += bytes;
    return &cw->slots[j];
}

void cuda_weights_free(cuda_weights *cw) {
    for (size_t i = 0; i < cw->cap; i++)
        if (cw->slots[i].host) cudaFree(cw->slots[i].dev);
    free(cw->slots);
    *cw = (cuda_weights){0};
}
