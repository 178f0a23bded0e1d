/* The psi_proto codec (psi/wire.c, psi/messages.c; PROTOCOL.md §10):
 * exact bytes against psi.js 2.0.6 output, round trips, a table of
 * malformed messages with their exact error codes, and a mutation loop
 * that feeds damaged messages to every decoder.  Internal: it also drives
 * the wire primitives and the allocation-failure hook directly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "setup.h"
#include "wire.h"

#define EB PSI_ELEMENT_BYTES

/* ------------------------------------------------------------ vectors */

/* §11 small example (vectors/reference/openmined-psi-vectors.json,
 * small_example): request with reveal on, response with reveal off
 * (sorted), raw setup. */
static const char SMALL_REQUEST[] =
    "0801122102df6bda232f6c5ecc7bfec2ada5049777a41c4547b29fa57e7c2294e80bcecadb1221024f67bdba"
    "5ec73447834e58a52f8553b36939229ba465a0334b4cd85e1aae2b801221028efbd69d77a25d6a31e770682e"
    "13fd6605a658e0b2b66872c7d5030e4f9e64ed1221026ed7d63886233c749601ca8a2befdb98c214190971d5"
    "fd6d2126e73d6c8d35bd12210331d9bed2786360d1a1471a4330bf7c23b7430e3578fc08129fc446ff1f050f"
    "28122102a6ebe0496fbdbd62848953f00354a172454c0eb5462af8a6251014ec8e77e612";
static const char SMALL_RESPONSE[] =
    "0a21022e61de37aa22e0b9b511e807cb0876d4cfdd5afbeaf83722bc7d4c431552a4210a210291ed12ea6df7"
    "745022827227e4ba37b69b8771e6101aad70d34b39aa8ab1f6110a21030693978266f44295fa74474af50cdb"
    "ce5ccda956557e97ce6c786335bdd3f2340a2103a44534d81288cf175fbb5b498c25d852d316fbafe3892e95"
    "06bf26e70167cb9e0a2103ab7379cdf30e31ec452a06b8dbf1d1582b5d756394d6ed2887c0d1313bc91c390a"
    "2103d94c3fc3c3d56ad9a18394b0e8762b787c8d7d25c2ddb7022c8d9ae9ee46f316";
static const char SMALL_SETUP_RAW[] =
    "0aaf010a21027eaa6b53db9ef3fd938c48d793dd71f1595b8846bf0bf74422ff4343995204240a210291eea6"
    "06f9bc39fd97bfcbc8094ca93e34b148b6d790c4eed93971b78da76d550a21034b17d7bdd613fa9df56c58d0"
    "c77ca255d4f140efb95e07247c97aa9cd6fea0dd0a2103662671bdc627e05271c21260a6087ca388c45e9c6f"
    "829451b09776349ebf00ec0a2103bbbd96e7755417f1088f686d397a6ce4a679ab8c737940f70229b69fbccf"
    "dfa7";
static const char SMALL_SETUP_GCS[] = "120e0809108f1c1a07958b4233a5bb09";
static const char SMALL_SETUP_BLOOM[] = "1a0e080a120a785a48495c584c4ae9c8";

/* tests/data/openmined-psi-js (protocol[1]: request with reveal off;
 * setups for fpr 1e-6 and 6 client inputs). */
static const char JS_REQUEST[] =
    "1221020e7a6bf4333a29ede6a10cc2a027618f59eefe9c67a17cce6dedd4c1bef85255122103dbb0216772e9"
    "788def4722961f6742f093a3ecdfdaab4468641f7937e942422d1221022a0d84d23ad52fd92b859c85cd3bf4"
    "9167243c92ecdedb80b390bfed487b184f12210231140a94d535f224dd6b8020b2a0d18d062788cbdc6fa3e4"
    "6ecca8ebcce62a3912210251839af973023a293fd6b8306f0f733482b7ed04187248e6adcffaeaa1e4208b12"
    "2102d1f1f3680785896f3dfb6857c6c3908620fde1ad0ad1054dcc18531e2d03fbbc";
