/* backend_cuda_fuse.c: the CUDA backend's fusable ops - matmul, rmsnorm, rope, kv_write,
 * gelu_mul, add - and the queue that turns forward.c's plain sequence of them into far fewer,
 * larger kernels, without forward.c knowing.
 *
 * The queue. These ops are not launched when called: they are recorded (up to QCAP of them)
 * and run when anything else needs the device up to date - any other op, a download, argmax,
 * step_end (graph capture), the counters - for backend_cuda.c calls cuda_fuse_flush at the
 * top of each of those. The flush walks the recorded ops in order and, at each one not yet
 * run, tries in turn:
 *   1. matrix products that read the same x (q, k and v; gate and up): the later ones are
 *      hoisted up to the first. On cuBLAS (prefill chunks) they run back to back on one split
 *      of x (try_shared_split); on our kernels all go out as one launch (k_matvec_multi); a
 *      gelu_mul(gate, up) of two of them, or of one and a vector already in memory (the
 *      per-layer input), joins that launch as its epilogue; int8 / int4 matrices of one dtype
 *      and group go out as one k_matvec_q_multi launch (no epilogue);
 *   2. rmsnorm(o) in place, x += o, then optionally rmsnorm(x) into xn - the end of every
 *      block and the start of the next: one pass (k_norm_add_norm);
 *   3. a run of in-place head norms, RoPEs and KV-ring writes over up to three tensors (the
 *      q, k and v of an attention block): one launch (k_norm_rope_store);
 * and otherwise runs the op alone.
 *
 * Hoisting is the only reordering, and it is checked: every op knows the device ranges it
 * reads and writes (op_spans), and an op moves ahead of another only when neither writes
 * what the other touches; the matrices of one launch must not write x or each other's
 * outputs. The fused epilogues also store the products they consume (up's, next to the
 * gelu), so what lands in memory is what the separate ops, in forward.c's order, leave there.
 * The patterns depend on the ops and their shapes, never on n: a verify chunk is fused like
 * the decode steps it stands for, and matvec.cu's rows depend only on the shapes of the
 * matrices of their launch, so the two agree bit for bit. (A product grouped with others may
 * differ in the last bits from the same product alone.)
 *
 * With the backend's queue off (GEMMA_CUDA_FUSE=0) every op runs at once and alone. On an H200
 * grouping the products pays on both models (the shipped small model, matrices of at most
 * 0.5 MB: 0.232 against 0.269 ms a step; E4B, 1.3 to 52 MB: 4.60 against 4.92 ms), and so does
 * the gate + up pair at every size (E4B 4.15-4.17 ms against 4.23-4.26 with the pair only for
 * matrices of at most 1 MiB), since the lean decode kernel (matvec.cu) holds the pair in 44
 * registers a thread. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda_fuse.h"
#include "backend_cuda_internal.h"
#include "kernels.h"
#include "util.h"

#define QCAP 48 /* ops held at most; a full queue is flushed (26 per layer of the forward pass) */

enum { Q_MATMUL, Q_RMSNORM, Q_ROPE, Q_KV_WRITE, Q_GELU_MUL, Q_ADD };

/* One recorded op. The tensor is copied: callers may pass a temporary (the data it points at
 * must live on, as for every weight of the backend). */
typedef struct {
    int kind;
    tensor w;              /* MATMUL: the matrix; RMSNORM: the scale (w.data NULL = none) */
    float *out;            /* written: MATMUL, RMSNORM, GELU_MUL, ADD out; ROPE x; KV_WRITE ring */
    const float *a, *b;    /* read: MATMUL / RMSNORM / ADD x, KV_WRITE src, GELU_MUL gate; ADD y,
                              GELU_MUL up */
    const float *inv_freq; /* ROPE */
    int n;                 /* MATMUL, ROPE, KV_WRITE: tokens; RMSNORM: vectors; GELU_MUL: rows */
    int dim;               /* RMSNORM, ROPE: vector (head) size; KV_WRITE: kv_dim; GELU_MUL: dim */
    int heads;             /* ROPE */
    int pos0;              /* ROPE, KV_WRITE */
    int len;               /* KV_WRITE: ring rows */
    int stride;            /* GELU_MUL: up_stride */
    size_t count;          /* ADD */
    float eps;             /* RMSNORM */
} qop;

