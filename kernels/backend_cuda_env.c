/* backend_cuda_env.c: the CUDA backend's switches, read from the environment (the list, with
 * what each one does, is in backend_cuda.h). Apart from backend_cuda.c so that it needs no GPU:
 * backend_cuda_new calls it once it has found a device, and tests/kernels/test_cuda_env.c checks
 * every value and every refusal on any machine. A value that is not one of those listed is
 * refused with a message naming the variable, never taken as a default. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda_env.h"
#include "util.h"

/* Unset or empty: dflt; "0": off; anything else: on. */
static int env_flag(const char *name, int dflt) {
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    return strcmp(v, "0") != 0;
}

/* GEMMA_CUDA_MV_UNROLL=auto|4|8, GEMMA_CUDA_MV_PREFETCH=0|2|4,
 * GEMMA_CUDA_MV_DECODE=lean|lean8|general, GEMMA_CUDA_MV_GRID=blocks|persist|N,
 * GEMMA_CUDA_MV_SPLIT=N, GEMMA_CUDA_MV_ROWS=auto|1|2|4, GEMMA_CUDA_MV_ROWS_MIN=KiB and
 * GEMMA_CUDA_MV_GROUP=auto|0|1, GEMMA_CUDA_MV_MMA=0|1|2 and GEMMA_CUDA_MV_BLOCK_WARPS=auto|8|4|2
 * (kernels.h: k_mv_tuning) into t; -1 with
 * a message naming the variable for any other value. */
static int mv_tuning_from_env(k_mv_tuning *t, char *err, size_t errlen) {
    const char *names[] = {"GEMMA_CUDA_MV_UNROLL",   "GEMMA_CUDA_MV_PREFETCH",
                           "GEMMA_CUDA_MV_DECODE",   "GEMMA_CUDA_MV_GRID",
                           "GEMMA_CUDA_MV_SPLIT",    "GEMMA_CUDA_MV_ROWS",
                           "GEMMA_CUDA_MV_ROWS_MIN", "GEMMA_CUDA_MV_GROUP",
                           "GEMMA_CUDA_MV_MMA",      "GEMMA_CUDA_MV_BLOCK_WARPS"};
    const char *allowed[] = {"auto, 4 or 8",
                             "0, 2 or 4",
                             "lean, lean8 or general",
                             "blocks, persist or a number of blocks from 1 to 1000000",
                             "a number of blocks per multiprocessor from 1 to 64",
                             "auto, 1, 2 or 4",
                             "a number of KiB from 0 to 1048576",
                             "auto, 0 or 1",
                             "0, 1 or 2",
                             "auto, 8, 4 or 2"};
    *t = (k_mv_tuning){.unroll = 0,
                       .prefetch = 2,
                       .decode = K_MV_LEAN,
                       .grid = 0,
                       .split = 0,
                       .rows = 0,
                       .rows_min_kb = 1024,
                       .group = 2,
                       .mma = 0,
                       .block_warps = 0};
    for (int i = 0; i < 10; i++) {
        const char *v = getenv(names[i]);
        if (!v || !*v) continue;
        char *end = NULL;
        const long num = strtol(v, &end, 10);
        const int is_num = end != v && *end == 0;
        int ok = 1;
        if (i == 0)
            ok = !strcmp(v, "auto") || (is_num && (num == 4 || num == 8));
        else if (i == 1)
            ok = is_num && (num == 0 || num == 2 || num == 4);
        else if (i == 2)
            ok = !strcmp(v, "general") || !strcmp(v, "lean") || !strcmp(v, "lean8");
        else if (i == 3)
            ok = !strcmp(v, "blocks") || !strcmp(v, "persist") ||
                 (is_num && num >= 1 && num <= 1000000);
        else if (i == 4)
            ok = is_num && num >= 1 && num <= 64;
        else if (i == 5)
            ok = !strcmp(v, "auto") || (is_num && (num == 1 || num == 2 || num == 4));
        else if (i == 6)
            ok = is_num && num >= 0 && num <= 1048576;
        else if (i == 7)
            ok = !strcmp(v, "auto") || (is_num && (num == 0 || num == 1));
        else if (i == 8)
            ok = is_num && (num == 0 || num == 1 || num == 2);
        else
            ok = !strcmp(v, "auto") || (is_num && (num == 8 || num == 4 || num == 2));
        if (!ok) {
            snprintf(err, errlen, "environment variable %s: \"%s\" is not %s", names[i], v,
                     allowed[i]);
            return -1;
        }
        if (i == 0)
            t->unroll = !strcmp(v, "auto") ? 0 : (int)num;
        else if (i == 1)
            t->prefetch = (int)num;
        else if (i == 2)
            t->decode = !strcmp(v, "lean8")     ? K_MV_LEAN8
                        : !strcmp(v, "general") ? K_MV_GENERAL
                                                : K_MV_LEAN;
        else if (i == 3)
            t->grid = !strcmp(v, "blocks") ? 0 : !strcmp(v, "persist") ? -1 : (int)num;
        else if (i == 4)
            t->split = (int)num;
        else if (i == 5)
            t->rows = !strcmp(v, "auto") ? 0 : (int)num;
        else if (i == 6)
            t->rows_min_kb = (int)num;
        else if (i == 7)
            t->group = !strcmp(v, "auto") ? 2 : (int)num;
        else if (i == 8)
            t->mma = (int)num;
        else
            t->block_warps = !strcmp(v, "auto") ? 0 : (int)num;
    }
    CHECK(k_matvec_set_tuning(t) == 0);
    return 0;
}

