/* quant.h: weights quantized to int8 / int4 with one bf16 scale per group of input columns.
 *
 * What it is for. Decoding one token reads every weight once, so weight bytes are the time.
 * The knobs WEIGHT_DTYPE (bf16 | int8 | int4; bf16 = as stored, the default), WEIGHT_GROUP
 * (32 | 64 | 128) and HEAD_DTYPE (bf16 | int8 | int4, the lm-head rows kept by the keepset)
 * choose the precision the linear layers (q, k, v, o, gate, up, down) are held in. The
 * quantization runs once, at load, on the host, in plain IEEE fp32 with no reassociation, so
 * the matrix is bit-identical whatever backend then uses it (tools/quantize_checkpoint.py
 * reproduces it bit for bit in numpy, and the checkpoint test checks that). Pre-quantized
 * compressed-tensors checkpoints land in the same struct (ctensors.h).
 *
 * The quantizer (per group of `group` consecutive input columns of one row; b = 4 or 8 bits,
 * Q = 2^(b-1), so values are integers in [-Q, Q-1]):
 *   m  = the value of largest magnitude, keeping its sign (the first one on a tie);
 *   s  = bf16(m / -Q), rounded to nearest even, once; s = +0 when the group is all zeros
 *        (or when m / -Q underflows to zero in bf16);
 *   q  = clamp(rint(x / s), -Q, Q-1), x / s one correctly rounded fp32 division, rint rounding
 *        half to even; q = 0 when s == 0;
 *   dequantized value = q * s.
 * Why this rule:
 *   - The scale is the one of llama.cpp's Q4_0 (quantize_row_q4_0_ref in ggml-quants.c:
 *     d = max / -8, `max` the signed value of largest magnitude), the grid that Gemma's
 *     quantization-aware-trained "q4_0" checkpoints were trained for: the extreme of each
 *     group lands exactly on -Q (exactly: for bf16 weights m / -Q is itself a bf16, so the
 *     scale is exact), and all 2^b levels are used, the extra negative level going to the
 *     side of the extreme. The scale is therefore negative when the extreme is positive;
 *     dequantization is q * s either way, as in compressed-tensors and vLLM.
 *     compressed-tensors' own observer (calculate_qparams: s = absmax / ((q_max - q_min) / 2)
 *     = absmax / 7.5, clamp to [-8, 7], round) puts a positive extreme at 7.5 and clamps it
 *     to 7, so it loses half a step on one side and never uses -8 for a positive extreme.
 *   - Rounding: x / s rounded half to even (torch.round, jnp.round, np.rint: what QAT
 *     fake-quant and compressed-tensors use), not Q4_0's trunc(x * (1/d) + 8.5), which
 *     rounds ties up and goes through a reciprocal (two roundings). With a division and
 *     rint a value exactly on the grid always gets its own level back.
 *   - Values are quantized against the ROUNDED bf16 scale, so q * s is exactly the grid
 *     point chosen; the clamp catches the one-ulp overshoot a rounded scale can cause.
 *   - bf16 scales: published Gemma W4A16 checkpoints store bf16 scales, so one GPU kernel
 *     reads both ours and theirs. int8 uses the same per-group layout and the same
 *     WEIGHT_GROUP (one code path; the tuner can tune the group for int8 too).
 *
 * The layout (what a GPU matrix-vector kernel streams, one row per warp or block):
 *   q       [rows][row_bytes] bytes, row-major, 64-byte aligned. int8: one int8_t per value
 *           (two's complement). int4: two values per byte, column 2j in the low nibble and
 *           2j+1 in the high nibble, each offset-binary (nibble = q + 8, vLLM's uint4b8).
 *           This is the layout kernels/matvec_q.h (k_qmat) reads, so an upload is a copy.
 *           cols is a multiple of group >= 32, so row_bytes (cols or cols / 2) is a multiple
 *           of 16: every row starts 16-byte aligned and is whole 16-byte loads (that kernel
 *           also wants cols a multiple of 128, which every Gemma 4 linear layer has). For
 *           int4 these bytes are exactly the little-endian bytes of compressed-tensors' int32
 *           `weight_packed` words (pack_to_int32: value i of a word at bits [b*i, b*i+b),
 *           stored + 2^(b-1)); for int8 each byte is that byte XOR 0x80 (uint8b128 -> int8).
 *   scales  [rows][cols / group] bf16 bits, row-major.
 * The product y[t][r] = sum_g s[r][g] * (sum_{c in g} q[r][c] * x[t][c]) runs in fp32.
 */
