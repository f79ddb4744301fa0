/* cuda_launch.h — the small kernels of the cuda_*.cu files, as C-callable launchers.
 * Each enqueues on `stream` (a cudaStream_t passed as void *) and returns
 * cudaGetLastError() as an int (0 = cudaSuccess); the caller checks it with
 * CU_LAUNCH. Element types: CU_DT_* (float, double, int64, int32, int8, uint8,
 * bool as uint8). Shapes are passed by value in cu_shape (rank <= 8).
 * Semantics are the cpu kernels' (runtime/cpu/ files), named beside each. */
#ifndef OC_CUDA_LAUNCH_H
#define OC_CUDA_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "resize_coord.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CU_MAX_RANK 8

typedef enum cu_dtype {
    CU_DT_F32 = 0,
    CU_DT_F64,
    CU_DT_I64,
    CU_DT_I32,
    CU_DT_I8,
    CU_DT_U8
} cu_dtype;

typedef struct cu_shape {
    int rank;
    int64_t d[CU_MAX_RANK];
} cu_shape;

/* Pooling window (cpu_window's fields), nsp <= 3. */
typedef struct cu_window {
    int nsp;
    int64_t img[3], col[3], kernel[3], stride[3], dilation[3], pad[3], pad_end[3];
    int64_t img_size, col_size, k_size;
    /* 0: planes (n, c) stored whole, one after the other; C: channels-last, cell i of
     * plane p = n C + c at ((n * size + i) * C + c), size the image's or the output's */
    int64_t chan;
} cu_window;

/* The Dropout RNG of runtime/cpu/cpu_rng.c, on the host (for tests: must equal
 * cpu_rng_u64 bit for bit; the device uses the same inline function). */
uint64_t cu_rng_u64_host(uint64_t key, uint64_t index);

/* out (+)= in broadcast to out's shape (cpu_add / cpu_sum). */
/* Y = X transposed: output dim d is input dim perm.d[d] (element size es). */
int cu_transpose(void *stream, int es, const void *x, cu_shape xs, void *y, cu_shape ys,
                 cu_shape perm);
/* Slice: small[o] = big[start + o * step]; scatter (SliceGrad): big[start +
 * o * step] = small[o] (big zeroed by the caller). in is small when scatter. */
int cu_slice(void *stream, int es, const void *in, void *out, cu_shape small, cu_shape big,
             cu_shape start, cu_shape step, int scatter);
/* LayerNormalization over rows of D elements, and its gradient (outputs may be NULL). */
/* Softmax / LogSoftmax (cpu_softmax): outer x inner rows of D at stride inner. */
int cu_softmax(void *stream, const float *x, float *y, int64_t outer, int64_t D, int64_t inner,
               int log);
int cu_softmax_grad(void *stream, const float *dy, const float *y, float *dx, int64_t outer,
                    int64_t D, int64_t inner, int log);
/* FusedAttention's row kernels (cpu_attention.c), over rows [0, rows) of a
 * chunk of batches starting at batch b0: s (rows x S) holds the scores. */
/* The key of a node's random numbers at this step (cpu_rng_key): finished on
 * the device from the step in device memory, so a captured step replays with
 * the current step's draws. seeded: cpu_rng_seeded(seed); hash: the node's. */
typedef struct cu_rng {
    uint64_t seeded, hash;
    const int64_t *step; /* device */
} cu_rng;

typedef struct cu_att_mask {
    const uint8_t *cond; /* NULL: none */
    int mode;            /* 1: fill where cond; 2: fill where not cond */
    int causal;          /* masked exactly where column j > row t (cond not read) */
    int64_t blk;         /* > 0: row t's scores are columns [0, min(S, (t / blk + 1) blk)) alone */
    float fill;
    int rank;                   /* of the scores [b.., T, S] */
    int64_t bdims[CU_MAX_RANK]; /* batch dims */
    int64_t cs[CU_MAX_RANK];    /* the condition's strides broadcast to the scores */
} cu_att_mask;
/* Masks s, then P = exp(s - lse) in place; lse_out non-NULL: the rows'
 * log-sum-exp computed and written (batch b0's first row at lse_out[0]). */
int cu_att_softmax(void *stream, float *s, int64_t rows, int64_t T, int64_t S, int64_t b0,
                   cu_att_mask m, const float *lse_in, float *lse_out);
/* out = P with Dropout (kept / (1 - ratio) by the key's draw of element
 * first + i, else 0); out may be P; P is rows of S (row r of batch r / T's
 * row r % T), blk > 0: row t's first min(S, (t / blk + 1) blk) alone. */
