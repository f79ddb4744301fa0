/* main.c — outcore-run: trains a model for K steps on a backend.
 *
 *   outcore-run MODEL --backend cpu --batch N --steps K [--lr X --momentum X
 *               --weight-decay X --seed S] [--input X.pb --labels Y.pb]
 *               [--save OUT.onnx] [--dump-grads DIR] [--budget BYTES]
 *
 * MODEL is a training graph from `outcore-plan emit` or a forward model (the
 * in-core step is then built in-process). Every check (file, op support,
 * layout vs budget, input files) happens before the first step. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "backend.h"
#include "executor.h"
#include "init.h"
#include "loader.h"
#include "ir/onnx_export.h"
#include "ir/ops/op_table.h"
#include "tensor_io.h"

typedef struct run_opts {
    const char *model, *backend, *input, *labels, *save, *dump, *profile_out;
    int64_t batch, steps, budget;
    uint64_t seed;
    rt_load_opts lo;
    rt_backend_opts bo;
} run_opts;

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: outcore-run MODEL.onnx [--backend cpu] [--batch N] [--steps K] [--lr X]\n"
        "                   [--momentum X] [--weight-decay X] [--seed S]\n"
        "                   [--input X.pb --labels Y.pb] [--save OUT.onnx]\n"
        "                   [--dump-grads DIR] [--budget BYTES] [--profile-out P.json]\n"
        "                   [--deterministic] [--workspace-limit BYTES] [--verbose-algos]\n\n"
        "Trains MODEL (a training graph from `outcore-plan emit`, or a forward model) for K\n"
        "steps (default 1). Data: synthetic from --seed (inputs N(0,1), labels uniform in\n"
        "[0, C)), or the same batch every step from ONNX TensorProto files. Prints the loss\n"
        "per step, images/s, the arena high-water mark and capacity (--budget: the arena\n"
        "capacity; a layout that needs more is an error).\n"
        "--save: the forward model with the trained weights and BN statistics.\n"
        "--dump-grads: after step 0, DIR/loss.pb, DIR/grads/<i>.pb (TensorProto named after\n"
        "the parameter) and DIR/tensors/<i>.pb (inputs/outputs of Dropout and DropoutGrad).\n"
        "--backend cuda: cuDNN/cuBLAS on GPU 0 (fails with one line when no GPU is found).\n"
        "  Convolutions take cuDNN's first-ranked algorithm that fits the workspace (as PyTorch\n"
        "  does); --deterministic (or OC_CUDNN_DETERMINISTIC=1) takes deterministic ones only,\n"
        "  so repeated runs, and a plan vs its in-core run, give the same bits.\n"
        "  --workspace-limit (or OC_CUDNN_WORKSPACE_LIMIT=BYTES) caps a convolution's workspace\n"
        "  (default 8 GiB); --verbose-algos (or OC_CUDNN_VERBOSE=1) prints every algorithm "
        "choice.\n"
        "--profile-out (cuda): step 0 warms up, steps 1.. are timed per node with CUDA events;\n"
        "writes the medians, copy bandwidth and workspaces as a measured profile.json for\n"
        "outcore-plan (needs --steps >= 4).\n");
    int n;
    const rt_backend_kind *k = rt_backend_kinds(&n);
    fprintf(f, "Backends in this binary:");
    for (int i = 0; i < n; i++) fprintf(f, " %s%s", k[i].name, k[i].built() ? "" : " (not built)");
    fprintf(f, "\n");
}

static int parse_float(const char *opt, const char *v, float *out, oc_err *err) {
    char *end;
    double d = strtod(v, &end);
    if (end == v || *end || !(d >= 0) || d > 1e6)
        return oc_fail(err, "%s: '%s' is not a non-negative number", opt, v);
    *out = (float)d;
    return OC_OK;
}

static bool env_on(const char *name) {
    const char *s = getenv(name);
    return s && *s && strcmp(s, "0") != 0;
}

/* The backend options' defaults from the environment (OC_CUDNN_*); flags override. */
static int backend_opts_from_env(rt_backend_opts *bo, oc_err *err) {
    bo->deterministic = env_on("OC_CUDNN_DETERMINISTIC");
    bo->verbose = env_on("OC_CUDNN_VERBOSE");
    const char *s = getenv("OC_CUDNN_WORKSPACE_LIMIT");
    int64_t v;
    if (s && *s) {
        if (oc_parse_bytes(s, &v, err)) return oc_fail_prefix(err, "OC_CUDNN_WORKSPACE_LIMIT");
        if (v <= 0) return oc_fail(err, "OC_CUDNN_WORKSPACE_LIMIT must be positive");
        bo->workspace_limit = (size_t)v;
    }
    return OC_OK;
}

