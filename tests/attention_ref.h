/* attention_ref.h: attention in double precision, the reference the CPU's chunk kernel
 * (test_backend_cpu_chunk.c) and the GPU's prefill kernel (cuda_ops_attention.h) are held to.
 * Header-only and static, as test_util.h (included first). */
#ifndef ATTENTION_REF_H
#define ATTENTION_REF_H

#include <math.h>

/* Row t, at position pos0 + t, attends to the positions its window leaves (window 0: all from 0)
 * with each query head h reading kv head h / (H / KV); position j's key and value are row j % len
 * of K and V ([len][KV * hd]: a ring, or with len past every position the plain rows). Scores are
 * q . k unscaled, softmax in double. Returns [n_tok][H][hd]. */
static double *attention_ref(const float *q, const float *kc, const float *vc, int n_tok, int pos0,
                             int len, int window, int H, int KV, int hd) {
    double *want = xcalloc((size_t)n_tok * H * hd, sizeof(double));
    double *s = xmalloc((size_t)len * sizeof(double));
    const int kv_dim = KV * hd, group = H / KV;
    for (int t = 0; t < n_tok; t++)
        for (int h = 0; h < H; h++) {
            const int p = pos0 + t, kvh = h / group;
            int lo = window && p - window + 1 > 0 ? p - window + 1 : 0;
            if (p - lo + 1 > len) lo = p - len + 1; /* the ring holds len positions */
            const float *qh = q + ((size_t)t * H + h) * hd;
            double mx = -INFINITY, sum = 0;
            for (int j = lo; j <= p; j++) {
                const float *k = kc + (size_t)(j % len) * kv_dim + kvh * hd;
                double d = 0;
                for (int i = 0; i < hd; i++)
                    d += (double)qh[i] * k[i];
                s[j - lo] = d;
                if (d > mx) mx = d;
            }
            for (int j = lo; j <= p; j++)
                sum += exp(s[j - lo] - mx);
            double *o = want + ((size_t)t * H + h) * hd;
            for (int j = lo; j <= p; j++) {
                const float *v = vc + (size_t)(j % len) * kv_dim + kvh * hd;
                const double w = exp(s[j - lo] - mx) / sum;
                for (int i = 0; i < hd; i++)
                    o[i] += w * v[i];
            }
        }
    free(s);
    return want;
}

#endif
