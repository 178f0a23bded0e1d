/* Payload tables (psi/payload.c, PROTOCOL.md §22) through the public API:
 * in every suite, a client opens the payloads of exactly its matched values
 * after a real round of masks; tampered tables are refused with their own
 * codes; duplicates, long payloads and an unknown suite are refused at
 * build; the independent Python implementation's vectors
 * (vectors/payload-ref.py) give the same tables, payloads and codes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "psi.h"
#include "test_util.h"

#define VECTORS PSI_SOURCE_ROOT "/vectors/shardpsi-payloads.json"

static const int suites[] = {PSI_SUITE_OPENMINED_P256, PSI_SUITE_P256_SSWU,
                             PSI_SUITE_RISTRETTO255};

static psi_engine *engine(int suite, psi_role role)
{
    psi_settings st;
    psi_engine *e = NULL;
    psi_settings_default(&st);
    st.role = role;
    st.reveal_intersection = 1;
    st.suite = (psi_suite)suite;
    assert_int_equal(psi_engine_create(&e, &st), PSI_OK);
    return e;
}

/* Masks n values with the server engine and builds their table. */
static int build(const psi_engine *s, uint8_t *out, size_t *len, const psi_value *v,
                 const psi_value *p, size_t n, size_t pad, const uint8_t *salt)
{
    size_t el_len = n * PSI_ELEMENT_BYTES;
    uint8_t *el = malloc(el_len + 1);
    assert_non_null(el);
    assert_int_equal(psi_engine_mask(s, el, &el_len, v, n), PSI_OK);
    int rc = psi_payload_table_build(psi_engine_suite(s), out, len, el, p, n, pad, salt);
    free(el);
    return rc;
}

/* n server values "v<i>" with payloads "row <i>|..." of lengths i % 13,
 * and m client values, every third one a server value. */
typedef struct fixture {
    int suite;
    size_t n, m;
    char (*sv)[32], (*cv)[32], (*pay)[32];
    psi_value *s_vals, *c_vals, *pays;
    uint8_t *table;
    size_t table_len;
    uint8_t *unmasked; // the client's unmasked response elements, m
} fixture;

static void fixture_make(fixture *f, int suite, size_t n, size_t m, size_t pad)
{
    memset(f, 0, sizeof *f);
    f->suite = suite;
    f->n = n;
    f->m = m;
    f->sv = calloc(n + 1, sizeof *f->sv);
    f->pay = calloc(n + 1, sizeof *f->pay);
    f->cv = calloc(m + 1, sizeof *f->cv);
    f->s_vals = calloc(n + 1, sizeof *f->s_vals);
    f->pays = calloc(n + 1, sizeof *f->pays);
    f->c_vals = calloc(m + 1, sizeof *f->c_vals);
    assert_true(f->sv && f->pay && f->cv && f->s_vals && f->pays && f->c_vals);
    for (size_t i = 0; i < n; i++) {
        snprintf(f->sv[i], sizeof f->sv[i], "v%zu", i);
        snprintf(f->pay[i], sizeof f->pay[i], "row %zu|segment %zu", i, i % 7);
        f->s_vals[i] = (psi_value){(const uint8_t *)f->sv[i], strlen(f->sv[i])};
        f->pays[i] = (psi_value){(const uint8_t *)f->pay[i], i % 13 < strlen(f->pay[i])
                                                                 ? i % 13 : strlen(f->pay[i])};
    }
    for (size_t i = 0; i < m; i++) {
        if (i % 3 == 0)
            snprintf(f->cv[i], sizeof f->cv[i], "v%zu", (i * 7) % n);
        else
            snprintf(f->cv[i], sizeof f->cv[i], "c%zu", i);
        f->c_vals[i] = (psi_value){(const uint8_t *)f->cv[i], strlen(f->cv[i])};
    }
    psi_engine *s = engine(suite, PSI_ROLE_SERVER), *c = engine(suite, PSI_ROLE_CLIENT);
    f->table_len = psi_payload_table_bytes(n, pad != 0 ? pad : 12);
    f->table = malloc(f->table_len + 1);
    assert_non_null(f->table);
    size_t len = f->table_len;
    assert_int_equal(build(s, f->table, &len, f->s_vals, f->pays, n, pad, NULL), PSI_OK);
    assert_int_equal(len, f->table_len);
    // The round: request, response, unmask.
    uint8_t *req = malloc(m * PSI_ELEMENT_BYTES + 1), *resp = malloc(m * PSI_ELEMENT_BYTES + 1);
    f->unmasked = malloc(m * PSI_ELEMENT_BYTES + 1);
    size_t l1 = m * PSI_ELEMENT_BYTES, l2 = l1, l3 = l1;
    assert_int_equal(psi_engine_mask(c, req, &l1, f->c_vals, m), PSI_OK);
    assert_int_equal(psi_engine_remask(s, resp, &l2, req, m), PSI_OK);
    assert_int_equal(psi_engine_unmask(c, f->unmasked, &l3, resp, m), PSI_OK);
    free(req);
    free(resp);
    psi_engine_free(s);
    psi_engine_free(c);
}