struct cuda_fuser {
    int fuse;
    qop q[QCAP];
    int nq;
};

cuda_fuser *cuda_fuser_new(int fuse) {
    cuda_fuser *f = xcalloc(1, sizeof *f);
    f->fuse = fuse;
    return f;
}

void cuda_fuser_free(cuda_fuser *f) {
    free(f);
}

/* ---- what each op touches ---------------------------------------------------------------- */

typedef struct {
    uintptr_t lo, hi; /* bytes [lo, hi); lo == hi: nothing */
} span;

static span span_of(const void *p, size_t floats) {
    const uintptr_t a = (uintptr_t)p;
    return (span){a, p ? a + floats * sizeof(float) : a};
}

static int overlap(span x, span y) {
    return x.lo < y.hi && y.lo < x.hi;
}

/* The device ranges op reads (rd[0], rd[1]) and writes (*wr); weights are read-only and left
 * out. */
static void op_spans(const qop *op, span rd[2], span *wr) {
    const size_t n = (size_t)op->n, dim = (size_t)op->dim;
    rd[0] = rd[1] = *wr = (span){0, 0};
    switch (op->kind) {
    case Q_MATMUL:
        rd[0] = span_of(op->a, n * op->w.cols);
        *wr = span_of(op->out, n * op->w.rows);
        break;
    case Q_RMSNORM:
        rd[0] = span_of(op->a, n * dim);
        *wr = span_of(op->out, n * dim);
        break;
    case Q_ROPE:
        rd[0] = *wr = span_of(op->out, n * op->heads * dim);
        rd[1] = span_of(op->inv_freq, dim / 2);
        break;
    case Q_KV_WRITE:
        rd[0] = span_of(op->a, n * dim);
        *wr = span_of(op->out, (size_t)op->len * dim);
        break;
    case Q_GELU_MUL:
        rd[0] = span_of(op->a, n * dim);
        rd[1] = span_of(op->b, n ? (n - 1) * op->stride + dim : 0);
        *wr = span_of(op->out, n * dim);
        break;
    default: /* Q_ADD */
        rd[0] = span_of(op->a, op->count);
        rd[1] = span_of(op->b, op->count);
        *wr = span_of(op->out, op->count);
        break;
    }
}

/* Must x and y keep their order (one writes what the other reads or writes)? */
static int conflict(const qop *x, const qop *y) {
    span xr[2], xw, yr[2], yw;
    op_spans(x, xr, &xw);
    op_spans(y, yr, &yw);
    return overlap(xw, yw) || overlap(xw, yr[0]) || overlap(xw, yr[1]) || overlap(yw, xr[0]) ||
           overlap(yw, xr[1]);
}

static span out_span(const qop *op) {
    span rd[2], wr;
    op_spans(op, rd, &wr);
    return wr;
}

/* The flush in progress: the ops, which have run, and which belong to the launch being built. */
typedef struct {
    qop q[QCAP];
    int nq;
    char done[QCAP];
    char taken[QCAP];
} batch;

/* Can op `to` run at position `from` (before every op between them that is not run yet and
 * not part of the same launch)? */
static int can_hoist(const batch *bt, int from, int to) {
    for (int m = from + 1; m < to; m++)
        if (!bt->done[m] && !bt->taken[m] && conflict(&bt->q[m], &bt->q[to])) return 0;
    return 1;
}

/* The next op after j that has not run yet (bt->nq when none). */
static int next_live(const batch *bt, int j) {
    for (j++; j < bt->nq && bt->done[j]; j++)
        ;
    return j;
}

/* ---- the ops, alone ------------------------------------------------------------------------ */

static double weight_bytes(const tensor *w) {
    return (double)tensor_bytes(w);
}

