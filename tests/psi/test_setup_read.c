/* A ServerSetup read through a psi_read_fn (psi/setup_read.c, PROTOCOL.md
 * §20) against the setup parsed whole: the same code with the same detail
 * (field, index, offset) for every entry of the codec's malformed-message
 * table, for raw setups of every suite up to several windows long, and for
 * damaged ones (flipped and cut bytes, swapped elements, unknown fields
 * longer than a window, elements of the wrong size), at windows from the
 * smallest to the default; then the same matches, counts and cursor
 * elements from both; the reader's failures and a file changed under a
 * parsed setup as PSI_E_IO; GCS and Bloom setups past max_held refused
 * before they are read; psi_setup_check_read as psi_setup_check; and a raw
 * setup's read costing a window, not its size.  Internal: it reads the
 * parsed setup's fields and picks the window. */
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
#include "setup.h"
#include "wire.h"
#include "codec_common.h"
#include "test_util.h"

static const int suites[] = {PSI_SUITE_OPENMINED_P256, PSI_SUITE_P256_SSWU,
                             PSI_SUITE_RISTRETTO255};
#define N_SUITES (sizeof suites / sizeof suites[0])
static const size_t windows[] = {PSI_WIRE_WINDOW_MIN, 257, 300, 1000, 4096, PSI_WIRE_WINDOW};
#define N_WINDOWS (sizeof windows / sizeof windows[0])

/* ------------------------------------------------------------ reader */

/* A message in memory behind a psi_read_fn that can be made to fail. */
typedef struct mem_file {
    const uint8_t *m;
    uint64_t len;
    uint64_t fail_from; /* a read reaching past this offset fails */
    uint64_t reads, bytes, max_read;
} mem_file;

static int mem_read(void *arg, uint64_t offset, uint8_t *buf, size_t len)
{
    mem_file *f = arg;
    f->reads++;
    f->bytes += len;
    if (len > f->max_read)
        f->max_read = len;
    if (offset > f->len || len > f->len - offset || offset + len > f->fail_from)
        return 1;
    memcpy(buf, f->m + offset, len);
    return 0;
}

static mem_file mem_open(const uint8_t *m, size_t len)
{
    return (mem_file){m, len, UINT64_MAX, 0, 0, 0};
}

/* ----------------------------------------------------------- compare */

typedef struct outcome {
    int rc;
    psi_error_detail d;
    psi_setup *s;
} outcome;

static int same_detail(const psi_error_detail *a, const psi_error_detail *b)
{
    return a->code == b->code && a->index == b->index && a->offset == b->offset &&
           ((a->field == NULL && b->field == NULL) ||
            (a->field != NULL && b->field != NULL && strcmp(a->field, b->field) == 0));
}

/* Every element of a read raw setup, through a cursor, equals the whole
 * setup's. */
static void check_cursor(const psi_setup *whole, const psi_setup *read)
{
    psi_raw_cursor c;
    const uint8_t *e;
    assert_int_equal(psi_raw_cursor_init(&c, read), PSI_OK);
    for (size_t b = 0; b < whole->raw_count; b++) {
        assert_int_equal(psi_raw_cursor_at(&c, b, &e), PSI_OK);
        if (memcmp(e, whole->raw + b * EB, EB) != 0)
            fail_msg("element %zu of %zu differs through the cursor", b, whole->raw_count);
    }
    psi_raw_cursor_free(&c);
}

/* Parses msg whole and through the reader at every window; fails unless
 * the outcomes agree.  Returns the whole parse's code. */
