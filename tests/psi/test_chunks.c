/* Messages in chunks (psi/chunks.c, psi/reader.c; PROTOCOL.md §10.1):
 * a Request or Response fed to psi_reader in pieces of every size (1 byte,
 * primes, random, whole; with room for one element at a time or for all)
 * gives what the whole-message decoder gives: the same elements, flag and
 * count, or the same code with the same detail, for random messages, for
 * damaged ones and for every entry of both malformed-input tables
 * (tests/psi/malformed/cases.json and codec_malformed.c's).  The head and
 * records written in pieces are the whole encoders' bytes.  Unknown fields
 * of every wire type are skipped, a long one across many chunks, without
 * the reader allocating.  Internal: it links codec_malformed.c's table and
 * counts allocations through the library's hook. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec.h"
#include "common.h"
#include "reader.h"
#include "codec_common.h"
#include "test_util.h"

#define CASES_PATH PSI_SOURCE_ROOT "/tests/psi/malformed/cases.json"

static const int suites[] = {PSI_SUITE_OPENMINED_P256, PSI_SUITE_P256_SSWU,
                             PSI_SUITE_RISTRETTO255};
#define N_SUITES (sizeof suites / sizeof suites[0])

static uint64_t iters(uint64_t dflt)
{
    return env_u64("PSI_TEST_ITERS", dflt);
}

/* ------------------------------------------------------------ cutting */

/* How a message is cut: every piece 1 byte, every piece one prime size,
 * random pieces (empty ones too), or whole.  `room`: elements of room
 * given to each feed (0: all that is left). */
typedef enum cut_mode { CUT_ONE, CUT_PRIME, CUT_RANDOM, CUT_WHOLE, CUT_MODES } cut_mode;

typedef struct cutter {
    cut_mode mode;
    size_t prime;
    size_t room;
} cutter;

static const size_t primes[] = {2, 3, 5, 7, 11, 13, 31, 37, 97, 4099};

static cutter random_cutter(void)
{
    cutter c = {(cut_mode)(rng_next() % CUT_MODES), primes[rng_next() % 10], 0};
    if (rng_next() % 3 == 0)
        c.room = 1;
    return c;
}

static size_t next_piece(const cutter *c, size_t left)
{
    size_t n;
    switch (c->mode) {
    case CUT_ONE:
        n = 1;
        break;
    case CUT_PRIME:
        n = c->prime;
        break;
    case CUT_RANDOM:
        n = rng_next() % 8 == 0 ? 0 : (size_t)(1 + rng_next() % 80);
        break;
    default:
        n = left;
        break;
    }
    return n < left ? n : left;
}

static const char *cut_name(const cutter *c)
{
    static const char *const names[] = {"1-byte", "prime", "random", "whole"};
    return names[c->mode];
}

/* ------------------------------------------------------- decoding */

/* What a decoding gave: the code and this thread's detail right after
 * the failing call, or the elements, the flag and the count. */
typedef struct outcome {
    int rc;
    psi_error_detail d;
    uint8_t *elements;
    size_t count;
    uint64_t total;
    int reveal;
} outcome;

static size_t capacity(int suite, size_t len)
{
    return psi_message_element_bound(suite, len) + 1;
}

static void decode_whole(outcome *o, int suite, psi_message_kind kind, const uint8_t *msg,
                         size_t len)
{
    size_t cap = capacity(suite, len);
    memset(o, 0, sizeof *o);
    o->elements = calloc(cap, EB);
    assert_non_null(o->elements);
    o->count = cap;
    o->reveal = -1;
    o->rc = kind == PSI_MESSAGE_REQUEST
                ? psi_request_decode(o->elements, &o->count, &o->reveal, suite, msg, len)
                : psi_response_decode(o->elements, &o->count, suite, msg, len);
    psi_error_detail_get(&o->d);
    if (kind == PSI_MESSAGE_RESPONSE)
        o->reveal = 0;
    if (o->rc != PSI_OK) {
        assert_int_equal(o->count, 0);
        assert_int_equal(o->reveal, 0);
    }
    o->total = o->count;
}

static int same_detail(const psi_error_detail *a, const psi_error_detail *b)
{
    int fields = a->field == b->field ||
                 (a->field != NULL && b->field != NULL && strcmp(a->field, b->field) == 0);
    return a->code == b->code && fields && a->index == b->index && a->offset == b->offset;
}

/* After an error every call gives it again, with its detail. */
static void check_sticky(psi_reader *r, const outcome *o)
{
    uint8_t el[EB];
    size_t count = 1, used = 7;
    int reveal = 5;
    uint64_t total = 5;
    psi_error_detail d;
    static const uint8_t more[3] = {0x0a, 0x21, 0x02};
    psi_error_detail_set(NULL);
    assert_int_equal(psi_reader_feed(r, el, &count, &used, more, sizeof more), o->rc);
    assert_true(count == 0 && used == 0);
    psi_error_detail_get(&d);
    assert_true(same_detail(&d, &o->d));
    psi_error_detail_set(NULL);
    assert_int_equal(psi_reader_end(r, &reveal, &total), o->rc);
    assert_true(reveal == 0 && total == 0);
    psi_error_detail_get(&d);
    assert_true(same_detail(&d, &o->d));
}

/* Feeds msg in pieces cut by c, each piece in a buffer of its own size
 * (ASan sees a read past it), calling again with the rest of a piece
 * while the reader stops for room. */
