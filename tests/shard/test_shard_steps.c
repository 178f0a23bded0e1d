/* The step API of psi.h (the cut, psi_step_run, an external plan's merge
 * of sorted slices fed in chunks) against the single engine, and
 * the executor: settings checks, shard and thread counts, progress.
 * Public API only.  Random cases print their seed; PSI_TEST_SEED replays
 * one. */
#include <pthread.h>
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
#include "test_shard_common.h"
#include "test_util.h"

/* The cut of §14.1, through the plans of psi.h: an external plan has no
 * inputs to hold, so any n may be cut. */
static void check_plan(const psi_engine *e, size_t n, size_t shards)
{
    psi_op_args a = {.op = PSI_OP_STEP, .step = PSI_STEP_MASK, .n_values = n,
                     .slices = shards, .external = 1};
    psi_plan *p = NULL;
    assert_int_equal(psi_plan_begin(&p, e, &a), PSI_OK);
    assert_int_equal(psi_plan_slices(p), shards);
    size_t next = 0, lo = SIZE_MAX, hi = 0;
    for (size_t k = 0; k < shards; k++) {
        psi_step s;
        assert_int_equal(psi_plan_step(p, &s, k), PSI_OK);
        size_t off = s.offset, cnt = s.count;
        if (off != next || cnt != n / shards + (k < n % shards) || s.kind != PSI_STEP_MASK ||
            s.values != NULL || s.points != NULL)
            fail_msg("plan n=%zu shards=%zu k=%zu: [%zu, +%zu)", n, shards, k, off, cnt);
        next += cnt;
        lo = cnt < lo ? cnt : lo;
        hi = cnt > hi ? cnt : hi;
    }
    assert_true(next == n && hi - lo <= 1);
    psi_step s;
    assert_int_equal(psi_plan_step(p, &s, shards), PSI_E_INVALID_ARG);
    psi_plan_free(p);
}

static void test_shard_plan_slices(void **state)
{
    (void)state;
    uint64_t rng = ts_rng_for(6);
    keyset k;
    ts_keyset_make(&k, &rng);
    for (size_t n = 0; n <= 40; n++)
        for (size_t shards = 1; shards <= 20; shards++)
            check_plan(k.c[1], n, shards);
    static const size_t big[] = {1000, 100000, SIZE_MAX / PSI_ELEMENT_BYTES - 1,
                                 SIZE_MAX / PSI_ELEMENT_BYTES};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        check_plan(k.c[1], big[i], 3);
        check_plan(k.c[1], big[i], 7);
        check_plan(k.c[1], big[i], PSI_PLAN_MAX_SLICES);
    }
    check_plan(k.c[1], 3, PSI_PLAN_MAX_SLICES);
    psi_plan *p = (psi_plan *)&rng;
    psi_op_args a = {.op = PSI_OP_STEP, .step = PSI_STEP_MASK, .n_values = 10,
                     .slices = PSI_PLAN_MAX_SLICES + 1, .external = 1};
    assert_int_equal(psi_plan_begin(&p, k.c[1], &a), PSI_E_INVALID_ARG);
    assert_null(p);
    /* The executor's own counts must add up to the input. */
    size_t counts[3] = {4, 4, 3};
    a.slices = 3;
    a.slice_counts = counts;
    assert_int_equal(psi_plan_begin(&p, k.c[1], &a), PSI_E_INVALID_ARG);
    counts[2] = 2;
    assert_int_equal(psi_plan_begin(&p, k.c[1], &a), PSI_OK);
    psi_step s;
    assert_int_equal(psi_plan_step(p, &s, 2), PSI_OK);
    assert_true(s.offset == 8 && s.count == 2);
    psi_plan_free(p);
    a.reserved[3] = 1;
    assert_int_equal(psi_plan_begin(&p, k.c[1], &a), PSI_E_INVALID_ARG);
    ts_keyset_free(&k);
}

