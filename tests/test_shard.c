/* The sharding layer (psi_shard.h, PROTOCOL.md §14) against the single
 * engine, which is the reference: every byte, length, index and error code
 * of a psi_shards_* call must equal the psi.h call's on an engine with the
 * same key, for every shard count N and thread count T.  Also the committed
 * vectors run through psi_shards, the pure steps (plan, run_one,
 * merge_sorted), argument errors and progress.  Public API only.
 * Random cases print their seed; PSI_TEST_SEED replays one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "psi.h"
#include "psi_shard.h"
#include "test_util.h"

#define VEC_OPENMINED PSI_SOURCE_ROOT "/vectors/openmined-psi-2.0.6.json"
#define VEC_SAMPLE PSI_SOURCE_ROOT "/../shared/reference/sample-vectors.json"
#define VEC_EXTRA PSI_SOURCE_ROOT "/vectors/shardpsi-extra.json"
#define EB PSI_ELEMENT_BYTES
#define FILL 0xaa /* output buffers start with it: a failed call may leave
                     them untouched or wiped to 0, nothing else */

static uint64_t g_seed;
static char g_where[256]; /* the case being checked, in every failure */

/* Each test draws from its own stream, so one can be replayed alone. */
static uint64_t rng_for(uint64_t tag)
{
    uint64_t s = g_seed ^ (tag * 0x9e3779b97f4a7c15ULL);
    if (s == 0)
        s = 1;
    tu_rand(&s);
    return s;
}

/* PSI_TEST_ITERS: rounds of the random identity test (default 1). */
static unsigned test_iters(void)
{
    const char *env = getenv("PSI_TEST_ITERS");
    unsigned long v = env != NULL ? strtoul(env, NULL, 10) : 1;
    return v == 0 || v > 1000 ? 1 : (unsigned)v;
}

/* A random scalar below 2^255 (< n) and odd (non-zero). */
static void random_key(uint64_t *rng, uint8_t key[PSI_KEY_BYTES])
{
    for (size_t i = 0; i < PSI_KEY_BYTES; i++)
        key[i] = (uint8_t)tu_rand(rng);
    key[0] &= 0x7f;
    key[PSI_KEY_BYTES - 1] |= 1;
}

static psi_engine *engine_new(psi_role role, int reveal, const uint8_t *key, size_t key_len)
{
    psi_settings s;
    psi_engine *e = NULL;
    psi_settings_default(&s);
    s.role = role;
    s.reveal_intersection = reveal;
    assert_int_equal(psi_engine_create_from_key(&e, &s, key, key_len), PSI_OK);
    return e;
}

static psi_shards *shards_new(const psi_engine *e, size_t n, size_t t)
{
    psi_shard_settings s;
    psi_shards *g = NULL;
    psi_shard_settings_default(&s);
    s.shards = n;
    s.threads = t;
    assert_int_equal(psi_shards_create(&g, e, &s), PSI_OK);
    assert_int_equal(psi_shards_count(g), n);
    return g;
}

/* ------------------------------------------------- one call, either side */

/* One party: the single engine (g NULL) or the shards of the same key. */
typedef struct party {
    const psi_engine *e;
    psi_shards *g;
} party;

typedef enum op_id {
    OP_SETUP, OP_PROCESS, OP_REQUEST, OP_INTER, OP_SIZE, OP_ASSOC, OP_MASK, OP_REMASK,
    OP_UNMASK
} op_id;

/* The arguments of one call; a and b are messages or points (a_len is a
 * point count for OP_REMASK and OP_UNMASK). */
typedef struct call {
    op_id op;
    size_t cap;                 /* output capacity in items */
    int want_perm;              /* OP_SETUP: pass a perm array of n entries */
    psi_setup_params params;
    const psi_value *values;
    size_t n;
    const uint8_t *a;
    size_t a_len;
    const uint8_t *b;
    size_t b_len;
} call;

/* What one call returned: code, length (bytes or items) and output. */
typedef struct out {
    int rc;
    size_t len;
    size_t item;                /* bytes per item; 0 for a count */
    size_t cap;
    uint8_t *p;
    size_t *perm;
    size_t n_perm;
} out;

static const size_t op_item[] = {
    [OP_SETUP] = 1, [OP_PROCESS] = 1, [OP_REQUEST] = 1, [OP_INTER] = sizeof(size_t),
    [OP_SIZE] = 0, [OP_ASSOC] = sizeof(psi_pair), [OP_MASK] = 1, [OP_REMASK] = 1,
    [OP_UNMASK] = 1,
};

static int dispatch_server(party p, out *o, const call *c)
{
    if (c->op == OP_SETUP)
        return p.g ? psi_shards_server_create_setup(p.g, o->p, &o->len, o->perm, &c->params,
                                                    c->values, c->n)
                   : psi_server_create_setup(p.e, o->p, &o->len, o->perm, &c->params,
                                             c->values, c->n);
    if (c->op == OP_PROCESS)
        return p.g ? psi_shards_server_process_request(p.g, o->p, &o->len, c->a, c->a_len)
                   : psi_server_process_request(p.e, o->p, &o->len, c->a, c->a_len);
    if (c->op == OP_MASK)
        return p.g ? psi_shards_mask(p.g, o->p, &o->len, c->values, c->n)
                   : psi_engine_mask(p.e, o->p, &o->len, c->values, c->n);
    if (c->op == OP_REMASK)
        return p.g ? psi_shards_remask(p.g, o->p, &o->len, c->a, c->a_len)
                   : psi_engine_remask(p.e, o->p, &o->len, c->a, c->a_len);
    return p.g ? psi_shards_unmask(p.g, o->p, &o->len, c->a, c->a_len)
               : psi_engine_unmask(p.e, o->p, &o->len, c->a, c->a_len);
}

static int dispatch_client(party p, out *o, const call *c)
{
    if (c->op == OP_REQUEST)
        return p.g ? psi_shards_client_create_request(p.g, o->p, &o->len, c->values, c->n)
                   : psi_client_create_request(p.e, o->p, &o->len, c->values, c->n);
    if (c->op == OP_INTER)
        return p.g ? psi_shards_client_get_intersection(p.g, (size_t *)(void *)o->p, &o->len,
                                                        c->a, c->a_len, c->b, c->b_len)
                   : psi_client_get_intersection(p.e, (size_t *)(void *)o->p, &o->len, c->a,
                                                 c->a_len, c->b, c->b_len);
    if (c->op == OP_SIZE)
        return p.g ? psi_shards_client_get_intersection_size(p.g, &o->len, c->a, c->a_len,
                                                             c->b, c->b_len)
                   : psi_client_get_intersection_size(p.e, &o->len, c->a, c->a_len, c->b,
                                                      c->b_len);
    return p.g ? psi_shards_client_get_association(p.g, (psi_pair *)(void *)o->p, &o->len,
                                                   c->a, c->a_len, c->b, c->b_len)
               : psi_client_get_association(p.e, (psi_pair *)(void *)o->p, &o->len, c->a,
                                            c->a_len, c->b, c->b_len);
}

static out run_call(party p, const call *c)
{
    out o = {0, c->cap, op_item[c->op], c->cap, NULL, NULL, 0};
    if (o.item != 0 && c->cap != 0) {
        o.p = malloc(c->cap * o.item);
        assert_non_null(o.p);
        memset(o.p, FILL, c->cap * o.item);
    }
    if (c->want_perm && c->n > 0) {
        o.perm = calloc(c->n, sizeof *o.perm);
        assert_non_null(o.perm);
    }
    int server = c->op == OP_SETUP || c->op == OP_PROCESS || c->op == OP_MASK
                 || c->op == OP_REMASK || c->op == OP_UNMASK;
    o.rc = server ? dispatch_server(p, &o, c) : dispatch_client(p, &o, c);
    o.n_perm = o.rc == PSI_OK && c->want_perm ? c->n : 0;
    return o;
}

static void out_free(out *o)
{
    free(o->p);
    free(o->perm);
    memset(o, 0, sizeof *o);
}

