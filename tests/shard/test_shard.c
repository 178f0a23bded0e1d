/* The sharding layer (psi_shard.h, PROTOCOL.md §14) against the single
 * engine, which is the reference: every byte, length, index and error code
 * of a psi_shards_* call must equal the psi.h call's on an engine with the
 * same key, for every shard count N and thread count T.  Also empty inputs
 * and argument errors; the vectors are in test_shard_vectors.c, the pure
 * steps and the executor in test_shard_steps.c.  Public API only.
 * Random cases print their seed; PSI_TEST_SEED replays one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "psi.h"
#include "psi_shard.h"
#include "test_shard_common.h"
#include "test_msg.h"
#include "test_util.h"

/* PSI_TEST_ITERS: rounds of the random identity test (default 1). */
static unsigned test_iters(void)
{
    const char *env = getenv("PSI_TEST_ITERS");
    unsigned long v = env != NULL ? strtoul(env, NULL, 10) : 1;
    return v == 0 || v > 1000 ? 1 : (unsigned)v;
}

/* ------------------------------------ every operation, compared in turn */

enum { N_SETUPS = 4 };
enum {
    R_REQUEST, R_SETUP, R_RESPONSE = R_SETUP + N_SETUPS, R_INTER, R_SIZE = R_INTER + N_SETUPS,
    R_ASSOC = R_SIZE + N_SETUPS, R_MAPPED, R_MASK, R_REMASK, R_UNMASK, R_COUNT
};
static const char *const r_names[R_COUNT] = {
    "create_request", "create_setup raw", "create_setup gcs", "create_setup gcs fpr 0.5",
    "create_setup bloom", "process_request", "get_intersection raw",
    "get_intersection gcs", "get_intersection gcs fpr 0.5", "get_intersection bloom",
    "get_intersection_size raw", "get_intersection_size gcs",
    "get_intersection_size gcs fpr 0.5", "get_intersection_size bloom",
    "get_association", "association_map", "mask", "remask", "unmask",
};

/* Raw; GCS; GCS with fpr 0.5 for one client input, so hash_range is twice
 * the server count and client elements tie on hashes; Bloom. */
static psi_setup_params setup_params(int k, size_t nc)
{
    static const psi_structure st[N_SETUPS] = {PSI_STRUCTURE_RAW, PSI_STRUCTURE_GCS,
                                               PSI_STRUCTURE_GCS, PSI_STRUCTURE_BLOOM_FILTER};
    int64_t n = nc > 0 ? (int64_t)nc : 1;
    return (psi_setup_params){st[k], k == 2 ? 0.5 : 0.01, k == 2 ? 1 : n};
}

typedef struct results {
    out r[2][R_COUNT];          /* by reveal flag */
} results;

/* Downstream calls read their messages from `in` (the single engine's), so
 * one difference does not hide behind another. */
static void run_server(results *res, int rv, party s, const dataset *d, const results *in)
{
    for (int k = 0; k < N_SETUPS; k++) {
        /* perm for every structure: GCS and Bloom must leave it untouched. */
        call c = {.op = OP_SETUP, .want_perm = 1, .params = setup_params(k, d->nc),
                  .values = d->sv, .n = d->ns};
        assert_int_equal(psi_setup_bound(&c.cap, PSI_SUITE_OPENMINED_P256, &c.params, d->ns), PSI_OK);
        res->r[rv][R_SETUP + k] = ts_run_call(s, &c);
    }
    const out *req = &in->r[rv][R_REQUEST];
    call c = {.op = OP_PROCESS, .a = req->p, .a_len = req->len,
              .cap = psi_response_bound(PSI_SUITE_OPENMINED_P256, psi_message_element_bound(PSI_SUITE_OPENMINED_P256, req->len))};
    res->r[rv][R_RESPONSE] = ts_run_call(s, &c);
}

static void run_client(results *res, int rv, party cl, const results *in)
{
    const out *resp = &in->r[rv][R_RESPONSE];
    call c = {.b = resp->p, .b_len = resp->len, .cap = psi_message_element_bound(PSI_SUITE_OPENMINED_P256, resp->len)};
    for (int k = 0; k < N_SETUPS; k++) {
        c.a = in->r[rv][R_SETUP + k].p;
        c.a_len = in->r[rv][R_SETUP + k].len;
        c.op = OP_INTER;
        res->r[rv][R_INTER + k] = ts_run_call(cl, &c);
        c.op = OP_SIZE;
        res->r[rv][R_SIZE + k] = ts_run_call(cl, &c);
    }
    c.op = OP_ASSOC;
    c.a = in->r[rv][R_SETUP].p;
    c.a_len = in->r[rv][R_SETUP].len;
    out *a = &res->r[rv][R_ASSOC], *m = &res->r[rv][R_MAPPED];
    *a = ts_run_call(cl, &c);
    *m = (out){a->rc, a->len, a->item, 0, NULL, NULL, 0};
    if (a->rc == PSI_OK && a->len > 0) {
        m->p = malloc(a->len * a->item);
        assert_non_null(m->p);
        memcpy(m->p, a->p, a->len * a->item);
        const out *perm = &res->r[rv][R_SETUP]; /* this side's own permutation */
        m->rc = psi_association_map((psi_pair *)(void *)m->p, m->len, perm->perm, perm->n_perm);
    }
}

