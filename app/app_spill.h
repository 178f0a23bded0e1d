/*
 * Sets larger than memory (PROTOCOL.md §20): a memory budget, and the runs
 * a step's output is spilled to when the whole does not fit in it.
 *
 * A run is one chunk's step output: its elements (PSI_ELEMENT_BYTES each)
 * and their input indices (counted in the whole input), in the step's
 * order (byte order for the _SORT kinds).  A run on disk is exactly a
 * slice of an external plan (psi.h, §19): the library's finish reads the
 * runs back through psi_app_spill_source and applies the same merge rule
 * and encoding as in memory, so the bytes cannot differ.
 *
 * Every run goes into one temporary file in the chosen directory, opened
 * with O_TMPFILE (or created and unlinked at once where the file system
 * has no O_TMPFILE): it has no name, so a failed, interrupted or killed
 * process leaves nothing behind, and the kernel frees its space when the
 * descriptor closes.  It holds masked elements and row indices, never a
 * key: the same elements the message written from them carries.
 *
 * Thread-safety: none; one command uses one spill on one thread.
 */
#ifndef PSI_APP_SPILL_H
#define PSI_APP_SPILL_H

#include <stddef.h>
#include <stdint.h>

#include "psi.h"

/* The smallest budget a command accepts (--memory). */
#define PSI_APP_MEMORY_MIN ((uint64_t)4096)

/* Bytes of memory a value of a chunk may cost while its step runs: the
 * value (psi_value), its element and index, the sharding layer's copy of
 * both and the sort's scratch, with room to spare (bench/spill-memory.sh
 * measures what the commands take). */
#define PSI_APP_SPILL_PER_VALUE 256

/* Bytes a value takes in a run file: element and 64-bit index. */
#define PSI_APP_SPILL_RECORD (PSI_ELEMENT_BYTES + 8)

/** What a setup of n values holds in memory while the plan's finish builds
 *  it (PROTOCOL.md §20): a Bloom filter's bit array (at most the message),
 *  or a GCS's hashes, 8 bytes a value, and its bit stream (at most the
 *  message); 0 for raw.  Returns: psi_setup_bound's code.  Out: *need. */
int psi_app_setup_need(uint64_t *need, int suite, const psi_setup_params *p, uint64_t n);

/** What psi_app_setup_need counts, in words, for messages. */
const char *psi_app_setup_need_what(psi_structure structure);

/** The budget when --memory is not given: a quarter of the machine's
 *  physical memory, at least 64 MiB. */
uint64_t psi_app_memory_default(void);

/** The temporary directory of a command: `given` (--temp-dir), else
 *  $TMPDIR when it is set and not empty, else `fallback`. */
const char *psi_app_temp_dir(const char *given, const char *fallback);

/** The directory of output path `out` into dir: "." for a bare name or
 *  "-", "/" for a file at the root. */
void psi_app_output_dir(char *dir, size_t len, const char *out);

/** Parses a budget: a byte count with an optional suffix K, M, G, T (powers
 *  of 1024; KiB, MiB, GiB, TiB and KB... read the same).  Returns: 0, or
 *  -1 for text that is not one, or one below PSI_APP_MEMORY_MIN (message in
 *  err).  Out: *bytes. */
int psi_app_memory_parse(uint64_t *bytes, const char *text, char *err, size_t err_len);

/** Creates a file without a name in dir (O_TMPFILE, read and write, mode
 *  0600, close-on-exec; where the file system has none, a mkstemp name
 *  unlinked at once), as the runs are kept.  Returns: 0, or -1 with a
 *  message naming dir in err.  Out: *fd. */
int psi_app_spill_tmpfile(int *fd, const char *dir, char *err, size_t err_len);

/** How a budget is spent. */
typedef struct psi_app_budget {
    uint64_t bytes;         // the budget
    size_t chunk_values;    // most values of one chunk
    size_t block_bytes;     // input bytes read for one chunk
    size_t record_max;      // longest input record (line or CSV record)
    uint64_t read_bytes;    // the runs' read buffers together, whatever their number
} psi_app_budget;

/** Splits `bytes` into the sizes above. */
void psi_app_budget_init(psi_app_budget *b, uint64_t bytes);