static size_t first_difference(const uint8_t *a, const uint8_t *b, size_t n)
{
    size_t i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

static void expect_bytes(const char *what, const uint8_t *got, size_t got_len,
                         const uint8_t *want, size_t want_len)
{
    size_t n = got_len < want_len ? got_len : want_len;
    size_t i = n == 0 ? 0 : first_difference(got, want, n);
    if (got_len != want_len)
        fail_msg("%s, %s: %zu bytes, expected %zu (first difference at byte %zu)", g_where,
                 what, got_len, want_len, i);
    if (i < n)
        fail_msg("%s, %s: first difference at byte %zu of %zu (expected %02x, got %02x)",
                 g_where, what, i, n, want[i], got[i]);
}

static void expect_items(const char *what, const out *want, const out *got)
{
    size_t n = want->len * want->item, i = n == 0 ? 0 : first_difference(got->p, want->p, n);
    if (i < n && want->item == sizeof(size_t))
        fail_msg("%s, %s: first difference at index %zu of %zu (expected %zu, got %zu)",
                 g_where, what, i / want->item, want->len, ((const size_t *)(void *)want->p)[i / want->item],
                 ((const size_t *)(void *)got->p)[i / want->item]);
    if (i < n && want->item == sizeof(psi_pair))
        fail_msg("%s, %s: first difference at pair %zu of %zu", g_where, what,
                 i / want->item, want->len);
    expect_bytes(what, got->p, n, want->p, n);
}

/* A failed call leaves its output untouched or wiped, never partial. */
static void expect_no_partial(const char *what, const out *o)
{
    for (size_t i = 0; o->p != NULL && i < o->cap * o->item; i++)
        if (o->p[i] != FILL && o->p[i] != 0)
            fail_msg("%s, %s: failed with %s but wrote byte %zu", g_where, what,
                     psi_error_name(o->rc), i);
}

static void expect_same(const char *what, const out *want, const out *got)
{
    if (got->rc != want->rc)
        fail_msg("%s, %s: returned %s, single engine %s", g_where, what,
                 psi_error_name(got->rc), psi_error_name(want->rc));
    if (got->len != want->len)
        fail_msg("%s, %s: length %zu, single engine %zu", g_where, what, got->len, want->len);
    if (got->rc != PSI_OK) {
        assert_int_equal(got->len, 0);
        expect_no_partial(what, got);
        return;
    }
    if (want->item != 0)
        expect_items(what, want, got);
    if (got->n_perm != want->n_perm
        || (want->n_perm > 0 && memcmp(got->perm, want->perm, want->n_perm * sizeof(size_t))))
        fail_msg("%s, %s: permutation differs", g_where, what);
}

/* Runs one call on both sides and compares; returns the engine's code. */
static int expect_same_call(const char *what, party single, party sharded, const call *c)
{
    out want = run_call(single, c), got = run_call(sharded, c);
    int rc = want.rc;
    if (rc != PSI_OK)
        assert_int_equal(want.len, 0);
    expect_same(what, &want, &got);
    out_free(&want);
    out_free(&got);
    return rc;
}

/* ------------------------------------------- data sets with duplicates */

typedef struct dataset {
    size_t ns, nc;
    psi_value *sv, *cv;         /* NULL when empty */
    char (*text)[24];
} dataset;

/* Values "v<k>" (k = 0 is the empty string) from a domain about a third of
 * the combined size: duplicates on each side and shared values, and the
 * first and last value of each side equal, so copies land in different
 * shards whenever N > 1. */
static void dataset_make(dataset *d, uint64_t *rng, size_t ns, size_t nc)
{
    size_t dom = (ns + nc) / 3 + 2;
    d->ns = ns;
    d->nc = nc;
    d->text = calloc(ns + nc + 1, sizeof *d->text);
    d->sv = ns ? calloc(ns, sizeof *d->sv) : NULL;
    d->cv = nc ? calloc(nc, sizeof *d->cv) : NULL;
    assert_non_null(d->text);
    for (size_t i = 0; i < ns + nc; i++) {
        size_t k = (size_t)(tu_rand(rng) % dom);
        psi_value *v = i < ns ? &d->sv[i] : &d->cv[i - ns];
        if (k > 0)
            snprintf(d->text[i], sizeof d->text[i], "v%zu", k);
        *v = (psi_value){(const uint8_t *)d->text[i], strlen(d->text[i])};
    }
    if (ns > 1)
        d->sv[ns - 1] = d->sv[0];
    if (nc > 1)
        d->cv[nc - 1] = d->cv[0];
}

static void dataset_free(dataset *d)
{
    free(d->sv);
    free(d->cv);
    free(d->text);
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
        assert_int_equal(psi_setup_bound(&c.cap, &c.params, d->ns), PSI_OK);
        res->r[rv][R_SETUP + k] = run_call(s, &c);
    }
    const out *req = &in->r[rv][R_REQUEST];
    call c = {.op = OP_PROCESS, .a = req->p, .a_len = req->len,
              .cap = psi_response_bound(psi_message_element_bound(req->len))};
    res->r[rv][R_RESPONSE] = run_call(s, &c);
}

static void run_client(results *res, int rv, party cl, const results *in)
{
    const out *resp = &in->r[rv][R_RESPONSE];
    call c = {.b = resp->p, .b_len = resp->len, .cap = psi_message_element_bound(resp->len)};
    for (int k = 0; k < N_SETUPS; k++) {
        c.a = in->r[rv][R_SETUP + k].p;
        c.a_len = in->r[rv][R_SETUP + k].len;
        c.op = OP_INTER;
        res->r[rv][R_INTER + k] = run_call(cl, &c);
        c.op = OP_SIZE;
        res->r[rv][R_SIZE + k] = run_call(cl, &c);
    }
    c.op = OP_ASSOC;
    c.a = in->r[rv][R_SETUP].p;
    c.a_len = in->r[rv][R_SETUP].len;
    out *a = &res->r[rv][R_ASSOC], *m = &res->r[rv][R_MAPPED];
    *a = run_call(cl, &c);
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
    res->r[1][R_MASK] = run_call(cl, &c);
    c = (call){.op = OP_REMASK, .a = in->r[1][R_MASK].p, .a_len = in->r[1][R_MASK].len / EB,
               .cap = in->r[1][R_MASK].len};
    res->r[1][R_REMASK] = run_call(s, &c);
    c = (call){.op = OP_UNMASK, .a = in->r[1][R_REMASK].p, .a_len = in->r[1][R_REMASK].len / EB,
               .cap = in->r[1][R_REMASK].len};
    res->r[1][R_UNMASK] = run_call(cl, &c);
}

/* s[rv], c[rv]: server and client of each reveal flag. */
static void run_all(results *res, const party s[2], const party c[2], const dataset *d,
                    const results *in)
{
    if (in == NULL)
        in = res;
    for (int rv = 0; rv < 2; rv++) {
        call rq = {.op = OP_REQUEST, .values = d->cv, .n = d->nc,
                   .cap = psi_request_bound(d->nc)};
        res->r[rv][R_REQUEST] = run_call(c[rv], &rq);
        run_server(res, rv, s[rv], d, in);
        run_client(res, rv, c[rv], in);
    }
    run_mask_chain(res, s[1], c[1], d, in);
}

static void results_free(results *res)
{
    for (int rv = 0; rv < 2; rv++)
        for (int k = 0; k < R_COUNT; k++)
            out_free(&res->r[rv][k]);
}

/* The reference must itself succeed where the protocol allows it. */
static void check_reference(const results *ref)
{
    for (int rv = 0; rv < 2; rv++)
        for (int k = 0; k < R_COUNT; k++) {
            int must_fail = rv == 0 && ((k >= R_INTER && k < R_SIZE) || k == R_ASSOC
                                        || k == R_MAPPED);
            if (must_fail != (ref->r[rv][k].rc != PSI_OK))
                fail_msg("%s: single engine %s reveal=%d returned %s", g_where, r_names[k], rv,
                         psi_error_name(ref->r[rv][k].rc));
        }
}

static void compare_results(const results *want, const results *got)
{
    char what[96];
    for (int rv = 0; rv < 2; rv++)
        for (int k = 0; k < R_COUNT; k++) {
            snprintf(what, sizeof what, "%s (reveal %s)", r_names[k], rv ? "on" : "off");
            expect_same(what, &want->r[rv][k], &got->r[rv][k]);
        }
}

/* Engines of both roles and both reveal flags from two random keys. */
typedef struct keyset {
    psi_engine *s[2], *c[2];
} keyset;

static void keyset_make(keyset *k, uint64_t *rng)
{
    uint8_t ks[PSI_KEY_BYTES], kc[PSI_KEY_BYTES];
    random_key(rng, ks);
    random_key(rng, kc);
    for (int rv = 0; rv < 2; rv++) {
        k->s[rv] = engine_new(PSI_ROLE_SERVER, rv, ks, sizeof ks);
        k->c[rv] = engine_new(PSI_ROLE_CLIENT, rv, kc, sizeof kc);
    }
}

