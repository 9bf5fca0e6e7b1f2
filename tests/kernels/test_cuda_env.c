/* test_cuda_env.c: the CUDA backend's environment switches (kernels/backend_cuda_env.c), which
 * need no GPU: the defaults, every listed value, and the refusal of anything else with a message
 * that names the variable and the value. A ctest test wherever the CUDA backend is built. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda_env.h"
#include "util.h"
#include "../test_util.h"

static const char *const all_vars[] = {
    "GEMMA_CUDA_GEMM",           "GEMMA_CUDA_GRAPHS",      "GEMMA_CUDA_PROFILE",
    "GEMMA_CUDA_FUSE",           "GEMMA_CUDA_FUSE_MM",     "GEMMA_CUDA_PDL",
    "GEMMA_CUDA_MV_UNROLL",      "GEMMA_CUDA_MV_PREFETCH", "GEMMA_CUDA_MV_DECODE",
    "GEMMA_CUDA_MV_GRID",        "GEMMA_CUDA_MV_SPLIT",    "GEMMA_CUDA_MV_ROWS",
    "GEMMA_CUDA_MV_ROWS_MIN",    "GEMMA_CUDA_MV_GROUP",    "GEMMA_CUDA_MV_MMA",
    "GEMMA_CUDA_MV_BLOCK_WARPS", "GEMMA_CUDA_ATTN",        "GEMMA_CUDA_MLP"};

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
    return rc;
}

int main(void) {
    util_progname = "test_cuda_env";
    cuda_switches sw;
    char err[256];

    /* defaults */
    EXPECT(read_with(NULL, NULL, &sw, err, sizeof err) == 0, "%s", err);
    EXPECT(sw.gemm_mode == 2 && sw.use_graphs == 1 && sw.profile == 0 && sw.fuse == 1 &&
           sw.fuse_mm == CUDA_FUSE_MM_ON && sw.pdl == 1 && sw.attn == CUDA_ATTN_AUTO &&
           sw.mlp == K_MLP_CORES);
    EXPECT(sw.mv.unroll == 0 && sw.mv.prefetch == 2 && sw.mv.decode == K_MV_LEAN &&
           sw.mv.grid == 0 && sw.mv.split == 0 && sw.mv.rows == 0 && sw.mv.rows_min_kb == 1024 &&
           sw.mv.group == 2 && sw.mv.mma == 0 && sw.mv.block_warps == 0);
    /* an empty value is the default too */
    EXPECT(read_with("GEMMA_CUDA_FUSE_MM", "", &sw, err, sizeof err) == 0 &&
           sw.fuse_mm == CUDA_FUSE_MM_ON);

    /* every listed value */
    EXPECT(read_with("GEMMA_CUDA_GEMM", "cublas", &sw, err, sizeof err) == 0 && sw.gemm_mode == 1);
    EXPECT(read_with("GEMMA_CUDA_GEMM", "auto", &sw, err, sizeof err) == 0 && sw.gemm_mode == 2);
    EXPECT(read_with("GEMMA_CUDA_GEMM", "own", &sw, err, sizeof err) == 0 && sw.gemm_mode == 0);
    EXPECT(read_with("GEMMA_CUDA_GRAPHS", "0", &sw, err, sizeof err) == 0 && sw.use_graphs == 0);
    EXPECT(read_with("GEMMA_CUDA_PROFILE", "1", &sw, err, sizeof err) == 0 && sw.profile == 1);
    EXPECT(read_with("GEMMA_CUDA_FUSE", "0", &sw, err, sizeof err) == 0 && sw.fuse == 0);
    EXPECT(read_with("GEMMA_CUDA_PDL", "0", &sw, err, sizeof err) == 0 && sw.pdl == 0);
    EXPECT(read_with("GEMMA_CUDA_MLP", "0", &sw, err, sizeof err) == 0 && sw.mlp == 0);
    EXPECT(read_with("GEMMA_CUDA_MLP", "1", &sw, err, sizeof err) == 0 && sw.mlp == K_MLP_CORES);
    EXPECT(read_with("GEMMA_CUDA_MLP", "mma", &sw, err, sizeof err) == 0 && sw.mlp == K_MLP_MMA);
    EXPECT(read_with("GEMMA_CUDA_ATTN", "split", &sw, err, sizeof err) == 0 &&
           sw.attn == K_ATTN_SPLIT);
    EXPECT(read_with("GEMMA_CUDA_ATTN", "cluster", &sw, err, sizeof err) == 0 &&
           sw.attn == K_ATTN_CLUSTER);
    EXPECT(read_with("GEMMA_CUDA_ATTN", "auto", &sw, err, sizeof err) == 0 &&
           sw.attn == CUDA_ATTN_AUTO);
    EXPECT(read_with("GEMMA_CUDA_FUSE_MM", "0", &sw, err, sizeof err) == 0 &&
           sw.fuse_mm == CUDA_FUSE_MM_OFF);
    EXPECT(read_with("GEMMA_CUDA_FUSE_MM", "auto", &sw, err, sizeof err) == 0 &&
           sw.fuse_mm == CUDA_FUSE_MM_AUTO);
    EXPECT(read_with("GEMMA_CUDA_FUSE_MM", "nopair", &sw, err, sizeof err) == 0 &&
           sw.fuse_mm == CUDA_FUSE_MM_NOPAIR);
    EXPECT(read_with("GEMMA_CUDA_MV_UNROLL", "4", &sw, err, sizeof err) == 0 && sw.mv.unroll == 4);
    EXPECT(read_with("GEMMA_CUDA_MV_UNROLL", "8", &sw, err, sizeof err) == 0 && sw.mv.unroll == 8);
    EXPECT(read_with("GEMMA_CUDA_MV_UNROLL", "auto", &sw, err, sizeof err) == 0 &&
           sw.mv.unroll == 0);
    EXPECT(read_with("GEMMA_CUDA_MV_PREFETCH", "0", &sw, err, sizeof err) == 0 &&
           sw.mv.prefetch == 0);
    EXPECT(read_with("GEMMA_CUDA_MV_PREFETCH", "4", &sw, err, sizeof err) == 0 &&
           sw.mv.prefetch == 4);
    EXPECT(read_with("GEMMA_CUDA_MV_DECODE", "lean8", &sw, err, sizeof err) == 0 &&
           sw.mv.decode == K_MV_LEAN8);
    EXPECT(read_with("GEMMA_CUDA_MV_DECODE", "general", &sw, err, sizeof err) == 0 &&
           sw.mv.decode == K_MV_GENERAL);
    EXPECT(read_with("GEMMA_CUDA_MV_GRID", "persist", &sw, err, sizeof err) == 0 &&
           sw.mv.grid == -1);
    EXPECT(read_with("GEMMA_CUDA_MV_GRID", "264", &sw, err, sizeof err) == 0 && sw.mv.grid == 264);
    EXPECT(read_with("GEMMA_CUDA_MV_GRID", "blocks", &sw, err, sizeof err) == 0 && sw.mv.grid == 0);
    EXPECT(read_with("GEMMA_CUDA_MV_SPLIT", "8", &sw, err, sizeof err) == 0 && sw.mv.split == 8);
    EXPECT(read_with("GEMMA_CUDA_MV_SPLIT", "64", &sw, err, sizeof err) == 0 && sw.mv.split == 64);
    EXPECT(read_with("GEMMA_CUDA_MV_ROWS", "1", &sw, err, sizeof err) == 0 && sw.mv.rows == 1);
    EXPECT(read_with("GEMMA_CUDA_MV_ROWS", "2", &sw, err, sizeof err) == 0 && sw.mv.rows == 2);
    EXPECT(read_with("GEMMA_CUDA_MV_ROWS", "4", &sw, err, sizeof err) == 0 && sw.mv.rows == 4);
    EXPECT(read_with("GEMMA_CUDA_MV_ROWS", "auto", &sw, err, sizeof err) == 0 && sw.mv.rows == 0);
    EXPECT(read_with("GEMMA_CUDA_MV_ROWS_MIN", "0", &sw, err, sizeof err) == 0 &&
           sw.mv.rows_min_kb == 0);
    EXPECT(read_with("GEMMA_CUDA_MV_ROWS_MIN", "1048576", &sw, err, sizeof err) == 0 &&
           sw.mv.rows_min_kb == 1048576);
    EXPECT(read_with("GEMMA_CUDA_MV_GROUP", "1", &sw, err, sizeof err) == 0 && sw.mv.group == 1);
    EXPECT(read_with("GEMMA_CUDA_MV_GROUP", "0", &sw, err, sizeof err) == 0 && sw.mv.group == 0);
    EXPECT(read_with("GEMMA_CUDA_MV_GROUP", "auto", &sw, err, sizeof err) == 0 && sw.mv.group == 2);
    EXPECT(read_with("GEMMA_CUDA_MV_MMA", "1", &sw, err, sizeof err) == 0 && sw.mv.mma == 1);
    EXPECT(read_with("GEMMA_CUDA_MV_MMA", "0", &sw, err, sizeof err) == 0 && sw.mv.mma == 0);
    EXPECT(read_with("GEMMA_CUDA_MV_MMA", "2", &sw, err, sizeof err) == 0 && sw.mv.mma == 2);
    EXPECT(read_with("GEMMA_CUDA_MV_BLOCK_WARPS", "auto", &sw, err, sizeof err) == 0 &&
           sw.mv.block_warps == 0);
    EXPECT(read_with("GEMMA_CUDA_MV_BLOCK_WARPS", "8", &sw, err, sizeof err) == 0 &&
           sw.mv.block_warps == 8);
    EXPECT(read_with("GEMMA_CUDA_MV_BLOCK_WARPS", "4", &sw, err, sizeof err) == 0 &&
           sw.mv.block_warps == 4);
    EXPECT(read_with("GEMMA_CUDA_MV_BLOCK_WARPS", "2", &sw, err, sizeof err) == 0 &&
           sw.mv.block_warps == 2);

    /* anything else is refused, naming the variable and the value */
    const struct {
        const char *name, *value;
    } bad[] = {
        {"GEMMA_CUDA_GEMM", "fast"},        {"GEMMA_CUDA_FUSE_MM", "2"},
        {"GEMMA_CUDA_FUSE_MM", "pair"},     {"GEMMA_CUDA_MV_UNROLL", "6"},
        {"GEMMA_CUDA_MV_UNROLL", "8x"},     {"GEMMA_CUDA_MV_PREFETCH", "one"},
        {"GEMMA_CUDA_MV_DECODE", "turbo"},  {"GEMMA_CUDA_MV_GRID", "0"},
        {"GEMMA_CUDA_MV_GRID", "persist2"}, {"GEMMA_CUDA_MV_GRID", "-3"},
        {"GEMMA_CUDA_MV_SPLIT", "0"},       {"GEMMA_CUDA_MV_SPLIT", "65"},
        {"GEMMA_CUDA_MV_SPLIT", "wave"},    {"GEMMA_CUDA_MV_ROWS", "0"},
        {"GEMMA_CUDA_MV_ROWS", "3"},        {"GEMMA_CUDA_MV_ROWS", "two"},
        {"GEMMA_CUDA_MV_ROWS_MIN", "-1"},   {"GEMMA_CUDA_MV_ROWS_MIN", "1048577"},
        {"GEMMA_CUDA_MV_ROWS_MIN", "4M"},   {"GEMMA_CUDA_MV_GROUP", "2"},
        {"GEMMA_CUDA_MV_GROUP", "on"},      {"GEMMA_CUDA_MV_MMA", "3"},
        {"GEMMA_CUDA_MV_MMA", "tensor"},    {"GEMMA_CUDA_MV_BLOCK_WARPS", "16"},
        {"GEMMA_CUDA_MV_BLOCK_WARPS", "1"}, {"GEMMA_CUDA_ATTN", "clusters"},
        {"GEMMA_CUDA_ATTN", "1"},           {"GEMMA_CUDA_MLP", "2"},
        {"GEMMA_CUDA_MLP", "tensor"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const int rc = read_with(bad[i].name, bad[i].value, &sw, err, sizeof err);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "\"%s\"", bad[i].value);
        EXPECT(rc == -1 && strstr(err, bad[i].name) && strstr(err, quoted),
               "%s=%s: rc %d, message \"%s\"", bad[i].name, bad[i].value, rc, err);
    }
    return test_exit("test_cuda_env");
}
