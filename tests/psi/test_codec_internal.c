/* The psi_proto codec (psi/wire.c, psi/messages.c; PROTOCOL.md §10):
 * exact bytes against psi.js 2.0.6 output, round trips, a table of
 * malformed messages with their exact error codes, and a mutation loop
 * that feeds damaged messages to every decoder.  Internal: it also drives
 * the wire primitives and the allocation-failure hook directly.  This
 * file: main, the wire primitives and round trips; psi.js's bytes are in
 * codec_vectors.c, the calls' errors in codec_errors.c, damaged input in
 * codec_malformed.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "codec.h"
#include "setup.h"
#include "wire.h"
#include "codec_common.h"

/* ---------------------------------------------------- wire primitives */

static void test_codec_varint_roundtrip(void **state)
{
    static const uint64_t values[] = {0, 1, 127, 128, 300, 16383, 16384, UINT32_MAX,
                                      (uint64_t)INT64_MAX, UINT64_MAX};
    (void)state;
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        uint8_t buf[16];
        psi_wbuf w = {buf, sizeof buf, 0};
        psi_wbuf_varint(&w, values[i]);
        assert_int_equal(w.len, psi_varint_size(values[i]));
        const uint8_t *p = buf;
        uint64_t v = 0;
        assert_int_equal(psi_wire_varint(&p, buf + w.len, &v), PSI_OK);
        assert_true(v == values[i]);
        assert_ptr_equal(p, buf + w.len);
    }
    assert_int_equal(psi_varint_size(UINT64_MAX), 10);
    // Negative int32/int64 (never produced) are 10-byte sign-extended varints.
    uint8_t neg[10];
    psi_wbuf wn = {neg, sizeof neg, 0};
    psi_wbuf_varint(&wn, (uint64_t)(int64_t)-1);
    psi_wbuf_tag(&wn, 3, PSI_WIRE_LEN);
    assert_int_equal(wn.len, 11); // the tag did not fit: counted, not written
    assert_hex_equal(neg, sizeof neg, VARINT_MINUS_1);
    // A writer never stores past cap, but keeps counting.
    uint8_t guard[8];
    memset(guard, 0xAA, sizeof guard);
    psi_wbuf w = {guard, 3, 0};
    psi_wbuf_varint(&w, UINT64_MAX);
    psi_wbuf_bytes(&w, (const uint8_t *)"abcd", 4);
    assert_int_equal(w.len, 14);
    for (size_t i = 3; i < sizeof guard; i++)
        assert_int_equal(guard[i], 0xAA);
}

/* Reads one field from hex; returns psi_wire_next's code.  The message is
 * freed on return, so the field's last data byte is handed back in *tail. */
static int next_field(const char *hex, psi_field *f, uint8_t *tail)
{
    size_t len;
    uint8_t *msg = hex_alloc(hex, &len);
    const uint8_t *p = msg;
    int rc = psi_wire_next(&p, msg + len, f);
    *tail = (rc == PSI_OK && f->len != 0) ? f->data[f->len - 1] : 0;
    if (rc == PSI_OK)
        assert_ptr_equal(p, msg + len);
    free(msg);
    return rc;
}

/* What a field carries; the error cases are in the malformed table. */
static void test_codec_wire_fields(void **state)
{
    psi_field f;
    uint8_t tail;
    (void)state;
    assert_int_equal(next_field("", &f, &tail), 1);
    assert_int_equal(next_field("f8ffffff0f 00", &f, &tail), PSI_OK);
    assert_int_equal(f.number, 0x1FFFFFFF);
    assert_int_equal(next_field("19 0102030405060708", &f, &tail), PSI_OK);
    assert_true(f.number == 3 && f.wire_type == PSI_WIRE_I64 && f.len == 8 && tail == 8);
    assert_int_equal(next_field("1d 01020304", &f, &tail), PSI_OK);
    assert_true(f.wire_type == PSI_WIRE_I32 && f.len == 4 && tail == 4);
    assert_int_equal(next_field("0a 02 0102", &f, &tail), PSI_OK);
    assert_true(f.wire_type == PSI_WIRE_LEN && f.len == 2 && tail == 2);
    assert_int_equal(next_field("08" VARINT_MINUS_1, &f, &tail), PSI_OK);
    assert_true(f.wire_type == PSI_WIRE_VARINT && f.varint == UINT64_MAX);
}

/* ------------------------------------------------------ round trips */