static void fixture_free(fixture *f)
{
    free(f->sv);
    free(f->cv);
    free(f->pay);
    free(f->s_vals);
    free(f->c_vals);
    free(f->pays);
    free(f->table);
    free(f->unmasked);
}

/* Opens every client value; checks matched ones against their payloads
 * and the others against PSI_PAYLOAD_NONE.  Returns: psi_payload_open's code. */
static int open_all(const fixture *f, const uint8_t *table, size_t len, size_t L)
{
    uint8_t *out = malloc(f->m * L + 1);
    size_t *lens = malloc(f->m * sizeof *lens + 1);
    int rc = psi_payload_open(f->suite, table, len, f->unmasked, f->m, out, f->m * L, lens);
    for (size_t i = 0; rc == PSI_OK && i < f->m; i++) {
        if (i % 3 != 0) {
            assert_true(lens[i] == PSI_PAYLOAD_NONE);
            continue;
        }
        size_t j = (i * 7) % f->n;
        assert_int_equal(lens[i], f->pays[j].len);
        assert_memory_equal(out + i * L, f->pays[j].data, f->pays[j].len);
        for (size_t z = f->pays[j].len; z < L; z++)
            assert_int_equal(out[i * L + z], 0);
    }
    free(out);
    free(lens);
    return rc;
}

static void test_payload_round(void **state)
{
    (void)state;
    for (size_t si = 0; si < sizeof suites / sizeof suites[0]; si++) {
        fixture f;
        fixture_make(&f, suites[si], 300, 90, 0);
        size_t n = 0, L = 0;
        assert_int_equal(psi_payload_table_check(f.suite, f.table, f.table_len, &n, &L), PSI_OK);
        assert_int_equal(n, 300);
        assert_int_equal(L, 12); // the longest payload, 12 bytes
        assert_int_equal(open_all(&f, f.table, f.table_len, L), PSI_OK);
        // Another suite's table, or another suite's elements: refused, or no match.
        int other = suites[(si + 1) % 3];
        assert_int_equal(psi_payload_table_check(other, f.table, f.table_len, NULL, NULL),
                         PSI_E_SUITE_MISMATCH);
        fixture_free(&f);
    }
}

/* Sorting records by their tags (the test's external sort). */
static int parts_cmp(const void *a, const void *b)
{
    return memcmp(a, b, PSI_PAYLOAD_TAG_BYTES);
}

/* The table in parts (PROTOCOL.md §22.4): a header, records sealed in
 * batches and ordered by tag, checked a batch at a time, opened one record
 * at a time: the same bytes and codes as the whole-table calls. */
