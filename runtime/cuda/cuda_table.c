/* cuda_table.c — which ops the cuda backend runs, and which of them run on
 * half tensors natively, in every build (no CUDA headers): tests check them
 * without a GPU. Every
 * computing op of the list (ir/ops/op_list.h) has its cuda_<kern> in the
 * dispatch table of cuda_kernels.c — a missing one fails to link — so support
 * is membership in the list. */
#include "backend_cuda.h"
#include "cuda_launch.h"
#include "ir/ops/op_args.h"
#include "ir/ops/op_table.h"
#include "ir/ops/op_util.h"
#include "pointwise.h"

static const bool cuda_has[OP__COUNT] = {
#define CUDA_HAS_ROW(kind, name, domain, def, kern) [OP_##kind] = true,
    OC_OPS_COMPUTE(CUDA_HAS_ROW)
#undef CUDA_HAS_ROW
};

bool cuda_kernel_supported(int op) { return op >= 0 && op < OP__COUNT && cuda_has[op]; }

/* Input i holds data: BatchNormRelu's X, R; BatchNormalization's X;
 * the gradients' dY, X. */
static bool bn_data_input(const ir_node *n, int i) {
    switch (n->op) {
    case OP_BATCH_NORM_RELU: return i == 0 || i == 5;
    case OP_BATCH_NORM: return i == 0;
    default: return i <= 1; /* the gradients: dY, X */
    }
}

ir_dtype cuda_bn_relu_data_type(const ir_graph *g, const ir_node *n) {
    ir_dtype dt = g->tensors[n->outputs[0] >= 0 ? n->outputs[0] : n->inputs[0]].dtype;
    if (dt != IR_DTYPE_FLOAT && !ir_dtype_is_half(dt)) return IR_DTYPE_UNDEFINED;
    for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
        bool in = k < n->n_inputs;
        int t = in ? n->inputs[k] : n->outputs[k - n->n_inputs];
        if (t < 0) continue;
        bool data = in ? bn_data_input(n, k) : k == n->n_inputs;
        if (g->tensors[t].dtype != (data ? dt : IR_DTYPE_FLOAT)) return IR_DTYPE_UNDEFINED;
    }
    return dt;
}

/* The pointwise ops and their gradients (pointwise.h): cu_pointwise[_grad] on half. */
static const bool pointwise_op[OP__COUNT] = {
#define PW_ROW(kind, expr) [OP_##kind] = true,
    OC_POINTWISE_FORWARD(PW_ROW) OC_POINTWISE_GRAD(PW_ROW)
#undef PW_ROW
};

/* Add / Sub / Mul / Div into a half output (inputs 0 and 1), Sum (its inputs)
 * or Where (x and y: inputs 1 and 2): each operand of the output's type or
 * float32 (cu_binary_half, cu_sum_half and cu_where_half read both). */
static bool operands_half(const ir_graph *g, const ir_node *n, int from, int count) {
    if (n->n_inputs != from + count || n->n_outputs != 1 || n->outputs[0] < 0) return false;
    ir_dtype dt = g->tensors[n->outputs[0]].dtype;
    if (!ir_dtype_is_half(dt)) return false;
    for (int k = from; k < from + count; k++) {
        int t = n->inputs[k];
        if (t < 0 || (g->tensors[t].dtype != dt && g->tensors[t].dtype != IR_DTYPE_FLOAT))
            return false;
    }
    return true;
}

bool cuda_native_half(const ir_graph *g, const ir_node *n) {
    /* a plan-time float32 input the kernel takes from the node's arguments
     * (Dropout's ratio, Pow's exponent), not from the tensor */
    bool args_values = n->op == OP_DROPOUT || n->op == OP_DROPOUT_GRAD;
    if (n->op >= 0 && n->op < OP__COUNT && pointwise_op[n->op]) {
        args_values = true;
        goto one_type;
    }
    switch (n->op) {
    case OP_CONV:
    case OP_CONV_RELU:
    case OP_CONV_TRANSPOSE:
    case OP_CONV_BACKWARD_DATA:
    case OP_CONV_BACKWARD_FILTER:
    case OP_CONV_TRANSPOSE_BACKWARD_DATA:
    case OP_CONV_TRANSPOSE_BACKWARD_FILTER:
    case OP_MATMUL:
    case OP_MATMUL_GRAD_A:
    case OP_MATMUL_GRAD_B:
    case OP_LINEAR: break;
    case OP_BATCH_NORM:
    case OP_BATCH_NORM_GRAD:
    case OP_BATCH_NORM_RELU:
    case OP_BATCH_NORM_RELU_GRAD: return ir_dtype_is_half(cuda_bn_relu_data_type(g, n));
    case OP_GEMM: { /* C scaled by beta != 1 would round twice: widened */
        float beta = op_args_of(n)->gemm.beta;
        if (n->n_inputs > 2 && n->inputs[2] >= 0 && beta != 0.0f && beta != 1.0f) return false;
        break;
    }
    case OP_FLATTEN: /* byte movers (cuda_copy, cu_transpose, cu_slice, cu_copy_rows) */
    case OP_RESHAPE:
    case OP_UNSQUEEZE:
    case OP_SQUEEZE:
    case OP_IDENTITY:
    case OP_TRANSPOSE:
    case OP_SLICE:
    case OP_SLICE_GRAD:
    case OP_CONCAT:
    case OP_CONCAT_GRAD:
    case OP_SPLIT:
    case OP_SCATTER_ND:
    case OP_SCATTER_ND_GRAD:
    case OP_PAD:      /* cu_pad moves bytes; */
    case OP_PAD_GRAD: /* reflect / edge sum in float32, stored rounded once (pad_coord.h) */
    case OP_MAX_POOL: /* own kernels (cuDNN's pooling takes float32 only here) */
    case OP_MAX_POOL_GRAD:
    case OP_AVERAGE_POOL:
    case OP_AVERAGE_POOL_GRAD:
    case OP_GLOBAL_AVERAGE_POOL:
    case OP_GLOBAL_AVERAGE_POOL_GRAD: break;
    case OP_SUM: return n->n_inputs <= CU_SUM_MAX && operands_half(g, n, 0, n->n_inputs);
    case OP_ADD:
    case OP_SUB:
    case OP_MUL:
    case OP_DIV:
    case OP_PRELU: return operands_half(g, n, 0, 2);
    case OP_MAX:
    case OP_MIN: return n->n_inputs == 2 && operands_half(g, n, 0, 2);
    case OP_WHERE: return operands_half(g, n, 1, 2);
    case OP_WHERE_GRAD:
    case OP_RELU_GRAD_BIAS:
    case OP_REDUCE_SUM_TO:
    case OP_DROPOUT:
    case OP_DROPOUT_GRAD: break;
    default: return false;
    }
one_type:;
    ir_dtype dt = IR_DTYPE_UNDEFINED;
    for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
        int t = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
        if (t < 0) continue;
        ir_dtype x = g->tensors[t].dtype;
        if (!ir_dtype_is_compute(x)) continue; /* a shape, starts, axes, a mask */
        if (args_values && x == IR_DTYPE_FLOAT && op_is_value(&g->tensors[t])) continue;
        if (!ir_dtype_is_half(x) || (dt != IR_DTYPE_UNDEFINED && x != dt)) return false;
        dt = x;
    }
    return dt != IR_DTYPE_UNDEFINED;
}
