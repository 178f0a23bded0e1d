/* test_codec, psi.js's bytes: requests, responses and setups decoded and
 * encoded exactly as psi.js 2.0.6 wrote them, and every allocation of
 * parsing and encoding those setups failed in turn. */
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

/* ------------------------------------------------------ psi.js bytes */

/* Decodes a Request or Response vector, and checks re-encoding gives the
 * same bytes and the other reveal flag differs only by `08 01`. */
static void check_elements_vector(const char *hex, int request, int reveal, size_t n)
{
    size_t len, count, out_len;
    uint8_t *msg = hex_alloc(hex, &len);
    uint8_t el[16 * EB], out[16 * PSI_ELEMENT_WIRE_BYTES + 2];
    int got_reveal = -1;
    count = 16;
    if (request)
        assert_int_equal(psi_request_decode(el, &count, &got_reveal, PSI_SUITE_OPENMINED_P256, msg, len), PSI_OK);
    else
        assert_int_equal(psi_response_decode(el, &count, PSI_SUITE_OPENMINED_P256, msg, len), PSI_OK);
    assert_int_equal(count, n);
    out_len = sizeof out;
    if (request) {
        assert_int_equal(got_reveal, reveal);
        assert_int_equal(psi_request_encode(out, &out_len, PSI_SUITE_OPENMINED_P256, reveal, el, n), PSI_OK);
        assert_hex_equal(out, out_len, hex);
        out_len = sizeof out;
        assert_int_equal(psi_request_encode(out, &out_len, PSI_SUITE_OPENMINED_P256, !reveal, el, n), PSI_OK);
        const uint8_t *with = reveal ? msg : out, *without = reveal ? out : msg;
        assert_int_equal(reveal ? len : out_len, (reveal ? out_len : len) + 2);
        assert_memory_equal(with, "\x08\x01", 2);
        assert_memory_equal(with + 2, without, n * PSI_ELEMENT_WIRE_BYTES);
    } else {
        assert_int_equal(psi_response_encode(out, &out_len, PSI_SUITE_OPENMINED_P256, el, n), PSI_OK);
        assert_hex_equal(out, out_len, hex);
    }
    free(msg);
}

void test_codec_reference_requests_responses(void **state)
{
    (void)state;
    check_elements_vector(SMALL_REQUEST, 1, 1, 6);
    check_elements_vector(JS_REQUEST, 1, 0, 6);
    check_elements_vector(SMALL_RESPONSE, 0, 0, 6);
    check_elements_vector("0801", 1, 1, 0);
    check_elements_vector("", 1, 0, 0);
}

static void expect_gcs(const char *hex, int64_t hash_range, int32_t div,
                       const uint64_t *values, size_t count)
{
    psi_setup *s = parse_hex(hex, PSI_OK);
    assert_int_equal(psi_setup_structure(s), PSI_STRUCTURE_GCS);
    assert_int_equal(psi_setup_raw_count(s), 0);
    assert_true(s->gcs_hash_range == hash_range && s->gcs_div == div);
    assert_int_equal(s->gcs_count, count);
    for (size_t i = 0; i < count; i++)
        assert_int_equal(s->gcs_values[i], values[i]);
    psi_setup_free(s);
}

static void expect_bloom(const char *hex, int32_t k, const char *bits_hex)
{
    psi_setup *s = parse_hex(hex, PSI_OK);
    assert_int_equal(psi_setup_structure(s), PSI_STRUCTURE_BLOOM_FILTER);
    assert_int_equal(s->bloom_k, k);
    assert_hex_equal(s->bloom_bits, s->bloom_bytes, bits_hex);
    psi_setup_free(s);
}

void test_codec_reference_setups_parse(void **state)
{
    static const uint64_t small_hashes[] = {458, 1010, 1624, 2090, 2757};
    psi_setup *s;
    (void)state;
    s = parse_hex("0a00", PSI_OK);
    assert_int_equal(psi_setup_structure(s), PSI_STRUCTURE_RAW);
    assert_int_equal(psi_setup_raw_count(s), 0);
    psi_setup_free(s);
    s = parse_hex(SMALL_SETUP_RAW, PSI_OK);
    assert_int_equal(psi_setup_raw_count(s), 5);
    psi_setup_free(s);
    expect_gcs(SMALL_SETUP_GCS, 3599, 9, small_hashes, 5);
    expect_gcs("1203 10 904e", 10000, 0, NULL, 0); // empty: div 0 and bits omitted
    expect_bloom(SMALL_SETUP_BLOOM, 10, "785a48495c584c4ae9c8");
    expect_bloom(EDGE_BLOOM_EMPTY, 10, "000000000000000000000000000000000000");
}

/* One ServerSetup psi.js built: the server's encrypted elements come from
 * a raw setup vector (GCS and Bloom ignore their order). */
typedef struct setup_vector {
    const char *elements_from;
    size_t take; // how many of those elements, repeated cyclically
    psi_setup_params params;
    const char *expect;
} setup_vector;

