/* Key hygiene: no heap block freed while a key is in use may
 * still hold that key.  This program interposes malloc and its relatives
 * (forwarding to glibc's __libc_* functions), gives OpenSSL the wiping
 * allocator of psi_openssl_wipe_on_free (or its own: see main), hooks the
 * library's (psi_alloc_set_hooks), and scans every freed block for the
 * key, its inverse mod n, both byte-reversed (a BIGNUM's words), their hex
 * in either case, and any 16-byte (32-digit) window of those.
 * Scenarios: an engine from a known key and every operation; a random key;
 * clones; the sharding layer on threads; the CLI's key file; rejected keys.
 * The blocks of a random key's creation are held back (quarantine) until
 * the key is known, then scanned.  Not built under a sanitizer, which
 * interposes malloc itself; under valgrind the scan still runs (valgrind
 * replaces the __libc_* functions the scanner forwards to).  This file:
 * main and the scenarios of the engine, the sharding layer and rejected
 * keys; the scanner and its self-test are in key_hygiene_scan.c, the
 * key file's scenario in key_hygiene_keyfile.c. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/crypto.h>
#include <sodium.h>

#include "common.h"
#include "engine.h"
#include "key_hygiene_scan.h"
#include "psi_shard.h"

/* ------------------------------------------------- the operations run */

#define N_CLIENT 24
#define N_SERVER 20
#define N_COMMON 10
#define MSG_CAP 8192

typedef struct inputs {
    char text[N_CLIENT + N_SERVER][16];
    psi_value client[N_CLIENT], server[N_SERVER];
} inputs;

/* Client values 0..23, server values 14..33: ten in common. */
static void inputs_init(inputs *in)
{
    for (int i = 0; i < N_CLIENT + N_SERVER; i++)
        snprintf(in->text[i], sizeof in->text[i], "value-%d", i);
    for (int i = 0; i < N_CLIENT; i++)
        in->client[i] = (psi_value){(const uint8_t *)in->text[i], strlen(in->text[i])};
    for (int i = 0; i < N_SERVER; i++) {
        const char *t = in->text[N_CLIENT - N_COMMON + i];
        in->server[i] = (psi_value){(const uint8_t *)t, strlen(t)};
    }
}

/* Messages of one round, on the heap of the test (never holding a key). */
typedef struct round_msgs {
    uint8_t setup[3][MSG_CAP];
    size_t setup_len[3];
    size_t perm[N_SERVER];
    uint8_t request[MSG_CAP], response[MSG_CAP];
    size_t request_len, response_len;
} round_msgs;

/* Every operation of one party pair: the batch calls, point_check, every
 * setup, a request and response with reveal on, the three results, their
 * sizes and the association table, then a round with reveal off.  One body
 * for the engine (H psi_engine *, batch prefix B psi_engine_, message
 * prefix M psi_) and the sharding layer (psi_shards *, psi_shards_ for
 * both), whose calls take the same arguments. */