/* mask -> remask -> unmask, each step on the single engine's previous output. */
static void run_mask_chain(results *res, party s, party cl, const dataset *d, const results *in)
{
    call c = {.op = OP_MASK, .values = d->cv, .n = d->nc, .cap = d->nc * EB};
    res->r[1][R_MASK] = ts_run_call(cl, &c);
    c = (call){.op = OP_REMASK, .a = in->r[1][R_MASK].p, .a_len = in->r[1][R_MASK].len / EB,
               .cap = in->r[1][R_MASK].len};
    res->r[1][R_REMASK] = ts_run_call(s, &c);
    c = (call){.op = OP_UNMASK, .a = in->r[1][R_REMASK].p, .a_len = in->r[1][R_REMASK].len / EB,
               .cap = in->r[1][R_REMASK].len};
    res->r[1][R_UNMASK] = ts_run_call(cl, &c);
}

/* s[rv], c[rv]: server and client of each reveal flag. */
static void run_all(results *res, const party s[2], const party c[2], const dataset *d,
                    const results *in)
{
    if (in == NULL)
        in = res;
    for (int rv = 0; rv < 2; rv++) {
        call rq = {.op = OP_REQUEST, .values = d->cv, .n = d->nc,
                   .cap = psi_request_bound(PSI_SUITE_OPENMINED_P256, d->nc)};
        res->r[rv][R_REQUEST] = ts_run_call(c[rv], &rq);
        run_server(res, rv, s[rv], d, in);
        run_client(res, rv, c[rv], in);
    }
    run_mask_chain(res, s[1], c[1], d, in);
}

static void results_free(results *res)
{
    for (int rv = 0; rv < 2; rv++)
        for (int k = 0; k < R_COUNT; k++)
            ts_out_free(&res->r[rv][k]);
}

/* The reference must itself succeed where the protocol allows it. */
static void check_reference(const results *ref)
{
    for (int rv = 0; rv < 2; rv++)
        for (int k = 0; k < R_COUNT; k++) {
            int must_fail = rv == 0 && ((k >= R_INTER && k < R_SIZE) || k == R_ASSOC
                                        || k == R_MAPPED);
            if (must_fail != (ref->r[rv][k].rc != PSI_OK))
                fail_msg("%s: single engine %s reveal=%d returned %s", ts_where, r_names[k], rv,
                         psi_error_name(ref->r[rv][k].rc));
        }
}

static void compare_results(const results *want, const results *got)
{
    char what[96];
    for (int rv = 0; rv < 2; rv++)
        for (int k = 0; k < R_COUNT; k++) {
            snprintf(what, sizeof what, "%s (reveal %s)", r_names[k], rv ? "on" : "off");
            ts_expect_same(what, &want->r[rv][k], &got->r[rv][k]);
        }
}

/* One data set against the single engine for each (N, T) in `configs`. */
static void check_dataset(const keyset *k, const dataset *d, const size_t (*configs)[2],
                          size_t n_configs)
{
    party s[2] = {{k->s[0], NULL}, {k->s[1], NULL}}, c[2] = {{k->c[0], NULL}, {k->c[1], NULL}};
    results ref = {0};
    snprintf(ts_where, sizeof ts_where, "ns=%zu nc=%zu single engine seed=%llu", d->ns, d->nc,
             (unsigned long long)ts_seed);
    run_all(&ref, s, c, d, NULL);
    check_reference(&ref);
    for (size_t i = 0; i < n_configs; i++) {
        size_t n = configs[i][0], t = configs[i][1];
        snprintf(ts_where, sizeof ts_where, "ns=%zu nc=%zu N=%zu T=%zu seed=%llu", d->ns, d->nc, n,
                 t, (unsigned long long)ts_seed);
        party gs[2], gc[2];
        for (int rv = 0; rv < 2; rv++) {
            gs[rv] = (party){NULL, ts_shards_new(k->s[rv], n, t)};
            gc[rv] = (party){NULL, ts_shards_new(k->c[rv], n, t)};
        }
        results got = {0};
        run_all(&got, gs, gc, d, &ref);
        compare_results(&ref, &got);
        results_free(&got);
        for (int rv = 0; rv < 2; rv++) {
            psi_shards_free(gs[rv].g);
            psi_shards_free(gc[rv].g);
        }
    }
    results_free(&ref);
}