static int parse_args(int argc, char **argv, run_opts *o, oc_err *err) {
    o->backend = "cpu";
    if (backend_opts_from_env(&o->bo, err)) return OC_ERR;
    o->steps = 1;
    o->seed = 42;
    o->lo.train = train_opts_default();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-') {
            if (o->model) return oc_fail(err, "unexpected argument '%s'", a);
            o->model = a;
            continue;
        }
        if (strcmp(a, "--deterministic") == 0 || strcmp(a, "--verbose-algos") == 0) {
            *(a[2] == 'd' ? &o->bo.deterministic : &o->bo.verbose) = true;
            continue;
        }
        static const char *const with_value[] = {
            "--backend",    "--input",       "--labels",          "--save",
            "--dump-grads", "--profile-out", "--workspace-limit", "--batch",
            "--steps",      "--seed",        "--budget",          "--lr",
            "--momentum",   "--weight-decay"};
        bool known = false;
        for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++)
            known = known || strcmp(a, with_value[k]) == 0;
        if (!known) return oc_fail(err, "unknown option '%s' (see --help)", a);
        if (i + 1 >= argc) return oc_fail(err, "option %s needs a value", a);
        const char *v = argv[++i];
        int64_t n;
        if (strcmp(a, "--backend") == 0) o->backend = v;
        else if (strcmp(a, "--input") == 0) o->input = v;
        else if (strcmp(a, "--labels") == 0) o->labels = v;
        else if (strcmp(a, "--save") == 0) o->save = v;
        else if (strcmp(a, "--dump-grads") == 0) o->dump = v;
        else if (strcmp(a, "--profile-out") == 0) o->profile_out = v;
        else if (strcmp(a, "--workspace-limit") == 0) {
            if (oc_parse_bytes(v, &n, err)) return OC_ERR;
            if (n <= 0) return oc_fail(err, "--workspace-limit must be positive");
            o->bo.workspace_limit = (size_t)n;
        } else if (strcmp(a, "--batch") == 0) {
            if (oc_parse_int(v, 1, (int64_t)1 << 24, "--batch", &o->batch, err)) return OC_ERR;
        } else if (strcmp(a, "--steps") == 0) {
            if (oc_parse_int(v, 1, (int64_t)1 << 40, "--steps", &o->steps, err)) return OC_ERR;
        } else if (strcmp(a, "--seed") == 0) {
            if (oc_parse_int(v, 0, INT64_MAX, "--seed", &n, err)) return OC_ERR;
            o->seed = (uint64_t)n;
        } else if (strcmp(a, "--budget") == 0) {
            if (oc_parse_bytes(v, &o->budget, err)) return OC_ERR;
            if (o->budget <= 0) return oc_fail(err, "--budget must be positive");
        } else if (strcmp(a, "--lr") == 0) {
            if (parse_float(a, v, &o->lo.train.lr, err)) return OC_ERR;
            o->lo.lr_set = true;
        } else if (strcmp(a, "--momentum") == 0) {
            if (parse_float(a, v, &o->lo.train.momentum, err)) return OC_ERR;
            o->lo.momentum_set = true;
        } else if (strcmp(a, "--weight-decay") == 0) {
            if (parse_float(a, v, &o->lo.train.weight_decay, err)) return OC_ERR;
            o->lo.weight_decay_set = true;
        } else {
            return oc_fail(err, "unknown option '%s' (see --help)", a);
        }
    }
    if (!o->model) return oc_fail(err, "no MODEL given (see --help)");
    if (!o->input != !o->labels) return oc_fail(err, "--input and --labels go together");
    if (o->profile_out && o->steps < 4)
        return oc_fail(err,
                       "--profile-out needs --steps >= 4 (step 0 warms up, the rest are timed)");
    o->lo.batch = o->batch;
    return OC_OK;
}

static bool is_dropout(const ir_node *n) { return n->op == OP_DROPOUT || n->op == OP_DROPOUT_GRAD; }