int cu_att_dropout(void *stream, const float *p, float *out, int64_t rows, int64_t T, int64_t S,
                   int64_t blk, cu_rng key, float ratio, int64_t first);
/* FusedAttention by rows (cuda_attention.cu): a thread per query row (forward, dQ) or key
 * column (dK, dV), the scores recomputed, nothing [T, S] stored. Q, K, V the whole tensors
 * at their offsets (qkv: the column thirds); H > 0: seq_first, rows of Q and K wq elements
 * apart, of V wv, of Y and dY wy; else contiguous [nb, rows, d] blocks. kt: K given as
 * Kᵀ [nb, dh, S] (its gradient alike). m.blk is 0; dh and dv at most 64
 * (OP_ATTENTION_ROWS_DMAX), else cudaErrorInvalidValue. */
typedef struct cu_att_rows {
    const float *q, *k, *v;
    int64_t nb, T, S, dh, dv, H, wq, wv, wy;
    int kt;
    float scale, ratio;
    cu_att_mask m;
    cu_rng key;
} cu_att_rows;
/* Y [b.., T, dv] and LSE [b.., T]. */
int cu_att_rows_fwd(void *stream, const cu_att_rows *a, float *y, float *lse);
/* dQ, dK, dV (each may be NULL: not computed) from dY, the forward's Y and LSE; dsum: nb T
 * floats of scratch (rowsum(dY Y)). */
int cu_att_rows_grad(void *stream, const cu_att_rows *a, const float *dy, const float *y,
                     const float *lse, float *dsum, float *dq, float *dk, float *dv);
/* The pointer arrays of a blocked attention GEMM (cublasSgemmBatched), for
 * operand o (0 A, 1 B, 2 C), block i and the chunk's batch b0 + j:
 *   out[(i * 3 + o) * cb + j] = base[o] + (bb / h[o]) s1[o] + (bb % h[o]) s2[o] + i step[o],
 *   bb = b0 + j - first[o] (elements). */
typedef struct cu_att_ptrs {
    const float *base[3];
    int64_t first[3], h[3], s1[3], s2[3], step[3];
} cu_att_ptrs;
int cu_att_ptrs_fill(void *stream, const float **out, int64_t nblk, int64_t cb, int64_t b0,
                     cu_att_ptrs p);
/* ds (holding dY Vᵀ) = P (ds with the dropout mask - rowsum(dY Y)), 0 where masked;
 * rows = chunk batches x T from batch b0; dy and y the whole tensors, [b.., T, dv] (H 0)
 * or [N, T, H, dv] (seq_first). */
int cu_att_ds(void *stream, float *ds, const float *p, const float *dy, const float *y,
              int64_t rows, int64_t T, int64_t S, int64_t dv, int64_t H, int64_t b0, cu_att_mask m,
              cu_rng key, float ratio);
/* Parts of a channels-last reduction over rows of C channels (a thread per
 * (part, channel)): about CU_NHWC_THREADS threads, enough to fill a GPU with
 * loads in flight, and at least 64 rows a part — so the parts a channel's
 * total adds up stay few (at most CU_NHWC_THREADS / C) however many rows. */
#define CU_NHWC_THREADS 262144
/* OC_NHWC_THREADS overrides it (at least 1024), for timing other part counts on a GPU
 * (tools/gpu-check-headline.sh bn_sweep); the sums' order follows, so the bits do too. */
static inline int64_t cu_nhwc_threads(void) {
    static int64_t threads = 0;
    if (!threads) {
        const char *e = getenv("OC_NHWC_THREADS");
        long long v = e ? atoll(e) : 0;
        threads = v >= 1024 ? v : CU_NHWC_THREADS;
    }
    return threads;
}
static inline int64_t cu_channel_parts(int64_t rows, int64_t C) {
    int64_t t = cu_nhwc_threads(), p = C > 0 ? (t + C - 1) / C : 1, most = (rows + 63) / 64;
    if (p > most) p = most;
    return p < 1 ? 1 : p;
}
int cu_layer_norm(void *stream, const float *x, const float *s, const float *b, float *y, int64_t R,
                  int64_t D, float eps);
/* stats: cu_layer_norm_grad_doubles(R, D) doubles of scratch: each row's mean and 1/std,
 * then dScale's and dBias's sums per (part of the rows, column) (cu_channel_parts),
 * added per column in a fixed order (deterministic). */