static const char JS_SETUP_RAW[] =
    "0aaf010a210200103796719d5e0335045e07754c52cff1c2f7e6838ae6b6ab4b002f94a8615d0a21028baab2"
    "975033caa382dc7563df05b96a4bd95cba2f97b6e015bda76c26d6d9de0a210296512388b080f07cde02b0ea"
    "7915236282968ee50f85231f6d1983e7670fc5c60a2102b3885587a8c82b6b259026660a5a6150e893cc7f39"
    "9496dd9ee5b2c7c18cdfa50a2102c5026a4411f9913b40643ca0a9cd50fd4b7be4aca72108cfe159ccdca7e3"
    "bd1c";
static const char JS_SETUP_GCS[] = "121808161080a295111a0f263bcde5f46a8ec80a0ca9eca2c99c";
static const char JS_SETUP_BLOOM[] =
    "1a1d081712190d1d02beaabfeabb3a1b863989d3c011700578057391146158";

/* reference edge_setups: server element 'a' alone, twice, or none. */
static const char EDGE_RAW_A[] =
    "0a230a2102f66d464ac22143b0eea2d8526d64613d3f2419a20d9ea3a771504c54f94e31a7";
static const char EDGE_BLOOM_EMPTY[] = "1a16080a1212000000000000000000000000000000000000";

/* Synthetic 33-byte elements for hand-made messages. */
#define X32 "1111111111111111111111111111111111111111111111111111111111111111"
#define EL_A "02" X32
#define EL_B "03" X32
#define VARINT_MINUS_1 "ffffffffffffffffff01"

/* ------------------------------------------------------------ helpers */

/* Decodes hex (spaces ignored) into a buffer of exactly the decoded size,
 * so ASan catches any read past the end of a message. */
static uint8_t *hex_alloc(const char *hex, size_t *len)
{
    size_t digits = 0, n = 0;
    for (const char *c = hex; *c != '\0'; c++)
        digits += *c != ' ';
    assert_int_equal(digits % 2, 0);
    uint8_t *out = malloc(digits == 0 ? 1 : digits / 2);
    assert_non_null(out);
    for (const char *c = hex; *c != '\0'; c += (*c == ' ') ? 1 : 2) {
        unsigned byte;
        if (*c == ' ')
            continue;
        assert_int_equal(sscanf(c, "%2x", &byte), 1);
        out[n++] = (uint8_t)byte;
    }
    *len = n;
    return out;
}

static void assert_hex_equal(const uint8_t *got, size_t got_len, const char *hex)
{
    size_t len;
    uint8_t *want = hex_alloc(hex, &len);
    assert_int_equal(got_len, len);
    assert_memory_equal(got, want, len);
    free(want);
}

/* xorshift64*: reproducible from the printed seed. */
static uint64_t rng_state;

static uint64_t rng_next(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

static void rng_fill(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)rng_next();
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    return (v != NULL && *v != '\0') ? strtoull(v, NULL, 0) : dflt;
}

static int cmp_element(const void *a, const void *b)
{
    return memcmp(a, b, EB);
}

