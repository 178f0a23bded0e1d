/* test_codec, damaged input: a table of malformed messages with their
 * exact error codes, the protobuf leniencies psi.js relies on, and a
 * mutation loop that feeds damaged messages to every decoder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "setup.h"
#include "wire.h"
#include "codec_common.h"

/* ------------------------------------------------ malformed messages */

/* Runs one decoder with enough capacity, checks the failure contract
 * (nothing returned on error) and the invariants of a success. */
static int run_decoder(enum decoder d, const uint8_t *msg, size_t len)
{
    size_t cap = psi_message_element_bound(PSI_SUITE_OPENMINED_P256, len), count = cap;
    uint8_t *el = malloc(cap * EB + 1);
    psi_setup *s = (psi_setup *)&s;
    int reveal = -1, rc;
    assert_non_null(el);
    if (d == DEC_SETUP) {
        rc = psi_setup_parse(&s, PSI_SUITE_OPENMINED_P256, msg, len);
        assert_true(rc == PSI_OK ? s != NULL : s == NULL);
        if (s != NULL && s->structure == PSI_STRUCTURE_RAW) {
            for (size_t i = 1; i < s->raw_count; i++)
                assert_true(memcmp(s->raw + (i - 1) * EB, s->raw + i * EB, EB) <= 0);
        } else if (s != NULL && s->structure == PSI_STRUCTURE_GCS) {
            assert_true(s->gcs_hash_range >= 1 && s->gcs_div >= 0 && s->gcs_div <= 63);
            for (size_t i = 0; i < s->gcs_count; i++)
                assert_true(s->gcs_values[i] < (uint64_t)s->gcs_hash_range &&
                            (i == 0 || s->gcs_values[i - 1] < s->gcs_values[i]));
        } else if (s != NULL) {
            assert_int_equal(s->structure, PSI_STRUCTURE_BLOOM_FILTER);
            assert_true(s->bloom_k >= 1 && s->bloom_bytes >= 1);
        }
        psi_setup_free(s);
    } else {
        rc = d == DEC_REQUEST ? psi_request_decode(el, &count, &reveal, PSI_SUITE_OPENMINED_P256, msg, len)
                              : psi_response_decode(el, &count, PSI_SUITE_OPENMINED_P256, msg, len);
        assert_true(rc == PSI_OK ? count <= cap : count == 0);
        if (d == DEC_REQUEST)
            assert_true(reveal == 0 || (reveal == 1 && rc == PSI_OK));
    }
    free(el);
    return rc;
}