static void keyset_free(keyset *k)
{
    for (int rv = 0; rv < 2; rv++) {
        psi_engine_free(k->s[rv]);
        psi_engine_free(k->c[rv]);
    }
}

/* One data set against the single engine for each (N, T) in `configs`. */
static void check_dataset(const keyset *k, const dataset *d, const size_t (*configs)[2],
                          size_t n_configs)
{
    party s[2] = {{k->s[0], NULL}, {k->s[1], NULL}}, c[2] = {{k->c[0], NULL}, {k->c[1], NULL}};
    results ref = {0};
    snprintf(g_where, sizeof g_where, "ns=%zu nc=%zu single engine seed=%llu", d->ns, d->nc,
             (unsigned long long)g_seed);
    run_all(&ref, s, c, d, NULL);
    check_reference(&ref);
    for (size_t i = 0; i < n_configs; i++) {
        size_t n = configs[i][0], t = configs[i][1];
        snprintf(g_where, sizeof g_where, "ns=%zu nc=%zu N=%zu T=%zu seed=%llu", d->ns, d->nc, n,
                 t, (unsigned long long)g_seed);
        party gs[2], gc[2];
        for (int rv = 0; rv < 2; rv++) {
            gs[rv] = (party){NULL, shards_new(k->s[rv], n, t)};
            gc[rv] = (party){NULL, shards_new(k->c[rv], n, t)};
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
    size_t configs[21][2], m = 0;
    for (size_t i = 0; i < 7; i++)
        for (size_t j = 0; j < 3; j++) {
            configs[m][0] = ns_[i];
            configs[m++][1] = ts_[j];
        }
    uint64_t rng = rng_for(1);
    for (unsigned round = 0; round < test_iters(); round++) {
        keyset k;
        keyset_make(&k, &rng);
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            dataset d;
            dataset_make(&d, &rng, sizes[i][0], sizes[i][1]);
            check_dataset(&k, &d, (const size_t(*)[2])configs, m);
            dataset_free(&d);
        }
        keyset_free(&k);
    }
}

/* One larger run, on fewer configurations to keep the time down. */
static void test_shard_matches_single_engine_300(void **state)
{
    (void)state;
    static const size_t configs[][2] = {{2, 2}, {5, 1}, {7, 4}, {16, 2}};
    uint64_t rng = rng_for(2);
    keyset k;
    keyset_make(&k, &rng);
    dataset d;
    dataset_make(&d, &rng, 300, 290);
    check_dataset(&k, &d, configs, sizeof configs / sizeof configs[0]);
    dataset_free(&d);
    keyset_free(&k);
}

/* N > n: most shards are empty. */
static void test_shard_more_shards_than_values(void **state)
{
    (void)state;
    static const size_t configs[][2] = {{16, 1}, {16, 4}, {64, 2}};
    uint64_t rng = rng_for(3);
    keyset k;
    keyset_make(&k, &rng);
    dataset d;
    dataset_make(&d, &rng, 3, 3);
    check_dataset(&k, &d, configs, sizeof configs / sizeof configs[0]);
    dataset_free(&d);
    keyset_free(&k);
}

/* n = 0 with NULL pointers and zero-length messages. */
static void test_shard_empty_inputs(void **state)
{
    (void)state;
    uint64_t rng = rng_for(4);
    keyset k;
    keyset_make(&k, &rng);
    for (int rv = 0; rv < 2; rv++) {
        snprintf(g_where, sizeof g_where, "empty inputs, reveal %d, N=4 T=2 seed=%llu", rv,
                 (unsigned long long)g_seed);
        party s = {k.s[rv], NULL}, c = {k.c[rv], NULL};
        party gs = {NULL, shards_new(k.s[rv], 4, 2)}, gc = {NULL, shards_new(k.c[rv], 4, 2)};
        call mask = {.op = OP_MASK}, remask = {.op = OP_REMASK}, unmask = {.op = OP_UNMASK};
        assert_int_equal(expect_same_call("mask", s, gs, &mask), PSI_OK);
        assert_int_equal(expect_same_call("remask", s, gs, &remask), PSI_OK);
        assert_int_equal(expect_same_call("unmask", c, gc, &unmask), PSI_OK);
        call rq = {.op = OP_REQUEST, .cap = psi_request_bound(0)};
        assert_int_equal(expect_same_call("create_request", c, gc, &rq), PSI_OK);
        out req = run_call(c, &rq);
        call pr = {.op = OP_PROCESS, .a = req.len ? req.p : NULL, .a_len = req.len, .cap = 0};
        assert_int_equal(expect_same_call("process_request", s, gs, &pr), PSI_OK);
        for (int st = 0; st < N_SETUPS; st++) {
            call su = {.op = OP_SETUP, .want_perm = 1, .params = setup_params(st, 0)};
            assert_int_equal(psi_setup_bound(&su.cap, &su.params, 0), PSI_OK);
            assert_int_equal(expect_same_call(r_names[R_SETUP + st], s, gs, &su), PSI_OK);
            out setup = run_call(s, &su);
            call m = {.op = OP_SIZE, .a = setup.p, .a_len = setup.len};
            assert_int_equal(expect_same_call(r_names[R_SIZE + st], c, gc, &m), PSI_OK);
            m.op = OP_INTER;
            expect_same_call(r_names[R_INTER + st], c, gc, &m);
            m.op = OP_ASSOC;
            expect_same_call("get_association", c, gc, &m);
            out_free(&setup);
        }
        out_free(&req);
        psi_shards_free(gs.g);
        psi_shards_free(gc.g);
    }
    keyset_free(&k);
}

/* ------------------------------------------------------ error identity */

enum bad_kind { BAD_PREFIX_05, BAD_X_ONE, BAD_X_P, BAD_PREFIX_04 };

/* Makes element i of `el` bad: prefix 05; x = 1 (not on the curve); x = p
 * (out of range); prefix 04 (an uncompressed prefix on 33 bytes). */
static void corrupt(uint8_t *el, size_t i, enum bad_kind kind)
{
    static const uint8_t p[32] = {
        0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff};
    uint8_t *e = el + i * EB;
    if (kind == BAD_PREFIX_05 || kind == BAD_PREFIX_04) {
        e[0] = kind == BAD_PREFIX_05 ? 0x05 : 0x04;
    } else if (kind == BAD_X_ONE) {
        memset(e, 0, EB);
        e[0] = 0x02;
        e[EB - 1] = 1;
    } else {
        e[0] = 0x03;
        memcpy(e + 1, p, sizeof p);
    }
}

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
    size_t cap = psi_request_bound(n);
    uint8_t *msg = malloc(cap);
    assert_non_null(msg);
    assert_int_equal(psi_request_encode(msg, &cap, 1, el, n), PSI_OK);
    call pr = {.op = OP_PROCESS, .a = msg, .a_len = cap, .cap = psi_response_bound(n)};
    assert_int_equal(expect_same_call("process_request", s, gs, &pr), want);
    call pts = {.op = OP_REMASK, .a = el, .a_len = n, .cap = n * EB};
    assert_int_equal(expect_same_call("remask", s, gs, &pts), want);
    pts.op = OP_UNMASK;
    assert_int_equal(expect_same_call("unmask", c, gc, &pts), want);
    cap = psi_response_bound(n);
    assert_int_equal(psi_response_encode(msg, &cap, el, n), PSI_OK);
    static const op_id ops[] = {OP_INTER, OP_SIZE, OP_ASSOC};
    static const char *const names[] = {"get_intersection", "get_intersection_size",
                                        "get_association"};
    for (int i = 0; i < 3; i++) {
        call m = {.op = ops[i], .a = setup, .a_len = setup_len, .b = msg, .b_len = cap,
                  .cap = n};
        assert_int_equal(expect_same_call(names[i], c, gc, &m), want);
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
    uint64_t rng = rng_for(5);
    keyset k;
    keyset_make(&k, &rng);
    dataset d;
    dataset_make(&d, &rng, 10, 10);
    uint8_t good[10 * EB], el[10 * EB], setup[1024];
    size_t len = sizeof good, setup_len = sizeof setup;
    psi_setup_params raw = {PSI_STRUCTURE_RAW, 0, 0};
    assert_int_equal(psi_engine_mask(k.c[1], good, &len, d.cv, 10), PSI_OK);
    assert_int_equal(psi_server_create_setup(k.s[1], setup, &setup_len, NULL, &raw, d.sv, 10),
                     PSI_OK);
    /* Three rounds: with several threads, shards finish in varying order. */
    for (size_t i = 0; i < 3 * (sizeof configs / sizeof configs[0]); i++) {
        const size_t *cfg = configs[i % (sizeof configs / sizeof configs[0])];
        party gs = {NULL, shards_new(k.s[1], cfg[0], cfg[1])};
        party gc = {NULL, shards_new(k.c[1], cfg[0], cfg[1])};
        for (size_t v = 0; v < sizeof bad_variants / sizeof bad_variants[0]; v++) {
            const bad_variant *b = &bad_variants[v];
            memcpy(el, good, sizeof el);
            for (size_t j = 0; j < b->n_bad; j++)
                corrupt(el, b->index[j], b->kind[j]);
            snprintf(g_where, sizeof g_where, "bad points variant %zu, N=%zu T=%zu seed=%llu", v,
                     cfg[0], cfg[1], (unsigned long long)g_seed);
            check_bad_points(&k, el, 10, setup, setup_len, gs, gc, first_bad_code(b));
        }
        psi_shards_free(gs.g);
        psi_shards_free(gc.g);
    }
    dataset_free(&d);
    keyset_free(&k);
}

/* Messages of a valid round for the error tests: request (reveal rv),
 * raw and GCS setups, response. */
typedef struct round {
    out req[2], resp[2], setup_raw, setup_gcs;
} round;

static void round_make(round *r, const keyset *k, const dataset *d)
{
    for (int rv = 0; rv < 2; rv++) {
        call rq = {.op = OP_REQUEST, .values = d->cv, .n = d->nc, .cap = psi_request_bound(d->nc)};
        r->req[rv] = run_call((party){k->c[rv], NULL}, &rq);
        call pr = {.op = OP_PROCESS, .a = r->req[rv].p, .a_len = r->req[rv].len,
                   .cap = psi_response_bound(d->nc)};
        r->resp[rv] = run_call((party){k->s[rv], NULL}, &pr);
        assert_int_equal(r->resp[rv].rc, PSI_OK);
    }
    call su = {.op = OP_SETUP, .params = setup_params(0, d->nc), .values = d->sv, .n = d->ns,
               .cap = 4096};
    r->setup_raw = run_call((party){k->s[1], NULL}, &su);
    su.params = setup_params(1, d->nc);
    r->setup_gcs = run_call((party){k->s[1], NULL}, &su);
    assert_int_equal(r->setup_raw.rc | r->setup_gcs.rc, PSI_OK);
}

static void round_free(round *r)
{
    for (int rv = 0; rv < 2; rv++) {
        out_free(&r->req[rv]);
        out_free(&r->resp[rv]);
    }
    out_free(&r->setup_raw);
    out_free(&r->setup_gcs);
}

/* A server call on client shards and the reverse. */
static void check_wrong_role(const keyset *k, const dataset *d, const round *r, party gs,
                             party gc)
{
    party s = {k->s[1], NULL}, c = {k->c[1], NULL};
    call su = {.op = OP_SETUP, .params = setup_params(0, d->nc), .values = d->sv, .n = d->ns,
               .cap = 4096, .want_perm = 1};
    assert_int_equal(expect_same_call("create_setup by a client", c, gc, &su), PSI_E_WRONG_ROLE);
    call pr = {.op = OP_PROCESS, .a = r->req[1].p, .a_len = r->req[1].len, .cap = 4096};
    assert_int_equal(expect_same_call("process_request by a client", c, gc, &pr),
                     PSI_E_WRONG_ROLE);
    call rq = {.op = OP_REQUEST, .values = d->cv, .n = d->nc, .cap = 4096};
    assert_int_equal(expect_same_call("create_request by a server", s, gs, &rq),
                     PSI_E_WRONG_ROLE);
    call m = {.a = r->setup_raw.p, .a_len = r->setup_raw.len, .b = r->resp[1].p,
              .b_len = r->resp[1].len, .cap = 64};
    static const op_id ops[] = {OP_INTER, OP_SIZE, OP_ASSOC};
    for (int i = 0; i < 3; i++) {
        m.op = ops[i];
        assert_int_equal(expect_same_call("match by a server", s, gs, &m), PSI_E_WRONG_ROLE);
    }
}

/* Reveal mismatch both ways; intersection and association with reveal off. */
static void check_reveal_errors(const keyset *k, const round *r, const size_t cfg[2])
{
    for (int rv = 0; rv < 2; rv++) {
        party s = {k->s[rv], NULL}, c = {k->c[rv], NULL};
        party gs = {NULL, shards_new(k->s[rv], cfg[0], cfg[1])};
        party gc = {NULL, shards_new(k->c[rv], cfg[0], cfg[1])};
        call pr = {.op = OP_PROCESS, .a = r->req[!rv].p, .a_len = r->req[!rv].len, .cap = 4096};
        assert_int_equal(expect_same_call("process_request, other reveal flag", s, gs, &pr),
                         PSI_E_REVEAL_MISMATCH);
        call m = {.op = OP_INTER, .a = r->setup_raw.p, .a_len = r->setup_raw.len,
                  .b = r->resp[rv].p, .b_len = r->resp[rv].len, .cap = 64};
        assert_int_equal(expect_same_call("get_intersection", c, gc, &m), rv ? PSI_OK
                                                                             : PSI_E_REVEAL_DISABLED);
        m.op = OP_ASSOC;
        expect_same_call("get_association", c, gc, &m);
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
        expect_same_call("exact capacity", one, many, &calls[i]);
        calls[i].cap--;
        assert_int_equal(expect_same_call("capacity one short", one, many, &calls[i]),
                         PSI_E_BUFFER_TOO_SMALL);
        calls[i].cap = 0;
        assert_int_equal(expect_same_call("capacity 0", one, many, &calls[i]),
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
    assert_int_equal(expect_same_call("setup with fpr 1", s, gs, &su), PSI_E_FPR);
    su.params = (psi_setup_params){(psi_structure)3, 0.01, 1};
    assert_int_equal(expect_same_call("setup with structure 3", s, gs, &su), PSI_E_STRUCTURE);
    call pr = {.op = OP_PROCESS, .a = r->req[1].p, .a_len = r->req[1].len - 1, .cap = 4096};
    assert_int_not_equal(expect_same_call("truncated request", s, gs, &pr), PSI_OK);
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
            assert_int_not_equal(expect_same_call(setups[i].what, c, gc, &m), PSI_OK);
        }
    call m = {.op = OP_SIZE, .a = r->setup_raw.p, .a_len = r->setup_raw.len,
              .b = r->resp[1].p, .b_len = r->resp[1].len - 1};
    assert_int_not_equal(expect_same_call("truncated response", c, gc, &m), PSI_OK);
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

static void test_shard_errors_match_single_engine(void **state)
{
    (void)state;
    static const size_t configs[][2] = {{1, 1}, {2, 2}, {3, 4}, {8, 2}};
    uint64_t rng = rng_for(6);
    keyset k;
    keyset_make(&k, &rng);
    dataset d;
    dataset_make(&d, &rng, 11, 12);
    round r;
    round_make(&r, &k, &d);
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        snprintf(g_where, sizeof g_where, "errors, N=%zu T=%zu seed=%llu", configs[i][0],
                 configs[i][1], (unsigned long long)g_seed);
        party gs = {NULL, shards_new(k.s[1], configs[i][0], configs[i][1])};
        party gc = {NULL, shards_new(k.c[1], configs[i][0], configs[i][1])};
        check_wrong_role(&k, &d, &r, gs, gc);
        check_reveal_errors(&k, &r, configs[i]);
        check_small_buffers(&k, &d, &r, gs, gc);
        check_bad_messages(&k, &d, &r, gs, gc);
        check_null_args(&d, &r, gs.g, gc.g);
        psi_shards_free(gs.g);
        psi_shards_free(gc.g);
    }
    round_free(&r);
    dataset_free(&d);
    keyset_free(&k);
}

/* ------------------------------------------------------------- vectors */

/* cJSON decodes \u0000 into valuestring but keeps no length.  The files are
 * parsed with each \u0000 escape turned into \ufdd0, a noncharacter none of
 * them holds (checked), which values_of turns back into a NUL byte. */
static cJSON *load_vectors(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    size_t size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc(size + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, size, f), size);
    fclose(f);
    text[size] = '\0';
    assert_null(strstr(text, "\\ufdd0"));
    assert_null(strstr(text, "\\uFDD0"));
    assert_null(strstr(text, "\xef\xb7\x90"));
    for (size_t i = 0; i + 6 <= size; i++)
        if (text[i] == '\\' && memcmp(text + i, "\\u0000", 6) == 0)
            memcpy(text + i, "\\ufdd0", 6);
        else if (text[i] == '\\')
            i++; /* an escaped character, maybe a backslash */
    cJSON *json = cJSON_ParseWithLength(text, size);
    free(text);
    if (json == NULL)
        fail_msg("invalid JSON in %s", path);
    return json;
}

typedef struct valueset {
    psi_value *v;
    size_t n;
    uint8_t *bytes;
} valueset;

static void values_of(valueset *vs, const cJSON *arr)
{
    const cJSON *it;
    size_t total = 0, at = 0, i = 0;
    vs->n = (size_t)cJSON_GetArraySize(arr);
    cJSON_ArrayForEach(it, arr) total += strlen(it->valuestring);
    vs->bytes = malloc(total + 1);
    vs->v = calloc(vs->n + 1, sizeof *vs->v);
    assert_true(vs->bytes != NULL && vs->v != NULL);
    cJSON_ArrayForEach(it, arr) {
        const char *s = it->valuestring;
        size_t start = at, len = strlen(s);
        for (size_t j = 0; j < len; j++) {
            int nul = j + 3 <= len && memcmp(s + j, "\xef\xb7\x90", 3) == 0;
            vs->bytes[at++] = nul ? 0 : (uint8_t)s[j];
            j += nul ? 2 : 0;
        }
        vs->v[i++] = (psi_value){vs->bytes + start, at - start};
    }
}

static const cJSON *field(const cJSON *c, const char *name)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, name);
    if (f == NULL)
        fail_msg("vector case without \"%s\"", name);
    return f;
}

