/* cuda_graph.c — the step as one CUDA graph (backend.h capture_*): the
 * compute stream captures, the copy streams join it through a fork event and
 * leave it through join events, and cudaStreamEndCapture hands back the DAG of
 * every kernel, copy and event of the step, launched later in one call.
 * Anything that fails while capturing (a call CUDA refuses in a capture, an
 * error a kernel wrapper records) makes capture_end fail with the reason;
 * nothing captured has run, so the caller runs the step on the streams. */
#include "cuda_internal.h"

static cuda_impl *impl(rt_backend *b) { return b->impl; }

int cuda_capture_begin(rt_backend *b, oc_err *err) {
    cuda_impl *im = impl(b);
    const ir_node *no_node = NULL;
    if (!im->fork_ev) {
        CU_CHECK_N(cudaEventCreateWithFlags(&im->fork_ev, cudaEventDisableTiming), no_node);
        for (int s = 0; s < RT_STREAM__COUNT; s++)
            CU_CHECK_N(cudaEventCreateWithFlags(&im->join_ev[s], cudaEventDisableTiming), no_node);
    }
    cudaStream_t c = im->s[RT_STREAM_COMPUTE];
    CU_CHECK_N(cudaStreamBeginCapture(c, cudaStreamCaptureModeThreadLocal), no_node);
    /* the copy streams join the capture: they wait on an event it recorded */
    cudaError_t rc = cudaEventRecord(im->fork_ev, c);
    for (int s = 0; s < RT_STREAM__COUNT && rc == cudaSuccess; s++)
        if (s != RT_STREAM_COMPUTE) rc = cudaStreamWaitEvent(im->s[s], im->fork_ev, 0);
    if (rc == cudaSuccess) return OC_OK;
    cudaGraph_t g = NULL; /* end the capture this left open */
    if (cudaStreamEndCapture(c, &g) == cudaSuccess && g) (void)cudaGraphDestroy(g);
    (void)cudaGetLastError();
    return oc_fail(err, "joining the copy streams to the capture: %s", cudaGetErrorString(rc));
}

int cuda_capture_end(rt_backend *b, oc_err *err) {
    cuda_impl *im = impl(b);
    cudaStream_t c = im->s[RT_STREAM_COMPUTE];
    cudaError_t rc = cudaSuccess;
    for (int s = 0; s < RT_STREAM__COUNT && rc == cudaSuccess; s++) {
        if (s == RT_STREAM_COMPUTE) continue;
        rc = cudaEventRecord(im->join_ev[s], im->s[s]);
        if (rc == cudaSuccess) rc = cudaStreamWaitEvent(c, im->join_ev[s], 0);
    }
    cudaGraph_t g = NULL;
    cudaError_t end = cudaStreamEndCapture(c, &g); /* always ends it */
    if (rc == cudaSuccess) rc = end;
    pthread_mutex_lock(&im->mu);
    bool recorded = im->err_set; /* an error a kernel wrapper met while capturing */
    oc_err why = im->err;
    im->err_set = false;
    pthread_mutex_unlock(&im->mu);
    if (rc != cudaSuccess || recorded) {
        im->cur_step = -1; /* the step's upload was captured, not run */
        if (g) (void)cudaGraphDestroy(g);
        (void)cudaGetLastError(); /* capture errors are not sticky */
        return recorded ? oc_fail(err, "%s", why.msg)
                        : oc_fail(err, "cudaStreamEndCapture: %s", cudaGetErrorString(rc));
    }
    rc = cudaGraphInstantiate(&im->graph, g, 0);
    (void)cudaGraphDestroy(g);
    if (rc != cudaSuccess) {
        im->graph = NULL;
        (void)cudaGetLastError();
        return oc_fail(err, "cudaGraphInstantiate: %s", cudaGetErrorString(rc));
    }
    return OC_OK;
}

void cuda_replay(rt_backend *b, int64_t step) {
    cuda_impl *im = impl(b);
    *im->step_host = step; /* the captured upload reads it (the last replay has synced) */
    im->cur_step = step;
    cudaError_t rc = cudaGraphLaunch(im->graph, im->s[RT_STREAM_COMPUTE]);
    if (rc != cudaSuccess) {
        oc_err e;
        cuda_fail_call(&e, "cudaGraphLaunch", cudaGetErrorString(rc), __FILE__, __LINE__,
                       "(the captured step)");
        pthread_mutex_lock(&im->mu);
        if (!im->err_set) im->err_set = true, im->err = e;
        pthread_mutex_unlock(&im->mu);
    }
}

void cuda_capture_free(rt_backend *b) {
    cuda_impl *im = impl(b);
    if (im->graph) (void)cudaGraphExecDestroy(im->graph);
    im->graph = NULL;
    if (im->fork_ev) {
        (void)cudaEventDestroy(im->fork_ev);
        for (int s = 0; s < RT_STREAM__COUNT; s++) (void)cudaEventDestroy(im->join_ev[s]);
        im->fork_ev = NULL;
    }
}