const malformed_case codec_malformed_cases[] = {
    {"request empty", DEC_REQUEST, "", PSI_OK},
    {"varint missing", DEC_REQUEST, "08", PSI_E_MSG_TRUNCATED},
    {"varint cut", DEC_REQUEST, "08 80", PSI_E_MSG_TRUNCATED},
    {"tag cut", DEC_REQUEST, "80", PSI_E_MSG_TRUNCATED},
    {"10-byte varint", DEC_REQUEST, "08" VARINT_MINUS_1, PSI_OK},
    {"10th varint byte 2", DEC_REQUEST, "08 ffffffffffffffffff02", PSI_E_MSG_VARINT},
    {"11-byte varint", DEC_REQUEST, "08 ffffffffffffffffff8001", PSI_E_MSG_VARINT},
    {"11-byte tag", DEC_REQUEST, "ffffffffffffffffff8001", PSI_E_MSG_VARINT},
    {"tag 2^63", DEC_REQUEST, "80808080808080808001", PSI_E_MSG_TAG},
    {"length missing", DEC_REQUEST, "12", PSI_E_MSG_TRUNCATED},
    {"length past end", DEC_REQUEST, "1221" X32, PSI_E_MSG_TRUNCATED},
    {"length 3 of 2", DEC_REQUEST, "2a03 0102", PSI_E_MSG_TRUNCATED},
    {"length 2^64-1", DEC_REQUEST, "12" VARINT_MINUS_1, PSI_E_MSG_TRUNCATED},
    {"element as varint", DEC_REQUEST, "1001", PSI_E_MSG_TAG},
    {"element as fixed64", DEC_REQUEST, "11 0000000000000000", PSI_E_MSG_TAG},
    {"reveal as bytes", DEC_REQUEST, "0a00", PSI_E_MSG_TAG},
    {"reveal as fixed32", DEC_REQUEST, "0d 00000000", PSI_E_MSG_TAG},
    {"field 0", DEC_REQUEST, "0001", PSI_E_MSG_TAG},
    {"field 2^29", DEC_REQUEST, "8080808010 00", PSI_E_MSG_TAG},
    {"field 2^29-1", DEC_REQUEST, "f8ffffff0f 00", PSI_OK},
    {"wire type 3", DEC_REQUEST, "0b", PSI_E_MSG_TAG},
    {"wire type 4", DEC_REQUEST, "0c", PSI_E_MSG_TAG},
    {"wire type 6", DEC_REQUEST, "0e", PSI_E_MSG_TAG},
    {"wire type 7", DEC_REQUEST, "0f", PSI_E_MSG_TAG},
    {"p256-sswu suite header", DEC_REQUEST, "7f01", PSI_E_SUITE_MISMATCH},
    {"ristretto255 suite header", DEC_RESPONSE, "7f02", PSI_E_SUITE_MISMATCH},
    {"unknown suite header", DEC_SETUP, "7f09 0a00", PSI_E_SUITE_MISMATCH},
    {"element 0 bytes", DEC_REQUEST, "1200", PSI_E_MSG_ELEMENT_SIZE},
    {"element 32 bytes", DEC_REQUEST, "1220" X32, PSI_E_MSG_ELEMENT_SIZE},
    {"element 34 bytes", DEC_REQUEST, "1222" X32 "1111", PSI_E_MSG_ELEMENT_SIZE},
    {"unknown fixed64 cut", DEC_REQUEST, "19 01020304050607", PSI_E_MSG_TRUNCATED},
    {"unknown fixed32 cut", DEC_REQUEST, "1d 010203", PSI_E_MSG_TRUNCATED},
    {"unknown of each type", DEC_REQUEST,
     "1801 19 0102030405060708 1a0100 1d01020304 1221" EL_A, PSI_OK},
    {"response element as varint", DEC_RESPONSE, "0801", PSI_E_MSG_TAG},
    {"response element 32", DEC_RESPONSE, "0a20" X32, PSI_E_MSG_ELEMENT_SIZE},
    {"response cut", DEC_RESPONSE, "0a21 02", PSI_E_MSG_TRUNCATED},
    {"response wire type 3", DEC_RESPONSE, "0a21" EL_A "0b", PSI_E_MSG_TAG},
    {"response skips field 2", DEC_RESPONSE, "1221" EL_A "0a21" EL_B, PSI_OK},
    {"setup empty", DEC_SETUP, "", PSI_E_MSG_ONEOF_MISSING},
    {"setup only unknown", DEC_SETUP, "2000 2a00", PSI_E_MSG_ONEOF_MISSING},
    {"raw as varint", DEC_SETUP, "0800", PSI_E_MSG_TAG},
    {"gcs as fixed64", DEC_SETUP, "11 0000000000000000", PSI_E_MSG_TAG},
    {"bloom as fixed32", DEC_SETUP, "1d 00000000", PSI_E_MSG_TAG},
    {"raw and gcs", DEC_SETUP, "0a00 1203 10904e", PSI_E_MSG_ONEOF_DOUBLED},
    {"bloom and raw", DEC_SETUP, "1a05 080a 1201ff 0a00", PSI_E_MSG_ONEOF_DOUBLED},
    {"raw twice", DEC_SETUP, "0a00 0a00", PSI_E_MSG_ONEOF_DOUBLED},
    {"gcs twice", DEC_SETUP, "1203 10904e 1203 10904e", PSI_E_MSG_ONEOF_DOUBLED},
    {"setup length past end", DEC_SETUP, "0a05 0a", PSI_E_MSG_TRUNCATED},
    {"setup 11-byte varint", DEC_SETUP, "0a ffffffffffffffffff8001", PSI_E_MSG_VARINT},
    {"raw inner past end", DEC_SETUP, "0a02 0a21", PSI_E_MSG_TRUNCATED},
    {"raw inner wire type 3", DEC_SETUP, "0a01 0b", PSI_E_MSG_TAG},
    {"raw inner field 0", DEC_SETUP, "0a02 0000", PSI_E_MSG_TAG},
    {"raw element as varint", DEC_SETUP, "0a02 0800", PSI_E_MSG_TAG},
    {"raw element 32", DEC_SETUP, "0a22 0a20" X32, PSI_E_MSG_ELEMENT_SIZE},
    {"raw element 34", DEC_SETUP, "0a24 0a22" X32 "1111", PSI_E_MSG_ELEMENT_SIZE},
    {"raw unsorted", DEC_SETUP, "0a46 0a21" EL_B "0a21" EL_A, PSI_E_SETUP_UNSORTED},
    {"raw equal", DEC_SETUP, "0a46 0a21" EL_A "0a21" EL_A, PSI_OK},
    {"raw unknown inner", DEC_SETUP, "0a50 1001 0a21" EL_A "1a0100 0a21" EL_B "1d00000000",
     PSI_OK},
    {"bloom no fields", DEC_SETUP, "1a00", PSI_E_BLOOM_HASHES},
    {"bloom k 0", DEC_SETUP, "1a05 0800 1201ff", PSI_E_BLOOM_HASHES},
    {"bloom k -1", DEC_SETUP, "1a0e 08" VARINT_MINUS_1 "1201ff", PSI_E_BLOOM_HASHES},
    {"bloom k 2^31", DEC_SETUP, "1a09 08 8080808008 1201ff", PSI_E_BLOOM_HASHES},
    {"bloom k 2^32+1", DEC_SETUP, "1a09 08 8180808010 1201ff", PSI_OK},
    {"bloom k 1074", DEC_SETUP, "1a06 08b208 1201ff", PSI_OK},
    {"bloom k 1075", DEC_SETUP, "1a06 08b308 1201ff", PSI_E_BLOOM_HASHES},
    {"bloom k 2^31-1", DEC_SETUP, "1a09 08 ffffffff07 1201ff", PSI_E_BLOOM_HASHES},
    {"bloom no bits", DEC_SETUP, "1a02 0801", PSI_E_BLOOM_BITS},
    {"bloom empty bits", DEC_SETUP, "1a04 0801 1200", PSI_E_BLOOM_BITS},
    {"bloom bits as varint", DEC_SETUP, "1a04 0801 1000", PSI_E_MSG_TAG},
    {"bloom k as bytes", DEC_SETUP, "1a05 0a00 1201ff", PSI_E_MSG_TAG},
    {"bloom inner cut", DEC_SETUP, "1a02 0880", PSI_E_MSG_TRUNCATED},
    {"gcs no fields", DEC_SETUP, "1200", PSI_E_GCS_HASH_RANGE},
    {"gcs hash_range 0", DEC_SETUP, "1202 1000", PSI_E_GCS_HASH_RANGE},
    {"gcs hash_range -1", DEC_SETUP, "120b 10" VARINT_MINUS_1, PSI_E_GCS_HASH_RANGE},
    {"gcs hash_range -2^63", DEC_SETUP, "120b 10 80808080808080808001",
     PSI_E_GCS_HASH_RANGE},
    {"gcs div 64", DEC_SETUP, "1204 0840 1064", PSI_E_GCS_DIV},
    {"gcs div -1", DEC_SETUP, "120d 08" VARINT_MINUS_1 "1064", PSI_E_GCS_DIV},
    {"gcs div 2^31", DEC_SETUP, "1208 08 8080808008 1064", PSI_E_GCS_DIV},
    {"gcs div 63", DEC_SETUP, "1204 083f 1064", PSI_OK},
    {"gcs div 2^32+9", DEC_SETUP, "1208 08 8980808010 1064", PSI_OK},
    {"gcs stream cut in remainder", DEC_SETUP, "1207 0809 1064 1a0101", PSI_E_GCS_STREAM},
    {"gcs value = hash_range", DEC_SETUP, "1205 1005 1a0120", PSI_E_GCS_STREAM},
    {"gcs value < hash_range", DEC_SETUP, "1205 1005 1a0110", PSI_OK},
    {"gcs bits as varint", DEC_SETUP, "1204 1064 1800", PSI_E_MSG_TAG},
    {"gcs div as bytes", DEC_SETUP, "1204 1064 0a00", PSI_E_MSG_TAG},
    {"gcs hash_range as fixed32", DEC_SETUP, "1205 1500000000", PSI_E_MSG_TAG},
    {"gcs inner varint cut", DEC_SETUP, "1202 1080", PSI_E_MSG_TRUNCATED},
    {"gcs bits past inner end", DEC_SETUP, "1203 1a0501 2205 0000000000", PSI_E_MSG_TRUNCATED},
    {"gcs inner wire type 7", DEC_SETUP, "1203 1064 0f", PSI_E_MSG_TAG},
};
const size_t codec_malformed_count = sizeof codec_malformed_cases / sizeof codec_malformed_cases[0];