#define DEFINE_ROUND(name, H, B, M)                                                      \
    static void name(H c, H s, H c0, H s0)                                                \
    {                                                                                     \
        static round_msgs m;                                                              \
        static uint8_t a[N_CLIENT * PSI_ELEMENT_BYTES], b[sizeof a], u[sizeof a];         \
        inputs in;                                                                        \
        inputs_init(&in);                                                                 \
        size_t la = sizeof a, lb = sizeof b, lu = sizeof u, count;                        \
        assert_int_equal(B##mask(c, a, &la, in.client, N_CLIENT), PSI_OK);                \
        assert_int_equal(B##remask(s, b, &lb, a, N_CLIENT), PSI_OK);                      \
        assert_int_equal(B##unmask(c, u, &lu, b, N_CLIENT), PSI_OK);                      \
        assert_int_equal(psi_point_check(PSI_SUITE_OPENMINED_P256, u, PSI_ELEMENT_BYTES), PSI_OK);                  \
        for (int st = 0; st < 3; st++) {                                                  \
            psi_setup_params p = {(psi_structure)st, 0.001, N_CLIENT};                    \
            m.setup_len[st] = sizeof m.setup[st];                                         \
            assert_int_equal(M##server_create_setup(s, m.setup[st], &m.setup_len[st],     \
                                                    st == 0 ? m.perm : NULL, &p,          \
                                                    in.server, N_SERVER), PSI_OK);        \
        }                                                                                 \
        m.request_len = m.response_len = MSG_CAP;                                         \
        assert_int_equal(M##client_create_request(c, m.request, &m.request_len,           \
                                                  in.client, N_CLIENT), PSI_OK);          \
        assert_int_equal(M##server_process_request(s, m.response, &m.response_len,        \
                                                   m.request, m.request_len), PSI_OK);    \
        size_t idx[N_CLIENT];                                                             \
        for (int st = 0; st < 3; st++) {                                                  \
            count = N_CLIENT;                                                             \
            assert_int_equal(M##client_get_intersection(c, idx, &count, m.setup[st],      \
                                                        m.setup_len[st], m.response,      \
                                                        m.response_len), PSI_OK);         \
            assert_true(count >= N_COMMON);                                               \
            assert_int_equal(M##client_get_intersection_size(c, &count, m.setup[st],      \
                                                             m.setup_len[st], m.response, \
                                                             m.response_len), PSI_OK);    \
            assert_true(count >= N_COMMON);                                               \
        }                                                                                 \
        psi_pair pairs[N_CLIENT];                                                         \
        count = N_CLIENT;                                                                 \
        assert_int_equal(M##client_get_association(c, pairs, &count, m.setup[0],          \
                                                   m.setup_len[0], m.response,            \
                                                   m.response_len), PSI_OK);              \
        assert_int_equal(count, N_COMMON);                                                \
        assert_int_equal(psi_association_map(pairs, count, m.perm, N_SERVER), PSI_OK);    \
        m.request_len = m.response_len = MSG_CAP; /* reveal off: only the size */         \
        assert_int_equal(M##client_create_request(c0, m.request, &m.request_len,          \
                                                  in.client, N_CLIENT), PSI_OK);          \
        assert_int_equal(M##server_process_request(s0, m.response, &m.response_len,       \
                                                   m.request, m.request_len), PSI_OK);    \
        assert_int_equal(M##client_get_intersection_size(c0, &count, m.setup[0],          \
                                                         m.setup_len[0], m.response,      \
                                                         m.response_len), PSI_OK);        \
        assert_int_equal(count, N_COMMON);                                                \
    }

DEFINE_ROUND(run_engine_ops, psi_engine *, psi_engine_, psi_)
DEFINE_ROUND(run_shard_ops, psi_shards *, psi_shards_, psi_shards_)

/* ------------------------------------------------------------ tests */

/* (a) engines from known keys, every operation, freed. */
static void test_key_hygiene_known_keys(void **state)
{
    (void)state;
    keypair kc, ks;
    keypair_random(&kc);
    keypair_random(&ks);
    secret s[2] = {{"client key", kc.k, PSI_KEY_BYTES, kc.kinv, 1},
                   {"server key", ks.k, PSI_KEY_BYTES, ks.kinv, 1}};
    arm(s, 2);
    psi_engine *e[4] = {engine_from(&kc, PSI_ROLE_CLIENT, 1), engine_from(&ks, PSI_ROLE_SERVER, 1),
                        engine_from(&kc, PSI_ROLE_CLIENT, 0), engine_from(&ks, PSI_ROLE_SERVER, 0)};
    run_engine_ops(e[0], e[1], e[2], e[3]);
    for (int i = 0; i < 4; i++)
        psi_engine_free(e[i]);
    expect_clean("known keys, every operation");
    keypair_wipe(&kc);
    keypair_wipe(&ks);
}

/* (b) random keys: the blocks freed while the engines are made are held
 * back until the keys are exported. */
static void test_key_hygiene_random_keys(void **state)
{
    (void)state;
    psi_settings sc, ss;
    psi_settings_default(&sc);
    psi_settings_default(&ss);
    ss.role = PSI_ROLE_SERVER;
    psi_engine *c = NULL, *s = NULL, *c0 = NULL, *s0 = NULL;
    quarantine_begin();
    assert_int_equal(psi_engine_create(&c, &sc), PSI_OK);
    assert_int_equal(psi_engine_create(&s, &ss), PSI_OK);
    keypair kc, ks;
    keypair_of(&kc, c);
    keypair_of(&ks, s);
    secret sec[2] = {{"client key", kc.k, PSI_KEY_BYTES, kc.kinv, 1},
                     {"server key", ks.k, PSI_KEY_BYTES, ks.kinv, 1}};
    quarantine_end(sec, 2);
    sc.reveal_intersection = ss.reveal_intersection = 0;
    assert_int_equal(psi_engine_clone(&c0, c, &sc), PSI_OK);
    assert_int_equal(psi_engine_clone(&s0, s, &ss), PSI_OK);
    run_engine_ops(c, s, c0, s0);
    psi_engine_free(c);
    psi_engine_free(s);
    psi_engine_free(c0);
    psi_engine_free(s0);
    expect_clean("random keys, every operation");
    keypair_wipe(&kc);
    keypair_wipe(&ks);
}