static void decode_chunked(outcome *o, int suite, psi_message_kind kind, const uint8_t *msg,
                           size_t len, const cutter *c)
{
    size_t cap = capacity(suite, len), off = 0;
    psi_reader *r = NULL;
    int rc = PSI_OK;
    memset(o, 0, sizeof *o);
    o->elements = calloc(cap, EB);
    assert_non_null(o->elements);
    assert_int_equal(psi_reader_create(&r, suite, kind), PSI_OK);
    while (rc == PSI_OK && (off < len || (len == 0 && off == 0 && c->mode == CUT_RANDOM &&
                                          rng_next() % 2 == 0))) {
        size_t piece = next_piece(c, len - off), done = 0;
        uint8_t *copy = malloc(piece == 0 ? 1 : piece);
        assert_non_null(copy);
        memcpy(copy, msg + off, piece);
        do {
            size_t left = cap - o->count, room = c->room != 0 && c->room < left ? c->room : left;
            size_t count = room, used = 99;
            rc = psi_reader_feed(r, o->elements + o->count * EB, &count, &used, copy + done,
                                 piece - done);
            if (rc != PSI_OK) {
                psi_error_detail_get(&o->d);
                assert_true(count == 0 && used == 0);
                break;
            }
            assert_true(count <= room && used <= piece - done);
            // It stops early only when it has no room for an element.
            if (used < piece - done)
                assert_int_equal(count, room);
            assert_true(used != 0 || count != 0 || piece == done);
            o->count += count;
            done += used;
        } while (done < piece);
        free(copy);
        off += piece;
    }
    if (rc == PSI_OK) {
        rc = psi_reader_end(r, &o->reveal, &o->total);
        psi_error_detail_get(&o->d);
    }
    o->rc = rc;
    if (rc != PSI_OK) {
        assert_true(o->reveal == 0 && o->total == 0);
        check_sticky(r, o);
    } else {
        // end may be called again, with the same answer; feeding may not.
        int reveal;
        uint64_t total;
        size_t count = 0, used;
        assert_int_equal(psi_reader_end(r, &reveal, &total), PSI_OK);
        assert_true(reveal == o->reveal && total == o->total);
        assert_int_equal(psi_reader_feed(r, NULL, &count, &used, NULL, 0), PSI_E_INVALID_ARG);
    }
    psi_reader_free(r);
}

static void outcome_free(outcome *o)
{
    free(o->elements);
    o->elements = NULL;
}

static void fail_outcome(const char *what, const cutter *c, const outcome *w,
                         const outcome *k)
{
    fail_msg("%s, cut %s (prime %zu, room %zu): whole %s (%s, %lld, %lld), count %zu, reveal "
             "%d; chunks %s (%s, %lld, %lld), count %zu, total %llu, reveal %d%s",
             what, cut_name(c), c->prime, c->room, psi_error_name(w->rc),
             w->d.field ? w->d.field : "-", (long long)w->d.index, (long long)w->d.offset,
             w->count, w->reveal, psi_error_name(k->rc), k->d.field ? k->d.field : "-",
             (long long)k->d.index, (long long)k->d.offset, k->count,
             (unsigned long long)k->total, k->reveal,
             w->rc == PSI_OK && k->rc == PSI_OK && w->count == k->count ? "; elements differ"
                                                                         : "");
}

/* Decodes msg whole and in `cuts` random cuttings (and once in each
 * mode), and fails unless every cutting gives the whole decoder's
 * outcome.  Returns the whole outcome's code and detail in *w (elements
 * freed). */
static void check_cuts(outcome *w, const char *what, int suite, psi_message_kind kind,
                       const uint8_t *msg, size_t len, uint64_t cuts)
{
    decode_whole(w, suite, kind, msg, len);
    for (uint64_t i = 0; i < cuts + 2 * CUT_MODES; i++) {
        cutter c = random_cutter();
        outcome k;
        if (i < 2 * CUT_MODES) { // each mode, with room for one and for all
            c.mode = (cut_mode)(i / 2);
            c.room = i % 2;
        }
        decode_chunked(&k, suite, kind, msg, len, &c);
        int same = k.rc == w->rc && same_detail(&k.d, &w->d);
        if (same && w->rc == PSI_OK)
            same = k.count == w->count && k.total == w->count && k.reveal == w->reveal &&
                   (w->count == 0 || memcmp(k.elements, w->elements, w->count * EB) == 0);
        if (!same)
            fail_outcome(what, &c, w, &k);
        outcome_free(&k);
    }
    outcome_free(w);
}

/* ----------------------------------------------------- random messages */

/* n random elements of the suite in slots (a ristretto255 slot's 33rd
 * byte is zero, as decoding writes it). */
static uint8_t *random_elements(int suite, size_t n)
{
    uint8_t *el = calloc(n == 0 ? 1 : n, EB);
    assert_non_null(el);
    rng_fill(el, n * EB);
    if (suite == PSI_SUITE_RISTRETTO255)
        for (size_t i = 0; i < n; i++)
            el[i * EB + 32] = 0;
    return el;
}

static size_t random_count(void)
{
    uint64_t r = rng_next() % 16;
    return r == 0 ? 0 : r < 14 ? (size_t)(rng_next() % 40) : (size_t)(rng_next() % 400);
}

/* A whole message from the whole encoder. */
static uint8_t *encode_whole(size_t *len, int suite, psi_message_kind kind, int reveal,
                             const uint8_t *el, size_t n)
{
    size_t cap = psi_request_bound(suite, n) + 64;
    uint8_t *msg = malloc(cap);
    int rc;
    assert_non_null(msg);
    *len = cap;
    if (kind == PSI_MESSAGE_REQUEST) {
        rc = psi_request_encode(msg, len, suite, reveal, el, n);
    } else if (kind == PSI_MESSAGE_RESPONSE) {
        rc = psi_response_encode(msg, len, suite, el, n);
    } else {
        psi_setup_params p = {PSI_STRUCTURE_RAW, 0.01, 1};
        rc = psi_setup_encode(msg, len, suite, &p, el, n);
    }
    assert_int_equal(rc, PSI_OK);
    return msg;
}