static void roundtrip_elements(int request, int reveal, size_t n)
{
    uint8_t *el = malloc(n * EB + 1), *back = malloc(n * EB + 1);
    size_t bound = request ? psi_request_bound(PSI_SUITE_OPENMINED_P256, n) : psi_response_bound(PSI_SUITE_OPENMINED_P256, n);
    uint8_t *msg = malloc(bound + 1);
    size_t len = bound, count;
    int got_reveal = -1;
    assert_true(el != NULL && back != NULL && msg != NULL);
    rng_fill(el, n * EB);
    if (request)
        assert_int_equal(psi_request_encode(msg, &len, PSI_SUITE_OPENMINED_P256, reveal, el, n), PSI_OK);
    else
        assert_int_equal(psi_response_encode(msg, &len, PSI_SUITE_OPENMINED_P256, el, n), PSI_OK);
    size_t head = (request && reveal) ? 2 : 0;
    assert_int_equal(len, head + n * PSI_ELEMENT_WIRE_BYTES);
    if (head != 0)
        assert_memory_equal(msg, "\x08\x01", 2);
    for (size_t i = 0; i < n; i++) {
        const uint8_t *f = msg + head + i * PSI_ELEMENT_WIRE_BYTES;
        assert_int_equal(f[0], request ? 0x12 : 0x0a);
        assert_int_equal(f[1], 0x21);
        assert_memory_equal(f + 2, el + i * EB, EB);
    }
    count = psi_message_element_bound(PSI_SUITE_OPENMINED_P256, len);
    if (request) {
        assert_int_equal(psi_request_decode(back, &count, &got_reveal, PSI_SUITE_OPENMINED_P256, msg, len), PSI_OK);
        assert_int_equal(got_reveal, reveal);
    } else {
        assert_int_equal(psi_response_decode(back, &count, PSI_SUITE_OPENMINED_P256, msg, len), PSI_OK);
    }
    assert_int_equal(count, n);
    if (n != 0)
        assert_memory_equal(back, el, n * EB);
    free(el);
    free(back);
    free(msg);
}

static void test_codec_request_response_roundtrip(void **state)
{
    static const size_t sizes[] = {0, 1, 2, 7, 100};
    (void)state;
    assert_true(psi_request_bound(PSI_SUITE_OPENMINED_P256, 0) == 2 && psi_request_bound(PSI_SUITE_OPENMINED_P256, 3) == 107);
    assert_true(psi_response_bound(PSI_SUITE_OPENMINED_P256, 0) == 0 && psi_response_bound(PSI_SUITE_OPENMINED_P256, 3) == 105);
    assert_true(psi_request_bound(PSI_SUITE_OPENMINED_P256, SIZE_MAX / 35 + 1) == 0);
    assert_true(psi_response_bound(PSI_SUITE_OPENMINED_P256, SIZE_MAX / 35 + 1) == 0);
    assert_true(psi_message_element_bound(PSI_SUITE_OPENMINED_P256, 34) == 0 && psi_message_element_bound(PSI_SUITE_OPENMINED_P256, 35) == 1);
    assert_int_equal(psi_message_element_bound(PSI_SUITE_OPENMINED_P256, 107), 3);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        roundtrip_elements(1, 0, sizes[i]);
        roundtrip_elements(1, 1, sizes[i]);
        roundtrip_elements(0, 0, sizes[i]);
    }
}

static void test_codec_raw_setup_roundtrip(void **state)
{
    static const size_t sizes[] = {0, 1, 3, 4, 200};
    static uint8_t el[200 * EB];
    psi_setup_params prm = {PSI_STRUCTURE_RAW, 0.0, 0};
    (void)state;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i], bound, len;
        rng_fill(el, n * EB);
        if (n >= 2)
            memcpy(el + EB, el, EB); // a duplicate is allowed
        qsort(el, n, EB, cmp_element);
        assert_int_equal(psi_setup_bound(&bound, PSI_SUITE_OPENMINED_P256, &prm, n), PSI_OK);
        uint8_t *msg = malloc(bound);
        len = bound;
        assert_int_equal(psi_setup_encode(msg, &len, PSI_SUITE_OPENMINED_P256, &prm, el, n), PSI_OK);
        assert_int_equal(len, bound); // exact for raw
        psi_setup *s;
        assert_int_equal(psi_setup_parse(&s, PSI_SUITE_OPENMINED_P256, msg, len), PSI_OK);
        assert_int_equal(psi_setup_structure(s), PSI_STRUCTURE_RAW);
        assert_int_equal(psi_setup_raw_count(s), n);
        if (n != 0)
            assert_memory_equal(s->raw, el, n * EB);
        psi_setup_free(s);
        free(msg);
    }
}

int main(void)
{
    uint64_t seed = env_u64("PSI_TEST_SEED", (uint64_t)time(NULL));
    printf("[ codec ] PSI_TEST_SEED=%llu\n", (unsigned long long)seed);
    rng_state = seed | 1; // xorshift needs a nonzero state
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codec_varint_roundtrip),
        cmocka_unit_test(test_codec_wire_fields),
        cmocka_unit_test(test_codec_request_response_roundtrip),
        cmocka_unit_test(test_codec_raw_setup_roundtrip),
        cmocka_unit_test(test_codec_reference_requests_responses),
        cmocka_unit_test(test_codec_reference_setups_parse),
        cmocka_unit_test(test_codec_reference_setups_encode),
        cmocka_unit_test(test_codec_encode_errors),
        cmocka_unit_test(test_codec_encode_buffer_too_small),
        cmocka_unit_test(test_codec_decode_buffer_too_small),
        cmocka_unit_test(test_codec_malformed_table),
        cmocka_unit_test(test_codec_unknown_fields_skipped),
        cmocka_unit_test(test_codec_scalar_rules),
        cmocka_unit_test(test_codec_null_args_encoders),
        cmocka_unit_test(test_codec_null_args_decoders),
        cmocka_unit_test(test_codec_damaged_messages),
        cmocka_unit_test(test_codec_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