static void test_shard_matches_single_engine(void **state)
{
    (void)state;
    static const size_t sizes[][2] = {{0, 0}, {0, 17}, {17, 0}, {1, 1}, {2, 2},
                                      {1, 40}, {40, 2}, {17, 40}, {40, 17}};
    static const size_t ns_[] = {1, 2, 3, 5, 7, 8, 16}, ts_[] = {1, 2, 4};
    /* Under valgrind (PSI_UNDER_VALGRIND, tests/meson.build), where this was
     * the run's longest test at 21 configurations, every shard count with
     * one thread count each, in turn: the same split, pool and merge code,
     * a third of the calls.  Elsewhere every pair. */
    int light = getenv("PSI_UNDER_VALGRIND") != NULL;
    size_t configs[21][2], m = 0;
    for (size_t i = 0; i < 7; i++)
        for (size_t j = 0; j < 3; j++) {
            if (light && j != i % 3)
                continue;
            configs[m][0] = ns_[i];
            configs[m++][1] = ts_[j];
        }
    uint64_t rng = ts_rng_for(1);
    for (unsigned round = 0; round < test_iters(); round++) {
        keyset k;
        ts_keyset_make(&k, &rng);
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            dataset d;
            ts_dataset_make(&d, &rng, sizes[i][0], sizes[i][1]);
            check_dataset(&k, &d, (const size_t(*)[2])configs, m);
            ts_dataset_free(&d);
        }
        ts_keyset_free(&k);
    }
}

/* One larger run, on fewer configurations to keep the time down. */
static void test_shard_matches_single_engine_300(void **state)
{
    (void)state;
    static const size_t configs[][2] = {{7, 4}, {2, 2}, {5, 1}, {16, 2}};
    /* under valgrind the first only: each configuration is 25 s there */
    size_t n_configs = getenv("PSI_UNDER_VALGRIND") != NULL ? 1 : sizeof configs / sizeof configs[0];
    uint64_t rng = ts_rng_for(2);
    keyset k;
    ts_keyset_make(&k, &rng);
    dataset d;
    ts_dataset_make(&d, &rng, 300, 290);
    check_dataset(&k, &d, configs, n_configs);
    ts_dataset_free(&d);
    ts_keyset_free(&k);
}

/* N > n: most shards are empty. */
static void test_shard_more_shards_than_values(void **state)
{
    (void)state;
    static const size_t configs[][2] = {{16, 1}, {16, 4}, {64, 2}};
    uint64_t rng = ts_rng_for(3);
    keyset k;
    ts_keyset_make(&k, &rng);
    dataset d;
    ts_dataset_make(&d, &rng, 3, 3);
    check_dataset(&k, &d, configs, sizeof configs / sizeof configs[0]);
    ts_dataset_free(&d);
    ts_keyset_free(&k);
}

/* n = 0 with NULL pointers and zero-length messages. */
static void test_shard_empty_inputs(void **state)
{
    (void)state;
    uint64_t rng = ts_rng_for(4);
    keyset k;
    ts_keyset_make(&k, &rng);
    for (int rv = 0; rv < 2; rv++) {
        snprintf(ts_where, sizeof ts_where, "empty inputs, reveal %d, N=4 T=2 seed=%llu", rv,
                 (unsigned long long)ts_seed);
        party s = {k.s[rv], NULL}, c = {k.c[rv], NULL};
        party gs = {NULL, ts_shards_new(k.s[rv], 4, 2)}, gc = {NULL, ts_shards_new(k.c[rv], 4, 2)};
        call mask = {.op = OP_MASK}, remask = {.op = OP_REMASK}, unmask = {.op = OP_UNMASK};
        assert_int_equal(ts_expect_same_call("mask", s, gs, &mask), PSI_OK);
        assert_int_equal(ts_expect_same_call("remask", s, gs, &remask), PSI_OK);
        assert_int_equal(ts_expect_same_call("unmask", c, gc, &unmask), PSI_OK);
        call rq = {.op = OP_REQUEST, .cap = psi_request_bound(PSI_SUITE_OPENMINED_P256, 0)};
        assert_int_equal(ts_expect_same_call("create_request", c, gc, &rq), PSI_OK);
        out req = ts_run_call(c, &rq);
        call pr = {.op = OP_PROCESS, .a = req.len ? req.p : NULL, .a_len = req.len, .cap = 0};
        assert_int_equal(ts_expect_same_call("process_request", s, gs, &pr), PSI_OK);
        for (int st = 0; st < N_SETUPS; st++) {
            call su = {.op = OP_SETUP, .want_perm = 1, .params = setup_params(st, 0)};
            assert_int_equal(psi_setup_bound(&su.cap, PSI_SUITE_OPENMINED_P256, &su.params, 0), PSI_OK);
            assert_int_equal(ts_expect_same_call(r_names[R_SETUP + st], s, gs, &su), PSI_OK);
            out setup = ts_run_call(s, &su);
            call m = {.op = OP_SIZE, .a = setup.p, .a_len = setup.len};
            assert_int_equal(ts_expect_same_call(r_names[R_SIZE + st], c, gc, &m), PSI_OK);
            m.op = OP_INTER;
            ts_expect_same_call(r_names[R_INTER + st], c, gc, &m);
            m.op = OP_ASSOC;
            ts_expect_same_call("get_association", c, gc, &m);
            ts_out_free(&setup);
        }
        ts_out_free(&req);
        psi_shards_free(gs.g);
        psi_shards_free(gc.g);
    }
    ts_keyset_free(&k);
}

/* ------------------------------------------------------ error identity */

