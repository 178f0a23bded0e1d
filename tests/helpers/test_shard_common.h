/* Helpers shared by the sharding layer tests (test_shard.c,
 * test_shard_vectors.c, test_shard_steps.c): seeds, keys, engines and
 * shards, one call on either the single engine or the shards, the checks
 * that compare them, and data sets with duplicates.  Public API only. */
#ifndef PSI_TEST_SHARD_COMMON_H
#define PSI_TEST_SHARD_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "psi.h"
#include "psi_shard.h"

#define EB PSI_ELEMENT_BYTES
#define FILL 0xaa /* output buffers start with it: a failed call may leave
                     them untouched or wiped to 0, nothing else */

/* The seed of this run, set by main from tu_seed. */
extern uint64_t ts_seed;
extern char ts_where[256]; /* the case being checked, in every failure */

/* ------------------------------------------------- one call, either side */

/* How a party runs a call: the message calls of psi.h (the single engine,
 * or psi_shard.h when g is set), or the step API driven by the test itself
 * as other executors drive it: every slice through psi_step_run on a clone
 * of the engine, its inputs copied out and its outcome put back, last slice
 * first (PLAN_REMOTE, as workers do); or an external plan whose steps run
 * on inputs the test decoded itself, their outputs handed to finish in
 * small chunks and messages taken from a sink (PLAN_EXTERNAL, as
 * MPI ranks do). */
typedef enum party_mode { PLAN_CALLS = 0, PLAN_REMOTE = 1, PLAN_EXTERNAL = 2 } party_mode;

/* One party: the single engine (g NULL) or the shards of the same key. */
typedef struct party {
    const psi_engine *e;
    psi_shards *g;
    party_mode mode;   /* with g NULL */
    size_t slices;     /* PLAN_REMOTE, PLAN_EXTERNAL */
} party;

typedef enum op_id {
    OP_SETUP, OP_PROCESS, OP_REQUEST, OP_INTER, OP_SIZE, OP_ASSOC, OP_MASK, OP_REMASK,
    OP_UNMASK
} op_id;

/* The arguments of one call; a and b are messages or points (a_len is a
 * point count for OP_REMASK and OP_UNMASK). */
typedef struct call {
    op_id op;
    size_t cap;                 /* output capacity in items */
    int want_perm;              /* OP_SETUP: pass a perm array of n entries */
    psi_setup_params params;
    const psi_value *values;
    size_t n;
    const uint8_t *a;
    size_t a_len;
    const uint8_t *b;
    size_t b_len;
} call;

/* What one call returned: code, length (bytes or items) and output. */
typedef struct out {
    int rc;
    size_t len;
    size_t item;                /* bytes per item; 0 for a count */
    size_t cap;
    uint8_t *p;
    size_t *perm;
    size_t n_perm;
} out;

/* ------------------------------------------- data sets with duplicates */

typedef struct dataset {
    size_t ns, nc;
    psi_value *sv, *cv;         /* NULL when empty */
    char (*text)[24];
} dataset;

/* Engines of both roles and both reveal flags from two random keys. */
typedef struct keyset {
    psi_engine *s[2], *c[2];
} keyset;

/* The ways ts_corrupt makes a point bad. */
enum bad_kind { BAD_PREFIX_05, BAD_X_ONE, BAD_X_P, BAD_PREFIX_04 };

/* Each test draws from its own stream (tag), so one can be replayed alone. */
uint64_t ts_rng_for(uint64_t tag);
/* A random scalar below 2^255 (< n) and odd (non-zero). */
void ts_random_key(uint64_t *rng, uint8_t key[PSI_KEY_BYTES]);
/* An engine from a key, or a group of n shards with t threads over e; a
 * failure fails the test. */
psi_engine *ts_engine_new(psi_role role, int reveal, const uint8_t *key, size_t key_len);
psi_shards *ts_shards_new(const psi_engine *e, size_t n, size_t t);

/* Runs one call on one party into FILL-ed buffers of c->cap items. */
out ts_run_call(party p, const call *c);
void ts_out_free(out *o);
/* Checks that fail the test, naming ts_where and `what`. */
void ts_expect_bytes(const char *what, const uint8_t *got, size_t got_len, const uint8_t *want,
                     size_t want_len);
void ts_expect_no_partial(const char *what, const out *o);
void ts_expect_same(const char *what, const out *want, const out *got);
int ts_expect_same_call(const char *what, party single, party sharded, const call *c);

void ts_dataset_make(dataset *d, uint64_t *rng, size_t ns, size_t nc);
void ts_dataset_free(dataset *d);
void ts_keyset_make(keyset *k, uint64_t *rng);
void ts_keyset_free(keyset *k);
/* The order of one stable byte sort of n elements, by the test's own
 * means (an oracle for the library's _SORT steps and merges): el sorted
 * in place, perm[j] (may be NULL) the original index of element j.
 * Returns PSI_OK. */
int ts_sort_elements(uint8_t *el, size_t *perm, size_t n);

/* Makes element i of `el` bad in the given way. */
void ts_corrupt(uint8_t *el, size_t i, enum bad_kind kind);

#endif