static int check_read(const char *what, int suite, const uint8_t *msg, size_t len)
{
    outcome w = {0}, r;
    w.rc = psi_setup_parse(&w.s, suite, msg, len);
    psi_error_detail_get(&w.d);
    for (size_t i = 0; i < N_WINDOWS; i++) {
        mem_file f = mem_open(msg, len);
        memset(&r, 0, sizeof r);
        psi_error_detail_set(NULL);
        r.rc = psi_setup_parse_read_bounded(&r.s, suite, mem_read, &f, len, UINT64_MAX,
                                            UINT64_MAX, windows[i]);
        psi_error_detail_get(&r.d);
        if (r.rc != w.rc || !same_detail(&r.d, &w.d))
            fail_msg("%s (suite %d, %zu bytes), window %zu: whole %s (%s, %lld, %lld), read "
                     "%s (%s, %lld, %lld)", what, suite, len, windows[i], psi_error_name(w.rc),
                     w.d.field ? w.d.field : "-", (long long)w.d.index, (long long)w.d.offset,
                     psi_error_name(r.rc), r.d.field ? r.d.field : "-", (long long)r.d.index,
                     (long long)r.d.offset);
        assert_true(r.rc == PSI_OK ? r.s != NULL : r.s == NULL);
        if (r.rc == PSI_OK) {
            assert_int_equal(r.s->structure, w.s->structure);
            assert_int_equal(r.s->raw_count, w.s->raw_count);
            if (w.s->structure == PSI_STRUCTURE_RAW) {
                assert_null(r.s->raw);
                assert_true(f.max_read <= windows[i]);
                check_cursor(w.s, r.s);
            } else {
                assert_int_equal(r.s->gcs_count, w.s->gcs_count);
                assert_int_equal(r.s->bloom_bytes, w.s->bloom_bytes);
            }
        }
        psi_setup_free(r.s);
    }
    psi_setup_free(w.s);
    return w.rc;
}

/* ---------------------------------------------------------- messages */

static uint8_t *random_sorted(int suite, size_t n)
{
    uint8_t *el = calloc(n + 1, EB);
    size_t elen = psi_suite_element_bytes(suite);
    assert_non_null(el);
    for (size_t i = 0; i < n; i++)
        rng_fill(el + i * EB, elen);
    qsort(el, n, EB, cmp_element);
    return el;
}

/* A raw setup of the n elements as the library writes it. */
static uint8_t *raw_setup(size_t *len, int suite, const uint8_t *el, size_t n)
{
    size_t head_len = PSI_MESSAGE_HEAD_MAX, rec = n * (2 + psi_suite_element_bytes(suite));
    uint8_t *m = malloc(PSI_MESSAGE_HEAD_MAX + rec + 1);
    assert_non_null(m);
    assert_int_equal(psi_message_head(m, &head_len, suite, PSI_MESSAGE_SETUP_RAW, 0, n),
                     PSI_OK);
    assert_int_equal(psi_message_records(m + head_len, &rec, suite, PSI_MESSAGE_SETUP_RAW, el,
                                         n), PSI_OK);
    *len = head_len + rec;
    return m;
}

static size_t random_count(void)
{
    static const size_t counts[] = {0, 1, 2, 7, 8, 100, 3000, 20000};
    return counts[rng_next() % (sizeof counts / sizeof counts[0])];
}

/* -------------------------------------------------------------- tests */

static void test_setup_read_codec_table(void **state)
{
    (void)state;
    size_t setups = 0;
    for (size_t i = 0; i < codec_malformed_count; i++) {
        const malformed_case *c = &codec_malformed_cases[i];
        if (c->decoder != DEC_SETUP)
            continue;
        size_t len;
        uint8_t *m = hex_alloc(c->hex, &len);
        assert_int_equal(check_read(c->name, PSI_SUITE_OPENMINED_P256, m, len), c->expect);
        free(m);
        setups++;
    }
    assert_true(setups > 10);
}

static void test_setup_read_random(void **state)
{
    (void)state;
    for (uint64_t it = 0; it < env_u64("PSI_TEST_ITERS", 12); it++) {
        int suite = suites[it % N_SUITES];
        size_t n = random_count(), len;
        uint8_t *el = random_sorted(suite, n);
        uint8_t *m = raw_setup(&len, suite, el, n);
        assert_int_equal(check_read("random raw", suite, m, len), PSI_OK);
        free(m);
        free(el);
    }
}

