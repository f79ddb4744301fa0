/* op_fold_index.c — ScatterND and GatherND, the index ops today's exporters
 * write around a network: torch 2.x builds Swin's shifted-window attention mask
 * with ScatterND (slice assignments into zeros) and reads its relative-position
 * bias table with GatherND (table[index]).
 * - ScatterND folds when data, indices and updates are plan-time values. With
 *   run-time data or updates (a slice assignment to an activation, as MViTv2's
 *   `attn[:, :, 1:, 1:] += rel_pos` exports) and plan-time indices, reduction
 *   none and no index row twice, it runs as a kernel: y = data with the rows
 *   replaced; so it does at indices computed at run time (max_unpool's, from a
 *   MaxPool's), reduction none, unchecked (scatter_nd_run_time). Its gradient
 *   ScatterNDGrad(dY, indices) gives dData (dY with those rows 0, attribute
 *   updates 0) and dUpdates (dY's rows, updates 1). Reduction add at plan-time
 *   indices or the device's is a scatter-add; max and min at plan-time indices a
 *   gather and reduction (scatter_nd_lower).
 * - GatherND folds when both inputs are; with run-time data (a parameter, an
 *   activation) and plan-time indices (any batch_dims, any number of coordinates)
 *   or indices the host computes (batch_dims 0) it is a Gather along axis 0 of the
 *   data's leading dims flattened, at each row's offset: the node becomes that
 *   Gather here, and Gather's kernels and gradient run it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_fold_num.h"
#include "ir/ops/op_rewrite.h"

/* Element j of an int32 / int64 index value. */
static int64_t index_value(const ir_tensor *t, int64_t j) { return op_fold_num_get(t, j).i; }

/* The row-major offset (in slabs of the dims after the first k) of index row
 * `row` of idx (last dim k) into dims; false when a coordinate is outside
 * [-dim, dim) (negative ones count from the end). */
static bool index_row_offset(const ir_tensor *idx, int64_t row, int k, const int64_t *dims,
                             int64_t *off, int64_t *bad) {
    *off = 0;
    for (int t = 0; t < k; t++) {
        int64_t v = index_value(idx, row * k + t);
        *bad = v;
        if (v < -dims[t] || v >= dims[t]) return false;
        *off = *off * dims[t] + (v < 0 ? v + dims[t] : v);
    }
    return true;
}

static int index_input(ir_graph *g, ir_node *n, int i, ir_tensor **idx, oc_err *err) {
    if (op_in_shaped(g, n, i, idx, err)) return OC_ERR;
    if ((*idx)->dtype != IR_DTYPE_INT64 && (*idx)->dtype != IR_DTYPE_INT32)
        return oc_fail(err, "indices '%s' must be int64 (or int32)", (*idx)->name);
    if ((*idx)->rank < 1) return oc_fail(err, "indices '%s' must have rank >= 1", (*idx)->name);
    return OC_OK;
}

/* Offset, then row number: a repeated offset reports its later row. */
static int cmp_offset_row(const void *a, const void *b) {
    const int64_t *p = a, *q = b;
    return p[0] != q[0] ? (p[0] < q[0] ? -1 : 1) : (p[1] > q[1]) - (p[1] < q[1]);
}

/* ScatterND on run-time data or updates (scatter_nd_infer checked the shapes
 * and the reduction): plan-time indices inside data, each row once (the
 * gradient of a row written twice would be ambiguous); the output like data.
 * Indices computed at run time (max_unpool's, made from a MaxPool's) cannot be
 * checked here: a row outside data fails on cpu and writes nothing on cuda (as
 * Gather reads), and of rows repeating an offset the last one's slab is written
 * on both backends. */
static int scatter_nd_run_time(ir_graph *g, ir_node *n, const ir_tensor *x, const ir_tensor *idx,
                               const ir_tensor *u, int k, int mode, oc_err *err) {
    if (mode != 0 && !op_is_value(idx))
        return oc_fail(err,
                       "ScatterND with reduction %s at indices computed at run time ('%s') is "
                       "not supported (reduction none is; add at the device's indices)",
                       mode == 1 ? "add" : "mul, max or min", idx->name);
    if (mode != 0)
        return oc_fail(err,
                       "ScatterND with a reduction on run-time data or updates ('%s', '%s') is "
                       "not supported (reductions none and add are)",
                       x->name, u->name);
    if (!ir_dtype_is_compute(x->dtype))
        return oc_fail(err, "ScatterND of %s tensors computed at run time is not supported",
                       ir_dtype_name(x->dtype));
    if (!op_is_value(idx)) {
        op_set_out_like(g, n, 0, x);
        return OC_OK;
    }
    int64_t rows = 1;
    for (int d = 0; d + 1 < idx->rank; d++) rows *= idx->dims[d];
    /* each row's offset with its row number, sorted: a repeat sits next to its first (memory
     * of the indices' size, not of data's: data may be an activation of any size) */
    int64_t(*at)[2] = oc_malloc((size_t)(rows ? rows : 1) * sizeof *at);
    int rc = OC_OK;
    for (int64_t r = 0; r < rows && rc == OC_OK; r++) {
        int64_t bad;
        at[r][1] = r;
        if (!index_row_offset(idx, r, k, x->dims, &at[r][0], &bad))
            rc = oc_fail(
                err, "indices '%s' row %" PRId64 ": coordinate %" PRId64 " is outside data '%s'",
                idx->name, r, bad, x->name);
    }
    if (rc == OC_OK) qsort(at, (size_t)rows, sizeof *at, cmp_offset_row);
    for (int64_t r = 1; r < rows && rc == OC_OK; r++)
        if (at[r][0] == at[r - 1][0])
            rc = oc_fail(err, "indices '%s' row %" PRId64 " repeats an earlier row", idx->name,
                         at[r][1]);
    oc_free(at);
    if (rc == OC_OK) op_set_out_like(g, n, 0, x);
    return rc;
}

/* The reduction attribute of ScatterND / ScatterElements: 0 none, 1 add, 2 mul, 3 max, 4 min. */
static int scatter_mode(const ir_node *n, int *mode, oc_err *err) {
    const ir_attr *ra = ir_attr_find(n, "reduction");
    const char *red = ra && ra->type == IR_ATTR_STRING ? ra->s : "none";
    *mode = strcmp(red, "none") == 0  ? 0
            : strcmp(red, "add") == 0 ? 1
            : strcmp(red, "mul") == 0 ? 2
            : strcmp(red, "max") == 0 ? 3
            : strcmp(red, "min") == 0 ? 4
                                      : -1;
    if (*mode < 0)
        return oc_fail(err, "reduction '%s' is not one of none, add, mul, max, min", red);
    return OC_OK;
}

static int scatter_nd_fold(ir_graph *g, ir_node *n, const ir_tensor *x, const ir_tensor *idx,
                           const ir_tensor *u, int k, int mode, oc_err *err);

/* ScatterND's shapes: indices' last dim *k coordinates a row, updates indices' dims but the
 * last then data's dims after the first k, of data's type. */
static int scatter_nd_shapes(const ir_tensor *x, const ir_tensor *idx, const ir_tensor *u, int *k,
                             oc_err *err) {
    int64_t kk = idx->dims[idx->rank - 1];
    if (kk < 1 || kk > x->rank)
        return oc_fail(err,
                       "indices '%s' have %" PRId64 " coordinates a row; data '%s' has rank %d",
                       idx->name, kk, x->name, x->rank);
    *k = (int)kk;
    bool fits = u->dtype == x->dtype && u->rank == idx->rank - 1 + x->rank - *k;
    for (int d = 0; fits && d < u->rank; d++)
        fits = u->dims[d] == (d < idx->rank - 1 ? idx->dims[d] : x->dims[d - (idx->rank - 1) + *k]);
    if (!fits)
        return oc_fail(err,
                       "updates '%s' do not have the shape (and type) indices '%s' and data "
                       "'%s' give",
                       u->name, idx->name, x->name);
    return OC_OK;
}

