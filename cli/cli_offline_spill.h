/*
 * The offline steps past their memory budget (cli_offline_spill.c,
 * PROTOCOL.md §20): chunks run as steps and spilled as runs, then one
 * external plan over the runs.
 */
#ifndef PSI_CLI_OFFLINE_SPILL_H
#define PSI_CLI_OFFLINE_SPILL_H

#include <stdio.h>

#include "app_offline.h"
#include "app_spill.h"

typedef struct spill spill;

/* A step's failure, kept to be reported where the whole call would. */
typedef struct psi_cli_spill_fault {
    const char *field;        // the whole call's name of the input (NULL: the step's)
    int rc;
    psi_error_detail detail;
} psi_cli_spill_fault;

/** Sets up the budget (--memory), the runs' directory (--temp-dir) and the
 *  chunk buffers for a party of `role` and `reveal`.  Returns: 0 or -1
 *  (reported); *out is to be freed either way. */
int psi_cli_spill_init(spill **out, psi_app_offline *s, psi_role role, int reveal);

const psi_app_budget *psi_cli_spill_budget(const spill *x);
uint64_t psi_cli_spill_values(const spill *x);
size_t psi_cli_spill_runs(const spill *x);

/** Runs one chunk's step (n values, or n points) on the shards and spills
 *  its output as a run; base is the chunk's first input index.  Returns: 0;
 *  -1 with *f set (the step failed; not reported) or with a reported
 *  failure of the disk (f->rc then 0). */
int psi_cli_spill_step(spill *x, psi_step_kind kind, const psi_value *values,
                       const uint8_t *points, size_t n, uint64_t base,
                       psi_cli_spill_fault *f);

/** Reports a step's failure as the whole call's. */
void psi_cli_spill_report(psi_app_offline *s, const psi_cli_spill_fault *f, const char *what,
                          const char *file);

/** Finishes operation a->op (its op and params set; the rest is filled
 *  here) over the runs into s->out, with a raw setup's permutation to
 *  perm_out (may be NULL).  Returns: 0 or -1 (reported).  Out: *len, the
 *  message's bytes. */
int psi_cli_spill_finish(spill *x, psi_op_args *a, FILE *perm_out, size_t *len,
                         const char *what, const char *file);

void psi_cli_spill_free(spill *x);

#endif /* PSI_CLI_OFFLINE_SPILL_H */
