/* train_structure.c — see train_structure.h. */
#include "train/train_structure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER "outcore-structure 1"

static const char phase_letter[] = {[TRAIN_PHASE_FORWARD] = 'F',
                                    [TRAIN_PHASE_LOSS] = 'L',
                                    [TRAIN_PHASE_BACKWARD] = 'B',
                                    [TRAIN_PHASE_UPDATE] = 'U'};

static void put_name(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '\\') fputs("\\\\", f);
        else if (*s == '\t') fputs("\\t", f);
        else if (*s == '\n') fputs("\\n", f);
        else fputc(*s, f);
    }
}

char *train_structure_format(const train_graph *tg) {
    const ir_graph *g = tg->g;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    OC_ASSERT(f);
    fprintf(f, HEADER "\nphases ");
    for (int i = 0; i < g->n_nodes; i++) fputc(phase_letter[tg->phase[i]], f);
    fputs("\nloss ", f);
    put_name(f, g->tensors[tg->loss_tensor].name);
    if (tg->label_tensor >= 0) {
        fputs("\nlabel ", f);
        put_name(f, g->tensors[tg->label_tensor].name);
    }
    int pairs = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (tg->fwd_of[i] >= 0)
            fprintf(f, "%s%d:%d", pairs++ ? " " : "\nfwd_of ", i, tg->fwd_of[i]);
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].kind != IR_KIND_ACTIVATION) {
            fprintf(f, "\nkind %s\t", ir_kind_name(g->tensors[t].kind));
            put_name(f, g->tensors[t].name);
        }
    for (int t = 0; t < g->n_tensors; t++) /* constants --save writes back as they came */
        if ((g->tensors[t].is_frozen || g->tensors[t].is_buffer) &&
            g->tensors[t].kind == IR_KIND_CONSTANT) {
            fputs(g->tensors[t].is_frozen ? "\nfrozen " : "\nbuffer ", f);
            put_name(f, g->tensors[t].name);
        }
    for (int t = 0; t < g->n_tensors; t++)
        if (tg->grad_of[t] >= 0) {
            fputs("\ngrad ", f);
            put_name(f, g->tensors[t].name);
            fputc('\t', f);
            put_name(f, g->tensors[tg->grad_of[t]].name);
        }
    for (int i = 0; i < tg->n_saved; i++) {
        fputs("\nsaved ", f);
        put_name(f, g->tensors[tg->saved[i]].name);
    }
    fputc('\n', f);
    OC_ASSERT(fclose(f) == 0);
    char *r = oc_strdup(text); /* open_memstream's buffer is libc-owned */
    free(text);
    return r;
}

/* ---- reading ---- */

typedef struct reader {
    train_graph *tg;
    const char *path;
    int lineno;
    oc_err *err;
} reader;

static int bad(reader *r, const char *what, const char *detail) {
    return oc_fail(r->err, "%s: %s line %d: %s%s%s", r->path, TRAIN_STRUCTURE_KEY, r->lineno, what,
                   *detail ? ": " : "", detail);
}

/* Unescapes one name at *p (ending at a tab or the end) into a new string;
 * advances *p past it. NULL on a bad escape. */
static char *take_name(char **p) {
    char *s = *p, *out = oc_malloc(strlen(s) + 1), *o = out;
    for (; *s && *s != '\t'; s++) {
        if (*s != '\\') {
            *o++ = *s;
            continue;
        }
        s++;
        if (*s == '\\') *o++ = '\\';
        else if (*s == 't') *o++ = '\t';
        else if (*s == 'n') *o++ = '\n';
        else {
            oc_free(out);
            return NULL;
        }
    }
    *o = 0;
    *p = s;
    return out;
}

/* The tensor named by the (escaped) text at *p, or -1 after reporting. */
void train_structure_mark_constants(ir_graph *g, const char *text) {
    static const char key[] = "\nkind constant\t";
    for (const char *at = strstr(text, key); at; at = strstr(at + 1, key)) {
        const char *from = at + sizeof key - 1, *end = strchr(from, '\n');
        char *line = oc_strndup(from, end ? (size_t)(end - from) : strlen(from)), *p = line;
        char *name = take_name(&p);
        int t = name && !*p ? ir_tensor_find(g, name) : -1;
        if (t >= 0 && g->tensors[t].is_initializer) g->tensors[t].is_export_constant = true;
        oc_free(name);
        oc_free(line);
    }
}