/* Random messages of every suite and kind, cut at random: the same
 * elements, flag and count as the whole decoder, and as were encoded. */
static void test_chunks_random_messages(void **state)
{
    (void)state;
    for (size_t s = 0; s < N_SUITES; s++) {
        for (int kind = PSI_MESSAGE_REQUEST; kind <= PSI_MESSAGE_RESPONSE; kind++) {
            for (uint64_t i = 0; i < iters(40); i++) {
                size_t n = random_count(), len;
                int reveal = kind == PSI_MESSAGE_REQUEST ? (int)(rng_next() % 2) : 0;
                uint8_t *el = random_elements(suites[s], n);
                uint8_t *msg = encode_whole(&len, suites[s], (psi_message_kind)kind, reveal, el, n);
                outcome w;
                decode_whole(&w, suites[s], (psi_message_kind)kind, msg, len);
                assert_int_equal(w.rc, PSI_OK);
                assert_int_equal(w.count, n);
                assert_int_equal(w.reveal, reveal);
                if (n != 0)
                    assert_memory_equal(w.elements, el, n * EB);
                outcome_free(&w);
                check_cuts(&w, "random message", suites[s], (psi_message_kind)kind, msg, len, 6);
                free(msg);
                free(el);
            }
        }
    }
}

/* Flips a bit, or writes a random byte or one that steers a parser most. */
static void mutate(uint8_t *m, size_t len)
{
    static const uint8_t steer[] = {0x00, 0x01, 0x7f, 0x80, 0xff, 0x0a, 0x12, 0x1a,
                                    0x08, 0x21, 0x20, 0x22};
    unsigned edits = 1 + (unsigned)(rng_next() % 4);
    for (unsigned i = 0; i < edits && len != 0; i++) {
        size_t at = (size_t)(rng_next() % len);
        uint64_t r = rng_next();
        if (r % 3 == 0)
            m[at] ^= (uint8_t)(1u << (r / 3 % 8));
        else
            m[at] = r % 3 == 1 ? (uint8_t)(r >> 8) : steer[r / 3 % sizeof steer];
    }
}

/* Damaged and cut messages: whatever the whole decoder says (success or
 * which error, where), every cutting says too. */
static void test_chunks_damaged_messages(void **state)
{
    (void)state;
    for (size_t s = 0; s < N_SUITES; s++) {
        for (int kind = PSI_MESSAGE_REQUEST; kind <= PSI_MESSAGE_RESPONSE; kind++) {
            for (uint64_t i = 0; i < iters(150); i++) {
                size_t n = (size_t)(rng_next() % 5), len;
                uint8_t *el = random_elements(suites[s], n);
                uint8_t *msg = encode_whole(&len, suites[s], (psi_message_kind)kind,
                                            (int)(rng_next() % 2) * (kind == 1), el, n);
                mutate(msg, len);
                if (rng_next() % 4 == 0)
                    len = len == 0 ? 0 : (size_t)(rng_next() % len);
                outcome w;
                check_cuts(&w, "damaged message", suites[s], (psi_message_kind)kind, msg, len, 3);
                free(msg);
                free(el);
            }
        }
    }
}

/* -------------------------------------------------- malformed inputs */

static void check_table(const char *name, const outcome *w, int expect, const char *field,
                           int64_t index, int64_t offset)
{
    if (w->rc != expect)
        fail_msg("%s: whole decoder %s, table %s", name, psi_error_name(w->rc),
                 psi_error_name(expect));
    if (field != NULL && (w->d.field == NULL || strcmp(w->d.field, field) != 0 ||
                          w->d.index != index || w->d.offset != offset))
        fail_msg("%s: detail (%s, %lld, %lld), table (%s, %lld, %lld)", name,
                 w->d.field ? w->d.field : "-", (long long)w->d.index,
                 (long long)w->d.offset, field, (long long)index, (long long)offset);
}

/* codec_malformed.c's table: each Request and Response entry, its code
 * whole, and the same code and detail in every cutting. */
static void test_chunks_codec_table(void **state)
{
    size_t checked = 0;
    (void)state;
    for (size_t i = 0; i < codec_malformed_count; i++) {
        const malformed_case *c = &codec_malformed_cases[i];
        if (c->decoder == DEC_SETUP)
            continue;
        size_t len;
        uint8_t *msg = hex_alloc(c->hex, &len);
        psi_message_kind kind =
            c->decoder == DEC_REQUEST ? PSI_MESSAGE_REQUEST : PSI_MESSAGE_RESPONSE;
        outcome w;
        decode_whole(&w, PSI_SUITE_OPENMINED_P256, kind, msg, len);
        check_table(c->name, &w, c->expect, NULL, -1, -1);
        outcome_free(&w);
        check_cuts(&w, c->name, PSI_SUITE_OPENMINED_P256, kind, msg, len, iters(20));
        free(msg);
        checked++;
    }
    assert_true(checked >= 30);
}

static int64_t int_or_minus_one(const cJSON *c, const char *name)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, name);
    return cJSON_IsNumber(f) ? (int64_t)f->valuedouble : -1;
}

static int code_named(const char *name)
{
    for (int code = 0; code > -64; code--)
        if (psi_error_name(code) != NULL && strcmp(psi_error_name(code), name) == 0)
            return code;
    fail_msg("unknown error name %s", name);
    return 1;
}