/* Each slice sorted on its own (indices made global), as MASK_SORT does. */
static void sort_slices(uint8_t *el, size_t *perm, size_t n, size_t shards)
{
    for (size_t k = 0; k < shards; k++) {
        size_t off = k * (n / shards) + (k < n % shards ? k : n % shards);
        size_t cnt = n / shards + (k < n % shards);
        assert_int_equal(ts_sort_elements(el + off * EB, perm + off, cnt), PSI_OK);
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

/* An external plan's source: slice k of `el`/`perm` in chunks of at most
 * `chunk` elements. */
typedef struct slice_source {
    const uint8_t *el;
    const size_t *perm;
    size_t n, shards, chunk;
    size_t at[32]; /* next element of each slice, within it */
    int calls;
} slice_source;

static int source_next(void *arg, size_t k, const uint8_t **elements, const size_t **index,
                       size_t *count)
{
    slice_source *src = arg;
    size_t n = src->n, sh = src->shards;
    size_t off = k * (n / sh) + (k < n % sh ? k : n % sh), cnt = n / sh + (k < n % sh);
    size_t c = cnt - src->at[k] < src->chunk ? cnt - src->at[k] : src->chunk;
    *elements = src->el + (off + src->at[k]) * EB;
    *index = src->perm + off + src->at[k];
    *count = c;
    src->at[k] += c;
    src->calls++;
    return PSI_OK;
}

/* The merge of sorted slices (§14.2), fed in chunks, against one sort. */
static int merge_external(const psi_engine *e, uint8_t *out, size_t *operm, const uint8_t *el,
                          const size_t *perm, size_t n, size_t shards, size_t chunk)
{
    psi_op_args a = {.op = PSI_OP_STEP, .step = PSI_STEP_MASK_SORT, .n_values = n,
                     .slices = shards, .external = 1};
    slice_source src = {el, perm, n, shards, chunk, {0}, 0};
    psi_plan *p = NULL;
    assert_int_equal(psi_plan_begin(&p, e, &a), PSI_OK);
    assert_int_equal(psi_plan_source(p, source_next, &src), PSI_OK);
    psi_op_output o = {.bytes = out, .len = n * EB, .perm = operm};
    int rc = psi_plan_finish(p, &o);
    assert_int_equal(o.len, rc == PSI_OK ? n * EB : 0);
    psi_plan_free(p);
    return rc;
}

static void test_shard_merge_sorted_equals_sort(void **state)
{
    (void)state;
    static const size_t counts[] = {1, 2, 3, 5, 7, 8, 16, 31};
    static const size_t chunks[] = {1, 3, 64, 1000};
    enum { N = 200 };
    uint64_t rng = ts_rng_for(7);
    keyset k;
    ts_keyset_make(&k, &rng);
    dataset d;
    ts_dataset_make(&d, &rng, N, 0); /* 200 values from a domain of 68 */
    static uint8_t el[N * EB], whole[N * EB], parts[N * EB], out[N * EB];
    size_t len = sizeof el, wperm[N], pperm[N], operm[N];
    assert_int_equal(psi_engine_mask(k.s[1], el, &len, d.sv, N), PSI_OK);
    memcpy(whole, el, sizeof el);
    assert_int_equal(ts_sort_elements(whole, wperm, N), PSI_OK);
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
            memcpy(parts, el, sizeof el);
            sort_slices(parts, pperm, N, counts[i]);
            memset(out, 0, sizeof out);
            assert_int_equal(merge_external(k.s[1], out, operm, parts, pperm, N, counts[i],
                                            chunks[c]), PSI_OK);
            assert_memory_equal(out, whole, sizeof whole);
            assert_memory_equal(operm, wperm, sizeof wperm);
        }
    }
    /* Slices out of (bytes, index) order: refused, nothing left behind. */
    memcpy(parts, el, sizeof el);
    sort_slices(parts, pperm, N, 2);
    size_t i = equal_pair(parts, N / 2), t;
    assert_true(i < N / 2);
    t = pperm[i], pperm[i] = pperm[i + 1], pperm[i + 1] = t;
    memset(out, FILL, sizeof out);
    assert_int_equal(merge_external(k.s[1], out, operm, parts, pperm, N, 2, 7),
                     PSI_E_SETUP_UNSORTED);
    for (size_t j = 0; j < sizeof out; j++)
        assert_int_equal(out[j], 0);
    sort_slices(memcpy(parts, el, sizeof el), pperm, N, 2);
    memcpy(out, parts, EB);
    memcpy(parts, parts + (N / 2 - 1) * EB, EB);
    memcpy(parts + (N / 2 - 1) * EB, out, EB);
    assert_int_equal(merge_external(k.s[1], out, operm, parts, pperm, N, 2, 64),
                     PSI_E_SETUP_UNSORTED);
    /* An index outside its slice is a broken source. */
    sort_slices(memcpy(parts, el, sizeof el), pperm, N, 2);
    pperm[3] = N - 1;
    assert_int_equal(merge_external(k.s[1], out, operm, parts, pperm, N, 2, 64),
                     PSI_E_INVALID_ARG);
    ts_dataset_free(&d);
    ts_keyset_free(&k);
}

static int slice_run(const psi_engine *e, uint8_t *out, size_t *perm, psi_step_kind step,
                     size_t off, size_t cnt, const psi_value *values, const uint8_t *points)
{
    psi_step in = {step, off, cnt, values ? values + off : NULL,
                   points ? points + off * EB : NULL};
    return psi_step_run(e, out, perm, NULL, &in);
}

