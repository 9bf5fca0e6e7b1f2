/* backend_cuda_draft.c: the CUDA backend's ops for the speculative drafter (backend.h's
 * draft_head and embed_dev), host glue around kernels/draft_head.cu and embed.cu.
 *
 * Together they let a draft step run with no host round trip: the centroid scores stay on the
 * device, the head's top clusters, sparse logits and greedy pick happen there (draft_head.cu),
 * and the next step's embedding reads the picked id from device memory. assistant.c chains k
 * such steps inside one recorded step of the backend, so the draft loop becomes one CUDA graph.
 *
 * The token ordering (an int per head row) goes to the device through the weight table, as a
 * tensor of 4-byte elements keyed by its host pointer: copied once, freed with the backend.
 * backend_cuda.c installs both behind the queue (it runs the queued ops first). */
#include "backend_cuda_internal.h"
#include "kernels.h"
#include "util.h"

void cuda_draft_head(backend *b, int *id, int *work, float *logits, const float *cscores,
                     int n_centroids, int top_k, const tensor *head, const int *ordering,
                     const float *x) {
    CHECK(n_centroids > 0 && head->rows % n_centroids == 0 && top_k >= 1 && top_k <= n_centroids);
    const int per = head->rows / n_centroids, cols = head->cols;
    /* DT_F32 is 4 bytes an element, the size of an int: the table copies the bytes as they are. */
    const tensor ord = {.data = ordering, .dtype = DT_F32, .rows = head->rows, .cols = 1};
    cuda_state *st = cuda_st(b);
    const void *dhead = cuda_weight(st, head), *dord = cuda_weight(st, &ord);
    cudaStream_t s = cuda_op_begin(st);
    k_draft_head(s, id, work, logits, cscores, n_centroids, top_k, dhead, (int)head->dtype, cols,
                 per, (const int *)dord, x);
    /* Bytes: every centroid score is read by each of the 32 lanes' strides once (from cache
     * after the first), so count it once; then per kept token its head row, its id and its
     * logit; x; and the cluster list and the result. */
    const double kept = (double)top_k * per;
    cuda_op_end(st, F_DRAFT_HEAD,
                4.0 * n_centroids + kept * ((double)cols * dtype_size(head->dtype) + 8.0) +
                    4.0 * cols + 4.0 * (top_k + 4));
}

void cuda_embed_dev(backend *b, float *out, const tensor *table, const int *ids, int n, float s) {
    cuda_state *st = cuda_st(b);
    const void *td = cuda_weight(st, table);
    cudaStream_t stream = cuda_op_begin(st);
    k_embed(stream, out, td, (int)table->dtype, table->cols, ids, n, s);
    cuda_op_end(st, F_EMBED, (double)n * table->cols * (dtype_size(table->dtype) + 4.0));
}