static inline int64_t cu_layer_norm_grad_doubles(int64_t R, int64_t D) {
    return 2 * R + 2 * cu_channel_parts(R, D) * D;
}
int cu_layer_norm_grad(void *stream, const float *dy, const float *x, const float *s, float *dx,
                       float *ds, float *db, double *stats, int64_t R, int64_t D, float eps);
/* BatchNormalizationGrad with frozen statistics: dx = dy * scale / sqrt(var +
 * eps); ds = sum dy * xhat, db = sum dy per channel (each output may be NULL). */
int cu_bn_frozen_grad(void *stream, const float *dy, const float *x, const float *scale,
                      const float *mean, const float *var, float eps, float *dx, float *ds,
                      float *db, int64_t N, int64_t C, int64_t S);
/* CumSum (runtime/cum_sum.h) of x along an axis of len elements, inner after it: lines =
 * numel / len, one thread a line. */
int cu_cum_sum(void *stream, const float *x, float *y, int64_t lines, int64_t len, int64_t inner,
               bool exclusive, bool reverse);
/* GridSample (runtime/grid_sample.h) of X [N, C, H, W] at grid [N, P, 2]: Y [N, C, P]. */
typedef struct cu_gs_geo {
    int64_t N, C, H, W, P; /* P: the points a sample, (Do *) Ho * Wo */
    int mode, padding;
    bool align;
    int64_t D; /* a volume's depth (X [N, C, D, H, W], grid [.., 3]); 0: X [N, C, H, W] */
} cu_gs_geo;
int cu_grid_sample(void *stream, const float *x, const float *grid, float *y, cu_gs_geo g);
/* input 0: dX (deterministic: a counting sort of the points by the cell of their first tap,
 * a volume's too, bicubic's of each point's 16 taps by pixel, in ws, whose int64s
 * cu_grid_sample_scratch counts); 1: dGrid (ws unused). */
int cu_grid_sample_grad(void *stream, int input, const float *dy, const float *x, const float *grid,
                        float *out, cu_gs_geo g, int64_t *ws);
int64_t cu_grid_sample_scratch(cu_gs_geo g);
/* dx (outer, extent, inner) = sum over j with idx[j] == e of dy (outer, ni, inner), in
 * ascending j (the cpu kernel's order), no j whose index is skip (-1: none); ws:
 * 2 (extent + 1) + ni int64 of scratch. */
int cu_gather_grad(void *stream, const float *dy, const void *idx, int idx64, float *dx,
                   int64_t outer, int64_t extent, int64_t ni, int64_t inner, int64_t skip,
                   int64_t *ws);
/* Resize (grad 0: in is X, out Y) or ResizeGrad (grad 1: in is dY, out dX) over
 * nsp spatial dims of input extents n and output extents m (runtime/resize_coord.h). */
int cu_resize(void *stream, const float *in, float *out, int grad, int nsp, const oc_resize_kind *k,
              const int64_t *n, const int64_t *m, const double *scale, int64_t planes);
/* y = x ? 1 : 0 (bool -> float). */
/* y = x cast (runtime/cast_rule.h's casts of masks and indices): from CU_DT_U8 (bool),
 * _I32, _I64 to any of those or _F32; from _F32 to _U8 (bool: nonzero). */
int cu_int_convert(void *stream, cu_dtype from, const void *x, cu_dtype to, void *y, int64_t n);
/* y = x between float types (kinds: 0 float32, 1 float16, 2 bfloat16), rounded
 * to nearest even (ir/half.h); x and y do not overlap. */
int cu_float_convert(void *stream, const void *x, int kx, void *y, int ky, int64_t n);
/* y (N, C, S) += b[c], in float, then with relu max(., 0) (oc_relu), rounded
 * once to y's kind (a convolution's bias; ConvRelu's with its Relu): one pass,
 * 4 elements a thread where the layout allows (S 1: rows of C, channels-last). */
int cu_channel_bias(void *stream, void *y, int ky, const void *b, int kb, int64_t N, int64_t C,
                    int64_t S, int relu);
/* out[c] = sum of x (N, C, S) over N and S, rounded once to out's kind (a half
 * conv's bias gradient): per-(n, c) sums in double into ws (N C doubles), then
 * over n in order (deterministic). */
int cu_channel_sum(void *stream, const void *x, int kx, int64_t N, int64_t C, int64_t S, double *ws,
                   void *out, int kout);
/* Channels-last: out[c] = sum of x (rows, C) over the rows, rounded once to
 * out's kind (a channels-last conv's bias gradient): per-(part, c) sums in
 * double into ws (cu_channel_parts(rows, C) C doubles), the rows of a part in
 * order, then the parts in a fixed order (deterministic). */
