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
#include "checkpoint.h"
#include "dataset.h"
#include "evaluate.h"
#include "executor.h"
#include "init.h"
#include "loader.h"
#include "ir/onnx_export.h"
#include "ir/ops/op_args.h"
#include "ir/ops/op_table.h"
#include "tensor_io.h"
#include "trace_out.h"

typedef struct run_opts {
    const char *model, *backend, *input, *labels, *save, *dump, *profile_out, *trace_out;
    const char *data, *eval_data, *eval_labels, *resume;
    const char *device;            /* --device PRESET: the figures --layout auto weighs */
    const char *device_file;       /* --device-file FILE: the same from a device JSON */
    profile_device device_figures; /* what --device / --device-file gave (parsed once) */
    bool layout_fixed;             /* --layout nchw|nhwc (else auto) */
    int64_t batch, steps, epochs, budget, save_every;
    bool steps_set;
    uint64_t seed;
    rt_load_opts lo;
    rt_backend_opts bo;
} run_opts;

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: outcore-run MODEL.onnx [--backend cpu] [--batch N] [--steps K] [--lr X]\n"
        "                   [--momentum X] [--weight-decay X] [--seed S]\n"
        "                   [--input X.pb --labels Y.pb | --data X.npy --labels Y.npy\n"
        "                    [--epochs E] [--eval-data X.npy --eval-labels Y.npy]]\n"
        "                   [--save OUT.onnx [--save-every N]] [--resume CKPT.onnx]\n"
        "                   [--bn train|frozen] [--optimizer sgd|adamw] [--betas B1,B2]\n"
        "                   [--eps E] [--clip-grad-norm MAX] [--ignore-index K] [--no-fuse]\n"
        "                   [--layout auto|nchw|nhwc [--device PRESET|--device-file F]]\n"
        "                   [--precision fp32|bf16|fp16] [--loss-scale S|auto|none]\n"
        "                   [--loss-scale-interval N] [--freeze P[,P..]]\n"
        "                   [--dump-grads DIR] [--budget BYTES] [--profile-out P.json]\n"
        "                   [--trace-out T.json]\n"
        "                   [--deterministic] [--workspace-limit BYTES] [--verbose-algos]\n"
        "                   [--tf32-conv on|off] [--tf32-matmul on|off] [--cuda-graph on|off]\n"
        "                   [--conv-algo heuristic|measure]\n"
        "                   [--conv-api legacy|graph|auto]\n\n"
        "Trains MODEL (a training graph from `outcore-plan emit`, a plan, or a forward model)\n"
        "for K steps (default 1). Data: synthetic from --seed (inputs N(0,1), labels uniform\n"
        "in [0, C); token ids uniform in [0, C), further integer inputs ones: an attention\n"
        "mask that masks nothing), the same batch every step from ONNX TensorProto files\n"
        "(--input), or a data set (--data: NumPy float32 or int64 [N, ...] and int64/int32\n"
        "labels [N], memory-mapped); a model with several data inputs (token ids and an\n"
        "attention mask) takes one file each, comma-separated, in its input order (a step\n"
        "that computes its own loss, `emit --loss model`: all of them, no labels),\n"
        "a data set visited in a new shuffled order each epoch (from --seed), full batches only, "
        "for\n"
        "--epochs E (default 1) or --steps K; --eval-data/--eval-labels: after each epoch, the\n"
        "mean loss and accuracy of the held-out set in inference mode (BN running statistics,\n"
        "no dropout). Prints the loss per step, images/s, the arena high-water mark and\n"
        "capacity (--budget: the arena capacity; a layout that needs more is an error).\n"
        "BatchNormalization trains as model.train() does (an inference-form BN, as torch 2.x\n"
        "exports it, too: batch statistics, running statistics updated); --bn frozen keeps\n"
        "every BN on its running statistics (fine-tuning; scale and bias still train).\n"
        "Optimizer: SGD with momentum; outcore's defaults are lr 0.1, momentum 0.9, weight\n"
        "decay 1e-4 (the ImageNet recipe; torch.optim.SGD's are momentum 0, weight decay 0).\n"
        "--optimizer adamw: torch.optim.AdamW (bias correction; --betas 0.9,0.999 and --eps 1e-8\n"
        "by default; --weight-decay is its decoupled decay, give it: torch's default is 0.01).\n"
        "--clip-grad-norm MAX: every gradient scaled so that their global L2 norm is at most\n"
        "MAX (torch.nn.utils.clip_grad_norm_); every update then waits for every gradient.\n"
        "--precision bf16|fp16: mixed precision with PyTorch autocast's rules (convolutions\n"
        "and matrix products in half, softmax, norms and losses in float32, float32 master\n"
        "weights and optimizer; docs/mixed-precision.md). --loss-scale: torch.amp.GradScaler's\n"
        "dynamic loss scale from S (auto: 65536 with fp16, none otherwise), doubled after\n"
        "--loss-scale-interval N (default 2000) steps without inf/NaN gradients, halved and\n"
        "the update skipped on one; each step line shows the scale.\n"
        "The loss: softmax cross-entropy on [N, C] (or [N, C, d..] per position) scores, or on\n"
        "a language model's [N, T, V] logits (a model whose input is token ids [N, T]) with\n"
        "labels [N, T]; labels equal to --ignore-index (default -100, PyTorch's) count in no\n"
        "loss.\n"
        "--freeze P[,P..]: the parameters whose names match a pattern (* ? [..], as in a\n"
        "shell) take no gradient and no update (PyTorch's requires_grad False: fine-tuning\n"
        "with a frozen backbone); their BatchNorms' running statistics still update, and\n"
        "--save writes them back unchanged. A pattern matching nothing is refused.\n"
        "BatchNormalization [+ a residual Add] + Relu run as one fused node (BatchNormRelu:\n"
        "the sum never written, one backward kernel; the same numbers), a decomposed GELU\n"
        "(opset < 20: Tanh or Erf and ~8 Mul/Add) as one Gelu; --no-fuse keeps them apart.\n"
        "--layout nhwc: convolutions, BatchNorm and pooling on channels-last (N, H, W, C)\n"
        "tensors, explicit Transposes where the layout changes (cuDNN's fastest convolutions;\n"
        "the same numbers on cpu; docs/fast-step.md). --layout auto (the default): the step\n"
        "is built in both layouts and the one predicted faster kept (one notice says which),\n"
        "each node priced with the figures of --device PRESET (v100, a100, h100, h200; by\n"
        "default the GPU's own by its name, as `outcore-plan plan --layout auto` would) or\n"
        "of --device-file F (outcore-plan's device JSON, docs/profile.md);\n"
        "nchw, the model's own, on the cpu or a GPU with no preset.\n"
        "--save: the forward model with the trained weights and BN statistics, each under its\n"
        "name in MODEL (PyTorch loads them by state-dict key), plus the momentum and the step\n"
        "reached: a checkpoint; written whole or not at all. --save-every N: also every N\n"
        "steps. --resume: continue from such a checkpoint (same model, batch, data and seed):\n"
        "on the cpu backend the result is bit for bit that of a run that never stopped.\n"
        "--dump-grads: after step 0, DIR/loss.pb, DIR/grads/<i>.pb (TensorProto named after\n"
        "the parameter) and DIR/tensors/<i>.pb (inputs/outputs of Dropout and DropoutGrad).\n"
        "--backend cuda: cuDNN/cuBLAS on GPU 0 (fails with one line when no GPU is found).\n"
        "  Convolutions take cuDNN's first-ranked algorithm that fits the workspace (as PyTorch\n"
        "  does); --deterministic (or OC_CUDNN_DETERMINISTIC=1) takes deterministic ones only,\n"
        "  so repeated runs, and a plan vs its in-core run, give the same bits.\n"
        "  --conv-algo measure: each shape's fastest of the first 4 candidates that fit, timed\n"
        "  on its first run (cudnn.benchmark's idea; the workspace is the largest of them;\n"
        "  timings vary, so not with --deterministic, and runs may differ in the last bits).\n"
        "  --conv-api graph (or OC_CUDNN_CONV_API=graph): convolutions through cuDNN's graph\n"
        "  API, its heuristics' first engine configuration that fits (PyTorch's path; the\n"
        "  legacy calls reach fewer kernels); a shape it refuses takes the legacy calls, said\n"
        "  once; with --conv-algo measure its first 4 configurations are timed.\n"
        "  --conv-api auto: each shape's graph API plan and legacy algorithm (4 of each with\n"
        "  --conv-algo measure) timed on its first run, the fastest kept (not with\n"
        "  --deterministic: then the legacy calls).\n"
        "  --workspace-limit (or OC_CUDNN_WORKSPACE_LIMIT=BYTES) caps a convolution's workspace\n"
        "  (default 8 GiB); --verbose-algos (or OC_CUDNN_VERBOSE=1) prints every algorithm "
        "choice.\n"
        "  TF32 as PyTorch's switches and defaults: --tf32-conv on (torch.backends.cudnn.\n"
        "  allow_tf32: convolutions on TF32 tensor cores; off: FMA math), --tf32-matmul off\n"
        "  (torch.backends.cuda.matmul.allow_tf32: Gemm/MatMul in full fp32; on: TF32).\n"
        "  --cuda-graph on: the second step is captured as one CUDA graph and replayed from\n"
        "  then on (one launch per step); a failed capture runs on the streams, said once.\n"
        "  Default off (not yet measured on a GPU).\n"
        "--profile-out (cuda): step 0 warms up, steps 1.. are timed per node with CUDA events;\n"
        "writes the medians, copy bandwidth and workspaces as a measured profile.json for\n"
        "outcore-plan (needs --steps >= 4).\n"
        "--trace-out: steps 1.. timed op by op on every stream (backend timestamps: CUDA\n"
        "events, or the cpu streams' clock), written as a Chrome trace (chrome://tracing,\n"
        "Perfetto) in the planner's --trace format; tools/calibrate fits the simulator's\n"
        "contention model from it (needs --steps >= 2; the stamps cost a little time).\n");
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
    const char *algo = getenv("OC_CUDNN_CONV_ALGO"); /* measure | heuristic (the default) */
    if (algo && *algo && strcmp(algo, "measure") && strcmp(algo, "heuristic"))
        return oc_fail(err, "OC_CUDNN_CONV_ALGO: '%s' is not one of heuristic, measure", algo);
    bo->conv_measure = algo && strcmp(algo, "measure") == 0;
    const char *api = getenv("OC_CUDNN_CONV_API"); /* graph | legacy (the default) */
    if (api && *api && strcmp(api, "graph") && strcmp(api, "legacy") && strcmp(api, "auto"))
        return oc_fail(err, "OC_CUDNN_CONV_API: '%s' is not one of legacy, graph, auto", api);
    bo->conv_graph = api && (strcmp(api, "graph") == 0 || strcmp(api, "auto") == 0);
    bo->conv_auto = api && strcmp(api, "auto") == 0;
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
        if (strcmp(a, "--no-fuse") == 0) {
            o->lo.train.fuse = TRAIN_FUSE_NONE;
            o->lo.structure_set = a;
            continue;
        }
        if (strcmp(a, "--deterministic") == 0 || strcmp(a, "--verbose-algos") == 0) {
            *(a[2] == 'd' ? &o->bo.deterministic : &o->bo.verbose) = true;
            continue;
        }
        static const char *const with_value[] = {
            "--backend",     "--input",       "--labels",       "--save",
            "--dump-grads",  "--profile-out", "--trace-out",    "--workspace-limit",
            "--batch",       "--steps",       "--seed",         "--budget",
            "--lr",          "--momentum",    "--weight-decay", "--data",
            "--epochs",      "--eval-data",   "--eval-labels",  "--save-every",
            "--resume",      "--bn",          "--tf32-conv",    "--tf32-matmul",
            "--cuda-graph",  "--conv-algo",   "--conv-api",     "--device",
            "--device-file", TRAIN_OPTS_FLAGS};
        bool known = false;
        for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++)
            known = known || strcmp(a, with_value[k]) == 0;
        if (!known) return oc_fail(err, "unknown option '%s' (see --help)", a);
        if (i + 1 >= argc) return oc_fail(err, "option %s needs a value", a);
        const char *v = argv[++i];
        int64_t n;
        if (strcmp(a, "--layout") == 0 && strcmp(v, "auto") == 0) continue; /* the default */
        o->layout_fixed = o->layout_fixed || strcmp(a, "--layout") == 0;
        if (strncmp(a, "--device", 8) == 0) {
            bool file = a[8] == '-';
            profile_device *d = &o->device_figures;
            if (file ? device_read_file(v, d, err) : device_preset_find(v, d, err))
                return oc_fail_prefix(err, "%s", a);
            *(file ? &o->device_file : &o->device) = v;
            o->lo.structure_set = a; /* weighs a forward model's step only */
            continue;
        }
        int shared = train_opts_parse(&o->lo.train, a, v, err);
        if (shared < 0) return OC_ERR;
        if (shared) o->lo.structure_set = a;
        else if (strcmp(a, "--backend") == 0) o->backend = v;
        else if (strcmp(a, "--input") == 0) o->input = v;
        else if (strcmp(a, "--labels") == 0) o->labels = v;
        else if (strcmp(a, "--save") == 0) o->save = v;
        else if (strcmp(a, "--dump-grads") == 0) o->dump = v;
        else if (strcmp(a, "--profile-out") == 0) o->profile_out = v;
        else if (strcmp(a, "--trace-out") == 0) o->trace_out = v;
        else if (strcmp(a, "--data") == 0) o->data = v;
        else if (strcmp(a, "--eval-data") == 0) o->eval_data = v;
        else if (strcmp(a, "--eval-labels") == 0) o->eval_labels = v;
        else if (strcmp(a, "--resume") == 0) o->resume = v;
        else if (strncmp(a, "--tf32-", 7) == 0 || strcmp(a, "--cuda-graph") == 0) {
            if (strcmp(v, "on") && strcmp(v, "off"))
                return oc_fail(err, "%s: '%s' is not one of on, off", a, v);
            if (a[2] == 'c') o->bo.cuda_graph = v[1] == 'n';
            else if (a[7] == 'c') o->bo.no_tf32_conv = v[1] == 'f';
            else o->bo.tf32_matmul = v[1] == 'n';
        } else if (strcmp(a, "--conv-algo") == 0) {
            if (strcmp(v, "heuristic") && strcmp(v, "measure"))
                return oc_fail(err, "--conv-algo: '%s' is not one of heuristic, measure", v);
            o->bo.conv_measure = v[0] == 'm';
        } else if (strcmp(a, "--conv-api") == 0) {
            if (strcmp(v, "legacy") && strcmp(v, "graph") && strcmp(v, "auto"))
                return oc_fail(err, "--conv-api: '%s' is not one of legacy, graph, auto", v);
            o->bo.conv_graph = v[0] != 'l';
            o->bo.conv_auto = v[0] == 'a';
        } else if (strcmp(a, "--bn") == 0) {
            if (strcmp(v, "train") && strcmp(v, "frozen"))
                return oc_fail(err, "--bn: '%s' is not one of train, frozen", v);
            o->lo.train.bn_frozen = v[0] == 'f';
        } else if (strcmp(a, "--epochs") == 0) {
            if (oc_parse_int(v, 1, (int64_t)1 << 30, "--epochs", &o->epochs, err)) return OC_ERR;
        } else if (strcmp(a, "--save-every") == 0) {
            if (oc_parse_int(v, 1, (int64_t)1 << 40, "--save-every", &o->save_every, err))
                return OC_ERR;
        } else if (strcmp(a, "--workspace-limit") == 0) {
            if (oc_parse_bytes(v, &n, err)) return OC_ERR;
            if (n <= 0) return oc_fail(err, "--workspace-limit must be positive");
            o->bo.workspace_limit = (size_t)n;
        } else if (strcmp(a, "--batch") == 0) {
            if (oc_parse_int(v, 1, (int64_t)1 << 24, "--batch", &o->batch, err)) return OC_ERR;
        } else if (strcmp(a, "--steps") == 0) {
            if (oc_parse_int(v, 1, (int64_t)1 << 40, "--steps", &o->steps, err)) return OC_ERR;
            o->steps_set = true;
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
    if (o->device && o->device_file)
        return oc_fail(err, "give --device or --device-file, not both");
    if ((o->device || o->device_file) && o->layout_fixed)
        return oc_fail(err, "%s weighs the layouts of --layout auto, not a fixed --layout",
                       o->device ? "--device" : "--device-file");
    if (o->input && o->data) return oc_fail(err, "--input and --data exclude each other");
    if (o->labels && !(o->input || o->data))
        return oc_fail(err, "--labels goes with --input (TensorProto) or --data (NumPy)");
    if (o->epochs && !o->data) return oc_fail(err, "--epochs needs --data");
    if (o->epochs && o->steps_set) return oc_fail(err, "give --epochs or --steps, not both");
    if (!o->eval_data != !o->eval_labels)
        return oc_fail(err, "--eval-data and --eval-labels go together");
    if (o->eval_data && !o->data) return oc_fail(err, "--eval-data needs --data");
    if (o->save_every && !o->save) return oc_fail(err, "--save-every needs --save");
    if (o->profile_out && o->steps < 4)
        return oc_fail(err,
                       "--profile-out needs --steps >= 4 (step 0 warms up, the rest are timed)");
    if (o->bo.cuda_graph && (o->profile_out || o->trace_out))
        return oc_fail(err, "--cuda-graph on replays the step whole: --profile-out and --trace-out "
                            "time it node by node on the streams (give one or the other)");
    if (o->trace_out && o->steps < 2)
        return oc_fail(err,
                       "--trace-out needs --steps >= 2 (step 0 warms up, the rest are traced)");
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

/* Classes C of the loss: dim 1 of the scores the loss node reads (a loss the model computes
 * its own way, --loss model: its last node's first input, 1 when that is not [N, C, ..]). */
static int64_t n_classes(const train_graph *tg) {
    const ir_graph *g = tg->g;
    int s = g->nodes[tg->n_forward - 1].inputs[0];
    const ir_tensor *y = s >= 0 ? &g->tensors[s] : NULL;
    return y && y->rank >= 2 && y->dims[1] > 0 ? y->dims[1] : 1;
}

/* The optimizer in effect (the first update node's decoded arguments). */
static void print_optimizer(const train_graph *tg) {
    const ir_graph *g = tg->g;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == OP_SGD_MOMENTUM) {
            const op_sgd_args *p = &op_args_of(&g->nodes[i])->sgd;
            printf("optimizer: SGD, lr %g, momentum %g, weight decay %g (outcore's defaults are "
                   "lr 0.1, momentum 0.9, weight decay 1e-4; torch.optim.SGD's are momentum 0, "
                   "weight decay 0)\n",
                   (double)p->lr, (double)p->momentum, (double)p->weight_decay);
            return;
        } else if (g->nodes[i].op == OP_ADAMW) {
            const op_adamw_args *p = &op_args_of(&g->nodes[i])->adamw;
            printf("optimizer: AdamW, lr %g, betas (%g, %g), eps %g, weight decay %g\n",
                   (double)p->lr, (double)p->beta1, (double)p->beta2, (double)p->epsilon,
                   (double)p->weight_decay);
            return;
        }
}