#ifndef QUANT_H
#define QUANT_H

#include <stddef.h>
#include <stdint.h>

/* WEIGHT_DTYPE / HEAD_DTYPE values. QUANT_BF16 means "as stored": no quant_matrix. */
typedef enum { QUANT_BF16 = 0, QUANT_INT8 = 8, QUANT_INT4 = 4 } quant_dtype;

#define QUANT_ALIGN 64 /* alignment of quant_matrix.q */

typedef struct {
    quant_dtype dtype; /* QUANT_INT8 or QUANT_INT4 */
    int rows;          /* output features ([out, in] as a linear layer stores it) */
    int cols;          /* input features; a multiple of group */
    int group;         /* input columns per scale: 32, 64 or 128 */
    size_t row_bytes;  /* bytes of one row of q: cols (int8) or cols / 2 (int4) */
    uint8_t *q;        /* [rows][row_bytes] int8 or offset-binary int4 pairs (see above), aligned */
    uint16_t *scales;  /* [rows][cols / group] bf16 bits */
} quant_matrix;

/* "bf16", "int8", "int4". */
const char *quant_dtype_name(quant_dtype t);
/* Bits per value: 16, 8, 4. */
int quant_dtype_bits(quant_dtype t);

/* Parse a knob value: "bf16" | "int8" | "int4" (exactly, lower case). knob names the knob in
 * the message ("WEIGHT_DTYPE", "HEAD_DTYPE"). Returns 0, or -1 with err naming the knob, the
 * value and the allowed values. */
int quant_dtype_parse(const char *knob, const char *value, quant_dtype *out, char *err,
                      size_t errlen);

/* Parse a WEIGHT_GROUP value: "32" | "64" | "128". Returns 0 or -1 with err as above. */
int quant_group_parse(const char *knob, const char *value, int *out, char *err, size_t errlen);

/* Whether group is one of 32, 64, 128. */
int quant_group_valid(int group);

/* Check that a [rows, cols] matrix can be held as dtype (int8 / int4) with this group: the
 * group is valid, rows and cols positive, cols a multiple of group. name (a tensor name, or
 * NULL) starts the message. Returns 0 or -1 with err. */
int quant_check_shape(const char *name, quant_dtype dtype, int rows, int cols, int group, char *err,
                      size_t errlen);

/* Bytes a [rows, cols] matrix occupies as dtype with this group: values plus scales for int8 /
 * int4, rows * cols * 2 for bf16 (group ignored). */
size_t quant_bytes(quant_dtype dtype, int rows, int cols, int group);

/* Allocate an empty (zeroed) matrix after quant_check_shape. Returns 0 or -1 with err. */
int quant_alloc(quant_matrix *m, const char *name, quant_dtype dtype, int rows, int cols, int group,
                char *err, size_t errlen);
/* Free what quant_alloc / quant_from_* allocated; m is zeroed. Safe on a zeroed m. */
void quant_free(quant_matrix *m);

/* Quantize w[rows][cols] (bf16 bits / fp32) into a freshly allocated m by the rule above.
 * Every value must be finite. OpenMP over rows (each row is independent; the result does not
 * depend on the thread count). name (or NULL) starts messages. Returns 0, or -1 with err
 * (bad shape or group, a non-finite weight: its row and column) and m zeroed. */
int quant_from_bf16(quant_matrix *m, const char *name, const uint16_t *w, int rows, int cols,
                    quant_dtype dtype, int group, char *err, size_t errlen);