/* Each step on each slice equals the engine call on that slice. */
static void check_run_one_slices(const keyset *k, const dataset *d, const uint8_t *masked,
                                 const uint8_t *remasked, size_t shards)
{
    uint8_t out[64 * EB], want[64 * EB];
    size_t perm[64], wperm[64];
    for (size_t j = 0; j < shards; j++) {
        size_t len = sizeof want;
        size_t off = j * (d->nc / shards) + (j < d->nc % shards ? j : d->nc % shards);
        size_t cnt = d->nc / shards + (j < d->nc % shards);
        assert_int_equal(slice_run(k->c[1], out, NULL, PSI_STEP_MASK, off, cnt, d->cv, NULL),
                         PSI_OK);
        assert_memory_equal(out, masked + off * EB, cnt * EB);
        assert_int_equal(slice_run(k->s[0], out, perm, PSI_STEP_MASK_SORT, off, cnt, d->cv,
                                   NULL), PSI_OK);
        assert_int_equal(psi_engine_mask(k->s[0], want, &len, d->cv + off, cnt), PSI_OK);
        assert_int_equal(ts_sort_elements(want, wperm, cnt), PSI_OK);
        for (size_t i = 0; i < cnt; i++)
            assert_int_equal(perm[i], wperm[i] + off);
        assert_memory_equal(out, want, cnt * EB);
        assert_int_equal(slice_run(k->s[1], out, NULL, PSI_STEP_REMASK, off, cnt, NULL, masked),
                         PSI_OK);
        assert_memory_equal(out, remasked + off * EB, cnt * EB);
        assert_int_equal(slice_run(k->c[1], out, NULL, PSI_STEP_UNMASK, off, cnt, NULL,
                                   remasked), PSI_OK);
        len = sizeof want;
        assert_int_equal(psi_engine_unmask(k->c[1], want, &len, remasked + off * EB, cnt),
                         PSI_OK);
        assert_memory_equal(out, want, cnt * EB);
        /* The _SORT steps: the step's slice, sorted stably, indices global. */
        assert_int_equal(slice_run(k->c[1], out, perm, PSI_STEP_UNMASK_SORT, off, cnt, NULL,
                                   remasked), PSI_OK);
        assert_int_equal(ts_sort_elements(want, wperm, cnt), PSI_OK);
        for (size_t i = 0; i < cnt; i++)
            assert_int_equal(perm[i], wperm[i] + off);
        assert_memory_equal(out, want, cnt * EB);
        assert_int_equal(slice_run(k->s[1], out, perm, PSI_STEP_REMASK_SORT, off, cnt, NULL,
                                   masked), PSI_OK);
        memcpy(want, remasked + off * EB, cnt * EB);
        assert_int_equal(ts_sort_elements(want, wperm, cnt), PSI_OK);
        for (size_t i = 0; i < cnt; i++)
            assert_int_equal(perm[i], wperm[i] + off);
        assert_memory_equal(out, want, cnt * EB);
    }
}

static void check_run_one_errors(const keyset *k, const dataset *d, const uint8_t *masked)
{
    uint8_t buf[4 * EB], bad[4 * EB];
    size_t perm[4];
    psi_step in = {(psi_step_kind)0, 0, 2, d->cv, masked};
    assert_int_equal(psi_step_run(k->c[1], buf, perm, NULL, &in), PSI_E_INVALID_ARG);
    in.kind = (psi_step_kind)7;
    assert_int_equal(psi_step_run(k->c[1], buf, perm, NULL, &in), PSI_E_INVALID_ARG);
    assert_int_equal(psi_step_run(k->c[1], buf, perm, NULL, NULL), PSI_E_INVALID_ARG);
    assert_int_equal(slice_run(NULL, buf, NULL, PSI_STEP_MASK, 0, 2, d->cv, NULL),
                     PSI_E_INVALID_ARG);
    assert_int_equal(slice_run(k->c[1], NULL, NULL, PSI_STEP_MASK, 0, 2, d->cv, NULL),
                     PSI_E_INVALID_ARG);
    assert_int_equal(slice_run(k->c[1], buf, NULL, PSI_STEP_MASK, 0, 2, NULL, NULL),
                     PSI_E_INVALID_ARG);
    assert_int_equal(slice_run(k->c[1], buf, NULL, PSI_STEP_MASK_SORT, 0, 2, d->cv, NULL),
                     PSI_E_INVALID_ARG);
    assert_int_equal(slice_run(k->c[1], buf, NULL, PSI_STEP_REMASK, 0, 2, NULL, NULL),
                     PSI_E_INVALID_ARG);
    assert_int_equal(slice_run(k->c[1], buf, NULL, PSI_STEP_UNMASK, 0, 2, NULL, NULL),
                     PSI_E_INVALID_ARG);
    for (int st = PSI_STEP_REMASK_SORT; st <= PSI_STEP_UNMASK_SORT; st++)
        assert_int_equal(slice_run(k->s[1], buf, NULL, (psi_step_kind)st, 0, 2, NULL, masked),
                         PSI_E_INVALID_ARG); /* no perm */
    for (int st = PSI_STEP_MASK; st <= PSI_STEP_UNMASK_SORT; st++)
        assert_int_equal(slice_run(k->c[1], NULL, NULL, (psi_step_kind)st, 5, 0, NULL, NULL),
                         PSI_OK);
    /* A bad point: its code, its place as data (counted in the whole
     * input), and no partial output. */
    memcpy(bad, masked, sizeof bad);
    ts_corrupt(bad, 2, BAD_X_ONE);
    for (int st = PSI_STEP_REMASK; st <= PSI_STEP_UNMASK_SORT; st++) {
        out o = {0, 0, 1, 4, buf, NULL, 0};
        memset(buf, FILL, sizeof buf);
        psi_step s = {(psi_step_kind)st, 100, 4, NULL, bad};
        psi_error_detail det;
        o.rc = psi_step_run(k->s[1], buf, perm, &det, &s);
        assert_int_equal(o.rc, PSI_E_POINT_NOT_ON_CURVE);
        assert_int_equal(det.code, PSI_E_POINT_NOT_ON_CURVE);
        assert_int_equal(det.index, 102);
        o.cap = sizeof buf;
        snprintf(ts_where, sizeof ts_where, "step_run step %d", st);
        ts_expect_no_partial("step_run", &o);
    }
}