/* tests/psi/malformed/cases.json: every case whose message is a Request
 * (request_decode, server_process_request) or a Response (response_decode,
 * the client calls), in its suite.  The decoders' own cases must give the
 * table's code and detail whole; every case gives the whole decoder's
 * code and detail in every cutting. */
static void test_chunks_cases_json(void **state)
{
    cJSON *doc = tu_load_json(CASES_PATH);
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(doc, "cases"), *c;
    size_t checked = 0;
    (void)state;
    cJSON_ArrayForEach(c, cases)
    {
        const char *name = cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring;
        const char *op = cJSON_GetObjectItemCaseSensitive(c, "op")->valuestring;
        const cJSON *hex = cJSON_GetObjectItemCaseSensitive(c, "msg");
        const cJSON *suite_name = cJSON_GetObjectItemCaseSensitive(c, "suite");
        psi_suite suite = PSI_SUITE_OPENMINED_P256;
        psi_message_kind kind;
        if (strcmp(op, "request_decode") == 0 || strcmp(op, "server_process_request") == 0)
            kind = PSI_MESSAGE_REQUEST;
        else if (strcmp(op, "response_decode") == 0 || strncmp(op, "client_", 7) == 0)
            kind = PSI_MESSAGE_RESPONSE;
        else
            continue;
        if (!cJSON_IsString(hex))
            continue;
        if (cJSON_IsString(suite_name))
            assert_int_equal(psi_suite_from_name(&suite, suite_name->valuestring), PSI_OK);
        size_t len;
        uint8_t *msg = tu_unhex(hex->valuestring, &len);
        outcome w;
        if (strcmp(op, "request_decode") == 0 || strcmp(op, "response_decode") == 0) {
            const cJSON *field = cJSON_GetObjectItemCaseSensitive(c, "field");
            decode_whole(&w, suite, kind, msg, len);
            check_table(name, &w,
                           code_named(cJSON_GetObjectItemCaseSensitive(c, "error")->valuestring),
                           cJSON_IsString(field) ? field->valuestring : NULL,
                           int_or_minus_one(c, "index"), int_or_minus_one(c, "offset"));
            outcome_free(&w);
        }
        check_cuts(&w, name, suite, kind, msg, len, iters(20));
        free(msg);
        checked++;
    }
    assert_true(checked >= 25);
    cJSON_Delete(doc);
}

/* A few hand-made cuts at the places that matter: the suite header cut
 * or wrong, a tag cut, a length cut, an element cut, an element of a
 * wrong length cut, each with the whole decoder's code and detail. */
static void test_chunks_edges(void **state)
{
    static const struct {
        int suite;
        psi_message_kind kind;
        const char *hex;
        int expect;
        const char *field;
        int64_t index, offset;
    } edges[] = {
        {PSI_SUITE_P256_SSWU, PSI_MESSAGE_REQUEST, "", PSI_E_SUITE_MISMATCH, "Request", -1, 0},
        {PSI_SUITE_P256_SSWU, PSI_MESSAGE_REQUEST, "7f", PSI_E_SUITE_MISMATCH, "Request", -1, 0},
        {PSI_SUITE_P256_SSWU, PSI_MESSAGE_REQUEST, "7f02", PSI_E_SUITE_MISMATCH, "Request", -1,
         0},
        {PSI_SUITE_RISTRETTO255, PSI_MESSAGE_RESPONSE, "7f02", PSI_OK, NULL, -1, -1},
        {PSI_SUITE_RISTRETTO255, PSI_MESSAGE_RESPONSE, "0a20", PSI_E_SUITE_MISMATCH, "Response",
         -1, 0},
        {PSI_SUITE_OPENMINED_P256, PSI_MESSAGE_RESPONSE, "", PSI_OK, NULL, -1, -1},
        {PSI_SUITE_OPENMINED_P256, PSI_MESSAGE_RESPONSE, "7f00", PSI_E_SUITE_MISMATCH,
         "Response", -1, 0},
        {PSI_SUITE_OPENMINED_P256, PSI_MESSAGE_REQUEST, "0801 80", PSI_E_MSG_TRUNCATED, "Request",
         -1, 2},
        {PSI_SUITE_OPENMINED_P256, PSI_MESSAGE_REQUEST, "0801 12", PSI_E_MSG_TRUNCATED,
         "Request.encrypted_elements", 0, 2},
        {PSI_SUITE_OPENMINED_P256, PSI_MESSAGE_REQUEST, "1221" EL_A "1221 02",
         PSI_E_MSG_TRUNCATED, "Request.encrypted_elements", 1, 35},
        // A wrong length is truncated while cut, and wrong only once whole.
        {PSI_SUITE_OPENMINED_P256, PSI_MESSAGE_REQUEST, "1222" EL_A, PSI_E_MSG_TRUNCATED,
         "Request.encrypted_elements", 0, 0},
        {PSI_SUITE_OPENMINED_P256, PSI_MESSAGE_REQUEST, "1222" EL_A "00", PSI_E_MSG_ELEMENT_SIZE,
         "Request.encrypted_elements", 0, 0},
        {PSI_SUITE_OPENMINED_P256, PSI_MESSAGE_REQUEST, "08 8080", PSI_E_MSG_TRUNCATED,
         "Request.reveal_intersection", -1, 0},
        {PSI_SUITE_OPENMINED_P256, PSI_MESSAGE_REQUEST, "0a05 0102", PSI_E_MSG_TRUNCATED,
         "Request.reveal_intersection", -1, 0},
        {PSI_SUITE_OPENMINED_P256, PSI_MESSAGE_REQUEST, "0a02 0102", PSI_E_MSG_TAG,
         "Request.reveal_intersection", -1, 0},
        {PSI_SUITE_RISTRETTO255, PSI_MESSAGE_RESPONSE, "7f02 0a20" X32 "0a21" EL_A,
         PSI_E_MSG_ELEMENT_SIZE, "Response.encrypted_elements", 1, 36},
        {PSI_SUITE_OPENMINED_P256, PSI_MESSAGE_RESPONSE, "0a21" EL_A "19 01020304",
         PSI_E_MSG_TRUNCATED, "Response", -1, 35},
        {PSI_SUITE_OPENMINED_P256, PSI_MESSAGE_RESPONSE, "0a21" EL_A "09 01020304",
         PSI_E_MSG_TRUNCATED, "Response.encrypted_elements", 1, 35},
    };
    (void)state;
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        size_t len;
        uint8_t *msg = hex_alloc(edges[i].hex, &len);
        char name[32];
        outcome w;
        snprintf(name, sizeof name, "edge %zu", i);
        decode_whole(&w, edges[i].suite, edges[i].kind, msg, len);
        check_table(name, &w, edges[i].expect, edges[i].field, edges[i].index,
                       edges[i].offset);
        outcome_free(&w);
        check_cuts(&w, name, edges[i].suite, edges[i].kind, msg, len, iters(20));
        free(msg);
    }
}

