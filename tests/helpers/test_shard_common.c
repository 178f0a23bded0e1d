/* Helpers shared by the sharding layer tests; see test_shard_common.h. */
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
#include "test_util.h"

uint64_t ts_seed;
char ts_where[256]; /* the case being checked, in every failure */

/* Each test draws from its own stream, so one can be replayed alone. */
uint64_t ts_rng_for(uint64_t tag)
{
    uint64_t s = ts_seed ^ (tag * 0x9e3779b97f4a7c15ULL);
    if (s == 0)
        s = 1;
    tu_rand(&s);
    return s;
}

/* A random scalar below 2^255 (< n) and odd (non-zero). */
void ts_random_key(uint64_t *rng, uint8_t key[PSI_KEY_BYTES])
{
    for (size_t i = 0; i < PSI_KEY_BYTES; i++)
        key[i] = (uint8_t)tu_rand(rng);
    key[0] &= 0x7f;
    key[PSI_KEY_BYTES - 1] |= 1;
}

psi_engine *ts_engine_new(psi_role role, int reveal, const uint8_t *key, size_t key_len)
{
    psi_settings s;
    psi_engine *e = NULL;
    psi_settings_default(&s);
    s.role = role;
    s.reveal_intersection = reveal;
    assert_int_equal(psi_engine_create_from_key(&e, &s, key, key_len), PSI_OK);
    return e;
}

psi_shards *ts_shards_new(const psi_engine *e, size_t n, size_t t)
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

out ts_run_call(party p, const call *c)
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

void ts_out_free(out *o)
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

void ts_expect_bytes(const char *what, const uint8_t *got, size_t got_len,
                     const uint8_t *want, size_t want_len)
{
    size_t n = got_len < want_len ? got_len : want_len;
    size_t i = n == 0 ? 0 : first_difference(got, want, n);
    if (got_len != want_len)
        fail_msg("%s, %s: %zu bytes, expected %zu (first difference at byte %zu)", ts_where,
                 what, got_len, want_len, i);
    if (i < n)
        fail_msg("%s, %s: first difference at byte %zu of %zu (expected %02x, got %02x)",
                 ts_where, what, i, n, want[i], got[i]);
}

static void expect_items(const char *what, const out *want, const out *got)
{
    size_t n = want->len * want->item, i = n == 0 ? 0 : first_difference(got->p, want->p, n);
    if (i < n && want->item == sizeof(size_t))
        fail_msg("%s, %s: first difference at index %zu of %zu (expected %zu, got %zu)",
                 ts_where, what, i / want->item, want->len,
                 ((const size_t *)(void *)want->p)[i / want->item],
                 ((const size_t *)(void *)got->p)[i / want->item]);
    if (i < n && want->item == sizeof(psi_pair))
        fail_msg("%s, %s: first difference at pair %zu of %zu", ts_where, what,
                 i / want->item, want->len);
    ts_expect_bytes(what, got->p, n, want->p, n);
}

/* A failed call leaves its output untouched or wiped, never partial. */
void ts_expect_no_partial(const char *what, const out *o)
{
    for (size_t i = 0; o->p != NULL && i < o->cap * o->item; i++)
        if (o->p[i] != FILL && o->p[i] != 0)
            fail_msg("%s, %s: failed with %s but wrote byte %zu", ts_where, what,
                     psi_error_name(o->rc), i);
}

void ts_expect_same(const char *what, const out *want, const out *got)
{
    if (got->rc != want->rc)
        fail_msg("%s, %s: returned %s, single engine %s", ts_where, what,
                 psi_error_name(got->rc), psi_error_name(want->rc));
    if (got->len != want->len)
        fail_msg("%s, %s: length %zu, single engine %zu", ts_where, what, got->len, want->len);
    if (got->rc != PSI_OK) {
        assert_int_equal(got->len, 0);
        ts_expect_no_partial(what, got);
        return;
    }
    if (want->item != 0)
        expect_items(what, want, got);
    if (got->n_perm != want->n_perm
        || (want->n_perm > 0 && memcmp(got->perm, want->perm, want->n_perm * sizeof(size_t))))
        fail_msg("%s, %s: permutation differs", ts_where, what);
}

/* Runs one call on both sides and compares; returns the engine's code. */
int ts_expect_same_call(const char *what, party single, party sharded, const call *c)
{
    out want = ts_run_call(single, c), got = ts_run_call(sharded, c);
    int rc = want.rc;
    if (rc != PSI_OK)
        assert_int_equal(want.len, 0);
    ts_expect_same(what, &want, &got);
    ts_out_free(&want);
    ts_out_free(&got);
    return rc;
}

/* ------------------------------------------- data sets with duplicates */

/* Values "v<k>" (k = 0 is the empty string) from a domain about a third of
 * the combined size: duplicates on each side and shared values, and the
 * first and last value of each side equal, so copies land in different
 * shards whenever N > 1. */
void ts_dataset_make(dataset *d, uint64_t *rng, size_t ns, size_t nc)
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

void ts_dataset_free(dataset *d)
{
    free(d->sv);
    free(d->cv);
    free(d->text);
}

void ts_keyset_make(keyset *k, uint64_t *rng)
{
    uint8_t ks[PSI_KEY_BYTES], kc[PSI_KEY_BYTES];
    ts_random_key(rng, ks);
    ts_random_key(rng, kc);
    for (int rv = 0; rv < 2; rv++) {
        k->s[rv] = ts_engine_new(PSI_ROLE_SERVER, rv, ks, sizeof ks);
        k->c[rv] = ts_engine_new(PSI_ROLE_CLIENT, rv, kc, sizeof kc);
    }
}

void ts_keyset_free(keyset *k)
{
    for (int rv = 0; rv < 2; rv++) {
        psi_engine_free(k->s[rv]);
        psi_engine_free(k->c[rv]);
    }
}

/* ------------------------------------------------------------ bad points */

/* Makes element i of `el` bad: prefix 05; x = 1 (not on the curve); x = p
 * (out of range); prefix 04 (an uncompressed prefix on 33 bytes). */
void ts_corrupt(uint8_t *el, size_t i, enum bad_kind kind)
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
