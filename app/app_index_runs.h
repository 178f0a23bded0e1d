/*
 * Input indices put in ascending order within a memory budget (PROTOCOL.md
 * §20): `shardpsi match` gets the intersection's indices in the order of
 * the unmasked elements' bytes (psi_plan_match_sink), and writes them, or
 * the rows they name, in input order.  Indices are gathered into a buffer;
 * a full buffer is sorted and written as a run to a nameless temporary
 * file (app_spill.h); reading merges the runs.  Indices are distinct (each
 * input value matches at most once), so the order is total.  A set of
 * pairs (psi_app_index_runs_init_pairs) carries a value with each index,
 * ordered by the index alone: the association table's server rows.
 *
 * Thread-safety: none.
 */
#ifndef PSI_APP_INDEX_RUNS_H
#define PSI_APP_INDEX_RUNS_H

#include <stddef.h>
#include <stdint.h>

#include "app_spill.h"

typedef struct psi_app_index_run {
    uint64_t at;            // file offset of its first index
    size_t count, done;     // indices, and those read into its buffer
    size_t pos, avail;      // the buffer's next index and how many it holds
} psi_app_index_run;

typedef struct psi_app_index_runs {
    psi_app_spill file;     // the temporary file (fd, directory, message)
    uint64_t memory;        // bytes for the buffers
    size_t *buf;            // gathering: cap indices; reading: one slice a run
    size_t cap, have, per;  // per: indices each run's read buffer holds
    size_t read_at;         // reading without runs: the buffer's next index
    psi_app_index_run *runs;
    size_t n_runs, cap_runs;
    size_t *heap;           // reading: runs by their next index
    size_t heap_size;
    uint64_t total;         // indices added
    size_t w;               // words a record: 1, or 2 for pairs
    int reading;
} psi_app_index_runs;

/** Sets up an empty set of runs in dir, with `memory` bytes of buffers. */
void psi_app_index_runs_init(psi_app_index_runs *r, const char *dir, uint64_t memory);

/** Sets up an empty set of (index, value) pairs, as init does. */
void psi_app_index_runs_init_pairs(psi_app_index_runs *r, const char *dir, uint64_t memory);

/** Adds a pair (a set made by init_pairs).  Returns: as _add. */
int psi_app_index_runs_add_pair(psi_app_index_runs *r, size_t index, size_t value);

/** Out: the next pair, by index.  Returns: as _next. */
int psi_app_index_runs_next_pair(psi_app_index_runs *r, size_t *index, size_t *value);

/** Adds n indices (a psi_perm_sink_fn: arg is the psi_app_index_runs).
 *  Returns: 0, or 1 with a message in r->file.err (no memory, the disk). */
int psi_app_index_runs_add(void *arg, const size_t *index, size_t n);

/** Ends adding and starts reading in ascending order.  Returns: 0 or -1
 *  (message in r->file.err). */
int psi_app_index_runs_read_begin(psi_app_index_runs *r);

/** Out: *index, the next index.  Returns: 1, 0 at the end, or -1 (message
 *  in r->file.err). */
int psi_app_index_runs_next(psi_app_index_runs *r, size_t *index);

/** Closes the file and frees the buffers; safe on an initialised set. */
void psi_app_index_runs_close(psi_app_index_runs *r);

#endif /* PSI_APP_INDEX_RUNS_H */
