/* psi_setup_check (PROTOCOL.md §9.7): honest setups of every structure
 * pass, for the server's count and any larger one (raw: exactly it), and
 * each way a hostile server could bend a setup is refused with
 * PSI_E_SETUP_MISMATCH. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "psi.h"

/* A setup as the test takes it apart and puts it together again
 * (OpenMined suite: no header). */
typedef struct msg {
    uint8_t *b;
    size_t len;
} msg;

static void put_byte(msg *m, uint8_t v)
{
    m->b = realloc(m->b, m->len + 1);
    assert_non_null(m->b);
    m->b[m->len++] = v;
}

static void put_varint(msg *m, uint64_t v)
{
    for (; v >= 0x80; v >>= 7)
        put_byte(m, (uint8_t)(v | 0x80));
    put_byte(m, (uint8_t)v);
}

static void put_raw(msg *m, const uint8_t *d, size_t n)
{
    for (size_t i = 0; i < n; i++)
        put_byte(m, d[i]);
}

static uint64_t get_varint(const uint8_t **p)
{
    uint64_t v = 0;
    for (int s = 0;; s += 7) {
        uint8_t c = *(*p)++;
        v |= (uint64_t)(c & 0x7f) << s;
        if (c < 0x80)
            return v;
    }
}

/* The fields of a canonical GCS or Bloom setup. */
typedef struct parts {
    int structure;
    uint64_t div, hash_range, k;
    const uint8_t *bits;
    size_t bits_len;
} parts;

static parts split(const uint8_t *b, size_t len)
{
    parts r = {0};
    const uint8_t *p = b, *end = b + len;
    r.structure = (int)(*p++ >> 3) - 1;
    (void)get_varint(&p);
    while (p < end) {
        uint8_t tag = *p++;
        if (tag == 0x08)
            r.structure == PSI_STRUCTURE_GCS ? (r.div = get_varint(&p)) : (r.k = get_varint(&p));
        else if (tag == 0x10)
            r.hash_range = get_varint(&p);
        else {
            r.bits_len = (size_t)get_varint(&p);
            r.bits = p;
            p += r.bits_len;
        }
    }
    return r;
}

/* A canonical setup from its fields, with `extra` zero bytes after the
 * bits. */
static msg join(const parts *r, size_t extra)
{
    msg body = {0}, m = {0};
    size_t bl = r->bits_len + extra;
    if (r->structure == PSI_STRUCTURE_GCS) {
        if (r->div != 0)
            put_byte(&body, 0x08), put_varint(&body, r->div);
        put_byte(&body, 0x10), put_varint(&body, r->hash_range);
    } else {
        put_byte(&body, 0x08), put_varint(&body, r->k);
    }
    if (bl > 0) {
        put_byte(&body, r->structure == PSI_STRUCTURE_GCS ? 0x1a : 0x12);
        put_varint(&body, bl);
        put_raw(&body, r->bits, r->bits_len);
        for (size_t i = 0; i < extra; i++)
            put_byte(&body, 0);
    }
    put_byte(&m, (uint8_t)((r->structure + 1) << 3 | 2));
    put_varint(&m, body.len);
    put_raw(&m, body.b, body.len);
    free(body.b);
    return m;
}

/* The values of a GCS stream (§9.2, no validation: the test's own
 * honest streams), into v (capacity 8 * len). */
static size_t gcs_values(uint64_t *v, const uint8_t *bits, size_t len, unsigned div)
{
    uint64_t pos = 0, acc = 0, nbits = (uint64_t)len * 8;
    size_t n = 0;
    for (;;) {
        uint64_t q = 0;
        while (pos < nbits && !((bits[pos >> 3] >> (pos & 7)) & 1))
            q++, pos++;
        if (pos == nbits)
            return n;
        pos++;
        uint64_t r = 0;
        for (unsigned j = 0; j < div; j++, pos++)
            r |= (uint64_t)((bits[pos >> 3] >> (pos & 7)) & 1) << j;
        acc += (q << div) | r;
        v[n++] = acc;
    }
}

/* The stream of ascending distinct values under div (§7.2). */
static size_t gcs_stream(uint8_t *bits, size_t cap, const uint64_t *v, size_t n, unsigned div)
{
    uint64_t pos = 0, prev = 0;
    memset(bits, 0, cap);
    for (size_t i = 0; i < n; i++) {
        uint64_t d = v[i] - prev;
        pos += d >> div;
        assert_true(pos / 8 < cap);
        bits[pos >> 3] |= (uint8_t)(1u << (pos & 7));
        pos++;
        for (unsigned j = 0; j < div; j++, pos++)
            if ((d >> j) & 1)
                bits[pos >> 3] |= (uint8_t)(1u << (pos & 7));
        prev = v[i];
    }
    return (size_t)((pos + 7) / 8);
}