static int take_tensor(reader *r, char **p) {
    char *name = take_name(p);
    if (!name) return bad(r, "bad escape in a tensor name", ""), -1;
    int t = ir_tensor_find(r->tg->g, name);
    if (t < 0) bad(r, "names a tensor the graph does not have", name);
    oc_free(name);
    return t;
}

static int parse_phases(reader *r, const char *s, int *loss_node) {
    train_graph *tg = r->tg;
    int nn = tg->g->n_nodes;
    if ((int64_t)strlen(s) != nn) {
        char d[64];
        snprintf(d, sizeof d, "%zu letters for %d nodes", strlen(s), nn);
        return bad(r, "phases do not match the graph", d);
    }
    *loss_node = -1;
    for (int i = 0; i < nn; i++) {
        const char *c = strchr("FLBU", s[i]);
        if (!s[i] || !c) return bad(r, "phase letters are F, L, B, U", "");
        tg->phase[i] = (train_phase)(c - "FLBU");
        bool after = *loss_node >= 0;
        if (tg->phase[i] == TRAIN_PHASE_LOSS && after)
            return bad(r, "more than one loss node", tg->g->nodes[i].name);
        if (tg->phase[i] == TRAIN_PHASE_LOSS) *loss_node = i;
        else if ((tg->phase[i] == TRAIN_PHASE_FORWARD) == after)
            return bad(r,
                       after ? "a forward node after the loss node"
                             : "a backward or update node before the loss node",
                       tg->g->nodes[i].name);
    }
    if (*loss_node < 0) return bad(r, "no loss node (L)", "");
    return OC_OK;
}

static int parse_fwd_of(reader *r, const char *s) {
    train_graph *tg = r->tg;
    int nn = tg->g->n_nodes;
    for (const char *p = s; *p;) {
        char *end;
        long b = strtol(p, &end, 10), f = -1;
        bool ok = end != p && *end == ':';
        if (ok) {
            p = end + 1;
            f = strtol(p, &end, 10);
            ok = end != p && (*end == ' ' || !*end);
        }
        if (!ok || b < 0 || b >= nn || f < 0 || f >= nn)
            return bad(r, "malformed pair (backward node:forward node, both in range)", "");
        if (tg->phase[b] != TRAIN_PHASE_BACKWARD || tg->phase[f] > TRAIN_PHASE_LOSS)
            return bad(r, "pairs a node that is not backward with one that is not forward",
                       tg->g->nodes[b].name);
        tg->fwd_of[b] = (int)f;
        p = *end ? end + 1 : end;
    }
    return OC_OK;
}

static int parse_kind(reader *r, char *s) {
    char *tab = strchr(s, '\t');
    if (!tab) return bad(r, "expected 'kind <kind>\\t<tensor>'", "");
    *tab = 0;
    int k = 0;
    while (k < IR_KIND__COUNT && strcmp(ir_kind_name((ir_kind)k), s) != 0) k++;
    if (k == IR_KIND__COUNT) return bad(r, "unknown tensor kind", s);
    char *p = tab + 1;
    int t = take_tensor(r, &p);
    if (t < 0) return OC_ERR;
    if (*p) return bad(r, "trailing text", p);
    ir_tensor *x = &r->tg->g->tensors[t];
    x->kind = (ir_kind)k;
    /* an initializer the step never reads: a buffer of the model kept for --save (ir.h) */
    x->keep_unread = x->is_initializer && x->n_consumers == 0 && !x->is_graph_input;
    return OC_OK;
}

static int parse_grad(reader *r, char *s) {
    char *p = s;
    int w = take_tensor(r, &p);
    if (w < 0) return OC_ERR;
    if (*p != '\t') return bad(r, "expected 'grad <parameter>\\t<gradient>'", "");
    p++;
    int gt = take_tensor(r, &p);
    if (gt < 0) return OC_ERR;
    if (*p || gt == w) return bad(r, "malformed", s);
    r->tg->grad_of[w] = gt;
    return OC_OK;
}

