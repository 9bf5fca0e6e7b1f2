/* decoder.h: the inside of a decoder (engine.h keeps it opaque), shared by decoder.c (which
 * builds it: knobs, KV cache, scratch) and forward.c (which runs the model over it).
 *
 * Every float pointer here is a backend buffer. Scratch buffers hold up to DECODER_CHUNK
 * rows (consecutive positions); decoder_forward() cuts longer inputs into chunks, so a
 * prefill of thousands of tokens reads every weight once per DECODER_CHUNK tokens. */
#ifndef DECODER_H
#define DECODER_H

#include "backend.h"
#include "engine.h"
#include "model.h"

/* Rows per forward chunk. A prefill reads every weight matrix once a chunk, and on a GPU a
 * chunk's products are cuBLAS GEMMs that run faster the more rows they have: E4B-shaped bf16
 * prefill of 256 tokens, H100, 5956 tokens/s in chunks of 64 and 9509 in one chunk of 256; the
 * small model's on 2 CPU cores, 7800 and 8970 (median of five). The costs: the [chunk][vocab]
 * logits (268 MB at a 262144 vocabulary), a sliding layer's ring, which holds
 * W + DECODER_CHUNK - 1 positions (decoder.c), and the backends' scratch for a chunk (a CUDA
 * product's outputs of x's two parts, the attention's partial sums). */
#define DECODER_CHUNK 256

struct decoder {
    const model *m;
    backend *b;
    int max_len;        /* KV capacity in positions (MAX_MODEL_LEN, or the config's maximum) */
    int pos;            /* positions in the cache so far */
    int native_window;  /* the config's sliding_window */
    int sliding_window; /* window used by the sliding layers (SLIDING_WINDOW or native) */

    /* per layer, [n_layers] */
    int *window;     /* attention window in positions; 0 = full context */
    int *cache_len;  /* rows of the layer's KV ring; 0 on kv-shared layers */
    float **k_cache; /* [cache_len][n_kv_heads * head_dim]; NULL on kv-shared layers */
    float **v_cache; /* same shape as k_cache */

    float *inv_freq_sliding; /* [sliding head_dim / 2] RoPE frequencies of sliding layers */
    float *inv_freq_full;    /* [full head_dim / 2] RoPE frequencies of full layers */
    float embed_scale;       /* sqrt(hidden) rounded to the embedding's dtype */
    float ple_embed_scale;   /* sqrt(ple_dim) rounded to the PLE table's dtype */

    /* scratch, DECODER_CHUNK rows each */
    float *x;        /* [chunk][hidden] the residual stream */
    float *xn;       /* [chunk][hidden] normed input of a block */
    float *q;        /* [chunk][max_q_dim] queries */
    float *k;        /* [chunk][max_kv_dim] new keys */
    float *v;        /* [chunk][max_kv_dim] new values */
    float *att;      /* [chunk][max_q_dim] attention output */
    float *o;        /* [chunk][hidden] output of a block before the residual add */
    float *gate;     /* [chunk][max_intermediate] MLP gate, then gelu(gate) * up */
    float *up;       /* [chunk][max_intermediate] MLP up */
    float *ple_in;   /* [chunk][n_layers * ple_dim] per-layer inputs (NULL without PLE) */
    float *ple_tmp;  /* [chunk][n_layers * ple_dim] token part of the per-layer inputs */
    float *ple_h;    /* [chunk][ple_dim] per-layer input gate activations */
    float *hidden;   /* [chunk][hidden] final-normed hidden states of the last chunk */
    float *logits;   /* [chunk][vocab] */
    int hidden_rows; /* rows of `hidden` that hold the last forward call's last chunk */
};

/* RoPE inverse frequencies [head_dim / 2] of one layer type, in a backend buffer (the target's
 * layers and the assistant's use the same). */
float *decoder_rope_table(backend *b, const rope_params *r, int head_dim);

/* Run one chunk (n <= DECODER_CHUNK) at positions d->pos.. and advance d->pos. Logits as
 * in decoder_forward (rows i >= logits_from, written to host memory). */
void forward_chunk(decoder *d, const int *tokens, int n, float *logits, int logits_from);
/* The same, leaving the logits of rows i >= logits_from in d->logits on the backend (nothing is
 * copied to the host); returns how many rows have logits. */
int forward_chunk_device(decoder *d, const int *tokens, int n, int logits_from);

#endif
