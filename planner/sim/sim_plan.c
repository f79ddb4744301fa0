/* sim_plan.c — see sim_plan.h. */
#include "sim/sim_plan.h"

#include <string.h>

const char *sim_decision_name(sim_decision d) {
    switch (d) {
    case SIM_DECISION_KEEP: return "keep";
    case SIM_DECISION_SWAP: return "swap";
    case SIM_DECISION_RECOMPUTE: return "recompute";
    case SIM_DECISION_CHECKPOINT: return "checkpoint";
    }
    return "?";
}

sim_plan *sim_plan_new(const train_graph *tg) {
    sim_plan *p = oc_calloc(1, sizeof *p);
    p->tg = tg;
    p->n_tensors = tg->g->n_tensors;
    p->decision = oc_calloc((size_t)p->n_tensors + 1, 1);
    p->swap_in_at = oc_malloc(((size_t)p->n_tensors + 1) * sizeof(int));
    sim_plan_keep_all(p);
    return p;
}

void sim_plan_free(sim_plan *p) {
    if (!p) return;
    oc_free(p->decision);
    oc_free(p->swap_in_at);
    oc_free(p);
}

void sim_plan_keep_all(sim_plan *p) {
    memset(p->decision, SIM_DECISION_KEEP, (size_t)p->n_tensors);
    for (int t = 0; t < p->n_tensors; t++) p->swap_in_at[t] = -1;
}

void sim_plan_swap_all(sim_plan *p) {
    sim_plan_keep_all(p);
    for (int i = 0; i < p->tg->n_saved; i++) p->decision[p->tg->saved[i]] = SIM_DECISION_SWAP;
}

void sim_plan_set(sim_plan *p, int t, sim_decision d, int swap_in_at) {
    OC_ASSERT(t >= 0 && t < p->n_tensors);
    p->decision[t] = (uint8_t)d;
    p->swap_in_at[t] = d == SIM_DECISION_SWAP ? swap_in_at : -1;
}

void sim_plan_copy(sim_plan *dst, const sim_plan *src) {
    OC_ASSERT(dst->n_tensors == src->n_tensors);
    memcpy(dst->decision, src->decision, (size_t)src->n_tensors);
    memcpy(dst->swap_in_at, src->swap_in_at, (size_t)src->n_tensors * sizeof(int));
}

void sim_plan_counts(const sim_plan *p, int *keep, int *swap, int *recompute) {
    int c[3] = {0, 0, 0};
    for (int i = 0; i < p->tg->n_saved; i++) c[p->decision[p->tg->saved[i]] % 3]++;
    *keep = c[0];
    *swap = c[1];
    *recompute = c[2];
}