/* Parses a setup and returns its raw elements (a copy the caller frees). */
static uint8_t *raw_elements(const char *hex, size_t *n)
{
    size_t len;
    uint8_t *msg = hex_alloc(hex, &len);
    psi_setup *s;
    assert_int_equal(psi_setup_parse(&s, msg, len), PSI_OK);
    *n = psi_setup_raw_count(s);
    uint8_t *el = malloc(*n * EB + 1);
    assert_non_null(el);
    memcpy(el, s->raw, *n * EB);
    psi_setup_free(s);
    free(msg);
    return el;
}

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
    size_t bound = request ? psi_request_bound(n) : psi_response_bound(n);
    uint8_t *msg = malloc(bound + 1);
    size_t len = bound, count;
    int got_reveal = -1;
    assert_true(el != NULL && back != NULL && msg != NULL);
    rng_fill(el, n * EB);
    if (request)
        assert_int_equal(psi_request_encode(msg, &len, reveal, el, n), PSI_OK);
    else
        assert_int_equal(psi_response_encode(msg, &len, el, n), PSI_OK);
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
    count = psi_message_element_bound(len);
    if (request) {
        assert_int_equal(psi_request_decode(back, &count, &got_reveal, msg, len), PSI_OK);
        assert_int_equal(got_reveal, reveal);
    } else {
        assert_int_equal(psi_response_decode(back, &count, msg, len), PSI_OK);
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
    assert_true(psi_request_bound(0) == 2 && psi_request_bound(3) == 107);
    assert_true(psi_response_bound(0) == 0 && psi_response_bound(3) == 105);
    assert_true(psi_request_bound(SIZE_MAX / 35 + 1) == 0);
    assert_true(psi_response_bound(SIZE_MAX / 35 + 1) == 0);
    assert_true(psi_message_element_bound(34) == 0 && psi_message_element_bound(35) == 1);
    assert_int_equal(psi_message_element_bound(107), 3);
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
        assert_int_equal(psi_setup_bound(&bound, &prm, n), PSI_OK);
        uint8_t *msg = malloc(bound);
        len = bound;
        assert_int_equal(psi_setup_encode(msg, &len, &prm, el, n), PSI_OK);
        assert_int_equal(len, bound); // exact for raw
        psi_setup *s;
        assert_int_equal(psi_setup_parse(&s, msg, len), PSI_OK);
        assert_int_equal(psi_setup_structure(s), PSI_STRUCTURE_RAW);
        assert_int_equal(psi_setup_raw_count(s), n);
        if (n != 0)
            assert_memory_equal(s->raw, el, n * EB);
        psi_setup_free(s);
        free(msg);
    }
}

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
        assert_int_equal(psi_request_decode(el, &count, &got_reveal, msg, len), PSI_OK);
    else
        assert_int_equal(psi_response_decode(el, &count, msg, len), PSI_OK);
    assert_int_equal(count, n);
    out_len = sizeof out;
    if (request) {
        assert_int_equal(got_reveal, reveal);
        assert_int_equal(psi_request_encode(out, &out_len, reveal, el, n), PSI_OK);
        assert_hex_equal(out, out_len, hex);
        out_len = sizeof out;
        assert_int_equal(psi_request_encode(out, &out_len, !reveal, el, n), PSI_OK);
        const uint8_t *with = reveal ? msg : out, *without = reveal ? out : msg;
        assert_int_equal(reveal ? len : out_len, (reveal ? out_len : len) + 2);
        assert_memory_equal(with, "\x08\x01", 2);
        assert_memory_equal(with + 2, without, n * PSI_ELEMENT_WIRE_BYTES);
    } else {
        assert_int_equal(psi_response_encode(out, &out_len, el, n), PSI_OK);
        assert_hex_equal(out, out_len, hex);
    }
    free(msg);
}

static void test_codec_reference_requests_responses(void **state)
{
    (void)state;
    check_elements_vector(SMALL_REQUEST, 1, 1, 6);
    check_elements_vector(JS_REQUEST, 1, 0, 6);
    check_elements_vector(SMALL_RESPONSE, 0, 0, 6);
    check_elements_vector("0801", 1, 1, 0);
    check_elements_vector("", 1, 0, 0);
}

