/* test_suites, the wire facts of §16.1: the suite header, the element
 * length, messages of one suite refused by another, and unknown suite
 * numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "psi.h"
#include "psi_shard.h"
#include "test_shard_common.h"
#include "test_util.h"
#include "suites_common.h"

/* ------------------------------------------------------------ wire */

/* The suite messages of one fixed round: setups, requests, responses. */
typedef struct wire_set {
    msg setup[3], req[2], resp[2];
} wire_set;

static const psi_value wire_values[5] = {
    {(const uint8_t *)"a", 1}, {(const uint8_t *)"b", 1}, {(const uint8_t *)"", 0},
    {(const uint8_t *)"a", 1}, {(const uint8_t *)"long value of several bytes", 28},
};

static void wire_make(wire_set *w, int suite, const uint8_t *ks, const uint8_t *kc)
{
    psi_engine *s = engine(suite, PSI_ROLE_SERVER, 1, ks, PSI_KEY_BYTES);
    for (int st = 0; st < 3; st++)
        w->setup[st] = mk_setup(s, (psi_structure)st, 0.001, 5, wire_values, 5, NULL);
    for (int rv = 0; rv < 2; rv++) {
        psi_engine *sr = engine(suite, PSI_ROLE_SERVER, rv, ks, PSI_KEY_BYTES);
        psi_engine *c = engine(suite, PSI_ROLE_CLIENT, rv, kc, PSI_KEY_BYTES);
        w->req[rv] = mk_request(c, wire_values, 5);
        w->resp[rv] = mk_response(sr, w->req[rv], 5);
        /* The Request's bytes: header, 08 01 with reveal, then each masked
         * element as 12 <len> <element> (§16.1). */
        uint8_t masked[5 * PSI_ELEMENT_BYTES];
        size_t len = sizeof masked, el = psi_suite_element_bytes(suite);
        CHECK_RC(psi_engine_mask(c, masked, &len, wire_values, 5), PSI_OK);
        size_t at = (suite ? 2 : 0) + (rv ? 2 : 0);
        CHECK(!rv || (w->req[rv].p[at - 2] == 0x08 && w->req[rv].p[at - 1] == 0x01));
        for (size_t i = 0; i < 5; i++, at += 2 + el) {
            CHECK(w->req[rv].p[at] == 0x12 && w->req[rv].p[at + 1] == el);
            CHECK(memcmp(w->req[rv].p + at + 2, masked + i * PSI_ELEMENT_BYTES, el) == 0);
            if (suite == R255)
                CHECK(masked[i * PSI_ELEMENT_BYTES + 32] == 0); /* the slot's 33rd byte */
        }
        CHECK_RC(at, w->req[rv].len);
        psi_engine_free(sr);
        psi_engine_free(c);
    }
    psi_engine_free(s);
}

static void wire_free(wire_set *w)
{
    for (int i = 0; i < 3; i++)
        free(w->setup[i].p);
    for (int i = 0; i < 2; i++) {
        free(w->req[i].p);
        free(w->resp[i].p);
    }
}

/* The call failed with PSI_E_SUITE_MISMATCH and its detail names `what`. */
static void expect_mismatch(int rc, const char *what)
{
    psi_error_detail d;
    psi_error_detail_get(&d);
    CHECK_RC(rc, PSI_E_SUITE_MISMATCH);
    CHECK_RC(d.code, PSI_E_SUITE_MISMATCH);
    if (d.field == NULL || strcmp(d.field, what) != 0)
        fail_msg("detail field %s, expected %s", d.field ? d.field : "(null)", what);
    CHECK_RC(d.offset, 0);
}

