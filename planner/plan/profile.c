/* profile.c — see profile.h. */
#include "plan/profile.h"

#include <errno.h>
#include <string.h>

#include "ir/ops/op_table.h"
#include "ir/ops/op_update.h"
#include "plan/lifetimes.h"
#include "train/channels_last.h"

profile *profile_new(const profile_device *d, int64_t batch, profile_source src, int n) {
    profile *p = oc_calloc(1, sizeof *p);
    p->device = *d;
    p->batch = batch;
    p->source = src;
    p->nodes = oc_calloc((size_t)n + 1, sizeof *p->nodes);
    p->n_nodes = n;
    return p;
}

void profile_free(profile *p) {
    if (!p) return;
    for (int i = 0; i < p->n_nodes; i++) oc_free(p->nodes[i].name), oc_free(p->nodes[i].alts);
    oc_free(p->nodes);
    oc_free(p);
}

void profile_node_set(profile *p, int i, const char *name, double time_s, int64_t workspace) {
    OC_ASSERT(i >= 0 && i < p->n_nodes);
    oc_free(p->nodes[i].name);
    p->nodes[i].name = oc_strdup(name);
    p->nodes[i].time_s = time_s;
    p->nodes[i].workspace_bytes = workspace;
}

profile *profile_copy(const profile *p) {
    profile *q = profile_new(&p->device, p->batch, p->source, p->n_nodes);
    for (int i = 0; i < p->n_nodes; i++) {
        const profile_node *r = &p->nodes[i];
        profile_node_set(q, i, r->name, r->time_s, r->workspace_bytes);
        q->nodes[i].n_alts = r->n_alts;
        q->nodes[i].alts = oc_malloc(((size_t)r->n_alts + 1) * sizeof *r->alts);
        if (r->n_alts) memcpy(q->nodes[i].alts, r->alts, (size_t)r->n_alts * sizeof *r->alts);
    }
    return q;
}

/* A record's time_s / workspace_bytes pair (of a node or one of its alternatives) into
 * *t, *w; what names it in messages. */
static int time_and_workspace(const json_t *r, const char *path, const char *what, double *t,
                              int64_t *w, oc_err *err) {
    const json_t *jt = json_object_get(r, "time_s"), *jw = json_object_get(r, "workspace_bytes");
    if (!json_is_number(jt) || !(json_number_value(jt) >= 0) || json_number_value(jt) > 1e9)
        return oc_fail(err, "%s: %s: field 'time_s' %s", path, what,
                       jt ? "must be a number >= 0" : "is missing");
    if (!json_is_number(jw) || !(json_number_value(jw) >= 0) || json_number_value(jw) > 9e18)
        return oc_fail(err, "%s: %s: field 'workspace_bytes' %s", path, what,
                       jw ? "must be a number >= 0" : "is missing");
    *t = json_number_value(jt), *w = (int64_t)json_number_value(jw);
    return OC_OK;
}

/* Node record r's "alternatives" (optional) into node i of p. */
static int parse_alternatives(const json_t *r, const char *path, const char *name, profile *p,
                              int i, oc_err *err) {
    const json_t *alts = json_object_get(r, "alternatives");
    if (!alts) return OC_OK;
    if (!json_is_array(alts) || json_array_size(alts) > PROFILE_MAX_ALTS)
        return oc_fail(err, "%s: node '%s': field 'alternatives' must be an array of at most %d",
                       path, name, PROFILE_MAX_ALTS);
    profile_node *pn = &p->nodes[i];
    pn->alts = oc_malloc((json_array_size(alts) + 1) * sizeof *pn->alts);
    for (size_t k = 0; k < json_array_size(alts); k++) {
        char what[300];
        snprintf(what, sizeof what, "node '%s': alternatives[%zu]", name, k);
        profile_alt *a = &pn->alts[pn->n_alts];
        if (time_and_workspace(json_array_get(alts, k), path, what, &a->time_s, &a->workspace_bytes,
                               err))
            return OC_ERR;
        pn->n_alts++;
    }
    return OC_OK;
}