int cu_channel_sum_nhwc(void *stream, const void *x, int kx, int64_t rows, int64_t C, double *ws,
                        void *out, int kout);
/* ReluGradBias: dz = dy where y > 0 (oc_relu_grad), all of kind k (N, C, S), and
 * db[c] (kind kb) its sum over N and S — per-(n, c) (nhwc: per-(part, c),
 * cu_channel_parts) sums in double into ws (N C or P C doubles), then per
 * channel in a fixed order (deterministic). */
int cu_relu_grad_bias(void *stream, int k, const void *dy, const void *y, void *dz, void *db,
                      int kb, int64_t N, int64_t C, int64_t S, int nhwc, double *ws);
/* y = x between (N, S, C) and (N, C, S) (to_nchw: from the first), and
 * between float kinds as cu_float_convert; x and y do not overlap. */
int cu_nhwc_convert(void *stream, const void *x, int kx, void *y, int ky, int64_t N, int64_t C,
                    int64_t S, int to_nchw);
/* y[i] = low + (high - low) * uniform(key, i) (the Dropout generator). */
int cu_random_uniform(void *stream, float *y, int64_t n, cu_rng key, float low, float high);
/* Where / WhereGrad (cpu_where, cpu_where_grad): cond broadcast. */
int cu_where(void *stream, const uint8_t *c, cu_shape cs, const float *x, cu_shape xs,
             const float *y, cu_shape ys, float *out, cu_shape os);
/* Where into a half out of kind ko (1 float16, 2 bfloat16): x and y of kind ko or 0 (float32,
 * a fill scalar), the selected value rounded once. */
/* Where of int64 (es 8) or int32 (es 4) X and Y. */
int cu_where_int(void *stream, int es, const uint8_t *c, cu_shape cs, const void *x, cu_shape xs,
                 const void *y, cu_shape ys, void *out, cu_shape os);
int cu_where_half(void *stream, const uint8_t *c, cu_shape cs, int kx, const void *x, cu_shape xs,
                  int ky, const void *y, cu_shape ys, int ko, void *out, cu_shape os);
/* dy, dx of element kind `kind` (0 float32, 1 float16, 2 bfloat16). */
int cu_where_grad(void *stream, int kind, const void *dy, const uint8_t *c, cu_shape cs,
                  cu_shape os, void *dx, int select);
/* y = the predicate `code` (predicate.h) of a and b broadcast, both of type dt (CU_DT_F32,
 * _I64, _I32, _U8 for bool); a unary code reads a (float32; Not: bool) and ignores b. */
int cu_predicate(void *stream, int code, cu_dtype dt, const void *a, cu_shape as, const void *b,
                 cu_shape bs, uint8_t *y, cu_shape ys, int detect_pos, int detect_neg);
int cu_bcast_accumulate(void *stream, cu_dtype dt, const void *in, cu_shape in_shape, void *out,
                        cu_shape out_shape, int first);
/* out (op)= in broadcast to out's shape. MAX, MIN: a NaN wins; FMOD: C's fmod; PRELU: out the
 * input, in the slope; IMOD: integers' floored Mod (integers' DIV, FMOD, IMOD:
 * oc_int_div_mod) (FMOD, PRELU, IMOD: cu_binary only). */
enum {
    CU_BC_ASSIGN,
    CU_BC_ADD,
    CU_BC_SUB,
    CU_BC_MUL,
    CU_BC_DIV,
    CU_BC_MAX,
    CU_BC_MIN,
    CU_BC_FMOD,
    CU_BC_POW,
    CU_BC_PRELU,
    CU_BC_IMOD
};
int cu_bcast_apply(void *stream, cu_dtype dt, const void *in, cu_shape in_shape, void *out,
                   cu_shape out_shape, int op);
/* dx = scale * dy broadcast; kept: dy's shape in dx's rank (BroadcastTo). */
int cu_broadcast_to(void *stream, const float *dy, cu_shape kept, float *dx, cu_shape dx_shape,
                    float scale);
/* out = a + b, n elements of the same shape, one pass (the residual Add; out may be a or b).
 * The same values as cu_bcast_accumulate of a then b. */
int cu_add2(void *stream, cu_dtype dt, const void *a, const void *b, void *out, int64_t n);
/* dx = the gradient of Max's / Min's (kind CU_BG_MIN_MAX), PRelu's (CU_BG_PRELU) or
 * PowTensor's (CU_BG_POW) input `input` in dy's shape (pointwise.h's oc_min_max_grad,
 * oc_prelu_grad, oc_pow_grad), a and b broadcast (float). */