/* Tensors to keep to the end of step 0 for --dump-grads. */
static bool *dump_keep(const train_graph *tg) {
    const ir_graph *g = tg->g;
    bool *keep = oc_calloc((size_t)g->n_tensors, sizeof(bool));
    keep[tg->loss_tensor] = true;
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].kind == IR_KIND_PARAMETER && tg->alias_of[t] < 0 && tg->grad_of[t] >= 0)
            keep[tg->grad_of[t]] = true;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        if (!is_dropout(n)) continue;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) keep[n->inputs[k]] = true;
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0) keep[n->outputs[k]] = true;
    }
    return keep;
}

static int dump_one(rt_exec *x, const ir_tensor *t, int tensor, const char *name, const char *path,
                    oc_err *err) {
    int64_t bytes = 0;
    ir_tensor_bytes(t, &bytes);
    void *buf = oc_malloc((size_t)(bytes ? bytes : 1));
    int rc = rt_exec_read(x, tensor, buf, err);
    if (rc == OC_OK) {
        ir_tensor named = *t;
        named.name = (char *)name;
        rc = onnx_export_tensor(&named, buf, path, err);
    }
    oc_free(buf);
    return rc;
}

static int make_dir(const char *path, oc_err *err) {
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        return oc_fail(err, "%s: cannot create directory: %s", path, strerror(errno));
    return OC_OK;
}

static int dump_grads(rt_exec *x, const train_graph *tg, const char *dir, oc_err *err) {
    const ir_graph *g = tg->g;
    char *sub = oc_sprintf("%s/grads", dir), *sub2 = oc_sprintf("%s/tensors", dir);
    int rc = make_dir(dir, err) || make_dir(sub, err) || make_dir(sub2, err) ? OC_ERR : OC_OK;
    char *p = oc_sprintf("%s/loss.pb", dir);
    if (rc == OC_OK)
        rc = dump_one(x, &g->tensors[tg->loss_tensor], tg->loss_tensor, "loss", p, err);
    oc_free(p);
    for (int t = 0; t < g->n_tensors && rc == OC_OK; t++) {
        if (g->tensors[t].kind != IR_KIND_PARAMETER || tg->alias_of[t] >= 0 || tg->grad_of[t] < 0)
            continue;
        p = oc_sprintf("%s/%d.pb", sub, t);
        int gt = tg->grad_of[t];
        rc = dump_one(x, &g->tensors[gt], gt, g->tensors[t].name, p, err);
        oc_free(p);
    }
    bool *done = oc_calloc((size_t)g->n_tensors, sizeof(bool));
    for (int i = 0; i < g->n_nodes && rc == OC_OK; i++) {
        const ir_node *n = &g->nodes[i];
        if (!is_dropout(n)) continue;
        for (int k = 0; k < n->n_inputs + n->n_outputs && rc == OC_OK; k++) {
            int t = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
            if (t < 0 || done[t]) continue;
            done[t] = true;
            p = oc_sprintf("%s/%d.pb", sub2, t);
            rc = dump_one(x, &g->tensors[t], t, g->tensors[t].name, p, err);
            oc_free(p);
        }
    }
    oc_free(done);
    oc_free(sub);
    oc_free(sub2);
    return rc;
}

/* Classes C of the loss: dim 1 of the scores the loss node reads. */
static int64_t n_classes(const train_graph *tg) {
    const ir_graph *g = tg->g;
    const ir_tensor *y = &g->tensors[g->nodes[tg->n_forward - 1].inputs[0]];
    return y->rank == 2 ? y->dims[1] : 1;
}

static void synth_batch(rt_exec *x, const train_graph *tg, uint64_t seed, int64_t step) {
    const ir_graph *g = tg->g;
    for (int i = 0; i < g->n_inputs; i++) {
        const ir_tensor *t = &g->tensors[g->inputs[i]];
        int64_t numel = 0;
        ir_tensor_numel(t, &numel);
        void *dst = rt_exec_host_input(x, i);
        uint64_t stream = (uint64_t)step * 16 + (uint64_t)i;
        if (t->dtype == IR_DTYPE_INT64) {
            int64_t c = n_classes(tg), *v = dst;
            for (int64_t k = 0; k < numel; k++)
                v[k] =
                    (int64_t)(rt_init_uniform(seed ^ 0x5eed, stream, (uint64_t)k) * (double)c) % c;
        } else if (t->dtype == IR_DTYPE_FLOAT) {
            float *v = dst;
            for (int64_t k = 0; k < numel; k++) { /* Box-Muller */
                double u1 = rt_init_uniform(seed ^ 0x5eed, stream, 2 * (uint64_t)k);
                double u2 = rt_init_uniform(seed ^ 0x5eed, stream, 2 * (uint64_t)k + 1);
                v[k] = (float)(sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2));
            }
        }
    }
}