static void run_single(backend *b, const qop *op) {
    if (op->kind == Q_MATMUL) {
        cuda_matmul_now(cuda_st(b), op->out, &op->w, op->a, op->n, 0);
        return;
    }
    const void *wd = op->kind == Q_RMSNORM && op->w.data ? cuda_weight(cuda_st(b), &op->w) : NULL;
    int p = 0;
    const int *dp =
        op->kind == Q_ROPE || op->kind == Q_KV_WRITE ? cuda_pos(cuda_st(b), op->pos0, &p) : NULL;
    cudaStream_t s = cuda_op_begin(cuda_st(b));
    const double n = op->n, dim = op->dim;
    switch (op->kind) {
    case Q_RMSNORM:
        k_rmsnorm(s, op->out, op->a, wd, wd ? (int)op->w.dtype : KDT_F32, op->n, op->dim, op->eps);
        cuda_op_end(cuda_st(b), F_RMSNORM, 8.0 * n * dim + weight_bytes(&op->w));
        break;
    case Q_ROPE:
        k_rope(s, op->out, op->n, op->heads, op->dim, dp, p, op->inv_freq);
        cuda_op_end(cuda_st(b), F_ROPE, 8.0 * n * op->heads * dim + 2.0 * dim);
        break;
    case Q_KV_WRITE:
        k_kv_write(s, op->out, op->a, op->n, op->dim, dp, p, op->len);
        cuda_op_end(cuda_st(b), F_KV_WRITE, 8.0 * n * dim);
        break;
    case Q_GELU_MUL:
        k_gelu_mul(s, op->out, op->a, op->b, op->n, op->dim, op->stride);
        cuda_op_end(cuda_st(b), F_GELU_MUL, 12.0 * n * dim);
        break;
    default: /* Q_ADD */
        k_add(s, op->out, op->a, op->b, op->count);
        cuda_op_end(cuda_st(b), F_ELEMENTWISE, 12.0 * op->count);
        break;
    }
}

/* ---- 1. matrix products reading the same x ------------------------------------------------ */

static int same_input(backend *b, const qop *x, const qop *y) {
    return y->kind == Q_MATMUL && y->a == x->a && y->n == x->n && y->w.cols == x->w.cols &&
           y->w.dtype == x->w.dtype && (!x->w.q || y->w.q->group == x->w.q->group) &&
           cuda_matmul_own(cuda_st(b), &y->w, y->n);
}

/* The products from op i on (i first, where it qualifies) that can go out with it at its
 * place: those fits(b, op i, op j) takes, writing neither op i's x nor each other's outputs,
 * each hoistable over the ops between (can_hoist); at most cap, listed in mem and marked in
 * bt->taken. Returns how many. */
static int gather_on_x(backend *b, batch *bt, int i, int cap,
                       int (*fits)(backend *, const qop *, const qop *), int *mem) {
    const qop *q0 = &bt->q[i];
    const span xs = span_of(q0->a, (size_t)q0->n * q0->w.cols);
    int nm = 0;
    memset(bt->taken, 0, sizeof bt->taken);
    for (int j = i; j < bt->nq && nm < cap; j++) {
        if (bt->done[j] || !fits(b, q0, &bt->q[j])) continue;
        const span o = out_span(&bt->q[j]);
        int ok = !overlap(o, xs) && (j == i || can_hoist(bt, i, j));
        for (int k = 0; k < nm && ok; k++)
            ok = !overlap(o, out_span(&bt->q[mem[k]]));
        if (!ok) continue;
        mem[nm++] = j;
        bt->taken[j] = 1;
    }
    return nm;
}

/* The ops a fused launch took (bt->taken) have run. */
static void mark_taken_done(batch *bt) {
    for (int j = 0; j < bt->nq; j++)
        if (bt->taken[j]) bt->done[j] = 1;
}

/* The quantized members of a group (int8 / int4 weights, one dtype and group): one
 * k_matvec_q_multi launch, no epilogues. */
static void run_quant_group(backend *b, batch *bt, const int *mem, int nm) {
    k_qseg segs[K_MATVEC_Q_SEGS];
    double bytes = 0;
    const qop *q0 = &bt->q[mem[0]];
    for (int k = 0; k < nm; k++) {
        const qop *m = &bt->q[mem[k]];
        segs[k] = (k_qseg){cuda_qmat(cuda_st(b), &m->w), m->out};
        bytes += weight_bytes(&m->w) + 4.0 * m->n * (m->w.cols + m->w.rows);
    }
    cudaStream_t s = cuda_op_begin(cuda_st(b));
    if (k_matvec_q_multi(s, segs, nm, q0->a, q0->n))
        die("CUDA: %d quantized products of %d columns that matvec_q cannot take", nm, q0->w.cols);
    cuda_op_end(cuda_st(b), F_MATVEC, bytes);
    mark_taken_done(bt);
}