/* Inserts `ins` bytes at `at` of msg into a new message. */
static uint8_t *splice(size_t *out_len, const uint8_t *m, size_t len, size_t at,
                       const uint8_t *ins, size_t ins_len, size_t cut)
{
    uint8_t *o = malloc(len + ins_len + 1);
    assert_non_null(o);
    memcpy(o, m, at);
    if (ins_len > 0) // no NULL to memcpy, even for 0 bytes
        memcpy(o + at, ins, ins_len);
    memcpy(o + at + ins_len, m + at + cut, len - at - cut);
    *out_len = len - cut + ins_len;
    return o;
}

/* Damage: a flipped byte, a cut, a swap of two elements, an inserted
 * unknown field (some longer than every window but the default, some
 * cut by the message's end), an element of another size. */
static void test_setup_read_damaged(void **state)
{
    (void)state;
    uint8_t unknown[5000];
    size_t outcomes[2] = {0, 0};
    for (uint64_t it = 0; it < env_u64("PSI_TEST_ITERS", 12) * 10; it++) {
        int suite = suites[it % N_SUITES];
        size_t n = 1 + rng_next() % 3000, len, dlen = 0, ulen = 0;
        size_t elen = psi_suite_element_bytes(suite), rec = 2 + elen;
        uint8_t *el = random_sorted(suite, n);
        uint8_t *m = raw_setup(&len, suite, el, n), *d = NULL;
        size_t first = len - n * rec; // the first record's offset
        size_t k = rng_next() % n, at = first + k * rec;
        switch (it % 6) {
        case 0: // a flipped byte anywhere
            d = splice(&dlen, m, len, 0, NULL, 0, 0);
            d[rng_next() % len] ^= (uint8_t)(1u << (rng_next() % 8));
            break;
        case 1: // cut anywhere
            d = splice(&dlen, m, rng_next() % len, 0, NULL, 0, 0);
            break;
        case 2: // two neighbours swapped (unsorted unless equal)
            d = splice(&dlen, m, len, 0, NULL, 0, 0);
            if (k + 1 < n) {
                memcpy(d + at, m + at + rec, rec);
                memcpy(d + at + rec, m + at, rec);
            }
            break;
        case 3: { // an unknown field between records: varint, fixed, or long
            size_t big = rng_next() % 2 ? 300 + rng_next() % 4000 : rng_next() % 40;
            unknown[0] = (uint8_t)((9u << 3) | PSI_WIRE_LEN);
            ulen = 1;
            size_t v = big;
            do {
                unknown[ulen++] = (uint8_t)((v & 0x7F) | (v >= 0x80 ? 0x80 : 0));
                v >>= 7;
            } while (v != 0);
            rng_fill(unknown + ulen, big);
            ulen += big;
            d = splice(&dlen, m, len, rng_next() % 4 == 0 ? len : at, unknown, ulen, 0);
            if (rng_next() % 4 == 0) // cut inside it, or after
                dlen -= rng_next() % (ulen + 1);
            break;
        }
        case 4: // one element a byte short: its record's length and bytes
            d = splice(&dlen, m, len, at + rec - 1, NULL, 0, 1);
            d[at + 1] = (uint8_t)(elen - 1);
            break;
        default: // an element record longer than any window but the default
            unknown[0] = (uint8_t)((1u << 3) | PSI_WIRE_LEN);
            unknown[1] = 0x90;
            unknown[2] = 0x03; // 400 bytes
            rng_fill(unknown + 3, 400);
            d = splice(&dlen, m, len, at, unknown, 403, 0);
            break;
        }
        int rc = check_read("damaged raw", suite, d, dlen);
        outcomes[rc == PSI_OK]++;
        free(d);
        free(m);
        free(el);
    }
    assert_true(outcomes[0] > 0 && outcomes[1] > 0); // both kinds were seen
}