typedef struct bad_variant {
    size_t n_bad;
    size_t index[2];
    enum bad_kind kind[2];
} bad_variant;

static const bad_variant bad_variants[] = {
    {2, {7, 2}, {BAD_PREFIX_05, BAD_X_ONE}}, /* the brief's example: element 2 wins */
    {2, {2, 7}, {BAD_PREFIX_05, BAD_X_ONE}},
    {2, {9, 0}, {BAD_PREFIX_04, BAD_X_P}},
    {1, {9, 0}, {BAD_X_P, BAD_X_P}},
    {2, {5, 4}, {BAD_X_ONE, BAD_PREFIX_05}},
};

/* The code of the variant's lowest-indexed bad point. */
static int first_bad_code(const bad_variant *b)
{
    static const int code[] = {[BAD_PREFIX_05] = PSI_E_POINT_PREFIX,
                               [BAD_X_ONE] = PSI_E_POINT_NOT_ON_CURVE,
                               [BAD_X_P] = PSI_E_POINT_X_RANGE,
                               [BAD_PREFIX_04] = PSI_E_POINT_PREFIX};
    size_t j = b->n_bad == 2 && b->index[1] < b->index[0] ? 1 : 0;
    return code[b->kind[j]];
}

/* Calls that must all fail with the single engine's code: remask and
 * process_request on the server, unmask and the three match calls on the
 * client. */
static void check_bad_points(const keyset *k, const uint8_t *el, size_t n, const uint8_t *setup,
                             size_t setup_len, party gs, party gc, int want)
{
    party s = {k->s[1], NULL}, c = {k->c[1], NULL};
    size_t cap = psi_request_bound(PSI_SUITE_OPENMINED_P256, n);
    uint8_t *msg = malloc(cap);
    assert_non_null(msg);
    assert_int_equal(tm_encode(msg, &cap, PSI_SUITE_OPENMINED_P256, PSI_MESSAGE_REQUEST, 1, el, n),
                     PSI_OK);
    call pr = {.op = OP_PROCESS, .a = msg, .a_len = cap, .cap = psi_response_bound(PSI_SUITE_OPENMINED_P256, n)};
    assert_int_equal(ts_expect_same_call("process_request", s, gs, &pr), want);
    call pts = {.op = OP_REMASK, .a = el, .a_len = n, .cap = n * EB};
    assert_int_equal(ts_expect_same_call("remask", s, gs, &pts), want);
    pts.op = OP_UNMASK;
    assert_int_equal(ts_expect_same_call("unmask", c, gc, &pts), want);
    cap = psi_response_bound(PSI_SUITE_OPENMINED_P256, n);
    assert_int_equal(tm_encode(msg, &cap, PSI_SUITE_OPENMINED_P256, PSI_MESSAGE_RESPONSE, 0, el, n),
                     PSI_OK);
    static const op_id ops[] = {OP_INTER, OP_SIZE, OP_ASSOC};
    static const char *const names[] = {"get_intersection", "get_intersection_size",
                                        "get_association"};
    for (int i = 0; i < 3; i++) {
        call m = {.op = ops[i], .a = setup, .a_len = setup_len, .b = msg, .b_len = cap,
                  .cap = n};
        assert_int_equal(ts_expect_same_call(names[i], c, gc, &m), want);
    }
    free(msg);
}

/* Bad points in different shards: the sharded call returns the error of
 * the first bad point, as the single engine does, not the first shard to
 * finish or the worst code. */
static void test_shard_bad_points_first_error_wins(void **state)
{
    (void)state;
    static const size_t configs[][2] = {{1, 1}, {2, 2}, {3, 4}, {5, 2}, {5, 4}, {8, 2}};
    uint64_t rng = ts_rng_for(5);
    keyset k;
    ts_keyset_make(&k, &rng);
    dataset d;
    ts_dataset_make(&d, &rng, 10, 10);
    uint8_t good[10 * EB], el[10 * EB], setup[1024];
    size_t len = sizeof good, setup_len = sizeof setup;
    psi_setup_params raw = {PSI_STRUCTURE_RAW, 0, 0};
    assert_int_equal(psi_engine_mask(k.c[1], good, &len, d.cv, 10), PSI_OK);
    assert_int_equal(psi_server_create_setup(k.s[1], setup, &setup_len, NULL, &raw, d.sv, 10),
                     PSI_OK);
    /* Three rounds: with several threads, shards finish in varying order. */
    for (size_t i = 0; i < 3 * (sizeof configs / sizeof configs[0]); i++) {
        const size_t *cfg = configs[i % (sizeof configs / sizeof configs[0])];
        party gs = {NULL, ts_shards_new(k.s[1], cfg[0], cfg[1])};
        party gc = {NULL, ts_shards_new(k.c[1], cfg[0], cfg[1])};
        for (size_t v = 0; v < sizeof bad_variants / sizeof bad_variants[0]; v++) {
            const bad_variant *b = &bad_variants[v];
            memcpy(el, good, sizeof el);
            for (size_t j = 0; j < b->n_bad; j++)
                ts_corrupt(el, b->index[j], b->kind[j]);
            snprintf(ts_where, sizeof ts_where, "bad points variant %zu, N=%zu T=%zu seed=%llu", v,
                     cfg[0], cfg[1], (unsigned long long)ts_seed);
            check_bad_points(&k, el, 10, setup, setup_len, gs, gc, first_bad_code(b));
            for (int mode = PLAN_REMOTE; i == 0 && mode <= PLAN_EXTERNAL; mode++) {
                party ps = {k.s[1], NULL, (party_mode)mode, 4};
                party pc = {k.c[1], NULL, (party_mode)mode, 4};
                snprintf(ts_where, sizeof ts_where, "bad points variant %zu, %s plan", v,
                         mode == PLAN_REMOTE ? "remote" : "external");
                check_bad_points(&k, el, 10, setup, setup_len, ps, pc, first_bad_code(b));
            }
        }
        psi_shards_free(gs.g);
        psi_shards_free(gc.g);
    }
    ts_dataset_free(&d);
    ts_keyset_free(&k);
}

