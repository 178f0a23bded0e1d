/* Every documented error from a malformed input, table-driven: each case of
 * tests/psi/malformed/cases.json (written by make-cases.py) runs its operation
 * on one engine and on the sharding layer (3 shards on 2 threads, and 2
 * shards inline), and must give its own code, the detail naming the field,
 * the element index and the byte offset, and the message
 * psi_error_message builds from them.  wasm/test/malformed.test.mjs runs
 * the same table through the wasm build. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "psi.h"
#include "psi_shard.h"
#include "test_util.h"

#define CASES_PATH PSI_SOURCE_ROOT "/tests/psi/malformed/cases.json"

/* The generator of P-256, compressed: a valid point for the clean-up call. */
static const char *const generator_hex =
    "036b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296";

/* How a case runs: on one engine, or on shards built from it. */
typedef struct runner {
    const char *name;
    size_t shards, threads; /* 0 shards: the engine itself */
} runner;

static const runner runners[] = {
    {"engine", 0, 0},
    {"3 shards, 2 threads", 3, 2},
    {"2 shards, inline", 2, 1},
};

/* One case's inputs, decoded. */
typedef struct input {
    const cJSON *c;
    const char *op;
    uint8_t *msg, *setup, *bytes; /* bytes: point, points or key */
    size_t msg_len, setup_len, bytes_len;
    int reveal;
    psi_suite suite; /* "suite", default openmined-p256 (PROTOCOL.md §16) */
} input;

static uint8_t *hex_field(const cJSON *c, const char *name, size_t *len)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, name);
    *len = 0;
    return cJSON_IsString(f) ? tu_unhex(f->valuestring, len) : NULL;
}

static double num_field(const cJSON *c, const char *name)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, name);
    assert_true(cJSON_IsNumber(f));
    return f->valuedouble;
}

/* The P-256 suites share the document's keys; ristretto255 has its own
 * ("ristretto255_server_key", little-endian). */
static psi_engine *engine_from(const cJSON *doc, const char *key_name, psi_role role,
                               int reveal, psi_suite suite)
{
    char name[64];
    snprintf(name, sizeof name, "%s%s", suite == PSI_SUITE_RISTRETTO255 ? "ristretto255_" : "",
             key_name);
    size_t len;
    uint8_t *key = hex_field(doc, name, &len);
    psi_settings s;
    psi_engine *e = NULL;
    psi_settings_default(&s);
    s.role = role;
    s.reveal_intersection = reveal;
    s.suite = suite;
    assert_int_equal(psi_engine_create_from_key(&e, &s, key, len), PSI_OK);
    free(key);
    return e;
}

static psi_shards *shards_from(const psi_engine *e, const runner *r)
{
    psi_shard_settings s;
    psi_shards *g = NULL;
    psi_shard_settings_default(&s);
    s.shards = r->shards;
    s.threads = r->threads;
    assert_int_equal(psi_shards_create(&g, e, &s), PSI_OK);
    return g;
}

/* Runs a server call on the engine or its shards; *out_len must be 0
 * afterwards when it failed. */
static int run_server(const psi_engine *e, const runner *r, const input *in)
{
    size_t cap = psi_response_bound(
                     in->suite, psi_message_element_bound(in->suite, in->msg_len)) + 1;
    uint8_t *out = malloc(cap);
    size_t len = cap;
    int rc;
    assert_non_null(out);
    if (r->shards == 0) {
        rc = psi_server_process_request(e, out, &len, in->msg, in->msg_len);
    } else {
        psi_shards *g = shards_from(e, r);
        rc = psi_shards_server_process_request(g, out, &len, in->msg, in->msg_len);
        psi_error_detail d;
        psi_error_detail_get(&d);
        psi_shards_free(g); /* must not disturb this thread's detail */
        psi_error_detail d2;
        psi_error_detail_get(&d2);
        assert_true(d.code == d2.code && d.field == d2.field && d.index == d2.index &&
                    d.offset == d2.offset);
    }
    if (rc != PSI_OK)
        assert_int_equal(len, 0);
    free(out);
    return rc;
}

