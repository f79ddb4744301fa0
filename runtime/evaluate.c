/* evaluate.c — see evaluate.h. */
#include "evaluate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"
#include "ir/shape_infer.h"
#include "train/eval_graph.h"

/* Adds the cross-entropy and hits of rows [0, rows) of the loss's scores
 * [rows, C] (one row per sample, or per position: add_loss flattens them);
 * rows whose label is the ignored one count in neither (*counted: the rest). */
static void score(const float *logits, const int64_t *labels, int64_t rows, int64_t classes,
                  int64_t ignore, double *loss, int64_t *hits, int64_t *counted) {
    for (int64_t r = 0; r < rows; r++) {
        if (labels[r] == ignore) continue;
        (*counted)++;
        const float *z = logits + r * classes;
        double mx = z[0];
        int64_t arg = 0;
        for (int64_t c = 1; c < classes; c++)
            if (z[c] > mx) mx = z[c], arg = c;
        double sum = 0;
        for (int64_t c = 0; c < classes; c++) sum += exp((double)z[c] - mx);
        int64_t y = labels[r];
        *loss += mx + log(sum) - (double)z[y];
        *hits += arg == y;
    }
}

int rt_evaluate(rt_exec *x, train_graph *tg, rt_backend *b, const rt_dataset *d, int64_t batch,
                rt_eval *r, oc_err *err) {
    memset(r, 0, sizeof *r);
    ir_graph *g = NULL;
    train_graph *eg = NULL;
    rt_exec *ex = NULL;
    bool *keep = NULL;
    float *logits = NULL;
    int64_t *idx = NULL;
    ir_bind_opts bo = {.batch = batch};
    train_opts o = tg->opts;
    o.forward_only = true;
    /* The trained forward model, in memory (no file: nothing to clean up). */
    uint8_t *model = NULL;
    size_t model_len = 0;
    int rc = rt_save_buffer(x, tg, NULL, &model, &model_len, err);
    if (rc == OC_OK)
        rc = ir_load_model_buffer(model, model_len, "<evaluation model>", &bo, &g, err);
    oc_free(model);
    if (rc == OC_OK) rc = eval_graph_make(g, err);
    if (rc == OC_OK) {
        rc = train_build(g, &o, &eg, err); /* g consumed */
        g = NULL;
    }
    if (rc) goto out;
    const ir_graph *G = eg->g;
    int out = G->nodes[eg->n_forward - 1].inputs[0];
    const ir_tensor *lt = &G->tensors[out]; /* [batch * positions, C] */
    int64_t classes = lt->dims[1], per = lt->dims[0] / batch * classes,
            spatial = lt->dims[0] / batch;
    keep = oc_calloc((size_t)G->n_tensors, sizeof(bool));
    keep[out] = true;
    rt_exec_opts eo = {.backend = b, .seed = 0, .keep = keep};
    if ((rc = rt_exec_new(eg, &eo, &ex, err)) || (rc = rt_exec_upload_initializers(ex, err)))
        goto out;
    int li = train_label_input(eg);
    void *bufs[RT_DATA_MAX];
    int n_data = rt_exec_data_buffers(ex, bufs, RT_DATA_MAX);
    if (n_data != d->n_x) {
        rc = oc_fail(err, "the evaluation model has %d data inputs, the data set %d", n_data,
                     d->n_x);
        goto out;
    }
    logits = oc_malloc((size_t)(batch * per) * sizeof(float));
    idx = oc_malloc((size_t)batch * sizeof(int64_t));
    double loss = 0;
    int64_t hits = 0, counted = 0;
    for (int64_t at = 0; at < d->n && rc == OC_OK; at += batch) {
        int64_t rows = d->n - at < batch ? d->n - at : batch;
        for (int64_t k = 0; k < batch; k++) idx[k] = k < rows ? at + k : at; /* padding */
        rt_dataset_gather(d, idx, batch, bufs, rt_exec_host_input(ex, li));
        float l;
        if ((rc = rt_exec_step(ex, 0, &l, err)) || (rc = rt_exec_read(ex, out, logits, err))) break;
        score(logits, rt_exec_host_input(ex, li), rows * spatial, classes, o.ignore_index, &loss,
              &hits, &counted);
    }
    r->samples = d->n;
    r->loss = counted ? loss / (double)counted : 0;
    r->accuracy = counted ? (double)hits / (double)counted : 0;
out:
    rt_exec_free(ex);
    train_graph_free(eg);
    ir_graph_free(g);
    oc_free(keep);
    oc_free(logits);
    oc_free(idx);
    return rc;
}