/* (c) clone and clone_with, each clone used, all freed. */
static void test_key_hygiene_clones(void **state)
{
    (void)state;
    keypair kp;
    keypair_random(&kp);
    secret s = {"key", kp.k, PSI_KEY_BYTES, kp.kinv, 1};
    inputs in;
    inputs_init(&in);
    static uint8_t out[N_CLIENT * PSI_ELEMENT_BYTES], back[sizeof out];
    arm(&s, 1);
    psi_engine *e = engine_from(&kp, PSI_ROLE_CLIENT, 1), *c1 = NULL, *c2 = NULL;
    assert_int_equal(psi_engine_clone(&c1, e, NULL), PSI_OK);
    psi_settings st;
    psi_settings_default(&st);
    st.role = PSI_ROLE_SERVER;
    st.reveal_intersection = 0;
    assert_int_equal(psi_engine_clone(&c2, c1, &st), PSI_OK);
    psi_engine_free(e);
    size_t len = sizeof out;
    assert_int_equal(psi_engine_mask(c1, out, &len, in.client, N_CLIENT), PSI_OK);
    len = sizeof back;
    assert_int_equal(psi_engine_unmask(c2, back, &len, out, N_CLIENT), PSI_OK);
    psi_engine_free(c1);
    psi_engine_free(c2);
    expect_clean("clone and clone_with");
    keypair_wipe(&kp);
}

/* (d) the sharding layer: shards on three threads from one key each side,
 * every sharded operation and the pure steps. */