/* --------------------------------------------------------- encoding */

/* head + records in pieces of random sizes (empty ones too). */
static uint8_t *encode_pieces(size_t *len, int suite, psi_message_kind kind, int reveal,
                              const uint8_t *el, size_t n)
{
    size_t elen = psi_suite_element_bytes(suite), cap = PSI_MESSAGE_HEAD_MAX + n * (2 + elen);
    uint8_t *msg = malloc(cap), *p = msg;
    size_t part = PSI_MESSAGE_HEAD_MAX, done = 0;
    assert_non_null(msg);
    assert_int_equal(psi_message_head(p, &part, suite, kind, reveal, n), PSI_OK);
    assert_true(part <= PSI_MESSAGE_HEAD_MAX);
    p += part;
    while (done < n || rng_next() % 4 == 0) {
        size_t k = (size_t)(rng_next() % 8 == 0 ? 0 : 1 + rng_next() % 300);
        if (k > n - done)
            k = n - done;
        part = k * (2 + elen); // exactly the documented capacity
        assert_int_equal(psi_message_records(p, &part, suite, kind, el + done * EB, k), PSI_OK);
        assert_int_equal(part, k * (2 + elen));
        p += part;
        done += k;
    }
    *len = (size_t)(p - msg);
    return msg;
}

static int cmp_slot(const void *a, const void *b)
{
    return memcmp(a, b, EB);
}

/* head + records equal the whole encoders for n = 0, 1, 2, 1000 and
 * random n, in random pieces, for every suite and kind; and decode back. */
static void test_chunks_encoders(void **state)
{
    static const size_t counts[] = {0, 1, 2, 1000};
    (void)state;
    for (size_t s = 0; s < N_SUITES; s++) {
        for (int kind = PSI_MESSAGE_REQUEST; kind <= PSI_MESSAGE_SETUP_RAW; kind++) {
            for (uint64_t i = 0; i < 4 + iters(10); i++) {
                size_t n = i < 4 ? counts[i] : random_count(), whole_len, pieces_len;
                int reveal = kind == PSI_MESSAGE_REQUEST ? (int)(i % 2) : 0;
                uint8_t *el = random_elements(suites[s], n);
                if (kind == PSI_MESSAGE_SETUP_RAW)
                    qsort(el, n, EB, cmp_slot);
                uint8_t *whole = encode_whole(&whole_len, suites[s], (psi_message_kind)kind,
                                              reveal, el, n);
                uint8_t *pieces = encode_pieces(&pieces_len, suites[s], (psi_message_kind)kind,
                                                reveal, el, n);
                assert_int_equal(pieces_len, whole_len);
                assert_memory_equal(pieces, whole, whole_len);
                if (kind != PSI_MESSAGE_SETUP_RAW) {
                    outcome w;
                    decode_whole(&w, suites[s], (psi_message_kind)kind, pieces, pieces_len);
                    assert_int_equal(w.rc, PSI_OK);
                    assert_int_equal(w.count, n);
                    if (n != 0)
                        assert_memory_equal(w.elements, el, n * EB);
                    outcome_free(&w);
                } else {
                    psi_setup *st = NULL;
                    assert_int_equal(psi_setup_parse(&st, suites[s], pieces, pieces_len),
                                     PSI_OK);
                    assert_int_equal(psi_setup_raw_count(st), n);
                    psi_setup_free(st);
                }
                free(whole);
                free(pieces);
                free(el);
            }
        }
    }
}

static void assert_untouched(const uint8_t *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        assert_int_equal(buf[i], 0xAA);
}