typedef struct bytes {
    uint8_t *p;
    size_t len;
} bytes;

static bytes hex_field(const cJSON *c, const char *name)
{
    bytes b;
    b.p = tu_unhex(field(c, name)->valuestring, &b.len);
    return b;
}

static psi_engine *engine_of(const cJSON *c, const char *key, psi_role role, int reveal)
{
    bytes k = hex_field(c, key);
    psi_engine *e = engine_new(role, reveal, k.p, k.len);
    free(k.p);
    return e;
}

static psi_structure structure_of(const char *name)
{
    if (strcmp(name, "raw") == 0)
        return PSI_STRUCTURE_RAW;
    if (strcmp(name, "gcs") == 0)
        return PSI_STRUCTURE_GCS;
    assert_string_equal(name, "bloom_filter");
    return PSI_STRUCTURE_BLOOM_FILTER;
}

/* One case of a psi-wire-vectors/1 file, or an association case of the
 * extra file (reveal on, raw, with permutation and pairs). */
typedef struct vcase {
    const cJSON *json;
    int reveal, association;
    psi_engine *s, *c;
    psi_setup_params params;
    valueset sv, cv;
    bytes setup, request, response;
} vcase;

static void vcase_load(vcase *v, const cJSON *c, int association)
{
    memset(v, 0, sizeof *v);
    v->json = c;
    v->association = association;
    v->reveal = association || cJSON_IsTrue(field(c, "reveal_intersection"));
    v->s = engine_of(c, "server_key", PSI_ROLE_SERVER, v->reveal);
    v->c = engine_of(c, "client_key", PSI_ROLE_CLIENT, v->reveal);
    v->params.structure = PSI_STRUCTURE_RAW;
    if (!association) {
        v->params.structure = structure_of(field(c, "data_structure")->valuestring);
        v->params.fpr = field(c, "fpr")->valuedouble;
        v->params.num_client_inputs = (int64_t)field(c, "num_client_inputs")->valuedouble;
    }
    values_of(&v->sv, field(c, "server_inputs"));
    values_of(&v->cv, field(c, "client_inputs"));
    v->setup = hex_field(c, "server_setup");
    v->request = hex_field(c, "request");
    v->response = hex_field(c, "response");
}