/* A 2-d convolution or convolution gradient on (N, C, H, W) tensors. */
static bool conv_2d_nchw(const ir_graph *g, const ir_node *n) {
    return op_is_conv(n->op) && !n->channels_last && n->n_inputs > 0 && n->inputs[0] >= 0 &&
           g->tensors[n->inputs[0]].rank == 4;
}

profile *profile_analytic(const train_graph *tg, const profile_device *d, int64_t batch) {
    const ir_graph *g = tg->g;
    profile *p = profile_new(d, batch, PROFILE_SOURCE_ANALYTIC, g->n_nodes);
    for (int i = 0; i < g->n_nodes; i++) {
        if (train_view_source(tg, i) >= 0) { /* an in-place view: nothing runs */
            profile_node_set(p, i, g->nodes[i].name, 0, 0);
            continue;
        }
        op_cost c = {0};
        op_cost_of(g, &g->nodes[i], &c);
        /* a node on half operands (autocast) at the tensor-core rate */
        const ir_node *n = &g->nodes[i];
        bool half = n->n_inputs > 0 && n->inputs[0] >= 0 &&
                    ir_dtype_is_half(g->tensors[n->inputs[0]].dtype) && d->peak_flops_half > 0;
        double tf = c.flops / (half ? d->peak_flops_half : d->peak_flops);
        double tb = (c.bytes_read + c.bytes_written) / d->mem_bandwidth_bytes_per_s;
        double t = tf > tb ? tf : tb;
        if (conv_2d_nchw(g, n)) t *= 1.0 + d->conv_nchw_slowdown;
        profile_node_set(p, i, g->nodes[i].name, t + d->launch_overhead_s, 0);
    }
    return p;
}

double profile_total_s(const profile *p) {
    double t = 0;
    for (int i = 0; i < p->n_nodes; i++) t += p->nodes[i].time_s;
    return t;
}

int profile_parse(const char *text, const char *path, profile **out, oc_err *err) {
    *out = NULL;
    json_error_t je;
    json_t *root = json_loads(text, 0, &je);
    if (!root) return oc_fail(err, "%s:%d: bad JSON: %s", path, je.line, je.text);
    profile *p = NULL;
    int rc = OC_ERR;
    char what[512];
    if (!json_is_object(root)) {
        oc_fail(err, "%s: top level is not a JSON object", path);
        goto done;
    }
    profile_device d;
    snprintf(what, sizeof what, "%s: device", path);
    const json_t *dev = json_object_get(root, "device");
    if (!dev) {
        oc_fail(err, "%s: missing field 'device'", path);
        goto done;
    }
    if (device_from_json(dev, what, &d, err)) goto done;
    const json_t *b = json_object_get(root, "batch");
    if (!json_is_integer(b) || json_integer_value(b) < 1) {
        oc_fail(err, "%s: field 'batch' must be an integer >= 1", path);
        goto done;
    }
    const char *src = json_string_value(json_object_get(root, "source"));
    if (!src || (strcmp(src, "analytic") && strcmp(src, "measured"))) {
        oc_fail(err, "%s: field 'source' must be \"analytic\" or \"measured\"", path);
        goto done;
    }
    const json_t *nodes = json_object_get(root, "nodes");
    if (!json_is_array(nodes)) {
        oc_fail(err, "%s: missing array field 'nodes'", path);
        goto done;
    }
    int n = (int)json_array_size(nodes);
    p = profile_new(
        &d, json_integer_value(b),
        strcmp(src, "measured") == 0 ? PROFILE_SOURCE_MEASURED : PROFILE_SOURCE_ANALYTIC, n);
    for (int i = 0; i < n; i++) {
        const json_t *r = json_array_get(nodes, (size_t)i);
        const char *name = json_string_value(json_object_get(r, "name"));
        if (!name) {
            oc_fail(err, "%s: nodes[%d]: missing string field 'name'", path, i);
            goto done;
        }
        char rec[300];
        snprintf(rec, sizeof rec, "node '%s'", name);
        double t;
        int64_t w;
        if (time_and_workspace(r, path, rec, &t, &w, err)) goto done;
        profile_node_set(p, i, name, t, w);
        if (parse_alternatives(r, path, name, p, i, err)) goto done;
    }
    rc = OC_OK;
done:
    json_decref(root);
    if (rc) profile_free(p);
    else *out = p;
    return rc;
}

