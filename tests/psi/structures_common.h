/* What the parts of test_structures share (test_structures_internal.c
 * holds main; structures_gcs.c, structures_sort.c, structures_bloom.c and
 * structures_bloom_fpr.c the rest): the vectors used by more than one part, the seeded random
 * numbers, hex helpers, and the test cases main runs. */
#ifndef PSI_TEST_STRUCTURES_COMMON_H
#define PSI_TEST_STRUCTURES_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* ------------------------------------------------------------ vectors */

extern const char SERVER5_HEX[];
/* Indices in SERVER5_HEX of the masked "zzz", "abc", "Element 0",
 * "Element 4", "Element 2". */
enum { S5_ZZZ, S5_ABC, S5_E0, S5_E4, S5_E2 };
/* One element, hex: its size is known, for sizeof. */
extern const char ELEM_A_HEX[2 * PSI_ELEMENT_BYTES + 1];
extern const char SERVER50_HEX[];

/* ------------------------------------------------------------ helpers */

/* Seeded in main's group setup (PSI_TEST_SEED, PSI_TEST_ITERS). */
extern uint64_t rng_state;
extern unsigned long test_iters;

uint64_t rng_next(void);
uint64_t rng_below(uint64_t bound);
void rng_bytes(uint8_t *out, size_t n);
uint8_t *unhex(const char *hex, size_t *len);
uint8_t *unhex_elements(const char *hex, size_t *n);
void assert_bytes_hex(const uint8_t *got, size_t got_len, const char *hex);
uint8_t *gcs_build_checked(int32_t *div, size_t *len, int64_t hr,
                           const uint8_t *elements, size_t n);
uint8_t *client6(void);
uint8_t *client_dups(void);

/* ---------------------------------------------------------- test cases */

/* structures_gcs.c */
void test_structures_gcs_encode_known(void **state);
void test_structures_gcs_encode_capacity(void **state);
void test_structures_gcs_hash_known(void **state);
void test_structures_gcs_build_known(void **state);
void test_structures_gcs_decode_known(void **state);
void test_structures_gcs_decode_rejects_params(void **state);
void test_structures_gcs_decode_rejects_truncated(void **state);
void test_structures_gcs_decode_rejects_out_of_range(void **state);
void test_structures_gcs_decode_zero_runs_and_repeats(void **state);
void test_structures_gcs_round_trip(void **state);
void test_structures_gcs_bound_adversarial(void **state);
void test_structures_gcs_bound_random(void **state);
void test_structures_gcs_match_known(void **state);
void test_structures_gcs_match_duplicates(void **state);
void test_structures_gcs_match_capacity(void **state);
/* structures_sort.c */
void test_structures_cxx_sort_known(void **state);
void test_structures_cxx_sort_random(void **state);
void test_structures_gcs_match_psijs_order(void **state);
/* structures_bloom.c */
void test_structures_bloom_build_known(void **state);
void test_structures_bloom_openmined_vector(void **state);
void test_structures_bloom_match_known(void **state);
void test_structures_bloom_match_degenerate(void **state);
/* structures_bloom_fpr.c */
void test_structures_bloom_distinct_probes(void **state);
void test_structures_bloom_psijs_short_cycles(void **state);
void test_structures_bloom_fpr_measured(void **state);

#endif