static int parse_line(reader *r, char *line, int *loss_node, bool *seen_saved) {
    train_graph *tg = r->tg;
    char *sp = strchr(line, ' ');
    if (!sp) return bad(r, "expected '<field> <value>'", line);
    *sp = 0;
    char *v = sp + 1, *p = v;
    if (strcmp(line, "phases") == 0) return parse_phases(r, v, loss_node);
    if (*loss_node < 0) return bad(r, "the phases line must come first", line);
    if (strcmp(line, "fwd_of") == 0) return parse_fwd_of(r, v);
    if (strcmp(line, "kind") == 0) return parse_kind(r, v);
    if (strcmp(line, "grad") == 0) return parse_grad(r, v);
    bool mark = strcmp(line, "frozen") == 0 || strcmp(line, "buffer") == 0;
    int t = mark || strcmp(line, "loss") == 0 || strcmp(line, "label") == 0 ||
                    strcmp(line, "saved") == 0
                ? take_tensor(r, &p)
                : (bad(r, "unknown field", line), -1);
    if (t < 0) return OC_ERR;
    if (*p) return bad(r, "trailing text", p);
    ir_tensor *x = &tg->g->tensors[t];
    if (mark) { /* a frozen parameter or a module's buffer: a constant initializer */
        if (!x->is_initializer || x->kind != IR_KIND_CONSTANT)
            return bad(r, "not a constant initializer", x->name);
        *(line[0] == 'f' ? &x->is_frozen : &x->is_buffer) = true;
    } else if (strcmp(line, "loss") == 0) {
        if (x->producer != *loss_node)
            return bad(r, "the loss tensor is not produced by the loss node", x->name);
        tg->loss_tensor = t;
    } else if (strcmp(line, "label") == 0) {
        if (!x->is_graph_input || x->dtype != IR_DTYPE_INT64)
            return bad(r, "the label is not an int64 graph input", x->name);
        tg->label_tensor = t;
    } else {
        if (seen_saved[t]) return bad(r, "a tensor saved twice", x->name);
        seen_saved[t] = true;
        tg->saved[tg->n_saved++] = t;
    }
    return OC_OK;
}

static void unset(train_graph *tg) {
    oc_free(tg->phase), oc_free(tg->fwd_of), oc_free(tg->alias_of), oc_free(tg->grad_of);
    oc_free(tg->saved);
    tg->phase = NULL, tg->fwd_of = NULL, tg->alias_of = NULL, tg->grad_of = NULL;
    tg->saved = NULL, tg->n_saved = 0;
}

int train_structure_parse(train_graph *tg, const char *text, const char *path, oc_err *err) {
    ir_graph *g = tg->g;
    int nn = g->n_nodes, nt = g->n_tensors;
    unset(tg);
    tg->phase = oc_calloc((size_t)nn + 1, sizeof *tg->phase);
    tg->fwd_of = oc_malloc(((size_t)nn + 1) * sizeof(int));
    tg->grad_of = oc_malloc(((size_t)nt + 1) * sizeof(int));
    tg->saved = oc_malloc(((size_t)nt + 1) * sizeof(int));
    for (int i = 0; i < nn; i++) tg->fwd_of[i] = -1;
    for (int t = 0; t < nt; t++) {
        tg->grad_of[t] = -1;
        g->tensors[t].kind = IR_KIND_ACTIVATION;
    }
    tg->loss_tensor = tg->label_tensor = -1;
    bool *seen_saved = oc_calloc((size_t)nt + 1, sizeof(bool));
    char *copy = oc_strdup(text);
    reader r = {.tg = tg, .path = path, .err = err};
    int loss_node = -1, rc = OC_OK;
    char *line = copy;
    while (rc == OC_OK && line && (*line || r.lineno == 0)) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        if (r.lineno++ == 0)
            rc = strcmp(line, HEADER) == 0 ? OC_OK
                                           : bad(&r, "not a version-1 structure record", line);
        else rc = parse_line(&r, line, &loss_node, seen_saved);
        line = nl ? nl + 1 : NULL;
    }
    if (rc == OC_OK && loss_node < 0) rc = bad(&r, "the record has no phases line", "");
    if (rc == OC_OK && tg->loss_tensor < 0) rc = bad(&r, "the record has no loss line", "");
    oc_free(copy), oc_free(seen_saved);
    if (rc) {
        unset(tg);
        return OC_ERR;
    }
    tg->n_forward = loss_node + 1;
    train_mark_aliases(tg);
    tg->incore_peak_bytes = train_liveness_peak(tg, &tg->incore_peak_node);
    return OC_OK;
}