static void vcase_free(vcase *v)
{
    psi_engine_free(v->s);
    psi_engine_free(v->c);
    free(v->sv.v);
    free(v->sv.bytes);
    free(v->cv.v);
    free(v->cv.bytes);
    free(v->setup.p);
    free(v->request.p);
    free(v->response.p);
}

static void expect_ok(const char *what, const out *o)
{
    if (o->rc != PSI_OK)
        fail_msg("%s, %s: returned %s", g_where, what, psi_error_name(o->rc));
}

static void expect_indices(const char *what, const size_t *got, size_t n, const cJSON *want)
{
    if (n != (size_t)cJSON_GetArraySize(want))
        fail_msg("%s, %s: %zu items, expected %d", g_where, what, n, cJSON_GetArraySize(want));
    for (size_t i = 0; i < n; i++)
        if (got[i] != (size_t)cJSON_GetArrayItem(want, (int)i)->valuedouble)
            fail_msg("%s, %s: differs at position %zu (expected %zu, got %zu)", g_where, what,
                     i, (size_t)cJSON_GetArrayItem(want, (int)i)->valuedouble, got[i]);
}

/* The association table from the stored setup and response, mapped with
 * the stored permutation, against the stored pairs. */
static void vcase_association(const vcase *v, party gc)
{
    call m = {.op = OP_ASSOC, .a = v->setup.p, .a_len = v->setup.len, .b = v->response.p,
              .b_len = v->response.len, .cap = psi_message_element_bound(v->response.len)};
    out o = run_call(gc, &m);
    expect_ok("get_association", &o);
    const cJSON *perm = field(v->json, "permutation"), *want = field(v->json, "association");
    size_t n_perm = (size_t)cJSON_GetArraySize(perm);
    size_t *p = calloc(n_perm + 1, sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < n_perm; i++)
        p[i] = (size_t)cJSON_GetArrayItem(perm, (int)i)->valuedouble;
    psi_pair *pairs = (psi_pair *)(void *)o.p;
    assert_int_equal(psi_association_map(pairs, o.len, p, n_perm), PSI_OK);
    if (o.len != (size_t)cJSON_GetArraySize(want))
        fail_msg("%s, association: %zu pairs, expected %d", g_where, o.len,
                 cJSON_GetArraySize(want));
    for (size_t i = 0; i < o.len; i++) {
        const cJSON *w = cJSON_GetArrayItem(want, (int)i);
        if (pairs[i].client_index != (size_t)cJSON_GetArrayItem(w, 0)->valuedouble
            || pairs[i].server_index != (size_t)cJSON_GetArrayItem(w, 1)->valuedouble)
            fail_msg("%s, association: differs at pair %zu", g_where, i);
    }
    free(p);
    out_free(&o);
}

/* The setup (and its permutation), the request and the response to the
 * stored request; the matches from the stored setup and response. */
static void vcase_check(const vcase *v, party gs, party gc)
{
    call su = {.op = OP_SETUP, .params = v->params, .values = v->sv.v, .n = v->sv.n,
               .want_perm = v->association};
    assert_int_equal(psi_setup_bound(&su.cap, &v->params, v->sv.n), PSI_OK);
    out o = run_call(gs, &su);
    expect_ok("server_setup", &o);
    expect_bytes("server_setup", o.p, o.len, v->setup.p, v->setup.len);
    if (v->association)
        expect_indices("permutation", o.perm, o.n_perm, field(v->json, "permutation"));
    out_free(&o);
    call rq = {.op = OP_REQUEST, .values = v->cv.v, .n = v->cv.n, .cap = psi_request_bound(v->cv.n)};
    o = run_call(gc, &rq);
    expect_ok("request", &o);
    expect_bytes("request", o.p, o.len, v->request.p, v->request.len);
    out_free(&o);
    call pr = {.op = OP_PROCESS, .a = v->request.p, .a_len = v->request.len,
               .cap = psi_response_bound(psi_message_element_bound(v->request.len))};
    o = run_call(gs, &pr);
    expect_ok("response", &o);
    expect_bytes("response", o.p, o.len, v->response.p, v->response.len);
    out_free(&o);
    call m = {.op = OP_INTER, .a = v->setup.p, .a_len = v->setup.len, .b = v->response.p,
              .b_len = v->response.len, .cap = psi_message_element_bound(v->response.len)};
    if (v->association) {
        vcase_association(v, gc);
        return;
    }
    if (v->reveal) {
        o = run_call(gc, &m);
        expect_ok("intersection", &o);
        expect_indices("intersection", (size_t *)(void *)o.p, o.len, field(v->json, "intersection"));
        out_free(&o);
    }
    m.op = OP_SIZE;
    o = run_call(gc, &m);
    expect_ok("intersection_size", &o);
    if (o.len != (size_t)field(v->json, "intersection_size")->valuedouble)
        fail_msg("%s, intersection_size: %zu", g_where, o.len);
    out_free(&o);
}

