/* test_structures, Bloom filter (PROTOCOL.md §7.3): building against
 * psi.js and OpenMined's own vector, and matching, also with hostile
 * parameters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bloom.h"
#include "structures_common.h"

/* end_to_end_20x50's Bloom filter (SERVER50_HEX; k 11, 99 bytes). */
static const char BLOOM50_HEX[] =
    "4ec59e756c3c0e97de25611554fec32f91362ae2310c4e735ccf754cf9ae59eb"
    "8815dca0397fd5452ad549ed302807cbfc04457c3c6075188c9064babe4476a5"
    "89736c3ddeee86e54b30020f57684defb679abcc109a857e7831b2cd56bf554d"
    "ef327a";

/* OpenMined's bloom_filter_test.cpp: "Element 0".."Element 99" inserted
 * raw, fpr 0.01, capacity 100; base64 VN3/BXfU...naCE. */
static const char BLOOM_OM_HEX[] =
    "54ddff0577d48c40ef24b7310937a95024d7190c254dac74c4788ca2108d6f8e"
    "6e4a116cce72b4f7d447d0215520c9fdd4175cee32e45c75eb5e9d4d8a699948"
    "3ad84a3e6c77fe74d27ae834e7576ed779deef1c7a33cc1b16f1ee4475135cf2"
    "3b5f664a460b5eae317fb6aee5d14dd2a871a9f2e78da084";

/* ------------------------------------------------------------- Bloom */

/* Builds a filter from hex elements with the parameters for (fpr, nc). */
static uint8_t *bloom_from(const char *hex, double fpr, int64_t nc, int32_t *k, size_t *nb)
{
    size_t n;
    uint8_t *e = unhex_elements(hex, &n);
    assert_int_equal(psi_bloom_params(k, nb, fpr, nc, n), PSI_OK);
    uint8_t *bits = calloc(*nb, 1);
    assert_non_null(bits);
    assert_int_equal(psi_bloom_build(bits, *nb, *k, PSI_BLOOM_FORMAT_PSIJS, e, n, PSI_ELEMENT_BYTES),
                     PSI_OK);
    free(e);
    return bits;
}

static void check_bloom_build(const char *hex, double fpr, int64_t nc, int32_t want_k,
                              const char *want_hex)
{
    int32_t k;
    size_t nb;
    uint8_t *bits = bloom_from(hex, fpr, nc, &k, &nb);
    assert_int_equal(k, want_k);
    assert_bytes_hex(bits, nb, want_hex);
    free(bits);
}

void test_structures_bloom_build_known(void **state)
{
    (void)state;
    check_bloom_build(SERVER5_HEX, 0.01, 6, 10, "785a48495c584c4ae9c8");
    check_bloom_build(SERVER50_HEX, 0.01, 20, 11, BLOOM50_HEX);
    check_bloom_build("", 0.01, 10, 10, "000000000000000000000000000000000000");
    check_bloom_build(ELEM_A_HEX, 0.5, 1, 1, "10");
    char twice[2 * sizeof ELEM_A_HEX];
    snprintf(twice, sizeof twice, "%s%s", ELEM_A_HEX, ELEM_A_HEX);
    check_bloom_build(twice, 0.01, 2, 8, "044110");
}

void test_structures_bloom_openmined_vector(void **state)
{
    (void)state;
    int32_t k;
    size_t nb;
    /* Uncorrected fpr (nc = 1) and 100 raw strings, as OpenMined's test. */
    assert_int_equal(psi_bloom_params(&k, &nb, 0.01, 1, 100), PSI_OK);
    assert_int_equal(k, 7);
    assert_int_equal(nb, 120);
    uint8_t bits[120] = {0};
    psi_bloom_prober pr;
    assert_int_equal(psi_bloom_prober_init(&pr, PSI_BLOOM_FORMAT_PSIJS, k, nb), PSI_OK);
    for (int i = 0; i < 100; i++) {
        char s[16];
        int len = snprintf(s, sizeof s, "Element %d", i);
        psi_bloom_insert(bits, &pr, (const uint8_t *)s, (size_t)len);
    }
    psi_bloom_prober_free(&pr);
    assert_bytes_hex(bits, nb, BLOOM_OM_HEX);
}

static void check_bloom_match(const uint8_t *bits, size_t nb, int32_t k, const uint8_t *c,
                              size_t n, const size_t *want, size_t n_want)
{
    size_t out[8], count = n;
    assert_int_equal(psi_bloom_match(out, &count, k, PSI_BLOOM_FORMAT_PSIJS, bits, nb, c, n, PSI_ELEMENT_BYTES), PSI_OK);
    assert_int_equal(count, n_want);
    for (size_t i = 0; i < n_want; i++)
        assert_int_equal(out[i], want[i]);
}

void test_structures_bloom_match_known(void **state)
{
    (void)state;
    int32_t k;
    size_t nb;
    uint8_t *bits = bloom_from(SERVER5_HEX, 0.01, 6, &k, &nb);
    uint8_t *c = client6(), *d = client_dups();
    static const size_t want[] = {1, 2, 4};       /* ascending index order */
    static const size_t want_dups[] = {0, 2, 3, 4}; /* §9.5 */
    check_bloom_match(bits, nb, k, c, 6, want, 3);
    check_bloom_match(bits, nb, k, d, 5, want_dups, 4);
    size_t out[4] = {9, 9, 9, 9}, count = 3;
    assert_int_equal(psi_bloom_match(out, &count, k, PSI_BLOOM_FORMAT_PSIJS, bits, nb, d, 5, PSI_ELEMENT_BYTES), PSI_E_BUFFER_TOO_SMALL);
    assert_int_equal(count, 0);
    assert_int_equal(out[0], 0);
    free(bits), free(c), free(d);
}

void test_structures_bloom_match_degenerate(void **state)
{
    (void)state;
    uint8_t *c = client6();
    uint8_t ones[1] = {0xff}, zeros[2] = {0};
    static const size_t all[] = {0, 1, 2, 3, 4, 5};
    /* A hostile k costs at most n_bits probes per element. */
    check_bloom_match(ones, 1, INT32_MAX, c, 6, all, 6);
    check_bloom_match(zeros, 2, 1, c, 6, NULL, 0);
    size_t out[6], count = 6;
    assert_int_equal(psi_bloom_match(out, &count, 0, PSI_BLOOM_FORMAT_PSIJS, ones, 1, c, 6, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    count = 6;
    assert_int_equal(psi_bloom_match(out, &count, -1, PSI_BLOOM_FORMAT_PSIJS, ones, 1, c, 6, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    count = 6;
    assert_int_equal(psi_bloom_match(out, &count, 1, PSI_BLOOM_FORMAT_PSIJS, ones, 0, c, 6, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    count = 6;
    assert_int_equal(psi_bloom_match(out, &count, 1, PSI_BLOOM_FORMAT_PSIJS, NULL, 1, c, 6, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    count = 0;
    assert_int_equal(psi_bloom_match(NULL, &count, 1, PSI_BLOOM_FORMAT_PSIJS, ones, 1, NULL, 0, PSI_ELEMENT_BYTES), PSI_OK);
    assert_int_equal(psi_bloom_match(out, NULL, 1, PSI_BLOOM_FORMAT_PSIJS, ones, 1, c, 6, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    free(c);
}
