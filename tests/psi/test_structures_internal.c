/* Unit tests of the GCS and Bloom filter structures (PROTOCOL.md §7.2,
 * §7.3, §9.2-§9.4): known answers from OpenMined PSI 2.0.6 / psi.js, every
 * parameter edge, stream validation and the size bound.  Random parts print
 * their seed; set PSI_TEST_SEED to replay and PSI_TEST_ITERS to scale.
 * This file: main, the parameters, misuse and allocation failures; the
 * structures themselves are in structures_gcs.c, structures_sort.c,
 * structures_bloom.c and structures_bloom_fpr.c, their shared helpers in structures_common.c. */
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "bloom.h"
#include "gcs.h"
#include "structures_common.h"

static int group_setup(void **state)
{
    (void)state;
    const char *s = getenv("PSI_TEST_SEED");
    uint64_t seed = s != NULL ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
    const char *it = getenv("PSI_TEST_ITERS");
    if (it != NULL)
        test_iters = strtoul(it, NULL, 0);
    printf("test_structures: PSI_TEST_SEED=%" PRIu64 " PSI_TEST_ITERS=%lu\n", seed,
           test_iters);
    rng_state = seed;
    return 0;
}

/* -------------------------------------------------------- parameters */

static void test_structures_gcs_hash_range_known(void **state)
{
    (void)state;
    int64_t hr;
    /* 0.01/6 then 6/that = 3599.9999999999995: truncation, not rounding. */
    assert_int_equal(psi_gcs_hash_range(&hr, 0.01, 6, 5), PSI_OK);
    assert_int_equal(hr, 3599);
    assert_int_equal(psi_gcs_hash_range(&hr, 0.01, 10, 0), PSI_OK);
    assert_int_equal(hr, 10000);
    assert_int_equal(psi_gcs_hash_range(&hr, 0.01, 20, 50), PSI_OK);
    assert_int_equal(hr, 100000); /* ns > nc: sized by ns */
    assert_int_equal(psi_gcs_hash_range(&hr, 0.5, 1, 1), PSI_OK);
    assert_int_equal(hr, 2);
    assert_int_equal(psi_gcs_hash_range(&hr, 0.01, 2, 2), PSI_OK);
    assert_int_equal(hr, 400);
    assert_int_equal(psi_gcs_hash_range(&hr, 0.5, 1, 3), PSI_OK);
    assert_int_equal(hr, 6);
    /* The largest quotient below 2^63 still fits. */
    assert_int_equal(psi_gcs_hash_range(&hr, ldexp(1.0, -62), 1, 0), PSI_OK);
    assert_int_equal(hr, INT64_C(1) << 62);
}

/* Every rejected (fpr, nc) for both structures, with outputs cleared. */
static void check_fpr_rejected(double fpr, int64_t nc, size_t ns)
{
    int64_t hr = 99;
    int32_t k = 99;
    size_t nb = 99;
    assert_int_equal(psi_gcs_hash_range(&hr, fpr, nc, ns), PSI_E_FPR);
    assert_int_equal(hr, 0);
    assert_int_equal(psi_bloom_params(&k, &nb, fpr, nc, ns), PSI_E_FPR);
    assert_int_equal(k, 0);
    assert_int_equal(nb, 0);
}

static void test_structures_params_reject_fpr(void **state)
{
    (void)state;
    check_fpr_rejected(0.0, 1, 0);
    check_fpr_rejected(-0.0, 1, 5);
    check_fpr_rejected(1.0, 1, 0);
    check_fpr_rejected(2.0, 1, 0);
    check_fpr_rejected(-0.01, 1, 0);
    check_fpr_rejected(NAN, 1, 0);
    check_fpr_rejected(INFINITY, 1, 0);
    check_fpr_rejected(-INFINITY, 1, 0);
    check_fpr_rejected(ldexp(1.0, -1074), 2, 0); /* fpr / nc underflows to 0 */
    check_fpr_rejected(0.01, 0, 0);
    check_fpr_rejected(0.01, 0, 10);
    check_fpr_rejected(0.01, -1, 0);
    check_fpr_rejected(-0.01, -1, 0); /* fpr_c would be 0.01 */
    check_fpr_rejected(0.5, INT64_MIN, 3);
    check_fpr_rejected(NAN, 0, 0);
}