/* psi_setup_match and psi_setup_count give the same through the reader. */
static void test_setup_read_match(void **state)
{
    (void)state;
    for (size_t si = 0; si < N_SUITES; si++) {
        int suite = suites[si];
        size_t n = 20000, m = 5000, len;
        uint8_t *el = random_sorted(suite, n), *msg = raw_setup(&len, suite, el, n);
        uint8_t *client = calloc(m, EB);
        assert_non_null(client);
        for (size_t i = 0; i < m; i++) {
            if (i % 3 == 0)
                memcpy(client + i * EB, el + (rng_next() % n) * EB, EB);
            else
                rng_fill(client + i * EB, psi_suite_element_bytes(suite));
        }
        psi_setup *w = NULL, *r = NULL;
        mem_file f = mem_open(msg, len);
        assert_int_equal(psi_setup_parse(&w, suite, msg, len), PSI_OK);
        assert_int_equal(psi_setup_parse_read(&r, suite, mem_read, &f, len, 0), PSI_OK);
        size_t *iw = calloc(m, sizeof *iw), *ir = calloc(m, sizeof *ir), cw = m, cr = m;
        assert_true(iw != NULL && ir != NULL);
        assert_int_equal(psi_setup_match(w, iw, &cw, client, m), PSI_OK);
        f.bytes = 0;
        assert_int_equal(psi_setup_match(r, ir, &cr, client, m), PSI_OK);
        assert_true(cw > m / 4 && cw == cr);
        assert_memory_equal(iw, ir, cw * sizeof *iw);
        assert_true(f.bytes >= len - 16 && f.max_read <= PSI_WIRE_WINDOW);
        assert_int_equal(psi_setup_count(w, &cw, client, m), PSI_OK);
        assert_int_equal(psi_setup_count(r, &cr, client, m), PSI_OK);
        assert_int_equal(cw, cr);
        // The file changed under the parsed setup, or unreadable: PSI_E_IO.
        uint8_t *changed = malloc(len);
        assert_non_null(changed);
        memcpy(changed, msg, len);
        size_t rec = 2 + psi_suite_element_bytes(suite), first = len - n * rec;
        memcpy(changed + first, msg + first + rec, rec); // the first two swapped
        memcpy(changed + first + rec, msg + first, rec);
        f.m = changed;
        cr = m;
        assert_int_equal(psi_setup_match(r, ir, &cr, client, m), PSI_E_IO);
        assert_int_equal(cr, 0);
        f.m = msg;
        f.fail_from = len / 2;
        cr = m;
        assert_int_equal(psi_setup_match(r, ir, &cr, client, m), PSI_E_IO);
        psi_setup_free(w);
        psi_setup_free(r);
        free(changed);
        free(iw);
        free(ir);
        free(client);
        free(msg);
        free(el);
    }
}

/* A reader that fails is PSI_E_IO wherever it fails; a GCS or Bloom
 * setup past max_held is refused before its body is read. */