int cuda_switches_from_env(cuda_switches *sw, char *err, size_t errlen) {
    memset(sw, 0, sizeof *sw);
    sw->gemm_mode = 2; /* auto: prefill chunks of bf16 weights on cuBLAS (backend_cuda.c) */
    const char *gemm = getenv("GEMMA_CUDA_GEMM");
    if (gemm && *gemm) {
        if (!strcmp(gemm, "own"))
            sw->gemm_mode = 0;
        else if (!strcmp(gemm, "cublas"))
            sw->gemm_mode = 1;
        else if (!strcmp(gemm, "auto"))
            sw->gemm_mode = 2;
        else {
            snprintf(err, errlen,
                     "environment variable GEMMA_CUDA_GEMM: \"%s\" is not own, cublas or auto",
                     gemm);
            return -1;
        }
    }
    sw->use_graphs = env_flag("GEMMA_CUDA_GRAPHS", 1);
    sw->profile = env_flag("GEMMA_CUDA_PROFILE", 0);
    sw->fuse = env_flag("GEMMA_CUDA_FUSE", 1);
    const char *fmm = getenv("GEMMA_CUDA_FUSE_MM");
    sw->fuse_mm = !fmm || !*fmm || !strcmp(fmm, "1") ? CUDA_FUSE_MM_ON
                  : !strcmp(fmm, "0")                ? CUDA_FUSE_MM_OFF
                  : !strcmp(fmm, "auto")             ? CUDA_FUSE_MM_AUTO
                  : !strcmp(fmm, "nopair")           ? CUDA_FUSE_MM_NOPAIR
                                                     : -1;
    if (sw->fuse_mm < 0) {
        snprintf(err, errlen,
                 "environment variable GEMMA_CUDA_FUSE_MM: \"%s\" is not 0, 1, auto or nopair",
                 fmm);
        return -1;
    }
    sw->pdl = env_flag("GEMMA_CUDA_PDL", 1);
    const char *mlp = getenv("GEMMA_CUDA_MLP");
    sw->mlp = !mlp || !*mlp || !strcmp(mlp, "1") ? K_MLP_CORES
              : !strcmp(mlp, "0")                ? 0
              : !strcmp(mlp, "mma")              ? K_MLP_MMA
                                                 : -1;
    if (sw->mlp < 0) {
        snprintf(err, errlen, "environment variable GEMMA_CUDA_MLP: \"%s\" is not 0, 1 or mma",
                 mlp);
        return -1;
    }
    const char *attn = getenv("GEMMA_CUDA_ATTN");
    sw->attn = !attn || !*attn || !strcmp(attn, "auto") ? CUDA_ATTN_AUTO
               : !strcmp(attn, "split")                 ? K_ATTN_SPLIT
               : !strcmp(attn, "cluster")               ? K_ATTN_CLUSTER
                                                        : -2;
    if (sw->attn == -2) {
        snprintf(err, errlen,
                 "environment variable GEMMA_CUDA_ATTN: \"%s\" is not auto, split or cluster",
                 attn);
        return -1;
    }
    return mv_tuning_from_env(&sw->mv, err, errlen);
}