static void test_structures_params_overflow(void **state)
{
    (void)state;
    int64_t hr = 99;
    int32_t k = 99;
    size_t nb = 99;
    /* psi.js crashes on this one (§7.2): 1e5 / 1e-14 = 1e19 >= 2^63. */
    assert_int_equal(psi_gcs_hash_range(&hr, 1e-9, 100000, 0), PSI_E_PARAM_OVERFLOW);
    assert_int_equal(hr, 0);
    assert_int_equal(psi_gcs_hash_range(&hr, ldexp(1.0, -63), 1, 0), PSI_E_PARAM_OVERFLOW);
    assert_int_equal(psi_gcs_hash_range(&hr, 0.5, INT64_MAX, 0), PSI_E_PARAM_OVERFLOW);
    /* The Bloom filter of 1e5 inputs at 1e-9 is merely large. */
    assert_int_equal(psi_bloom_params(&k, &nb, 1e-9, 100000, 0), PSI_OK);
    assert_int_equal(psi_bloom_params(&k, &nb, 0.5, INT64_MAX, 0), PSI_E_PARAM_OVERFLOW);
    assert_int_equal(k, 0);
    assert_int_equal(nb, 0);
    if (SIZE_MAX > UINT32_MAX) { /* ns > nc sizes by ns, also when it overflows */
        assert_int_equal(psi_gcs_hash_range(&hr, 0.5, 1, SIZE_MAX / 4), PSI_E_PARAM_OVERFLOW);
        assert_int_equal(psi_bloom_params(&k, &nb, 1e-300, 1, SIZE_MAX / 4),
                         PSI_E_PARAM_OVERFLOW);
    }
}

static void check_bloom_params(double fpr, int64_t nc, size_t ns, int32_t want_k,
                               size_t want_bytes)
{
    int32_t k;
    size_t nb;
    assert_int_equal(psi_bloom_params(&k, &nb, fpr, nc, ns), PSI_OK);
    assert_int_equal(k, want_k);
    assert_int_equal(nb, want_bytes);
}

static void test_structures_bloom_params_known(void **state)
{
    (void)state;
    check_bloom_params(0.01, 10, 0, 10, 18);  /* empty server set */
    check_bloom_params(0.01, 6, 5, 10, 10);   /* §11 */
    check_bloom_params(0.01, 1, 100, 7, 120); /* OpenMined's own test */
    check_bloom_params(0.01, 20, 50, 11, 99); /* 20 x 50, ns > nc */
    check_bloom_params(0.5, 1, 1, 1, 1);
    check_bloom_params(0.01, 2, 2, 8, 3);
    check_bloom_params(0.999, 1, 1, 1, 1);
    /* PSI_BLOOM_K_MAX is reached at the smallest positive fpr_c, 2^-1074,
     * and by nothing above it (psi.h, §7.3). */
    check_bloom_params(ldexp(1.0, -1074), 1, 0, PSI_BLOOM_K_MAX, 194);
    int32_t k;
    size_t nb;
    assert_int_equal(psi_bloom_params(&k, &nb, ldexp(1.0, -1073), 1, 0), PSI_OK);
    assert_int_equal(k, PSI_BLOOM_K_MAX - 1);
    assert_int_equal(psi_bloom_params(&k, &nb, ldexp(3.0, -1074), 1, 0), PSI_OK);
    assert_int_equal(k, PSI_BLOOM_K_MAX - 1);
    assert_int_equal(psi_bloom_params(&k, &nb, ldexp(1.0, -1074), 2, 0), PSI_E_FPR);
}

