/*
 * One party of the protocol as the commands drive it: either one engine
 * (psi.h) or the same key split over shards run by a thread pool
 * (psi_shard.h).  Every engine operation the commands perform goes through
 * psi_cli_party_*, so the choice is made once, when the party is built.
 */
#ifndef PSI_CLI_PARTY_H
#define PSI_CLI_PARTY_H

#include <stddef.h>
#include <stdint.h>

#include "psi.h"
#include "psi_shard.h"

/* How a command runs its parties: --shards and --threads. */
typedef struct psi_cli_shard_opts {
    int sharded;     // 0: the single engine, and the counts are unused
    size_t shards;   // engines; 0 = as many as threads
    size_t threads;  // worker threads; 0 = online CPUs, at most `shards`
} psi_cli_shard_opts;

/** Parses argv[*i] if it is --shards or --threads (with its value), which
 *  turn sharding on.  Returns: 1 if it was one of them, 0 if not, -1 after
 *  a usage message (missing value, 0, not a number, above the limit).
 *  `cmd` prefixes the message ("vectors check"). */
int psi_cli_shard_opt(psi_cli_shard_opts *o, int argc, char **argv, int *i,
                      const char *cmd);

typedef struct psi_cli_party {
    psi_engine *engine;  // the engine alone; NULL when sharded
    psi_shards *shards;  // NULL without sharding
} psi_cli_party;

/** Makes a party from engine `e`, which it takes over (also on failure):
 *  with sharding off it keeps `e`; on, it builds the shards from `e`
 *  (shards = threads when only threads is set; threads default to online
 *  CPUs, capped at the shard count when that is set) and frees `e`, so
 *  that no operation can reach the single engine by mistake.
 *  Returns: PSI_OK or psi_shards_create's error.  Out: *p, freed with
 *  psi_cli_party_free (also after a failure). */
int psi_cli_party_init(psi_cli_party *p, psi_engine *e, const psi_cli_shard_opts *o);

/** Frees the engine or the shards; a zeroed *p is fine. */
void psi_cli_party_free(psi_cli_party *p);

/** Returns: the shard count, 0 for a single engine. */
size_t psi_cli_party_shards(const psi_cli_party *p);
/** Returns: the worker threads, 0 for a single engine or the inline
 *  executor. */
size_t psi_cli_party_threads(const psi_cli_party *p);
/** Returns: the prefix of the library calls the party makes, "psi_" or
 *  "psi_shards_", for messages. */
const char *psi_cli_party_api(const psi_cli_party *p);
/** Writes "N shards, T threads" (or "N shards, inline (no worker
 *  thread)", or "a single engine") into out. */
void psi_cli_party_describe(const psi_cli_party *p, char *out, size_t cap);

/* The engine operations, with the arguments and results of psi.h. */
int psi_cli_party_create_setup(const psi_cli_party *p, uint8_t *out, size_t *out_len,
                               size_t *perm, const psi_setup_params *params,
                               const psi_value *values, size_t n);
int psi_cli_party_process_request(const psi_cli_party *p, uint8_t *out, size_t *out_len,
                                  const uint8_t *request, size_t request_len);
int psi_cli_party_create_request(const psi_cli_party *p, uint8_t *out, size_t *out_len,
                                 const psi_value *values, size_t n);
int psi_cli_party_intersection(const psi_cli_party *p, size_t *out, size_t *out_count,
                               const uint8_t *setup, size_t setup_len,
                               const uint8_t *response, size_t response_len);
int psi_cli_party_intersection_size(const psi_cli_party *p, size_t *count,
                                    const uint8_t *setup, size_t setup_len,
                                    const uint8_t *response, size_t response_len);
int psi_cli_party_association(const psi_cli_party *p, psi_pair *out, size_t *out_count,
                              const uint8_t *setup, size_t setup_len,
                              const uint8_t *response, size_t response_len);

#endif /* PSI_CLI_PARTY_H */
