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

/* ------------------------------------------- the step API as executors */

/* PLAN_REMOTE: each slice's inputs copied out, run on another engine with
 * the key, the outcome put back as data; the last slice first. */
static int remote_exec(void *arg, psi_plan *p)
{
    const psi_engine *e = arg;
    for (size_t k = psi_plan_slices(p); k-- > 0;) {
        psi_step s;
        assert_int_equal(psi_plan_step(p, &s, k), PSI_OK);
        uint8_t *in = NULL, *res = malloc(s.count * EB + 1);
        size_t *perm = malloc(s.count * sizeof *perm + 1);
        assert_true(res != NULL && perm != NULL);
        if (s.points != NULL) {
            in = malloc(s.count * EB + 1);
            assert_non_null(in);
            memcpy(in, s.points, s.count * EB);
            s.points = in;
        }
        psi_error_detail d;
        int rc = psi_step_run(e, res, perm, &d, &s);
        assert_int_equal(psi_plan_put(p, k, rc, rc != PSI_OK && d.code == rc ? d.index : -1,
                                      res, perm), PSI_OK);
        free(in);
        free(res);
        free(perm);
    }
    return PSI_OK;
}

/* PLAN_EXTERNAL: the outputs of every slice, held by the "executor". */
typedef struct ext_outputs {
    uint8_t *el;
    size_t *perm;
    size_t *off, *cnt, *at;
    size_t calls;
} ext_outputs;

/* Chunks of 1 to 5 elements, in turn. */
static int ext_source(void *arg, size_t k, const uint8_t **elements, const size_t **index,
                      size_t *count)
{
    ext_outputs *x = arg;
    size_t left = x->cnt[k] - x->at[k], c = 1 + x->calls++ % 5;
    c = c < left ? c : left;
    *elements = x->el + (x->off[k] + x->at[k]) * EB;
    *index = x->perm + x->off[k] + x->at[k];
    *count = c;
    x->at[k] += c;
    return PSI_OK;
}

typedef struct sink_buf {
    uint8_t *p;
    size_t cap, len;
} sink_buf;

static int sink_append(void *arg, const uint8_t *bytes, size_t len)
{
    sink_buf *b = arg;
    if (len > b->cap - b->len)
        return 1;
    memcpy(b->p + b->len, bytes, len);
    b->len += len;
    return 0;
}

/* Decodes the call's message itself, as an executor holding its inputs
 * does; the reveal check of a response is then its own (§19). */
static int ext_inputs(const psi_engine *e, const psi_op_args *a, uint8_t **pts, size_t *n)
{
    int suite = psi_engine_suite(e), reveal = 0, rc;
    *n = psi_message_element_bound(suite, a->message_len);
    *pts = calloc(*n + 1, EB);
    assert_non_null(*pts);
    if (a->op == PSI_OP_RESPONSE) {
        rc = psi_request_decode(*pts, n, &reveal, suite, a->message, a->message_len);
        if (rc == PSI_OK && reveal != psi_engine_reveal(e))
            rc = PSI_E_REVEAL_MISMATCH;
        return rc;
    }
    return psi_response_decode(*pts, n, suite, a->message, a->message_len);
}

static int run_external(const psi_engine *e, psi_op_args *a, psi_op_output *o, size_t slices)
{
    uint8_t *pts = NULL;
    size_t n = a->n_values;
    const psi_value *values = a->values;
    int rc = PSI_OK, takes_message = a->op != PSI_OP_SETUP && a->op != PSI_OP_REQUEST &&
                                     a->op != PSI_OP_STEP;
    psi_plan *p = NULL;
    /* The checks before the message's decoding (role, reveal, setup). */
    psi_op_args first = *a;
    first.message = NULL;
    first.message_len = 0;
    first.n_values = 0;
    first.external = 1;
    if (takes_message) {
        rc = psi_plan_begin(&p, e, &first);
        psi_plan_free(p);
        p = NULL;
        if (rc == PSI_OK)
            rc = ext_inputs(e, a, &pts, &n);
    } else if (a->op == PSI_OP_STEP && a->message != NULL) {
        pts = (uint8_t *)a->message;
    }
    size_t *counts = calloc(slices + 1, sizeof *counts), left = n;
    assert_non_null(counts);
    for (size_t k = 0; k < slices; k++) { /* uneven: half of what is left, the rest last */
        counts[k] = k + 1 == slices ? left : left / 2;
        left -= counts[k];
    }
    psi_op_args x = *a;
    x.external = 1;
    x.values = NULL;
    x.message = NULL;
    x.message_len = 0;
    x.n_values = n;
    x.slices = slices;
    x.slice_counts = counts;
    ext_outputs out = {calloc(n + 1, EB), calloc(n + 1, sizeof(size_t)),
                       calloc(slices, sizeof(size_t)), calloc(slices, sizeof(size_t)),
                       calloc(slices, sizeof(size_t)), 0};
    if (rc == PSI_OK)
        rc = psi_plan_begin(&p, e, &x);
    for (size_t k = 0; rc == PSI_OK && k < slices; k++) {
        psi_step s;
        assert_int_equal(psi_plan_step(p, &s, k), PSI_OK);
        out.off[k] = s.offset;
        out.cnt[k] = s.count;
        s.values = values != NULL ? values + s.offset : NULL;
        s.points = pts != NULL ? pts + s.offset * EB : NULL;
        psi_error_detail d;
        int src = psi_step_run(e, out.el + s.offset * EB, out.perm + s.offset, &d, &s);
        if (src != PSI_OK)
            assert_int_equal(psi_plan_put(p, k, src, d.code == src ? d.index : -1, NULL, NULL),
                             PSI_OK);
    }
    if (rc == PSI_OK)
        rc = psi_plan_source(p, ext_source, &out);
    int message = a->op == PSI_OP_SETUP || a->op == PSI_OP_REQUEST || a->op == PSI_OP_RESPONSE;
    if (rc == PSI_OK && message && o->len >= psi_plan_bound(p)) {
        sink_buf b = {o->bytes, o->len, 0};
        psi_op_output so = *o;
        so.sink = sink_append;
        so.sink_arg = &b;
        rc = psi_plan_finish(p, &so);
        assert_true(rc != PSI_OK || so.len == b.len);
        o->len = rc == PSI_OK ? b.len : 0;
    } else if (rc == PSI_OK) {
        rc = psi_plan_finish(p, o);
    }
    if (rc != PSI_OK) {
        o->len = 0;
        o->count = 0;
    }
    psi_plan_free(p);
    if (pts != (const uint8_t *)a->message)
        free(pts);
    free(counts);
    free(out.el);
    free(out.perm);
    free(out.off);
    free(out.cnt);
    free(out.at);
    return rc;
}