/* A scatter with reduction add on run-time data or updates (scatter_add_, index_add_: a graph
 * network's messages summed at their nodes), node `node`, rewritten once each update's
 * offset in data is known (offs: int64, updates' shape; plan-time or computed on the host):
 * Add(data, Reshape(GatherGrad(updates, offs; input_shape [numel(data)]), data's dims)).
 * GatherGrad is Gather's gradient -- zeros, each update added at its offset, repeated offsets
 * accumulating in index order -- and its own gradient gathers dY at the offsets, so the
 * gradients reach data (all of dY) and updates. */
static void scatter_add_lower(ir_graph *g, int node, int offs) {
    ir_node *n = &g->nodes[node];
    int xt = n->inputs[0], ut = n->inputs[2];
    const ir_tensor *x = &g->tensors[xt];
    int rank = x->rank;
    int64_t dims[IR_MAX_RANK], numel = 1;
    memcpy(dims, x->dims, sizeof dims);
    for (int d = 0; d < rank; d++) numel *= dims[d];
    char *base = oc_strdup(n->name);
    int sc = op_rewrite_insert(g, node, base, "scattered", OP_GATHER_GRAD, ut, offs, -1);
    op_rewrite_attr_ints(g, node, "input_shape", 1, &numel);
    op_rewrite_attr_int(g, node, "axis", 0);
    int sh = op_rewrite_reshape(g, node + 1, base, "summed", sc, rank, dims);
    op_rewrite_become(g, node + 2, OP_ADD);
    ir_node_add_input(g, node + 2, xt);
    ir_node_add_input(g, node + 2, sh);
    oc_free(base);
}

/* A scatter with reduction max or min (scatter_reduce amax / amin at fixed indices: a mesh
 * or point-cloud network's max aggregation; ScatterElements' lowering reaches it as this
 * ScatterND) on run-time data or updates, node `node`, each update element's offset in data
 * offs[j] (plan-time): the T offsets written, each with its m_t updates, padded to M with
 * the first of them (a repeat changes no max) -- Gather(Reshape(updates, [-1]), [T, M]
 * positions), ReduceMax over the M (ReduceMin), Max with data's element there (Min),
 * written back by ScatterND at those T offsets into data flattened, Reshape (the node) to
 * data's dims. The gradients: to data where it won or was not written, to the update that
 * won (the first of equal ones, as ReduceMax's). */
static int scatter_extreme_lower(ir_graph *g, int node, const int64_t *offs, int64_t numel,
                                 bool max, oc_err *err) {
    ir_node *n = &g->nodes[node];
    int xt = n->inputs[0], ut = n->inputs[2];
    const ir_tensor *x = &g->tensors[xt];
    int rank = x->rank;
    int64_t dims[IR_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    int64_t(*at)[2] = oc_malloc((size_t)(numel ? numel : 1) * sizeof *at);
    for (int64_t j = 0; j < numel; j++) at[j][0] = offs[j], at[j][1] = j;
    qsort(at, (size_t)numel, sizeof *at, cmp_offset_row); /* a target's updates together */
    int64_t T = 0, M = 0;
    for (int64_t j = 0, run = 0; j < numel; j++) {
        run = j > 0 && at[j][0] == at[j - 1][0] ? run + 1 : 1;
        if (run == 1) T++;
        if (run > M) M = run;
    }
    if (T * M > OP_FOLD_MAX_BYTES / (int64_t)sizeof(int64_t)) {
        oc_free(at);
        return oc_fail(err,
                       "a %s reduction of %" PRId64 " offsets, up to %" PRId64
                       " updates each: more than %" PRId64 " positions",
                       max ? "max" : "min", T, M, OP_FOLD_MAX_BYTES / (int64_t)sizeof(int64_t));
    }
    int64_t *pos = oc_malloc((size_t)(T * M > 0 ? T * M : 1) * sizeof *pos),
            *tgt = oc_malloc((size_t)(T ? T : 1) * 2 * sizeof *tgt);
    for (int64_t j = 0, t = -1, k = 0; j < numel; j++) {
        if (j == 0 || at[j][0] != at[j - 1][0]) {
            t++, k = 0;
            tgt[t] = at[j][0];
            for (int64_t e = 0; e < M; e++) pos[t * M + e] = at[j][1]; /* the first, as padding */
        }
        pos[t * M + k++] = at[j][1];
    }
    oc_free(at);
    char *base = oc_strdup(n->name);
    int pt = op_rewrite_constant(g, base, "positions", IR_DTYPE_INT64, 2, (int64_t[]){T, M}, pos);
    int tt = op_rewrite_constant(g, base, "targets", IR_DTYPE_INT64, 1, &T, tgt);
    int rt = op_rewrite_constant(g, base, "target_rows", IR_DTYPE_INT64, 2, (int64_t[]){T, 1}, tgt);
    oc_free(pos), oc_free(tgt);
    int k = node;
    int uf = op_rewrite_flatten(g, k++, base, "updates_flat", ut);
    int grid = op_rewrite_insert(g, k++, base, "by_target", OP_GATHER, uf, pt, -1);
    int64_t one = 1;
    int best = op_rewrite_axes(g, k++, base, max ? "best" : "least",
                               max ? OP_REDUCE_MAX : OP_REDUCE_MIN, grid, 1, &one, 18, -1);
    op_rewrite_attr_int(g, k - 1, "keepdims", 0);
    int xf = op_rewrite_flatten(g, k++, base, "data_flat", xt);
    int there = op_rewrite_insert(g, k++, base, "data_there", OP_GATHER, xf, tt, -1);
    int won = op_rewrite_insert(g, k++, base, "with_data", max ? OP_MAX : OP_MIN, there, best, -1);
    int out = op_rewrite_insert(g, k, base, "written", OP_SCATTER_ND, xf, rt, -1);
    ir_node_add_input(g, k++, won);
    op_rewrite_become(g, k, OP_RESHAPE);
    ir_node_add_input(g, k, out);
    ir_node_add_input(g, k, op_rewrite_ints(g, base, "data_shape", rank, dims));
    oc_free(base);
    return OC_OK;
}

/* op_def.lower: ScatterND with reduction add on run-time data or updates, plan-time indices
 * inside data: scatter_add_lower at each update's offset; max and min: scatter_extreme_lower.
 * Mul on run-time data stays refused by infer (scatter_nd_run_time), as do reductions at
 * run-time indices. */
static bool device_indices(const ir_graph *g, int t);
static int row_offsets(ir_graph *g, int *at, const char *base, int it, const ir_tensor *x, int k,
                       bool device);

/* ScatterND with reduction add at indices the device computes (a scatter-add to the rows an
 * ArgMax picks, max_unpool's positions summed): each update element's offset, its row's
 * (row_offsets, on the device) times the slab plus its place in the slab; then
 * scatter_add_lower. Indices the host computes from integer inputs stay refused (infer). */
static int scatter_add_device(ir_graph *g, int node, int k, oc_err *err) {
    ir_node *n = &g->nodes[node];
    const ir_tensor *x = ir_node_in(g, n, 0), *idx = ir_node_in(g, n, 1), *u = ir_node_in(g, n, 2);
    int64_t slab = 1, rdims[IR_MAX_RANK], udims[IR_MAX_RANK];
    int rrank = idx->rank, urank = u->rank;
    for (int d = k; d < x->rank; d++) slab *= x->dims[d];
    if (slab > OP_FOLD_MAX_BYTES / (int64_t)sizeof(int64_t))
        return oc_fail(err, "slabs of %" PRId64 " elements", slab);
    memcpy(rdims, idx->dims, sizeof rdims);
    memcpy(udims, u->dims, sizeof udims);
    rdims[rrank - 1] = 1; /* each row's offset, a slab's places along the last dim */
    int64_t *place = oc_malloc((size_t)slab * sizeof *place);
    for (int64_t e = 0; e < slab; e++) place[e] = e;
    char *base = oc_strdup(n->name);
    int at = node, it = n->inputs[1];
    int row = row_offsets(g, &at, base, it, x, k, true);
    int sl = op_rewrite_ints(g, base, "slab", 1, &slab);
    int pl = op_rewrite_ints(g, base, "places", (int)slab, place);
    oc_free(place);
    row = op_rewrite_insert(g, at++, base, "row_start", OP_MUL, row, sl, -1);
    row = op_rewrite_reshape(g, at++, base, "row_starts", row, rrank, rdims);
    int offs = op_rewrite_insert(g, at++, base, "element_offsets", OP_ADD, row, pl, -1);
    offs = op_rewrite_reshape(g, at++, base, "offsets", offs, urank, udims);
    oc_free(base);
    scatter_add_lower(g, at, offs);
    return OC_OK;
}

static int scatter_nd_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *x, *idx, *u;
    int k, mode;
    int64_t numel, rows = 1, slab = 1;
    if (op_in_shaped(g, n, 0, &x, err) || index_input(g, n, 1, &idx, err) ||
        op_in_shaped(g, n, 2, &u, err) || scatter_mode(n, &mode, err))
        return OC_ERR;
    if (mode == 1 && !op_is_value(idx) && !(op_is_value(x) && op_is_value(u)) &&
        device_indices(g, n->inputs[1])) {
        if (scatter_nd_shapes(x, idx, u, &k, err) || scatter_add_device(g, node, k, err))
            return OC_ERR;
        *changed = true;
        return OC_OK;
    }
    if ((mode != 1 && mode != 3 && mode != 4) || (op_is_value(x) && op_is_value(u)) ||
        !op_is_value(idx))
        return OC_OK;
    if (scatter_nd_shapes(x, idx, u, &k, err) || !ir_tensor_numel(u, &numel)) return OC_ERR;
    if (numel > OP_FOLD_MAX_BYTES / (int64_t)sizeof(int64_t))
        return oc_fail(err, "updates '%s' have more than %" PRId64 " elements", u->name,
                       OP_FOLD_MAX_BYTES / (int64_t)sizeof(int64_t));
    for (int d = 0; d + 1 < idx->rank; d++) rows *= idx->dims[d];
    for (int d = k; d < x->rank; d++) slab *= x->dims[d];
    int64_t *offs = oc_malloc((size_t)(numel ? numel : 1) * sizeof *offs);
    for (int64_t r = 0; r < rows; r++) {
        int64_t off, bad;
        if (!index_row_offset(idx, r, k, x->dims, &off, &bad)) {
            oc_free(offs);
            return oc_fail(
                err, "indices '%s' row %" PRId64 ": coordinate %" PRId64 " is outside data '%s'",
                idx->name, r, bad, x->name);
        }
        for (int64_t e = 0; e < slab; e++) offs[r * slab + e] = off * slab + e;
    }
    idx->keep_unread = idx->keep_unread || idx->is_model_initializer; /* --save writes it back */
    if (mode != 1) {
        int rc = scatter_extreme_lower(g, node, offs, numel, mode == 3, err);
        oc_free(offs);
        if (rc == OC_OK) *changed = true;
        return rc;
    }
    int urank = u->rank;
    int64_t udims[IR_MAX_RANK];
    memcpy(udims, u->dims, sizeof udims);
    char *base = oc_strdup(n->name);
    int ot = op_rewrite_ints(g, base, "offsets", (int)numel, offs);
    ir_tensor_set_shape(&g->tensors[ot], urank, udims);
    oc_free(offs), oc_free(base);
    scatter_add_lower(g, node, ot);
    *changed = true;
    return OC_OK;
}