enum { CU_BG_MIN_MAX, CU_BG_PRELU, CU_BG_POW };
int cu_binary_grad(void *stream, const float *dy, cu_shape ys, const float *a, cu_shape as,
                   const float *b, cu_shape bs, float *dx, int kind, int max, int input);
/* y = a (op) b (CU_BC_ADD .. PRELU), both broadcast into y's shape, one pass (float, double):
 * the values of cu_bcast_apply of a (ASSIGN) then b (op). */
int cu_binary(void *stream, cu_dtype dt, const void *a, cu_shape as, const void *b, cu_shape bs,
              void *y, cu_shape ys, int op);
/* ReduceSumTo's shape, its unit dims dropped and neighbouring dims of one kind merged:
 * CU_SUM_TO_COLS (R, C) -> (C): rows summed (a bias gradient after a GEMM);
 * CU_SUM_TO_MID (N, C, S) -> (C), N or S possibly 1 (a conv's bias gradient; a row's tail);
 * CU_SUM_TO_ANY: another pattern (one thread per dX element). */
enum { CU_SUM_TO_ANY, CU_SUM_TO_COLS, CU_SUM_TO_MID };
typedef struct cu_sum_to {
    int kind;
    int64_t a, b, c; /* COLS: R, C; MID: N, C, S */
} cu_sum_to;
static inline cu_sum_to cu_sum_to_of(cu_shape ys, cu_shape xs) {
    int64_t g[CU_MAX_RANK];
    int red[CU_MAX_RANK], n = 0;
    for (int d = 0; d < ys.rank; d++) {
        if (ys.d[d] == 1) continue;
        int j = d - (ys.rank - xs.rank), r = j < 0 || xs.d[j] == 1;
        if (n > 0 && red[n - 1] == r) g[n - 1] *= ys.d[d];
        else g[n] = ys.d[d], red[n++] = r;
    }
    if (n == 1 && red[0]) return (cu_sum_to){CU_SUM_TO_COLS, g[0], 1, 0};
    if (n == 2 && red[0]) return (cu_sum_to){CU_SUM_TO_COLS, g[0], g[1], 0};
    if (n == 2) return (cu_sum_to){CU_SUM_TO_MID, 1, g[0], g[1]};
    if (n == 3 && red[0]) return (cu_sum_to){CU_SUM_TO_MID, g[0], g[1], g[2]};
    return (cu_sum_to){CU_SUM_TO_ANY, 0, 0, 0};
}
/* the doubles cu_reduce_sum_to needs in ws */
static inline int64_t cu_sum_to_scratch(cu_shape ys, cu_shape xs) {
    cu_sum_to k = cu_sum_to_of(ys, xs);
    return k.kind == CU_SUM_TO_COLS  ? cu_channel_parts(k.a, k.b) * k.b
           : k.kind == CU_SUM_TO_MID ? k.a * k.b
                                     : 0;
}
/* dX = scale * sum of dY over broadcast dims (cpu_reduce_sum_to: double sums, rounded once);
 * dY and dX of one kind (0 float, 1 fp16, 2 bf16). The patterns of cu_sum_to_of add partial
 * sums in ws (cu_sum_to_scratch doubles) in a fixed order (deterministic); others one thread
 * per dX element in dY order. */
int cu_reduce_sum_to(void *stream, int kind, const void *dy, cu_shape dy_shape, void *dx,
                     cu_shape dx_shape, float scale, double *ws);
/* Clip with bounds from device scalars (lo_p/hi_p, may be NULL) or values. */
int cu_clip(void *stream, cu_dtype dt, const void *x, void *y, int64_t n, const void *lo_p,
            const void *hi_p, int has_lo_attr, double lo_attr, int has_hi_attr, double hi_attr);
/* dX = dY where lo < X < hi (float; bounds as in cu_clip, read as float). */
int cu_clip_grad(void *stream, const float *dy, const float *x, float *dx, int64_t n,
                 const void *lo_p, cu_dtype lo_dt, const void *hi_p, cu_dtype hi_dt,
                 int has_lo_attr, double lo_attr, int has_hi_attr, double hi_attr);
/* The pointwise op of kind op (runtime/pointwise.h): y = f(x), and its
 * gradient dx = g(dy, s); 16-byte accesses when aligned. ek: the element kind
 * of every tensor (0 float32, 1 float16, 2 bfloat16: read widened, computed in
 * float32, stored rounded once). cudaErrorInvalidValue for a kind with no
 * expression there. */