/* The heads' bytes, and the encoders' errors. */
static void test_chunks_encoder_errors(void **state)
{
    uint8_t out[64], el[2 * EB];
    size_t len;
    (void)state;
    memset(el, 0x22, sizeof el);
    len = sizeof out;
    assert_int_equal(psi_message_head(out, &len, PSI_SUITE_OPENMINED_P256, PSI_MESSAGE_REQUEST,
                                      1, 99), PSI_OK);
    assert_hex_equal(out, len, "0801");
    len = sizeof out;
    assert_int_equal(psi_message_head(out, &len, PSI_SUITE_OPENMINED_P256, PSI_MESSAGE_REQUEST,
                                      0, 0), PSI_OK);
    assert_int_equal(len, 0);
    len = 0;
    assert_int_equal(psi_message_head(NULL, &len, PSI_SUITE_OPENMINED_P256,
                                      PSI_MESSAGE_RESPONSE, 0, 5), PSI_OK);
    len = sizeof out;
    assert_int_equal(psi_message_head(out, &len, PSI_SUITE_RISTRETTO255, PSI_MESSAGE_RESPONSE,
                                      0, 5), PSI_OK);
    assert_hex_equal(out, len, "7f02");
    len = sizeof out; // §16.1: an empty raw setup is 7f 02 0a 00
    assert_int_equal(psi_message_head(out, &len, PSI_SUITE_RISTRETTO255, PSI_MESSAGE_SETUP_RAW,
                                      0, 0), PSI_OK);
    assert_hex_equal(out, len, "7f020a00");
    len = sizeof out; // 1000 records of 35 bytes: length 35000 = b8 91 02
    assert_int_equal(psi_message_head(out, &len, PSI_SUITE_P256_SSWU, PSI_MESSAGE_SETUP_RAW, 0,
                                      1000), PSI_OK);
    assert_hex_equal(out, len, "7f010ab89102");
    len = sizeof out;
    assert_int_equal(psi_message_records(out, &len, PSI_SUITE_OPENMINED_P256,
                                         PSI_MESSAGE_REQUEST, el, 1), PSI_OK);
    assert_int_equal(len, 35);
    assert_true(out[0] == 0x12 && out[1] == 0x21);
    len = sizeof out;
    assert_int_equal(psi_message_records(out, &len, PSI_SUITE_RISTRETTO255,
                                         PSI_MESSAGE_RESPONSE, el, 1), PSI_OK);
    assert_int_equal(len, 34);
    assert_true(out[0] == 0x0a && out[1] == 0x20);

    memset(out, 0xAA, sizeof out);
    len = 1; // one byte short
    assert_int_equal(psi_message_head(out, &len, PSI_SUITE_OPENMINED_P256, PSI_MESSAGE_REQUEST,
                                      1, 0), PSI_E_BUFFER_TOO_SMALL);
    assert_int_equal(len, 0);
    len = 2 * 35 - 1;
    assert_int_equal(psi_message_records(out, &len, PSI_SUITE_OPENMINED_P256,
                                         PSI_MESSAGE_RESPONSE, el, 2), PSI_E_BUFFER_TOO_SMALL);
    assert_int_equal(len, 0);
    assert_untouched(out, sizeof out);

    len = sizeof out;
    assert_int_equal(psi_message_head(out, &len, 9, PSI_MESSAGE_REQUEST, 0, 0), PSI_E_SUITE);
    len = sizeof out;
    assert_int_equal(psi_message_records(out, &len, -1, PSI_MESSAGE_REQUEST, el, 1),
                     PSI_E_SUITE);
    len = sizeof out;
    assert_int_equal(psi_message_head(out, &len, 0, (psi_message_kind)0, 0, 0),
                     PSI_E_INVALID_ARG);
    len = sizeof out;
    assert_int_equal(psi_message_head(out, &len, 0, (psi_message_kind)4, 0, 0),
                     PSI_E_INVALID_ARG);
    len = sizeof out;
    assert_int_equal(psi_message_head(out, &len, 0, PSI_MESSAGE_REQUEST, 2, 0),
                     PSI_E_INVALID_ARG);
    assert_int_equal(len, 0);
    assert_int_equal(psi_message_head(out, NULL, 0, PSI_MESSAGE_REQUEST, 0, 0),
                     PSI_E_INVALID_ARG);
    len = sizeof out;
    assert_int_equal(psi_message_head(NULL, &len, 0, PSI_MESSAGE_REQUEST, 0, 0),
                     PSI_E_INVALID_ARG);
    len = sizeof out;
    assert_int_equal(psi_message_records(out, &len, 0, (psi_message_kind)7, el, 1),
                     PSI_E_INVALID_ARG);
    len = sizeof out;
    assert_int_equal(psi_message_records(out, &len, 0, PSI_MESSAGE_REQUEST, NULL, 1),
                     PSI_E_INVALID_ARG);
    len = sizeof out;
    assert_int_equal(psi_message_records(out, &len, 0, PSI_MESSAGE_REQUEST, el,
                                         SIZE_MAX / EB + 1), PSI_E_INVALID_ARG);
    len = 0;
    assert_int_equal(psi_message_records(NULL, &len, 0, PSI_MESSAGE_REQUEST, NULL, 0), PSI_OK);

    // Sizes past size_t: checked before any element is read.
    len = sizeof out;
    assert_int_equal(psi_message_head(out, &len, 0, PSI_MESSAGE_SETUP_RAW, 0, UINT64_MAX),
                     PSI_E_MSG_TOO_LARGE);
    len = sizeof out;
    assert_int_equal(psi_message_head(out, &len, 0, PSI_MESSAGE_SETUP_RAW, 0,
                                      (uint64_t)(SIZE_MAX / 35) + 1), PSI_E_MSG_TOO_LARGE);
    len = sizeof out;
    assert_int_equal(psi_message_records(out, &len, 1, PSI_MESSAGE_RESPONSE, el,
                                         SIZE_MAX / EB), PSI_E_MSG_TOO_LARGE);
    assert_int_equal(len, 0);
    assert_untouched(out, sizeof out);
}

/* ---------------------------------------------- room, unknown fields */

/* A Request of 200 elements with unknown fields and flags between them,
 * fed whole and in pieces with room for one element (and for none, which
 * stops at the first element): everything is decoded. */