void test_codec_malformed_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < codec_malformed_count; i++) {
        const malformed_case *c = &codec_malformed_cases[i];
        size_t len;
        uint8_t *msg = hex_alloc(c->hex, &len);
        int rc = run_decoder(c->decoder, msg, len);
        if (rc != c->expect)
            fail_msg("case '%s': got %d (%s), want %d (%s)", c->name, rc, psi_strerror(rc),
                     c->expect, psi_strerror(c->expect));
        free(msg);
    }
}

/* ---------------------------------------------- protobuf leniencies */

/* Unknown fields of every wire type are skipped wherever they appear, and
 * known fields may come in any order. */
void test_codec_unknown_fields_skipped(void **state)
{
    static const char unknown[] = "f8ffffff0f01 21 0102030405060708 2a03abcdef 2d01020304";
    char hex[512];
    uint8_t el[4 * EB];
    size_t len, count = 4;
    int reveal;
    psi_setup *s;
    (void)state;
    snprintf(hex, sizeof hex, "%s 1221%s %s 0801 1221%s %s", unknown, EL_A, unknown, EL_B,
             unknown);
    uint8_t *msg = hex_alloc(hex, &len);
    assert_int_equal(psi_request_decode(el, &count, &reveal, PSI_SUITE_OPENMINED_P256, msg, len), PSI_OK);
    assert_int_equal(count, 2);
    assert_int_equal(reveal, 1);
    assert_true(el[0] == 0x02 && el[EB] == 0x03);
    free(msg);
    // Outer and inner unknown fields, GCS fields in reverse order.
    snprintf(hex, sizeof hex, "%s 1221 %s 1a010e 108f1c 0802 %s", unknown, unknown, unknown);
    s = parse_hex(hex, PSI_OK);
    assert_int_equal(s->gcs_div, 2);
    assert_int_equal(s->gcs_hash_range, 3599);
    assert_int_equal(s->gcs_count, 1);
    assert_int_equal(s->gcs_values[0], 7); // §7.2: {7} with div 2 is 0e
    psi_setup_free(s);
    snprintf(hex, sizeof hex, "1a37 %s 1201ff %s 0803", unknown, unknown);
    s = parse_hex(hex, PSI_OK);
    assert_int_equal(s->bloom_k, 3);
    assert_int_equal(s->bloom_bytes, 1);
    psi_setup_free(s);
}