static void vcase_run(const vcase *v, const size_t *shard_counts, size_t n_counts)
{
    for (size_t i = 0; i < n_counts; i++) {
        snprintf(g_where, sizeof g_where, "vector %s, N=%zu T=2",
                 field(v->json, "name")->valuestring, shard_counts[i]);
        party gs = {NULL, shards_new(v->s, shard_counts[i], 2)};
        party gc = {NULL, shards_new(v->c, shard_counts[i], 2)};
        vcase_check(v, gs, gc);
        psi_shards_free(gs.g);
        psi_shards_free(gc.g);
    }
}

/* Every case with N in {1, 2, 3, 5, 8, 16}; the few large ones (1000
 * values a side) with three counts, to keep the time down. */
static void check_wire_file(const char *path)
{
    static const size_t all[] = {1, 2, 3, 5, 8, 16}, big[] = {3, 8, 16};
    cJSON *json = load_vectors(path);
    assert_string_equal(field(json, "format")->valuestring, "psi-wire-vectors/1");
    const cJSON *c;
    size_t cases = 0;
    cJSON_ArrayForEach(c, field(json, "cases")) {
        vcase v;
        vcase_load(&v, c, 0);
        if (v.sv.n + v.cv.n > 500)
            vcase_run(&v, big, 3);
        else
            vcase_run(&v, all, 6);
        vcase_free(&v);
        cases++;
    }
    printf("# %s: %zu cases\n", path, cases);
    assert_true(cases > 0);
    cJSON_Delete(json);
}

static void test_shard_vectors_openmined(void **state)
{
    (void)state;
    check_wire_file(VEC_OPENMINED);
}

static void test_shard_vectors_sample(void **state)
{
    (void)state;
    check_wire_file(VEC_SAMPLE);
}

static int code_of(const char *name)
{
    for (int code = 0; code > -256; code--)
        if (psi_error_name(code) != NULL && strcmp(psi_error_name(code), name) == 0)
            return code;
    fail_msg("unknown error name %s", name);
    return 1;
}

/* A rejection case of the extra file through shards: process_request,
 * intersection (size, and with reveal on the indices and association) and
 * setup_params must fail with exactly the stored error.  Key and point
 * cases involve no shard. */
static void check_rejection(const cJSON *c, size_t n)
{
    const char *op = field(c, "operation")->valuestring;
    int want = code_of(field(c, "error")->valuestring), reveal = 1;
    if (strcmp(op, "key") == 0 || strcmp(op, "point") == 0)
        return;
    if (strcmp(op, "setup_params") != 0)
        reveal = cJSON_IsTrue(field(c, "reveal_intersection"));
    int server = strcmp(op, "intersection") != 0;
    psi_engine *e = engine_of(c, server ? "server_key" : "client_key",
                              server ? PSI_ROLE_SERVER : PSI_ROLE_CLIENT, reveal);
    party g = {NULL, shards_new(e, n, 2)};
    call k = {.cap = 1 << 16};
    bytes a = {NULL, 0}, b = {NULL, 0};
    valueset sv = {NULL, 0, NULL};
    if (strcmp(op, "setup_params") == 0) {
        const cJSON *fpr = field(c, "fpr");
        values_of(&sv, field(c, "server_inputs"));
        k = (call){.op = OP_SETUP, .cap = 1 << 16, .values = sv.v, .n = sv.n,
                   .params = {structure_of(field(c, "data_structure")->valuestring),
                              cJSON_IsString(fpr) ? strtod("NAN", NULL) : fpr->valuedouble,
                              (int64_t)field(c, "num_client_inputs")->valuedouble}};
    } else if (server) {
        a = hex_field(c, "request");
        k = (call){.op = OP_PROCESS, .cap = 1 << 16, .a = a.p, .a_len = a.len};
    } else {
        a = hex_field(c, "server_setup");
        b = hex_field(c, "response");
        k = (call){.op = OP_SIZE, .cap = 1 << 12, .a = a.p, .a_len = a.len, .b = b.p,
                   .b_len = b.len};
    }
    for (int i = 0; i < (!server && reveal ? 3 : 1); i++) {
        k.op = i == 1 ? OP_INTER : i == 2 ? OP_ASSOC : k.op;
        int rc = expect_same_call(op, (party){e, NULL}, g, &k);
        if (rc != want && k.op != OP_ASSOC) /* association: as the single engine */
            fail_msg("%s: returned %s, expected %s", g_where, psi_error_name(rc),
                     psi_error_name(want));
    }
    free(a.p);
    free(b.p);
    free(sv.v);
    free(sv.bytes);
    psi_shards_free(g.g);
    psi_engine_free(e);
}

static void test_shard_vectors_extra(void **state)
{
    (void)state;
    static const size_t counts[] = {1, 2, 3, 5, 8, 16};
    cJSON *json = load_vectors(VEC_EXTRA);
    assert_string_equal(field(json, "format")->valuestring, "shardpsi-extra-vectors/1");
    const cJSON *c;
    cJSON_ArrayForEach(c, field(json, "association_cases")) {
        vcase v;
        vcase_load(&v, c, 1);
        vcase_run(&v, counts, 6);
        vcase_free(&v);
    }
    cJSON_ArrayForEach(c, field(json, "rejection_cases")) {
        for (size_t i = 1; i < 6; i += 2) {
            snprintf(g_where, sizeof g_where, "vector %s, N=%zu T=2",
                     field(c, "name")->valuestring, counts[i]);
            check_rejection(c, counts[i]);
        }
    }
    cJSON_Delete(json);
}

/* ---------------------------------------------------------- pure steps */

static void check_plan(size_t n, size_t shards)
{
    size_t next = 0, lo = SIZE_MAX, hi = 0;
    for (size_t k = 0; k < shards; k++) {
        size_t off = 7, cnt = 7;
        assert_int_equal(psi_shard_plan(&off, &cnt, n, shards, k), PSI_OK);
        if (off != next || cnt != n / shards + (k < n % shards))
            fail_msg("plan n=%zu shards=%zu k=%zu: [%zu, +%zu)", n, shards, k, off, cnt);
        next += cnt;
        lo = cnt < lo ? cnt : lo;
        hi = cnt > hi ? cnt : hi;
    }
    assert_true(next == n && hi - lo <= 1);
}

static void test_shard_plan_slices(void **state)
{
    (void)state;
    for (size_t n = 0; n <= 40; n++)
        for (size_t shards = 1; shards <= 20; shards++)
            check_plan(n, shards);
    static const size_t big[] = {1000, 100000, SIZE_MAX - 1, SIZE_MAX};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        check_plan(big[i], 3);
        check_plan(big[i], 7);
        check_plan(big[i], PSI_SHARD_MAX_SHARDS);
    }
    check_plan(3, PSI_SHARD_MAX_SHARDS);
    size_t off = 7, cnt = 7;
    assert_int_equal(psi_shard_plan(&off, &cnt, 10, 0, 0), PSI_E_INVALID_ARG);
    assert_true(off == 0 && cnt == 0);
    off = cnt = 7;
    assert_int_equal(psi_shard_plan(&off, &cnt, 10, 4, 4), PSI_E_INVALID_ARG);
    assert_true(off == 0 && cnt == 0);
    assert_int_equal(psi_shard_plan(&off, &cnt, 10, 4, SIZE_MAX), PSI_E_INVALID_ARG);
    assert_int_equal(psi_shard_plan(NULL, &cnt, 10, 4, 0), PSI_E_INVALID_ARG);
    assert_int_equal(psi_shard_plan(&off, NULL, 10, 4, 0), PSI_E_INVALID_ARG);
}