static void test_structures_digest_mod(void **state)
{
    (void)state;
    /* SHA256("abc") reduced by a few moduli, from an independent model;
     * the last three exercise the carry path above 2^63. */
    static const uint8_t md[32] = {
        0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40,
        0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17,
        0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
    assert_int_equal(psi_digest_mod(md, 32, 1), 0);
    assert_int_equal(psi_digest_mod(md, 32, 2), 1);
    assert_int_equal(psi_digest_mod(md, 32, 3599), 2574);
    assert_true(psi_digest_mod(md, 32, UINT64_C(9223372036854775807)) ==
                UINT64_C(7844562598752555730));
    assert_true(psi_digest_mod(md, 32, UINT64_C(9223372036854788153)) ==
                UINT64_C(892326288522967624));
    assert_true(psi_digest_mod(md, 32, UINT64_MAX) == UINT64_C(6903376816007250520));
    assert_true(psi_digest_mod(md, 32, UINT64_C(18446744073709551557)) ==
                UINT64_C(11084944056211703577));
    assert_int_equal(psi_digest_mod(md, 0, 7), 0);
}

/* ---------------------------------------------- misuse and allocation */

static void test_structures_misuse(void **state)
{
    (void)state;
    int32_t k, div;
    size_t nb, len = 0, count = 0;
    uint64_t *v, one = 1;
    uint8_t e[PSI_ELEMENT_BYTES] = {2}, bits[1] = {1};
    assert_int_equal(psi_gcs_hash_range(NULL, 0.01, 1, 1), PSI_E_INVALID_ARG);
    assert_int_equal(psi_bloom_params(NULL, &nb, 0.01, 1, 1), PSI_E_INVALID_ARG);
    assert_int_equal(psi_bloom_params(&k, NULL, 0.01, 1, 1), PSI_E_INVALID_ARG);
    assert_int_equal(psi_gcs_bits_bound(NULL, 10, 1), PSI_E_INVALID_ARG);
    assert_int_equal(psi_gcs_build(NULL, bits, &len, 10, e, 1, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    assert_int_equal(psi_gcs_build(&div, bits, NULL, 10, e, 1, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    len = 1;
    assert_int_equal(psi_gcs_build(&div, NULL, &len, 10, e, 1, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    len = 1;
    assert_int_equal(psi_gcs_build(&div, bits, &len, 10, NULL, 1, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    len = 1;
    assert_int_equal(psi_gcs_build(&div, bits, &len, 0, e, 1, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    len = 1;
    assert_int_equal(psi_gcs_build(&div, bits, &len, 10, e, SIZE_MAX, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    len = 1;
    assert_int_equal(psi_gcs_encode_values(&div, bits, &len, NULL, 1), PSI_E_INVALID_ARG);
    assert_int_equal(psi_gcs_decode(NULL, &count, 10, 0, bits, 1), PSI_E_INVALID_ARG);
    assert_int_equal(psi_gcs_decode(&v, NULL, 10, 0, bits, 1), PSI_E_INVALID_ARG);
    assert_int_equal(psi_gcs_decode(&v, &count, 10, 0, NULL, 1), PSI_E_INVALID_ARG);
    assert_int_equal(psi_gcs_match(NULL, NULL, &one, 1, 10, e, 1, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    count = 1;
    assert_int_equal(psi_gcs_match(&nb, &count, NULL, 1, 10, e, 1, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    count = 1;
    assert_int_equal(psi_gcs_match(&nb, &count, &one, 1, 10, NULL, 1, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
}

static void test_structures_alloc_failures(void **state)
{
    (void)state;
    size_t n, len = 16, count;
    int32_t div;
    uint8_t bits[16];
    uint8_t *e = unhex_elements(SERVER5_HEX, &n);
    uint64_t *v = NULL;
    psi_alloc_fail_after(1);
    assert_int_equal(psi_gcs_build(&div, bits, &len, 3599, e, n, PSI_ELEMENT_BYTES), PSI_E_NOMEM);
    assert_int_equal(len, 0);
    psi_alloc_fail_after(1);
    static const uint8_t s11_bits[] = {0x95, 0x8b, 0x42, 0x33, 0xa5, 0xbb, 0x09};
    assert_int_equal(psi_gcs_decode(&v, &count, 3599, 9, s11_bits, sizeof s11_bits),
                     PSI_E_NOMEM);
    assert_null(v);
    psi_alloc_fail_after(1);
    static const uint64_t s11[] = {458, 1010, 1624, 2090, 2757};
    size_t out[5];
    count = 5;
    assert_int_equal(psi_gcs_match(out, &count, s11, 5, 3599, e, n, PSI_ELEMENT_BYTES), PSI_E_NOMEM);
    assert_int_equal(count, 0);
    psi_alloc_fail_after(0);
    free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_structures_gcs_hash_range_known),
        cmocka_unit_test(test_structures_params_reject_fpr),
        cmocka_unit_test(test_structures_params_overflow),
        cmocka_unit_test(test_structures_bloom_params_known),
        cmocka_unit_test(test_structures_digest_mod),
        cmocka_unit_test(test_structures_gcs_encode_known),
        cmocka_unit_test(test_structures_gcs_encode_capacity),
        cmocka_unit_test(test_structures_gcs_hash_known),
        cmocka_unit_test(test_structures_gcs_build_known),
        cmocka_unit_test(test_structures_gcs_decode_known),
        cmocka_unit_test(test_structures_gcs_decode_rejects_params),
        cmocka_unit_test(test_structures_gcs_decode_rejects_truncated),
        cmocka_unit_test(test_structures_gcs_decode_rejects_out_of_range),
        cmocka_unit_test(test_structures_gcs_decode_zero_runs_and_repeats),
        cmocka_unit_test(test_structures_gcs_round_trip),
        cmocka_unit_test(test_structures_gcs_bound_adversarial),
        cmocka_unit_test(test_structures_gcs_bound_random),
        cmocka_unit_test(test_structures_gcs_match_known),
        cmocka_unit_test(test_structures_gcs_match_duplicates),
        cmocka_unit_test(test_structures_gcs_match_capacity),
        cmocka_unit_test(test_structures_cxx_sort_known),
        cmocka_unit_test(test_structures_cxx_sort_random),
        cmocka_unit_test(test_structures_gcs_match_psijs_order),
        cmocka_unit_test(test_structures_bloom_build_known),
        cmocka_unit_test(test_structures_bloom_openmined_vector),
        cmocka_unit_test(test_structures_bloom_match_known),
        cmocka_unit_test(test_structures_bloom_match_degenerate),
        cmocka_unit_test(test_structures_bloom_distinct_probes),
        cmocka_unit_test(test_structures_bloom_psijs_short_cycles),
        cmocka_unit_test(test_structures_bloom_fpr_measured),
        cmocka_unit_test(test_structures_misuse),
        cmocka_unit_test(test_structures_alloc_failures),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