/* ScatterND(data, indices, updates): a copy of data where each index row's slab
 * is replaced by (or, with `reduction`, combined with) its slab of updates.
 * Folded when all three are plan-time values, else a kernel (scatter_nd_run_time). */
static int scatter_nd_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x, *idx, *u;
    if (op_in_shaped(g, n, 0, &x, err) || index_input(g, n, 1, &idx, err) ||
        op_in_shaped(g, n, 2, &u, err))
        return OC_ERR;
    int k, mode;
    if (scatter_nd_shapes(x, idx, u, &k, err) || scatter_mode(n, &mode, err)) return OC_ERR;
    if (!op_is_value(x) || !op_is_value(u))
        return scatter_nd_run_time(g, n, x, idx, u, k, mode, err);
    if (op_fold_need_value(g, n, 0, &x, err) || op_fold_need_value(g, n, 1, &idx, err) ||
        op_fold_need_value(g, n, 2, &u, err))
        return OC_ERR;
    return scatter_nd_fold(g, n, x, idx, u, k, mode, err);
}

/* ScatterND's value: data x, index rows idx of k coordinates, updates u (checked). */
static int scatter_nd_fold(ir_graph *g, ir_node *n, const ir_tensor *x, const ir_tensor *idx,
                           const ir_tensor *u, int k, int mode, oc_err *err) {
    op_set_out_like(g, n, 0, x);
    int64_t numel, rows = 1, slab = 1;
    for (int d = 0; d + 1 < idx->rank; d++) rows *= idx->dims[d];
    for (int d = k; d < x->rank; d++) slab *= x->dims[d];
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    size_t es = (size_t)ir_dtype_size(x->dtype);
    memcpy(buf, x->data, (size_t)numel * es);
    bool fl = op_fold_is_float(x->dtype);
    ir_tensor cur = *x; /* the output as written so far, read by the reductions */
    cur.data = buf;
    for (int64_t r = 0; r < rows; r++) {
        int64_t off, bad;
        if (!index_row_offset(idx, r, k, x->dims, &off, &bad)) {
            oc_free(buf);
            return oc_fail(
                err, "indices '%s' row %" PRId64 ": coordinate %" PRId64 " is outside data '%s'",
                idx->name, r, bad, x->name);
        }
        for (int64_t e = 0; e < slab; e++) {
            int64_t at = off * slab + e;
            if (mode == 0) {
                memcpy(buf + (size_t)at * es,
                       (const uint8_t *)u->data + (size_t)(r * slab + e) * es, es);
                continue;
            }
            num a = op_fold_num_get(&cur, at), b = op_fold_num_get(u, r * slab + e), v = a;
            switch (mode) {
            case 1: v.f = a.f + b.f, v.i = (int64_t)((uint64_t)a.i + (uint64_t)b.i); break;
            case 2: v.f = a.f * b.f, v.i = (int64_t)((uint64_t)a.i * (uint64_t)b.i); break;
            case 3: v = (fl ? b.f > a.f : b.i > a.i) ? b : a; break;
            default: v = (fl ? b.f < a.f : b.i < a.i) ? b : a; break;
            }
            if (!fl) v.f = (double)v.i;
            op_fold_num_put(buf, x->dtype, at, v, x->dtype);
        }
    }
    return op_fold_set(g, n, buf, numel);
}

/* op_def.lower: GatherND of run-time data x with plan-time indices (x[rows] and x[i, j] of
 * advanced indexing; torch.export's adaptive pooling windows, read with two coordinates a
 * row from [H, W, N, C]; with batch_dims b, the legacy exporter's torch.diagonal): x's first
 * b + k dims flattened into one (a Reshape "<node>/rows", when b + k > 1), each index row's
 * row-major offset there -- its batch's coordinates first -- a constant
 * "<node>/gather_indices", and the node a Gather along axis 0, whose gradient scatter-adds.
 * Range checked here. */

/* Index rows' offsets in x's first k dims, nodes inserted at *at: negative coordinates from
 * the end (Where(Less(i, 0), Add(i, extents), i)), then times the strides and summed over the
 * last axis -- by ReduceSum for indices the host computes from the model's integer inputs
 * (x[arange(N), eos] of CLIP's and GPT-2 sequence classification's pooling: computed on the
 * host too), by a Gather of each coordinate and Adds for the device's (grid[b // 2, b % 2]:
 * integer sums run there as Add). Returns the offsets "<base>/offsets". */