static void test_chunks_room_for_one(void **state)
{
    const size_t n = 200;
    uint8_t *el = random_elements(PSI_SUITE_OPENMINED_P256, n);
    uint8_t *msg = malloc(n * 60 + 16), *got = calloc(n, EB);
    size_t len = 0;
    (void)state;
    assert_true(msg != NULL && got != NULL);
    for (size_t i = 0; i < n; i++) {
        size_t part = 35;
        if (i % 3 == 0) { // an unknown varint and a flag
            memcpy(msg + len, "\x18\x96\x01\x08\x01", 5);
            len += 5;
        }
        assert_int_equal(psi_message_records(msg + len, &part, 0, PSI_MESSAGE_REQUEST,
                                             el + i * EB, 1), PSI_OK);
        len += part;
    }
    for (size_t piece = 1; piece <= len; piece = piece < 64 ? piece * 2 + 1 : len) {
        psi_reader *r;
        size_t got_n = 0, off = 0, calls = 0;
        int reveal;
        uint64_t total;
        assert_int_equal(psi_reader_create(&r, 0, PSI_MESSAGE_REQUEST), PSI_OK);
        // No room at all: unknown fields are read, the first element stops it.
        size_t count = 0, used;
        assert_int_equal(psi_reader_feed(r, NULL, &count, &used, msg, len), PSI_OK);
        assert_true(count == 0 && used > 0 && used < 5 + 35);
        off = used;
        while (off < len) {
            size_t k = piece < len - off ? piece : len - off, done = 0;
            while (done < k) {
                count = 1;
                assert_int_equal(psi_reader_feed(r, got + got_n * EB, &count, &used,
                                                 msg + off + done, k - done), PSI_OK);
                assert_true(count <= 1 && (used != 0 || count != 0));
                got_n += count;
                done += used;
                calls++;
            }
            off += k;
        }
        assert_int_equal(psi_reader_end(r, &reveal, &total), PSI_OK);
        assert_int_equal(total, n);
        assert_int_equal(got_n, n);
        assert_int_equal(reveal, 1);
        assert_memory_equal(got, el, n * EB);
        assert_true(calls >= n);
        psi_reader_free(r);
        memset(got, 0, n * EB);
        if (piece == len)
            break;
    }
    free(got);
    free(msg);
    free(el);
}

/* Unknown fields of every wire type, one of 300 000 bytes fed across many
 * chunks and one claiming 2^62 bytes: skipped, with nothing allocated
 * while feeding; the reader is the same few bytes whatever it skips. */
static void test_chunks_unknown_fields(void **state)
{
    const size_t big = 300000;
    static const char prefix[] = "7f01 1801 20" VARINT_MINUS_1 "29 0102030405060708"
                                 "35 01020304 f8ffffff0f 00 1a00";
    size_t plen, len = 0;
    uint8_t *pre = hex_alloc(prefix, &plen), *el = random_elements(PSI_SUITE_P256_SSWU, 2);
    uint8_t *msg = malloc(plen + big + 200), got[2 * EB];
    psi_reader *r;
    (void)state;
    assert_non_null(msg);
    _Static_assert(sizeof(struct psi_reader) < 256, "a reader holds one element, not a field");
    memcpy(msg, pre, plen);
    len = plen;
    size_t part = 35;
    assert_int_equal(psi_message_records(msg + len, &part, 1, PSI_MESSAGE_REQUEST, el, 1),
                     PSI_OK);
    len += part;
    msg[len++] = 0x3a; // field 7, length-delimited, 300000 bytes
    msg[len++] = (uint8_t)(0x80 | (big & 0x7f));
    msg[len++] = (uint8_t)(0x80 | ((big >> 7) & 0x7f));
    msg[len++] = (uint8_t)(big >> 14);
    memset(msg + len, 0x12, big); // looks like element tags, and is skipped
    len += big;
    memcpy(msg + len, "\x08\x01", 2);
    len += 2;
    part = 35;
    assert_int_equal(psi_message_records(msg + len, &part, 1, PSI_MESSAGE_REQUEST, el + EB, 1),
                     PSI_OK);
    len += part;

    for (size_t piece = 1; piece <= 4099; piece = piece * 4 + 3) {
        size_t got_n = 0, off = 0;
        int reveal;
        uint64_t total;
        assert_int_equal(psi_reader_create(&r, PSI_SUITE_P256_SSWU, PSI_MESSAGE_REQUEST),
                         PSI_OK);
        psi_alloc_fail_after(0);
        while (off < len) {
            size_t k = piece < len - off ? piece : len - off, count = 2 - got_n, used;
            assert_int_equal(psi_reader_feed(r, got + got_n * EB, &count, &used, msg + off, k),
                             PSI_OK);
            assert_int_equal(used, k);
            got_n += count;
            off += k;
        }
        assert_int_equal(psi_reader_end(r, &reveal, &total), PSI_OK);
        assert_int_equal(psi_alloc_fail_after(0), 0); // nothing allocated while feeding
        assert_true(total == 2 && got_n == 2 && reveal == 1);
        assert_memory_equal(got, el, 2 * EB);
        psi_reader_free(r);
    }
    outcome w;
    check_cuts(&w, "long unknown field", PSI_SUITE_P256_SSWU, PSI_MESSAGE_REQUEST, msg, len, 2);

    // A field claiming 2^62 bytes in a 14-byte message: counted, not held.
    size_t hlen;
    uint8_t *claim = hex_alloc("3a 8080808080808080 40 0102 0304", &hlen);
    assert_int_equal(psi_reader_create(&r, 0, PSI_MESSAGE_RESPONSE), PSI_OK);
    size_t count = 0, used;
    int reveal;
    uint64_t total;
    psi_alloc_fail_after(0);
    assert_int_equal(psi_reader_feed(r, NULL, &count, &used, claim, hlen), PSI_OK);
    assert_int_equal(used, hlen);
    assert_int_equal(psi_alloc_fail_after(0), 0);
    assert_int_equal(psi_reader_end(r, &reveal, &total), PSI_E_MSG_TRUNCATED);
    psi_error_detail d;
    psi_error_detail_get(&d);
    assert_true(d.code == PSI_E_MSG_TRUNCATED && strcmp(d.field, "Response") == 0 &&
                d.index == -1 && d.offset == 0);
    psi_reader_free(r);
    free(claim);
    free(msg);
    free(pre);
    free(el);
}