/* A fixed key: the GCS cases count the distinct values of the stream, and
 * under a random key two of 60 hashed values share one of the 600,000
 * slots about 0.3% of the time (the check then names hash_range, not
 * bits).  This key gives 60 distinct values; test_gcs_tampered asserts
 * it. */
static psi_engine *server(void)
{
    psi_settings s;
    psi_settings_default(&s);
    s.role = PSI_ROLE_SERVER;
    uint8_t key[32];
    for (size_t i = 0; i < sizeof key; i++)
        key[i] = (uint8_t)(0x11 + 7 * i);
    psi_engine *e = NULL;
    assert_int_equal(psi_engine_create_from_key(&e, &s, key, sizeof key), PSI_OK);
    return e;
}

/* The honest setup of n distinct values. */
static msg honest(const psi_engine *e, const psi_setup_params *p, size_t n)
{
    char (*text)[32] = calloc(n + 1, sizeof *text);
    psi_value *v = calloc(n + 1, sizeof *v);
    assert_non_null(text);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++) {
        snprintf(text[i], sizeof text[i], "value %zu", i);
        v[i] = (psi_value){(const uint8_t *)text[i], strlen(text[i])};
    }
    size_t cap;
    assert_int_equal(psi_setup_bound(&cap, PSI_SUITE_OPENMINED_P256, p, n), PSI_OK);
    msg m = {malloc(cap + 1), cap};
    assert_non_null(m.b);
    assert_int_equal(psi_server_create_setup(e, m.b, &m.len, NULL, p, v, n), PSI_OK);
    free(text);
    free(v);
    return m;
}

static int check(const psi_setup_params *p, uint64_t n, const msg *m)
{
    return psi_setup_check(PSI_SUITE_OPENMINED_P256, p, n, m->b, m->len);
}

static const size_t sizes[] = {0, 1, 2, 7, 100, 333};

static void test_honest_accepted(void **state)
{
    (void)state;
    psi_engine *e = server();
    const psi_setup_params ps[] = {
        {PSI_STRUCTURE_RAW, 0, 0},
        {PSI_STRUCTURE_GCS, 1e-6, 100}, {PSI_STRUCTURE_GCS, 0.01, 10},
        {PSI_STRUCTURE_GCS, 0.9, 1},
        {PSI_STRUCTURE_BLOOM_FILTER, 1e-6, 100}, {PSI_STRUCTURE_BLOOM_FILTER, 0.01, 10},
        {PSI_STRUCTURE_BLOOM_FILTER, 0.9, 1},
    };
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        for (size_t j = 0; j < sizeof sizes / sizeof sizes[0]; j++) {
            size_t n = sizes[j];
            msg m = honest(e, &ps[i], n);
            assert_int_equal(check(&ps[i], n, &m), PSI_OK);
            if (ps[i].structure == PSI_STRUCTURE_RAW) {
                assert_int_equal(check(&ps[i], n + 1, &m), PSI_E_SETUP_MISMATCH);
                if (n > 0)
                    assert_int_equal(check(&ps[i], n - 1, &m), PSI_E_SETUP_MISMATCH);
            } else {
                /* at most n_server values: any larger count passes too */
                assert_int_equal(check(&ps[i], n + 1, &m), PSI_OK);
                assert_int_equal(check(&ps[i], 2 * n + 5, &m), PSI_OK);
                assert_int_equal(check(&ps[i], 1000000, &m), PSI_OK);
                assert_int_equal(check(&ps[i], UINT64_MAX, &m), PSI_OK);
            }
            free(m.b);
        }
    }
    psi_engine_free(e);
}