static void test_payload_parts(void **state)
{
    (void)state;
    static const uint8_t salt[PSI_PAYLOAD_SALT_BYTES] = {9, 8, 7};
    for (size_t si = 0; si < sizeof suites / sizeof suites[0]; si++) {
        int suite = suites[si];
        fixture f;
        fixture_make(&f, suite, 200, 60, 16);
        psi_engine *s = engine(suite, PSI_ROLE_SERVER);
        size_t n = f.n, L = 16, rec = PSI_PAYLOAD_RECORD_EXTRA + L, len;
        uint8_t *el = malloc(n * PSI_ELEMENT_BYTES), *whole, head[PSI_PAYLOAD_HEAD_BYTES];
        uint8_t *recs = malloc(n * rec);
        size_t el_len = n * PSI_ELEMENT_BYTES;
        assert_int_equal(psi_engine_mask(s, el, &el_len, f.s_vals, n), PSI_OK);
        len = psi_payload_table_bytes(n, L);
        whole = malloc(len);
        assert_int_equal(psi_payload_table_build(suite, whole, &len, el, f.pays, n, L, salt),
                         PSI_OK);
        assert_int_equal(psi_payload_head_make(suite, head, n, L, salt), PSI_OK);
        assert_memory_equal(head, whole, PSI_PAYLOAD_HEAD_BYTES);
        // Sealed in batches of 37, in input order; then ordered by tag.
        for (size_t b = 0; b < n; b += 37) {
            size_t k = n - b < 37 ? n - b : 37;
            assert_int_equal(psi_payload_seal(suite, head, el + b * PSI_ELEMENT_BYTES,
                                              f.pays + b, k, recs + b * rec), PSI_OK);
        }
        qsort(recs, n, rec, parts_cmp);
        assert_memory_equal(recs, whole + PSI_PAYLOAD_HEAD_BYTES, n * rec);
        // The tags psi_payload_tags derives are the records'.
        uint8_t tag[PSI_PAYLOAD_TAG_BYTES];
        assert_int_equal(psi_payload_tags(suite, head, el, 1, tag), PSI_OK);
        int found = 0;
        for (size_t j = 0; j < n; j++)
            found |= memcmp(recs + j * rec, tag, sizeof tag) == 0;
        assert_true(found);
        // Checked in batches against the record before; a swap is found at
        // its number in the table, whichever batch it falls in.
        uint64_t count = 0;
        size_t pad = 0;
        assert_int_equal(psi_payload_head_check(suite, whole, PSI_PAYLOAD_HEAD_BYTES, &count,
                                                &pad), PSI_OK);
        assert_int_equal(count, n);
        assert_int_equal(pad, L);
        assert_int_equal(psi_payload_head_check(suite, whole, 55, NULL, NULL),
                         PSI_E_PAYLOAD_TRUNCATED);
        for (size_t b = 0; b < n; b += 50)
            assert_int_equal(psi_payload_records_check(head, b > 0 ? recs + (b - 1) * rec : NULL,
                                                       recs + b * rec, 50, b), PSI_OK);
        uint8_t *tmp = malloc(rec);
        memcpy(tmp, recs + 99 * rec, rec);
        memcpy(recs + 99 * rec, recs + 100 * rec, rec);
        memcpy(recs + 100 * rec, tmp, rec);
        assert_int_equal(psi_payload_records_check(head, recs + 99 * rec, recs + 100 * rec, 50,
                                                   100), PSI_E_PAYLOAD_ORDER);
        psi_error_detail d;
        psi_error_detail_get(&d);
        assert_int_equal(d.index, 100);
        assert_int_equal(d.offset, PSI_PAYLOAD_HEAD_BYTES + 100 * rec);
        free(tmp);
        // One record opened (the fixture's table, of the key the client's
        // elements were answered with): the matched client values'
        // payloads; another element's record does not authenticate.
        const uint8_t *fh = f.table, *fr = f.table + PSI_PAYLOAD_HEAD_BYTES;
        uint8_t out[16];
        size_t plen = 0;
        for (size_t i = 0; i < f.m; i += 3) {
            size_t j = (i * 7) % n;
            const uint8_t *e = f.unmasked + i * PSI_ELEMENT_BYTES, *r = NULL;
            assert_int_equal(psi_payload_tags(suite, fh, e, 1, tag), PSI_OK);
            for (size_t x = 0; x < n && r == NULL; x++)
                if (memcmp(fr + x * rec, tag, sizeof tag) == 0)
                    r = fr + x * rec;
            assert_non_null(r);
            assert_int_equal(psi_payload_record_open(suite, fh, e, r, out, &plen), PSI_OK);
            assert_int_equal(plen, f.pays[j].len);
            assert_memory_equal(out, f.pays[j].data, plen);
            const uint8_t *other = r == fr ? r + rec : r - rec;
            assert_int_equal(psi_payload_record_open(suite, fh, e, other, out, &plen),
                             PSI_E_PAYLOAD_AUTH);
            assert_true(plen == PSI_PAYLOAD_NONE);
        }
        // A payload longer than the header's L: refused with its index.
        psi_value longer[2] = {f.pays[0], {(const uint8_t *)"seventeen bytes!!", 17}};
        assert_int_equal(psi_payload_seal(suite, head, el, longer, 2, recs),
                         PSI_E_PAYLOAD_LENGTH);
        psi_error_detail_get(&d);
        assert_int_equal(d.index, 1);
        assert_int_equal(psi_payload_head_make(suite, head, n, PSI_PAYLOAD_MAX + 1, salt),
                         PSI_E_PAYLOAD_LENGTH);
        free(el);
        free(recs);
        free(whole);
        psi_engine_free(s);
        fixture_free(&f);
    }
}

