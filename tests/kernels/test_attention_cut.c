/* test_attention_cut.c: how kernels/attention.cu cuts the attention (k_attention_splits) and the
 * horizon classes that key the CUDA backend's graphs (k_attention_horizon_class) - host code
 * that needs no GPU, so a ctest test wherever the CUDA backend is built.
 *
 * The property the graphs rely on: two horizons of one class get the same cut for every ring
 * and head width (else a step captured under one horizon would be replayed under another with
 * another cut, and a verify pass could stop reproducing its decode steps bit for bit). Checked
 * for every horizon up to 9000 against rings and widths around every reach. And the cut itself:
 * a horizon picks the cluster form for a long ring when the sequence is short enough, never
 * changes the split form's slices, and without clusters changes nothing. */
#include <stdio.h>
#include <string.h>

#include "kernels.h"
#include "util.h"
#include "../test_util.h"

enum { MAX_H = 9000 };

static const int rings[] = {1,    16,   100,  500,  1000, 1023, 1024, 1025, 1500,
                            2000, 2047, 2048, 2049, 3000, 4096, 8192, 9000, 131072};
static const int widths[] = {16, 24, 32, 48, 64, 96, 128, 200, 256, 320, 512};
#define N_RINGS  (int)(sizeof rings / sizeof rings[0])
#define N_WIDTHS (int)(sizeof widths / sizeof widths[0])

int main(void) {
    util_progname = "test_attention_cut";
    /* for each class, the cut it gave each (ring, width) first: -2 = not seen yet */
    static int cut[K_ATTN_HORIZON_CLASSES][N_RINGS][N_WIDTHS];
    for (int c = 0; c < K_ATTN_HORIZON_CLASSES; c++)
        for (int r = 0; r < N_RINGS; r++)
            for (int w = 0; w < N_WIDTHS; w++)
                cut[c][r][w] = -2;
    int classes_seen = 0, bad = 0;
    for (int h = 0; h <= MAX_H && bad < 5; h++) {
        const int c = k_attention_horizon_class(h);
        if (c < 0 || c >= K_ATTN_HORIZON_CLASSES) {
            EXPECT(0, "horizon %d: class %d outside 0 .. %d", h, c, K_ATTN_HORIZON_CLASSES - 1);
            bad++;
            continue;
        }
        classes_seen |= 1 << c;
        for (int r = 0; r < N_RINGS; r++)
            for (int w = 0; w < N_WIDTHS; w++) {
                const int s = k_attention_splits(K_ATTN_CLUSTER, rings[r], h, 1, 8, widths[w]);
                if (cut[c][r][w] == -2) cut[c][r][w] = s;
                if (cut[c][r][w] != s && bad++ < 5)
                    EXPECT(0,
                           "horizon %d (class %d), ring %d, width %d: %d slices, another "
                           "horizon of its class %d",
                           h, c, rings[r], widths[w], s, cut[c][r][w]);
            }
    }
    /* no horizon and one past every reach decide alike (class 0); E4B's two reaches give 3 */
    EXPECT(k_attention_horizon_class(0) == 0 && k_attention_horizon_class(MAX_H) == 0,
           "no horizon: class %d; past every reach: class %d", k_attention_horizon_class(0),
           k_attention_horizon_class(MAX_H));
    EXPECT(classes_seen == 7, "classes seen over horizons 0 .. %d: mask %#x (want 0, 1, 2)", MAX_H,
           classes_seen);

    /* The cut. E4B's full layers: 512-wide heads, 8 of them, a ring of 4096 (MAX_MODEL_LEN). */
    const int split4096 = k_attention_splits(K_ATTN_CLUSTER, 4096, 0, 1, 8, 512);
    EXPECT(split4096 > 0, "a 4096 ring without a horizon: %d slices (want the split form)",
           split4096);
    EXPECT(k_attention_splits(K_ATTN_CLUSTER, 4096, 768, 1, 8, 512) == 0,
           "a 4096 ring, a sequence of 768: want one cluster kernel");
    EXPECT(k_attention_splits(K_ATTN_CLUSTER, 4096, 1024, 1, 8, 512) == 0 &&
               k_attention_splits(K_ATTN_CLUSTER, 4096, 1025, 1, 8, 512) == split4096,
           "512-wide heads: clusters up to a horizon of 1024, the ring's slices past it");
    EXPECT(k_attention_splits(K_ATTN_CLUSTER, 4096, 2048, 1, 8, 256) == 0 &&
               k_attention_splits(K_ATTN_CLUSTER, 4096, 2049, 1, 8, 256) > 0,
           "256-wide heads: clusters up to a horizon of 2048");
    EXPECT(k_attention_splits(K_ATTN_CLUSTER, 4096, 5000, 1, 8, 512) == split4096,
           "a horizon past the ring decides as the ring does");
    EXPECT(k_attention_splits(K_ATTN_CLUSTER, 600, 0, 1, 8, 512) == 0,
           "a 600 ring: one cluster kernel without a horizon too");
    /* without clusters (before sm_90, or GEMMA_CUDA_ATTN=split) a horizon changes nothing */
    for (int r = 0; r < N_RINGS; r++)
        for (int h = 0; h <= MAX_H; h += 97)
            if (k_attention_splits(K_ATTN_SPLIT, rings[r], h, 1, 8, 512) !=
                    k_attention_splits(K_ATTN_SPLIT, rings[r], 0, 1, 8, 512) &&
                bad++ < 5)
                EXPECT(0, "the split form, ring %d: horizon %d changed the slices", rings[r], h);
    /* and a chunk is cut as its rows are alone (a verify pass reproduces decode steps) */
    for (int n = 1; n <= 16; n++)
        EXPECT(k_attention_splits(K_ATTN_CLUSTER, 4096, 900, n, 8, 512) == 0 &&
                   k_attention_splits(K_ATTN_CLUSTER, 4096, 0, n, 8, 512) == split4096,
               "a chunk of %d rows is cut otherwise than one row", n);
    return test_exit("test_attention_cut");
}