int cu_pointwise(void *stream, int op, int ek, const void *x, void *y, int64_t n, float p0,
                 float p1);
/* dy2 (NULL: none): a second partial of the gradient, dy + dy2 taken for dy. */
int cu_pointwise_grad(void *stream, int op, int ek, const void *dy, const void *dy2, const void *s,
                      void *dx, int64_t n, float p0, float p1);
/* out = a + b elementwise, float16 (kind 1) or bfloat16 (2), summed in float32. */
int cu_add2_half(void *stream, int kind, const void *a, const void *b, void *out, int64_t n);
/* The operands of cu_sum_half, passed by value. */
#define CU_SUM_MAX 8
typedef struct cu_sum_in {
    int n;
    const void *p[CU_SUM_MAX];
    cu_shape shape[CU_SUM_MAX];
    int kind[CU_SUM_MAX]; /* each the output's kind or 0 (float32) */
} cu_sum_in;
/* y = in_0 + in_1 + ... broadcast into a half y of kind ky, summed in float32
 * in input order and rounded once (Sum of more than two inputs). */
int cu_sum_half(void *stream, cu_sum_in in, int ky, void *y, cu_shape ys);
/* y = a (op) b broadcast (CU_BC_ADD, SUB, MUL, DIV) into a half y of kind ky (1 float16, 2
 * bfloat16); each operand of kind ky or 0 (float32, a plan-time scalar): computed in float32,
 * rounded once. cudaErrorInvalidValue for another kind. */
int cu_binary_half(void *stream, int ka, const void *a, cu_shape as, int kb, const void *b,
                   cu_shape bs, int ky, void *y, cu_shape ys, int op);
/* Dropout: training with ratio in [0, 1) (checked at load), else Y = X. */
/* x, y / dy, dx of element kind `kind` (0 float32, 1 float16, 2 bfloat16). */
int cu_dropout(void *stream, int kind, const void *x, void *y, uint8_t *mask, int64_t n, cu_rng key,
               float ratio, int train);
int cu_dropout_grad(void *stream, int kind, const void *dy, const uint8_t *mask, void *dx,
                    int64_t n, float scale);
/* Pad / PadGrad: out (od) from in (id), out coord o reads in coord o - begin
 * (mode 0 constant, 1 reflect, 2 edge), fill of es bytes otherwise. */
int cu_pad(void *stream, int es, cu_shape od, cu_shape id, const int64_t *begin, int mode,
           const void *in, void *out, uint64_t fill);
/* Reflect / edge Pad's gradient: dx (id) from dy (od), both stored as kind (0 float32,
 * 1 float16, 2 bfloat16), begin = the forward's begin pads; each element the sum in float32
 * of dy at every index that read it (pad_coord.h), rounded once when stored. */
int cu_pad_grad_sum(void *stream, cu_shape od, cu_shape id, const int64_t *begin, int mode,
                    const void *dy, void *dx, int kind);
/* Strided row copy (Concat / ConcatGrad): rows of `chunk` bytes. */
int cu_copy_rows(void *stream, void *dst, int64_t dst_pitch, const void *src, int64_t src_pitch,
                 int64_t chunk, int64_t rows);
/* MaxPool, AveragePool, GlobalAveragePool and their gradients: x, y, dy, dx of element
 * kind `kind` (0 float32, 1 float16, 2 bfloat16: read widened, sums in
 * float32 / double, stored rounded once). */
int cu_max_pool(void *stream, int kind, const void *x, void *y, int64_t *indices, int64_t planes,
                cu_window w, int storage_col_major);
/* MaxPoolGrad: the gradient goes to each window's first maximum (cpu_pool.c's
 * choice). arg (planes * col_size int32, may be NULL): scratch for the windows'
 * argmax, found once in a first pass; NULL recomputes it per covered cell. */
int cu_max_pool_grad(void *stream, int kind, const void *dy, const void *x, void *dx,
                     int64_t planes, cu_window w, int32_t *arg);
int cu_average_pool(void *stream, int kind, const void *x, void *y, int64_t planes, cu_window w,
                    int include_pad);
int cu_average_pool_grad(void *stream, int kind, const void *dy, void *dx, int64_t planes,
                         cu_window w, int include_pad);
/* GlobalAveragePool over planes of S cells; chan as cu_window's (y (N, C, 1..) is the
 * same bytes in either layout). */