static void test_key_hygiene_shards(void **state)
{
    (void)state;
    static uint8_t a[N_SERVER * PSI_ELEMENT_BYTES], b[sizeof a];
    keypair kc, ks;
    keypair_random(&kc);
    keypair_random(&ks);
    secret sec[2] = {{"client key", kc.k, PSI_KEY_BYTES, kc.kinv, 1},
                     {"server key", ks.k, PSI_KEY_BYTES, ks.kinv, 1}};
    inputs in;
    inputs_init(&in);
    arm(sec, 2);
    psi_engine *e[4] = {engine_from(&kc, PSI_ROLE_CLIENT, 1), engine_from(&ks, PSI_ROLE_SERVER, 1),
                        engine_from(&kc, PSI_ROLE_CLIENT, 0), engine_from(&ks, PSI_ROLE_SERVER, 0)};
    psi_shard_settings ss;
    psi_shard_settings_default(&ss);
    ss.threads = 3;
    ss.shards = 5;
    psi_shards *g[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(psi_shards_create(&g[i], e[i], &ss), PSI_OK);
    assert_int_equal(psi_shards_threads(g[0]), 3);
    run_shard_ops(g[0], g[1], g[2], g[3]);
    /* The step API on one engine: a plan of two sorted slices, each run
     * elsewhere (psi_step_run) and put back, then merged. */
    size_t perm[N_SERVER], merged_perm[N_SERVER];
    psi_op_args pa = {.op = PSI_OP_STEP, .step = PSI_STEP_MASK_SORT, .values = in.server,
                      .n_values = N_SERVER, .slices = 2};
    psi_plan *plan = NULL;
    assert_int_equal(psi_plan_begin(&plan, e[1], &pa), PSI_OK);
    for (size_t k = 0; k < 2; k++) {
        psi_step sl;
        assert_int_equal(psi_plan_step(plan, &sl, k), PSI_OK);
        assert_int_equal(psi_step_run(e[1], a + sl.offset * PSI_ELEMENT_BYTES,
                                      perm + sl.offset, NULL, &sl), PSI_OK);
        assert_int_equal(psi_plan_put(plan, k, PSI_OK, -1, a + sl.offset * PSI_ELEMENT_BYTES,
                                      perm + sl.offset), PSI_OK);
    }
    psi_op_output po = {.bytes = b, .len = N_SERVER * PSI_ELEMENT_BYTES, .perm = merged_perm};
    assert_int_equal(psi_plan_finish(plan, &po), PSI_OK);
    psi_plan_free(plan);
    for (int i = 0; i < 4; i++) {
        psi_shards_free(g[i]);
        psi_engine_free(e[i]);
    }
    expect_clean("shards on three threads, every sharded operation");
    keypair_wipe(&kc);
    keypair_wipe(&ks);
}

/* (f) rejected keys leave nothing behind either: a 32-byte key above n,
 * a 33-byte key with a leading non-zero byte, and n itself. */
static void test_key_hygiene_rejected_keys(void **state)
{
    (void)state;
    psi_settings st;
    psi_settings_default(&st);
    uint8_t big[PSI_KEY_BYTES], wide[PSI_KEY_BYTES + 1];
    randombytes_buf(big, sizeof big);
    memset(big, 0xff, 4); /* ff ff ff ff then a non-zero byte: above n */
    big[4] = (uint8_t)(0x10 | big[4]);
    randombytes_buf(wide, sizeof wide);
    wide[0] = 0x01;
    /* n is public and sits, reversed, in every BIGNUM of the group order,
     * so only its big-endian forms count. */
    const secret cases[3] = {{"rejected key", big, sizeof big, NULL, 1},
                             {"rejected key", wide, sizeof wide, NULL, 1},
                             {"rejected key", order_n, sizeof order_n, NULL, 0}};
    for (size_t i = 0; i < 3; i++) {
        const secret *s = &cases[i];
        arm(s, 1);
        psi_engine *e = (psi_engine *)&st;
        assert_int_equal(psi_engine_create_from_key(&e, &st, s->key, s->key_len),
                         PSI_E_KEY_OUT_OF_RANGE);
        assert_null(e);
        expect_clean(i == 0 ? "rejected key above n" : i == 1 ? "rejected 33-byte key" :
                     "rejected key n");
    }
    sodium_memzero(big, sizeof big);
    sodium_memzero(wide, sizeof wide);
}

int main(void)
{
    /* By default OpenSSL allocates as in the shardpsi command (its wiping
     * allocator) and nothing may hold a key; PSI_KEY_HYGIENE_OPENSSL=raw
     * uses the scanner's hooks and tolerates the upstream leak that
     * key_hygiene_scan.c describes (KNOWN_UPSTREAM_FILE). */
    const char *mode = getenv("PSI_KEY_HYGIENE_OPENSSL");
    const char *env = getenv("PSI_KEY_HYGIENE_STRICT");
    strict = env != NULL && strcmp(env, "1") == 0;
    openssl_raw = mode != NULL && strcmp(mode, "raw") == 0;
    /* Before any other OpenSSL call: afterwards OpenSSL refuses. */
    if (openssl_raw) {
        if (!CRYPTO_set_mem_functions(ossl_malloc, ossl_realloc, ossl_free)) {
            fprintf(stderr, "CRYPTO_set_mem_functions refused: OpenSSL already allocated\n");
            return 1;
        }
    } else {
        if (psi_openssl_wipe_on_free() != PSI_OK) {
            fprintf(stderr, "psi_openssl_wipe_on_free refused: OpenSSL already allocated\n");
            return 1;
        }
        strict = 1;
    }
    psi_alloc_set_hooks(lib_alloc, lib_free);
    if (sodium_init() < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_key_hygiene_scanner_catches_a_copy, scan_reset),
        cmocka_unit_test_setup(test_key_hygiene_known_keys, scan_reset),
        cmocka_unit_test_setup(test_key_hygiene_random_keys, scan_reset),
        cmocka_unit_test_setup(test_key_hygiene_clones, scan_reset),
        cmocka_unit_test_setup(test_key_hygiene_shards, scan_reset),
        cmocka_unit_test_setup(test_key_hygiene_keyfile, scan_reset),
        cmocka_unit_test_setup(test_key_hygiene_rejected_keys, scan_reset),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    psi_alloc_set_hooks(NULL, NULL);
    return failed;
}
