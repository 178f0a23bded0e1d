/* The three ciphersuites (PROTOCOL.md §16) through the public API: whole
 * rounds of every structure against a plain comparison of the inputs, the
 * wire facts of §16.1 (suite header, element length, cross-suite refusal),
 * unknown suite numbers, key rules per suite, and byte identity of the
 * sharding layer with one engine in every suite.  The known answers of
 * ristretto255 and p256-sswu are in test_suites_kat.c.  This file: main,
 * whole rounds and the sharded identity; Bloom double hashing is in
 * suites_bloom.c, the wire facts and unknown suites in suites_wire.c, the
 * keys in suites_keys.c, the helpers they share in suites_common.c. */
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

/* ------------------------------------------------------- one round */

typedef struct round_in {
    int suite;
    const uint8_t *ks, *kc; /* NULL: random keys */
    int reveal;
    const psi_value *sv, *cv;
    size_t ns, nc;
    int exact;
    double fpr;
} round_in;

static size_t run_round(const round_in *r)
{
    psi_engine *s = engine(r->suite, PSI_ROLE_SERVER, r->reveal, r->ks, PSI_KEY_BYTES);
    psi_engine *c = engine(r->suite, PSI_ROLE_CLIENT, r->reveal, r->kc, PSI_KEY_BYTES);
    size_t nc = r->nc, fp = 0;
    psi_pair *want_pairs = calloc(nc + 1, sizeof *want_pairs);
    psi_pair *pairs = calloc(nc + 1, sizeof *pairs);
    size_t *want_raw = calloc(nc + 1, sizeof *want_raw), *want_mem = calloc(nc + 1, sizeof(size_t));
    size_t *idx = calloc(nc + 1, sizeof *idx), *perm = calloc(r->ns + 1, sizeof *perm);
    assert_true(want_pairs && pairs && want_raw && want_mem && idx && perm);
    size_t n_pairs = expected_pairs(want_pairs, r->sv, r->ns, r->cv, nc), n_mem = 0;
    for (size_t i = 0; i < n_pairs; i++)
        want_raw[i] = want_pairs[i].client_index;
    qsort(want_raw, n_pairs, sizeof *want_raw, cmp_size);
    for (size_t i = 0; i < nc; i++)
        if (in_values(r->cv[i], r->sv, r->ns))
            want_mem[n_mem++] = i;

    msg req = mk_request(c, r->cv, nc), resp = mk_response(s, req, nc);
    for (int st = 0; st < 3; st++) {
        msg setup = mk_setup(s, (psi_structure)st, r->fpr, nc > 0 ? (int64_t)nc : 1, r->sv,
                             r->ns, st == PSI_STRUCTURE_RAW ? perm : NULL);
        size_t size = 99, count = psi_message_element_bound(r->suite, resp.len);
        CHECK_RC(psi_client_get_intersection_size(c, &size, setup.p, setup.len, resp.p,
                                                  resp.len), PSI_OK);
        if (st == PSI_STRUCTURE_RAW || r->exact)
            CHECK_RC(size, st == PSI_STRUCTURE_RAW ? n_pairs : n_mem);
        else
            CHECK(size >= n_mem);
        int rc = psi_client_get_intersection(c, idx, &count, setup.p, setup.len, resp.p,
                                             resp.len);
        if (!r->reveal) {
            CHECK_RC(rc, PSI_E_REVEAL_DISABLED);
        } else {
            CHECK_RC(rc, PSI_OK);
            CHECK_RC(count, size);
            for (size_t i = 1; st == PSI_STRUCTURE_BLOOM_FILTER && i < count; i++)
                CHECK(idx[i - 1] < idx[i]); /* Bloom: ascending (§9.3) */
            if (st == PSI_STRUCTURE_RAW)
                expect_index_set(idx, count, want_raw, n_pairs, 1, r->sv, r->ns, r->cv);
            else
                fp += expect_index_set(idx, count, want_mem, n_mem, r->exact, r->sv, r->ns,
                                       r->cv);
        }
        count = nc + 1;
        rc = psi_client_get_association(c, pairs, &count, setup.p, setup.len, resp.p, resp.len);
        if (!r->reveal) {
            CHECK_RC(rc, PSI_E_REVEAL_DISABLED);
        } else if (st != PSI_STRUCTURE_RAW) {
            CHECK_RC(rc, PSI_E_STRUCTURE);
        } else {
            CHECK_RC(rc, PSI_OK);
            CHECK_RC(count, n_pairs);
            CHECK_RC(psi_association_map(pairs, count, perm, r->ns), PSI_OK);
            CHECK(count == 0 || memcmp(pairs, want_pairs, count * sizeof *pairs) == 0);
        }
        free(setup.p);
    }
    free(req.p);
    free(resp.p);
    free(want_pairs);
    free(pairs);
    free(want_raw);
    free(want_mem);
    free(idx);
    free(perm);
    psi_engine_free(s);
    psi_engine_free(c);
    return fp;
}