static int row_offsets(ir_graph *g, int *at, const char *base, int it, const ir_tensor *x, int k,
                       bool device) {
    int64_t ext[IR_MAX_RANK], str[IR_MAX_RANK], acc = 1, zero = 0, last = -1;
    for (int d = k - 1; d >= 0; d--) ext[d] = x->dims[d], str[d] = acc, acc *= x->dims[d];
    int e = op_rewrite_ints(g, base, "extents", k, ext);
    int st = op_rewrite_ints(g, base, "strides", k, str);
    int z = op_rewrite_ints(g, base, "zero", 1, &zero);
    int neg = op_rewrite_insert(g, (*at)++, base, "negative", OP_LESS, it, z, -1);
    int wrapped = op_rewrite_insert(g, (*at)++, base, "from_end", OP_ADD, it, e, -1);
    int fixed = op_rewrite_insert(g, (*at)++, base, "coordinates", OP_WHERE, neg, wrapped, -1);
    ir_node_add_input(g, *at - 1, it);
    int scaled = op_rewrite_insert(g, (*at)++, base, "scaled", OP_MUL, fixed, st, -1);
    if (device) {
        int rank = g->tensors[it].rank, off = -1;
        for (int64_t d = 0; d < k; d++) {
            char what[32];
            snprintf(what, sizeof what, "coordinate_%" PRId64, d);
            int col = op_rewrite_constant(g, base, what, IR_DTYPE_INT64, 0, NULL, &d);
            int v = op_rewrite_insert(g, *at, base, what, OP_GATHER, scaled, col, -1);
            op_rewrite_attr_int(g, (*at)++, "axis", rank - 1);
            off = off < 0 ? v : op_rewrite_insert(g, (*at)++, base, "offsets", OP_ADD, off, v, -1);
        }
        return off;
    }
    int off = op_rewrite_axes(g, (*at)++, base, "offsets", OP_REDUCE_SUM, scaled, 1, &last, 13, -1);
    op_rewrite_attr_int(g, *at - 1, "keepdims", 0);
    return off;
}

/* Whether the plan-time coordinate column j of the index rows in part (a value [B.., w]) at
 * columns [from, from + w) holds, at every row, that row's position along dim from + j: the
 * leading coordinates of x[arange(N), ids] and x[arange(N)[:, None], ids]. */
static bool position_columns(const ir_tensor *part, int from) {
    int m = part->rank - 1;
    int64_t w = part->dims[m], rows = 1;
    for (int d = 0; d < m; d++) rows *= part->dims[d];
    if (from + w > m) return false;
    for (int64_t r = 0; r < rows; r++) {
        int64_t pos[IR_MAX_RANK], rest = r;
        for (int d = m - 1; d >= 0; d--) pos[d] = rest % part->dims[d], rest /= part->dims[d];
        for (int64_t j = 0; j < w; j++)
            if (index_value(part, r * w + j) != pos[from + j]) return false;
    }
    return true;
}

/* GatherND of run-time data at indices the device computes (an ArgMax or TopK of an
 * activation: Double DQN's x[arange(N), q.argmax(1)], token pruning's x[arange(N)[:, None],
 * topk_ids]) when the indices are Concat(.., last axis) of plan-time columns holding each
 * row's leading positions (c of them) and one device column: the Gather of x's first c + 1
 * dims flattened at ElementOffsets of that column (axis c of those dims; its rows' leading
 * coordinates their own; negative from the end), reshaped to the indices' rows. Else the
 * node stays, refused by gather_nd_infer. */
static int gather_nd_device(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    const ir_tensor *x = ir_node_in(g, n, 0), *idx = ir_node_in(g, n, 1);
    int m = idx->rank - 1, c = 0;
    if (idx->producer < 0) return OC_OK;
    const ir_node *cat = &g->nodes[idx->producer];
    int64_t cat_axis = ir_attr_int(cat, "axis", 0);
    if (cat->op != OP_CONCAT || (cat_axis != -1 && cat_axis != m) || cat->n_inputs < 1)
        return OC_OK;
    for (int p = 0; p + 1 < cat->n_inputs; p++) { /* the plan-time position columns */
        const ir_tensor *part = cat->inputs[p] >= 0 ? &g->tensors[cat->inputs[p]] : NULL;
        if (!part || !op_is_value(part) || part->rank != idx->rank ||
            (part->dtype != IR_DTYPE_INT64 && part->dtype != IR_DTYPE_INT32) ||
            !position_columns(part, c))
            return OC_OK;
        c += (int)part->dims[m];
    }
    int dev = cat->inputs[cat->n_inputs - 1];
    const ir_tensor *d = dev >= 0 ? &g->tensors[dev] : NULL;
    if (!d || op_is_value(d) || d->rank != idx->rank || d->dims[m] != 1 || c + 1 > x->rank || c > m)
        return OC_OK;
    for (int j = 0; j < c; j++)
        if (idx->dims[j] > x->dims[j]) return OC_OK;
    int64_t rows[IR_MAX_RANK], data[IR_MAX_RANK], flat[IR_MAX_RANK], out[IR_MAX_RANK], rest = 1;
    for (int j = 0; j < c; j++) rows[j] = idx->dims[j], data[j] = x->dims[j];
    for (int j = c; j < m; j++) rest *= idx->dims[j];
    rows[c] = rest, data[c] = x->dims[c];
    for (int j = 0; j < m; j++) out[j] = idx->dims[j];
    flat[0] = 1;
    for (int j = 0; j < x->rank; j++)
        if (j <= c) flat[0] *= x->dims[j];
        else flat[j - c] = x->dims[j];
    int xt = n->inputs[0], xrank = x->rank - c, at = node;
    char *base = oc_strdup(n->name);
    int t = op_rewrite_reshape(g, at++, base, "index_rows", dev, c + 1, rows);
    t = op_rewrite_insert(g, at, base, "offsets", OP_ELEMENT_OFFSETS, t, -1, -1);
    op_rewrite_attr_ints(g, at, "data_shape", c + 1, data);
    op_rewrite_attr_int(g, at++, "axis", c);
    if (m != c + 1 || c == m) t = op_rewrite_reshape(g, at++, base, "row_offsets", t, m, out);
    if (c > 0) xt = op_rewrite_reshape(g, at++, base, "rows", xt, xrank, flat);
    op_rewrite_become(g, at, OP_GATHER); /* axis 0 */
    ir_node_add_input(g, at, xt);
    ir_node_add_input(g, at, t);
    oc_free(base);
    *changed = true;
    (void)err;
    return OC_OK;
}

static int gather_nd_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *x, *idx;
    if (op_in_shaped(g, n, 0, &x, err) || index_input(g, n, 1, &idx, err)) return OC_ERR;
    int64_t kk = idx->dims[idx->rank - 1], bd = ir_attr_int(n, "batch_dims", 0);
    bool table = op_is_value(x) && device_indices(g, n->inputs[1]); /* a constant at them */
    if ((op_is_value(x) && !table) || bd < 0 || bd >= idx->rank || kk < 1 || kk > x->rank - bd)
        return OC_OK; /* folds, or gather_nd_infer names what it refuses */
    for (int d = 0; d < bd; d++)
        if (idx->dims[d] != x->dims[d]) return OC_OK; /* gather_nd_infer names it */
    if (!op_is_value(idx)) {       /* the device's indices, or the host's integer glue */
        if (bd != 0) return OC_OK; /* gather_nd_infer refuses it */
        bool device = device_indices(g, n->inputs[1]);
        if (device) {
            if (gather_nd_device(g, node, changed, err)) return OC_ERR;
            if (*changed) return OC_OK;
        } else if (idx->dtype != IR_DTYPE_INT64) {
            return OC_OK; /* gather_nd_infer names it */
        }
        /* a Gather along axis 0 of x's first k dims flattened, at the rows' offsets computed
         * where the indices are (row_offsets): the device's (bucketize's boundaries[i],
         * grid[b // 2, b % 2]; one coordinate: the indices without their last dim, negative
         * from the end as Gather reads them) or the host's */
        int64_t dims[IR_MAX_RANK], flat[IR_MAX_RANK];
        int k = (int)kk, rank = idx->rank - 1, xt = n->inputs[0], at = node;
        int xrank = x->rank - k + 1; /* x, n: not read once nodes and tensors are added */
        memcpy(dims, idx->dims, (size_t)rank * sizeof dims[0]);
        flat[0] = 1;
        for (int d = 0; d < x->rank; d++)
            if (d < k) flat[0] *= x->dims[d];
            else flat[d - k + 1] = x->dims[d];
        char *base = oc_strdup(n->name);
        int r = device && k == 1
                    ? op_rewrite_reshape(g, at++, base, "rows", n->inputs[1], rank, dims)
                    : row_offsets(g, &at, base, n->inputs[1], x, k, device);
        if (k > 1) xt = op_rewrite_reshape(g, at++, base, "rows", xt, xrank, flat);
        op_rewrite_become(g, at, OP_GATHER); /* axis 0 */
        ir_node_add_input(g, at, xt);
        ir_node_add_input(g, at, r);
        oc_free(base);
        *changed = true;
        return OC_OK;
    }
    int k = (int)kk, b = (int)bd, rank = idx->rank - 1, xrank = x->rank - b - k + 1;
    int64_t rows = 1, flat[IR_MAX_RANK], dims[IR_MAX_RANK], per_batch = 1, slab = 1;
    for (int d = 0; d < rank; d++) rows *= idx->dims[d], dims[d] = idx->dims[d];
    for (int d = b; d < rank; d++) per_batch *= idx->dims[d]; /* index rows a batch */
    for (int d = b; d < b + k; d++) slab *= x->dims[d];       /* offsets a batch */
    flat[0] = 1;
    for (int d = 0; d < x->rank; d++)
        if (d < b + k) flat[0] *= x->dims[d];
        else flat[d - b - k + 1] = x->dims[d];
    int64_t *v = oc_malloc((size_t)rows * sizeof *v + 1);
    for (int64_t r = 0; r < rows; r++) {
        int64_t bad;
        bool inside = index_row_offset(idx, r, k, x->dims + b, &v[r], &bad);
        v[r] += per_batch ? r / per_batch * slab : 0;
        if (!inside) {
            oc_fail(err,
                    "indices '%s' row %" PRId64 ": coordinate %" PRId64 " is outside data '%s'",
                    idx->name, r, bad, x->name);
            oc_free(v);
            return OC_ERR;
        }
    }
    char *base = oc_strdup(n->name);
    int xt = n->inputs[0];
    if (b + k > 1) xt = op_rewrite_reshape(g, node++, base, "rows", xt, xrank, flat);
    int t = op_rewrite_constant(g, base, "gather_indices", IR_DTYPE_INT64, rank, dims, v);
    op_rewrite_become(g, node, OP_GATHER); /* axis 0, Gather's default */
    ir_node_add_input(g, node, xt);
    ir_node_add_input(g, node, t);
    oc_free(v), oc_free(base);
    *changed = true;
    return OC_OK;
}

