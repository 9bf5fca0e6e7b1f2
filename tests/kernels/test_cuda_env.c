/* test_cuda_env.c: the CUDA backend's environment switches (kernels/backend_cuda_env.c), which
 * need no GPU: the defaults, every listed value, the refusal of anything else with a message
 * that names the variable and the value, and the refusal of any GEMMA_CUDA_* variable that is
 * no switch, with a message naming it. A ctest test wherever the CUDA backend is built. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda_env.h"
#include "util.h"
#include "../test_util.h"

static const char *const all_vars[] = {
    "GEMMA_CUDA_MV_MMA", "GEMMA_CUDA_MLP",  "GEMMA_CUDA_DEQUANT",
    "GEMMA_CUDA_ATTN",   "GEMMA_CUDA_GEMM", "GEMMA_CUDA_GRAPHS",
    "GEMMA_CUDA_FUSE",   "GEMMA_CUDA_PDL",  "GEMMA_CUDA_PROFILE"};

static void clear_env(void) {
    for (size_t i = 0; i < sizeof all_vars / sizeof all_vars[0]; i++)
        unsetenv(all_vars[i]);
}

/* The switches with one variable set (the others unset); 0 or -1 as cuda_switches_from_env. */
static int read_with(const char *name, const char *value, cuda_switches *sw, char *err,
                     size_t errlen) {
    clear_env();
    if (name) setenv(name, value, 1);
    err[0] = '\0';
    const int rc = cuda_switches_from_env(sw, err, errlen);
    clear_env();
    if (name) unsetenv(name);
    return rc;
}

