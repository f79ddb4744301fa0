/* cuda_table.c — which ops the cuda backend runs, and which of them run on
 * half tensors natively, in every build (no CUDA headers): tests check them
 * without a GPU. Every
 * computing op of the list (ir/ops/op_list.h) has its cuda_<kern> in the
 * dispatch table of cuda_kernels.c — a missing one fails to link — so support
 * is membership in the list. */
#include "backend_cuda.h"
#include "ir/ops/op_args.h"
#include "ir/ops/op_table.h"

static const bool cuda_has[OP__COUNT] = {
#define CUDA_HAS_ROW(kind, name, domain, def, kern) [OP_##kind] = true,
    OC_OPS_COMPUTE(CUDA_HAS_ROW)
#undef CUDA_HAS_ROW
};

bool cuda_kernel_supported(int op) { return op >= 0 && op < OP__COUNT && cuda_has[op]; }

/* Input i of BatchNormRelu (X, R) or its gradient (dY, Y, X) holds data. */
static bool bn_data_input(const ir_node *n, int i) {
    return n->op == OP_BATCH_NORM_RELU ? i == 0 || i == 5 : i <= 2;
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

bool cuda_native_half(const ir_graph *g, const ir_node *n) {
    switch (n->op) {
    case OP_CONV:
    case OP_CONV_TRANSPOSE:
    case OP_CONV_BACKWARD_DATA:
    case OP_CONV_BACKWARD_FILTER:
    case OP_CONV_TRANSPOSE_BACKWARD_DATA:
    case OP_CONV_TRANSPOSE_BACKWARD_FILTER:
    case OP_MATMUL:
    case OP_MATMUL_GRAD_A:
    case OP_MATMUL_GRAD_B: break;
    case OP_BATCH_NORM_RELU:
    case OP_BATCH_NORM_RELU_GRAD: return ir_dtype_is_half(cuda_bn_relu_data_type(g, n));
    case OP_GEMM: { /* C scaled by beta != 1 would round twice: widened */
        float beta = op_args_of(n)->gemm.beta;
        if (n->n_inputs > 2 && n->inputs[2] >= 0 && beta != 0.0f && beta != 1.0f) return false;
        break;
    }
    default: return false;
    }
    ir_dtype dt = IR_DTYPE_UNDEFINED;
    for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
        int t = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
        if (t < 0) continue;
        ir_dtype x = g->tensors[t].dtype;
        if (!ir_dtype_is_half(x) || (dt != IR_DTYPE_UNDEFINED && x != dt)) return false;
        dt = x;
    }
    return dt != IR_DTYPE_UNDEFINED;
}