/* psi_setup_raw_elements: a raw setup's elements, reordered payloads with
 * its permutation, give the table of the masked values byte for byte (the
 * network server builds its table so, masking nothing again); GCS and an
 * empty setup have none. */
static void test_payload_from_raw_setup(void **state)
{
    (void)state;
    static const uint8_t salt[PSI_PAYLOAD_SALT_BYTES] = {7, 1, 2};
    for (size_t si = 0; si < sizeof suites / sizeof suites[0]; si++) {
        fixture f;
        fixture_make(&f, suites[si], 200, 3, 0);
        psi_engine *s = engine(f.suite, PSI_ROLE_SERVER);
        psi_setup_params p = {.structure = PSI_STRUCTURE_RAW, .fpr = 1e-9,
                              .num_client_inputs = 10};
        size_t cap = 0, n = f.n, len1 = f.table_len, len2 = f.table_len;
        assert_int_equal(psi_setup_bound(&cap, f.suite, &p, n), PSI_OK);
        uint8_t *setup = malloc(cap), *t1 = malloc(len1), *t2 = malloc(len2);
        size_t *perm = malloc(n * sizeof *perm);
        psi_value *sorted = malloc(n * sizeof *sorted);
        psi_setup *ps = NULL;
        assert_true(setup && t1 && t2 && perm && sorted);
        assert_int_equal(psi_server_create_setup(s, setup, &cap, perm, &p, f.s_vals, n),
                         PSI_OK);
        assert_int_equal(psi_setup_parse(&ps, f.suite, setup, cap), PSI_OK);
        assert_int_equal(psi_setup_raw_count(ps), n);
        const uint8_t *el = psi_setup_raw_elements(ps);
        assert_non_null(el);
        for (size_t i = 0; i < n; i++)
            sorted[i] = f.pays[perm[i]];
        assert_int_equal(psi_payload_table_build(f.suite, t1, &len1, el, sorted, n, 0, salt),
                         PSI_OK);
        assert_int_equal(build(s, t2, &len2, f.s_vals, f.pays, n, 0, salt), PSI_OK);
        assert_int_equal(len1, len2);
        assert_memory_equal(t1, t2, len1);
        psi_setup_free(ps);
        ps = NULL;
        // GCS: no elements.
        p.structure = PSI_STRUCTURE_GCS;
        cap = 0;
        assert_int_equal(psi_setup_bound(&cap, f.suite, &p, n), PSI_OK);
        uint8_t *g = malloc(cap);
        assert_non_null(g);
        assert_int_equal(psi_server_create_setup(s, g, &cap, NULL, &p, f.s_vals, n), PSI_OK);
        assert_int_equal(psi_setup_parse(&ps, f.suite, g, cap), PSI_OK);
        assert_null(psi_setup_raw_elements(ps));
        psi_setup_free(ps);
        assert_null(psi_setup_raw_elements(NULL));
        free(g);
        free(setup);
        free(t1);
        free(t2);
        free(perm);
        free(sorted);
        psi_engine_free(s);
        fixture_free(&f);
    }
}