/* GatherND(data, indices; batch_dims b): output indices' dims but the last,
 * then data's dims after the first b + k (k: the last dim of indices); each
 * row of indices (within its batch) picks a slab of data. */
static int gather_nd_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x, *idx;
    if (op_in_shaped(g, n, 0, &x, err) || index_input(g, n, 1, &idx, err)) return OC_ERR;
    int64_t b = ir_attr_int(n, "batch_dims", 0), kk = idx->dims[idx->rank - 1];
    if (b < 0 || b >= idx->rank || b >= x->rank || kk < 1 || b + kk > x->rank)
        return oc_fail(err,
                       "batch_dims %" PRId64 " and %" PRId64 " coordinates a row do not fit "
                       "data '%s' (rank %d) and indices '%s' (rank %d)",
                       b, kk, x->name, x->rank, idx->name, idx->rank);
    int k = (int)kk;
    /* output: indices' dims but the last, then data's after the first b + k */
    if (idx->rank - 1 + x->rank - b - k > IR_MAX_RANK)
        return oc_fail(err, "output rank %" PRId64 " is too large",
                       idx->rank - 1 + x->rank - b - k);
    for (int d = 0; d < b; d++)
        if (idx->dims[d] != x->dims[d])
            return oc_fail(err, "batch dim %d: data '%s' has %" PRId64 ", indices '%s' %" PRId64, d,
                           x->name, x->dims[d], idx->name, idx->dims[d]);
    if (!op_is_value(idx))
        return oc_fail(err,
                       "indices '%s' are computed at run time; outcore takes GatherND with "
                       "plan-time indices, indices the host computes from integer inputs, or "
                       "device ones whose leading coordinates are each row's position "
                       "(x[arange(N), ids], batch_dims 0)",
                       idx->name);
    if (!op_is_value(x)) /* not reached: gather_nd_lower made it a Gather */
        return oc_fail(err, "data '%s' is computed at run time", x->name);
    if (op_fold_need_value(g, n, 0, &x, err) || op_fold_need_value(g, n, 1, &idx, err))
        return OC_ERR;
    int64_t y[IR_MAX_RANK], rank = 0, batches = 1, rows = 1, slab = 1;
    for (int d = 0; d + 1 < idx->rank; d++) y[rank++] = idx->dims[d];
    for (int d = (int)b + k; d < x->rank; d++) y[rank++] = x->dims[d], slab *= x->dims[d];
    for (int d = 0; d < b; d++) batches *= idx->dims[d];
    for (int d = (int)b; d + 1 < idx->rank; d++) rows *= idx->dims[d];
    op_set_out(g, n, 0, x->dtype, (int)rank, y);
    int64_t numel, per_batch = 1; /* data elements a batch */
    for (int d = (int)b; d < x->rank; d++) per_batch *= x->dims[d];
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    size_t es = (size_t)ir_dtype_size(x->dtype), chunk = (size_t)slab * es;
    for (int64_t bi = 0; bi < batches; bi++)
        for (int64_t r = 0; r < rows; r++) {
            int64_t off, bad, row = bi * rows + r;
            if (!index_row_offset(idx, row, k, x->dims + b, &off, &bad)) {
                oc_free(buf);
                return oc_fail(err,
                               "indices '%s' row %" PRId64 ": coordinate %" PRId64
                               " is outside data '%s'",
                               idx->name, row, bad, x->name);
            }
            memcpy(buf + (size_t)row * chunk,
                   (const uint8_t *)x->data +
                       ((size_t)(bi * per_batch) + (size_t)(off * slab)) * es,
                   chunk);
        }
    return op_fold_set(g, n, buf, numel);
}

/* GatherElements (torch.gather): y[i..] = data[i.. with index[i..] at axis]; indices
 * of data's rank, each dim but the axis's at most data's. Plan-time values only:
 * Hugging Face's BERT family reads its token-type buffer at the position ids so. */
/* GatherElements' shapes checked; *axis normalized. */
static int gather_elements_check(const ir_node *n, const ir_tensor *x, const ir_tensor *idx,
                                 int64_t *axis, oc_err *err) {
    if (op_axis(ir_attr_int(n, "axis", 0), x->rank, "axis", axis, err)) return OC_ERR;
    if (idx->rank != x->rank)
        return oc_fail(err, "indices '%s' (rank %d) and data '%s' (rank %d) differ in rank",
                       idx->name, idx->rank, x->name, x->rank);
    for (int d = 0; d < x->rank; d++)
        if (d != *axis && idx->dims[d] > x->dims[d])
            return oc_fail(err, "indices '%s' have %" PRId64 " at dim %d, data '%s' only %" PRId64,
                           idx->name, idx->dims[d], d, x->name, x->dims[d]);
    return OC_OK;
}

/* Element o of GatherElements' output: its offset in data (row-major), the index read along
 * the axis; false when that index is outside the axis' dim. */
static bool gather_elements_offset(const ir_tensor *x, const ir_tensor *idx, int64_t axis,
                                   int64_t o, int64_t *off, int64_t *v) {
    int64_t rest = o, stride = 1;
    *v = index_value(idx, o);
    *off = 0;
    if (*v < -x->dims[axis] || *v >= x->dims[axis]) return false;
    for (int d = x->rank - 1; d >= 0; d--) { /* o's coordinates in indices, into data */
        int64_t c = rest % idx->dims[d];
        rest /= idx->dims[d];
        if (d == axis) c = *v < 0 ? *v + x->dims[d] : *v;
        *off += c * stride;
        stride *= x->dims[d];
    }
    return true;
}

static int gather_elements_outside(const ir_tensor *x, const ir_tensor *idx, int64_t axis,
                                   int64_t o, int64_t v, oc_err *err) {
    return oc_fail(err,
                   "indices '%s' element %" PRId64 ": %" PRId64 " is outside dim %" PRId64
                   " of data '%s'",
                   idx->name, o, v, axis, x->name);
}

