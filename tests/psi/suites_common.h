/* What the parts of test_suites share (test_suites.c holds main;
 * suites_bloom.c, suites_wire.c and suites_keys.c the rest): the counted
 * checks, engines and messages of a suite, the plain comparison of the
 * inputs, and the test cases main runs. */
#ifndef PSI_TEST_SUITES_COMMON_H
#define PSI_TEST_SUITES_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "psi.h"

#define N_SUITES 3
#define R255 PSI_SUITE_RISTRETTO255

extern unsigned long n_checks; /* comparisons made, printed at the end */
#define CHECK(c) (n_checks++, assert_true(c))
#define CHECK_RC(got, want) (n_checks++, assert_int_equal((got), (want)))

/* ------------------------------------------------------------- helpers */

psi_settings settings_of(int suite, psi_role role, int reveal);
/* An engine of `suite` from a key, or with a random key when key is NULL. */
psi_engine *engine(int suite, psi_role role, int reveal, const uint8_t *key, size_t len);
/* A valid key of the suite: below 2^255 and odd (P-256, big-endian), or
 * below 2^252 and odd (ristretto255, little-endian). */
void suite_key(int suite, uint64_t *rng, uint8_t key[PSI_KEY_BYTES]);

typedef struct msg {
    uint8_t *p;
    size_t len;
} msg;

void expect_header(int suite, msg m);
msg mk_setup(const psi_engine *s, psi_structure st, double fpr, int64_t nc,
             const psi_value *v, size_t n, size_t *perm);
msg mk_request(const psi_engine *c, const psi_value *v, size_t n);
msg mk_response(const psi_engine *s, msg req, size_t n);

/* ------------------------------------------- the plain comparison */

int same_value(psi_value a, psi_value b);
int in_values(psi_value x, const psi_value *s, size_t n);
int cmp_size(const void *a, const void *b);
int cmp_pair(const void *a, const void *b);
/* §9.6: for each value, the k-th client copy pairs with the k-th server
 * copy; ordered by server index.  Returns the number of pairs. */
size_t expected_pairs(psi_pair *out, const psi_value *sv, size_t ns, const psi_value *cv,
                      size_t nc);
/* got (count indices) against want (sorted): equal, or with `exact` 0 a
 * superset whose extra indices are non-members (GCS and Bloom false
 * positives).  Returns the number of false positives. */
size_t expect_index_set(size_t *got, size_t count, const size_t *want, size_t n_want,
                        int exact, const psi_value *sv, size_t ns, const psi_value *cv);

/* ---------------------------------------------------------- test cases */

/* suites_bloom.c */
void test_suites_bloom_double_hashing(void **state);

/* suites_wire.c */
void test_suites_wire(void **state);
void test_suites_unknown(void **state);

/* suites_keys.c */
void test_suites_keys(void **state);

#endif