int quant_from_f32(quant_matrix *m, const char *name, const float *w, int rows, int cols,
                   quant_dtype dtype, int group, char *err, size_t errlen);

/* Quantize one group of n values into signed integers q[n] and return the scale's bf16 bits
 * (the rule above; bits = 4 or 8). The values must be finite. */
uint16_t quant_group_f32(const float *x, int n, int bits, int8_t *q);

/* The signed value at (r, c) and the scale of group g of row r as fp32. */
int quant_value(const quant_matrix *m, int r, int c);
float quant_scale(const quant_matrix *m, int r, int g);

/* int4 only: an exponent e such that every dequantized value q * s of m, times 2^e, is an fp16
 * exactly, so that a GPU can multiply the matrix as one fp16 matrix (q * s has at most 11
 * significant bits: |q| <= 8 and a bf16 scale has 8). It exists when the scales' binades fit
 * fp16's: the largest |q * s| 2^e below 2^16 (fp16's largest finite value, 65504, is the
 * largest 11-bit value below it) and the lowest set bit of every scale times 2^e at or above
 * 2^-24 (fp16's smallest subnormal). e is the largest such exponent (0 when every scale is
 * zero). Returns 0 with *e, or -1 for int8, a non-finite scale, or scales spread over more
 * binades than fp16 spans (about 29 apart). */
int quant_f16_exponent(const quant_matrix *m, int *e);

/* Row r dequantized into out[cols] (q * s, exact in fp32). */
void quant_dequant_row(const quant_matrix *m, int r, float *out);

/* Row r's integer values as fp32 (exact) into out[cols]. */
void quant_row_values(const quant_matrix *m, int r, float *out);

/* m transposed, for a kernel that streams columns (kernels/mlp.cu's down): qt[c] is column c of
 * m as a row of rows values packed as this header packs a row (int8 a byte each; int4 two a
 * byte, row 2j in the low nibble, offset-binary), qt [cols][rows * bits / 8]; st[g][r] =
 * scales[r][g], st [cols / group][rows]. rows must be even for int4. OpenMP over tiles of
 * columns; the result does not depend on the thread count. */
void quant_transpose(const quant_matrix *m, uint8_t *qt, uint16_t *st);

/* The CPU builds of the product (quant_matmul.c): portable C, AVX2+FMA, AVX-512F. */
typedef enum { QUANT_ISA_PORTABLE = 0, QUANT_ISA_AVX2 = 1, QUANT_ISA_AVX512 = 2 } quant_isa;

/* "portable", "avx2", "avx512". */
const char *quant_isa_name(quant_isa isa);
/* Whether this CPU (and this build) runs isa. */
int quant_isa_supported(quant_isa isa);
/* The fastest build this CPU runs, capped by GEMMA_CPU_ISA=portable|avx2|avx512 when set (as
 * the CPU backend's kernels are). */
quant_isa quant_isa_best(void);

/* y[t][r] = sum_c W[r][c] * x[t][c] for t < n: x is [n][cols], y is [n][rows]. Per group the
 * int values are widened to fp32 and dotted with x in fp32, and the group sum is multiplied by
 * its scale. A row's result depends on neither n nor the thread count (each build fixes its
 * own summation order; builds differ from each other and from quant_matmul_ref by rounding).
 * OpenMP over rows with n_threads threads (0: OpenMP's default; small products run on one
 * thread). quant_matmul_isa runs the build isa (portable where this CPU lacks it),
 * quant_matmul the one quant_isa_best names. */
void quant_matmul(const quant_matrix *m, const float *x, int n, float *y, int n_threads);
void quant_matmul_isa(const quant_matrix *m, const float *x, int n, float *y, int n_threads,
                      quant_isa isa);

/* The same product as plain sequential scalar code (the tests' reference for quant_matmul). */
void quant_matmul_ref(const quant_matrix *m, const float *x, int n, float *y);

#endif