_Static_assert(K_MATVEC_Q_SEGS <= K_MV_SEGS, "a group's members fit either launch");

static int try_matvec_group(backend *b, batch *bt, int i) {
    const qop *q0 = &bt->q[i];
    if (q0->kind != Q_MATMUL || !cuda_matmul_own(cuda_st(b), &q0->w, q0->n)) return 0;
    int mem[K_MV_SEGS];
    const int nm = gather_on_x(b, bt, i, q0->w.q ? K_MATVEC_Q_SEGS : K_MV_SEGS, same_input, mem);
    if (!nm) return 0; /* the first product writes its own input: it runs alone */
    if (q0->w.q) {
        if (nm == 1) return 0;
        run_quant_group(b, bt, mem, nm);
        return 1;
    }
    /* gelu_mul(out = g, gate = g, up) after a product g of the group: up is another product of
     * the group (a pair) or a vector no product of the group writes. */
    int epi[K_MV_SEGS], partner[K_MV_SEGS], gelu[K_MV_SEGS];
    for (int k = 0; k < nm; k++)
        epi[k] = K_MV_PLAIN, partner[k] = gelu[k] = -1;
    for (int g = i + 1; g < bt->nq; g++) {
        const qop *op = &bt->q[g];
        if (bt->done[g] || bt->taken[g] || op->kind != Q_GELU_MUL || op->out != op->a) continue;
        int gk = -1, uk = -1;
        for (int k = 0; k < nm; k++) {
            const qop *m = &bt->q[mem[k]];
            if (mem[k] < g && m->out == op->a && m->w.rows == op->dim && m->n == op->n &&
                epi[k] == K_MV_PLAIN && partner[k] < 0)
                gk = k;
        }
        if (gk < 0) continue;
        for (int k = 0; k < nm; k++) {
            const qop *m = &bt->q[mem[k]];
            if (k != gk && mem[k] < g && m->out == op->b && op->stride == op->dim &&
                m->w.rows == op->dim && epi[k] == K_MV_PLAIN && partner[k] < 0)
                uk = k;
        }
        if (uk < 0) { /* a vector from memory: no product of the launch may write it */
            span rd[2], wr;
            op_spans(op, rd, &wr);
            int ok = 1;
            for (int k = 0; k < nm && ok; k++)
                ok = !overlap(out_span(&bt->q[mem[k]]), rd[1]);
            if (!ok) continue;
        }
        if (!can_hoist(bt, i, g)) continue;
        bt->taken[g] = 1;
        gelu[gk] = g;
        epi[gk] = uk >= 0 ? K_MV_GELU_PAIR : K_MV_GELU_MUL;
        if (uk >= 0) {
            partner[gk] = uk;
            partner[uk] = gk; /* folded into gk's segment */
            epi[uk] = -1;
        }
    }
    int n_gelu = 0;
    for (int k = 0; k < nm; k++)
        n_gelu += gelu[k] >= 0;
    if (nm == 1 && !n_gelu) return 0; /* nothing to fuse */

    k_mv_seg segs[K_MV_SEGS];
    int ns = 0;
    double bytes = 0;
    for (int k = 0; k < nm; k++) {
        if (epi[k] < 0) continue;
        const qop *m = &bt->q[mem[k]];
        k_mv_seg *s = &segs[ns++];
        memset(s, 0, sizeof *s);
        s->out = m->out;
        s->w = cuda_weight(cuda_st(b), &m->w);
        s->rows = m->w.rows;
        s->epilogue = epi[k];
        bytes += weight_bytes(&m->w) + 4.0 * m->n * (m->w.cols + m->w.rows);
        if (epi[k] == K_MV_GELU_PAIR) {
            const qop *u = &bt->q[mem[partner[k]]];
            s->w_up = cuda_weight(cuda_st(b), &u->w);
            s->out_up = u->out;
            bytes += weight_bytes(&u->w) + 4.0 * u->n * (u->w.cols + u->w.rows);
        } else if (epi[k] == K_MV_GELU_MUL) {
            s->mul = bt->q[gelu[k]].b;
            s->mul_stride = bt->q[gelu[k]].stride;
            bytes += 4.0 * m->n * m->w.rows;
        }
    }
    cudaStream_t s = cuda_op_begin(cuda_st(b));
    k_matvec_multi(s, segs, ns, (int)q0->w.dtype, q0->a, q0->w.cols, q0->n);
    cuda_op_end(cuda_st(b), F_MATVEC, bytes);
    mark_taken_done(bt);
    return 1;
}

