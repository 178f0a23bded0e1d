/*
 * The example sets of `shardpsi demo` and `shardpsi bench`: their options,
 * the generated sets (app_sets.c) and the check of the protocol's result
 * against them (app_sets_check.c).
 */
#ifndef PSI_APP_SETS_H
#define PSI_APP_SETS_H

#include <stddef.h>
#include <stdint.h>

#include "app_party.h"
#include "psi.h"

typedef struct psi_app_demo_opts {
    uint64_t seed;
    size_t server_size;
    size_t client_size;
    double overlap;       // fraction of the client set taken from the server set
    psi_structure structure;
    int reveal;           // 0 with --count-only
    double fpr;           // for the whole client query, as OpenMined
    psi_app_shard_opts shard;  // both parties: one engine, or shards
    int single;                // --single-engine
    int suite;                 // --suite (psi_suite)
} psi_app_demo_opts;

/* Two sets of distinct strings, and the true intersection found by plain
 * comparison of the values. */
typedef struct psi_app_demo_sets {
    psi_value *server;
    size_t n_server;
    psi_value *client;
    size_t n_client;
    char *arena;             // the bytes of every value
    unsigned char *is_true;  // per client value: 1 if it is a server value
    size_t n_true;           // how many client values are server values
} psi_app_demo_sets;

/** Returns: the number of shared values the options ask for. */
size_t psi_app_demo_shared(const psi_app_demo_opts *o);

/** Builds the sets from o->seed (same seed, same sets), then finds the
 *  true intersection by sorting and searching the plain values.
 *  Returns: 0, or -1 when out of memory.  Out: *s, freed with
 *  psi_app_demo_sets_free (also after a failure). */
int psi_app_demo_sets_make(psi_app_demo_sets *s, const psi_app_demo_opts *o);

/** Frees the sets; a zeroed *s is fine. */
void psi_app_demo_sets_free(psi_app_demo_sets *s);

/** Returns: how many false positives the structure may give before the
 *  demo calls the result wrong: none for raw, else 10x the expected count
 *  (fpr for the whole query) plus 5. */
size_t psi_app_demo_fp_limit(const psi_app_demo_opts *o);

/** Checks revealed indices into the client set against the truth; prints
 *  false positives (a few) and what is wrong.  Returns: 0 if right. */
int psi_app_demo_check_indices(const psi_app_demo_opts *o, const psi_app_demo_sets *s,
                               const size_t *idx, size_t n);

/** Checks an intersection size against the truth.  Returns: 0 if right. */
int psi_app_demo_check_count(const psi_app_demo_opts *o, const psi_app_demo_sets *s,
                             size_t count);

#endif /* PSI_APP_SETS_H */