static void test_shard_run_one_each_step(void **state)
{
    (void)state;
    static const size_t counts[] = {1, 2, 4, 7, 23, 30};
    uint64_t rng = ts_rng_for(8);
    keyset k;
    ts_keyset_make(&k, &rng);
    dataset d;
    ts_dataset_make(&d, &rng, 0, 23);
    uint8_t masked[23 * EB], remasked[23 * EB];
    size_t len = sizeof masked;
    assert_int_equal(psi_engine_mask(k.c[1], masked, &len, d.cv, 23), PSI_OK);
    len = sizeof remasked;
    assert_int_equal(psi_engine_remask(k.s[1], remasked, &len, masked, 23), PSI_OK);
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        check_run_one_slices(&k, &d, masked, remasked, counts[i]);
    check_run_one_errors(&k, &d, masked);
    ts_dataset_free(&d);
    ts_keyset_free(&k);
}

/* ------------------------------------------------------ messages to a sink */

typedef struct sink_log {
    uint8_t buf[1 << 16];
    size_t len, calls, fail_at; /* fail_at: the call that refuses (0: none) */
} sink_log;

static int sink_take(void *arg, const uint8_t *bytes, size_t len)
{
    sink_log *l = arg;
    if (++l->calls == l->fail_at)
        return 1;
    assert_true(len <= sizeof l->buf - l->len);
    memcpy(l->buf + l->len, bytes, len);
    l->len += len;
    return 0;
}

/* Every message operation written to a sink gives the message call's bytes
 * (and permutation); a sink that refuses gives PSI_E_IO. */
static void test_plan_sink_equals_buffer(void **state)
{
    (void)state;
    uint64_t rng = ts_rng_for(9);
    keyset k;
    ts_keyset_make(&k, &rng);
    dataset d;
    ts_dataset_make(&d, &rng, 300, 200);
    static uint8_t want[1 << 16], req[1 << 16];
    size_t wlen, rlen = sizeof req, wperm[300], perm[300];
    assert_int_equal(psi_client_create_request(k.c[1], req, &rlen, d.cv, d.nc), PSI_OK);
    for (int op = 0; op < 5; op++) {
        for (size_t slices = 1; slices <= 4; slices += 3) {
            psi_op_args a;
            memset(&a, 0, sizeof a);
            a.slices = slices;
            const psi_engine *e = k.s[1];
            wlen = sizeof want;
            if (op < 3) {
                a.op = PSI_OP_SETUP;
                a.params = (psi_setup_params){(psi_structure)op, 1e-6, 200};
                a.values = d.sv;
                a.n_values = d.ns;
                assert_int_equal(psi_server_create_setup(e, want, &wlen, wperm, &a.params, d.sv,
                                                         d.ns), PSI_OK);
            } else if (op == 3) {
                a.op = PSI_OP_REQUEST;
                a.values = d.cv;
                a.n_values = d.nc;
                e = k.c[1];
                assert_int_equal(psi_client_create_request(e, want, &wlen, d.cv, d.nc), PSI_OK);
            } else {
                a.op = PSI_OP_RESPONSE;
                a.message = req;
                a.message_len = rlen;
                assert_int_equal(psi_server_process_request(e, want, &wlen, req, rlen), PSI_OK);
            }
            static sink_log log;
            memset(&log, 0, sizeof log);
            psi_op_output o = {.sink = sink_take, .sink_arg = &log, .perm = perm};
            memset(perm, 0, sizeof perm);
            assert_int_equal(psi_op_run(e, &a, &o, NULL, NULL), PSI_OK);
            assert_int_equal(o.len, wlen);
            ts_expect_bytes("message to a sink", log.buf, log.len, want, wlen);
            if (op == 0)
                assert_memory_equal(perm, wperm, sizeof perm);
            for (size_t f = 1; f <= 2; f++) {
                memset(&log, 0, sizeof log);
                log.fail_at = f;
                o = (psi_op_output){.sink = sink_take, .sink_arg = &log};
                int rc = psi_op_run(e, &a, &o, NULL, NULL);
                /* A setup of 300 values fits one 64 KiB piece: no second call. */
                assert_int_equal(rc, log.calls >= f ? PSI_E_IO : PSI_OK);
                assert_int_equal(o.len, rc == PSI_OK ? wlen : 0);
            }
        }
    }
    ts_dataset_free(&d);
    ts_keyset_free(&k);
}

/* The intersection in pieces (psi_plan_match_sink): the indices of the
 * message call, ascending against GCS and Bloom, in any order against raw;
 * in memory and from an external plan fed in chunks, for several slice
 * counts; an external count matched chunk by chunk; a refusing sink is
 * PSI_E_IO; a plan other than an intersection refuses the sink. */
/* What a sink of indices in pieces (psi_plan_match_sink, psi_plan_perm_sink)
 * was handed; the fail_at-th call refuses. */
typedef struct index_log {
    size_t idx[400];
    size_t n, calls, fail_at;
} index_log;

static int index_take(void *arg, const size_t *index, size_t n)
{
    index_log *l = arg;
    if (++l->calls == l->fail_at)
        return 1;
    assert_true(n > 0 && n <= PSI_PLAN_TICK && n <= 400 - l->n);
    memcpy(l->idx + l->n, index, n * sizeof *index);
    l->n += n;
    return 0;
}

/* What a pair sink (psi_plan_pair_sink) was handed; the fail_at-th call
 * refuses. */
typedef struct pair_log {
    psi_pair pairs[400];
    size_t n, calls, fail_at;
} pair_log;

static int pair_take(void *arg, const psi_pair *pairs, size_t n)
{
    pair_log *l = arg;
    if (++l->calls == l->fail_at)
        return 1;
    assert_true(n > 0 && n <= PSI_PLAN_TICK && n <= 400 - l->n);
    memcpy(l->pairs + l->n, pairs, n * sizeof *pairs);
    l->n += n;
    return 0;
}