/* ---- 0. a whole MLP: gate, up, gelu_mul(gate, up), down (mlp.cu) -------------------------- */

/* forward.c's mlp_block as four consecutive ops - matmul(G, gate, x), matmul(U, up, x),
 * gelu_mul(G, G, U), matmul(O, down, G) - with gate, up and down of one kind (bf16, or int8 /
 * int4 of one group), x, G, U and O pairwise disjoint, and shapes mlp.cu takes: one k_mlp (any
 * n, on our kernels), which leaves in G, U and O what the four ops leave. Tried before the
 * groups, so that the gate + up pair never takes half of it. The shapes, the dtype and the switch
 * decide, never n: a verify pass is fused like its decode steps. Quantized MLPs are fused only
 * under GEMMA_CUDA_MLP=all, on the CUDA cores: their one-input pass is slower than the separate
 * products at int4 (an H100: 35.5 against 28.5 us on E4B's MLP), their passes of 2 - 4 inputs
 * faster (1.1 - 1.3x), so the tuner decides (docs/gpu.md). Products that go
 * to cuBLAS (prefill chunks: backend_cuda_core.c) run as they would without it, from down's plain
 * copy: down is then held twice, transposed and as it is. */
static int try_mlp(backend *b, batch *bt, int i) {
    cuda_state *st = cuda_st(b);
    const qop *g = &bt->q[i];
    const int qnt = g->w.dtype == DT_Q8 || g->w.dtype == DT_Q4;
    if (g->kind != Q_MATMUL || (g->w.dtype != DT_BF16 && !qnt) || !st->mlp ||
        (qnt && !st->mlp_quant))
        return 0;
    const int j = next_live(bt, i), k = j < bt->nq ? next_live(bt, j) : bt->nq,
              l = k < bt->nq ? next_live(bt, k) : bt->nq;
    if (l >= bt->nq) return 0;
    const qop *u = &bt->q[j], *gm = &bt->q[k], *d = &bt->q[l];
    const int H = g->w.cols, I = g->w.rows, n = g->n;
    const int bits = qnt ? quant_dtype_bits(g->w.q->dtype) : 16, group = qnt ? g->w.q->group : 0;
    const int form = qnt ? K_MLP_CORES : st->mlp;
    if (!same_input(b, g, u) || u->w.rows != I) return 0;
    if (gm->kind != Q_GELU_MUL || gm->out != g->out || gm->a != g->out || gm->b != u->out ||
        gm->n != n || gm->dim != I || gm->stride != I)
        return 0;
    if (d->kind != Q_MATMUL || d->a != g->out || d->n != n || d->w.rows != H || d->w.cols != I)
        return 0;
    const tensor *ws[3] = {&g->w, &u->w, &d->w};
    for (int m = 1; m < 3; m++) /* one kind of weights */
        if (ws[m]->dtype != g->w.dtype || (qnt && ws[m]->q->group != group)) return 0;
    const span xs = span_of(g->a, (size_t)n * H), gs = span_of(g->out, (size_t)n * I),
               us = span_of(u->out, (size_t)n * I), os = span_of(d->out, (size_t)n * H);
    if (overlap(xs, gs) || overlap(xs, us) || overlap(gs, us) || overlap(os, xs) ||
        overlap(os, gs) || overlap(os, us) || (uintptr_t)g->a % 16 ||
        !k_mlp_supported(H, I, bits, group, form))
        return 0;
    if (!cuda_matmul_own(st, &g->w, n) || !cuda_matmul_own(st, &d->w, n)) return 0; /* cuBLAS */
    k_mlp_weights w = {.bits = bits, .group = group};
    if (qnt) {
        const k_qmat qg = cuda_qmat(st, &g->w), qu = cuda_qmat(st, &u->w);
        const char *dt = cuda_weight_t(st, &d->w);
        w.gate = qg.q, w.up = qu.q, w.gate_scales = qg.scales, w.up_scales = qu.scales;
        w.down_t = dt;
        w.down_t_scales = (const uint16_t *)(dt + (size_t)H * d->w.q->row_bytes);
    } else {
        w.gate = cuda_weight(st, &g->w), w.up = cuda_weight(st, &u->w);
        w.down_t = cuda_weight_t(st, &d->w);
    }
    /* The partials of the largest chunk (K_MLP_CHUNK inputs), whatever n: sized by n, the first
     * verify pass after decode steps would grow it and drop every captured graph (prefill chunks,
     * which would size it first, go to cuBLAS). */
    float *part = cuda_scratch(st, (void **)&st->d_mlp, &st->cap_mlp,
                               k_mlp_partial_floats(H, K_MLP_CHUNK) * sizeof(float));
    cudaStream_t s = cuda_op_begin(st);
    k_mlp(s, d->out, g->out, u->out, g->a, &w, part, H, I, n, form);
    st->mlp_ops++;
    cuda_op_end(st, F_MATVEC,
                weight_bytes(&g->w) + weight_bytes(&u->w) + weight_bytes(&d->w) +
                    4.0 * n * (H + 2.0 * I + H) + 8.0 * k_mlp_partial_floats(H, n));
    bt->done[i] = bt->done[j] = bt->done[k] = bt->done[l] = 1;
    return 1;
}