static void test_setup_read_failures(void **state)
{
    (void)state;
    size_t n = 3000, len;
    uint8_t *el = random_sorted(PSI_SUITE_OPENMINED_P256, n);
    uint8_t *msg = raw_setup(&len, PSI_SUITE_OPENMINED_P256, el, n);
    psi_setup *s = (psi_setup *)&s;
    for (uint64_t from = 0; from < len; from += 1 + rng_next() % 997) {
        mem_file f = mem_open(msg, len);
        f.fail_from = from;
        assert_int_equal(psi_setup_parse_read_bounded(&s, PSI_SUITE_OPENMINED_P256, mem_read,
                                                      &f, len, 0, UINT64_MAX, 1000), PSI_E_IO);
        assert_null(s);
    }
    mem_file f = mem_open(msg, len); // longer than the file
    assert_int_equal(psi_setup_parse_read(&s, PSI_SUITE_OPENMINED_P256, mem_read, &f, len + 1, 0),
                     PSI_E_IO);
    assert_int_equal(psi_setup_parse_read(&s, PSI_SUITE_OPENMINED_P256, NULL, &f, len, 0),
                     PSI_E_INVALID_ARG);
    assert_int_equal(psi_setup_parse_read(NULL, PSI_SUITE_OPENMINED_P256, mem_read, &f, len, 0),
                     PSI_E_INVALID_ARG);
    assert_int_equal(psi_setup_parse_read_bounded(&s, PSI_SUITE_OPENMINED_P256, mem_read, &f,
                                                  len, 0, UINT64_MAX, PSI_WIRE_WINDOW_MIN - 1),
                     PSI_E_INVALID_ARG);
    const char *held[] = {JS_SETUP_GCS, JS_SETUP_BLOOM};
    const char *names[] = {"ServerSetup.gcs", "ServerSetup.bloom_filter"};
    for (size_t i = 0; i < 2; i++) {
        size_t hlen;
        uint8_t *h = hex_alloc(held[i], &hlen);
        psi_error_detail d;
        f = mem_open(h, hlen);
        assert_int_equal(psi_setup_parse_read(&s, PSI_SUITE_OPENMINED_P256, mem_read, &f, hlen,
                                              hlen - 1), PSI_E_MSG_TOO_LARGE);
        psi_error_detail_get(&d);
        assert_string_equal(d.field, names[i]);
        assert_true(f.bytes < 64); // the head and the member's tag, not the body
        f = mem_open(h, hlen);
        assert_int_equal(psi_setup_parse_read(&s, PSI_SUITE_OPENMINED_P256, mem_read, &f, hlen,
                                              hlen), PSI_OK);
        assert_int_equal(psi_setup_structure(s), i == 0 ? PSI_STRUCTURE_GCS
                                                        : PSI_STRUCTURE_BLOOM_FILTER);
        psi_setup_free(s);
        // A plan reading the setup (psi_op_args.setup_max_held) refuses it
        // the same way, and only for client operations.
        psi_settings st;
        psi_settings_default(&st);
        st.role = PSI_ROLE_CLIENT;
        st.reveal_intersection = 1;
        psi_engine *e = NULL;
        psi_plan *p = NULL;
        assert_int_equal(psi_engine_create(&e, &st), PSI_OK);
        psi_op_args a = {.op = PSI_OP_INTERSECTION, .external = 1, .setup_len = hlen,
                         .setup_read = mem_read, .setup_read_arg = &f,
                         .setup_max_held = hlen - 1};
        f = mem_open(h, hlen);
        assert_int_equal(psi_plan_begin(&p, e, &a), PSI_E_MSG_TOO_LARGE);
        psi_error_detail_get(&d);
        assert_string_equal(d.field, names[i]);
        assert_true(f.bytes < 64);
        a.setup_max_held = hlen;
        f = mem_open(h, hlen);
        assert_int_equal(psi_plan_begin(&p, e, &a), PSI_OK);
        psi_plan_free(p);
        psi_op_args bad = {.op = PSI_OP_REQUEST, .external = 1, .setup_max_held = 1};
        assert_int_equal(psi_plan_begin(&p, e, &bad), PSI_E_INVALID_ARG);
        psi_engine_free(e);
        free(h);
    }
    free(msg);
    free(el);
}

/* psi_setup_check_read gives psi_setup_check's code for honest setups of
 * the wrong count and for damaged ones. */
