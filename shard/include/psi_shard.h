/*
 * shardpsi sharding layer: every expensive engine step split across N
 * engines built from one key, run on a thread pool (or inline), and merged
 * so that the output is byte-identical to the single engine's for every N
 * and every thread count.  PROTOCOL.md §14 gives the rules; psi.h's global
 * rules (argument order, (buf, *len) outputs, error codes) apply here too.
 *
 * It is an executor of the step API of psi.h: N engines cloned from one
 * engine and a native thread pool that runs a plan's slices, one a shard,
 * offering the sharded form of every operation of psi.h with the same
 * arguments, results and errors.  The plans, merge rules and encodings are
 * the library's (psi_op_run); this layer only runs slices.
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
#define PSI_SHARD_TICK PSI_PLAN_TICK

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

/** Runs a whole operation of the step API (psi_op_run) with one slice a
 *  shard on the pool; args->slices, slice_counts and progress must be 0
 *  (the shards and psi_shard_settings.progress decide them).  Returns: as
 *  psi_op_run. */
PSI_API int psi_shards_run_op(psi_shards *g, const psi_op_args *args, psi_op_output *o);

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

/** The payload table (PROTOCOL.md §22) of n server values and their
 *  payloads: the values masked by the shards (psi_shards_mask, so the
 *  server role's key), then psi_payload_table_build with the shards' suite.
 *  The same bytes for every shard and thread count with a given salt.  A
 *  capacity below psi_payload_table_bytes(n, L) is refused before any
 *  masking (PSI_E_BUFFER_TOO_SMALL, *out_len the size needed).
 *  Returns: as psi_payload_table_build, and PSI_E_WRONG_ROLE (the shards
 *  of a client engine).  Out: as psi_payload_table_build. */
PSI_API int psi_shards_payload_table_build(psi_shards *g, uint8_t *out, size_t *out_len,
                                           const psi_value *values, const psi_value *payloads,
                                           size_t n, size_t pad_len, const uint8_t *salt);

#ifdef __cplusplus
}
#endif
#endif /* PSI_SHARD_H */