int cu_global_average_pool(void *stream, int kind, const void *x, void *y, int64_t planes,
                           int64_t S, int64_t chan);
int cu_global_average_pool_grad(void *stream, int kind, const void *dy, void *dx, int64_t planes,
                                int64_t S, int64_t chan);
/* SoftmaxCrossEntropyLoss (cpu_loss.c); reduction 0 mean, 1 sum, 2 none;
 * per-row losses in ws (N doubles). Out-of-range labels give NaN. */
int cu_sce(void *stream, const float *s, const void *labels, int labels64, int64_t N, int64_t C,
           int has_ignore, int64_t ignore, int reduction, float *loss, float *log_prob, double *ws);
/* ws: 1 double (the count); scale: the loss scale (GradScaler) or NULL. */
int cu_sce_grad(void *stream, const float *lp, const void *labels, int labels64, int64_t N,
                int64_t C, int has_ignore, int64_t ignore, int reduction, float *d, double *ws,
                const float *scale);
/* The optimizer ops (cpu_update.c); scale: ClipGradNorm's or GradScaler's
 * output or NULL; a scale of 0 skips the step (outputs = inputs). */
/* One parameter of an update (SGDMomentum: w, dw, m -> wo, mo; AdamW: and v -> vo,
 * with loss scaling its step count -> count_out). */
typedef struct cu_update_member {
    const float *w, *dw, *m, *v, *count;
    float *wo, *mo, *vo, *count_out;
    int64_t n;
} cu_update_member;
/* The k members' updates as few launches (CU_UPDATE_LAUNCH members each; multi-tensor
 * apply), every element's arithmetic the same whatever k: a grouped update gives the bits
 * of the per-parameter ones. scale: the ClipGradNorm / GradScaler factor, or NULL; 0
 * skips the step (outputs = inputs). */
#define CU_UPDATE_LAUNCH 24
int cu_sgd_momentum(void *stream, const cu_update_member *mem, int k, const float *scale, float lr,
                    float mom, float wd);
/* AdamW's bias corrections from the step in device memory (step + 1 updates made), or
 * from the member's own count (count + 1; count_out = count + 1 unless skipped). */
int cu_adamw(void *stream, const cu_update_member *mem, int k, const float *scale, float b1,
             float b2, float eps, float decay, float lr, const int64_t *step);
/* ws[0] = (first ? 0 : ws[0]) + sum g^2, in a fixed order; ws holds
 * 1 + CU_SUMSQ_SLOTS doubles (the partial sums). */
#define CU_SUMSQ_SLOTS 4096
int cu_sumsq(void *stream, const float *g, int64_t n, double *ws, int first);
/* *scale = min(1, max_norm / (sqrt(*acc) + 1e-6)); with pre (GradScaler's
 * coefficient p): p * min(1, max_norm / (sqrt(*acc) p + 1e-6)), 0 when p is 0. */
int cu_clip_scale(void *stream, const double *acc, float *scale, float max_norm, const float *pre);
/* GradScaler (cpu_grad_scaler) from the sum of squares *acc (cu_sumsq). */
int cu_grad_scaler(void *stream, const double *acc, const float *s_in, const float *t_in,
                   float *coef, float *s_out, float *t_out, float growth, float backoff,
                   float interval);
/* p[0..n) = v. */
int cu_fill(void *stream, float *p, int64_t n, float v);
/* Y[i, j] = beta * C broadcast (strides s0, s1), the Gemm bias; C and Y of one
 * kind (0 float32, 1 float16, 2 bfloat16). */
int cu_gemm_bias(void *stream, const void *c, int kind, int64_t s0, int64_t s1, float beta, void *y,
                 int64_t M, int64_t N);
/* Y (rows, N) = b (N) in every row, both of kind `kind` (Linear's bias). */
int cu_rows_fill(void *stream, const void *b, int kind, void *y, int64_t rows, int64_t N);
/* saved_var = 1 / inv_std^2 - eps (cuDNN's saved inverse std to ONNX's variance). */
int cu_invstd_to_var(void *stream, float *v, int64_t n, float eps);
/* BatchNormRelu and its gradient (cpu_norm.c's numerics): channel c's N images
 * reduced in P parts of whole images (cuda_norm_act.c picks P: about 4096
 * elements each), a warp each, in double; the parts summed in order per
 * channel (deterministic). nhwc: x (and r, y, dy, dx) stored (N, S, C) — then
 * the P parts are ranges of the N S rows, a thread per (part, channel). ws:
 * 4 C + 2 C P doubles. */
