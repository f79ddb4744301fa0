/* op_einsum.c — Einsum, rewritten at load (op_def.lower, its operands' ranks known)
 * into ops outcore runs and differentiates: Transpose, ReduceSum, Unsqueeze, MatMul,
 * Squeeze. An ellipsis is spelled out first as numpy broadcasts it (spell_ellipsis).
 * Indices of one operand alone are summed first; then at most one contracted index,
 * either every kept shared index a batch index with at most one free index a side, or
 * no batch index and one side's free indices MatMul's rows, shaped by Transposes and
 * Unsqueezes; otherwise Reshapes merge the free and the contracted indices, their shapes
 * from the operands' (Shape, Gather, Mul, Concat: folded at plan time). MaxViT's
 * attention is einsum("BGHID,BGHJD->BGHIJ", q, k) and ("BGHIJ,BGHJD->BGHID", a, v);
 * MViTv2's relative positions ("bythwc,hkc->bythwk"). A diagonal (an index twice in an
 * input term: "ii->i", a trace "ii", "ncii->nc") is taken first: the operand transposed
 * to the two dims first and gathered at (i, i) (GatherND; its gradient puts dY on the
 * diagonal, as torch.diagonal's). The new nodes are
 * named <einsum>/<step> before the Einsum node, which becomes the last step. */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ir/ops/op_rewrite.h"
#include "ir/ops/op_table.h"
#include "ir/ops/op_util.h"

#define EINSUM_MAX_INDICES 52 /* a-z, A-Z */

typedef struct lowering {
    ir_graph *g;
    const char *name;
    int64_t size[128]; /* each index letter's extent, from the operands' shapes */
    ir_dtype dtype;    /* the operands' */
    int steps;         /* nodes emitted: a suffix keeps names unique */
    bool dry;          /* counting the steps only (the graph untouched) */
    int total;         /* the steps: the last one writes the Einsum's output */
    int out;
    int self; /* the Einsum node: the last step; the others inserted before it */
} lowering;

/* An operand as it is lowered: its tensor and the index letter of each dim. */
typedef struct operand {
    int t;
    char idx[EINSUM_MAX_INDICES + 1];
} operand;

static int new_tensor(lowering *w, const char *what, ir_dtype dt) {
    char name[512];
    snprintf(name, sizeof name, "%s/%s_%d", w->name, what, w->steps);
    for (int s = 2; ir_tensor_find(w->g, name) >= 0; s++)
        snprintf(name, sizeof name, "%s/%s_%d_%d", w->name, what, w->steps, s);
    return ir_tensor_add(w->g, name, dt);
}

/* A node of kind k reading in0 (and in1 when >= 0), writing a new tensor (the
 * Einsum's output for the last step); returns its node index (-1 when dry), *y
 * the output. */
static int emit(lowering *w, op_kind k, const char *what, int in0, int in1, int *y) {
    if (w->dry) {
        w->steps++;
        *y = -1;
        return -1;
    }
    char name[512];
    snprintf(name, sizeof name, "%s/%s_%d", w->name, what, w->steps);
    bool last = w->steps + 1 == w->total;
    int n = last ? w->self : op_node_insert(w->g, w->self++, name, k);
    if (last) op_rewrite_become(w->g, n, k); /* it writes the output already */
    ir_node_add_input(w->g, n, in0);
    if (in1 >= 0) ir_node_add_input(w->g, n, in1);
    *y = ++w->steps == w->total ? w->out : new_tensor(w, what, IR_DTYPE_UNDEFINED);
    if (!last) ir_node_add_output(w->g, n, *y);
    return n;
}

/* A 1-d int64 initializer of the n values v (-1 when dry: nothing added). */
static int const_ints(lowering *w, const char *what, int n, const int64_t *v) {
    if (w->dry) return -1;
    char name[512];
    snprintf(name, sizeof name, "%s/%s_%d", w->name, what, w->steps);
    return ir_const_int64s(w->g, name, n, v);
}

/* Unsqueeze / Squeeze / ReduceSum of x over axes: the axes an input from
 * opset 13 on (an int64 initializer), the attribute before. */
static int emit_axes(lowering *w, op_kind k, const char *what, int x, int n, const int64_t *axes) {
    int y, node;
    if (w->dry) {
        emit(w, k, what, x, -1, &y);
        return y;
    }
    if (w->g->opset >= 13) {
        node = emit(w, k, what, x, const_ints(w, "axes", n, axes), &y);
    } else {
        node = emit(w, k, what, x, -1, &y);
        op_rewrite_attr_ints(w->g, node, "axes", n, axes);
    }
    if (k == OP_REDUCE_SUM) op_rewrite_attr_int(w->g, node, "keepdims", 0);
    return y;
}

