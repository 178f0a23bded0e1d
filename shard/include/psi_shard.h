/*
 * shardpsi sharding layer: every expensive engine step split across N
 * engines built from one key, run on a thread pool (or inline), and merged
 * so that the output is byte-identical to the single engine's for every N
 * and every thread count.  PROTOCOL.md §14 gives the rules; psi.h's global
 * rules (argument order, (buf, *len) outputs, error codes) apply here too.
 *
 * Two levels:
 *  - Pure steps, no threads, usable by any executor (the native pool below,
 *    browser workers, other processes): psi_shard_plan cuts n inputs into N
 *    contiguous slices, psi_shard_run_one runs one slice on one engine,
 *    psi_shard_merge_sorted merges the sorted slices of a raw setup.
 *    Requests, responses and unmasked elements merge by concatenation, so
 *    they need no merge function: slices are written one after another.
 *  - psi_shards: N engines cloned from one engine plus a native thread pool,
 *    offering the sharded form of every engine operation of psi.h with the
 *    same arguments, results and errors.
 */
#ifndef PSI_SHARD_H
#define PSI_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "psi.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Most worker threads a psi_shards may start. */
#define PSI_SHARD_MAX_THREADS 256
/** Most shards (engines) a psi_shards may hold. */
#define PSI_SHARD_MAX_SHARDS 4096
/** Shards a worker thread gets when the caller leaves the count to the
 *  library. */
#define PSI_SHARD_DEFAULT_PER_THREAD 4
/** Elements a serial merge of psi_shards handles between two calls of the
 *  progress callback (psi_shard_settings.progress). */
#define PSI_SHARD_TICK 4096

/* ------------------------------------------------------- pure steps §14 */

/** The plan (§14.1): shard k of `shards` covers inputs [*offset, *offset +
 *  *count) of n; slices are contiguous, in order, and their sizes differ by
 *  at most one (the first n mod shards slices are one larger).  Slices are
 *  empty when shards > n.
 *  Returns: PSI_OK, PSI_E_INVALID_ARG (shards == 0, k >= shards).
 *  Out: *offset, *count. */
PSI_API int psi_shard_plan(size_t *offset, size_t *count, size_t n, size_t shards, size_t k);

/** The expensive step one shard runs. */
typedef enum psi_shard_step {
    PSI_SHARD_MASK = 1,      /* values -> masked elements (request; GCS and
                                Bloom setup) */
    PSI_SHARD_MASK_SORT = 2, /* values -> masked elements sorted by bytes,
                                stably, with their input indices (raw setup) */
    PSI_SHARD_REMASK = 3,    /* partner points -> re-masked (response) */
    PSI_SHARD_UNMASK = 4,    /* response points -> unmasked (match step) */
    PSI_SHARD_REMASK_SORT = 5, /* REMASK, then sorted as MASK_SORT sorts
                                  (a response without reveal, §14.3) */
    PSI_SHARD_UNMASK_SORT = 6  /* UNMASK, then sorted as MASK_SORT sorts
                                  (the raw match, §14.3) */
} psi_shard_step;

/** One shard's input: a slice of the whole input, as psi_shard_plan cut it. */
typedef struct psi_shard_slice {
    psi_shard_step step;
    size_t offset;           /* index of the slice's first input in the whole */
    size_t count;            /* inputs in the slice */
    const psi_value *values; /* MASK, MASK_SORT: the slice's count values */
    const uint8_t *points;   /* REMASK, UNMASK: the slice's count * 33 bytes */
} psi_shard_slice;

/** Runs one shard: the engine call of the step on the slice (psi_engine_mask,
 *  _remask or _unmask), and for the three _SORT steps the stable byte sort
 *  of the slice (psi_elements_sort) with offset added to each index.  No
 *  threads.  Returns: as the engine call, plus PSI_E_WRONG_ROLE never (any
 *  role may mask); PSI_E_INVALID_ARG for a bad step or a missing input.
 *  Out: out, count * 33 bytes (no partial result on failure: wiped);
 *  perm, count entries for the _SORT steps (global input indices in sorted
 *  order), may be NULL otherwise.
 *  Thread-safety: as the engine's const calls; slices may run concurrently
 *  on one engine or on clones. */
PSI_API int psi_shard_run_one(const psi_engine *e, uint8_t *out, size_t *perm,
                              const psi_shard_slice *in);

/** Merges a raw setup's shards (§14.2): `elements` holds the N slices of
 *  psi_shard_plan(n, shards) one after another, each sorted by bytes by
 *  PSI_SHARD_MASK_SORT, and perm their global input indices.  Writes all n
 *  elements in byte order, ties by input index (so equal to one stable sort
 *  of the whole input), and the merged permutation.
 *  Returns: PSI_OK, PSI_E_INVALID_ARG, PSI_E_NOMEM, PSI_E_SETUP_UNSORTED (a
 *  slice is not in (bytes, index) order).  Out: out (n * 33 bytes, must not
 *  overlap elements), out_perm (n entries).  In: elements, perm, n, shards. */
PSI_API int psi_shard_merge_sorted(uint8_t *out, size_t *out_perm, const uint8_t *elements,
                                   const size_t *perm, size_t n, size_t shards);

