/* op_dft.c — DFT (opset 17 on; torch.fft's rfft / irfft / fft as torch.export writes them:
 * GFNet's global filter, spectral convolutions), rewritten at load into one MatMul by a
 * plan-time matrix of cosines and sines, so that it runs on every backend and MatMul's
 * gradient differentiates it:
 *   X (.., n at axis, .., c) with c 1 (real) or 2 (real, imaginary), L = dft_length (n when
 *   absent; the signal cut or zero-padded to it), m outputs: L, or L / 2 + 1 when onesided.
 *   Forward: Y[k] = sum_t x[t] e^(-2 pi i k t / L). Inverse: e^(+2 pi i k t / L) / L; inverse
 *   and onesided (irfft, torch's _fft_c2r): X holds the first L / 2 + 1 bins of a spectrum
 *   with Hermitian symmetry, the others their conjugates (the imaginary parts of the
 *   zero and Nyquist bins unread), Y real (its imaginary part 0), L outputs.
 * The rewrite: X transposed to (.., c, n) and reshaped to (.., c n) -- its real signal then
 * its imaginary one --, MatMul by W (c n, 2 m) -- the real outputs then the imaginary ones
 * --, reshaped to (.., 2, m) and transposed back to (.., m at axis, .., 2). O(n m) an output
 * row where an FFT is O(log n): fine at the sizes spectral layers use, bounded by W's
 * bytes (DFT_MAX_MATRIX_BYTES). */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "ir/ops/op_rewrite.h"
#include "ir/ops/op_util.h"

#define DFT_MAX_MATRIX_BYTES ((int64_t)64 << 20)

/* W's entry for input t of part p (0 real, 1 imaginary) to output k of part q. */
static double dft_weight(int64_t t, int p, int64_t k, int q, int64_t L, bool inverse,
                         bool onesided) {
    double ang = 2.0 * M_PI * (double)((t * k) % L) / (double)L, c = cos(ang), s = sin(ang);
    if (!inverse) /* e^(-i ang): (xr + i xi)(c - i s) */
        return q == 0 ? (p == 0 ? c : s) : (p == 0 ? -s : c);
    if (onesided) { /* t: a bin of the half spectrum, k: an output sample; real out only */
        double w = t == 0 || 2 * t == L ? 1.0 : 2.0;
        return q == 0 ? w * (p == 0 ? c : -s) / (double)L : 0.0;
    }
    return (q == 0 ? (p == 0 ? c : -s) : (p == 0 ? s : c)) / (double)L; /* e^(+i ang) / L */
}

static int dft_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    int r = x->rank;
    int64_t c = r >= 2 ? x->dims[r - 1] : 0;
    if (r < 2 || (c != 1 && c != 2) || !ir_dtype_is_compute(x->dtype))
        return oc_fail(err,
                       "input '%s' must be float of rank >= 2 with a last dim of 1 (real) or 2 "
                       "(complex)",
                       x->name);
    int64_t axis = ir_attr_int(n, "axis", 1);
    if (g->opset >= 20 && ir_node_in(g, n, 2)) {
        const int64_t *v;
        int64_t nv;
        if (op_in_int64s(g, n, 2, &v, &nv, err)) return OC_ERR;
        if (nv != 1) return oc_fail(err, "axis must be one value");
        axis = v[0];
    }
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r - 1)
        return oc_fail(err, "axis %" PRId64 " is not a signal dim of '%s'", axis, x->name);
    bool inverse = ir_attr_int(n, "inverse", 0) != 0, onesided = ir_attr_int(n, "onesided", 0);
    int64_t nin = x->dims[axis], L = nin;
    if (ir_node_in(g, n, 1)) {
        const int64_t *v;
        int64_t nv;
        if (op_in_int64s(g, n, 1, &v, &nv, err)) return OC_ERR;
        if (nv != 1 || v[0] < 1) return oc_fail(err, "dft_length must be one positive value");
        L = v[0];
    }
    if (onesided && !inverse && c != 1)
        return oc_fail(err, "onesided needs a real input ('%s' is complex)", x->name);
    if (onesided && inverse && c != 2)
        return oc_fail(err, "an inverse onesided DFT needs a complex input ('%s' is real)",
                       x->name);
    int64_t m = onesided && !inverse ? L / 2 + 1 : L;
    /* the inputs read: the signal cut to L (zero-padded past nin), or the half spectrum's
     * first L / 2 + 1 bins */
    int64_t used = onesided && inverse ? (nin < L / 2 + 1 ? nin : L / 2 + 1) : (nin < L ? nin : L);
    if ((double)(c * nin) * (double)(2 * m) * 4.0 > (double)DFT_MAX_MATRIX_BYTES)
        return oc_fail(err,
                       "a DFT of %" PRId64 " points over %" PRId64
                       " (its matrix would pass %" PRId64 " bytes)",
                       L, nin, DFT_MAX_MATRIX_BYTES);
    float *w = oc_calloc((size_t)(c * nin * 2 * m) + 1, sizeof *w);
    for (int p = 0; p < c; p++)
        for (int64_t t = 0; t < used; t++)
            for (int q = 0; q < 2; q++)
                for (int64_t k = 0; k < m; k++)
                    w[((int64_t)p * nin + t) * 2 * m + q * m + k] =
                        (float)dft_weight(t, p, k, q, L, inverse, onesided);
    /* (.., n at axis, .., c) -> (.., c, n) -> (.., c n) */
    int64_t perm[IR_MAX_RANK], lead[IR_MAX_RANK], dims[IR_MAX_RANK], back[IR_MAX_RANK];
    int nl = 0;
    for (int d = 0; d < r - 1; d++)
        if (d != axis) perm[nl] = d, lead[nl++] = x->dims[d];
    perm[nl] = r - 1, perm[nl + 1] = axis;
    char *base = oc_strdup(n->name);
    int wt =
        op_rewrite_constant(g, base, "matrix", IR_DTYPE_FLOAT, 2, (int64_t[]){c * nin, 2 * m}, w);
    oc_free(w);
    int at = node, xt = n->inputs[0];
    int t = op_rewrite_insert(g, at, base, "signal_last", OP_TRANSPOSE, xt, -1, -1);
    op_rewrite_attr_ints(g, at++, "perm", r, perm);
    memcpy(dims, lead, sizeof lead);
    dims[nl] = c * nin;
    t = op_rewrite_reshape(g, at++, base, "signal_rows", t, nl + 1, dims);
    t = op_rewrite_insert(g, at++, base, "transformed", OP_MATMUL, t, wt, -1);
    dims[nl] = 2, dims[nl + 1] = m;
    t = op_rewrite_reshape(g, at++, base, "parts", t, nl + 2, dims);
    /* (.., 2, m) -> (.., m at axis, .., 2) */
    for (int d = 0, j = 0; d < r; d++) back[d] = d == r - 1 ? nl : d == axis ? nl + 1 : j++;
    op_rewrite_become(g, at, OP_TRANSPOSE);
    ir_node_add_input(g, at, t);
    op_rewrite_attr_ints(g, at, "perm", r, back);
    oc_free(base);
    *changed = true;
    return OC_OK;
}

static int dft_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)g, (void)opset;
    return oc_fail(err, "%s reached shape inference unrewritten", n->op_type);
}

static const op_role dft_roles[] = {OP_IN_DATA, OP_IN_CONST, OP_IN_CONST};

const op_def op_def_dft = {.min_inputs = 1,
                           .max_inputs = 3,
                           .min_outputs = 1,
                           .max_outputs = 1,
                           .roles = dft_roles,
                           .n_roles = 3,
                           .infer = dft_infer,
                           .lower = dft_lower};
