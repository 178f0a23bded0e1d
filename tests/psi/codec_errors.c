/* test_codec, the calls' contracts: the encoders' and decoders' errors,
 * small buffers left untouched, and NULL arguments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec.h"
#include "setup.h"
#include "wire.h"
#include "codec_common.h"

/* ------------------------------------------------ encoder failures */

/* Fills a buffer with a marker to show that a failed call wrote nothing. */
static void assert_untouched(const uint8_t *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        assert_int_equal(buf[i], 0xAA);
}

void test_codec_encode_errors(void **state)
{
    uint8_t el[2 * EB], out[128];
    size_t len;
    psi_setup_params prm = {PSI_STRUCTURE_RAW, 0.01, 10};
    (void)state;
    memset(el, 0x22, EB);
    memset(el + EB, 0x11, EB); // descending: not a valid raw setup
    memset(out, 0xAA, sizeof out);
    len = sizeof out;
    assert_int_equal(psi_setup_encode(out, &len, PSI_SUITE_OPENMINED_P256, &prm, el, 2), PSI_E_SETUP_UNSORTED);
    assert_int_equal(len, 0);
    prm.structure = (psi_structure)3;
    len = sizeof out;
    assert_int_equal(psi_setup_encode(out, &len, PSI_SUITE_OPENMINED_P256, &prm, el, 2), PSI_E_STRUCTURE);
    assert_int_equal(psi_setup_bound(&len, PSI_SUITE_OPENMINED_P256, &prm, 2), PSI_E_STRUCTURE);
    prm.structure = (psi_structure)-1;
    assert_int_equal(psi_setup_bound(&len, PSI_SUITE_OPENMINED_P256, &prm, 2), PSI_E_STRUCTURE);
    prm = (psi_setup_params){PSI_STRUCTURE_GCS, 0.0, 10};
    len = sizeof out;
    assert_int_equal(psi_setup_encode(out, &len, PSI_SUITE_OPENMINED_P256, &prm, el, 2), PSI_E_FPR);
    assert_int_equal(psi_setup_bound(&len, PSI_SUITE_OPENMINED_P256, &prm, 2), PSI_E_FPR);
    prm.structure = PSI_STRUCTURE_BLOOM_FILTER;
    assert_int_equal(psi_setup_bound(&len, PSI_SUITE_OPENMINED_P256, &prm, 2), PSI_E_FPR);
    prm.structure = PSI_STRUCTURE_RAW; // fpr is ignored for raw
    assert_int_equal(psi_setup_bound(&len, PSI_SUITE_OPENMINED_P256, &prm, 2), PSI_OK);
    assert_int_equal(len, 72);
    assert_int_equal(psi_setup_bound(&len, PSI_SUITE_OPENMINED_P256, &prm, SIZE_MAX / 35 + 1), PSI_E_PARAM_OVERFLOW);
    assert_int_equal(len, 0);
    assert_untouched(out, sizeof out);
}

/* Every encoder given one byte less than it needs fails and writes
 * nothing; given exactly what it needs, succeeds. */