/* Fixed keys, fixed data: exact results (a false positive would be the
 * same in every run and fail it). */
static void test_suites_rounds_fixed(void **state)
{
    (void)state;
    psi_value x = {(const uint8_t *)"x", 1}, y = {(const uint8_t *)"y", 1},
              z = {(const uint8_t *)"z", 1}, e = {(const uint8_t *)"", 0};
    psi_value dup_c[6] = {x, y, x, z, x, e}, dup_s[4] = {x, z, z, e};
    for (int suite = 0; suite < N_SUITES; suite++) {
        uint64_t rng = 0x5eed0000u + (uint64_t)suite;
        uint8_t ks[PSI_KEY_BYTES], kc[PSI_KEY_BYTES];
        suite_key(suite, &rng, ks);
        suite_key(suite, &rng, kc);
        dataset d;
        ts_dataset_make(&d, &rng, 60, 45);
        struct {
            const psi_value *sv, *cv;
            size_t ns, nc;
        } sets[] = {
            {NULL, NULL, 0, 0}, {NULL, dup_c, 0, 6}, {dup_s, NULL, 4, 0},
            {dup_s, dup_c, 4, 6}, {d.sv, d.cv, 60, 45}, {d.cv, d.sv, 45, 60},
        };
        for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++)
            for (int rv = 0; rv < 2; rv++) {
                round_in r = {suite, ks, kc, rv, sets[k].sv, sets[k].cv, sets[k].ns,
                              sets[k].nc, 1, 1e-6};
                run_round(&r);
            }
        ts_dataset_free(&d);
    }
}

/* Random keys (psi_engine_create) and seeded data, most of the client's
 * values not the server's: GCS and Bloom may add non-members at rate fpr
 * per query (§7.2, §7.3); at fpr 0.9 they do, and are checked. */
static void test_suites_rounds_random(void **state)
{
    (void)state;
    uint64_t rng = ts_rng_for(1);
    size_t fp = 0;
    char text[200][16];
    psi_value v[200];
    for (int suite = 0; suite < N_SUITES; suite++) {
        size_t ns = 20 + tu_rand(&rng) % 80, nc = 1 + tu_rand(&rng) % 100, dom = ns / 2 + 1;
        for (size_t i = 0; i < ns + nc; i++) {
            /* server: v0 .. v<dom-1>; client: 8 times that range */
            snprintf(text[i], sizeof text[i], "v%llu",
                     (unsigned long long)(tu_rand(&rng) % (i < ns ? dom : 8 * dom)));
            v[i] = (psi_value){(const uint8_t *)text[i], strlen(text[i])};
        }
        for (int rv = 0; rv < 2; rv++) {
            round_in r = {suite, NULL, NULL, rv, v, v + ns, ns, nc, 0, 0.9};
            fp += run_round(&r);
        }
    }
    printf("# rounds_random: %zu false positive(s) at fpr 0.9\n", fp);
}

/* ----------------------------------------------------- sharded identity */

