/* See suites_common.h. */
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

unsigned long n_checks;

/* ------------------------------------------------------------- helpers */

psi_settings settings_of(int suite, psi_role role, int reveal)
{
    psi_settings s;
    psi_settings_default(&s);
    s.role = role;
    s.reveal_intersection = reveal;
    s.suite = (psi_suite)suite;
    return s;
}

/* An engine of `suite` from a key, or with a random key when key is NULL. */
psi_engine *engine(int suite, psi_role role, int reveal, const uint8_t *key, size_t len)
{
    psi_settings s = settings_of(suite, role, reveal);
    psi_engine *e = NULL;
    if (key != NULL)
        CHECK_RC(psi_engine_create_from_key(&e, &s, key, len), PSI_OK);
    else
        CHECK_RC(psi_engine_create(&e, &s), PSI_OK);
    CHECK_RC(psi_engine_suite(e), suite);
    return e;
}

/* A valid key of the suite: below 2^255 and odd (P-256, big-endian), or
 * below 2^252 and odd (ristretto255, little-endian). */
void suite_key(int suite, uint64_t *rng, uint8_t key[PSI_KEY_BYTES])
{
    for (size_t i = 0; i < PSI_KEY_BYTES; i++)
        key[i] = (uint8_t)tu_rand(rng);
    if (suite == R255) {
        key[PSI_KEY_BYTES - 1] &= 0x0f;
        key[0] |= 1;
    } else {
        key[0] &= 0x7f;
        key[PSI_KEY_BYTES - 1] |= 1;
    }
}

void expect_header(int suite, msg m)
{
    if (suite == PSI_SUITE_OPENMINED_P256) {
        CHECK(m.len == 0 || m.p[0] != 0x7f);
    } else {
        CHECK(m.len >= PSI_SUITE_HEADER_BYTES);
        CHECK(m.p[0] == 0x7f && m.p[1] == suite);
    }
}

msg mk_setup(const psi_engine *s, psi_structure st, double fpr, int64_t nc,
                    const psi_value *v, size_t n, size_t *perm)
{
    int suite = (int)psi_engine_suite(s);
    psi_setup_params p = {st, fpr, nc};
    size_t bound = 0;
    CHECK_RC(psi_setup_bound(&bound, suite, &p, n), PSI_OK);
    msg m = {malloc(bound + 1), bound};
    assert_non_null(m.p);
    CHECK_RC(psi_server_create_setup(s, m.p, &m.len, perm, &p, v, n), PSI_OK);
    CHECK(st == PSI_STRUCTURE_RAW ? m.len == bound : m.len <= bound); /* raw: exact */
    expect_header(suite, m);
    return m;
}

msg mk_request(const psi_engine *c, const psi_value *v, size_t n)
{
    int suite = (int)psi_engine_suite(c);
    size_t cap = psi_request_bound(suite, n);
    msg m = {malloc(cap + 1), cap};
    assert_non_null(m.p);
    CHECK_RC(psi_client_create_request(c, m.p, &m.len, v, n), PSI_OK);
    CHECK_RC(m.len, cap - (psi_engine_reveal(c) ? 0 : 2));
    expect_header(suite, m);
    return m;
}

msg mk_response(const psi_engine *s, msg req, size_t n)
{
    int suite = (int)psi_engine_suite(s);
    size_t cap = psi_response_bound(suite, psi_message_element_bound(suite, req.len));
    msg m = {malloc(cap + 1), cap};
    assert_non_null(m.p);
    CHECK_RC(psi_server_process_request(s, m.p, &m.len, req.p, req.len), PSI_OK);
    CHECK_RC(m.len, psi_response_bound(suite, n)); /* exact; 2 bytes when empty */
    expect_header(suite, m);
    return m;
}

/* ------------------------------------------- the plain comparison */

int same_value(psi_value a, psi_value b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.data, b.data, a.len) == 0);
}

int in_values(psi_value x, const psi_value *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (same_value(x, s[i]))
            return 1;
    return 0;
}

int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

int cmp_pair(const void *a, const void *b)
{
    const psi_pair *x = a, *y = b;
    if (x->server_index != y->server_index)
        return x->server_index < y->server_index ? -1 : 1;
    return cmp_size(&x->client_index, &y->client_index);
}

/* §9.6: for each value, the k-th client copy pairs with the k-th server
 * copy; ordered by server index.  Returns the number of pairs. */
size_t expected_pairs(psi_pair *out, const psi_value *sv, size_t ns, const psi_value *cv,
                             size_t nc)
{
    size_t n = 0;
    for (size_t ci = 0; ci < nc; ci++) {
        size_t rank = 0;
        for (size_t j = 0; j < ci; j++)
            rank += same_value(cv[j], cv[ci]);
        for (size_t si = 0; si < ns; si++) {
            if (same_value(sv[si], cv[ci]) && rank-- == 0) {
                out[n++] = (psi_pair){ci, si};
                break;
            }
        }
    }
    qsort(out, n, sizeof *out, cmp_pair);
    return n;
}

/* got (count indices) against want (sorted): equal, or with `exact` 0 a
 * superset whose extra indices are non-members (GCS and Bloom false
 * positives).  Returns the number of false positives. */
size_t expect_index_set(size_t *got, size_t count, const size_t *want, size_t n_want,
                               int exact, const psi_value *sv, size_t ns, const psi_value *cv)
{
    qsort(got, count, sizeof *got, cmp_size);
    for (size_t i = 1; i < count; i++)
        CHECK(got[i - 1] < got[i]); /* each index once */
    if (exact) {
        CHECK_RC(count, n_want);
        CHECK(n_want == 0 || memcmp(got, want, n_want * sizeof *want) == 0);
        return 0;
    }
    size_t j = 0;
    for (size_t i = 0; i < count; i++) {
        if (j < n_want && got[i] == want[j])
            j++;
        else
            CHECK(!in_values(cv[got[i]], sv, ns)); /* an extra must be a non-member */
    }
    CHECK_RC(j, n_want);
    return count - n_want;
}
