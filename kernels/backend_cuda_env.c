/* backend_cuda_env.c: the CUDA backend's switches, read from the environment (backend_cuda.h
 * lists them, with what each one does). Apart from backend_cuda.c so that it needs no GPU:
 * backend_cuda_new calls it once it has found a device, and tests/kernels/test_cuda_env.c checks
 * every value and every refusal on any machine. A value that is not one of those listed is
 * refused with a message naming the variable, never taken as a default; so is any other
 * GEMMA_CUDA_* variable in the environment, so that a misspelt or retired switch cannot leave a
 * run measuring something else than its author meant. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda_env.h"

extern char **environ;

/* Every switch, in backend_cuda.h's order. */
static const char *const switch_names[] = {
    "GEMMA_CUDA_MV_MMA", "GEMMA_CUDA_MLP",  "GEMMA_CUDA_DEQUANT",
    "GEMMA_CUDA_ATTN",   "GEMMA_CUDA_GEMM", "GEMMA_CUDA_GRAPHS",
    "GEMMA_CUDA_FUSE",   "GEMMA_CUDA_PDL",  "GEMMA_CUDA_PROFILE"};

/* A GEMMA_CUDA_* variable set in the environment that is no switch: -1 with a message. */
static int unknown_switch(char *err, size_t errlen) {
    static const char prefix[] = "GEMMA_CUDA_";
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, prefix, sizeof prefix - 1)) continue;
        const size_t len = strcspn(*e, "=");
        int known = 0;
        for (size_t i = 0; i < sizeof switch_names / sizeof switch_names[0] && !known; i++)
            known = strlen(switch_names[i]) == len && !strncmp(*e, switch_names[i], len);
        if (!known) {
            snprintf(err, errlen,
                     "environment variable %.*s is not a switch of the CUDA backend (those are "
                     "listed in kernels/backend_cuda.h): unset it",
                     (int)len, *e);
            return -1;
        }
    }
    return 0;
}

/* Unset or empty: dflt; "0": off; anything else: on. */
static int env_flag(const char *name, int dflt) {
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    return strcmp(v, "0") != 0;
}

/* The index of name's value among values[0 .. n) (unset or empty: dflt), or -1 with a message
 * naming the variable, its value and what it may be (allowed). */
static int env_choice(const char *name, const char *const *values, int n, int dflt,
                      const char *allowed, char *err, size_t errlen) {
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    for (int i = 0; i < n; i++)
        if (!strcmp(v, values[i])) return i;
    snprintf(err, errlen, "environment variable %s: \"%s\" is not %s", name, v, allowed);
    return -1;
}

int cuda_switches_from_env(cuda_switches *sw, char *err, size_t errlen) {
    memset(sw, 0, sizeof *sw);
    if (unknown_switch(err, errlen)) return -1;
    static const char *const mma[] = {"0", "1", "2", "int4"};
    static const char *const mlp[] = {"0", "1", "mma", "all"};
    static const char *const attn[] = {"auto", "split", "cluster"};
    static const char *const gemm[] = {"auto", "own"};
    const int v_mma = env_choice("GEMMA_CUDA_MV_MMA", mma, 4, 0, "0, 1, 2 or int4", err, errlen);
    if (v_mma < 0) return -1;
    const int v_mlp = env_choice("GEMMA_CUDA_MLP", mlp, 4, 1, "0, 1, mma or all", err, errlen);
    if (v_mlp < 0) return -1;
    static const char *const dequant[] = {"ahead", "keep"};
    const int v_dq = env_choice("GEMMA_CUDA_DEQUANT", dequant, 2, 0, "ahead or keep", err, errlen);
    if (v_dq < 0) return -1;
    const int v_attn =
        env_choice("GEMMA_CUDA_ATTN", attn, 3, 0, "auto, split or cluster", err, errlen);
    if (v_attn < 0) return -1;
    const int v_gemm = env_choice("GEMMA_CUDA_GEMM", gemm, 2, 0, "auto or own", err, errlen);
    if (v_gemm < 0) return -1;
    sw->mv_mma = v_mma == 3 ? 0 : v_mma;
    sw->q_mma = v_mma != 0;
    sw->mlp = v_mlp == 2 ? K_MLP_MMA : v_mlp != 0 ? K_MLP_CORES : 0;
    sw->mlp_quant = v_mlp == 3;
    sw->dequant_keep = v_dq == 1;
    sw->attn = v_attn == 2 ? K_ATTN_CLUSTER : v_attn == 1 ? K_ATTN_SPLIT : CUDA_ATTN_AUTO;
    sw->gemm_own = v_gemm == 1;
    sw->use_graphs = env_flag("GEMMA_CUDA_GRAPHS", 1);
    sw->fuse = env_flag("GEMMA_CUDA_FUSE", 1);
    sw->pdl = env_flag("GEMMA_CUDA_PDL", 1);
    sw->profile = env_flag("GEMMA_CUDA_PROFILE", 0);
    return 0;
}
