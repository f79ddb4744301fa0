/* profile_workspace.c — see profile_workspace.h. */
#include "plan/profile_workspace.h"

#include <stdlib.h>
#include <string.h>

/* Sorting helpers: pairs by workspace (then time), workspaces descending, names. */
static int cmp_alt(const void *a, const void *b) {
    const profile_alt *x = a, *y = b;
    if (x->workspace_bytes != y->workspace_bytes)
        return x->workspace_bytes < y->workspace_bytes ? -1 : 1;
    return x->time_s < y->time_s ? -1 : x->time_s > y->time_s;
}

static int cmp_desc(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x > y ? -1 : x < y;
}

typedef struct named {
    const char *name;
    int index;
} named;

static int cmp_named(const void *a, const void *b) {
    return strcmp(((const named *)a)->name, ((const named *)b)->name);
}

/* p's node records sorted by name (for bsearch). */
static named *by_name(const profile *p) {
    named *v = oc_malloc(((size_t)p->n_nodes + 1) * sizeof *v);
    for (int i = 0; i < p->n_nodes; i++) v[i] = (named){p->nodes[i].name, i};
    qsort(v, (size_t)p->n_nodes, sizeof *v, cmp_named);
    return v;
}

static int find_node(const named *v, int n, const char *name) {
    named key = {name, -1};
    const named *f = bsearch(&key, v, (size_t)n, sizeof *v, cmp_named);
    return f ? f->index : -1;
}

/* Appends node r's record and alternatives to opts (*n of them). */
static void add_options(const profile_node *r, profile_alt *opts, int *n) {
    opts[(*n)++] = (profile_alt){r->time_s, r->workspace_bytes};
    for (int k = 0; k < r->n_alts; k++) opts[(*n)++] = r->alts[k];
}

/* Record i of out from opts (n pairs, sorted by cmp_alt): one time per workspace (their
 * mean), the dominated ones dropped, the fastest the record. */
static void set_pareto(profile *out, int i, const char *name, profile_alt *opts, int n) {
    int m = 0;
    for (int a = 0; a < n;) { /* a run of one workspace: its mean time */
        int b = a;
        double sum = 0;
        for (; b < n && opts[b].workspace_bytes == opts[a].workspace_bytes; b++)
            sum += opts[b].time_s;
        opts[m++] = (profile_alt){sum / (b - a), opts[a].workspace_bytes};
        a = b;
    }
    int kept = 0; /* increasing workspace, strictly decreasing time */
    for (int a = 0; a < m; a++)
        if (kept == 0 || opts[a].time_s < opts[kept - 1].time_s) opts[kept++] = opts[a];
    if (kept > PROFILE_MAX_ALTS + 1) { /* the fastest and the PROFILE_MAX_ALTS smallest */
        opts[PROFILE_MAX_ALTS] = opts[kept - 1];
        kept = PROFILE_MAX_ALTS + 1;
    }
    const profile_alt *best = &opts[kept - 1];
    profile_node_set(out, i, name, best->time_s, best->workspace_bytes);
    profile_node *r = &out->nodes[i];
    r->n_alts = kept - 1;
    r->alts = oc_malloc((size_t)kept * sizeof *r->alts);
    for (int k = 0; k < kept - 1; k++) r->alts[k] = opts[kept - 2 - k];
}