static int gather_elements_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x, *idx;
    int64_t axis;
    if (op_fold_need_value(g, n, 0, &x, err) || index_input(g, n, 1, &idx, err) ||
        op_fold_need_value(g, n, 1, &idx, err) || gather_elements_check(n, x, idx, &axis, err))
        return OC_ERR;
    op_set_out(g, n, 0, x->dtype, idx->rank, idx->dims);
    int64_t numel;
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    size_t es = (size_t)ir_dtype_size(x->dtype);
    for (int64_t o = 0; o < numel; o++) {
        int64_t off, v;
        if (!gather_elements_offset(x, idx, axis, o, &off, &v)) {
            oc_free(buf);
            return gather_elements_outside(x, idx, axis, o, v, err);
        }
        memcpy(buf + (size_t)o * es, (const uint8_t *)x->data + (size_t)off * es, es);
    }
    return op_fold_set(g, n, buf, numel);
}

/* Whether run-time integer tensor t is computed on the device: a TopK of an activation
 * (TopKOffsets), or a float model input or parameter, is among what it is computed from (an
 * Expand or Reshape of a TopK's indices; bucketize's search over comparisons of an
 * activation); else it comes from the model's integer inputs, which the host computes from. */
static bool device_indices(const ir_graph *g, int t) {
    bool *seen = oc_calloc((size_t)g->n_tensors + 1, sizeof(bool));
    int *stack = oc_malloc((size_t)g->n_tensors * sizeof(int) + sizeof(int)), top = 0;
    bool device = false;
    stack[top++] = t;
    seen[t] = true;
    while (top > 0 && !device) {
        const ir_tensor *x = &g->tensors[stack[--top]];
        if (op_is_value(x)) continue;
        if (x->producer < 0) {
            device = ir_dtype_is_compute(x->dtype);
            continue;
        }
        const ir_node *p = &g->nodes[x->producer];
        device = p->op == OP_TOP_K_OFFSETS;
        for (int k = 0; k < p->n_inputs && !device; k++) {
            int u = p->inputs[k];
            if (u >= 0 && !seen[u]) seen[u] = true, stack[top++] = u;
        }
    }
    oc_free(seen), oc_free(stack);
    return device;
}

/* The offsets in data x of the elements that indices it (known only at run time) select
 * along the axis, as GatherElements and ScatterElements read them, by a node inserted at
 * `node` ("<base>/offsets", returned in *offs). Indices a TopK of an activation gives (the
 * top-k tokens' features gathered; device_indices) are an ElementOffsets kernel's. Integer glue of the
 * model's integer inputs (host_inputs.h) is a GatherElements of a plan-time table --
 * table[c] = the row-major offset in data of coordinate c, c's dims the indices' but the
 * axis' data's -- at the indices, which the host folds each step (negative indices counted
 * from the end, one outside the axis refused, naming the node). Indices computed otherwise
 * on the device are refused there. */
static int elements_offsets(ir_graph *g, int node, const char *base, int xt, int it, int64_t axis,
                            int *offs, oc_err *err) {
    const ir_tensor *x = &g->tensors[xt], *idx = &g->tensors[it];
    int64_t dims[IR_MAX_RANK], numel = 1;
    int rank = x->rank;
    if (device_indices(g, it)) {
        /* indices the device computes (a TopK of an activation): a kernel of its own */
        memcpy(dims, x->dims, sizeof dims);
        *offs = op_rewrite_insert(g, node, base, "offsets", OP_ELEMENT_OFFSETS, it, -1, -1);
        op_rewrite_attr_ints(g, node, "data_shape", rank, dims);
        op_rewrite_attr_int(g, node, "axis", axis);
        return OC_OK;
    }
    for (int d = 0; d < rank; d++) {
        dims[d] = d == axis ? x->dims[d] : idx->dims[d];
        if (dims[d] > 0 && numel > OP_FOLD_MAX_BYTES / (int64_t)sizeof(int64_t) / dims[d])
            return oc_fail(err,
                           "indices '%s' computed at run time: the offset table of data '%s' "
                           "would pass %" PRId64 " bytes",
                           idx->name, x->name, OP_FOLD_MAX_BYTES);
        numel *= dims[d];
    }
    int64_t *table = oc_malloc((size_t)(numel ? numel : 1) * sizeof *table);
    for (int64_t o = 0; o < numel; o++) { /* o's coordinates in the table, into data */
        int64_t rest = o, off = 0, stride = 1;
        for (int d = rank - 1; d >= 0; d--) {
            off += rest % dims[d] * stride;
            rest /= dims[d];
            stride *= x->dims[d];
        }
        table[o] = off;
    }
    int tt = op_rewrite_ints(g, base, "offset_table", (int)numel, table);
    ir_tensor_set_shape(&g->tensors[tt], rank, dims);
    oc_free(table);
    *offs = op_rewrite_insert(g, node, base, "offsets", OP_GATHER_ELEMENTS, tt, it, -1);
    op_rewrite_attr_int(g, node, "axis", axis);
    return OC_OK;
}

/* GatherElements of run-time data at indices known only at run time (`logits.gather(1,
 * labels[:, None])`, a Q-value read at the actions taken): the node becomes
 * Gather(Reshape(data, [-1]), offsets) at elements_offsets', whose gradient scatter-adds. */
static int gather_elements_run_time(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    int64_t axis;
    int offs, xt = n->inputs[0], it = n->inputs[1];
    if (gather_elements_check(n, &g->tensors[xt], &g->tensors[it], &axis, err)) return OC_ERR;
    char *base = oc_strdup(n->name);
    if (elements_offsets(g, node, base, xt, it, axis, &offs, err)) {
        oc_free(base);
        return OC_ERR;
    }
    int flat = op_rewrite_flatten(g, node + 1, base, "flat", xt);
    op_rewrite_become(g, node + 2, OP_GATHER);
    ir_node_add_input(g, node + 2, flat);
    ir_node_add_input(g, node + 2, offs);
    op_rewrite_attr_int(g, node + 2, "axis", 0);
    oc_free(base);
    *changed = true;
    return OC_OK;
}

/* op_def.lower: GatherElements of run-time data (an activation, a parameter) with plan-time
 * indices (torch.gather with a fixed index: Funnel's relative-position shift) is a Gather of
 * the data flattened, at the elements' offsets: Reshape(data, [-1]) then the node as
 * Gather(flat, offsets, axis 0), whose kernels and gradient (a scatter-add) run it. */
static int gather_elements_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *x, *idx;
    int64_t axis, numel;
    if (op_in_shaped(g, n, 0, &x, err) || index_input(g, n, 1, &idx, err)) return OC_ERR;
    if (op_is_value(x)) return OC_OK; /* folds (on the host when the indices are its) */
    if (!op_is_value(idx)) return gather_elements_run_time(g, node, changed, err);
    if (gather_elements_check(n, x, idx, &axis, err) || !ir_tensor_numel(idx, &numel))
        return OC_ERR;
    if (numel > OP_FOLD_MAX_BYTES / (int64_t)sizeof(int64_t))
        return oc_fail(err, "indices '%s' have more than %" PRId64 " elements", idx->name,
                       OP_FOLD_MAX_BYTES / (int64_t)sizeof(int64_t));
    int64_t *offs = oc_malloc((size_t)(numel ? numel : 1) * sizeof(int64_t));
    for (int64_t o = 0; o < numel; o++) {
        int64_t v;
        if (!gather_elements_offset(x, idx, axis, o, &offs[o], &v)) {
            oc_free(offs);
            return gather_elements_outside(x, idx, axis, o, v, err);
        }
    }
    int xt = n->inputs[0];
    idx->keep_unread = idx->keep_unread || idx->is_model_initializer; /* --save writes it back */
    int64_t idims[IR_MAX_RANK];
    int irank = idx->rank;
    memcpy(idims, idx->dims, sizeof idims);
    char *base = oc_strdup(n->name);
    int ot = op_rewrite_ints(g, base, "offsets", (int)numel, offs); /* shaped as the indices */
    ir_tensor_set_shape(&g->tensors[ot], irank, idims);
    oc_free(offs);
    int flat = op_rewrite_flatten(g, node, base, "flat", xt);
    op_rewrite_become(g, node + 1, OP_GATHER);
    ir_node_add_input(g, node + 1, flat);
    ir_node_add_input(g, node + 1, ot);
    ir_attr a = {.name = "axis", .type = IR_ATTR_INT, .i = 0};
    ir_node_add_attr(g, node + 1, &a);
    oc_free(base);
    *changed = true;
    return OC_OK;
}

