/*
 * shardpsi-mpi: the four protocol steps of the offline commands (PROTOCOL.md
 * §17) run on the ranks of an MPI job, each rank one slice of the library's
 * plan of the step (§19) on its own engines and threads; the plan's finish
 * on rank 0 merges and encodes, so the files are byte-identical to the
 * single process's (§18).
 *
 * Every rank runs the same sequence of steps.  A step that can fail on some
 * ranks ends in psi_mpi_agree(), a collective call after which every rank knows
 * whether all succeeded; rank 0 then prints the lowest failing rank's
 * message and every rank returns the same exit code.  Only rank 0 writes
 * output files; the other ranks send it their parts in bounded chunks
 * (mpi_plan.c, mpi_stream.c).  MPI calls are made by the main thread only.
 */
#ifndef PSI_MPI_RUN_H
#define PSI_MPI_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "app_offline.h"

/* Message tags. */
#define PSI_MPI_TAG_CHUNK 11  // a chunk of a stream to rank 0
#define PSI_MPI_TAG_LIST 12   // rank 0 to a rank: a list of indices

typedef struct psi_mpi_run {
    int rank, size;          // this rank, ranks in the job
    psi_app_offline s;       // options, key, shards, this rank's input, output
    char label[32];          // "shardpsi-mpi setup"
    uint64_t *counts;        // values of each rank's slice (all ranks)
    uint64_t *offsets;       // global index of each rank's first value
    uint64_t total;          // values over all ranks
    size_t chunk;            // elements per chunk of a stream
    int *status;             // size entries, for psi_mpi_agree
} psi_mpi_run;

/** Prints "<label>: <message>" on rank 0 (a step's closing line). */
#define PSI_MPI_NOTE(r, ...)                                                   \
    do {                                                                   \
        if ((r)->rank == 0)                                                \
            psi_app_progress_note(&(r)->s.prog, __VA_ARGS__);              \
    } while (0)

/* ---- mpi_comm.c ---- */

/** Collective.  Every rank passes its status (0, or the exit code of its
 *  failure, whose message is in r->s.err).  If any rank failed, rank 0
 *  prints "<label>: error: rank R: <message>" for the lowest failing rank R
 *  (its message alone when the job has one rank).  Returns: on every rank,
 *  0 or the lowest failing rank's exit code. */
int psi_mpi_agree(psi_mpi_run *r, int status);

/** Collective.  Rank 0 loads the key file; the key goes to every rank
 *  (MPI_Bcast) through guarded memory, wiped at once; every rank ends with
 *  its engine in r->s.key.  Returns: as psi_mpi_agree. */
int psi_mpi_share_key(psi_mpi_run *r);

/** Collective: gathers each rank's count (r->s.in.n) into r->counts,
 *  r->offsets and r->total. */
int psi_mpi_share_counts(psi_mpi_run *r, uint64_t n);

/* ---- mpi_slice.c ---- */

/** Collective.  Each rank reads its slice of the input file (byte ranges
 *  cut at line boundaries) into r->s.in, and the counts are shared.
 *  Returns: as psi_mpi_agree. */
int psi_mpi_read_input(psi_mpi_run *r);

/** Collective.  Reads a Request (is_request) or Response message file:
 *  rank 0 checks its suite header (and the reveal field of a request); for
 *  a file of canonical layout each rank reads and decodes only its
 *  elements, with the library; otherwise rank 0 decodes the whole file
 *  with the library and sends each rank its elements.  Elements are split
 *  by `counts` when the message holds sum(counts) elements, else by
 *  psi_shard_plan.  Out: *elems (malloc'd, *n * PSI_ELEMENT_BYTES), *n,
 *  *total (elements of the whole message), *reveal (request only).
 *  Returns: as psi_mpi_agree. */
int psi_mpi_read_elements(psi_mpi_run *r, const char *path, const char *what, int is_request,
                      const uint64_t *counts, uint8_t **elems, size_t *n,
                      uint64_t *total, int *reveal);