static void test_structure_and_params(void **state)
{
    (void)state;
    psi_engine *e = server();
    psi_setup_params g = {PSI_STRUCTURE_GCS, 1e-6, 100}, b = g, r = g;
    b.structure = PSI_STRUCTURE_BLOOM_FILTER;
    r.structure = PSI_STRUCTURE_RAW;
    msg m = honest(e, &g, 50);
    assert_int_equal(check(&b, 50, &m), PSI_E_SETUP_MISMATCH);
    assert_int_equal(check(&r, 50, &m), PSI_E_SETUP_MISMATCH);
    /* the fpr or num_client_inputs of another run */
    psi_setup_params g2 = g;
    g2.fpr = 1e-7;
    assert_int_equal(check(&g2, 50, &m), PSI_E_SETUP_MISMATCH);
    g2 = g;
    g2.num_client_inputs = 1000;
    assert_int_equal(check(&g2, 50, &m), PSI_E_SETUP_MISMATCH);
    /* impossible parameters, unknown structure, bad arguments */
    g2 = g;
    g2.fpr = 200.0;
    assert_int_equal(check(&g2, 50, &m), PSI_E_FPR);
    g2 = g;
    g2.structure = (psi_structure)7;
    assert_int_equal(check(&g2, 50, &m), PSI_E_STRUCTURE);
    assert_int_equal(psi_setup_check(PSI_SUITE_OPENMINED_P256, NULL, 1, m.b, m.len),
                     PSI_E_INVALID_ARG);
    assert_int_equal(psi_setup_check(PSI_SUITE_RISTRETTO255, &g, 50, m.b, m.len),
                     PSI_E_SUITE_MISMATCH);
    /* a malformed setup gives the parser's code */
    assert_int_equal(psi_setup_check(PSI_SUITE_OPENMINED_P256, &g, 50, m.b, m.len - 1),
                     PSI_E_MSG_TRUNCATED);
    free(m.b);
    psi_engine_free(e);
}

static void test_bloom_tampered(void **state)
{
    (void)state;
    psi_engine *e = server();
    psi_setup_params p = {PSI_STRUCTURE_BLOOM_FILTER, 1e-6, 10};
    for (size_t n = 0; n <= 40; n += 40) {
        msg m = honest(e, &p, n);
        parts r = split(m.b, m.len);
        assert_int_equal(r.k, 24);
        parts t = r;
        t.k = r.k + 1;
        msg x = join(&t, 0);
        assert_int_equal(check(&p, n, &x), PSI_E_SETUP_MISMATCH);
        free(x.b);
        t.k = r.k - 1;
        x = join(&t, 0);
        assert_int_equal(check(&p, n, &x), PSI_E_SETUP_MISMATCH);
        free(x.b);
        /* the rebuilt honest one passes */
        x = join(&r, 0);
        assert_int_equal(x.len, m.len);
        assert_int_equal(check(&p, n, &x), PSI_OK);
        free(x.b);
        /* one byte past the largest filter of n values */
        x = join(&r, 1);
        assert_int_equal(check(&p, n, &x), PSI_E_SETUP_MISMATCH);
        free(x.b);
        /* one byte short of the smallest filter */
        if (n == 0) {
            t = r;
            t.bits_len--;
            x = join(&t, 0);
            assert_int_equal(check(&p, 1000, &x), PSI_E_SETUP_MISMATCH);
            free(x.b);
        }
        /* an unknown field, a byte after the setup */
        x = (msg){malloc(m.len + 2), m.len + 2};
        memcpy(x.b, m.b, m.len);
        x.b[m.len] = 0x20, x.b[m.len + 1] = 0x00;
        assert_int_equal(check(&p, n, &x), PSI_E_SETUP_MISMATCH);
        free(x.b);
        free(m.b);
    }
    /* a filter of 40 values checked as one of at most 39 */
    msg m = honest(e, &p, 40);
    assert_int_equal(check(&p, 39, &m), PSI_E_SETUP_MISMATCH);
    assert_int_equal(check(&p, 40, &m), PSI_OK);
    free(m.b);
    psi_engine_free(e);
}