/* ElementOffsets(indices; data_shape, axis) -> int64 offsets, the indices' shape: the
 * row-major offset in data of each index's element (its own coordinates, the axis' from
 * the index; negative ones count from the end). The indices must fit data but along the
 * axis. No gradient: integers. */
static int element_offsets_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *idx;
    const int64_t *dims;
    if (index_input(g, n, 0, &idx, err)) return OC_ERR;
    int r = ir_attr_ints(n, "data_shape", &dims);
    int64_t axis = ir_attr_int(n, "axis", 0);
    if (r != idx->rank || axis < 0 || axis >= r)
        return oc_fail(err, "data_shape, axis and indices '%s' do not agree", idx->name);
    for (int d = 0; d < r; d++)
        if (dims[d] < 0 || (d != axis && idx->dims[d] > dims[d]))
            return oc_fail(err, "indices '%s' have %" PRId64 " at dim %d, data %" PRId64, idx->name,
                           idx->dims[d], d, dims[d]);
    op_set_out(g, n, 0, IR_DTYPE_INT64, idx->rank, idx->dims);
    return OC_OK;
}

static int element_offsets_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g, (void)err;
    op_element_offsets_args *p = &op_args_new(n)->element_offsets;
    const int64_t *dims;
    p->rank = ir_attr_ints(n, "data_shape", &dims);
    memcpy(p->dims, dims, (size_t)p->rank * sizeof *dims);
    p->axis = ir_attr_int(n, "axis", 0);
    return OC_OK;
}

const op_def op_def_element_offsets = {.min_inputs = 1,
                                       .max_inputs = 1,
                                       .min_outputs = 1,
                                       .max_outputs = 1,
                                       .roles = op_fold_const_role,
                                       .n_roles = 1,
                                       .infer = element_offsets_infer,
                                       .decode = element_offsets_decode};

/* Data differentiable (the lowered Gather's), indices plan-time. */
static const op_role gather_elements_roles[] = {OP_IN_DATA, OP_IN_CONST};

const op_def op_def_gather_elements = {.min_inputs = 2,
                                       .max_inputs = 2,
                                       .min_outputs = 1,
                                       .max_outputs = 1,
                                       .roles = gather_elements_roles,
                                       .n_roles = 2,
                                       .infer = gather_elements_infer,
                                       .lower = gather_elements_lower};

/* ScatterElements (Tensor.scatter, select_scatter's export): data with each element of
 * updates written at its own coordinates, the axis' one read from indices (of updates'
 * shape, data's rank). Plan-time indices: lowered at load into ScatterND at every update's
 * full coordinates -- ScatterND(data, rows [numel, rank], Reshape(updates, [-1])), the same
 * reduction -- which folds on plan-time values (ConViT's relative-position table) and runs,
 * with its gradient, on run-time data and updates. */
/* ScatterElements' shapes: indices as GatherElements' (gather_elements_check, *axis
 * normalised), updates of the indices' shape. */
static int scatter_elements_check(const ir_node *n, const ir_tensor *x, const ir_tensor *idx,
                                  const ir_tensor *u, int64_t *axis, oc_err *err) {
    if (gather_elements_check(n, x, idx, axis, err)) return OC_ERR;
    bool same = u->rank == idx->rank;
    for (int d = 0; same && d < u->rank; d++) same = u->dims[d] == idx->dims[d];
    if (!same)
        return oc_fail(err, "updates '%s' and indices '%s' differ in shape", u->name, idx->name);
    return OC_OK;
}

/* ScatterElements' shapes checked, and each update's full coordinates in data: *rows
 * ([*numel, x's rank], the caller frees), negative indices resolved. */
static int scatter_elements_rows(const ir_node *n, const ir_tensor *x, const ir_tensor *idx,
                                 const ir_tensor *u, int64_t *numel, int64_t **rows, oc_err *err) {
    int64_t axis;
    if (scatter_elements_check(n, x, idx, u, &axis, err)) return OC_ERR;
    int rank = x->rank;
    if (!ir_tensor_numel(idx, numel) ||
        *numel > OP_FOLD_MAX_BYTES / (int64_t)sizeof(int64_t) / (rank ? rank : 1))
        return oc_fail(err, "indices '%s' have more than %" PRId64 " elements", idx->name,
                       OP_FOLD_MAX_BYTES / (int64_t)sizeof(int64_t) / (rank ? rank : 1));
    int64_t *r = oc_malloc((size_t)(*numel ? *numel : 1) * (size_t)rank * sizeof(int64_t));
    for (int64_t o = 0; o < *numel; o++) {
        int64_t rest = o, v = index_value(idx, o);
        if (v < -x->dims[axis] || v >= x->dims[axis]) {
            oc_free(r);
            return gather_elements_outside(x, idx, axis, o, v, err);
        }
        for (int d = rank - 1; d >= 0; d--) { /* o's coordinates, the axis' from indices */
            int64_t c = rest % idx->dims[d];
            rest /= idx->dims[d];
            r[o * rank + d] = d == axis ? (v < 0 ? v + x->dims[d] : v) : c;
        }
    }
    *rows = r;
    return OC_OK;
}

/* ScatterElements at indices known only at run time: folded on the host when data and
 * updates are values too (scatter_elements_infer); with reduction add on run-time data or
 * updates (a graph network's messages summed at the nodes an integer input names), the
 * scatter-add at elements_offsets'; else refused by infer. */
static int scatter_elements_run_time(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    int mode, offs, xt = n->inputs[0], it = n->inputs[1];
    int64_t axis;
    const ir_tensor *x = &g->tensors[xt], *idx = &g->tensors[it], *u = ir_node_in(g, n, 2);
    if (scatter_mode(n, &mode, err)) return OC_ERR;
    if (mode != 1 || (op_is_value(x) && op_is_value(u))) return OC_OK;
    if (scatter_elements_check(n, x, idx, u, &axis, err)) return OC_ERR;
    if (u->dtype != x->dtype)
        return oc_fail(err, "updates '%s' and data '%s' differ in type", u->name, x->name);
    char *base = oc_strdup(n->name);
    int rc = elements_offsets(g, node, base, xt, it, axis, &offs, err);
    oc_free(base);
    if (rc) return OC_ERR;
    scatter_add_lower(g, node + 1, offs);
    *changed = true;
    return OC_OK;
}

static int scatter_elements_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *x, *idx, *u;
    int64_t numel, *rows;
    if (op_in_shaped(g, n, 0, &x, err) || index_input(g, n, 1, &idx, err) ||
        op_in_shaped(g, n, 2, &u, err))
        return OC_ERR;
    if (!op_is_value(idx)) return scatter_elements_run_time(g, node, changed, err);
    if (scatter_elements_rows(n, x, idx, u, &numel, &rows, err)) return OC_ERR;
    int rank = x->rank;
    const ir_attr *ra = ir_attr_find(n, "reduction");
    char *red = oc_strdup(ra && ra->type == IR_ATTR_STRING ? ra->s : "none");
    int xt = n->inputs[0], ut = n->inputs[2];
    idx->keep_unread = idx->keep_unread || idx->is_model_initializer; /* --save writes it back */
    char *base = oc_strdup(n->name);
    int rt = op_rewrite_ints(g, base, "rows", (int)(numel * rank), rows);
    int64_t rdims[2] = {numel, rank};
    ir_tensor_set_shape(&g->tensors[rt], 2, rdims);
    oc_free(rows);
    int flat = op_rewrite_flatten(g, node, base, "updates", ut);
    op_rewrite_become(g, node + 1, OP_SCATTER_ND);
    ir_node_add_input(g, node + 1, xt);
    ir_node_add_input(g, node + 1, rt);
    ir_node_add_input(g, node + 1, flat);
    if (strcmp(red, "none") != 0) {
        ir_attr a = {.name = "reduction", .type = IR_ATTR_STRING, .s = red};
        ir_node_add_attr(g, node + 1, &a);
    }
    oc_free(red), oc_free(base);
    *changed = true;
    return OC_OK;
}