/* Messages of a valid round for the error tests: request (reveal rv),
 * raw and GCS setups, response. */
typedef struct round {
    out req[2], resp[2], setup_raw, setup_gcs;
} round;

static void round_make(round *r, const keyset *k, const dataset *d)
{
    for (int rv = 0; rv < 2; rv++) {
        call rq = {.op = OP_REQUEST, .values = d->cv, .n = d->nc, .cap = psi_request_bound(PSI_SUITE_OPENMINED_P256, d->nc)};
        r->req[rv] = ts_run_call((party){k->c[rv], NULL}, &rq);
        call pr = {.op = OP_PROCESS, .a = r->req[rv].p, .a_len = r->req[rv].len,
                   .cap = psi_response_bound(PSI_SUITE_OPENMINED_P256, d->nc)};
        r->resp[rv] = ts_run_call((party){k->s[rv], NULL}, &pr);
        assert_int_equal(r->resp[rv].rc, PSI_OK);
    }
    call su = {.op = OP_SETUP, .params = setup_params(0, d->nc), .values = d->sv, .n = d->ns,
               .cap = 4096};
    r->setup_raw = ts_run_call((party){k->s[1], NULL}, &su);
    su.params = setup_params(1, d->nc);
    r->setup_gcs = ts_run_call((party){k->s[1], NULL}, &su);
    assert_int_equal(r->setup_raw.rc | r->setup_gcs.rc, PSI_OK);
}

static void round_free(round *r)
{
    for (int rv = 0; rv < 2; rv++) {
        ts_out_free(&r->req[rv]);
        ts_out_free(&r->resp[rv]);
    }
    ts_out_free(&r->setup_raw);
    ts_out_free(&r->setup_gcs);
}

/* A server call on client shards and the reverse. */
static void check_wrong_role(const keyset *k, const dataset *d, const round *r, party gs,
                             party gc)
{
    party s = {k->s[1], NULL}, c = {k->c[1], NULL};
    call su = {.op = OP_SETUP, .params = setup_params(0, d->nc), .values = d->sv, .n = d->ns,
               .cap = 4096, .want_perm = 1};
    assert_int_equal(ts_expect_same_call("create_setup by a client", c, gc, &su), PSI_E_WRONG_ROLE);
    call pr = {.op = OP_PROCESS, .a = r->req[1].p, .a_len = r->req[1].len, .cap = 4096};
    assert_int_equal(ts_expect_same_call("process_request by a client", c, gc, &pr),
                     PSI_E_WRONG_ROLE);
    call rq = {.op = OP_REQUEST, .values = d->cv, .n = d->nc, .cap = 4096};
    assert_int_equal(ts_expect_same_call("create_request by a server", s, gs, &rq),
                     PSI_E_WRONG_ROLE);
    call m = {.a = r->setup_raw.p, .a_len = r->setup_raw.len, .b = r->resp[1].p,
              .b_len = r->resp[1].len, .cap = 64};
    static const op_id ops[] = {OP_INTER, OP_SIZE, OP_ASSOC};
    for (int i = 0; i < 3; i++) {
        m.op = ops[i];
        assert_int_equal(ts_expect_same_call("match by a server", s, gs, &m), PSI_E_WRONG_ROLE);
    }
}

/* Reveal mismatch both ways; intersection and association with reveal off. */
static void check_reveal_errors(const keyset *k, const round *r, const size_t cfg[2])
{
    for (int rv = 0; rv < 2; rv++) {
        party s = {k->s[rv], NULL}, c = {k->c[rv], NULL};
        party gs = {NULL, ts_shards_new(k->s[rv], cfg[0], cfg[1])};
        party gc = {NULL, ts_shards_new(k->c[rv], cfg[0], cfg[1])};
        call pr = {.op = OP_PROCESS, .a = r->req[!rv].p, .a_len = r->req[!rv].len, .cap = 4096};
        assert_int_equal(ts_expect_same_call("process_request, other reveal flag", s, gs, &pr),
                         PSI_E_REVEAL_MISMATCH);
        call m = {.op = OP_INTER, .a = r->setup_raw.p, .a_len = r->setup_raw.len,
                  .b = r->resp[rv].p, .b_len = r->resp[rv].len, .cap = 64};
        assert_int_equal(ts_expect_same_call("get_intersection", c, gc, &m), rv ? PSI_OK
                                                                             : PSI_E_REVEAL_DISABLED);
        m.op = OP_ASSOC;
        ts_expect_same_call("get_association", c, gc, &m);
        psi_shards_free(gs.g);
        psi_shards_free(gc.g);
    }
}