static void test_gcs_tampered(void **state)
{
    (void)state;
    psi_engine *e = server();
    psi_setup_params p = {PSI_STRUCTURE_GCS, 1e-3, 10};
    msg m = honest(e, &p, 60);
    parts r = split(m.b, m.len);
    msg x = join(&r, 0);
    assert_int_equal(x.len, m.len);
    assert_int_equal(memcmp(x.b, m.b, m.len), 0);
    free(x.b);
    /* too many values for the announced count */
    assert_int_equal(check(&p, 59, &m), PSI_E_SETUP_MISMATCH);
    psi_error_detail d;
    psi_error_detail_get(&d);
    assert_int_equal(d.code, PSI_E_SETUP_MISMATCH);
    assert_string_equal(d.field, "ServerSetup.gcs.bits");
    assert_int_equal(check(&p, 0, &m), PSI_E_SETUP_MISMATCH);
    /* a trailing zero byte in the stream */
    x = join(&r, 1);
    assert_int_equal(check(&p, 60, &x), PSI_E_SETUP_MISMATCH);
    free(x.b);
    /* the same values coded with div one off either way */
    uint64_t vals[8 * 512];
    uint8_t other[4096];
    assert_true(r.bits_len <= 512);
    size_t nv = gcs_values(vals, r.bits, r.bits_len, (unsigned)r.div);
    assert_int_equal(nv, 60);
    parts t = r;
    t.bits = other;
    t.bits_len = gcs_stream(other, sizeof other, vals, nv, (unsigned)r.div);
    assert_int_equal(t.bits_len, r.bits_len);
    assert_int_equal(memcmp(other, r.bits, r.bits_len), 0);
    for (int delta = -1; delta <= 1; delta += 2) {
        t.div = r.div + (uint64_t)(int64_t)delta;
        t.bits_len = gcs_stream(other, sizeof other, vals, nv, (unsigned)t.div);
        x = join(&t, 0);
        assert_int_equal(check(&p, 60, &x), PSI_E_SETUP_MISMATCH);
        psi_error_detail_get(&d);
        assert_string_equal(d.field, "ServerSetup.gcs.div");
        free(x.b);
    }
    t = r;
    /* hash_range of another count or off by one */
    t.hash_range = r.hash_range + 1;
    x = join(&t, 0);
    assert_int_equal(check(&p, 60, &x), PSI_E_SETUP_MISMATCH);
    free(x.b);
    t.hash_range = r.hash_range * 10;
    x = join(&t, 0);
    assert_int_equal(check(&p, 60, &x), PSI_E_SETUP_MISMATCH);
    free(x.b);
    free(m.b);
    /* the div-0 stream: 0xaa is four values of delta 1 a byte */
    uint8_t dense[1000];
    memset(dense, 0xaa, sizeof dense);
    t = (parts){PSI_STRUCTURE_GCS, 0, 100000000, 0, dense, sizeof dense};
    x = join(&t, 0);
    assert_int_equal(psi_setup_check(PSI_SUITE_OPENMINED_P256, &p, 100, x.b, x.len),
                     PSI_E_SETUP_MISMATCH);
    /* what it is refused for first: the count, before anything is kept */
    psi_error_detail_get(&d);
    assert_string_equal(d.field, "ServerSetup.gcs.bits");
    assert_int_equal(d.index, 100);
    free(x.b);
    psi_engine_free(e);
}

static void test_gcs_repeats(void **state)
{
    (void)state;
    /* V = {7} at div 2 is `0e` (§7.2).  hash_range 10 fits an honest
     * server of fpr 0.1, nc 1, one value.  Appending a zero delta (bits
     * `1 00`) decodes to the same set, but no encoder writes it. */
    psi_setup_params p = {PSI_STRUCTURE_GCS, 0.1, 1};
    uint8_t one[1] = {0x0e}, rep[1] = {0x0e | 0x10};
    parts t = {PSI_STRUCTURE_GCS, 2, 10, 0, one, 1};
    msg x = join(&t, 0);
    assert_int_equal(check(&p, 1, &x), PSI_OK);
    free(x.b);
    t.bits = rep;
    x = join(&t, 0);
    psi_setup *s = NULL;
    assert_int_equal(psi_setup_parse(&s, PSI_SUITE_OPENMINED_P256, x.b, x.len), PSI_OK);
    psi_setup_free(s);
    assert_int_equal(check(&p, 1, &x), PSI_E_SETUP_MISMATCH);
    assert_int_equal(check(&p, 2, &x), PSI_E_SETUP_MISMATCH);
    free(x.b);
}

static void test_raw(void **state)
{
    (void)state;
    psi_engine *e = server();
    psi_setup_params p = {PSI_STRUCTURE_RAW, 0, 0};
    msg m = honest(e, &p, 5);
    assert_int_equal(check(&p, 5, &m), PSI_OK);
    assert_int_equal(check(&p, 4, &m), PSI_E_SETUP_MISMATCH);
    assert_int_equal(check(&p, 6, &m), PSI_E_SETUP_MISMATCH);
    /* an unknown field after the elements */
    msg x = {malloc(m.len + 2), m.len + 2};
    memcpy(x.b, m.b, m.len);
    x.b[m.len] = 0x20, x.b[m.len + 1] = 0x00;
    assert_int_equal(check(&p, 5, &x), PSI_E_SETUP_MISMATCH);
    free(x.b);
    free(m.b);
    psi_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_honest_accepted),
        cmocka_unit_test(test_structure_and_params),
        cmocka_unit_test(test_bloom_tampered),
        cmocka_unit_test(test_gcs_tampered),
        cmocka_unit_test(test_gcs_repeats),
        cmocka_unit_test(test_raw),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
