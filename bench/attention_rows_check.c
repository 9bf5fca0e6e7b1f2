/* attention_rows_check: checks and times the prefill attention (kernels/attention_rows.cu,
 * k_attention_rows) on Gemma 4 E4B's shapes: 8 query heads over 2 KV heads, a sliding layer
 * (head_dim 256, window 512) and a global one (head_dim 512, no window), a chunk of 256 rows at
 * position 0 (a first prompt) and at position 256 (a second turn), over rings of 1024 positions.
 *
 * For each case, on a stream of its own: random q, keys and values in [-1, 1); the outputs against
 * tests/attention_ref.h's double-precision reference, within the op test's bound (2e-5 g + 2e-4 g
 * |want|, g = sqrt(hd / 16): tests/kernels/cuda_ops_attention.h); then the time of a launch
 * (cudaEvents over 50 launches after 5, the keys and values in L2 as in a prefill), its bytes
 * (k_attention_rows_bytes) and GB/s, its arithmetic (4 hd flop a row, head and position
 * attended) and TFLOP/s. Last, what the cases at position 0 stand for in a 256-token E4B prompt
 * (35 sliding layers and 7 global ones), to set against the prompt's time in docs/gpu.md.
 *
 *   attention_rows_check   prints PASS or FAIL last (exit status 1 on FAIL; 2 when the device
 *                          cannot run it)
 *
 * (CMake builds it with the rest on a CUDA build; it needs a GPU to run.) */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_check.cuh"
#include "kernels.h"
#include "util.h"
#include "../tests/attention_ref.h"

enum { H = 8, KV = 2, N_TOK = 256, LEN = 1024, REPS = 50 };

static float *random_vec(size_t n, uint64_t seed) { /* [-1, 1) */
    float *v = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        v[i] = uniform(seed, i);
    return v;
}

static float *to_device(const float *h, size_t n) {
    float *d;
    CK(cudaMalloc((void **)&d, n * sizeof(float)));
    CK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
    return d;
}

/* The positions a chunk's rows attend to, summed over its rows (a head's share of the work). */
static double pairs(int n_tok, int pos0, int window) {
    double s = 0;
    for (int t = 0; t < n_tok; t++) {
        const int p = pos0 + t, lo = window > 0 && p - window + 1 > 0 ? p - window + 1 : 0;
        s += p - lo + 1;
    }
    return s;
}

/* One case: checked, then timed. Returns the microseconds a launch; *bad counts failures. */
static double run_case(cudaStream_t st, int hd, int window, int pos0, int *bad) {
    const size_t nq = (size_t)N_TOK * H * hd, nkv = (size_t)LEN * KV * hd;
    const uint64_t seed = 3 * ((uint64_t)hd << 32 | (uint64_t)pos0); /* 3 streams a case */
    float *q = random_vec(nq, seed), *kc = random_vec(nkv, seed + 1),
          *vc = random_vec(nkv, seed + 2);
    float *dq = to_device(q, nq), *dk = to_device(kc, nkv), *dv = to_device(vc, nkv), *dout, *dpart;
    CK(cudaMalloc((void **)&dout, nq * sizeof(float)));
    CK(cudaMalloc((void **)&dpart, k_attention_rows_partial(N_TOK, H, hd)));
    k_attention_rows(st, dout, dpart, dq, dk, dv, N_TOK, NULL, pos0, LEN, window, H, KV, hd);
    CK(cudaStreamSynchronize(st));
    float *got = xmalloc(nq * sizeof(float));
    CK(cudaMemcpy(got, dout, nq * sizeof(float), cudaMemcpyDeviceToHost));
    double *want = attention_ref(q, kc, vc, N_TOK, pos0, LEN, window, H, KV, hd);
    const double g = sqrt(hd / 16.0);
    double worst = 0; /* of |got - want| over its bound */
    for (size_t i = 0; i < nq; i++) {
        const double r = fabs(got[i] - want[i]) / (2e-5 * g + 2e-4 * g * fabs(want[i]));
        worst = r > worst || isnan(r) ? r : worst;
    }
    const int ok = worst <= 1.0;
    *bad += !ok;

    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < 5; i++)
        k_attention_rows(st, dout, dpart, dq, dk, dv, N_TOK, NULL, pos0, LEN, window, H, KV, hd);
    CK(cudaEventRecord(e0, st));
    for (int i = 0; i < REPS; i++)
        k_attention_rows(st, dout, dpart, dq, dk, dv, N_TOK, NULL, pos0, LEN, window, H, KV, hd);
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    CK(cudaGetLastError());
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    const double us = 1e3 * ms / REPS;
    const double bytes = k_attention_rows_bytes(N_TOK, pos0, LEN, window, H, hd);
    const double flop = 4.0 * hd * H * pairs(N_TOK, pos0, window);
    printf("hd %3d  window %3d  pos %3d  %8.2f us  %7.1f GB/s  %6.2f TFLOP/s  error %.3f of the "
           "bound  %s\n",
           hd, window, pos0, us, bytes / us * 1e-3, flop / us * 1e-6, worst, ok ? "ok" : "FAIL");
    free(q), free(kc), free(vc), free(got), free(want);
    float *dev[] = {dq, dk, dv, dout, dpart};
    for (int i = 0; i < 5; i++)
        CK(cudaFree(dev[i]));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return us;
}

int main(void) {
    util_progname = "attention_rows_check";
    int n_dev = 0;
    if (cudaGetDeviceCount(&n_dev) != cudaSuccess || n_dev < 1) {
        fprintf(stderr, "attention_rows_check: no CUDA device\n");
        return 2;
    }
    struct cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    if (!k_attention_rows_supported(256) || !k_attention_rows_supported(512)) {
        fprintf(stderr, "attention_rows_check: %s cannot run the kernel at head_dim 256 / 512\n",
                prop.name);
        return 2;
    }
    printf("attention_rows_check: %s, %d rows, %d heads over %d KV heads, rings of %d\n", prop.name,
           N_TOK, H, KV, LEN);
    cudaStream_t st; /* a stream of its own, as the backend's: kernels launch with PDL */
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    int bad = 0;
    const double sliding = run_case(st, 256, 512, 0, &bad), global = run_case(st, 512, 0, 0, &bad);
    run_case(st, 256, 512, 256, &bad);
    run_case(st, 512, 0, 256, &bad);
    CK(cudaStreamDestroy(st));
    printf("a 256-token E4B prompt: 35 x %.2f + 7 x %.2f = %.0f us of attention\n", sliding, global,
           35 * sliding + 7 * global);
    printf("%s\n", bad ? "FAIL" : "PASS");
    return bad ? 1 : 0;
}