/* Every message of suite a handed to suite b's decoders and engines. */
static void cross_suite(const wire_set *wa, const wire_set *wb, int b, const uint8_t *key)
{
    uint8_t el[8 * PSI_ELEMENT_BYTES];
    size_t count, out_len, idx[8];
    psi_pair pairs[8];
    int reveal;
    psi_setup *parsed = NULL;
    psi_engine *c = engine(b, PSI_ROLE_CLIENT, 1, key, PSI_KEY_BYTES);
    uint8_t out[8 * 40];
    for (int rv = 0; rv < 2; rv++) {
        const msg *q = &wa->req[rv], *r = &wa->resp[rv];
        count = 8;
        expect_mismatch(psi_request_decode(el, &count, &reveal, b, q->p, q->len), "Request");
        count = 8;
        expect_mismatch(psi_response_decode(el, &count, b, r->p, r->len), "Response");
        /* an engine of suite b: its reveal flag matches the request's */
        psi_engine *sb = engine(b, PSI_ROLE_SERVER, rv, key, PSI_KEY_BYTES);
        out_len = sizeof out;
        expect_mismatch(psi_server_process_request(sb, out, &out_len, q->p, q->len), "Request");
        CHECK_RC(out_len, 0);
        psi_engine_free(sb);
    }
    for (int st = 0; st < 3; st++) {
        const msg *sa = &wa->setup[st], *sb = &wb->setup[st];
        const msg *ra = &wa->resp[1], *rb = &wb->resp[1];
        expect_mismatch(psi_setup_parse(&parsed, b, sa->p, sa->len), "ServerSetup");
        CHECK(parsed == NULL);
        /* foreign setup with an own response, and own setup with a foreign response */
        count = 8;
        expect_mismatch(psi_client_get_intersection(c, idx, &count, sa->p, sa->len, rb->p,
                                                    rb->len), "ServerSetup");
        count = 8;
        expect_mismatch(psi_client_get_intersection(c, idx, &count, sb->p, sb->len, ra->p,
                                                    ra->len), "Response");
        expect_mismatch(psi_client_get_intersection_size(c, &count, sa->p, sa->len, rb->p,
                                                         rb->len), "ServerSetup");
        expect_mismatch(psi_client_get_intersection_size(c, &count, sb->p, sb->len, ra->p,
                                                         ra->len), "Response");
        count = 8;
        expect_mismatch(psi_client_get_association(c, pairs, &count, sa->p, sa->len, rb->p,
                                                   rb->len), "ServerSetup");
        count = 8;
        expect_mismatch(psi_client_get_association(c, pairs, &count, sb->p, sb->len, ra->p,
                                                   ra->len), "Response");
    }
    psi_engine_free(c);
}

void test_suites_wire(void **state)
{
    (void)state;
    uint8_t ks[N_SUITES][PSI_KEY_BYTES], kc[N_SUITES][PSI_KEY_BYTES];
    wire_set w[N_SUITES];
    for (int suite = 0; suite < N_SUITES; suite++) {
        uint64_t rng = 0x77697265u + (uint64_t)suite;
        suite_key(suite, &rng, ks[suite]);
        suite_key(suite, &rng, kc[suite]);
        wire_make(&w[suite], suite, ks[suite], kc[suite]);
        /* Decoding gives the elements back, 33-byte slots. */
        uint8_t el[8 * PSI_ELEMENT_BYTES];
        size_t count = 8;
        int reveal = 0;
        CHECK_RC(psi_request_decode(el, &count, &reveal, suite, w[suite].req[1].p,
                                          w[suite].req[1].len), PSI_OK);
        CHECK(count == 5 && reveal == 1);
        /* An empty Response is the header alone. */
        uint8_t empty[4];
        size_t len = sizeof empty;
        CHECK_RC(psi_message_head(empty, &len, suite, PSI_MESSAGE_RESPONSE, 0, 0), PSI_OK);
        CHECK_RC(len, suite ? 2u : 0u);
        CHECK(len == 0 || (empty[0] == 0x7f && empty[1] == suite));
        CHECK_RC(psi_response_bound(suite, 0), len);
    }
    for (int a = 0; a < N_SUITES; a++)
        for (int b = 0; b < N_SUITES; b++)
            if (a != b)
                cross_suite(&w[a], &w[b], b, ks[b]);
    for (int suite = 0; suite < N_SUITES; suite++)
        wire_free(&w[suite]);
}

