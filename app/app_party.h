/*
 * One party of the protocol as the commands drive it: either one engine
 * (psi.h) or the same key split over shards run by a thread pool
 * (psi_shard.h).  Every engine operation the commands perform goes through
 * psi_app_party_*, so the choice is made once, when the party is built.
 */
#ifndef PSI_APP_PARTY_H
#define PSI_APP_PARTY_H

#include <stddef.h>
#include <stdint.h>

#include "psi.h"
#include "psi_shard.h"

/* How a command runs its parties: --shards and --threads. */
typedef struct psi_app_shard_opts {
    int sharded;     // 0: the single engine, and the counts are unused
    size_t shards;   // engines; 0 = as many as threads
    size_t threads;  // worker threads; 0 = online CPUs, at most `shards`
} psi_app_shard_opts;

/** Parses argv[*i] if it is --shards or --threads (with its value), which
 *  turn sharding on.  Returns: 1 if it was one of them, 0 if not, -1 after
 *  a usage message (missing value, 0, not a number, above the limit).
 *  `cmd` prefixes the message ("vectors check"). */
int psi_app_shard_opt(psi_app_shard_opts *o, int argc, char **argv, int *i,
                      const char *cmd);

typedef struct psi_app_party {
    psi_engine *engine;  // the engine alone; NULL when sharded
    psi_shards *shards;  // NULL without sharding
} psi_app_party;

/** What a party is made of.  The key: `key`, cloned; else the `key_len`
 *  bytes at `key_bytes` (psi_engine_create_from_key); else, with both NULL,
 *  a fresh random key.  Its engines get `role`, `reveal` and `suite` (an
 *  engine's suite must be `suite`). */
typedef struct psi_app_party_spec {
    const psi_engine *key;
    const uint8_t *key_bytes;
    size_t key_len;
    int suite;                  // psi_suite
    psi_role role;
    int reveal;
    psi_app_shard_opts shard;   // sharded 0: one engine; else its counts
    psi_progress_fn progress;   // the shards' progress (may be NULL)
    void *progress_arg;
} psi_app_party_spec;

/* The step of psi_app_party_build that failed, as *what names it. */
#define PSI_APP_PARTY_E_ENGINE "cannot create the engine"
#define PSI_APP_PARTY_E_SHARDS "cannot start the shards"

/** The one builder of a party, for every command, `shardpsi-mpi` and the
 *  tests.  With sharding off the party is the engine; on, the shards
 *  built from it (shards = threads when only threads is set; threads
 *  default to online CPUs, capped at the shard count when that is set),
 *  and the engine is freed, so that no operation can reach it by mistake.
 *  Returns: PSI_OK, or the library's error with *what set to
 *  PSI_APP_PARTY_E_ENGINE or _E_SHARDS.  Out: *p, freed with
 *  psi_app_party_free (also after a failure). */
int psi_app_party_build(psi_app_party *p, const psi_app_party_spec *spec,
                        const char **what);

/** Frees the engine or the shards; a zeroed *p is fine. */
void psi_app_party_free(psi_app_party *p);

/** Returns: the shard count, 0 for a single engine. */
size_t psi_app_party_shards(const psi_app_party *p);
/** Returns: the worker threads, 0 for a single engine or the inline
 *  executor. */
size_t psi_app_party_threads(const psi_app_party *p);
/** Returns: the prefix of the library calls the party makes, "psi_" or
 *  "psi_shards_", for messages. */
const char *psi_app_party_api(const psi_app_party *p);
/** Writes "N shards, T threads" (or "N shards, inline (no worker
 *  thread)", or "a single engine") into out. */
void psi_app_party_describe(const psi_app_party *p, char *out, size_t cap);

/* The engine operations, with the arguments and results of psi.h. */
int psi_app_party_create_setup(const psi_app_party *p, uint8_t *out, size_t *out_len,
                               size_t *perm, const psi_setup_params *params,
                               const psi_value *values, size_t n);
int psi_app_party_process_request(const psi_app_party *p, uint8_t *out, size_t *out_len,
                                  const uint8_t *request, size_t request_len);
int psi_app_party_create_request(const psi_app_party *p, uint8_t *out, size_t *out_len,
                                 const psi_value *values, size_t n);
int psi_app_party_intersection(const psi_app_party *p, size_t *out, size_t *out_count,
                               const uint8_t *setup, size_t setup_len,
                               const uint8_t *response, size_t response_len);
int psi_app_party_intersection_size(const psi_app_party *p, size_t *count,
                                    const uint8_t *setup, size_t setup_len,
                                    const uint8_t *response, size_t response_len);
int psi_app_party_association(const psi_app_party *p, psi_pair *out, size_t *out_count,
                              const uint8_t *setup, size_t setup_len,
                              const uint8_t *response, size_t response_len);

/* The batch primitives (psi_engine_mask, _remask, _unmask or their shards'). */
int psi_app_party_mask(const psi_app_party *p, uint8_t *out, size_t *out_len,
                       const psi_value *values, size_t n);
int psi_app_party_remask(const psi_app_party *p, uint8_t *out, size_t *out_len,
                         const uint8_t *points, size_t n);
int psi_app_party_unmask(const psi_app_party *p, uint8_t *out, size_t *out_len,
                         const uint8_t *points, size_t n);
/** The payload table of n values (PROTOCOL.md §22): masked by the party,
 *  then psi_payload_table_build (psi_shards_payload_table_build sharded). */
int psi_app_party_payload_table(const psi_app_party *p, int suite, uint8_t *out,
                                size_t *out_len, const psi_value *values,
                                const psi_value *payloads, size_t n, size_t pad_len,
                                const uint8_t *salt);

#endif /* PSI_APP_PARTY_H */