static int run_client(const psi_engine *e, const runner *r, const input *in)
{
    size_t cap = psi_message_element_bound(in->suite, in->msg_len) + 1, count = cap;
    size_t *idx = calloc(cap, sizeof *idx);
    psi_pair *pairs = calloc(cap, sizeof *pairs);
    psi_shards *g = r->shards != 0 ? shards_from(e, r) : NULL;
    int rc;
    assert_true(idx != NULL && pairs != NULL);
    if (strcmp(in->op, "client_get_intersection") == 0)
        rc = g ? psi_shards_client_get_intersection(g, idx, &count, in->setup, in->setup_len,
                                                    in->msg, in->msg_len)
               : psi_client_get_intersection(e, idx, &count, in->setup, in->setup_len,
                                             in->msg, in->msg_len);
    else if (strcmp(in->op, "client_get_intersection_size") == 0)
        rc = g ? psi_shards_client_get_intersection_size(g, &count, in->setup, in->setup_len,
                                                         in->msg, in->msg_len)
               : psi_client_get_intersection_size(e, &count, in->setup, in->setup_len,
                                                  in->msg, in->msg_len);
    else
        rc = g ? psi_shards_client_get_association(g, pairs, &count, in->setup,
                                                   in->setup_len, in->msg, in->msg_len)
               : psi_client_get_association(e, pairs, &count, in->setup, in->setup_len,
                                            in->msg, in->msg_len);
    if (rc != PSI_OK)
        assert_int_equal(count, 0);
    psi_shards_free(g);
    free(idx);
    free(pairs);
    return rc;
}

static int run_batch(const psi_engine *e, const runner *r, const input *in)
{
    size_t n = in->bytes_len / 33, len = in->bytes_len;
    uint8_t *out = malloc(len + 1);
    psi_shards *g = r->shards != 0 ? shards_from(e, r) : NULL;
    int rc, unmask = strcmp(in->op, "engine_unmask") == 0;
    assert_non_null(out);
    assert_int_equal(in->bytes_len % 33, 0);
    if (g != NULL)
        rc = unmask ? psi_shards_unmask(g, out, &len, in->bytes, n)
                    : psi_shards_remask(g, out, &len, in->bytes, n);
    else
        rc = unmask ? psi_engine_unmask(e, out, &len, in->bytes, n)
                    : psi_engine_remask(e, out, &len, in->bytes, n);
    if (rc != PSI_OK)
        assert_int_equal(len, 0);
    psi_shards_free(g);
    free(out);
    return rc;
}

/* Operations that take no engine: the decoders, the point check, the key
 * import and the setup parameters. */
static int run_plain(const cJSON *doc, const input *in)
{
    size_t cap = psi_message_element_bound(in->suite, in->msg_len) + 1, count = cap;
    uint8_t *elements = malloc(cap * 33);
    int reveal = 0, rc;
    assert_non_null(elements);
    if (strcmp(in->op, "request_decode") == 0) {
        rc = psi_request_decode(elements, &count, &reveal, in->suite, in->msg, in->msg_len);
        if (rc != PSI_OK)
            assert_int_equal(count, 0);
    } else if (strcmp(in->op, "response_decode") == 0) {
        rc = psi_response_decode(elements, &count, in->suite, in->msg, in->msg_len);
        if (rc != PSI_OK)
            assert_int_equal(count, 0);
    } else if (strcmp(in->op, "setup_parse") == 0) {
        psi_setup *s = NULL;
        rc = psi_setup_parse(&s, in->suite, in->msg, in->msg_len);
        if (rc != PSI_OK)
            assert_null(s);
        psi_setup_free(s);
    } else if (strcmp(in->op, "point_check") == 0) {
        rc = psi_point_check(in->suite, in->bytes, in->bytes_len);
    } else if (strcmp(in->op, "suite_from_name") == 0) {
        psi_suite suite = PSI_SUITE_RISTRETTO255;
        rc = psi_suite_from_name(&suite,
                                 cJSON_GetObjectItemCaseSensitive(in->c, "suite_name")->valuestring);
        assert_int_equal(suite, PSI_SUITE_OPENMINED_P256); /* cleared on failure */
    } else if (strcmp(in->op, "engine_from_key") == 0) {
        psi_settings st;
        psi_engine *e = (psi_engine *)doc; /* poisoned: must be set to NULL */
        psi_settings_default(&st);
        st.suite = in->suite;
        rc = psi_engine_create_from_key(&e, &st, in->bytes, in->bytes_len);
        if (rc != PSI_OK)
            assert_null(e);
        psi_engine_free(e);
    } else {
        assert_string_equal(in->op, "setup_bound");
        psi_setup_params p = {(psi_structure)num_field(in->c, "structure"),
                              num_field(in->c, "fpr"),
                              (int64_t)num_field(in->c, "num_client_inputs")};
        size_t bound = 1;
        rc = psi_setup_bound(&bound, in->suite, &p, (size_t)num_field(in->c, "n"));
        if (rc != PSI_OK)
            assert_int_equal(bound, 0);
    }
    free(elements);
    return rc;
}

static int64_t int_or_minus_one(const cJSON *c, const char *name)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, name);
    return cJSON_IsNumber(f) ? (int64_t)f->valuedouble : -1;
}