/* Each slice sorted on its own (indices made global), as MASK_SORT does. */
static void sort_slices(uint8_t *el, size_t *perm, size_t n, size_t shards)
{
    for (size_t k = 0; k < shards; k++) {
        size_t off, cnt;
        assert_int_equal(psi_shard_plan(&off, &cnt, n, shards, k), PSI_OK);
        assert_int_equal(psi_elements_sort(el + off * EB, perm + off, cnt), PSI_OK);
        for (size_t i = off; i < off + cnt; i++)
            perm[i] += off;
    }
}

/* The first adjacent equal pair in [0, n), or n. */
static size_t equal_pair(const uint8_t *el, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++)
        if (memcmp(el + i * EB, el + (i + 1) * EB, EB) == 0)
            return i;
    return n;
}

static void test_shard_merge_sorted_equals_sort(void **state)
{
    (void)state;
    static const size_t counts[] = {1, 2, 3, 5, 7, 8, 16, 199, 200, 300};
    enum { N = 200 };
    uint64_t rng = rng_for(7);
    keyset k;
    keyset_make(&k, &rng);
    dataset d;
    dataset_make(&d, &rng, N, 0); /* 200 values from a domain of 68 */
    static uint8_t el[N * EB], whole[N * EB], parts[N * EB], out[N * EB];
    size_t len = sizeof el, wperm[N], pperm[N], operm[N];
    assert_int_equal(psi_engine_mask(k.s[1], el, &len, d.sv, N), PSI_OK);
    memcpy(whole, el, sizeof el);
    assert_int_equal(psi_elements_sort(whole, wperm, N), PSI_OK);
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        memcpy(parts, el, sizeof el);
        sort_slices(parts, pperm, N, counts[i]);
        assert_int_equal(psi_shard_merge_sorted(out, operm, parts, pperm, N, counts[i]), PSI_OK);
        assert_memory_equal(out, whole, sizeof whole);
        assert_memory_equal(operm, wperm, sizeof wperm);
    }
    /* Slices out of (bytes, index) order. */
    memcpy(parts, el, sizeof el);
    sort_slices(parts, pperm, N, 2);
    size_t i = equal_pair(parts, N / 2), t;
    assert_true(i < N / 2);
    t = pperm[i], pperm[i] = pperm[i + 1], pperm[i + 1] = t;
    assert_int_equal(psi_shard_merge_sorted(out, operm, parts, pperm, N, 2), PSI_E_SETUP_UNSORTED);
    sort_slices(memcpy(parts, el, sizeof el), pperm, N, 2);
    memcpy(out, parts, EB);
    memcpy(parts, parts + (N / 2 - 1) * EB, EB);
    memcpy(parts + (N / 2 - 1) * EB, out, EB);
    assert_int_equal(psi_shard_merge_sorted(out, operm, parts, pperm, N, 2), PSI_E_SETUP_UNSORTED);
    assert_int_equal(psi_shard_merge_sorted(out, operm, parts, pperm, N, 0), PSI_E_INVALID_ARG);
    assert_int_equal(psi_shard_merge_sorted(NULL, operm, parts, pperm, N, 2), PSI_E_INVALID_ARG);
    assert_int_equal(psi_shard_merge_sorted(out, NULL, parts, pperm, N, 2), PSI_E_INVALID_ARG);
    assert_int_equal(psi_shard_merge_sorted(out, operm, NULL, pperm, N, 2), PSI_E_INVALID_ARG);
    assert_int_equal(psi_shard_merge_sorted(out, operm, parts, NULL, N, 2), PSI_E_INVALID_ARG);
    assert_int_equal(psi_shard_merge_sorted(NULL, NULL, NULL, NULL, 0, 3), PSI_OK);
    dataset_free(&d);
    keyset_free(&k);
}

static int slice_run(const psi_engine *e, uint8_t *out, size_t *perm, psi_shard_step step,
                     size_t off, size_t cnt, const psi_value *values, const uint8_t *points)
{
    psi_shard_slice in = {step, off, cnt, values ? values + off : NULL,
                          points ? points + off * EB : NULL};
    return psi_shard_run_one(e, out, perm, &in);
}

/* Each step on each slice equals the engine call on that slice. */
static void check_run_one_slices(const keyset *k, const dataset *d, const uint8_t *masked,
                                 const uint8_t *remasked, size_t shards)
{
    uint8_t out[64 * EB], want[64 * EB];
    size_t perm[64], wperm[64];
    for (size_t j = 0; j < shards; j++) {
        size_t off, cnt, len = sizeof want;
        assert_int_equal(psi_shard_plan(&off, &cnt, d->nc, shards, j), PSI_OK);
        assert_int_equal(slice_run(k->c[1], out, NULL, PSI_SHARD_MASK, off, cnt, d->cv, NULL),
                         PSI_OK);
        assert_memory_equal(out, masked + off * EB, cnt * EB);
        assert_int_equal(slice_run(k->s[0], out, perm, PSI_SHARD_MASK_SORT, off, cnt, d->cv,
                                   NULL), PSI_OK);
        assert_int_equal(psi_engine_mask(k->s[0], want, &len, d->cv + off, cnt), PSI_OK);
        assert_int_equal(psi_elements_sort(want, wperm, cnt), PSI_OK);
        for (size_t i = 0; i < cnt; i++)
            assert_int_equal(perm[i], wperm[i] + off);
        assert_memory_equal(out, want, cnt * EB);
        assert_int_equal(slice_run(k->s[1], out, NULL, PSI_SHARD_REMASK, off, cnt, NULL, masked),
                         PSI_OK);
        assert_memory_equal(out, remasked + off * EB, cnt * EB);
        assert_int_equal(slice_run(k->c[1], out, NULL, PSI_SHARD_UNMASK, off, cnt, NULL,
                                   remasked), PSI_OK);
        len = sizeof want;
        assert_int_equal(psi_engine_unmask(k->c[1], want, &len, remasked + off * EB, cnt),
                         PSI_OK);
        assert_memory_equal(out, want, cnt * EB);
    }
}

static void check_run_one_errors(const keyset *k, const dataset *d, const uint8_t *masked)
{
    uint8_t buf[4 * EB], bad[4 * EB];
    size_t perm[4];
    psi_shard_slice in = {(psi_shard_step)0, 0, 2, d->cv, masked};
    assert_int_equal(psi_shard_run_one(k->c[1], buf, perm, &in), PSI_E_INVALID_ARG);
    in.step = (psi_shard_step)5;
    assert_int_equal(psi_shard_run_one(k->c[1], buf, perm, &in), PSI_E_INVALID_ARG);
    assert_int_equal(psi_shard_run_one(k->c[1], buf, perm, NULL), PSI_E_INVALID_ARG);
    assert_int_equal(slice_run(NULL, buf, NULL, PSI_SHARD_MASK, 0, 2, d->cv, NULL),
                     PSI_E_INVALID_ARG);
    assert_int_equal(slice_run(k->c[1], NULL, NULL, PSI_SHARD_MASK, 0, 2, d->cv, NULL),
                     PSI_E_INVALID_ARG);
    assert_int_equal(slice_run(k->c[1], buf, NULL, PSI_SHARD_MASK, 0, 2, NULL, NULL),
                     PSI_E_INVALID_ARG);
    assert_int_equal(slice_run(k->c[1], buf, NULL, PSI_SHARD_MASK_SORT, 0, 2, d->cv, NULL),
                     PSI_E_INVALID_ARG);
    assert_int_equal(slice_run(k->c[1], buf, NULL, PSI_SHARD_REMASK, 0, 2, NULL, NULL),
                     PSI_E_INVALID_ARG);
    assert_int_equal(slice_run(k->c[1], buf, NULL, PSI_SHARD_UNMASK, 0, 2, NULL, NULL),
                     PSI_E_INVALID_ARG);
    for (int st = PSI_SHARD_MASK; st <= PSI_SHARD_UNMASK; st++)
        assert_int_equal(slice_run(k->c[1], NULL, NULL, (psi_shard_step)st, 5, 0, NULL, NULL),
                         PSI_OK);
    /* A bad point: its code, and no partial output. */
    memcpy(bad, masked, sizeof bad);
    corrupt(bad, 2, BAD_X_ONE);
    for (int st = PSI_SHARD_REMASK; st <= PSI_SHARD_UNMASK; st++) {
        out o = {0, 0, 1, 4, buf, NULL, 0};
        memset(buf, FILL, sizeof buf);
        o.rc = slice_run(k->s[1], buf, NULL, (psi_shard_step)st, 0, 4, NULL, bad);
        assert_int_equal(o.rc, PSI_E_POINT_NOT_ON_CURVE);
        o.cap = sizeof buf;
        snprintf(g_where, sizeof g_where, "run_one step %d", st);
        expect_no_partial("run_one", &o);
    }
}