static psi_setup *parse_hex(const char *hex, int expect)
{
    size_t len;
    uint8_t *msg = hex_alloc(hex, &len);
    psi_setup *s = (psi_setup *)&s;
    assert_int_equal(psi_setup_parse(&s, msg, len), expect);
    if (expect != PSI_OK)
        assert_null(s);
    free(msg);
    return s;
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

static void test_codec_reference_setups_parse(void **state)
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

static void test_codec_reference_setups_encode(void **state)
{
    (void)state;
    for (size_t v = 0; v < sizeof setup_vectors / sizeof setup_vectors[0]; v++) {
        const setup_vector *sv = &setup_vectors[v];
        size_t have, bound, len;
        uint8_t *src = raw_elements(sv->elements_from, &have);
        uint8_t *el = malloc(sv->take * EB + 1);
        for (size_t i = 0; i < sv->take; i++)
            memcpy(el + i * EB, src + (i % have) * EB, EB);
        assert_int_equal(psi_setup_bound(&bound, &sv->params, sv->take), PSI_OK);
        uint8_t *out = malloc(bound);
        len = bound;
        assert_int_equal(psi_setup_encode(out, &len, &sv->params, el, sv->take), PSI_OK);
        assert_hex_equal(out, len, sv->expect);
        free(out);
        free(el);
        free(src);
    }
}

/* ------------------------------------------------ encoder failures */

/* Fills a buffer with a marker to show that a failed call wrote nothing. */
static void assert_untouched(const uint8_t *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        assert_int_equal(buf[i], 0xAA);
}

static void test_codec_encode_errors(void **state)
{
    uint8_t el[2 * EB], out[128];
    size_t len;
    psi_setup_params prm = {PSI_STRUCTURE_RAW, 0.01, 10};
    (void)state;
    memset(el, 0x22, EB);
    memset(el + EB, 0x11, EB); // descending: not a valid raw setup
    memset(out, 0xAA, sizeof out);
    len = sizeof out;
    assert_int_equal(psi_setup_encode(out, &len, &prm, el, 2), PSI_E_SETUP_UNSORTED);
    assert_int_equal(len, 0);
    prm.structure = (psi_structure)3;
    len = sizeof out;
    assert_int_equal(psi_setup_encode(out, &len, &prm, el, 2), PSI_E_STRUCTURE);
    assert_int_equal(psi_setup_bound(&len, &prm, 2), PSI_E_STRUCTURE);
    prm.structure = (psi_structure)-1;
    assert_int_equal(psi_setup_bound(&len, &prm, 2), PSI_E_STRUCTURE);
    prm = (psi_setup_params){PSI_STRUCTURE_GCS, 0.0, 10};
    len = sizeof out;
    assert_int_equal(psi_setup_encode(out, &len, &prm, el, 2), PSI_E_FPR);
    assert_int_equal(psi_setup_bound(&len, &prm, 2), PSI_E_FPR);
    prm.structure = PSI_STRUCTURE_BLOOM_FILTER;
    assert_int_equal(psi_setup_bound(&len, &prm, 2), PSI_E_FPR);
    prm.structure = PSI_STRUCTURE_RAW; // fpr is ignored for raw
    assert_int_equal(psi_setup_bound(&len, &prm, 2), PSI_OK);
    assert_int_equal(len, 72);
    assert_int_equal(psi_setup_bound(&len, &prm, SIZE_MAX / 35 + 1), PSI_E_PARAM_OVERFLOW);
    assert_int_equal(len, 0);
    assert_untouched(out, sizeof out);
}

/* Every encoder given one byte less than it needs fails and writes
 * nothing; given exactly what it needs, succeeds. */
static void test_codec_encode_buffer_too_small(void **state)
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
        assert_int_equal(psi_setup_encode(out, &len, &prm, el, 3), PSI_OK);
        need = len;
        memset(out, 0xAA, sizeof out);
        len = need - 1;
        assert_int_equal(psi_setup_encode(out, &len, &prm, el, 3), PSI_E_BUFFER_TOO_SMALL);
        assert_int_equal(len, 0);
        assert_untouched(out, sizeof out);
        len = 0;
        assert_int_equal(psi_setup_encode(NULL, &len, &prm, el, 3), PSI_E_BUFFER_TOO_SMALL);
    }
    len = psi_request_bound(3) - 1;
    assert_int_equal(psi_request_encode(out, &len, 1, el, 3), PSI_E_BUFFER_TOO_SMALL);
    assert_untouched(out, sizeof out);
    len = psi_request_bound(3) - 2; // exactly enough without the flag
    assert_int_equal(psi_request_encode(out, &len, 0, el, 3), PSI_OK);
    len = psi_response_bound(3) - 1;
    memset(out, 0xAA, sizeof out);
    assert_int_equal(psi_response_encode(out, &len, el, 3), PSI_E_BUFFER_TOO_SMALL);
    assert_int_equal(len, 0);
    assert_untouched(out, sizeof out);
}