/* Checks the code, this thread's detail and the message against the case. */
static void check_result(const input *in, const char *runner_name, int rc)
{
    const cJSON *c = in->c;
    const char *name = cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring;
    const char *want = cJSON_GetObjectItemCaseSensitive(c, "error")->valuestring;
    const cJSON *field = cJSON_GetObjectItemCaseSensitive(c, "field");
    psi_error_detail d;
    char msg[PSI_ERROR_MESSAGE_BYTES], expect[PSI_ERROR_MESSAGE_BYTES * 2];
    int64_t index = int_or_minus_one(c, "index"), offset = int_or_minus_one(c, "offset");

    if (psi_error_name(rc) == NULL || strcmp(psi_error_name(rc), want) != 0)
        fail_msg("%s (%s): expected %s, got %s (%d)", name, runner_name, want,
                 psi_error_name(rc) ? psi_error_name(rc) : "?", rc);
    psi_error_detail_get(&d);
    if (cJSON_IsString(field)) {
        assert_int_equal(d.code, rc);
        if (d.field == NULL || strcmp(d.field, field->valuestring) != 0)
            fail_msg("%s (%s): field %s, expected %s", name, runner_name,
                     d.field ? d.field : "(none)", field->valuestring);
        if (d.index != index || d.offset != offset)
            fail_msg("%s (%s): index %lld offset %lld, expected %lld and %lld", name,
                     runner_name, (long long)d.index, (long long)d.offset,
                     (long long)index, (long long)offset);
        int w = snprintf(expect, sizeof expect, "%s", field->valuestring);
        if (index >= 0)
            w += snprintf(expect + w, sizeof expect - (size_t)w, "[%lld]", (long long)index);
        if (offset >= 0)
            w += snprintf(expect + w, sizeof expect - (size_t)w, " (byte %lld)",
                          (long long)offset);
        snprintf(expect + w, sizeof expect - (size_t)w, ": %s", psi_strerror(rc));
    } else {
        assert_int_equal(d.code, PSI_OK); /* no place: the detail stays clear */
        assert_null(d.field);
        snprintf(expect, sizeof expect, "%s", psi_strerror(rc));
    }
    size_t n = psi_error_message(msg, sizeof msg, rc);
    assert_int_equal(n, strlen(expect));
    assert_string_equal(msg, expect);
    /* The message for another code does not borrow this detail. */
    psi_error_message(msg, sizeof msg, PSI_E_NOMEM);
    assert_string_equal(msg, psi_strerror(PSI_E_NOMEM));
}

static void input_load(input *in, const cJSON *c)
{
    const cJSON *reveal = cJSON_GetObjectItemCaseSensitive(c, "reveal");
    memset(in, 0, sizeof *in);
    in->c = c;
    in->op = cJSON_GetObjectItemCaseSensitive(c, "op")->valuestring;
    in->msg = hex_field(c, "msg", &in->msg_len);
    in->setup = hex_field(c, "setup", &in->setup_len);
    in->bytes = hex_field(c, "point", &in->bytes_len);
    if (in->bytes == NULL)
        in->bytes = hex_field(c, "points", &in->bytes_len);
    if (in->bytes == NULL)
        in->bytes = hex_field(c, "key", &in->bytes_len);
    in->reveal = cJSON_IsNumber(reveal) ? reveal->valueint : 1;
    const cJSON *suite = cJSON_GetObjectItemCaseSensitive(c, "suite");
    in->suite = PSI_SUITE_OPENMINED_P256;
    if (cJSON_IsString(suite))
        assert_int_equal(psi_suite_from_name(&in->suite, suite->valuestring), PSI_OK);
}

static void input_free(input *in)
{
    free(in->msg);
    free(in->setup);
    free(in->bytes);
}

/* Runs one case on every runner that applies to it. */
static void run_case(const cJSON *doc, const cJSON *c)
{
    input in;
    input_load(&in, c);
    int server = strcmp(in.op, "server_process_request") == 0;
    int client = strncmp(in.op, "client_", 7) == 0;
    int batch = strncmp(in.op, "engine_", 7) == 0 && strcmp(in.op, "engine_from_key") != 0;
    if (!server && !client && !batch) {
        check_result(&in, "engine", run_plain(doc, &in));
    } else {
        psi_engine *e = engine_from(doc, server ? "server_key" : "client_key",
                                    server ? PSI_ROLE_SERVER : PSI_ROLE_CLIENT, in.reveal,
                                    in.suite);
        for (size_t r = 0; r < sizeof runners / sizeof runners[0]; r++) {
            int rc = server ? run_server(e, &runners[r], &in)
                     : client ? run_client(e, &runners[r], &in)
                              : run_batch(e, &runners[r], &in);
            check_result(&in, runners[r].name, rc);
        }
        psi_engine_free(e);
    }
    input_free(&in);
}