/* ---- 2. norm(o), x += o, norm(x) ------------------------------------------------------------ */

static int try_norm_add(backend *b, batch *bt, int i) {
    const qop *nrm = &bt->q[i];
    if (nrm->kind != Q_RMSNORM || nrm->out != nrm->a) return 0;
    const int j = next_live(bt, i);
    if (j >= bt->nq) return 0;
    const qop *add = &bt->q[j];
    const size_t cnt = (size_t)nrm->n * nrm->dim;
    const span os = out_span(nrm), xs = span_of(add->out, cnt);
    if (add->kind != Q_ADD || add->out != add->a || add->b != nrm->out || add->count != cnt ||
        overlap(os, xs))
        return 0;
    int k = next_live(bt, j);
    const qop *n2 = k < bt->nq ? &bt->q[k] : NULL;
    if (n2 && !(n2->kind == Q_RMSNORM && n2->a == add->out && n2->n == nrm->n &&
                n2->dim == nrm->dim && n2->eps == nrm->eps && !overlap(out_span(n2), os) &&
                (n2->out == add->out || !overlap(out_span(n2), xs)) &&
                (!n2->w.data || !nrm->w.data || n2->w.dtype == nrm->w.dtype)))
        n2 = NULL;
    const void *wo = nrm->w.data ? cuda_weight(cuda_st(b), &nrm->w) : NULL;
    const void *wx = n2 && n2->w.data ? cuda_weight(cuda_st(b), &n2->w) : NULL;
    const int wdt = nrm->w.data ? (int)nrm->w.dtype : n2 && n2->w.data ? (int)n2->w.dtype : KDT_F32;
    cudaStream_t s = cuda_op_begin(cuda_st(b));
    k_norm_add_norm(s, add->out, nrm->out, wo, n2 ? n2->out : NULL, wx, wdt, nrm->n, nrm->dim,
                    nrm->eps);
    cuda_op_end(cuda_st(b), F_RMSNORM,
                (n2 ? 20.0 : 16.0) * cnt + weight_bytes(&nrm->w) + (n2 ? weight_bytes(&n2->w) : 0));
    bt->done[i] = bt->done[j] = 1;
    if (n2) bt->done[k] = 1;
    return 1;
}

/* ---- 3. head norms, RoPE and KV writes of q, k, v ---------------------------------------- */

typedef struct {
    int norm, rope, kvw; /* op indices (-1: none) */
    int heads;           /* 0: not known yet */
} part_ops;

