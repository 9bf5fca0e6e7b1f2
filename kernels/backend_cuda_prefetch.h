/* backend_cuda_prefetch.h: the L2 weight-prefetch branch of a captured decode step
 * (backend_cuda_prefetch.c), and the plan it is made from (exposed for the tests). */
#ifndef BACKEND_CUDA_PREFETCH_H
#define BACKEND_CUDA_PREFETCH_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "kernels.h"

/* A piece of a product's weights as its launch reads them: one matrix, or two read side by side
 * (the gate and up of a pair: row r of both at once). A launch reads its parts in order (the
 * matrices of a group are dealt blocks in order). */
typedef struct {
    const void *w[2]; /* device data */
    size_t bytes[2];
    int n; /* 1 or 2 */
} l2_part;

/* The products of one step, in launch order, laid end to end: product j reads the plan's bytes
 * [start, start + bytes). */
typedef struct {
    int part0, n_parts;
    size_t start, bytes;
} l2_product;

typedef struct {
    l2_part *parts; /* [n_parts] */
    int n_parts, cap_parts;
    l2_product *prods; /* [n_prods] */
    int n_prods, cap_prods;
    size_t total; /* bytes of every product */
} l2_plan;

void l2_plan_add(l2_plan *p, const l2_part *parts, int n);
void l2_plan_clear(l2_plan *p);
/* Call emit for the device ranges that hold the plan's bytes [from, to), in plan order; a part
 * read side by side gives each matrix the same fraction. Ranges start and end on 16 bytes
 * (rounded down; a ragged tail of a matrix is left out). */
void l2_plan_walk(const l2_plan *p, size_t from, size_t to,
                  void (*emit)(void *ctx, const void *ptr, size_t bytes), void *ctx);
/* Product j launching ahead by `ahead` bytes, having asked up to *frontier: the range to ask for
 * now, [*from, *to) (empty when *from >= *to), and *frontier moved past it. */
void l2_plan_window(const l2_plan *p, int j, size_t ahead, size_t *frontier, size_t *from,
                    size_t *to);

/* The branch. NULL from l2_ahead_new when ahead is 0 (off); every call below accepts NULL. */
typedef struct l2_ahead l2_ahead;
/* mode: K_L2_*; at_end: ask when a product ends for what follows it, else when it starts */
l2_ahead *l2_ahead_new(size_t ahead, int mode, int at_end);
void l2_ahead_free(l2_ahead *a);
/* A step of `key` starts on `stream`. record: its first, eager run, which writes down the order
 * of its products; else it is being captured, and gets the prefetch branch. */
void l2_ahead_step_begin(l2_ahead *a, int key, int record, cudaStream_t stream);
/* A product that reads these parts is about to be launched on the step's stream. */
void l2_ahead_product(l2_ahead *a, const l2_part *parts, int n);
/* That product has been launched. */
void l2_ahead_launched(l2_ahead *a);
/* The step ends: the branch joins the step's stream (before cudaStreamEndCapture). */
void l2_ahead_step_end(l2_ahead *a);

#endif