/* ---- mpi_plan.c ---- */

/** This rank's part of an external plan of the library (psi.h, "plans of
 *  steps", PROTOCOL.md §19): every rank begins the same plan, one slice a
 *  rank, and runs its slice's step where its inputs are. */
typedef struct psi_mpi_plan {
    psi_engine *e;    // the key with the operation's role and reveal flag
    psi_plan *p;      // the plan, on every rank
    psi_step st;      // this rank's slice: its step kind, offset and count
    uint8_t *out;     // the step's outputs, st.count elements
    size_t *idx;      // their indices in the whole input (indexed steps), else NULL
} psi_mpi_plan;

/** Collective.  Begins the external plan of `a` (the fields external,
 *  slices and slice_counts are set here: one slice a rank, rank k's with
 *  counts[k] inputs) on an engine of the key with `role` and `reveal`, and
 *  takes this rank's step.  A failure is reported as `what` (of `file`,
 *  may be NULL), as the single process reports the same call.
 *  Returns: as psi_mpi_agree; free *mp with psi_mpi_plan_free either way. */
int psi_mpi_plan_begin(psi_mpi_run *r, psi_mpi_plan *mp, psi_role role, int reveal,
                       psi_op_args *a, const uint64_t *counts, const char *what,
                       const char *file);

/** Collective.  Runs this rank's step on its st.count inputs (values for a
 *  masking step, else points) on its shards, with progress `step`, into
 *  mp->out and mp->idx.  Returns: as psi_mpi_plan_begin. */
int psi_mpi_plan_run(psi_mpi_run *r, psi_mpi_plan *mp, const char *step,
                     const psi_value *values, const uint8_t *points, const char *what,
                     const char *file);

/** Collective.  Ranks other than 0 send their outputs to rank 0 in chunks
 *  of r->chunk elements; rank 0 runs the plan's finish into `o` (a
 *  message's sink, or the result's buffers), which asks for each rank's
 *  next chunk only when its merge reaches it.  Every chunk is received
 *  even when the finish fails.  Returns: on rank 0 the finish's code
 *  (PSI_E_IO: the sink refused), PSI_OK on the others. */
int psi_mpi_plan_finish(psi_mpi_run *r, psi_mpi_plan *mp, psi_op_output *o);

/** Frees what psi_mpi_plan_begin and psi_mpi_plan_run made.  A zeroed *mp
 *  is fine. */
void psi_mpi_plan_free(psi_mpi_plan *mp);

/* ---- mpi_stream.c ---- */

/** Collective.  Streams each rank's `len` bytes to rank 0, which writes them
 *  to `f` in rank order (match's rows), in chunks of 4 MiB.  Returns: 0, or
 *  -1 on rank 0 when writing failed (every chunk is still received). */
int psi_mpi_stream_bytes(psi_mpi_run *r, FILE *f, const uint8_t *buf, size_t len);

/* ---- mpi_steps.c, mpi_match.c ---- */
int psi_mpi_setup(psi_mpi_run *r);
int psi_mpi_request(psi_mpi_run *r);
int psi_mpi_response(psi_mpi_run *r);
int psi_mpi_match(psi_mpi_run *r);

/** Builds r->s.g on the rank's engine (see psi_app_offline_shards) and
 *  agrees.  Returns: as psi_mpi_agree. */
int psi_mpi_shards(psi_mpi_run *r, psi_role role, int reveal);

/** Opens output `o` at `path` on rank 0 and agrees.  Returns: as psi_mpi_agree. */
int psi_mpi_open(psi_mpi_run *r, psi_app_output *o, const char *path);

/** Commits output `o` on rank 0 and agrees.  Returns: as psi_mpi_agree. */
int psi_mpi_commit(psi_mpi_run *r, psi_app_output *o);

#endif /* PSI_MPI_RUN_H */