/* The trained weights and statistics into the graph, then the forward part. */
static int save_model(rt_exec *x, train_graph *tg, const char *path, oc_err *err) {
    ir_graph *g = tg->g;
    for (int t = 0; t < g->n_tensors; t++) {
        ir_tensor *s = &g->tensors[t];
        if (!s->is_initializer || (s->kind != IR_KIND_PARAMETER && s->kind != IR_KIND_STATE))
            continue;
        int64_t bytes = 0;
        ir_tensor_bytes(s, &bytes);
        void *buf = oc_malloc((size_t)(bytes ? bytes : 1));
        int rc = rt_exec_read(x, t, buf, err);
        if (rc == OC_OK) ir_tensor_set_data(s, buf, (size_t)bytes);
        oc_free(buf);
        if (rc) return OC_ERR;
    }
    int loss_node = tg->n_forward - 1;
    int out = g->nodes[loss_node].inputs[0];
    /* The forward model only: a plan's SwapOut/SwapIn nodes (project domain) stay out. */
    bool *skip = oc_calloc((size_t)g->n_nodes, sizeof(bool));
    for (int i = 0; i < loss_node; i++) skip[i] = strcmp(g->nodes[i].domain, OC_DOMAIN) == 0;
    onnx_export_spec s = {.node_begin = 0,
                          .node_end = loss_node,
                          .inputs = g->inputs,
                          .n_inputs = 1,
                          .outputs = &out,
                          .n_outputs = 1,
                          .skip = skip};
    int rc = onnx_export_graph(g, &s, path, err);
    oc_free(skip);
    return rc;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int run(const run_opts *o, oc_err *err) {
    train_graph *tg = NULL;
    rt_backend *b = NULL;
    rt_exec *x = NULL;
    bool *keep = NULL;
    rt_model_info info = {0};
    int rc = OC_ERR, n_init = 0;
    if (rt_backend_new(o->backend, &o->bo, &b, err)) goto out;
    if (o->profile_out && !b->profile_start) {
        oc_fail(err, "--profile-out: backend '%s' has no profiler (cuda has)", b->name);
        goto out;
    }
    if (rt_load(o->model, &o->lo, &tg, &info, err)) goto out;
    ir_graph_print_notes(tg->g, "outcore-run", stderr);
    if (tg->label_tensor < 0) {
        oc_fail(err, "%s: the training step has no label input", o->model);
        goto out;
    }
    if (rt_init_missing(tg, o->seed, &n_init, err)) goto out;
    if (info.is_plan && o->dump) { /* a plan's layout frees what a dump would read */
        oc_fail(err, "%s: --dump-grads needs the in-core step, not a plan", o->model);
        goto out;
    }
    if (info.is_plan && o->budget && info.plan_arena_bytes > o->budget) {
        oc_fail(err, "--budget %" PRId64 ": the plan %s needs an arena of %" PRId64 " bytes",
                o->budget, o->model, info.plan_arena_bytes);
        goto out;
    }
    if (o->dump) keep = dump_keep(tg);
    rt_exec_opts eo = {.backend = b,
                       .capacity = o->budget,
                       .seed = o->seed,
                       .keep = keep,
                       .offsets = info.plan_offsets,
                       .planned_bytes = info.plan_arena_bytes};
    if (rt_exec_new(tg, &eo, &x, err)) {
        if (o->budget) oc_fail_prefix(err, "--budget %" PRId64, o->budget);
        goto out;
    }
    const ir_graph *g = tg->g;
    if (o->input) {
        int li = g->inputs[0] == tg->label_tensor ? 0 : 1;
        if (rt_tensor_read_pb(o->input, &g->tensors[g->inputs[1 - li]],
                              rt_exec_host_input(x, 1 - li), err) ||
            rt_tensor_read_pb(o->labels, &g->tensors[g->inputs[li]], rt_exec_host_input(x, li),
                              err))
            goto out;
        const int64_t *lab = rt_exec_host_input(x, li);
        int64_t nl = g->tensors[g->inputs[li]].dims[0], c = n_classes(tg);
        for (int64_t k = 0; k < nl; k++)
            if (lab[k] < 0 || lab[k] >= c) {
                oc_fail(err, "%s: label %" PRId64 " at %" PRId64 " is outside [0, %" PRId64 ")",
                        o->labels, lab[k], k, c);
                goto out;
            }
    }
    if (rt_exec_upload_initializers(x, err)) goto out;
    char hw[32], cap[32];
    if (info.is_plan)
        printf("plan: strategy %s, planned arena %" PRId64 " bytes, verified\n", info.plan_strategy,
               info.plan_arena_bytes);
    printf("model %s (%s), batch %" PRId64 ", %d nodes, backend %s, %d initializers initialised "
           "from seed %" PRIu64 "\n",
           o->model, info.is_training_graph ? "training graph" : "forward model", info.batch,
           g->n_nodes, b->name, n_init, o->seed);
    fflush(stdout);
    /* Synthetic batches are generated on the host each step; that time is not
     * training time, so it is left out of images/s. */
    double t0 = now_s(), t_first = 0, synth_first = 0, synth_rest = 0;
    int64_t dev_peak = -1; /* cuda: device bytes in use, the most seen after any step */
    for (int64_t step = 0; step < o->steps; step++) {
        if (!o->input) {
            double ts = now_s();
            synth_batch(x, tg, o->seed, step);
            *(step == 0 ? &synth_first : &synth_rest) += now_s() - ts;
        }
        float loss;
        if (rt_exec_step(x, step, &loss, err)) goto out;
        if (step == 0) t_first = now_s();
        /* after the sync: lazily loaded modules included */
        int64_t used = b->device_used ? b->device_used(b) : -1;
        if (used > dev_peak) dev_peak = used;
        printf("step %" PRId64 " loss %.6f\n", step, (double)loss);
        fflush(stdout);
        if (!isfinite(loss)) {
            oc_fail(err, "step %" PRId64 ": loss is not finite", step);
            goto out;
        }
        if (step == 0 && o->dump && dump_grads(x, tg, o->dump, err)) goto out;
        if (step == 0 && o->profile_out && b->profile_start(b, tg->g, err)) goto out;
    }
    double t1 = now_s();
    double secs = o->steps > 1 ? t1 - t_first - synth_rest : t1 - t0 - synth_first;
    int64_t timed = o->steps > 1 ? o->steps - 1 : 1;
    printf("images/s %.2f (%" PRId64 " steps after the first, %.3f s)\n",
           (double)(timed * info.batch) / (secs > 0 ? secs : 1e-9), timed, secs);
    printf("arena high-water %s (%" PRId64 " bytes), capacity %s (%" PRId64 " bytes)\n",
           oc_fmt_bytes(rt_exec_high_water(x), hw, sizeof hw), rt_exec_high_water(x),
           oc_fmt_bytes(rt_exec_capacity(x), cap, sizeof cap), rt_exec_capacity(x));
    if (dev_peak >= 0)
        printf("device memory in use %s (%" PRId64 " bytes: context, handles, arena, workspace; "
               "the most seen after any step)\n",
               oc_fmt_bytes(dev_peak, hw, sizeof hw), dev_peak);
    if (o->profile_out) {
        if (b->profile_write(b, tg, info.batch, o->profile_out, err)) goto out;
        printf("profile %s\n", o->profile_out);
    }
    if (o->save) {
        if (save_model(x, tg, o->save, err)) goto out;
        printf("saved %s\n", o->save);
    }
    rc = OC_OK;
out:
    rt_exec_free(x);
    rt_backend_free(b);
    train_graph_free(tg);
    rt_model_info_free(&info);
    oc_free(keep);
    return rc;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
    run_opts o = {0};
    oc_err err;
    if (parse_args(argc, argv, &o, &err) || run(&o, &err)) {
        fputs("outcore-run: error: ", stderr);
        oc_fputs_escaped(err.msg, stderr);
        fputc('\n', stderr);
        return 1;
    }
    return 0;
}
