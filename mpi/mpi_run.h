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
 * (mpi_plan.c, mpi_rows.c).  MPI calls are made by the main thread only.
 */
#ifndef PSI_MPI_RUN_H
#define PSI_MPI_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "app_index_runs.h"
#include "app_input.h"
#include "app_offline.h"
#include "app_payload.h"
#include "app_spill.h"

/* Message tags. */
#define PSI_MPI_TAG_CHUNK 11  // a chunk of a stream to rank 0
#define PSI_MPI_TAG_LIST 12   // rank 0 to a rank: a list of indices

typedef struct psi_mpi_plan psi_mpi_plan; // mpi_plan.c

typedef struct psi_mpi_run {
    int rank, size;          // this rank, ranks in the job
    psi_app_offline s;       // options, key, shards, this rank's input, output
    char label[32];          // "shardpsi-mpi setup"
    uint64_t *counts;        // values of each rank's slice (all ranks)
    uint64_t *offsets;       // global index of each rank's first value
    uint64_t total;          // values over all ranks
    size_t chunk;            // elements per chunk of a stream
    int *status;             // size entries, for psi_mpi_agree
    psi_app_budget b;        // this rank's memory budget (--memory, PROTOCOL.md §20)
    char temp_dir[4096];     // where its runs go (--temp-dir, $TMPDIR, the output's)
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

/** Collective: gathers each rank's count n into r->counts,
 *  r->offsets and r->total. */
int psi_mpi_share_counts(psi_mpi_run *r, uint64_t n);

/* ---- mpi_slice.c ---- */

/** pread of exactly len bytes at off.  Returns: 0, or -1 with errno (0:
 *  the file ended first). */
int psi_mpi_pread(int fd, uint8_t *buf, size_t len, uint64_t off);

/** Opens path, which must be a regular file (`what` names it in messages).
 *  Returns: the fd, or -1 with the message in r->s.err.  Out: *size. */
int psi_mpi_open_regular(psi_mpi_run *r, const char *what, const char *path, uint64_t *size);

/** Not collective.  This rank's byte range of the input file, cut at line
 *  boundaries, after rank 0's check of the first line (as shardpsi's).
 *  Returns: 0, or an exit code with the message in r->s.err. */
int psi_mpi_input_range(psi_mpi_run *r, uint64_t *start, uint64_t *end);

/* ---- mpi_message.c ---- */

/** Where this rank's records of a message file of canonical layout are,
 *  for a part too large to hold: read again and masked a chunk at a time
 *  by psi_mpi_records_run. */
typedef struct psi_mpi_records {
    int held;                 // 1: the elements were returned whole instead
    const char *path;
    uint64_t at;              // file offset of its first record
    uint64_t count;           // its records
    int suite, is_request;
} psi_mpi_records;

/** Collective.  Reads a Request (is_request) or Response message file:
 *  rank 0 checks its suite header (and the reveal field of a request); for
 *  a file of canonical layout each rank reads and decodes only its
 *  elements, with the library; otherwise rank 0 decodes the whole file
 *  with the library and sends each rank its elements.  Elements are split
 *  by `counts` when the message holds sum(counts) elements, else by
 *  psi_shard_plan.  With `rec` (not NULL) a canonical part of more than
 *  r->b.chunk_values elements is only checked, in pieces, and described in
 *  *rec (rec->held 0, *elems NULL); and a file of another layout that
 *  rank 0 cannot decode within the budget is refused, with the size it
 *  needs.  Out: *elems (malloc'd, *n * PSI_ELEMENT_BYTES), *n, *total
 *  (elements of the whole message), *reveal (request only).  Returns: as
 *  psi_mpi_agree. */
int psi_mpi_read_elements(psi_mpi_run *r, const char *path, const char *what, int is_request,
                      const uint64_t *counts, uint8_t **elems, size_t *n,
                      uint64_t *total, int *reveal, psi_mpi_records *rec);

/** Called with each piece of a part's decoded elements, and the index of
 *  its first in the part.  Returns: 0, or not 0 to stop (message in
 *  r->s.err). */
typedef int (*psi_mpi_records_fn)(void *arg, const uint8_t *elems, size_t n, uint64_t first);

/** Not collective.  Reads the records of *rec (not held) again, decoding
 *  them a chunk of the budget at a time, and hands each chunk to fn, with
 *  progress `step`.  Returns: 0, or an exit code with the message in
 *  r->s.err (the file changed since it was checked, or fn failed). */
int psi_mpi_records_each(psi_mpi_run *r, const psi_mpi_records *rec, const char *step,
                         psi_mpi_records_fn fn, void *arg);

/** Collective.  Runs the plan's step of this rank on its part: `elems`
 *  when rec->held (psi_mpi_plan_run), else the records of *rec, read
 *  again and decoded a chunk of the budget at a time into runs on disk,
 *  with progress `step`; a failed step is `what` of `file`.  Returns: as
 *  psi_mpi_agree. */
int psi_mpi_records_run(psi_mpi_run *r, psi_mpi_plan *mp, const psi_mpi_records *rec,
                        const uint8_t *elems, const char *step, const char *what,
                        const char *file);

/* ---- mpi_plan.c ---- */

/** This rank's part of an external plan of the library (psi.h, "plans of
 *  steps", PROTOCOL.md §19): every rank begins the same plan, one slice a
 *  rank, and runs its slice's step where its inputs are. */
struct psi_mpi_plan {
    psi_engine *e;    // the key with the operation's role and reveal flag
    psi_plan *p;      // the plan, on every rank
    psi_step st;      // this rank's slice: its step kind, offset and count
    uint8_t *out;     // the step's outputs, st.count elements (in memory)
    size_t *idx;      // their indices in the whole input (indexed steps), else NULL
    // A slice past the rank's budget: its step run a chunk at a time, each
    // chunk's outputs a run on disk (indices counted in the whole input), read
    // back merged in the plan's order when rank 0's merge asks for them.
    int spilled;
    psi_app_spill sp;
    uint8_t *chunk_out;   // a chunk's outputs, r->b.chunk_values elements
    size_t *chunk_idx;    // and indices
};

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

/** Not collective.  Runs this rank's step on one chunk of its inputs (n
 *  values or points; base: the chunk's first index in the slice) and
 *  spills its outputs as a run (mp->spilled from then on).  Returns: 0, or
 *  an exit code with the message in r->s.err (`what` of `file` for a
 *  failed step, whose index is counted in the slice). */
int psi_mpi_plan_chunk(psi_mpi_run *r, psi_mpi_plan *mp, const psi_value *values,
                       const uint8_t *points, size_t n, uint64_t base, const char *what,
                       const char *file);

/** Collective.  Ranks other than 0 send their outputs to rank 0 in chunks
 *  of r->chunk elements; rank 0 runs the plan's finish into `o` (a
 *  message's sink, or the result's buffers), which asks for each rank's
 *  next chunk only when its merge reaches it.  Every chunk is received
 *  even when the finish fails.  A spilled slice is read back from its
 *  runs; a rank other than 0 that cannot read its runs prints why and
 *  aborts the job (rank 0 waits for its chunks).  Returns: on rank 0 the
 *  finish's code (PSI_E_IO: the sink refused, or rank 0's runs could not
 *  be read: mp->sp.err), PSI_OK on the others. */
int psi_mpi_plan_finish(psi_mpi_run *r, psi_mpi_plan *mp, psi_op_output *o);

/** Collective.  On rank 0, note gets "; K of R ranks past their budget,
 *  through N runs on disk", or "" when no rank spilled. */
void psi_mpi_plan_spilled(psi_mpi_run *r, const psi_mpi_plan *mp, char *note, size_t len);

/** Frees what psi_mpi_plan_begin, psi_mpi_plan_run and psi_mpi_plan_chunk
 *  made (closing the runs' file).  A zeroed *mp is fine. */
void psi_mpi_plan_free(psi_mpi_plan *mp);

/* ---- mpi_part.c ---- */

/** This rank's part of the input file, read a chunk of the budget at a
 *  time: a part of one chunk is held (and stepped) whole; a larger one is
 *  counted in a first pass and masked chunk by chunk in a second, so that
 *  no rank holds more than a chunk of values (PROTOCOL.md §18.5, §20). */
typedef struct psi_mpi_part {
    uint64_t start, end;          // its bytes in the file
    int whole;                    // the first chunk is all of it
    uint64_t n;                   // its values
    psi_app_input_stream in;      // whole: holds the values
    int reading;                  // not whole: read again by psi_mpi_part_value
} psi_mpi_part;

/** Collective.  Cuts the input file, checks its first line (rank 0),
 *  reads this rank's first chunk (and counts the rest), and shares the
 *  counts (r->counts, r->offsets, r->total).  Returns: as psi_mpi_agree;
 *  free with psi_mpi_part_free either way. */
int psi_mpi_part_open(psi_mpi_run *r, psi_mpi_part *pt);

/** Collective.  Runs the plan's step of this rank on its part: in memory,
 *  or a chunk at a time into runs on disk.  Returns: as psi_mpi_agree. */
int psi_mpi_part_run(psi_mpi_run *r, psi_mpi_plan *mp, psi_mpi_part *pt, const char *step,
                     const char *what);

/** Not collective.  Value i of this rank's part (counted in the part),
 *  for i ascending from call to call: from the held chunk, or from the
 *  part read again a chunk at a time (opened by the first call), so that
 *  match can write its rows within the budget.  Returns: 0, or an exit code
 *  with the message in r->s.err (a part that now holds fewer values: "the
 *  file changed").  Out: *v, valid until the next call. */
int psi_mpi_part_value(psi_mpi_run *r, psi_mpi_part *pt, uint64_t i, const psi_value **v);

void psi_mpi_part_free(psi_mpi_part *pt);

/* ---- mpi_payjoin.c ---- */

/** match --payloads on a rank (PROTOCOL.md §22.4): the payload file, read
 *  where it lies, and where this rank's response elements are. */
typedef struct psi_mpi_pay {
    psi_app_payfile pf;
    int open;
    int raw;                  // the setup is raw: a matched row has a record
    char source[4200];        // "payload file X"
    const uint8_t *held;      // the part's elements, held; else in the file:
    int fd;
    uint64_t at;              // its first record
    size_t rec, elen;         // bytes a record (2 + elen), an element
    uint8_t prefix[2];        // a record's tag and length bytes
    uint64_t written;         // rows written by this rank
} psi_mpi_pay;

/** Collective.  Opens --payloads on every rank (checked and indexed within
 *  the rank's budget) and notes where the part's response elements are:
 *  held (the elements psi_mpi_read_elements returned), else rec's records.
 *  Returns: as psi_mpi_agree; free p either way. */
int psi_mpi_pay_open(psi_mpi_run *r, psi_mpi_pay *p, const uint8_t *held,
                     const psi_mpi_records *rec, int raw);

/** Not collective.  Writes to f the rows of the c matched indices idx
 *  (ascending, counted in the part) with their payloads: each value, its
 *  payload (psi_app_payload_write, line mode) and "\n"; a row without a
 *  record is dropped (GCS, Bloom) or refused (raw).  Returns: 0, or an exit
 *  code with the message in r->s.err. */
int psi_mpi_pay_rows(psi_mpi_run *r, psi_mpi_pay *p, psi_mpi_part *pt, const size_t *idx,
                     size_t c, FILE *f);

void psi_mpi_pay_free(psi_mpi_pay *p);

/* ---- mpi_rows.c ---- */

/** Collective.  Match's rows, written by rank 0 in input order: rank 0
 *  reads the matched indices (global, ascending) from `runs` and sends each
 *  rank, in rank order, its indices a piece at a time; the rank answers
 *  each piece with its rows (value and "\n"; with `pay`, not NULL, each with
 *  its payload: psi_mpi_pay_rows), taken from its part `pt` as it walks it,
 *  in messages of at most 1 MiB.  Returns: 0, -1 (rank 0 could
 *  not write; every rank still finishes), or an exit code as psi_mpi_agree
 *  (a part read again that changed, a run that could not be read). */
int psi_mpi_rows_write(psi_mpi_run *r, psi_mpi_part *pt, psi_app_index_runs *runs,
                       psi_mpi_pay *pay);

/* ---- mpi_steps.c, mpi_match.c ---- */
int psi_mpi_setup(psi_mpi_run *r);
int psi_mpi_request(psi_mpi_run *r);
int psi_mpi_response(psi_mpi_run *r);
int psi_mpi_match(psi_mpi_run *r);
/* mpi_payloads.c: the payload file of a CSV input (PROTOCOL.md §22.1). */
int psi_mpi_payloads(psi_mpi_run *r);

/** Builds r->s.g on the rank's engine (see psi_app_offline_shards) and
 *  agrees.  Returns: as psi_mpi_agree. */
int psi_mpi_shards(psi_mpi_run *r, psi_role role, int reveal);

/** Opens output `o` at `path` on rank 0 and agrees.  Returns: as psi_mpi_agree. */
int psi_mpi_open(psi_mpi_run *r, psi_app_output *o, const char *path);

/** Commits output `o` on rank 0 and agrees.  Returns: as psi_mpi_agree. */
int psi_mpi_commit(psi_mpi_run *r, psi_app_output *o);

#endif /* PSI_MPI_RUN_H */