static int size_cmp(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* Runs an intersection plan (external: its steps run here, fed in chunks
 * of 3) into a match sink (an association plan into a pair sink, pl).
 * Returns: finish's code; *count its count. */
static int match_plan_pairs(const psi_engine *e, psi_op op, const uint8_t *setup, size_t slen,
                            const uint8_t *resp, size_t rlen, size_t n, size_t slices,
                            int external, index_log *ml, pair_log *pl, size_t *count)
{
    static uint8_t pts[400 * EB], out[400 * EB];
    static size_t perm[400];
    psi_op_args a;
    memset(&a, 0, sizeof a);
    a.op = op;
    a.setup = setup;
    a.setup_len = slen;
    a.slices = slices;
    a.external = external;
    if (external)
        a.n_values = n;
    else
        a.message = resp, a.message_len = rlen;
    psi_plan *p = NULL;
    assert_int_equal(psi_plan_begin(&p, e, &a), PSI_OK);
    if (op == PSI_OP_INTERSECTION)
        assert_int_equal(psi_plan_match_sink(p, index_take, ml), PSI_OK);
    if (op == PSI_OP_ASSOCIATION)
        assert_int_equal(psi_plan_pair_sink(p, pair_take, pl), PSI_OK);
    slice_source src = {out, perm, n, slices, 3, {0}, 0};
    if (external) {
        size_t cnt = n;
        assert_int_equal(psi_response_decode(pts, &cnt, psi_engine_suite(e), resp, rlen), PSI_OK);
        assert_int_equal(cnt, n);
        for (size_t k = 0; k < slices; k++) {
            psi_step st;
            assert_int_equal(psi_plan_step(p, &st, k), PSI_OK);
            st.points = pts + st.offset * EB;
            for (size_t i = 0; i < st.count; i++)
                perm[st.offset + i] = st.offset + i; /* unsorted kinds: positions */
            assert_int_equal(psi_step_run(e, out + st.offset * EB, perm + st.offset, NULL, &st),
                             PSI_OK);
        }
        assert_int_equal(psi_plan_source(p, source_next, &src), PSI_OK);
    } else {
        for (size_t k = 0; k < psi_plan_slices(p); k++)
            assert_int_equal(psi_plan_run(p, e, k), PSI_OK);
    }
    psi_op_output o;
    memset(&o, 0, sizeof o);
    int rc = psi_plan_finish(p, &o);
    *count = o.count;
    psi_plan_free(p);
    return rc;
}

static int match_plan(const psi_engine *e, psi_op op, const uint8_t *setup, size_t slen,
                      const uint8_t *resp, size_t rlen, size_t n, size_t slices, int external,
                      index_log *ml, size_t *count)
{
    return match_plan_pairs(e, op, setup, slen, resp, rlen, n, slices, external, ml, NULL,
                            count);
}

static void test_plan_match_sink(void **state)
{
    (void)state;
    uint64_t rng = ts_rng_for(12);
    keyset k;
    ts_keyset_make(&k, &rng);
    dataset d;
    ts_dataset_make(&d, &rng, 300, 200);
    static uint8_t setup[1 << 16], req[1 << 16], resp[1 << 16];
    size_t rqlen = sizeof req, rslen = sizeof resp;
    assert_int_equal(psi_client_create_request(k.c[1], req, &rqlen, d.cv, d.nc), PSI_OK);
    assert_int_equal(psi_server_process_request(k.s[1], resp, &rslen, req, rqlen), PSI_OK);
    static const psi_structure st[] = {PSI_STRUCTURE_RAW, PSI_STRUCTURE_GCS,
                                       PSI_STRUCTURE_BLOOM_FILTER};
    for (size_t i = 0; i < 3; i++) {
        psi_setup_params sp = {st[i], 1e-6, 200};
        size_t slen = sizeof setup, want[400], wn = 400;
        assert_int_equal(psi_server_create_setup(k.s[1], setup, &slen, NULL, &sp, d.sv, d.ns),
                         PSI_OK);
        assert_int_equal(psi_client_get_intersection(k.c[1], want, &wn, setup, slen, resp,
                                                     rslen), PSI_OK);
        assert_true(wn > 10); /* the dataset shares values */
        qsort(want, wn, sizeof *want, size_cmp);
        for (size_t slices = 1; slices <= 7; slices += 3) {
            for (int ext = 0; ext <= 1; ext++) {
                static index_log ml;
                size_t count = 0;
                memset(&ml, 0, sizeof ml);
                assert_int_equal(match_plan(k.c[1], PSI_OP_INTERSECTION, setup, slen, resp,
                                            rslen, d.nc, slices, ext, &ml, &count), PSI_OK);
                assert_int_equal(count, wn);
                assert_int_equal(ml.n, wn);
                if (st[i] == PSI_STRUCTURE_RAW)
                    qsort(ml.idx, ml.n, sizeof *ml.idx, size_cmp);
                assert_memory_equal(ml.idx, want, wn * sizeof *want);
                assert_int_equal(match_plan(k.c[1], PSI_OP_INTERSECTION_SIZE, setup, slen, resp,
                                            rslen, d.nc, slices, ext, NULL, &count), PSI_OK);
                assert_int_equal(count, wn);
                memset(&ml, 0, sizeof ml);
                ml.fail_at = 1;
                assert_int_equal(match_plan(k.c[1], PSI_OP_INTERSECTION, setup, slen, resp,
                                            rslen, d.nc, slices, ext, &ml, &count), PSI_E_IO);
            }
        }
    }
    // Only an intersection has matched indices.
    psi_op_args a;
    memset(&a, 0, sizeof a);
    a.op = PSI_OP_REQUEST;
    a.values = d.cv;
    a.n_values = d.nc;
    psi_plan *p = NULL;
    assert_int_equal(psi_plan_begin(&p, k.c[1], &a), PSI_OK);
    assert_int_equal(psi_plan_match_sink(p, index_take, NULL), PSI_E_INVALID_ARG);
    psi_plan_free(p);
    ts_dataset_free(&d);
    ts_keyset_free(&k);
}

/* The association table in pieces (psi_plan_pair_sink): the pairs of the
 * message call in its order (setup position ascending), in memory and from
 * an external plan fed in chunks, for several slice counts; a refusing sink
 * is PSI_E_IO; against GCS the plan fails as the call does; a plan other
 * than an association refuses the sink. */
static void test_plan_pair_sink(void **state)
{
    (void)state;
    uint64_t rng = ts_rng_for(14);
    keyset k;
    ts_keyset_make(&k, &rng);
    dataset d;
    ts_dataset_make(&d, &rng, 300, 200);
    static uint8_t setup[1 << 16], req[1 << 16], resp[1 << 16];
    size_t rqlen = sizeof req, rslen = sizeof resp, slen = sizeof setup, count = 0;
    static psi_pair want[400];
    size_t wn = 400;
    psi_setup_params sp = {PSI_STRUCTURE_RAW, 1e-6, 200};
    assert_int_equal(psi_client_create_request(k.c[1], req, &rqlen, d.cv, d.nc), PSI_OK);
    assert_int_equal(psi_server_process_request(k.s[1], resp, &rslen, req, rqlen), PSI_OK);
    assert_int_equal(psi_server_create_setup(k.s[1], setup, &slen, NULL, &sp, d.sv, d.ns),
                     PSI_OK);
    assert_int_equal(psi_client_get_association(k.c[1], want, &wn, setup, slen, resp, rslen),
                     PSI_OK);
    assert_true(wn > 10); /* the dataset shares values */
    for (size_t slices = 1; slices <= 7; slices += 3) {
        for (int ext = 0; ext <= 1; ext++) {
            static pair_log pl;
            memset(&pl, 0, sizeof pl);
            assert_int_equal(match_plan_pairs(k.c[1], PSI_OP_ASSOCIATION, setup, slen, resp,
                                              rslen, d.nc, slices, ext, NULL, &pl, &count),
                             PSI_OK);
            assert_int_equal(count, wn);
            assert_int_equal(pl.n, wn);
            assert_memory_equal(pl.pairs, want, wn * sizeof *want);
            memset(&pl, 0, sizeof pl);
            pl.fail_at = 1;
            assert_int_equal(match_plan_pairs(k.c[1], PSI_OP_ASSOCIATION, setup, slen, resp,
                                              rslen, d.nc, slices, ext, NULL, &pl, &count),
                             PSI_E_IO);
        }
    }
    // Against GCS the plan fails as psi_client_get_association does, and
    // the sink is never called.
    psi_setup_params gp = {PSI_STRUCTURE_GCS, 1e-6, 200};
    slen = sizeof setup;
    assert_int_equal(psi_server_create_setup(k.s[1], setup, &slen, NULL, &gp, d.sv, d.ns),
                     PSI_OK);
    static pair_log none;
    memset(&none, 0, sizeof none);
    assert_int_equal(match_plan_pairs(k.c[1], PSI_OP_ASSOCIATION, setup, slen, resp, rslen,
                                      d.nc, 1, 0, NULL, &none, &count), PSI_E_STRUCTURE);
    assert_int_equal(none.calls, 0);
    // Only an association has pairs.
    psi_op_args a;
    memset(&a, 0, sizeof a);
    a.op = PSI_OP_INTERSECTION;
    a.setup = setup;
    a.setup_len = slen;
    a.message = resp;
    a.message_len = rslen;
    psi_plan *p = NULL;
    assert_int_equal(psi_plan_begin(&p, k.c[1], &a), PSI_OK);
    assert_int_equal(psi_plan_pair_sink(p, pair_take, NULL), PSI_E_INVALID_ARG);
    psi_plan_free(p);
    ts_dataset_free(&d);
    ts_keyset_free(&k);
}

/* The permutation in pieces (psi_plan_perm_sink) is the one of the
 * message call, for every slice count; a refusing sink is PSI_E_IO; a
 * plan other than a setup's refuses the sink. */
static void test_plan_perm_sink(void **state)
{
    (void)state;
    uint64_t rng = ts_rng_for(10);
    keyset k;
    ts_keyset_make(&k, &rng);
    dataset d;
    ts_dataset_make(&d, &rng, 300, 200);
    static uint8_t want[1 << 16];
    static sink_log log;
    size_t wlen = sizeof want, wperm[300];
    psi_setup_params sp = {PSI_STRUCTURE_RAW, 1e-6, 200};
    assert_int_equal(psi_server_create_setup(k.s[1], want, &wlen, wperm, &sp, d.sv, d.ns), PSI_OK);
    for (size_t slices = 1; slices <= 7; slices += 3) {
        for (size_t f = 0; f <= 1; f++) {
            psi_op_args a;
            memset(&a, 0, sizeof a);
            a.op = PSI_OP_SETUP;
            a.params = sp;
            a.values = d.sv;
            a.n_values = d.ns;
            a.slices = slices;
            psi_plan *p = NULL;
            assert_int_equal(psi_plan_begin(&p, k.s[1], &a), PSI_OK);
            static index_log pl;
            memset(&pl, 0, sizeof pl);
            pl.fail_at = f;
            assert_int_equal(psi_plan_perm_sink(p, index_take, &pl), PSI_OK);
            for (size_t s = 0; s < psi_plan_slices(p); s++)
                assert_int_equal(psi_plan_run(p, k.s[1], s), PSI_OK);
            memset(&log, 0, sizeof log);
            psi_op_output o = {.sink = sink_take, .sink_arg = &log};
            int rc = psi_plan_finish(p, &o);
            if (f == 0) {
                assert_int_equal(rc, PSI_OK);
                ts_expect_bytes("setup beside a permutation sink", log.buf, log.len, want, wlen);
                assert_int_equal(pl.n, d.ns);
                assert_memory_equal(pl.idx, wperm, d.ns * sizeof *wperm);
            } else {
                assert_int_equal(rc, PSI_E_IO);
            }
            psi_plan_free(p);
        }
    }
    // Only a setup has a permutation.
    psi_op_args a;
    memset(&a, 0, sizeof a);
    a.op = PSI_OP_REQUEST;
    a.values = d.cv;
    a.n_values = d.nc;
    psi_plan *p = NULL;
    assert_int_equal(psi_plan_begin(&p, k.c[1], &a), PSI_OK);
    assert_int_equal(psi_plan_perm_sink(p, index_take, NULL), PSI_E_INVALID_ARG);
    psi_plan_free(p);
    ts_dataset_free(&d);
    ts_keyset_free(&k);
}

/* ------------------------------------------------------------ executor */

static void test_shard_create_rejects_bad_settings(void **state)
{
    (void)state;
    uint8_t key[PSI_KEY_BYTES];
    uint64_t rng = ts_rng_for(9);
    ts_random_key(&rng, key);
    psi_engine *e = ts_engine_new(PSI_ROLE_CLIENT, 1, key, sizeof key);
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
        {0, 0, 5, 5, cpus5 == 1 ? 0 : cpus5}, {0, 0, 0, cpus == 1 ? 1 : cpus * PSI_SHARD_DEFAULT_PER_THREAD, cpus == 1 ? 0 : cpus},
        {2, 0, 0, 2 * PSI_SHARD_DEFAULT_PER_THREAD, 2}, {1, 0, 0, 1, 0},
        {PSI_SHARD_MAX_THREADS, 0, 3, 3, 3},
    };
    uint8_t key[PSI_KEY_BYTES];
    uint64_t rng = ts_rng_for(10);
    ts_random_key(&rng, key);
    psi_engine *e = ts_engine_new(PSI_ROLE_SERVER, 0, key, sizeof key);
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
    pthread_t caller;       /* the test's thread */
    size_t from_caller;     /* calls made on it (the merges' ticks) */
    int tick_not_done;      /* a call on it with done != total */
} progress_log;