int main(void) {
    util_progname = "test_cuda_env";
    cuda_switches sw;
    char err[256];

    /* defaults */
    EXPECT(read_with(NULL, NULL, &sw, err, sizeof err) == 0, "%s", err);
    EXPECT(sw.gemm_own == 0 && sw.use_graphs == 1 && sw.profile == 0 && sw.fuse == 1 &&
           sw.pdl == 1 && sw.attn == CUDA_ATTN_AUTO && sw.mlp == K_MLP_CORES && sw.mv_mma == 0 &&
           sw.dequant_keep == 0);
    /* an empty value is the default too */
    EXPECT(read_with("GEMMA_CUDA_MLP", "", &sw, err, sizeof err) == 0 && sw.mlp == K_MLP_CORES);
    EXPECT(read_with("GEMMA_CUDA_GRAPHS", "", &sw, err, sizeof err) == 0 && sw.use_graphs == 1);

    /* every listed value */
    EXPECT(read_with("GEMMA_CUDA_MV_MMA", "0", &sw, err, sizeof err) == 0 && sw.mv_mma == 0 &&
           !sw.q_mma);
    EXPECT(read_with("GEMMA_CUDA_MV_MMA", "1", &sw, err, sizeof err) == 0 && sw.mv_mma == 1 &&
           sw.q_mma);
    EXPECT(read_with("GEMMA_CUDA_MV_MMA", "2", &sw, err, sizeof err) == 0 && sw.mv_mma == 2 &&
           sw.q_mma);
    EXPECT(read_with("GEMMA_CUDA_MV_MMA", "int4", &sw, err, sizeof err) == 0 && sw.mv_mma == 0 &&
           sw.q_mma);
    EXPECT(read_with("GEMMA_CUDA_MLP", "0", &sw, err, sizeof err) == 0 && sw.mlp == 0);
    EXPECT(read_with("GEMMA_CUDA_MLP", "1", &sw, err, sizeof err) == 0 && sw.mlp == K_MLP_CORES);
    EXPECT(read_with("GEMMA_CUDA_MLP", "mma", &sw, err, sizeof err) == 0 && sw.mlp == K_MLP_MMA &&
           !sw.mlp_quant);
    EXPECT(read_with("GEMMA_CUDA_MLP", "all", &sw, err, sizeof err) == 0 && sw.mlp == K_MLP_CORES &&
           sw.mlp_quant);
    EXPECT(read_with("GEMMA_CUDA_MLP", "1", &sw, err, sizeof err) == 0 && !sw.mlp_quant);
    EXPECT(read_with("GEMMA_CUDA_DEQUANT", "ahead", &sw, err, sizeof err) == 0 &&
           sw.dequant_keep == 0);
    EXPECT(read_with("GEMMA_CUDA_DEQUANT", "keep", &sw, err, sizeof err) == 0 &&
           sw.dequant_keep == 1);
    EXPECT(read_with("GEMMA_CUDA_ATTN", "split", &sw, err, sizeof err) == 0 &&
           sw.attn == K_ATTN_SPLIT);
    EXPECT(read_with("GEMMA_CUDA_ATTN", "cluster", &sw, err, sizeof err) == 0 &&
           sw.attn == K_ATTN_CLUSTER);
    EXPECT(read_with("GEMMA_CUDA_ATTN", "auto", &sw, err, sizeof err) == 0 &&
           sw.attn == CUDA_ATTN_AUTO);
    EXPECT(read_with("GEMMA_CUDA_GEMM", "auto", &sw, err, sizeof err) == 0 && sw.gemm_own == 0);
    EXPECT(read_with("GEMMA_CUDA_GEMM", "own", &sw, err, sizeof err) == 0 && sw.gemm_own == 1);
    EXPECT(read_with("GEMMA_CUDA_GRAPHS", "0", &sw, err, sizeof err) == 0 && sw.use_graphs == 0);
    EXPECT(read_with("GEMMA_CUDA_GRAPHS", "1", &sw, err, sizeof err) == 0 && sw.use_graphs == 1);
    EXPECT(read_with("GEMMA_CUDA_FUSE", "0", &sw, err, sizeof err) == 0 && sw.fuse == 0);
    EXPECT(read_with("GEMMA_CUDA_FUSE", "1", &sw, err, sizeof err) == 0 && sw.fuse == 1);
    EXPECT(read_with("GEMMA_CUDA_PDL", "0", &sw, err, sizeof err) == 0 && sw.pdl == 0);
    EXPECT(read_with("GEMMA_CUDA_PDL", "1", &sw, err, sizeof err) == 0 && sw.pdl == 1);
    EXPECT(read_with("GEMMA_CUDA_PROFILE", "1", &sw, err, sizeof err) == 0 && sw.profile == 1);
    EXPECT(read_with("GEMMA_CUDA_PROFILE", "0", &sw, err, sizeof err) == 0 && sw.profile == 0);

    /* any other value is refused, naming the variable and the value */
    const struct {
        const char *name, *value;
    } bad[] = {
        {"GEMMA_CUDA_GEMM", "fast"},     {"GEMMA_CUDA_GEMM", "cublas"},
        {"GEMMA_CUDA_MV_MMA", "3"},      {"GEMMA_CUDA_MV_MMA", "tensor"},
        {"GEMMA_CUDA_MV_MMA", "INT4"},   {"GEMMA_CUDA_MV_MMA", "int8"},
        {"GEMMA_CUDA_ATTN", "clusters"}, {"GEMMA_CUDA_ATTN", "1"},
        {"GEMMA_CUDA_MLP", "2"},         {"GEMMA_CUDA_MLP", "tensor"},
        {"GEMMA_CUDA_MLP", "ALL"},       {"GEMMA_CUDA_DEQUANT", "1"},
        {"GEMMA_CUDA_DEQUANT", "kept"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const int rc = read_with(bad[i].name, bad[i].value, &sw, err, sizeof err);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "\"%s\"", bad[i].value);
        EXPECT(rc == -1 && strstr(err, bad[i].name) && strstr(err, quoted),
               "%s=%s: rc %d, message \"%s\"", bad[i].name, bad[i].value, rc, err);
    }

    /* a GEMMA_CUDA_* variable that is no switch (a retired one, a misspelt one) is refused,
     * naming it, whatever its value - even empty */
    const struct {
        const char *name, *value;
    } unknown[] = {
        {"GEMMA_CUDA_FUSE_MM", "1"},
        {"GEMMA_CUDA_MV_UNROLL", "4"},
        {"GEMMA_CUDA_MV_ROWS_MIN", "0"},
        {"GEMMA_CUDA_MV_DECODE", "lean"},
        {"GEMMA_CUDA_GRAPH", "0"},
        {"GEMMA_CUDA_MLPX", ""},
        {"GEMMA_CUDA_", "1"},
    };
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        const int rc = read_with(unknown[i].name, unknown[i].value, &sw, err, sizeof err);
        char named[80];
        snprintf(named, sizeof named, "variable %s is not a switch", unknown[i].name);
        EXPECT(rc == -1 && strstr(err, named), "%s=%s: rc %d, message \"%s\"", unknown[i].name,
               unknown[i].value, rc, err);
    }
    /* other variables are none of the backend's business */
    EXPECT(read_with("GEMMA_CUDAX", "1", &sw, err, sizeof err) == 0, "%s", err);
    EXPECT(read_with("GEMMA_CPU_ISA", "avx2", &sw, err, sizeof err) == 0, "%s", err);
    return test_exit("test_cuda_env");
}