/* y = relu(BN(x) [+ r]) (relu 0: y = BN(x), BatchNormalization alone); train:
 * batch statistics, running ones updated into om / ov (may be NULL, may be
 * rm / rv); else the running statistics rm, rv. x, r, y of one kind (0
 * float32, 1 float16, 2 bfloat16: read widened, y rounded once); scale, bias
 * and the statistics float32. keep, keepf (may be NULL): where the batch
 * statistics are also written, as (mean, 1 / sqrt(var + eps)) per channel in
 * double and as mean[C], 1 / sqrt(var + eps)[C] in float (cuda_bn_stash.c). */
int cu_bn_relu(void *stream, int kind, int relu, const void *x, const void *r, const float *scale,
               const float *bias, const float *rm, const float *rv, float momentum, float eps,
               int train, float *om, float *ov, void *y, int64_t N, int64_t C, int64_t S, int nhwc,
               int64_t P, double *ws, double *keep, float *keepf);
/* BatchNormalization's saved_mean / saved_var (opset <= 13: the batch mean and
 * biased variance) from the statistics cu_bn_relu left at the front of ws. */
int cu_bn_saved(void *stream, const double *stats, int64_t C, float eps, float *sm, float *sv);
/* With dz = dy * (BN(x) > 0) (relu 1: BN with scale and bias, the forward's
 * arithmetic, so the mask is y > 0 exactly; relu 0: dz = dy, bias unused; dz
 * never stored): dx, ds = sum dz xhat, db = sum dz (each may be NULL); train:
 * batch statistics from x (saved non-NULL: those, as cu_bn_relu's keep wrote
 * them, and x is not read for them), else the running rm, rv. dy, x, dx of
 * one kind (as cu_bn_relu); scale, bias, ds, db float32. */
int cu_bn_relu_grad(void *stream, int kind, int relu, const void *dy, const void *x,
                    const float *scale, const float *bias, const float *rm, const float *rv,
                    float eps, int train, void *dx, float *ds, float *db, int64_t N, int64_t C,
                    int64_t S, int nhwc, int64_t P, double *ws, const double *saved);
/* ScatterND's slabs of `slab` elements of es bytes: index row r (dims.rank
 * coordinates into dims, negative from the end; int64 or int32) names a slab of
 * `big`. gather 0: slab r of `small` (NULL: zeros) is written there; gather 1:
 * that slab of big is written to slab r of small. A row outside dims writes
 * nothing (gathers zeros). owner (NULL, or one unsigned a slab of big: indices
 * computed at run time may repeat): only the last row naming a slab writes it. */
int cu_scatter_nd(void *stream, int es, const void *idx, int idx64, int64_t rows, cu_shape dims,
                  int64_t slab, void *small, void *big, int gather, unsigned *owner);
/* Gather along axis: out (outer, ni, inner) from in (outer, extent, inner); bad index: 0. */
int cu_gather(void *stream, int es, const void *in, const void *idx, int idx64, void *out,
              int64_t outer, int64_t extent, int64_t ni, int64_t inner);
/* SegmentMax: y (n, inner) the max of rows [bound[i], bound[i + 1]) of x (len, inner), 0
 * for an empty bag; arg (NULL: none) its row, the first of equal ones (a NaN wins), -1 when
 * empty. Bounds outside [0, len] or descending are clamped (the cpu kernel refuses them). */
int cu_segment_max(void *stream, const float *x, const int64_t *bound, float *y, int64_t *arg,
                   int64_t n, int64_t len, int64_t inner);
/* SegmentMaxGrad: dx (len, inner) zeros, then dy (n, inner) at row arg (-1 or outside: none). */
int cu_segment_max_grad(void *stream, const float *dy, const int64_t *arg, float *dx, int64_t n,
                        int64_t len, int64_t inner);
/* ElementOffsets: out[o] = the offset in data (dims dd) of index o's element (indices id,
 * int64 when idx64, else int32) along the axis; INT64_MAX for one outside the axis. */
int cu_element_offsets(void *stream, const void *idx, int idx64, cu_shape id, cu_shape dd, int axis,
                       int64_t *out);
/* TopKOffsets: per line (outer x inner lines of len along the axis) the indices and flat
 * offsets of its k first elements in topk_order.h's order (how: OC_TOPK_*), [outer, k,
 * inner] each. */
int cu_top_k_offsets(void *stream, const float *x, int64_t outer, int64_t len, int64_t inner,
                     int64_t k, int how, int64_t *idx, int64_t *off);

#ifdef __cplusplus
}
#endif

#endif