typedef struct psi_app_run {
    uint64_t at;            // file offset of its elements (indices follow)
    size_t count;
    size_t done;            // read from the file
    size_t pos, avail;      // a grouped sorted slice: its buffer's next and count
} psi_app_run;

/* More runs than one merge takes (PSI_PLAN_MAX_SLICES) are read as groups
 * of consecutive runs, one group a slice: a sorted group merged on the fly
 * in the plan's order (element bytes, then input index), so the plan's
 * merge of the groups is the one merge of all the runs. */
typedef struct psi_app_group {
    size_t first, end;      // its runs
    size_t count;           // their values
    size_t done;            // handed to the source's caller
    size_t heap_size;       // sorted: its runs with values, heap[first..]
    int started;            // sorted: its heap is built
} psi_app_group;

typedef struct psi_app_spill {
    const char *dir;
    int fd;                 // -1: not open
    uint64_t size;          // bytes written
    psi_app_run *runs;
    size_t n_runs, cap_runs;
    uint64_t n_values;      // values in all runs
    // Reading (psi_app_spill_source): a buffer per run.
    size_t read_values;     // values each buffer holds
    uint8_t *elem_buf;      // n_runs * read_values elements
    size_t *idx_buf;        // n_runs * read_values indices
    // Grouped reading (more runs than max_slices): a slice a group, and
    // for sorted runs an output buffer a group and a heap of its runs.
    psi_app_group *groups;
    size_t n_groups;        // 0: a slice a run
    int sorted;             // the runs are in the plan's order
    size_t out_values;      // values each group's output buffer holds
    uint8_t *out_elem;      // n_groups * out_values elements
    size_t *out_idx;        // n_groups * out_values indices
    size_t *heap;           // the runs of the group being merged
    uint64_t read_done;     // values handed out, for progress
    void (*on_read)(void *arg, uint64_t done);
    void *on_read_arg;
    char err[512];          // the last failure's message
} psi_app_spill;

/** Creates the spill's file in dir (not yet: the first put does).  */
void psi_app_spill_init(psi_app_spill *s, const char *dir);

/** Appends a run of n elements and their indices: base + idx[i] (idx
 *  NULL: base + i).  Returns: 0, or -1 with a message in s->err naming the directory
 *  and the system's reason ("no space left on device": and how many bytes
 *  the spill had written), the file removed with nothing left. */
int psi_app_spill_put(psi_app_spill *s, const uint8_t *elements, const size_t *idx,
                      size_t base, size_t n);

/** The file itself, for other kinds of run (app_index_runs.h): writes or
 *  reads len bytes at offset `at` (the first write creates the file).
 *  Returns: 0, or -1 with a message in s->err. */
int psi_app_spill_write(psi_app_spill *s, const void *buf, size_t len, uint64_t at);
int psi_app_spill_read(psi_app_spill *s, void *buf, size_t len, uint64_t at);

/** Prepares reading every run back with `memory` bytes of buffers in all,
 *  as at most max_slices slices: a run a slice when there are no more
 *  runs than that, else groups of consecutive runs (`sorted`: the runs
 *  are in the plan's order of a _SORT step, and each group is merged in
 *  it as it is read).  Returns: 0 or -1 (no memory; message in s->err). */
int psi_app_spill_read_begin(psi_app_spill *s, uint64_t memory, size_t max_slices,
                             int sorted);

/** Slices the source hands out: the groups', else the runs'. */
size_t psi_app_spill_slices(const psi_app_spill *s);

/** The psi_plan_source_fn of an external plan whose slice k is run k, or
 *  group k (arg: the psi_app_spill).  A read failure is PSI_E_IO with
 *  s->err set. */
int psi_app_spill_source(void *arg, size_t k, const uint8_t **elements, const size_t **index,
                         size_t *count);

/** The slice counts, for psi_op_args.slice_counts (an array of
 *  psi_app_spill_slices(s), allocated), after read_begin.  Returns: NULL on
 *  no memory. */
size_t *psi_app_spill_counts(const psi_app_spill *s);

/** Closes the file (its space goes back) and frees the buffers.  Safe on an
 *  initialised or closed spill. */
void psi_app_spill_close(psi_app_spill *s);

#endif /* PSI_APP_SPILL_H */
