/*
 * The offline steps past their memory budget (cli_offline_spill.c,
 * PROTOCOL.md §20): chunks run as steps and spilled as runs, then one
 * external plan over the runs.
 */
#ifndef PSI_CLI_OFFLINE_SPILL_H
#define PSI_CLI_OFFLINE_SPILL_H

#include <stdio.h>

#include "app_offline.h"
#include "app_index_runs.h"
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
const char *psi_cli_spill_dir(const spill *x);
size_t psi_cli_spill_runs(const spill *x);

/** Runs one chunk's step (n values, or n points) on the shards and spills
 *  its output as a run; base is the chunk's first input index.  Returns: 0;
 *  -1 with *f set (the step failed; not reported) or with a reported
 *  failure of the disk (f->rc then 0). */
int psi_cli_spill_step(spill *x, psi_step_kind kind, const psi_value *values,
                       const uint8_t *points, size_t n, uint64_t base,
                       psi_cli_spill_fault *f);

/** Reads message `path` (a psi_message_kind; `name` says which in
 *  messages) past the budget: decoded as it is read (psi_reader), `step`
 *  run on each chunk of the budget and spilled.  After a failed step the
 *  rest is only decoded, and the last chunk is left when want_reveal >= 0
 *  and the message's reveal flag differs.  `label` and n_est (the
 *  estimated elements) are for the progress line.  Returns: 0 with *prc
 *  (the message's decoding: PSI_OK or its error, detail set), *reveal and
 *  *f (the first failed step), for the caller to report in the whole
 *  call's order; -1 (reported: opening or reading the file, memory, the
 *  disk). */
int psi_cli_spill_message(spill *x, const char *path, const char *name,
                          psi_message_kind kind, psi_step_kind step, int want_reveal,
                          const char *label, uint64_t n_est, int *prc, int *reveal,
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

/** Where a match's result goes in pieces: the matched indices
 *  (INTERSECTION: psi_plan_match_sink) or the pairs (ASSOCIATION:
 *  psi_plan_pair_sink), and where a refusing sink left its message. */
typedef struct psi_cli_match_sink {
    psi_perm_sink_fn indices;
    psi_pair_sink_fn pairs;
    void *arg;
    const char *err;
} psi_cli_match_sink;

/** Finishes a client operation a->op (INTERSECTION, INTERSECTION_SIZE or
 *  ASSOCIATION) over the runs against the setup read from `setup` in
 *  windows (a raw setup is never held whole, §20); the result goes to
 *  sink (NULL for a count).  Returns: 0 or -1 (reported).  Out: *count,
 *  the intersection's size. */
int psi_cli_spill_match(spill *x, psi_op_args *a, psi_app_msg_file *setup,
                        const psi_cli_match_sink *sink, size_t *count, const char *what,
                        const char *file);

void psi_cli_spill_free(spill *x);

#endif /* PSI_CLI_OFFLINE_SPILL_H */