static void test_codec_decode_buffer_too_small(void **state)
{
    size_t len, count;
    uint8_t el[6 * EB];
    int reveal = -1;
    (void)state;
    uint8_t *req = hex_alloc(SMALL_REQUEST, &len);
    count = 5;
    assert_int_equal(psi_request_decode(el, &count, &reveal, req, len), PSI_E_BUFFER_TOO_SMALL);
    assert_int_equal(count, 0);
    assert_int_equal(reveal, 0);
    for (size_t i = 0; i < 5 * EB; i++)
        assert_int_equal(el[i], 0); // what was decoded before the failure is wiped
    count = 0;
    assert_int_equal(psi_request_decode(NULL, &count, &reveal, req, len), PSI_E_BUFFER_TOO_SMALL);
    free(req);
    uint8_t *resp = hex_alloc(SMALL_RESPONSE, &len);
    count = 5;
    assert_int_equal(psi_response_decode(el, &count, resp, len), PSI_E_BUFFER_TOO_SMALL);
    assert_int_equal(count, 0);
    count = 6;
    assert_int_equal(psi_response_decode(el, &count, resp, len), PSI_OK);
    assert_int_equal(count, 6);
    free(resp);
}

/* ------------------------------------------------ malformed messages */

enum decoder { DEC_REQUEST, DEC_RESPONSE, DEC_SETUP };

/* Runs one decoder with enough capacity, checks the failure contract
 * (nothing returned on error) and the invariants of a success. */
static int run_decoder(enum decoder d, const uint8_t *msg, size_t len)
{
    size_t cap = psi_message_element_bound(len), count = cap;
    uint8_t *el = malloc(cap * EB + 1);
    psi_setup *s = (psi_setup *)&s;
    int reveal = -1, rc;
    assert_non_null(el);
    if (d == DEC_SETUP) {
        rc = psi_setup_parse(&s, msg, len);
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
        rc = d == DEC_REQUEST ? psi_request_decode(el, &count, &reveal, msg, len)
                              : psi_response_decode(el, &count, msg, len);
        assert_true(rc == PSI_OK ? count <= cap : count == 0);
        if (d == DEC_REQUEST)
            assert_true(reveal == 0 || (reveal == 1 && rc == PSI_OK));
    }
    free(el);
    return rc;
}

typedef struct malformed_case {
    const char *name;
    enum decoder decoder;
    const char *hex;
    int expect;
} malformed_case;