/* Every output one item short (and empty): the same code, *len = 0. */
static void check_small_buffers(const keyset *k, const dataset *d, const round *r, party gs,
                                party gc)
{
    party s = {k->s[1], NULL}, c = {k->c[1], NULL};
    size_t count = 0;
    assert_int_equal(psi_client_get_intersection_size(k->c[1], &count, r->setup_raw.p,
                                                      r->setup_raw.len, r->resp[1].p,
                                                      r->resp[1].len), PSI_OK);
    assert_true(count > 0);
    call calls[] = {
        {.op = OP_SETUP, .params = setup_params(0, d->nc), .values = d->sv, .n = d->ns,
         .cap = r->setup_raw.len},
        {.op = OP_SETUP, .params = setup_params(1, d->nc), .values = d->sv, .n = d->ns,
         .cap = r->setup_gcs.len},
        {.op = OP_REQUEST, .values = d->cv, .n = d->nc, .cap = r->req[1].len},
        {.op = OP_PROCESS, .a = r->req[1].p, .a_len = r->req[1].len, .cap = r->resp[1].len},
        {.op = OP_MASK, .values = d->sv, .n = d->ns, .cap = d->ns * EB},
        {.op = OP_INTER, .a = r->setup_raw.p, .a_len = r->setup_raw.len, .b = r->resp[1].p,
         .b_len = r->resp[1].len, .cap = count},
        {.op = OP_ASSOC, .a = r->setup_raw.p, .a_len = r->setup_raw.len, .b = r->resp[1].p,
         .b_len = r->resp[1].len, .cap = count},
    };
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        int server = calls[i].op == OP_SETUP || calls[i].op == OP_PROCESS
                     || calls[i].op == OP_MASK;
        party one = server ? s : c, many = server ? gs : gc;
        ts_expect_same_call("exact capacity", one, many, &calls[i]);
        calls[i].cap--;
        assert_int_equal(ts_expect_same_call("capacity one short", one, many, &calls[i]),
                         PSI_E_BUFFER_TOO_SMALL);
        calls[i].cap = 0;
        assert_int_equal(ts_expect_same_call("capacity 0", one, many, &calls[i]),
                         PSI_E_BUFFER_TOO_SMALL);
    }
}

/* Bad setup parameters, bad setups and a bad request. */
static void check_bad_messages(const keyset *k, const dataset *d, const round *r, party gs,
                               party gc)
{
    party s = {k->s[1], NULL}, c = {k->c[1], NULL};
    call su = {.op = OP_SETUP, .params = {PSI_STRUCTURE_GCS, 1.0, 1}, .values = d->sv,
               .n = d->ns, .cap = 4096};
    assert_int_equal(ts_expect_same_call("setup with fpr 1", s, gs, &su), PSI_E_FPR);
    su.params = (psi_setup_params){(psi_structure)3, 0.01, 1};
    assert_int_equal(ts_expect_same_call("setup with structure 3", s, gs, &su), PSI_E_STRUCTURE);
    call pr = {.op = OP_PROCESS, .a = r->req[1].p, .a_len = r->req[1].len - 1, .cap = 4096};
    assert_int_not_equal(ts_expect_same_call("truncated request", s, gs, &pr), PSI_OK);
    uint8_t *bad = malloc(r->setup_raw.len);
    assert_non_null(bad);
    memcpy(bad, r->setup_raw.p, r->setup_raw.len);
    /* The first and last element swapped (3 header bytes, then 35 bytes
     * per element, its point after 2). */
    size_t last = 3 + (d->ns - 1) * 35 + 2;
    assert_true(r->setup_raw.len == 3 + d->ns * 35);
    assert_memory_not_equal(bad + 5, bad + last, EB);
    memcpy(bad + 5, r->setup_raw.p + last, EB);
    memcpy(bad + last, r->setup_raw.p + 5, EB);
    const struct { const char *what; const uint8_t *p; size_t len; } setups[] = {
        {"unsorted raw setup", bad, r->setup_raw.len},
        {"truncated raw setup", r->setup_raw.p, r->setup_raw.len - 1},
        {"truncated gcs setup", r->setup_gcs.p, r->setup_gcs.len - 1},
        {"empty setup", NULL, 0},
    };
    static const op_id ops[] = {OP_INTER, OP_SIZE, OP_ASSOC};
    for (size_t i = 0; i < sizeof setups / sizeof setups[0]; i++)
        for (int j = 0; j < 3; j++) {
            call m = {.op = ops[j], .a = setups[i].p, .a_len = setups[i].len,
                      .b = r->resp[1].p, .b_len = r->resp[1].len, .cap = 64};
            assert_int_not_equal(ts_expect_same_call(setups[i].what, c, gc, &m), PSI_OK);
        }
    call m = {.op = OP_SIZE, .a = r->setup_raw.p, .a_len = r->setup_raw.len,
              .b = r->resp[1].p, .b_len = r->resp[1].len - 1};
    assert_int_not_equal(ts_expect_same_call("truncated response", c, gc, &m), PSI_OK);
    free(bad);
}