/* Dims [from, from + n) of the shape tensor sh, as a 1-d int64 tensor of n
 * values (Gather), or of their product, one value (Gather, then Mul); a
 * constant [1] when n is 0. */
static int shape_dims(lowering *w, int sh, int from, int n, bool product) {
    int64_t idx[EINSUM_MAX_INDICES];
    if (n == 0) return const_ints(w, "one", 1, (int64_t[]){1});
    int y;
    if (!product || n == 1) {
        for (int i = 0; i < n; i++) idx[i] = from + i;
        emit(w, OP_GATHER, "dims", sh, const_ints(w, "at", n, idx), &y);
        return y;
    }
    int acc = shape_dims(w, sh, from, 1, false);
    for (int i = 1; i < n; i++) {
        int d = shape_dims(w, sh, from + i, 1, false);
        emit(w, OP_MUL, "size", acc, d, &acc);
    }
    return acc;
}

/* x reshaped to the concatenation of the n 1-d int64 tensors parts. */
static int reshape_to(lowering *w, int x, int n, const int *parts) {
    int shape = -1, y;
    int node = emit(w, OP_CONCAT, "shape", parts[0], n > 1 ? parts[1] : -1, &shape);
    if (node >= 0) {
        for (int i = 2; i < n; i++) ir_node_add_input(w->g, node, parts[i]);
        op_rewrite_attr_int(w->g, node, "axis", 0);
    }
    emit(w, OP_RESHAPE, "reshape", x, shape, &y);
    return y;
}

/* o's dims reordered to the letters of `to` (a permutation of o->idx). */
static void transpose_to(lowering *w, operand *o, const char *to) {
    int r = (int)strlen(to);
    int64_t perm[EINSUM_MAX_INDICES];
    bool same = true;
    for (int i = 0; i < r; i++) {
        perm[i] = strchr(o->idx, to[i]) - o->idx;
        same = same && perm[i] == i;
    }
    if (!same) {
        int y, node = emit(w, OP_TRANSPOSE, "transpose", o->t, -1, &y);
        if (node >= 0) op_rewrite_attr_ints(w->g, node, "perm", r, perm);
        o->t = y;
    }
    memcpy(o->idx, to, (size_t)r + 1);
}

/* o's diagonals: while a letter repeats in o->idx (dims p < q), o transposed to (p, q,
 * the rest..) and gathered at the rows (i, i) (GatherND: a Gather at plan-time offsets,
 * whose gradient scatter-adds onto the diagonal, as torch.diagonal's): the letter once,
 * first. O(n) where a mask over the two dims would be O(n^2). */
static int take_diagonals(lowering *w, operand *o, oc_err *err) {
    (void)err;
    for (int q = 0; o->idx[q]; q++) {
        const char *first = memchr(o->idx, o->idx[q], (size_t)q);
        if (!first) continue;
        int p = (int)(first - o->idx), r = (int)strlen(o->idx), np = 0, y;
        int64_t n = w->size[(int)o->idx[q]], perm[EINSUM_MAX_INDICES];
        char left[EINSUM_MAX_INDICES + 1];
        perm[np++] = p, perm[np++] = q;
        left[0] = o->idx[q];
        for (int d = 0; d < r; d++)
            if (d != p && d != q) left[np - 1] = o->idx[d], perm[np++] = d;
        left[r - 1] = '\0';
        bool moved = p != 0 || q != 1;
        if (moved) {
            int node = emit(w, OP_TRANSPOSE, "diagonal_first", o->t, -1, &y);
            if (node >= 0) op_rewrite_attr_ints(w->g, node, "perm", r, perm);
            o->t = y;
        }
        int rows = -1;
        if (!w->dry) {
            int64_t *v = oc_malloc((size_t)n * 2 * sizeof *v);
            for (int64_t i = 0; i < n; i++) v[2 * i] = v[2 * i + 1] = i;
            char what[64];
            snprintf(what, sizeof what, "diagonal_rows_%d", w->steps);
            rows =
                op_rewrite_constant(w->g, w->name, what, IR_DTYPE_INT64, 2, (int64_t[]){n, 2}, v);
            oc_free(v);
        }
        emit(w, OP_GATHER_ND, "diagonal", o->t, rows, &y);
        o->t = y;
        memcpy(o->idx, left, (size_t)r);
        q = 0; /* the letter is first now: look again from the start */
    }
    return OC_OK;
}

