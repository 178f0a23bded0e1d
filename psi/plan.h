/* The plan object of the step API (psi.h, PROTOCOL.md §19) shared by its
 * three files: plan.c (begin, the cut, the steps), plan_finish.c (merge
 * rules and encodings) and op.c (whole operations and the message calls).
 * Not installed. */
#ifndef PSI_PLAN_H
#define PSI_PLAN_H

#include "common.h"
#include "setup.h"

/* One slice: its part of the input and the outcome of its step. */
typedef struct plan_slice {
    size_t offset, count;
    int done;      /* run here or put from elsewhere */
    int rc;        /* the step's code */
    int64_t index; /* its failure's index in the whole input, or -1 */
} plan_slice;

struct psi_plan {
    psi_op op;
    psi_suite suite;
    int reveal;                /* the engine's flag */
    psi_step_kind kind;
    psi_setup_params params;   /* SETUP */
    psi_setup *setup;          /* client ops: the parsed ServerSetup */
    size_t n;                  /* inputs */
    const psi_value *values;   /* MASK kinds: borrowed */
    const uint8_t *points;     /* point kinds: into `owned` or borrowed */
    uint8_t *owned;            /* decoded message elements */
    uint8_t *out;              /* n elements: the steps' outputs (not external) */
    size_t *perm;              /* n indices of the _SORT steps (not external) */
    size_t n_slices;
    plan_slice *slices;
    int external;
    psi_plan_source_fn source;
    void *source_arg;
    psi_perm_sink_fn perm_sink;   /* raw setup: the permutation in pieces */
    void *perm_sink_arg;
    psi_perm_sink_fn match_sink;  /* INTERSECTION: the indices in pieces */
    void *match_sink_arg;
    psi_pair_sink_fn pair_sink;   /* ASSOCIATION: the pairs in pieces */
    void *pair_sink_arg;
    psi_progress_fn progress;
    void *progress_arg;
    const char *field;         /* names a step's bad input in the detail */
};

/* Capacities the message call checks before the steps run (a request's
 * bytes, a response's bytes, a STEP's element bytes); checked by
 * psi_plan_begin_checked where the single engine always checked them. */
typedef struct plan_caps {
    int given;
    size_t bytes;
} plan_caps;

int psi_plan_begin_checked(psi_plan **out, const psi_engine *e, const psi_op_args *a,
                           const plan_caps *caps);

/* 1 for the three _SORT kinds. */
int psi_step_sorts(psi_step_kind kind);

#endif /* PSI_PLAN_H */