/* NULL where the header does not allow it, and NULL shards. */
static void check_null_args(const dataset *d, const round *r, psi_shards *gs, psi_shards *gc)
{
    uint8_t buf[64];
    size_t len = sizeof buf, idx[4];
    psi_pair pairs[4];
    psi_setup_params p = setup_params(0, 1);
    assert_int_equal(psi_shards_mask(gs, NULL, &len, d->sv, d->ns), PSI_E_INVALID_ARG);
    assert_int_equal(len, 0);
    assert_int_equal(psi_shards_mask(gs, buf, NULL, d->sv, d->ns), PSI_E_INVALID_ARG);
    len = sizeof buf;
    assert_int_equal(psi_shards_mask(gs, buf, &len, NULL, 1), PSI_E_INVALID_ARG);
    len = sizeof buf;
    assert_int_equal(psi_shards_remask(gs, buf, &len, NULL, 1), PSI_E_INVALID_ARG);
    len = sizeof buf;
    assert_int_equal(psi_shards_unmask(gc, buf, &len, NULL, 1), PSI_E_INVALID_ARG);
    len = sizeof buf;
    assert_int_equal(psi_shards_server_create_setup(gs, buf, &len, NULL, NULL, d->sv, 1),
                     PSI_E_INVALID_ARG);
    len = sizeof buf;
    assert_int_equal(psi_shards_server_process_request(gs, buf, &len, NULL, 5),
                     PSI_E_INVALID_ARG);
    len = 4;
    assert_int_equal(psi_shards_client_get_intersection(gc, NULL, &len, r->setup_raw.p,
                                                        r->setup_raw.len, r->resp[1].p,
                                                        r->resp[1].len), PSI_E_INVALID_ARG);
    assert_int_equal(psi_shards_client_get_intersection_size(gc, NULL, r->setup_raw.p,
                                                             r->setup_raw.len, r->resp[1].p,
                                                             r->resp[1].len), PSI_E_INVALID_ARG);
    len = sizeof buf;
    assert_int_equal(psi_shards_mask(NULL, buf, &len, d->sv, 1), PSI_E_INVALID_ARG);
    assert_int_equal(len, 0);
    len = sizeof buf;
    assert_int_equal(psi_shards_remask(NULL, buf, &len, NULL, 0), PSI_E_INVALID_ARG);
    len = sizeof buf;
    assert_int_equal(psi_shards_unmask(NULL, buf, &len, NULL, 0), PSI_E_INVALID_ARG);
    len = sizeof buf;
    assert_int_equal(psi_shards_server_create_setup(NULL, buf, &len, NULL, &p, NULL, 0),
                     PSI_E_INVALID_ARG);
    len = sizeof buf;
    assert_int_equal(psi_shards_server_process_request(NULL, buf, &len, NULL, 0),
                     PSI_E_INVALID_ARG);
    len = sizeof buf;
    assert_int_equal(psi_shards_client_create_request(NULL, buf, &len, NULL, 0),
                     PSI_E_INVALID_ARG);
    len = 4;
    assert_int_equal(psi_shards_client_get_intersection(NULL, idx, &len, NULL, 0, NULL, 0),
                     PSI_E_INVALID_ARG);
    assert_int_equal(len, 0);
    len = 4;
    assert_int_equal(psi_shards_client_get_intersection_size(NULL, &len, NULL, 0, NULL, 0),
                     PSI_E_INVALID_ARG);
    assert_int_equal(len, 0);
    len = 4;
    assert_int_equal(psi_shards_client_get_association(NULL, pairs, &len, NULL, 0, NULL, 0),
                     PSI_E_INVALID_ARG);
    assert_int_equal(len, 0);
}

/* The payload table (PROTOCOL.md §22) through the shards: the same bytes as
 * the single engine's masks and psi_payload_table_build for every shard and
 * thread count and suite, the size asked without masking, and a client's
 * shards refused. */