/* Sums o over the letters that neither `keep` nor `other` holds. */
static void sum_alone(lowering *w, operand *o, const char *keep, const char *other) {
    int64_t axes[EINSUM_MAX_INDICES];
    int n = 0, r = 0;
    char left[EINSUM_MAX_INDICES + 1];
    for (int i = 0; o->idx[i]; i++)
        if (!strchr(keep, o->idx[i]) && !strchr(other, o->idx[i])) axes[n++] = i;
        else left[r++] = o->idx[i];
    left[r] = '\0';
    if (n == 0) return;
    o->t = emit_axes(w, OP_REDUCE_SUM, "sum", o->t, n, axes);
    memcpy(o->idx, left, (size_t)r + 1);
}

/* Letters of `from` (in its order) that `in` holds (in != NULL) or lacks. */
static void pick(const char *from, const char *in, bool holds, char *out) {
    int r = 0;
    for (int i = 0; from[i]; i++)
        if ((strchr(in, from[i]) != NULL) == holds) out[r++] = from[i];
    out[r] = '\0';
}

/* Parses "ab,bc->ac" (spaces ignored) into terms and the output letters. */
static int parse(const char *eq, int n_in, char terms[2][EINSUM_MAX_INDICES + 1], char *outl,
                 oc_err *err) {
    int t = 0, len = 0, count[128] = {0};
    bool arrow = false;
    char *cur = terms[0];
    for (const char *p = eq;; p++) {
        char ch = *p;
        if (ch == ' ') continue;
        if (ch == ',' || ch == '-' || ch == '\0') {
            cur[len] = '\0';
            if (ch == '\0') break;
            if (ch == '-') {
                if (p[1] != '>' || arrow) return oc_fail(err, "'-' not followed by '>' once");
                arrow = true, p++;
                if (t + 1 != n_in) return oc_fail(err, "%d terms for %d inputs", t + 1, n_in);
                cur = outl;
            } else if (arrow || ++t >= n_in) {
                return oc_fail(err, "more terms than the %d inputs", n_in);
            } else {
                cur = terms[t];
            }
            len = 0;
            continue;
        }
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
            return oc_fail(err, "character '%c' is not an index letter", ch);
        if (len >= EINSUM_MAX_INDICES) return oc_fail(err, "more than %d indices a term", len);
        if (arrow && memchr(cur, ch, (size_t)len))
            return oc_fail(err, "output index '%c' repeats", ch);
        cur[len++] = ch;
        if (!arrow) count[(int)ch]++;
    }
    if (!arrow) {
        if (t + 1 != n_in) return oc_fail(err, "%d terms for %d inputs", t + 1, n_in);
        int r = 0; /* implicit output: the letters seen once, in alphabetical (ASCII) order */
        for (int ch = 'A'; ch <= 'z'; ch++)
            if (count[ch] == 1) outl[r++] = (char)ch;
        outl[r] = '\0';
    }
    for (int i = 0; outl[i]; i++)
        if (!count[(int)outl[i]])
            return oc_fail(err, "output index '%c' is in no input term", outl[i]);
    return OC_OK;
}

/* The general case: a -> [S.., M.., K..] reshaped to [S.., prod M, prod K],
 * b -> [S.., K.., N..] to [S.., prod K, prod N], one MatMul, its [S.., prod M,
 * prod N] reshaped to [S.., M.., N..] (r's letters S M N). The sizes come from
 * Shape nodes of the transposed operands, so they fold at plan time. */