static void progress_count(void *arg, uint64_t done, uint64_t total)
{
    progress_log *p = arg;
    if (atomic_fetch_add(&p->inside, 1) != 0)
        p->overlap = 1;
    if (pthread_equal(pthread_self(), p->caller)) {
        p->from_caller++;
        p->tick_not_done |= done != total;
    }
    if (p->calls > 0 && done < p->last)
        p->decreased = 1;
    if (total != p->total || done > total)
        p->wrong_total = 1;
    p->last = done;
    p->calls++;
    atomic_fetch_sub(&p->inside, 1);
}

/* 4 shards on 2 threads over e, reporting to progress_count(log). */
static psi_shards *logged_shards(const psi_engine *e, progress_log *log)
{
    psi_shard_settings s;
    psi_shard_settings_default(&s);
    s.shards = 4;
    s.threads = 2;
    s.progress = progress_count;
    s.progress_arg = log;
    psi_shards *g = NULL;
    assert_int_equal(psi_shards_create(&g, e, &s), PSI_OK);
    return g;
}

/* The shards report one monotonic count per call, never two callbacks at
 * once, ending at n; the engine's own callback is not cloned. */
static void test_shard_progress_reaches_n(void **state)
{
    (void)state;
    enum { N = 5000 };
    static const size_t ns[] = {N, 100};
    uint64_t rng = ts_rng_for(11);
    uint8_t key[PSI_KEY_BYTES];
    ts_random_key(&rng, key);
    progress_log engine_log = {0}, log = {0};
    psi_settings es;
    psi_settings_default(&es);
    es.progress = progress_count;
    es.progress_arg = &engine_log;
    psi_engine *e = NULL;
    assert_int_equal(psi_engine_create_from_key(&e, &es, key, sizeof key), PSI_OK);
    psi_shards *g = logged_shards(e, &log);
    dataset d;
    ts_dataset_make(&d, &rng, N, 0);
    uint8_t *out = malloc(N * EB);
    assert_non_null(out);
    for (size_t i = 0; i < 2; i++) {
        size_t len = N * EB;
        memset(&log, 0, sizeof log);
        log.caller = pthread_self();
        log.total = ns[i];
        assert_int_equal(psi_shards_mask(g, out, &len, d.sv, ns[i]), PSI_OK);
        printf("# progress: %zu values, %zu calls\n", ns[i], log.calls);
        assert_true(log.calls >= 1);
        assert_int_equal(log.last, ns[i]);
        assert_false(log.overlap || log.decreased || log.wrong_total);
        assert_int_equal(log.from_caller, 0); /* masking alone merges nothing */
    }
    assert_int_equal(engine_log.calls, 0);
    free(out);
    ts_dataset_free(&d);
    psi_shards_free(g);
    psi_engine_free(e);
}