static void test_shard_payload_table(void **state)
{
    (void)state;
    enum { N = 257 };
    static char vb[N][16], pb[N][24];
    psi_value v[N], p[N];
    uint8_t salt[PSI_PAYLOAD_SALT_BYTES], key[32];
    memset(salt, 0x5a, sizeof salt);
    memset(key, 0x07, sizeof key);
    for (size_t i = 0; i < N; i++) {
        snprintf(vb[i], sizeof vb[i], "row-%zu", i);
        snprintf(pb[i], sizeof pb[i], "seg %zu", i * 31 % 1000);
        v[i] = (psi_value){(const uint8_t *)vb[i], strlen(vb[i])};
        p[i] = (psi_value){(const uint8_t *)pb[i], strlen(pb[i]) - i % 3};
    }
    for (int suite = 0; suite < 3; suite++) {
        psi_settings st;
        psi_engine *e = NULL, *c = NULL;
        psi_settings_default(&st);
        st.role = PSI_ROLE_SERVER;
        st.suite = (psi_suite)suite;
        assert_int_equal(psi_engine_create_from_key(&e, &st, key, sizeof key), PSI_OK);
        size_t el_len = N * PSI_ELEMENT_BYTES, len = psi_payload_table_bytes(N, 24);
        uint8_t *el = malloc(el_len), *want = malloc(len), *got = malloc(len);
        assert_int_equal(psi_engine_mask(e, el, &el_len, v, N), PSI_OK);
        size_t want_len = len;
        assert_int_equal(psi_payload_table_build(suite, want, &want_len, el, p, N, 0, salt), PSI_OK);
        static const size_t shards[][2] = {{1, 1}, {2, 2}, {3, 1}, {8, 4}, {5, 2}};
        for (size_t k = 0; k < sizeof shards / sizeof shards[0]; k++) {
            psi_shard_settings ss;
            psi_shards *g = NULL;
            psi_shard_settings_default(&ss);
            ss.shards = shards[k][0];
            ss.threads = shards[k][1];
            assert_int_equal(psi_shards_create(&g, e, &ss), PSI_OK);
            size_t need = 0;
            assert_int_equal(psi_shards_payload_table_build(g, NULL, &need, v, p, N, 0, salt),
                             PSI_E_BUFFER_TOO_SMALL);
            assert_int_equal(need, want_len);
            size_t got_len = len;
            assert_int_equal(psi_shards_payload_table_build(g, got, &got_len, v, p, N, 0, salt),
                             PSI_OK);
            assert_int_equal(got_len, want_len);
            assert_memory_equal(got, want, want_len);
            psi_shards_free(g);
        }
        st.role = PSI_ROLE_CLIENT;
        assert_int_equal(psi_engine_create_from_key(&c, &st, key, sizeof key), PSI_OK);
        psi_shard_settings ss;
        psi_shards *g = NULL;
        psi_shard_settings_default(&ss);
        assert_int_equal(psi_shards_create(&g, c, &ss), PSI_OK);
        size_t l = len;
        assert_int_equal(psi_shards_payload_table_build(g, got, &l, v, p, N, 0, salt),
                         PSI_E_WRONG_ROLE);
        psi_shards_free(g);
        psi_engine_free(c);
        psi_engine_free(e);
        free(el);
        free(want);
        free(got);
    }
}

static void test_shard_errors_match_single_engine(void **state)
{
    (void)state;
    static const size_t configs[][2] = {{1, 1}, {2, 2}, {3, 4}, {8, 2}};
    uint64_t rng = ts_rng_for(6);
    keyset k;
    ts_keyset_make(&k, &rng);
    dataset d;
    ts_dataset_make(&d, &rng, 11, 12);
    round r;
    round_make(&r, &k, &d);
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        snprintf(ts_where, sizeof ts_where, "errors, N=%zu T=%zu seed=%llu", configs[i][0],
                 configs[i][1], (unsigned long long)ts_seed);
        party gs = {NULL, ts_shards_new(k.s[1], configs[i][0], configs[i][1])};
        party gc = {NULL, ts_shards_new(k.c[1], configs[i][0], configs[i][1])};
        check_wrong_role(&k, &d, &r, gs, gc);
        check_reveal_errors(&k, &r, configs[i]);
        check_small_buffers(&k, &d, &r, gs, gc);
        check_bad_messages(&k, &d, &r, gs, gc);
        check_null_args(&d, &r, gs.g, gc.g);
        psi_shards_free(gs.g);
        psi_shards_free(gc.g);
    }
    /* The same errors from the step API driven by other executors (§19). */
    for (int mode = PLAN_REMOTE; mode <= PLAN_EXTERNAL; mode++) {
        snprintf(ts_where, sizeof ts_where, "errors, %s plan of 3 slices, seed=%llu",
                 mode == PLAN_REMOTE ? "remote" : "external", (unsigned long long)ts_seed);
        party ps = {k.s[1], NULL, (party_mode)mode, 3}, pc = {k.c[1], NULL, (party_mode)mode, 3};
        check_wrong_role(&k, &d, &r, ps, pc);
        check_small_buffers(&k, &d, &r, ps, pc);
        check_bad_messages(&k, &d, &r, ps, pc);
    }
    round_free(&r);
    ts_dataset_free(&d);
    ts_keyset_free(&k);
}

int main(void)
{
    ts_seed = tu_seed("shard");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shard_matches_single_engine),
        cmocka_unit_test(test_shard_matches_single_engine_300),
        cmocka_unit_test(test_shard_more_shards_than_values),
        cmocka_unit_test(test_shard_empty_inputs),
        cmocka_unit_test(test_shard_bad_points_first_error_wins),
        cmocka_unit_test(test_shard_errors_match_single_engine),
        cmocka_unit_test(test_shard_payload_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