/* Reached with indices not known at load (plan-time ones are lowered): folded when the
 * indices, data and updates are values -- integer glue the host evaluates each step
 * (host_inputs.h: the inverse permutation of pack_padded_sequence(enforce_sorted=False)) --
 * as the ScatterND at each update's full coordinates the lowering writes; else refused. */
static int scatter_elements_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x, *idx, *u;
    if (op_in_shaped(g, n, 0, &x, err) || index_input(g, n, 1, &idx, err) ||
        op_in_shaped(g, n, 2, &u, err))
        return OC_ERR;
    if (!op_is_value(idx))
        return oc_fail(err,
                       "indices '%s' are computed at run time from float data; outcore takes "
                       "ScatterElements' indices as plan-time values or integer glue of the "
                       "model's integer inputs",
                       idx->name);
    int mode;
    int64_t numel, *rows;
    if (scatter_mode(n, &mode, err) || op_fold_need_value(g, n, 0, &x, err) ||
        op_fold_need_value(g, n, 2, &u, err))
        return OC_ERR;
    if (u->dtype != x->dtype)
        return oc_fail(err, "updates '%s' and data '%s' differ in type", u->name, x->name);
    if (scatter_elements_rows(n, x, idx, u, &numel, &rows, err)) return OC_ERR;
    ir_tensor ri = {.name = idx->name,
                    .dtype = IR_DTYPE_INT64,
                    .rank = 2,
                    .dims = {numel, x->rank},
                    .data = rows,
                    .data_src = IR_DATA_INLINE,
                    .data_bytes = (size_t)(numel * x->rank) * sizeof(int64_t)};
    ir_tensor uf = *u; /* the updates as one row */
    uf.rank = 1, uf.dims[0] = numel;
    int rc = scatter_nd_fold(g, n, x, &ri, &uf, x->rank, mode, err);
    oc_free(rows);
    return rc;
}

static const op_role scatter_elements_roles[] = {OP_IN_DATA, OP_IN_CONST, OP_IN_DATA};

const op_def op_def_scatter_elements = {.min_inputs = 3,
                                        .max_inputs = 3,
                                        .min_outputs = 1,
                                        .max_outputs = 1,
                                        .roles = scatter_elements_roles,
                                        .n_roles = 3,
                                        .infer = scatter_elements_infer,
                                        .lower = scatter_elements_lower};

/* Never reached: a GatherND of run-time data is a Gather once shapes are
 * inferred, one of values a constant. Present so that gradients are traced
 * through its data input to the parameter behind it (shape_infer.c's float flow). */
static int gather_nd_grad(grad_ctx *c) {
    return oc_fail(grad_err(c), "GatherND reached the gradient builder; it should be a Gather");
}

/* ScatterNDGrad(dY, indices; updates): dData, dY's shape, the indexed rows 0
 * (updates 0), or dUpdates, indices' dims but the last then dY's after the
 * first k, the indexed rows of dY (updates 1). */
static int scatter_nd_grad_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *dy, *idx;
    if (op_in_shaped(g, n, 0, &dy, err) || index_input(g, n, 1, &idx, err)) return OC_ERR;
    int64_t k = idx->dims[idx->rank - 1], y[IR_MAX_RANK];
    int rank = 0;
    if (k < 1 || k > dy->rank || idx->rank - 1 + dy->rank - k > IR_MAX_RANK)
        return oc_fail(err, "indices '%s' do not fit '%s'", idx->name, dy->name);
    if (ir_attr_int(n, "updates", 0) == 0) {
        op_set_out_like(g, n, 0, dy);
        return OC_OK;
    }
    for (int d = 0; d + 1 < idx->rank; d++) y[rank++] = idx->dims[d];
    for (int d = (int)k; d < dy->rank; d++) y[rank++] = dy->dims[d];
    op_set_out(g, n, 0, dy->dtype, rank, y);
    return OC_OK;
}

static int scatter_nd_grad_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g, (void)err;
    op_args_new(n)->scatter_nd_grad.updates = ir_attr_int(n, "updates", 0) != 0;
    return OC_OK;
}

/* dData = ScatterNDGrad(dY, indices; updates 0), dUpdates = (..; updates 1),
 * each only when its input wants one. Reads the indices (a constant). */
static int scatter_nd_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0) return OC_OK;
    for (int i = 0; i <= 2; i += 2) {
        if (!grad_wants(c, i)) continue;
        int b = grad_node(c, i ? "grad_updates" : "grad_data", OP_SCATTER_ND_GRAD);
        grad_in(c, b, dy);
        grad_in(c, b, grad_fwd_in(c, 1));
        grad_attr_int(c, b, "updates", i == 2);
        grad_out_dx(c, b, i);
        if (grad_finish(c, b)) return OC_ERR;
    }
    return OC_OK;
}

static const op_role data_then_const[] = {OP_IN_DATA, OP_IN_CONST};
static const op_role data_const_data[] = {OP_IN_DATA, OP_IN_CONST, OP_IN_DATA};

const op_def op_def_scatter_nd = {.min_inputs = 3,
                                  .max_inputs = 3,
                                  .min_outputs = 1,
                                  .max_outputs = 1,
                                  .roles = data_const_data,
                                  .n_roles = 3,
                                  .infer = scatter_nd_infer,
                                  .lower = scatter_nd_lower,
                                  .grad = scatter_nd_grad,
                                  .saved_inputs = 0x2};
const op_def op_def_scatter_nd_grad = {.min_inputs = 2,
                                       .max_inputs = 2,
                                       .min_outputs = 1,
                                       .max_outputs = 1,
                                       .roles = data_then_const,
                                       .n_roles = 2,
                                       .infer = scatter_nd_grad_infer,
                                       .decode = scatter_nd_grad_decode};
/* Input 0 may be a parameter (a bias table): a data role, so it keeps its kind. */
const op_def op_def_gather_nd = {.min_inputs = 2,
                                 .max_inputs = 2,
                                 .min_outputs = 1,
                                 .max_outputs = 1,
                                 .roles = data_then_const,
                                 .n_roles = 2,
                                 .infer = gather_nd_infer,
                                 .lower = gather_nd_lower,
                                 .grad = gather_nd_grad};

bool op_index_range(const ir_graph *g, int t, int64_t *lo, int64_t *hi) {
    for (int hops = 0; t >= 0 && hops < 64; hops++) {
        const ir_tensor *x = &g->tensors[t];
        if (x->dtype != IR_DTYPE_INT64 && x->dtype != IR_DTYPE_INT32) return false;
        if (op_is_value(x)) {
            int64_t n;
            if (!ir_tensor_numel(x, &n) || n < 1) return false;
            *lo = INT64_MAX, *hi = INT64_MIN;
            for (int64_t i = 0; i < n; i++) {
                int64_t v = index_value(x, i);
                *lo = v < *lo ? v : *lo, *hi = v > *hi ? v : *hi;
            }
            return true;
        }
        if (x->producer < 0) return false;
        const ir_node *p = &g->nodes[x->producer];
        if (p->op == OP_TOP_K_OFFSETS && p->outputs[0] == t) { /* the indices along the axis */
            const ir_tensor *in = &g->tensors[p->inputs[0]];
            int64_t axis;
            oc_err e;
            if (op_axis(ir_attr_int(p, "axis", -1), in->rank, "axis", &axis, &e)) return false;
            *lo = 0, *hi = in->dims[axis] - 1;
            return true;
        }
        if (p->op == OP_CONCAT) { /* the union of its parts' */
            int64_t a, b;
            *lo = INT64_MAX, *hi = INT64_MIN;
            for (int i = 0; i < p->n_inputs; i++) {
                if (!op_index_range(g, p->inputs[i], &a, &b)) return false;
                *lo = a < *lo ? a : *lo, *hi = b > *hi ? b : *hi;
            }
            return p->n_inputs > 0;
        }
        bool moves = p->op == OP_EXPAND || p->op == OP_RESHAPE || p->op == OP_UNSQUEEZE ||
                     p->op == OP_SQUEEZE || p->op == OP_TRANSPOSE || p->op == OP_IDENTITY ||
                     p->op == OP_FLATTEN || p->op == OP_CAST;
        if (!moves || p->n_inputs < 1) return false;
        t = p->inputs[0]; /* the same values, moved (a Cast between integer types) */
    }
    return false;
}