int profile_merge(profile *const *ps, const char *const *paths, int n, profile **out, oc_err *err) {
    *out = NULL;
    const profile *p0 = ps[0];
    for (int k = 1; k < n; k++) {
        if (ps[k]->batch != p0->batch)
            return oc_fail(err, "%s is of batch %lld, %s of batch %lld: merge profiles of one step",
                           paths[k], (long long)ps[k]->batch, paths[0], (long long)p0->batch);
        if (strcmp(ps[k]->device.name, p0->device.name) != 0)
            return oc_fail(err, "%s was measured on '%s', %s on '%s': merge profiles of one device",
                           paths[k], ps[k]->device.name, paths[0], p0->device.name);
        if (ps[k]->n_nodes != p0->n_nodes)
            return oc_fail(err, "%s has %d node records, %s %d: merge profiles of one step",
                           paths[k], ps[k]->n_nodes, paths[0], p0->n_nodes);
    }
    named **idx = oc_calloc((size_t)n, sizeof *idx);
    for (int k = 0; k < n; k++) idx[k] = by_name(ps[k]);
    profile *m = profile_new(&p0->device, p0->batch, PROFILE_SOURCE_MEASURED, p0->n_nodes);
    m->source = p0->source;
    int max_opts = 0;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < ps[k]->n_nodes; i++)
            if (ps[k]->nodes[i].n_alts > max_opts) max_opts = ps[k]->nodes[i].n_alts;
    profile_alt *opts = oc_malloc((size_t)n * ((size_t)max_opts + 1) * sizeof *opts);
    int rc = OC_OK;
    for (int i = 0; i < p0->n_nodes && rc == OC_OK; i++) {
        const char *name = p0->nodes[i].name;
        int no = 0;
        for (int k = 0; k < n && rc == OC_OK; k++) {
            int j = k == 0 ? i : find_node(idx[k], ps[k]->n_nodes, name);
            if (j < 0)
                rc = oc_fail(err, "%s has no record of node '%s' (%s has)", paths[k], name,
                             paths[0]);
            else add_options(&ps[k]->nodes[j], opts, &no);
        }
        if (rc == OC_OK) {
            qsort(opts, (size_t)no, sizeof *opts, cmp_alt);
            set_pareto(m, i, name, opts, no);
        }
    }
    oc_free(opts);
    for (int k = 0; k < n; k++) oc_free(idx[k]);
    oc_free(idx);
    if (rc) profile_free(m);
    else *out = m;
    return rc;
}

profile *profile_capped(const profile *p, int64_t cap, int *changed) {
    profile *q = profile_copy(p);
    int nc = 0;
    for (int i = 0; i < q->n_nodes; i++) {
        profile_node *r = &q->nodes[i];
        if (!r->n_alts) continue;
        /* pick: -1 the record, else alternative k */
        int pick = -2;
        double best_t = 0;
        int64_t best_w = 0;
        for (int k = -1; k < r->n_alts; k++) {
            double t = k < 0 ? r->time_s : r->alts[k].time_s;
            int64_t w = k < 0 ? r->workspace_bytes : r->alts[k].workspace_bytes;
            bool fits = w <= cap, best_fits = best_w <= cap;
            bool better = pick == -2 || (fits && !best_fits) ||
                          (fits && best_fits && (t < best_t || (t == best_t && w < best_w))) ||
                          (!fits && !best_fits && (w < best_w || (w == best_w && t < best_t)));
            if (better) pick = k, best_t = t, best_w = w;
        }
        if (pick >= 0) { /* swap the record and alternative pick */
            profile_alt own = {r->time_s, r->workspace_bytes};
            r->time_s = best_t, r->workspace_bytes = best_w;
            r->alts[pick] = own;
            nc++;
        }
    }
    if (changed) *changed = nc;
    return q;
}

int profile_workspace_levels(const profile *p, int64_t *levels, int max) {
    int n = 0;
    for (int i = 0; i < p->n_nodes; i++)
        if (p->nodes[i].n_alts) n += 1 + p->nodes[i].n_alts;
    if (n == 0 || max <= 0) return 0;
    int64_t *all = oc_malloc((size_t)n * sizeof *all);
    n = 0;
    for (int i = 0; i < p->n_nodes; i++) {
        const profile_node *r = &p->nodes[i];
        if (!r->n_alts) continue;
        all[n++] = r->workspace_bytes;
        for (int k = 0; k < r->n_alts; k++) all[n++] = r->alts[k].workspace_bytes;
    }
    qsort(all, (size_t)n, sizeof *all, cmp_desc);
    int d = 0;
    for (int i = 0; i < n; i++)
        if (d == 0 || all[i] != all[d - 1]) all[d++] = all[i];
    int out = d <= max ? d : max;
    for (int k = 0; k < out; k++)
        levels[k] = all[out == d ? k : (max == 1 ? 0 : (int)((int64_t)k * (d - 1) / (max - 1)))];
    oc_free(all);
    return out;
}