/* --------------------------------------------------- the native executor */

typedef struct psi_shard_settings {
    size_t threads;          /* worker threads; default 0 = online CPUs.  1 runs
                                the shards one after another on the calling
                                thread (the inline executor: no thread). */
    size_t max_threads;      /* cap on threads, given or defaulted; default
                                0 = PSI_SHARD_MAX_THREADS */
    size_t shards;           /* engines; default 0 = threads *
                                PSI_SHARD_DEFAULT_PER_THREAD, or 1 with the
                                inline executor.
                                More shards than threads is allowed: a thread
                                then runs several in turn.  No more threads
                                than shards are started: threads beyond the
                                shard count are dropped. */
    psi_progress_fn progress;/* may be NULL (default): called with the
                                values done over all shards of the current
                                call, from worker threads but never two at a
                                time; done never decreases within a call.
                                The serial merges of a call (raw setup,
                                response without reveal, raw match) call it
                                again from the calling thread with done =
                                total every PSI_SHARD_TICK elements, so a
                                caller can show it is alive (keepalives) */
    void *progress_arg;
    unsigned char reserved[32]; /* zero */
} psi_shard_settings;

/** Fills `s` with the defaults above. */
PSI_API void psi_shard_settings_default(psi_shard_settings *s);

/** N engines from one key with a thread pool. */
typedef struct psi_shards psi_shards;

/** Clones `e` (its key, role and reveal flag; not its progress callback)
 *  into `shards` engines, each holding its own copy of the key in guarded
 *  memory, and starts the worker threads.  `e` may be freed afterwards.
 *  Returns: PSI_OK, PSI_E_INVALID_ARG (shards > PSI_SHARD_MAX_SHARDS,
 *  threads > PSI_SHARD_MAX_THREADS, non-zero reserved bytes), PSI_E_NOMEM,
 *  PSI_E_CRYPTO, PSI_E_THREAD (a thread could not start: none is left
 *  running, nothing is leaked, and there is no fallback to fewer threads;
 *  a library built with -Dthreads=disabled has one CPU by default and
 *  gives PSI_E_THREAD whenever more than one thread is asked for).
 *  Ownership: the caller frees *out with psi_shards_free. */
PSI_API int psi_shards_create(psi_shards **out, const psi_engine *e, const psi_shard_settings *s);

/** Stops and joins the threads, wipes and frees every engine.  NULL is a
 *  no-op. */
PSI_API void psi_shards_free(psi_shards *g);

/** Returns: the number of shards (engines), 0 for NULL. */
PSI_API size_t psi_shards_count(const psi_shards *g);
/** Returns: the number of worker threads: min(threads, max_threads,
 *  shards) after defaults, or 0 for the inline executor (that minimum is
 *  1) and for NULL. */
PSI_API size_t psi_shards_threads(const psi_shards *g);

/*
 * The sharded operations.  Each takes the arguments of the psi.h function
 * of the same name with `psi_shards *` in place of `const psi_engine *`,
 * and returns the same bytes, indices and error codes, checked in the same
 * order, for every shard and thread count (§14).  When several shards
 * fail, the error is the lowest-numbered shard's, which is the error the
 * single engine returns.  A failed call joins every job, frees every
 * partial result and returns nothing (*len = 0, output wiped).
 * Thread-safety: one call at a time per psi_shards (the calls need
 * exclusive access); the inputs are borrowed only for the call.
 */
PSI_API int psi_shards_mask(psi_shards *g, uint8_t *out, size_t *out_len,
                            const psi_value *values, size_t n);
PSI_API int psi_shards_remask(psi_shards *g, uint8_t *out, size_t *out_len,
                              const uint8_t *points, size_t n);
PSI_API int psi_shards_unmask(psi_shards *g, uint8_t *out, size_t *out_len,
                              const uint8_t *points, size_t n);

PSI_API int psi_shards_server_create_setup(psi_shards *g, uint8_t *out, size_t *out_len,
                                           size_t *perm, const psi_setup_params *p,
                                           const psi_value *values, size_t n);
PSI_API int psi_shards_server_process_request(psi_shards *g, uint8_t *out, size_t *out_len,
                                              const uint8_t *request, size_t request_len);
PSI_API int psi_shards_client_create_request(psi_shards *g, uint8_t *out, size_t *out_len,
                                             const psi_value *values, size_t n);
PSI_API int psi_shards_client_get_intersection(psi_shards *g, size_t *out, size_t *out_count,
                                               const uint8_t *setup, size_t setup_len,
                                               const uint8_t *response, size_t response_len);
PSI_API int psi_shards_client_get_intersection_size(psi_shards *g, size_t *count,
                                                    const uint8_t *setup, size_t setup_len,
                                                    const uint8_t *response,
                                                    size_t response_len);
PSI_API int psi_shards_client_get_association(psi_shards *g, psi_pair *out, size_t *out_count,
                                              const uint8_t *setup, size_t setup_len,
                                              const uint8_t *response, size_t response_len);

#ifdef __cplusplus
}
#endif
#endif /* PSI_SHARD_H */
