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
    uint64_t memory;           // demo: --memory (0: not given)
    const char *temp_dir;      // demo: --temp-dir (NULL: not given)
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

// Every value is "user-" 16 hex digits "@example.org": distinct ids give
// distinct strings of one length.
#define PSI_APP_DEMO_VALUE_LEN 34

/* A keyed bijection of [0, n) (app_sets.c). */
typedef struct psi_app_demo_perm {
    uint64_t n, key;
    unsigned half;           // bits of each Feistel half
} psi_app_demo_perm;

/* How the sets are drawn from the options, value by value: the same seed
 * gives the same sets, held whole (psi_app_demo_sets_make) or written out
 * one value at a time (the demo past its memory budget). */
typedef struct psi_app_demo_gen {
    uint64_t key;                // from the seed: the values' ids
    uint64_t n_server, n_client, k;  // k: the shared values
    psi_app_demo_perm draw;      // which server values the client shares
    psi_app_demo_perm order;     // where they stand in the client set
} psi_app_demo_gen;

void psi_app_demo_gen_init(psi_app_demo_gen *g, const psi_app_demo_opts *o);

/** Writes server value i (below n_server) to out: PSI_APP_DEMO_VALUE_LEN
 *  characters and a NUL. */
void psi_app_demo_server_value(const psi_app_demo_gen *g, uint64_t i, char *out);

/** Writes client value i (below n_client) to out, as above.  Returns: 1
 *  if it is a server value (by construction), 0 if not. */
int psi_app_demo_client_value(const psi_app_demo_gen *g, uint64_t i, char *out);

/** Returns: the index of the server value that client value i is, or
 *  UINT64_MAX if it is none. */
uint64_t psi_app_demo_client_source(const psi_app_demo_gen *g, uint64_t i);

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

/** Checks an intersection size against n_true, the true one (`how` says
 *  how it was found, for the line printed).  Returns: 0 if right. */
int psi_app_demo_check_count(const psi_app_demo_opts *o, uint64_t n_true, const char *how,
                             uint64_t count);

/** Prints false positive number `shown` (a few, then a line that the rest
 *  are not shown): client value i, its text. */
void psi_app_demo_print_fp(uint64_t i, const char *text, size_t len, size_t shown);

/** Prints the expected count, the false positives and what is wrong.
 *  Returns: 0 if found_true reaches n_true and fp is within
 *  psi_app_demo_fp_limit. */
int psi_app_demo_judge(const psi_app_demo_opts *o, uint64_t n_true, const char *how,
                       uint64_t found_true, uint64_t fp);

#endif /* PSI_APP_SETS_H */