static void print_clipping(const train_graph *tg) {
    const ir_graph *g = tg->g;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == OP_CLIP_GRAD_NORM)
            printf("gradient clipping: the global L2 norm of the gradients at most %g\n",
                   (double)op_args_of(&g->nodes[i])->clip_norm.max_norm);
}

/* --loss-scale: the GradScaler node's scale state (tensor index), or -1. */
static int print_loss_scaling(const train_graph *tg) {
    const ir_graph *g = tg->g;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        if (n->op != OP_GRAD_SCALER) continue;
        const op_grad_scaler_args *p = &op_args_of(n)->grad_scaler;
        float s = 0;
        const ir_tensor *st = &g->tensors[n->inputs[0]];
        if (st->data_src == IR_DATA_INLINE && st->data_bytes == sizeof s) memcpy(&s, st->data, 4);
        printf("loss scaling (torch.amp.GradScaler): scale %g, x%g after %" PRId64
               " steps without inf/NaN, x%g and the step skipped on inf/NaN gradients\n",
               (double)s, (double)p->growth, p->interval, (double)p->backoff);
        return n->inputs[0];
    }
    return -1;
}

static void synth_batch(rt_exec *x, const train_graph *tg, uint64_t seed, int64_t step) {
    const ir_graph *g = tg->g;
    bool ids_done = false; /* the first integer data input: token ids; the rest: ones */
    for (int i = 0; i < g->n_inputs; i++) {
        const ir_tensor *t = &g->tensors[g->inputs[i]];
        int64_t numel = 0;
        if (t->is_host_input) continue; /* computed from the batch (rt_exec_step) */
        ir_tensor_numel(t, &numel);
        void *dst = rt_exec_host_input(x, i);
        uint64_t stream = (uint64_t)step * 16 + (uint64_t)i;
        if (t->dtype == IR_DTYPE_INT64 && g->inputs[i] != tg->label_tensor && ids_done) {
            int64_t *v = dst;
            for (int64_t k = 0; k < numel; k++) v[k] = 1;
        } else if (t->dtype == IR_DTYPE_INT64) {
            int64_t c = n_classes(tg), *v = dst;
            for (int64_t k = 0; k < numel; k++)
                v[k] =
                    (int64_t)(rt_init_uniform(seed ^ 0x5eed, stream, (uint64_t)k) * (double)c) % c;
            ids_done = ids_done || g->inputs[i] != tg->label_tensor;
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

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A --data run's state: the training and held-out sets, the epoch's order. */
/* A comma-separated list of files, one per data input of the model (token ids, then an
 * attention mask, ..: train_data_inputs' order). */
typedef struct path_list {
    char *buf; /* the list, split in place; owned */
    const char *path[RT_DATA_MAX];
    int n;
} path_list;

static int path_list_split(const char *flag, const char *list, const train_graph *tg,
                           path_list *out, oc_err *err) {
    int idx[RT_DATA_MAX], want = train_data_inputs(tg, idx, RT_DATA_MAX);
    memset(out, 0, sizeof *out);
    out->buf = oc_strdup(list);
    for (char *p = out->buf, *next; p; p = next) {
        next = strchr(p, ',');
        if (next) *next++ = '\0';
        if (out->n < RT_DATA_MAX) out->path[out->n] = p;
        out->n++;
    }
    if (out->n == want) return OC_OK;
    char names[256] = "";
    for (int i = 0; i < want && i < RT_DATA_MAX; i++) {
        size_t len = strlen(names);
        snprintf(names + len, sizeof names - len, "%s'%s'", i ? ", " : "",
                 tg->g->tensors[tg->g->inputs[idx[i]]].name);
    }
    return oc_fail(err,
                   "%s gives %d file%s; the model has %d data input%s (%s): one file each, "
                   "comma-separated, in that order",
                   flag, out->n, out->n == 1 ? "" : "s", want, want == 1 ? "" : "s", names);
}

/* A --data run's state: the training and held-out sets, the epoch's order. */
typedef struct data_run {
    rt_npy x[RT_DATA_MAX], y, ex[RT_DATA_MAX], ey;
    rt_dataset train, eval;
    int64_t per_epoch; /* full batches per epoch */
    int64_t *order, order_epoch;
    double epoch_loss;
} data_run;

static void data_run_free(data_run *d) {
    for (int i = 0; i < RT_DATA_MAX; i++) rt_npy_close(&d->x[i]), rt_npy_close(&d->ex[i]);
    rt_npy_close(&d->y), rt_npy_close(&d->ey);
    oc_free(d->order);
}

/* The arrays of list (one per data input) and labels opened and bound as *set. */
static int data_set_open(const char *flag, const char *list, const char *labels,
                         const train_graph *tg, rt_npy *x, rt_npy *y, rt_dataset *set,
                         oc_err *err) {
    const ir_graph *g = tg->g;
    int idx[RT_DATA_MAX];
    train_data_inputs(tg, idx, RT_DATA_MAX);
    path_list pl;
    int rc = path_list_split(flag, list, tg, &pl, err);
    const rt_npy *xs[RT_DATA_MAX];
    const ir_tensor *ts[RT_DATA_MAX];
    for (int i = 0; i < pl.n && rc == OC_OK; i++) {
        rc = rt_npy_open(pl.path[i], &x[i], err);
        xs[i] = &x[i], ts[i] = &g->tensors[g->inputs[idx[i]]];
    }
    if (rc == OC_OK && labels) rc = rt_npy_open(labels, y, err);
    if (rc == OC_OK)
        rc = rt_dataset_bind(set, pl.n, xs, labels ? y : NULL, ts,
                             labels ? &g->tensors[tg->label_tensor] : NULL, n_classes(tg),
                             tg->opts.ignore_index, err);
    oc_free(pl.buf);
    return rc;
}

static int data_open(const run_opts *o, const train_graph *tg, int64_t batch, data_run *d,
                     oc_err *err) {
    bool own = train_label_input(tg) < 0; /* a step computing its own loss: no labels */
    if (own && (o->labels || o->eval_data))
        return oc_fail(err,
                       "%s computes its own loss (--loss model): it takes no %s; its inputs are "
                       "all --data's",
                       o->model, o->labels ? "--labels" : "--eval-data");
    if (!own && !o->labels) return oc_fail(err, "--data needs --labels (the step's labels)");
    if (data_set_open("--data", o->data, o->labels, tg, d->x, &d->y, &d->train, err) ||
        (o->eval_data && data_set_open("--eval-data", o->eval_data, o->eval_labels, tg, d->ex,
                                       &d->ey, &d->eval, err)))
        return OC_ERR;
    d->per_epoch = d->train.n / batch;
    if (d->per_epoch == 0)
        return oc_fail(err, "%s: %" PRId64 " samples, fewer than one batch of %" PRId64, o->data,
                       d->train.n, batch);
    d->order_epoch = -1;
    return OC_OK;
}

/* The batch of global step `step`: epoch step / per_epoch, in that epoch's order. */
static void data_batch(rt_exec *x, const train_graph *tg, data_run *d, uint64_t seed, int64_t batch,
                       int64_t step) {
    int64_t epoch = step / d->per_epoch, at = step % d->per_epoch;
    if (d->order_epoch != epoch) {
        oc_free(d->order);
        d->order = rt_dataset_order(d->train.n, seed, epoch);
        d->order_epoch = epoch;
    }
    void *bufs[RT_DATA_MAX];
    rt_exec_data_buffers(x, bufs, RT_DATA_MAX);
    int li = train_label_input(tg);
    rt_dataset_gather(&d->train, d->order + at * batch, batch, bufs,
                      li >= 0 ? rt_exec_host_input(x, li) : NULL);
}

static int save_checkpoint(rt_exec *x, train_graph *tg, const run_opts *o, const data_run *d,
                           int64_t next_step, int64_t batch, oc_err *err) {
    rt_checkpoint ck = {
        .step = next_step, .seed = o->seed, .samples = o->data ? d->train.n : 0, .batch = batch};
    return rt_save(x, tg, o->save, &ck, err);
}

static int run(const run_opts *o, oc_err *err) {
    train_graph *tg = NULL;
    rt_backend *b = NULL;
    rt_exec *x = NULL;
    rt_trace *tr = NULL;
    bool *keep = NULL;
    rt_model_info info = {0};
    data_run dr = {0};
    int rc = OC_ERR, n_init = 0;
    run_opts ro = *o; /* the seed may come from --resume */
    if (rt_backend_new(o->backend, &o->bo, &b, err)) goto out;
    if (o->profile_out && !b->profile_start) {
        oc_fail(err, "--profile-out: backend '%s' has no profiler (cuda has)", b->name);
        goto out;
    }
    rt_load_opts lo = o->lo;
    profile_device dev = o->device_figures;
    const char *preset = o->device_file ? o->device_file
                         : o->device    ? o->device
                                        : device_preset_for_gpu(b->device_name);
    if (!o->layout_fixed && preset) {
        if (!o->device && !o->device_file && device_preset_find(preset, &dev, err)) goto out;
        lo.layout_device = &dev;
    }
    if (rt_load(o->model, &lo, &tg, &info, err)) goto out;
    ir_graph_print_notes(tg->g, "outcore-run", stderr);
    if (info.layout_weighed)
        fprintf(stderr,
                "outcore-run: notice: --layout auto: %s (predicted in-core step on %s: nhwc "
                "%.1f ms, nchw %.1f ms)\n",
                info.layout_nhwc ? "nhwc" : "nchw", preset, info.layout_nhwc_s * 1e3,
                info.layout_nchw_s * 1e3);
    else if (!o->layout_fixed && !preset && b->device_name[0] && !info.is_training_graph &&
             rt_graph_has_conv(tg->g))
        fprintf(stderr,
                "outcore-run: notice: --layout auto: nchw, the model's own (no device preset "
                "for '%s'; --device PRESET weighs channels-last with its figures)\n",
                b->device_name);
    if (train_data_inputs(tg, NULL, 0) > RT_DATA_MAX) {
        oc_fail(err, "%s: the model has %d data inputs; outcore-run feeds at most %d", o->model,
                train_data_inputs(tg, NULL, 0), RT_DATA_MAX);
        goto out;
    }
    if (rt_init_missing(tg, o->seed, &n_init, err)) goto out;
    int64_t start = 0, resumed_samples = 0;
    if (o->resume) {
        rt_checkpoint ck;
        if (rt_resume(o->resume, tg, &ck, err)) goto out;
        if (ck.batch != info.batch) {
            oc_fail(err, "--resume %s: it was trained at batch %" PRId64 ", this run has %" PRId64,
                    o->resume, ck.batch, info.batch);
            goto out;
        }
        start = ck.step;
        ro.seed = ck.seed;
        printf("resumed %s at step %" PRId64 " (seed %" PRIu64 ")\n", o->resume, start, ck.seed);
        resumed_samples = ck.samples; /* checked against --data below */
    }
    if (o->data) {
        if (data_open(o, tg, info.batch, &dr, err)) goto out;
        if (o->resume && resumed_samples != dr.train.n) {
            oc_fail(err, "--resume %s: it was trained on %" PRId64 " samples, --data has %" PRId64,
                    o->resume, resumed_samples, dr.train.n);
            goto out;
        }
    }
    int64_t total =
        o->data && !o->steps_set ? (o->epochs ? o->epochs : 1) * dr.per_epoch : o->steps;
    if (start >= total) {
        oc_fail(err, "--resume %s is at step %" PRId64 ", the run ends at %" PRId64, o->resume,
                start, total);
        goto out;
    }
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
                       .seed = ro.seed,
                       .keep = keep,
                       .offsets = info.plan_offsets,
                       .planned_bytes = info.plan_arena_bytes,
                       .graph = o->bo.cuda_graph};
    if (rt_exec_new(tg, &eo, &x, err)) {
        if (o->budget) oc_fail_prefix(err, "--budget %" PRId64, o->budget);
        goto out;
    }
    const ir_graph *g = tg->g;
    if (o->input) {
        int di[RT_DATA_MAX], li = train_label_input(tg);
        train_data_inputs(tg, di, RT_DATA_MAX);
        if ((li < 0) != !o->labels) { /* a step computing its own loss has none */
            if (li < 0)
                oc_fail(err,
                        "%s computes its own loss (--loss model): it takes no --labels; its "
                        "inputs are all --input's",
                        o->model);
            else oc_fail(err, "--input needs --labels (the step's labels input)");
            goto out;
        }
        path_list pl;
        int rc_in = path_list_split("--input", o->input, tg, &pl, err);
        for (int i = 0; i < pl.n && rc_in == OC_OK; i++)
            rc_in = rt_tensor_read_pb(pl.path[i], &g->tensors[g->inputs[di[i]]],
                                      rt_exec_host_input(x, di[i]), err);
        oc_free(pl.buf);
        if (rc_in || (li >= 0 && rt_tensor_read_pb(o->labels, &g->tensors[g->inputs[li]],
                                                   rt_exec_host_input(x, li), err)))
            goto out;
    }
    if (o->input && train_label_input(tg) >= 0) {
        int li = train_label_input(tg);
        const int64_t *lab = rt_exec_host_input(x, li);
        int64_t nl = 0, c = n_classes(tg);
        ir_tensor_numel(&g->tensors[g->inputs[li]], &nl);
        for (int64_t k = 0; k < nl; k++)
            if ((lab[k] < 0 || lab[k] >= c) && lab[k] != tg->opts.ignore_index) {
                oc_fail(err,
                        "%s: label %" PRId64 " at %" PRId64 " is outside [0, %" PRId64
                        ") and is not the ignored label %" PRId64,
                        o->labels, lab[k], k, c, tg->opts.ignore_index);
                goto out;
            }
    }
    if (rt_exec_upload_initializers(x, err)) goto out;
    char hw[32], cap[32];
    print_optimizer(tg);
    print_clipping(tg);
    int scale_t = print_loss_scaling(tg);
    if (info.is_plan)
        printf("plan: strategy %s, planned arena %" PRId64 " bytes, verified\n", info.plan_strategy,
               info.plan_arena_bytes);
    printf("model %s (%s), batch %" PRId64 ", %d nodes, backend %s, %d initializers initialised "
           "from seed %" PRIu64 "\n",
           o->model, info.is_training_graph ? "training graph" : "forward model", info.batch,
           g->n_nodes, b->name, n_init, o->seed);
    if (o->data)
        printf("data %s: %" PRId64 " samples, %" PRId64 " steps per epoch, %" PRId64 " steps\n",
               o->data, dr.train.n, dr.per_epoch, total);
    fflush(stdout);
    /* Synthetic batches are generated on the host each step; that time is not
     * training time, so it is left out of images/s. */
    double t0 = now_s(), t_first = 0, synth_first = 0, synth_rest = 0;
    int64_t dev_peak = -1; /* cuda: device bytes in use, the most seen after any step */
    for (int64_t step = start; step < total; step++) {
        if (!o->input) {
            double ts = now_s();
            if (o->data) data_batch(x, tg, &dr, ro.seed, info.batch, step);
            else synth_batch(x, tg, ro.seed, step);
            *(step == start ? &synth_first : &synth_rest) += now_s() - ts;
        }
        float loss, scale = 0, scale_after = 0;
        if (scale_t >= 0 && rt_exec_read(x, scale_t, &scale, err)) goto out;
        if (rt_exec_step(x, step, &loss, err)) goto out;
        if (scale_t >= 0 && rt_exec_read(x, scale_t, &scale_after, err)) goto out;
        if (step == start) t_first = now_s();
        /* after the sync: lazily loaded modules included */
        int64_t used = b->device_used ? b->device_used(b) : -1;
        if (used > dev_peak) dev_peak = used;
        printf("step %" PRId64 " loss %.6f", step, (double)loss);
        if (scale_t >= 0)
            printf(" loss-scale %.9g%s", (double)scale,
                   scale_after < scale ? " skipped (inf/NaN gradients)" : "");
        printf("\n");
        fflush(stdout);
        if (!isfinite(loss)) {
            oc_fail(err, "step %" PRId64 ": loss is not finite", step);
            goto out;
        }
        if (step == start && o->dump && dump_grads(x, tg, o->dump, err)) goto out;
        if (step == start && o->profile_out && b->profile_start(b, tg->g, err)) goto out;
        if (tr && step > start) rt_trace_add_step(tr, x, step);
        if (step == start && o->trace_out) {
            if (rt_exec_trace_on(x, err)) goto out;
            tr = rt_trace_new(tg, b->name);
        }
        if (o->save_every && (step + 1) % o->save_every == 0 && step + 1 < total &&
            save_checkpoint(x, tg, &ro, &dr, step + 1, info.batch, err))
            goto out;
        if (o->data) {
            dr.epoch_loss += loss;
            bool epoch_end = (step + 1) % dr.per_epoch == 0 || step + 1 == total;
            if (epoch_end) {
                int64_t e = step / dr.per_epoch, n = step % dr.per_epoch + 1;
                printf("epoch %" PRId64 " train loss %.6f (mean of %" PRId64 " steps)", e,
                       dr.epoch_loss / (double)n, n);
                dr.epoch_loss = 0;
                if (o->eval_data) {
                    rt_eval r;
                    if (rt_evaluate(x, tg, b, &dr.eval, info.batch, &r, err)) goto out;
                    printf(", eval loss %.6f accuracy %.4f (%" PRId64 " samples)", r.loss,
                           r.accuracy, r.samples);
                }
                printf("\n");
                fflush(stdout);
            }
        }
    }
    double t1 = now_s();
    int64_t ran = total - start;
    double secs = ran > 1 ? t1 - t_first - synth_rest : t1 - t0 - synth_first;
    int64_t timed = ran > 1 ? ran - 1 : 1;
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
    if (tr) {
        if (rt_trace_write(tr, o->trace_out, err)) goto out;
        printf("trace %s (%" PRId64 " steps)\n", o->trace_out, total - start - 1);
    }
    if (o->save) {
        if (save_checkpoint(x, tg, &ro, &dr, total, info.batch, err)) goto out;
        printf("saved %s\n", o->save);
    }
    rc = OC_OK;
out:
    rt_trace_free(tr);
    rt_exec_free(x);
    rt_backend_free(b);
    train_graph_free(tg);
    rt_model_info_free(&info);
    data_run_free(&dr);
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