static void test_shard_run_one_each_step(void **state)
{
    (void)state;
    static const size_t counts[] = {1, 2, 4, 7, 23, 30};
    uint64_t rng = rng_for(8);
    keyset k;
    keyset_make(&k, &rng);
    dataset d;
    dataset_make(&d, &rng, 0, 23);
    uint8_t masked[23 * EB], remasked[23 * EB];
    size_t len = sizeof masked;
    assert_int_equal(psi_engine_mask(k.c[1], masked, &len, d.cv, 23), PSI_OK);
    len = sizeof remasked;
    assert_int_equal(psi_engine_remask(k.s[1], remasked, &len, masked, 23), PSI_OK);
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        check_run_one_slices(&k, &d, masked, remasked, counts[i]);
    check_run_one_errors(&k, &d, masked);
    dataset_free(&d);
    keyset_free(&k);
}

/* ------------------------------------------------------------ executor */

static void test_shard_create_rejects_bad_settings(void **state)
{
    (void)state;
    uint8_t key[PSI_KEY_BYTES];
    uint64_t rng = rng_for(9);
    random_key(&rng, key);
    psi_engine *e = engine_new(PSI_ROLE_CLIENT, 1, key, sizeof key);
    psi_shard_settings s, bad[5];
    psi_shard_settings_default(&s);
    assert_true(s.threads == 0 && s.max_threads == 0 && s.shards == 0 && s.progress == NULL);
    for (size_t i = 0; i < sizeof s.reserved; i++)
        assert_int_equal(s.reserved[i], 0);
    for (int i = 0; i < 5; i++)
        bad[i] = s;
    bad[0].shards = PSI_SHARD_MAX_SHARDS + 1;
    bad[1].threads = PSI_SHARD_MAX_THREADS + 1;
    bad[2].reserved[0] = 1;
    bad[3].reserved[sizeof s.reserved - 1] = 0x80;
    bad[4].shards = SIZE_MAX;
    psi_shards *g = (psi_shards *)(void *)&rng; /* must come back NULL */
    for (int i = 0; i < 5; i++) {
        assert_int_equal(psi_shards_create(&g, e, &bad[i]), PSI_E_INVALID_ARG);
        assert_null(g);
        g = (psi_shards *)(void *)&rng;
    }
    assert_int_equal(psi_shards_create(&g, NULL, &s), PSI_E_INVALID_ARG);
    assert_null(g);
    assert_int_equal(psi_shards_create(&g, e, NULL), PSI_E_INVALID_ARG);
    assert_int_equal(psi_shards_create(NULL, e, &s), PSI_E_INVALID_ARG);
    psi_shards_free(NULL);
    assert_int_equal(psi_shards_count(NULL), 0);
    assert_int_equal(psi_shards_threads(NULL), 0);
    psi_engine_free(e);
}

static void test_shard_counts_and_threads(void **state)
{
    (void)state;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    size_t cpus = online < 1 ? 1 : (size_t)online;
    cpus = cpus > PSI_SHARD_MAX_THREADS ? PSI_SHARD_MAX_THREADS : cpus;
    size_t cpus5 = cpus < 5 ? cpus : 5;
    /* threads, max_threads, shards -> shards, worker threads.  Threads are
     * capped at the shard count; one thread is the inline executor. */
    const size_t cases[][5] = {
        {1, 0, 3, 3, 0}, {1, 0, 1, 1, 0}, {4, 0, 2, 2, 2}, {2, 0, 8, 8, 2}, {4, 0, 4, 4, 4},
        {8, 3, 16, 16, 3}, {0, 1, 0, 1, 0}, {0, 1, 6, 6, 0},
        {0, 0, 5, 5, cpus5 == 1 ? 0 : cpus5}, {0, 0, 0, cpus, cpus == 1 ? 0 : cpus},
        {PSI_SHARD_MAX_THREADS, 0, 3, 3, 3},
    };
    uint8_t key[PSI_KEY_BYTES];
    uint64_t rng = rng_for(10);
    random_key(&rng, key);
    psi_engine *e = engine_new(PSI_ROLE_SERVER, 0, key, sizeof key);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        psi_shard_settings s;
        psi_shards *g = NULL;
        psi_shard_settings_default(&s);
        s.threads = cases[i][0];
        s.max_threads = cases[i][1];
        s.shards = cases[i][2];
        assert_int_equal(psi_shards_create(&g, e, &s), PSI_OK);
        if (psi_shards_count(g) != cases[i][3] || psi_shards_threads(g) != cases[i][4])
            fail_msg("threads=%zu max_threads=%zu shards=%zu: %zu shards, %zu threads, "
                     "expected %zu, %zu", cases[i][0], cases[i][1], cases[i][2],
                     psi_shards_count(g), psi_shards_threads(g), cases[i][3], cases[i][4]);
        psi_shards_free(g);
    }
    psi_engine_free(e);
}

typedef struct progress_log {
    atomic_int inside;
    int overlap, decreased, wrong_total;
    size_t calls;
    uint64_t last, total;
} progress_log;

static void progress_count(void *arg, uint64_t done, uint64_t total)
{
    progress_log *p = arg;
    if (atomic_fetch_add(&p->inside, 1) != 0)
        p->overlap = 1;
    if (p->calls > 0 && done < p->last)
        p->decreased = 1;
    if (total != p->total || done > total)
        p->wrong_total = 1;
    p->last = done;
    p->calls++;
    atomic_fetch_sub(&p->inside, 1);
}

/* The shards report one monotonic count per call, never two callbacks at
 * once, ending at n; the engine's own callback is not cloned. */
static void test_shard_progress_reaches_n(void **state)
{
    (void)state;
    enum { N = 5000 };
    static const size_t ns[] = {N, 100};
    uint64_t rng = rng_for(11);
    uint8_t key[PSI_KEY_BYTES];
    random_key(&rng, key);
    progress_log engine_log = {0}, log = {0};
    psi_settings es;
    psi_settings_default(&es);
    es.progress = progress_count;
    es.progress_arg = &engine_log;
    psi_engine *e = NULL;
    assert_int_equal(psi_engine_create_from_key(&e, &es, key, sizeof key), PSI_OK);
    psi_shard_settings s;
    psi_shard_settings_default(&s);
    s.shards = 4;
    s.threads = 2;
    s.progress = progress_count;
    s.progress_arg = &log;
    psi_shards *g = NULL;
    assert_int_equal(psi_shards_create(&g, e, &s), PSI_OK);
    dataset d;
    dataset_make(&d, &rng, N, 0);
    uint8_t *out = malloc(N * EB);
    assert_non_null(out);
    for (size_t i = 0; i < 2; i++) {
        size_t len = N * EB;
        memset(&log, 0, sizeof log);
        log.total = ns[i];
        assert_int_equal(psi_shards_mask(g, out, &len, d.sv, ns[i]), PSI_OK);
        printf("# progress: %zu values, %zu calls\n", ns[i], log.calls);
        assert_true(log.calls >= 1);
        assert_int_equal(log.last, ns[i]);
        assert_false(log.overlap || log.decreased || log.wrong_total);
    }
    assert_int_equal(engine_log.calls, 0);
    free(out);
    dataset_free(&d);
    psi_shards_free(g);
    psi_engine_free(e);
}

int main(void)
{
    g_seed = tu_seed("shard");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shard_plan_slices),
        cmocka_unit_test(test_shard_create_rejects_bad_settings),
        cmocka_unit_test(test_shard_counts_and_threads),
        cmocka_unit_test(test_shard_merge_sorted_equals_sort),
        cmocka_unit_test(test_shard_run_one_each_step),
        cmocka_unit_test(test_shard_matches_single_engine),
        cmocka_unit_test(test_shard_matches_single_engine_300),
        cmocka_unit_test(test_shard_more_shards_than_values),
        cmocka_unit_test(test_shard_empty_inputs),
        cmocka_unit_test(test_shard_bad_points_first_error_wins),
        cmocka_unit_test(test_shard_errors_match_single_engine),
        cmocka_unit_test(test_shard_progress_reaches_n),
        cmocka_unit_test(test_shard_vectors_openmined),
        cmocka_unit_test(test_shard_vectors_sample),
        cmocka_unit_test(test_shard_vectors_extra),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