/* Scalars: the last occurrence wins, any nonzero varint is true, int32
 * fields keep their low 32 bits as a signed value. */
void test_codec_scalar_rules(void **state)
{
    static const struct {
        const char *hex;
        int reveal;
    } flags[] = {{"0801 0800", 0}, {"0800 0801", 1}, {"0802", 1},
                 {"08 80808080808080808001", 1}, {"08 8080808010", 1}, {"0800", 0}};
    psi_setup *s;
    (void)state;
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        size_t len, count = 0;
        int reveal = -1;
        uint8_t *msg = hex_alloc(flags[i].hex, &len);
        assert_int_equal(psi_request_decode(NULL, &count, &reveal, PSI_SUITE_OPENMINED_P256, msg, len), PSI_OK);
        assert_int_equal(reveal, flags[i].reveal);
        free(msg);
    }
    s = parse_hex("1206 1005 1064 0801", PSI_OK);
    assert_true(s->gcs_hash_range == 100 && s->gcs_div == 1);
    psi_setup_free(s);
    s = parse_hex("1208 08 8980808010 1064", PSI_OK);
    assert_int_equal(s->gcs_div, 9);
    psi_setup_free(s);
    s = parse_hex("1a08 1201aa 1201bb 0807", PSI_OK);
    assert_true(s->bloom_k == 7 && s->bloom_bytes == 1 && s->bloom_bits[0] == 0xbb);
    psi_setup_free(s);
}