static void shard_calls(int suite, party *single, party *sharded, const dataset *d)
{
    int rc;
    size_t cap = psi_request_bound(suite, d->nc);
    call c = {.op = OP_REQUEST, .cap = cap, .values = d->cv, .n = d->nc};
    out req = ts_run_call(single[1], &c);
    CHECK_RC(req.rc, PSI_OK);
    CHECK_RC(ts_expect_same_call("request", single[1], sharded[1], &c), PSI_OK);
    c = (call){.op = OP_PROCESS, .cap = psi_response_bound(suite, d->nc), .a = req.p,
               .a_len = req.len};
    out resp = ts_run_call(single[0], &c);
    CHECK_RC(resp.rc, PSI_OK);
    CHECK_RC(ts_expect_same_call("response", single[0], sharded[0], &c), PSI_OK);
    for (int st = 0; st < 3; st++) {
        psi_setup_params p = {(psi_structure)st, 1e-4, (int64_t)d->nc};
        CHECK_RC(psi_setup_bound(&cap, suite, &p, d->ns), PSI_OK);
        c = (call){.op = OP_SETUP, .cap = cap, .want_perm = 1, .params = p, .values = d->sv,
                   .n = d->ns};
        out setup = ts_run_call(single[0], &c);
        CHECK_RC(setup.rc, PSI_OK);
        CHECK_RC(ts_expect_same_call("setup", single[0], sharded[0], &c), PSI_OK);
        for (op_id op = OP_INTER; op <= OP_ASSOC; op++) {
            c = (call){.op = op, .cap = d->nc, .a = setup.p, .a_len = setup.len, .b = resp.p,
                       .b_len = resp.len};
            rc = ts_expect_same_call(op == OP_INTER ? "intersection" : op == OP_SIZE ? "size"
                                                                                     : "association",
                                     single[1], sharded[1], &c);
            CHECK_RC(rc, op == OP_ASSOC && st != PSI_STRUCTURE_RAW ? PSI_E_STRUCTURE : PSI_OK);
        }
        ts_out_free(&setup);
    }
    ts_out_free(&req);
    ts_out_free(&resp);
}

static void test_suites_sharded(void **state)
{
    (void)state;
    static const size_t counts[] = {1, 2, 3, 5};
    /* Under valgrind (tests/meson.build's setup) 1 and 3 shards on 2
     * threads and small sets: the full matrix takes over 10 minutes there. */
    int light = getenv("PSI_UNDER_VALGRIND") != NULL;
    size_t base_s = light ? 30 : 250, base_c = light ? 20 : 200, spread = light ? 10 : 100;
    uint64_t rng = ts_rng_for(2);
    for (int suite = 0; suite < N_SUITES; suite++) {
        uint8_t ks[PSI_KEY_BYTES], kc[PSI_KEY_BYTES];
        suite_key(suite, &rng, ks);
        suite_key(suite, &rng, kc);
        psi_engine *s = engine(suite, PSI_ROLE_SERVER, 1, ks, sizeof ks);
        psi_engine *c = engine(suite, PSI_ROLE_CLIENT, 1, kc, sizeof kc);
        dataset d;
        ts_dataset_make(&d, &rng, base_s + tu_rand(&rng) % spread,
                        base_c + tu_rand(&rng) % spread);
        for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
            for (size_t t = light ? 2 : 1; t <= 2; t++) {
                if (light && counts[i] != 1 && counts[i] != 3)
                    continue;
                snprintf(ts_where, sizeof ts_where, "suite %s, %zu shards, %zu threads",
                         psi_suite_name(suite), counts[i], t);
                party single[2] = {{s, NULL}, {c, NULL}};
                party sharded[2] = {{NULL, ts_shards_new(s, counts[i], t)},
                                    {NULL, ts_shards_new(c, counts[i], t)}};
                shard_calls(suite, single, sharded, &d);
                psi_shards_free(sharded[0].g);
                psi_shards_free(sharded[1].g);
            }
        ts_dataset_free(&d);
        psi_engine_free(s);
        psi_engine_free(c);
    }
}

int main(void)
{
    ts_seed = tu_seed("test_suites");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_suites_rounds_fixed),
        cmocka_unit_test(test_suites_rounds_random),
        cmocka_unit_test(test_suites_bloom_double_hashing),
        cmocka_unit_test(test_suites_wire),
        cmocka_unit_test(test_suites_unknown),
        cmocka_unit_test(test_suites_keys),
        cmocka_unit_test(test_suites_sharded),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    printf("# test_suites: %lu checks\n", n_checks);
    return rc;
}