static void contract_merged(lowering *w, operand *a, operand *b, const char *S, const char *M,
                            const char *K, const char *N, operand *r) {
    int s = (int)strlen(S), m = (int)strlen(M), k = (int)strlen(K), n = (int)strlen(N);
    char at[EINSUM_MAX_INDICES + 1], bt[EINSUM_MAX_INDICES + 1];
    snprintf(at, sizeof at, "%s%s%s", S, M, K);
    snprintf(bt, sizeof bt, "%s%s%s", S, K, N);
    transpose_to(w, a, at);
    transpose_to(w, b, bt);
    int sa, sb, y;
    emit(w, OP_SHAPE, "shape_of", a->t, -1, &sa);
    emit(w, OP_SHAPE, "shape_of", b->t, -1, &sb);
    int pa[3], pb[3], pr[2], na = 0, nb = 0;
    if (s) pa[na++] = shape_dims(w, sa, 0, s, false);
    pa[na++] = shape_dims(w, sa, s, m, true);
    pa[na++] = shape_dims(w, sa, s + m, k, true);
    if (s) pb[nb++] = shape_dims(w, sb, 0, s, false);
    pb[nb++] = shape_dims(w, sb, s, k, true);
    pb[nb++] = shape_dims(w, sb, s + k, n, true);
    int np = 0; /* the result's shape: S and M's sizes, then N's */
    if (s + m) pr[np++] = shape_dims(w, sa, 0, s + m, false);
    if (n) pr[np++] = shape_dims(w, sb, s + k, n, false);
    int a2 = reshape_to(w, a->t, na, pa), b2 = reshape_to(w, b->t, nb, pb);
    emit(w, OP_MATMUL, "matmul", a2, b2, &y);
    if (np) y = reshape_to(w, y, np, pr);
    else y = emit_axes(w, OP_SQUEEZE, "squeeze", y, 2, (int64_t[]){0, 1}); /* a scalar */
    r->t = y;
    snprintf(r->idx, sizeof r->idx, "%s%s%s", S, M, N);
}

/* Two operands, after sum_alone: one MatMul between transposes and
 * unsqueezes; the result's letters in r. */
static int contract(lowering *w, operand *a, operand *b, const char *outl, operand *r,
                    oc_err *err) {
    char S[EINSUM_MAX_INDICES + 1], K[EINSUM_MAX_INDICES + 1], M[EINSUM_MAX_INDICES + 1],
        N[EINSUM_MAX_INDICES + 1], tmp[EINSUM_MAX_INDICES + 1];
    pick(outl, a->idx, true, tmp);
    pick(tmp, b->idx, true, S); /* kept by both: batch */
    pick(a->idx, b->idx, true, tmp);
    pick(tmp, outl, false, K); /* in both, summed: contracted */
    pick(outl, b->idx, false, tmp);
    pick(tmp, a->idx, true, M); /* a's alone (kept) */
    pick(outl, a->idx, false, tmp);
    pick(tmp, b->idx, true, N); /* b's alone */
    size_t s = strlen(S), k = strlen(K), m = strlen(M), n = strlen(N);
    /* several contracted indices, several free ones beside batch indices, or several
     * free ones on both sides: merged by Reshapes */
    if (k > 1 || (s > 0 && (m > 1 || n > 1)) || (m > 1 && n > 1)) {
        contract_merged(w, a, b, S, M, K, N, r);
        return OC_OK;
    }
    (void)err;
    if (m <= 1 && n > 1) { /* the side with many free indices goes first: MatMul's rows */
        operand *t = a;
        a = b, b = t;
        memcpy(tmp, M, sizeof tmp), memcpy(M, N, sizeof M), memcpy(N, tmp, sizeof N);
        size_t z = m;
        m = n, n = z;
    }
    /* a -> [S, M.., K|1] (M: one letter, or 1 when none, unless rows), b -> [S, K|1, N|1] */
    char at[EINSUM_MAX_INDICES + 1], bt[EINSUM_MAX_INDICES + 1];
    snprintf(at, sizeof at, "%s%s%s", S, M, K);
    snprintf(bt, sizeof bt, "%s%s%s", S, K, N);
    transpose_to(w, a, at);
    transpose_to(w, b, bt);
    int64_t ax[2];
    int na = 0, nb = 0, nr = 0;
    if (m == 0) ax[na++] = (int64_t)s;
    if (k == 0) ax[na++] = (int64_t)(s + (m ? m : 1));
    if (na) a->t = emit_axes(w, OP_UNSQUEEZE, "unsqueeze", a->t, na, ax);
    int64_t bx[2], rx[2];
    if (k == 0) bx[nb++] = (int64_t)s;
    if (n == 0) bx[nb++] = (int64_t)s + 1;
    if (nb) b->t = emit_axes(w, OP_UNSQUEEZE, "unsqueeze", b->t, nb, bx);
    int y;
    emit(w, OP_MATMUL, "matmul", a->t, b->t, &y);
    if (m == 0) rx[nr++] = (int64_t)s;
    if (n == 0) rx[nr++] = (int64_t)(s + (m ? m : 1));
    if (nr) y = emit_axes(w, OP_SQUEEZE, "squeeze", y, nr, rx);
    r->t = y;
    snprintf(r->idx, sizeof r->idx, "%s%s%s", S, M, N);
    return OC_OK;
}