static const setup_vector setup_vectors[] = {
    {SMALL_SETUP_RAW, 5, {PSI_STRUCTURE_RAW, 0.01, 6}, SMALL_SETUP_RAW},
    {SMALL_SETUP_RAW, 5, {PSI_STRUCTURE_GCS, 0.01, 6}, SMALL_SETUP_GCS},
    {SMALL_SETUP_RAW, 5, {PSI_STRUCTURE_BLOOM_FILTER, 0.01, 6}, SMALL_SETUP_BLOOM},
    {JS_SETUP_RAW, 5, {PSI_STRUCTURE_RAW, 1e-6, 6}, JS_SETUP_RAW},
    {JS_SETUP_RAW, 5, {PSI_STRUCTURE_GCS, 1e-6, 6}, JS_SETUP_GCS},
    {JS_SETUP_RAW, 5, {PSI_STRUCTURE_BLOOM_FILTER, 1e-6, 6}, JS_SETUP_BLOOM},
    {EDGE_RAW_A, 0, {PSI_STRUCTURE_RAW, 0.01, 10}, "0a00"},
    {EDGE_RAW_A, 0, {PSI_STRUCTURE_GCS, 0.01, 10}, "120310904e"},
    {EDGE_RAW_A, 0, {PSI_STRUCTURE_BLOOM_FILTER, 0.01, 10}, EDGE_BLOOM_EMPTY},
    {EDGE_RAW_A, 1, {PSI_STRUCTURE_RAW, 0.5, 1}, EDGE_RAW_A},
    {EDGE_RAW_A, 1, {PSI_STRUCTURE_GCS, 0.5, 1}, "120510021a0101"},
    {EDGE_RAW_A, 2, {PSI_STRUCTURE_GCS, 0.01, 2}, "120908071090031a02a403"},
    {EDGE_RAW_A, 1, {PSI_STRUCTURE_BLOOM_FILTER, 0.5, 1}, "1a050801120110"},
    {EDGE_RAW_A, 2, {PSI_STRUCTURE_BLOOM_FILTER, 0.01, 2}, "1a0708081203044110"},
};

void test_codec_reference_setups_encode(void **state)
{
    (void)state;
    for (size_t v = 0; v < sizeof setup_vectors / sizeof setup_vectors[0]; v++) {
        const setup_vector *sv = &setup_vectors[v];
        size_t have, bound, len;
        uint8_t *src = raw_elements(sv->elements_from, &have);
        uint8_t *el = malloc(sv->take * EB + 1);
        for (size_t i = 0; i < sv->take; i++)
            memcpy(el + i * EB, src + (i % have) * EB, EB);
        assert_int_equal(psi_setup_bound(&bound, PSI_SUITE_OPENMINED_P256, &sv->params, sv->take), PSI_OK);
        uint8_t *out = malloc(bound);
        len = bound;
        assert_int_equal(psi_setup_encode(out, &len, PSI_SUITE_OPENMINED_P256, &sv->params, el, sv->take), PSI_OK);
        assert_hex_equal(out, len, sv->expect);
        free(out);
        free(el);
        free(src);
    }
}

/* --------------------------------------------------- out of memory */

/* Fails each allocation of `run` in turn: every failure is PSI_E_NOMEM
 * with nothing leaked (ASan) or returned, until the call succeeds. */
static void fail_each_allocation(int (*run)(const void *), const void *arg)
{
    for (uint64_t i = 1;; i++) {
        psi_alloc_fail_after(i);
        int rc = run(arg);
        psi_alloc_fail_after(0);
        if (rc == PSI_OK)
            return;
        assert_int_equal(rc, PSI_E_NOMEM);
        assert_true(i < 1000);
    }
}

static int parse_and_free(const void *hex)
{
    size_t len;
    uint8_t *msg = hex_alloc(hex, &len);
    psi_setup *s = (psi_setup *)&s;
    int rc = psi_setup_parse(&s, PSI_SUITE_OPENMINED_P256, msg, len);
    assert_true(rc == PSI_OK ? s != NULL : s == NULL);
    psi_setup_free(s);
    free(msg);
    return rc;
}

typedef struct encode_job {
    const setup_vector *sv;
    const uint8_t *elements;
    size_t n;
} encode_job;

static int encode_vector(const void *arg)
{
    const encode_job *job = arg;
    size_t len = 512;
    uint8_t out[512];
    int rc = psi_setup_encode(out, &len, PSI_SUITE_OPENMINED_P256, &job->sv->params, job->elements, job->n);
    if (rc == PSI_OK)
        assert_hex_equal(out, len, job->sv->expect);
    return rc;
}

void test_codec_allocation_failures(void **state)
{
    (void)state;
    fail_each_allocation(parse_and_free, SMALL_SETUP_RAW);
    fail_each_allocation(parse_and_free, SMALL_SETUP_GCS);
    fail_each_allocation(parse_and_free, SMALL_SETUP_BLOOM);
    for (size_t v = 0; v < 6; v++) { // the 5-element vectors
        encode_job job = {&setup_vectors[v], NULL, 0};
        uint8_t *el = raw_elements(setup_vectors[v].elements_from, &job.n);
        job.elements = el;
        fail_each_allocation(encode_vector, &job);
        free(el);
    }
}