void test_codec_encode_buffer_too_small(void **state)
{
    uint8_t el[3 * EB], out[256];
    static const psi_structure structures[] = {PSI_STRUCTURE_RAW, PSI_STRUCTURE_GCS,
                                               PSI_STRUCTURE_BLOOM_FILTER};
    size_t len, need;
    (void)state;
    rng_fill(el, sizeof el);
    qsort(el, 3, EB, cmp_element);
    for (size_t i = 0; i < 3; i++) {
        psi_setup_params prm = {structures[i], 0.001, 3};
        len = sizeof out;
        assert_int_equal(psi_setup_encode(out, &len, PSI_SUITE_OPENMINED_P256, &prm, el, 3), PSI_OK);
        need = len;
        memset(out, 0xAA, sizeof out);
        len = need - 1;
        assert_int_equal(psi_setup_encode(out, &len, PSI_SUITE_OPENMINED_P256, &prm, el, 3), PSI_E_BUFFER_TOO_SMALL);
        assert_int_equal(len, 0);
        assert_untouched(out, sizeof out);
        len = 0;
        assert_int_equal(psi_setup_encode(NULL, &len, PSI_SUITE_OPENMINED_P256, &prm, el, 3), PSI_E_BUFFER_TOO_SMALL);
    }
    len = psi_request_bound(PSI_SUITE_OPENMINED_P256, 3) - 1;
    assert_int_equal(psi_request_encode(out, &len, PSI_SUITE_OPENMINED_P256, 1, el, 3), PSI_E_BUFFER_TOO_SMALL);
    assert_untouched(out, sizeof out);
    len = psi_request_bound(PSI_SUITE_OPENMINED_P256, 3) - 2; // exactly enough without the flag
    assert_int_equal(psi_request_encode(out, &len, PSI_SUITE_OPENMINED_P256, 0, el, 3), PSI_OK);
    len = psi_response_bound(PSI_SUITE_OPENMINED_P256, 3) - 1;
    memset(out, 0xAA, sizeof out);
    assert_int_equal(psi_response_encode(out, &len, PSI_SUITE_OPENMINED_P256, el, 3), PSI_E_BUFFER_TOO_SMALL);
    assert_int_equal(len, 0);
    assert_untouched(out, sizeof out);
}

void test_codec_decode_buffer_too_small(void **state)
{
    size_t len, count;
    uint8_t el[6 * EB];
    int reveal = -1;
    (void)state;
    uint8_t *req = hex_alloc(SMALL_REQUEST, &len);
    count = 5;
    assert_int_equal(psi_request_decode(el, &count, &reveal, PSI_SUITE_OPENMINED_P256, req, len), PSI_E_BUFFER_TOO_SMALL);
    assert_int_equal(count, 0);
    assert_int_equal(reveal, 0);
    for (size_t i = 0; i < 5 * EB; i++)
        assert_int_equal(el[i], 0); // what was decoded before the failure is wiped
    count = 0;
    assert_int_equal(psi_request_decode(NULL, &count, &reveal, PSI_SUITE_OPENMINED_P256, req, len), PSI_E_BUFFER_TOO_SMALL);
    free(req);
    uint8_t *resp = hex_alloc(SMALL_RESPONSE, &len);
    count = 5;
    assert_int_equal(psi_response_decode(el, &count, PSI_SUITE_OPENMINED_P256, resp, len), PSI_E_BUFFER_TOO_SMALL);
    assert_int_equal(count, 0);
    count = 6;
    assert_int_equal(psi_response_decode(el, &count, PSI_SUITE_OPENMINED_P256, resp, len), PSI_OK);
    assert_int_equal(count, 6);
    free(resp);
}

/* ----------------------------------------------------------- misuse */

/* Each call starts from a nonzero capacity, so clearing it is visible. */
#define ASSERT_MISUSE(call)                                                   \
    do { len = sizeof out; count = 1; assert_int_equal((call), PSI_E_INVALID_ARG); } while (0)