/* A call of psi.h as an operation of the step API on party p. */
static int run_plan(party p, out *o, const call *c)
{
    psi_op_args a;
    memset(&a, 0, sizeof a);
    a.values = c->values;
    a.n_values = c->n;
    switch (c->op) {
    case OP_SETUP: a.op = PSI_OP_SETUP; a.params = c->params; break;
    case OP_PROCESS: a.op = PSI_OP_RESPONSE; break;
    case OP_REQUEST: a.op = PSI_OP_REQUEST; break;
    case OP_INTER: a.op = PSI_OP_INTERSECTION; break;
    case OP_SIZE: a.op = PSI_OP_INTERSECTION_SIZE; break;
    case OP_ASSOC: a.op = PSI_OP_ASSOCIATION; break;
    default:
        a.op = PSI_OP_STEP;
        a.step = c->op == OP_MASK ? PSI_STEP_MASK : c->op == OP_REMASK ? PSI_STEP_REMASK
                                                                        : PSI_STEP_UNMASK;
        break;
    }
    if (c->op == OP_PROCESS) {
        a.message = c->a;
        a.message_len = c->a_len;
    } else if (c->op == OP_INTER || c->op == OP_SIZE || c->op == OP_ASSOC) {
        a.setup = c->a;
        a.setup_len = c->a_len;
        a.message = c->b;
        a.message_len = c->b_len;
    } else if (c->op == OP_REMASK || c->op == OP_UNMASK) {
        a.message = c->a;
        a.n_values = c->a_len;
        a.message_len = c->a_len * EB;
        a.values = NULL;
    }
    psi_op_output po;
    memset(&po, 0, sizeof po);
    po.bytes = o->p;
    po.perm = o->perm;
    po.indices = (size_t *)(void *)o->p;
    po.pairs = (psi_pair *)(void *)o->p;
    if (op_item[c->op] == 1)
        po.len = o->len;
    else
        po.count = o->len;
    int rc;
    if (p.mode == PLAN_REMOTE) {
        psi_engine *clone = NULL;
        assert_int_equal(psi_engine_clone(&clone, p.e, NULL), PSI_OK);
        a.slices = p.slices;
        rc = psi_op_run(p.e, &a, &po, remote_exec, clone);
        psi_engine_free(clone);
    } else {
        rc = run_external(p.e, &a, &po, p.slices);
    }
    o->len = op_item[c->op] == 1 ? po.len : po.count;
    return rc;
}

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
    if (p.g == NULL && p.mode != PLAN_CALLS)
        o.rc = run_plan(p, &o, c);
    else
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

/* ------------------------------------------------------ a sort oracle */

typedef struct keyed {
    uint8_t bytes[EB];
    size_t index;
} keyed;

static int keyed_cmp(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    int c = memcmp(x->bytes, y->bytes, EB);
    return c != 0 ? c : (x->index > y->index) - (x->index < y->index);
}

int ts_sort_elements(uint8_t *el, size_t *perm, size_t n)
{
    keyed *k = calloc(n + 1, sizeof *k);
    assert_non_null(k);
    for (size_t i = 0; i < n; i++) {
        memcpy(k[i].bytes, el + i * EB, EB);
        k[i].index = i;
    }
    qsort(k, n, sizeof *k, keyed_cmp);
    for (size_t j = 0; j < n; j++) {
        memcpy(el + j * EB, k[j].bytes, EB);
        if (perm != NULL)
            perm[j] = k[j].index;
    }
    free(k);
    return PSI_OK;
}