/* Each tampering has its own code. */
static void test_payload_tampered(void **state)
{
    (void)state;
    fixture f;
    fixture_make(&f, PSI_SUITE_OPENMINED_P256, 200, 60, 20);
    size_t L = 20, rec = 36 + L, len = f.table_len;
    uint8_t *t = malloc(len + rec);
    psi_error_detail d;
    // A flipped ciphertext bit in every record: the matched ones fail to open.
    memcpy(t, f.table, len);
    for (size_t j = 0; j < 200; j++)
        t[PSI_PAYLOAD_HEAD_BYTES + j * rec + 16 + (j % (rec - 16))] ^= 0x10;
    assert_int_equal(psi_payload_table_check(f.suite, t, len, NULL, NULL), PSI_OK);
    assert_int_equal(open_all(&f, t, len, L), PSI_E_PAYLOAD_AUTH);
    psi_error_detail_get(&d);
    assert_int_equal(d.index, 0); // the first client value matches
    // Two tags swapped: out of order.
    memcpy(t, f.table, len);
    memcpy(t + PSI_PAYLOAD_HEAD_BYTES + 5 * rec, f.table + PSI_PAYLOAD_HEAD_BYTES + 9 * rec, 16);
    memcpy(t + PSI_PAYLOAD_HEAD_BYTES + 9 * rec, f.table + PSI_PAYLOAD_HEAD_BYTES + 5 * rec, 16);
    assert_int_equal(psi_payload_table_check(f.suite, t, len, NULL, NULL), PSI_E_PAYLOAD_ORDER);
    psi_error_detail_get(&d);
    assert_int_equal(d.index, 6);
    assert_int_equal(open_all(&f, t, len, L), PSI_E_PAYLOAD_ORDER);
    // A truncated record, an extra one, a header cut short.
    assert_int_equal(psi_payload_table_check(f.suite, f.table, len - 1, NULL, NULL),
                     PSI_E_PAYLOAD_TRUNCATED);
    memcpy(t, f.table, len);
    memset(t + len, 0xff, rec);
    assert_int_equal(psi_payload_table_check(f.suite, t, len + rec, NULL, NULL),
                     PSI_E_PAYLOAD_TRUNCATED);
    assert_int_equal(psi_payload_table_check(f.suite, f.table, 55, NULL, NULL),
                     PSI_E_PAYLOAD_TRUNCATED);
    // A wrong padded length in the header: past the limit, or not the records'.
    memcpy(t, f.table, len);
    t[12] = 0, t[13] = 0, t[14] = 0x20; // 2 MiB
    assert_int_equal(psi_payload_table_check(f.suite, t, len, NULL, NULL), PSI_E_PAYLOAD_LENGTH);
    memcpy(t, f.table, len);
    t[12] = 19;
    assert_int_equal(psi_payload_table_check(f.suite, t, len, NULL, NULL),
                     PSI_E_PAYLOAD_TRUNCATED);
    // A record moved whole to another table's header (another salt): no match.
    memcpy(t, f.table, len);
    t[24] ^= 1;
    size_t *lens = malloc(60 * sizeof *lens);
    uint8_t *out = malloc(60 * L);
    assert_int_equal(psi_payload_open(f.suite, t, len, f.unmasked, 60, out, 60 * L, lens),
                     PSI_OK);
    for (size_t i = 0; i < 60; i++)
        assert_true(lens[i] == PSI_PAYLOAD_NONE);
    // The magic, the reserved bytes.
    memcpy(t, f.table, len);
    t[0] = 'X';
    assert_int_equal(psi_payload_table_check(f.suite, t, len, NULL, NULL), PSI_E_PAYLOAD_FORMAT);
    memcpy(t, f.table, len);
    t[10] = 1;
    assert_int_equal(psi_payload_table_check(f.suite, t, len, NULL, NULL), PSI_E_PAYLOAD_FORMAT);
    // Too small an output.
    assert_int_equal(psi_payload_open(f.suite, f.table, len, f.unmasked, 60, out, 60 * L - 1,
                                      lens),
                     PSI_E_BUFFER_TOO_SMALL);
    free(lens);
    free(out);
    free(t);
    fixture_free(&f);
}