/* ------------------------------------------------- damaged messages */

/* The codes a decoder may return for any input: the message-level ones
 * for all, and the setup's content checks for psi_setup_parse only. */
static int documented(enum decoder d, int rc)
{
    static const int any[] = {PSI_OK, PSI_E_MSG_TRUNCATED, PSI_E_MSG_VARINT, PSI_E_MSG_TAG,
                              PSI_E_MSG_ELEMENT_SIZE, PSI_E_SUITE_MISMATCH};
    static const int setup[] = {PSI_E_MSG_ONEOF_MISSING, PSI_E_MSG_ONEOF_DOUBLED,
                                PSI_E_MSG_TOO_LARGE, PSI_E_GCS_HASH_RANGE, PSI_E_GCS_DIV,
                                PSI_E_GCS_STREAM, PSI_E_BLOOM_HASHES, PSI_E_BLOOM_BITS,
                                PSI_E_SETUP_UNSORTED};
    for (size_t i = 0; i < sizeof any / sizeof any[0]; i++)
        if (rc == any[i])
            return 1;
    for (size_t i = 0; d == DEC_SETUP && i < sizeof setup / sizeof setup[0]; i++)
        if (rc == setup[i])
            return 1;
    return 0;
}

/* Feeds a copy of exactly `len` bytes, so ASan sees any overread. */
static void feed_all(const uint8_t *msg, size_t len)
{
    uint8_t *copy = malloc(len == 0 ? 1 : len);
    assert_non_null(copy);
    memcpy(copy, msg, len);
    for (int d = DEC_REQUEST; d <= DEC_SETUP; d++) {
        int rc = run_decoder((enum decoder)d, copy, len);
        if (!documented((enum decoder)d, rc))
            fail_msg("decoder %d returned undocumented %d", d, rc);
    }
    free(copy);
}

/* Flips a bit, or writes a random byte or one that steers a parser most. */
static void mutate(uint8_t *m, size_t len)
{
    static const uint8_t steer[] = {0x00, 0x01, 0x7f, 0x80, 0xff, 0x0a, 0x12, 0x1a};
    unsigned edits = 1 + (unsigned)(rng_next() % 4);
    for (unsigned i = 0; i < edits && len != 0; i++) {
        size_t at = (size_t)(rng_next() % len);
        uint64_t r = rng_next();
        if (r % 3 == 0)
            m[at] ^= (uint8_t)(1u << (r / 3 % 8));
        else
            m[at] = r % 3 == 1 ? (uint8_t)(r >> 8) : steer[r / 3 % 8];
    }
}

void test_codec_damaged_messages(void **state)
{
    static const char *const valid[] = {
        SMALL_REQUEST, JS_REQUEST, SMALL_RESPONSE, SMALL_SETUP_RAW, SMALL_SETUP_GCS,
        SMALL_SETUP_BLOOM, JS_SETUP_GCS, JS_SETUP_BLOOM, "0a00", "120310904e",
        "1a0e 08" VARINT_MINUS_1 "1201ff", "0a50 1001 0a21" EL_A "1a0100 0a21" EL_B "1d00000000",
    };
    uint64_t iters = env_u64("PSI_TEST_ITERS", 300);
    (void)state;
    for (size_t v = 0; v < sizeof valid / sizeof valid[0]; v++) {
        size_t len;
        uint8_t *msg = hex_alloc(valid[v], &len);
        uint8_t *m = malloc(len + 1);
        assert_non_null(m);
        for (size_t cut = 0; cut <= len; cut++)
            feed_all(msg, cut);
        for (uint64_t i = 0; i < iters; i++) {
            memcpy(m, msg, len);
            mutate(m, len);
            feed_all(m, len);
        }
        free(m);
        free(msg);
    }
}