static void test_malformed_every_case(void **state)
{
    (void)state;
    cJSON *doc = tu_load_json(CASES_PATH);
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(doc, "cases");
    int n = cJSON_GetArraySize(cases);
    assert_true(n > 0);
    for (int i = 0; i < n; i++)
        run_case(doc, cJSON_GetArrayItem(cases, i));
    print_message("%d cases, each on every runner that applies\n", n);
    cJSON_Delete(doc);
}

/* Every error code of psi.h that bad input can cause appears in the table
 * (the others are caller bugs, resources, internal failures, and
 * PSI_E_MSG_TOO_LARGE, a count overflow no message that fits in memory
 * reaches). */
static void test_malformed_covers_every_data_error(void **state)
{
    (void)state;
    static const int not_from_input[] = {PSI_OK, PSI_E_INVALID_ARG, PSI_E_NOMEM, PSI_E_CRYPTO,
                                         PSI_E_BUFFER_TOO_SMALL, PSI_E_WRONG_ROLE,
                                         PSI_E_MSG_TOO_LARGE, PSI_E_HASH_TO_CURVE,
                                         PSI_E_THREAD, PSI_E_IO,
                                         /* psi_setup_check's, tested in
                                            test_setup_check */
                                         PSI_E_SETUP_MISMATCH,
                                         /* the payload tables' (§22), in
                                            test_payload: a damaged table of
                                            vectors/shardpsi-payloads.json
                                            each, and a build of two equal
                                            values */
                                         PSI_E_PAYLOAD_FORMAT, PSI_E_PAYLOAD_TRUNCATED,
                                         PSI_E_PAYLOAD_LENGTH, PSI_E_PAYLOAD_ORDER,
                                         PSI_E_PAYLOAD_AUTH, PSI_E_PAYLOAD_DUPLICATE};
    cJSON *doc = tu_load_json(CASES_PATH);
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(doc, "cases"), *c;
    for (int code = 0; psi_error_name(code) != NULL; code--) {
        int skip = 0, found = 0;
        for (size_t i = 0; i < sizeof not_from_input / sizeof not_from_input[0]; i++)
            skip |= not_from_input[i] == code;
        cJSON_ArrayForEach(c, cases)
        {
            found |= strcmp(cJSON_GetObjectItemCaseSensitive(c, "error")->valuestring,
                            psi_error_name(code)) == 0;
        }
        if (!skip && !found)
            fail_msg("no malformed-input case gives %s", psi_error_name(code));
    }
    cJSON_Delete(doc);
}

/* A call that succeeds clears the detail a failed one left. */
static void test_malformed_detail_cleared_by_success(void **state)
{
    (void)state;
    size_t len;
    uint8_t *g = tu_unhex(generator_hex, &len);
    psi_error_detail d;
    char msg[PSI_ERROR_MESSAGE_BYTES];
    assert_int_equal(psi_point_check(PSI_SUITE_OPENMINED_P256, g, 32), PSI_E_POINT_LENGTH);
    psi_error_detail_get(&d);
    assert_int_equal(d.code, PSI_E_POINT_LENGTH);
    assert_int_equal(psi_point_check(PSI_SUITE_OPENMINED_P256, g, len), PSI_OK);
    psi_error_detail_get(&d);
    assert_int_equal(d.code, PSI_OK);
    assert_null(d.field);
    assert_true(d.index == -1 && d.offset == -1);
    /* Truncation keeps the NUL and reports the whole length. */
    psi_error_detail set = {PSI_E_POINT_PREFIX, "Request.encrypted_elements", 12345, 678};
    psi_error_detail_set(&set);
    size_t full = psi_error_message(NULL, 0, PSI_E_POINT_PREFIX);
    assert_int_equal(psi_error_message(msg, 10, PSI_E_POINT_PREFIX), full);
    assert_int_equal(strlen(msg), 9);
    psi_error_message(msg, sizeof msg, PSI_E_POINT_PREFIX);
    assert_true(strncmp(msg, "Request.encrypted_elements[12345] (byte 678): ", 46) == 0);
    psi_error_detail_set(NULL);
    psi_error_detail_get(&d);
    assert_int_equal(d.code, PSI_OK);
    free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_malformed_every_case),
        cmocka_unit_test(test_malformed_covers_every_data_error),
        cmocka_unit_test(test_malformed_detail_cleared_by_success),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