static void test_payload_build_refusals(void **state)
{
    (void)state;
    psi_engine *s = engine(PSI_SUITE_RISTRETTO255, PSI_ROLE_SERVER);
    psi_value v[3] = {{(const uint8_t *)"a", 1}, {(const uint8_t *)"b", 1},
                      {(const uint8_t *)"a", 1}};
    psi_value p[3] = {{(const uint8_t *)"x", 1}, {(const uint8_t *)"yy", 2},
                      {(const uint8_t *)"zzz", 3}};
    uint8_t out[1024], salt[PSI_PAYLOAD_SALT_BYTES] = {1};
    size_t len = sizeof out;
    psi_error_detail d;
    assert_int_equal(psi_payload_table_build(7, out, &len, out, p, 2, 0, NULL), PSI_E_SUITE);
    assert_int_equal(build(s, out, &len, v, p, 3, 0, NULL),
                     PSI_E_PAYLOAD_DUPLICATE);
    psi_error_detail_get(&d);
    assert_int_equal(d.index, 2);
    assert_int_equal(build(s, out, &len, v, p, 2, 1, NULL), PSI_E_PAYLOAD_LENGTH);
    psi_error_detail_get(&d);
    assert_int_equal(d.index, 1);
    len = 10;
    assert_int_equal(build(s, out, &len, v, p, 2, 0, NULL), PSI_E_BUFFER_TOO_SMALL);
    assert_int_equal(len, psi_payload_table_bytes(2, 2));
    assert_int_equal(psi_payload_table_bytes(1, PSI_PAYLOAD_MAX + 1), 0);
    assert_int_equal(psi_payload_table_bytes(SIZE_MAX / 2, 10), 0);
    // A given salt: the same table twice; a fresh one each time otherwise.
    uint8_t a[256], b[256];
    size_t la = sizeof a, lb = sizeof b;
    assert_int_equal(build(s, a, &la, v, p, 2, 8, salt), PSI_OK);
    assert_int_equal(build(s, b, &lb, v, p, 2, 8, salt), PSI_OK);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    la = lb = sizeof a;
    assert_int_equal(build(s, a, &la, v, p, 2, 8, NULL), PSI_OK);
    assert_int_equal(build(s, b, &lb, v, p, 2, 8, NULL), PSI_OK);
    assert_memory_not_equal(a + 24, b + 24, PSI_PAYLOAD_SALT_BYTES);
    // An empty table.
    len = sizeof out;
    assert_int_equal(psi_payload_table_build(PSI_SUITE_RISTRETTO255, out, &len, NULL, NULL, 0, 0,
                                             NULL),
                     PSI_OK);
    assert_int_equal(len, PSI_PAYLOAD_HEAD_BYTES);
    assert_int_equal(psi_payload_table_check(PSI_SUITE_RISTRETTO255, out, len, NULL, NULL),
                     PSI_OK);
    psi_engine_free(s);
}

static int suite_of(const char *name)
{
    for (int s = 0; s < 3; s++)
        if (strcmp(name, psi_suite_name(s)) == 0)
            return s;
    fail_msg("unknown suite %s", name);
    return -1;
}

static psi_engine *keyed(int suite, psi_role role, const char *hex)
{
    psi_settings st;
    psi_engine *e = NULL;
    size_t len;
    uint8_t *k = tu_unhex(hex, &len);
    psi_settings_default(&st);
    st.role = role;
    st.reveal_intersection = 1;
    st.suite = (psi_suite)suite;
    assert_int_equal(psi_engine_create_from_key(&e, &st, k, len), PSI_OK);
    free(k);
    return e;
}

static psi_value *strings(const cJSON *a, size_t *n)
{
    *n = (size_t)cJSON_GetArraySize(a);
    psi_value *v = calloc(*n + 1, sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < *n; i++) {
        const char *s = cJSON_GetStringValue(cJSON_GetArrayItem(a, (int)i));
        assert_non_null(s);
        v[i] = (psi_value){(const uint8_t *)s, strlen(s)};
    }
    return v;
}

/* A case's client elements after the round with its keys. */
static uint8_t *case_elements(int suite, const cJSON *c, size_t *m)
{
    psi_value *cv = strings(cJSON_GetObjectItem(c, "client_inputs"), m);
    psi_engine *s = keyed(suite, PSI_ROLE_SERVER, cJSON_GetStringValue(cJSON_GetObjectItem(c, "server_key")));
    psi_engine *cl = keyed(suite, PSI_ROLE_CLIENT, cJSON_GetStringValue(cJSON_GetObjectItem(c, "client_key")));
    size_t len = *m * PSI_ELEMENT_BYTES;
    uint8_t *a = malloc(len + 1), *b = malloc(len + 1), *u = malloc(len + 1);
    size_t l1 = len, l2 = len, l3 = len;
    assert_int_equal(psi_engine_mask(cl, a, &l1, cv, *m), PSI_OK);
    assert_int_equal(psi_engine_remask(s, b, &l2, a, *m), PSI_OK);
    assert_int_equal(psi_engine_unmask(cl, u, &l3, b, *m), PSI_OK);
    free(a);
    free(b);
    free(cv);
    psi_engine_free(s);
    psi_engine_free(cl);
    return u;
}