int profile_read(const char *path, profile **out, oc_err *err) {
    uint8_t *data;
    size_t len;
    *out = NULL;
    if (oc_read_file(path, &data, &len, err)) return OC_ERR;
    char *text = oc_malloc(len + 1);
    memcpy(text, data, len);
    text[len] = '\0';
    oc_free(data);
    int rc = profile_parse(text, path, out, err);
    oc_free(text);
    return rc;
}

int profile_write_file(const profile *p, FILE *f, oc_err *err) {
    json_t *root = json_object();
    json_object_set_new(root, "device", device_to_json(&p->device));
    json_object_set_new(root, "batch", json_integer((json_int_t)p->batch));
    json_object_set_new(
        root, "source",
        json_string(p->source == PROFILE_SOURCE_MEASURED ? "measured" : "analytic"));
    json_t *nodes = json_array();
    for (int i = 0; i < p->n_nodes; i++) {
        const profile_node *r = &p->nodes[i];
        json_t *o = json_pack("{s:s, s:f, s:I}", "name", r->name, "time_s", r->time_s,
                              "workspace_bytes", (json_int_t)r->workspace_bytes);
        if (r->n_alts) {
            json_t *alts = json_array();
            for (int k = 0; k < r->n_alts; k++)
                json_array_append_new(alts, json_pack("{s:f, s:I}", "time_s", r->alts[k].time_s,
                                                      "workspace_bytes",
                                                      (json_int_t)r->alts[k].workspace_bytes));
            json_object_set_new(o, "alternatives", alts);
        }
        json_array_append_new(nodes, o);
    }
    json_object_set_new(root, "nodes", nodes);
    int rc = json_dumpf(root, f, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    json_decref(root);
    if (rc != 0 || fputc('\n', f) == EOF)
        return oc_fail(err, "profile: write error: %s", strerror(errno));
    return OC_OK;
}

int profile_layout_nhwc(const char *path, bool *nhwc, oc_err *err) {
    profile *p;
    if (profile_read(path, &p, err)) return OC_ERR;
    *nhwc = false;
    for (int i = 0; i < p->n_nodes && !*nhwc; i++)
        *nhwc = strncmp(p->nodes[i].name, CHANNELS_LAST_PREFIX, strlen(CHANNELS_LAST_PREFIX)) == 0;
    profile_free(p);
    return OC_OK;
}

/* A layout Transpose missing on one side: the profile ran the other --layout. */
static const char *other_layout_hint(const char *node) {
    return strncmp(node, CHANNELS_LAST_PREFIX, strlen(CHANNELS_LAST_PREFIX)) == 0
               ? " (a layout conversion: the profile was measured with another --layout)"
               : "";
}

/* Names -> node indices through a small open-addressing table (names are unique). */
typedef struct name_table {
    const char **name;
    int *node;
    size_t cap;
} name_table;

static size_t name_hash(const char *s) {
    size_t h = 5381;
    for (; *s; s++) h = h * 33 + (unsigned char)*s;
    return h;
}

static void name_table_init(name_table *t, size_t n) {
    t->cap = 16;
    while (t->cap < 2 * n) t->cap *= 2;
    t->name = oc_calloc(t->cap, sizeof *t->name);
    t->node = oc_malloc(t->cap * sizeof *t->node);
}

static void name_table_put(name_table *t, const char *name, int node) {
    size_t h = name_hash(name);
    while (t->name[h & (t->cap - 1)]) h++;
    t->name[h & (t->cap - 1)] = name, t->node[h & (t->cap - 1)] = node;
}

static int name_table_get(const name_table *t, const char *name) {
    for (size_t h = name_hash(name); t->name[h & (t->cap - 1)]; h++)
        if (strcmp(t->name[h & (t->cap - 1)], name) == 0) return t->node[h & (t->cap - 1)];
    return -1;
}

static void name_table_free(name_table *t) { oc_free(t->name), oc_free(t->node); }

/* The "members" of a multi-tensor update whose slots are consistent, or NULL. */
static const ir_attr *update_members(const ir_node *n) {
    op_update_layout l;
    return op_update_layout_of(n, &l) ? op_update_members(n) : NULL;
}

int profile_node_costs(const profile *p, const train_graph *tg, const char *what, double *time,
                       int64_t *workspace, oc_err *err) {
    const ir_graph *g = tg->g;
    /* nodes by name; a multi-tensor update's members too: a profile of per-parameter
     * updates (measured before they were grouped, or with --fuse forward) times the
     * group as its members' sum, an upper bound (one launch for all is faster) */
    name_table nodes, members;
    size_t n_members = 0;
    int *seen = oc_calloc((size_t)g->n_nodes + 1, sizeof *seen); /* member records per node */
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_attr *m = update_members(&g->nodes[i]);
        n_members += m ? (size_t)m->n : 0;
    }
    name_table_init(&nodes, (size_t)g->n_nodes);
    name_table_init(&members, n_members);
    for (int i = 0; i < g->n_nodes; i++) {
        time[i] = -1;
        name_table_put(&nodes, g->nodes[i].name, i);
        const ir_attr *m = update_members(&g->nodes[i]);
        for (int k = 0; m && k < m->n; k++) name_table_put(&members, m->strings[k], i);
    }
    int rc = OC_OK;
    for (int r = 0; r < p->n_nodes && rc == OC_OK; r++) {
        const char *name = p->nodes[r].name;
        int found = name_table_get(&nodes, name), group = -1;
        if (found < 0 && (group = name_table_get(&members, name)) >= 0) {
            if (time[group] >= 0 && !seen[group])
                rc = oc_fail(err, "%s: node '%s' and its member '%s' both have records", what,
                             g->nodes[group].name, name);
            else if (seen[group] == update_members(&g->nodes[group])->n)
                rc = oc_fail(err, "%s: node '%s' appears twice", what, name);
            time[group] = (time[group] < 0 ? 0 : time[group]) + p->nodes[r].time_s;
            if (!seen[group]++ || p->nodes[r].workspace_bytes > workspace[group])
                workspace[group] = p->nodes[r].workspace_bytes;
        } else if (found < 0)
            rc = oc_fail(err, "%s: node '%s' is not in the training graph of %s%s", what, name,
                         g->model_path ? g->model_path : "the model", other_layout_hint(name));
        else if (time[found] >= 0)
            rc = oc_fail(err, "%s: node '%s' %s", what, name,
                         seen[found] ? "has records of its members too" : "appears twice");
        else {
            time[found] = p->nodes[r].time_s;
            workspace[found] = p->nodes[r].workspace_bytes;
        }
    }
    for (int i = 0; i < g->n_nodes && rc == OC_OK; i++) {
        const ir_attr *m = seen[i] ? update_members(&g->nodes[i]) : NULL;
        if (time[i] < 0)
            rc =
                oc_fail(err, "%s: no record for training-graph node '%s' (%s)%s", what,
                        g->nodes[i].name, g->nodes[i].op_type, other_layout_hint(g->nodes[i].name));
        else if (m && seen[i] < m->n)
            rc = oc_fail(err, "%s: %d of the %d members of node '%s' (%s) have records", what,
                         seen[i], m->n, g->nodes[i].name, g->nodes[i].op_type);
    }
    name_table_free(&nodes), name_table_free(&members);
    oc_free(seen);
    return rc;
}

void profile_scale_to_batch(profile *p, int64_t batch, FILE *warn) {
    if (batch == p->batch || batch <= 0) return;
    double k = (double)batch / (double)p->batch;
    if (warn)
        fprintf(warn,
                "outcore-plan: warning: profile taken at batch %lld applied at batch %lld: "
                "node times scaled by %.4g (workspaces unchanged)\n",
                (long long)p->batch, (long long)batch, k);
    for (int i = 0; i < p->n_nodes; i++) {
        p->nodes[i].time_s *= k;
        for (int a = 0; a < p->nodes[i].n_alts; a++) p->nodes[i].alts[a].time_s *= k;
    }
    p->batch = batch;
}