void test_codec_null_args_encoders(void **state)
{
    uint8_t el[EB] = {2}, out[64];
    size_t len, count;
    psi_setup_params prm = {PSI_STRUCTURE_RAW, 0.01, 1};
    (void)state;
    ASSERT_MISUSE(psi_request_encode(out, NULL, PSI_SUITE_OPENMINED_P256, 0, el, 1));
    ASSERT_MISUSE(psi_request_encode(NULL, &len, PSI_SUITE_OPENMINED_P256, 0, el, 1));
    assert_int_equal(len, 0);
    ASSERT_MISUSE(psi_request_encode(out, &len, PSI_SUITE_OPENMINED_P256, 0, NULL, 1));
    ASSERT_MISUSE(psi_request_encode(out, &len, PSI_SUITE_OPENMINED_P256, 2, el, 1));
    ASSERT_MISUSE(psi_request_encode(out, &len, PSI_SUITE_OPENMINED_P256, 0, el, SIZE_MAX / EB + 1));
    ASSERT_MISUSE(psi_response_encode(out, NULL, PSI_SUITE_OPENMINED_P256, el, 1));
    ASSERT_MISUSE(psi_response_encode(NULL, &len, PSI_SUITE_OPENMINED_P256, el, 1));
    ASSERT_MISUSE(psi_response_encode(out, &len, PSI_SUITE_OPENMINED_P256, NULL, 1));
    ASSERT_MISUSE(psi_setup_encode(out, NULL, PSI_SUITE_OPENMINED_P256, &prm, el, 1));
    ASSERT_MISUSE(psi_setup_encode(NULL, &len, PSI_SUITE_OPENMINED_P256, &prm, el, 1));
    ASSERT_MISUSE(psi_setup_encode(out, &len, PSI_SUITE_OPENMINED_P256, NULL, el, 1));
    ASSERT_MISUSE(psi_setup_encode(out, &len, PSI_SUITE_OPENMINED_P256, &prm, NULL, 1));
    ASSERT_MISUSE(psi_setup_bound(NULL, PSI_SUITE_OPENMINED_P256, &prm, 1));
    ASSERT_MISUSE(psi_setup_bound(&len, PSI_SUITE_OPENMINED_P256, NULL, 1));
    assert_int_equal(len, 0);
    (void)count;
    len = 0; // NULL with a zero capacity or count is allowed
    assert_int_equal(psi_request_encode(NULL, &len, PSI_SUITE_OPENMINED_P256, 0, NULL, 0), PSI_OK);
    assert_int_equal(psi_response_encode(NULL, &len, PSI_SUITE_OPENMINED_P256, NULL, 0), PSI_OK);
}

void test_codec_null_args_decoders(void **state)
{
    uint8_t el[EB], out[1] = {0};
    size_t len, count;
    int reveal;
    psi_setup *s = (psi_setup *)&s;
    (void)state;
    ASSERT_MISUSE(psi_request_decode(NULL, &count, &reveal, PSI_SUITE_OPENMINED_P256, out, 0));
    assert_int_equal(count, 0);
    ASSERT_MISUSE(psi_request_decode(el, NULL, &reveal, PSI_SUITE_OPENMINED_P256, out, 0));
    ASSERT_MISUSE(psi_request_decode(el, &count, NULL, PSI_SUITE_OPENMINED_P256, out, 0));
    ASSERT_MISUSE(psi_request_decode(el, &count, &reveal, PSI_SUITE_OPENMINED_P256, NULL, 1));
    ASSERT_MISUSE(psi_response_decode(NULL, &count, PSI_SUITE_OPENMINED_P256, out, 0));
    ASSERT_MISUSE(psi_response_decode(el, NULL, PSI_SUITE_OPENMINED_P256, out, 0));
    ASSERT_MISUSE(psi_response_decode(el, &count, PSI_SUITE_OPENMINED_P256, NULL, 1));
    ASSERT_MISUSE(psi_setup_parse(NULL, PSI_SUITE_OPENMINED_P256, out, 0));
    ASSERT_MISUSE(psi_setup_parse(&s, PSI_SUITE_OPENMINED_P256, NULL, 1));
    assert_null(s);
    (void)len;
    count = 0;
    assert_int_equal(psi_request_decode(NULL, &count, &reveal, PSI_SUITE_OPENMINED_P256, NULL, 0), PSI_OK);
    assert_int_equal(psi_response_decode(NULL, &count, PSI_SUITE_OPENMINED_P256, NULL, 0), PSI_OK);
    assert_int_equal(psi_setup_parse(&s, PSI_SUITE_OPENMINED_P256, NULL, 0), PSI_E_MSG_ONEOF_MISSING);
    psi_setup_free(NULL);
    assert_int_equal(psi_setup_structure(NULL), PSI_STRUCTURE_RAW);
    assert_int_equal(psi_setup_raw_count(NULL), 0);
}
