/* test_cuda_conformance.c — the ONNX node conformance suite
 * (tests/unit/test_conformance.c, included below) run on the cuda backend:
 * its three calls to the cpu kernels are redirected to functions that copy
 * the node's inputs to the GPU, run the node through the cuda backend
 * (run_node + sync), and copy the outputs back. Same cases, tolerances and
 * verdicts. Built by `make gpu-tests` (CUDA builds only); run by
 * tools/gpu-check. Without a GPU it prints one SKIP line and exits 77. */
#define cpu_kernel_supported conf_supported
#define cpu_kernel_scratch_bytes conf_scratch
#define cpu_kernel_run conf_run
#include "test_conformance.c"
#undef cpu_kernel_supported
#undef cpu_kernel_scratch_bytes
#undef cpu_kernel_run

#include "backend.h"
#include "cuda/backend_cuda.h"

static rt_backend *conf_backend(void) {
    static rt_backend *b;
    if (!b) {
        oc_err err;
        if (rt_backend_new("cuda", NULL, &b, &err)) {
            printf("SKIP cuda conformance: %s\n", err.msg);
            exit(77);
        }
    }
    return b;
}

bool conf_supported(int op) { return cuda_kernel_supported(op); }

size_t conf_scratch(const ir_graph *g, const ir_node *n) {
    rt_backend *b = conf_backend();
    return b->scratch_bytes(b, g, n, SIZE_MAX);
}

static size_t tensor_bytes(const ir_graph *g, int t) {
    int64_t bytes = 0;
    if (t < 0 || !ir_tensor_bytes(&g->tensors[t], &bytes)) return 0;
    return (size_t)bytes;
}

/* Host buffers of a (the harness's) -> device copies -> node -> back. */
int conf_run(const kernel_args *a, oc_err *err) {
    rt_backend *b = conf_backend();
    const ir_node *n = a->n;
    void *din[64] = {0}, *dout[64] = {0}, *scratch = NULL;
    int rc = OC_OK;
    for (int i = 0; i < n->n_inputs && rc == OC_OK; i++) {
        if (!a->in[i]) continue;
        size_t sz = tensor_bytes(a->g, n->inputs[i]);
        rc = b->dev_alloc(b, sz + 1, &din[i], err);
        if (rc == OC_OK && sz) b->copy(b, RT_STREAM_COMPUTE, din[i], a->in[i], sz);
    }
    for (int o = 0; o < n->n_outputs && rc == OC_OK; o++) {
        if (!a->out[o]) continue;
        for (int i = 0; i < n->n_inputs; i++) /* in-place outputs share the input's buffer */
            if (a->out[o] == a->in[i]) dout[o] = din[i];
        if (!dout[o]) rc = b->dev_alloc(b, tensor_bytes(a->g, n->outputs[o]) + 1, &dout[o], err);
    }
    size_t sb = b->scratch_bytes(b, a->g, n, SIZE_MAX);
    if (rc == OC_OK && sb) rc = b->dev_alloc(b, sb, &scratch, err);
    if (rc == OC_OK) {
        kernel_args d = *a;
        d.in = din;
        d.out = dout;
        d.scratch = scratch;
        d.scratch_bytes = sb;
        b->run_node(b, RT_STREAM_COMPUTE, &d, a->step);
        rc = b->sync(b, err);
        for (int o = 0; o < n->n_outputs && rc == OC_OK; o++)
            if (a->out[o])
                b->copy(b, RT_STREAM_COMPUTE, a->out[o], dout[o],
                        tensor_bytes(a->g, n->outputs[o]));
        if (rc == OC_OK) rc = b->sync(b, err);
    }
    for (int o = 0; o < n->n_outputs; o++) {
        bool shared = false;
        for (int i = 0; i < n->n_inputs; i++) shared |= dout[o] && dout[o] == din[i];
        if (!shared && dout[o]) b->dev_free(b, dout[o]);
    }
    for (int i = 0; i < n->n_inputs; i++)
        if (din[i]) b->dev_free(b, din[i]);
    if (scratch) b->dev_free(b, scratch);
    return rc;
}