/* Starts a log of one call of n values on g's callback (log). */
static void tick_log_start(progress_log *log, size_t n)
{
    memset(log, 0, sizeof *log);
    log->caller = pthread_self();
    log->total = n;
}

/* The whole log of a call that merged n elements on the calling thread:
 * one tick every PSI_SHARD_TICK of them, each with done = total, and the
 * count still monotonic, never two at once. */
static void tick_log_check(const char *what, const progress_log *log, size_t n)
{
    printf("# %s: %zu values, %zu calls, %zu from the calling thread\n", what, n, log->calls,
           log->from_caller);
    if (log->from_caller != n / PSI_SHARD_TICK || log->tick_not_done || log->overlap ||
        log->decreased || log->wrong_total || log->last != n)
        fail_msg("%s: %zu ticks for %zu values (want %zu), not done %d, overlap %d, "
                 "decreased %d, wrong total %d, last %llu", what, log->from_caller, n,
                 (size_t)(n / PSI_SHARD_TICK), log->tick_not_done, log->overlap,
                 log->decreased, log->wrong_total, (unsigned long long)log->last);
}

/* The serial merges (raw setup, response without reveal, raw match) tick
 * the progress callback from the calling thread, so a caller waiting on
 * them can send keepalives (the CLI's network rounds); the other calls do
 * not tick. */