static int try_norm_parts(backend *b, batch *bt, int i) {
    const qop *first = &bt->q[i];
    const int D = first->dim;
    if (first->kind != Q_RMSNORM || first->out != first->a || D < 2 || D % 2 || D / 2 > 1024)
        return 0;
    part_ops pt[K_NRS_PARTS];
    int np = 0, n_ops = 0, pos0 = 0, have_pos = 0, wdt = -1;
    span used[2 * K_NRS_PARTS]; /* the parts' tensors and rings: pairwise disjoint */
    int n_used = 0;
    for (int j = i; j < bt->nq; j = next_live(bt, j)) {
        const qop *op = &bt->q[j];
        int fit = 0;
        if (op->kind == Q_RMSNORM) {
            const span o = out_span(op);
            fit = np < K_NRS_PARTS && op->out == op->a && op->dim == D && op->eps == first->eps &&
                  (!op->w.data || wdt < 0 || (int)op->w.dtype == wdt);
            for (int u = 0; u < n_used && fit; u++)
                fit = !overlap(o, used[u]);
            if (fit) {
                if (op->w.data) wdt = (int)op->w.dtype;
                pt[np++] = (part_ops){j, -1, -1, 0};
                used[n_used++] = o;
            }
        } else if (op->kind == Q_ROPE || op->kind == Q_KV_WRITE) {
            const int rope = op->kind == Q_ROPE;
            const float *buf = rope ? op->out : op->a;
            const int heads = rope ? op->heads : op->dim / D;
            for (int p = 0; p < np && !fit; p++) {
                const qop *nrm = &bt->q[pt[p].norm];
                if (nrm->out != buf) continue;
                fit = pt[p].kvw < 0 && (rope ? pt[p].rope < 0 && op->dim == D : op->dim % D == 0) &&
                      op->n * heads == nrm->n && (!pt[p].heads || pt[p].heads == heads) &&
                      (!have_pos || op->pos0 == pos0);
                if (fit && !rope) {
                    const span c = out_span(op);
                    for (int u = 0; u < n_used && fit; u++)
                        fit = !overlap(c, used[u]);
                    if (fit) used[n_used++] = c;
                }
                if (fit) {
                    pt[p].heads = heads;
                    pos0 = op->pos0;
                    have_pos = 1;
                    if (rope)
                        pt[p].rope = j;
                    else
                        pt[p].kvw = j;
                }
            }
        }
        if (!fit) break;
        n_ops++;
    }
    if (n_ops < 2) return 0;
    k_nrs_part parts[K_NRS_PARTS];
    double bytes = 0;
    for (int p = 0; p < np; p++) {
        const qop *nrm = &bt->q[pt[p].norm];
        const qop *kvw = pt[p].kvw >= 0 ? &bt->q[pt[p].kvw] : NULL;
        parts[p] = (k_nrs_part){
            .x = nrm->out,
            .w = nrm->w.data ? cuda_weight(cuda_st(b), &nrm->w) : NULL,
            .inv_freq = pt[p].rope >= 0 ? bt->q[pt[p].rope].inv_freq : NULL,
            .cache = kvw ? kvw->out : NULL,
            .n_vec = nrm->n,
            .heads = pt[p].heads ? pt[p].heads : 1,
            .len = kvw ? kvw->len : 1,
        };
        bytes += (kvw ? 12.0 : 8.0) * nrm->n * D + weight_bytes(&nrm->w) +
                 (pt[p].rope >= 0 ? 2.0 * D : 0.0);
        bt->done[pt[p].norm] = 1;
        if (pt[p].rope >= 0) bt->done[pt[p].rope] = 1;
        if (kvw) bt->done[pt[p].kvw] = 1;
    }
    int p0 = 0;
    const int *dp = have_pos ? cuda_pos(cuda_st(b), pos0, &p0) : NULL;
    cudaStream_t s = cuda_op_begin(cuda_st(b));
    k_norm_rope_store(s, parts, np, wdt < 0 ? KDT_F32 : wdt, D, first->eps, dp, p0);
    cuda_op_end(cuda_st(b), F_NORM_ROPE_KV, bytes);
    return 1;
}

/* ---- 1b. products on cuBLAS reading the same x: one split of x ----------------------------- */

/* Does product y read op x's input and take the same split of it on cuBLAS? */
static int same_split(backend *b, const qop *x, const qop *y) {
    return y->kind == Q_MATMUL && y->a == x->a && y->n == x->n && y->w.cols == x->w.cols &&
           cuda_matmul_split_kind(cuda_st(b), &y->w, y->n) ==
               cuda_matmul_split_kind(cuda_st(b), &x->w, x->n);
}

/* Products of a prefill chunk that read the same x and take the same split of it (q, k and v;
 * gate and up), hoisted up to the first and run back to back, each after the first on the
 * split of x that the first made (backend_cuda_core.c). Their products and sums are those of
 * the products alone, so the bits are too. */