/* One pass of the lowering (dry: counting its steps). */
static int lower(lowering *w, const char terms[2][EINSUM_MAX_INDICES + 1], const char *outl,
                 const int *in, int n_in, oc_err *err) {
    operand a = {.t = in[0]}, b = {.t = n_in > 1 ? in[1] : -1}, r;
    memcpy(a.idx, terms[0], sizeof a.idx);
    memcpy(b.idx, terms[1], sizeof b.idx);
    if (take_diagonals(w, &a, err) || (n_in == 2 && take_diagonals(w, &b, err))) return OC_ERR;
    sum_alone(w, &a, outl, b.idx);
    if (n_in == 2) sum_alone(w, &b, outl, a.idx);
    if (n_in == 1) r = a;
    else if (contract(w, &a, &b, outl, &r, err)) return OC_ERR;
    transpose_to(w, &r, outl); /* the output's order */
    return OC_OK;
}

/* The Einsum node `self` (inputs in, output out) lowered: nodes before it, itself the
 * last step. The equation has no ellipsis (einsum_lower spelled it out). */
static int lower_node(ir_graph *g, int self, const char *name, const char *equation, const int *in,
                      int n_in, int out, oc_err *err) {
    char terms[2][EINSUM_MAX_INDICES + 1] = {{0}}, outl[EINSUM_MAX_INDICES + 1] = {0};
    lowering w = {.g = g, .name = name, .dry = true, .out = out, .self = self};
    if (n_in < 1 || n_in > 2 || parse(equation, n_in, terms, outl, err)) return OC_ERR;
    for (int i = 0; i < n_in; i++) { /* the letters' extents; a diagonal's two must agree */
        const ir_tensor *t = &g->tensors[in[i]];
        bool seen[128] = {false};
        if ((int)strlen(terms[i]) != t->rank)
            return oc_fail(err, "term %d has %d indices for operand '%s' of rank %d", i,
                           (int)strlen(terms[i]), t->name, t->rank);
        for (int d = 0; terms[i][d]; d++) {
            int ch = terms[i][d];
            if (seen[ch] && w.size[ch] != t->dims[d])
                return oc_fail(err, "index '%c' repeats over dims of %" PRId64 " and %" PRId64, ch,
                               w.size[ch], t->dims[d]);
            seen[ch] = true, w.size[ch] = t->dims[d];
        }
        w.dtype = t->dtype;
    }
    if (lower(&w, (const char(*)[EINSUM_MAX_INDICES + 1]) terms, outl, in, n_in, err))
        return OC_ERR;
    if (w.steps == 0) { /* "ij->ij": a copy */
        int y;
        w.dry = false, w.total = 1;
        emit(&w, OP_IDENTITY, "identity", in[0], -1, &y);
        return OC_OK;
    }
    w.total = w.steps, w.steps = 0, w.dry = false;
    return lower(&w, (const char(*)[EINSUM_MAX_INDICES + 1]) terms, outl, in, n_in, err);
}

/* The equation with its ellipsis spelled out for operands of these ranks, as numpy
 * broadcasts it: each operand's ellipsis the last of e fresh letters (e the most dims an
 * ellipsis stands for), an implicit output the ellipsis's letters then the letters seen
 * once, in order. An equation without one is copied. */