/* Unknown suite numbers: PSI_E_SUITE from the codec, PSI_E_INVALID_ARG
 * from the engine's settings; no clone into another suite. */
void test_suites_unknown(void **state)
{
    (void)state;
    static const int bad[] = {-1, 3, 127, 0x7f01};
    uint8_t el[PSI_ELEMENT_BYTES] = {0}, out[64], key[PSI_KEY_BYTES] = {0};
    static const uint8_t msg_bytes[] = {0x7f, 0x03, 0x08, 0x01};
    psi_setup_params p = {PSI_STRUCTURE_RAW, 0.01, 1};
    psi_setup *parsed = NULL;
    key[PSI_KEY_BYTES - 1] = 1;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int s = bad[i];
        size_t len = sizeof out, count = 1, bound = 7;
        int reveal;
        CHECK(psi_suite_name(s) == NULL && psi_suite_element_bytes(s) == 0);
        CHECK(psi_request_bound(s, 1) == 0 && psi_response_bound(s, 1) == 0);
        CHECK_RC(psi_message_element_bound(s, 100), 0);
        CHECK_RC(psi_setup_bound(&bound, s, &p, 1), PSI_E_SUITE);
        CHECK_RC(bound, 0);
        CHECK_RC(psi_message_head(out, &len, s, PSI_MESSAGE_SETUP_RAW, 0, 0), PSI_E_SUITE);
        len = sizeof out;
        CHECK_RC(psi_message_head(out, &len, s, PSI_MESSAGE_REQUEST, 1, 1), PSI_E_SUITE);
        CHECK_RC(len, 0);
        len = sizeof out;
        CHECK_RC(psi_message_records(out, &len, s, PSI_MESSAGE_RESPONSE, el, 1), PSI_E_SUITE);
        CHECK_RC(psi_request_decode(el, &count, &reveal, s, msg_bytes, 4), PSI_E_SUITE);
        count = 1;
        CHECK_RC(psi_response_decode(el, &count, s, msg_bytes, 2), PSI_E_SUITE);
        CHECK_RC(psi_setup_parse(&parsed, s, msg_bytes, 2), PSI_E_SUITE);
        CHECK_RC(psi_point_check(s, el, sizeof el), PSI_E_SUITE);
        psi_settings st = settings_of(0, PSI_ROLE_CLIENT, 1);
        st.suite = (psi_suite)s;
        psi_engine *e = (psi_engine *)&st; /* must be set to NULL */
        CHECK_RC(psi_engine_create(&e, &st), PSI_E_INVALID_ARG);
        CHECK(e == NULL);
        CHECK_RC(psi_engine_create_from_key(&e, &st, key, sizeof key), PSI_E_INVALID_ARG);
        CHECK(e == NULL);
    }
    psi_suite got;
    CHECK_RC(psi_suite_from_name(&got, "ristretto"), PSI_E_SUITE);
    for (int a = 0; a < N_SUITES; a++) {
        CHECK_RC(psi_suite_from_name(&got, psi_suite_name(a)), PSI_OK);
        CHECK_RC(got, a);
        psi_engine *e = engine(a, PSI_ROLE_SERVER, 1, key, sizeof key), *c = NULL;
        for (int b = 0; b < N_SUITES; b++) {
            psi_settings st = settings_of(b, PSI_ROLE_CLIENT, 0);
            CHECK_RC(psi_engine_clone(&c, e, &st), a == b ? PSI_OK : PSI_E_INVALID_ARG);
            CHECK((c != NULL) == (a == b));
            CHECK(c == NULL || (int)psi_engine_suite(c) == b);
            psi_engine_free(c);
        }
        CHECK_RC(psi_engine_clone(&c, e, NULL), PSI_OK);
        CHECK_RC(psi_engine_suite(c), a);
        psi_engine_free(c);
        psi_engine_free(e);
    }
}