static int try_shared_split(backend *b, batch *bt, int i) {
    cuda_state *st = cuda_st(b);
    const qop *q0 = &bt->q[i];
    /* (a product that writes its own x is left to run alone) */
    if (q0->kind != Q_MATMUL || cuda_matmul_split_kind(st, &q0->w, q0->n) < 0 ||
        overlap(out_span(q0), span_of(q0->a, (size_t)q0->n * q0->w.cols)))
        return 0;
    int mem[QCAP];
    const int nm = gather_on_x(b, bt, i, QCAP, same_split, mem);
    if (nm < 2) return 0;
    for (int k = 0; k < nm; k++) {
        const qop *m = &bt->q[mem[k]];
        cuda_matmul_now(st, m->out, &m->w, m->a, m->n, k > 0);
    }
    mark_taken_done(bt);
    return 1;
}

/* ---- the queue ------------------------------------------------------------------------------ */

void cuda_fuse_flush(backend *b) {
    cuda_fuser *f = cuda_st(b)->fuser;
    if (!f || !f->nq) return;
    batch *bt = xmalloc(sizeof *bt);
    memcpy(bt->q, f->q, (size_t)f->nq * sizeof(qop));
    bt->nq = f->nq;
    f->nq = 0; /* what runs below may flush again: nothing is left to run twice */
    memset(bt->done, 0, sizeof bt->done);
    for (int i = 0; i < bt->nq; i++) {
        if (bt->done[i]) continue;
        if (try_shared_split(b, bt, i) || try_mlp(b, bt, i) || try_matvec_group(b, bt, i) ||
            try_norm_add(b, bt, i) || try_norm_parts(b, bt, i))
            continue;
        run_single(b, &bt->q[i]);
        bt->done[i] = 1;
    }
    free(bt);
}

static void enqueue(backend *b, const qop *op) {
    cuda_fuser *f = cuda_st(b)->fuser;
    if (!f->fuse) {
        run_single(b, op);
        return;
    }
    if (f->nq == QCAP) cuda_fuse_flush(b);
    f->q[f->nq++] = *op;
}

static void fz_matmul(backend *b, float *out, const tensor *w, const float *x, int n) {
    CHECK(w && w->data);
    enqueue(b, &(qop){.kind = Q_MATMUL, .w = *w, .out = out, .a = x, .n = n});
}

static void fz_rmsnorm(backend *b, float *out, const float *x, const tensor *w, int n_vec, int dim,
                       float eps) {
    qop op = {.kind = Q_RMSNORM, .out = out, .a = x, .n = n_vec, .dim = dim, .eps = eps};
    if (w) op.w = *w;
    enqueue(b, &op);
}

static void fz_rope(backend *b, float *x, int n_tok, int n_heads, int head_dim, int pos0,
                    const float *inv_freq) {
    enqueue(b, &(qop){.kind = Q_ROPE,
                      .out = x,
                      .n = n_tok,
                      .heads = n_heads,
                      .dim = head_dim,
                      .pos0 = pos0,
                      .inv_freq = inv_freq});
}

static void fz_kv_write(backend *b, float *cache, const float *src, int n_tok, int kv_dim, int pos0,
                        int len) {
    enqueue(b, &(qop){.kind = Q_KV_WRITE,
                      .out = cache,
                      .a = src,
                      .n = n_tok,
                      .dim = kv_dim,
                      .pos0 = pos0,
                      .len = len});
}

static void fz_gelu_mul(backend *b, float *out, const float *gate, const float *up, int rows,
                        int dim, int up_stride) {
    enqueue(b, &(qop){.kind = Q_GELU_MUL,
                      .out = out,
                      .a = gate,
                      .b = up,
                      .n = rows,
                      .dim = dim,
                      .stride = up_stride});
}

static void fz_add(backend *b, float *out, const float *x, const float *y, size_t n) {
    enqueue(b, &(qop){.kind = Q_ADD, .out = out, .a = x, .b = y, .count = n});
}

void cuda_fuse_install(backend *b) {
    b->matmul = fz_matmul;
    b->rmsnorm = fz_rmsnorm;
    b->rope = fz_rope;
    b->kv_write = fz_kv_write;
    b->gelu_mul = fz_gelu_mul;
    b->add = fz_add;
}