static void test_shard_progress_ticks_merges(void **state)
{
    (void)state;
    enum { N = PSI_SHARD_TICK + 1 }; /* one tick per merge */
    uint64_t rng = ts_rng_for(12);
    uint8_t skey[PSI_KEY_BYTES], ckey[PSI_KEY_BYTES];
    ts_random_key(&rng, skey);
    ts_random_key(&rng, ckey);
    progress_log slog, clog;
    psi_engine *se = ts_engine_new(PSI_ROLE_SERVER, 0, skey, sizeof skey);
    psi_engine *ce = ts_engine_new(PSI_ROLE_CLIENT, 0, ckey, sizeof ckey);
    psi_shards *sg = logged_shards(se, &slog), *cg = logged_shards(ce, &clog);
    dataset d;
    ts_dataset_make(&d, &rng, N, N);
    psi_setup_params p = {PSI_STRUCTURE_RAW, 1e-9, N};
    size_t setup_len, req_len = psi_request_bound(PSI_SUITE_OPENMINED_P256, N), resp_len = psi_response_bound(PSI_SUITE_OPENMINED_P256, N);
    assert_int_equal(psi_setup_bound(&setup_len, PSI_SUITE_OPENMINED_P256, &p, N), PSI_OK);
    uint8_t *setup = malloc(setup_len), *req = malloc(req_len), *resp = malloc(resp_len);
    assert_true(setup != NULL && req != NULL && resp != NULL);

    tick_log_start(&slog, N);
    assert_int_equal(psi_shards_server_create_setup(sg, setup, &setup_len, NULL, &p, d.sv, N),
                     PSI_OK);
    tick_log_check("raw setup", &slog, N);
    tick_log_start(&clog, N);
    assert_int_equal(psi_shards_client_create_request(cg, req, &req_len, d.cv, N), PSI_OK);
    assert_int_equal(clog.from_caller, 0);
    tick_log_start(&slog, N);
    assert_int_equal(psi_shards_server_process_request(sg, resp, &resp_len, req, req_len),
                     PSI_OK);
    tick_log_check("response without reveal", &slog, N);
    size_t count = 0;
    tick_log_start(&clog, N);
    assert_int_equal(psi_shards_client_get_intersection_size(cg, &count, setup, setup_len,
                                                              resp, resp_len), PSI_OK);
    tick_log_check("raw match", &clog, N);
    assert_true(count > 0);

    free(setup);
    free(req);
    free(resp);
    ts_dataset_free(&d);
    psi_shards_free(sg);
    psi_shards_free(cg);
    psi_engine_free(se);
    psi_engine_free(ce);
}

int main(void)
{
    ts_seed = tu_seed("shard_steps");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shard_plan_slices),
        cmocka_unit_test(test_shard_create_rejects_bad_settings),
        cmocka_unit_test(test_shard_counts_and_threads),
        cmocka_unit_test(test_shard_merge_sorted_equals_sort),
        cmocka_unit_test(test_shard_run_one_each_step),
        cmocka_unit_test(test_plan_sink_equals_buffer),
        cmocka_unit_test(test_plan_perm_sink),
        cmocka_unit_test(test_plan_match_sink),
        cmocka_unit_test(test_plan_pair_sink),
        cmocka_unit_test(test_shard_progress_reaches_n),
        cmocka_unit_test(test_shard_progress_ticks_merges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