static int spell_ellipsis(const char *eq, const int *rank, int n_in, char *outq, size_t cap,
                          oc_err *err) {
    const char *arrow = strstr(eq, "->");
    bool used[128] = {false}, any = strstr(eq, "...") != NULL;
    int count[128] = {0}, ell[2] = {0, 0}, e = 0, term = 0, letters = 0;
    for (const char *p = eq;; p++) { /* letters a term, the ellipsis's dims */
        bool end = *p == '\0' || *p == ',' || (arrow && p == arrow);
        if (end) {
            if (term < n_in) {
                bool has = false;
                for (const char *q = p; q > eq && q[-1] != ',' && q[-1] != '>'; q--)
                    if (q[-1] == '.') has = true;
                ell[term] = has ? rank[term] - letters : 0;
                if (!has && letters != rank[term] && any)
                    return oc_fail(err, "term %d has %d indices, its input rank %d", term, letters,
                                   rank[term]);
                if (ell[term] < 0)
                    return oc_fail(err,
                                   "term %d has %d indices beside its ellipsis, its input "
                                   "rank %d",
                                   term, letters, rank[term]);
                if (ell[term] > e) e = ell[term];
            }
            if (*p == '\0' || (arrow && p == arrow)) break;
            term++, letters = 0;
            continue;
        }
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) {
            letters++, used[(int)*p] = true, count[(int)*p]++;
        }
    }
    if (!any) {
        if (strlen(eq) >= cap) return oc_fail(err, "the equation is too long");
        strcpy(outq, eq);
        return OC_OK;
    }
    char fresh[EINSUM_MAX_INDICES + 1];
    int nf = 0;
    for (int ch = 'A'; ch <= 'z' && nf < e; ch++)
        if (((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) && !used[ch])
            fresh[nf++] = (char)ch;
    if (nf < e) return oc_fail(err, "the ellipsis needs more index letters than are free");
    size_t o = 0;
    term = 0;
    const char *p = eq;
    for (; *p && !(arrow && p == arrow); p++) {
        if (*p == ',' && ++term >= n_in) return oc_fail(err, "more terms than the %d inputs", n_in);
        if (*p == '.') {
            if (p[1] != '.' || p[2] != '.') return oc_fail(err, "a '.' not part of '...'");
            for (int k = e - ell[term]; k < e && o + 1 < cap; k++) outq[o++] = fresh[k];
            p += 2;
        } else if (o + 1 < cap) {
            outq[o++] = *p;
        }
    }
    if (o + 4 >= cap) return oc_fail(err, "the equation is too long");
    outq[o++] = '-', outq[o++] = '>';
    if (arrow) {
        for (p = arrow + 2; *p && o + 1 < cap; p++) {
            if (*p == '.') {
                if (p[1] != '.' || p[2] != '.') return oc_fail(err, "a '.' not part of '...'");
                for (int k = 0; k < e && o + 1 < cap; k++) outq[o++] = fresh[k];
                p += 2;
            } else if (*p != ' ') {
                outq[o++] = *p;
            }
        }
    } else { /* numpy's implicit output: the ellipsis, then the letters seen once */
        for (int k = 0; k < e && o + 1 < cap; k++) outq[o++] = fresh[k];
        for (int ch = 'A'; ch <= 'z' && o + 1 < cap; ch++)
            if (count[ch] == 1) outq[o++] = (char)ch;
    }
    outq[o] = '\0';
    return OC_OK;
}

/* op_def.lower: the Einsum, its operands' ranks known, becomes the ops it is made of. */
static int einsum_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    const ir_node *n = &g->nodes[node];
    const char *eq = ir_attr_string(n, "equation", NULL);
    if (!eq || strlen(eq) >= 256)
        return oc_fail(err, "takes an 'equation' attribute of fewer than 256 characters");
    int in[2] = {-1, -1}, rank[2] = {0, 0}, n_in = n->n_inputs, out = n->outputs[0];
    for (int i = 0; i < n_in; i++) {
        ir_tensor *t;
        if (op_in_shaped(g, (ir_node *)n, i, &t, err)) return OC_ERR;
        in[i] = n->inputs[i], rank[i] = t->rank;
    }
    char spelled[512], *name = oc_strdup(n->name), *orig = oc_strdup(eq);
    int rc = spell_ellipsis(orig, rank, n_in, spelled, sizeof spelled, err) ||
             lower_node(g, node, name, spelled, in, n_in, out, err);
    if (rc) oc_fail_prefix(err, "Einsum \"%s\"", orig);
    oc_free(name), oc_free(orig);
    *changed = rc == OC_OK;
    return rc ? OC_ERR : OC_OK;
}

/* Never inferred: an Einsum is rewritten first (einsum_lower); ReduceL2 is lowered at
 * import (onnx_import.c). */
static int einsum_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)g, (void)opset;
    return oc_fail(err, "%s reached shape inference unrewritten", n->op_type);
}

static const op_role einsum_roles[] = {OP_IN_DATA};

const op_def op_def_einsum = {.min_inputs = 1,
                              .max_inputs = 2,
                              .min_outputs = 1,
                              .max_outputs = 1,
                              .roles = einsum_roles,
                              .n_roles = 1,
                              .infer = einsum_infer,
                              .lower = einsum_lower};

/* ReduceL2 likewise: lowered at import into Mul, ReduceSum and Sqrt (onnx_import.c). */
const op_def op_def_reduce_l2 = {
    .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1, .infer = einsum_infer};