/* ------------------------------------------------------ the contract */

static void test_chunks_contract(void **state)
{
    psi_reader *r = (psi_reader *)&r;
    uint8_t el[2 * EB], one[1] = {0x08};
    size_t count, used;
    int reveal;
    uint64_t total;
    psi_error_detail d;
    (void)state;
    assert_int_equal(psi_reader_create(&r, 0, (psi_message_kind)0), PSI_E_INVALID_ARG);
    assert_null(r);
    r = (psi_reader *)&r;
    assert_int_equal(psi_reader_create(&r, 0, PSI_MESSAGE_SETUP_RAW), PSI_E_INVALID_ARG);
    assert_null(r);
    r = (psi_reader *)&r;
    assert_int_equal(psi_reader_create(&r, 3, PSI_MESSAGE_REQUEST), PSI_E_SUITE);
    assert_null(r);
    assert_int_equal(psi_reader_create(NULL, 0, PSI_MESSAGE_REQUEST), PSI_E_INVALID_ARG);
    psi_alloc_fail_after(1);
    assert_int_equal(psi_reader_create(&r, 0, PSI_MESSAGE_REQUEST), PSI_E_NOMEM);
    assert_null(r);
    psi_alloc_fail_after(0);
    psi_reader_free(NULL);

    assert_int_equal(psi_reader_create(&r, 0, PSI_MESSAGE_REQUEST), PSI_OK);
    count = 1;
    used = 1;
    assert_int_equal(psi_reader_feed(r, NULL, &count, &used, one, 1), PSI_E_INVALID_ARG);
    assert_true(count == 0 && used == 0);
    count = 0;
    assert_int_equal(psi_reader_feed(r, el, &count, NULL, one, 1), PSI_E_INVALID_ARG);
    assert_int_equal(psi_reader_feed(r, el, NULL, &used, one, 1), PSI_E_INVALID_ARG);
    assert_int_equal(psi_reader_feed(NULL, el, &count, &used, one, 1), PSI_E_INVALID_ARG);
    assert_int_equal(psi_reader_feed(r, el, &count, &used, NULL, 1), PSI_E_INVALID_ARG);
    count = SIZE_MAX / EB + 1;
    assert_int_equal(psi_reader_feed(r, el, &count, &used, one, 1), PSI_E_INVALID_ARG);
    assert_int_equal(psi_reader_end(NULL, &reveal, &total), PSI_E_INVALID_ARG);
    assert_int_equal(psi_reader_end(r, NULL, &total), PSI_E_INVALID_ARG);
    assert_int_equal(psi_reader_end(r, &reveal, NULL), PSI_E_INVALID_ARG);
    // The misuse above changed nothing: a flag cut after its tag.
    count = 0;
    assert_int_equal(psi_reader_feed(r, NULL, &count, &used, NULL, 0), PSI_OK);
    assert_int_equal(psi_reader_feed(r, NULL, &count, &used, one, 1), PSI_OK);
    assert_int_equal(used, 1);
    reveal = 7;
    total = 7;
    assert_int_equal(psi_reader_end(r, &reveal, &total), PSI_E_MSG_TRUNCATED);
    assert_true(reveal == 0 && total == 0);
    psi_error_detail_get(&d);
    assert_true(d.code == PSI_E_MSG_TRUNCATED &&
                strcmp(d.field, "Request.reveal_intersection") == 0 && d.index == -1 &&
                d.offset == 0);
    psi_reader_free(r);

    // A failed feed wipes the elements it wrote in that call.
    size_t len;
    uint8_t *msg = hex_alloc("1221" EL_A "1221" EL_B "2b", &len);
    assert_int_equal(psi_reader_create(&r, 0, PSI_MESSAGE_REQUEST), PSI_OK);
    memset(el, 0x55, sizeof el);
    count = 2;
    assert_int_equal(psi_reader_feed(r, el, &count, &used, msg, len), PSI_E_MSG_TAG);
    assert_true(count == 0 && used == 0);
    for (size_t i = 0; i < 2 * EB; i++)
        assert_int_equal(el[i], 0);
    psi_error_detail_get(&d);
    assert_true(strcmp(d.field, "Request") == 0 && d.index == -1 && d.offset == 70);
    psi_reader_free(r);
    free(msg);
}

int main(void)
{
    rng_state = tu_seed("chunks") | 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunks_random_messages),
        cmocka_unit_test(test_chunks_damaged_messages),
        cmocka_unit_test(test_chunks_codec_table),
        cmocka_unit_test(test_chunks_cases_json),
        cmocka_unit_test(test_chunks_edges),
        cmocka_unit_test(test_chunks_encoders),
        cmocka_unit_test(test_chunks_encoder_errors),
        cmocka_unit_test(test_chunks_room_for_one),
        cmocka_unit_test(test_chunks_unknown_fields),
        cmocka_unit_test(test_chunks_contract),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