static void test_payload_vectors(void **state)
{
    (void)state;
    cJSON *doc = tu_load_json(VECTORS), *c, *x;
    size_t cases = 0, tampered = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "cases")) {
        int suite = suite_of(cJSON_GetStringValue(cJSON_GetObjectItem(c, "suite")));
        size_t n, np, m, tlen, slen;
        psi_value *sv = strings(cJSON_GetObjectItem(c, "server_inputs"), &n);
        psi_value *pv = strings(cJSON_GetObjectItem(c, "payloads"), &np);
        uint8_t *want = tu_unhex(cJSON_GetStringValue(cJSON_GetObjectItem(c, "table")), &tlen);
        uint8_t *salt = tu_unhex(cJSON_GetStringValue(cJSON_GetObjectItem(c, "salt")), &slen);
        size_t L = (size_t)cJSON_GetNumberValue(cJSON_GetObjectItem(c, "pad_len"));
        psi_engine *s = keyed(suite, PSI_ROLE_SERVER,
                              cJSON_GetStringValue(cJSON_GetObjectItem(c, "server_key")));
        size_t len = psi_payload_table_bytes(n, L);
        uint8_t *t = malloc(len + 1);
        assert_int_equal(n, np);
        assert_int_equal(slen, PSI_PAYLOAD_SALT_BYTES);
        // L may be 0 with payloads given (0: the longest): only when they are empty.
        assert_int_equal(build(s, t, &len, sv, pv, n, L, salt), PSI_OK);
        assert_int_equal(len, tlen);
        assert_memory_equal(t, want, tlen);
        uint8_t *u = case_elements(suite, c, &m);
        uint8_t *out = malloc(m * L + 1);
        size_t *lens = malloc(m * sizeof *lens + 1);
        assert_int_equal(psi_payload_open(suite, t, len, u, m, out, m * L, lens), PSI_OK);
        const cJSON *exp = cJSON_GetObjectItem(c, "expected");
        for (size_t i = 0; i < m; i++) {
            const cJSON *e = cJSON_GetArrayItem(exp, (int)i);
            if (cJSON_IsNull(e)) {
                assert_true(lens[i] == PSI_PAYLOAD_NONE);
                continue;
            }
            const char *w = cJSON_GetStringValue(e);
            assert_int_equal(lens[i], strlen(w));
            assert_memory_equal(out + i * L, w, lens[i]);
        }
        free(lens);
        free(out);
        free(u);
        free(t);
        free(want);
        free(salt);
        free(sv);
        free(pv);
        psi_engine_free(s);
        cases++;
    }
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(doc, "tampered")) {
        const char *sname = cJSON_GetStringValue(cJSON_GetObjectItem(x, "suite"));
        const char *of = cJSON_GetStringValue(cJSON_GetObjectItem(x, "of"));
        int suite = suite_of(sname);
        const cJSON *base = NULL;
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "cases")) {
            if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(c, "suite")), sname) == 0 &&
                strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(c, "name")), of) == 0)
                base = c;
        }
        assert_non_null(base);
        size_t m, tlen;
        uint8_t *u = case_elements(suite, base, &m);
        uint8_t *t = tu_unhex(cJSON_GetStringValue(cJSON_GetObjectItem(x, "table")), &tlen);
        uint8_t out[64 * 64];
        size_t lens[64];
        assert_true(m <= 64);
        int rc = psi_payload_open(suite, t, tlen, u, m, out, sizeof out, lens);
        const char *want = cJSON_GetStringValue(cJSON_GetObjectItem(x, "error"));
        if (psi_error_name(rc) == NULL || strcmp(psi_error_name(rc), want) != 0)
            fail_msg("%s %s: %s, not %s", sname, cJSON_GetStringValue(cJSON_GetObjectItem(x, "name")),
                     psi_error_name(rc) ? psi_error_name(rc) : "?", want);
        free(t);
        free(u);
        tampered++;
    }
    assert_true(cases >= 12 && tampered >= 24);
    cJSON_Delete(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_payload_round),
        cmocka_unit_test(test_payload_parts),
        cmocka_unit_test(test_payload_from_raw_setup),
        cmocka_unit_test(test_payload_tampered),
        cmocka_unit_test(test_payload_build_refusals),
        cmocka_unit_test(test_payload_vectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