static const malformed_case malformed[] = {
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

static void test_codec_malformed_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        const malformed_case *c = &malformed[i];
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
static void test_codec_unknown_fields_skipped(void **state)
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
    assert_int_equal(psi_request_decode(el, &count, &reveal, msg, len), PSI_OK);
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
static void test_codec_scalar_rules(void **state)
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
        assert_int_equal(psi_request_decode(NULL, &count, &reveal, msg, len), PSI_OK);
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

/* ----------------------------------------------------------- misuse */

/* Each call starts from a nonzero capacity, so clearing it is visible. */
#define ASSERT_MISUSE(call)                                                   \
    do { len = sizeof out; count = 1; assert_int_equal((call), PSI_E_INVALID_ARG); } while (0)

static void test_codec_null_args_encoders(void **state)
{
    uint8_t el[EB] = {2}, out[64];
    size_t len, count;
    psi_setup_params prm = {PSI_STRUCTURE_RAW, 0.01, 1};
    (void)state;
    ASSERT_MISUSE(psi_request_encode(out, NULL, 0, el, 1));
    ASSERT_MISUSE(psi_request_encode(NULL, &len, 0, el, 1));
    assert_int_equal(len, 0);
    ASSERT_MISUSE(psi_request_encode(out, &len, 0, NULL, 1));
    ASSERT_MISUSE(psi_request_encode(out, &len, 2, el, 1));
    ASSERT_MISUSE(psi_request_encode(out, &len, 0, el, SIZE_MAX / EB + 1));
    ASSERT_MISUSE(psi_response_encode(out, NULL, el, 1));
    ASSERT_MISUSE(psi_response_encode(NULL, &len, el, 1));
    ASSERT_MISUSE(psi_response_encode(out, &len, NULL, 1));
    ASSERT_MISUSE(psi_setup_encode(out, NULL, &prm, el, 1));
    ASSERT_MISUSE(psi_setup_encode(NULL, &len, &prm, el, 1));
    ASSERT_MISUSE(psi_setup_encode(out, &len, NULL, el, 1));
    ASSERT_MISUSE(psi_setup_encode(out, &len, &prm, NULL, 1));
    ASSERT_MISUSE(psi_setup_bound(NULL, &prm, 1));
    ASSERT_MISUSE(psi_setup_bound(&len, NULL, 1));
    assert_int_equal(len, 0);
    (void)count;
    len = 0; // NULL with a zero capacity or count is allowed
    assert_int_equal(psi_request_encode(NULL, &len, 0, NULL, 0), PSI_OK);
    assert_int_equal(psi_response_encode(NULL, &len, NULL, 0), PSI_OK);
}

static void test_codec_null_args_decoders(void **state)
{
    uint8_t el[EB], out[1] = {0};
    size_t len, count;
    int reveal;
    psi_setup *s = (psi_setup *)&s;
    (void)state;
    ASSERT_MISUSE(psi_request_decode(NULL, &count, &reveal, out, 0));
    assert_int_equal(count, 0);
    ASSERT_MISUSE(psi_request_decode(el, NULL, &reveal, out, 0));
    ASSERT_MISUSE(psi_request_decode(el, &count, NULL, out, 0));
    ASSERT_MISUSE(psi_request_decode(el, &count, &reveal, NULL, 1));
    ASSERT_MISUSE(psi_response_decode(NULL, &count, out, 0));
    ASSERT_MISUSE(psi_response_decode(el, NULL, out, 0));
    ASSERT_MISUSE(psi_response_decode(el, &count, NULL, 1));
    ASSERT_MISUSE(psi_setup_parse(NULL, out, 0));
    ASSERT_MISUSE(psi_setup_parse(&s, NULL, 1));
    assert_null(s);
    (void)len;
    count = 0;
    assert_int_equal(psi_request_decode(NULL, &count, &reveal, NULL, 0), PSI_OK);
    assert_int_equal(psi_response_decode(NULL, &count, NULL, 0), PSI_OK);
    assert_int_equal(psi_setup_parse(&s, NULL, 0), PSI_E_MSG_ONEOF_MISSING);
    psi_setup_free(NULL);
    assert_int_equal(psi_setup_structure(NULL), PSI_STRUCTURE_RAW);
    assert_int_equal(psi_setup_raw_count(NULL), 0);
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

static void test_codec_damaged_messages(void **state)
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
    int rc = psi_setup_parse(&s, msg, len);
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
    int rc = psi_setup_encode(out, &len, &job->sv->params, job->elements, job->n);
    if (rc == PSI_OK)
        assert_hex_equal(out, len, job->sv->expect);
    return rc;
}

static void test_codec_allocation_failures(void **state)
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