static void test_setup_read_check(void **state)
{
    (void)state;
    psi_setup_params p = {PSI_STRUCTURE_RAW, 0.0, 0};
    for (uint64_t it = 0; it < 60; it++) {
        int suite = suites[it % N_SUITES];
        size_t n = random_count(), len;
        uint8_t *el = random_sorted(suite, n), *msg = raw_setup(&len, suite, el, n);
        if (it % 3 == 1 && len > 0)
            msg[rng_next() % len] ^= 0x40;
        uint64_t ns = it % 3 == 2 ? n + 1 : n;
        mem_file f = mem_open(msg, len);
        int w = psi_setup_check(suite, &p, ns, msg, len);
        int r = psi_setup_check_read(suite, &p, ns, mem_read, &f, len, 0);
        assert_int_equal(w, r);
        if (it % 3 == 0)
            assert_int_equal(r, PSI_OK);
        if (it % 3 == 2)
            assert_int_equal(r, PSI_E_SETUP_MISMATCH);
        free(msg);
        free(el);
    }
    // A GCS setup checked through the reader, and refused past max_held.
    size_t hlen;
    uint8_t *h = hex_alloc(JS_SETUP_GCS, &hlen);
    mem_file f = mem_open(h, hlen);
    psi_setup *s = NULL;
    assert_int_equal(psi_setup_parse(&s, PSI_SUITE_OPENMINED_P256, h, hlen), PSI_OK);
    psi_setup_free(s);
    p.structure = PSI_STRUCTURE_GCS;
    p.fpr = 1e-9;
    p.num_client_inputs = 100;
    assert_int_equal(psi_setup_check(PSI_SUITE_OPENMINED_P256, &p, 1000, h, hlen),
                     psi_setup_check_read(PSI_SUITE_OPENMINED_P256, &p, 1000, mem_read, &f, hlen,
                                          UINT64_MAX));
    assert_int_equal(psi_setup_check_read(PSI_SUITE_OPENMINED_P256, &p, 1000, mem_read, &f, hlen,
                                          1), PSI_E_MSG_TOO_LARGE);
    free(h);
}

/* A raw setup of a million elements parsed and matched through a window:
 * the library's allocations stay near the window, not 33 MB. */
static size_t live, peak;
static void *count_alloc(size_t n)
{
    size_t *p = malloc(n + sizeof(size_t) * 2);
    if (p == NULL)
        return NULL;
    p[0] = n;
    live += n;
    if (live > peak)
        peak = live;
    return p + 2;
}

static void count_free(void *q)
{
    if (q == NULL)
        return;
    size_t *p = (size_t *)q - 2;
    live -= p[0];
    free(p);
}

static void test_setup_read_bounded(void **state)
{
    (void)state;
    size_t n = 1000000, len;
    uint8_t *el = random_sorted(PSI_SUITE_OPENMINED_P256, n);
    uint8_t *msg = raw_setup(&len, PSI_SUITE_OPENMINED_P256, el, n);
    uint8_t client[4 * EB];
    memcpy(client, el + 17 * EB, EB);
    memcpy(client + EB, el + (n - 1) * EB, EB);
    rng_fill(client + 2 * EB, 2 * EB);
    psi_alloc_set_hooks(count_alloc, count_free);
    mem_file f = mem_open(msg, len);
    psi_setup *s = NULL;
    size_t idx[4], k = 4;
    assert_int_equal(psi_setup_parse_read(&s, PSI_SUITE_OPENMINED_P256, mem_read, &f, len, 0),
                     PSI_OK);
    assert_int_equal(psi_setup_raw_count(s), n);
    assert_int_equal(psi_setup_match(s, idx, &k, client, 4), PSI_OK);
    psi_setup_free(s);
    psi_alloc_set_hooks(NULL, NULL);
    assert_int_equal(k, 2);
    assert_true(idx[0] == 0 && idx[1] == 1);
    if (peak > PSI_WIRE_WINDOW + 64 * 1024)
        fail_msg("%zu bytes at the peak for a %zu-byte setup", peak, len);
    free(msg);
    free(el);
}

int main(void)
{
    rng_state = tu_seed("setup_read") | 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_setup_read_codec_table),
        cmocka_unit_test(test_setup_read_random),
        cmocka_unit_test(test_setup_read_damaged),
        cmocka_unit_test(test_setup_read_match),
        cmocka_unit_test(test_setup_read_failures),
        cmocka_unit_test(test_setup_read_check),
        cmocka_unit_test(test_setup_read_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
